/*
 * stats.c - reading the counters of one slot or of the whole pool.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "segment-internal.h"

/* Relaxed 64-bit loads: each counter has a single writer. */
#define STATS_ADD_COMMON(dst, src) do {					\
	(dst)->put_common_pool_bulk += uatomic_read(&(src)->put_common_pool_bulk); \
	(dst)->put_common_pool_objs += uatomic_read(&(src)->put_common_pool_objs); \
	(dst)->get_common_pool_bulk += uatomic_read(&(src)->get_common_pool_bulk); \
	(dst)->get_common_pool_objs += uatomic_read(&(src)->get_common_pool_objs); \
	(dst)->get_fail_bulk += uatomic_read(&(src)->get_fail_bulk);	\
	(dst)->get_fail_objs += uatomic_read(&(src)->get_fail_objs);	\
} while (0)

/*
 * A reader that finds a writer in the middle of a change (a cache's seq,
 * or a slot's folds, odd or moved under it) reads again: at once for the
 * first CACHE_READ_SPINS times, then yielding the CPU, as the writer may
 * have been descheduled there; after CACHE_READ_WAIT_NS it takes what it
 * read.  Only a writer killed in the middle keeps the word odd that long,
 * until shmpoold takes the slot back.
 */
#define CACHE_READ_SPINS	64
#define CACHE_READ_WAIT_NS	20000000

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* Before reading again: spin, then yield.  0 (and no wait) once
 * CACHE_READ_WAIT_NS have passed since the first yield. */
int
read_again(uint32_t *tries, uint64_t *deadline)
{
	if (++*tries < CACHE_READ_SPINS) {
		caa_cpu_relax();
		return 1;
	}
	if (*deadline == 0)
		*deadline = now_ns() + CACHE_READ_WAIT_NS;
	else if (now_ns() > *deadline)
		return 0;
	sched_yield();
	return 1;
}

/* The length of a cache another process may be using. */
uint32_t
cache_len_read(const struct shmpool_cache *c)
{
	return SHMPOOL_W_LEN_(uatomic_read(&c->w));
}

/* Add the counters of a cache to st: 0, or 1 when its owner was found in
 * the middle of a change and the change's record was taken (the owner
 * stopped or killed there).  *deadline is the caller's, 0 to begin with,
 * shared by the caches it reads at once: the wait for owners in the
 * middle of a change is CACHE_READ_WAIT_NS in all, however many there
 * are (after it, each reader only spins its CACHE_READ_SPINS turns). */
int
cache_stats_add(struct shmpool_stats *st, const struct shmpool_cache *c,
		uint64_t *deadline)
{
	int stuck = 0;
	uint64_t pb = uatomic_read(&c->put_direct_bulk);
	uint64_t po = uatomic_read(&c->put_direct_objs);
	uint64_t gb = uatomic_read(&c->get_direct_bulk);
	uint64_t go = uatomic_read(&c->get_direct_objs);
	uint64_t p1 = uatomic_read(&c->put_direct_one);
	uint64_t g1 = uatomic_read(&c->get_direct_one);
#if SHMPOOL_STATS
	struct shmpool_cache_change_ v;
	int64_t got;
	uint32_t seq, tries = 0;

	/* The hits: their totals and w, as the owner left them between two
	 * changes (see struct shmpool_cache). */
	for (;;) {
		seq = uatomic_read(&c->seq);
		cmm_smp_rmb();
		cache_change_read(c, &v);
		cmm_smp_rmb();
		if (!(seq & 1) && uatomic_read(&c->seq) == seq)
			break;
		if (read_again(&tries, deadline))
			continue;
		/* Stopped, or killed, in the middle of a change: its record
		 * says what it is to leave, whole while seq stays the same
		 * odd value.  Else read again. */
		seq = uatomic_read(&c->seq);
		if (seq & 1) {
			cmm_smp_rmb();
#define READ(f) v.f = uatomic_read(&c->change.f);
			SHMPOOL_CACHE_CHANGE_(READ)
#undef READ
			cmm_smp_rmb();
			if (uatomic_read(&c->seq) == seq) {
				stuck = 1;
				break;
			}
		}
		sched_yield();
	}
	st->put_bulk += v.put_bulk + SHMPOOL_W_PUT_CALLS_(v.w);
	st->put_objs += v.put_objs + SHMPOOL_W_PUT_OBJS_(v.w);
	st->get_success_bulk += v.get_success_bulk + SHMPOOL_W_GET_CALLS_(v.w);
	got = cache_objs_got(&v);
	st->get_success_objs += got < 0 ? 0 : (uint64_t)got;
#endif
	STATS_ADD_COMMON(st, c);
	/* A get or put past the cache is a call and a ring operation; one
	 * of one object through a cache of size 0, an object too. */
	pb += p1;
	po += p1;
	gb += g1;
	go += g1;
	/* A get or put past the cache is a call and a ring operation. */
	st->put_bulk += pb;
	st->put_objs += po;
	st->put_common_pool_bulk += pb;
	st->put_common_pool_objs += po;
	st->get_success_bulk += gb;
	st->get_success_objs += go;
	st->get_common_pool_bulk += gb;
	st->get_common_pool_objs += go;
#if !SHMPOOL_STATS
	(void)deadline;
#endif
	return stuck;
}

