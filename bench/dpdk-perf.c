/*
 * dpdk-perf.c - shmpool-perf's cases on DPDK's rte_mempool (--vs-dpdk).
 *
 * The same loops as shmpool's side (perf.h), run by EAL lcores rather than
 * processes: the main lcore is worker 0, as in DPDK's own test, and the
 * others are launched from it; a plain thread times the run.  The EAL runs
 * without huge pages (--no-huge), without files to share (--no-shconf),
 * and with lcores 0..W-1 each allowed on every CPU this process may use
 * (--lcores=(0-W-1)@(cpus)): more workers than CPUs then share them as
 * shmpool's processes do, rather than failing to start.  With no more
 * workers than CPUs, each lcore keeps to the CPU that shmpool's worker of
 * the same number had in the same run (perf_cpu()) while it runs the
 * case, and then may use them all again.
 *
 * Pools are made on first use, as shmpool's is, with the same object
 * count and size: one without a cache on the chosen ring (ring_mp_mc,
 * ring_mt_rts or ring_mt_hts), which the user-owned caches
 * (rte_mempool_cache_create()) also use, as in DPDK's test; and one per
 * default cache size, on ring_mp_mc.  After a case every cache is flushed,
 * so that the next one starts, as each of shmpool's workers does, with
 * empty caches and a full ring; after a run that failed, its pool is
 * freed and made again when next needed, as shmpool-perf.c makes its
 * own.
 *
 * Compiled with DPDK's flags, away from shmpool's; all it shares with
 * shmpool-perf.c is perf.h.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mempool.h>
#include <rte_pause.h>
#include <rte_version.h>

#include "perf.h"

/* One per default cache size and one without a cache (for 0 and the
 * claimed caches): one per value of --cache at most. */
#define DP_POOLS_MAX	PERF_LIST_MAX
#define DP_ARGS_MAX	16

struct dp_ctx {
	struct rte_mempool *mp;
	struct rte_mempool_cache *cache;	/* NULL: no cache */
};

#define DP_GET(x, objs, n) \
	rte_mempool_generic_get((x)->mp, objs, n, (x)->cache)
#define DP_PUT(x, objs, n) \
	(rte_mempool_generic_put((x)->mp, objs, n, (x)->cache), 0)

PERF_DEFINE_LOOPS(dp, struct dp_ctx, DP_GET, DP_PUT)

/* One lcore's part of a case. */
struct dp_worker {
	const struct perf_case *c;
	struct rte_mempool *mp;
	unsigned int id;		/* 0 on the main lcore */
	unsigned int lcore;
	struct perf_result res;
} __rte_cache_aligned;

static struct dp_worker workers[RTE_MAX_LCORE];
static unsigned int ready, start, aborted;
/* Set when the time is up (dp_timer); read once a round, or before every
 * get and put without a cache, from a line of its own. */
static struct {
	unsigned int stop;
} __rte_cache_aligned dp_stop;

/* Pools made so far: cache size (0: without a cache) and pool. */
static struct {
	unsigned int cache_size;
	struct rte_mempool *mp;
} pools[DP_POOLS_MAX];
static unsigned int nb_pools;

static struct perf_setup dp;
static char eal_args[1024];		/* for messages */

/* The EAL makes its runtime folder even when it has nothing to put in it
 * (--no-shconf), and leaves it: take it away if it is empty. */
static void
runtime_dir_remove(void)
{
	const char *dir = rte_eal_get_runtime_dir();

	if (dir != NULL && strstr(dir, "/shmpool-perf-") != NULL)
		rmdir(dir);
}

