/*
 * check_cache.c - the per-process cache: LIFO per bulk, refill and flush
 * points, bypass of large requests, failing gets, claimed caches.
 *
 * Pools are fresh, so the ring holds objects 0, 1, 2 ... in that order
 * and every object a call returns is known exactly.  Built twice: with the
 * inline get/put and with the library's out-of-line twins.
 */
/* The hit's long copies: AVX2 in line where the CPU has it, else a call
 * to the library's copy; test_copy_sizes runs both (copy_wide 0 takes
 * the call on a CPU with AVX2 too).  Before <shmpool.h>, which reads
 * it. */
static int copy_wide = 1;
#define SHMPOOL_COPY_WIDE_	(copy_wide && __builtin_cpu_supports("avx2"))

#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if HAVE_DECL___RSEQ_OFFSET
#include <sys/rseq.h>
#endif

#include "segment-internal.h"
#include "testutil.h"

static unsigned int
ring_objs(struct shmpool *pool)
{
	return rings_count(pool_handle(pool));
}

/* What a test puts where nothing may be written. */
#define NR_GUARD	((void *)0x5a5a5a5a5a5a5a5aULL)

/* objs[i] is object first + i, for i in 0 .. n. */
static void
assert_objs(struct shmpool *pool, void **objs, unsigned int n,
		unsigned int first)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		ck_assert_msg(objs[i] == shmpool_obj_at(pool, first + i),
			"objs[%u] is object %ld, expected %u", i,
			shmpool_obj_index(pool, objs[i]), first + i);
}

START_TEST(test_lifo_per_bulk)
{
	struct shmpool *pool;
	struct shmpool_cache *c, saved;
	void *x[8], *a[5], *b[3];

	tu_create("lifo", 1024, 64, 32, 4);
	pool = tu_attach("lifo", -1);
	c = shmpool_default_cache(pool);
	ck_assert_uint_eq(c->size, 32);
	ck_assert_uint_eq(c->flushthresh, 48);

	/* Miss: refill 32 + 8 (objects 0..39), return the top 8. */
	ck_assert_int_eq(shmpool_get_bulk(pool, x, 8), 0);
	assert_objs(pool, x, 8, 32);
	ck_assert_uint_eq(shmpool_cache_len_(c), 32);
	ck_assert_int_eq(shmpool_put_bulk(pool, x, 8), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 40);
	memcpy(&saved, c, sizeof(saved));

	ck_assert_int_eq(shmpool_get_bulk(pool, a, 5), 0);
	assert_objs(pool, a, 5, 35);
	ck_assert_int_eq(shmpool_get_bulk(pool, b, 3), 0);
	assert_objs(pool, b, 3, 32);
	ck_assert_uint_eq(shmpool_cache_len_(c), 32);
	ck_assert_int_eq(shmpool_put_bulk(pool, b, 3), 0);
	ck_assert_int_eq(shmpool_put_bulk(pool, a, 5), 0);

	/* Exactly as it was: length and every reference, in order. */
	ck_assert_uint_eq(shmpool_cache_len_(c), shmpool_cache_len_(&saved));
	ck_assert_mem_eq(c->objs, saved.objs, shmpool_cache_len_(&saved) * sizeof(uint32_t));
	ck_assert_uint_eq(ring_objs(pool), 1024 - 40);
	shmpool_detach(pool);
}
END_TEST

START_TEST(test_refill_point)
{
	struct shmpool *pool;
	struct shmpool_cache *c;
	void *objs[32];

	tu_create("refill", 1024, 64, 32, 4);
	pool = tu_attach("refill", -1);
	c = shmpool_default_cache(pool);

	ck_assert_int_eq(shmpool_get(pool, objs), 0);
	assert_objs(pool, objs, 1, 32);
	ck_assert_uint_eq(shmpool_cache_len_(c), 32);
	ck_assert_uint_eq(ring_objs(pool), 1024 - 33);
	/* 32 more are hits: the ring is not touched. */
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 32), 0);
	assert_objs(pool, objs, 32, 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 0);
	ck_assert_uint_eq(ring_objs(pool), 1024 - 33);
	/* Empty: the next get refills 33 again (objects 33..65). */
	ck_assert_int_eq(shmpool_get(pool, objs), 0);
	assert_objs(pool, objs, 1, 65);
	ck_assert_uint_eq(shmpool_cache_len_(c), 32);
	ck_assert_uint_eq(ring_objs(pool), 1024 - 66);
	ck_assert_uint_eq(shmpool_in_use_count(pool), 34);
	shmpool_detach(pool);
}
END_TEST

START_TEST(test_flush_point)
{
	struct shmpool *pool;
	struct shmpool_cache *c;
	void *objs[49];
	unsigned int i;

	tu_create("flush", 1024, 64, 32, 4);
	pool = tu_attach("flush", -1);
	c = shmpool_default_cache(pool);

	/* Without a cache: straight from the ring, objects 0..48. */
	ck_assert_int_eq(shmpool_generic_get(pool, objs, 49, NULL), 0);
	assert_objs(pool, objs, 49, 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 0);
	ck_assert_uint_eq(ring_objs(pool), 1024 - 49);

	/* Up to the threshold (48) every put stays in the cache. */
	for (i = 0; i < 48; i++)
		ck_assert_int_eq(shmpool_put(pool, objs[i]), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 48);
	ck_assert_uint_eq(ring_objs(pool), 1024 - 49);
	/* One more would cross it: the 48 go to the ring, the new one stays. */
	ck_assert_int_eq(shmpool_put(pool, objs[48]), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 1);
	ck_assert_uint_eq(ring_objs(pool), 1024 - 1);
	ck_assert_uint_eq(c->objs[0],
		(uint64_t)((char *)objs[48] - pool->objbase));
	ck_assert_uint_eq(shmpool_avail_count(pool), 1024);
	shmpool_detach(pool);
}
END_TEST

START_TEST(test_bypass)
{
	struct shmpool *pool;
	struct shmpool_cache *c;
	void *objs[49];

	tu_create("bypass", 1024, 64, 32, 4);
	pool = tu_attach("bypass", -1);
	c = shmpool_default_cache(pool);
	/* A default cache of 32: its calls take the generic entries. */
	ck_assert(pool->get_slow_ == shmpool_generic_get_slow_);
	ck_assert(pool->put_slow_ == shmpool_generic_put_slow_);

	/* A get of 33 > size 32: straight from the ring, cache untouched. */
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 33), 0);
	assert_objs(pool, objs, 33, 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 0);
	ck_assert_uint_eq(ring_objs(pool), 1024 - 33);
	/* A put of 33 <= threshold 48 is cached. */
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 33), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 33);
	ck_assert_int_eq(shmpool_cache_flush(c), 0);
	ck_assert_uint_eq(ring_objs(pool), 1024);

	/* A put of 49 > threshold 48 goes straight to the ring. */
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 49), 0);
	assert_objs(pool, objs, 49, 33);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 49), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 0);
	ck_assert_uint_eq(ring_objs(pool), 1024);
	/* The ring is FIFO: objects 0..32 come next (flushed back above). */
	ck_assert_int_eq(shmpool_generic_get(pool, objs, 49, NULL), 0);
	ck_assert_ptr_eq(objs[0], shmpool_obj_at(pool, 82));
	ck_assert_int_eq(shmpool_generic_put(pool, objs, 49, NULL), 0);
	shmpool_detach(pool);
}
END_TEST

