/*
 * cache.c - the get/put path beyond a cache hit: refill, flush, the ring
 * without a cache, argument errors; and the out-of-line twins of the
 * inline calls.
 */
#include "config.h"

/* This file defines the exported twins of the inline calls. */
#define SHMPOOL_NO_INLINE

#include <errno.h>

#include "segment-internal.h"

/*
 * Empty cache into the ring; not counted (see slot_retire()).  Only a
 * double put can fill the ring: then the cache keeps all and -ENOSPC.
 * The length drops to 0 before the objects go: a process killed in
 * between loses them rather than leaving them in two places.
 */
int
cache_flush(struct pool_handle *h, struct shmpool_cache *cache)
{
	uint32_t len = cache->len;
	int ret;

	if (len == 0)
		return 0;
	uatomic_set(&cache->len, 0);
	cmm_smp_wmb();
	ret = ring_put(&h->ring, cache->objs, RING_OFFS, NULL, len, RING_BULK,
		&cache->ring_op);
	if (ret == 0) {
		uatomic_set(&cache->len, len);
		return -ENOSPC;
	}
	return 0;
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
		cache_flush(h, cache);
}

/*
 * A get that bypasses the cache (none, or n above its size) and that the
 * ring alone cannot serve: with this cache's objects, it may (here len <
 * n).  The ring's share is taken first, so that a failure changes nothing.
 */
static int __attribute__((noinline))
get_bypass_with_cache(struct shmpool *pool, struct pool_handle *h,
		void **objs, unsigned int n, struct shmpool_cache *cache,
		struct shmpool_cache *st)
{
	uint32_t len = cache != NULL ? cache->len : 0, i;

	(void)st;	/* unused when stats are compiled out */
	if (len == 0 || ring_get(&h->ring, objs + len, RING_PTRS,
			pool->objbase, n - len, RING_BULK) <= 0) {
		SHMPOOL_STAT_ADD(st, get_fail_bulk, 1);
		SHMPOOL_STAT_ADD(st, get_fail_objs, n);
		return -ENOENT;
	}
	SHMPOOL_STAT_ADD(st, get_common_pool_bulk, 1);
	SHMPOOL_STAT_ADD(st, get_common_pool_objs, n - len);
	for (i = 0; i < len; i++)
		objs[i] = pool->objbase + cache->objs[i];
	cache->len = 0;
	SHMPOOL_STAT_GET_(st, n);
	return 0;
}

/*
 * A miss with len < n <= size.  Refill in one bulk so that the cache holds
 * size objects once the n are taken; if the ring has not that many, take
 * just what the request lacks.  The new objects go on top and n of them
 * are taken from there.
 */
static int __attribute__((noinline))
get_refill(struct shmpool *pool, struct pool_handle *h, void **objs,
		unsigned int n, struct shmpool_cache *cache)
{
	uint32_t len = cache->len, want = cache->size + n - len;

	if (ring_get(&h->ring, &cache->objs[len], RING_OFFS, NULL, want,
			RING_BULK) <= 0) {
		want = n - len;
		if (ring_get(&h->ring, &cache->objs[len], RING_OFFS, NULL,
				want, RING_BULK) <= 0) {
			SHMPOOL_STAT_ADD(cache, get_fail_bulk, 1);
			SHMPOOL_STAT_ADD(cache, get_fail_objs, n);
			return -ENOENT;
		}
	}
	SHMPOOL_STAT_ADD(cache, get_common_pool_bulk, 1);
	SHMPOOL_STAT_ADD(cache, get_common_pool_objs, want);
	/* The new objects are the cache's at once (a process killed now
	 * leaves them to shmpoold, not lost), then a hit takes n. */
	cache->len = len + want;
	shmpool_cache_take_(pool, objs, n, cache);
	return 0;
}

/* The attachment of a get or put, or NULL for bad arguments (a NULL
 * pool or array, n == 0 or above the pool's size). */