static struct rte_mempool *
dp_pool(unsigned int cache_size)
{
	const char *ops = cache_size == 0 ? dp.ring : "ring_mp_mc";
	char name[RTE_MEMPOOL_NAMESIZE];
	struct rte_mempool *mp;
	unsigned int i;
	int ret;

	for (i = 0; i < nb_pools; i++)
		if (pools[i].cache_size == cache_size)
			return pools[i].mp;
	if (nb_pools == DP_POOLS_MAX) {
		fprintf(stderr, "shmpool-perf: DPDK: more than %d pools\n",
			DP_POOLS_MAX);
		return NULL;
	}
	snprintf(name, sizeof(name), "shmpool_perf_%u", cache_size);
	mp = rte_mempool_create_empty(name, dp.obj_count, dp.obj_size,
		cache_size, 0, SOCKET_ID_ANY, 0);
	if (mp == NULL) {
		fprintf(stderr, "shmpool-perf: DPDK: cannot create a pool of "
			"%u objects of %u bytes with a cache of %u: %s\n",
			dp.obj_count, dp.obj_size, cache_size,
			rte_strerror(rte_errno));
		return NULL;
	}
	ret = rte_mempool_set_ops_byname(mp, ops, NULL);
	if (ret < 0) {
		fprintf(stderr, "shmpool-perf: DPDK: no mempool ops '%s' (is "
			"librte_mempool_ring loaded?): %s\n", ops,
			rte_strerror(-ret));
		rte_mempool_free(mp);
		return NULL;
	}
	ret = rte_mempool_populate_default(mp);
	if (ret < 0 || (unsigned int)ret != dp.obj_count) {
		fprintf(stderr, "shmpool-perf: DPDK: cannot populate pool "
			"'%s' (%u objects of %u bytes; EAL memory -m too "
			"small?): %s\n", name, dp.obj_count, dp.obj_size,
			ret < 0 ? rte_strerror(-ret) : "short");
		rte_mempool_free(mp);
		return NULL;
	}
	if (dp.verbose)
		fprintf(stderr, "shmpool-perf: DPDK: pool %s: %u objects of %u "
			"bytes (elt %u), cache %u, ops %s\n", name,
			dp.obj_count, dp.obj_size, mp->elt_size, cache_size,
			ops);
	pools[nb_pools].cache_size = cache_size;
	pools[nb_pools].mp = mp;
	nb_pools++;
	return mp;
}

/* The pool of a run that failed: a get or put may have failed with
 * objects in hand, which its lcore never put back.  Freed, so that the
 * next case that needs it makes it anew, whole. */
static void
dp_pool_drop(struct rte_mempool *mp)
{
	unsigned int i;

	for (i = 0; i < nb_pools && pools[i].mp != mp; i++)
		;
	if (i == nb_pools)
		return;
	rte_mempool_free(mp);
	pools[i] = pools[--nb_pools];
}

static void
dp_wait(unsigned int *var, unsigned int val)
{
	while (__atomic_load_n(var, __ATOMIC_ACQUIRE) < val &&
	       !__atomic_load_n(&aborted, __ATOMIC_ACQUIRE) && !perf_stop) {
		rte_pause();
		/* More lcores than CPUs: let the one we wait for run. */
		sched_yield();
	}
}

/* w's lcore back on every CPU after its run: lcore 0 is the main
 * thread, whose later forks and threads would inherit one.  0, or -1
 * (said on stderr). */
static int
dp_unpin(const struct dp_worker *w)
{
	if (perf_pin(&dp, -1) == 0)
		return 0;
	fprintf(stderr, "shmpool-perf: DPDK: lcore %u: cannot go back to "
		"every CPU: %s\n", w->lcore, strerror(errno));
	__atomic_store_n(&aborted, 1, __ATOMIC_RELEASE);
	return -1;
}

