/*
 * shmpool-perf - DPDK's mempool perf test, over processes.
 *
 * Each case forks its workers; each attaches to a private pool that the
 * tool made in /dev/shm (shmpool_segment_create(), removed at the end
 * whatever happens, SIGINT and SIGPIPE included) and waits.  Once all
 * are attached, a flag in shared memory starts them together; each then
 * gets n_keep objects in bulks of n_get_bulk and puts them back in bulks
 * of n_put_bulk, over and over, counting n_keep per round, until --seconds
 * have passed (the parent raises a stop flag; each worker also looks at
 * its clock every 65536 objects, as DPDK's test does).  rate_persec is the
 * objects got and put back per second (each worker's count over its own
 * time), summed over the workers.  The loops are bench/perf.h's.
 *
 * The cases: workers 1, 2 and twice the CPUs; cache 0, 512 and a cache
 * that each worker claims (shmpool_cache_claim()) and passes to
 * shmpool_generic_get()/put(); bulks 1, 4, 8, 32, 64, 128 (get and put
 * alike unless --all-pairs); n_keep 32, 128, 512, 4096; constant_n 0 and
 * 1 (1: a function compiled for each size, so that the inline get and put
 * see a constant n); and random sizes, each get and put drawn from
 * 1..n_max_bulk.  A case whose n_keep is not a multiple of both bulks is
 * left out, as is constant_n=1 with sizes that differ or have no compiled
 * loop.
 *
 * One line per case on stdout, in DPDK's format:
 *
 *   shmpool_perf cache=512 cores=1 n_get_bulk=32 n_put_bulk=32 n_keep=128 constant_n=0 rate_persec=N
 *   shmpool_perf cache=claimed512 cores=2 n_get_bulk=4 n_put_bulk=4 n_keep=32 constant_n=1 rate_persec=N
 *   shmpool_perf cache=0 cores=4 n_max_bulk=32 random=1 n_keep=128 constant_n=0 rate_persec=N
 *
 * cache=claimedC is a cache of C objects claimed by each worker (DPDK: a
 * user-owned cache on the pool without one).  With --repeat, rate_persec
 * is the median.  With --vs-dpdk, each case also runs on rte_mempool
 * (bench/dpdk-perf.c), the two taking turns --repeat times, and the line
 * ends "dpdk_rate=N ratio=R": the medians, and the first over the second
 * ("ratio=inf" when DPDK's median is 0).  A DPDK run whose lcores put
 * back no object, as ring_mp_mc's can with more lcores than CPUs,
 * counts as a rate of 0, not as a failure.
 *
 * Exit status: 0 when every case ran and counted; 1 when one failed, DPDK
 * could not be had or stdout lost a line; 2 for a usage error; 128 + the
 * signal when interrupted (SIGINT, SIGTERM, SIGHUP, or SIGPIPE: stdout's
 * reader gone).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shmpool.h>

#include "perf.h"

#define LIST_MAX		PERF_LIST_MAX	/* values in one option's list */
#define CACHE_DEFAULT		512	/* DPDK's RTE_MEMPOOL_CACHE_MAX_SIZE */
#define KEEP_FLOOR		512	/* DPDK's MAX_KEEP: least we size for */
#define CASE_OVERHEAD		0.02	/* seconds around a run, for --list */

static const char usage_text[] =
	"usage: shmpool-perf [--workers LIST] [--cache LIST] [--get-bulk LIST]\n"
	"         [--put-bulk LIST] [--all-pairs] [--keep LIST] "
	"[--constant-n LIST]\n"
	"         [--random LIST|none] [--random-only] [--seconds S] "
	"[--repeat R]\n"
	"         [--object-size B] [--vs-dpdk] [--dpdk-ring NAME] [--no-pin]\n"
	"         [--list] [-v]\n"
	"       shmpool-perf --smoke\n"
	"       shmpool-perf -h|--help\n";

static const char help_text[] =
	"\n"
	"DPDK's mempool perf test with worker processes attached to a private\n"
	"shmpool pool; one line per case, rate_persec = objects got and put back\n"
	"per second, summed over the workers.  LIST is comma-separated.\n"
	"\n"
	"  --workers LIST     worker processes (default 1, 2 and twice the\n"
	"                     CPUs, at most 256: %s)\n"
	"  --cache LIST       0 (no cache), C (a default cache of C objects),\n"
	"                     claimed or claimedC (each worker claims a cache of\n"
	"                     C objects, default 512, and uses it through\n"
	"                     shmpool_generic_get/put; printed cache=claimedC)\n"
	"                     (default 0,512,claimed)\n"
	"  --get-bulk LIST    objects per get (default 1,4,8,32,64,128)\n"
	"  --put-bulk LIST    objects per put (default: the get list)\n"
	"  --all-pairs        every get size with every put size (default: equal\n"
	"                     sizes only)\n"
	"  --keep LIST        objects held before putting back "
	"(default 32,128,512,4096)\n"
	"  --constant-n LIST  0: sizes known at run time; 1: a loop compiled for\n"
	"                     each size (1,4,8,32,64,128; get = put) (default 0,1)\n"
	"  --random LIST      random cases: each get and put size drawn from\n"
	"                     1..N for each N of LIST (default: the get list);\n"
	"                     none: no random case\n"
	"  --random-only      only the random cases\n"
	"  --seconds S        per case and run (default 1)\n"
	"  --repeat R         runs per case, median printed (default 1, or 3\n"
	"                     with --vs-dpdk); run r (from 0) moves each\n"
	"                     worker's stack down by r/R of 4 KiB and its\n"
	"                     table to (r + 1/2)/R of 4 KiB, and runs the\n"
	"                     copy of the timed loops placed 16 x (r mod 4)\n"
	"                     bytes into a cache line; with no more workers\n"
	"                     than CPUs, it keeps worker i to the ((i + r) mod\n"
	"                     N)th, from 0, of the N CPUs this process may\n"
	"                     use; both sides\n"
	"  --object-size B    bytes per object (default 2048)\n"
	"  --vs-dpdk          also run each case on rte_mempool (EAL threads,\n"
	"                     --no-huge, same pool), taking turns; adds\n"
	"                     dpdk_rate= and ratio= (median shmpool / median "
	"DPDK;\n"
	"                     inf when DPDK's median is 0)\n"
	"  --dpdk-ring NAME   DPDK's ring without a cache: ring_mp_mc (default),\n"
	"                     ring_mt_rts or ring_mt_hts\n"
	"  --no-pin           keep no worker to a CPU (see --repeat): the\n"
	"                     scheduler places them, both sides\n"
	"  --smoke            one case, 1 s: cache 512, 1 worker, bulk 32, keep 128\n"
	"  --list             print the cases and how long they would take\n"
	"  -v, --verbose      on stderr: the pool, DPDK's EAL, each run's places,\n"
	"                     CPUs and rates, and each worker's objects, time\n"
	"                     and CPU (as it stopped), both sides\n"
	"\n"
	"A case whose keep is not a multiple of both bulk sizes is left out.\n"
	"All cases share one pool, of the largest workers x (largest keep +\n"
	"largest cache) objects (keep and cache counted as 512 at least), as\n"
	"DPDK's test sizes its own; -v prints it.\n"
	"Exit status: 0 when every case ran and counted, 1 when one did not\n"
	"or a line could not be written, 2 for a usage error.\n";