START_TEST(test_failed_get_changes_nothing)
{
	struct shmpool *pool;
	struct shmpool_cache *c;
	void *held[64], *objs[40];

	tu_create("fail", 64, 64, 32, 4);
	pool = tu_attach("fail", -1);
	c = shmpool_default_cache(pool);

	ck_assert_int_eq(shmpool_generic_get(pool, held, 60, NULL), 0);
	ck_assert_uint_eq(ring_objs(pool), 4);
	/* 8 wanted, 4 free: neither the full refill nor the 8 can be had. */
	objs[0] = NULL;
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 8), -ENOENT);
	ck_assert_ptr_null(objs[0]);
	ck_assert_uint_eq(shmpool_cache_len_(c), 0);
	ck_assert_uint_eq(ring_objs(pool), 4);
	/* Bypass too. */
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 33), -ENOENT);
	ck_assert_int_eq(shmpool_generic_get(pool, objs, 5, NULL), -ENOENT);
	ck_assert_uint_eq(ring_objs(pool), 4);
	ck_assert_uint_eq(shmpool_avail_count(pool), 4);
	/* 4 can be had, without the refill (36 are not there). */
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 4), 0);
	assert_objs(pool, objs, 4, 60);
	ck_assert_uint_eq(shmpool_cache_len_(c), 0);
	ck_assert_uint_eq(shmpool_in_use_count(pool), 64);
	ck_assert_int_eq(shmpool_get(pool, objs), -ENOENT);
	shmpool_detach(pool);
}
END_TEST

/* A large get counts this cache's objects when the ring is short. */
START_TEST(test_bypass_uses_own_cache)
{
	struct shmpool *pool;
	struct shmpool_cache *c;
	void *objs[48];

	tu_create("bypassown", 48, 64, 32, 4);
	pool = tu_attach("bypassown", -1);
	c = shmpool_default_cache(pool);

	/* Miss: refill 32 + 20 would need 52 of 48; take 20 (objects 0..19). */
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 20), 0);
	assert_objs(pool, objs, 20, 0);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 20), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 20);
	ck_assert_uint_eq(ring_objs(pool), 28);

	/* Without a cache only the ring's 28 count: fail, nothing moves. */
	ck_assert_int_eq(shmpool_generic_get(pool, objs, 48, NULL), -ENOENT);
	ck_assert_uint_eq(shmpool_cache_len_(c), 20);
	ck_assert_uint_eq(ring_objs(pool), 28);
	/* 40: the ring's 28 are not enough; the cache's 20 first, then 20
	 * from the ring (objects 20..39). */
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 40), 0);
	assert_objs(pool, objs, 40, 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 0);
	ck_assert_uint_eq(ring_objs(pool), 8);
	/* 40 back into the cache (40 <= 48); then all 48: the cache's 40
	 * and the ring's 8. */
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 40), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 40);
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 48), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 0);
	ck_assert_uint_eq(shmpool_in_use_count(pool), 48);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 48), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), 48);
	shmpool_detach(pool);
}
END_TEST

/*
 * Every size from 1 to 300, and constant sizes around the copy's vector
 * counts, through a cache of 512 that holds at least 513:
 * each get is a hit that returns the cache's top n in order (the copies
 * inline and, from SHMPOOL_COPY_CALL_MIN_ objects, the AVX2 copy in line
 * or the library's), writes nothing outside objs[0 .. n), and the put of
 * them restores the cache word for word, writing nothing outside its top
 * n.  Both ways of the long copies where the CPU has AVX2 (copy_wide).
 */
/* A get of n from the cache (len of them) and the put of them back, as
 * test_copy_sizes describes; n a constant or not.  objs is the caller's
 * array, with a guard on each side (objs[-1], objs[n]); the cache's stack
 * is guarded below the n (objs[len - n - 1]) and above (objs[len]). */
#define COPY_SIZE_CHECK(n) do {						\
	memcpy(saved, &c->objs[len - (n)], (n) * sizeof(saved[0]));	\
	objs[-1] = objs[n] = NR_GUARD;					\
	below = c->objs[len - (n) - 1];					\
	c->objs[len] = 0x5a5a;						\
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, (n)), 0);		\
	ck_assert_uint_eq(shmpool_cache_len_(c), len - (n));				\
	for (i = 0; i < (n) && objs[i] == pool->objbase + saved[i]; i++) \
		;						\
	ck_assert_msg(i == (n), "get of %u: objs[%u] is not the cache's", \
		(unsigned int)(n), i);					\
	ck_assert_ptr_eq(objs[-1], NR_GUARD);				\
	ck_assert_ptr_eq(objs[n], NR_GUARD);				\
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, (n)), 0);		\
	ck_assert_uint_eq(shmpool_cache_len_(c), len);					\
	ck_assert_msg(memcmp(&c->objs[len - (n)], saved,		\
		(n) * sizeof(saved[0])) == 0, "put of %u",		\
		(unsigned int)(n));					\
	ck_assert_uint_eq(c->objs[len - (n) - 1], below);		\
	ck_assert_uint_eq(c->objs[len], 0x5a5a);			\
} while (0)

START_TEST(test_copy_sizes)
{
	/* _i 0: the hit's long copies in line with AVX2 where the CPU has
	 * it; 1: the call to the library's copy, whatever the CPU.  (Built
	 * with SHMPOOL_NO_INLINE, the hits run in the library, built with
	 * the CPU's choice: both turns take it.) */
	static const char *const name[] = { "sizes_wide", "sizes_call" };
	static void *array[302];
	static uint64_t saved[300];
	void **objs = array + 1;
	struct shmpool *pool;
	struct shmpool_cache *c;
	unsigned int n, i, len;
	uint64_t below;

	if (_i == 0 && !__builtin_cpu_supports("avx2"))
		printf("test_copy_sizes: this CPU has no AVX2: both turns "
			"take the call to the library's copy\n");
	copy_wide = _i == 0;
	tu_create(name[_i], 2048, 64, 512, 4);
	pool = tu_attach(name[_i], -1);
	c = shmpool_default_cache(pool);
	ck_assert_int_eq(shmpool_get(pool, objs), 0);
	ck_assert_int_eq(shmpool_put(pool, objs[0]), 0);
	len = shmpool_cache_len_(c);
	ck_assert_uint_eq(len, 513);
	for (n = 1; n <= 300; n++)
		COPY_SIZE_CHECK(n);
	/* Sizes the compiler knows: the branches of the copy decided at
	 * compile time, each vector count and tail. */
	COPY_SIZE_CHECK(1);
	COPY_SIZE_CHECK(2);
	COPY_SIZE_CHECK(3);
	COPY_SIZE_CHECK(4);
	COPY_SIZE_CHECK(5);
	COPY_SIZE_CHECK(6);
	COPY_SIZE_CHECK(7);
	COPY_SIZE_CHECK(8);
	COPY_SIZE_CHECK(9);
	COPY_SIZE_CHECK(15);
	COPY_SIZE_CHECK(16);
	COPY_SIZE_CHECK(17);
	COPY_SIZE_CHECK(31);
	COPY_SIZE_CHECK(32);
	COPY_SIZE_CHECK(33);
	COPY_SIZE_CHECK(128);
	ck_assert_int_eq(shmpool_detach(pool), 0);
	copy_wide = 1;
}
END_TEST

