/*
 * shmpool/cache.h - per-process object cache and the inline get/put path.
 *
 * Installed because <shmpool.h> inlines the cached get/put; not for direct
 * inclusion and not an API: names here may change with the ABI version.
 */
#ifndef SHMPOOL_CACHE_H
#define SHMPOOL_CACHE_H

#ifndef SHMPOOL_H
#error "include <shmpool.h>, not <shmpool/cache.h>"
#endif

#include <errno.h>
#include <stdint.h>
#include <urcu/compiler.h>
#include <shmpool/config.h>

#define SHMPOOL_CACHE_LINE	64

/*
 * An object reference, as the ring and the caches hold it: the object's
 * offset from the start of the object area, in cache lines.  Objects are
 * cache-line aligned, so a 32-bit reference covers 256 GiB of objects and
 * turns into a pointer of the calling process with one shift and one add.
 */
#define SHMPOOL_REF_SHIFT	6

/* Largest cache a slot can have, and the threshold above which put flushes. */
#define SHMPOOL_CACHE_MAX_SIZE	4096
/* Most objects a cache holds: a refill holds up to size + n, twice the
 * largest cache, until its get takes n. */
#define SHMPOOL_CACHE_OBJS_MAX	(SHMPOOL_CACHE_MAX_SIZE * 2)
#define SHMPOOL_CACHE_FLUSHTHRESH(size)	((size) * 3 / 2)

/*
 * A cache as it lives in the segment, inside its slot.  Only the process
 * that owns the slot writes it (the daemon, once that process is gone), so
 * every word is written with plain stores.
 *
 * A hit stores one word besides the objects (it loads that word,
 * flush_req and, for a put, flushthresh): w, which holds the length and,
 * with stats, the hits' counts since they were last folded into the
 * 64-bit totals of the lines below (put_bulk, put_objs,
 * get_success_bulk):
 *
 *   bits  0..15   len, the objects in objs[0 .. len) (at most 6144 after
 *                 a call; 8192 for a moment, in a refill before its take)
 *   bits 16..31   get calls that hit
 *   bits 32..47   put calls that hit
 *   bits 48..63   objects put by hits
 *
 * so that a get of n adds 2^16 - n (a 32-bit immediate) and a put
 * n * (2^48 + 1) + 2^32, one add either way, a constant when n is.  The
 * fields are folded into the totals by every refill, every flush of a
 * cache that holds objects, and the put hit whose add takes the objects
 * put to 2^15: its add overflows as a signed number (the word's top bit
 * is set), and the hit folds the word, its own counts included, after
 * the add (shmpool_cache_fold_()): at most one fold per 2^15 objects put
 * by hits, and no test before the hit but its length's.  Only a put hit
 * sets that bit, and only the same hit sees it set.  The objects put
 * stay under 2^15 + 6144 < 2^16 (a put adds at most 6144), the put
 * calls under that (one object a call at least).
 * A get hit tests nothing: between two folds, each takes an object that
 * was in the cache after the first (at most 8192) or was put since
 * (under 2^15 + 6144), so that the get calls stay under 2^16 (static
 * assertions in cache.c).
 * The objects got by hits are not counted, they follow: every object
 * that went into the cache and did not leave it by a flush, nor is in it,
 * left it by a get.
 *
 * Readers (another process) take the totals and w between two reads of
 * seq that agree and are even; the owner makes seq odd while it changes
 * more than w (a fold, a refill, a flush), having first written in change
 * what they are all to be, so that shmpoold can finish a change its owner
 * was killed in the middle of.  While seq is even change is not read: it
 * may hold a change written down and not (yet) made.
 */
struct shmpool_cache {
	/* All that a hit reads and writes. */
	uint64_t w;			/* len and the hits' counts, above */
	uint32_t size;			/* refill target */
	uint32_t flushthresh;		/* put flushes rather than exceed this */
	/* Set by shmpoold (shmpoolctl flush): the owner empties the cache
	 * into the ring at its next get or put.  The one word of this line
	 * another process writes, and only on request. */
	uint32_t flush_req;
	uint32_t slot;			/* index of the slot holding this cache */
	/* A change of more than w (see seq), as it is to leave w and the
	 * counters it moves, written whole before seq says it has begun:
	 * shmpoold finishes it for an owner killed in the middle. */
	struct shmpool_cache_change_ {
		uint64_t w;
		uint64_t objs_adj;
		uint64_t put_bulk;
		uint64_t put_objs;
		uint64_t get_success_bulk;
	} change;

