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
	ret = ring_enqueue(&h->ring, cache->objs, len, RING_BULK,
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

int
shmpool_generic_get_slow(struct shmpool *pool, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	struct pool_handle *h;
	struct shmpool_cache *st;
	uint32_t len, want;
	unsigned int i;

	if (pool == NULL || objs == NULL || n == 0)
		return -EINVAL;
	h = pool_handle(pool);
	if (n > h->obj_count)
		return -EINVAL;
	st = cache != NULL ? cache : pool->cache;
	(void)st;	/* unused when stats are compiled out */
	if (cache != NULL && caa_unlikely(uatomic_read(&cache->flush_req)))
		cache_flush_requested(h, cache);

	if (cache == NULL || n > cache->size) {
		if (ring_dequeue_ptrs(&h->ring, objs, n, pool->objbase,
				RING_BULK) > 0) {
			SHMPOOL_STAT_ADD(st, get_common_pool_bulk, 1);
			SHMPOOL_STAT_ADD(st, get_common_pool_objs, n);
			goto success;
		}
		/* The ring alone has not n: with this cache's objects, it
		 * may (here len < n).  Take the ring's share first, so that
		 * a failure changes nothing. */
		len = cache != NULL ? cache->len : 0;
		if (len == 0 || ring_dequeue_ptrs(&h->ring, objs + len, n - len,
				pool->objbase, RING_BULK) <= 0)
			goto fail;
		SHMPOOL_STAT_ADD(st, get_common_pool_bulk, 1);
		SHMPOOL_STAT_ADD(st, get_common_pool_objs, n - len);
		for (i = 0; i < len; i++)
			objs[i] = shmpool_ref_to_ptr_(pool, cache->objs[i]);
		cache->len = 0;
		goto success;
	}

	/*
	 * Here len < n <= size.  Refill in one bulk so that the cache holds
	 * size objects once the n are taken; if the ring has not that many,
	 * take just what the request lacks.  The new objects go on top and n
	 * of them are taken from there.
	 */
	len = cache->len;
	want = cache->size + n - len;
	if (ring_dequeue(&h->ring, &cache->objs[len], want, RING_BULK) <= 0) {
		want = n - len;
		if (ring_dequeue(&h->ring, &cache->objs[len], want,
				RING_BULK) <= 0)
			goto fail;
	}
	SHMPOOL_STAT_ADD(cache, get_common_pool_bulk, 1);
	SHMPOOL_STAT_ADD(cache, get_common_pool_objs, want);
	len += want - n;
	for (i = 0; i < n; i++)
		objs[i] = shmpool_ref_to_ptr_(pool, cache->objs[len + i]);
	cache->len = len;
success:
	SHMPOOL_STAT_ADD(st, get_success_bulk, 1);
	SHMPOOL_STAT_ADD(st, get_success_objs, n);
	return 0;
fail:
	SHMPOOL_STAT_ADD(st, get_fail_bulk, 1);
	SHMPOOL_STAT_ADD(st, get_fail_objs, n);
	return -ENOENT;
}

int
shmpool_generic_put_slow(struct shmpool *pool, void * const *objs,
		unsigned int n, struct shmpool_cache *cache)
{
	struct pool_handle *h;
	struct shmpool_cache *st;
	unsigned int i;

	if (pool == NULL || objs == NULL || n == 0)
		return -EINVAL;
	h = pool_handle(pool);
	if (n > h->obj_count)
		return -EINVAL;
	st = cache != NULL ? cache : pool->cache;
	(void)st;
	if (cache != NULL && caa_unlikely(uatomic_read(&cache->flush_req)))
		cache_flush_requested(h, cache);

	if (cache == NULL || n > cache->flushthresh) {
		if (ring_enqueue_ptrs(&h->ring, objs, n, pool->objbase,
				RING_BULK, &st->ring_op) <= 0)
			return -ENOSPC;
		SHMPOOL_STAT_ADD(st, put_common_pool_bulk, 1);
		SHMPOOL_STAT_ADD(st, put_common_pool_objs, n);
		goto done;
	}

	/* Here n <= flushthresh < len + n: flush, then push. */
	if (cache->len != 0) {
		if (ring_enqueue(&h->ring, cache->objs, cache->len,
				RING_BULK, &cache->ring_op) <= 0)
			return -ENOSPC;
		SHMPOOL_STAT_ADD(cache, put_common_pool_bulk, 1);
		SHMPOOL_STAT_ADD(cache, put_common_pool_objs, cache->len);
	}
	for (i = 0; i < n; i++)
		cache->objs[i] = shmpool_ptr_to_ref_(pool, objs[i]);
	cache->len = n;
done:
	SHMPOOL_STAT_ADD(st, put_bulk, 1);
	SHMPOOL_STAT_ADD(st, put_objs, n);
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
