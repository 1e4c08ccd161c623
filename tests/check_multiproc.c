/*
 * check_multiproc.c - forked processes, each attached with a slot of its
 * own, hammer one pool with random bulk sizes; afterwards every object is
 * there exactly once and the counters add up to what the children did.
 */
#include "config.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/rseq.h>
#include <sys/wait.h>
#include <unistd.h>

#include "segment-internal.h"
#include "testutil.h"

#define POOL_SIZE	4096
#define MAX_HELD	256
#define ITERATIONS	400000

/* What the children report, in shared memory. */
struct report {
	uint64_t got_objs[8];
	uint64_t put_objs[8];
	uint64_t owned_seen[8];		/* looks finding its ring its */
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
 * Whether a thread's ring is that of its CPU: with rseq in the C library
 * (not under valgrind, nor with glibc.pthread.rseq=0); else every thread
 * uses ring 0 and one pinned elsewhere takes none.
 */
static int
own_rings_by_cpu(void)
{
	return SHMPOOL_CPU_HERE && __rseq_size != 0;
}

/* The owner word of ring i of pool. */
static uint32_t
own_word(struct shmpool *pool, unsigned int i)
{
	return uatomic_read(&pool_handle(pool)->ring_r[i]->owner);
}

/* The ring the calling thread uses now: its CPU's (with rseq). */
static unsigned int
own_ring_now(struct shmpool *pool)
{
	return (unsigned int)sched_getcpu() & pool_handle(pool)->ring_mask;
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

		if (it % 1024 == 0 && own_word(pool, own_ring_now(pool)) ==
				RING_OWN(shmpool_default_cache(pool)->slot,
					RING_OWN_OWNED))
			rep->owned_seen[id]++;

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
	uint64_t got = 0, put = 0, owned = 0;
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
		owned += rep->owned_seen[i];
	}
	printf("hammer %d: %llu of %u looks found the worker's ring its "
		"own\n", nproc, (unsigned long long)owned,
		(unsigned int)nproc * ((ITERATIONS + 1023) / 1024));
	/* No worker is pinned, and rings were owned all the same. */
	if (own_rings_by_cpu() && pool_handle(pool)->nb_rings > 1)
		ck_assert_uint_gt(owned, 0);
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

/*
 * Ring ownership (libshmpool/ring.h): a worker takes the ring of the CPU
 * its thread runs on to itself once a get of its claims a position across
 * a multiple of RING_OWN_EVERY (65536) by compare-and-swap; anyone else's
 * claim on it takes it back.
 */
#define OWN_POOL	256
#define OWN_ROUNDS	(3 * 65536)

/* The n-th CPU this process may run on (counting from 0, wrapping). */
static int
own_cpu(unsigned int n)
{
	cpu_set_t set;
	int cpu, count;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	count = CPU_COUNT(&set);
	n %= (unsigned int)count;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && n-- == 0)
			return cpu;
	ck_abort_msg("no CPU");
	return -1;
}

static void
own_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

/*
 * Child: pinned to cpu, OWN_ROUNDS gets and puts of one object through a
 * cache of size 0; then tells the parent its slot and waits for a byte;
 * then as many again, and detaches.
 */
static void
own_child(const char *name, int cpu, int ready, int go)
{
	struct shmpool *pool;
	uint32_t slot;
	unsigned int k;
	void *obj;
	char c;

	own_pin(cpu);
	pool = tu_attach(name, 0);
	slot = shmpool_default_cache(pool)->slot;
	for (k = 0; k < OWN_ROUNDS; k++)
		if (shmpool_get(pool, &obj) != 0 || shmpool_put(pool, obj) != 0)
			_exit(20);
	if (write(ready, &slot, sizeof(slot)) != sizeof(slot) ||
	    read(go, &c, 1) != 1)
		_exit(21);
	for (k = 0; k < OWN_ROUNDS; k++)
		if (shmpool_get(pool, &obj) != 0 || shmpool_put(pool, obj) != 0)
			_exit(22);
	_exit(shmpool_detach(pool) == 0 ? 0 : 23);
}

