/*
 * check_multiproc.c - forked processes, each attached with a slot of its
 * own, hammer one pool with random bulk sizes; afterwards every object is
 * there exactly once and the counters add up to what the children did.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testutil.h"

#define POOL_SIZE	4096
#define MAX_HELD	256
#define ITERATIONS	400000

/* What the children report, in shared memory. */
struct report {
	uint64_t got_objs[8];
	uint64_t put_objs[8];
};

static struct report *
report_new(void)
{
	struct report *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
		MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(r, MAP_FAILED);
	memset(r, 0, sizeof(*r));
	return r;
}

/*
 * Each object's first word holds its holder's pid while it is held, 0
 * while it is free: a get that finds a word other than 0, or a put that
 * finds another pid, means an object was handed out twice.
 */
static int
take(void **objs, unsigned int n, uint64_t me)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint64_t expect = 0;

		if (!__atomic_compare_exchange_n((uint64_t *)objs[i], &expect,
				me, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return -1;
	}
	return 0;
}

static int
give(void **objs, unsigned int n, uint64_t me)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint64_t expect = me;

		if (!__atomic_compare_exchange_n((uint64_t *)objs[i], &expect,
				0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return -1;
	}
	return 0;
}

static void
hammer_child(const char *name, int id, struct report *rep)
{
	struct shmpool_cache *claimed = NULL, *cache;
	void *held[MAX_HELD];
	unsigned int nheld = 0, n, it;
	uint64_t seed = 0x2545f4914f6cdd1dULL * (uint64_t)(id + 1);
	uint64_t me = (uint64_t)getpid();
	struct shmpool *pool;
	int ret;

	pool = tu_attach(name, -1);
	/* Child 0 also works through a claimed cache of another size. */
	if (id == 0 && shmpool_cache_claim(pool, 100, &claimed) != 0)
		_exit(10);

	for (it = 0; it < ITERATIONS; it++) {
		uint32_t r = tu_rand(&seed);

		cache = (r & 15) == 0 ? NULL :
			claimed != NULL && (r & 1) ? claimed :
			shmpool_default_cache(pool);
		n = 1 + tu_rand(&seed) % 64;
		if (nheld + n <= MAX_HELD) {
			ret = shmpool_generic_get(pool, held + nheld, n, cache);
			if (ret == 0) {
				if (take(held + nheld, n, me) < 0)
					_exit(11);
				nheld += n;
				rep->got_objs[id] += n;
			} else if (ret != -ENOENT) {
				_exit(12);
			}
		}
		if (nheld > 0 && (tu_rand(&seed) & 1)) {
			n = 1 + tu_rand(&seed) % nheld;
			if (give(held + nheld - n, n, me) < 0)
				_exit(13);
			if (shmpool_generic_put(pool, held + nheld - n, n,
					cache) != 0)
				_exit(14);
			nheld -= n;
			rep->put_objs[id] += n;
		}
	}
	if (nheld > 0) {
		if (give(held, nheld, me) < 0 ||
		    shmpool_put_bulk(pool, held, nheld) != 0)
			_exit(15);
		rep->put_objs[id] += nheld;
	}
	if (claimed != NULL && shmpool_cache_release(claimed) != 0)
		_exit(16);
	_exit(shmpool_detach(pool) == 0 ? 0 : 17);
}

static void
hammer(int nproc)
{
	static void *objs[POOL_SIZE + 1];
	static unsigned char seen[POOL_SIZE];
	struct report *rep = report_new();
	struct shmpool_stats st;
	struct shmpool *pool;
	uint64_t got = 0, put = 0;
	pid_t pids[8];
	char name[32];
	int i;

	snprintf(name, sizeof(name), "hammer%d", nproc);
	tu_create(name, POOL_SIZE, 64, 64, 8);
	for (i = 0; i < nproc; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0)
			hammer_child(name, i, rep);
	}
	tu_wait_children(pids, nproc, 120);

	pool = tu_attach(name, 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), POOL_SIZE);
	ck_assert_uint_eq(shmpool_in_use_count(pool), 0);
	for (i = 0; i < nproc; i++) {
		ck_assert_uint_eq(rep->got_objs[i], rep->put_objs[i]);
		ck_assert_uint_gt(rep->got_objs[i], ITERATIONS);
		got += rep->got_objs[i];
		put += rep->put_objs[i];
	}
	/* Every slot was released: all counts are retired, none lost. */
	ck_assert_int_eq(shmpool_stats_read(pool, SHMPOOL_STATS_RETIRED, &st),
		0);
	ck_assert_uint_eq(st.get_success_objs, SHMPOOL_STATS ? got : 0);
	ck_assert_uint_eq(st.put_objs, SHMPOOL_STATS ? put : 0);
	ck_assert_uint_eq(st.get_fail_bulk, 0);

	/* Every object exactly once, and not one more. */
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, POOL_SIZE), 0);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < POOL_SIZE; i++) {
		long idx = shmpool_obj_index(pool, objs[i]);

		ck_assert_int_ge(idx, 0);
		ck_assert_uint_eq(*(uint64_t *)objs[i], 0);
		seen[idx]++;
	}
	for (i = 0; i < POOL_SIZE; i++)
		ck_assert_msg(seen[i] == 1, "object %d seen %u times", i,
			seen[i]);
	ck_assert_int_eq(shmpool_get(pool, objs), -ENOENT);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, POOL_SIZE), 0);
	shmpool_detach(pool);
	munmap(rep, sizeof(*rep));
}

START_TEST(test_two_processes)
{
	hammer(2);
}
END_TEST

START_TEST(test_three_processes)
{
	hammer(3);
}
END_TEST

START_TEST(test_four_processes)
{
	hammer(4);
}
END_TEST

/*
 * At rest, with children holding known numbers of objects: in use is
 * exactly what they hold, and avail + in use is the pool's size.
 */
START_TEST(test_counts_at_rest)
{
	int ready[2], go[2], i;
	struct shmpool *pool;
	pid_t pids[3];
	char c;

	tu_create("rest", 1024, 64, 32, 8);
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(go), 0);
	for (i = 0; i < 3; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			struct shmpool *p = tu_attach("rest", -1);
			unsigned int n = 10 * (unsigned int)(i + 1);
			void *objs[30];

			close(ready[0]);
			close(go[1]);
			if (shmpool_get_bulk(p, objs, n) != 0 ||
			    write(ready[1], "r", 1) != 1 ||
			    read(go[0], &c, 1) != 1 ||
			    shmpool_put_bulk(p, objs, n) != 0)
				_exit(1);
			_exit(shmpool_detach(p) == 0 ? 0 : 1);
		}
	}
	close(ready[1]);
	close(go[0]);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(read(ready[0], &c, 1), 1);

	pool = tu_attach("rest", 0);
	ck_assert_uint_eq(shmpool_in_use_count(pool), 60);
	ck_assert_uint_eq(shmpool_avail_count(pool), 1024 - 60);
	ck_assert_uint_eq(shmpool_avail_count(pool) +
		shmpool_in_use_count(pool), 1024);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(write(go[1], "g", 1), 1);
	tu_wait_children(pids, 3, 30);
	ck_assert_uint_eq(shmpool_in_use_count(pool), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), 1024);
	shmpool_detach(pool);
}
END_TEST

static Suite *
multiproc_suite(void)
{
	Suite *s = suite_create("multiproc");
	TCase *tc = tcase_create("processes");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_two_processes);
	tcase_add_test(tc, test_three_processes);
	tcase_add_test(tc, test_four_processes);
	tcase_add_test(tc, test_counts_at_rest);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return tu_run(multiproc_suite());
}