/* A --cache choice. */
struct cache_sel {
	unsigned int size;
	int claimed;
};

struct options {
	unsigned int workers[LIST_MAX], nb_workers;
	struct cache_sel caches[LIST_MAX];
	unsigned int nb_caches;
	unsigned int get[LIST_MAX], nb_get;
	unsigned int put[LIST_MAX], nb_put;
	unsigned int keep[LIST_MAX], nb_keep;
	unsigned int constant[LIST_MAX], nb_constant;
	unsigned int random[LIST_MAX], nb_random;
	int all_pairs, random_only, random_none;
	double seconds;
	unsigned int repeat;
	unsigned int obj_size;
	int vs_dpdk;
	const char *ring;
	int smoke, list, verbose, no_pin;
};

/* What the parent and its workers share: the start line and the results. */
struct perf_shm {
	unsigned int ready;		/* workers attached and waiting */
	unsigned int start;		/* set once all are */
	unsigned int abort;		/* set when the case cannot start */
	/* Set when the time is up; read once a round (without a cache,
	 * before every get and put), from a line of its own. */
	unsigned int stop __attribute__((aligned(PERF_CACHE_LINE)));
	struct perf_result res[PERF_WORKERS_MAX];
};

volatile sig_atomic_t perf_stop;

static const char progname[] = "shmpool-perf";
static char seg_name[SHMPOOL_NAME_MAX + 1];
static char seg_path[128];		/* set while the segment exists */
static struct shmpool *ctl_pool;	/* the parent's attachment */
static struct perf_shm *shm;
static pid_t kids[PERF_WORKERS_MAX];
static unsigned int nb_kids;
static struct perf_setup setup;
static int out_errno;			/* why stdout lost a line, or 0 */
#ifdef HAVE_DPDK
static int dpdk_up;			/* the EAL is initialised */
#endif

/* What a worker passes to the inline get and put. */
struct sp_ctx {
	struct shmpool *pool;
	struct shmpool_cache *cache;	/* the claimed one */
};

#define SP_GET_DEFAULT(x, objs, n)	shmpool_get_bulk((x)->pool, objs, n)
#define SP_PUT_DEFAULT(x, objs, n)	shmpool_put_bulk((x)->pool, objs, n)
#define SP_GET_CLAIMED(x, objs, n) \
	shmpool_generic_get((x)->pool, objs, n, (x)->cache)
#define SP_PUT_CLAIMED(x, objs, n) \
	shmpool_generic_put((x)->pool, objs, n, (x)->cache)

PERF_DEFINE_LOOPS(sp_default, struct sp_ctx, SP_GET_DEFAULT, SP_PUT_DEFAULT)
PERF_DEFINE_LOOPS(sp_claimed, struct sp_ctx, SP_GET_CLAIMED, SP_PUT_CLAIMED)

static void
on_signal(int sig)
{
	perf_stop = sig;
}

static void
signals_catch(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: waitpid returns */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* The reader of a pipeline gone (| head): stop and clean up as for
	 * the others, rather than die with the segment left behind. */
	sigaction(SIGPIPE, &sa, NULL);
}

