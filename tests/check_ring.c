/*
 * check_ring.c - the ring alone: all-or-nothing and burst semantics,
 * wrap-around of index and sequences, forked processes moving millions of
 * references through one ring in shared memory, and processes killed in
 * the middle of an operation (what ring_repair() makes of what they left).
 * Also each build of the long copies (ring.c, copy-x86_64.S), as this suite
 * links the library's objects themselves.
 */
#include "config.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "segment-internal.h"
#include "testutil.h"

struct shared_ring {
	struct ring_view v;
	size_t len;
	uint64_t *recs;		/* producers' records, one per process */
	uint32_t *rings;	/* the ring each is for: record i's at
				   [2 * i], as far apart as the records */
};

#define NRECS		8

static struct shared_ring
ring_new(uint32_t size)
{
	struct shared_ring s;

	s.len = ring_mem_size(size);
	s.v.r = mmap(NULL, s.len, PROT_READ | PROT_WRITE,
		MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(s.v.r, MAP_FAILED);
	ring_init(s.v.r, size);
	s.v.ents = s.v.r->ents;
	s.v.size = size;
	s.v.mask = size - 1;
	s.recs = mmap(NULL, 2 * NRECS * sizeof(uint64_t),
		PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(s.recs, MAP_FAILED);
	s.rings = (uint32_t *)(s.recs + NRECS);
	return s;
}

static void
ring_free(struct shared_ring *s)
{
	munmap(s->v.r, s->len);
	munmap(s->recs, 2 * NRECS * sizeof(uint64_t));
}

/*
 * Start both heads at base, every entry unwritten for the lap from there,
 * so that sequences cross the 2^32 wrap.
 */
static void
ring_set_heads(struct ring_view *v, uint64_t base)
{
	uint64_t q;

	v->r->prod_head = v->r->cons_head = base;
	for (q = base; q < base + v->size; q++)
		v->ents[q & v->mask] = ring_ent(ring_seq(v, q - v->size), 0);
}

/* Repair s as ring number ring (repair(): 0, every record's). */
static struct ring_repair_stats
repair_as(struct shared_ring *s, uint32_t ring)
{
	struct ring_repair_stats st;

	ck_assert_int_eq(ring_repair(&s->v, ring, s->recs, s->rings,
		sizeof(uint64_t), NRECS, &st), 0);
	return st;
}

static struct ring_repair_stats
repair(struct shared_ring *s)
{
	return repair_as(s, 0);
}

/* Repair s (repair()): exactly holes made, of which spoiled had a
 * sequence no lap has, and deferred left to a live record; then the
 * ring's count of holes. */
static void
check_repair(struct shared_ring *s, uint64_t holes, uint64_t spoiled,
		uint64_t deferred, uint64_t ring_holes)
{
	struct ring_repair_stats st = repair(s);

	ck_assert_uint_eq(st.holes, holes);
	ck_assert_uint_eq(st.spoiled, spoiled);
	ck_assert_uint_eq(st.deferred, deferred);
	ck_assert_uint_eq(uatomic_read(&s->v.r->holes), ring_holes);
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

	ck_assert_uint_eq(ring_enqueue(&s.v, in, 10, RING_BULK, &s.recs[0]), 10);
	ck_assert_uint_eq(ring_count(&s.v), 10);
	/* All or nothing: 11 are not there, and nothing moves. */
	ck_assert_uint_eq(ring_dequeue(&s.v, out, 11, RING_BULK), 0);
	ck_assert_uint_eq(ring_count(&s.v), 10);
	/* 7 do not fit, and nothing moves; a burst takes the 6 that fit. */
	ck_assert_uint_eq(ring_enqueue(&s.v, in + 10, 7, RING_BULK, &s.recs[0]), 0);
	ck_assert_uint_eq(ring_count(&s.v), 10);
	ck_assert_uint_eq(ring_enqueue(&s.v, in + 10, 7, RING_BURST, &s.recs[0]), 6);
	ck_assert_uint_eq(ring_count(&s.v), 16);
	ck_assert_uint_eq(ring_enqueue(&s.v, in, 1, RING_BURST, &s.recs[0]), 0);

	/* FIFO, burst takes what there is. */
	ck_assert_uint_eq(ring_dequeue(&s.v, out, 20, RING_BURST), 16);
	for (i = 0; i < 16; i++)
		ck_assert_uint_eq(out[i], 100 + i);
	ck_assert_uint_eq(ring_count(&s.v), 0);
	ck_assert_uint_eq(s.recs[0], 0);
	ring_free(&s);
}
END_TEST

START_TEST(test_wrap)
{
	struct shared_ring s = ring_new(16);
	uint32_t in[12], out[12], next_in = 0, next_out = 0;
	unsigned int round, i;

	/* Start 5 entries before the 32-bit sequences wrap: 12-entry bulks
	 * cross both the array's end and the sequences' wrap. */
	ring_set_heads(&s.v, UINT32_MAX - 4);
	for (round = 0; round < 40; round++) {
		for (i = 0; i < 12; i++)
			in[i] = next_in++;
		ck_assert_uint_eq(ring_enqueue(&s.v, in, 12, RING_BULK, &s.recs[0]), 12);
		ck_assert_uint_eq(ring_count(&s.v), 12);
		ck_assert_uint_eq(ring_dequeue(&s.v, out, 12, RING_BULK), 12);
		for (i = 0; i < 12; i++)
			ck_assert_uint_eq(out[i], next_out++);
	}
	ck_assert_uint_eq(s.v.r->prod_head, (uint64_t)UINT32_MAX - 4 + 480);
	ck_assert_uint_eq(s.v.r->cons_head, (uint64_t)UINT32_MAX - 4 + 480);
	ck_assert_uint_eq(s.recs[0], 0);
	ring_free(&s);
}
END_TEST

/* Objects of the test_wide_copies pool: references 0 .. WIDE_OBJS - 1. */
#define WIDE_OBJS	300
static char wide_objs[WIDE_OBJS << SHMPOOL_REF_SHIFT]
	__attribute__((aligned(SHMPOOL_CACHE_LINE)));

static void *
wide_obj(unsigned int i)
{
	return wide_objs + ((size_t)(i % WIDE_OBJS) << SHMPOOL_REF_SHIFT);
}

/* Their base twice, 16-byte aligned, as an attachment keeps it for the
 * short copies (pool_handle.objbase2): given to them every other time. */
static const uint64_t *
wide_b2(unsigned int turn)
{
	static uint64_t b2[2] __attribute__((aligned(16)));

	b2[0] = b2[1] = (uint64_t)(uintptr_t)wide_objs;
	return turn & 1 ? b2 : NULL;
}

/*
 * Bulks of 64-bit elements, pointers and offsets, of RING_WIDE_MIN and
 * more (the copies built for the CPU's widest vectors, ring_fill_wide()
 * and ring_copy_out_wide()), of every size from RING_WIDE_MIN - 1 (the
 * largest short one) to 49 (a write's or read's last turn of sixteen
 * overlapping the one before it by 15 to 0 entries) and on to 256 in
 * steps of 5, across the array's end and the sequences' wrap: each
 * element comes out as it went in, in order.
 */
START_TEST(test_wide_copies)
{
	struct shared_ring s = ring_new(256);
	void *in[256], *out[256];
	uint64_t off[256];
	unsigned int next = 0, n, i;

	ring_set_heads(&s.v, UINT32_MAX - 100);
	for (n = RING_WIDE_MIN - 1; n <= 256; n += n < 49 ? 1 : 5) {
		for (i = 0; i < n; i++)
			in[i] = wide_obj(next + i);
		ck_assert_uint_eq(ring_put(&s.v, in, RING_PTRS, wide_objs, n,
			RING_BULK, &s.recs[0], &ring_slot_none), n);
		ck_assert_uint_eq(ring_get(&s.v, off, RING_OFFS, NULL, n,
			RING_BULK, NULL, &ring_slot_none), n);
		for (i = 0; i < n; i++)
			ck_assert_uint_eq(off[i], (uint64_t)((next + i) %
				WIDE_OBJS) << SHMPOOL_REF_SHIFT);
		ck_assert_uint_eq(ring_put(&s.v, off, RING_OFFS, NULL, n,
			RING_BULK, &s.recs[0], &ring_slot_none), n);
		memset(out, 0, sizeof(out));
		ck_assert_uint_eq(ring_get(&s.v, out, RING_PTRS, wide_objs, n,
			RING_BULK, NULL, &ring_slot_none), n);
		for (i = 0; i < n; i++)
			ck_assert_ptr_eq(out[i], in[i]);
		ck_assert_uint_eq(ring_count(&s.v), 0);
		next += n;
	}
	ck_assert_uint_eq(s.recs[0], 0);
	ring_free(&s);
}
END_TEST

/*
 * A long read (96 entries, 40 before the array's end and 56 after it, each
 * piece long enough for the wide copy) sees one entry that is not yet
 * written, or a hole, wherever it is among the 96: the first, inside the
 * vectors, the last of each piece.
 */
START_TEST(test_wide_read_checks)
{
	static const unsigned int at[] = { 0, 1, 20, 38, 39, 40, 41, 70,
		94, 95 };
	struct shared_ring s = ring_new(256);
	uint64_t pos = ((uint64_t)1 << 32) - 40, off[96], *e, good;
	void *in[96];
	unsigned int i, j;

	ring_set_heads(&s.v, pos);
	for (i = 0; i < 96; i++)
		in[i] = wide_obj(i);
	ck_assert_uint_eq(ring_put(&s.v, in, RING_PTRS, wide_objs, 96,
		RING_BULK, &s.recs[0], &ring_slot_none), 96);
	ck_assert_int_eq(ring_read(&s.v, pos, 96, off, RING_OFFS, NULL), 1);
	for (j = 0; j < sizeof(at) / sizeof(at[0]); j++) {
		e = &s.v.ents[(pos + at[j]) & s.v.mask];
		good = *e;
		/* Unwritten: the entry of the lap before. */
		*e = ring_ent(ring_seq(&s.v, pos + at[j] - 256), at[j]);
		ck_assert_msg(ring_read(&s.v, pos, 96, off, RING_OFFS, NULL)
			== 0, "unwritten entry %u not seen", at[j]);
		/* A hole. */
		*e = ring_ent(ring_seq(&s.v, pos + at[j]) + 1, at[j]);
		ck_assert_msg(ring_read(&s.v, pos, 96, off, RING_OFFS, NULL)
			== 0, "hole at entry %u not seen", at[j]);
		*e = good;
		ck_assert_int_eq(ring_read(&s.v, pos, 96, off, RING_OFFS,
			NULL), 1);
	}
	for (i = 0; i < 96; i++)
		ck_assert_uint_eq(off[i], (uint64_t)i << SHMPOOL_REF_SHIFT);
	ring_free(&s);
}
END_TEST

/*
 * Bulks of 64-bit elements under RING_WIDE_MIN (the short copies, two
 * entries a turn where the compiler has vectors): every size from 1 to
 * RING_WIDE_MIN - 1 from every index of the array, so across its end at
 * every split, with sequences across the 2^32 wrap.  Pointers in, offsets
 * out, offsets in, pointers out: each element as it went in, in order.
 */
START_TEST(test_short_copies)
{
	struct shared_ring s = ring_new(64);
	void *in[RING_WIDE_MIN], *out[RING_WIDE_MIN];
	uint64_t off[RING_WIDE_MIN];
	unsigned int n, idx, i;

	for (n = 1; n < RING_WIDE_MIN; n++) {
		for (idx = 0; idx < 64; idx++) {
			ring_set_heads(&s.v, ((uint64_t)1 << 32) - 64 + idx);
			for (i = 0; i < n; i++)
				in[i] = wide_obj(n * 7 + idx + i);
			ck_assert_uint_eq(ring_put(&s.v, in, RING_PTRS,
				wide_objs, n, RING_BULK, &s.recs[0],
				&ring_slot_none), n);
			memset(off, 0xff, sizeof(off));
			ck_assert_uint_eq(ring_get(&s.v, off, RING_OFFS, NULL,
				n, RING_BULK, NULL, &ring_slot_none), n);
			for (i = 0; i < n; i++)
				ck_assert_uint_eq(off[i], (uint64_t)((n * 7 +
					idx + i) % WIDE_OBJS) <<
					SHMPOOL_REF_SHIFT);
			ck_assert_uint_eq(off[n], UINT64_MAX);
			ck_assert_uint_eq(ring_put(&s.v, off, RING_OFFS, NULL,
				n, RING_BULK, &s.recs[0], &ring_slot_none), n);
			memset(out, 0, sizeof(out));
			ck_assert_uint_eq(ring_get(&s.v, out, RING_PTRS,
				wide_objs, n, RING_BULK, NULL, &ring_slot_none),
				n);
			for (i = 0; i < n; i++)
				ck_assert_ptr_eq(out[i], in[i]);
			ck_assert_ptr_null(out[n]);
			ck_assert_uint_eq(ring_count(&s.v), 0);
			ck_assert_uint_eq(s.v.r->cons_head,
				((uint64_t)1 << 32) - 64 + idx + 2 * n);
		}
	}
	ck_assert_uint_eq(s.recs[0], 0);
	ring_free(&s);
}
END_TEST

/*
 * A short read (1 to RING_WIDE_MIN - 1 entries), within the array or
 * across its end at every split, sees one entry that is not yet written,
 * or a hole, wherever it is: the lone entry's check and the pairs' miss
 * none, in either half of a pair, the last pair's overlap included.
 */
START_TEST(test_short_read_checks)
{
	struct shared_ring s = ring_new(64);
	uint64_t pos, off[RING_WIDE_MIN], *e, good;
	void *in[RING_WIDE_MIN];
	unsigned int n, split, i, j;

	for (i = 0; i < RING_WIDE_MIN; i++)
		in[i] = wide_obj(i);
	for (n = 1; n < RING_WIDE_MIN; n++) {
		/* split: entries before the array's end; n: none crosses. */
		for (split = 1; split <= n; split++) {
			pos = ((uint64_t)1 << 32) - (split == n ? 128 : split);
			ring_set_heads(&s.v, pos);
			ck_assert_uint_eq(ring_put(&s.v, in, RING_PTRS,
				wide_objs, n, RING_BULK, &s.recs[0],
				&ring_slot_none), n);
			ck_assert_int_eq(ring_read(&s.v, pos, n, off,
				RING_OFFS, NULL), 1);
			for (j = 0; j < n; j++) {
				e = &s.v.ents[(pos + j) & s.v.mask];
				good = *e;
				*e = ring_ent(ring_seq(&s.v, pos + j - 64), j);
				ck_assert_msg(ring_read(&s.v, pos, n, off,
					RING_OFFS, NULL) == 0,
					"n %u split %u: unwritten entry %u "
					"not seen", n, split, j);
				*e = ring_ent(ring_seq(&s.v, pos + j) + 1, j);
				ck_assert_msg(ring_read(&s.v, pos, n, off,
					RING_PTRS, wide_objs) == 0,
					"n %u split %u: hole at entry %u not "
					"seen", n, split, j);
				*e = good;
			}
			ck_assert_int_eq(ring_read(&s.v, pos, n, off,
				RING_OFFS, NULL), 1);
			for (i = 0; i < n; i++)
				ck_assert_uint_eq(off[i],
					(uint64_t)i << SHMPOOL_REF_SHIFT);
		}
	}
	ring_free(&s);
}
END_TEST

/*
 * The get beyond its first try (ring_get_slow(), as after losing a race
 * for cons_head): whole copies from where the head is, in order, across
 * the array's end; and, where one meets a hole, the walk that steps over
 * it and takes the next entries instead.
 */
START_TEST(test_get_slow)
{
	struct shared_ring s = ring_new(256);
	uint64_t pos = ((uint64_t)1 << 32) - 40, off[100];
	void *in[100];
	unsigned int i;

	ring_set_heads(&s.v, pos);
	for (i = 0; i < 100; i++)
		in[i] = wide_obj(i);
	ck_assert_uint_eq(ring_put(&s.v, in, RING_PTRS, wide_objs, 100,
		RING_BULK, &s.recs[0], &ring_slot_none), 100);
	ck_assert_int_eq(ring_get_slow(&s.v, off, RING_OFFS, NULL, 60,
		RING_BULK, NULL, RING_OWN_NONE), 60);
	for (i = 0; i < 60; i++)
		ck_assert_uint_eq(off[i], (uint64_t)i << SHMPOOL_REF_SHIFT);
	ck_assert_uint_eq(s.v.r->cons_head, pos + 60);
	/* A hole at position 70 (as shmpoold marks one): 30 from 60 are
	 * 60..69 and 71..90. */
	s.v.ents[(pos + 70) & s.v.mask] = ring_ent(ring_seq(&s.v, pos + 70) +
		1, 0);
	uatomic_set(&s.v.r->holes, 1);
	ck_assert_int_eq(ring_get_slow(&s.v, off, RING_OFFS, NULL, 30,
		RING_BULK, NULL, RING_OWN_NONE), 30);
	for (i = 0; i < 30; i++)
		ck_assert_uint_eq(off[i], (uint64_t)(60 + i + (i >= 10)) <<
			SHMPOOL_REF_SHIFT);
	ck_assert_uint_eq(s.v.r->cons_head, pos + 91);
	ck_assert_uint_eq(s.v.r->holes, 0);
	ck_assert_uint_eq(ring_count(&s.v), 9);
	ring_free(&s);
}
END_TEST

/*
 * A put in its three steps (ring_put_claim(), a write, ring_put_done()), as
 * a put through an idle cache makes it: the short write where the claimed
 * positions stay within the array (ring_short()), else the whole write.
 * Returns what ring_put_claim() did, and checks the record on the way:
 * the claim and its count while the positions are being written, 0 after.
 */
static int
put_steps(struct shared_ring *s, void **in, unsigned int n)
{
	uint64_t pos;

	if (!ring_put_claim(s->v.r, s->v.size, n, &s->recs[0], &ring_slot_none,
		&pos)) {
		ck_assert_uint_eq(s->recs[0], 0);
		return 0;
	}
	ck_assert_uint_eq(s->recs[0], RING_OP(pos, n));
	ck_assert_uint_eq(s->v.r->prod_head, pos + n);
	if (ring_short(&s->v, pos, n))
		ring_write_short(&s->v, pos, n, in, RING_PTRS, wide_objs,
			wide_b2((unsigned int)pos));
	else
		ring_write(&s->v, pos, n, in, RING_PTRS, wide_objs);
	ring_put_done(&s->recs[0]);
	ck_assert_uint_eq(s->recs[0], 0);
	return 1;
}

/*
 * The short copies: from every index of a 64-entry ring, every size under
 * RING_WIDE_MIN goes in (put_steps()) and comes out whole
 * (ring_get_short()) where it stays within the array; where it would
 * cross its end the put writes it whole all the same, and the short get
 * does nothing and says 0, as where there are too few entries.  A full
 * ring: the claim takes nothing, and the record is not written (a value
 * left in it stays).
 */
/*
 * ring_short() and ring_short_any() against idx + n <= size and n short
 * (1 .. RING_WIDE_MIN - 1), for every n from 0 to past the short ones, at
 * every index of small rings and at the ends of a large one, in laps
 * around 2^32 (where the 32-bit positions of ring_short() wrap) and
 * 2^33.
 */
START_TEST(test_short_predicates)
{
	static const uint32_t sizes[] = { 1, 2, 4, 64, 1U << 30 };
	static const uint64_t laps[] = { 0, ((uint64_t)1 << 32) - (1U << 30),
		(uint64_t)1 << 32, ((uint64_t)1 << 33) - (1U << 30) };
	struct ring_view v;
	uint64_t pos;
	uint32_t idx, lap, size;
	unsigned int is, il, n;
	int expect;

	memset(&v, 0, sizeof(v));
	for (is = 0; is < sizeof(sizes) / sizeof(sizes[0]); is++) {
		size = sizes[is];
		v.size = size;
		v.mask = size - 1;
		for (il = 0; il < sizeof(laps) / sizeof(laps[0]); il++) {
			for (idx = 0; idx < size; idx++) {
				/* The large ring: its first and last 40. */
				if (size > 64 && idx == 40)
					idx = size - 40;
				/* The lap before laps[il], and the one at it. */
				for (lap = 0; lap < 2; lap++) {
					pos = laps[il] + idx -
						(lap ? 0 : (uint64_t)size);
					for (n = 0; n <= RING_WIDE_MIN + 8;
							n++) {
						expect = n >= 1 &&
							n < RING_WIDE_MIN &&
							(uint64_t)idx + n <=
							size;
						ck_assert_msg(ring_short(&v,
							pos, n) == expect &&
							ring_short_any(&v,
							pos, n) == expect,
							"size %u, position "
							"%" PRIu64 ", n %u: "
							"ring_short() %d, "
							"ring_short_any() %d, "
							"expected %d", size,
							pos, n, ring_short(&v,
							pos, n),
							ring_short_any(&v, pos,
							n), expect);
					}
				}
			}
		}
	}
}
END_TEST

/*
 * The short copies of pointers take the base from b2 where they are given
 * one: written with a wrong base and b2 right, the entries read back right
 * with the right base and no b2, and the other way round; for every size
 * from 2 (a single entry goes by base), at an even and an odd index.
 */
START_TEST(test_short_b2)
{
#if RING_PAIRS
	struct shared_ring s = ring_new(64);
	const uint64_t *b2 = wide_b2(1);
	char *wrong = wide_objs + (8 << SHMPOOL_REF_SHIFT);
	void *in[RING_WIDE_MIN], *out[RING_WIDE_MIN];
	unsigned int n, i, turn;
	uint64_t pos;

	for (n = 2; n < RING_WIDE_MIN; n++) {
		for (turn = 0; turn < 2; turn++) {
			ring_set_heads(&s.v, 1024 + turn);
			for (i = 0; i < n; i++)
				in[i] = wide_obj(20 + i);
			ck_assert(ring_put_claim(s.v.r, s.v.size, n,
				&s.recs[0], &ring_slot_none, &pos));
			ck_assert(ring_short(&s.v, pos, n));
			if (turn == 0)
				ring_write_short(&s.v, pos, n, in, RING_PTRS,
					wrong, b2);
			else
				ring_write_short(&s.v, pos, n, in, RING_PTRS,
					wide_objs, NULL);
			ring_put_done(&s.recs[0]);
			memset(out, 0, sizeof(out));
			if (turn == 0)
				ck_assert_int_eq(ring_get_short(&s.v, out,
					RING_PTRS, wide_objs, NULL, n, NULL,
					&ring_slot_none, NULL), n);
			else
				ck_assert_int_eq(ring_get_short(&s.v, out,
					RING_PTRS, wrong, b2, n, NULL,
					&ring_slot_none, NULL), n);
			for (i = 0; i < n; i++)
				ck_assert_msg(out[i] == in[i], "n %u, %s: "
					"object %u is %p, expected %p", n,
					turn ? "read with b2" :
					"written with b2", i, out[i], in[i]);
		}
	}
	ring_free(&s);
#else
	printf("SKIP: test_short_b2: this build's short copies take no "
		"pair of bases (RING_PAIRS 0)\n");
#endif
}
END_TEST

START_TEST(test_short_tries)
{
	struct shared_ring s = ring_new(64);
	void *in[RING_WIDE_MIN], *out[RING_WIDE_MIN];
	uint64_t base = ((uint64_t)1 << 32) - 64, pos;
	unsigned int n, idx, i, fits;

	for (n = 1; n < RING_WIDE_MIN; n++) {
		for (idx = 0; idx < 64; idx++) {
			pos = base + idx;
			ring_set_heads(&s.v, pos);
			fits = idx + n <= 64;
			for (i = 0; i < n; i++)
				in[i] = wide_obj(idx + i);
			ck_assert_int_eq(ring_short(&s.v, pos, n), fits);
			ck_assert_int_eq(put_steps(&s, in, n), 1);
			ck_assert_uint_eq(s.v.r->prod_head, pos + n);
			/* One more than there is: nothing taken. */
			if (n < RING_WIDE_MIN - 1 && idx + n + 1 <= 64) {
				ck_assert_uint_eq(ring_get_short(&s.v, out,
					RING_PTRS, wide_objs, wide_b2(idx),
					n + 1, NULL, &ring_slot_none, NULL), 0);
				ck_assert_uint_eq(s.v.r->cons_head, pos);
			}
			memset(out, 0, sizeof(out));
			ck_assert_uint_eq(ring_get_short(&s.v, out, RING_PTRS,
				wide_objs, wide_b2(idx / 2), n, NULL,
				&ring_slot_none, NULL), fits ? n : 0);
			if (!fits)
				ck_assert_uint_eq(ring_get(&s.v, out,
					RING_PTRS, wide_objs, n, RING_BULK,
					NULL, &ring_slot_none), n);
			for (i = 0; i < n; i++)
				ck_assert_ptr_eq(out[i], in[i]);
			ck_assert_uint_eq(s.v.r->cons_head, pos + n);
		}
	}
	ring_set_heads(&s.v, base);
	for (i = 0; i < 64; i += 8)
		ck_assert_int_eq(put_steps(&s, in, 8), 1);
	/* Full: a claim that writes no record leaves what is there. */
	s.recs[0] = 0x5a5a;
	ck_assert_int_eq(ring_put_claim(s.v.r, s.v.size, 1, &s.recs[0],
		&ring_slot_none, &pos),
		0);
	ck_assert_uint_eq(s.recs[0], 0x5a5a);
	s.recs[0] = 0;
	ck_assert_int_eq(put_steps(&s, in, 1), 0);
	ck_assert_uint_eq(s.v.r->prod_head, base + 64);
	ring_free(&s);
}
END_TEST

/* A build of the long copies, and whether this CPU can run it. */
struct wide_build {
	const char *name;
	ring_fill_wide_fn *fill;
	ring_copy_out_wide_fn *copy_out;
	int runs;
};

static const struct wide_build *
wide_builds(unsigned int *nb)
{
	static struct wide_build b[] = {
		{ "baseline", ring_fill_wide_base, ring_copy_out_wide_base, 1 },
#if RING_WIDE_AVX2
		{ "avx2", ring_fill_wide_avx2, ring_copy_out_wide_avx2, 0 },
#endif
	};

#if RING_WIDE_AVX2
	b[1].runs = copy_cpu_has_avx2();
#endif
	*nb = sizeof(b) / sizeof(b[0]);
	return b;
}

/*
 * Each build of the long copies, whichever the library picked: every size
 * from RING_WIDE_MIN to 200 with sequences across the 2^32 wrap, pointers
 * (base = the objects) and offsets (base = 0); the entries written are
 * exactly seq (one lap's), ref; nothing is written past them; a wrong
 * sequence at every place is seen.
 */
START_TEST(test_wide_builds)
{
	const struct wide_build *b;
	uint64_t e[202], words[200], out[202];
	uint32_t seq = UINT32_MAX - 77, ref;
	unsigned int nb, k, m, i, bad, pass;

	b = wide_builds(&nb);
	for (k = 0; k < nb; k++) {
		if (!b[k].runs) {
			printf("test_wide_builds: the %s build skipped: this "
				"CPU cannot run it\n", b[k].name);
			continue;
		}
		for (pass = 0; pass < 2; pass++) {
			uint64_t base = pass == 0 ?
				(uint64_t)(uintptr_t)wide_objs : 0;

			for (m = RING_WIDE_MIN; m <= 200; m++) {
				for (i = 0; i < m; i++)
					words[i] = base + ((uint64_t)(i * 7 +
						m) << SHMPOOL_REF_SHIFT);
				for (i = 0; i < m + 2; i++)
					e[i] = out[i] = 0xdeadbeefcafef00dull;
				b[k].fill(e + 1, seq, words, base, m);
				ck_assert_uint_eq(e[0], 0xdeadbeefcafef00dull);
				ck_assert_uint_eq(e[m + 1], 0xdeadbeefcafef00dull);
				for (i = 0; i < m; i++)
					ck_assert_msg(e[i + 1] == ring_ent(seq,
						i * 7 + m), "%s fill m %u: "
						"entry %u", b[k].name, m, i);
				ck_assert_uint_eq(b[k].copy_out(e + 1, seq,
					out + 1, base, m), 0);
				ck_assert_uint_eq(out[0], 0xdeadbeefcafef00dull);
				ck_assert_uint_eq(out[m + 1],
					0xdeadbeefcafef00dull);
				ck_assert(memcmp(out + 1, words, m * 8) == 0);
				/* One wrong sequence, at each place in turn:
				 * in the vectors, the turns of four, the
				 * last four read twice. */
				for (bad = 0; bad < m; bad++) {
					i = bad;
					ref = (uint32_t)e[i + 1];
					e[i + 1] = ring_ent(seq + 1, ref);
					ck_assert_msg(b[k].copy_out(e + 1, seq,
						out + 1, base, m) != 0,
						"%s copy_out m %u: entry %u "
						"not checked", b[k].name, m, i);
					e[i + 1] = ring_ent(seq, ref);
				}
			}
		}
	}
}
END_TEST

#if SHMPOOL_COPY_CALL_
/*
 * fn(dst, src, n, b) called as the inline code calls the library's
 * copies (shmpool/cache.h, SHMPOOL_COPY_ASM_), with a known value in each
 * general register the convention keeps (bar %rbp, a frame pointer in
 * some builds; %rax holds fn) and junk in the upper half of %rdx, which
 * a C caller may leave there; kept[] gets them back, in the order of
 * conv_expect().
 */
#define CONV_KEPT	10

static void
conv_call(copy_fn *fn, uint64_t *dst, const uint64_t *src, unsigned int n,
		uint64_t b, uint64_t kept[CONV_KEPT])
{
	register uint64_t *d __asm__("rdi") = dst;
	register const uint64_t *s __asm__("rsi") = src;
	register uint64_t rn __asm__("rdx") = 0xdead00000000ull | n;
	register uint64_t rb __asm__("rcx") = b;
	register copy_fn *f __asm__("rax") = fn;
	register uint64_t r8 __asm__("r8") = 0x0808080808080808ull;
	register uint64_t r9 __asm__("r9") = 0x0909090909090909ull;
	register uint64_t r10 __asm__("r10") = 0x1010101010101010ull;
	register uint64_t r11 __asm__("r11") = 0x1111111111111111ull;
	register uint64_t rbx __asm__("rbx") = 0x0b0b0b0b0b0b0b0bull;
	register uint64_t r12 __asm__("r12") = 0x1212121212121212ull;
	register uint64_t r13 __asm__("r13") = 0x1313131313131313ull;
	register uint64_t r14 __asm__("r14") = 0x1414141414141414ull;
	register uint64_t r15 __asm__("r15") = 0x1515151515151515ull;

	__asm__ volatile("add $-128, %%rsp\n\t"
		"call *%%rax\n\t"
		"sub $-128, %%rsp"
		: "+r" (d), "+r" (s), "+r" (rn), "+r" (rb), "+r" (f),
		  "+r" (r8), "+r" (r9), "+r" (r10), "+r" (r11), "+r" (rbx),
		  "+r" (r12), "+r" (r13), "+r" (r14), "+r" (r15)
		:
		: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
		  "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
		  "xmm13", "xmm14", "xmm15", "cc", "memory");
	kept[0] = (uint64_t)(uintptr_t)f;
	kept[1] = r8;
	kept[2] = r9;
	kept[3] = r10;
	kept[4] = r11;
	kept[5] = rbx;
	kept[6] = r12;
	kept[7] = r13;
	kept[8] = r14;
	kept[9] = r15;
}

static void
conv_expect(const char *what, unsigned int n, copy_fn *fn,
		const uint64_t kept[CONV_KEPT])
{
	const uint64_t want[CONV_KEPT] = {
		(uint64_t)(uintptr_t)fn, 0x0808080808080808ull,
		0x0909090909090909ull, 0x1010101010101010ull,
		0x1111111111111111ull, 0x0b0b0b0b0b0b0b0bull,
		0x1212121212121212ull, 0x1313131313131313ull,
		0x1414141414141414ull, 0x1515151515151515ull,
	};
	unsigned int i;

	for (i = 0; i < CONV_KEPT; i++)
		ck_assert_msg(kept[i] == want[i], "%s n %u: kept register %u "
			"is %#" PRIx64 ", not %#" PRIx64, what, n, i, kept[i],
			want[i]);
}

/*
 * Each build of the cache's long copies (copy-x86_64.S), and the one the
 * library picked, called as the inline code calls them: they keep what
 * the convention says they keep, and copy right, touching nothing around
 * dst (as test_wide_builds).
 */
START_TEST(test_copy_builds)
{
	static const struct {
		const char *name;
		copy_fn *add, *sub;
	} b[] = {
		{ "baseline", copy_add_base, copy_sub_base },
		{ "avx2", copy_add_avx2, copy_sub_avx2 },
		{ "picked", shmpool_copy_add_, shmpool_copy_sub_ },
	};
	uint64_t src[300], dst[302], kept[CONV_KEPT];
	uint64_t base = 0x7f0012345000ull;
	unsigned int k, n, i;
	char what[32];

	for (k = 0; k < 3; k++) {
		if (k == 1 && !copy_cpu_has_avx2()) {
			printf("test_copy_builds: the avx2 build skipped: "
				"this CPU cannot run it\n");
			continue;
		}
		for (n = SHMPOOL_COPY_CALL_MIN_; n <= 300; n++) {
			for (i = 0; i < n; i++)
				src[i] = (uint64_t)(i * 131 + n) << 6;
			for (i = 0; i < n + 2; i++)
				dst[i] = 1;
			snprintf(what, sizeof(what), "%s add", b[k].name);
			conv_call(b[k].add, dst + 1, src, n, base, kept);
			conv_expect(what, n, b[k].add, kept);
			ck_assert_uint_eq(dst[0], 1);
			ck_assert_uint_eq(dst[n + 1], 1);
			for (i = 0; i < n; i++)
				ck_assert_msg(dst[i + 1] == src[i] + base,
					"%s n %u: element %u", what, n, i);
			for (i = 0; i < n; i++)
				src[i] += base;
			snprintf(what, sizeof(what), "%s sub", b[k].name);
			conv_call(b[k].sub, dst + 1, src, n, base, kept);
			conv_expect(what, n, b[k].sub, kept);
			ck_assert_uint_eq(dst[0], 1);
			ck_assert_uint_eq(dst[n + 1], 1);
			for (i = 0; i < n; i++)
				ck_assert_msg(dst[i + 1] == src[i] - base,
					"%s n %u: element %u", what, n, i);
		}
	}
}
END_TEST
#endif

#define MP_REFS		4096
#define MP_MOVES	2000000	/* references each process moves */

/*
 * A child takes references out in random bulks and bursts, holds up to
 * four batches, and puts them back.  It exits 1 on a reference it cannot
 * have been given.  Capacity equals the reference count, so everything a
 * child holds always fits back.
 */
static void
mp_child(struct ring_view *v, uint64_t *rec, uint64_t seed,
		unsigned int moves)
{
	uint32_t held[4 * 64];
	unsigned int nheld = 0, moved = 0, n, got, i;

	while (moved < moves) {
		enum ring_mode mode = tu_rand(&seed) & 1 ? RING_BULK : RING_BURST;

		n = 1 + tu_rand(&seed) % 64;
		if (nheld + n <= 4 * 64) {
			got = (unsigned int)ring_dequeue(v, held + nheld, n,
				mode);
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
			if (ring_enqueue(v, held + nheld - n, n, mode, rec) != (int)n)
				_exit(3);
			nheld -= n;
		}
	}
	if (nheld > 0 &&
	    ring_enqueue(v, held, nheld, RING_BULK, rec) != (int)nheld)
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
	ck_assert_uint_eq(ring_enqueue(&s.v, refs, MP_REFS, RING_BULK,
		&s.recs[0]), MP_REFS);
	for (i = 0; i < nproc; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0)
			mp_child(&s.v, &s.recs[i],
				0x9e3779b97f4a7c15ULL * (i + 1), MP_MOVES);
	}
	tu_wait_children(pids, nproc, 120);

	/* Every reference is back, exactly once. */
	ck_assert_uint_eq(ring_count(&s.v), MP_REFS);
	for (i = 0; i < nproc; i++)
		ck_assert_uint_eq(s.recs[i], 0);
	ck_assert_uint_eq(ring_dequeue(&s.v, refs, MP_REFS, RING_BULK),
		MP_REFS);
	ck_assert_uint_eq(s.v.r->holes, 0);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < MP_REFS; i++) {
		ck_assert_uint_lt(refs[i], MP_REFS);
		seen[refs[i]]++;
	}
	for (i = 0; i < MP_REFS; i++)
		ck_assert_msg(seen[i] == 1, "reference %d seen %u times", i,
			seen[i]);
	ring_free(&s);
}