/* All OWN_POOL objects got at once, each once, and put back. */
static void
own_get_all(struct shmpool *pool)
{
	static void *objs[OWN_POOL];
	unsigned char seen[OWN_POOL];
	unsigned int i;
	void *one;

	memset(seen, 0, sizeof(seen));
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, OWN_POOL), 0);
	for (i = 0; i < OWN_POOL; i++) {
		long idx = shmpool_obj_index(pool, objs[i]);

		ck_assert_int_ge(idx, 0);
		ck_assert_uint_eq(seen[idx]++, 0);
	}
	/* Into a word of its own: a get that fails may have written it. */
	ck_assert_int_eq(shmpool_get(pool, &one), -ENOENT);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, OWN_POOL), 0);
}

/*
 * Fork child(name, cpu, ready, go) with two pipes, go[] the parent's to
 * keep (a byte on go[1] lets the child go on), and read the len bytes the
 * child first writes on ready to said; returns its pid.
 */
static pid_t
own_fork(void (*child)(const char *, int, int, int), const char *name,
		int cpu, int go[2], void *said, size_t len)
{
	int ready[2];
	pid_t pid;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		child(name, cpu, ready[1], go[0]);
		_exit(127);
	}
	close(ready[1]);
	close(go[0]);
	ck_assert_int_eq(read(ready[0], said, len), (ssize_t)len);
	close(ready[0]);
	return pid;
}

/* Start own_child() on cpu; returns its pid, its slot in *slot. */
static pid_t
own_start(const char *name, int cpu, int go[2], uint32_t *slot)
{
	return own_fork(own_child, name, cpu, go, slot, sizeof(*slot));
}

/*
 * Pool name, of OWN_POOL objects on two rings, for test: 1; or 0, said,
 * when threads have no CPU number to choose a ring by (the test is
 * skipped).
 */
static int
own_create_two_rings(const char *test, const char *name)
{
	if (!own_rings_by_cpu()) {
		printf("%s: skipped: no rseq, every thread uses ring 0\n",
			test);
		return 0;
	}
	ck_assert_int_eq(setenv("SHMPOOL_RINGS", "2", 1), 0);
	tu_create(name, OWN_POOL, 64, 0, 8);
	ck_assert_int_eq(unsetenv("SHMPOOL_RINGS"), 0);
	return 1;
}

/*
 * The opening of the ownership tests: without rseq, say test is skipped
 * and return -1; else create pool name, attach it (*pool), start
 * own_child() on the first CPU and check that it owns that CPU's ring
 * (*ring, the only ring owned).  The child's pid.
 */
static pid_t
own_setup(const char *test, const char *name, struct shmpool **pool,
		unsigned int *ring, int go[2])
{
	int cpu = own_cpu(0);
	unsigned int i;
	uint32_t slot;
	pid_t pid;

	if (!own_rings_by_cpu()) {
		printf("%s: skipped: no rseq, every thread uses ring 0\n",
			test);
		return -1;
	}
	tu_create(name, OWN_POOL, 64, 0, 8);
	*pool = tu_attach(name, 0);
	*ring = (unsigned int)cpu & pool_handle(*pool)->ring_mask;
	pid = own_start(name, cpu, go, &slot);
	for (i = 0; i < pool_handle(*pool)->nb_rings; i++)
		ck_assert_uint_eq(own_word(*pool, i), i == *ring ?
			RING_OWN(slot, RING_OWN_OWNED) : 0);
	return pid;
}

/*
 * The pinned child owns its CPU's ring; the parent's get of every object
 * takes it back, the child goes on through the ring shared, and leaves
 * every ring to no one when it detaches.
 */
START_TEST(test_ring_owned_and_taken)
{
	struct shmpool *pool;
	unsigned int i, ring;
	int go[2];
	pid_t pid;

	pid = own_setup("test_ring_owned_and_taken", "own", &pool, &ring, go);
	if (pid < 0)
		return;
	own_get_all(pool);
	ck_assert_uint_eq(own_word(pool, ring), 0);
	ck_assert_int_eq(write(go[1], "g", 1), 1);
	close(go[1]);
	tu_wait_children(&pid, 1, 60);
	for (i = 0; i < pool_handle(pool)->nb_rings; i++)
		ck_assert_uint_eq(own_word(pool, i), 0);
	own_get_all(pool);
	shmpool_detach(pool);
}
END_TEST