static inline struct pool_handle *
args_handle(struct shmpool *pool, const void *objs, unsigned int n)
{
	struct pool_handle *h;

	if (caa_unlikely(pool == NULL || objs == NULL || n == 0))
		return NULL;
	h = pool_handle(pool);
	return caa_unlikely(n > h->obj_count) ? NULL : h;
}

/*
 * What the inline get did not do: argument errors, a flush request, a
 * miss; and the bypass of the cache, kept short here as it is the whole of
 * a get without a cache.
 */
int
shmpool_generic_get_slow(struct shmpool *pool, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	struct pool_handle *h = args_handle(pool, objs, n);
	struct shmpool_cache *st;

	if (caa_unlikely(h == NULL))
		return -EINVAL;
	if (cache != NULL) {
		if (caa_unlikely(uatomic_read(&cache->flush_req))) {
			cache_flush_requested(h, cache);
			/* A flush the ring had no room for (a double put)
			 * leaves the cache as it was: serve it as a hit. */
			if (caa_unlikely(n - 1 < cache->len)) {
				shmpool_cache_take_(pool, objs, n, cache);
				return 0;
			}
		}
		if (n <= cache->size)
			return get_refill(pool, h, objs, n, cache);
		st = cache;
	} else {
		st = pool->cache;
	}
	if (caa_unlikely(ring_get(&h->ring, objs, RING_PTRS, pool->objbase, n,
			RING_BULK) <= 0))
		return get_bypass_with_cache(pool, h, objs, n, cache, st);
	SHMPOOL_STAT_ADD(st, get_direct_bulk, 1);
	SHMPOOL_STAT_ADD(st, get_direct_objs, n);
	return 0;
}

/*
 * A put with n <= flushthresh < len + n: flush the cache, then push.  The
 * length drops to 0 before the flush, as in cache_flush().
 */
static int __attribute__((noinline))
put_flush_push(struct shmpool *pool, struct pool_handle *h,
		void * const *objs, unsigned int n, struct shmpool_cache *cache)
{
	uint32_t len = cache->len, i;

	if (len != 0) {
		uatomic_set(&cache->len, 0);
		cmm_smp_wmb();
		if (ring_put(&h->ring, cache->objs, RING_OFFS, NULL, len,
				RING_BULK, &cache->ring_op) <= 0) {
			uatomic_set(&cache->len, len);
			return -ENOSPC;
		}
		SHMPOOL_STAT_ADD(cache, put_common_pool_bulk, 1);
		SHMPOOL_STAT_ADD(cache, put_common_pool_objs, len);
	}
	for (i = 0; i < n; i++)
		cache->objs[i] = (uintptr_t)objs[i] - (uintptr_t)pool->objbase;
	cache->len = n;
	SHMPOOL_STAT_PUT_(cache, n);
	return 0;
}

/* What the inline put did not do (see shmpool_generic_get_slow()). */
int
shmpool_generic_put_slow(struct shmpool *pool, void * const *objs,
		unsigned int n, struct shmpool_cache *cache)
{
	struct pool_handle *h = args_handle(pool, objs, n);
	struct shmpool_cache *st;

	if (caa_unlikely(h == NULL))
		return -EINVAL;
	if (cache != NULL) {
		if (caa_unlikely(uatomic_read(&cache->flush_req)))
			cache_flush_requested(h, cache);
		if (n <= cache->flushthresh)
			return put_flush_push(pool, h, objs, n, cache);
		st = cache;
	} else {
		st = pool->cache;
	}
	if (caa_unlikely(ring_put(&h->ring, objs, RING_PTRS, pool->objbase, n,
			RING_BULK, &st->ring_op) <= 0))
		return -ENOSPC;
	SHMPOOL_STAT_ADD(st, put_direct_bulk, 1);
	SHMPOOL_STAT_ADD(st, put_direct_objs, n);
	return 0;
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