/* One process alone first: the same moves with no one to race. */
START_TEST(test_one_process)
{
	mp_run(1);
}
END_TEST

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

/*
 * A producer that records and claims n positions, writes the first w of
 * them (refs), and is killed there.
 */
static void
die_in_put(struct shared_ring *s, int recno, const uint32_t *refs,
		unsigned int n, unsigned int w)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		uint64_t pos = s->v.r->prod_head;

		s->recs[recno] = RING_OP(pos, n);
		if (!ring_claim(&s->v.r->prod_head, &pos, n))
			_exit(1);
		ring_write(&s->v, pos, w, refs, RING_REFS, NULL);
		raise(SIGKILL);
		_exit(2);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* A consumer killed right after its claim: it leaves nothing to repair. */
static void
die_in_get(struct shared_ring *s, unsigned int n)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		uint32_t out[64];

		if (ring_dequeue(&s->v, out, n, RING_BULK) != (int)n)
			_exit(1);
		raise(SIGKILL);
		_exit(2);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

START_TEST(test_dead_producer)
{
	struct shared_ring s = ring_new(16);
	struct ring_repair_stats st;
	uint32_t in[8], out[16];
	unsigned int i;

	for (i = 0; i < 8; i++)
		in[i] = 100 + i;
	ck_assert_int_eq(ring_enqueue(&s.v, in, 4, RING_BULK, &s.recs[0]), 4);
	/* Positions 4..9 claimed, 4 and 5 written (200, 201). */
	for (i = 0; i < 8; i++)
		in[i] = 200 + i;
	die_in_put(&s, 1, in, 6, 2);
	ck_assert_uint_eq(s.v.r->prod_head, 10);
	ck_assert_uint_eq(ring_count(&s.v), 10);
	/* What comes before the dead claim's first unwritten one is had. */
	ck_assert_int_eq(ring_dequeue(&s.v, out, 6, RING_BULK), 6);
	ck_assert_uint_eq(out[0], 100);
	ck_assert_uint_eq(out[3], 103);
	ck_assert_uint_eq(out[4], 200);
	ck_assert_uint_eq(out[5], 201);

	/* While its record stands, its positions are a live put's. */
	check_repair(&s, 0, 0, 4, 0);
	/* Its owner is known dead: holes. */
	s.recs[1] = 0;
	check_repair(&s, 4, 0, 0, 4);
	ck_assert_uint_eq(ring_count(&s.v), 0);
	st = repair(&s);
	ck_assert_uint_eq(st.holes, 0);
	/* Empty: a bulk takes nothing, a burst steps over the holes. */
	ck_assert_int_eq(ring_dequeue(&s.v, out, 1, RING_BULK), 0);
	ck_assert_uint_eq(s.v.r->cons_head, 6);
	ck_assert_int_eq(ring_dequeue(&s.v, out, 1, RING_BURST), 0);
	ck_assert_uint_eq(s.v.r->cons_head, 10);
	ck_assert_uint_eq(s.v.r->holes, 0);

	/* Holes between references, across the array's end: a bulk steps
	 * over them and keeps the order. */
	for (i = 0; i < 3; i++)
		in[i] = 300 + i;
	ck_assert_int_eq(ring_enqueue(&s.v, in, 3, RING_BULK, &s.recs[0]), 3);
	in[0] = 400;
	die_in_put(&s, 1, in, 3, 1);
	for (i = 0; i < 4; i++)
		in[i] = 500 + i;
	ck_assert_int_eq(ring_enqueue(&s.v, in, 4, RING_BULK, &s.recs[0]), 4);
	s.recs[1] = 0;
	st = repair(&s);
	ck_assert_uint_eq(st.holes, 2);
	ck_assert_uint_eq(ring_count(&s.v), 8);
	ck_assert_int_eq(ring_dequeue(&s.v, out, 9, RING_BULK), 0);
	ck_assert_uint_eq(ring_count(&s.v), 8);
	ck_assert_int_eq(ring_dequeue(&s.v, out, 8, RING_BULK), 8);
	ck_assert_uint_eq(out[0], 300);
	ck_assert_uint_eq(out[2], 302);
	ck_assert_uint_eq(out[3], 400);
	ck_assert_uint_eq(out[4], 500);
	ck_assert_uint_eq(out[7], 503);
	ck_assert_uint_eq(s.v.r->cons_head, 20);
	ck_assert_uint_eq(s.v.r->holes, 0);

	/* A burst that meets a hole takes what is on both sides of it. */
	ck_assert_int_eq(ring_enqueue(&s.v, in, 2, RING_BULK, &s.recs[0]), 2);
	die_in_put(&s, 1, in, 1, 0);
	ck_assert_int_eq(ring_enqueue(&s.v, in + 2, 2, RING_BULK, &s.recs[0]),
		2);
	s.recs[1] = 0;
	ck_assert_uint_eq(repair(&s).holes, 1);
	ck_assert_int_eq(ring_dequeue(&s.v, out, 16, RING_BURST), 4);
	ck_assert_uint_eq(out[0], 500);
	ck_assert_uint_eq(out[1], 501);
	ck_assert_uint_eq(out[2], 502);
	ck_assert_uint_eq(out[3], 503);
	ck_assert_uint_eq(s.v.r->holes, 0);
	ck_assert_uint_eq(ring_count(&s.v), 0);
	ring_free(&s);
}
END_TEST

