/*
 * segment-internal.h - the layout of a pool's segment, and the private
 * state of an attachment.  Owned by libshmpool; shmpoold and shmpoolctl
 * may include it, nothing is installed.
 *
 *   offset 0         struct seg_hdr            magic, ABI, geometry, retired stats
 *   slots_off        struct seg_slot[nb_slots] owner + cache + counters each
 *   ring_off         nb_rings x (struct ring + entries, ring_stride bytes)
 *                                              free objects, as references
 *   objs_off         obj_count * elt_size      the objects, cache-line aligned
 *
 * Offsets are from the start of the segment and every one is checked
 * against the mapping before use (seg_check()).
 */
#ifndef SHMPOOL_SEGMENT_INTERNAL_H
#define SHMPOOL_SEGMENT_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>
#include <urcu/list.h>

#include "shmpool.h"
#include "ring.h"

/* "SHMPOOL" and a NUL, read as a little-endian 64-bit number. */
#define SEG_MAGIC		UINT64_C(0x004c4f4f504d4853)
/* 7: a ring per CPU; 8: the record of a put in the cache's line; 9: the
 * fields of a cache's w; 10: a ring's owner word (ring ownership); 11:
 * the fields of a cache's w again (the objects put at the top); 12: the
 * counts of one object past a cache of size 0 (put_direct_one,
 * get_direct_one); 13: the hits' folded get calls and objs_adj back in
 * the line of a refill's other counts, the failures' in a line of their
 * own. */
#define SEG_ABI_VERSION		13

/*
 * A pool's free objects are in nb_rings rings, a power of two up to
 * SEG_RINGS_MAX: the number of CPUs the host can have, rounded up (capped
 * there), when the pool was made, or SHMPOOL_RINGS (seg_rings()).  A
 * process puts to, and gets from first, the ring of the CPU it runs on
 * (CPU number & (nb_rings - 1)), so that processes on different CPUs do
 * not take each other's lines at every operation; a get that ring
 * cannot serve takes from the others.  Each ring has room for every
 * object, so that a put always fits the first ring it tries (but after
 * a double put, or where another cache owns that ring and is in the
 * middle of a claim there: ring.h's ring ownership).
 */
#define SEG_RINGS_MAX		8

/* Is n a ring count a segment may have: a power of two up to the most. */
static inline int
seg_rings_ok(uint32_t n)
{
	return n >= 1 && n <= SEG_RINGS_MAX && (n & (n - 1)) == 0;
}

#define SEG_FLAG_HUGE		0x1	/* on hugetlbfs */
/* The huge-page policy the pool was created under (set by shmpoold). */
#define SEG_FLAG_POLICY_SHIFT	4
#define SEG_FLAG_POLICY_MASK	(0x3u << SEG_FLAG_POLICY_SHIFT)
#define SEG_POLICY_UNKNOWN	0
#define SEG_POLICY_REQUIRE	1
#define SEG_POLICY_PREFER	2
#define SEG_POLICY_NEVER	3

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
	uint32_t ring_size;		/* entries, a power of two >= obj_count
					   and >= RING_SIZE_MIN */
	uint32_t flags;			/* SEG_FLAG_* */
	uint32_t nb_rings;		/* rings, a power of two, 1 ..
					   SEG_RINGS_MAX */
	/* The nanoseconds of create_time's second (0 in a segment made
	 * before it was kept): with it, a pool made anew under the same
	 * name within one second is told from the one before it. */
	uint32_t create_nsec;
	uint64_t slots_off;
	uint64_t ring_off;		/* the first ring */
	uint64_t ring_stride;		/* bytes from a ring to the next */
	uint64_t objs_off;
	uint64_t create_time;		/* seconds since the epoch */

	/* Counters of released slots, added atomically by whoever releases. */
	struct shmpool_stats retired __attribute__((aligned(64)));
};

/*
 * A cache slot.  Its state and its owner's pid are one word, claimed and
 * released with a compare-and-swap, so that whoever takes a slot back
 * (its owner, or shmpoold after the owner died) names the owner it means
 * and can never free a slot someone else has claimed since.
 */
struct seg_slot {
	uint64_t owner;			/* SLOT_OWNER(state, pid) */
	uint64_t start_time;		/* owner's start, /proc/PID/stat field 22;
					   0 until the claim is complete */
	uint32_t folds;			/* odd while the slot's counters move
					   to the retired totals; counts up */
	uint32_t reserved[11];
	/* The record of the owner's put to a ring is the cache's
	 * (ring_op, ring_op_ring): a cache is used by one thread at a
	 * time, which puts to one ring at a time. */
	struct shmpool_cache cache;
};