static void
kids_kill(void)
{
	unsigned int i;

	for (i = 0; i < nb_kids; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	for (i = 0; i < nb_kids; i++) {
		if (kids[i] > 0)
			while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
				;
		kids[i] = 0;
	}
	nb_kids = 0;
}

/* A slot per worker for its attachment, one for its claimed cache, and
 * one for ours. */
static unsigned int
pool_slots(void)
{
	return 2 * setup.max_workers + 1;
}

/* The pool of the cases, made in /dev/shm and attached to (ctl_pool): 0,
 * or -1 (said on stderr; what was made is left for pool_remove()). */
static int
pool_make(void)
{
	struct shmpool_params params;
	struct shmpool_attach_opts opts = { 0 };

	memset(&params, 0, sizeof(params));
	params.obj_count = setup.obj_count;
	params.obj_size = setup.obj_size;
	params.cache_size = CACHE_DEFAULT;
	params.nb_slots = pool_slots();
	snprintf(seg_name, sizeof(seg_name), "perf-%ld", (long)getpid());
	snprintf(seg_path, sizeof(seg_path), "/dev/shm/shmpool.%s", seg_name);
	if (shmpool_segment_create(seg_path, seg_name, &params, 0600) < 0) {
		fprintf(stderr, "%s: %s\n", progname, shmpool_last_error());
		seg_path[0] = '\0';
		return -1;
	}
	opts.path = seg_path;
	opts.flags = SHMPOOL_ATTACH_CACHE_SIZE;
	opts.cache_size = 0;
	if (shmpool_attach(seg_name, &opts, &ctl_pool) < 0) {
		fprintf(stderr, "%s: %s\n", progname, shmpool_last_error());
		return -1;
	}
	return 0;
}

/* The parent's attachment and the segment, gone. */
static void
pool_remove(void)
{
	if (ctl_pool != NULL) {
		shmpool_detach(ctl_pool);
		ctl_pool = NULL;
	}
	if (seg_path[0] != '\0') {
		unlink(seg_path);
		seg_path[0] = '\0';
	}
}

/* Whatever happened: no worker, no segment, no EAL left behind. */
static void
cleanup(void)
{
	kids_kill();
	pool_remove();
#ifdef HAVE_DPDK
	if (dpdk_up) {
		dpdk_perf_fini();
		dpdk_up = 0;
	}
#endif
}

/*
 * Push out the lines written so far.  A reader gone (EPIPE, SIGPIPE
 * blocked or not seen yet) ends the run as SIGPIPE does; any other error
 * is kept for stdout_close().
 */
static void
lines_flush(void)
{
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return;
	if (out_errno == 0)
		out_errno = errno != 0 ? errno : EIO;
	if (out_errno == EPIPE)
		perf_stop = SIGPIPE;
}

/*
 * The lines are what the tool is for: a run, --list or --help whose
 * lines could not all be written (a full disk) fails, 1 (said on
 * stderr) in place of 0.  A reader gone is SIGPIPE's status, whether the
 * signal was seen or not.
 */
static int
stdout_close(int status)
{
	lines_flush();
	errno = 0;
	if (fclose(stdout) != 0 && out_errno == 0)
		out_errno = errno != 0 ? errno : EIO;
	if (out_errno == 0)
		return status;
	if (out_errno == EPIPE)
		return status > 128 ? status : 128 + SIGPIPE;
	fprintf(stderr, "%s: standard output: %s\n", progname,
		strerror(out_errno));
	return status == 0 ? 1 : status;
}

static unsigned int
cpus_available(void)
{
	static struct perf_setup s;	/* for its list of CPUs alone */
	int n;

	if (perf_cpus_get(&s) == 0)
		return s.nb_cpus;
	n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned int)n : 1;
}

static int
usage_error(const char *fmt, const char *what)
{
	fprintf(stderr, "%s: ", progname);
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\n%s", usage_text);
	return -1;
}

/* "1,4,8": each in min..max, at most LIST_MAX of them. */
static int
parse_list(const char *opt, const char *arg, unsigned int min,
		unsigned int max, unsigned int *vals, unsigned int *nb)
{
	const char *p = arg;
	char *end;
	unsigned long v;

	*nb = 0;
	for (;;) {
		errno = 0;
		if (*p < '0' || *p > '9')
			goto bad;
		v = strtoul(p, &end, 10);
		if (errno != 0 || v < min || v > max || *nb == LIST_MAX)
			goto bad;
		vals[(*nb)++] = (unsigned int)v;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			goto bad;
		p = end + 1;
	}
bad:
	fprintf(stderr, "%s: %s '%s': expected up to %d comma-separated "
		"numbers in %u..%u\n%s", progname, opt, arg, LIST_MAX, min, max,
		usage_text);
	return -1;
}

/* "0,512,claimed,claimed256". */
static int
parse_caches(const char *arg, struct options *o)
{
	char buf[256], *rest = buf, *tok, *end;
	unsigned long v;

	if (strlen(arg) >= sizeof(buf))
		return usage_error("--cache '%s': too long", arg);
	strcpy(buf, arg);
	o->nb_caches = 0;
	/* strsep(), not strtok_r(): an empty item ("512,", "0,,512") is
	 * refused, as parse_list() refuses it, not skipped. */
	while ((tok = strsep(&rest, ",")) != NULL) {
		struct cache_sel sel = { CACHE_DEFAULT, 0 };

		if (o->nb_caches == LIST_MAX)
			return usage_error("--cache '%s': too many values",
				arg);
		if (strncmp(tok, "claimed", 7) == 0) {
			sel.claimed = 1;
			tok += 7;
		}
		if (*tok != '\0' || !sel.claimed) {
			errno = 0;
			if (*tok < '0' || *tok > '9')
				goto bad;
			v = strtoul(tok, &end, 10);
			if (errno != 0 || *end != '\0' ||
			    v > SHMPOOL_CACHE_MAX_SIZE ||
			    (sel.claimed && v == 0))
				goto bad;
			sel.size = (unsigned int)v;
		}
		o->caches[o->nb_caches++] = sel;
	}
	if (o->nb_caches > 0)
		return 0;
bad:
	fprintf(stderr, "%s: --cache '%s': expected sizes in 0..%u, claimed "
		"or claimedC (C in 1..%u)\n%s", progname, arg,
		SHMPOOL_CACHE_MAX_SIZE, SHMPOOL_CACHE_MAX_SIZE, usage_text);
	return -1;
}

static void
options_default(struct options *o, unsigned int ncpu)
{
	static const unsigned int bulks[] = { 1, 4, 8, 32, 64, 128 };
	static const unsigned int keeps[] = { 32, 128, 512, 4096 };
	unsigned int i;

	o->workers[o->nb_workers++] = 1;
	o->workers[o->nb_workers++] = 2;
	if (2 * ncpu > 2)
		o->workers[o->nb_workers++] = 2 * ncpu > PERF_WORKERS_MAX ?
			PERF_WORKERS_MAX : 2 * ncpu;
	o->caches[o->nb_caches++] = (struct cache_sel){ 0, 0 };
	o->caches[o->nb_caches++] = (struct cache_sel){ CACHE_DEFAULT, 0 };
	o->caches[o->nb_caches++] = (struct cache_sel){ CACHE_DEFAULT, 1 };
	for (i = 0; i < sizeof(bulks) / sizeof(bulks[0]); i++)
		o->get[o->nb_get++] = bulks[i];
	for (i = 0; i < sizeof(keeps) / sizeof(keeps[0]); i++)
		o->keep[o->nb_keep++] = keeps[i];
	o->constant[o->nb_constant++] = 0;
	o->constant[o->nb_constant++] = 1;
}

