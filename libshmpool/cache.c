/*
 * cache.c - the get/put path beyond a cache hit: refill, flush, the ring
 * without a cache, argument errors; and the out-of-line twins of the
 * inline calls.
 */
#include "config.h"

/* This file defines the exported twins of the inline calls. */
#define SHMPOOL_NO_INLINE

/* No clone of the function that drops an argument (gcc; clang makes
 * none such, and knows no noclone). */
#if defined(__clang__)
#define NOCLONE
#else
#define NOCLONE	__attribute__((noclone))
#endif

#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <string.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "segment-internal.h"

/* One put adds at most this many objects to its 16-bit field of w (see
 * struct shmpool_cache): from below 2^15, where the put that passes it
 * folds the field, it stays below 2^16. */
_Static_assert(SHMPOOL_CACHE_FLUSHTHRESH(SHMPOOL_CACHE_MAX_SIZE) < 1 << 15,
	"a hit can overflow a field of the cache's word");
/* The get calls between two folds, at most the objects in the cache after
 * the first and those put since (struct shmpool_cache), fit their 16-bit
 * field. */
_Static_assert(SHMPOOL_CACHE_OBJS_MAX + (1 << 15) +
	SHMPOOL_CACHE_FLUSHTHRESH(SHMPOOL_CACHE_MAX_SIZE) < 1 << 16,
	"a cache's get calls can overflow their field of w");
#if SHMPOOL_STATS
/* A put hit of a run-time size sets the call's bit of its addend after
 * the multiply (bts, <shmpool/cache.h>): the call is one bit, clear in
 * n * (SHMPOOL_W_PUT_OBJ_ + 1) for any 32-bit n (above n, below the
 * objects put). */
_Static_assert((SHMPOOL_W_PUT_CALL_ & (SHMPOOL_W_PUT_CALL_ - 1)) == 0 &&
	SHMPOOL_W_PUT_CALL_ >= UINT64_C(1) << 32 &&
	SHMPOOL_W_PUT_CALL_ < SHMPOOL_W_PUT_OBJ_,
	"a put's call is not one bit of its own in the addend");
#endif
/* The length, 16 bits of w, holds every object a cache can hold. */
_Static_assert(SHMPOOL_CACHE_OBJS_MAX < 1 << 16,
	"a cache's length does not fit its field of w");
/* A refill or a flush writes its counts in one line besides w's and the
 * put record's (struct shmpool_cache); so does a get or put past the
 * cache, in the record's. */
#define SAME_LINE(a, b)	(offsetof(struct shmpool_cache, a) / \
	SHMPOOL_CACHE_LINE == offsetof(struct shmpool_cache, b) / \
	SHMPOOL_CACHE_LINE)
_Static_assert(SAME_LINE(put_common_pool_bulk, objs_adj) &&
	SAME_LINE(put_common_pool_bulk, get_success_bulk) &&
	SAME_LINE(ring_op, get_direct_one) &&
	SAME_LINE(ring_op, ring_op_ring),
	"a refill's counts, or a direct get or put's, span two lines");
#undef SAME_LINE

/*
 * A get or put past the cache counted in its slot: a call and n objects.
 * Two adds, each to its word in place: gcc otherwise pairs them in one
 * 16-byte add and spends six more instructions building its operands,
 * or, with n in a register it wants for something else, loads the word,
 * adds and stores (two instructions more).  On x86-64 each is one add
 * to memory, written as such.
 */
static inline void
count_direct(uint64_t *bulk, uint64_t *objs, unsigned int n)
{
#if SHMPOOL_STATS && defined(__x86_64__)
	__asm__("addq $1, %0" : "+m" (*bulk));
	__asm__("addq %1, %0" : "+m" (*objs) : "er" ((uint64_t)n));
#elif SHMPOOL_STATS
	*bulk += 1;
	cmm_barrier();
	*objs += n;
#else
	(void)bulk;
	(void)objs;
	(void)n;
#endif
}

/* The same, for a run-time n that the caller no longer needs: zero-extended
 * in its own register, where gcc, counting after a compare-and-swap that
 * takes %rax, kept a copy of it in a register it saved (get_idle_in():
 * bench/instr-cost --cache 0 --get-bulk 4 --constant-n 1, 47.58 -> 47.33
 * instructions per object). */
static inline void
count_direct_z(uint64_t *bulk, uint64_t *objs, unsigned int n)
{
#if SHMPOOL_STATS && defined(__x86_64__)
	if (__builtin_constant_p(n)) {
		count_direct(bulk, objs, n);
		return;
	}
	__asm__("addq $1, %0" : "+m" (*bulk));
	__asm__("mov %k1, %k1\n\taddq %q1, %0" : "+m" (*objs), "+r" (n));
#else
	count_direct(bulk, objs, n);
#endif
}

/* A get or put of one object through a cache of size 0 (get_idle_one(),
 * put_idle_one()): a call and an object at once, one add to its _one word
 * (struct shmpool_cache), where count_direct() takes two (bench/instr-cost
 * --cache 0 --get-bulk 1 --constant-n 1: docs/PERFORMANCE.md, What each
 * change bought). */
static inline void
count_direct_one(uint64_t *one)
{
#if SHMPOOL_STATS && defined(__x86_64__)
	__asm__("addq $1, %0" : "+m" (*one));
#elif SHMPOOL_STATS
	*one += 1;
#else
	(void)one;
#endif
}

/*
 * The view, as a value, of the ring at r, one of h's: its entries follow
 * it, and every ring has ring 0's geometry, so that the compiler keeps no
 * pointer to a view; and ring i's (ring_view_at()), for the short tries
 * and the first try of each operation, whose one load of its own is the
 * ring's address.
 */
static inline __attribute__((always_inline)) struct ring_view
ring_view_of(const struct pool_handle *h, struct ring *r)
{
	struct ring_view v;

	v.r = r;
	v.ents = r->ents;
	v.size = h->rings[0].size;
	v.mask = h->rings[0].mask;
	v.own = h;
	return v;
}

static inline __attribute__((always_inline)) struct ring_view
ring_view_at(const struct pool_handle *h, unsigned int i)
{
	return ring_view_of(h, h->ring_r[i]);
}

/* The owner word of a ring that cache owns (ring ownership, ring.h), for
 * the slow paths; the first tries read it where they compare it
 * (ring_own_token()). */