#define SLOT_OWNER(state, pid)	((uint64_t)(uint32_t)(pid) << 32 | (state))
#define SLOT_STATE(owner)	((uint32_t)(owner))
#define SLOT_PID(owner)		((pid_t)(int32_t)((owner) >> 32))

/* An attachment: struct shmpool is what the inline path reads. */
struct pool_handle {
	struct shmpool pub;
	/* pub.objbase twice, for the short copies' 16-byte vectors: in the
	 * line of pub, where it takes no padding. */
	uint64_t objbase2[2] __attribute__((aligned(16)));
	uint32_t ring_mask;		/* nb_rings - 1 */
	uint32_t nb_rings;
	/* rings[i].r, in an array of pointers: ring i's address is one
	 * load indexed by i, with no multiply for the views' stride. */
	struct ring *ring_r[SEG_RINGS_MAX];
	/* rings[0].size and .mask end at byte 128: with the above, the two
	 * lines a get or put past the cache reads (pool.c allocates the
	 * handle on a line). */
	struct ring_view rings[SEG_RINGS_MAX];
	struct seg_hdr *hdr;		/* the mapping starts here */
	size_t map_size;
	struct seg_slot *slots;
	uint32_t nb_slots;
	uint32_t obj_count;
	uint32_t elt_size;
	uint32_t cache_size;		/* the pool's default */
	char name[SHMPOOL_NAME_MAX + 1];
	uint8_t *owned;			/* slots this attachment claimed */
	pthread_mutex_t lock;		/* guards owned[] */
	struct cds_list_head node;	/* in the process's list of handles */
	/* The process that made it: a child of fork(2) inherits the
	 * handle, not the attachment (its slots are the parent's). */
	pid_t pid;
};

/* Whether h is an attachment of the calling process, not one it
 * inherited through fork(2). */
static inline int
pool_handle_mine(const struct pool_handle *h)
{
	return h->pid == getpid();
}

static inline struct pool_handle *
pool_handle(const struct shmpool *pool)
{
	return caa_container_of(pool, struct pool_handle, pub);
}

/*
 * The number of the CPU the calling thread runs on, as the kernel keeps it
 * in the thread's rseq area (glibc registers one for every thread): one
 * load, no system call.  Without rseq (an old C library, or registration
 * refused, as under valgrind) 0, so that every process uses ring 0.  The
 * thread may move to another CPU at any time: the number only chooses
 * which ring to try first.  SHMPOOL_CPU_HERE: whether it can (else a
 * pool has one ring unless SHMPOOL_RINGS says otherwise, seg_rings()).
 */
#if HAVE_DECL___RSEQ_OFFSET && defined(__x86_64__)
#define SHMPOOL_CPU_HERE	1
#else
#define SHMPOOL_CPU_HERE	0
#endif
#if SHMPOOL_CPU_HERE
/* pool.c: __rseq_offset, set when the library is loaded (a hidden copy:
 * one load less than glibc's, which is reached through the GOT). */
extern ptrdiff_t rseq_cpu_off __attribute__((visibility("hidden")));
static inline unsigned int
cpu_here(void)
{
	unsigned int cpu;

	/* cpu_id_start: a valid CPU number whatever the state of rseq. */
	__asm__ __volatile__("movl %%fs:(%1), %0" : "=r" (cpu)
		: "r" (rseq_cpu_off));
	return cpu;
}
#else
static inline unsigned int
cpu_here(void)
{
	return 0;
}
#endif

/* The ring the caller is to try first. */
static inline unsigned int
ring_here(const struct pool_handle *h)
{
	return cpu_here() & h->ring_mask;
}

/* The slot holding cache. */
static inline struct seg_slot *
slot_of(const struct shmpool_cache *cache)
{
	return caa_container_of(cache, struct seg_slot, cache);
}

/*
 * cache's record, for a put to ring i (ring_put_claim() writes it): here
 * the ring's number, while the record is 0 (no claim of this cache is
 * under way: every put clears it, done or not).  The claim's
 * compare-and-swap orders the number and the record before it;
 * ring_repair() reads them after seeing the claim, and neither changes
 * until the positions are written.  Two threads using one cache at once
 * could relabel each other's claims: a cache is one thread's at a time.
 */
