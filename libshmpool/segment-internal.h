/*
 * segment-internal.h - the layout of a pool's segment, and the private
 * state of an attachment.  Owned by libshmpool; shmpoold and shmpoolctl
 * may include it, nothing is installed.
 *
 *   offset 0         struct seg_hdr            magic, ABI, geometry, retired stats
 *   slots_off        struct seg_slot[nb_slots] owner + cache + counters each
 *   ring_off         struct ring + entries     free objects, as references
 *   objs_off         obj_count * elt_size      the objects, cache-line aligned
 *
 * Offsets are from the start of the segment and every one is checked
 * against the mapping before use (seg_check()).
 */
#ifndef SHMPOOL_SEGMENT_INTERNAL_H
#define SHMPOOL_SEGMENT_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <urcu/list.h>

#include "shmpool.h"
#include "ring.h"

/* "SHMPOOL" and a NUL, read as a little-endian 64-bit number. */
#define SEG_MAGIC		UINT64_C(0x004c4f4f504d4853)
#define SEG_ABI_VERSION		1

#define SEG_FLAG_HUGE		0x1	/* on hugetlbfs */

#define SEG_SLOT_FREE		0
#define SEG_SLOT_CLAIMED	1
#define SEG_SLOT_RELEASING	2	/* being flushed and folded */

struct seg_hdr {
	uint64_t magic;
	uint32_t abi_version;
	uint32_t hdr_size;		/* sizeof(struct seg_hdr) */
	uint64_t seg_size;		/* bytes in the segment file */
	uint64_t page_size;		/* bytes per page backing it */
	char name[SHMPOOL_NAME_MAX + 1];
	uint32_t obj_count;
	uint32_t obj_size;
	uint32_t elt_size;		/* obj_size rounded up to a cache line */
	uint32_t cache_size;		/* default cache size of an attachment */
	uint32_t nb_slots;
	uint32_t slot_size;		/* sizeof(struct seg_slot) */
	uint32_t ring_size;		/* entries, a power of two >= obj_count */
	uint32_t flags;			/* SEG_FLAG_* */
	uint64_t slots_off;
	uint64_t ring_off;
	uint64_t objs_off;
	uint64_t create_time;		/* seconds since the epoch */

	/* Counters of released slots, added atomically by whoever releases. */
	struct shmpool_stats retired __attribute__((aligned(64)));
};

struct seg_slot {
	uint32_t state;			/* SEG_SLOT_* */
	int32_t pid;			/* owner */
	uint64_t start_time;		/* owner's start, /proc/PID/stat field 22 */
	uint32_t reserved[12];
	struct shmpool_cache cache;
};

/* An attachment: struct shmpool is what the inline path reads. */
struct pool_handle {
	struct shmpool pub;
	struct ring_view ring;
	struct seg_hdr *hdr;		/* the mapping starts here */
	size_t map_size;
	struct seg_slot *slots;
	uint32_t nb_slots;
	uint32_t obj_count;
	uint32_t elt_size;
	uint8_t *owned;			/* slots this attachment claimed */
	pthread_mutex_t lock;		/* guards owned[] */
	struct cds_list_head node;	/* in the process's list of handles */
};

static inline struct pool_handle *
pool_handle(const struct shmpool *pool)
{
	return caa_container_of(pool, struct pool_handle, pub);
}

/* segment.c */
int seg_check(const struct seg_hdr *hdr, uint64_t file_size, const char *what);
uint64_t seg_layout(const struct shmpool_params *p, uint64_t page_size,
		struct seg_hdr *hdr);
int seg_proc_start_time(pid_t pid, uint64_t *start_time);

/* pool.c */
struct pool_handle *pool_find_cache(const struct shmpool_cache *cache);
void slot_retire(struct pool_handle *h, struct seg_slot *slot);

/* cache.c */
int cache_flush(struct pool_handle *h, struct shmpool_cache *cache);

/* error.c */
int seterr(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void clearerr_shmpool(void);

#endif /* SHMPOOL_SEGMENT_INTERNAL_H */
