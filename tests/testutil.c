/*
 * testutil.c - see testutil.h.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static char scratch[] = "/dev/shm/shmpool-test.XXXXXX";

const char *
tu_dir(void)
{
	return scratch;
}

const char *
tu_path(const char *name)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s/shmpool.%s", scratch, name);
	return path;
}

void
tu_create(const char *name, unsigned int count, unsigned int size,
		unsigned int cache, unsigned int slots)
{
	struct shmpool_params p = {
		.obj_count = count,
		.obj_size = size,
		.cache_size = cache,
		.nb_slots = slots,
	};
	int ret = shmpool_segment_create(tu_path(name), name, &p, 0600);

	ck_assert_msg(ret == 0, "create %s: %s (%s)", name,
		shmpool_strerror(ret), shmpool_last_error());
}

struct shmpool *
tu_attach(const char *name, int cache)
{
	struct shmpool_attach_opts o = { .path = tu_path(name) };
	struct shmpool *pool = NULL;
	int ret;

	if (cache >= 0) {
		o.flags = SHMPOOL_ATTACH_CACHE_SIZE;
		o.cache_size = (unsigned int)cache;
	}
	ret = shmpool_attach(name, &o, &pool);
	ck_assert_msg(ret == 0, "attach %s: %s (%s)", name,
		shmpool_strerror(ret), shmpool_last_error());
	return pool;
}

unsigned int
tu_slots_in_use(const struct shmpool *pool)
{
	struct shmpool_info info;

	ck_assert_int_eq(shmpool_info(pool, &info), 0);
	return info.slots_in_use;
}

double
tu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void
tu_wait_children(const pid_t *pids, int n, int seconds)
{
	double deadline = tu_now() + seconds;
	int left = n, i, status;
	int *done = calloc((size_t)n, sizeof(*done));

	ck_assert_ptr_nonnull(done);
	while (left > 0) {
		for (i = 0; i < n; i++) {
			if (done[i] || waitpid(pids[i], &status, WNOHANG) == 0)
				continue;
			done[i] = 1;
			left--;
			ck_assert_msg(WIFEXITED(status) &&
				WEXITSTATUS(status) == 0,
				"child %d: status 0x%x", (int)pids[i], status);
		}
		if (left > 0 && tu_now() > deadline) {
			for (i = 0; i < n; i++)
				if (!done[i])
					kill(pids[i], SIGKILL);
			ck_abort_msg("%d children still running after %d s",
				left, seconds);
		}
		if (left > 0)
			usleep(1000);
	}
	free(done);
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void
tu_rm_tree(const char *dir)
{
	/* Not into mounts: a hugetlbfs left mounted stays whole. */
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

#define NR_HUGEPAGES	"/proc/sys/vm/nr_hugepages"
#define HUGE_LOCK_WAIT	60	/* seconds */

/* The reservation, for tu_huge_release() and the signals: kept by the
 * runner (huge_owner) alone, Check's test processes inheriting it.
 * huge_n is what this run added to nr_hugepages, as read back. */
static volatile sig_atomic_t huge_held;
static pid_t huge_owner;
static int huge_lock_fd = -1;
static long huge_n;
static char huge_mnt[256];
static const int huge_sigs[] = { SIGINT, SIGTERM, SIGHUP };
#define HUGE_SIGS	(sizeof(huge_sigs) / sizeof(huge_sigs[0]))
/* Their actions before huge_catch(): Check's own, in a runner that has
 * begun (it kills its tests' process group), to be run after ours. */
static struct sigaction huge_old[HUGE_SIGS];
static int huge_caught[HUGE_SIGS];

/* nr_hugepages (delta 0: read alone), or plus delta: the count read,
 * or -1; with calls safe in a signal handler. */