START_TEST(test_live_producer_untouched)
{
	struct shared_ring s = ring_new(16);
	uint32_t in[4] = { 1, 2, 3, 4 }, out[4];
	uint64_t pos = 0;

	/* This process is in the middle of a put: recorded, claimed, one
	 * of two written.  Repair leaves it be; its writes then land. */
	s.recs[3] = RING_OP(pos, 2);
	ck_assert(ring_claim(&s.v.r->prod_head, &pos, 2));
	ring_write(&s.v, 0, 1, in, RING_REFS, NULL);
	ck_assert_uint_eq(repair(&s).deferred, 1);
	ck_assert_uint_eq(s.v.r->holes, 0);
	ring_write(&s.v, 1, 1, in + 1, RING_REFS, NULL);
	s.recs[3] = 0;
	ck_assert_uint_eq(repair(&s).deferred, 0);
	ck_assert_int_eq(ring_dequeue(&s.v, out, 2, RING_BULK), 2);
	ck_assert_uint_eq(out[0], 1);
	ck_assert_uint_eq(out[1], 2);
	ring_free(&s);
}
END_TEST

/*
 * A put of what is no object of the pool (NULL here): written without a
 * mask, its reference's high bits spoil the entry's sequence, a get
 * cannot take that position, and ring_repair() makes a hole of it (a
 * sequence no lap has) once no record covers it; a get then steps over
 * it.  Fails if the repair took only a lap before's sequences as
 * unwritten.
 */