/* The cases of a run, as they are selected. */
struct case_list {
	struct perf_case *v;
	unsigned int n, alloc;
};

static int
case_add(struct case_list *l, const struct perf_case *c)
{
	struct perf_case *grown;

	if (l->n == l->alloc) {
		l->alloc = l->alloc ? 2 * l->alloc : 256;
		grown = realloc(l->v, l->alloc * sizeof(*l->v));
		if (grown == NULL)
			return -1;
		l->v = grown;
	}
	l->v[l->n++] = *c;
	return 0;
}

/* The fixed-size cases of one cache and worker count, in DPDK's order. */
static int
cases_fixed(const struct options *o, struct perf_case c, struct case_list *l)
{
	unsigned int ig, ip, ik, in;

	for (ig = 0; ig < o->nb_get; ig++) {
		for (ip = 0; ip < o->nb_put; ip++) {
			c.get_bulk = o->get[ig];
			c.put_bulk = o->put[ip];
			if (!o->all_pairs && c.get_bulk != c.put_bulk)
				continue;
			for (ik = 0; ik < o->nb_keep; ik++) {
				c.keep = o->keep[ik];
				if (c.keep % c.get_bulk || c.keep % c.put_bulk)
					continue;
				for (in = 0; in < o->nb_constant; in++) {
					c.constant_n = (int)o->constant[in];
					if (c.constant_n &&
					    (c.get_bulk != c.put_bulk ||
					     !perf_constant_ok(c.get_bulk)))
						continue;
					if (case_add(l, &c) < 0)
						return -1;
				}
			}
		}
	}
	return 0;
}

/*
 * Why the options select no fixed-size case.  Every get size has a put
 * size to pair with (options_parse()): either no keep is a multiple of
 * both sizes of a pair, or one is and --constant-n 1 alone left the pair
 * out, its sizes unequal or without a loop compiled for them.
 */
static const char *
cases_fixed_none(const struct options *o)
{
	unsigned int ig, ip, ik;

	for (ig = 0; ig < o->nb_get; ig++)
		for (ip = 0; ip < o->nb_put; ip++) {
			if (!o->all_pairs && o->get[ig] != o->put[ip])
				continue;
			for (ik = 0; ik < o->nb_keep; ik++)
				if (o->keep[ik] % o->get[ig] == 0 &&
				    o->keep[ik] % o->put[ip] == 0)
					return "--constant-n 1 has loops only "
						"for equal get and put sizes "
						"of 1, 4, 8, 32, 64 or 128";
		}
	return "no keep is a multiple of both bulk sizes";
}

/* Every case the options select: per cache and worker count, the fixed
 * sizes, then the random ones.  NULL when there is none. */
static struct perf_case *
cases_build(const struct options *o, unsigned int *nb)
{
	struct case_list l = { NULL, 0, 0 };
	struct perf_case c;
	unsigned int ic, iw, ir, ik;

	for (ic = 0; ic < o->nb_caches; ic++) {
		for (iw = 0; iw < o->nb_workers; iw++) {
			memset(&c, 0, sizeof(c));
			c.cache_size = o->caches[ic].size;
			c.claimed = o->caches[ic].claimed;
			c.workers = o->workers[iw];
			if (!o->random_only && cases_fixed(o, c, &l) < 0)
				goto fail;
			for (ir = 0; ir < o->nb_random && !o->random_none;
			     ir++) {
				c.max_bulk = o->random[ir];
				for (ik = 0; ik < o->nb_keep; ik++) {
					c.keep = o->keep[ik];
					if (case_add(&l, &c) < 0)
						goto fail;
				}
			}
		}
	}
	*nb = l.n;
	if (l.n > 0)
		return l.v;
fail:
	free(l.v);
	*nb = 0;
	return NULL;
}

static void
case_print(FILE *f, const struct perf_case *c)
{
	fprintf(f, "shmpool_perf cache=%s%u cores=%u ",
		c->claimed ? "claimed" : "", c->cache_size, c->workers);
	if (c->max_bulk != 0)
		fprintf(f, "n_max_bulk=%u random=1 ", c->max_bulk);
	else
		fprintf(f, "n_get_bulk=%u n_put_bulk=%u ", c->get_bulk,
			c->put_bulk);
	fprintf(f, "n_keep=%u constant_n=%d", c->keep, c->constant_n);
}

/*
 * The pool of every case, sized as DPDK's test sizes its own: for each
 * worker, what it keeps plus a cache (at least DPDK's 512 of each), and
 * never less than a cache's flush threshold.  Each worker then finds what
 * it needs whatever the others hold in hand and in cache.
 *
 * Unlike DPDK's test, no "- 1" that would make the count fill an rte_ring
 * exactly, and never within an eighth of that: ring_mt_rts releases ring
 * slots only when the last of the concurrent dequeues ends, so a put can
 * find the ring full while its objects' slots are still held, and
 * rte_mempool_generic_put() then drops the objects without a word (seen
 * here: 224 of 2047 objects lost in one second with 2 lcores).
 */
