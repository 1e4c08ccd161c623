/*
 * ring.c - the ring's operations beyond their first try (another process
 * got there first, the ring is full or empty, a position is still being
 * written, a hole), and shmpoold's repair after a producer died in the
 * middle of an operation.  See ring.h.
 */
#include "config.h"

#include <sched.h>

#include "ring.h"

/*
 * The long copies (m >= RING_WIDE_MIN), built twice: for AVX2 and for the
 * baseline, the one for this CPU picked when the library is loaded
 * (copy.c).  Pointers and offsets are the same code: an offset is a
 * pointer with a base of 0.  The arrays never overlap (restrict).
 *
 * Four entries a vector, four vectors a turn.  Every entry of one copy
 * has the sequence seq (one lap), so a read checks and converts in one
 * step: an entry xor seq in its high half is the reference alone where
 * the sequence is seq, and the high halves of all of them or-ed together
 * are 0 only if every one is.  A read ends with sixteen entries placed
 * to end exactly at m, reading some twice (both reads are checked, the
 * second's copy is the one left); a write goes from its end backward
 * and writes its first entry last (ring_fill_v4()).  Each 64-bit element
 * of a vector is read or written whole.
 */
typedef uint64_t ring_v4 __attribute__((vector_size(32), aligned(8),
	may_alias));
#define RING_V4(p, i)	(*(ring_v4 *)((p) + (i)))
#define RING_CV4(p, i)	(*(const ring_v4 *)((p) + (i)))
#define RING_TURN4(OP, i) do {						\
	OP(i);								\
	OP((i) + 4);							\
	OP((i) + 8);							\
	OP((i) + 12);							\
} while (0)

/*
 * A write from its end backward, sixteen entries a turn, the last turn
 * at entry 1, overlapping the one before it, then entry 0 alone: the
 * loop's trips are its only branch, however m ends (a size the branch
 * predictor cannot learn mispredicted the three tails of a forward write:
 * docs/PERFORMANCE.md).  Entries 1 to m - 1 may be written twice, but
 * only before entry 0 is: no consumer takes a position before every one
 * before it is written, so none of them can be taken, and written a lap
 * later, between the two stores (see RING_PAIRS in ring.h).  m >= 17.
 */
static inline __attribute__((always_inline)) void
ring_fill_v4(uint64_t *restrict e, uint32_t seq,
		const uint64_t *restrict src, uint64_t base, unsigned int m)
{
	const uint64_t s1 = (uint64_t)seq << 32;
	const ring_v4 s = { s1, s1, s1, s1 }, b = { base, base, base, base };
	long q;

#define RING_FILL4(i)							\
	(RING_V4(e + q, i) = s |					\
	 ((RING_CV4(src + q, i) - b) >> SHMPOOL_REF_SHIFT))
	for (q = (long)m - 16; q > 1; q -= 16)
		RING_TURN4(RING_FILL4, 0);
	q = 1;
	RING_TURN4(RING_FILL4, 0);
#undef RING_FILL4
	/* Entry 0 once all the others are seen. */
	ring_smp_release();
	e[0] = ring_ent_w(seq, ring_src_ref(src, 0, RING_PTRS,
		(const char *)(uintptr_t)base));
}

/* A read of m >= 16 entries: sixteen a turn, the last turn placed to end
 * at m (see above); 0 when all are of sequence seq. */
static inline __attribute__((always_inline)) uint32_t
ring_copy_out_v4(const uint64_t *restrict e, uint32_t seq,
		uint64_t *restrict dst, uint64_t base, unsigned int m)
{
	const uint64_t s1 = (uint64_t)seq << 32;
	const ring_v4 s = { s1, s1, s1, s1 }, b = { base, base, base, base };
	const uint64_t *p = e, *last16 = e + m - 16;
	uint64_t *d = dst;
	ring_v4 bad = { 0, 0, 0, 0 }, x;

#define RING_COPY4(i)							\
	(x = RING_CV4(p, i) ^ s,					\
	 bad |= x,							\
	 RING_V4(d, i) = (x << SHMPOOL_REF_SHIFT) + b)
	for (; p < last16; p += 16, d += 16)
		RING_TURN4(RING_COPY4, 0);
	p = last16;
	d = dst + m - 16;
	RING_TURN4(RING_COPY4, 0);
#undef RING_COPY4
	return (uint32_t)((bad[0] | bad[1] | bad[2] | bad[3]) >> 32);
}