START_TEST(test_spoiled_entry)
{
	struct shared_ring s = ring_new(16);
	void *in[3] = { wide_obj(0), NULL, wide_obj(2) }, *out[2];
	uint64_t pos = ((uint64_t)1 << 32) - 1, e;

	ring_set_heads(&s.v, pos);
	ck_assert_int_eq(put_steps(&s, in, 3), 1);
	e = s.v.ents[(pos + 1) & s.v.mask];
	ck_assert_uint_ne(ring_ent_seq(e), ring_seq(&s.v, pos + 1));
	ck_assert_uint_ne(ring_ent_seq(e), ring_seq(&s.v, pos + 1) + 1);
	ck_assert_uint_ne(ring_ent_seq(e), ring_seq(&s.v, pos + 1 - 16));
	ck_assert_uint_ne(ring_ent_seq(e), ring_seq(&s.v, pos + 1 - 16) + 1);
	ck_assert_int_eq(ring_get_short(&s.v, out, RING_PTRS, wide_objs, NULL,
		1, NULL, &ring_slot_none, NULL), 1);
	ck_assert_ptr_eq(out[0], wide_obj(0));
	/* The spoiled position: not taken, nothing moves. */
	ck_assert_int_eq(ring_get_short(&s.v, out, RING_PTRS, wide_objs, NULL,
		2, NULL, &ring_slot_none, NULL), 0);
	ck_assert_uint_eq(s.v.r->cons_head, pos + 1);
	/* Under a live record of it, deferred; then a hole. */
	s.recs[1] = RING_OP(pos + 1, 1);
	check_repair(&s, 0, 0, 1, 0);
	s.recs[1] = 0;
	check_repair(&s, 1, 1, 0, 1);
	ck_assert_uint_eq(s.v.ents[(pos + 1) & s.v.mask],
		ring_ent(ring_seq(&s.v, pos + 1) + 1, 0));
	/* Again: nothing more to do. */
	check_repair(&s, 0, 0, 0, 1);
	ck_assert_int_eq(ring_get_slow(&s.v, out, RING_PTRS, wide_objs, 1,
		RING_BULK, NULL, RING_OWN_NONE), 1);
	ck_assert_ptr_eq(out[0], wide_obj(2));
	ck_assert_uint_eq(s.v.r->cons_head, pos + 3);
	ck_assert_uint_eq(s.v.r->prod_head, pos + 3);
	ck_assert_uint_eq(s.v.r->holes, 0);
	ring_free(&s);
}
END_TEST

