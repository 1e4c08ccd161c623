/*
 * perf.h - what shmpool-perf.c and dpdk-perf.c share: the description of
 * a case, the timed get/put loops (one template, instantiated once per
 * get/put API, so that shmpool and rte_mempool run the same code around
 * their calls), the PRNG of the random cases and the clock.
 *
 * Self-contained on purpose: dpdk-perf.c is compiled with DPDK's flags and
 * without libshmpool's headers.
 */
#ifndef SHMPOOL_BENCH_PERF_H
#define SHMPOOL_BENCH_PERF_H

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

/* Objects a worker moves between two looks at its clock. */
#define PERF_N			65536

/* Values in one option's list: DPDK's side makes a pool per value of
 * --cache at most (dpdk-perf.c). */
#define PERF_LIST_MAX		32
#define PERF_WORKERS_MAX	256
#define PERF_KEEP_MAX		32768
#define PERF_BULK_MAX		4096
#define PERF_REPEAT_MAX		99
#define PERF_CPUS_MAX		1024
#define PERF_CACHE_LINE		64

/* One case: a line of output. */
struct perf_case {
	unsigned int cache_size;	/* objects; 0 for no cache */
	int claimed;			/* a cache each worker claims (shmpool)
					   or creates (DPDK's user-owned cache),
					   rather than the default one */
	unsigned int workers;		/* processes (shmpool), lcores (DPDK) */
	unsigned int get_bulk;		/* fixed sizes; unused when random */
	unsigned int put_bulk;
	unsigned int max_bulk;		/* random sizes in 1 .. max_bulk; 0 for
					   fixed sizes */
	unsigned int keep;		/* objects held before putting back */
	int constant_n;			/* sizes known at compile time */
	unsigned int stack_shift;	/* bytes each worker moves its stack
					   down by before it runs, and its
					   table on: set for each run
					   (perf_stack_shift()) */
	unsigned int tab_shift;
	unsigned int code_place;	/* which copy of the timed loops runs
					   (perf_code_place()) */
	unsigned int cpu_shift;		/* worker i runs on the setup's CPU
					   (i + cpu_shift) mod nb_cpus, from
					   0 (perf_cpu()) */
};

/* What every case of a run shares. */
struct perf_setup {
	unsigned int obj_count;		/* objects in each pool */
	unsigned int obj_size;		/* bytes per object */
	unsigned int max_workers;	/* largest workers of any case */
	unsigned int max_cache;		/* largest cache size of any case */
	unsigned int nb_cache_sizes;	/* distinct default-cache sizes > 0 */
	double seconds;			/* per case and run */
	const char *ring;		/* DPDK's mempool ops without a cache */
	int verbose;
	int no_pin;			/* keep no worker to a CPU */
	unsigned int nb_cpus;		/* the CPUs the process may use, */
	int cpus[PERF_CPUS_MAX];	/* in order (perf_cpus_get()) */
};

/* What one worker reports. */
struct perf_result {
	uint64_t count;			/* objects got and put back */
	uint64_t ns;			/* time it took */
	int status;			/* 0, or -1 when a get or put failed */
	int cpu;			/* where it was when it stopped
					   (sched_getcpu()) */
} __attribute__((aligned(PERF_CACHE_LINE)));

/*
 * Where the workers' stacks stand, modulo 4 KiB, decides a case's rate
 * as much as the code does: the loops keep a variable or two on the
 * stack, and a store to the table or the pool's cache 4 KiB away from
 * one delays the next load of it.  Moving a worker's stack alone moves
 * the rate of a case by up to 1.8x, shmpool's and DPDK's alike
 * (docs/PERFORMANCE.md), and where it stands is drawn once for a whole
 * table (the address space's layout, inherited by every worker).  So run
 * r of runs moves each worker's stack down by r/runs of 4 KiB, and its
 * table of kept objects (against the pool's cache, the same kind of
 * stall) to (r + 1/2)/runs of 4 KiB: the same on both sides, and the
 * median is taken over as many places as runs.
 */
static inline unsigned int
perf_stack_shift(unsigned int r, unsigned int runs)
{
	return (unsigned int)((uint64_t)r * 4096 / runs) & ~15u;
}

/* And the table of kept objects, by as much again as half a step. */
static inline unsigned int
perf_tab_shift(unsigned int r, unsigned int runs)
{
	return (unsigned int)(((uint64_t)r * 2 + 1) * 2048 / runs) &
		~(PERF_CACHE_LINE - 1u);
}

