/*
 * check_ring.c - the lock-free ring alone: all-or-nothing and burst
 * semantics, wrap-around of index and counters, and forked processes
 * moving millions of references through one ring in shared memory.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring.h"
#include "testutil.h"

struct shared_ring {
	struct ring_view v;
	size_t len;
};

static struct shared_ring
ring_new(uint32_t size)
{
	struct shared_ring s;

	s.len = ring_mem_size(size);
	s.v.r = mmap(NULL, s.len, PROT_READ | PROT_WRITE,
		MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(s.v.r, MAP_FAILED);
	ring_init(s.v.r, size);
	s.v.slots = s.v.r->slots;
	s.v.size = size;
	s.v.mask = size - 1;
	s.v.capacity = size;
	return s;
}

/* Start both sides' counters at base, to cross the 2^32 wrap. */
static void
ring_set_counters(struct ring_view *v, uint32_t base)
{
	v->r->prod.head = v->r->prod.tail = base;
	v->r->cons.head = v->r->cons.tail = base;
}

START_TEST(test_bulk_and_burst)
{
	struct shared_ring s = ring_new(16);
	uint32_t in[20], out[20];
	unsigned int i;

	for (i = 0; i < 20; i++)
		in[i] = 100 + i;
	ck_assert_uint_eq(ring_count(&s.v), 0);
	ck_assert_uint_eq(ring_dequeue(&s.v, out, 1, RING_BULK), 0);
	ck_assert_uint_eq(ring_dequeue(&s.v, out, 1, RING_BURST), 0);

	ck_assert_uint_eq(ring_enqueue(&s.v, in, 10, RING_BULK), 10);
	ck_assert_uint_eq(ring_count(&s.v), 10);
	/* All or nothing: 11 are not there, and nothing moves. */
	ck_assert_uint_eq(ring_dequeue(&s.v, out, 11, RING_BULK), 0);
	ck_assert_uint_eq(ring_count(&s.v), 10);
	/* 7 do not fit, and nothing moves; a burst takes the 6 that fit. */
	ck_assert_uint_eq(ring_enqueue(&s.v, in + 10, 7, RING_BULK), 0);
	ck_assert_uint_eq(ring_count(&s.v), 10);
	ck_assert_uint_eq(ring_enqueue(&s.v, in + 10, 7, RING_BURST), 6);
	ck_assert_uint_eq(ring_count(&s.v), 16);
	ck_assert_uint_eq(ring_enqueue(&s.v, in, 1, RING_BURST), 0);

	/* FIFO, burst takes what there is. */
	ck_assert_uint_eq(ring_dequeue(&s.v, out, 20, RING_BURST), 16);
	for (i = 0; i < 16; i++)
		ck_assert_uint_eq(out[i], 100 + i);
	ck_assert_uint_eq(ring_count(&s.v), 0);
	munmap(s.v.r, s.len);
}
END_TEST

START_TEST(test_wrap)
{
	struct shared_ring s = ring_new(16);
	uint32_t in[12], out[12], next_in = 0, next_out = 0;
	unsigned int round, i;

	/* Start 5 entries before the 32-bit counters wrap: 12-entry bulks
	 * cross both the array's end and the counters' wrap. */
	ring_set_counters(&s.v, UINT32_MAX - 4);
	for (round = 0; round < 40; round++) {
		for (i = 0; i < 12; i++)
			in[i] = next_in++;
		ck_assert_uint_eq(ring_enqueue(&s.v, in, 12, RING_BULK), 12);
		ck_assert_uint_eq(ring_count(&s.v), 12);
		ck_assert_uint_eq(ring_dequeue(&s.v, out, 12, RING_BULK), 12);
		for (i = 0; i < 12; i++)
			ck_assert_uint_eq(out[i], next_out++);
	}
	ck_assert_uint_eq(s.v.r->prod.tail, (uint32_t)(UINT32_MAX - 4 + 480));
	munmap(s.v.r, s.len);
}
END_TEST

#define MP_REFS		4096
#define MP_MOVES	2000000	/* references each process moves */

/*
 * A child takes references out in random bulks and bursts, holds up to
 * four batches, and puts them back.  It exits 1 on a reference it cannot
 * have been given.  Capacity equals the reference count, so everything a
 * child holds always fits back.
 */
static void
mp_child(struct ring_view *v, uint64_t seed)
{
	uint32_t held[4 * 64];
	unsigned int nheld = 0, moved = 0, n, got, i;

	while (moved < MP_MOVES) {
		enum ring_mode mode = tu_rand(&seed) & 1 ? RING_BULK : RING_BURST;

		n = 1 + tu_rand(&seed) % 64;
		if (nheld + n <= 4 * 64) {
			got = ring_dequeue(v, held + nheld, n, mode);
			if (mode == RING_BULK && got != 0 && got != n)
				_exit(2);
			for (i = nheld; i < nheld + got; i++)
				if (held[i] >= MP_REFS)
					_exit(1);
			nheld += got;
			moved += got;
		}
		if (nheld > 0 && (tu_rand(&seed) & 3) == 0) {
			n = 1 + tu_rand(&seed) % nheld;
			mode = tu_rand(&seed) & 1 ? RING_BULK : RING_BURST;
			if (ring_enqueue(v, held + nheld - n, n, mode) != n)
				_exit(3);
			nheld -= n;
		}
	}
	if (nheld > 0 && ring_enqueue(v, held, nheld, RING_BULK) != nheld)
		_exit(3);
	_exit(0);
}

static void
mp_run(int nproc)
{
	struct shared_ring s = ring_new(MP_REFS);
	static uint32_t refs[MP_REFS], seen[MP_REFS];
	pid_t pids[8];
	int i;

	for (i = 0; i < MP_REFS; i++)
		refs[i] = (uint32_t)i;
	ck_assert_uint_eq(ring_enqueue(&s.v, refs, MP_REFS, RING_BULK),
		MP_REFS);
	for (i = 0; i < nproc; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0)
			mp_child(&s.v, 0x9e3779b97f4a7c15ULL * (i + 1));
	}
	tu_wait_children(pids, nproc, 120);

	/* Every reference is back, exactly once. */
	ck_assert_uint_eq(ring_count(&s.v), MP_REFS);
	ck_assert_uint_eq(s.v.r->prod.head, s.v.r->prod.tail);
	ck_assert_uint_eq(s.v.r->cons.head, s.v.r->cons.tail);
	ck_assert_uint_eq(ring_dequeue(&s.v, refs, MP_REFS, RING_BULK),
		MP_REFS);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < MP_REFS; i++) {
		ck_assert_uint_lt(refs[i], MP_REFS);
		seen[refs[i]]++;
	}
	for (i = 0; i < MP_REFS; i++)
		ck_assert_msg(seen[i] == 1, "reference %d seen %u times", i,
			seen[i]);
	munmap(s.v.r, s.len);
}

START_TEST(test_two_processes)
{
	mp_run(2);
}
END_TEST

START_TEST(test_four_processes)
{
	mp_run(4);
}
END_TEST

static Suite *
ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("single process");
	TCase *mp = tcase_create("processes");

	tcase_add_test(tc, test_bulk_and_burst);
	tcase_add_test(tc, test_wrap);
	suite_add_tcase(s, tc);
	tcase_set_timeout(mp, 180);
	tcase_add_test(mp, test_two_processes);
	tcase_add_test(mp, test_four_processes);
	suite_add_tcase(s, mp);
	return s;
}

int
main(void)
{
	return tu_run(ring_suite());
}
