/*
 * ring.h - the multi-producer multi-consumer ring of object
 * references that holds a pool's free objects.  Internal to libshmpool.
 *
 * The layout follows DPDK's rte_ring: producer and consumer each have a
 * head (claimed) and a tail (published) on a cache line of their own; the
 * counters run free over 32 bits and are masked on access.  An operation
 * claims entries by moving its side's head with a compare-and-swap, copies,
 * then publishes by moving its side's tail once every earlier operation of
 * that side has published.  A process that waits for an earlier one yields
 * the CPU after a short spin, so that one descheduled in the middle of an
 * operation gets to run and finish it.  It takes no lock but is not
 * lock-free in the strict sense: an operation that never finishes (its
 * process killed between head and tail) holds up its side for good.
 */
#ifndef SHMPOOL_RING_H
#define SHMPOOL_RING_H

#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <urcu/arch.h>
#include <urcu/compiler.h>
#include <urcu/uatomic.h>

#include "shmpool.h"

/*
 * Acquire and release orderings for the heads and tails.  liburcu's
 * cmm_smp_mb() gives them everywhere; on a TSO machine loads are never
 * reordered with later accesses nor stores with earlier ones, so the
 * compiler barrier is enough there.
 */
#if defined(__x86_64__) || defined(__i386__)
#define ring_smp_acquire()	cmm_barrier()
#define ring_smp_release()	cmm_barrier()
#else
#define ring_smp_acquire()	cmm_smp_mb()
#define ring_smp_release()	cmm_smp_mb()
#endif

/* Spins before a waiting operation yields the CPU. */
#define RING_SPINS_BEFORE_YIELD	64

struct ring_headtail {
	uint32_t head;
	uint32_t tail;
};

/* The ring as it lives in the segment. */
struct ring {
	uint32_t size;			/* entries, a power of two */
	uint32_t mask;			/* size - 1 */
	uint32_t capacity;		/* entries usable at once */
	uint32_t reserved[13];
	struct ring_headtail prod __attribute__((aligned(64)));
	struct ring_headtail cons __attribute__((aligned(64)));
	uint32_t slots[] __attribute__((aligned(64)));
};

/*
 * A process's view of a ring: where it is mapped and its geometry, read
 * once and checked against the mapping, never re-read from shared memory.
 */
struct ring_view {
	struct ring *r;
	uint32_t *slots;
	uint32_t size;
	uint32_t mask;
	uint32_t capacity;
};

enum ring_mode {
	RING_BULK,			/* all n entries or none */
	RING_BURST,			/* as many as there are, up to n */
};

static inline size_t
ring_mem_size(uint32_t size)
{
	return sizeof(struct ring) + (size_t)size * sizeof(uint32_t);
}

/* Initialise an empty ring of size entries (a power of two) in place. */
static inline void
ring_init(struct ring *r, uint32_t size)
{
	memset(r, 0, sizeof(*r));
	r->size = size;
	r->mask = size - 1;
	/* Free-running counters: every entry is usable at once. */
	r->capacity = size;
}

/* Entries in the ring now; exact only when no operation is in progress. */
static inline uint32_t
ring_count(const struct ring_view *v)
{
	uint32_t cons, prod, count;

	cons = uatomic_read(&v->r->cons.tail);
	/* The producers' tail, read later, is never behind this one. */
	cmm_smp_rmb();
	prod = uatomic_read(&v->r->prod.tail);
	count = prod - cons;
	/* Producers may have moved on meanwhile. */
	return count > v->capacity ? v->capacity : count;
}

/*
 * Claim up to n entries for one side (ht) by moving its head, given the
 * other side's tail: a producer may fill capacity entries past the
 * consumers' tail, a consumer may read up to the producers' tail.
 */
static inline unsigned int
ring_move_head(struct ring_headtail *ht, const struct ring_headtail *other,
		uint32_t capacity, uint32_t size, unsigned int n,
		enum ring_mode mode, uint32_t *old_head)
{
	uint32_t head, avail;
	unsigned int want = n;

	for (;;) {
		n = want;
		head = uatomic_read(&ht->head);
		/* Read the other tail after our head: what is available
		 * can then only come out too small, or too big when our
		 * head is stale (and the CAS below fails). */
		cmm_smp_rmb();
		/* Pairs with the release in the other side's
		 * ring_update_tail(): the entries it has published (written
		 * by producers, or read by consumers) are ours to use. */
		avail = capacity + uatomic_read(&other->tail) - head;
		ring_smp_acquire();
		if (caa_unlikely(avail > size)) {
			/* A stale head: read it again.  With the same head,
			 * only a corrupted segment says so: never copy
			 * beyond the ring's entries for it. */
			if (uatomic_read(&ht->head) != head)
				continue;
			avail = 0;
		}
		if (caa_unlikely(n > avail))
			n = mode == RING_BULK ? 0 : avail;
		if (n == 0)
			return 0;
		if (uatomic_cmpxchg(&ht->head, head, head + n) == head)
			break;
	}
	*old_head = head;
	return n;
}