/*
 * Where the timed loops' code stands moves a case as much: the same
 * build, its loops moved 16, 32 or 48 bytes on from the start of a
 * 64-byte line, runs a case at rates up to 20% apart, either side's
 * (docs/PERFORMANCE.md).  So the loops are compiled PERF_CODE_PLACES
 * times, each copy of each function starting that many bytes on (a run
 * of no-ops executed once per call), and run r runs copy r modulo
 * PERF_CODE_PLACES: the same on both sides.
 */
#define PERF_CODE_PLACES	4
#define PERF_CODE_STEP		16
/* PERF_DEFINE_LOOPS() instantiates places 0 to 3 and picks among them. */
_Static_assert(PERF_CODE_PLACES == 4, "perf.h instantiates four places");

static inline unsigned int
perf_code_place(unsigned int r)
{
	return r % PERF_CODE_PLACES;
}

/*
 * Which CPU a worker runs on moves a case as much again: the host slows
 * one CPU or the other for seconds at a time, and a run of one worker
 * then reads 0.7 or 1.3 G objects/s depending on where it landed
 * (docs/PERFORMANCE.md).  Left to the scheduler, the two sides do not
 * land alike: DPDK's worker 0 is the main thread, still where it was,
 * while shmpool's, forked by it, goes to the other, idle, CPU.  So
 * where the case has no more workers than CPUs, worker i of run r runs
 * on the ((i + r) mod nb_cpus)th, from 0, of the CPUs the process may
 * use, each on one of its own as in DPDK's own test (an lcore per core),
 * the same on both sides: the shmpool and DPDK runs of one r use the
 * same CPUs, and the runs take the CPUs in turn (all of them, in a
 * median of a multiple of nb_cpus runs).  With more workers than CPUs,
 * none is pinned: they share the CPUs as the scheduler has them (on
 * DPDK's side, each lcore may run on every CPU, dpdk-perf.c); nor with
 * --no-pin, as before.
 */
/* The CPUs this process may use, in s: 0, or -1 (errno). */
static inline int
perf_cpus_get(struct perf_setup *s)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return -1;
	s->nb_cpus = 0;
	for (cpu = 0; cpu < CPU_SETSIZE && s->nb_cpus < PERF_CPUS_MAX; cpu++)
		if (CPU_ISSET(cpu, &set))
			s->cpus[s->nb_cpus++] = cpu;
	if (s->nb_cpus == 0) {
		errno = ESRCH;
		return -1;
	}
	return 0;
}

/* The CPU of worker id in case c, or -1 where none is pinned. */
static inline int
perf_cpu(const struct perf_setup *s, const struct perf_case *c,
		unsigned int id)
{
	if (s->no_pin || c->workers > s->nb_cpus)
		return -1;
	return s->cpus[(id + c->cpu_shift) % s->nb_cpus];
}

/* Keep the calling thread on cpu (-1: on every CPU of s): 0, or -1
 * (errno). */