START_TEST(test_cache_size_zero)
{
	struct shmpool *pool;
	struct shmpool_cache *c;
	void *objs[4], *big[129];

	tu_create("nocache", 128, 64, 32, 4);
	pool = tu_attach("nocache", 0);
	c = shmpool_default_cache(pool);
	ck_assert_uint_eq(c->size, 0);
	ck_assert_uint_eq(c->flushthresh, 0);
	/* The calls through the default cache go to the library's get and
	 * put for a cache of size 0 (pool_slow_paths()), not to the generic
	 * entries (test_bypass: a cache of 32). */
	ck_assert(pool->get_slow_ != NULL);
	ck_assert(pool->put_slow_ != NULL);
	ck_assert(pool->get_slow_ != shmpool_generic_get_slow_);
	ck_assert(pool->put_slow_ != shmpool_generic_put_slow_);
	/* The base twice, aligned, for the short copies (ring_v2_base()). */
	ck_assert_uint_eq((uintptr_t)pool_handle(pool)->objbase2 & 15, 0);
	ck_assert_uint_eq(pool_handle(pool)->objbase2[0],
		(uintptr_t)pool->objbase);
	ck_assert_uint_eq(pool_handle(pool)->objbase2[1],
		(uintptr_t)pool->objbase);
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 4), 0);
	assert_objs(pool, objs, 4, 0);
	ck_assert_uint_eq(ring_objs(pool), 124);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 4), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 0);
	ck_assert_uint_eq(ring_objs(pool), 128);
	/* A long n (RING_WIDE_MIN and up) by the same calls: the ring's
	 * next 40; above the pool's size, refused. */
	ck_assert_int_eq(shmpool_get_bulk(pool, big, 40), 0);
	assert_objs(pool, big, 40, 4);
	ck_assert_uint_eq(ring_objs(pool), 88);
	ck_assert_int_eq(shmpool_put_bulk(pool, big, 40), 0);
	ck_assert_uint_eq(ring_objs(pool), 128);
	ck_assert_int_eq(shmpool_get_bulk(pool, big, 129), -EINVAL);
	ck_assert_int_eq(shmpool_put_bulk(pool, big, 129), -EINVAL);
	/* One object, which the entries send on first (get_slow_size0(),
	 * put_slow_size0()): the ring's next, by both calls. */
	ck_assert_int_eq(shmpool_get(pool, &objs[0]), 0);
	assert_objs(pool, objs, 1, 44);
	ck_assert_uint_eq(ring_objs(pool), 127);
	ck_assert_int_eq(shmpool_put(pool, objs[0]), 0);
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 1), 0);
	assert_objs(pool, objs, 1, 45);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 1), 0);
	ck_assert_uint_eq(ring_objs(pool), 128);
	ck_assert_uint_eq(shmpool_cache_len_(c), 0);
	tu_check_stats(pool, shmpool_cache_slot(c), &(struct shmpool_stats){
		.put_bulk = 4, .put_objs = 46,
		.put_common_pool_bulk = 4, .put_common_pool_objs = 46,
		.get_common_pool_bulk = 4, .get_common_pool_objs = 46,
		.get_success_bulk = 4, .get_success_objs = 46 }, "size 0");
	shmpool_detach(pool);
}
END_TEST

/*
 * A put without a cache whose positions cross the end of the ring's array
 * (its copy cannot be a short one: the library finishes it out of line
 * once claimed): every object lands where a get expects it, and the put
 * is counted once.  16 objects, a ring of 16 entries.
 */
START_TEST(test_put_across_end)
{
	struct shmpool *pool;
	struct shmpool_cache *c;
	void *objs[16], *back[5];
	unsigned int i;

	tu_create("across", 16, 64, 0, 4);
	pool = tu_attach("across", 0);
	c = shmpool_default_cache(pool);
	ck_assert_uint_eq(pool_handle(pool)->rings[0].size, 16);
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 16), 0);
	assert_objs(pool, objs, 16, 0);
	/* Objects 0 .. 12 at positions 16 .. 28, entries 0 .. 12. */
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 13), 0);
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 5), 0);
	assert_objs(pool, objs, 5, 0);
	/* 13, 14, 15, 0, 1 at positions 29 .. 33: entries 13, 14, 15, then
	 * 0 and 1. */
	back[0] = shmpool_obj_at(pool, 13);
	back[1] = shmpool_obj_at(pool, 14);
	back[2] = shmpool_obj_at(pool, 15);
	back[3] = shmpool_obj_at(pool, 0);
	back[4] = shmpool_obj_at(pool, 1);
	ck_assert_int_eq(shmpool_put_bulk(pool, back, 5), 0);
	ck_assert_uint_eq(pool_handle(pool)->rings[0].r->prod_head, 34);
	ck_assert_uint_eq(uatomic_read(&c->ring_op), 0);
	ck_assert_uint_eq(ring_objs(pool), 13);
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 13), 0);
	assert_objs(pool, objs, 11, 5);
	ck_assert_ptr_eq(objs[11], shmpool_obj_at(pool, 0));
	ck_assert_ptr_eq(objs[12], shmpool_obj_at(pool, 1));
	ck_assert_uint_eq(ring_objs(pool), 0);
	/* Each call past the cache is a call and a ring operation. */
	tu_check_stats(pool, shmpool_cache_slot(c), &(struct shmpool_stats){
		.put_bulk = 2, .put_objs = 18,
		.put_common_pool_bulk = 2, .put_common_pool_objs = 18,
		.get_common_pool_bulk = 3, .get_common_pool_objs = 34,
		.get_success_bulk = 3, .get_success_objs = 34 }, "across");
	for (i = 0; i < 13; i++)
		ck_assert_int_eq(shmpool_put(pool, objs[i]), 0);
	ck_assert_int_eq(shmpool_put_bulk(pool, &objs[13], 0), -EINVAL);
	ck_assert_uint_eq(ring_objs(pool), 13);
	shmpool_detach(pool);
}
END_TEST

/*
 * One object at a time without a cache (a get and a put of one each have
 * a function of their own): objects come out in the ring's order, a get
 * from the empty ring fails and changes nothing (what it left in obj is
 * unspecified), a put into the full ring (an object put twice) fails
 * with -ENOSPC and leaves no record, and every call is counted once.  4
 * objects, a ring of 4 entries.
 */
START_TEST(test_one_object_no_cache)
{
	struct shmpool *pool;
	struct shmpool_cache *c;
	void *objs[4], *obj;
	unsigned int i;

	tu_create("one", 4, 64, 0, 4);
	pool = tu_attach("one", 0);
	c = shmpool_default_cache(pool);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(shmpool_get(pool, &objs[i]), 0);
	assert_objs(pool, objs, 4, 0);
	ck_assert_int_eq(shmpool_get(pool, &obj), -ENOENT);
	ck_assert_uint_eq(pool_handle(pool)->rings[0].r->cons_head, 4);
	ck_assert_uint_eq(shmpool_in_use_count(pool), 4);
	/* Back in the order 3, 2, 1, 0, at positions 4 .. 7: entries 0 .. 3
	 * of the second lap. */
	for (i = 4; i-- > 0;)
		ck_assert_int_eq(shmpool_put(pool, objs[i]), 0);
	ck_assert_uint_eq(uatomic_read(&c->ring_op), 0);
	ck_assert_uint_eq(pool_handle(pool)->rings[0].r->prod_head, 8);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(shmpool_get(pool, &obj), 0);
		ck_assert_ptr_eq(obj, shmpool_obj_at(pool, 3 - i));
		ck_assert_int_eq(shmpool_put(pool, obj), 0);
	}
	ck_assert_uint_eq(ring_objs(pool), 4);
	ck_assert_int_eq(shmpool_put(pool, obj), -ENOSPC);
	ck_assert_uint_eq(uatomic_read(&c->ring_op), 0);
	ck_assert_uint_eq(pool_handle(pool)->rings[0].r->prod_head, 12);
	ck_assert_uint_eq(ring_objs(pool), 4);
	/* The failed get and put are not ring operations. */
	tu_check_stats(pool, shmpool_cache_slot(c), &(struct shmpool_stats){
		.put_bulk = 8, .put_objs = 8,
		.put_common_pool_bulk = 8, .put_common_pool_objs = 8,
		.get_common_pool_bulk = 8, .get_common_pool_objs = 8,
		.get_success_bulk = 8, .get_success_objs = 8,
		.get_fail_bulk = 1, .get_fail_objs = 1 }, "one");
	shmpool_detach(pool);
}
END_TEST

/* The counts of calls gets and calls puts of objs objects each, all past
 * the cache (each a call and a ring operation at once). */
static struct shmpool_stats
direct_counts(uint64_t calls, uint64_t objs)
{
	return (struct shmpool_stats){
		.put_bulk = calls, .put_objs = objs,
		.put_common_pool_bulk = calls, .put_common_pool_objs = objs,
		.get_common_pool_bulk = calls, .get_common_pool_objs = objs,
		.get_success_bulk = calls, .get_success_objs = objs };
}

/* A get or put of n for test_bad_n_no_cache(): through cache c, or, with
 * dflt, through the default cache's own calls (shmpool_get_bulk(),
 * shmpool_put_bulk(): the pool's pointers, struct shmpool). */
static int
get_via(struct shmpool *pool, void **objs, unsigned int n,
		struct shmpool_cache *c, int dflt)
{
	return dflt ? shmpool_get_bulk(pool, objs, n) :
		shmpool_generic_get(pool, objs, n, c);
}

