/*
 * ring.h - the multi-producer multi-consumer ring of object references
 * that holds free objects.  Internal to libshmpool.  A pool has one for
 * each CPU, up to 8 (struct seg_hdr, segment-internal.h; which ring an
 * operation goes to, cache.c); each is a ring as described here.
 *
 * Positions are 64-bit counters that only grow: producers claim positions
 * at prod_head, consumers at cons_head, each side with one compare-and-
 * swap, or, by the cache that owns the ring, with a plain store (ring
 * ownership, below).  Position q lives in entry q & mask, and each entry
 * carries a sequence next to its reference, made from the lap of q: S(q),
 * the low 32 bits of q | mask, the last position of q's lap.
 *
 *   seq == S(q)       the entry holds the reference put at position q;
 *   seq == S(q) + 1   a hole: position q was claimed by a producer that
 *                     died before writing it (marked by shmpoold), and
 *                     holds nothing;
 *   anything else     position q has not been written yet.
 *
 * The laps of one entry's positions are size apart (modulo 2^32), so
 * that a sequence tells the position as well as q itself would; and the
 * n entries of an operation that does not run past the end of the array
 * share one lap, so that a copy checks every entry against one value,
 * whatever n, with no sequence to count up.
 *
 * A consumer reads before it claims: it copies the n entries from
 * cons_head out, checking their sequences, and only then claims them by
 * moving cons_head; if another consumer moved it first, it copies again.
 * Once a position is behind cons_head, its reader is therefore done with
 * it, and a producer may write it a lap later: producers need look at
 * nothing but cons_head, as with a tail.  A producer claims n positions
 * and writes them, each with its sequence.
 *
 * So there is no tail to publish in order, and no operation waits for
 * another one to finish, except a consumer that reaches a position whose
 * producer has claimed it and not written it yet.  That consumer holds
 * nothing while it waits (spinning a little, then yielding the CPU so that
 * the producer, if it was descheduled there, can finish).  A process
 * descheduled in the middle of an operation holds up only the positions it
 * is writing; consumers reach them only once they have taken everything
 * before.  (A ring another cache owns is a matter apart: a claim there
 * first takes it back, which cannot be done while the owner is in the
 * middle of a claim, below.)
 *
 * A producer killed between its claim and its last write leaves positions
 * that will never be written.  Each producer therefore first writes what it
 * is about to claim in a record of its own (a word of its cache, next to
 * the number of the ring it is for), and ring_repair() (shmpoold, after a
 * death) makes a hole of every claimed, unwritten position that no live
 * record of that ring covers; the next
 * consumer to reach a hole steps over it.  The references that producer
 * was putting were in its hands and are lost with it, as every object a
 * dead process held.  A consumer killed anywhere leaves nothing: before
 * its claim it has changed nothing, after it it has read everything.
 *
 * The positions are 64 bits wide so that a process stopped between its
 * look and its claim can never see its compare-and-swap succeed on a
 * counter that went once round (at 10^9 operations a second, 2^64 is five
 * centuries).
 */
#ifndef SHMPOOL_RING_H
#define SHMPOOL_RING_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <urcu/arch.h>
#include <urcu/compiler.h>
#include <urcu/uatomic.h>

#include "shmpool.h"

/* Positions and entries are 64-bit words read and written whole. */
#if UINTPTR_MAX != UINT64_MAX
#error "libshmpool's ring needs a 64-bit target"
#endif

/*
 * Acquire and release orderings for the entries.  liburcu's cmm_smp_mb()
 * gives them everywhere; on a TSO machine loads are never reordered with
 * later accesses nor stores with earlier ones, so the compiler barrier is
 * enough there.
 */
#if defined(__x86_64__)
#define ring_smp_acquire()	cmm_barrier()
#define ring_smp_release()	cmm_barrier()
#else
#define ring_smp_acquire()	cmm_smp_mb()
#define ring_smp_release()	cmm_smp_mb()
#endif

/* Spins before a waiting consumer yields the CPU. */
#define RING_SPINS_BEFORE_YIELD	64
/* Yields after which it tells shmpoold, which repairs the ring. */
#define RING_YIELDS_BEFORE_STALL	256

/* The smallest ring: an unwritten entry's sequence (that of position
 * q - size, S(q) - size or one more) must not read as written (S(q)) or
 * as a hole (S(q) + 1), nor a later lap's as either. */
#define RING_SIZE_MIN		4

/* The ring as it lives in the segment. */
struct ring {
	uint32_t size;			/* entries, a power of two */
	uint32_t mask;			/* size - 1 */
	uint32_t stalled;		/* set by a get that waited long for a
					   position to be written; shmpoold
					   repairs the ring and clears it */
	uint32_t owner;			/* 0, or RING_OWN(slot, state):
					   the cache that has the ring
					   to itself (ring ownership) */
	uint64_t holes;			/* holes between the heads */
	uint64_t reserved1[5];
	uint64_t prod_head __attribute__((aligned(64)));
	uint64_t cons_head __attribute__((aligned(64)));
	uint64_t ents[] __attribute__((aligned(64)));	/* seq << 32 | ref */
};

/*
 * A producer's record of what it is claiming: one word, written with one
 * store before the claim and cleared with one after the writes, position
 * (its low 32 bits, enough within a lap) << 32 | count; 0 for nothing.
 * The number of the ring it is for is another word, written before it
 * (cache_ring_op()).
 */
#define RING_OP(pos, n)		((uint64_t)(uint32_t)(pos) << 32 | (uint32_t)(n))
#define RING_OP_N(op)		((uint32_t)(op))
#define RING_OP_POS(op)		((uint32_t)((op) >> 32))
/* A get's record while it claims: covers no position (its count is 0),
 * but says the cache is at work on the ring (ring ownership). */