static inline int
perf_pin(const struct perf_setup *s, int cpu)
{
	cpu_set_t set;
	unsigned int i;

	CPU_ZERO(&set);
	if (cpu >= 0)
		CPU_SET(cpu, &set);
	else
		for (i = 0; i < s->nb_cpus; i++)
			CPU_SET(s->cpus[i], &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Whether worker id of c ran where it was to: cpu is where it was when it
 * stopped (struct perf_result). */
static inline int
perf_cpu_ok(const struct perf_setup *s, const struct perf_case *c,
		unsigned int id, int cpu)
{
	int want = perf_cpu(s, c, id);

	return want < 0 || cpu == want;
}

/*
 * A worker's table of keep objects, zeroed, tab_shift bytes into a
 * block aligned on 4 KiB (*block, for free()), so that where it stands
 * modulo 4 KiB is the run's, not the heap's.
 */
static inline void **
perf_tab_alloc(unsigned int keep, unsigned int tab_shift, void **block)
{
	size_t size = ((size_t)keep * sizeof(void *) + tab_shift + 4095) &
		~(size_t)4095;
	char *b = aligned_alloc(4096, size);

	*block = b;
	if (b == NULL)
		return NULL;
	memset(b, 0, size);
	return (void **)(b + tab_shift);
}

/* Move this function's stack down by bytes, for whatever it calls next. */
#define PERF_STACK_SHIFT(bytes) do {					\
	char *perf_pad_ = __builtin_alloca((size_t)(bytes) + 16);	\
									\
	__asm__ volatile("" : : "r"(perf_pad_) : "memory");		\
} while (0)

/* Set by SIGINT, SIGTERM, SIGHUP and SIGPIPE: end the case now
 * (shmpool-perf.c). */
extern volatile sig_atomic_t perf_stop;

/* bench/dpdk-perf.c, when configure found libdpdk (HAVE_DPDK). */
int dpdk_perf_init(const struct perf_setup *setup);
int dpdk_perf_run(const struct perf_case *c, double *rate);
void dpdk_perf_fini(void);

#define PERF_LIKELY(x)		__builtin_expect(!!(x), 1)
#define PERF_UNLIKELY(x)	__builtin_expect(!!(x), 0)

static inline uint64_t
perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Rounds of n_keep objects between two looks at the clock. */
static inline unsigned int
perf_rounds(unsigned int keep)
{
	return keep >= PERF_N ? 1 : PERF_N / keep;
}

/*
 * xorshift64: a handful of instructions per draw, and sizes the branch
 * predictor cannot learn.  Both sides seed worker i alike, so that they
 * draw the same sizes.
 */
static inline uint64_t
perf_seed(unsigned int worker)
{
	/* An odd multiplier: never 0, which xorshift cannot leave. */
	return 0x9e3779b97f4a7c15ull * (worker + 1);
}

static inline uint64_t
perf_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

/* Uniform in 1 .. max, by multiply and shift rather than a division. */
static inline unsigned int
perf_rand_bulk(uint64_t *state, unsigned int max)
{
	return 1 + (unsigned int)(((perf_rand(state) >> 32) * max) >> 32);
}

/* The sizes constant_n=1 has a loop compiled for (see PERF_DEFINE_LOOPS). */
static inline int
perf_constant_ok(unsigned int bulk)
{
	switch (bulk) {
	case 1: case 4: case 8: case 32: case 64: case 128:
		return 1;
	}
	return 0;
}

/* The end of a run, set by whoever times it: one load from a line that
 * nobody writes until then. */
static inline int
perf_stopped(const unsigned int *stop)
{
	return __atomic_load_n(stop, __ATOMIC_RELAXED) != 0;
}

/*
 * PERF_DEFINE_LOOPS(pfx, ctx_t, GET, PUT) defines, for one get/put API:
 *
 *   static int pfx_timed(ctx_t *ctx, void **tab, const struct perf_case *c,
 *           double seconds, unsigned int worker, const unsigned int *stop,
 *           struct perf_result *res)
 *
 * which runs case c until *stop is set (by whoever times the run), or
 * perf_stop is, or seconds have passed by the worker's own clock (looked
 * at every PERF_N objects, as DPDK's test does), and reports what it
 * counted over the time it ran.  GET(ctx, objs, n) and PUT(ctx, objs, n)
 * are expressions, negative on failure.  tab holds at least c->keep
 * pointers.
 *
 * One round gets keep objects in bulks of get_bulk into tab, then puts
 * them back in bulks of put_bulk, and counts keep.  With constant_n, a
 * switch picks a function compiled for that size (pfx_pK_c1 ..
 * pfx_pK_c128), so that the inline get and put see a constant n.  Every
 * timed function is compiled once for each place K of the code
 * (perf_code_place()); c->code_place picks one.  Random sizes are drawn
 * for every get and every put, the last of a round cut to what is left.
 *
 * *stop is looked at once a round; without a cache, before every get and
 * put.  There every call is a ring operation, next to which the load is
 * noise, and the ring can collapse (more workers than CPUs, one
 * descheduled in the middle of an operation): a round can then take
 * seconds, and the run must still end on time.  A round cut short counts
 * the objects it put back and puts the others back uncounted.
 */
/* Place k's first bytes: k * PERF_CODE_STEP no-ops (none for place 0,
 * where the assembler would warn of a .skip of 0). */
#define PERF_STR_(x)	#x
#define PERF_STR(x)	PERF_STR_(x)
#define PERF_CODE_PAD(k)						\
	__asm__ volatile(".if " #k "\n\t.skip " #k " * "		\
		PERF_STR(PERF_CODE_STEP) ", 0x90\n\t.endif")
/* Each timed function of place k: on a line of its own, then the pad. */
#define PERF_PLACED	__attribute__((noinline, aligned(PERF_CACHE_LINE)))

#define PERF_DEFINE_CONST(pfx, ctx_t, k, b)				\
static PERF_PLACED int64_t						\
pfx##_p##k##_c##b(ctx_t *ctx, void **tab, const struct perf_case *c,	\
		const unsigned int *stop, int fine)			\
{									\
	PERF_CODE_PAD(k);						\
	return fine ? pfx##_fixed(ctx, tab, c->keep, b, b, stop, 1) :	\
		pfx##_fixed(ctx, tab, c->keep, b, b, stop, 0);		\
}