void
ring_fill_wide_base(uint64_t *restrict e, uint32_t seq,
		const uint64_t *restrict src, uint64_t base, unsigned int m)
{
	ring_fill_v4(e, seq, src, base, m);
}

uint32_t
ring_copy_out_wide_base(const uint64_t *restrict e, uint32_t seq,
		uint64_t *restrict dst, uint64_t base, unsigned int m)
{
	return ring_copy_out_v4(e, seq, dst, base, m);
}

#if RING_WIDE_AVX2
void __attribute__((target("avx2")))
ring_fill_wide_avx2(uint64_t *restrict e, uint32_t seq,
		const uint64_t *restrict src, uint64_t base, unsigned int m)
{
	ring_fill_v4(e, seq, src, base, m);
}

uint32_t __attribute__((target("avx2")))
ring_copy_out_wide_avx2(const uint64_t *restrict e, uint32_t seq,
		uint64_t *restrict dst, uint64_t base, unsigned int m)
{
	return ring_copy_out_v4(e, seq, dst, base, m);
}

COPY_IFUNC_RESOLVE(ring_fill_wide, ring_fill_wide_fn)
COPY_IFUNC_RESOLVE(ring_copy_out_wide, ring_copy_out_wide_fn)

ring_fill_wide_fn ring_fill_wide
	__attribute__((ifunc("ring_fill_wide_resolve")));
ring_copy_out_wide_fn ring_copy_out_wide
	__attribute__((ifunc("ring_copy_out_wide_resolve")));
#else
ring_fill_wide_fn ring_fill_wide
	__attribute__((alias("ring_fill_wide_base")));
ring_copy_out_wide_fn ring_copy_out_wide
	__attribute__((alias("ring_copy_out_wide_base")));
#endif

/*
 * Wait for another process a little: spin, then give up the CPU.  A wait
 * that goes on (the producer of the position may have died, and its
 * positions been left by shmpoold, or shmpoold may be down) marks the
 * ring stalled, once, for shmpoold to repair.
 */
static void
ring_pause(const struct ring_view *v, unsigned int *spins)
{
	if (++*spins % RING_SPINS_BEFORE_YIELD != 0) {
		caa_cpu_relax();
		return;
	}
	sched_yield();
	if (*spins == RING_SPINS_BEFORE_YIELD * RING_YIELDS_BEFORE_STALL &&
	    uatomic_read(&v->r->stalled) == 0)
		uatomic_set(&v->r->stalled, 1);
}

/*
 * A claim of the slow paths: by compare-and-swap, once the ring is shared
 * or the caller's (ring ownership, ring.h).  rec (NULL: a ring no one
 * owns, in the tests) is the caller's record: a put's is written, a get's
 * is written here, and kept while ring_own_settle() looks, so that the
 * ring cannot be taken meanwhile.  As ring_claim(), and 0 with *pos the
 * head again when the ring was another's; -1 when it still is, its owner
 * in the middle of a claim there for RING_SPINS_BEFORE_YIELD tries
 * (*waits counts them): the caller goes to another ring rather than spin
 * for a process that may be descheduled, stopped or dead, and waits for
 * it, yielding the CPU, only when no other ring serves it, but that it
 * first yields once when the ring is its own CPU's (rings_get_rest(),
 * rings_put_rest(), cache_flush()).
 */
static int
ring_claim_slow(const struct ring_view *v, uint64_t *head, uint64_t *pos,
		unsigned int n, uint64_t *rec, uint32_t token, int get,
		unsigned int *waits)
{
	uint32_t o;
	int ok, settled;

	if (rec == NULL)
		return ring_claim(head, pos, n);
	if (get)
		uatomic_set(rec, RING_OP_GET);
	ring_own_order();
	o = uatomic_read(&v->r->owner);
	if (o != 0 && o != token) {
		settled = ring_own_settle(v, o, rec);
		if (get)
			uatomic_set(rec, 0);
		*pos = uatomic_read(head);
		if (settled)
			return 0;
		if (++*waits >= RING_SPINS_BEFORE_YIELD)
			return -1;
		caa_cpu_relax();
		return 0;
	}
	ok = ring_claim(head, pos, n);
	if (get) {
		cmm_barrier();
		uatomic_set(rec, 0);
	}
	return ok;
}