static inline unsigned int
ring_move_prod_head(const struct ring_view *v, unsigned int n,
		enum ring_mode mode, uint32_t *old_head)
{
	return ring_move_head(&v->r->prod, &v->r->cons, v->capacity, v->size,
		n, mode, old_head);
}

static inline unsigned int
ring_move_cons_head(const struct ring_view *v, unsigned int n,
		enum ring_mode mode, uint32_t *old_head)
{
	return ring_move_head(&v->r->cons, &v->r->prod, 0, v->size, n, mode,
		old_head);
}

/* Publish [old, new) once every earlier operation of this side has. */
static inline void
ring_update_tail(struct ring_headtail *ht, uint32_t old, uint32_t new)
{
	unsigned int spins = 0;

	while (caa_unlikely(uatomic_read(&ht->tail) != old)) {
		if (++spins < RING_SPINS_BEFORE_YIELD) {
			caa_cpu_relax();
		} else {
			sched_yield();
			spins = 0;
		}
	}
	/* Our copies above happen before the other side sees the tail. */
	ring_smp_release();
	uatomic_set(&ht->tail, new);
}

/*
 * No operation of the producers is between moving the head and
 * publishing the tail: an enqueue now will not wait for anyone (unless
 * one starts meanwhile).  For shmpoold, which must not wait on a dead
 * process.
 */
static inline int
ring_prod_idle(const struct ring_view *v)
{
	return uatomic_read(&v->r->prod.head) ==
		uatomic_read(&v->r->prod.tail);
}

/* Copy references into the ring from src. */
static inline void
ring_write_refs(const struct ring_view *v, uint32_t head, const uint32_t *src,
		unsigned int n)
{
	uint32_t idx = head & v->mask;

	if (caa_likely(idx + n <= v->size)) {
		memcpy(&v->slots[idx], src, n * sizeof(*src));
	} else {
		uint32_t first = v->size - idx;

		memcpy(&v->slots[idx], src, first * sizeof(*src));
		memcpy(&v->slots[0], src + first, (n - first) * sizeof(*src));
	}
}

static inline void
ring_read_refs(const struct ring_view *v, uint32_t head, uint32_t *dst,
		unsigned int n)
{
	uint32_t idx = head & v->mask;

	if (caa_likely(idx + n <= v->size)) {
		memcpy(dst, &v->slots[idx], n * sizeof(*dst));
	} else {
		uint32_t first = v->size - idx;

		memcpy(dst, &v->slots[idx], first * sizeof(*dst));
		memcpy(dst + first, &v->slots[0], (n - first) * sizeof(*dst));
	}
}

/*
 * Enqueue n references; returns how many went in (n or 0 for RING_BULK).
 * Any number of processes may enqueue and dequeue at once.
 */
static inline unsigned int
ring_enqueue(const struct ring_view *v, const uint32_t *refs, unsigned int n,
		enum ring_mode mode)
{
	uint32_t head;

	n = ring_move_prod_head(v, n, mode, &head);
	if (n != 0) {
		ring_write_refs(v, head, refs, n);
		ring_update_tail(&v->r->prod, head, head + n);
	}
	return n;
}

/* Dequeue up to n references into refs; returns how many came out. */
static inline unsigned int
ring_dequeue(const struct ring_view *v, uint32_t *refs, unsigned int n,
		enum ring_mode mode)
{
	uint32_t head;

	n = ring_move_cons_head(v, n, mode, &head);
	if (n != 0) {
		ring_read_refs(v, head, refs, n);
		ring_update_tail(&v->r->cons, head, head + n);
	}
	return n;
}

/*
 * The same for pointers of the calling process: the ring holds references
 * (cache lines from base), so each entry is converted on the way.
 */
static inline unsigned int
ring_enqueue_ptrs(const struct ring_view *v, void * const *objs,
		unsigned int n, const char *base, enum ring_mode mode)
{
	uint32_t head;
	unsigned int i;

	n = ring_move_prod_head(v, n, mode, &head);
	if (n != 0) {
		for (i = 0; i < n; i++)
			v->slots[(head + i) & v->mask] = (uint32_t)
				(((uintptr_t)objs[i] - (uintptr_t)base) >> SHMPOOL_REF_SHIFT);
		ring_update_tail(&v->r->prod, head, head + n);
	}
	return n;
}

static inline unsigned int
ring_dequeue_ptrs(const struct ring_view *v, void **objs, unsigned int n,
		char *base, enum ring_mode mode)
{
	uint32_t head;
	unsigned int i;

	n = ring_move_cons_head(v, n, mode, &head);
	if (n != 0) {
		for (i = 0; i < n; i++)
			objs[i] = base +
				((uintptr_t)v->slots[(head + i) & v->mask] << SHMPOOL_REF_SHIFT);
		ring_update_tail(&v->r->cons, head, head + n);
	}
	return n;
}

#endif /* SHMPOOL_RING_H */