static inline uint32_t
cache_token(const struct shmpool_cache *cache)
{
	return ring_own_token(&cache->slot);
}

int cache_own_try(struct pool_handle *h, struct shmpool_cache *cache,
		unsigned int i);

/*
 * Ring ownership (ring.h): a fence on every CPU running a process that
 * registered (each attaching process does, pool.c), between the caller's
 * write of a ring's owner word and its look at the records.
 */
static int
own_fence(void)
{
	return (int)syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED,
		0, 0);
}

/* Is cache's slot s at work on ring i (its record set, for ring i)? */
static int
slot_busy_on(const struct seg_slot *s, unsigned int i)
{
	if (uatomic_read(&s->cache.ring_op) == 0)
		return 0;
	cmm_smp_rmb();
	return uatomic_read(&s->cache.ring_op_ring) == i;
}

int
ring_own_settle(const struct ring_view *v, uint32_t o, uint64_t *rec)
{
	const struct pool_handle *h = v->own;
	struct shmpool_cache *me = caa_container_of(rec, struct shmpool_cache,
		ring_op);
	struct ring *r = v->r;
	uint32_t s = RING_OWN_SLOT(o), mine, cur;
	unsigned int i;

	if (h == NULL)
		return 0;
	/* The caller's slot and ring by their addresses, not by what the
	 * segment says (shmpoold reclaims for the dead). */
	mine = (uint32_t)(slot_of(me) - h->slots);
	for (i = 0; i < h->nb_rings && h->ring_r[i] != r; i++)
		;
	if (s >= h->nb_slots || i == h->nb_rings) {
		/* No slot's word: it was written by no library (a process
		 * writing the segment at random); no one owns the ring. */
		uatomic_cmpxchg(&r->owner, o, 0);
		return 1;
	}
	if (s == mine) {
		/* Being taken from the caller, which is at no claim of it but
		 * this one: it gives it up itself. */
		uatomic_cmpxchg(&r->owner, o, 0);
		return 1;
	}
	switch (RING_OWN_STATE(o)) {
	case RING_OWN_ACQ:
		uatomic_cmpxchg(&r->owner, o, 0);
		return 1;
	case RING_OWN_OWNED:
		cur = uatomic_cmpxchg(&r->owner, o, RING_OWN(s,
			RING_OWN_REVOKE));
		if (cur != o)
			return 1;
		/* fall through */
	case RING_OWN_REVOKE:
		if (own_fence() < 0)
			return 0;
		uatomic_cmpxchg(&r->owner, RING_OWN(s, RING_OWN_REVOKE),
			RING_OWN(s, RING_OWN_FENCED));
		/* fall through */
	default:
		/* The records after the owner word (FENCED: read by the
		 * caller, or set above). */
		cmm_smp_rmb();
		if (slot_busy_on(&h->slots[s], i))
			return 0;
		uatomic_cmpxchg(&r->owner, RING_OWN(s, RING_OWN_FENCED), 0);
		return 1;
	}
}

/*
 * Take to cache ring i, whose get by compare-and-swap crossed a multiple
 * of RING_OWN_EVERY positions (ring_own_hint()), if its thread still
 * uses it (ring_here(): that of the CPU it runs on) and no other cache is
 * at work on it.  Returns 0, as that get does.
 */
int __attribute__((noinline))
cache_own_try(struct pool_handle *h, struct shmpool_cache *cache,
		unsigned int i)
{
	uint32_t acq = RING_OWN(cache->slot, RING_OWN_ACQ), s;
	struct ring *r;

	/* Not with one ring, which every process uses (and a host of one
	 * CPU, where every thread keeps to it, has one by default); nor
	 * without rseq, where every thread uses ring 0 (cpu_here()); nor
	 * for a cache whose slot number is not its place's. */
	if (h->nb_rings == 1 || !SHMPOOL_CPU_HERE || __rseq_size == 0 ||
	    cache->slot != (uint32_t)(slot_of(cache) - h->slots))
		return 0;
	if (ring_here(h) != i)
		return 0;
	r = h->ring_r[i];
	if (uatomic_cmpxchg(&r->owner, 0, acq) != 0)
		return 0;
	if (own_fence() < 0)
		goto cancel;
	for (s = 0; s < h->nb_slots; s++)
		if (s != cache->slot && slot_busy_on(&h->slots[s], i))
			goto cancel;
	cmm_smp_mb();
	uatomic_cmpxchg(&r->owner, acq, cache_token(cache));
	return 0;
cancel:
	uatomic_cmpxchg(&r->owner, acq, 0);
	return 0;
}

/* Give up every ring slot s has (or is taking, or is being taken). */
void
rings_own_drop(struct pool_handle *h, uint32_t s)
{
	uint32_t i, o;

	for (i = 0; i < h->nb_rings; i++) {
		o = uatomic_read(&h->ring_r[i]->owner);
		if (o != 0 && RING_OWN_SLOT(o) == s)
			uatomic_cmpxchg(&h->ring_r[i]->owner, o, 0);
	}
}

/*
 * The rings past the first one tried (ring i, that of the caller's CPU:
 * ring_here()).  A put goes to ring i, which has room for every object
 * (struct seg_hdr), but after a double put or while another cache that
 * owns it is in the middle of a claim there; then to the others in
 * turn.
 * A get that ring i cannot serve takes its n from one other ring, or else
 * gathers them from all, each giving what it has; if they have not n
 * between them, what it gathered goes back to a ring it came from and the
 * get fails, as on one ring (unless a ring was skipped:
 * rings_get_rest()).  The record of the puts is rc's (a cache of the
 * caller's: the counting one).
 *
 * Here, a put of n that ring i's first try did not make: ring i again
 * (its slow path), then the others.  A ring owned by another cache in
 * the middle of a claim there is skipped (ring_claim_slow()).  Ring i
 * skipped, the caller first yields the CPU once and tries it again: its
 * owner was on this CPU (or one that shares its ring) when it took it,
 * and, in the middle of a claim there, has most likely been descheduled
 * on this CPU, where it finishes the claim in its turn; going to another
 * CPU's ring instead would share that ring's lines with the thread on
 * that CPU.  When a ring was skipped and none took the n, the caller
 * yields the CPU and goes round again: a ring skipped is not a ring full,
 * and a put must not fail for it.  That is how (PUT_WAIT).  A caller
 * that does its own waiting, and yields nothing here, makes one pass:
 * PUT_PASS, ring i then the others; PUT_PASS_OWN, the same but that it
 * stops at once when ring i is skipped, where PUT_WAIT would yield and
 * try it again (cache_flush(), which gives its cache the objects back
 * before it yields and comes again with PUT_PASS; shmpoold, through it,
 * makes one PUT_PASS and puts a dead process's cache back later rather
 * than wait for a process that may be stopped, or dead and not yet
 * reclaimed itself).  n, or 0 when every ring was full (a double put);
 * -1 when a ring was skipped and the pass is over.
 */