static inline uint64_t *
cache_ring_op(struct shmpool_cache *cache, unsigned int i)
{
	uatomic_set(&cache->ring_op_ring, i);
	return &cache->ring_op;
}

/* The objects in every ring (ring_count() of each). */
static inline uint64_t
rings_count(const struct pool_handle *h)
{
	uint64_t count = 0;
	uint32_t i;

	for (i = 0; i < h->nb_rings; i++)
		count += ring_count(&h->rings[i]);
	return count;
}

/* segment.c */
#define ALIGN_UP(x, a)	(((x) + (a) - 1) / (a) * (a))
/* Do count objects of size bytes, each rounded up to a cache line, fit
 * in what a 32-bit reference of cache lines covers (256 GiB)? */
static inline int
seg_objs_fit(uint64_t count, uint64_t size)
{
	return count * ALIGN_UP(size, SHMPOOL_CACHE_LINE) <=
		UINT64_C(1) << (32 + SHMPOOL_REF_SHIFT);
}
#define SEG_TMP_PREFIX	".shmpool-new."	/* a segment being built */
/* flags: SEG_FLAG_* bits the header has from the start (the policy). */
int seg_create(const char *path, const char *name,
		const struct shmpool_params *params, mode_t mode, uid_t uid,
		gid_t gid, uint32_t flags);
int seg_check(const struct seg_hdr *hdr, uint64_t file_size, const char *what);
uint64_t seg_layout(const struct shmpool_params *p, uint64_t page_size,
		uint32_t nb_rings, struct seg_hdr *hdr);
int seg_proc_start_time(pid_t pid, uint64_t *start_time);

/* pool.c */
int pool_open_fd(int fd, const char *what, const char *name,
		struct pool_handle **hp);
int pool_open_file(const char *path, const char *name, int writable,
		struct pool_handle **hp);
void pool_close(struct pool_handle *h);
void pool_slow_paths(struct pool_handle *h);
int slot_claim_for(struct pool_handle *h, unsigned int size, pid_t pid,
		uint64_t start_time, uint32_t *slotp);
struct pool_handle *pool_find_cache(const struct shmpool_cache *cache);
int slot_retire(struct pool_handle *h, struct seg_slot *slot, pid_t pid,
		int wait);

/* The words of c that a change record holds, as they are now. */
static inline void
cache_change_read(const struct shmpool_cache *c,
		struct shmpool_cache_change_ *v)
{
#define READ(f) v->f = uatomic_read(&c->f);
	SHMPOOL_CACHE_CHANGE_(READ)
#undef READ
}

/*
 * The objects that gets took from the cache, as v says: every object put
 * in, or refilled, and not flushed nor still there.  Below 0 only for a
 * length that was never true (or a cache that a build without stats
 * filled, counting nothing).
 */
static inline int64_t
cache_objs_got(const struct shmpool_cache_change_ *v)
{
	return (int64_t)(v->put_objs + SHMPOOL_W_PUT_OBJS_(v->w) +
		v->objs_adj - SHMPOOL_W_LEN_(v->w));
}

/* stats.c */
int cache_stats_add(struct shmpool_stats *st, const struct shmpool_cache *c,
		uint64_t *deadline);
uint32_t cache_len_read(const struct shmpool_cache *c);
/* A reader that found a writer in the middle of something, before it
 * reads again: 1 after a spin or a yield, 0 once its wait is over
 * (*tries and *deadline 0 to begin with). */
int read_again(uint32_t *tries, uint64_t *deadline);

#if SHMPOOL_COPY_CALL_
/* copy-x86_64.S: the builds of shmpool_copy_add_() and
 * shmpool_copy_sub_() (copy.c picks one), dst[i] = src[i] +/- b for
 * i < n, n >= 32. */
typedef void copy_fn(uint64_t *dst, const uint64_t *src, unsigned int n,
		uint64_t b);
copy_fn copy_add_base, copy_add_avx2, copy_sub_base, copy_sub_avx2;
#endif

/* cache.c */
int cache_flush(struct pool_handle *h, struct shmpool_cache *cache,
		int wait);
void rings_own_drop(struct pool_handle *h, uint32_t s);
void cache_forget(struct shmpool_cache *cache);
void cache_counts_clear(struct shmpool_cache *cache);
void cache_change_finish(struct shmpool_cache *cache);

/* error.c */
int seterr(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void clearerr_shmpool(void);

#endif /* SHMPOOL_SEGMENT_INTERNAL_H */