int
ring_put_slow(const struct ring_view *v, const void *src, enum ring_kind k,
		const char *base, unsigned int n, enum ring_mode mode,
		uint64_t *rec, uint32_t token)
{
	uint64_t pos = uatomic_read(&v->r->prod_head), cons;
	unsigned int want = n, waits = 0;
	int claimed;

	for (;;) {
		n = want;
		/* The consumers' head after the producers' (as in
		 * ring_put_claim()): an older one would read as a full
		 * ring. */
		cmm_smp_rmb();
		cons = uatomic_read(&v->r->cons_head);
		if (pos + n - cons > v->size && pos >= cons) {
			/* Full for n, unless pos is stale. */
			uint64_t head = uatomic_read(&v->r->prod_head);

			if (head != pos) {
				pos = head;
				continue;
			}
			n = pos - cons >= v->size ? 0 :
				(unsigned int)(cons + v->size - pos);
			if (mode == RING_BULK || n == 0) {
				uatomic_set(rec, 0);
				return 0;
			}
		}
		uatomic_set(rec, RING_OP(pos, n));
		claimed = ring_claim_slow(v, &v->r->prod_head, &pos, n, rec,
			token, 0, &waits);
		if (claimed > 0)
			break;
		if (claimed < 0) {
			/* Skipped, not full (rings_put_rest()). */
			uatomic_set(rec, 0);
			return -1;
		}
	}
	ring_write(v, pos, n, src, k, base);
	ring_put_done(rec);
	return n;
}

/*
 * First the inline get's copy again, whole, from where cons_head is now:
 * after another consumer claimed first (two processes refilling at once),
 * that is all it takes.  Where that copy finds a position not written as
 * it should be, one position at a time from cons_head: copy the written
 * entries out, step over holes, until n references are had, then claim
 * all those positions at once.  A position not yet written ends the look:
 * the ring is empty there, or a producer is writing it (then a burst
 * takes what it has and a bulk waits).
 */
int
ring_get_slow(const struct ring_view *v, void *dst, enum ring_kind k,
		char *base, unsigned int n, enum ring_mode mode, uint64_t *rec,
		uint32_t token)
{
	uint64_t pos = uatomic_read(&v->r->cons_head), q, e, prod;
	unsigned int spins = 0, waits = 0, got, holes;
	int32_t d = 0;
	int claimed;

	for (;;) {
		if (ring_read(v, pos, n, dst, k, base)) {
			claimed = ring_claim_slow(v, &v->r->cons_head, &pos, n,
				rec, token, 1, &waits);
			if (claimed > 0)
				return n;
			if (claimed < 0)
				return -1;
			continue;
		}
		got = 0;
		holes = 0;
		for (q = pos; got < n; q++) {
			e = uatomic_read(&v->ents[(uint32_t)q & v->mask]);
			d = (int32_t)(ring_ent_seq(e) - ring_seq(v, q));
			if (d == 0) {
				ring_dst_set(dst, got, k, base, (uint32_t)e);
				got++;
			} else if (d == 1) {
				holes++;
			} else {
				break;
			}
		}
		ring_smp_acquire();
		if (got < n) {
			if (d > 1) {
				/* Written a lap later: pos is stale. */
				uint64_t head = uatomic_read(&v->r->cons_head);

				if (head != pos) {
					pos = head;
					continue;
				}
			}
			cmm_smp_rmb();
			prod = uatomic_read(&v->r->prod_head);
			if (prod > q && (mode == RING_BULK || got == 0)) {
				/* A producer has claimed q and not written it
				 * yet (or just has: look again). */
				ring_pause(v, &spins);
				pos = uatomic_read(&v->r->cons_head);
				continue;
			}
			if (prod <= q) {
				uint64_t head = uatomic_read(&v->r->cons_head);

				if (head != pos) {
					pos = head;
					continue;
				}
			}
			/* Empty at q: a burst takes what there is (and the
			 * holes before), a bulk nothing. */
			if (mode == RING_BULK || (got == 0 && holes == 0))
				return 0;
		}
		claimed = ring_claim_slow(v, &v->r->cons_head, &pos,
			(unsigned int)(q - pos), rec, token, 1, &waits);
		if (claimed > 0)
			break;
		if (claimed < 0)
			return -1;
	}
	if (holes != 0)
		uatomic_sub(&v->r->holes, holes);
	return got;
}