#define RING_OP_GET		((uint64_t)1 << 63)

/* Set a get's record rec, which is 0 (no claim of its cache under way).
 * On x86-64 its top byte alone, one store of an immediate where the
 * word's takes a move of the 64-bit constant first; a reader of the word
 * sees 0 or RING_OP_GET either way. */
static inline __attribute__((always_inline)) void
ring_rec_get(uint64_t *rec)
{
#if defined(__x86_64__)
	__atomic_store_n((uint8_t *)rec + 7, (uint8_t)(RING_OP_GET >> 56),
		__ATOMIC_RELAXED);
#else
	uatomic_set(rec, RING_OP_GET);
#endif
}

/*
 * Ring ownership.  A cache may take the ring of the CPU its thread runs on
 * to itself: while r->owner is RING_OWN(slot, RING_OWN_OWNED),
 * that cache alone moves the ring's heads, with plain stores, where
 * everyone else uses a compare-and-swap.  Every claim, owner's or not,
 * first writes the claimer's record (a put's, or RING_OP_GET) and then
 * reads owner, with no fence between: a cache that takes a ring, or takes
 * one back, calls membarrier(2) (MEMBARRIER_CMD_GLOBAL_EXPEDITED) between
 * its write of owner and its look at the records, so that either the
 * claimer sees the new owner or the taker sees the claimer's record.
 * (Giving one up, or cancelling a taking, needs no fence: the word goes
 * to 0, after which every claim is by compare-and-swap.)
 *
 *   0                    shared: claims by compare-and-swap
 *   OWNED(s)             cache s's: its claims are plain stores, anyone
 *                        else's first revokes it
 *   ACQ(s)               s is taking it: no one claims; anyone may cancel
 *                        it (back to 0), which s's last step then fails
 *   REVOKE(s)            being taken from s, the fence not yet made
 *   FENCED(s)            the same, fenced: whoever sees s's record not on
 *                        this ring may make it 0
 *
 * Taking (cache_own_try()): 0 -> ACQ(s), the fence, no other record on
 * the ring, ACQ(s) -> OWNED(s); tried by a get whose claim by compare-
 * and-swap crossed a multiple of RING_OWN_EVERY positions, on that ring
 * if it is still the one of the CPU its thread runs on, whatever the
 * thread's affinity: at most one taking in RING_OWN_EVERY positions of a
 * ring, and about as many takings back, bound the fences that threads
 * sharing a CPU, or moving between CPUs, cost.  Taking back
 * (ring_own_settle(), by a claimer other than s, whose record stays
 * written throughout, so that no one takes the ring meanwhile): OWNED(s)
 * -> REVOKE(s), the fence, -> FENCED(s), then 0 once s's record is not
 * on the ring.  s itself, seeing its ring being taken, makes it 0.  A
 * claimer that finds s in the middle of a claim tries a few times, then
 * skips the ring (ring_claim_slow()): s may be descheduled, stopped or
 * dead, and only shmpoold clears a dead process's record.  A get or put
 * that skips the ring of its own CPU first yields the CPU once (to s,
 * most likely descheduled on this CPU) and tries again; then it tries the
 * other rings, and, when they cannot serve it, goes round them all
 * again, yielding the CPU in between (rings_get_rest(), rings_put_rest();
 * for a flush, cache_flush(), which yields only with the objects back in
 * its cache, and makes a pass again only once a ring looks free): an
 * owner that shares its CPU is often descheduled in the middle of a
 * claim.  Only a caller with another way does not go round: a refill's
 * first try, which yields once for its own CPU's ring, and shmpoold's
 * reclaim, which yields nothing.
 * Only a cache whose thread uses rseq's CPU number, of a pool of more
 * than one ring, takes one.  A slot given back (slot_retire()) gives up
 * its rings before it is free again.  What a kill
 * leaves is what it leaves on a shared ring: a put's claimed positions
 * are covered by its record (ring_repair()), a get's claimed objects
 * were its own.
 */
#define RING_OWN_OWNED		0u
#define RING_OWN_ACQ		1u
#define RING_OWN_REVOKE		2u
#define RING_OWN_FENCED		3u
/* The state in the top two bits: OWNED(s) is s + 1, which a claim
 * compares with its cache's slot number less one add. */
#define RING_OWN(slot, st)	\
	(((uint32_t)(st) << 30) | ((uint32_t)(slot) + 1))
#define RING_OWN_SLOT(o)	(((o) & 0x3fffffffu) - 1)
#define RING_OWN_STATE(o)	((o) >> 30)
/* The token of a caller that never owns a ring (no cache): matches no
 * owner word; and the slot number that gives it. */
#define RING_OWN_NONE		UINT32_MAX
static const uint32_t ring_slot_none = UINT32_MAX - 1;

/*
 * The owner word of the cache in slot *slotp, read where a claim compares
 * it: a value computed by the caller was loaded at the start and held in
 * a register throughout (two saved and restored).
 */
static inline __attribute__((always_inline)) uint32_t
ring_own_token(const uint32_t *slotp)
{
	return RING_OWN(__atomic_load_n(slotp, __ATOMIC_RELAXED),
		RING_OWN_OWNED);
}

/*
 * The first tries read r's owner word less one, o1, and ask first
 * whether it is the caller's (o1 == *slotp: RING_OWN(s, RING_OWN_OWNED)
 * is s + 1), then whether no one owns r (o1 == RING_OWN_FREE1, for an
 * owner word of 0): a compare with the slot number in memory where the
 * token took a load, an add and the compare, and one register.
 */