	/* What the owner is claiming to put to ring ring_op_ring, written
	 * before each claim so that shmpoold can finish the put of a
	 * process killed in the middle of it (and leave a live one's
	 * positions alone): position << 32 | count, 0 for nothing; for a
	 * get's claim a value of count 0, which covers no position (the
	 * ring's owner word is looked at after it: the library's ring.h).
	 * In the line a put past the cache counts in. */
	uint64_t ring_op __attribute__((aligned(SHMPOOL_CACHE_LINE)));
	/* Gets and puts that went to the ring whole, past the cache (none,
	 * or n above its size): each a call and a ring operation at once,
	 * counted once here; readers add them to both (get_success_bulk
	 * and get_common_pool_bulk, ...).  Those of one object through a
	 * cache of size 0 count in the _one words alone, a call and an
	 * object each, one add where the other two take two; readers add
	 * them to both words (calls and objects). */
	uint64_t put_direct_bulk;
	uint64_t put_direct_objs;
	uint64_t get_direct_bulk;
	uint64_t get_direct_objs;
	uint64_t put_direct_one;
	uint64_t get_direct_one;
	/* Odd while the owner changes more than w (see above). */
	uint32_t seq;
	uint32_t ring_op_ring;		/* the ring ring_op is for */

	/* What a refill or a flush writes besides the lines above: its
	 * ring operation; the calls that hit, folded from w (get calls,
	 * put calls and their objects); the objects that entered the
	 * cache by refills less those that left it by flushes (modulo
	 * 2^64). */
	uint64_t put_common_pool_bulk __attribute__((aligned(SHMPOOL_CACHE_LINE)));
	uint64_t put_common_pool_objs;
	uint64_t get_common_pool_bulk;
	uint64_t get_common_pool_objs;
	uint64_t put_bulk;
	uint64_t put_objs;
	uint64_t get_success_bulk;
	uint64_t objs_adj;
	/* Gets that failed, in a line of their own. */
	uint64_t get_fail_bulk __attribute__((aligned(SHMPOOL_CACHE_LINE)));
	uint64_t get_fail_objs;

	/* A stack of objects, each as its byte offset from the object
	 * area (a pointer of the owner minus one add); the top is
	 * objs[len - 1]. */
	uint64_t objs[SHMPOOL_CACHE_OBJS_MAX]
		__attribute__((aligned(SHMPOOL_CACHE_LINE)));
};

/* Every counter of struct shmpool_cache, for code that must visit them
 * all (the library's fold at release); keep it next to the struct. */
#define SHMPOOL_CACHE_COUNTERS_(X)					\
	X(put_direct_bulk) X(put_direct_objs) X(get_direct_bulk)	\
	X(get_direct_objs) X(put_direct_one) X(get_direct_one)		\
	X(put_common_pool_bulk)						\
	X(put_common_pool_objs) X(get_common_pool_bulk)		\
	X(get_common_pool_objs) X(get_fail_bulk) X(get_fail_objs)	\
	X(put_bulk) X(put_objs) X(get_success_bulk) X(objs_adj)

/* The words of a change record (struct shmpool_cache_change_), each of
 * which stands in the cache too under the same name. */
#define SHMPOOL_CACHE_CHANGE_(X)					\
	X(w) X(objs_adj) X(put_bulk) X(put_objs) X(get_success_bulk)

/* The fields of w. */
#define SHMPOOL_W_LEN_(w)	((uint32_t)(uint16_t)(w))
#define SHMPOOL_W_PUT_OBJS_(w)	((uint32_t)((w) >> 48))
#define SHMPOOL_W_GET_CALLS_(w)	((uint32_t)(uint16_t)((w) >> 16))
#define SHMPOOL_W_PUT_CALLS_(w)	((uint32_t)(uint16_t)((w) >> 32))
#if SHMPOOL_STATS
/* What a hit adds to w besides its length: a get call (a 32-bit
 * immediate with the length's part), a put call, and per object put. */
#define SHMPOOL_W_GET_CALL_	(UINT64_C(1) << 16)
#define SHMPOOL_W_PUT_CALL_	(UINT64_C(1) << 32)
#define SHMPOOL_W_PUT_OBJ_	(UINT64_C(1) << 48)
/* The fields are to be folded: the objects put reached 2^15, the top
 * bit of w (the get calls need no test, above). */
#define SHMPOOL_W_PUT_FULL_(w)	((w) >> 63)
#else
#define SHMPOOL_W_GET_CALL_	0
#define SHMPOOL_W_PUT_CALL_	0
#define SHMPOOL_W_PUT_OBJ_	0
#define SHMPOOL_W_PUT_FULL_(w)	0
#endif
#if SHMPOOL_STATS && defined(__x86_64__)
/* What a put hit of a run-time size multiplies it by (shmpool_cache_push_()):
 * the length's part and the objects put at once. */
static const uint64_t shmpool_w_put_mul_ __attribute__((unused)) =
	SHMPOOL_W_PUT_OBJ_ + 1;
#endif
/* Whether a put of n fits under the threshold ft after len, made in 64
 * bits, so that n == 0 (n - 1 is 2^32 - 1) does not. */