enum put_how {
	PUT_WAIT,
	PUT_PASS,
	PUT_PASS_OWN,
};

static int __attribute__((noinline))
rings_put_rest(struct pool_handle *h, const void *src, enum ring_kind k,
		const char *base, unsigned int n, unsigned int i,
		struct shmpool_cache *rc, enum put_how how)
{
	unsigned int j, r;
	int ret, skipped, yielded = 0;

	for (;;) {
		ret = ring_put_slow(&h->rings[i], src, k, base, n, RING_BULK,
			cache_ring_op(rc, i), cache_token(rc));
		if (ret > 0)
			return (int)n;
		if (ret < 0 && how == PUT_PASS_OWN)
			return -1;
		if (ret < 0 && how == PUT_WAIT && !yielded) {
			yielded = 1;
			sched_yield();
			continue;
		}
		skipped = ret < 0;
		for (j = 1; j < h->nb_rings; j++) {
			r = (i + j) & h->ring_mask;
			ret = ring_put(&h->rings[r], src, k, base, n,
				RING_BULK, cache_ring_op(rc, r), &rc->slot);
			if (ret > 0)
				return (int)n;
			skipped |= ret < 0;
		}
		if (!skipped)
			return 0;
		if (how != PUT_WAIT)
			return -1;
		sched_yield();
	}
}

/* Put n to ring i, else to another (above): n, or 0 when none had room.
 * The first try inline, on ring i's view as a value. */
static inline __attribute__((always_inline)) int
rings_put(struct pool_handle *h, const void *src, enum ring_kind k,
		const char *base, unsigned int n, unsigned int i,
		struct shmpool_cache *rc)
{
	struct ring_view v = ring_view_at(h, i);

	if (caa_likely(ring_put_try(&v, src, k, base, n,
			cache_ring_op(rc, i), &rc->slot)))
		return (int)n;
	return rings_put_rest(h, src, k, base, n, i, rc, PUT_WAIT);
}

/* A get of n that ring i's first try did not make: ring i again (its slow
 * path, after one yield if it was skipped), then the others, as a put
 * (above).  n, or 0.  A ring skipped (owned by a cache in the middle of a
 * claim there) is not a ring short: when one was, and the others had not
 * n, a caller that must have them (wait) puts back what it gathered, to
 * a ring it gathered from, yields the CPU and goes round again, until the
 * owner's claim is done; one that has another way (a refill's first try,
 * for more than the request needs; a get past a cache that holds some of
 * them) gets 0 as when the rings have too few. */
static int __attribute__((noinline))
rings_get_rest(struct pool_handle *h, void *dst, enum ring_kind k, char *base,
		unsigned int n, unsigned int i, struct shmpool_cache *rc,
		int wait)
{
	unsigned int j, got, from, q;
	int r, skipped, yielded = 0;

	for (;;) {
		r = ring_get_slow(&h->rings[i], dst, k, base, n, RING_BULK,
			cache_ring_op(rc, i), cache_token(rc));
		if (r > 0)
			return (int)n;
		if (r < 0 && !yielded) {
			yielded = 1;
			sched_yield();
			continue;
		}
		if (h->nb_rings == 1 && r == 0)
			return 0;
		skipped = r < 0;
		for (j = 1; j < h->nb_rings; j++) {
			r = ring_get(&h->rings[(i + j) & h->ring_mask], dst, k,
				base, n, RING_BULK,
				cache_ring_op(rc, (i + j) & h->ring_mask),
				&rc->slot);
			if (r > 0)
				return (int)n;
			skipped |= r < 0;
		}
		for (j = 0, got = 0, from = i; j < h->nb_rings && got < n;
				j++) {
			q = (i + j) & h->ring_mask;
			r = ring_get(&h->rings[q], (void *)ring_at(dst, got, k),
				k, base, n - got, RING_BURST,
				cache_ring_op(rc, q), &rc->slot);
			if (r > 0) {
				if (got == 0)
					from = q;
				got += (unsigned int)r;
			}
			skipped |= r < 0;
		}
		if (got == n)
			return (int)n;
		/* Not to ring i, which may be the one passed by: the put
		 * would try it first, spinning and yielding while it holds
		 * them from every other get. */
		if (got > 0)
			rings_put(h, dst, k, base, got, from, rc);
		if (!skipped || !wait)
			return 0;
		sched_yield();
	}
}

/* Get n from ring i, else from the others (above, wait as there): n, or
 * 0. */
static inline __attribute__((always_inline)) int
rings_get(struct pool_handle *h, void *dst, enum ring_kind k, char *base,
		unsigned int n, unsigned int i, struct shmpool_cache *rc,
		int wait)
{
	struct ring_view v = ring_view_at(h, i);
	int hint;

	if (caa_likely(ring_get_try(&v, dst, k, base, NULL, n, 0,
			cache_ring_op(rc, i), &rc->slot, &hint))) {
		if (caa_unlikely(hint))
			cache_own_try(h, rc, i);
		return (int)n;
	}
	return rings_get_rest(h, dst, k, base, n, i, rc, wait);
}

/* Make cache what its change record says. */
static inline void
cache_change_apply(struct shmpool_cache *cache)
{
#define APPLY(f) uatomic_set(&cache->f, cache->change.f);
	SHMPOOL_CACHE_CHANGE_(APPLY)
#undef APPLY
}

/*
 * Make cache what its change record says, as readers see it at once
 * (between seq made odd and made even again), and as shmpoold sees it
 * too: the record is whole before seq is made odd (cache_change_finish()).
 * Without stats readers read nothing but w, which changes with one store.
 */