/* A record covers positions of the ring its number names alone. */
START_TEST(test_record_names_ring)
{
	struct shared_ring s = ring_new(16);
	struct ring_repair_stats st;
	uint32_t in[2] = { 7, 8 }, out[16];
	uint64_t pos = 0;

	/* A put to ring 5, recorded, claimed, one of two written. */
	s.rings[2 * 3] = 5;
	s.recs[3] = RING_OP(pos, 2);
	ck_assert(ring_claim(&s.v.r->prod_head, &pos, 2));
	ring_write(&s.v, 0, 1, in, RING_REFS, NULL);
	st = repair_as(&s, 5);
	ck_assert_uint_eq(st.deferred, 1);
	ck_assert_uint_eq(st.holes, 0);
	ck_assert_uint_eq(s.v.r->holes, 0);
	/* The same positions of ring 4 are no put's: a hole. */
	st = repair_as(&s, 4);
	ck_assert_uint_eq(st.deferred, 0);
	ck_assert_uint_eq(st.holes, 1);
	ck_assert_uint_eq(s.v.r->holes, 1);
	ck_assert_int_eq(ring_dequeue(&s.v, out, 16, RING_BURST), 1);
	ck_assert_uint_eq(out[0], 7);
	ck_assert_uint_eq(s.v.r->cons_head, 2);
	ck_assert_uint_eq(s.v.r->holes, 0);
	ring_free(&s);
}
END_TEST