/* The timed functions of place k, and pfx_pk_round() to pick one. */
#define PERF_DEFINE_PLACE(pfx, ctx_t, k)				\
static PERF_PLACED int64_t						\
pfx##_p##k##_var(ctx_t *ctx, void **tab, const struct perf_case *c,	\
		const unsigned int *stop, int fine)			\
{									\
	unsigned int keep = c->keep, get = c->get_bulk, put = c->put_bulk; \
									\
	PERF_CODE_PAD(k);						\
	return fine ? pfx##_fixed(ctx, tab, keep, get, put, stop, 1) :	\
		pfx##_fixed(ctx, tab, keep, get, put, stop, 0);		\
}									\
									\
PERF_DEFINE_CONST(pfx, ctx_t, k, 1)					\
PERF_DEFINE_CONST(pfx, ctx_t, k, 4)					\
PERF_DEFINE_CONST(pfx, ctx_t, k, 8)					\
PERF_DEFINE_CONST(pfx, ctx_t, k, 32)					\
PERF_DEFINE_CONST(pfx, ctx_t, k, 64)					\
PERF_DEFINE_CONST(pfx, ctx_t, k, 128)					\
									\
static PERF_PLACED int64_t						\
pfx##_p##k##_random(ctx_t *ctx, void **tab, const struct perf_case *c,	\
		uint64_t *rng, const unsigned int *stop, int fine)	\
{									\
	PERF_CODE_PAD(k);						\
	return fine ?							\
		pfx##_rand(ctx, tab, c->keep, c->max_bulk, rng, stop, 1) : \
		pfx##_rand(ctx, tab, c->keep, c->max_bulk, rng, stop, 0); \
}									\
									\
static int64_t								\
pfx##_p##k##_round(ctx_t *ctx, void **tab, const struct perf_case *c,	\
		uint64_t *rng, const unsigned int *stop)		\
{									\
	int fine = c->cache_size == 0;					\
									\
	if (c->max_bulk != 0)						\
		return pfx##_p##k##_random(ctx, tab, c, rng, stop, fine); \
	if (!c->constant_n)						\
		return pfx##_p##k##_var(ctx, tab, c, stop, fine);	\
	switch (c->get_bulk) {						\
	case 1: return pfx##_p##k##_c1(ctx, tab, c, stop, fine);	\
	case 4: return pfx##_p##k##_c4(ctx, tab, c, stop, fine);	\
	case 8: return pfx##_p##k##_c8(ctx, tab, c, stop, fine);	\
	case 32: return pfx##_p##k##_c32(ctx, tab, c, stop, fine);	\
	case 64: return pfx##_p##k##_c64(ctx, tab, c, stop, fine);	\
	case 128: return pfx##_p##k##_c128(ctx, tab, c, stop, fine);	\
	}								\
	return -1;							\
}

#define PERF_DEFINE_LOOPS(pfx, ctx_t, GET, PUT)				\
/* Stopped with tab[from .. to) in hand: put them back, uncounted. */	\
static __attribute__((noinline, cold)) int64_t				\
pfx##_cut(ctx_t *ctx, void **tab, unsigned int from, unsigned int to,	\
		int64_t count)						\
{									\
	if (from < to && PUT(ctx, &tab[from], to - from) < 0)		\
		return -1;						\
	return count;							\
}									\
									\
