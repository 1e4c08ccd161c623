/*
 * stats.c - reading the counters of one slot or of the whole pool.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "segment-internal.h"

/* Relaxed 64-bit loads: each counter has a single writer. */
#define STATS_ADD(dst, src) do {					\
	(dst)->put_bulk += uatomic_read(&(src)->put_bulk);		\
	(dst)->put_objs += uatomic_read(&(src)->put_objs);		\
	(dst)->put_common_pool_bulk += uatomic_read(&(src)->put_common_pool_bulk); \
	(dst)->put_common_pool_objs += uatomic_read(&(src)->put_common_pool_objs); \
	(dst)->get_common_pool_bulk += uatomic_read(&(src)->get_common_pool_bulk); \
	(dst)->get_common_pool_objs += uatomic_read(&(src)->get_common_pool_objs); \
	(dst)->get_success_bulk += uatomic_read(&(src)->get_success_bulk); \
	(dst)->get_success_objs += uatomic_read(&(src)->get_success_objs); \
	(dst)->get_fail_bulk += uatomic_read(&(src)->get_fail_bulk);	\
	(dst)->get_fail_objs += uatomic_read(&(src)->get_fail_objs);	\
} while (0)

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
			STATS_ADD(st, &h->slots[i].cache);
		/* fall through */
	case SHMPOOL_STATS_RETIRED:
		STATS_ADD(st, &h->hdr->retired);
		return 0;
	default:
		if (slot < 0 || (uint32_t)slot >= h->nb_slots)
			return -EINVAL;
		if (SLOT_STATE(uatomic_read(&h->slots[slot].owner)) !=
				SEG_SLOT_CLAIMED)
			return -ENOENT;
		STATS_ADD(st, &h->slots[slot].cache);
		return 0;
	}
}