#define RING_OWN_FREE1		UINT32_MAX
static inline __attribute__((always_inline)) uint32_t
ring_own_read1(const struct ring *r)
{
	return uatomic_read(&r->owner) - 1;
}

static inline __attribute__((always_inline)) int
ring_own_mine(uint32_t o1, const uint32_t *slotp)
{
	return o1 == *slotp;
}

/*
 * pool.c: the errno of this process's registration for the others'
 * fences (membarrier(2), MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED), made
 * when the library is loaded; 0 when it is registered.  A process that is
 * not may not claim on a ring, whose claims order their record and their
 * read of the owner word with no fence of their own: shmpool_attach()
 * and shmpoold refuse to start.
 */
extern int ring_own_unfenced __attribute__((visibility("hidden")));

/*
 * Whether a claim by compare-and-swap of n from pos crossed a multiple of
 * RING_OWN_EVERY positions: once in RING_OWN_EVERY objects of a ring, its
 * claimer sees whether it may take it (cache_own_try()), with no counter
 * to keep.
 */
#define RING_OWN_EVERY		65536
static inline int
ring_own_hint(uint64_t pos, unsigned int n)
{
	return ((pos ^ (pos + n)) & ~(uint64_t)(RING_OWN_EVERY - 1)) != 0;
}

/* Between a claim's record and its read of the owner word: the compiler's
 * order only, the CPU's being the fencer's (membarrier(2)). */
#define ring_own_order()	cmm_barrier()

/*
 * A process's view of a ring: where it is mapped and its geometry, read
 * once and checked against the mapping, never re-read from shared memory.
 */
struct ring_view {
	/* size and mask first: struct pool_handle's rings[0].size and
	 * .mask, which a get or put past the cache reads, then end within
	 * its first two cache lines (pool.c). */
	uint32_t size;
	uint32_t mask;
	struct ring *r;
	uint64_t *ents;
	/* The attachment whose ring it is (struct pool_handle), for
	 * ring_own_settle(); NULL for a ring no cache may own (the
	 * tests'). */
	const void *own;
};

enum ring_mode {
	RING_BULK,			/* all n entries or none */
	RING_BURST,			/* as many as there are, up to n */
};

static inline uint64_t
ring_ent(uint32_t seq, uint32_t ref)
{
	return (uint64_t)seq << 32 | ref;
}

/* The same with the reference as ring_src_ref() gives it (the high half
 * 0 for an object of the pool). */
static inline uint64_t
ring_ent_w(uint32_t seq, uint64_t ref)
{
	return (uint64_t)seq << 32 | ref;
}

static inline uint32_t
ring_ent_seq(uint64_t e)
{
	return (uint32_t)(e >> 32);
}

/* The sequence of an entry written for position q, S(q), of a ring
 * whose mask is mask (a hole's is one more). */
static inline uint32_t
ring_pos_seq(uint32_t mask, uint64_t q)
{
	return (uint32_t)q | mask;
}

static inline uint32_t
ring_seq(const struct ring_view *v, uint64_t q)
{
	return ring_pos_seq(v->mask, q);
}

static inline size_t
ring_mem_size(uint32_t size)
{
	return sizeof(struct ring) + (size_t)size * sizeof(uint64_t);
}

/* Initialise an empty ring of size entries (a power of two) in place:
 * every entry as if written a lap before position 0. */
static inline void
ring_init(struct ring *r, uint32_t size)
{
	uint32_t i;

	memset(r, 0, sizeof(*r));
	r->size = size;
	r->mask = size - 1;
	for (i = 0; i < size; i++)
		r->ents[i] = ring_ent(ring_pos_seq(size - 1,
			(uint64_t)i - size), 0);
}

/*
 * References in the ring now: exact when no operation is in progress,
 * else between what it was and what it will be.
 */
static inline uint32_t
ring_count(const struct ring_view *v)
{
	uint64_t cons, prod, holes;
	int64_t count;

	cons = uatomic_read(&v->r->cons_head);
	/* The producers' head, read later, is never behind this one. */
	cmm_smp_rmb();
	prod = uatomic_read(&v->r->prod_head);
	holes = uatomic_read(&v->r->holes);
	count = (int64_t)(prod - cons - holes);
	if (count < 0)
		return 0;
	return count > v->size ? v->size : (uint32_t)count;
}

/*
 * The heads of ring v at one moment: cons, then prod, then cons
 * unchanged.  0, or -EBADMSG when they are not those of a ring (prod
 * behind cons, or more than the ring holds between them): a segment
 * written at random, as a live ring never reads so.
 */
static inline int
ring_heads_read(const struct ring_view *v, uint64_t *consp, uint64_t *prodp)
{
	uint64_t cons, prod;

	do {
		cons = uatomic_read(&v->r->cons_head);
		cmm_smp_rmb();
		prod = uatomic_read(&v->r->prod_head);
		cmm_smp_rmb();
	} while (uatomic_read(&v->r->cons_head) != cons);
	*consp = cons;
	*prodp = prod;
	return prod < cons || prod - cons > v->size ? -EBADMSG : 0;
}

/*
 * Move a side's head from *pos to *pos + n with a compare-and-swap.  On
 * failure *pos is the head as it is now.
 */
static inline int
ring_claim(uint64_t *head, uint64_t *pos, unsigned int n)
{
	uint64_t old = uatomic_cmpxchg(head, *pos, *pos + n);

	if (caa_likely(old == *pos))
		return 1;
	*pos = old;
	return 0;
}

/*
 * What the caller's side of a copy holds: references as the ring does,
 * pointers of this process, or 64-bit byte offsets from the object area
 * (as the caches do).  Always a constant where the copies are inlined, so
 * that each loop is straight and vectorises.
 */
enum ring_kind {
	RING_REFS,
	RING_PTRS,
	RING_OFFS,
};