static inline __attribute__((always_inline)) int64_t			\
pfx##_fixed(ctx_t *ctx, void **tab, unsigned int keep,			\
		unsigned int get_bulk, unsigned int put_bulk,		\
		const unsigned int *stop, const int fine)		\
{									\
	unsigned int rounds = perf_rounds(keep), r, i;			\
	int64_t count = 0;						\
									\
	for (r = 0; r < rounds; r++) {					\
		for (i = 0; i < keep; i += get_bulk) {			\
			if (fine && PERF_UNLIKELY(perf_stopped(stop)))	\
				return pfx##_cut(ctx, tab, 0, i, count); \
			if (PERF_UNLIKELY(GET(ctx, &tab[i], get_bulk) < 0)) \
				return -1;				\
		}							\
		for (i = 0; i < keep; i += put_bulk) {			\
			if (fine && PERF_UNLIKELY(perf_stopped(stop)))	\
				return pfx##_cut(ctx, tab, i, keep,	\
					count + i);			\
			if (PERF_UNLIKELY(PUT(ctx, &tab[i], put_bulk) < 0)) \
				return -1;				\
		}							\
		count += keep;						\
		if (!fine && PERF_UNLIKELY(perf_stopped(stop)))		\
			break;						\
	}								\
	return count;							\
}									\
									\
static inline __attribute__((always_inline)) int64_t			\
pfx##_rand(ctx_t *ctx, void **tab, unsigned int keep, unsigned int max,	\
		uint64_t *rng, const unsigned int *stop, const int fine) \
{									\
	unsigned int rounds = perf_rounds(keep), r, i, n;		\
	uint64_t x = *rng;						\
	int64_t count = 0;						\
									\
	for (r = 0; r < rounds; r++) {					\
		for (i = 0; i < keep; i += n) {				\
			if (fine && PERF_UNLIKELY(perf_stopped(stop)))	\
				return pfx##_cut(ctx, tab, 0, i, count); \
			n = perf_rand_bulk(&x, max);			\
			if (n > keep - i)				\
				n = keep - i;				\
			if (PERF_UNLIKELY(GET(ctx, &tab[i], n) < 0))	\
				return -1;				\
		}							\
		for (i = 0; i < keep; i += n) {				\
			if (fine && PERF_UNLIKELY(perf_stopped(stop)))	\
				return pfx##_cut(ctx, tab, i, keep,	\
					count + i);			\
			n = perf_rand_bulk(&x, max);			\
			if (n > keep - i)				\
				n = keep - i;				\
			if (PERF_UNLIKELY(PUT(ctx, &tab[i], n) < 0))	\
				return -1;				\
		}							\
		count += keep;						\
		if (!fine && PERF_UNLIKELY(perf_stopped(stop)))		\
			break;						\
	}								\
	*rng = x;							\
	return count;							\
}									\
									\
PERF_DEFINE_PLACE(pfx, ctx_t, 0)					\
PERF_DEFINE_PLACE(pfx, ctx_t, 1)					\
PERF_DEFINE_PLACE(pfx, ctx_t, 2)					\
PERF_DEFINE_PLACE(pfx, ctx_t, 3)					\
									\
static int64_t								\
pfx##_round(ctx_t *ctx, void **tab, const struct perf_case *c,		\
		uint64_t *rng, const unsigned int *stop)		\
{									\
	switch (c->code_place) {					\
	case 1: return pfx##_p1_round(ctx, tab, c, rng, stop);		\
	case 2: return pfx##_p2_round(ctx, tab, c, rng, stop);		\
	case 3: return pfx##_p3_round(ctx, tab, c, rng, stop);		\
	}								\
	return pfx##_p0_round(ctx, tab, c, rng, stop);			\
}									\
									\
static int								\
pfx##_timed(ctx_t *ctx, void **tab, const struct perf_case *c,		\
		double seconds, unsigned int worker,			\
		const unsigned int *stop, struct perf_result *res)	\
{									\
	uint64_t limit = (uint64_t)(seconds * 1e9);			\
	uint64_t rng = perf_seed(worker), count = 0, start;		\
	int64_t n;							\
									\
	start = perf_now_ns();						\
	do {								\
		n = pfx##_round(ctx, tab, c, &rng, stop);		\
		if (n < 0)						\
			break;						\
		count += (uint64_t)n;					\
	} while (!perf_stopped(stop) && !perf_stop &&			\
		 perf_now_ns() - start < limit);			\
	res->count = count;						\
	res->ns = perf_now_ns() - start;				\
	res->status = n < 0 ? -1 : 0;					\
	return res->status;						\
}

#endif /* SHMPOOL_BENCH_PERF_H */