static int
dp_worker_run(void *arg)
{
	struct dp_worker *w = arg;
	const struct perf_case *c = w->c;
	struct dp_ctx ctx = { w->mp, NULL };
	void **tab = NULL, *tab_block = NULL;
	int ret = -1, cpu = perf_cpu(&dp, c, w->id);

	if (cpu >= 0 && perf_pin(&dp, cpu) < 0) {
		fprintf(stderr, "shmpool-perf: DPDK: lcore %u: cannot keep to "
			"CPU %d: %s\n", w->lcore, cpu, strerror(errno));
		__atomic_store_n(&aborted, 1, __ATOMIC_RELEASE);
		return -1;
	}
	if (c->claimed) {
		ctx.cache = rte_mempool_cache_create(c->cache_size,
			SOCKET_ID_ANY);
		if (ctx.cache == NULL) {
			fprintf(stderr, "shmpool-perf: DPDK: lcore %u: cannot "
				"create a cache of %u: %s\n", w->lcore,
				c->cache_size, rte_strerror(rte_errno));
			goto fail;
		}
	} else {
		ctx.cache = rte_mempool_default_cache(w->mp, rte_lcore_id());
	}
	tab = perf_tab_alloc(c->keep, c->tab_shift, &tab_block);
	if (tab == NULL) {
		fprintf(stderr, "shmpool-perf: DPDK: lcore %u: out of memory\n",
			w->lcore);
		goto fail;
	}

	/* The main lcore starts everyone once all are ready. */
	if (w->id == 0) {
		dp_wait(&ready, c->workers - 1);
		__atomic_store_n(&start, 1, __ATOMIC_RELEASE);
	} else {
		__atomic_fetch_add(&ready, 1, __ATOMIC_RELEASE);
		dp_wait(&start, 1);
	}
	if (__atomic_load_n(&aborted, __ATOMIC_ACQUIRE) || perf_stop)
		goto out;

	PERF_STACK_SHIFT(c->stack_shift);
	ret = dp_timed(&ctx, tab, c, dp.seconds, w->id, &dp_stop.stop,
		&w->res);
	w->res.cpu = sched_getcpu();
	if (ret < 0)
		fprintf(stderr, "shmpool-perf: DPDK: lcore %u: a get or put "
			"failed after %" PRIu64 " objects\n", w->lcore,
			w->res.count);
out:
	free(tab_block);
	if (ctx.cache != NULL)
		rte_mempool_cache_flush(ctx.cache, w->mp);
	if (c->claimed)
		rte_mempool_cache_free(ctx.cache);
	if (cpu >= 0 && dp_unpin(w) < 0)
		ret = -1;
	return ret;
fail:
	__atomic_store_n(&aborted, 1, __ATOMIC_RELEASE);
	free(tab_block);
	if (c->claimed)
		rte_mempool_cache_free(ctx.cache);
	if (cpu >= 0)
		dp_unpin(w);
	return -1;
}

/* The run's clock: from the start, seconds, then stop.  Not an lcore: it
 * sleeps, and wakes in time however many lcores share the CPUs. */
static void *
dp_timer(void *arg)
{
	struct timespec pause = { 0, 100000 }, slice;
	uint64_t end, now;

	(void)arg;
	while (!__atomic_load_n(&start, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&aborted, __ATOMIC_ACQUIRE) || perf_stop)
			goto out;
		nanosleep(&pause, NULL);
	}
	end = perf_now_ns() + (uint64_t)(dp.seconds * 1e9);
	while (!__atomic_load_n(&aborted, __ATOMIC_ACQUIRE) && !perf_stop) {
		now = perf_now_ns();
		if (now >= end)
			break;
		/* Short slices, so that a signal is seen soon. */
		slice.tv_sec = 0;
		slice.tv_nsec = end - now < 10000000 ? (long)(end - now) :
			10000000;
		nanosleep(&slice, NULL);
	}