/*
 * Run child(name) in a process of its own to its end, which must be exit
 * 0 within seconds, then attach pool name, which has two rings
 * (own_create_two_rings()).
 */
static struct shmpool *
own_child_run(void (*child)(const char *), const char *name, int seconds)
{
	struct shmpool *pool;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		child(name);
		_exit(127);
	}
	tu_wait_children(&pid, 1, seconds);
	pool = tu_attach(name, 0);
	ck_assert_uint_eq(pool_handle(pool)->nb_rings, 2);
	return pool;
}

/*
 * Child of test_ring_owned_unpinned(): on whichever CPU the scheduler
 * puts it, gets and puts of one object until it sees the ring of the CPU
 * it is on owned by its cache (0), or for 64 x RING_OWN_EVERY rounds
 * (42).
 */
static void
own_free_child(const char *name)
{
	struct shmpool *pool = tu_attach(name, 0);
	uint32_t token = RING_OWN(shmpool_default_cache(pool)->slot,
		RING_OWN_OWNED);
	unsigned int k;
	void *obj;

	for (k = 0; k < 64 * RING_OWN_EVERY; k++) {
		if (shmpool_get(pool, &obj) != 0 || shmpool_put(pool, obj) != 0)
			_exit(40);
		if (k % 1024 == 0 && own_word(pool, own_ring_now(pool)) ==
				token)
			_exit(shmpool_detach(pool) == 0 ? 0 : 41);
	}
	_exit(42);
}

/*
 * A worker that may run on any CPU takes the ring of the one it runs on
 * as a pinned one does, and leaves every ring to no one when it detaches.
 */
START_TEST(test_ring_owned_unpinned)
{
	struct shmpool *pool;
	cpu_set_t set;
	unsigned int i;

	if (!own_create_two_rings("test_ring_owned_unpinned", "ownfree"))
		return;
	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	if (CPU_COUNT(&set) < 2)
		printf("test_ring_owned_unpinned: this process may run on "
			"one CPU only: its child is pinned\n");
	pool = own_child_run(own_free_child, "ownfree", 120);
	for (i = 0; i < pool_handle(pool)->nb_rings; i++)
		ck_assert_uint_eq(own_word(pool, i), 0);
	own_get_all(pool);
	shmpool_detach(pool);
}
END_TEST

/* A ring's owner killed (outside a claim: it waits on a pipe) holds it no
 * more: the next get takes it back, and every object is there. */
START_TEST(test_ring_owner_killed)
{
	struct shmpool *pool;
	unsigned int ring;
	int go[2], status;
	pid_t pid;

	pid = own_setup("test_ring_owner_killed", "ownkill", &pool, &ring, go);
	if (pid < 0)
		return;
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	close(go[1]);
	own_get_all(pool);
	ck_assert_uint_eq(own_word(pool, ring), 0);
	shmpool_detach(pool);
}
END_TEST

/*
 * Child of test_ring_owned_at_any_phase(): pinned to the first CPU, it
 * gets and puts one object through its cache of size 0 until the next
 * get position of its CPU's ring is 1 past a multiple of 4, then gets
 * and puts 4 at a time for 2 x RING_OWN_EVERY positions.  Every get of 4
 * there starts 1 past a multiple of 4, so the one whose claim crosses a
 * multiple of RING_OWN_EVERY also crosses the end of the ring's array,
 * where the short try of a cache of size 0 does not copy.  Exits 0 when
 * its cache owns the ring at the end, with every get of 4 made there (the
 * phase kept), and detached; 50 to 54 otherwise.
 */