#define SHMPOOL_PUT_FITS_(n, len, ft)	((uint64_t)((n) - 1) + (len) < (ft))

/* The objects in the cache, objs[0 .. len). */
static inline uint32_t
shmpool_cache_len_(const struct shmpool_cache *cache)
{
	return SHMPOOL_W_LEN_(cache->w);
}

/*
 * The part of an attached pool that the inline path reads.  The library
 * allocates it inside a larger private structure; never allocate or copy one.
 */
struct shmpool {
	char *objbase;			/* the object area in this process */
	struct shmpool_cache *cache;	/* this attachment's default cache,
					   never NULL */
	/* The rest of a get or put through the default cache that the
	 * inline path did not make: the library's, chosen for the default
	 * cache's size when attached (for a cache of size 0, the ring
	 * alone, with none of shmpool_generic_get_slow_()'s tests of the
	 * cache).  In the process's own memory, as is the whole struct. */
	int (*get_slow_)(struct shmpool *pool, void **objs, unsigned int n,
		struct shmpool_cache *cache);
	int (*put_slow_)(struct shmpool *pool, void * const *objs,
		unsigned int n, struct shmpool_cache *cache);
};

#if SHMPOOL_STATS
#define SHMPOOL_STAT_ADD(cache, name, n)	((cache)->name += (n))
#else
#define SHMPOOL_STAT_ADD(cache, name, n)	do {} while (0)
#endif

/*
 * The get/put path: always inline, however large the caller (a compiler
 * may otherwise stop inlining in a large unit, and a call costs a hit as
 * much as the hit).
 */
#define SHMPOOL_INLINE_	static inline __attribute__((always_inline))

/*
 * Out-of-line remainders of the get/put path (refill, flush, no cache,
 * bad arguments), for any cache: those of shmpool_generic_get() and
 * shmpool_generic_put() (the calls through the default cache take
 * struct shmpool's pointers).  Exported for the inline code only; not for
 * direct use.  The inline code tests pool and objs itself: these take
 * them as not NULL.  Called through the GOT entry, as -fno-plt would,
 * rather than a PLT stub's jump: without a cache every get and put of
 * those calls is such a call.
 */
#if defined(__has_attribute)
#if __has_attribute(noplt)
#define SHMPOOL_NOPLT_	__attribute__((noplt))
#endif
#endif
#ifndef SHMPOOL_NOPLT_
#define SHMPOOL_NOPLT_
#endif
SHMPOOL_API SHMPOOL_NOPLT_ int shmpool_generic_get_slow_(struct shmpool *pool,
		void **objs, unsigned int n, struct shmpool_cache *cache);
SHMPOOL_API SHMPOOL_NOPLT_ int shmpool_generic_put_slow_(struct shmpool *pool,
		void * const *objs, unsigned int n, struct shmpool_cache *cache);
/* The hits' counts of cache, which a put hit took to the fold (struct
 * shmpool_cache), folded; in every build, doing nothing without stats.
 * For the inline put only. */
SHMPOOL_API SHMPOOL_NOPLT_ void shmpool_cache_fold_(
		struct shmpool_cache *cache);

static inline void *
shmpool_ref_to_ptr_(const struct shmpool *pool, uint32_t ref)
{
	return pool->objbase + ((uintptr_t)ref << SHMPOOL_REF_SHIFT);
}

static inline uint32_t
shmpool_ptr_to_ref_(const struct shmpool *pool, const void *obj)
{
	return (uint32_t)(((uintptr_t)obj - (uintptr_t)pool->objbase)
			>> SHMPOOL_REF_SHIFT);
}

/*
 * The copies of a hit.  From SHMPOOL_COPY_CALL_MIN_ objects on they use
 * the CPU's widest vectors: AVX2 in line, or a call to the library
 * (below).  Under that they go in 16-byte vectors:
 * from 8 objects, eight a turn and the last eight placed to end exactly
 * at n, overlapping what was copied before them (copying an object twice
 * writes the same value); under 8, no loop: objects 0-1 and the last
 * two, and from 5 objects also 2-3 and the two before the last two.  Few
 * branches, and the same ones whatever n, as a size the branch predictor
 * cannot learn would otherwise cost one mispredicted branch per loop and
 * tail (shmpool-perf --random, cache 512: 0.83 of DPDK's rate with a
 * plain loop vectorised and unrolled by gcc; random 1..4, 155 -> 229 M
 * objects/s without the loop of pairs: docs/PERFORMANCE.md).  With a
 * constant n the compiler decides those branches and keeps only the
 * copies: at 4, two 16-byte loads, adds and stores, where the plain loop
 * it unrolled became scalar and half-vector moves (docs/PERFORMANCE.md,
 * commit 3b009a1: bulk 4, 1092 -> 1280 M objects/s).
 */
