/*
 * copy.c - the long copies of a cache hit, out of line so that they can
 * use the widest vectors the CPU has.
 *
 * The inline get and put are compiled into the application, for the
 * instruction set it was built for (often the x86-64 baseline: 16-byte
 * vectors).  A copy of many objects is limited by the stores, one a cycle:
 * 32-byte vectors halve it.  So from SHMPOOL_COPY_CALL_MIN_ objects on the
 * inline code calls these, which are resolved once, when the library is
 * loaded, to the AVX2 build where the CPU has AVX2.
 */
#include "config.h"

#include <stdint.h>

#include "segment-internal.h"

#if SHMPOOL_COPY_CALL_
COPY_RESOLVER int
copy_cpu_has_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
}

typedef uint64_t copy_v4 __attribute__((vector_size(32), aligned(8),
	may_alias));

/*
 * dst[i] = src[i] op b for i < n (n >= SHMPOOL_COPY_CALL_MIN_, 32), eight
 * 32-byte vectors a turn, the last eight placed to end exactly at n (see
 * SHMPOOL_COPY_): a copy of 32 is one turn and no tail (at sixteen a turn
 * it took two, 4 instructions more a call, and one of 128 eight).
 */
#define COPY_V4_(d, s, i, op, b) \
	(*(copy_v4 *)((d) + (i)) = *(const copy_v4 *)((s) + (i)) op (b))
#define COPY_V32_(d, s, op, b) do {					\
	COPY_V4_(d, s, 0, op, b);					\
	COPY_V4_(d, s, 4, op, b);					\
	COPY_V4_(d, s, 8, op, b);					\
	COPY_V4_(d, s, 12, op, b);					\
	COPY_V4_(d, s, 16, op, b);					\
	COPY_V4_(d, s, 20, op, b);					\
	COPY_V4_(d, s, 24, op, b);					\
	COPY_V4_(d, s, 28, op, b);					\
} while (0)
#define COPY_WIDE_(dst, src, n, op, b0) do {				\
	const copy_v4 b_ = { (b0), (b0), (b0), (b0) };			\
	const shmpool_u64_ *s_ = (src), *last_ = (src) + ((n) & ~31U);	\
	shmpool_u64_ *d_ = (dst);					\
									\
	for (; s_ < last_; s_ += 32, d_ += 32)				\
		COPY_V32_(d_, s_, op, b_);				\
	if ((n) & 31)							\
		COPY_V32_((dst) + (n) - 32, (src) + (n) - 32, op, b_);	\
} while (0)

/* The four builds: dst[i] = src[i] + b and - b, for AVX2 and for the
 * baseline (the inline code's own 16-byte copy).  The AVX2 subtract adds
 * 0 - b (the same modulo 2^64): an add takes src's vector straight from
 * memory, where a subtract from it loads it first, one instruction more
 * a vector. */
#define COPY_DEFINE(name, attr, op, COPY, b0)				\
void attr								\
name(uint64_t *dst, const uint64_t *src, unsigned int n, uint64_t b)	\
{									\
	COPY(dst, src, n, op, (b0));					\
}
COPY_DEFINE(copy_add_avx2, __attribute__((target("avx2"))), +, COPY_WIDE_,
	b)
COPY_DEFINE(copy_sub_avx2, __attribute__((target("avx2"))), +, COPY_WIDE_,
	0 - b)
COPY_DEFINE(copy_add_base, , +, SHMPOOL_COPY_, b)
COPY_DEFINE(copy_sub_base, , -, SHMPOOL_COPY_, b)

COPY_IFUNC_RESOLVE(copy_add, copy_fn)
COPY_IFUNC_RESOLVE(copy_sub, copy_fn)

copy_fn shmpool_copy_add_ __attribute__((ifunc("copy_add_resolve")));
copy_fn shmpool_copy_sub_ __attribute__((ifunc("copy_sub_resolve")));
#endif