static void
own_phase_child(const char *name)
{
	int cpu = own_cpu(0);
	struct shmpool *pool;
	struct ring *r;
	uint32_t token;
	unsigned int k;
	void *objs[4];

	own_pin(cpu);
	pool = tu_attach(name, 0);
	token = RING_OWN(shmpool_default_cache(pool)->slot, RING_OWN_OWNED);
	r = pool_handle(pool)->ring_r[(unsigned int)cpu &
		pool_handle(pool)->ring_mask];
	while (uatomic_read(&r->cons_head) % 4 != 1)
		if (shmpool_get(pool, &objs[0]) != 0 ||
		    shmpool_put(pool, objs[0]) != 0)
			_exit(50);
	for (k = 0; k < 2 * RING_OWN_EVERY / 4; k++)
		if (shmpool_get_bulk(pool, objs, 4) != 0 ||
		    shmpool_put_bulk(pool, objs, 4) != 0)
			_exit(51);
	if (uatomic_read(&r->cons_head) % 4 != 1)
		_exit(52);
	if (uatomic_read(&r->owner) != token)
		_exit(53);
	_exit(shmpool_detach(pool) == 0 ? 0 : 54);
}

/*
 * A worker through a cache of size 0 takes its ring whatever the phase of
 * its gets against the end of the ring's array: the get that crosses a
 * multiple of RING_OWN_EVERY may be one that the short try leaves to the
 * long one.
 */
START_TEST(test_ring_owned_at_any_phase)
{
	struct shmpool *pool;
	unsigned int i;

	if (!own_create_two_rings("test_ring_owned_at_any_phase", "ownphase"))
		return;
	pool = own_child_run(own_phase_child, "ownphase", 60);
	for (i = 0; i < pool_handle(pool)->nb_rings; i++) {
		/* The end of the array at every multiple of RING_OWN_EVERY. */
		ck_assert_uint_eq(RING_OWN_EVERY %
			pool_handle(pool)->rings[i].size, 0);
		ck_assert_uint_eq(own_word(pool, i), 0);
	}
	own_get_all(pool);
	shmpool_detach(pool);
}
END_TEST

/*
 * Four pinned workers on as many CPUs as there are (two to a CPU on two),
 * through caches of size 0: the rings go from one to another of them
 * and back, and every object is there exactly once at the end.
 */
static void
hammer_pinned_child(const char *name, int id, struct report *rep)
{
	void *held[MAX_HELD];
	unsigned int nheld = 0, n, it;
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1);
	uint64_t me = (uint64_t)getpid();
	struct shmpool *pool;
	unsigned int ring;
	uint32_t slot;
	int cpu;

	cpu = own_cpu((unsigned int)id);
	own_pin(cpu);
	pool = tu_attach(name, 0);
	slot = shmpool_default_cache(pool)->slot;
	ring = (unsigned int)cpu & pool_handle(pool)->ring_mask;
	for (it = 0; it < 4 * ITERATIONS; it++) {
		if (it % 1024 == 0 && own_word(pool, ring) ==
				RING_OWN(slot, RING_OWN_OWNED))
			rep->owned_seen[id]++;
		n = 1 + tu_rand(&seed) % 8;
		if (nheld + n <= MAX_HELD &&
		    shmpool_get_bulk(pool, held + nheld, n) == 0) {
			if (take(held + nheld, n, me) < 0)
				_exit(11);
			nheld += n;
			rep->got_objs[id] += n;
		}
		if (nheld > 0 && (tu_rand(&seed) & 1)) {
			n = 1 + tu_rand(&seed) % nheld;
			if (give(held + nheld - n, n, me) < 0 ||
			    shmpool_put_bulk(pool, held + nheld - n, n) != 0)
				_exit(13);
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
	_exit(shmpool_detach(pool) == 0 ? 0 : 17);
}

START_TEST(test_ring_owners_hammer)
{
	static void *objs[POOL_SIZE];
	static unsigned char seen[POOL_SIZE];
	struct report *rep = report_new();
	struct shmpool *pool;
	uint64_t seen_owned = 0;
	pid_t pids[4];
	unsigned int i;

	tu_create("ownhammer", POOL_SIZE, 64, 0, 8);
	for (i = 0; i < 4; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0)
			hammer_pinned_child("ownhammer", (int)i, rep);
	}
	tu_wait_children(pids, 4, 120);
	pool = tu_attach("ownhammer", 0);
	for (i = 0; i < pool_handle(pool)->nb_rings; i++)
		ck_assert_uint_eq(own_word(pool, i), 0);
	for (i = 0; i < 4; i++) {
		ck_assert_uint_eq(rep->got_objs[i], rep->put_objs[i]);
		ck_assert_uint_gt(rep->got_objs[i], ITERATIONS);
		seen_owned += rep->owned_seen[i];
	}
	/* Rings were owned (and, two workers to a CPU, taken back). */
	printf("test_ring_owners_hammer: %llu of %u looks found the worker's "
		"ring its own\n", (unsigned long long)seen_owned,
		4 * (4 * ITERATIONS / 1024));
	if (own_rings_by_cpu() && pool_handle(pool)->nb_rings > 1)
		ck_assert_uint_gt(seen_owned, 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), POOL_SIZE);
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, POOL_SIZE), 0);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < POOL_SIZE; i++) {
		long idx = shmpool_obj_index(pool, objs[i]);

		ck_assert_int_ge(idx, 0);
		ck_assert_uint_eq(*(uint64_t *)objs[i], 0);
		ck_assert_uint_eq(seen[idx]++, 0);
	}
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, POOL_SIZE), 0);
	shmpool_detach(pool);
	munmap(rep, sizeof(*rep));
}
END_TEST