/* A constant n from this up takes the long copy (AVX2 in line or the
 * call), with none of the run-time size's tests; where there is none it
 * goes as a run-time one (the loops made once for every size): no code
 * is made for a large size alone.  Equal to SHMPOOL_COPY_CALL_MIN_, so
 * that a constant size either stays with the short copies or takes the
 * long one. */
#define SHMPOOL_COPY_CONST_MAX_	32

#if defined(__GNUC__) && UINTPTR_MAX == UINT64_MAX
#define SHMPOOL_VCOPY_OK_	1
/* x is no longer a constant to the compiler (see SHMPOOL_COPY_CONST_MAX_;
 * and no bounds warning for branches a large constant never takes). */
#define SHMPOOL_OPAQUE_(x)	__asm__("" : "+r"(x))
typedef uint64_t shmpool_v2_ __attribute__((vector_size(16), aligned(8),
	may_alias));
typedef uint64_t shmpool_u64_ __attribute__((may_alias));
#define SHMPOOL_VCOPY_(d, s, i, op, b) \
	(*(shmpool_v2_ *)((d) + (i)) = *(const shmpool_v2_ *)((s) + (i)) op (b))
#define SHMPOOL_VCOPY8_(d, s, op, b) do {				\
	SHMPOOL_VCOPY_(d, s, 0, op, b);					\
	SHMPOOL_VCOPY_(d, s, 2, op, b);					\
	SHMPOOL_VCOPY_(d, s, 4, op, b);					\
	SHMPOOL_VCOPY_(d, s, 6, op, b);					\
} while (0)
/* dst[i] = src[i] op b0 for i < n (n >= 2; SHMPOOL_HIT_COPY_ copies one
 * object itself), 64-bit words both. */
#define SHMPOOL_COPY_(dst, src, n, op, b0) do {				\
	shmpool_u64_ *d_ = (dst);					\
	const shmpool_u64_ *s_ = (src), *last_;				\
	const shmpool_v2_ b_ = { (b0), (b0) };				\
									\
	if ((n) < 8) {							\
		/* Objects 0-1 and n-2..n-1; from 5, also 2-3 and	\
		 * n-4..n-3: all of them, overlapping, no loop. */	\
		SHMPOOL_VCOPY_(d_, s_, 0, op, b_);			\
		if ((n) > 4) {						\
			SHMPOOL_VCOPY_(d_, s_, 2, op, b_);		\
			SHMPOOL_VCOPY_(d_, s_, (n) - 4, op, b_);	\
		}							\
		SHMPOOL_VCOPY_(d_, s_, (n) - 2, op, b_);		\
		break;							\
	}								\
	last_ = (src) + ((n) & ~7U);					\
	for (; s_ < last_; s_ += 8, d_ += 8)				\
		SHMPOOL_VCOPY8_(d_, s_, op, b_);			\
	if ((n) & 7)							\
		SHMPOOL_VCOPY8_((dst) + (n) - 8, (src) + (n) - 8, op, b_); \
} while (0)
/* From this many objects on, a copy (of a run-time size, or a constant
 * from SHMPOOL_COPY_CONST_MAX_ up) uses the CPU's widest vectors: on a
 * CPU with AVX2, 32-byte vectors in line (SHMPOOL_COPY_AVX2_, below),
 * twice the bytes per store of the 16-byte copy above; elsewhere, and in
 * the large code model, a call to the library's copy (copy-x86_64.S),
 * worth it from 32 objects on (at 16 the call cost more than it saved).
 * Where the C library picks functions when it loads one (glibc's ifunc),
 * on x86-64. */
#if defined(__x86_64__) && defined(__GLIBC__)
#define SHMPOOL_COPY_CALL_	1
#define SHMPOOL_COPY_CALL_MIN_	32
/* dst[i] = src[i] + b, and - b, for i < n; n >= SHMPOOL_COPY_CALL_MIN_. */
SHMPOOL_API void shmpool_copy_add_(uint64_t *dst, const uint64_t *src,
		unsigned int n, uint64_t b);
SHMPOOL_API void shmpool_copy_sub_(uint64_t *dst, const uint64_t *src,
		unsigned int n, uint64_t b);
/*
 * Where the hit calls the library's copy (no AVX2, SHMPOOL_COPY_WIDE_):
 * called as a C function, the copy takes every caller-saved register, and
 * a loop of gets and puts keeps its own in them: the caller saved and
 * restored two or three at each call (and a put hit, which keeps its w
 * through the copy, would load it again after).  So the copies keep a
 * convention of their own (the library's copy-x86_64.S): arguments in
 * %rdi, %rsi, %edx, %rcx, which they clobber, with the vector registers
 * (their upper halves zeroed too, so that code built for AVX, a
 * function's target attribute or an inlining across units included,
 * keeps nothing there) and the flags; they keep every other general
 * register.  The call goes through
 * the GOT entry, filled when the program is loaded (a call through the
 * PLT may meet the dynamic linker's lazy binding, which takes other
 * registers), and steps over the red zone, which the caller may be using.
 * A debugger that unwinds from inside the copy, where the caller has no
 * frame pointer, finds the caller's caller 128 bytes off (no CFI says
 * where the stack stands between the steps).  For the large code model
 * (no 32-bit reach), a plain call.
 */