START_TEST(test_dead_consumer)
{
	struct shared_ring s = ring_new(16);
	struct ring_repair_stats st;
	uint32_t in[16], out[16];
	unsigned int i, lap;

	for (i = 0; i < 16; i++)
		in[i] = i;
	ck_assert_int_eq(ring_enqueue(&s.v, in, 16, RING_BULK, &s.recs[0]),
		16);
	die_in_get(&s, 5);
	ck_assert_uint_eq(ring_count(&s.v), 11);
	st = repair(&s);
	ck_assert_uint_eq(st.holes, 0);
	ck_assert_uint_eq(st.deferred, 0);
	/* Its positions are free for the next lap at once. */
	ck_assert_int_eq(ring_enqueue(&s.v, in, 5, RING_BULK, &s.recs[0]), 5);
	for (lap = 0; lap < 5; lap++) {
		ck_assert_int_eq(ring_dequeue(&s.v, out, 16, RING_BULK), 16);
		ck_assert_uint_eq(out[0], lap == 0 ? 5 : 0);
		ck_assert_int_eq(ring_enqueue(&s.v, in, 16, RING_BULK,
			&s.recs[0]), 16);
	}
	ring_free(&s);
}
END_TEST

#define STORM_ROUNDS	20
#define STORM_MOVES	4000000

