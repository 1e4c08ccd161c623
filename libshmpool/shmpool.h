/*
 * shmpool.h - a pool of fixed-size objects shared by processes.
 *
 * A pool lives in one shared-memory segment: a header, a table of cache
 * slots, the rings of free objects that take no lock (one for each CPU,
 * up to 8), and the objects.  Each attached process owns a cache slot;
 * get and put go through that cache and reach the ring (the rings: that
 * of the caller's CPU first) only to refill or flush it, in bulk.  Nothing in
 * the segment is a pointer, so each process may map it anywhere.
 *
 * Errors: every function that can fail returns 0 (or a count) on success
 * and a negative errno value on failure; shmpool_strerror() names it and
 * shmpool_last_error() gives the details of the calling thread's last
 * failed control-path call.
 *
 * Threads: an attachment may be shared by the threads of a process, but a
 * cache belongs to one thread at a time.  The default cache serves
 * shmpool_get(), shmpool_put(), shmpool_get_bulk(), shmpool_put_bulk() and
 * the generic calls given a NULL cache (whose counters it keeps); any other
 * thread claims a cache of its own with shmpool_cache_claim().
 */
#ifndef SHMPOOL_H
#define SHMPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the library exports; everything else in it is hidden. */
#define SHMPOOL_API	__attribute__((visibility("default")))

#include <shmpool/cache.h>

#define SHMPOOL_NAME_MAX	63		/* characters in a pool name */
#define SHMPOOL_OBJ_SIZE_MAX	(1U << 20)	/* bytes in one object */
#define SHMPOOL_OBJ_COUNT_MAX	(1U << 30)	/* objects in one pool */
#define SHMPOOL_SLOTS_DEFAULT	64		/* cache slots of a pool */
#define SHMPOOL_SLOTS_MAX	1024

/* Parameters of a new pool (shmpool_segment_create()). */
struct shmpool_params {
	unsigned int obj_count;		/* 1 .. SHMPOOL_OBJ_COUNT_MAX */
	unsigned int obj_size;		/* 1 .. SHMPOOL_OBJ_SIZE_MAX bytes;
					   obj_count objects of obj_size
					   rounded up to 64 bytes fit in
					   256 GiB */
	unsigned int cache_size;	/* default cache of each attachment,
					   0 .. SHMPOOL_CACHE_MAX_SIZE, and
					   1.5 * cache_size, rounded down,
					   <= obj_count */
	unsigned int nb_slots;		/* 0 for SHMPOOL_SLOTS_DEFAULT */
};

/* Options of shmpool_attach(); a NULL pointer means all defaults. */
#define SHMPOOL_ATTACH_CACHE_SIZE	0x1	/* use cache_size below */
struct shmpool_attach_opts {
	const char *path;		/* map this segment file rather than
					   look the pool up by name */
	unsigned int flags;		/* SHMPOOL_ATTACH_*; no other bit */
	unsigned int cache_size;	/* default cache size of this attachment */
};

/* What a pool is (shmpool_info()). */
#define SHMPOOL_INFO_HUGE	0x1	/* the segment is on huge pages */
struct shmpool_info {
	char name[SHMPOOL_NAME_MAX + 1];
	unsigned int obj_count;		/* objects in the pool */
	unsigned int obj_size;		/* bytes asked for per object */
	unsigned int elt_size;		/* bytes per object with padding */
	unsigned int cache_size;	/* default cache size */
	unsigned int nb_slots;		/* cache slots in the segment */
	unsigned int slots_in_use;	/* of which claimed now */
	unsigned int flags;		/* SHMPOOL_INFO_* */
	uint64_t seg_size;		/* bytes in the segment */
	uint64_t page_size;		/* bytes per page backing it */
	unsigned int abi_version;
};