#if !defined(__code_model_large__)
#define SHMPOOL_COPY_ASM_	1
#endif
#endif
#else
#define SHMPOOL_VCOPY_OK_	0
#endif
#ifndef SHMPOOL_COPY_CALL_
#define SHMPOOL_COPY_CALL_	0
#define SHMPOOL_COPY_CALL_MIN_	0
#endif
#ifndef SHMPOOL_COPY_ASM_
#define SHMPOOL_COPY_ASM_	0
#endif

/*
 * dst[i] = src[i] op b for i < n (n >= 1), 64-bit words both; call is
 * the library's copy of that op, vneg what the inline AVX2 copy does to
 * b for it (SHMPOOL_VNEG_ADD_ or _SUB_).  A constant n below
 * SHMPOOL_COPY_CONST_MAX_ keeps its value, so that the compiler decides
 * the copy's branches.
 */
#if SHMPOOL_VCOPY_OK_
#if SHMPOOL_COPY_ASM_
/*
 * Whether the hit may copy with AVX2 instructions itself: the CPU has
 * them and the system keeps their registers, as the compiler's runtime
 * found at startup (one test of a flag; before its constructors have run,
 * no, and the hit calls the library's copy); always, in code built for
 * AVX2.  Not for definition by programs: the tests define it to take the
 * call where the CPU has AVX2.
 */
#ifndef SHMPOOL_COPY_WIDE_
#ifdef __AVX2__
#define SHMPOOL_COPY_WIDE_	1
#else
#define SHMPOOL_COPY_WIDE_	__builtin_cpu_supports("avx2")
#endif
#endif
/* dst[i] = src[i] + b for i < m (m >= 32), in 32-byte vectors: 32
 * objects a turn, the last turn placed to end at m, overlapping the one
 * before (an object copied twice gets the same value); what
 * copy-x86_64.S's AVX2 copy does, in line: no call, no stack, and only
 * the registers the compiler gives it.  vneg turns b into -b in the
 * vector (SHMPOOL_VNEG_SUB_), for a subtract.  The upper halves of the
 * vector registers are zeroed after, as code built without AVX needs
 * (and so the asm clobbers every vector register). */
#define SHMPOOL_VNEG_ADD_	""
#define SHMPOOL_VNEG_SUB_						\
	"vpxor %%xmm1, %%xmm1, %%xmm1\n\t"				\
	"vpsubq %%ymm0, %%ymm1, %%ymm0\n\t"
#define SHMPOOL_V4_(off)						\
	"vpaddq " #off "(%[s]), %%ymm0, %%ymm1\n\t"			\
	"vmovdqu %%ymm1, " #off "(%[d],%[s])\n\t"