/*
 * Child of test_ring_owner_busy(): pinned to cpu, one get from pool name,
 * which must wait until the parent has written a byte to cleared (before
 * it ends the owner's claim: the byte is there when the get returns), and
 * put back.
 */
static void
busy_getter(const char *name, int cpu, int cleared)
{
	struct shmpool *pool;
	void *obj;
	char c;

	own_pin(cpu);
	/* Not left spinning if the test is killed (its timeout). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
	    fcntl(cleared, F_SETFL, O_NONBLOCK) != 0)
		_exit(34);
	pool = tu_attach(name, 0);
	if (shmpool_get(pool, &obj) != 0)
		_exit(30);
	if (read(cleared, &c, 1) != 1)
		_exit(31);
	if (shmpool_put(pool, obj) != 0)
		_exit(32);
	_exit(shmpool_detach(pool) == 0 ? 0 : 33);
}

/*
 * An owner in the middle of a claim, made by hand: ring r owned by a
 * second attachment's cache whose record says it is claiming there.  A
 * get passes that ring by and takes from the other; a refill's first
 * try, for more than the request, does not wait; a get that the other
 * ring cannot serve waits until the owner's claim is done, then takes
 * the ring back; a put goes to the other ring.
 */
START_TEST(test_ring_owner_busy)
{
	static void *objs[OWN_POOL];
	struct shmpool *pool, *other, *cached;
	struct shmpool_cache *oc;
	struct ring *r;
	unsigned int ring, inr, k;
	int cpu = own_cpu(0), cleared[2];
	void *one;
	cpu_set_t saved;
	double deadline;
	ssize_t wrote;
	pid_t pid;

	if (!own_create_two_rings("test_ring_owner_busy", "ownbusy"))
		return;
	ck_assert_int_eq(sched_getaffinity(0, sizeof(saved), &saved), 0);
	own_pin(cpu);
	pool = tu_attach("ownbusy", 0);
	other = tu_attach("ownbusy", 0);
	ck_assert_uint_eq(pool_handle(pool)->nb_rings, 2);
	ring = (unsigned int)cpu & 1;
	r = pool_handle(pool)->ring_r[ring];
	inr = (unsigned int)(uatomic_read(&r->prod_head) -
		uatomic_read(&r->cons_head));
	ck_assert_uint_eq(inr, OWN_POOL / 2);
	oc = shmpool_default_cache(other);
	uatomic_set(&oc->ring_op_ring, ring);
	uatomic_set(&oc->ring_op, RING_OP_GET);
	uatomic_set(&r->owner, RING_OWN(oc->slot, RING_OWN_OWNED));

	/* The other ring's half but 10: ring r is passed by, being taken
	 * back, fenced, not yet free. */
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, OWN_POOL - inr - 10),
		0);
	ck_assert_uint_eq(uatomic_read(&r->owner),
		RING_OWN(oc->slot, RING_OWN_FENCED));
	/* A cache of 64's miss: its refill's first try, for 65, does not
	 * wait for ring r; its second, for the one object, finds it in the
	 * other ring.  Back in that ring when it detaches. */
	cached = tu_attach("ownbusy", 64);
	ck_assert_int_eq(shmpool_get(cached, &one), 0);
	ck_assert_int_eq(shmpool_put(cached, one), 0);
	ck_assert_int_eq(shmpool_detach(cached), 0);
	ck_assert_uint_eq(uatomic_read(&r->prod_head) -
		uatomic_read(&r->cons_head), inr);
	ck_assert_int_eq(shmpool_get_bulk(pool, objs + OWN_POOL - inr - 10,
		10), 0);

	/* A get that only ring r can serve, owned again: it waits (it has
	 * been there once the word is FENCED again) until the claim is
	 * done, the byte written before. */
	uatomic_set(&r->owner, RING_OWN(oc->slot, RING_OWN_OWNED));
	ck_assert_int_eq(pipe(cleared), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(cleared[1]);
		busy_getter("ownbusy", cpu, cleared[0]);
	}
	close(cleared[0]);
	deadline = tu_now() + 60;
	while (uatomic_read(&r->owner) != RING_OWN(oc->slot,
			RING_OWN_FENCED)) {
		int status;

		/* An early exit says why (30: the get failed). */
		if (waitpid(pid, &status, WNOHANG) == pid)
			ck_abort_msg("the getter exited early, status %#x",
				status);
		if (tu_now() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			ck_abort_msg("the get never came to ring %u", ring);
		}
		sched_yield();
	}
	/* A child whose get came back without the objects has exited 30:
	 * the wait says so, not the write's SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	wrote = write(cleared[1], "c", 1);
	close(cleared[1]);
	uatomic_set(&oc->ring_op, 0);
	tu_wait_children(&pid, 1, 60);
	signal(SIGPIPE, SIG_DFL);
	ck_assert_int_eq(wrote, 1);
	ck_assert_uint_eq(uatomic_read(&r->owner), 0);
	ck_assert_uint_eq(uatomic_read(&r->prod_head) -
		uatomic_read(&r->cons_head), inr);

	/* Busy again: the puts go to the other ring, whole. */
	uatomic_set(&oc->ring_op, RING_OP_GET);
	uatomic_set(&r->owner, RING_OWN(oc->slot, RING_OWN_OWNED));
	for (k = 0; k < OWN_POOL - inr; k++)
		ck_assert_int_eq(shmpool_put(pool, objs[k]), 0);
	ck_assert_uint_eq(uatomic_read(&r->prod_head) -
		uatomic_read(&r->cons_head), inr);
	ck_assert_uint_eq(shmpool_avail_count(pool), OWN_POOL);

	/* The owner's claim done: the next get takes the ring back. */
	uatomic_set(&oc->ring_op, 0);
	own_get_all(pool);
	ck_assert_uint_eq(uatomic_read(&r->owner), 0);
	ck_assert_int_eq(shmpool_detach(other), 0);
	ck_assert_int_eq(shmpool_detach(pool), 0);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(saved), &saved), 0);
}
END_TEST