static void
cache_change_commit(struct shmpool_cache *cache)
{
#if SHMPOOL_STATS
	cmm_smp_wmb();
	uatomic_set(&cache->seq, cache->seq + 1);
	cmm_smp_wmb();
	cache_change_apply(cache);
	cmm_smp_wmb();
	uatomic_set(&cache->seq, cache->seq + 1);
#else
	uatomic_set(&cache->w, cache->change.w);
#endif
}

/* Write in cache's change record a change of its w to w and of its
 * objs_adj by adj, with its hits' counts folded into the totals if fold
 * (without stats, of its w alone); cache_change_commit() makes it.  Until
 * then the record is not read: seq is even. */
static void
cache_change_prepare(struct shmpool_cache *cache, uint64_t w, uint64_t adj,
		int fold)
{
	struct shmpool_cache_change_ *to = &cache->change;
#if SHMPOOL_STATS
	uint64_t was = cache->w;

	/* After the even seq of the change before: a reader that saw it
	 * odd must not see this record. */
	cmm_smp_wmb();
	cache_change_read(cache, to);
	to->w = w;
	to->objs_adj += adj;
	if (fold) {
		to->put_bulk += SHMPOOL_W_PUT_CALLS_(was);
		to->put_objs += SHMPOOL_W_PUT_OBJS_(was);
		to->get_success_bulk += SHMPOOL_W_GET_CALLS_(was);
	}
#else
	/* No counter to move: the change is w alone, made with one store
	 * (cache_change_commit()). */
	(void)adj;
	(void)fold;
	to->w = w;
#endif
}

/* The same, made at once. */
static void
cache_change(struct shmpool_cache *cache, uint64_t w, uint64_t adj, int fold)
{
	cache_change_prepare(cache, w, adj, fold);
	cache_change_commit(cache);
}

/*
 * The hits' counts in w to the totals, called by the put hit whose add
 * took the objects put to 2^15 (shmpool_cache_push_()).  The test again,
 * so that a call at any other time leaves the cache as it is.
 */
void
shmpool_cache_fold_(struct shmpool_cache *cache)
{
	uint64_t w = cache->w;

	if (SHMPOOL_W_PUT_FULL_(w))
		cache_change(cache, SHMPOOL_W_LEN_(w), 0, 1);
}

/*
 * Whether a put through cache may find a ring of h that it would not pass
 * by: one that no other cache owns, or whose owner is at no claim there
 * (a claim would take it back, ring_own_settle()).  A look, no more: the
 * answer may be out of date by the time the caller claims.
 */
static int
rings_open(const struct pool_handle *h, const struct shmpool_cache *cache)
{
	unsigned int i;
	uint32_t o, s;

	for (i = 0; i < h->nb_rings; i++) {
		o = uatomic_read(&h->ring_r[i]->owner);
		s = RING_OWN_SLOT(o);
		if (o == 0 || o == cache_token(cache) || s >= h->nb_slots ||
		    RING_OWN_STATE(o) == RING_OWN_ACQ)
			return 1;
		cmm_smp_rmb();
		if (!slot_busy_on(&h->slots[s], i))
			return 1;
	}
	return 0;
}

/*
 * Empty cache into the ring; not counted as a call (see slot_retire()).
 * The length drops to 0, the hits' counts folded with it (see struct
 * shmpool_cache), once the objects' positions on the ring are claimed and
 * before they are written: a process killed before that leaves them in
 * its cache and the positions to be made holes of, one killed after
 * leaves them in the positions it wrote, as any put (the others are
 * holes), never in two places.  Only when the first claim, on the ring of
 * this CPU, does not make it (another producer first, no room, or the
 * ring owned by another cache) does the length drop before the claims,
 * for one pass over the rings, and a process killed in between loses the
 * objects; no pass yields the CPU (a ring taken back makes a
 * membarrier(2) call, which may keep it a moment).  A pass that passed a
 * ring by (its owner in the middle of a claim there) and put nothing
 * gives the cache its length back before it waits, and then waits with
 * the objects in its cache: it yields the CPU, and goes on yielding
 * while every ring is owned by a cache at a claim there (rings_open()),
 * before it tries again from the first claim; so that a flush waiting
 * for an owner holds the objects in its cache, where shmpoold finds them
 * if the process is killed, but in its passes.  The first pass stops at
 * the ring of this CPU when it passes it by, and the yield comes before
 * the other rings are tried, as a put's (rings_put_rest(),
 * PUT_PASS_OWN); a caller that may not wait (!wait: shmpoold) makes one
 * pass over all the rings and gets -EAGAIN instead, the cache keeping
 * them all.  -ENOSPC when no ring has room (only a double put fills
 * them).
 */
int
cache_flush(struct pool_handle *h, struct shmpool_cache *cache, int wait)
{
	uint32_t len = shmpool_cache_len_(cache);
	struct ring_view v;
	unsigned int i;
	enum put_how how;
	uint64_t *rec, pos;
	int claimed, ret;

	if (len == 0)
		return 0;
	how = wait ? PUT_PASS_OWN : PUT_PASS;
	for (;;) {
		i = ring_here(h);
		v = ring_view_at(h, i);
		rec = cache_ring_op(cache, i);
		cache_change_prepare(cache, 0, -(uint64_t)len, 1);
		claimed = ring_put_claim(v.r, v.size, len, rec, &cache->slot,
			&pos);
		cache_change_commit(cache);
		if (caa_likely(claimed)) {
			ring_write(&v, pos, len, cache->objs, RING_OFFS, NULL);
			ring_put_done(rec);
			return 0;
		}
		cmm_smp_wmb();
		ret = rings_put_rest(h, cache->objs, RING_OFFS, NULL, len, i,
			cache, how);
		if (ret > 0)
			return 0;
		cache_change(cache, len, len, 0);
		if (ret == 0)
			return -ENOSPC;
		if (!wait)
			return -EAGAIN;
		how = PUT_PASS;
		do
			sched_yield();
		while (!rings_open(h, cache));
	}
}

/*
 * Finish the change cache's owner was killed in the middle of, if any
 * (shmpoold, before it takes the slot back): what it was to leave is in
 * cache->change, complete since seq was made odd.
 */
void
cache_change_finish(struct shmpool_cache *cache)
{
	uint32_t seq = uatomic_read(&cache->seq);

	if (!(seq & 1))
		return;
	cmm_smp_rmb();
	cache_change_apply(cache);
	cmm_smp_wmb();
	uatomic_set(&cache->seq, seq + 1);
}