static int
put_via(struct shmpool *pool, void * const *objs, unsigned int n,
		struct shmpool_cache *c, int dflt)
{
	return dflt ? shmpool_put_bulk(pool, objs, n) :
		shmpool_generic_put(pool, objs, n, c);
}

/*
 * A bad n through a cache of size 0 (the default one of a pool without
 * caches, by shmpool_generic_get() and by shmpool_get_bulk(); a claimed
 * one) and through none: 0, and above the pool's size
 * whether the ring's array could hold that many or not, is -EINVAL,
 * counts nothing and moves nothing, with the objects in the ring and
 * with them all out (where a get of a short n tries the ring before it
 * tests n against the pool's size), and with the ring empty from its
 * entry 0 (where that try reads within the array).  10 objects, a ring of
 * 16 entries; the sizes include the largest short n and the smallest
 * long one (RING_WIDE_MIN - 1 and RING_WIDE_MIN).
 */
START_TEST(test_bad_n_no_cache)
{
	static const unsigned int bad[] = { 0, 11, 16, 17, 31,
		RING_WIDE_MIN - 1, RING_WIDE_MIN, 40 };
	const unsigned int nbad = sizeof(bad) / sizeof(bad[0]);
	struct shmpool_cache *caches[4], *c;
	struct shmpool_stats e;
	struct shmpool *pool;
	void *objs[40], *out[40];
	unsigned int i, j, k, turns;

	tu_create("badn", 10, 64, 0, 4);
	pool = tu_attach("badn", 0);
	ck_assert_uint_eq(pool_handle(pool)->rings[0].size, 16);
	caches[0] = shmpool_default_cache(pool);
	ck_assert_int_eq(shmpool_cache_claim(pool, 0, &caches[1]), 0);
	caches[2] = NULL;
	caches[3] = caches[0];	/* by shmpool_get_bulk() */
	for (k = 0; k < 4; k++) {
		c = caches[k];
		/* j 0: the 10 in the ring; 1: the 10 out, in objs (and
		 * again in objs[10 ..), refused before they are read). */
		for (j = 0; j < 2; j++) {
			if (j == 1) {
				ck_assert_int_eq(get_via(pool, objs, 10, c,
					k == 3), 0);
				for (i = 10; i < 40; i++)
					objs[i] = objs[i % 10];
			}
			for (i = 0; i < nbad; i++) {
				ck_assert_msg(get_via(pool, out, bad[i], c,
					k == 3) == -EINVAL, "cache %u, "
					"%s: a get of %u is not refused", k,
					j ? "all out" : "all in", bad[i]);
				if (j == 1)
					ck_assert_msg(put_via(pool, objs,
						bad[i], c, k == 3) == -EINVAL,
						"cache %u: a put of %u is not "
						"refused", k, bad[i]);
				ck_assert_uint_eq(ring_objs(pool),
					j ? 0 : 10);
			}
			if (j == 1)
				ck_assert_int_eq(put_via(pool, objs, 10, c,
					k == 3), 0);
		}
	}
	ck_assert_uint_eq(uatomic_read(&caches[0]->ring_op), 0);
	ck_assert_uint_eq(uatomic_read(&caches[1]->ring_op), 0);
	/* The get and put of 10 through each; NULL's and
	 * shmpool_get_bulk()'s in the default cache. */
	e = direct_counts(3, 30);
	tu_check_stats(pool, shmpool_cache_slot(caches[0]), &e, "default");
	e = direct_counts(1, 10);
	tu_check_stats(pool, shmpool_cache_slot(caches[1]), &e, "claimed");
	ck_assert_int_eq(shmpool_cache_release(caches[1]), 0);
	ck_assert_uint_eq(ring_objs(pool), 10);
	/* The ring empty and its consumers' head at entry 0, so that a
	 * get of up to 16 reads within the array, and fails there. */
	for (turns = 0; turns < 16; turns++) {
		ck_assert_int_eq(shmpool_get_bulk(pool, objs, 10), 0);
		if ((pool_handle(pool)->rings[0].r->cons_head & 15) == 0)
			break;
		ck_assert_int_eq(shmpool_put_bulk(pool, objs, 10), 0);
	}
	ck_assert_uint_lt(turns, 16);
	ck_assert_uint_eq(ring_objs(pool), 0);
	for (i = 1; i < nbad; i++)
		ck_assert_msg(shmpool_get_bulk(pool, out, bad[i]) == -EINVAL,
			"empty ring at entry 0: a get of %u is not refused",
			bad[i]);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 10), 0);
	e = direct_counts(4 + turns, 10 * (4 + turns));
	tu_check_stats(pool, shmpool_cache_slot(caches[0]), &e,
		"default, at the end");
	shmpool_detach(pool);
}
END_TEST

START_TEST(test_claimed_cache)
{
	struct shmpool *pool;
	struct shmpool_cache *c1, *c2, *c3, *c4;
	struct shmpool_info info;
	void *objs[16];

	tu_create("claim", 1024, 64, 32, 4);
	pool = tu_attach("claim", -1);
	ck_assert_int_eq(shmpool_cache_slot(shmpool_default_cache(pool)), 0);

	ck_assert_int_eq(shmpool_cache_claim(pool, 16, &c1), 0);
	ck_assert_int_eq(shmpool_cache_slot(c1), 1);
	ck_assert_uint_eq(c1->size, 16);
	ck_assert_uint_eq(c1->flushthresh, 24);
	/* A miss refills 16 + 1 (objects 0..16) and returns the top. */
	ck_assert_int_eq(shmpool_generic_get(pool, objs, 1, c1), 0);
	assert_objs(pool, objs, 1, 16);
	ck_assert_uint_eq(shmpool_cache_len_(c1), 16);
	ck_assert_int_eq(shmpool_generic_put(pool, objs, 1, c1), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c1), 17);

	ck_assert_int_eq(shmpool_cache_claim(pool, 0, &c2), 0);
	ck_assert_int_eq(shmpool_cache_claim(pool, SHMPOOL_CACHE_MAX_SIZE / 8,
		&c3), 0);
	/* Four slots: the fifth claim finds none. */
	ck_assert_int_eq(shmpool_cache_claim(pool, 1, &c4), -EBUSY);
	ck_assert_int_eq(shmpool_info(pool, &info), 0);
	ck_assert_uint_eq(info.slots_in_use, 4);

	/* Flush empties a cache into the ring. */
	ck_assert_int_eq(shmpool_cache_flush(c1), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c1), 0);
	ck_assert_uint_eq(ring_objs(pool), 1024);

	/* Release: objects back, slot free for the next claim. */
	ck_assert_int_eq(shmpool_generic_get(pool, objs, 1, c3), 0);
	ck_assert_int_eq(shmpool_generic_put(pool, objs, 1, c3), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c3), 513);
	ck_assert_int_eq(shmpool_cache_release(c3), 0);
	ck_assert_uint_eq(ring_objs(pool), 1024);
	ck_assert_int_eq(shmpool_info(pool, &info), 0);
	ck_assert_uint_eq(info.slots_in_use, 3);
	ck_assert_int_eq(shmpool_cache_claim(pool, 1, &c4), 0);
	ck_assert_int_eq(shmpool_cache_slot(c4), 3);

	ck_assert_int_eq(shmpool_cache_release(shmpool_default_cache(pool)),
		-EINVAL);
	ck_assert_int_eq(shmpool_cache_release(NULL), -EINVAL);
	ck_assert_int_eq(shmpool_cache_flush(NULL), -EINVAL);
	ck_assert_int_eq(shmpool_cache_claim(pool, SHMPOOL_CACHE_MAX_SIZE + 1,
		&c4), -EINVAL);
	/* 1.5 * 683 = 1024 fits a pool of 1024; 1.5 * 684 = 1026 does not. */
	ck_assert_int_eq(shmpool_cache_claim(pool, 684, &c4), -EINVAL);
	ck_assert_int_eq(shmpool_cache_claim(NULL, 1, &c4), -EINVAL);
	ck_assert_int_eq(shmpool_cache_claim(pool, 1, NULL), -EINVAL);
	ck_assert_int_eq(shmpool_cache_release(c2), 0);
	ck_assert_int_eq(shmpool_cache_claim(pool, 683, &c4), 0);

	ck_assert_int_eq(shmpool_detach(pool), 0);
}
END_TEST