/*
 * Child of test_flush_waits_with_objects(): pinned to cpu, a cache of 64
 * filled by one get and put; its slot and length to ready; at a byte on
 * go, the flush, which must wait for the rings' owners and end with the
 * cache empty.
 */
static void
busy_flusher(const char *name, int cpu, int ready, int go)
{
	struct shmpool_cache *cache;
	struct shmpool *pool;
	uint32_t said[2];
	void *obj;
	char c;

	own_pin(cpu);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		_exit(44);
	pool = tu_attach(name, 64);
	cache = shmpool_default_cache(pool);
	if (shmpool_get(pool, &obj) != 0 || shmpool_put(pool, obj) != 0)
		_exit(40);
	said[0] = cache->slot;
	said[1] = SHMPOOL_W_LEN_(cache->w);
	if (write(ready, said, sizeof(said)) != sizeof(said) ||
	    read(go, &c, 1) != 1)
		_exit(41);
	if (shmpool_cache_flush(cache) != 0)
		_exit(42);
	if (SHMPOOL_W_LEN_(cache->w) != 0)
		_exit(43);
	_exit(shmpool_detach(pool) == 0 ? 0 : 45);
}

/*
 * Pool name (two rings, own_create_two_rings()) attached at *pool, and a
 * busy_flusher() child on the first CPU, whose flush is let go once each
 * ring is owned by a cache of other[], attached here, whose record says
 * it is in the middle of a claim there.  said: the child's slot and its
 * cache's length (65).  The child's pid.
 */