out:
	__atomic_store_n(&dp_stop.stop, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * One run of case c: launch c->workers - 1 lcores, be worker 0, stop all
 * when the time is up (dp_timer), sum the rates (0 when no lcore finished
 * a round).  0, or -1 when the case failed (said on stderr) or was
 * interrupted.
 */
int
dpdk_perf_run(const struct perf_case *c, double *rate)
{
	struct rte_mempool *mp;
	unsigned int lcore, n = 1, i;
	pthread_t timer;
	double sum = 0;
	int ret = 0;

	mp = dp_pool(c->claimed ? 0 : c->cache_size);
	if (mp == NULL)
		return -1;
	if (c->workers > rte_lcore_count()) {
		fprintf(stderr, "shmpool-perf: DPDK: %u workers, %u lcores\n",
			c->workers, rte_lcore_count());
		return -1;
	}
	memset(workers, 0, sizeof(workers[0]) * c->workers);
	__atomic_store_n(&ready, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&start, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&dp_stop.stop, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&aborted, 0, __ATOMIC_RELEASE);
	for (i = 0; i < c->workers; i++) {
		workers[i].c = c;
		workers[i].mp = mp;
		workers[i].id = i;
		workers[i].res.status = -1;
	}
	workers[0].lcore = rte_lcore_id();
	ret = pthread_create(&timer, NULL, dp_timer, NULL);
	if (ret != 0) {
		fprintf(stderr, "shmpool-perf: DPDK: cannot start a timer "
			"thread: %s\n", strerror(ret));
		return -1;
	}

	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (n == c->workers)
			break;
		workers[n].lcore = lcore;
		if (rte_eal_remote_launch(dp_worker_run, &workers[n],
				lcore) != 0) {
			fprintf(stderr, "shmpool-perf: DPDK: cannot launch "
				"lcore %u\n", lcore);
			__atomic_store_n(&aborted, 1, __ATOMIC_RELEASE);
			ret = -1;
			break;
		}
		n++;
	}
	if (dp_worker_run(&workers[0]) < 0)
		ret = -1;
	for (i = 1; i < n; i++)
		if (rte_eal_wait_lcore(workers[i].lcore) < 0)
			ret = -1;
	__atomic_store_n(&aborted, 1, __ATOMIC_RELEASE);
	pthread_join(timer, NULL);
	if (ret < 0 || perf_stop)
		goto fail;

	for (i = 0; i < c->workers; i++) {
		const struct perf_result *res = &workers[i].res;

		if (res->status != 0 || res->ns == 0) {
			fprintf(stderr, "shmpool-perf: DPDK: lcore %u did not "
				"run\n", workers[i].lcore);
			goto fail;
		}
		if (!perf_cpu_ok(&dp, c, i, res->cpu)) {
			fprintf(stderr, "shmpool-perf: DPDK: lcore %u ran on "
				"CPU %d, not %d\n", workers[i].lcore, res->cpu,
				perf_cpu(&dp, c, i));
			goto fail;
		}
		sum += (double)res->count * 1e9 / (double)res->ns;
		if (dp.verbose)
			fprintf(stderr, "  DPDK worker %u: %" PRIu64 " objects "
				"in %" PRIu64 " ns on CPU %d\n", i, res->count,
				res->ns, res->cpu);
	}
	/* No lcore putting back an object in the whole run is what
	 * ring_mp_mc does with more lcores than CPUs: a rate of 0, not a
	 * failure. */
	if (sum == 0 && dp.verbose)
		fprintf(stderr, "shmpool-perf: DPDK: no lcore counted "
			"anything\n");
	if (rte_mempool_avail_count(mp) != dp.obj_count) {
		fprintf(stderr, "shmpool-perf: DPDK: %u objects of %u are "
			"missing from the pool after the case\n",
			dp.obj_count - rte_mempool_avail_count(mp),
			dp.obj_count);
		goto fail;
	}
	*rate = sum;
	return 0;
fail:
	dp_pool_drop(mp);
	return -1;
}

/* "0-1,4": the CPUs this process may run on (dp.cpus, in order); -1 when
 * there are none or they do not fit in size. */
static int
cpus_list(char *buf, size_t size)
{
	size_t len = 0;
	unsigned int i, j;
	int n;

	buf[0] = '\0';
	for (i = 0; i < dp.nb_cpus; i = j + 1) {
		for (j = i; j + 1 < dp.nb_cpus &&
		     dp.cpus[j + 1] == dp.cpus[j] + 1; j++)
			;
		if (j == i)
			n = snprintf(buf + len, size - len, "%s%d",
				len ? "," : "", dp.cpus[i]);
		else
			n = snprintf(buf + len, size - len, "%s%d-%d",
				len ? "," : "", dp.cpus[i], dp.cpus[j]);
		if (n < 0 || (size_t)n >= size - len)
			return -1;
		len += (size_t)n;
	}
	return len > 0 ? 0 : -1;
}