/* Counters, per cache slot and over the whole pool (shmpool_stats_read()). */
struct shmpool_stats {
	uint64_t put_bulk;		/* put calls */
	uint64_t put_objs;		/* objects put */
	uint64_t put_common_pool_bulk;	/* enqueues to the ring */
	uint64_t put_common_pool_objs;	/* objects enqueued to the ring */
	uint64_t get_common_pool_bulk;	/* dequeues from the ring */
	uint64_t get_common_pool_objs;	/* objects dequeued from the ring */
	uint64_t get_success_bulk;	/* get calls that succeeded */
	uint64_t get_success_objs;	/* objects they returned */
	uint64_t get_fail_bulk;		/* get calls that failed */
	uint64_t get_fail_objs;		/* objects those asked for */
};

#define SHMPOOL_STATS_ALL	(-1)	/* every live slot plus the retired */
#define SHMPOOL_STATS_RETIRED	(-2)	/* slots released so far, summed */

/*
 * Create a pool's segment as the file at path, named name, with every
 * object in its rings (SHMPOOL_RINGS of them if set: 1, 2, 4 or 8; else
 * one for each CPU, up to 8, where the library can tell the CPU, and one
 * elsewhere) and every slot free.  The file appears complete or not
 * at all: it is built under a temporary name and linked into place, and
 * its pages are allocated up front (on hugetlbfs, as huge pages) so that
 * no process faults for memory later.  Used by shmpoold; control path.
 * Returns:
 *   0 on success;
 *   -EINVAL: a bad name or parameter, or a bad SHMPOOL_RINGS
 *            (shmpool_last_error() says which);
 *   -EEXIST: a file is already at path;
 *   -ENOMEM, -ENOSPC: the memory could not be had (nothing is left);
 *   other negative errno values from open, fallocate or mmap.
 */
SHMPOOL_API int shmpool_segment_create(const char *path, const char *name,
		const struct shmpool_params *params, mode_t mode);

/*
 * Attach to the pool name: map its segment and claim a cache slot for this
 * attachment's default cache.  opts->path, when set, names the segment
 * file to map, without the daemon; otherwise shmpoold is asked for it over
 * its control socket ($SHMPOOL_SOCKET, else /run/shmpool/shmpoold.sock).
 * Safe to call from several threads; each call is a separate attachment.
 * Returns:
 *   0 on success, with *poolp set;
 *   -EINVAL: NULL name or poolp, a bad name, a bad cache size, a flag
 *            other than SHMPOOL_ATTACH_CACHE_SIZE, or a segment at
 *            opts->path that holds another pool;
 *   -ENOENT: no such pool;
 *   -EBADMSG: the file is not a shmpool segment, or its header is
 *             inconsistent with itself or with the file's size;
 *   -EPROTO: the segment has an ABI version this library does not know,
 *            or shmpoold's reply cannot be read;
 *   -EPROTONOSUPPORT: shmpoold speaks another version of its protocol;
 *   -EBUSY: every cache slot of the pool is taken;
 *   -ECONNREFUSED: shmpoold could not be reached, or did not answer;
 *   -EACCES: this process may not open the segment for reading and
 *            writing (shmpoold's check, or open's at opts->path);
 *   -EIO: the pool is broken (its segment truncated), or shmpoold
 *         refused it with an error this library does not know;
 *   -EMFILE: this process, or shmpoold, is out of file descriptors;
 *   -ENOSYS: this process could not register for membarrier(2);
 *   other negative errno values from open or mmap (-ENOMEM).
 * libshmpool(3) says more of each.
 */
SHMPOOL_API int shmpool_attach(const char *name, const struct shmpool_attach_opts *opts,
		struct shmpool **poolp);

/*
 * Detach: flush every cache this attachment still holds into the ring,
 * fold their counters into the pool's retired totals, free their slots and
 * unmap the segment.  Objects the caller still holds stay in use.  No
 * other call may use pool, or a cache claimed through it, meanwhile, nor
 * after: the attachment is gone even when this fails with -ENOSPC.
 * Returns 0; -EINVAL for NULL or a pool that is not an attachment of
 * this process (detached already, while no new attachment has its
 * address); -ENOSPC when a cache could not be
 * flushed, the ring being full (only a double put causes it): that cache
 * keeps its objects and its slot.
 */