#define SHMPOOL_COPY_AVX2_(dst, src, m, b, vneg) do {			\
	uint64_t dv_ = (uint64_t)(uintptr_t)(dst);			\
	uint64_t sv_ = (uint64_t)(uintptr_t)(src);			\
	uint64_t nv_ = (m);						\
									\
	__asm__ volatile("vmovq %[bq], %%xmm0\n\t"			\
		"vpbroadcastq %%xmm0, %%ymm0\n\t"			\
		vneg							\
		"lea -256(%[s],%[n],8), %[n]\n\t"			\
		"sub %[s], %[d]\n"					\
		"1:\n\t"						\
		SHMPOOL_V4_(0) SHMPOOL_V4_(32)				\
		SHMPOOL_V4_(64) SHMPOOL_V4_(96)				\
		SHMPOOL_V4_(128) SHMPOOL_V4_(160)			\
		SHMPOOL_V4_(192) SHMPOOL_V4_(224)			\
		"cmp %[n], %[s]\n\t"					\
		"jae 2f\n\t"						\
		"add $256, %[s]\n\t"					\
		"cmp %[n], %[s]\n\t"					\
		"jbe 1b\n\t"						\
		"mov %[n], %[s]\n\t"					\
		"jmp 1b\n"						\
		"2:\n\t"						\
		"vzeroupper"						\
		: [d] "+r" (dv_), [s] "+r" (sv_), [n] "+r" (nv_)	\
		: [bq] "r" ((uint64_t)(b))				\
		: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",	\
		  "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",	\
		  "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory");	\
} while (0)
/* Without AVX2, the library's copy (its baseline build there), called
 * with the convention above; the arguments are worked out before the
 * registers are bound. */
#define SHMPOOL_COPY_ASM_CALL_(dst, src, m, call, b) do {		\
	uint64_t *dv_ = (uint64_t *)(dst);				\
	const uint64_t *sv_ = (const uint64_t *)(src);			\
	uint64_t nv_ = (m), bv_ = (b);					\
	register uint64_t *d_ __asm__("rdi") = dv_;			\
	register const uint64_t *s_ __asm__("rsi") = sv_;		\
	register uint64_t n_ __asm__("rdx") = nv_;			\
	register uint64_t b_ __asm__("rcx") = bv_;			\
									\
	__asm__ volatile("add $-128, %%rsp\n\t"				\
		"call *" #call "@GOTPCREL(%%rip)\n\t"			\
		"sub $-128, %%rsp"					\
		: "+r" (d_), "+r" (s_), "+r" (n_), "+r" (b_)		\
		:							\
		: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",	\
		  "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",	\
		  "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory");	\
} while (0)
/* Marked unlikely, as gcc takes a plain call to be: left to itself it
 * laid the asm call in line and the small copies out of line (cache 512,
 * bulk 4 at 0.84 of the rate: docs/PERFORMANCE.md, What each change
 * bought). */
#define SHMPOOL_COPY_CALL_IF_(dst, src, m, call, b, vneg)		\
	if (__builtin_expect((m) >= SHMPOOL_COPY_CALL_MIN_, 0)) {	\
		if (__builtin_expect(SHMPOOL_COPY_WIDE_, 1))		\
			SHMPOOL_COPY_AVX2_(dst, src, m, b, vneg);	\
		else							\
			SHMPOOL_COPY_ASM_CALL_(dst, src, m, call, b);	\
		break;							\
	}
#elif SHMPOOL_COPY_CALL_
#define SHMPOOL_COPY_CALL_IF_(dst, src, m, call, b, vneg)		\
	if ((m) >= SHMPOOL_COPY_CALL_MIN_) {				\
		call((uint64_t *)(dst), (const uint64_t *)(src), (m), (b)); \
		break;							\
	}
#else
#define SHMPOOL_COPY_CALL_IF_(dst, src, m, call, b, vneg)
#endif
#define SHMPOOL_HIT_COPY_(dst, src, n, op, call, vneg, b) do {		\
	unsigned int m_ = (n);						\
									\
	/* A large constant stays one where it takes the long copy, so \
	 * that the tests below fold to that copy alone. */		\
	if (!__builtin_constant_p(n) ||					\
	    (!SHMPOOL_COPY_CALL_ && (n) >= SHMPOOL_COPY_CONST_MAX_))	\
		SHMPOOL_OPAQUE_(m_);					\
	SHMPOOL_HIT_COPY_M_(dst, src, m_, op, call, vneg, b);		\
} while (0)
/* The same, for a size m_ already hidden from the compiler. */
#define SHMPOOL_HIT_COPY_M_(dst, src, m_, op, call, vneg, b) do {	\
	/* One object first: the commonest size, before the call's	\
	 * test, which it would otherwise pass through too. */		\
	if (m_ == 1) {							\
		*(shmpool_u64_ *)(dst) =				\
			*(const shmpool_u64_ *)(src) op (b);		\
		break;							\
	}								\
	SHMPOOL_COPY_CALL_IF_(dst, src, m_, call, b, vneg)		\
	SHMPOOL_COPY_((shmpool_u64_ *)(dst), (const shmpool_u64_ *)(src), \
		m_, op, (b));						\
} while (0)
#else
#define SHMPOOL_HIT_COPY_(dst, src, n, op, call, vneg, b) do {	\
	unsigned int i_;						\
									\
	for (i_ = 0; i_ < (n); i_++)					\
		((uint64_t *)(dst))[i_] =				\
			((const uint64_t *)(src))[i_] op (b);		\
} while (0)
#endif

/* objs[i] = base + offs[i], for i < n (n >= 1). */
SHMPOOL_INLINE_ void
shmpool_offs_to_ptrs_(void **objs, const uint64_t *offs, unsigned int n,
		char *base)
{
	SHMPOOL_HIT_COPY_(objs, offs, n, +, shmpool_copy_add_,
		SHMPOOL_VNEG_ADD_,
		(uint64_t)(uintptr_t)base);
}

/* offs[i] = objs[i] - base, for i < n (n >= 1). */
SHMPOOL_INLINE_ void
shmpool_ptrs_to_offs_(uint64_t *offs, void * const *objs, unsigned int n,
		uintptr_t base)
{
	SHMPOOL_HIT_COPY_(offs, objs, n, -, shmpool_copy_sub_,
		SHMPOOL_VNEG_SUB_,
		(uint64_t)base);
}

/* The top n objects of a cache whose w is w (n <= its length) to objs, in
 * order, and counted: the whole of a hit.  objbase is passed by value:
 * stores to objs[] may alias pool->objbase, and reloading it each time
 * would stop the copy from vectorising; so is w.  w is stored first, so
 * that it is not kept through the copy: the objects are the caller's
 * from then on, as once the get has returned (a process killed in
 * between takes them with it, libshmpool(3)). */