/* Megabytes of EAL memory for the pools, the caches and the EAL itself. */
static unsigned int
eal_memory_mb(void)
{
	uint64_t elt, ring = 1, pool, total;

	/* The object, cache-line aligned, and its header and padding. */
	elt = RTE_ALIGN_CEIL((uint64_t)dp.obj_size, RTE_CACHE_LINE_SIZE) +
		2 * RTE_CACHE_LINE_SIZE;
	while (ring <= dp.obj_count)
		ring <<= 1;
	pool = dp.obj_count * elt + ring * sizeof(void *) +
		(uint64_t)RTE_MAX_LCORE * sizeof(struct rte_mempool_cache) +
		(1 << 20);
	total = (dp.nb_cache_sizes + 1) * pool * 5 / 4 +
		(uint64_t)dp.max_workers * sizeof(struct rte_mempool_cache) +
		(64 << 20);
	return (unsigned int)((total + (1 << 20) - 1) >> 20);
}

int
dpdk_perf_init(const struct perf_setup *setup)
{
	static char arg_mem[32], arg_lcores[600], arg_prefix[64];
	static char arg_log[32];
	char cpus[512], *argv[DP_ARGS_MAX];
	size_t len = 0;
	int argc = 0, i, ret;

	dp = *setup;
	if (dp.max_workers > RTE_MAX_LCORE) {
		fprintf(stderr, "shmpool-perf: --vs-dpdk: %u workers, but DPDK "
			"has at most %d lcores\n", dp.max_workers,
			RTE_MAX_LCORE);
		return -1;
	}
	if (dp.nb_cpus == 0) {
		fprintf(stderr, "shmpool-perf: --vs-dpdk: the CPUs this "
			"process may use are not known\n");
		return -1;
	}
	if (cpus_list(cpus, sizeof(cpus)) < 0) {
		fprintf(stderr, "shmpool-perf: --vs-dpdk: the list of the "
			"CPUs is longer than %zu bytes\n", sizeof(cpus) - 1);
		return -1;
	}
	snprintf(arg_mem, sizeof(arg_mem), "%u", eal_memory_mb());
	if (dp.max_workers == 1)
		snprintf(arg_lcores, sizeof(arg_lcores), "--lcores=0@(%s)",
			cpus);
	else
		snprintf(arg_lcores, sizeof(arg_lcores),
			"--lcores=(0-%u)@(%s)", dp.max_workers - 1, cpus);
	snprintf(arg_prefix, sizeof(arg_prefix),
		"--file-prefix=shmpool-perf-%ld", (long)getpid());
	snprintf(arg_log, sizeof(arg_log), "--log-level=%s",
		dp.verbose ? "notice" : "error");

	argv[argc++] = (char *)"shmpool-perf";
	argv[argc++] = (char *)"--no-huge";
	argv[argc++] = (char *)"--no-shconf";
	argv[argc++] = (char *)"-m";
	argv[argc++] = arg_mem;
	argv[argc++] = arg_lcores;
	argv[argc++] = (char *)"--no-pci";
	argv[argc++] = (char *)"--no-telemetry";
	argv[argc++] = arg_prefix;
	argv[argc++] = arg_log;
	argv[argc] = NULL;
	for (i = 1; i < argc; i++)
		len += (size_t)snprintf(eal_args + len, sizeof(eal_args) - len,
			"%s%s", i > 1 ? " " : "", argv[i]);

	/* EAL messages on stderr: stdout is for the cases' lines. */
	rte_openlog_stream(stderr);
	if (dp.verbose)
		fprintf(stderr, "shmpool-perf: %s, EAL %s\n", rte_version(),
			eal_args);
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "shmpool-perf: --vs-dpdk: DPDK's EAL did not "
			"start: %s\n  EAL arguments: %s\n  (no huge pages are "
			"needed with --no-huge; see the EAL's messages above: "
			"it may\n  need root, or more memory than it could "
			"have)\n", rte_strerror(rte_errno), eal_args);
		runtime_dir_remove();
		return -1;
	}
	if (rte_lcore_count() < dp.max_workers) {
		fprintf(stderr, "shmpool-perf: --vs-dpdk: the EAL gave %u "
			"lcores, not %u\n", rte_lcore_count(), dp.max_workers);
		dpdk_perf_fini();
		return -1;
	}
	return 0;
}

void
dpdk_perf_fini(void)
{
	unsigned int i;

	for (i = 0; i < nb_pools; i++)
		rte_mempool_free(pools[i].mp);
	nb_pools = 0;
	rte_eal_cleanup();
	runtime_dir_remove();
}