/*
 * Pointers and offsets are both 64-bit words, read and written as
 * integers (an offset is a pointer with a base of 0), through a type that
 * may alias either.
 */
typedef uint64_t ring_word __attribute__((may_alias));

/* The base of kind k's 64-bit elements: objbase for pointers, 0 for
 * offsets. */
static inline uint64_t
ring_wide_base(enum ring_kind k, const char *base)
{
	return k == RING_PTRS ? (uint64_t)(uintptr_t)base : 0;
}

/*
 * The reference of element i of src, of kind k, in the low half of a
 * 64-bit word to be or-ed under a sequence (ring_ent_w()).  A pointer or
 * offset of an object of the pool gives one under 2^32 (the objects fit
 * in 256 GiB), so the high half is 0 and no mask is taken: one
 * instruction less per entry, or per pair of them.  Anything else, which
 * a put may not be given (it gives no object's reference, mask or not),
 * may set bits of the entry's sequence too (never clear one: it cannot
 * read as a hole): its position then reads as unwritten until shmpoold
 * repairs the ring that a consumer waiting on it marked stalled
 * (ring_repair() makes a hole of a sequence no lap has), or, where the
 * bits it sets were set already, as that reference.
 */
static inline uint64_t
ring_src_ref(const void *src, unsigned int i, enum ring_kind k,
		const char *base)
{
	if (k == RING_REFS)
		return ((const uint32_t *)src)[i];
	return (((const ring_word *)src)[i] - ring_wide_base(k, base)) >>
		SHMPOOL_REF_SHIFT;
}

/* Element i of dst, of kind k, is the object of reference ref. */
static inline void
ring_dst_set(void *dst, unsigned int i, enum ring_kind k, char *base,
		uint64_t ref)
{
	if (k == RING_REFS)
		((uint32_t *)dst)[i] = (uint32_t)ref;
	else
		((ring_word *)dst)[i] = ring_wide_base(k, base) +
			(ref << SHMPOOL_REF_SHIFT);
}

/* dst or src advanced by i elements of kind k. */
static inline const void *
ring_at(const void *p, unsigned int i, enum ring_kind k)
{
	if (k == RING_PTRS)
		return (void * const *)p + i;
	if (k == RING_OFFS)
		return (const uint64_t *)p + i;
	return (const uint32_t *)p + i;
}

/*
 * Write m entries from e, of one lap, with the sequence seq and the
 * references of src[0 .. m).  A straight loop, so that it vectorises.
 */
static inline __attribute__((always_inline)) void
ring_fill(uint64_t *restrict e, uint32_t seq, const void *restrict src,
		enum ring_kind k, const char *base, unsigned int m)
{
	unsigned int i;

	for (i = 0; i < m; i++)
		e[i] = ring_ent_w(seq, ring_src_ref(src, i, k, base));
}

/*
 * ring.c: what ring_fill() and ring_copy_out() do, for m >=
 * RING_WIDE_MIN 64-bit elements (pointers, base = objbase; offsets, base
 * = 0), resolved when the library is loaded to a build for the CPU's
 * widest vectors (AVX2), which the inline copies, built for the
 * baseline, cannot use.  From 33: a get or put of 32 objects without a
 * cache ran 1.13x as fast by the short copies as by these (bench/lib-turns
 * --cache 0 --get-bulk 32 --keep 128, and random 1..64 at keep 32
 * 1.19x); at 64 the short copies were 0.72x as fast
 * (docs/PERFORMANCE.md, What each change bought).
 */
#define RING_WIDE_MIN		33
typedef void ring_fill_wide_fn(uint64_t *restrict e, uint32_t seq,
		const uint64_t *restrict src, uint64_t base, unsigned int m);
typedef uint32_t ring_copy_out_wide_fn(const uint64_t *restrict e,
		uint32_t seq, uint64_t *restrict dst, uint64_t base,
		unsigned int m);
ring_fill_wide_fn ring_fill_wide;
ring_copy_out_wide_fn ring_copy_out_wide;
/* The builds of each (tests): for the baseline, and on x86-64 for AVX2. */
ring_fill_wide_fn ring_fill_wide_base;
ring_copy_out_wide_fn ring_copy_out_wide_base;
#if SHMPOOL_COPY_CALL_
#define RING_WIDE_AVX2		1
ring_fill_wide_fn ring_fill_wide_avx2;
ring_copy_out_wide_fn ring_copy_out_wide_avx2;
/*
 * copy.c: whether this CPU runs the AVX2 builds.  Called by the ifunc
 * resolvers, which run while the dynamic linker relocates the library,
 * before a sanitizer's runtime is set up: they and it are left
 * uninstrumented (COPY_RESOLVER).
 */
#define COPY_RESOLVER	__attribute__((no_sanitize("address", "undefined", \
	"thread"), no_instrument_function))
COPY_RESOLVER int copy_cpu_has_avx2(void);
/* The resolver name##_resolve() of an ifunc: name##_avx2 where the CPU
 * runs it, else name##_base, both of type type. */
#define COPY_IFUNC_RESOLVE(name, type)					\
static COPY_RESOLVER __attribute__((used)) type *			\
name##_resolve(void)							\
{									\
	return copy_cpu_has_avx2() ? name##_avx2 : name##_base;		\
}
#else
#define RING_WIDE_AVX2		0
#endif

/* Whether m entries of kind k go to the wide copies. */
static inline int
ring_wide_ok(enum ring_kind k, unsigned int m)
{
	return k != RING_REFS && m >= RING_WIDE_MIN;
}