SHMPOOL_INLINE_ void
shmpool_cache_take_(struct shmpool *pool, void **objs, unsigned int n,
		struct shmpool_cache *cache, uint64_t w)
{
	/* What w loses: n objects less one get call. */
	uint64_t d = (uint64_t)n - SHMPOOL_W_GET_CALL_;

#if SHMPOOL_STATS
	/* For a run-time n, d is hidden from gcc, which then keeps it in a
	 * register through a loop of gets.  Otherwise it builds it again at
	 * every get (a copy of n, the constant, a subtract): three
	 * instructions more per hit (docs/PERFORMANCE.md).  On x86-64 the
	 * asm that hides it makes it too, one lea from n zero-extended,
	 * where gcc copied n and subtracted: one instruction less a get
	 * whose size changes at each call (random sizes).  A constant d is
	 * one immediate anyway. */
	if (!__builtin_constant_p(n)) {
#if defined(__x86_64__)
		__asm__("lea %c[c](%q[n]), %[d]" : [d] "=r" (d)
			: [n] "r" ((uint64_t)n),
			  [c] "i" (-(int64_t)SHMPOOL_W_GET_CALL_));
#else
		__asm__("" : "+r" (d));
#endif
	}
#endif
	cache->w = w - d;
	shmpool_offs_to_ptrs_(objs, &cache->objs[SHMPOOL_W_LEN_(w) - n], n,
		pool->objbase);
}

/* n objects of objs pushed on a cache whose w is w (they fit), and
 * counted.  The objects before the length, so that a process killed in
 * between leaves its cache as it was (the compiler barrier: the two do
 * not alias, and gcc would otherwise order them as it likes; an asm call
 * of SHMPOOL_COPY_ASM_ is one too).  w is the cache's w as the caller
 * read it (a hit's, the one it tested; the owner alone writes w, so it
 * is still the word's), added to in a register and stored.  An add to
 * memory instead (load, add and store in one instruction, a second load
 * of a word the test had just loaded) made the loops of hits of one to
 * four objects through a cache up to a third slower on an Intel Xeon
 * (docs/PERFORMANCE.md, What each change bought; not timed on the AMD
 * machines, where an add to memory had read faster).  With stats, the
 * add's overflow says that the objects put reached 2^15 (struct
 * shmpool_cache), and the hit folds them, after its store. */
SHMPOOL_INLINE_ void
shmpool_cache_push_(struct shmpool *pool, void * const *objs, unsigned int n,
		struct shmpool_cache *cache, uint64_t w)
{
	uint32_t len = SHMPOOL_W_LEN_(w);
	/* n * (2^48 + 1) + 2^32: the length, the objects put and the call;
	 * its low 32 bits are n. */
	uint64_t add = (uint64_t)n * (SHMPOOL_W_PUT_OBJ_ + 1) +
		SHMPOOL_W_PUT_CALL_;

#if SHMPOOL_STATS && SHMPOOL_VCOPY_OK_
	/* For a run-time n, the copy takes its size from the addend, which
	 * is hidden from the compiler in its place (SHMPOOL_HIT_COPY_ hides
	 * n): a loop of puts then holds one value for both, as it holds n
	 * alone without stats, where a copy of n and the addend took two
	 * registers, and a loop whose every put calls the library (no
	 * cache) saved and restored one of them around each call.  On
	 * x86-64 the addend is made by the asm that hides it: n times
	 * 2^48 + 1, read from memory (a multiply takes no 64-bit
	 * immediate), and the call's bit set, two instructions after the
	 * copy of n where gcc took five (a second copy, a shift, an add,
	 * and 2^32 loaded and added): what a put whose size changes at each
	 * call pays for it (random sizes). */
	if (!__builtin_constant_p(n)) {
#if defined(__x86_64__)
		add = n;
		__asm__("imulq %[k], %[a]\n\tbtsq %[b], %[a]"
			: [a] "+r" (add)
			: [k] "m" (shmpool_w_put_mul_),
			  [b] "i" (__builtin_ctzll(SHMPOOL_W_PUT_CALL_)));
#else
		SHMPOOL_OPAQUE_(add);
#endif
		SHMPOOL_HIT_COPY_M_(&cache->objs[len], objs, (uint32_t)add, -,
			shmpool_copy_sub_, SHMPOOL_VNEG_SUB_,
			(uint64_t)(uintptr_t)pool->objbase);
	} else
#endif
		shmpool_ptrs_to_offs_(&cache->objs[len], objs, n,
			(uintptr_t)pool->objbase);
	cmm_barrier();
#if SHMPOOL_STATS && defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
	{
		unsigned char of;

		__asm__("addq %[a], %[w]" : [w] "+r" (w), "=@cco" (of)
			: [a] "r" (add));
		cache->w = w;
		if (caa_unlikely(of))
			shmpool_cache_fold_(cache);
	}
#elif SHMPOOL_STATS
	w += add;
	cache->w = w;
	if (caa_unlikely(SHMPOOL_W_PUT_FULL_(w)))
		shmpool_cache_fold_(cache);
#else
	cache->w = w + add;
#endif
}

