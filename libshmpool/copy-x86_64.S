/*
 * copy-x86_64.S - the long copies of a cache hit (copy.c picks one),
 * written out so that the registers they touch are known.
 *
 * The inline get and put call them from the middle of the caller's loop
 * (shmpool/cache.h, SHMPOOL_COPY_ASM_) on a CPU without AVX2, and before
 * the compiler's runtime has looked at the CPU (with AVX2, the hit
 * copies in line, the loop of copy_add_avx2 below: SHMPOOL_COPY_AVX2_);
 * code built for the large code model calls them as C functions.
 * Called as a C function, every caller-saved register is lost, and a
 * loop of gets keeps its pool, its bounds and its counts in them: each
 * call saved and restored two or three of them (and a put hit, which
 * keeps its cache's w through the copy, would load it again).  So the
 * inline code calls
 * them with a convention of its own, which these keep:
 *
 *   in:        %rdi dst, %rsi src, %edx n (n >= 32), %rcx b
 *   does:      dst[i] = src[i] + b (copy_add_*) or - b (copy_sub_*),
 *              for i < n, 64-bit words both
 *   clobbers:  those four, the vector registers (these use %xmm0 and
 *              %xmm1, and the AVX2 builds zero the upper halves of all
 *              of them: vzeroupper) and the flags
 *   keeps:     every other general register; no stack beyond the return
 *              address, and no alignment of it
 *
 * Its clobbers are a subset of the C convention's, so that C code may
 * call them as ordinary functions too (the tests do).  The inline code
 * calls them through its GOT entry, which the dynamic linker fills when
 * it loads the program, so that no lazy binding, which takes %r10 and
 * %r11, comes between; nothing may interpose these two symbols (an
 * LD_PRELOAD, an audit library's symbol binding) with C functions.
 *
 * Each copies 32 objects a turn and places its last 32 to end exactly at
 * n, overlapping the turn before (copying an object twice writes the same
 * value): a copy of 32 is one turn.  A subtract adds 0 - b, the same modulo
 * 2^64.
 */
#if defined(__x86_64__) && !defined(__ILP32__) && defined(__ELF__)

#ifdef __CET__
#include <cet.h>
#else
#define _CET_ENDBR
#endif

/* Set up a turn loop: %rdx the source of the last turn, %rdi dst - src
 * (movl: the upper half of %rdx is not n's in a C call). */
#define TURNS_SETUP							\
	movl	%edx, %edx;						\
	leaq	-256(%rsi,%rdx,8), %rdx;				\
	subq	%rsi, %rdi

/* After a turn at %rsi: the next one, the last one, or out to 2f. */
#define TURN_NEXT							\
	cmpq	%rdx, %rsi;						\
	jae	2f;							\
	addq	$256, %rsi;						\
	cmpq	%rdx, %rsi;						\
	jbe	1b;							\
	movq	%rdx, %rsi;						\
	jmp	1b

#define FUNC(name)							\
	.globl	name;							\
	.hidden	name;							\
	.type	name, @function;					\
name:									\
	_CET_ENDBR

	.text

/* AVX2: eight 32-byte vectors a turn, each added straight from memory. */
#define V4(off)								\
	vpaddq	off(%rsi), %ymm0, %ymm1;				\
	vmovdqu	%ymm1, off(%rdi,%rsi)

	.p2align 5
	.cfi_startproc
FUNC(copy_sub_avx2)
	negq	%rcx
FUNC(copy_add_avx2)
	vmovq	%rcx, %xmm0
	vpbroadcastq %xmm0, %ymm0
	TURNS_SETUP
1:	V4(0); V4(32); V4(64); V4(96)
	V4(128); V4(160); V4(192); V4(224)
	TURN_NEXT
2:	vzeroupper
	ret
	.cfi_endproc
	.size	copy_add_avx2, .-copy_add_avx2
	.size	copy_sub_avx2, .-copy_sub_avx2

/* The baseline (SSE2): sixteen 16-byte vectors a turn. */
#define V2(off)								\
	movdqu	off(%rsi), %xmm1;					\
	paddq	%xmm0, %xmm1;						\
	movdqu	%xmm1, off(%rdi,%rsi)

	.p2align 5
	.cfi_startproc
FUNC(copy_sub_base)
	negq	%rcx
FUNC(copy_add_base)
	movq	%rcx, %xmm0
	punpcklqdq %xmm0, %xmm0
	TURNS_SETUP
1:	V2(0); V2(16); V2(32); V2(48); V2(64); V2(80); V2(96); V2(112)
	V2(128); V2(144); V2(160); V2(176); V2(192); V2(208); V2(224)
	V2(240)
	TURN_NEXT
2:	ret
	.cfi_endproc
	.size	copy_add_base, .-copy_add_base
	.size	copy_sub_base, .-copy_sub_base

#endif

	.section .note.GNU-stack, "", @progbits
