/*
 * shmpool-demo - a pool shared by worker processes, start to finish.
 *
 * With --pool NAME, forks workers that attach to that pool by name
 * (through shmpoold, which must be serving it) and get and put objects in
 * random bulks for a while, then prints what the pool counted.  Without
 * it, the demo makes a pool of its own (shmpool_segment_create()) in a
 * folder of its own under /dev/shm, where no shmpoold looks for pools,
 * has the workers attach to its file, and removes both at the end.  Each
 * worker stamps the objects it holds with its pid and checks that nobody
 * else's stamp is on an object it was given.  Every call's result is
 * checked, and a worker that stops early puts back what it holds.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shmpool.h>

#define MAX_HELD	256

struct demo_obj {
	pid_t owner;			/* 0 while free */
	uint32_t uses;
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Put back the n objects of held, unstamped: 0, or -1 said. */
static int
put_back(struct shmpool *pool, void **held, unsigned int n, pid_t me)
{
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		struct demo_obj *o = held[i];

		if (o->owner == me)
			o->owner = 0;
	}
	ret = shmpool_put_bulk(pool, held, n);
	if (ret < 0) {
		fprintf(stderr, "worker %d: put of %u: %s (%s)\n", (int)me, n,
			shmpool_strerror(ret), shmpool_last_error());
		return -1;
	}
	return 0;
}

/* One worker: attach by name, get and put until the time is up. */
static int
worker(const char *name, const char *path, double seconds, unsigned int seed)
{
	struct shmpool_attach_opts opts = { .path = path };
	void *held[MAX_HELD];
	unsigned int nheld = 0, n, i;
	unsigned long long objs = 0;
	struct shmpool *pool;
	double end = now() + seconds;
	pid_t me = getpid();
	int ret, failed = 0;

	ret = shmpool_attach(name, path != NULL ? &opts : NULL, &pool);
	if (ret < 0) {
		fprintf(stderr, "worker %d: attach %s: %s (%s)\n", (int)me,
			name, shmpool_strerror(ret), shmpool_last_error());
		return 1;
	}
	srand(seed);
	while (!failed && now() < end) {
		for (int k = 0; k < 1024 && !failed; k++) {
			n = 1 + (unsigned int)rand() % 32;
			if (nheld + n <= MAX_HELD &&
			    shmpool_get_bulk(pool, held + nheld, n) == 0) {
				for (i = nheld; i < nheld + n; i++) {
					struct demo_obj *o = held[i];

					if (o->owner != 0) {
						fprintf(stderr, "object held "
							"by %d and %d\n",
							(int)o->owner, (int)me);
						failed = 1;
						continue;
					}
					o->owner = me;
					o->uses++;
				}
				/* Given to us, whatever their stamps:
				 * ours to put back. */
				nheld += n;
				objs += n;
			}
			if (nheld == 0 || failed)
				continue;
			n = 1 + (unsigned int)rand() % nheld;
			if (put_back(pool, held + nheld - n, n, me) < 0)
				failed = 1;
			else
				nheld -= n;
		}
	}
	if (nheld > 0 && put_back(pool, held, nheld, me) < 0)
		failed = 1;
	printf("worker %d: got and put back %llu objects\n", (int)me, objs);
	fflush(stdout);
	ret = shmpool_detach(pool);
	if (ret < 0) {
		fprintf(stderr, "worker %d: detach: %s (%s)\n", (int)me,
			shmpool_strerror(ret), shmpool_last_error());
		failed = 1;
	}
	return failed;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: shmpool-demo [--pool NAME] [--workers N] "
		"[--seconds S]\n"
		"                    [--objects N] [--object-size B] "
		"[--cache C]\n");
}