/*
 * A flush request (shmpoolctl flush sets flush_req): the next get or put,
 * hit or not, empties the cache into the ring first, uncounted, and clears
 * the request; then the call goes on as on an empty cache.
 */
START_TEST(test_flush_request)
{
	struct shmpool_stats before, after;
	struct shmpool *pool;
	struct shmpool_cache *c;
	void *x[8], *y;

	tu_create("flushreq", 1024, 64, 32, 4);
	pool = tu_attach("flushreq", -1);
	c = shmpool_default_cache(pool);

	/* Miss: refill 40, take 8: 32 cached, then 8 back: 40. */
	ck_assert_int_eq(shmpool_get_bulk(pool, x, 8), 0);
	ck_assert_int_eq(shmpool_put_bulk(pool, x, 8), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 40);
	ck_assert_uint_eq(ring_objs(pool), 1024 - 40);

	/* A get that would hit: the 40 go back first, then a refill of
	 * 32 + 1, of which 1 is returned. */
	ck_assert_int_eq(shmpool_stats_read(pool, shmpool_cache_slot(c), &before),
		0);
	c->flush_req = 1;
	ck_assert_int_eq(shmpool_get(pool, &y), 0);
	ck_assert_uint_eq(c->flush_req, 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 32);
	ck_assert_uint_eq(ring_objs(pool), 1024 - 33);
	ck_assert_int_eq(shmpool_stats_read(pool, shmpool_cache_slot(c), &after),
		0);
#if SHMPOOL_STATS
	/* The flush itself is not counted: only the refill and the get. */
	ck_assert_uint_eq(after.put_common_pool_bulk,
		before.put_common_pool_bulk);
	ck_assert_uint_eq(after.get_common_pool_bulk,
		before.get_common_pool_bulk + 1);
	ck_assert_uint_eq(after.get_common_pool_objs,
		before.get_common_pool_objs + 33);
	ck_assert_uint_eq(after.get_success_objs, before.get_success_objs + 1);
#endif

	/* A put that would hit: the 32 go back, then the one is cached. */
	c->flush_req = 1;
	ck_assert_int_eq(shmpool_put(pool, y), 0);
	ck_assert_uint_eq(c->flush_req, 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 1);
	ck_assert_uint_eq(ring_objs(pool), 1023);
	ck_assert_uint_eq(shmpool_avail_count(pool), 1024);
	shmpool_detach(pool);
}
END_TEST

START_TEST(test_largest_cache)
{
	struct shmpool *pool;
	struct shmpool_cache *c;
	static void *objs[SHMPOOL_CACHE_MAX_SIZE];

	tu_create("large", 3 * SHMPOOL_CACHE_MAX_SIZE, 64,
		SHMPOOL_CACHE_MAX_SIZE, 4);
	pool = tu_attach("large", -1);
	c = shmpool_default_cache(pool);
	/* Refill to the largest size plus the request. */
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, SHMPOOL_CACHE_MAX_SIZE),
		0);
	assert_objs(pool, objs, SHMPOOL_CACHE_MAX_SIZE, SHMPOOL_CACHE_MAX_SIZE);
	ck_assert_uint_eq(shmpool_cache_len_(c), SHMPOOL_CACHE_MAX_SIZE);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, SHMPOOL_CACHE_MAX_SIZE /
		2), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), c->flushthresh);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs + SHMPOOL_CACHE_MAX_SIZE /
		2, SHMPOOL_CACHE_MAX_SIZE / 2), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), SHMPOOL_CACHE_MAX_SIZE / 2);
	ck_assert_uint_eq(shmpool_avail_count(pool), 3 * SHMPOOL_CACHE_MAX_SIZE);
	shmpool_detach(pool);
}
END_TEST

/* ------------------------------------------------------------------ */
/*
 * A flush request the ring has no room for.  Only a double put can fill
 * the ring past what a flush needs; the cache then keeps its objects and a
 * get of n <= len is served from it as a hit.  A get of n > len goes on as
 * a miss of a cache holding len; to see it fail, the ring must hold fewer
 * than n - len references while having no room, which takes holes (what
 * shmpoold's ring_repair() leaves of a put killed in the middle; made here
 * by hand).
 */

#define NR_OBJS		16	/* the pool, and entries in its ring */
#define NR_CACHE	8	/* cache size; flush threshold 12 */

/* A copy of the whole segment, to compare with it after a call. */
struct seg_copy {
	char *mem;
	size_t len;
};

static struct seg_copy
seg_snap(struct shmpool *pool)
{
	struct pool_handle *h = pool_handle(pool);
	struct seg_copy s = { malloc(h->map_size), h->map_size };

	ck_assert_ptr_nonnull(s.mem);
	memcpy(s.mem, h->hdr, s.len);
	return s;
}

/* The same field of the copy as p is of the segment. */
#define SNAP_AT(s, pool, p)						\
	((__typeof__(p))((s).mem + ((const char *)(p) -		\
		(const char *)pool_handle(pool)->hdr)))

/* The segment must be byte for byte the copy (patched by the caller with
 * what the call was to change). */
static void
seg_same(struct shmpool *pool, struct seg_copy *s, const char *what)
{
	const char *now = (const char *)pool_handle(pool)->hdr;
	size_t i;

	/* One assertion, not one a byte: each passing assertion of a
	 * forked test is a write to Check's pipe. */
	for (i = 0; i < s->len && now[i] == s->mem[i]; i++)
		;
	ck_assert_msg(i == s->len, "%s: segment byte %zu (of %zu) changed "
		"from 0x%02x to 0x%02x", what, i, s->len,
		(unsigned char)s->mem[i < s->len ? i : 0],
		(unsigned char)now[i < s->len ? i : 0]);
	free(s->mem);
	s->mem = NULL;
}

/* Claim m positions and make holes of them, as ring_repair() does. */
static void
make_holes(struct shmpool *pool, unsigned int m)
{
	const struct ring_view *v = &pool_handle(pool)->rings[0];
	uint64_t pos = uatomic_read(&v->r->prod_head), q;

	ck_assert_uint_le(pos + m - uatomic_read(&v->r->cons_head), v->size);
	ck_assert(ring_claim(&v->r->prod_head, &pos, m));
	for (q = pos; q < pos + m; q++)
		v->ents[(uint32_t)q & v->mask] = ring_ent(ring_seq(v, q) + 1, 0);
	uatomic_add(&v->r->holes, m);
}

/* Under stats: the cache's success and failure counters moved so. */
static void
check_get_counts(struct shmpool *pool, const struct shmpool_stats *before,
		uint64_t ok_bulk, uint64_t ok_objs, uint64_t fail_bulk,
		uint64_t fail_objs)
{
#if SHMPOOL_STATS
	struct shmpool_stats st;

	ck_assert_int_eq(shmpool_stats_read(pool,
		shmpool_cache_slot(shmpool_default_cache(pool)), &st), 0);
	ck_assert_uint_eq(st.get_success_bulk,
		before->get_success_bulk + ok_bulk);
	ck_assert_uint_eq(st.get_success_objs,
		before->get_success_objs + ok_objs);
	ck_assert_uint_eq(st.get_fail_bulk, before->get_fail_bulk + fail_bulk);
	ck_assert_uint_eq(st.get_fail_objs, before->get_fail_objs + fail_objs);
	ck_assert_uint_eq(st.put_common_pool_bulk,
		before->put_common_pool_bulk);
	ck_assert_uint_eq(st.get_common_pool_bulk,
		before->get_common_pool_bulk);
#else
	(void)pool;
	(void)before;
	(void)ok_bulk;
	(void)ok_objs;
	(void)fail_bulk;
	(void)fail_objs;
#endif
}