static long
huge_add(long delta)
{
	char buf[32];
	ssize_t len;
	long v = 0, was;
	int fd, i, n;

	fd = open(NR_HUGEPAGES, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	for (i = 0; i < len && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (buf[i] - '0');
	if (len <= 0 || i == 0 || v + delta < 0) {
		close(fd);
		return -1;
	}
	was = v;
	if (delta != 0) {
		v += delta;
		/* The digits, from the end. */
		n = (int)sizeof(buf);
		buf[--n] = '\n';
		do
			buf[--n] = (char)('0' + v % 10);
		while ((v /= 10) > 0);
		if (pwrite(fd, buf + n, sizeof(buf) - (size_t)n, 0) !=
				(ssize_t)sizeof(buf) - n)
			was = -1;
	}
	return close(fd) == 0 ? was : -1;
}

/* The three signals blocked (how SIG_BLOCK), or back as they were. */
static void
huge_block(int how, sigset_t *old)
{
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < HUGE_SIGS; i++)
		sigaddset(&set, huge_sigs[i]);
	if (how == SIG_BLOCK)
		sigprocmask(SIG_BLOCK, &set, old);
	else
		sigprocmask(SIG_SETMASK, old, NULL);
}

/* Undo what is held, in the runner; from a handler too (the signals are
 * blocked in it, and around every other call). */
static void
huge_undo(void)
{
	if (!huge_held || getpid() != huge_owner)
		return;
	if (huge_mnt[0] != '\0') {
		umount2(huge_mnt, MNT_DETACH);
		rmdir(huge_mnt);
		huge_mnt[0] = '\0';
	}
	if (huge_n > 0)
		huge_add(-huge_n);
	huge_n = 0;
	close(huge_lock_fd);
	huge_lock_fd = -1;
	huge_held = 0;
}

/* The actions huge_catch() replaced, back. */
static void
huge_uncatch(void)
{
	size_t i;

	for (i = 0; i < HUGE_SIGS; i++)
		if (huge_caught[i]) {
			sigaction(huge_sigs[i], &huge_old[i], NULL);
			huge_caught[i] = 0;
		}
}

/* Undo, then the action that was there (Check's, or the default), which
 * the signal, raised again, meets once this handler returns. */
static void
huge_on_signal(int sig)
{
	huge_undo();
	huge_uncatch();
	raise(sig);
}

/* Catch the signals that the process is not ignoring (nohup). */
static void
huge_catch(void)
{
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = huge_on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < HUGE_SIGS; i++)
		sigaddset(&sa.sa_mask, huge_sigs[i]);
	for (i = 0; i < HUGE_SIGS; i++)
		if (sigaction(huge_sigs[i], NULL, &huge_old[i]) == 0 &&
		    huge_old[i].sa_handler != SIG_IGN)
			huge_caught[i] = sigaction(huge_sigs[i], &sa,
				NULL) == 0;
}

/* tu_huge_reserve() with the signals blocked. */
static int
huge_reserve(long n, const char *mnt, const char **why)
{
	const char *lock = access("/run/lock", W_OK) == 0 ?
		"/run/lock/shmpool-tests-hugepages.lock" :
		"/tmp/shmpool-tests-hugepages.lock";
	double deadline = tu_now() + HUGE_LOCK_WAIT;
	long nr, now;

	huge_lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (huge_lock_fd < 0) {
		*why = "cannot open the huge pages' lock file";
		return -1;
	}
	while (flock(huge_lock_fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK || tu_now() > deadline) {
			*why = "another run of the tests held the huge pages "
				"for a minute";
			close(huge_lock_fd);
			huge_lock_fd = -1;
			return -1;
		}
		usleep(20000);
	}
	huge_owner = getpid();
	huge_n = 0;
	huge_mnt[0] = '\0';
	huge_held = 1;
	huge_catch();
	nr = huge_add(n);
	/* What the kernel made of it: it may add fewer than asked. */
	now = huge_add(0);
	if (nr >= 0 && now > nr)
		huge_n = now - nr;
	if (nr < 0 || now < 0) {
		*why = "cannot write nr_hugepages";
		return -1;
	}
	if (huge_n < n || tu_meminfo("HugePages_Free:") < n) {
		*why = "cannot reserve huge pages";
		return -1;
	}
	if (mkdir(mnt, 0755) < 0) {
		*why = "cannot make the hugetlbfs folder";
		return -1;
	}
	if (mount("none", mnt, "hugetlbfs", 0, NULL) < 0) {
		*why = "cannot mount hugetlbfs";
		rmdir(mnt);
		return -1;
	}
	snprintf(huge_mnt, sizeof(huge_mnt), "%s", mnt);
	return 0;
}