#if SHMPOOL_VCOPY_OK_
/*
 * The short copies of 64-bit elements (2 <= m < RING_WIDE_MIN), two
 * entries a turn in 16-byte vectors (shmpool/cache.h's): no loop set-up
 * and no scalar tail to speak of, which at a few entries cost more than
 * the copy (no cache, bulk 4: see docs/PERFORMANCE.md).  A read ends with
 * a pair placed to end exactly at m, reading an entry twice where m is
 * odd.  A write never writes an entry twice once the entries before it
 * are written: a position may then be taken by a consumer and written a
 * lap later by another producer before the second store, which would put
 * the old entry back over the new one; an odd m ends with one entry alone
 * (the long write writes twice only while its first entry is unwritten,
 * ring.c's ring_fill_v4()).  Each 64-bit half of a
 * 16-byte access is read or written whole, as in the vectorised loops.
 */
#define RING_PAIRS		1
/* The sequence seq in the high halves of a pair. */
#define RING_V2_SEQ(seq)						\
	((shmpool_v2_){ (uint64_t)(seq) << 32, (uint64_t)(seq) << 32 })

/* A 16-byte aligned pair of 64-bit words, loaded whole. */
typedef uint64_t ring_v2a __attribute__((vector_size(16), may_alias));

/* base twice: from b2, 16-byte aligned, where the caller keeps it so
 * (pool_handle.objbase2: one load, where building it from base took a
 * load, a move and a shuffle), else built. */
static inline __attribute__((always_inline)) shmpool_v2_
ring_v2_base(uint64_t base, const uint64_t *b2)
{
	if (b2 != NULL)
		return (shmpool_v2_)*(const ring_v2a *)b2;
	return (shmpool_v2_){ base, base };
}

static inline __attribute__((always_inline)) void
ring_fill_pairs(uint64_t *restrict e, uint32_t seq,
		const uint64_t *restrict src, uint64_t base,
		const uint64_t *b2, unsigned int m)
{
	const shmpool_v2_ b = ring_v2_base(base, b2), sq = RING_V2_SEQ(seq);
	unsigned int i;

#define RING_FILL2(i)							\
	(*(shmpool_v2_ *)(e + (i)) = sq |				\
	 ((*(const shmpool_v2_ *)(src + (i)) - b) >> SHMPOOL_REF_SHIFT))
	for (i = 0; i + 1 < m; i += 2)
		RING_FILL2(i);
#undef RING_FILL2
	/* Odd counts out of line: bulks are mostly even (powers of two).
	 * The base from b, so that an even count holds no scalar copy of
	 * it (a load and a register, where b2 gave the pair). */
	if (caa_unlikely(m & 1))
		e[m - 1] = ring_ent_w(seq, (src[m - 1] - b[0]) >>
			SHMPOOL_REF_SHIFT);
}

static inline __attribute__((always_inline)) uint64_t
ring_copy_out_pairs(const uint64_t *restrict e, uint32_t seq,
		uint64_t *restrict dst, uint64_t base, const uint64_t *b2,
		unsigned int m)
{
	typedef uint32_t v4u32 __attribute__((vector_size(16)));
	const shmpool_v2_ b = ring_v2_base(base, b2), sq = RING_V2_SEQ(seq);
	shmpool_v2_ bad = { 0, 0 }, x;
	v4u32 hi;
	unsigned int i;

	/* x ^ sq is the entry's reference where its sequence is seq (and
	 * anything where it is not: dst is then not the result). */
#define RING_COPY2(i)							\
	(x = *(const shmpool_v2_ *)(e + (i)) ^ sq,			\
	 bad |= x,							\
	 *(shmpool_v2_ *)(dst + (i)) = (x << SHMPOOL_REF_SHIFT) + b)
	/* The last pair ends at m whatever m is: no branch on whether m
	 * is odd, which a size the branch predictor cannot learn would
	 * mispredict every other time. */
	for (i = 0; i + 2 < m; i += 2)
		RING_COPY2(i);
	RING_COPY2(m - 2);
#undef RING_COPY2
	/* The high halves of both, the sequences' differences, side by
	 * side in one 64-bit word: one shuffle, where moving each half out
	 * takes two moves, an or and a shift. */
#if defined(__clang__)
	hi = __builtin_shufflevector((v4u32)bad, (v4u32)bad, 1, 3, 1, 3);
#else
	hi = __builtin_shuffle((v4u32)bad, (v4u32){ 1, 3, 1, 3 });
#endif
	return ((shmpool_v2_)hi)[0];
}
#else
#define RING_PAIRS		0
#endif

/* Whether m entries of kind k go two a turn. */
static inline int
ring_pairs_ok(enum ring_kind k, unsigned int m)
{
	return RING_PAIRS && k != RING_REFS && m >= 2;
}

/* Write the m entries from e (see ring_fill()). */
static inline void
ring_fill_any(uint64_t *e, uint32_t seq, const void *src, enum ring_kind k,
		const char *base, unsigned int m)
{
	if (ring_wide_ok(k, m))
		ring_fill_wide(e, seq, (const uint64_t *)src,
			ring_wide_base(k, base), m);
#if RING_PAIRS
	else if (ring_pairs_ok(k, m))
		ring_fill_pairs(e, seq, (const uint64_t *)src,
			ring_wide_base(k, base), NULL, m);
#endif
	else
		ring_fill(e, seq, src, k, base, m);
}

/*
 * Copy the references of the m entries from e to dst[0 .. m); returns 0
 * when their sequences are all seq (written for these
 * positions).  One pass with no early exit, so that it vectorises: the
 * common case is that they all are.
 */
static inline __attribute__((always_inline)) uint32_t
ring_copy_out(const uint64_t *restrict e, uint32_t seq, void *restrict dst,
		enum ring_kind k, char *base, unsigned int m)
{
	uint32_t bad = 0;
	unsigned int i;