/* The pool of the demo's own, and its folder, removed. */
static void
remove_own(const char *path, const char *dir)
{
	if (path[0] != '\0')
		unlink(path);
	if (dir[0] != '\0')
		rmdir(dir);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pool", required_argument, NULL, 'p' },
		{ "workers", required_argument, NULL, 'w' },
		{ "seconds", required_argument, NULL, 's' },
		{ "objects", required_argument, NULL, 'n' },
		{ "object-size", required_argument, NULL, 'b' },
		{ "cache", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct shmpool_params p = {
		.obj_count = 4096, .obj_size = sizeof(struct demo_obj),
		.cache_size = 64,
	};
	struct shmpool_stats st;
	struct shmpool_info info;
	struct shmpool *pool;
	struct shmpool_attach_opts opts = { 0 };
	const char *pool_name = NULL;
	char name[SHMPOOL_NAME_MAX + 1], dir[64] = "";
	char path[sizeof(dir) + sizeof(name) + 16] = "";
	double seconds = 1.0;
	int workers = 2, opt, i, ret, failed = 0, own_params = 0;
	pid_t pids[64];

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p': pool_name = optarg; break;
		case 'w': workers = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'n': p.obj_count = (unsigned int)strtoul(optarg, NULL, 0);
			own_params = 1; break;
		case 'b': p.obj_size = (unsigned int)strtoul(optarg, NULL, 0);
			own_params = 1; break;
		case 'c': p.cache_size = (unsigned int)strtoul(optarg, NULL, 0);
			own_params = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || workers < 1 || workers > 64 || seconds < 0 ||
	    p.obj_size < sizeof(struct demo_obj)) {
		usage(stderr);
		return 2;
	}
	if (pool_name != NULL && own_params) {
		fprintf(stderr, "shmpool-demo: --objects, --object-size and "
			"--cache shape a pool of the demo's own, not one of "
			"--pool\n");
		usage(stderr);
		return 2;
	}

	if (pool_name != NULL) {
		/* A pool shmpoold serves: attach by name. */
		snprintf(name, sizeof(name), "%s", pool_name);
	} else {
		/* A folder of its own: a shmpoold serving /dev/shm would
		 * take a pool file there for one of its own. */
		snprintf(dir, sizeof(dir), "/dev/shm/shmpool-demo.XXXXXX");
		if (mkdtemp(dir) == NULL) {
			fprintf(stderr, "shmpool-demo: %s: %s\n", dir,
				strerror(errno));
			return 1;
		}
		snprintf(name, sizeof(name), "demo-%d", (int)getpid());
		snprintf(path, sizeof(path), "%s/shmpool.%s", dir, name);
		ret = shmpool_segment_create(path, name, &p, 0600);
		if (ret < 0) {
			fprintf(stderr, "shmpool-demo: %s\n",
				shmpool_last_error());
			path[0] = '\0';
			remove_own(path, dir);
			return 1;
		}
		opts.path = path;
	}
	/* Attached first, to see that the objects can hold the stamp, and
	 * for the counts at the end; the workers attach on their own. */
	ret = shmpool_attach(name, opts.path != NULL ? &opts : NULL, &pool);
	if (ret == 0 && (ret = shmpool_info(pool, &info)) < 0)
		shmpool_detach(pool);
	if (ret < 0) {
		fprintf(stderr, "shmpool-demo: %s: %s (%s)\n", name,
			shmpool_strerror(ret), shmpool_last_error());
		remove_own(path, dir);
		return 1;
	}
	if (info.obj_size < sizeof(struct demo_obj)) {
		fprintf(stderr, "shmpool-demo: pool %s: objects of %u bytes "
			"cannot hold the demo's stamp of %zu\n", name,
			info.obj_size, sizeof(struct demo_obj));
		shmpool_detach(pool);
		remove_own(path, dir);
		return 1;
	}
	if (pool_name != NULL)
		printf("pool %s: %d workers attach through shmpoold\n", name,
			workers);
	else
		printf("pool %s: %u objects of %u bytes, cache %u, in %s\n",
			name, p.obj_count, p.obj_size, p.cache_size, path);
	fflush(stdout);

	for (i = 0; i < workers; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(worker(name, opts.path, seconds,
				(unsigned int)i + 1));
	}
	for (i = 0; i < workers; i++) {
		int status;

		if (pids[i] < 0 || waitpid(pids[i], &status, 0) < 0 ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed = 1;
	}

	ret = shmpool_stats_read(pool, SHMPOOL_STATS_ALL, &st);
	if (ret < 0) {
		fprintf(stderr, "shmpool-demo: stats: %s (%s)\n",
			shmpool_strerror(ret), shmpool_last_error());
		failed = 1;
		memset(&st, 0, sizeof(st));
	}
	printf("pool %s: size %u, avail %u, in use %u, segment %" PRIu64
		" bytes on %s pages of %" PRIu64 "\n", info.name,
		info.obj_count, shmpool_avail_count(pool),
		shmpool_in_use_count(pool), info.seg_size,
		info.flags & SHMPOOL_INFO_HUGE ? "huge" : "normal",
		info.page_size);
	printf("  get_success_bulk %" PRIu64 " get_success_objs %" PRIu64
		" get_fail_bulk %" PRIu64 "\n", st.get_success_bulk,
		st.get_success_objs, st.get_fail_bulk);
	printf("  put_bulk %" PRIu64 " put_objs %" PRIu64
		" put_common_pool_bulk %" PRIu64 " get_common_pool_bulk %"
		PRIu64 "\n", st.put_bulk, st.put_objs,
		st.put_common_pool_bulk, st.get_common_pool_bulk);
	/* Its own pool is whole again once the workers are done. */
	if (opts.path != NULL && shmpool_avail_count(pool) != info.obj_count)
		failed = 1;
	ret = shmpool_detach(pool);
	if (ret < 0) {
		fprintf(stderr, "shmpool-demo: detach: %s (%s)\n",
			shmpool_strerror(ret), shmpool_last_error());
		failed = 1;
	}
	remove_own(path, dir);
	printf("%s\n", failed ? "FAILED" : "ok");
	return failed;
}