/*
 * Drop what cache holds without a word to the ring (shmpoold, for a
 * cache found corrupt): its objects are lost and, as a flush's, not
 * counted as got; unless its length was never true (more than ever went
 * in), which then adds nothing.
 */
void
cache_forget(struct shmpool_cache *cache)
{
	struct shmpool_cache_change_ v;
	uint32_t len;

	cache_change_read(cache, &v);
	len = SHMPOOL_W_LEN_(v.w);
	cache_change(cache, v.w - len,
		cache_objs_got(&v) < 0 ? 0 : -(uint64_t)len, 0);
}

/*
 * Every count of cache to 0, and w (the cache is empty), as one change:
 * readers see the counts before or after, and shmpoold finishes it for an
 * owner killed in the middle (the counts of the record; the others, not
 * in it, may then be left as they were).
 */
void
cache_counts_clear(struct shmpool_cache *cache)
{
	memset(&cache->change, 0, sizeof(cache->change));
	cache_change_commit(cache);
#define ZERO(f) uatomic_set(&cache->f, 0);
	SHMPOOL_CACHE_COUNTERS_(ZERO)
#undef ZERO
}

/*
 * shmpoold asked for this cache to be emptied (shmpoolctl flush): take the
 * request first, so that one made meanwhile is not lost, then flush.  Not
 * counted, like every flush that is not a put's.
 */
static void
cache_flush_requested(struct pool_handle *h, struct shmpool_cache *cache)
{
	if (uatomic_xchg(&cache->flush_req, 0) != 0)
		cache_flush(h, cache, 1);
}

/*
 * A get that bypasses the cache (none, or n above its size) and that the
 * ring alone cannot serve: with this cache's objects, it may (here len <
 * n).  The ring's share is taken first, so that a failure changes nothing.
 * Counted as a get past the cache of the ring's share; the cache's
 * objects follow from w (they left the cache, and not by a flush).
 */
static int __attribute__((noinline))
get_bypass_with_cache(struct pool_handle *h, void **objs, unsigned int n,
		struct shmpool_cache *cache, struct shmpool_cache *st)
{
	struct shmpool *pool = &h->pub;
	uint64_t w = cache != NULL ? cache->w : 0;
	uint32_t len = SHMPOOL_W_LEN_(w), i;

	if (len == 0 || rings_get(h, objs + len, RING_PTRS, pool->objbase,
			n - len, ring_here(h), st, 1) <= 0) {
		SHMPOOL_STAT_ADD(st, get_fail_bulk, 1);
		SHMPOOL_STAT_ADD(st, get_fail_objs, n);
		return -ENOENT;
	}
	count_direct(&st->get_direct_bulk, &st->get_direct_objs, n - len);
	for (i = 0; i < len; i++)
		objs[i] = pool->objbase + cache->objs[i];
	cache->w = w - len;
	return 0;
}

/*
 * A miss with len < n <= size.  Refill in one bulk so that the cache holds
 * size objects once the n are taken; if the ring has not that many, take
 * just what the request lacks.  The new objects go on top and n of them
 * are taken from there.
 */
static int __attribute__((noinline))
get_refill(struct pool_handle *h, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	struct shmpool *pool = &h->pub;
	uint32_t len = shmpool_cache_len_(cache), want = cache->size + n - len;
	unsigned int i = ring_here(h);

	/* The cache with the new objects, the hits' counts folded with
	 * them (see struct shmpool_cache), is written down before they
	 * are taken from the ring and made as soon as they are: a process
	 * killed in between (the few instructions after the claim, or
	 * while it gathers from several rings) loses them, libshmpool(3);
	 * one killed after leaves them to shmpoold. */
	cache_change_prepare(cache, len + want, want, 1);
	if (rings_get(h, &cache->objs[len], RING_OFFS, NULL, want, i,
			cache, 0) <= 0) {
		want = n - len;
		cache_change_prepare(cache, len + want, want, 1);
		if (rings_get(h, &cache->objs[len], RING_OFFS, NULL, want, i,
				cache, 1) <= 0) {
			SHMPOOL_STAT_ADD(cache, get_fail_bulk, 1);
			SHMPOOL_STAT_ADD(cache, get_fail_objs, n);
			return -ENOENT;
		}
	}
	cache_change_commit(cache);
	SHMPOOL_STAT_ADD(cache, get_common_pool_bulk, 1);
	SHMPOOL_STAT_ADD(cache, get_common_pool_objs, want);
	/* Then a hit takes n. */
	shmpool_cache_take_(pool, objs, n, cache, len + want);
	return 0;
}

/* The attachment of a get or put whose pool and objs are not NULL, or
 * NULL for a bad n: 0, or above the pool's size. */
static inline struct pool_handle *
args_handle(struct shmpool *pool, unsigned int n)
{
	struct pool_handle *h = pool_handle(pool);

	return caa_unlikely(n == 0 || n > h->obj_count) ? NULL : h;
}

/*
 * A get or put past the cache: with no cache (NULL), n above its size, or
 * past an idle cache (cache_idle_for()) when n is not short
 * (ring_short_n()) or the short try on the ring (get_idle_in(),
 * put_idle_in()) did not make it.  Out of line, so that the short try,
 * whole in get_idle_one(), get_idle_several(), put_idle_one() and
 * put_idle_several(), needs no registers
 * saved for after a call (a put whose claimed positions cross the end of
 * the array is finished by put_claimed()).  Counted in st: the cache
 * itself, or the default one for a get or put with none (get_nocache();
 * put_direct() in the st its caller chose).  These out-of-line helpers
 * take the attachment h alone, whose pub is the pool (one register less
 * than both).
 */
/* A get past the cache that the long first try on ring i did not make
 * (get_direct_in(), whose callers tested n). */
static int __attribute__((noinline))
get_direct_rest(struct pool_handle *h, void **objs, unsigned int n,
		struct shmpool_cache *cache, struct shmpool_cache *st,
		unsigned int i)
{
	/* It waits out a ring's owner only when the cache has none of
	 * the n (get_bypass_with_cache() waits for the rest). */
	if (rings_get_rest(h, objs, RING_PTRS, h->pub.objbase, n, i, st,
			cache == NULL || SHMPOOL_W_LEN_(cache->w) == 0) <= 0)
		return get_bypass_with_cache(h, objs, n, cache, st);
	count_direct(&st->get_direct_bulk, &st->get_direct_objs, n);
	return 0;
}