	/* Plain loads, so that the loop vectorises; each entry is loaded
	 * once, its sequence and its reference together (an aligned 64-bit
	 * element of a vector load is read at once). */
	for (i = 0; i < m; i++) {
		uint64_t x = e[i];

		bad |= ring_ent_seq(x) ^ seq;
		ring_dst_set(dst, i, k, base, (uint32_t)x);
	}
	return bad;
}

/* Copy the m entries from e out (see ring_copy_out()): 0 when all are
 * written. */
static inline uint64_t
ring_copy_out_any(const uint64_t *e, uint32_t seq, void *dst,
		enum ring_kind k, char *base, unsigned int m)
{
	if (ring_wide_ok(k, m))
		return ring_copy_out_wide(e, seq, (uint64_t *)dst,
			ring_wide_base(k, base), m);
#if RING_PAIRS
	if (ring_pairs_ok(k, m))
		return ring_copy_out_pairs(e, seq, (uint64_t *)dst,
			ring_wide_base(k, base), NULL, m);
#endif
	return ring_copy_out(e, seq, dst, k, base, m);
}

/*
 * Whether n entries from pos make a short copy: fewer than RING_WIDE_MIN
 * (in pairs, or one: ring_short_n()), within the array: no call and few
 * registers.  A put or get through an idle cache (the default one, of
 * size 0, of a pool without caches) makes only those inline (cache.c;
 * ring_get_short()).
 */
static inline int
ring_short_n(unsigned int n)
{
	return n < RING_WIDE_MIN;
}

/*
 * idx + n <= size, as positions pos and pos + n - 1 being of one lap:
 * they differ only in the bits of the mask (in 32 bits, as laps divide
 * 2^32).  True at once where n is 1; false for 0 (no copy to make: the
 * long ones take it).  Three instructions where the caller knows n
 * short and not 0 (the idle cache's get and put, cache.c), where
 * n - 1 <= mask - idx took five.
 */
static inline int
ring_short(const struct ring_view *v, uint64_t pos, unsigned int n)
{
	uint32_t p = (uint32_t)pos;

	return ring_short_n(n) && n != 0 && (p ^ (p + n - 1)) <= v->mask;
}

/* The same for ring_write() and ring_read(), which take any n: in the
 * form that keeps fewer registers in their long copies (a put of 32
 * through put_direct(), when 32 took the long copies, before 1cf3750,
 * took five instructions more with the one above, bench/instr-cost
 * --cache 0 --get-bulk 32). */
static inline int
ring_short_any(const struct ring_view *v, uint64_t pos, unsigned int n)
{
	return ring_short_n(n) && n - 1 <= v->mask - ((uint32_t)pos & v->mask);
}

/* Write the n short entries from position pos (see ring_short()); b2 as
 * for ring_get_try(). */
static inline __attribute__((always_inline)) void
ring_write_short(const struct ring_view *v, uint64_t pos, unsigned int n,
		const void *src, enum ring_kind k, const char *base,
		const uint64_t *b2)
{
	uint64_t *e = &v->ents[(uint32_t)pos & v->mask];
	uint32_t seq = ring_seq(v, pos);

	ring_smp_release();
	if (n == 1)
		e[0] = ring_ent_w(seq, ring_src_ref(src, 0, k, base));
#if RING_PAIRS
	else if (k != RING_REFS)
		ring_fill_pairs(e, seq, (const uint64_t *)src,
			ring_wide_base(k, base), k == RING_PTRS ? b2 : NULL,
			n);
#endif
	else
		ring_fill(e, seq, src, k, base, n);
}

/* Copy the n short entries from position pos out (see ring_copy_out());
 * b2 as for ring_get_try(). */
static inline __attribute__((always_inline)) int
ring_read_short(const struct ring_view *v, uint64_t pos, unsigned int n,
		void *dst, enum ring_kind k, char *base, const uint64_t *b2)
{
	const uint64_t *e = &v->ents[(uint32_t)pos & v->mask];
	uint32_t seq = ring_seq(v, pos);
	uint64_t bad;

	if (n == 1) {
		/* Read once, as uatomic_read() does; gcc takes its address
		 * into the load, where uatomic_read()'s volatile access took
		 * a lea first. */
		uint64_t x = __atomic_load_n(e, __ATOMIC_RELAXED);
		uint64_t ref = (uint32_t)x;

#if SHMPOOL_VCOPY_OK_
		/* The reference widened by one move, where gcc would
		 * otherwise shift x whole and mask it with a 64-bit
		 * constant, one more instruction and register; hidden
		 * as 64 bits, so that it is not widened again. */
		SHMPOOL_OPAQUE_(ref);
#endif
		ring_dst_set(dst, 0, k, base, ref);
		bad = ring_ent_seq(x) ^ seq;
	}
#if RING_PAIRS
	else if (k != RING_REFS)
		bad = ring_copy_out_pairs(e, seq, (uint64_t *)dst,
			ring_wide_base(k, base), k == RING_PTRS ? b2 : NULL,
			n);
#endif
	else
		bad = ring_copy_out(e, seq, dst, k, base, n);
	ring_smp_acquire();
	return bad == 0;
}

/* Write the n claimed entries from position pos (see ring_fill()). */
static inline void
ring_write(const struct ring_view *v, uint64_t pos, unsigned int n,
		const void *src, enum ring_kind k, const char *base)
{
	uint32_t idx = (uint32_t)pos & v->mask, m;

	if (ring_short_any(v, pos, n)) {
		ring_write_short(v, pos, n, src, k, base, NULL);
		return;
	}
	/* The objects' contents before the references. */
	ring_smp_release();
	m = n < v->size - idx ? n : v->size - idx;
	ring_fill_any(&v->ents[idx], ring_seq(v, pos), src, k, base, m);
	if (caa_unlikely(m < n))
		ring_fill_any(v->ents, ring_seq(v, pos + m), ring_at(src, m, k),
			k, base, n - m);
}