static void
setup_make(const struct options *o, const struct perf_case *cases,
		unsigned int nb)
{
	unsigned int i, j, keep = KEEP_FLOOR, cache = CACHE_DEFAULT;
	unsigned int sizes[LIST_MAX * 2], nb_sizes = 0;
	uint64_t count, ring;

	memset(&setup, 0, sizeof(setup));
	for (i = 0; i < nb; i++) {
		const struct perf_case *c = &cases[i];

		if (c->workers > setup.max_workers)
			setup.max_workers = c->workers;
		if (c->keep > keep)
			keep = c->keep;
		if (c->cache_size > setup.max_cache)
			setup.max_cache = c->cache_size;
		if (c->claimed || c->cache_size == 0)
			continue;
		for (j = 0; j < nb_sizes && sizes[j] != c->cache_size; j++)
			;
		if (j == nb_sizes && nb_sizes < LIST_MAX * 2)
			sizes[nb_sizes++] = c->cache_size;
	}
	if (setup.max_cache > cache)
		cache = setup.max_cache;
	if (keep < cache / 2)
		keep = cache / 2;
	count = (uint64_t)setup.max_workers * (keep + cache);
	if (count < SHMPOOL_CACHE_FLUSHTHRESH(cache))
		count = SHMPOOL_CACHE_FLUSHTHRESH(cache);
	for (ring = 1; ring <= count; ring <<= 1)
		;
	if (ring - 1 - count < ring / 8)
		count = ring;
	if (count > SHMPOOL_OBJ_COUNT_MAX)
		count = SHMPOOL_OBJ_COUNT_MAX;
	setup.obj_count = (unsigned int)count;
	setup.obj_size = o->obj_size;
	setup.nb_cache_sizes = nb_sizes;
	setup.seconds = o->seconds;
	setup.ring = o->ring;
	setup.verbose = o->verbose;
	setup.no_pin = o->no_pin;
	/* Without the list, no worker is kept to a CPU (nb_cpus 0). */
	if (perf_cpus_get(&setup) < 0) {
		fprintf(stderr, "%s: cannot read the CPUs this process may "
			"use: %s; no worker is kept to one\n", progname,
			strerror(errno));
		setup.nb_cpus = 0;
	}
}

/* A worker process: attach, wait for the others, run, report, detach. */
static int
sp_worker(const struct perf_case *c, unsigned int id, pid_t parent)
{
	struct shmpool_attach_opts opts = {
		.path = seg_path,
		.flags = SHMPOOL_ATTACH_CACHE_SIZE,
		.cache_size = c->claimed ? 0 : c->cache_size,
	};
	struct perf_result *res = &shm->res[id];
	struct sp_ctx ctx = { NULL, NULL };
	void **tab = NULL, *tab_block = NULL;
	int ret, cpu;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		return 1;
	/* Kept to its CPU before it attaches and allocates its table;
	 * without a cache, each get and put tries that CPU's ring first
	 * (ring_here() in the library). */
	cpu = perf_cpu(&setup, c, id);
	if (cpu >= 0 && perf_pin(&setup, cpu) < 0) {
		fprintf(stderr, "%s: worker %u: cannot keep to CPU %d: %s\n",
			progname, id, cpu, strerror(errno));
		__atomic_store_n(&shm->abort, 1, __ATOMIC_RELEASE);
		return 1;
	}

	ret = shmpool_attach(seg_name, &opts, &ctx.pool);
	if (ret < 0) {
		fprintf(stderr, "%s: worker %u: %s: %s\n", progname, id,
			shmpool_strerror(ret), shmpool_last_error());
		__atomic_store_n(&shm->abort, 1, __ATOMIC_RELEASE);
		return 1;
	}
	if (c->claimed) {
		ret = shmpool_cache_claim(ctx.pool, c->cache_size, &ctx.cache);
		if (ret < 0) {
			fprintf(stderr, "%s: worker %u: claim a cache of %u: "
				"%s: %s\n", progname, id, c->cache_size,
				shmpool_strerror(ret), shmpool_last_error());
			goto fail;
		}
	}
	tab = perf_tab_alloc(c->keep, c->tab_shift, &tab_block);
	if (tab == NULL) {
		fprintf(stderr, "%s: worker %u: out of memory\n", progname, id);
		goto fail;
	}

	__atomic_fetch_add(&shm->ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&shm->start, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&shm->abort, __ATOMIC_ACQUIRE))
			goto out;
		sched_yield();
	}
	PERF_STACK_SHIFT(c->stack_shift);
	if (c->claimed)
		ret = sp_claimed_timed(&ctx, tab, c, setup.seconds, id,
			&shm->stop, res);
	else
		ret = sp_default_timed(&ctx, tab, c, setup.seconds, id,
			&shm->stop, res);
	res->cpu = sched_getcpu();
	if (ret < 0)
		fprintf(stderr, "%s: worker %u: a get or put failed after %"
			PRIu64 " objects\n", progname, id, res->count);
out:
	free(tab_block);
	if (ctx.cache != NULL)
		shmpool_cache_release(ctx.cache);
	return shmpool_detach(ctx.pool) == 0 && ret == 0 ? 0 : 1;
fail:
	__atomic_store_n(&shm->abort, 1, __ATOMIC_RELEASE);
	free(tab_block);
	shmpool_detach(ctx.pool);
	return 1;
}

/* Sleep for seconds, or until a signal sets perf_stop. */
static void
perf_sleep(double seconds)
{
	struct timespec end;
	uint64_t ns;

	clock_gettime(CLOCK_MONOTONIC, &end);
	ns = (uint64_t)end.tv_nsec + (uint64_t)(seconds * 1e9);
	end.tv_sec += (time_t)(ns / 1000000000u);
	end.tv_nsec = (long)(ns % 1000000000u);
	while (!perf_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
			&end, NULL) == EINTR)
		;
}

/* Reap kid i if it is gone (or wait for it); -1 when it failed. */
static int
kid_reap(unsigned int i, int hang)
{
	int status;
	pid_t r;

	if (kids[i] <= 0)
		return 0;
	r = waitpid(kids[i], &status, hang ? 0 : WNOHANG);
	if (r == 0 || (r < 0 && errno == EINTR))
		return 1;	/* still running */
	kids[i] = 0;
	if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return 0;
}

