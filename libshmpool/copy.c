/*
 * copy.c - the choice of the long copies of a cache hit, out of line so
 * that they can use the widest vectors the CPU has.
 *
 * The inline get and put are compiled into the application, for the
 * instruction set it was built for (often the x86-64 baseline: 16-byte
 * vectors).  A copy of many objects is limited by the stores, one a cycle:
 * 32-byte vectors halve it.  So from SHMPOOL_COPY_CALL_MIN_ objects on
 * the inline code copies with AVX2 itself where the CPU has it, and
 * otherwise calls these (check_cache's test_copy_sizes makes it call
 * them on a CPU with AVX2 too); they are resolved once, when the library
 * is loaded, to the AVX2 build where the CPU has AVX2.  Both builds are
 * written in assembly (copy-x86_64.S), for the calling convention the
 * inline code calls them with; this file holds the ifunc resolvers.
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

/* The builds themselves are in copy-x86_64.S. */
COPY_IFUNC_RESOLVE(copy_add, copy_fn)
COPY_IFUNC_RESOLVE(copy_sub, copy_fn)

copy_fn shmpool_copy_add_ __attribute__((ifunc("copy_add_resolve")));
copy_fn shmpool_copy_sub_ __attribute__((ifunc("copy_sub_resolve")));
#endif