/*
 * Cache hit: the top n objects, copied in order, so that a put of the
 * same objects in the same order restores the cache exactly; 1 if made.
 * The unsigned "n - 1 < len" also sends n == 0 to the slow path, which
 * refuses it.  cache, pool and objs are not NULL.
 */
SHMPOOL_INLINE_ int
shmpool_hit_get_(struct shmpool *pool, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	uint64_t w = cache->w;

	if (caa_likely(n - 1 < SHMPOOL_W_LEN_(w) && !cache->flush_req)) {
		shmpool_cache_take_(pool, objs, n, cache, w);
		return 1;
	}
	return 0;
}

/*
 * Cache hit: push the n objects in order while the cache stays at or
 * under its flush threshold; 1 if made.  n == 0 goes to the slow path
 * (SHMPOOL_PUT_FITS_).  w is loaded whole, once, and kept for the push's
 * add (shmpool_cache_push_()); the length is taken from it in a
 * register, not read alone: a load of its 16 bits, right after the get
 * that stored w whole, made the loops of gets and puts of one to four
 * objects through a cache 10% to 25% slower on an AMD EPYC of family 25,
 * though it takes an instruction less (docs/PERFORMANCE.md, What each
 * change bought).
 */
SHMPOOL_INLINE_ int
shmpool_hit_put_(struct shmpool *pool, void * const *objs, unsigned int n,
		struct shmpool_cache *cache)
{
	uint64_t w = cache->w;

	if (caa_likely(SHMPOOL_PUT_FITS_(n, SHMPOOL_W_LEN_(w),
			cache->flushthresh) && !cache->flush_req)) {
		shmpool_cache_push_(pool, objs, n, cache, w);
		return 1;
	}
	return 0;
}

/*
 * pool and objs tested here, once: the slow path (the whole of a get or
 * put without a cache) then tests neither, and a NULL costs no call.
 */
SHMPOOL_INLINE_ int
_shmpool_generic_get(struct shmpool *pool, void **objs, unsigned int n,
		struct shmpool_cache *cache)
{
	if (caa_unlikely(pool == NULL || objs == NULL))
		return -EINVAL;
	if (caa_likely(cache != NULL && shmpool_hit_get_(pool, objs, n, cache)))
		return 0;
	return shmpool_generic_get_slow_(pool, objs, n, cache);
}

SHMPOOL_INLINE_ int
_shmpool_generic_put(struct shmpool *pool, void * const *objs,
		unsigned int n, struct shmpool_cache *cache)
{
	if (caa_unlikely(pool == NULL || objs == NULL))
		return -EINVAL;
	if (caa_likely(cache != NULL && shmpool_hit_put_(pool, objs, n, cache)))
		return 0;
	return shmpool_generic_put_slow_(pool, objs, n, cache);
}

/* The default cache of pool (never NULL once attached); NULL for a NULL
 * pool. */
SHMPOOL_INLINE_ struct shmpool_cache *
shmpool_default_cache_(const struct shmpool *pool)
{
	return caa_likely(pool != NULL) ? pool->cache : NULL;
}

/*
 * The calls through the default cache: an attached pool always has one
 * (pool->cache is set before shmpool_attach() returns it).
 */
SHMPOOL_INLINE_ int
_shmpool_get_bulk(struct shmpool *pool, void **objs, unsigned int n)
{
	if (caa_unlikely(pool == NULL || objs == NULL))
		return -EINVAL;
	if (caa_likely(shmpool_hit_get_(pool, objs, n, pool->cache)))
		return 0;
	return pool->get_slow_(pool, objs, n, pool->cache);
}

SHMPOOL_INLINE_ int
_shmpool_put_bulk(struct shmpool *pool, void * const *objs, unsigned int n)
{
	if (caa_unlikely(pool == NULL || objs == NULL))
		return -EINVAL;
	if (caa_likely(shmpool_hit_put_(pool, objs, n, pool->cache)))
		return 0;
	return pool->put_slow_(pool, objs, n, pool->cache);
}

SHMPOOL_INLINE_ int
_shmpool_get(struct shmpool *pool, void **obj)
{
	return _shmpool_get_bulk(pool, obj, 1);
}

SHMPOOL_INLINE_ int
_shmpool_put(struct shmpool *pool, void *obj)
{
	return _shmpool_put_bulk(pool, &obj, 1);
}

#endif /* SHMPOOL_CACHE_H */