static inline __attribute__((always_inline)) int
get_direct_in(struct pool_handle *h, void **objs, unsigned int n,
		struct shmpool_cache *cache, struct shmpool_cache *st)
{
	struct shmpool *pool = &h->pub;
	unsigned int i = ring_here(h);
	struct ring_view v = ring_view_at(h, i);
	int hint;

	if (caa_unlikely(!ring_get_try(&v, objs, RING_PTRS, pool->objbase,
			NULL, n, 0, cache_ring_op(st, i), &st->slot,
			&hint)))
		return get_direct_rest(h, objs, n, cache, st, i);
	count_direct(&st->get_direct_bulk, &st->get_direct_objs, n);
	if (caa_unlikely(hint))
		return cache_own_try(h, st, i);
	return 0;
}

/* Through cache (not NULL), counted there. */
static int __attribute__((noinline))
get_direct(struct pool_handle *h, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	return get_direct_in(h, objs, n, cache, cache);
}

/*
 * A get through an idle cache whose short try on ring i did not make it
 * (get_idle_in()): n tested, which that try comes before (above the
 * pool's size, it cannot have got them), then the long way through cache
 * (get_direct()), whose first try on the ring is the long one.  That try
 * may copy across the end of the array, where the short one does not;
 * and in an array of up to RING_OWN_EVERY entries, a claim that crosses a
 * multiple of RING_OWN_EVERY crosses that end too unless it ends there,
 * so that gets of one n whose claims never end there (n a power of two,
 * the positions not multiples of n) would never have ring i offered to
 * them (cache_own_try()) were the rest of the way without it.
 */
static int __attribute__((noinline))
get_short_missed(struct pool_handle *h, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	if (caa_unlikely(n > h->obj_count))
		return -EINVAL;
	return get_direct(h, objs, n, cache);
}

/* With no cache: counted in the default one, whose objects it leaves
 * alone.  Kept apart from get_direct() so that neither tests which cache
 * to count in. */
static int __attribute__((noinline))
get_nocache(struct pool_handle *h, void **objs, unsigned int n)
{
	return get_direct_in(h, objs, n, NULL, h->pub.cache);
}

/* A put past the cache that the first try on ring i did not make. */
static int __attribute__((noinline))
put_direct_rest(struct pool_handle *h, void * const *objs, unsigned int n,
		struct shmpool_cache *st, unsigned int i)
{
	if (rings_put_rest(h, objs, RING_PTRS, h->pub.objbase, n, i, st,
			PUT_WAIT) <= 0)
		return -ENOSPC;
	count_direct(&st->put_direct_bulk, &st->put_direct_objs, n);
	return 0;
}

static int __attribute__((noinline))
put_direct(struct pool_handle *h, void * const *objs, unsigned int n,
		struct shmpool_cache *st)
{
	struct shmpool *pool = &h->pub;

	if (rings_put(h, objs, RING_PTRS, pool->objbase, n, ring_here(h),
			st) <= 0)
		return -ENOSPC;
	count_direct(&st->put_direct_bulk, &st->put_direct_objs, n);
	return 0;
}

/* What the inline get did not do, with a cache: a flush request, a miss,
 * n above its size (h: checked arguments).  No fold: the refill does it,
 * and the puts (struct shmpool_cache). */
static int __attribute__((noinline))
get_cached(struct pool_handle *h, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	struct shmpool *pool = &h->pub;

	if (caa_unlikely(uatomic_read(&cache->flush_req)))
		cache_flush_requested(h, cache);
	/* A hit, if a flush request is all that stopped it and the ring had
	 * no room for the flush (a double put). */
	if (n - 1 < shmpool_cache_len_(cache)) {
		shmpool_cache_take_(pool, objs, n, cache, cache->w);
		return 0;
	}
	if (n <= cache->size)
		return get_refill(h, objs, n, cache);
	return get_direct(h, objs, n, cache);
}

/*
 * Whether a get or put of n through cache (not NULL) goes to the ring
 * alone with nothing for the cache to do first: n is above what it takes
 * (limit: size for a get, flushthresh for a put) while it is empty, has
 * no counts to fold (w == 0) and no flush to make.  Always, for a cache
 * of size 0 (the attachment's default where the pool has none), tested
 * first and alone: it never holds an object nor counts a hit, so its w
 * stays 0, and shmpoold never asks it to flush.
 */
static inline int
cache_idle_for(const struct shmpool_cache *cache, unsigned int n,
		uint32_t limit)
{
	return cache->size == 0 || (n > limit && cache->w == 0 &&
		uatomic_read(&cache->flush_req) == 0);
}

/* The whole of a get of n short objects (ring_short_n()) through an idle
 * cache: the short try on the ring of the caller's CPU, else the long
 * way. */
static inline __attribute__((always_inline)) int
get_idle_in(struct pool_handle *h, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	unsigned int i = ring_here(h);
	struct ring_view v = ring_view_at(h, i);
	int hint;

	if (caa_unlikely(!ring_get_short(&v, objs, RING_PTRS, h->pub.objbase,
			h->objbase2, n, cache_ring_op(cache, i),
			&cache->slot, &hint)))
		return get_short_missed(h, objs, n, cache);
	if (__builtin_constant_p(n) && n == 1)
		count_direct_one(&cache->get_direct_one);
	else
		count_direct_z(&cache->get_direct_bulk,
			&cache->get_direct_objs, n);
	if (caa_unlikely(hint))
		return cache_own_try(h, cache, i);
	return 0;
}

/* A get of one object: in a function of its own, where it needs no
 * register saved (a copy of several takes one more), and one that is
 * always within the array (ring_short()).  It takes the caller's n, 1,
 * so that its arguments are where the caller has them: the jump to it
 * moves none (and no clone of it drops n). */
static int __attribute__((noinline)) NOCLONE
get_idle_one(struct pool_handle *h, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	if (n != 1)
		__builtin_unreachable();
	return get_idle_in(h, objs, 1, cache);
}

/* A get of 2 to RING_WIDE_MIN - 1 objects, in a function of its own too
 * (put_idle_several()). */