SHMPOOL_API int shmpool_detach(struct shmpool *pool);

/*
 * Get n objects into objs[0 .. n) (all or none) through cache, or straight
 * from the ring when cache is NULL (then counted in the default cache's
 * slot).  A cache hit copies the cache's top n in order: no system call
 * and no lock, whatever n is, and no call under 32 objects (from 32 on,
 * on x86-64 with glibc, its copy uses AVX2 in line where the CPU has it,
 * and is a call to the library's vector copy elsewhere).  A miss refills
 * the cache from the
 * ring in one bulk (to its size plus n, or just what it lacks when the ring
 * has not that many) and returns the top n; a miss with n above the
 * cache's size goes straight to the ring, and takes all of this cache's
 * objects as well only when the ring alone has not n.
 * One thread at a time per cache; any number of caches at once.
 * Returns:
 *   0 on success;
 *   -ENOENT: fewer than n objects are free in the rings and this cache
 *            (objects in other caches are not taken); no object is
 *            taken (a get that gathered some from several rings puts
 *            them back on the first ring it took some from, so that
 *            another get may find fewer for that moment), objs[] holds
 *            nothing meaningful;
 *   -EINVAL: NULL pool or objs, n == 0, or n above the pool's size;
 *            the pool is unchanged, objs[] holds nothing meaningful.
 */
SHMPOOL_API int shmpool_generic_get(struct shmpool *pool, void **objs, unsigned int n,
		struct shmpool_cache *cache);

/*
 * Put n objects of this pool back, objs[0] first, through cache (or
 * straight to the ring when cache is NULL).  The cache pushes them on top
 * in order; a put that would take it over its flush threshold (1.5 times
 * its size) first flushes the whole cache to the ring in one bulk; n above
 * the threshold bypasses it.  Putting an object twice, or one that is not from this
 * pool, is undefined.  Same concurrency as shmpool_generic_get().
 * Returns:
 *   0 on success;
 *   -EINVAL: NULL pool or objs, n == 0, or n above the pool's size;
 *   -ENOSPC: every ring is full, which only a double put can cause.
 */
SHMPOOL_API int shmpool_generic_put(struct shmpool *pool, void * const *objs,
		unsigned int n, struct shmpool_cache *cache);

/* shmpool_generic_get()/put() through the attachment's default cache. */
SHMPOOL_API int shmpool_get_bulk(struct shmpool *pool, void **objs, unsigned int n);
SHMPOOL_API int shmpool_put_bulk(struct shmpool *pool, void * const *objs, unsigned int n);
/* One object: shmpool_get_bulk(pool, obj, 1), shmpool_put_bulk(pool, &obj, 1). */
SHMPOOL_API int shmpool_get(struct shmpool *pool, void **obj);
SHMPOOL_API int shmpool_put(struct shmpool *pool, void *obj);

/*
 * The attachment's default cache, for shmpool_generic_get()/put(),
 * shmpool_cache_flush() and shmpool_cache_slot(); NULL for a NULL pool.
 */
SHMPOOL_API struct shmpool_cache *shmpool_default_cache(struct shmpool *pool);

/*
 * Claim another cache slot, with a cache of size objects (0 for a
 * cache that keeps nothing but still counts), for a thread of its own.
 * Control path: takes a slot with a compare-and-swap, no daemon.
 * Returns:
 *   0 on success, with *cachep set;
 *   -EINVAL: NULL pool or cachep, size above SHMPOOL_CACHE_MAX_SIZE, or
 *            1.5 * size, rounded down, above the pool's object count;
 *   -EBUSY: every slot is taken.
 */
SHMPOOL_API int shmpool_cache_claim(struct shmpool *pool, unsigned int size,
		struct shmpool_cache **cachep);