/*
 * One run of case c on shmpool: fork the workers, start them together
 * once all are attached, stop them together when the time is up, and sum
 * their rates.  0, -1 when the case failed
 * (said on stderr), or -2 when interrupted.
 */
static int
sp_run(const struct perf_case *c, double *rate)
{
	struct timespec pause = { 0, 100000 };
	pid_t parent = getpid();
	unsigned int i, gone;
	int failed = 0, r;
	double sum = 0;

	memset(shm, 0, sizeof(*shm));
	for (i = 0; i < c->workers; i++)
		shm->res[i].status = -1;
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < c->workers && !perf_stop; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(sp_worker(c, i, parent));
		if (pid < 0) {
			fprintf(stderr, "%s: fork: %s\n", progname,
				strerror(errno));
			failed = 1;
			break;
		}
		kids[nb_kids++] = pid;
	}

	/* Start once every worker is attached and waiting. */
	while (!failed && !perf_stop &&
	       __atomic_load_n(&shm->ready, __ATOMIC_ACQUIRE) < c->workers) {
		for (i = 0; i < nb_kids; i++)
			if (kid_reap(i, 0) <= 0)
				failed = 1;	/* gone before the start */
		if (__atomic_load_n(&shm->abort, __ATOMIC_ACQUIRE))
			failed = 1;
		if (!failed)
			nanosleep(&pause, NULL);
	}
	if (failed || perf_stop) {
		__atomic_store_n(&shm->abort, 1, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&shm->start, 1, __ATOMIC_RELEASE);
		perf_sleep(setup.seconds);
		__atomic_store_n(&shm->stop, 1, __ATOMIC_RELAXED);
	}

	do {
		if (perf_stop) {
			kids_kill();
			return -2;
		}
		gone = 0;
		for (i = 0; i < nb_kids; i++) {
			r = kid_reap(i, 1);
			if (r < 0)
				failed = 1;
			else if (r == 0)
				gone++;
		}
	} while (gone < nb_kids);
	nb_kids = 0;
	if (failed)
		return -1;

	/* A worker may count nothing when the ring collapses; the case
	 * must count something. */
	for (i = 0; i < c->workers; i++) {
		const struct perf_result *res = &shm->res[i];

		if (res->status != 0 || res->ns == 0) {
			fprintf(stderr, "%s: worker %u did not run\n",
				progname, i);
			return -1;
		}
		if (!perf_cpu_ok(&setup, c, i, res->cpu)) {
			fprintf(stderr, "%s: worker %u ran on CPU %d, not %d\n",
				progname, i, res->cpu, perf_cpu(&setup, c, i));
			return -1;
		}
		sum += (double)res->count * 1e9 / (double)res->ns;
		if (setup.verbose)
			fprintf(stderr, "  worker %u: %" PRIu64 " objects in %"
				PRIu64 " ns on CPU %d\n", i, res->count,
				res->ns, res->cpu);
	}
	if (sum == 0) {
		fprintf(stderr, "%s: no worker counted anything\n", progname);
		return -1;
	}
	if (shmpool_avail_count(ctl_pool) != setup.obj_count) {
		fprintf(stderr, "%s: %u objects of %u are missing from the "
			"pool after the case\n", progname,
			setup.obj_count - shmpool_avail_count(ctl_pool),
			setup.obj_count);
		return -1;
	}
	*rate = sum;
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* DPDK's median rate and the ratio to it, "inf" when that median is 0. */
static void
ratio_print(double dpdk, double shmpool)
{
	printf(" dpdk_rate=%" PRIu64, (uint64_t)(dpdk + 0.5));
	if (dpdk > 0)
		printf(" ratio=%.2f", shmpool / dpdk);
	else
		printf(" ratio=inf");
}

/* Where the workers of a run are kept: "1,0" (worker 0 on CPU 1, worker
 * 1 on CPU 0), or "any" (perf_cpu()). */
static void
cpus_print(FILE *f, const struct perf_case *c)
{
	unsigned int i;

	if (perf_cpu(&setup, c, 0) < 0) {
		fputs("any", f);
		return;
	}
	for (i = 0; i < c->workers; i++)
		fprintf(f, "%s%d", i ? "," : "", perf_cpu(&setup, c, i));
}

/* One case, --repeat times, taking turns with DPDK; prints its line.  0;
 * -1 when it failed, -2 when interrupted, -3 when it failed and took the
 * pool with it: no other case can run. */
static int
case_run(const struct options *o, const struct perf_case *case_)
{
	double sp[PERF_REPEAT_MAX], dp[PERF_REPEAT_MAX], msp, mdp = 0;
	struct perf_case run = *case_, *c = &run;
	unsigned int r;
	int ret = 0, side, first;

	for (r = 0; r < o->repeat; r++) {
		run.stack_shift = perf_stack_shift(r, o->repeat);
		run.tab_shift = perf_tab_shift(r, o->repeat);
		run.code_place = perf_code_place(r);
		run.cpu_shift = r;
		/* shmpool first on even runs, DPDK first on odd ones, so that
		 * neither always follows the other. */
		first = o->vs_dpdk && r % 2;
		for (side = 0; side < (o->vs_dpdk ? 2 : 1); side++) {
			if ((side ^ first) == 0)
				ret = sp_run(c, &sp[r]);
#ifdef HAVE_DPDK
			else
				ret = dpdk_perf_run(c, &dp[r]);
#endif
			if (perf_stop)
				return -2;
			if (ret < 0) {
				fprintf(stderr, "%s: ", progname);
				case_print(stderr, c);
				fprintf(stderr, ": the %s run failed\n",
					(side ^ first) == 0 ? "shmpool" :
					"DPDK");
				/* A worker that died may have taken objects,
				 * its slot and its cache with it, or left the
				 * ring half-written: the next case starts on
				 * a pool made anew, as the first did.  (DPDK's
				 * side makes its own again, dpdk-perf.c.) */
				if ((side ^ first) == 0) {
					pool_remove();
					if (pool_make() < 0)
						return -3;
				}
				return -1;
			}
		}
		if (o->verbose) {
			fprintf(stderr, "  run %u (stacks %u bytes down, "
				"tables at %u, code at +%u, CPUs ", r + 1,
				run.stack_shift, run.tab_shift,
				run.code_place * PERF_CODE_STEP);
			cpus_print(stderr, c);
			fprintf(stderr, "): shmpool %.0f", sp[r]);
			if (o->vs_dpdk)
				fprintf(stderr, " dpdk %.0f ratio %.3f", dp[r],
					sp[r] / dp[r]);
			fputc('\n', stderr);
		}
	}
	msp = median(sp, o->repeat);
	if (o->vs_dpdk)
		mdp = median(dp, o->repeat);
	case_print(stdout, c);
	printf(" rate_persec=%" PRIu64, (uint64_t)(msp + 0.5));
	if (o->vs_dpdk)
		ratio_print(mdp, msp);
	putchar('\n');
	/* Each line as its case ends: the next may take minutes. */
	lines_flush();
	return 0;
}