static pid_t
flush_busy_start(const char *name, struct shmpool **pool,
		struct shmpool *other[2], uint32_t said[2])
{
	struct shmpool_cache *oc;
	unsigned int r;
	int go[2];
	pid_t pid;

	*pool = tu_attach(name, 0);
	ck_assert_uint_eq(pool_handle(*pool)->nb_rings, 2);
	pid = own_fork(busy_flusher, name, own_cpu(0), go, said,
		2 * sizeof(said[0]));
	/* A refill to 64 + 1, the one got put back: 65. */
	ck_assert_uint_eq(said[1], 65);
	for (r = 0; r < 2; r++) {
		other[r] = tu_attach(name, 0);
		oc = shmpool_default_cache(other[r]);
		uatomic_set(&oc->ring_op_ring, r);
		uatomic_set(&oc->ring_op, RING_OP_GET);
		uatomic_set(&pool_handle(*pool)->ring_r[r]->owner,
			RING_OWN(oc->slot, RING_OWN_OWNED));
	}
	ck_assert_int_eq(write(go[1], "g", 1), 1);
	close(go[1]);
	return pid;
}

/*
 * The flush of flush_busy_start() seen waiting with its objects in its
 * cache: within 30 s, the owner word of the ring of its CPU FENCED (its
 * first pass has been there) and its length back at said[1] (0 in a
 * pass); 1, or 0 if not seen.  Then, the rings still busy, it makes no
 * pass (rings_open()): *off counts the lengths other than said[1] in
 * 100000 more looks.  Says what it saw, for test.
 */
static int
flush_waiting(const char *test, struct shmpool *pool,
		struct shmpool *other[2], const uint32_t said[2],
		unsigned int *off)
{
	struct shmpool_cache *fc = &pool_handle(pool)->slots[said[0]].cache;
	unsigned int ring = (unsigned int)own_cpu(0) & 1, polls = 0, k;
	uint32_t fenced = RING_OWN(shmpool_default_cache(other[ring])->slot,
		RING_OWN_FENCED);
	double deadline = tu_now() + 30;
	int seen = 0;

	while (!seen && tu_now() < deadline) {
		seen = uatomic_read(&pool_handle(pool)->ring_r[ring]->owner) ==
			fenced && SHMPOOL_W_LEN_(uatomic_read(&fc->w)) ==
			said[1];
		polls++;
	}
	*off = 0;
	for (k = 0; seen && k < 100000; k++)
		*off += SHMPOOL_W_LEN_(uatomic_read(&fc->w)) != said[1];
	printf("%s: the cache's length %s back at %u after %u looks, then "
		"not %u in %u of %u\n", test, seen ? "seen" : "never seen",
		said[1], polls, said[1], *off, k);
	return seen;
}

/* The records of flush_busy_start()'s owners cleared: their claims are
 * done. */
static void
flush_busy_end(struct shmpool *other[2])
{
	unsigned int r;

	for (r = 0; r < 2; r++)
		uatomic_set(&shmpool_default_cache(other[r])->ring_op, 0);
}

/*
 * A flush that every ring's owner, in the middle of a claim there, makes
 * wait, on pool name, for test: while it waits its cache holds its
 * objects (the length back at its value after its first pass, and kept
 * there while the rings stay busy, flush_waiting()).  Then, with kill_it,
 * killed, it leaves them all in its cache, where shmpoold would find
 * them, and the rings hold the others; without, once the claims are done
 * it empties the cache and every object is in the rings, once.
 */