int
tu_huge_reserve(long n, const char *mnt, const char **why)
{
	sigset_t old;
	int ret;

	if (geteuid() != 0) {
		*why = "not root";
		return -1;
	}
	huge_block(SIG_BLOCK, &old);
	ret = huge_reserve(n, mnt, why);
	if (ret < 0) {
		huge_undo();
		huge_uncatch();
	}
	huge_block(SIG_SETMASK, &old);
	return ret;
}

void
tu_huge_release(void)
{
	sigset_t old;

	huge_block(SIG_BLOCK, &old);
	huge_undo();
	huge_uncatch();
	huge_block(SIG_SETMASK, &old);
}

static const char strays_name[] = "strays";

void
tu_stray(pid_t pid)
{
	char path[sizeof(scratch) + sizeof(strays_name) + 1];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", scratch, strays_name);
	f = fopen(path, "a");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	ck_assert_int_gt(fprintf(f, "%ld\n", (long)pid), 0);
	ck_assert_int_eq(fclose(f), 0);
}

/* Whether pid's command line names the scratch folder. */
static int
stray_ours(long pid)
{
	char path[64], cmd[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, cmd, sizeof(cmd) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	return memmem(cmd, (size_t)n, scratch, strlen(scratch)) != NULL;
}

static void
strays_kill(void)
{
	char path[sizeof(scratch) + sizeof(strays_name) + 1];
	FILE *f;
	long pid;

	snprintf(path, sizeof(path), "%s/%s", scratch, strays_name);
	f = fopen(path, "r");
	if (f == NULL)
		return;
	while (fscanf(f, "%ld", &pid) == 1)
		if (pid > 0 && stray_ours(pid)) {
			fprintf(stderr, "a test left process %ld running: "
				"killed\n", pid);
			kill((pid_t)pid, SIGKILL);
		}
	fclose(f);
}

int
tu_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	if (mkdtemp(scratch) == NULL) {
		perror("mkdtemp");
		return 99;
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	strays_kill();
	tu_rm_tree(scratch);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* A field of /proc/meminfo, e.g. "HugePages_Free:" or "Hugepagesize:". */
long
tu_meminfo(const char *field)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long v = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, strlen(field)) == 0)
			v = strtol(line + strlen(field), NULL, 10);
	fclose(f);
	return v;
}

/* KernelPageSize, in kB, of this process's mapping of path. */
long
tu_mapping_page_kb(const char *path)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0;
	long kb = -1;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strchr(line, '/') != NULL || strstr(line, "-") == line + 12)
			in = strstr(line, path) != NULL;
		if (in && sscanf(line, "KernelPageSize: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/* Entries in folder dir, other than . and .. */
int
tu_count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

void
tu_check_stats(const struct shmpool *pool, int slot,
		const struct shmpool_stats *e, const char *what)
{
	struct shmpool_stats st;

	ck_assert_int_eq(shmpool_stats_read(pool, slot, &st), 0);
	TU_CHECK_FIELD(st, *e, put_bulk, what);
	TU_CHECK_FIELD(st, *e, put_objs, what);
	TU_CHECK_FIELD(st, *e, put_common_pool_bulk, what);
	TU_CHECK_FIELD(st, *e, put_common_pool_objs, what);
	TU_CHECK_FIELD(st, *e, get_common_pool_bulk, what);
	TU_CHECK_FIELD(st, *e, get_common_pool_objs, what);
	TU_CHECK_FIELD(st, *e, get_success_bulk, what);
	TU_CHECK_FIELD(st, *e, get_success_objs, what);
	TU_CHECK_FIELD(st, *e, get_fail_bulk, what);
	TU_CHECK_FIELD(st, *e, get_fail_objs, what);
}

struct shmpool_stats
tu_stats_add(struct shmpool_stats a, const struct shmpool_stats *b,
		int times)
{
	uint64_t *pa = (uint64_t *)&a;
	const uint64_t *pb = (const uint64_t *)b;
	size_t i;

	for (i = 0; i < sizeof(a) / sizeof(uint64_t); i++)
		pa[i] += pb[i] * (uint64_t)times;
	return a;
}