/* Copy the n entries from position pos out (see ring_copy_out()). */
static inline int
ring_read(const struct ring_view *v, uint64_t pos, unsigned int n, void *dst,
		enum ring_kind k, char *base)
{
	uint32_t idx = (uint32_t)pos & v->mask, m;
	uint64_t bad;

	if (ring_short_any(v, pos, n))
		return ring_read_short(v, pos, n, dst, k, base, NULL);
	/* More than the ring holds (a refill asking more than there are
	 * objects): the copy would run past the array. */
	if (caa_unlikely(n > v->size))
		return 0;
	m = n < v->size - idx ? n : v->size - idx;
	bad = ring_copy_out_any(&v->ents[idx], ring_seq(v, pos), dst, k, base,
		m);
	if (caa_unlikely(m < n))
		bad |= ring_copy_out_any(v->ents, ring_seq(v, pos + m),
			(void *)ring_at(dst, m, k), k, base, n - m);
	/* The sequences' loads before the objects' contents. */
	ring_smp_acquire();
	return bad == 0;
}

/* ring.c: the operations when the first try did not succeed. */
int ring_put_slow(const struct ring_view *v, const void *src,
		enum ring_kind k, const char *base, unsigned int n,
		enum ring_mode mode, uint64_t *rec, uint32_t token);
int ring_get_slow(const struct ring_view *v, void *dst, enum ring_kind k,
		char *base, unsigned int n, enum ring_mode mode, uint64_t *rec,
		uint32_t token);
/* cache.c: before a claim by compare-and-swap on a ring owned by another
 * (o, its owner word; rec, the caller's record, set for this ring): take
 * it back or cancel its taking.  1 when the claim may be tried again (the
 * word has changed), 0 when the owner is in the middle of a claim there
 * (or the fence failed). */
int ring_own_settle(const struct ring_view *v, uint32_t o, uint64_t *rec);

/*
 * A put in three steps, for a caller that puts them together itself
 * (cache.c's put through an idle cache, which reads the ring's mask and
 * its objects' base only once the positions are claimed, so that
 * nothing of them is held in a register across the compare-and-swap;
 * cache_flush(), which empties its cache between the claim and the
 * writes):
 * ring_put_claim() writes the record rec and claims n positions of r, a
 * ring of size entries; ring_write() or ring_write_short() writes them;
 * ring_put_done() clears the record.  ring_put_claim(): 1 with the first
 * position in *posp, or 0 when it claimed nothing: no room for n (rec
 * not written), or another producer claimed first, or the ring is owned
 * by another cache (ring ownership; rec written, then 0 again).  slotp:
 * the caller's cache's slot number (ring_own_token()).
 */
static inline __attribute__((always_inline)) int
ring_put_claim(struct ring *r, uint32_t size, unsigned int n, uint64_t *rec,
		const uint32_t *slotp, uint64_t *posp)
{
	uint64_t pos = uatomic_read(&r->prod_head);
	uint32_t o1;

	/* The consumers' head, read after the producers' (the barrier
	 * orders the two reads), is never more than size behind pos: the producer
	 * that moved prod_head to pos had read it at pos - size or later
	 * (and a new ring's producers' head is at most size).  So
	 * cons + size - pos does not wrap (the heads are 64-bit and only
	 * grow), and n fit when every position up to pos + n - 1 - size has
	 * been claimed, that is read, by a consumer.  A pos out of date is
	 * behind cons at worst: the check passes and the claim fails. */
	cmm_smp_rmb();
	if (caa_unlikely(uatomic_read(&r->cons_head) + size - pos < n))
		return 0;
	/* The record before the claim: the compare-and-swap orders them. */
	uatomic_set(rec, RING_OP(pos, n));
	/* The owner after the record (ring ownership). */
	ring_own_order();
	o1 = ring_own_read1(r);
	/* The caller's own ring first, where a cache that runs on one CPU
	 * claims: four instructions to the claim (ring_own_mine()), where
	 * the test of a ring no one owns first took seven there; six to
	 * the compare-and-swap on a shared one, where it took three. */
	if (caa_likely(ring_own_mine(o1, slotp))) {
		/* The record before the head, for ring_repair(), as the
		 * compare-and-swap orders them. */
		cmm_smp_wmb();
		uatomic_set(&r->prod_head, pos + n);
		*posp = pos;
		return 1;
	}
	if (caa_unlikely(o1 != RING_OWN_FREE1 ||
			!ring_claim(&r->prod_head, &pos, n))) {
		/* Another producer has those positions, or another cache
		 * the ring: the record must not cover them for it.  The
		 * record is 0 whenever no claim of its owner is under way,
		 * which is what lets the caller name another ring in it
		 * (cache_ring_op()). */
		uatomic_set(rec, 0);
		return 0;
	}
	*posp = pos;
	return 1;
}

/* The writes before the record's end. */
static inline __attribute__((always_inline)) void
ring_put_done(uint64_t *rec)
{
	ring_smp_release();
	uatomic_set(rec, 0);
}

/*
 * The first try of a put of n (see ring_put()): one claim and the copy.
 * n, or 0 when it did not put them: no room for them, or another
 * producer claimed first.
 */
static inline __attribute__((always_inline)) int
ring_put_try(const struct ring_view *v, const void *src, enum ring_kind k,
		const char *base, unsigned int n, uint64_t *rec,
		const uint32_t *slotp)
{
	uint64_t pos;

	if (caa_unlikely(!ring_put_claim(v->r, v->size, n, rec, slotp, &pos)))
		return 0;
	ring_write(v, pos, n, src, k, base);
	ring_put_done(rec);
	return n;
}