/*
 * One get of n in test_flush_request_no_room, with a flush request the
 * ring has no room for.  nr_begin(): the counters read, x guarded, the
 * request made, the segment copied as the get is to leave it (the
 * request taken, the counters of a success or a failure; the caller
 * patches the rest through sc).  nr_end(): nothing written in x from n
 * on, the request taken, the segment as the copy, the counters moved.
 */
struct nr_step {
	struct shmpool_stats before;
	struct seg_copy snap;
	struct shmpool_cache *sc;	/* the cache in the copy */
	unsigned int n;
	int ok;				/* the get is to succeed */
};

static void
nr_begin(struct shmpool *pool, struct nr_step *s, void **x, unsigned int n,
		int ok)
{
	struct shmpool_cache *c = shmpool_default_cache(pool);
	unsigned int i;

	ck_assert_int_eq(shmpool_stats_read(pool, shmpool_cache_slot(c),
		&s->before), 0);
	for (i = 0; i < NR_OBJS + 4; i++)
		x[i] = NR_GUARD;
	c->flush_req = 1;
	s->snap = seg_snap(pool);
	s->sc = SNAP_AT(s->snap, pool, c);
	s->sc->flush_req = 0;
	s->n = n;
	s->ok = ok;
	/* A hit takes n, after the flush that failed.  With stats that
	 * flush was two changes of the cache (seq up by 4), and a get that
	 * fails is counted so. */
	if (ok)
		s->sc->w = s->sc->w - n + SHMPOOL_W_GET_CALL_;
#if SHMPOOL_STATS
	s->sc->seq += 4;
	if (!ok) {
		s->sc->get_fail_bulk += 1;
		s->sc->get_fail_objs += n;
	}
#endif
}

static void
nr_end(struct shmpool *pool, struct nr_step *s, void **x, const char *what)
{
	unsigned int i;

	for (i = s->n; i < NR_OBJS + 4; i++)
		ck_assert_ptr_eq(x[i], NR_GUARD);
	ck_assert_uint_eq(shmpool_default_cache(pool)->flush_req, 0);
	/* The change record is read only while seq is odd (seg_same()
	 * checks seq): with seq even it may hold a change written down and
	 * not made (a refill's, before its claim fails), which nothing
	 * reads. */
	s->sc->change = shmpool_default_cache(pool)->change;
	seg_same(pool, &s->snap, what);
	check_get_counts(pool, &s->before, s->ok, s->ok ? s->n : 0, !s->ok,
		s->ok ? 0 : s->n);
}

/*
 * A release or a detach whose cache cannot go back, the ring being full
 * (an object was put twice): -ENOSPC.  A released cache stays claimed,
 * with its objects, and is released once the ring has room; a detached
 * one keeps its slot.  A second detach is refused, not a crash.
 */
START_TEST(test_release_no_room)
{
	struct shmpool_cache *c;
	struct shmpool *pool, *other;
	void *a[4], *b[4];

	tu_create("relroom", 16, 64, 4, 4);
	pool = tu_attach("relroom", 0);
	ck_assert_int_eq(shmpool_cache_claim(pool, 4, &c), 0);
	ck_assert_uint_eq(tu_slots_in_use(pool), 2);
	/* 4 from the ring into c, then the same 4 straight back to the
	 * ring: 16 references in a ring of 16, and 4 more in c. */
	ck_assert_int_eq(shmpool_generic_get(pool, a, 4, NULL), 0);
	ck_assert_int_eq(shmpool_generic_put(pool, a, 4, c), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 4);
	ck_assert_int_eq(shmpool_generic_put(pool, a, 4, NULL), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), 16);

	ck_assert_int_eq(shmpool_cache_release(c), -ENOSPC);
	ck_assert_str_eq(shmpool_last_error(), "pool 'relroom': the ring is "
		"full (an object was put twice); the cache keeps its objects "
		"and stays claimed");
	ck_assert_uint_eq(shmpool_cache_len_(c), 4);
	ck_assert_uint_eq(tu_slots_in_use(pool), 2);
	/* Still usable: a hit takes its top object. */
	ck_assert_int_eq(shmpool_generic_get(pool, b, 1, c), 0);
	ck_assert_ptr_eq(b[0], a[3]);
	ck_assert_int_eq(shmpool_generic_put(pool, b, 1, c), 0);
	/* Room for 4: released. */
	ck_assert_int_eq(shmpool_generic_get(pool, b, 4, NULL), 0);
	ck_assert_int_eq(shmpool_cache_release(c), 0);
	ck_assert_uint_eq(tu_slots_in_use(pool), 1);
	ck_assert_uint_eq(shmpool_avail_count(pool), 16);
	ck_assert_int_eq(shmpool_cache_release(c), -EINVAL);

	/* The same through the default cache of another attachment: its
	 * detach cannot flush, says so, and the slot stays taken. */
	other = tu_attach("relroom", 4);
	ck_assert_uint_eq(tu_slots_in_use(pool), 2);
	ck_assert_int_eq(shmpool_generic_get(pool, b, 4, NULL), 0);
	ck_assert_int_eq(shmpool_put_bulk(other, b, 4), 0);
	ck_assert_uint_eq(shmpool_cache_len_(shmpool_default_cache(other)), 4);
	ck_assert_int_eq(shmpool_generic_put(pool, b, 4, NULL), 0);
	ck_assert_int_eq(shmpool_detach(other), -ENOSPC);
	ck_assert_str_eq(shmpool_last_error(), "pool 'relroom': the ring is "
		"full (an object was put twice): 1 cache(s) kept their objects "
		"and slots");
	ck_assert_uint_eq(tu_slots_in_use(pool), 2);
	/* Gone all the same: a second detach is refused. */
	ck_assert_int_eq(shmpool_detach(other), -EINVAL);
	ck_assert_str_eq(shmpool_last_error(), "not an attachment of this "
		"process (detached already?)");
	ck_assert_int_eq(shmpool_detach(pool), 0);
	ck_assert_int_eq(shmpool_detach(pool), -EINVAL);
}
END_TEST