/*
 * Release a claimed cache: flush it, fold its counters into the retired
 * totals and free its slot.  The default cache is released by
 * shmpool_detach() only.
 * Returns 0; -EINVAL for NULL, the default cache, or a cache that is not
 * a claimed one of an attachment of this process; -ENOSPC when the ring
 * is full (only a double put causes it): the cache then keeps its objects
 * and stays claimed, to be released again once the ring has room.
 */
SHMPOOL_API int shmpool_cache_release(struct shmpool_cache *cache);

/*
 * Put every object of cache back in the ring in one bulk.  Only the
 * thread that uses the cache may call it.
 * Returns 0; -EINVAL for NULL or a cache of no attachment of this process;
 * -ENOSPC when the ring is full (only a double put causes it), and then
 * the cache keeps its objects.
 */
SHMPOOL_API int shmpool_cache_flush(struct shmpool_cache *cache);

/* Index of the slot holding cache, for shmpool_stats_read(); -EINVAL for NULL. */
SHMPOOL_API int shmpool_cache_slot(const struct shmpool_cache *cache);

/*
 * Free objects: in the ring plus in every cache.  A snapshot that other
 * processes may change as it is taken; exact when the pool is at rest.
 * Returns 0 for a NULL pool.
 */
SHMPOOL_API unsigned int shmpool_avail_count(const struct shmpool *pool);

/* Objects taken and not put back: the pool's size minus shmpool_avail_count(). */
SHMPOOL_API unsigned int shmpool_in_use_count(const struct shmpool *pool);

/*
 * Read counters: of slot (0 .. nb_slots - 1), of the retired totals
 * (SHMPOOL_STATS_RETIRED), or summed over every live slot and the retired
 * totals (SHMPOOL_STATS_ALL).  Relaxed 64-bit reads, no lock; exact when
 * the pool is at rest.  With --disable-stats every counter reads 0.
 * Returns:
 *   0 on success;
 *   -EINVAL: NULL pool or st, or slot out of range;
 *   -ENOENT: that slot is not claimed now.
 */
SHMPOOL_API int shmpool_stats_read(const struct shmpool *pool, int slot,
		struct shmpool_stats *st);

/* Describe the pool.  Returns 0, or -EINVAL for NULL arguments. */
SHMPOOL_API int shmpool_info(const struct shmpool *pool, struct shmpool_info *info);

/*
 * Object numbers, 0 .. obj_count - 1, name the same object in every
 * process: hand another process a number, not a pointer.
 * shmpool_obj_index() returns -EINVAL for NULL or a pointer that is not an
 * object of the pool; shmpool_obj_at() returns NULL for a bad index.
 */
SHMPOOL_API long shmpool_obj_index(const struct shmpool *pool, const void *obj);
SHMPOOL_API void *shmpool_obj_at(const struct shmpool *pool, unsigned int index);

/* Is name a valid pool name: 1-63 of [A-Za-z0-9._-], not starting with '.'. */
SHMPOOL_API int shmpool_name_valid(const char *name);

/* Words for a negative errno value returned by this library. */
SHMPOOL_API const char *shmpool_strerror(int err);

/*
 * The calling thread's last control-path failure, in words that name what
 * was wrong and with what value; "" when there was none since its last
 * control-path call (each one starts by clearing it).
 */
SHMPOOL_API const char *shmpool_last_error(void);

/*
 * The get/put calls above are inline unless SHMPOOL_NO_INLINE is defined
 * before including this header; the library exports each of them, so both
 * ways link.
 */
#ifndef SHMPOOL_NO_INLINE
#define shmpool_generic_get	_shmpool_generic_get
#define shmpool_generic_put	_shmpool_generic_put
#define shmpool_get_bulk	_shmpool_get_bulk
#define shmpool_put_bulk	_shmpool_put_bulk
#define shmpool_get		_shmpool_get
#define shmpool_put		_shmpool_put
#endif

#ifdef __cplusplus
}
#endif

#endif /* SHMPOOL_H */