/*
 * Take every reference out, with a burst of every position between the
 * heads: the holes too, which no one may have walked over (a producer
 * killed in its last put, after the others were done).  Each reference is
 * one of the MP_REFS, once; no hole or position in progress is left
 * behind.  Returns how many there were.
 */
static uint32_t
storm_drain(struct shared_ring *s, unsigned int round)
{
	static uint32_t refs[MP_REFS];
	static uint8_t seen[MP_REFS];
	uint32_t count = ring_count(&s->v), all, i;

	all = (uint32_t)(s->v.r->prod_head - s->v.r->cons_head);
	ck_assert_uint_le(count, MP_REFS);
	ck_assert_uint_le(all, MP_REFS);
	if (all != 0)
		ck_assert_int_eq(ring_dequeue(&s->v, refs, all, RING_BURST),
			(int)count);
	ck_assert_uint_eq(ring_count(&s->v), 0);
	ck_assert_uint_eq(s->v.r->holes, 0);
	ck_assert_uint_eq(s->v.r->prod_head, s->v.r->cons_head);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < count; i++) {
		ck_assert_uint_lt(refs[i], MP_REFS);
		ck_assert_msg(seen[refs[i]]++ == 0, "round %u: reference %u "
			"twice", round, refs[i]);
	}
	return count;
}