START_TEST(test_flush_request_no_room)
{
	const struct ring_view *v;
	struct shmpool_cache *c;
	struct nr_step st;
	struct shmpool *pool;
	void *a[4], *b[NR_OBJS], *x[NR_OBJS + 4];
	unsigned int i;

	tu_create("noroom", NR_OBJS, 64, NR_CACHE, 4);
	pool = tu_attach("noroom", -1);
	c = shmpool_default_cache(pool);
	v = &pool_handle(pool)->rings[0];
	ck_assert_uint_eq(c->size, NR_CACHE);
	ck_assert_uint_eq(c->flushthresh, 12);
	ck_assert_uint_eq(v->size, NR_OBJS);

	/* Objects 0..3 from the ring, into the cache (len 4), and put a
	 * second time straight to the ring: 16 references in the ring (the
	 * ring is full: objects 4..15, then 0..3), 4 in the cache. */
	ck_assert_int_eq(shmpool_generic_get(pool, a, 4, NULL), 0);
	assert_objs(pool, a, 4, 0);
	ck_assert_int_eq(shmpool_put_bulk(pool, a, 4), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 4);
	ck_assert_int_eq(shmpool_generic_put(pool, a, 4, NULL), 0);
	ck_assert_uint_eq(uatomic_read(&v->r->cons_head), 4);
	ck_assert_uint_eq(uatomic_read(&v->r->prod_head), NR_OBJS + 4);
	ck_assert_uint_eq(ring_objs(pool), NR_OBJS);
	/* Nothing fits: a flush now fails and keeps the 4. */
	ck_assert_int_eq(shmpool_cache_flush(c), -ENOSPC);
	ck_assert_uint_eq(shmpool_cache_len_(c), 4);
	ck_assert_uint_eq(uatomic_read(&c->ring_op), 0);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(c->objs[i],
			(uint64_t)((char *)a[i] - pool->objbase));

	/* 1. A get of 3 of the 4 with a flush request: served from the
	 * cache, its top 3 in order (objects 1, 2, 3), the request taken;
	 * not a byte of the segment changes but the length, the request and
	 * the counters of a hit, and nothing is written in x past 3. */
	nr_begin(pool, &st, x, 3, 1);
	ck_assert_int_eq(shmpool_get_bulk(pool, x, 3), 0);
	assert_objs(pool, x, 3, 1);
	ck_assert_uint_eq(shmpool_cache_len_(c), 1);
	nr_end(pool, &st, x, "get of 3 of 4, no room to flush");

	/* Empty the ring of references, keeping it without room: take its
	 * 16 (objects 4..15, 0..3) and fill its 16 free positions with
	 * holes.  Cache: object 0 alone. */
	ck_assert_int_eq(shmpool_generic_get(pool, b, NR_OBJS, NULL), 0);
	assert_objs(pool, b, NR_OBJS - 4, 4);
	assert_objs(pool, b + NR_OBJS - 4, 4, 0);
	make_holes(pool, NR_OBJS);
	ck_assert_uint_eq(uatomic_read(&v->r->cons_head), NR_OBJS + 4);
	ck_assert_uint_eq(uatomic_read(&v->r->prod_head), 2 * NR_OBJS + 4);
	ck_assert_uint_eq(uatomic_read(&v->r->holes), NR_OBJS);
	ck_assert_uint_eq(ring_objs(pool), 0);
	ck_assert_int_eq(shmpool_cache_flush(c), -ENOSPC);
	ck_assert_uint_eq(shmpool_cache_len_(c), 1);

	/* 2. A get of 2 > len 1 (<= the size: a refill of 8 + 2 - 1 = 9,
	 * then of 1): the ring has none, -ENOENT.  The cache may have been
	 * written where the refill goes, objs[1 .. 10), and nowhere else;
	 * the length, the ring and the caller's array past 2 are as they
	 * were. */
	nr_begin(pool, &st, x, 2, 0);
	ck_assert_int_eq(shmpool_get_bulk(pool, x, 2), -ENOENT);
	memcpy(&st.sc->objs[1], &c->objs[1], (NR_CACHE + 2 - 1) *
		sizeof(c->objs[0]));
	ck_assert_uint_eq(shmpool_cache_len_(c), 1);
	ck_assert_uint_eq(c->objs[0],
		(uint64_t)((char *)a[0] - pool->objbase));
	nr_end(pool, &st, x, "get of 2 > len 1, no room to flush");

	/* 3. A get of 12 > the size (the bypass: 12 from the ring, then 11
	 * and the cache's 1): -ENOENT, the segment unchanged but for the
	 * request and the counters, nothing written in x past 12. */
	nr_begin(pool, &st, x, 12, 0);
	ck_assert_int_eq(shmpool_get_bulk(pool, x, 12), -ENOENT);
	ck_assert_uint_eq(shmpool_cache_len_(c), 1);
	nr_end(pool, &st, x, "get of 12 > size, no room to flush");

	/* 4. A get of exactly len (1): served from the cache (object 0);
	 * the cache is empty after. */
	nr_begin(pool, &st, x, 1, 1);
	ck_assert_int_eq(shmpool_get(pool, x), 0);
	assert_objs(pool, x, 1, 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 0);
	nr_end(pool, &st, x, "get of len 1, no room to flush");

	/* The ring: 16 holes, untouched by the failed gets. */
	ck_assert_uint_eq(uatomic_read(&v->r->holes), NR_OBJS);
	ck_assert_uint_eq(uatomic_read(&v->r->cons_head), NR_OBJS + 4);
	ck_assert_uint_eq(shmpool_avail_count(pool), 0);
	/* Nothing cached: detach has nothing to flush. */
	ck_assert_int_eq(shmpool_detach(pool), 0);
}
END_TEST


/*
 * Several rings (SHMPOOL_RINGS): the objects of a fresh pool shared out
 * in turn, ring k holding objects k, k + rings, ...; a get without a
 * cache from the ring of its CPU, else whole from another, else gathered
 * from all; a put to the ring of its CPU.
 */
static struct shmpool *
rings_pool(const char *name, const char *rings, unsigned int count,
		unsigned int cache)
{
	struct shmpool *pool;

	setenv("SHMPOOL_RINGS", rings, 1);
	tu_create(name, count, 64, cache, 4);
	setenv("SHMPOOL_RINGS", "1", 1);
	pool = tu_attach(name, -1);
	ck_assert_uint_eq(pool_handle(pool)->nb_rings, atoi(rings));
	return pool;
}

static unsigned int
ring_k(struct shmpool *pool, unsigned int k)
{
	return ring_count(&pool_handle(pool)->rings[k]);
}

/* obj put on ring k, by hand (as ring_put() does, without a record). */
static void
put_on(struct shmpool *pool, unsigned int k, void *obj)
{
	const struct ring_view *v = &pool_handle(pool)->rings[k];
	uint64_t pos = uatomic_read(&v->r->prod_head);
	uint32_t ref = shmpool_ptr_to_ref_(pool, obj);

	ck_assert(ring_claim(&v->r->prod_head, &pos, 1));
	ring_write(v, pos, 1, &ref, RING_REFS, NULL);
}

/* Run on CPU cpu alone, where the library can tell it: 1, or 0 when it
 * cannot be (fewer CPUs, or no rseq area, as under valgrind). */
static int
run_on(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		return 0;
#if HAVE_DECL___RSEQ_OFFSET
	return __rseq_size != 0 && sched_getcpu() == cpu;
#else
	return 0;
#endif
}

START_TEST(test_rings_shared_out)
{
	struct shmpool *pool = rings_pool("rings4", "4", 10, 0);
	unsigned int k;

	ck_assert_uint_eq(ring_k(pool, 0), 3);
	ck_assert_uint_eq(ring_k(pool, 1), 3);
	ck_assert_uint_eq(ring_k(pool, 2), 2);
	ck_assert_uint_eq(ring_k(pool, 3), 2);
	for (k = 0; k < 4; k++)
		ck_assert_uint_eq(pool_handle(pool)->rings[k].size, 16);
	ck_assert_uint_eq(shmpool_avail_count(pool), 10);
	ck_assert_int_eq(shmpool_detach(pool), 0);
}
END_TEST

START_TEST(test_rings_bad_count)
{
	static const char *bad[] = { "0", "3", "16", "-2", "2x", " 2", "02",
		"+2", "2 " };
	struct shmpool_params p = { .obj_count = 8, .obj_size = 64 };
	char want[160];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("SHMPOOL_RINGS", bad[i], 1);
		ck_assert_int_eq(shmpool_segment_create(tu_path("badrings"),
			"badrings", &p, 0600), -EINVAL);
		snprintf(want, sizeof(want), "pool 'badrings': SHMPOOL_RINGS="
			"%s is not 1, 2, 4 or 8", bad[i]);
		ck_assert_str_eq(shmpool_last_error(), want);
		ck_assert_int_eq(access(tu_path("badrings"), F_OK), -1);
	}
}
END_TEST

