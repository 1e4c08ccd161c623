/*
 * stats.c - reading the counters of one slot or of the whole pool.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "segment-internal.h"

/* Relaxed 64-bit loads: each counter has a single writer. */
#define STATS_ADD_COMMON(dst, src) do {					\
	(dst)->put_bulk += uatomic_read(&(src)->put_bulk);		\
	(dst)->put_common_pool_bulk += uatomic_read(&(src)->put_common_pool_bulk); \
	(dst)->put_common_pool_objs += uatomic_read(&(src)->put_common_pool_objs); \
	(dst)->get_common_pool_bulk += uatomic_read(&(src)->get_common_pool_bulk); \
	(dst)->get_common_pool_objs += uatomic_read(&(src)->get_common_pool_objs); \
	(dst)->get_success_bulk += uatomic_read(&(src)->get_success_bulk); \
	(dst)->get_fail_bulk += uatomic_read(&(src)->get_fail_bulk);	\
	(dst)->get_fail_objs += uatomic_read(&(src)->get_fail_objs);	\
} while (0)

/* Add the counters of a cache to st. */
void
cache_stats_add(struct shmpool_stats *st, const struct shmpool_cache *c)
{
	uint64_t pb = uatomic_read(&c->put_direct_bulk);
	uint64_t po = uatomic_read(&c->put_direct_objs);
	uint64_t gb = uatomic_read(&c->get_direct_bulk);
	uint64_t go = uatomic_read(&c->get_direct_objs);

	STATS_ADD_COMMON(st, c);
	/* A cache keeps the objects beyond one per call. */
	st->put_objs += uatomic_read(&c->put_bulk) +
		uatomic_read(&c->put_objs_over);
	st->get_success_objs += uatomic_read(&c->get_success_bulk) +
		uatomic_read(&c->get_success_objs_over);
	/* A get or put past the cache is a call and a ring operation. */
	st->put_bulk += pb;
	st->put_objs += po;
	st->put_common_pool_bulk += pb;
	st->put_common_pool_objs += po;
	st->get_success_bulk += gb;
	st->get_success_objs += go;
	st->get_common_pool_bulk += gb;
	st->get_common_pool_objs += go;
}

/* Add the retired totals (or another struct shmpool_stats) to st. */
static void
stats_add(struct shmpool_stats *st, const struct shmpool_stats *src)
{
	STATS_ADD_COMMON(st, src);
	st->put_objs += uatomic_read(&src->put_objs);
	st->get_success_objs += uatomic_read(&src->get_success_objs);
}

int
shmpool_stats_read(const struct shmpool *pool, int slot,
		struct shmpool_stats *st)
{
	const struct pool_handle *h;
	uint32_t i;

	if (pool == NULL || st == NULL)
		return -EINVAL;
	h = pool_handle(pool);
	memset(st, 0, sizeof(*st));
	switch (slot) {
	case SHMPOOL_STATS_ALL:
		/* A free slot's counters are zero: sum them all. */
		for (i = 0; i < h->nb_slots; i++)
			cache_stats_add(st, &h->slots[i].cache);
		/* fall through */
	case SHMPOOL_STATS_RETIRED:
		stats_add(st, &h->hdr->retired);
		return 0;
	default:
		if (slot < 0 || (uint32_t)slot >= h->nb_slots)
			return -EINVAL;
		if (SLOT_STATE(uatomic_read(&h->slots[slot].owner)) !=
				SEG_SLOT_CLAIMED)
			return -ENOENT;
		cache_stats_add(st, &h->slots[slot].cache);
		return 0;
	}
}