/*
 * The first try of a get of n (see ring_get()): the copy and one claim,
 * or, with short_only, a short copy alone.  n, or 0 when it did not take
 * them: not all written, another consumer claimed first, or (short_only)
 * not short.  dst may have been written either way.  b2, where not NULL,
 * is base twice, for the short copy of pointers (ring_v2_base()); base
 * and b2 must agree (one object goes by base), and offsets take no b2.
 */
static inline __attribute__((always_inline)) int
ring_get_try(const struct ring_view *v, void *dst, enum ring_kind k,
		char *base, const uint64_t *b2, unsigned int n,
		const int short_only, uint64_t *rec, const uint32_t *slotp,
		int *hint)
{
	/* Read once: the stores to dst could otherwise alias it. */
	struct ring *r = v->r;
	uint64_t pos = uatomic_read(&r->cons_head);
	uint32_t o1;
	int ok;

	if (short_only ? !ring_short(v, pos, n) ||
			!ring_read_short(v, pos, n, dst, k, base, b2) :
			!ring_read(v, pos, n, dst, k, base))
		return 0;
	if (rec == NULL)
		return ring_claim(&r->cons_head, &pos, n) ? (int)n : 0;
	/* The record, then the owner (ring ownership). */
	ring_rec_get(rec);
	ring_own_order();
	o1 = ring_own_read1(r);
	/* The caller's own ring first (ring_put_claim()). */
	if (caa_likely(ring_own_mine(o1, slotp))) {
		uatomic_set(&r->cons_head, pos + n);
		/* The head before the record's end: a cache that takes the
		 * ring back once it sees the record cleared must see it. */
		cmm_smp_wmb();
		ok = 1;
		if (hint != NULL)
			*hint = 0;
	} else if (o1 == RING_OWN_FREE1) {
		ok = ring_claim(&r->cons_head, &pos, n);
		if (hint != NULL)
			*hint = ring_own_hint(pos, n);
	} else {
		ok = 0;
	}
	cmm_barrier();
	uatomic_set(rec, 0);
	return ok ? (int)n : 0;
}

/*
 * Put the n references of src (of kind k; base for pointers) in.  rec is
 * the caller's record, for this ring (its cache's, cache_ring_op()).
 * Returns how many went in: n, or 0 for RING_BULK when they do not fit,
 * or -1 when the ring is owned by another cache in the middle of a claim
 * there (ring ownership: skipped, not full).  Inline: the first try;
 * anything else is ring_put_slow().  Any number of
 * processes may put and get at once, each producer with a record of its
 * own.
 */
static inline __attribute__((always_inline)) int
ring_put(const struct ring_view *v, const void *src, enum ring_kind k,
		const char *base, unsigned int n, enum ring_mode mode,
		uint64_t *rec, const uint32_t *slotp)
{
	if (caa_likely(ring_put_try(v, src, k, base, n, rec, slotp)))
		return n;
	return ring_put_slow(v, src, k, base, n, mode, rec,
		ring_own_token(slotp));
}

/*
 * Take n references out to dst (of kind k; base for pointers).  Returns
 * how many came out: n, or 0 for RING_BULK when there are not that many,
 * or -1 when the ring is owned by another cache in the middle of a claim
 * there (ring ownership: skipped, not short).  dst may have been written
 * even when nothing comes out.
 */
static inline __attribute__((always_inline)) int
ring_get(const struct ring_view *v, void *dst, enum ring_kind k, char *base,
		unsigned int n, enum ring_mode mode, uint64_t *rec,
		const uint32_t *slotp)
{
	if (caa_likely(ring_get_try(v, dst, k, base, NULL, n, 0, rec, slotp,
			NULL)))
		return n;
	return ring_get_slow(v, dst, k, base, n, mode, rec,
		ring_own_token(slotp));
}

/* The short try of a get alone (ring_short()), for the caller to inline
 * as the whole of a get through an idle cache: n, or 0 and a long try is
 * to be made (cache.c's rings_get()). */
static inline __attribute__((always_inline)) int
ring_get_short(const struct ring_view *v, void *dst, enum ring_kind k,
		char *base, const uint64_t *b2, unsigned int n, uint64_t *rec,
		const uint32_t *slotp, int *hint)
{
	return ring_get_try(v, dst, k, base, b2, n, 1, rec, slotp, hint);
}

/* References in and out (tests; the library moves pointers and offsets). */
static inline int
ring_enqueue(const struct ring_view *v, const uint32_t *refs, unsigned int n,
		enum ring_mode mode, uint64_t *rec)
{
	return ring_put(v, refs, RING_REFS, NULL, n, mode, rec,
		&ring_slot_none);
}

static inline int
ring_dequeue(const struct ring_view *v, uint32_t *refs, unsigned int n,
		enum ring_mode mode)
{
	return ring_get(v, refs, RING_REFS, NULL, n, mode, NULL,
		&ring_slot_none);
}

/* ring.c: shmpoold's repair of what dead producers left claimed. */
struct ring_repair_stats {
	uint64_t holes;			/* positions of dead producers holed */
	uint64_t spoiled;		/* of them, ones whose sequence no
					   lap has (a put of what is no
					   object of the pool) */
	uint64_t deferred;		/* positions a live record covers */
};
int ring_repair(const struct ring_view *v, uint32_t ring,
		const uint64_t *recs, const uint32_t *rings, size_t stride,
		unsigned int nrecs, struct ring_repair_stats *st);

#endif /* SHMPOOL_RING_H */