/* The CPU's own ring first, whole from another when it is short. */
START_TEST(test_rings_cpu)
{
	struct shmpool *pool;
	struct shmpool_cache *c;
	void *a[4], *b[3];

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !run_on(0)) {
		printf("test_rings_cpu: skipped, needs CPUs 0 and 1 and "
			"rseq\n");
		return;
	}
	pool = rings_pool("rcpu", "2", 8, 0);
	c = shmpool_default_cache(pool);
	/* Ring 0: objects 0, 2, 4, 6; ring 1: 1, 3, 5, 7. */
	ck_assert_int_eq(shmpool_generic_get(pool, a, 2, NULL), 0);
	ck_assert_ptr_eq(a[0], shmpool_obj_at(pool, 0));
	ck_assert_ptr_eq(a[1], shmpool_obj_at(pool, 2));
	ck_assert_uint_eq(ring_k(pool, 0), 2);
	ck_assert_uint_eq(ring_k(pool, 1), 4);
	ck_assert(run_on(1));
	ck_assert_int_eq(shmpool_generic_get(pool, b, 1, NULL), 0);
	ck_assert_ptr_eq(b[0], shmpool_obj_at(pool, 1));
	/* Puts go to the ring of the CPU they run on, and their record
	 * names it (cleared, once they are done): through the default
	 * cache, idle (put_idle_in(), put_idle_one()), and with none. */
	ck_assert_int_eq(shmpool_put_bulk(pool, a, 2), 0);
	ck_assert_uint_eq(ring_k(pool, 0), 2);
	ck_assert_uint_eq(ring_k(pool, 1), 5);
	ck_assert_uint_eq(uatomic_read(&c->ring_op_ring), 1);
	ck_assert_uint_eq(uatomic_read(&c->ring_op), 0);
	/* Ring 0 has 2 (4 and 6): a get of 3 there takes ring 1's first 3
	 * (3, 5, 7), whole. */
	ck_assert(run_on(0));
	ck_assert_int_eq(shmpool_generic_get(pool, a, 3, NULL), 0);
	ck_assert_ptr_eq(a[0], shmpool_obj_at(pool, 3));
	ck_assert_ptr_eq(a[1], shmpool_obj_at(pool, 5));
	ck_assert_ptr_eq(a[2], shmpool_obj_at(pool, 7));
	ck_assert_uint_eq(ring_k(pool, 0), 2);
	ck_assert_uint_eq(ring_k(pool, 1), 2);
	ck_assert_uint_eq(shmpool_avail_count(pool), 4);
	ck_assert_int_eq(shmpool_put(pool, b[0]), 0);
	ck_assert_uint_eq(uatomic_read(&c->ring_op_ring), 0);
	ck_assert(run_on(1));
	ck_assert_int_eq(shmpool_generic_put(pool, a, 3, NULL), 0);
	ck_assert_uint_eq(uatomic_read(&c->ring_op_ring), 1);
	ck_assert_uint_eq(uatomic_read(&c->ring_op), 0);
	ck_assert_uint_eq(ring_k(pool, 0), 3);
	ck_assert_uint_eq(ring_k(pool, 1), 5);
	ck_assert_uint_eq(shmpool_avail_count(pool), 8);
	ck_assert_int_eq(shmpool_detach(pool), 0);
}
END_TEST

/* No ring has n, all of them together have: gathered; they have not: the
 * get fails and every object is still to be had. */
START_TEST(test_rings_gather)
{
	struct shmpool *pool = rings_pool("gather", "4", 10, 0);
	void *a[10], *b[3];
	unsigned char seen[10] = { 0 };
	unsigned int i, k, sum;
	long idx;

	ck_assert_int_eq(shmpool_generic_get(pool, a, 10, NULL), 0);
	for (i = 0; i < 10; i++) {
		idx = shmpool_obj_index(pool, a[i]);
		ck_assert_msg(idx >= 0 && idx < 10 && !seen[idx],
			"objs[%u] is object %ld", i, idx);
		seen[idx] = 1;
	}
	ck_assert_uint_eq(shmpool_avail_count(pool), 0);
	ck_assert_int_eq(shmpool_generic_get(pool, b, 1, NULL), -ENOENT);
	ck_assert_int_eq(shmpool_generic_put(pool, a, 10, NULL), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), 10);

	/* 8 taken from one ring, 2 put back to each of two rings by hand:
	 * a get of 3 fails and leaves them, a get of 2 and 2 more works. */
	ck_assert_int_eq(shmpool_generic_get(pool, a, 10, NULL), 0);
	for (k = 1; k <= 2; k++)
		put_on(pool, k, a[2 * k - 2]);
	ck_assert_uint_eq(shmpool_avail_count(pool), 2);
	ck_assert_int_eq(shmpool_generic_get(pool, b, 3, NULL), -ENOENT);
	for (k = 0, sum = 0; k < 4; k++)
		sum += ring_k(pool, k);
	ck_assert_uint_eq(sum, 2);
	ck_assert_int_eq(shmpool_generic_get(pool, b, 2, NULL), 0);
	ck_assert_msg((b[0] == a[0] && b[1] == a[2]) ||
		(b[0] == a[2] && b[1] == a[0]), "the get of 2 took objects "
		"%ld and %ld", shmpool_obj_index(pool, b[0]),
		shmpool_obj_index(pool, b[1]));
	ck_assert_uint_eq(shmpool_avail_count(pool), 0);
	ck_assert_int_eq(shmpool_detach(pool), 0);
}
END_TEST

/* A slot's put record is 0 once it is retired, whatever its owner left
 * in it, and so when it is claimed again. */
START_TEST(test_rings_records_cleared)
{
	struct shmpool *pool = rings_pool("recs", "2", 8, 0), *other;
	struct shmpool_cache *c = shmpool_default_cache(pool);
	int slot = shmpool_cache_slot(c);
	struct seg_slot *slots;

	other = tu_attach("recs", -1);
	slots = pool_handle(other)->slots;
	ck_assert_int_eq(shmpool_cache_slot(shmpool_default_cache(other)),
		slot + 1);
	/* Left in a slot by its owner: its retirement clears it. */
	uatomic_set(cache_ring_op(c, 1), RING_OP(5, 3));
	ck_assert_int_eq(shmpool_detach(pool), 0);
	ck_assert_uint_eq(uatomic_read(&slots[slot].owner), 0);
	ck_assert_uint_eq(uatomic_read(&slots[slot].cache.ring_op), 0);
	ck_assert_int_eq(shmpool_cache_claim(other, 0, &c), 0);
	ck_assert_int_eq(shmpool_cache_slot(c), slot);
	ck_assert_uint_eq(uatomic_read(&c->ring_op), 0);
	ck_assert_int_eq(shmpool_cache_release(c), 0);
	ck_assert_int_eq(shmpool_detach(other), 0);
}
END_TEST

/* A cache's refill gathers too: a cache of 4 on rings of 3 at most. */
START_TEST(test_rings_refill)
{
	struct shmpool *pool = rings_pool("rrefill", "4", 10, 4);
	struct shmpool_cache *c = shmpool_default_cache(pool);
	void *a[2];

	ck_assert_int_eq(shmpool_get_bulk(pool, a, 2), 0);
	/* size + n = 6 from the rings, 2 of them taken. */
	ck_assert_uint_eq(shmpool_cache_len_(c), 4);
	ck_assert_uint_eq(shmpool_avail_count(pool), 8);
	ck_assert_int_eq(shmpool_put_bulk(pool, a, 2), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 6);
	ck_assert_uint_eq(rings_count(pool_handle(pool)), 4);
	ck_assert_int_eq(shmpool_detach(pool), 0);
}
END_TEST

static Suite *
cache_suite(void)
{
	Suite *s = suite_create("cache");
	TCase *tc = tcase_create("cache");

	tcase_add_test(tc, test_lifo_per_bulk);
	tcase_add_test(tc, test_refill_point);
	tcase_add_test(tc, test_flush_point);
	tcase_add_test(tc, test_bypass);
	tcase_add_test(tc, test_failed_get_changes_nothing);
	tcase_add_test(tc, test_bypass_uses_own_cache);
	tcase_add_test(tc, test_cache_size_zero);
	tcase_add_loop_test(tc, test_copy_sizes, 0, 2);
	tcase_add_test(tc, test_put_across_end);
	tcase_add_test(tc, test_one_object_no_cache);
	tcase_add_test(tc, test_bad_n_no_cache);
	tcase_add_test(tc, test_claimed_cache);
	tcase_add_test(tc, test_largest_cache);
	tcase_add_test(tc, test_flush_request);
	tcase_add_test(tc, test_flush_request_no_room);
	tcase_add_test(tc, test_release_no_room);
	suite_add_tcase(s, tc);
	tc = tcase_create("rings");
	tcase_add_test(tc, test_rings_shared_out);
	tcase_add_test(tc, test_rings_bad_count);
	tcase_add_test(tc, test_rings_cpu);
	tcase_add_test(tc, test_rings_gather);
	tcase_add_test(tc, test_rings_refill);
	tcase_add_test(tc, test_rings_records_cleared);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	/* One ring: these tests follow each object through it in order.
	 * The tests of several rings (tcase "rings") set their own. */
	setenv("SHMPOOL_RINGS", "1", 1);
	return tu_run(cache_suite());
}