/* Add the retired totals (or another struct shmpool_stats) to st. */
static void
stats_add(struct shmpool_stats *st, const struct shmpool_stats *src)
{
	STATS_ADD_COMMON(st, src);
	st->put_bulk += uatomic_read(&src->put_bulk);
	st->put_objs += uatomic_read(&src->put_objs);
	st->get_success_bulk += uatomic_read(&src->get_success_bulk);
	st->get_success_objs += uatomic_read(&src->get_success_objs);
}

/* The sum of the slots' folds; *moving when one is odd. */
static uint64_t
folds_read(const struct pool_handle *h, int *moving)
{
	uint64_t sum = 0;
	uint32_t i, f;

	*moving = 0;
	for (i = 0; i < h->nb_slots; i++) {
		f = uatomic_read(&h->slots[i].folds);
		*moving |= f & 1;
		sum += f;
	}
	return sum;
}

/*
 * Every slot plus the retired totals.  A slot given back during the sum
 * moves its counts from the slot to the retired totals (pool.c:
 * slot_retire()); read before the move in one and after it in the other
 * they would count twice.  So the sum is taken again until no slot's
 * folds moved under it: each only counts up, so the same sum of them
 * before and after, none odd, says that no move overlapped.
 */
static void
stats_read_all(const struct pool_handle *h, struct shmpool_stats *st)
{
	/* Two waits: for the owners in the middle of a change, all of them
	 * at once (cache_stats_add()), and for a move, which takes a
	 * moment once they are read. */
	uint64_t before, deadline = 0, caches_deadline = 0;
	uint32_t i, tries = 0;
	int moving;

	for (;;) {
		before = folds_read(h, &moving);
		cmm_smp_rmb();
		memset(st, 0, sizeof(*st));
		/* A free slot's counters are zero: sum them all. */
		for (i = 0; i < h->nb_slots; i++)
			cache_stats_add(st, &h->slots[i].cache,
				&caches_deadline);
		stats_add(st, &h->hdr->retired);
		cmm_smp_rmb();
		if (!moving && folds_read(h, &moving) == before && !moving)
			return;
		if (!read_again(&tries, &deadline))
			return;		/* stopped or killed in a move */
	}
}

int
shmpool_stats_read(const struct shmpool *pool, int slot,
		struct shmpool_stats *st)
{
	const struct pool_handle *h;
	uint64_t owner, deadline = 0;

	if (pool == NULL || st == NULL)
		return -EINVAL;
	h = pool_handle(pool);
	memset(st, 0, sizeof(*st));
	switch (slot) {
	case SHMPOOL_STATS_ALL:
		stats_read_all(h, st);
		return 0;
	case SHMPOOL_STATS_RETIRED:
		stats_add(st, &h->hdr->retired);
		return 0;
	default:
		if (slot < 0 || (uint32_t)slot >= h->nb_slots)
			return -EINVAL;
		owner = uatomic_read(&h->slots[slot].owner);
		if (SLOT_STATE(owner) != SEG_SLOT_CLAIMED)
			return -ENOENT;
		cmm_smp_rmb();
		cache_stats_add(st, &h->slots[slot].cache, &deadline);
		/* A slot is given back (pool.c: slot_retire(), shmpoold's
		 * reclaim) by leaving CLAIMED first, then folding its
		 * counters into the retired totals and clearing them: if it
		 * is still the same claim, what was read came before. */
		cmm_smp_rmb();
		if (uatomic_read(&h->slots[slot].owner) != owner) {
			memset(st, 0, sizeof(*st));
			return -ENOENT;
		}
		return 0;
	}
}