static int __attribute__((noinline))
get_idle_several(struct pool_handle *h, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	if (n - 2 >= RING_WIDE_MIN - 2)
		__builtin_unreachable();
	return get_idle_in(h, objs, n, cache);
}

/* A get of a short n (1 to RING_WIDE_MIN - 1) through a cache of size 0:
 * the short try on the ring, in the function for one object or for
 * several (shmpool_generic_get_slow_()). */
static inline __attribute__((always_inline)) int
get_short_size0(struct pool_handle *h, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	if (n == 1)
		return get_idle_one(h, objs, n, cache);
	return get_idle_several(h, objs, n, cache);
}

/*
 * What the inline get did not do, through any cache (the calls through
 * the default cache take get_slow_size0() for one of size 0, below).
 * First and alone, so that it takes few instructions: a get of a short n
 * (ring_short_n()) through a cache of size 0, a claimed one or the
 * default one of a pool without caches (cache_idle_for()):
 * the short try on the ring, in a function of its own for one object and
 * for several, which saves no register here (get_idle_one(),
 * get_idle_several()).  n is tested against the pool's size only if that
 * try fails (get_short_missed()), as it does when n is above it.  Then a
 * bad n, a get with no cache (NULL: get_nocache()), all that a cache
 * needs (get_cached()), and a get past an idle cache of another size.  A
 * long n leaves before the short try: that try's own test of n comes
 * after the loads of its arguments, for which gcc then saves a register
 * on the long way too (tried at a2ff293, when 32 was a long n: 12.99 ->
 * 13.15 instructions per object, 5 more per get of 32, bench/instr-cost
 * --cache 0 --get-bulk 32 --keep 128 --random none --constant-n 0; the
 * same at bulk 4).  pool and objs are not NULL (the inline get tested
 * them).
 */
int
shmpool_generic_get_slow_(struct shmpool *pool, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	struct pool_handle *h;

	if (caa_likely(cache != NULL && cache->size == 0 &&
			n - 1 < RING_WIDE_MIN - 1))
		return get_short_size0(pool_handle(pool), objs, n, cache);
	h = args_handle(pool, n);
	if (caa_unlikely(h == NULL))
		return -EINVAL;
	if (cache == NULL)
		return get_nocache(h, objs, n);
	if (!cache_idle_for(cache, n, cache->size))
		return get_cached(h, objs, n, cache);
	if (n == 1)
		return get_idle_one(h, objs, n, cache);
	if (caa_unlikely(!ring_short_n(n)))
		return get_direct(h, objs, n, cache);
	return get_idle_several(h, objs, n, cache);
}

/*
 * A put with n <= flushthresh that the inline put did not make: if the n
 * do not fit, flush the cache first (counted as a ring operation; see
 * cache_flush()); then push.
 */
static int __attribute__((noinline))
put_push(struct pool_handle *h, void * const *objs, unsigned int n,
		struct shmpool_cache *cache)
{
	struct shmpool *pool = &h->pub;
	uint32_t len = shmpool_cache_len_(cache);

	if (n > cache->flushthresh - len) {
		if (cache_flush(h, cache, 1) < 0)
			return -ENOSPC;
		SHMPOOL_STAT_ADD(cache, put_common_pool_bulk, 1);
		SHMPOOL_STAT_ADD(cache, put_common_pool_objs, len);
	}
	shmpool_cache_push_(pool, objs, n, cache, cache->w);
	return 0;
}

/* What the inline put did not do, with a cache (see get_cached()). */
static int __attribute__((noinline))
put_cached(struct pool_handle *h, void * const *objs, unsigned int n,
		struct shmpool_cache *cache)
{
	if (caa_unlikely(uatomic_read(&cache->flush_req)))
		cache_flush_requested(h, cache);
	if (n <= cache->flushthresh)
		return put_push(h, objs, n, cache);
	return put_direct(h, objs, n, cache);
}

/* The rest of a put through an idle cache whose n positions from pos on
 * ring i, claimed (and counted), cross the end of the array: its copy is
 * not a short one (once a lap). */
static int __attribute__((noinline))
put_claimed(struct pool_handle *h, void * const *objs, unsigned int n,
		struct shmpool_cache *cache, unsigned int i, uint64_t pos)
{
	struct ring_view v = ring_view_at(h, i);

	ring_write(&v, pos, n, objs, RING_PTRS, h->pub.objbase);
	ring_put_done(&cache->ring_op);
	return 0;
}

/*
 * The whole of a put of n short objects (ring_short_n()) through an idle
 * cache.  The ring's mask and the objects' base are read once the
 * positions are claimed (ring_put_claim(), which reads the ring's size
 * for its check and holds nothing across the compare-and-swap): held
 * across it, they took six registers saved and restored.
 */
static inline __attribute__((always_inline)) int
put_idle_in(struct pool_handle *h, void * const *objs, unsigned int n,
		struct shmpool_cache *cache)
{
	struct ring_view v;
	unsigned int i = ring_here(h);
	struct ring *r = h->ring_r[i];
	uint64_t pos;

	if (caa_unlikely(!ring_put_claim(r, h->rings[0].size, n,
			cache_ring_op(cache, i), &cache->slot, &pos)))
		return put_direct_rest(h, objs, n, cache, i);
	/* Counted as soon as claimed, so that n is free for the write
	 * (held to the end, it took a register saved and restored, with
	 * stats).  A process killed between here and ring_put_done()
	 * leaves the put counted, its objects lost (libshmpool(3)). */
	if (__builtin_constant_p(n) && n == 1)
		count_direct_one(&cache->put_direct_one);
	else
		count_direct(&cache->put_direct_bulk,
			&cache->put_direct_objs, n);
	v = ring_view_of(h, r);
	if (caa_unlikely(!ring_short(&v, pos, n)))
		return put_claimed(h, objs, n, cache, i, pos);
	ring_write_short(&v, pos, n, objs, RING_PTRS, h->pub.objbase,
		h->objbase2);
	ring_put_done(&cache->ring_op);
	return 0;
}

/* A put of one object: in a function of its own, where it needs no
 * register saved (a put of several, one); n is 1, as for
 * get_idle_one(). */
static int __attribute__((noinline)) NOCLONE
put_idle_one(struct pool_handle *h, void * const *objs, unsigned int n,
		struct shmpool_cache *cache)
{
	if (n != 1)
		__builtin_unreachable();
	return put_idle_in(h, objs, 1, cache);
}