static void
flush_busy_test(const char *test, const char *name, int kill_it)
{
	struct shmpool *pool, *other[2];
	uint32_t said[2];
	unsigned int r, off;
	int seen, status;
	pid_t pid;

	if (!own_create_two_rings(test, name))
		return;
	pid = flush_busy_start(name, &pool, other, said);
	seen = flush_waiting(test, pool, other, said, &off);
	if (kill_it) {
		ck_assert_int_eq(kill(pid, SIGKILL), 0);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	} else {
		flush_busy_end(other);
		tu_wait_children(&pid, 1, 60);
	}
	ck_assert_int_eq(seen, 1);
	ck_assert_uint_eq(off, 0);
	if (kill_it) {
		ck_assert_uint_eq(SHMPOOL_W_LEN_(uatomic_read(
			&pool_handle(pool)->slots[said[0]].cache.w)), said[1]);
		ck_assert_uint_eq(rings_count(pool_handle(pool)),
			OWN_POOL - said[1]);
		flush_busy_end(other);
	}
	for (r = 0; r < 2; r++)
		ck_assert_int_eq(shmpool_detach(other[r]), 0);
	if (!kill_it) {
		ck_assert_uint_eq(rings_count(pool_handle(pool)), OWN_POOL);
		own_get_all(pool);
	}
	ck_assert_int_eq(shmpool_detach(pool), 0);
}

START_TEST(test_flush_waits_with_objects)
{
	flush_busy_test("test_flush_waits_with_objects", "ownflush", 0);
}
END_TEST

/*
 * An attachment does not survive fork(2): the child's detach, claim,
 * release and flush through the parent's attachment and cache are
 * refused (-EINVAL), and leave them as they were, the parent's cache
 * with its objects and the parent able to release and detach.
 */
START_TEST(test_fork_child_refuses_parents)
{
	struct shmpool *pool, *again;
	struct shmpool_cache *c, *other;
	void *objs[6];
	pid_t pid;
	int status;

	tu_create("forked", 256, 64, 16, 4);
	pool = tu_attach("forked", 0);
	ck_assert_int_eq(shmpool_cache_claim(pool, 16, &c), 0);
	ck_assert_int_eq(shmpool_generic_get(pool, objs, 6, c), 0);
	ck_assert_int_eq(shmpool_generic_put(pool, objs, 6, c), 0);
	/* Refilled to 16 + 6, 6 taken, 6 put back. */
	ck_assert_uint_eq(shmpool_cache_len_(c), 22);
	ck_assert_uint_eq(tu_slots_in_use(pool), 2);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int bad = 0;

		if (shmpool_cache_flush(c) != -EINVAL)
			bad |= 1;
		if (shmpool_cache_release(c) != -EINVAL)
			bad |= 2;
		if (shmpool_cache_claim(pool, 16, &other) != -EINVAL)
			bad |= 4;
		if (shmpool_detach(pool) != -EINVAL ||
		    strstr(shmpool_last_error(), "fork") == NULL)
			bad |= 8;
		/* The child's own attachment works as any. */
		again = tu_attach("forked", 0);
		if (shmpool_get_bulk(again, objs, 1) != 0 ||
		    shmpool_put_bulk(again, objs, 1) != 0 ||
		    shmpool_detach(again) != 0)
			bad |= 16;
		_exit(bad);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);

	ck_assert_uint_eq(shmpool_cache_len_(c), 22);
	ck_assert_uint_eq(tu_slots_in_use(pool), 2);
	ck_assert_int_eq(shmpool_cache_release(c), 0);
	ck_assert_uint_eq(tu_slots_in_use(pool), 1);
	ck_assert_int_eq(shmpool_detach(pool), 0);
	pool = tu_attach("forked", 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), 256);
	ck_assert_uint_eq(tu_slots_in_use(pool), 1);
	ck_assert_int_eq(shmpool_detach(pool), 0);
}
END_TEST

START_TEST(test_flush_killed_while_waiting)
{
	flush_busy_test("test_flush_killed_while_waiting", "ownflushkill", 1);
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
	tcase_add_test(tc, test_fork_child_refuses_parents);
	tcase_add_test(tc, test_ring_owned_and_taken);
	tcase_add_test(tc, test_ring_owned_unpinned);
	tcase_add_test(tc, test_ring_owner_killed);
	tcase_add_test(tc, test_ring_owned_at_any_phase);
	tcase_add_test(tc, test_ring_owner_busy);
	tcase_add_test(tc, test_flush_waits_with_objects);
	tcase_add_test(tc, test_flush_killed_while_waiting);
	tcase_add_test(tc, test_ring_owners_hammer);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return tu_run(multiproc_suite());
}