/*
 * Three processes move references; one is killed with SIGKILL at a random
 * moment, perhaps in the middle of an operation.  This process plays
 * shmpoold: it clears the dead one's record and repairs the ring, often,
 * until the two others have finished, which they must.  Then every
 * reference in the ring is one of the pool's, once, and the next round
 * starts from a full ring again.
 */
START_TEST(test_kill_storm)
{
	struct shared_ring s = ring_new(MP_REFS);
	static uint32_t refs[MP_REFS];
	uint64_t seed = 42, left = 0, holes = 0;
	unsigned int round;
	int i, status;

	for (i = 0; i < MP_REFS; i++)
		refs[i] = (uint32_t)i;
	for (round = 0; round < STORM_ROUNDS; round++) {
		pid_t pids[3];
		struct timespec ts = { 0, 1000000L * (1 + tu_rand(&seed) % 20) };
		double deadline;

		ck_assert_int_eq(ring_enqueue(&s.v, refs, MP_REFS, RING_BULK,
			&s.recs[3]), MP_REFS);
		for (i = 0; i < 3; i++) {
			s.recs[i] = 0;
			pids[i] = fork();
			ck_assert_int_ge(pids[i], 0);
			if (pids[i] == 0)
				mp_child(&s.v, &s.recs[i], seed + (uint64_t)i *
					0x9e3779b97f4a7c15ULL, STORM_MOVES);
		}
		nanosleep(&ts, NULL);
		kill(pids[0], SIGKILL);
		ck_assert_int_eq(waitpid(pids[0], &status, 0), pids[0]);
		s.recs[0] = 0;
		deadline = tu_now() + 60;
		for (i = 1; i < 3; ) {
			int ret = waitpid(pids[i], &status, WNOHANG);

			ck_assert_int_ge(ret, 0);
			if (ret == pids[i]) {
				ck_assert_msg(WIFEXITED(status) &&
					WEXITSTATUS(status) == 0,
					"child: status 0x%x", status);
				i++;
				continue;
			}
			holes += repair(&s).holes;
			ck_assert_msg(tu_now() < deadline, "round %u: the "
				"survivors are stuck", round);
			usleep(200);
		}
		holes += repair(&s).holes;
		left += storm_drain(&s, round);
	}
	printf("kill storm: %u rounds, %" PRIu64 " references of %u left "
		"on average, %" PRIu64 " positions repaired\n", STORM_ROUNDS,
		left / STORM_ROUNDS, MP_REFS, holes);
	ring_free(&s);
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
	tcase_add_test(tc, test_short_predicates);
	tcase_add_test(tc, test_short_b2);
	tcase_add_test(tc, test_wide_copies);
	tcase_add_test(tc, test_wide_read_checks);
	tcase_add_test(tc, test_short_copies);
	tcase_add_test(tc, test_short_read_checks);
	tcase_add_test(tc, test_get_slow);
	tcase_add_test(tc, test_short_tries);
	tcase_add_test(tc, test_wide_builds);
#if SHMPOOL_COPY_CALL_
	tcase_add_test(tc, test_copy_builds);
#endif
	tcase_add_test(tc, test_dead_producer);
	tcase_add_test(tc, test_live_producer_untouched);
	tcase_add_test(tc, test_record_names_ring);
	tcase_add_test(tc, test_spoiled_entry);
	tcase_add_test(tc, test_dead_consumer);
	suite_add_tcase(s, tc);
	tcase_set_timeout(mp, 180);
	tcase_add_test(mp, test_one_process);
	tcase_add_test(mp, test_two_processes);
	tcase_add_test(mp, test_four_processes);
	tcase_add_test(mp, test_kill_storm);
	suite_add_tcase(s, mp);
	return s;
}

int
main(void)
{
	return tu_run(ring_suite());
}