static int
options_parse(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "workers", required_argument, NULL, 'w' },
		{ "cache", required_argument, NULL, 'c' },
		{ "get-bulk", required_argument, NULL, 'g' },
		{ "put-bulk", required_argument, NULL, 'p' },
		{ "all-pairs", no_argument, NULL, 'A' },
		{ "keep", required_argument, NULL, 'k' },
		{ "constant-n", required_argument, NULL, 'n' },
		{ "random", required_argument, NULL, 'r' },
		{ "random-only", no_argument, NULL, 'R' },
		{ "seconds", required_argument, NULL, 's' },
		{ "repeat", required_argument, NULL, 'N' },
		{ "object-size", required_argument, NULL, 'b' },
		{ "vs-dpdk", no_argument, NULL, 'D' },
		{ "dpdk-ring", required_argument, NULL, 'F' },
		{ "no-pin", no_argument, NULL, 'P' },
		{ "smoke", no_argument, NULL, 'S' },
		{ "list", no_argument, NULL, 'L' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct options given;
	unsigned int ncpu = cpus_available(), one[LIST_MAX], i;
	char workers_default[32], *end;
	size_t len;
	int opt, ret = 0;

	memset(o, 0, sizeof(*o));
	memset(&given, 0, sizeof(given));
	o->seconds = 1.0;
	o->obj_size = 2048;
	o->ring = "ring_mp_mc";
	while ((opt = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'w':
			ret = parse_list("--workers", optarg, 1,
				PERF_WORKERS_MAX, given.workers,
				&given.nb_workers);
			break;
		case 'c':
			ret = parse_caches(optarg, &given);
			break;
		case 'g':
			ret = parse_list("--get-bulk", optarg, 1, PERF_BULK_MAX,
				given.get, &given.nb_get);
			break;
		case 'p':
			ret = parse_list("--put-bulk", optarg, 1, PERF_BULK_MAX,
				given.put, &given.nb_put);
			break;
		case 'A':
			o->all_pairs = 1;
			break;
		case 'k':
			ret = parse_list("--keep", optarg, 1, PERF_KEEP_MAX,
				given.keep, &given.nb_keep);
			break;
		case 'n':
			ret = parse_list("--constant-n", optarg, 0, 1,
				given.constant, &given.nb_constant);
			break;
		case 'r':
			if (strcmp(optarg, "none") == 0) {
				o->random_none = 1;
				given.nb_random = 0;
			} else {
				o->random_none = 0;
				ret = parse_list("--random", optarg, 1,
					PERF_BULK_MAX, given.random,
					&given.nb_random);
			}
			break;
		case 'R':
			o->random_only = 1;
			break;
		case 's':
			errno = 0;
			o->seconds = strtod(optarg, &end);
			if (errno != 0 || *end != '\0' || end == optarg ||
			    !(o->seconds > 0 && o->seconds <= 3600))
				ret = usage_error("--seconds '%s': expected "
					"0 < S <= 3600", optarg);
			break;
		case 'N':
			ret = parse_list("--repeat", optarg, 1, PERF_REPEAT_MAX,
				one, &i);
			if (ret == 0 && i != 1)
				ret = usage_error("--repeat '%s': one number",
					optarg);
			o->repeat = one[0];
			break;
		case 'b':
			ret = parse_list("--object-size", optarg, 1,
				SHMPOOL_OBJ_SIZE_MAX, one, &i);
			if (ret == 0 && i != 1)
				ret = usage_error("--object-size '%s': one "
					"number", optarg);
			o->obj_size = one[0];
			break;
		case 'D':
			o->vs_dpdk = 1;
			break;
		case 'F':
			if (strcmp(optarg, "ring_mp_mc") != 0 &&
			    strcmp(optarg, "ring_mt_rts") != 0 &&
			    strcmp(optarg, "ring_mt_hts") != 0)
				ret = usage_error("--dpdk-ring '%s': expected "
					"ring_mp_mc, ring_mt_rts or "
					"ring_mt_hts", optarg);
			o->ring = optarg;
			break;
		case 'P':
			o->no_pin = 1;
			break;
		case 'S':
			o->smoke = 1;
			break;
		case 'L':
			o->list = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'h':
			/* The list a run would use, on these CPUs (what
			 * was given is not needed any more). */
			memset(&given, 0, sizeof(given));
			options_default(&given, ncpu);
			for (len = 0, i = 0; i < given.nb_workers; i++)
				len += (size_t)snprintf(workers_default + len,
					sizeof(workers_default) - len, "%s%u",
					i ? "," : "", given.workers[i]);
			printf("%s", usage_text);
			printf(help_text, workers_default);
			return 1;
		default:
			fprintf(stderr, "%s", usage_text);
			return -1;
		}
		if (ret < 0)
			return -1;
	}
	if (optind != argc)
		return usage_error("unexpected argument '%s'", argv[optind]);

	/* What was not given: --smoke's one case, or the full table. */
	if (o->smoke) {
		o->workers[o->nb_workers++] = 1;
		o->caches[o->nb_caches++] = (struct cache_sel){ 512, 0 };
		o->get[o->nb_get++] = 32;
		o->keep[o->nb_keep++] = 128;
		o->constant[o->nb_constant++] = 0;
		/* No random case, unless --random-only asks for it: then
		 * sizes drawn from 1..32, the random list being the get
		 * list's by default. */
		if (given.nb_random == 0 && !o->random_only)
			o->random_none = 1;
	} else {
		options_default(o, ncpu);
	}
#define TAKE(list, nb) do {						\
		if (given.nb > 0) {					\
			memcpy(o->list, given.list, sizeof(o->list));	\
			o->nb = given.nb;				\
		}							\
	} while (0)
	TAKE(workers, nb_workers);
	TAKE(caches, nb_caches);
	TAKE(get, nb_get);
	TAKE(put, nb_put);
	TAKE(keep, nb_keep);
	TAKE(constant, nb_constant);
	TAKE(random, nb_random);