/* Does a live producer's record claim position q of ring ring? */
static int
ring_covered(uint32_t ring, const uint64_t *recs, const uint32_t *rings,
		size_t stride, unsigned int nrecs, uint64_t q)
{
	const char *p = (const char *)recs, *pr = (const char *)rings;
	unsigned int i;

	for (i = 0; i < nrecs; i++, p += stride, pr += stride) {
		uint64_t op = uatomic_read((const uint64_t *)p);

		if (RING_OP_N(op) != 0 &&
		    (uint32_t)q - RING_OP_POS(op) < RING_OP_N(op) &&
		    uatomic_read((const uint32_t *)pr) == ring)
			return 1;
	}
	return 0;
}

/*
 * Make a hole of every position of v, ring number ring, that a producer
 * claimed, did not write (its entry still holds what was put a lap
 * before) or wrote with a sequence no lap has (a put of what is no object
 * of the pool spoiled it), and that no record covers any more.  recs
 * are the records of every slot (nrecs of them, stride bytes apart)
 * whose owner may be alive, and rings the numbers of the rings they are
 * for (as far apart); the caller has cleared the records of the slots
 * whose owners it knows are dead.  A
 * position being written by a live process is always covered by its
 * record and its ring's number, written before its claim and left as
 * they are until its writes are done, and is left alone (counted in
 * st->deferred: try again later).  Every hole is a compare-and-swap from
 * the entry seen, so that a position written meanwhile is not touched.
 * Returns 0, or -EBADMSG when the heads are not those of a ring.
 */
int
ring_repair(const struct ring_view *v, uint32_t ring, const uint64_t *recs,
		const uint32_t *rings, size_t stride, unsigned int nrecs,
		struct ring_repair_stats *st)
{
	uint64_t cons, prod, q, e;

	memset(st, 0, sizeof(*st));
	if (ring_heads_read(v, &cons, &prod) < 0)
		return -EBADMSG;
	/* Entries read after the heads: positions below prod were claimed. */
	for (q = cons; q < prod; q++) {
		uint32_t seq;
		uint64_t now;

		e = uatomic_read(&v->ents[(uint32_t)q & v->mask]);
		/* Positions read since are done with, and their entries may
		 * hold any later lap, even one whose sequence is q's modulo
		 * 2^32: go on from the consumers' head. */
		cmm_smp_rmb();
		now = uatomic_read(&v->r->cons_head);
		if (now > q) {
			q = now - 1;
			continue;
		}
		seq = ring_ent_seq(e);
		/* Not written for q, nor a hole of q: the entry still holds
		 * what was put a lap before (a reference or a hole), or a
		 * sequence that no lap has, which a put of what is no object
		 * of the pool leaves (ring_src_ref()).  Not a later lap: cons
		 * has not passed q. */
		if (seq == ring_seq(v, q) || seq == ring_seq(v, q) + 1)
			continue;
		/* The records after the entry: a live claim of q wrote its
		 * record before it, and clears it only after writing q. */
		cmm_smp_mb();
		if (ring_covered(ring, recs, rings, stride, nrecs, q)) {
			st->deferred++;
			continue;
		}
		uatomic_inc(&v->r->holes);
		if (uatomic_cmpxchg(&v->ents[(uint32_t)q & v->mask], e,
				ring_ent(ring_seq(v, q) + 1, 0)) != e) {
			uatomic_dec(&v->r->holes);
			continue;
		}
		st->holes++;
		if (seq != ring_seq(v, q - v->size) &&
		    seq != ring_seq(v, q - v->size) + 1)
			st->spoiled++;
	}
	return 0;
}