/* A put of 2 to RING_WIDE_MIN - 1 objects, in a function of its own too:
 * the entry then saves no register for it, nor for the put of one.  What
 * the entry tested of n is said again, so that gcc tests it no more. */
static int __attribute__((noinline))
put_idle_several(struct pool_handle *h, void * const *objs, unsigned int n,
		struct shmpool_cache *cache)
{
	if (n - 2 >= RING_WIDE_MIN - 2)
		__builtin_unreachable();
	return put_idle_in(h, objs, n, cache);
}

/* A put of a short n through a cache of size 0 (get_short_size0()); n is
 * tested against the pool's size first, as a claim could take more
 * positions than there are objects. */
static inline __attribute__((always_inline)) int
put_short_size0(struct pool_handle *h, void * const *objs, unsigned int n,
		struct shmpool_cache *cache)
{
	if (n == 1)
		return put_idle_one(h, objs, n, cache);
	if (caa_likely(n <= h->obj_count))
		return put_idle_several(h, objs, n, cache);
	return -EINVAL;
}

/* What the inline put did not do (see shmpool_generic_get_slow_()); a
 * put of several short objects through a cache of size 0 tests n against
 * the pool's size first (put_short_size0()). */
int
shmpool_generic_put_slow_(struct shmpool *pool, void * const *objs,
		unsigned int n, struct shmpool_cache *cache)
{
	struct pool_handle *h = pool_handle(pool);

	if (caa_likely(cache != NULL && cache->size == 0 &&
			n - 1 < RING_WIDE_MIN - 1))
		return put_short_size0(h, objs, n, cache);
	h = args_handle(pool, n);
	if (caa_unlikely(h == NULL))
		return -EINVAL;
	if (cache == NULL)
		return put_direct(h, objs, n, pool->cache);
	if (!cache_idle_for(cache, n, cache->flushthresh))
		return put_cached(h, objs, n, cache);
	if (n == 1)
		return put_idle_one(h, objs, n, cache);
	if (caa_unlikely(!ring_short_n(n)))
		return put_direct(h, objs, n, cache);
	return put_idle_several(h, objs, n, cache);
}

/* Whether n is 2 to RING_WIDE_MIN - 1, tested on a copy of n that gcc
 * cannot see into: it otherwise keeps n - 2 from the test for the short
 * copy's last pair, and saves a register for it. */
static inline __attribute__((always_inline)) int
ring_short_several(unsigned int n)
{
	unsigned int m;

#if defined(__x86_64__)
	__asm__("lea -2(%q1), %0" : "=r" (m) : "r" (n));
#else
	m = n - 2;
	__asm__("" : "+r" (m));
#endif
	return m < RING_WIDE_MIN - 2;
}

/*
 * The rest of a get or put through a default cache of size 0 (struct
 * shmpool's get_slow_ and put_slow_, pool_slow_paths()): the tests of
 * shmpool_generic_get_slow_() and _put_slow_() but those of the cache,
 * which is not NULL and keeps nothing.  One object goes straight to the
 * short try for one (get_idle_one(), put_idle_one()) after a single test
 * of n; 2 to RING_WIDE_MIN - 1 to the short try for several, which for a
 * get is made here, in line, with no jump to get_idle_several() (the
 * test of n on a copy, ring_short_several(), so that it takes no
 * register saved), and for a put in put_idle_several() (in line, gcc
 * took two instructions more than the jump); a long n (or 0) is tested
 * against the pool's size, then goes to the ring.  Five instructions
 * fewer a get or put of a short n than the generic entry, and one fewer
 * again for a get of several; for one object three fewer again than
 * with the test of a short n first, for a long n two more
 * (docs/PERFORMANCE.md, What each change bought).
 */
static int
get_slow_size0(struct shmpool *pool, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	struct pool_handle *h;

	if (caa_likely(n == 1))
		return get_idle_one(pool_handle(pool), objs, n, cache);
	if (caa_likely(ring_short_several(n))) {
		if (n - 2 >= RING_WIDE_MIN - 2)
			__builtin_unreachable();
		return get_idle_in(pool_handle(pool), objs, n, cache);
	}
	h = args_handle(pool, n);
	if (caa_unlikely(h == NULL))
		return -EINVAL;
	return get_direct(h, objs, n, cache);
}

static int
put_slow_size0(struct shmpool *pool, void * const *objs, unsigned int n,
		struct shmpool_cache *cache)
{
	struct pool_handle *h = pool_handle(pool);

	if (caa_likely(n == 1))
		return put_idle_one(h, objs, n, cache);
	if (caa_likely(n - 2 < RING_WIDE_MIN - 2)) {
		if (caa_likely(n <= h->obj_count))
			return put_idle_several(h, objs, n, cache);
		return -EINVAL;
	}
	h = args_handle(pool, n);
	if (caa_unlikely(h == NULL))
		return -EINVAL;
	return put_direct(h, objs, n, cache);
}

/* struct shmpool's pointers, for h's default cache, once it is set. */
void
pool_slow_paths(struct pool_handle *h)
{
	if (h->pub.cache->size == 0) {
		h->pub.get_slow_ = get_slow_size0;
		h->pub.put_slow_ = put_slow_size0;
	} else {
		h->pub.get_slow_ = shmpool_generic_get_slow_;
		h->pub.put_slow_ = shmpool_generic_put_slow_;
	}
}

int
shmpool_generic_get(struct shmpool *pool, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	return _shmpool_generic_get(pool, objs, n, cache);
}

int
shmpool_generic_put(struct shmpool *pool, void * const *objs, unsigned int n,
		struct shmpool_cache *cache)
{
	return _shmpool_generic_put(pool, objs, n, cache);
}

int
shmpool_get_bulk(struct shmpool *pool, void **objs, unsigned int n)
{
	return _shmpool_get_bulk(pool, objs, n);
}

int
shmpool_put_bulk(struct shmpool *pool, void * const *objs, unsigned int n)
{
	return _shmpool_put_bulk(pool, objs, n);
}

int
shmpool_get(struct shmpool *pool, void **obj)
{
	return _shmpool_get(pool, obj);
}

int
shmpool_put(struct shmpool *pool, void *obj)
{
	return _shmpool_put(pool, obj);
}