#undef TAKE
	if (o->nb_put == 0) {
		memcpy(o->put, o->get, sizeof(o->put));
		o->nb_put = o->nb_get;
	}
	if (o->nb_random == 0) {
		memcpy(o->random, o->get, sizeof(o->random));
		o->nb_random = o->nb_get;
	}
	/* Only for the fixed sizes: a random case ignores the put list. */
	if (given.nb_put > 0 && !o->all_pairs && !o->random_only) {
		unsigned int ig, ip, common = 0;

		for (ig = 0; ig < o->nb_get; ig++)
			for (ip = 0; ip < o->nb_put; ip++)
				common += o->get[ig] == o->put[ip];
		if (common == 0)
			return usage_error("%s", "no get size equals a put "
				"size: add --all-pairs");
	}
	if (o->random_only && o->random_none)
		return usage_error("%s", "--random-only and --random none "
			"leave no case");
	if (o->repeat == 0)
		o->repeat = o->vs_dpdk ? 3 : 1;
	return 0;
}

static int
perf_main(int argc, char **argv)
{
	struct perf_case *cases;
	struct options o;
	unsigned int nb, i, failed = 0;
	double t;
	int ret;

	ret = options_parse(argc, argv, &o);
	if (ret != 0)
		return ret > 0 ? 0 : 2;
	cases = cases_build(&o, &nb);
	if (cases == NULL) {
		fprintf(stderr, "%s: no case: %s\n", progname,
			cases_fixed_none(&o));
		return 2;
	}
	for (i = 0; i < nb && cases[i].max_bulk != 0; i++)
		;
	if (i == nb && !o.random_only)
		fprintf(stderr, "%s: no fixed-size case: %s; random cases "
			"only\n", progname, cases_fixed_none(&o));
	setup_make(&o, cases, nb);
	/* A usage error before anything else, --list and a build without
	 * DPDK included: what the options ask cannot be run anywhere. */
	if (o.vs_dpdk && setup.max_cache > CACHE_DEFAULT) {
		fprintf(stderr, "%s: --vs-dpdk: DPDK's caches hold at most %u "
			"objects, not %u\n", progname, CACHE_DEFAULT,
			setup.max_cache);
		free(cases);
		return 2;
	}

	if (o.list) {
		for (i = 0; i < nb; i++) {
			case_print(stdout, &cases[i]);
			putchar('\n');
		}
		lines_flush();
		/* The pool a run would make, not made. */
		if (o.verbose)
			fprintf(stderr, "%s: pool: %u objects of %u bytes, %u "
				"slots\n", progname, setup.obj_count,
				setup.obj_size, pool_slots());
		t = nb * o.repeat * (o.vs_dpdk ? 2 : 1) *
			(o.seconds + CASE_OVERHEAD);
		fprintf(stderr, "%u cases, %u run(s) each%s: about %.0f s "
			"(%.1f min)\n", nb, o.repeat,
			o.vs_dpdk ? " on each side" : "", t, t / 60);
		free(cases);
		return 0;
	}

	signals_catch();
	if (o.vs_dpdk) {
#ifdef HAVE_DPDK
		if (dpdk_perf_init(&setup) < 0) {
			free(cases);
			return 1;
		}
		dpdk_up = 1;
#else
		fprintf(stderr, "%s: --vs-dpdk: this shmpool-perf was built "
			"without DPDK (configure found no libdpdk; install "
			"libdpdk-dev and configure again)\n", progname);
		free(cases);
		return 1;
#endif
	}

	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
		MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED) {
		fprintf(stderr, "%s: mmap: %s\n", progname, strerror(errno));
		cleanup();
		free(cases);
		return 1;
	}

	if (pool_make() < 0) {
		cleanup();
		free(cases);
		return 1;
	}
	if (o.verbose)
		fprintf(stderr, "%s: pool %s: %u objects of %u bytes, %u "
			"slots; %u case(s), %u run(s) each, %g s per run\n",
			progname, seg_path, setup.obj_count, setup.obj_size,
			pool_slots(), nb, o.repeat, o.seconds);

	for (i = 0; i < nb && !perf_stop; i++) {
		ret = case_run(&o, &cases[i]);
		if (ret == -2)
			break;
		if (ret < 0)
			failed++;
		if (ret == -3) {
			fprintf(stderr, "%s: the %u case(s) after it cannot "
				"run without a pool\n", progname, nb - i - 1);
			break;
		}
	}
	cleanup();
	free(cases);
	if (perf_stop) {
		fprintf(stderr, "%s: interrupted\n", progname);
		return 128 + perf_stop;
	}
	if (failed)
		fprintf(stderr, "%s: %u case(s) of %u failed\n", progname,
			failed, nb);
	return failed ? 1 : 0;
}

int
main(int argc, char **argv)
{
	return stdout_close(perf_main(argc, argv));
}
