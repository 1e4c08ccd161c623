/*
 * check_daemon.c - shmpoold for real.  Each test starts a daemon of its
 * own in the foreground, on a socket and a shm dir in a folder of its own,
 * talks the protocol to it raw over SOCK_SEQPACKET, attaches forked
 * workers through it, kills workers and daemons with SIGKILL, and stops it
 * with SIGTERM at the end.  The parts that need root (credentials, huge
 * pages) print SKIP and pass for other users.
 *
 * Cleanup when an assertion fails: Check kills the process group of each
 * test, and every daemon and worker forked here also dies with its parent
 * (PR_SET_PDEATHSIG); the folders go with the suite's scratch folder.
 */
#include "config.h"

#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/rseq.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "segment-internal.h"
#include "testutil.h"

#define REPLY_MAX	65536		/* bytes in a reply */
#define REQ_MAX		4096		/* bytes in a request */
#define START_SECS	5.0		/* until a daemon answers ping */
#define STOP_SECS	5.0		/* until it exits after SIGTERM */
#define RECLAIM_SECS	1.0		/* until a dead slot is free */
#define NOBODY		65534

/* A daemon of a test, and the folder it works in. */
struct daemon {
	pid_t pid;
	char dir[256];		/* --shm-dir; holds everything below */
	char sock[320];		/* --socket */
	char conf[320];		/* --config */
	char err[320];		/* its stderr */
	char huge[320];		/* --hugetlbfs */
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *
daemon_bin(void)
{
	static char path[512];
	const char *top = getenv("top_builddir");

	snprintf(path, sizeof(path), "%s/shmpoold/shmpoold",
		top != NULL && *top != '\0' ? top : ".");
	return path;
}

/* The whole of a small file, NUL-terminated, in a static buffer. */
static const char *
slurp(const char *path)
{
	static char buf[1 << 20];
	ssize_t n = 0, r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	buf[0] = '\0';
	if (fd < 0)
		return buf;
	while (n < (ssize_t)sizeof(buf) - 1 &&
	       (r = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	close(fd);
	buf[n] = '\0';
	return buf;
}

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
}

static int
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Die with the parent, so that a failed test leaves nothing running. */
static void
die_with_parent(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(99);
}

/* Fork a worker that dies with this process and exits with fn's value. */
static pid_t
fork_worker(int (*fn)(void *), void *arg)
{
	pid_t parent = getpid(), pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		die_with_parent(parent);
		_exit(fn(arg));
	}
	return pid;
}

/*
 * Wait for pid to end within secs; 1 and its status if it did, else 0
 * (and then it is killed and reaped).
 */
static int
wait_exit(pid_t pid, double secs, int *status)
{
	double deadline = now() + secs;

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 1;
		ck_assert_msg(r == 0, "waitpid %d: %s", (int)pid,
			strerror(errno));
		if (now() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			return 0;
		}
		usleep(1000);
	}
}

/* ------------------------------------------------------------------ */
/* The protocol, raw. */

static int
conn_open(const char *sock)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	int fd, err;

	ck_assert_uint_lt(strlen(sock), sizeof(sun.sun_path));
	strcpy(sun.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ck_assert_msg(fd >= 0, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

/*
 * Send one packet of len bytes and receive one reply into reply (size
 * bytes, NUL-terminated, one trailing newline dropped).  Descriptors that
 * come with it are closed.  Returns the reply's length, 0 when the daemon
 * closed the connection, or -errno.
 */
static ssize_t
conn_recv(int fd, char *reply, size_t size);

static ssize_t
conn_call(int fd, const void *req, size_t len, char *reply, size_t size)
{
	reply[0] = '\0';
	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		return -errno;
	return conn_recv(fd, reply, size);
}

/* The next reply on fd, as conn_call() receives it. */
static ssize_t
conn_recv(int fd, char *reply, size_t size)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} cbuf;
	struct iovec iov = { .iov_base = reply, .iov_len = size - 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *c;
	ssize_t n;

	reply[0] = '\0';
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t i, nfd = (c->cmsg_len - CMSG_LEN(0)) /
				sizeof(int);

			for (i = 0; i < nfd; i++) {
				int rfd;

				memcpy(&rfd, CMSG_DATA(c) + i * sizeof(int),
					sizeof(int));
				close(rfd);
			}
		}
	}
	ck_assert_msg(!(mh.msg_flags & MSG_TRUNC), "reply truncated");
	if (n > 0 && reply[n - 1] == '\n')
		n--;
	reply[n] = '\0';
	return n;
}

/* Replies stay valid for the next few requests. */
static char *
reply_buf(void)
{
	static char bufs[4][REPLY_MAX + 1];
	static unsigned int next;

	return bufs[next++ % 4];
}

/* One packet of raw bytes on a connection of its own; the reply. */
static const char *
ask_raw(const struct daemon *d, const void *req, size_t len)
{
	char *reply = reply_buf();
	int fd = conn_open(d->sock);
	ssize_t n;

	ck_assert_msg(fd >= 0, "connect %s: %s", d->sock, strerror(-fd));
	n = conn_call(fd, req, len, reply, REPLY_MAX + 1);
	close(fd);
	ck_assert_msg(n > 0, "request '%.*s': %s", (int)(len < 80 ? len : 80),
		(const char *)req, n == 0 ? "connection closed, no reply" :
		strerror((int)-n));
	return reply;
}

/* "shmpool/1 " and the formatted request; the reply. */
static const char *
ask(const struct daemon *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static const char *
ask(const struct daemon *d, const char *fmt, ...)
{
	char req[REQ_MAX + 1];
	va_list ap;
	int n = snprintf(req, sizeof(req), "shmpool/1 ");

	va_start(ap, fmt);
	n += vsnprintf(req + n, sizeof(req) - (size_t)n, fmt, ap);
	va_end(ap);
	ck_assert_int_le(n, REQ_MAX);
	return ask_raw(d, req, (size_t)n);
}

#define ck_assert_prefix(r, prefix) do {				\
	const char *r_ = (r), *p_ = (prefix);				\
	ck_assert_msg(strncmp(r_, p_, strlen(p_)) == 0,		\
		"reply '%s' does not start with '%s'", r_, p_);		\
} while (0)

/*
 * The value of key in the first line of a reply (msg= runs to the end of
 * the line), in a static buffer; NULL when absent.
 */
static const char *
rv(const char *reply, const char *key)
{
	static char vals[4][REPLY_MAX + 1];
	static unsigned int next;
	const char *p = reply, *end = strchr(reply, '\n'), *tok;
	size_t klen = strlen(key);
	char *val = vals[next++ % 4];

	if (end == NULL)
		end = reply + strlen(reply);
	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		tok = p;
		if (strncmp(tok, "msg=", 4) == 0)
			p = end;
		else
			while (p < end && *p != ' ' && *p != '\t')
				p++;
		if ((size_t)(p - tok) > klen && tok[klen] == '=' &&
		    strncmp(tok, key, klen) == 0) {
			size_t vlen = (size_t)(p - tok) - klen - 1;

			memcpy(val, tok + klen + 1, vlen);
			val[vlen] = '\0';
			return val;
		}
		if (strncmp(tok, "msg=", 4) == 0)
			break;
	}
	return NULL;
}

/* A key's value must be this string. */
#define ck_assert_kv(reply, key, want) do {				\
	const char *v_ = rv((reply), (key));				\
	ck_assert_msg(v_ != NULL && strcmp(v_, (want)) == 0,		\
		"reply '%s': %s is %s, expected '%s'", (reply), (key),	\
		v_ != NULL ? v_ : "missing", (want));			\
} while (0)

/* A key's value must be this number. */
#define ck_assert_kv_u(reply, key, want) do {				\
	char w_[32];							\
	snprintf(w_, sizeof(w_), "%llu", (unsigned long long)(want));	\
	ck_assert_kv((reply), (key), w_);				\
} while (0)

/* ------------------------------------------------------------------ */
/* Daemons. */

/* A fresh folder for a test's daemon, with an empty config. */
static void
d_init(struct daemon *d, const char *name)
{
	memset(d, 0, sizeof(*d));
	d->pid = -1;
	snprintf(d->dir, sizeof(d->dir), "%s/%s", tu_dir(), name);
	ck_assert_msg(mkdir(d->dir, 0755) == 0, "mkdir %s: %s", d->dir,
		strerror(errno));
	ck_assert_int_eq(chmod(d->dir, 0755), 0);
	snprintf(d->sock, sizeof(d->sock), "%s/sock", d->dir);
	snprintf(d->conf, sizeof(d->conf), "%s/shmpoold.conf", d->dir);
	snprintf(d->err, sizeof(d->err), "%s/stderr", d->dir);
	snprintf(d->huge, sizeof(d->huge), "none");
	write_file(d->conf, "# no pools\n");
	/* The library and the workers find this daemon. */
	ck_assert_int_eq(setenv("SHMPOOL_SOCKET", d->sock, 1), 0);
}

/* RLIMIT_NOFILE of the daemons spawned while set (test 14). */
static const struct rlimit *spawn_nofile;

/* Run shmpoold with args (NULL-terminated), stderr appended to err. */
static pid_t
spawn(const char *err, const char *const *args)
{
	const char *argv[32];
	pid_t parent = getpid(), pid;
	int i;

	argv[0] = daemon_bin();
	for (i = 0; args[i] != NULL && i < 30; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(err, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			0644);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		die_with_parent(parent);
		if (fd < 0 || null < 0 || dup2(fd, 2) < 0 || dup2(null, 0) < 0)
			_exit(126);
		if (spawn_nofile != NULL &&
		    setrlimit(RLIMIT_NOFILE, spawn_nofile) < 0)
			_exit(125);
		execv(argv[0], (char *const *)argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

static pid_t
d_spawn(const struct daemon *d)
{
	const char *args[] = {
		"-f", "--socket", d->sock, "--shm-dir", d->dir,
		"--hugetlbfs", d->huge, "--config", d->conf, NULL
	};

	return spawn(d->err, args);
}

/* Poll with ping until the daemon answers; it must not exit meanwhile. */
static void
d_wait_ready(const struct daemon *d)
{
	double deadline = now() + START_SECS;
	char reply[REPLY_MAX + 1];
	int status;

	for (;;) {
		int fd = conn_open(d->sock);
		ssize_t n = -1;

		if (fd >= 0) {
			n = conn_call(fd, "shmpool/1 ping", 14, reply,
				sizeof(reply));
			close(fd);
		}
		if (n > 0 && strncmp(reply, "shmpool/1 ok ", 13) == 0)
			break;
		ck_assert_msg(waitpid(d->pid, &status, WNOHANG) == 0,
			"shmpoold exited (status 0x%x) before serving; "
			"stderr:\n%s", status, slurp(d->err));
		ck_assert_msg(now() < deadline, "shmpoold is not serving %s "
			"after %.0f s (last reply '%s'); stderr:\n%s", d->sock,
			START_SECS, n > 0 ? reply : "", slurp(d->err));
		usleep(2000);
	}
	ck_assert_kv(reply, "protocol", "1");
	ck_assert_kv(reply, "version", PACKAGE_VERSION);
	ck_assert_kv_u(reply, "pid", d->pid);
}

static void
d_start(struct daemon *d)
{
	d->pid = d_spawn(d);
	d_wait_ready(d);
}

/*
 * Start daemon name whose pools have two rings (SHMPOOL_RINGS: a pool of
 * one has no owner, libshmpool/ring.h) and create pool pool in it, of
 * objects objects of 64 bytes, with no cache; this process's own pools
 * keep one ring.
 */
static void
d_start_two_rings(struct daemon *d, const char *name, const char *pool,
		unsigned int objects)
{
	char want[64];

	setenv("SHMPOOL_RINGS", "2", 1);
	d_init(d, name);
	d_start(d);
	setenv("SHMPOOL_RINGS", "1", 1);
	snprintf(want, sizeof(want), "shmpool/1 ok name=%s ", pool);
	ck_assert_prefix(ask(d, "create name=%s objects=%u object-size=64 "
		"cache=0", pool, objects), want);
}

/* SIGTERM: it exits 0 and takes its socket and lock file with it. */
static void
d_stop(struct daemon *d)
{
	char lock[340];
	int status;

	ck_assert_int_eq(kill(d->pid, SIGTERM), 0);
	ck_assert_msg(wait_exit(d->pid, STOP_SECS, &status),
		"shmpoold still running %.0f s after SIGTERM", STOP_SECS);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"shmpoold ended with status 0x%x after SIGTERM; stderr:\n%s",
		status, slurp(d->err));
	d->pid = -1;
	snprintf(lock, sizeof(lock), "%s.lock", d->sock);
	ck_assert_msg(!exists(d->sock), "socket %s left behind", d->sock);
	ck_assert_msg(!exists(lock), "lock file %s left behind", lock);
}

static void
d_finish(struct daemon *d)
{
	d_stop(d);
	tu_rm_tree(d->dir);
}

/* The last lines of stderr, as many as a failure's message can hold. */
#define STDERR_TAIL	3000	/* bytes */
static const char *
stderr_tail(const struct daemon *d)
{
	const char *e = slurp(d->err), *t;
	size_t len = strlen(e);

	if (len <= STDERR_TAIL)
		return e;
	t = strchr(e + len - STDERR_TAIL, '\n');
	return t != NULL ? t + 1 : e + len - STDERR_TAIL;
}

/* Until stderr holds s. */
static void
await_stderr(const struct daemon *d, const char *s, double secs)
{
	double deadline = now() + secs;

	while (strstr(slurp(d->err), s) == NULL) {
		ck_assert_msg(now() < deadline, "'%s' not logged within %.0f "
			"s; stderr (its end):\n%s", s, secs, stderr_tail(d));
		usleep(2000);
	}
}

/* Start shmpoold with args; it must exit with code within 5 s. */
static const char *
start_fails(const char *err, const char *const *args, int code)
{
	pid_t pid;
	int status, fd;

	fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	pid = spawn(err, args);
	ck_assert_msg(wait_exit(pid, START_SECS, &status),
		"shmpoold %s %s ...: still running after %.0f s", args[0],
		args[1] ? args[1] : "", START_SECS);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == code,
		"shmpoold %s %s ...: status 0x%x, expected exit %d; "
		"stderr:\n%s", args[0], args[1] ? args[1] : "", status, code,
		slurp(err));
	return slurp(err);
}

/* ------------------------------------------------------------------ */
/* Pools and counters. */

static struct shmpool *
attach_cache(const char *name, unsigned int cache)
{
	struct shmpool_attach_opts o = {
		.flags = SHMPOOL_ATTACH_CACHE_SIZE,
		.cache_size = cache,
	};
	struct shmpool *pool = NULL;
	int ret = shmpool_attach(name, &o, &pool);

	ck_assert_msg(ret == 0, "attach %s: %s (%s)", name,
		shmpool_strerror(ret), shmpool_last_error());
	return pool;
}

/* Every object is in the ring: a cacheless attachment gets them all. */
static void
check_all_in_ring(struct shmpool *pool, unsigned int count)
{
	static void *objs[4096];

	ck_assert_uint_le(count, 4096);
	ck_assert_uint_eq(shmpool_default_cache(pool)->size, 0);
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, count), 0);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, count), 0);
}

/* Until pool has n slots in use, RECLAIM_SECS from t0 at most (a kill). */
static void
await_slots_in_use(const struct shmpool *pool, unsigned int n, double t0)
{
	unsigned int in_use;

	while ((in_use = tu_slots_in_use(pool)) != n) {
		ck_assert_msg(now() - t0 < RECLAIM_SECS, "%u slots in use "
			"%.0f s after the kill, expected %u", in_use,
			RECLAIM_SECS, n);
		usleep(1000);
	}
}

/* ------------------------------------------------------------------ */
/* 1. Create, three workers through the daemon, their counts add up. */

static const struct shmpool_stats script_counts = {
	.put_bulk = 6, .put_objs = 177,
	.put_common_pool_bulk = 3, .put_common_pool_objs = 170,
	.get_common_pool_bulk = 3, .get_common_pool_objs = 190,
	.get_success_bulk = 5, .get_success_objs = 177,
	.get_fail_bulk = 1, .get_fail_objs = 1024,
};

/*
 * Pool of 1024, default cache 32 (flush threshold 48).  The counts are
 * script_counts whatever the other workers do meanwhile: none of them
 * ever holds more than 148 objects.
 */
static int
script_worker(void *arg)
{
	static void *objs[100 + 1024];
	struct shmpool *pool;

	(void)arg;
	if (shmpool_attach("p", NULL, &pool) != 0)
		return 10;
	if (shmpool_default_cache(pool)->size != 32)
		return 11;
	/* Miss: refill 32 + 16 = 48 from the ring; len 32. */
	if (shmpool_get_bulk(pool, objs, 16) != 0)
		return 12;
	/* Hits: len 48, 47, 48, 8, 48. */
	if (shmpool_put_bulk(pool, objs, 16) != 0 ||
	    shmpool_get(pool, objs) != 0 ||
	    shmpool_put(pool, objs[0]) != 0 ||
	    shmpool_get_bulk(pool, objs, 40) != 0 ||
	    shmpool_put_bulk(pool, objs, 40) != 0)
		return 13;
	/* 100 > 32: straight from the ring. */
	if (shmpool_get_bulk(pool, objs, 100) != 0)
		return 14;
	/* The ring and this cache have fewer than 1024: fails, counted. */
	if (shmpool_get_bulk(pool, objs + 100, 1024) != -ENOENT)
		return 15;
	/* 48 + 10 > 48: flush 48, keep 10; then 90 > 48: to the ring. */
	if (shmpool_put_bulk(pool, objs, 10) != 0 ||
	    shmpool_put_bulk(pool, objs + 10, 90) != 0)
		return 16;
	/* Miss with 10: refill 32 + 20 - 10 = 42; len 32. */
	if (shmpool_get_bulk(pool, objs, 20) != 0 ||
	    shmpool_cache_len_(shmpool_default_cache(pool)) != 32)
		return 17;
	/* 32 + 20 > 48: flush 32, keep 20 (flushed by detach, uncounted). */
	if (shmpool_put_bulk(pool, objs, 20) != 0 ||
	    shmpool_cache_len_(shmpool_default_cache(pool)) != 20)
		return 18;
	return shmpool_detach(pool) == 0 ? 0 : 19;
}

START_TEST(test_create_and_workers)
{
	struct shmpool_stats total = tu_stats_add((struct shmpool_stats){ 0 },
		&script_counts, 3);
	char path[320], req[64], reply[REPLY_MAX + 1], line[512];
	struct shmpool *pool;
	const char *r;
	pid_t pids[3];
	struct stat st;
	struct daemon d;
	int i, fd;

	d_init(&d, "create");
	d_start(&d);
	r = ask(&d, "create name=p objects=1024 object-size=64 cache=32");
	ck_assert_prefix(r, "shmpool/1 ok name=p ");
	snprintf(path, sizeof(path), "%s/shmpool.p", d.dir);
	ck_assert_kv(r, "path", path);
	ck_assert_kv(r, "memory", "shm");
	ck_assert_kv_u(r, "page-size", sysconf(_SC_PAGESIZE));
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0660);

	r = ask(&d, "info name=p");
	ck_assert_prefix(r, "shmpool/1 ok name=p ");
	ck_assert_kv(r, "path", path);
	ck_assert_kv(r, "memory", "shm");
	ck_assert_kv_u(r, "objects", 1024);
	ck_assert_kv_u(r, "object-size", 64);
	ck_assert_kv_u(r, "element-size", 64);
	ck_assert_kv_u(r, "cache", 32);
	ck_assert_kv_u(r, "slots", 64);
	ck_assert_kv_u(r, "slots-in-use", 0);
	ck_assert_kv_u(r, "avail", 1024);
	ck_assert_kv_u(r, "in-use", 0);
	ck_assert_kv(r, "huge-policy", "prefer");
	ck_assert_kv_u(r, "owner", getuid());
	ck_assert_kv_u(r, "group", getegid());
	ck_assert_kv(r, "mode", "0660");

	for (i = 0; i < 3; i++)
		pids[i] = fork_worker(script_worker, NULL);
	tu_wait_children(pids, 3, 10);

	/* Everyone detached: the slots are free, every object is back. */
	r = ask(&d, "info name=p");
	ck_assert_kv_u(r, "slots-in-use", 0);
	ck_assert_kv_u(r, "avail", 1024);
	ck_assert_kv_u(r, "in-use", 0);

	pool = attach_cache("p", 0);
	ck_assert_uint_eq(tu_slots_in_use(pool), 1);
	ck_assert_uint_eq(shmpool_avail_count(pool), 1024);
	ck_assert_uint_eq(shmpool_in_use_count(pool), 0);
	tu_check_stats(pool, SHMPOOL_STATS_ALL, &total, "all");
	tu_check_stats(pool, SHMPOOL_STATS_RETIRED, &total, "retired");
	check_all_in_ring(pool, 1024);
	ck_assert_int_eq(shmpool_detach(pool), 0);

	/* Several exchanges on one connection; tabs and a newline too. */
	fd = conn_open(d.sock);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_gt(conn_call(fd, "shmpool/1\tping\n", 15, reply,
		sizeof(reply)), 0);
	ck_assert_prefix(reply, "shmpool/1 ok ");
	ck_assert_int_gt(conn_call(fd, "shmpool/1 list", 14, reply,
		sizeof(reply)), 0);
	snprintf(line, sizeof(line), "shmpool/1 ok count=1\n"
		"pool name=p memory=shm objects=1024 object-size=64 "
		"slots-in-use=0 avail=1024 path=%s/shmpool.p", d.dir);
	ck_assert_str_eq(reply, line);
	snprintf(req, sizeof(req), "shmpool/1  info \tname=p");
	ck_assert_int_gt(conn_call(fd, req, strlen(req), reply,
		sizeof(reply)), 0);
	ck_assert_prefix(reply, "shmpool/1 ok name=p ");
	ck_assert_kv_u(reply, "slots-in-use", 0);
	ck_assert_kv_u(reply, "avail", 1024);
	ck_assert_kv_u(reply, "in-use", 0);
	close(fd);

	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 2. kill -9 of a worker with a full cache: reclaimed within 1 s. */

/* What the killed worker counted: a get of 48 (> 32) from the ring, a put
 * of 48 into its cache (at its flush threshold, 48). */
static const struct shmpool_stats full_counts = {
	.put_bulk = 1, .put_objs = 48,
	.get_common_pool_bulk = 1, .get_common_pool_objs = 48,
	.get_success_bulk = 1, .get_success_objs = 48,
};

/* The survivor: a get of 10 (refill 42), a put of 4; later a put of 6. */
static const struct shmpool_stats survivor_counts = {
	.put_bulk = 1, .put_objs = 4,
	.get_common_pool_bulk = 1, .get_common_pool_objs = 42,
	.get_success_bulk = 1, .get_success_objs = 10,
};

static const struct shmpool_stats survivor_final = {
	.put_bulk = 2, .put_objs = 10,
	.get_common_pool_bulk = 1, .get_common_pool_objs = 42,
	.get_success_bulk = 1, .get_success_objs = 10,
};

struct pipes {
	int ready[2];		/* worker -> parent: its slot */
	int go[2];		/* parent -> worker */
};

static void
pipes_open(struct pipes *p)
{
	ck_assert_int_eq(pipe2(p->ready, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(p->go, O_CLOEXEC), 0);
}

/* In the worker: say ready with the slot, wait for go (or forever). */
static int
report_and_wait(struct pipes *p, struct shmpool *pool)
{
	int slot = shmpool_cache_slot(shmpool_default_cache(pool));
	char c;

	close(p->ready[0]);
	close(p->go[1]);
	if (write(p->ready[1], &slot, sizeof(slot)) != sizeof(slot))
		return -1;
	return read(p->go[0], &c, 1) == 1 ? 0 : -1;
}

/* In the parent: the worker's slot, once it is ready. */
static int
await_ready(struct pipes *p)
{
	int slot = -1;

	ck_assert_int_eq(read(p->ready[0], &slot, sizeof(slot)),
		sizeof(slot));
	return slot;
}

/* What cached_worker() does, set before it is forked. */
static struct {
	const char *pool;
	unsigned int cache, n, len;	/* cache size, n got and put back,
					   then the cache's length */
} cw;

/* Worker: attach cw.pool with a cache of cw.cache, get and put back
 * cw.n, check the cache holds cw.len, then wait to be killed. */
static int
cached_worker(void *arg)
{
	struct pipes *p = arg;
	struct shmpool *pool;
	void *objs[64];

	if (cw.n > 64 || shmpool_attach(cw.pool,
			&(struct shmpool_attach_opts){
			.flags = SHMPOOL_ATTACH_CACHE_SIZE,
			.cache_size = cw.cache }, &pool) != 0)
		return 10;
	if (shmpool_get_bulk(pool, objs, cw.n) != 0 ||
	    shmpool_put_bulk(pool, objs, cw.n) != 0 ||
	    shmpool_cache_len_(shmpool_default_cache(pool)) != cw.len)
		return 11;
	/* Killed while waiting here. */
	report_and_wait(p, pool);
	return 12;
}

/* Fork cached_worker() for pool, with a cache of cache, n got and put
 * back, len then in the cache; its pid. */
static pid_t
cached_worker_start(struct pipes *p, const char *pool, unsigned int cache,
		unsigned int n, unsigned int len)
{
	cw.pool = pool;
	cw.cache = cache;
	cw.n = n;
	cw.len = len;
	return fork_worker(cached_worker, p);
}

static int
survivor_worker(void *arg)
{
	struct pipes *p = arg;
	struct shmpool *pool;
	void *objs[10];

	if (shmpool_attach("k", NULL, &pool) != 0)
		return 10;
	/* 6 in hand, 36 in the cache. */
	if (shmpool_get_bulk(pool, objs, 10) != 0 ||
	    shmpool_put_bulk(pool, objs + 6, 4) != 0 ||
	    shmpool_cache_len_(shmpool_default_cache(pool)) != 36)
		return 11;
	if (report_and_wait(p, pool) != 0)
		return 12;
	if (shmpool_put_bulk(pool, objs, 6) != 0)
		return 13;
	return shmpool_detach(pool) == 0 ? 0 : 14;
}

START_TEST(test_kill_worker)
{
	struct pipes pf, ps;
	struct shmpool_stats st, both;
	struct shmpool *pool;
	struct daemon d;
	pid_t full, surv;
	int slot_full, slot_surv, status;
	double t0, dt;
	const char *r;

	d_init(&d, "killworker");
	d_start(&d);
	ck_assert_prefix(ask(&d, "create name=k objects=1024 object-size=64 "
		"cache=32"), "shmpool/1 ok name=k ");

	pipes_open(&pf);
	pipes_open(&ps);
	full = cached_worker_start(&pf, "k", 32, 48, 48);
	surv = fork_worker(survivor_worker, &ps);
	close(pf.ready[1]);
	close(pf.go[0]);
	close(ps.ready[1]);
	close(ps.go[0]);
	slot_full = await_ready(&pf);
	slot_surv = await_ready(&ps);
	ck_assert_int_ne(slot_full, slot_surv);

	pool = attach_cache("k", 0);
	ck_assert_uint_eq(tu_slots_in_use(pool), 3);
	/* Objects in caches are available; the survivor holds 6. */
	ck_assert_uint_eq(shmpool_avail_count(pool), 1024 - 6);
	tu_check_stats(pool, slot_full, &full_counts, "doomed slot");
	tu_check_stats(pool, slot_surv, &survivor_counts, "survivor slot");
	tu_check_stats(pool, SHMPOOL_STATS_RETIRED, &(struct shmpool_stats){ 0 },
		"retired before the kill");
	r = ask(&d, "info name=k");
	ck_assert_kv_u(r, "slots-in-use", 3);
	ck_assert_kv_u(r, "avail", 1024 - 6);
	ck_assert_kv_u(r, "in-use", 6);

	t0 = now();
	ck_assert_int_eq(kill(full, SIGKILL), 0);
	ck_assert_int_eq(waitpid(full, &status, 0), full);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	await_slots_in_use(pool, 2, t0);
	dt = now() - t0;
	printf("kill -9 of a worker: slot reclaimed in %.1f ms\n", dt * 1e3);
	ck_assert_double_lt(dt, RECLAIM_SECS);

	/* Its counts are retired unchanged, its cache is back. */
	ck_assert_int_eq(shmpool_stats_read(pool, slot_full, &st), -ENOENT);
	tu_check_stats(pool, SHMPOOL_STATS_RETIRED, &full_counts, "retired");
	both = tu_stats_add(full_counts, &survivor_counts, 1);
	tu_check_stats(pool, SHMPOOL_STATS_ALL, &both, "all");
	tu_check_stats(pool, slot_surv, &survivor_counts, "survivor slot");
	ck_assert_uint_eq(shmpool_avail_count(pool), 1024 - 6);
	r = ask(&d, "info name=k");
	ck_assert_kv_u(r, "slots-in-use", 2);
	ck_assert_kv_u(r, "avail", 1024 - 6);
	ck_assert_kv_u(r, "in-use", 6);

	/* The survivor puts its 6 back and detaches. */
	ck_assert_int_eq(write(ps.go[1], "g", 1), 1);
	tu_wait_children(&surv, 1, 5);
	ck_assert_uint_eq(tu_slots_in_use(pool), 1);
	both = tu_stats_add(full_counts, &survivor_final, 1);
	tu_check_stats(pool, SHMPOOL_STATS_RETIRED, &both, "retired at the end");
	tu_check_stats(pool, SHMPOOL_STATS_ALL, &both, "all at the end");
	ck_assert_uint_eq(shmpool_avail_count(pool), 1024);
	check_all_in_ring(pool, 1024);
	ck_assert_int_eq(shmpool_detach(pool), 0);
	r = ask(&d, "info name=k");
	ck_assert_kv_u(r, "slots-in-use", 0);
	ck_assert_kv_u(r, "avail", 1024);
	close(pf.go[1]);
	close(ps.go[1]);
	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 2b. kill -9 of a producer between its claim and its writes. */

#define KP_OBJS		1024	/* in the pool, and entries in its ring */
#define KP_PUT		10	/* the killed put's objects */
#define KP_WRITTEN	4	/* of them, written before it stops */
#define KP_LOST		(KP_PUT - KP_WRITTEN)
#define KP_HAD		(KP_OBJS - KP_LOST)	/* all that can be had */
static unsigned int kp_ring;	/* the ring the killed put claims on */

/*
 * Takes KP_PUT objects, then puts them back as ring_put() does, by hand:
 * its record, its claim of KP_PUT positions, and only KP_WRITTEN writes.
 * Then it sends its slot and the KP_PUT references and waits to be killed.
 */
static int
put_killed_worker(void *arg)
{
	struct pipes *p = arg;
	struct shmpool_cache *c;
	struct shmpool *pool;
	struct ring_view *v;
	uint32_t refs[KP_PUT];
	void *objs[KP_PUT];
	uint64_t pos;
	int slot, i;

	close(p->ready[0]);
	close(p->go[1]);
	if (shmpool_attach("p", NULL, &pool) != 0)
		return 10;
	c = shmpool_default_cache(pool);
	if (c->size != 0 || shmpool_get_bulk(pool, objs, KP_PUT) != 0)
		return 11;
	for (i = 0; i < KP_PUT; i++)
		refs[i] = shmpool_ptr_to_ref_(pool, objs[i]);
	v = &pool_handle(pool)->rings[kp_ring];
	pos = uatomic_read(&v->r->prod_head);
	/* The ring has room for all of them: the claim is all there is. */
	if (pos + KP_PUT - uatomic_read(&v->r->cons_head) > v->size)
		return 12;
	uatomic_set(cache_ring_op(c, kp_ring), RING_OP(pos, KP_PUT));
	if (!ring_claim(&v->r->prod_head, &pos, KP_PUT))
		return 13;
	ring_write(v, pos, KP_WRITTEN, refs, RING_REFS, NULL);
	cmm_smp_mb();
	slot = shmpool_cache_slot(c);
	if (write(p->ready[1], &slot, sizeof(slot)) != sizeof(slot) ||
	    write(p->ready[1], refs, sizeof(refs)) != sizeof(refs))
		return 14;
	for (;;)
		pause();
}

/* Once told to go, a get of 1: its result to the ready pipe, then detach. */
static int
blocked_getter(void *arg)
{
	struct pipes *p = arg;
	struct shmpool *pool;
	void *obj;
	int ret;

	if (shmpool_attach("p", NULL, &pool) != 0)
		return 10;
	if (shmpool_default_cache(pool)->size != 0)
		return 11;
	if (report_and_wait(p, pool) != 0)
		return 12;
	ret = shmpool_get_bulk(pool, &obj, 1);
	if (write(p->ready[1], &ret, sizeof(ret)) != sizeof(ret))
		return 13;
	return shmpool_detach(pool) == 0 ? 0 : 14;
}

/* What the workers counted: A a get of KP_PUT from the ring (its put by
 * hand counts nothing), B a failed get of 1. */
static const struct shmpool_stats put_killed_counts = {
	.get_common_pool_bulk = 1, .get_common_pool_objs = KP_PUT,
	.get_success_bulk = 1, .get_success_objs = KP_PUT,
	.get_fail_bulk = 1, .get_fail_objs = 1,
};

/*
 * Wait, up to secs from t0, for worker b (a blocked_getter waiting behind
 * positions a dead or bad put left) to be answered: it must exit 0 having
 * sent want (its get's result) on ready.  Returns the seconds from t0.
 * On a timeout b is killed and the failure says what waited, the ring's
 * holes and stalled flag, and shmpoold's stderr.
 */
static double
wait_get_answered(pid_t b, int ready, double t0, double secs,
		const struct ring_view *ring, const struct daemon *d,
		const char *what, int want)
{
	double dt;
	pid_t pid;
	int status, ret;

	while ((pid = waitpid(b, &status, WNOHANG)) == 0) {
		if (now() - t0 > secs) {
			kill(b, SIGKILL);
			waitpid(b, &status, 0);
			ck_abort_msg("%s still waits after %.0f s (holes %llu, "
				"stalled %u); stderr (its end):\n%s", what,
				secs, (unsigned long long)uatomic_read(
				&ring->r->holes),
				uatomic_read(&ring->r->stalled),
				stderr_tail(d));
		}
		usleep(100);
	}
	dt = now() - t0;
	ck_assert_int_eq(pid, b);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"the waiting worker ended with status 0x%x", status);
	ck_assert_int_eq(read(ready, &ret, sizeof(ret)), sizeof(ret));
	ck_assert_int_eq(ret, want);
	return dt;
}

/*
 * Get the KP_HAD objects that a put killed after writing KP_WRITTEN of
 * its KP_PUT (refs) leaves: each an object of the pool, none twice, and
 * of the killed put's, the written ones and not the others.
 */
static void
kp_get_had(struct shmpool *pool, void **objs, const uint32_t *refs)
{
	uint32_t unit = pool_handle(pool)->elt_size >> SHMPOOL_REF_SHIFT;
	uint8_t seen[KP_OBJS];
	int i;

	memset(seen, 0, sizeof(seen));
	ck_assert_int_eq(shmpool_generic_get(pool, objs, KP_HAD, NULL), 0);
	for (i = 0; i < KP_HAD; i++) {
		uint32_t ref = shmpool_ptr_to_ref_(pool, objs[i]);

		ck_assert_msg(ref % unit == 0 && ref / unit < KP_OBJS,
			"object %d: reference %u is not one of the pool", i,
			ref);
		ck_assert_msg(!seen[ref / unit], "object %d (reference %u) "
			"got twice", i, ref);
		seen[ref / unit] = 1;
	}
	for (i = 0; i < KP_PUT; i++)
		ck_assert_msg(seen[refs[i] / unit] == (i < KP_WRITTEN),
			"the killed put's object %d (reference %u) %s", i,
			refs[i], i < KP_WRITTEN ? "not got" : "got");
}

START_TEST(test_kill_in_put)
{
	static void *objs[KP_OBJS];
	uint32_t refs[KP_PUT];
	struct shmpool_stats st, e;
	const struct ring_view *ring;
	struct pipes pa, pb;
	struct shmpool *pool;
	struct daemon d;
	char log[256];
	const char *r, *s;
	pid_t a, b;
	int slot_a, slot_b, status, n;
	double t0, dt;

	d_init(&d, "killinput");
	d_start(&d);
	ck_assert_prefix(ask(&d, "create name=p objects=1024 object-size=64 "
		"cache=0"), "shmpool/1 ok name=p ");

	/* A: 10 taken, 10 positions claimed, 4 written, then it stops. */
	pipes_open(&pa);
	a = fork_worker(put_killed_worker, &pa);
	close(pa.ready[1]);
	close(pa.go[0]);
	slot_a = await_ready(&pa);
	ck_assert_int_eq(read(pa.ready[0], refs, sizeof(refs)), sizeof(refs));

	pool = attach_cache("p", 0);
	ring = &pool_handle(pool)->rings[0];
	ck_assert_uint_eq(ring->size, KP_OBJS);
	ck_assert_uint_eq(tu_slots_in_use(pool), 2);
	/* cons_head at 10, prod_head at 1024 + 10: 1014 untouched, 4
	 * written, 6 claimed and unwritten, counted as the put will leave
	 * them. */
	ck_assert_uint_eq(uatomic_read(&ring->r->cons_head), KP_PUT);
	ck_assert_uint_eq(uatomic_read(&ring->r->prod_head), KP_OBJS + KP_PUT);
	ck_assert_uint_eq(uatomic_read(&ring->r->holes), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), KP_OBJS);

	/* The parent takes all that is there without waiting: 1018, every
	 * object but the 6 that A has not written back. */
	kp_get_had(pool, objs, refs);
	ck_assert_uint_eq(uatomic_read(&ring->r->cons_head),
		KP_PUT + KP_HAD);
	ck_assert_uint_eq(shmpool_avail_count(pool), KP_LOST);

	/* B: a get of 1 reaches A's first unwritten position and waits. */
	pipes_open(&pb);
	b = fork_worker(blocked_getter, &pb);
	close(pb.ready[1]);
	close(pb.go[0]);
	slot_b = await_ready(&pb);
	ck_assert_int_ne(slot_b, slot_a);
	ck_assert_uint_eq(tu_slots_in_use(pool), 3);
	ck_assert_kv_u(ask(&d, "info name=p"), "slots-in-use", 3);
	ck_assert_int_eq(write(pb.go[1], "g", 1), 1);
	t0 = now();
	while (now() - t0 < 0.2) {
		ck_assert_msg(waitpid(b, &status, WNOHANG) == 0, "the get "
			"behind a put in progress did not wait (status 0x%x)",
			status);
		usleep(1000);
	}

	/* kill -9 of A: shmpoold makes holes of its 6 positions, B steps
	 * over them and finds the ring empty. */
	t0 = now();
	ck_assert_int_eq(kill(a, SIGKILL), 0);
	dt = wait_get_answered(b, pb.ready[0], t0, RECLAIM_SECS, ring,
		&d, "the get behind the killed put", -ENOENT);
	printf("kill -9 inside a put: ring repaired in %.1f ms\n", dt * 1e3);
	ck_assert_double_lt(dt, RECLAIM_SECS);
	ck_assert_int_eq(waitpid(a, &status, 0), a);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	/* B detached; A's slot comes back. */
	await_slots_in_use(pool, 1, now());
	snprintf(log, sizeof(log), "shmpoold: pool 'p': a process died in "
		"the middle of a put to the ring; %d positions it had claimed "
		"are skipped (their objects are lost with it)\n", KP_LOST);
	await_stderr(&d, log, RECLAIM_SECS);
	snprintf(log, sizeof(log), "shmpoold: pool 'p': slot %d of pid %ld "
		"reclaimed (process exited), 0 cached objects back in the "
		"ring\n", slot_a, (long)a);
	await_stderr(&d, log, RECLAIM_SECS);

	/* The 6 are holes, not counted; nobody has stepped over them (B's
	 * get failed, so it claimed nothing). */
	ck_assert_uint_eq(uatomic_read(&ring->r->holes), KP_LOST);
	ck_assert_uint_eq(uatomic_read(&ring->r->prod_head) -
		uatomic_read(&ring->r->cons_head), KP_LOST);
	ck_assert_uint_eq(shmpool_avail_count(pool), 0);
	ck_assert_uint_eq(shmpool_in_use_count(pool), KP_OBJS);
	r = ask(&d, "info name=p");
	ck_assert_kv_u(r, "slots-in-use", 1);
	ck_assert_kv_u(r, "avail", 0);
	ck_assert_kv_u(r, "in-use", KP_OBJS);
	ck_assert_int_eq(shmpool_stats_read(pool, slot_a, &st), -ENOENT);
	ck_assert_int_eq(shmpool_stats_read(pool, slot_b, &st), -ENOENT);
	tu_check_stats(pool, SHMPOOL_STATS_RETIRED, &put_killed_counts,
		"retired");

	/* The parent's 1018 back: the 6 that A never wrote are lost. */
	ck_assert_int_eq(shmpool_generic_put(pool, objs, KP_HAD, NULL), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), KP_HAD);
	ck_assert_uint_eq(shmpool_in_use_count(pool), KP_LOST);
	r = ask(&d, "info name=p");
	ck_assert_kv_u(r, "avail", KP_HAD);
	ck_assert_kv_u(r, "in-use", KP_LOST);
	ck_assert_int_eq(shmpool_generic_get(pool, objs, KP_HAD + 1, NULL),
		-ENOENT);
	ck_assert_uint_eq(uatomic_read(&ring->r->holes), KP_LOST);

	/* A get of 1018 steps over the holes and takes them off. */
	ck_assert_int_eq(shmpool_generic_get(pool, objs, KP_HAD, NULL), 0);
	ck_assert_uint_eq(uatomic_read(&ring->r->holes), 0);
	ck_assert_uint_eq(uatomic_read(&ring->r->prod_head),
		uatomic_read(&ring->r->cons_head));
	ck_assert_uint_eq(shmpool_avail_count(pool), 0);
	ck_assert_int_eq(shmpool_generic_put(pool, objs, KP_HAD, NULL), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), KP_HAD);
	check_all_in_ring(pool, KP_HAD);
	e = put_killed_counts;
	e.get_common_pool_bulk += 3;
	e.get_common_pool_objs += 3 * KP_HAD;
	e.get_success_bulk += 3;
	e.get_success_objs += 3 * KP_HAD;
	e.get_fail_bulk += 1;
	e.get_fail_objs += KP_HAD + 1;
	e.put_common_pool_bulk += 3;
	e.put_common_pool_objs += 3 * KP_HAD;
	e.put_bulk += 3;
	e.put_objs += 3 * KP_HAD;
	tu_check_stats(pool, SHMPOOL_STATS_ALL, &e, "all at the end");
	ck_assert_int_eq(shmpool_detach(pool), 0);

	r = ask(&d, "info name=p");
	ck_assert_kv_u(r, "slots-in-use", 0);
	ck_assert_kv_u(r, "avail", KP_HAD);
	ck_assert_kv_u(r, "in-use", KP_LOST);
	/* One repair logged, however often the daemon scanned since. */
	for (n = 0, s = slurp(d.err); (s = strstr(s, "positions it had "
			"claimed are skipped")) != NULL; s++)
		n++;
	ck_assert_int_eq(n, 1);
	close(pa.ready[0]);
	close(pa.go[1]);
	close(pb.ready[0]);
	close(pb.go[1]);
	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 2c. kill -9 of a ring's owner between its claim and its writes. */

#define OK_ROUNDS	(3 * 65536)	/* gets and puts, for the take */

/* The first CPU this process may run on. */
static int
first_cpu(void)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			return cpu;
	return -1;
}

/*
 * Pinned to the first CPU, OWN_ROUNDS gets and puts of one object, so that
 * its cache owns that CPU's ring (libshmpool/ring.h); then, as the owner
 * puts, by hand: KP_PUT objects taken, its record, the producers' head
 * moved with a plain store, KP_WRITTEN of them written.  Sends its slot,
 * whether it owned the ring, and the references; waits to be killed.
 */
static int
owner_killed_worker(void *arg)
{
	struct pipes *p = arg;
	struct shmpool_cache *c;
	struct pool_handle *h;
	struct shmpool *pool;
	struct ring_view *v;
	uint32_t refs[KP_PUT], k;
	void *objs[KP_PUT], *obj;
	cpu_set_t set;
	uint64_t pos;
	int slot, owned, i, cpu = first_cpu();

	close(p->ready[0]);
	close(p->go[1]);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (cpu < 0 || sched_setaffinity(0, sizeof(set), &set) != 0)
		return 9;
	if (shmpool_attach("o", NULL, &pool) != 0)
		return 10;
	h = pool_handle(pool);
	c = shmpool_default_cache(pool);
	for (k = 0; k < OK_ROUNDS; k++)
		if (shmpool_get(pool, &obj) != 0 || shmpool_put(pool, obj) != 0)
			return 11;
	v = &h->rings[(unsigned int)cpu & h->ring_mask];
	slot = shmpool_cache_slot(c);
	owned = uatomic_read(&v->r->owner) == RING_OWN(slot, RING_OWN_OWNED);
	if (shmpool_get_bulk(pool, objs, KP_PUT) != 0)
		return 12;
	for (i = 0; i < KP_PUT; i++)
		refs[i] = shmpool_ptr_to_ref_(pool, objs[i]);
	pos = uatomic_read(&v->r->prod_head);
	if (pos + KP_PUT - uatomic_read(&v->r->cons_head) > v->size)
		return 13;
	uatomic_set(cache_ring_op(c, (unsigned int)cpu & h->ring_mask),
		RING_OP(pos, KP_PUT));
	if (owned)
		uatomic_set(&v->r->prod_head, pos + KP_PUT);
	else if (!ring_claim(&v->r->prod_head, &pos, KP_PUT))
		return 14;
	ring_write(v, pos, KP_WRITTEN, refs, RING_REFS, NULL);
	cmm_smp_mb();
	if (write(p->ready[1], &slot, sizeof(slot)) != sizeof(slot) ||
	    write(p->ready[1], &owned, sizeof(owned)) != sizeof(owned) ||
	    write(p->ready[1], refs, sizeof(refs)) != sizeof(refs))
		return 15;
	for (;;)
		pause();
}

/*
 * shmpoold reclaims the slot of a ring's owner killed in the middle of
 * its put: the ring is no one's, the positions it did not write are
 * holes, and every other object is there once.
 */
START_TEST(test_kill_ring_owner_in_put)
{
	static void *objs[KP_OBJS];
	uint32_t refs[KP_PUT];
	const struct ring_view *ring;
	struct pipes pa;
	struct shmpool *pool;
	struct daemon d;
	char log[256];
	int slot, owned, status, cpu = first_cpu();
	double t0;
	pid_t a;

	ck_assert_int_ge(cpu, 0);
	d_start_two_rings(&d, "killowner", "o", 1024);
	pipes_open(&pa);
	a = fork_worker(owner_killed_worker, &pa);
	close(pa.ready[1]);
	close(pa.go[0]);
	slot = await_ready(&pa);
	ck_assert_int_eq(read(pa.ready[0], &owned, sizeof(owned)),
		sizeof(owned));
	ck_assert_int_eq(read(pa.ready[0], refs, sizeof(refs)), sizeof(refs));
	pool = attach_cache("o", 0);
	ring = &pool_handle(pool)->rings[(unsigned int)cpu &
		pool_handle(pool)->ring_mask];
	if (SHMPOOL_CPU_HERE && __rseq_size != 0)
		ck_assert_msg(owned, "the pinned worker did not own its ring");
	else
		printf("no rseq: the worker uses ring 0 whatever its CPU; "
			"its put is not an owner's\n");
	if (owned)
		ck_assert_uint_eq(uatomic_read(&ring->r->owner),
			RING_OWN(slot, RING_OWN_OWNED));

	t0 = now();
	ck_assert_int_eq(kill(a, SIGKILL), 0);
	ck_assert_int_eq(waitpid(a, &status, 0), a);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	await_slots_in_use(pool, 1, t0);
	snprintf(log, sizeof(log), "shmpoold: pool 'o': a process died in "
		"the middle of a put to the ring; %d positions it had claimed "
		"are skipped (their objects are lost with it)\n", KP_LOST);
	await_stderr(&d, log, RECLAIM_SECS);
	ck_assert_uint_eq(uatomic_read(&ring->r->owner), 0);
	ck_assert_uint_eq(uatomic_read(&ring->r->holes), KP_LOST);
	ck_assert_uint_eq(shmpool_avail_count(pool), KP_HAD);

	/* Every object but the 6 once, from whichever ring. */
	kp_get_had(pool, objs, refs);
	ck_assert_int_eq(shmpool_generic_get(pool, objs + KP_HAD, 1, NULL),
		-ENOENT);
	ck_assert_int_eq(shmpool_generic_put(pool, objs, KP_HAD, NULL), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), KP_HAD);
	ck_assert_int_eq(shmpool_detach(pool), 0);
	close(pa.ready[0]);
	close(pa.go[1]);
	d_finish(&d);
}
END_TEST

/*
 * The same on the second of two rings: shmpoold repairs each ring against
 * the records that name it (a cache's record names its ring; a live one
 * over the same positions of the other ring does not cover them), and
 * gets step over the holes wherever they are.
 */
START_TEST(test_kill_in_put_ring1)
{
	static void *objs[KP_OBJS];
	uint32_t refs[KP_PUT];
	struct shmpool_cache *c;
	struct pool_handle *h;
	struct pipes pa;
	struct shmpool *pool;
	struct daemon d;
	char log[256];
	void *one;
	uint64_t prod;
	pid_t a;
	int status;

	d_start_two_rings(&d, "killring1", "p", 1024);
	kp_ring = 1;
	pipes_open(&pa);
	a = fork_worker(put_killed_worker, &pa);
	close(pa.ready[1]);
	close(pa.go[0]);
	await_ready(&pa);
	ck_assert_int_eq(read(pa.ready[0], refs, sizeof(refs)), sizeof(refs));

	pool = attach_cache("p", 0);
	h = pool_handle(pool);
	ck_assert_uint_eq(h->nb_rings, 2);
	ck_assert_uint_eq(h->rings[1].size, KP_OBJS);
	/* Ring 1 was made with objects 1, 3, ... 1023 at positions 0 ..
	 * 511; A claimed the next KP_PUT. */
	prod = uatomic_read(&h->rings[1].r->prod_head);
	ck_assert_uint_eq(prod, KP_OBJS / 2 + KP_PUT);
	ck_assert_uint_eq(shmpool_avail_count(pool), KP_OBJS);
	/* This process's record: A's positions, of ring 0. */
	c = shmpool_default_cache(pool);
	uatomic_set(cache_ring_op(c, 0), RING_OP(prod - KP_PUT, KP_PUT));

	ck_assert_int_eq(kill(a, SIGKILL), 0);
	ck_assert_int_eq(waitpid(a, &status, 0), a);
	snprintf(log, sizeof(log), "shmpoold: pool 'p': a process died in "
		"the middle of a put to the ring; %d positions it had claimed "
		"are skipped (their objects are lost with it)\n", KP_LOST);
	await_stderr(&d, log, RECLAIM_SECS);
	ck_assert_uint_eq(uatomic_read(&h->rings[1].r->holes), KP_LOST);
	ck_assert_uint_eq(uatomic_read(&h->rings[0].r->holes), 0);
	ck_assert_uint_eq(uatomic_read(&h->rings[1].r->prod_head), prod);
	ck_assert_uint_eq(shmpool_avail_count(pool), KP_HAD);
	uatomic_set(&c->ring_op, 0);

	/* Everything there is, from both rings, over the holes; then
	 * nothing. */
	ck_assert_int_eq(shmpool_generic_get(pool, objs, KP_HAD, NULL), 0);
	ck_assert_int_eq(shmpool_generic_get(pool, &one, 1, NULL), -ENOENT);
	ck_assert_uint_eq(uatomic_read(&h->rings[1].r->holes), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), 0);
	ck_assert_int_eq(shmpool_generic_put(pool, objs, KP_HAD, NULL), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), KP_HAD);
	ck_assert_int_eq(shmpool_detach(pool), 0);
	close(pa.ready[0]);
	close(pa.go[1]);
	d_finish(&d);
}
END_TEST

/* The references in h's rings (no operation in progress, no hole). */
static unsigned int
in_rings(const struct pool_handle *h)
{
	unsigned int i, n = 0;

	for (i = 0; i < h->nb_rings; i++)
		n += (unsigned int)(uatomic_read(&h->ring_r[i]->prod_head) -
			uatomic_read(&h->ring_r[i]->cons_head));
	return n;
}

/*
 * A dead process's cache while both rings are owned by caches in the
 * middle of a claim (made by hand): shmpoold does not wait for them (they
 * may be stopped, or dead and reclaimed after this one); it says so once,
 * and its scan puts the 80 objects back once a ring is free.
 */
START_TEST(test_reclaim_past_busy_owners)
{
	struct shmpool *pool, *other[2];
	struct shmpool_cache *oc[2];
	struct pool_handle *h;
	struct pipes pq;
	struct daemon d;
	char log[256], want[128];
	const char *err;
	unsigned int i, k;
	int slot, status;
	double t0;
	pid_t a;

	d_start_two_rings(&d, "busyowners", "q", 256);
	pipes_open(&pq);
	a = cached_worker_start(&pq, "q", 64, 16, 80);
	close(pq.ready[1]);
	close(pq.go[0]);
	slot = await_ready(&pq);
	pool = attach_cache("q", 0);
	h = pool_handle(pool);
	ck_assert_uint_eq(h->nb_rings, 2);
	ck_assert_uint_eq(in_rings(h), 256 - 80);
	for (i = 0; i < 2; i++) {
		other[i] = attach_cache("q", 0);
		oc[i] = shmpool_default_cache(other[i]);
		uatomic_set(&oc[i]->ring_op_ring, i);
		uatomic_set(&oc[i]->ring_op, RING_OP_GET);
		uatomic_set(&h->ring_r[i]->owner,
			RING_OWN(oc[i]->slot, RING_OWN_OWNED));
	}

	ck_assert_int_eq(kill(a, SIGKILL), 0);
	ck_assert_int_eq(waitpid(a, &status, 0), a);
	snprintf(log, sizeof(log), "shmpoold: pool 'q' slot %d of pid %ld: "
		"a ring's owner is in the middle of a claim; its 80 cached "
		"objects go back at a later scan\n", slot, (long)a);
	await_stderr(&d, log, RECLAIM_SECS);
	ck_assert_uint_eq(in_rings(h), 256 - 80);
	ck_assert_uint_eq(SLOT_STATE(uatomic_read(&h->slots[slot].owner)),
		SEG_SLOT_RELEASING);
	/* The daemon still answers; a flush of the slot is put off too. */
	snprintf(want, sizeof(want), "shmpool/1 ok name=q slot=%d "
		"state=requested cached=80", slot);
	ck_assert_str_eq(ask(&d, "flush name=q slot=%d", slot), want);
	/* Two scans more (each try clears the dead slot's record), and
	 * the put-off said once. */
	for (k = 0; k < 2; k++) {
		uatomic_set(&h->slots[slot].cache.ring_op, RING_OP_GET);
		t0 = now();
		while (uatomic_read(&h->slots[slot].cache.ring_op) != 0) {
			ck_assert_msg(now() - t0 < RECLAIM_SECS, "no scan "
				"tried slot %d again", slot);
			usleep(1000);
		}
	}
	err = slurp(d.err);
	ck_assert_ptr_nonnull(strstr(err, log));
	ck_assert_ptr_null(strstr(strstr(err, log) + 1, log));
	ck_assert_uint_eq(in_rings(h), 256 - 80);

	/* Ring 1's owner done: a scan puts them there. */
	uatomic_set(&oc[1]->ring_op, 0);
	t0 = now();
	while (in_rings(h) != 256) {
		ck_assert_msg(now() - t0 < RECLAIM_SECS, "%u objects in the "
			"rings after %.1f s", in_rings(h), RECLAIM_SECS);
		usleep(1000);
	}
	snprintf(log, sizeof(log), "shmpoold: pool 'q': slot %d of pid %ld "
		"reclaimed (", slot, (long)a);
	await_stderr(&d, log, RECLAIM_SECS);
	await_stderr(&d, "), 80 cached objects back in the ring\n",
		RECLAIM_SECS);
	ck_assert_uint_eq(SLOT_STATE(uatomic_read(&h->slots[slot].owner)),
		SEG_SLOT_FREE);
	ck_assert_uint_eq(uatomic_read(&h->ring_r[1]->owner), 0);
	uatomic_set(&oc[0]->ring_op, 0);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(shmpool_detach(other[i]), 0);
	for (i = 0; i < 2; i++)
		ck_assert_uint_eq(uatomic_read(&h->ring_r[i]->owner), 0);
	check_all_in_ring(pool, 256);
	ck_assert_int_eq(shmpool_detach(pool), 0);
	close(pq.ready[0]);
	close(pq.go[1]);
	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 2c. kill -9 of a real put or get in each state it passes through: the
 * library's own code, stepped by ptrace, not a put made by hand. */

#define SP_OBJS		64	/* in each pool, and entries in its ring */
#define SP_STEPS_MAX	100000	/* single steps before giving up */
#define SP_STATES_MAX	64	/* states of the slot and the ring that a
				   stepped call passes through */

enum sp_kind {
	SP_PUT,			/* a put of n straight to the ring */
	SP_FLUSH,		/* a put of n that first flushes the cache */
	SP_GET,			/* a get of n straight from the ring */
	SP_REFILL,		/* a get of n that first refills the cache */
	SP_HIT_GET,		/* a get of n that the cache holds */
	SP_HIT_PUT,		/* a put of n that the cache takes */
};

/* What the worker does before the call that is stepped, and the call. */
struct stepped_op {
	const char *what;
	enum sp_kind kind;
	unsigned int cache;	/* the worker's cache size */
	unsigned int skew;	/* objects the parent gets and puts back
				   first: the heads stand that far on */
	unsigned int take;	/* objects the worker gets first */
	unsigned int n;		/* objects the stepped call moves */
	unsigned int claim;	/* positions it claims on the ring */
};

static const struct stepped_op stepped_ops[] = {
	/* Without a cache: one object, a short put, a long one, and a
	 * short one whose positions (59 to 68) cross the end of the
	 * ring's 64 entries. */
	{ "a put of 1", SP_PUT, 0, 1, 1, 1, 1 },
	{ "a put of 10", SP_PUT, 0, 1, 10, 10, 10 },
	{ "a put of 40", SP_PUT, 0, 1, 40, 40, 40 },
	{ "a put of 10 across the ring's end", SP_PUT, 0, 59, 10, 10, 10 },
	/* A cache of 8 holds 8 after the get (a refill of 16, 8 taken);
	 * the put of 8 would take it to 16, over its threshold of 12, so
	 * it first flushes those 8 to the ring, then keeps its own 8. */
	{ "a put of 8 that flushes a cache of 8", SP_FLUSH, 8, 1, 8, 8, 8 },
	/* Gets: without a cache, and of 8 through an empty cache of 8,
	 * which refills it with 16. */
	{ "a get of 1", SP_GET, 0, 1, 0, 1, 1 },
	{ "a get of 10", SP_GET, 0, 1, 0, 10, 10 },
	{ "a get of 10 across the ring's end", SP_GET, 0, 59, 0, 10, 10 },
	{ "a get of 8 that refills a cache of 8", SP_REFILL, 8, 1, 0, 8,
		16 },
	/* Hits, the inline copy (8) and the library's (32, on x86-64
	 * with glibc): the worker's get of 1 refills its cache of 32 with
	 * 33, leaving 32 in it; its get of 40 goes to the ring past the
	 * empty cache, so that the put writes entries of the cache that
	 * held nothing (a put of what a get took from the cache would
	 * write them again as they were: no state to tell). */
	{ "a get of 8 from a cache of 32", SP_HIT_GET, 32, 1, 1, 8, 0 },
	{ "a get of 32 from a cache of 32", SP_HIT_GET, 32, 1, 1, 32, 0 },
	{ "a put of 8 into an empty cache of 32", SP_HIT_PUT, 32, 1, 40, 8,
		0 },
	{ "a put of 32 into an empty cache of 32", SP_HIT_PUT, 32, 1, 40,
		32, 0 },
};

static const struct stepped_op *sp_case;

/* Whether a stepped call of kind k is a get. */
static int
sp_gets(enum sp_kind k)
{
	return k == SP_GET || k == SP_REFILL || k == SP_HIT_GET;
}

/*
 * Takes sp_case->take objects, sends its slot and their references, asks
 * to be traced and stops; once let go, makes the call (puts n of them
 * back, or gets n more) and stops again.
 */
static int
stepped_worker(void *arg)
{
	struct pipes *p = arg;
	struct shmpool_attach_opts o = {
		.flags = SHMPOOL_ATTACH_CACHE_SIZE,
		.cache_size = sp_case->cache,
	};
	struct shmpool *pool;
	uint32_t refs[SP_OBJS];
	void *objs[SP_OBJS];
	unsigned int i;
	int slot, get = sp_gets(sp_case->kind);
	char name[16];

	close(p->ready[0]);
	close(p->go[1]);
	if (read(p->go[0], name, sizeof(name)) != sizeof(name) ||
	    shmpool_attach(name, &o, &pool) != 0)
		return 10;
	if (sp_case->take > 0 &&
	    shmpool_get_bulk(pool, objs, sp_case->take) != 0)
		return 11;
	for (i = 0; i < sp_case->take; i++)
		refs[i] = shmpool_ptr_to_ref_(pool, objs[i]);
	slot = shmpool_cache_slot(shmpool_default_cache(pool));
	if (write(p->ready[1], &slot, sizeof(slot)) != sizeof(slot) ||
	    write(p->ready[1], refs, sizeof(refs)) != sizeof(refs))
		return 12;
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
		return 13;
	raise(SIGSTOP);
	if ((get ? shmpool_get_bulk(pool, objs + sp_case->take, sp_case->n) :
			shmpool_put_bulk(pool, objs, sp_case->n)) != 0)
		return 14;
	raise(SIGSTOP);
	return 0;
}

/* What a stepped call has done so far, as its slot and the ring say. */
struct sp_state {
	uint64_t prod;		/* the ring's producers' head */
	uint64_t cons;		/* and its consumers' */
	uint64_t op;		/* the slot's record of its put */
	unsigned int written;	/* positions from prod0 up to prod that
				   hold an object */
	unsigned int len;	/* objects the daemon finds in the cache,
				   once it finishes a change begun */
	uint64_t sig;		/* a hash of the cache's lines (but its
				   objects past the first 2 * SP_OBJS), and
				   of the ring's heads and entries */
};

typedef uint64_t sp_word __attribute__((may_alias));

/* FNV-1a over the 64-bit words [p, p + n). */
static uint64_t
sp_hash(uint64_t h, const sp_word *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= uatomic_read(&p[i]);
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/* The state of the worker's slot (its cache c) and of the ring. */
static void
sp_observe(const struct ring_view *ring, const struct shmpool_cache *c,
		uint64_t prod0, struct sp_state *st)
{
	uint32_t seq = uatomic_read(&c->seq);
	uint64_t q;

	st->prod = uatomic_read(&ring->r->prod_head);
	st->cons = uatomic_read(&ring->r->cons_head);
	st->op = uatomic_read(&c->ring_op);
	st->written = 0;
	for (q = prod0; q < st->prod; q++)
		st->written += ring_ent_seq(uatomic_read(&ring->ents[q &
			ring->mask])) == ring_seq(ring, q);
	st->len = SHMPOOL_W_LEN_(seq & 1 ? uatomic_read(&c->change.w) :
		uatomic_read(&c->w));
	st->sig = sp_hash(UINT64_C(0xcbf29ce484222325), (const sp_word *)c,
		offsetof(struct shmpool_cache, objs) / sizeof(uint64_t));
	st->sig = sp_hash(st->sig, (const sp_word *)c->objs, 2 * SP_OBJS);
	st->sig = sp_hash(st->sig, (const sp_word *)&ring->r->prod_head, 1);
	st->sig = sp_hash(st->sig, (const sp_word *)&ring->r->cons_head, 1);
	st->sig = sp_hash(st->sig, (const sp_word *)ring->ents, ring->size);
}

/* One stepped worker, stopped before its call, on a pool of its own. */
struct sp_run {
	char name[16];
	struct shmpool *pool;
	const struct ring_view *ring;
	struct shmpool_cache *c;	/* the worker's, in this mapping */
	struct pipes pp;
	pid_t pid;
	int slot;
	uint32_t refs[SP_OBJS];
	uint64_t prod0, cons0;
	unsigned int len0;		/* objects in its cache at the stop */
};

/* 1 when the worker stopped to be traced, 0 when it could not be. */
static int
sp_start(struct daemon *d, struct sp_run *run, unsigned int k)
{
	static void *objs[SP_OBJS];
	int status;

	memset(run->name, 0, sizeof(run->name));
	snprintf(run->name, sizeof(run->name), "p%u", k);
	ck_assert_prefix(ask(d, "create name=%s objects=%u object-size=64 "
		"cache=0", run->name, SP_OBJS), "shmpool/1 ok name=");
	run->pool = attach_cache(run->name, 0);
	ck_assert_uint_eq(pool_handle(run->pool)->nb_rings, 1);
	run->ring = &pool_handle(run->pool)->rings[0];
	ck_assert_uint_eq(run->ring->size, SP_OBJS);
	/* Binds the calls that the worker inherits, so that each worker
	 * steps the same instructions, and moves the heads on. */
	ck_assert_int_eq(shmpool_get_bulk(run->pool, objs, sp_case->skew), 0);
	ck_assert_int_eq(shmpool_put_bulk(run->pool, objs, sp_case->skew), 0);
	pipes_open(&run->pp);
	run->pid = fork_worker(stepped_worker, &run->pp);
	close(run->pp.ready[1]);
	close(run->pp.go[0]);
	ck_assert_int_eq(write(run->pp.go[1], run->name, sizeof(run->name)),
		sizeof(run->name));
	if (read(run->pp.ready[0], &run->slot, sizeof(run->slot)) !=
			sizeof(run->slot)) {
		ck_assert_int_eq(waitpid(run->pid, &status, 0), run->pid);
		ck_abort_msg("%s: the worker ended before it was ready "
			"(status 0x%x)", sp_case->what, status);
	}
	ck_assert_int_eq(read(run->pp.ready[0], run->refs, sizeof(run->refs)),
		sizeof(run->refs));
	ck_assert_int_eq(waitpid(run->pid, &status, 0), run->pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 13) {
		ck_assert_int_eq(shmpool_detach(run->pool), 0);
		close(run->pp.ready[0]);
		close(run->pp.go[1]);
		return 0;
	}
	ck_assert_msg(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP,
		"%s: the worker did not stop to be traced (status 0x%x)",
		sp_case->what, status);
	run->c = &pool_handle(run->pool)->slots[run->slot].cache;
	run->prod0 = uatomic_read(&run->ring->r->prod_head);
	run->cons0 = uatomic_read(&run->ring->r->cons_head);
	run->len0 = SHMPOOL_W_LEN_(uatomic_read(&run->c->w));
	ck_assert_uint_eq(ring_count(run->ring),
		SP_OBJS - sp_case->take - run->len0);
	ck_assert_uint_eq(uatomic_read(&run->c->ring_op), 0);
	return 1;
}

/* One instruction of the worker; 0 once its call has returned. */
static int
sp_step(const struct sp_run *run)
{
	int status;

	ck_assert_int_eq(ptrace(PTRACE_SINGLESTEP, run->pid, NULL, NULL), 0);
	ck_assert_int_eq(waitpid(run->pid, &status, 0), run->pid);
	ck_assert_msg(WIFSTOPPED(status), "%s: the worker ended (status "
		"0x%x) in its call", sp_case->what, status);
	if (WSTOPSIG(status) == SIGSTOP)
		return 0;
	ck_assert_msg(WSTOPSIG(status) == SIGTRAP, "%s: the worker stopped "
		"by signal %d in its call", sp_case->what, WSTOPSIG(status));
	return 1;
}

/*
 * The objects a worker killed in state st takes with it: those in its
 * hands (that it has taken out of the pool and not yet put back, or
 * gets), those a put claimed positions for and did not write, and those
 * that its cache has let go of (a flush) or not yet taken in (a refill)
 * while the ring does not hold them, as libshmpool(3) says; *window is
 * set to 1 in those last two states.
 */
static unsigned int
sp_expect_lost(const struct sp_run *run, const struct sp_state *st,
		int *window)
{
	const struct stepped_op *sp = sp_case;
	int put_claimed = st->prod != run->prod0;
	int get_claimed = st->cons != run->cons0;

	*window = 0;
	switch (sp->kind) {
	case SP_PUT:
		return sp->take - st->written;
	case SP_FLUSH:
		/* Its own n stay in its hands until it pushes them, once
		 * the flush is done. */
		if (put_claimed && st->written == sp->claim &&
		    st->len == sp->n)
			return 0;
		*window = st->len == 0 && !put_claimed;
		return sp->n + (st->len == 0 ? run->len0 - st->written : 0);
	case SP_GET:
		return get_claimed ? sp->n : 0;
	case SP_REFILL:
		if (!get_claimed)
			return 0;
		*window = st->len == run->len0;
		return *window ? sp->claim : run->len0 + sp->claim - st->len;
	/* A hit's objects are the caller's once its cache's length says
	 * so: a get's leave the cache before they are copied out, a put's
	 * enter it once copied in (the worker's first ones are its own,
	 * in its hands throughout). */
	case SP_HIT_GET:
		return sp->take + (st->len == run->len0 ? 0 : sp->n);
	case SP_HIT_PUT:
		return sp->take - (st->len == run->len0 ? 0 : sp->n);
	}
	ck_abort_msg("bad kind %d", sp->kind);
	return 0;
}

/*
 * kill -9 of the worker of run as st says it stands: shmpoold must make
 * holes of exactly the positions its put claimed and did not write, give
 * back what its cache holds (once the change it was making is finished),
 * and lose nothing but what sp_expect_lost() says.  The pool is checked
 * through and destroyed.  Returns whether the state is one of the
 * windows that sp_expect_lost() names.
 */
static int
sp_kill_and_check(struct daemon *d, struct sp_run *run,
		const struct sp_state *st, unsigned int state)
{
	static void *objs[SP_OBJS + 1];		/* and one more to ask */
	static uint8_t seen[SP_OBJS];
	const struct stepped_op *sp = sp_case;
	const struct ring_view *ring = run->ring;
	struct shmpool *pool = run->pool;
	unsigned int unit, holes, had, lost, mine, i;
	int get = sp_gets(sp->kind);
	int status, window;
	char log[256];
	const char *r;

	memset(seen, 0, sizeof(seen));
	unit = pool_handle(pool)->elt_size >> SHMPOOL_REF_SHIFT;
	/* A claim is all of it, or nothing yet; a put's record is
	 * written before it and cleared after the writes.  A get moves the
	 * consumers' head, whole; its record, around its claim only, is
	 * RING_OP_GET, which covers no position (ring ownership). */
	ck_assert_msg(st->prod == run->prod0 || (!get &&
		st->prod == run->prod0 + sp->claim), "%s, state %u: the "
		"producers' head moved by %llu", sp->what, state,
		(unsigned long long)(st->prod - run->prod0));
	ck_assert_msg(st->cons == run->cons0 || (get &&
		st->cons == run->cons0 + sp->claim), "%s, state %u: the "
		"consumers' head moved by %llu", sp->what, state,
		(unsigned long long)(st->cons - run->cons0));
	if (get)
		ck_assert_msg(st->op == 0 || st->op == RING_OP_GET, "%s, state "
			"%u: a get's record reads %#llx", sp->what, state,
			(unsigned long long)st->op);
	else if (st->prod != run->prod0 && st->written < sp->claim)
		ck_assert_msg(st->op == RING_OP(run->prod0, sp->claim),
			"%s, state %u: %u of %u written and the record reads "
			"%#llx", sp->what, state, st->written, sp->claim,
			(unsigned long long)st->op);
	holes = st->prod == run->prod0 ? 0 : sp->claim - st->written;
	/* What the ring holds but the holes, and the cache. */
	had = (unsigned int)(st->prod - st->cons) - holes + st->len;
	lost = sp_expect_lost(run, st, &window);
	ck_assert_msg(had + lost == SP_OBJS, "%s, state %u: %u objects to "
		"be had and %u lost, of %u", sp->what, state, had, lost,
		SP_OBJS);

	ck_assert_int_eq(kill(run->pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(run->pid, &status, 0), run->pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	snprintf(log, sizeof(log), "shmpoold: pool '%s': slot %d of pid %ld "
		"reclaimed (process exited), %u cached objects back in the "
		"ring\n", run->name, run->slot, (long)run->pid, st->len);
	await_stderr(d, log, RECLAIM_SECS);
	/* Logged before the slot is reclaimed, if at all. */
	snprintf(log, sizeof(log), "shmpoold: pool '%s': a process died in "
		"the middle of a put to the ring; %u positions it had claimed "
		"are skipped (their objects are lost with it)\n", run->name,
		holes);
	ck_assert_msg((strstr(slurp(d->err), log) != NULL) == (holes > 0),
		"%s, state %u: %u positions left unwritten, and shmpoold's "
		"stderr (its end):\n%s", sp->what, state, holes,
		stderr_tail(d));
	ck_assert_uint_eq(tu_slots_in_use(pool), 1);
	ck_assert_uint_eq(uatomic_read(&ring->r->holes), holes);
	/* The cached objects went to the ring after the put's positions. */
	ck_assert_uint_eq(uatomic_read(&ring->r->prod_head),
		st->prod + st->len);
	ck_assert_msg(shmpool_avail_count(pool) == had, "%s, state %u: %u "
		"objects to be had, expected %u (%u in the ring at the kill, "
		"%u holes, %u cached)", sp->what, state,
		shmpool_avail_count(pool), had,
		(unsigned int)(st->prod - st->cons), holes, st->len);
	r = ask(d, "info name=%s", run->name);
	ck_assert_kv_u(r, "avail", had);
	ck_assert_kv_u(r, "in-use", lost);

	/* Each of them once, over the holes; then nothing. */
	ck_assert_int_eq(shmpool_generic_get(pool, objs, had, NULL), 0);
	for (i = 0; i < had; i++) {
		uint32_t ref = shmpool_ptr_to_ref_(pool, objs[i]);

		ck_assert_msg(ref % unit == 0 && ref / unit < SP_OBJS,
			"%s, state %u: object %u: reference %u is not one of "
			"the pool", sp->what, state, i, ref);
		ck_assert_msg(!seen[ref / unit], "%s, state %u: object %u "
			"(reference %u) got twice", sp->what, state, i, ref);
		seen[ref / unit] = 1;
	}
	/* The worker's own objects: as far as a put wrote them, and all
	 * of a flush's once they are in its cache. */
	for (i = 0, mine = 0; i < sp->take; i++)
		mine += seen[run->refs[i] / unit];
	if (sp->kind == SP_PUT)
		ck_assert_uint_eq(mine, st->written);
	else if (sp->kind == SP_FLUSH)
		ck_assert_uint_eq(mine, lost == 0 ? sp->n : 0);
	else if (sp->kind == SP_HIT_PUT)
		ck_assert_uint_eq(mine, st->len == run->len0 ? 0 : sp->n);
	else if (sp->kind == SP_HIT_GET)
		ck_assert_uint_eq(mine, 0);
	ck_assert_int_eq(shmpool_generic_get(pool, objs + had, 1, NULL),
		-ENOENT);
	ck_assert_int_eq(shmpool_generic_put(pool, objs, had, NULL), 0);
	check_all_in_ring(pool, had);
	ck_assert_uint_eq(uatomic_read(&ring->r->holes), 0);
	ck_assert_int_eq(shmpool_detach(pool), 0);
	close(run->pp.ready[0]);
	close(run->pp.go[1]);
	ck_assert_prefix(ask(d, "destroy name=%s", run->name),
		"shmpool/1 ok name=");
	return window;
}

/*
 * A first worker is stepped through the whole call, to find each
 * instruction after which its slot or the ring (what a kill leaves
 * behind) has changed; then, for the state before the first change and
 * after each, a new worker on a new pool is stepped through the same
 * states that far, and killed there: every state the call passes through,
 * once, and the last twice (the first worker's end is killed too).
 */
START_TEST(test_kill_stepped)
{
	const struct stepped_op *sp = &stepped_ops[_i];
	static uint64_t sigs[SP_STATES_MAX];
	struct sp_state st, prev;
	struct sp_run run;
	struct daemon d;
	unsigned int steps, nb = 0, i, j;
	int hit = sp->kind == SP_HIT_GET || sp->kind == SP_HIT_PUT;
	int get = sp_gets(sp->kind);
	/* The states killed in, by what the call had done: a put's
	 * record written, its claim, its writes; a get's claim; a hit's
	 * length; and the windows of sp_expect_lost(). */
	unsigned int killed_recorded = 0, killed_claimed = 0;
	unsigned int killed_partly = 0, killed_written = 0;
	unsigned int killed_got = 0, killed_window = 0, killed_moved = 0;
	char name[32];

	sp_case = sp;
	setenv("SHMPOOL_RINGS", "1", 1);
	snprintf(name, sizeof(name), "stepped%d", _i);
	d_init(&d, name);
	d_start(&d);

	if (!sp_start(&d, &run, 0)) {
		printf("SKIP: %s: ptrace(PTRACE_TRACEME) is refused here\n",
			sp->what);
		d_finish(&d);
		return;
	}
	sp_observe(run.ring, run.c, run.prod0, &prev);
	sigs[nb++] = prev.sig;
	for (steps = 1; sp_step(&run); steps++) {
		ck_assert_msg(steps < SP_STEPS_MAX, "%s: the call still runs "
			"after %u steps", sp->what, steps);
		sp_observe(run.ring, run.c, run.prod0, &st);
		if (st.sig != prev.sig) {
			ck_assert_msg(nb < SP_STATES_MAX, "%s: more than %u "
				"states", sp->what, SP_STATES_MAX);
			sigs[nb++] = st.sig;
		}
		prev = st;
	}
	/* The call returned: a put has written every position it claimed
	 * and cleared its record; a get has claimed its positions. */
	ck_assert_uint_eq(st.prod, run.prod0 + (get ? 0 : sp->claim));
	ck_assert_uint_eq(st.cons, run.cons0 + (get ? sp->claim : 0));
	ck_assert_uint_eq(st.written, get ? 0 : sp->claim);
	ck_assert_uint_eq(st.op, 0);
	sp_kill_and_check(&d, &run, &st, nb - 1);

	for (i = 0; i < nb; i++) {
		ck_assert(sp_start(&d, &run, i + 1));
		/* Through states 0 .. i, in the same order. */
		sp_observe(run.ring, run.c, run.prod0, &st);
		ck_assert_msg(st.sig == sigs[0], "%s: the worker does not "
			"start where the first one did", sp->what);
		for (j = 0, steps = 0; j < i;) {
			ck_assert_msg(sp_step(&run), "%s: the call returned "
				"in state %u of %u", sp->what, j, nb);
			ck_assert_msg(++steps < SP_STEPS_MAX, "%s: still in "
				"state %u after %u steps", sp->what, j, steps);
			prev = st;
			sp_observe(run.ring, run.c, run.prod0, &st);
			if (st.sig == prev.sig)
				continue;
			ck_assert_msg(st.sig == sigs[++j], "%s: state %u is "
				"not the first worker's", sp->what, j);
		}
		if (hit)
			killed_moved += st.len != run.len0;
		else if (get)
			killed_got += st.cons != run.cons0;
		else if (st.prod == run.prod0)
			killed_recorded += st.op != 0;
		else if (st.written == 0)
			killed_claimed++;
		else if (st.written < sp->claim)
			killed_partly++;
		else
			killed_written += st.op != 0;
		killed_window += sp_kill_and_check(&d, &run, &st, i);
	}
	/* Every stage of a put was killed in at least once (a get's
	 * first and last states are before and after its claim). */
	if (hit) {
		printf("%s: killed in each of its %u states, %u of them "
			"after its cache's length moved\n", sp->what, nb,
			killed_moved);
		/* The length moves once, in the last state: a put's
		 * objects are all in the cache by then (each state of its
		 * copy before it is one), and a get's leave it before
		 * they are copied out (to the worker's own memory, which
		 * is not watched). */
		ck_assert_uint_eq(killed_moved, 1);
		ck_assert_uint_eq(st.len, sp->kind == SP_HIT_GET ?
			run.len0 - sp->n : run.len0 + sp->n);
		if (sp->kind == SP_HIT_GET)
			ck_assert_uint_eq(nb, 2);
		else
			ck_assert_uint_gt(nb, 2);
	} else if (get) {
		printf("%s: killed in each of its %u states, %u after its "
			"claim\n", sp->what, nb, killed_got);
		/* A refill's objects are lost in one stretch at most:
		 * after its claim, before its cache's change is made; two
		 * states, its record being cleared in between. */
		if (sp->kind == SP_REFILL) {
			printf("%s: %u states losing what it took from the "
				"ring\n", sp->what, killed_window);
			ck_assert_uint_le(killed_window, 2);
		}
	} else {
		printf("%s: killed in each of its %u states: recorded, not "
			"claimed %u; claimed, none written %u; partly written "
			"%u; written, record not cleared %u\n", sp->what, nb,
			killed_recorded, killed_claimed, killed_partly,
			killed_written);
		ck_assert_uint_gt(killed_recorded, 0);
		ck_assert_uint_gt(killed_claimed, 0);
		if (sp->claim > 1)
			ck_assert_uint_gt(killed_partly, 0);
		ck_assert_uint_gt(killed_written, 0);
		/* A flush on a ring with room lets go of the cache's
		 * objects only once their positions are claimed. */
		if (sp->kind == SP_FLUSH)
			ck_assert_uint_eq(killed_window, 0);
	}
	d_finish(&d);
}
END_TEST

/* A daemon given a bad SHMPOOL_RINGS refuses each create, with the value. */
START_TEST(test_bad_rings_env)
{
	struct daemon d;

	setenv("SHMPOOL_RINGS", "3", 1);
	d_init(&d, "badrings");
	d_start(&d);
	setenv("SHMPOOL_RINGS", "1", 1);
	ck_assert_str_eq(ask(&d, "create name=x objects=100 object-size=64"),
		"shmpool/1 error EINVAL msg=pool 'x': SHMPOOL_RINGS=3 is not 1, "
		"2, 4 or 8");
	ck_assert_str_eq(ask(&d, "list"), "shmpool/1 ok count=0");
	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 3. kill -9 of the daemon: workers go on; a new daemon reclaims. */

#define RUN_ON		20000	/* iterations each without a daemon */

struct run {
	uint32_t park;			/* parent: stop and park */
	uint32_t release;		/* parent: detach and exit */
	struct {
		uint64_t iters;
		uint64_t got, put;	/* objects */
		uint64_t fails;
		uint32_t parked;
		int32_t slot;
	} w[2];
};

#define LOAD(x)		__atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static struct run *run;

static int
loop_worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1);
	struct shmpool *pool;
	void *objs[40];
	unsigned int n;

	if (shmpool_attach("w", NULL, &pool) != 0)
		return 100;
	STORE(run->w[id].slot, shmpool_cache_slot(shmpool_default_cache(pool)));
	while (!LOAD(run->park)) {
		n = 1 + tu_rand(&seed) % 40;
		if (shmpool_get_bulk(pool, objs, n) != 0) {
			STORE(run->w[id].fails, run->w[id].fails + 1);
		} else {
			STORE(run->w[id].got, run->w[id].got + n);
			if (shmpool_put_bulk(pool, objs, n) != 0)
				STORE(run->w[id].fails, run->w[id].fails + 1);
			else
				STORE(run->w[id].put, run->w[id].put + n);
		}
		STORE(run->w[id].iters, run->w[id].iters + 1);
	}
	/* Parked holding nothing in hand, some objects in the cache. */
	STORE(run->w[id].parked, 1);
	while (!LOAD(run->release))
		usleep(1000);
	if (shmpool_detach(pool) != 0)
		run->w[id].fails++;
	return run->w[id].fails > 255 ? 255 : (int)run->w[id].fails;
}

/* Both workers reach at least iters iterations. */
static void
await_iters(uint64_t iters0, uint64_t iters1, double secs)
{
	double deadline = now() + secs;

	while (LOAD(run->w[0].iters) < iters0 ||
	       LOAD(run->w[1].iters) < iters1) {
		ck_assert_msg(now() < deadline, "workers stuck at %llu and "
			"%llu iterations",
			(unsigned long long)LOAD(run->w[0].iters),
			(unsigned long long)LOAD(run->w[1].iters));
		usleep(1000);
	}
}

START_TEST(test_kill_daemon)
{
	struct shmpool_stats e = { 0 };
	struct shmpool *pool = NULL;
	struct daemon d;
	pid_t pids[2];
	double deadline;
	int i, status;
	const char *r;

	run = mmap(NULL, sizeof(*run), PROT_READ | PROT_WRITE,
		MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(run, MAP_FAILED);
	memset(run, 0, sizeof(*run));

	d_init(&d, "killdaemon");
	d_start(&d);
	ck_assert_prefix(ask(&d, "create name=w objects=1024 object-size=64 "
		"cache=32"), "shmpool/1 ok name=w ");
	for (i = 0; i < 2; i++)
		pids[i] = fork_worker(loop_worker, (void *)(intptr_t)i);
	await_iters(1000, 1000, 5);
	ck_assert_kv_u(ask(&d, "info name=w"), "slots-in-use", 2);

	/* The daemon dies; the data path does not need it. */
	ck_assert_int_eq(kill(d.pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(d.pid, &status, 0), d.pid);
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(shmpool_attach("w", NULL, &pool), -ECONNREFUSED);
	await_iters(LOAD(run->w[0].iters) + RUN_ON,
		LOAD(run->w[1].iters) + RUN_ON, 10);
	STORE(run->park, 1);
	deadline = now() + 5;
	while (!LOAD(run->w[0].parked) || !LOAD(run->w[1].parked)) {
		ck_assert_msg(now() < deadline, "workers do not park");
		usleep(1000);
	}
	ck_assert_uint_eq(LOAD(run->w[0].fails), 0);
	ck_assert_uint_eq(LOAD(run->w[1].fails), 0);

	/* Worker 1 dies too, with objects in its cache and none in hand. */
	ck_assert_int_eq(kill(pids[1], SIGKILL), 0);
	ck_assert_int_eq(waitpid(pids[1], &status, 0), pids[1]);

	/* A new daemon on the same socket and dirs reclaims its slot. */
	d_start(&d);
	deadline = now() + RECLAIM_SECS;
	for (;;) {
		r = ask(&d, "info name=w");
		ck_assert_prefix(r, "shmpool/1 ok name=w ");
		if (strcmp(rv(r, "slots-in-use") ?: "", "1") == 0)
			break;
		ck_assert_msg(now() < deadline, "the dead worker's slot is "
			"not reclaimed after restart: '%s'", r);
		usleep(1000);
	}
	ck_assert_kv_u(r, "avail", 1024);
	ck_assert_kv_u(r, "in-use", 0);

	/* The freed slot is the first free one: this attachment may get it,
	 * with counters from zero. */
	pool = attach_cache("w", 0);
	ck_assert_uint_eq(tu_slots_in_use(pool), 2);
	if (shmpool_cache_slot(shmpool_default_cache(pool)) == run->w[1].slot)
		tu_check_stats(pool, run->w[1].slot, &e, "reused slot");
	else
		ck_assert_int_eq(shmpool_stats_read(pool, run->w[1].slot, &e),
			-ENOENT);
	e = (struct shmpool_stats){ 0 };
	e.get_success_objs = run->w[1].got;
	e.put_objs = run->w[1].put;
	{
		struct shmpool_stats st;

		ck_assert_int_eq(shmpool_stats_read(pool,
			SHMPOOL_STATS_RETIRED, &st), 0);
		TU_CHECK_FIELD(st, e, get_success_objs, "retired");
		TU_CHECK_FIELD(st, e, put_objs, "retired");
		TU_CHECK_FIELD(st, e, get_fail_bulk, "retired");
		ck_assert_uint_eq(st.get_success_bulk, st.put_bulk);
		ck_assert_uint_eq(st.get_success_bulk,
			SHMPOOL_STATS ? run->w[1].iters : 0);
	}
	r = ask(&d, "info name=w");
	ck_assert_kv_u(r, "slots-in-use", 2);

	/* The other worker detaches and exits 0: no call ever failed. */
	STORE(run->release, 1);
	tu_wait_children(pids, 1, 5);
	ck_assert_uint_eq(tu_slots_in_use(pool), 1);
	ck_assert_uint_eq(shmpool_avail_count(pool), 1024);
	{
		struct shmpool_stats st;

		e.get_success_objs = run->w[0].got + run->w[1].got;
		e.put_objs = run->w[0].put + run->w[1].put;
		ck_assert_int_eq(shmpool_stats_read(pool, SHMPOOL_STATS_ALL,
			&st), 0);
		TU_CHECK_FIELD(st, e, get_success_objs, "all");
		TU_CHECK_FIELD(st, e, put_objs, "all");
		TU_CHECK_FIELD(st, e, get_fail_bulk, "all");
	}
	check_all_in_ring(pool, 1024);
	ck_assert_int_eq(shmpool_detach(pool), 0);
	r = ask(&d, "info name=w");
	ck_assert_kv_u(r, "slots-in-use", 0);
	ck_assert_kv_u(r, "avail", 1024);
	d_finish(&d);
	munmap(run, sizeof(*run));
}
END_TEST

/* ------------------------------------------------------------------ */
/* 4. Bad requests: the right error each, and the daemon goes on. */

struct bad_field {
	const char *req;
	const char *prefix;	/* of the whole reply */
};

static const struct bad_field bad_fields[] = {
	{ "create name=.bad objects=10 object-size=64",
	  "shmpool/1 error EINVAL field=name value=.bad msg=" },
	{ "create name=" "0123456789012345678901234567890123456789"
	  "012345678901234567890123 objects=10 object-size=64",
	  "shmpool/1 error EINVAL field=name value=" "0123456789012345678901"
	  "234567890123456789012345678901234567890123 msg=" },
	{ "create name=a/b objects=10 object-size=64",
	  "shmpool/1 error EINVAL field=name value=a/b msg=" },
	{ "create name=b objects=0 object-size=64",
	  "shmpool/1 error EINVAL field=objects value=0 msg=" },
	{ "create name=b objects=x object-size=64",
	  "shmpool/1 error EINVAL field=objects value=x msg=" },
	{ "create name=b objects=-1 object-size=64",
	  "shmpool/1 error EINVAL field=objects value=-1 msg=" },
	{ "create name=b objects=0x10 object-size=64",
	  "shmpool/1 error EINVAL field=objects value=0x10 msg=" },
	{ "create name=b objects=1073741825 object-size=64",
	  "shmpool/1 error EINVAL field=objects value=1073741825 msg=" },
	{ "create name=b objects=10 object-size=0",
	  "shmpool/1 error EINVAL field=object-size value=0 msg=" },
	{ "create name=b objects=10 object-size=1048577",
	  "shmpool/1 error EINVAL field=object-size value=1048577 msg=" },
	{ "create name=b objects=10000 object-size=64 cache=4097",
	  "shmpool/1 error EINVAL field=cache value=4097 msg=" },
	{ "create name=b objects=90 object-size=64 cache=61",
	  "shmpool/1 error EINVAL field=cache value=61 msg=" },
	{ "create name=b objects=10 object-size=64 slots=0",
	  "shmpool/1 error EINVAL field=slots value=0 msg=" },
	{ "create name=b objects=10 object-size=64 slots=1025",
	  "shmpool/1 error EINVAL field=slots value=1025 msg=" },
	{ "create name=b objects=10 object-size=64 huge=sometimes",
	  "shmpool/1 error EINVAL field=huge value=sometimes msg=" },
	{ "create name=b objects=10 object-size=64 mode=0999",
	  "shmpool/1 error EINVAL field=mode value=0999 msg=" },
	{ "create name=b objects=10 object-size=64 mode=01777",
	  "shmpool/1 error EINVAL field=mode value=01777 msg=" },
	{ "create name=b objects=10 object-size=64 owner=no-such-user-xyz",
	  "shmpool/1 error EINVAL field=owner value=no-such-user-xyz msg=" },
	{ "create name=b objects=10 object-size=64 group=no-such-group-xyz",
	  "shmpool/1 error EINVAL field=group value=no-such-group-xyz msg=" },
	{ "create name=b objects=10 object-size=64 colour=red",
	  "shmpool/1 error EINVAL field=colour value=red "
	  "msg=unknown key 'colour' for create" },
	{ "create name=b name=b objects=1 object-size=1",
	  "shmpool/1 error EINVAL field=name value=b "
	  "msg=key 'name' is given twice" },
	{ "flush name=b slot=0 slot=0",
	  "shmpool/1 error EINVAL field=slot value=0 "
	  "msg=key 'slot' is given twice" },
	{ "info name=b colour=red",
	  "shmpool/1 error EINVAL field=colour value=red "
	  "msg=unknown key 'colour' for info" },
	{ "create objects=10 object-size=64",
	  "shmpool/1 error EINVAL field=name msg=name is required" },
	{ "create name=b object-size=64",
	  "shmpool/1 error EINVAL field=objects msg=objects is required" },
	{ "create name=b objects=10",
	  "shmpool/1 error EINVAL field=object-size "
	  "msg=object-size is required" },
	{ "info", "shmpool/1 error EINVAL field=name msg=name is required" },
	{ "destroy", "shmpool/1 error EINVAL field=name msg=name is required" },
	{ "attach", "shmpool/1 error EINVAL field=name msg=name is required" },
	{ "frobnicate name=b",
	  "shmpool/1 error EINVAL field=verb value=frobnicate msg=" },
	{ "info name=nosuchpool", "shmpool/1 error ENOENT " },
	{ "destroy name=nosuchpool", "shmpool/1 error ENOENT " },
	{ "attach name=nosuchpool", "shmpool/1 error ENOENT " },
	{ "info name", "shmpool/1 error EPROTO msg=" },
	{ "info name=", "shmpool/1 error EPROTO msg=" },
	{ "info name=a=b", "shmpool/1 error EPROTO msg=" },
	{ "", "shmpool/1 error EPROTO msg=" },
	/* msg= takes the rest of the line, empty or not, in a request too. */
	{ "info name=b msg=hello there",
	  "shmpool/1 error EINVAL field=msg msg=" },
	{ "info name=b msg=", "shmpool/1 error EINVAL field=msg msg=" },
	/* "error" is a reply's status, not a verb, with or without a
	 * code after it. */
	{ "error msg=hello world",
	  "shmpool/1 error EINVAL field=verb value=error msg=" },
	{ "error EINVAL name=b",
	  "shmpool/1 error EINVAL field=verb value=error msg=" },
};

/* The daemon still answers, and is still running. */
static void
check_alive(const struct daemon *d, const char *after)
{
	const char *r = ask(d, "ping");

	ck_assert_msg(strncmp(r, "shmpool/1 ok ", 13) == 0,
		"after %s: ping answered '%s'", after, r);
	ck_assert_int_eq(waitpid(d->pid, NULL, WNOHANG), 0);
}

/* The error code, the 3rd token of an error reply. */
static void
check_error(const char *r, const char *code, const char *what)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "shmpool/1 error %s ", code);
	ck_assert_msg(strncmp(r, prefix, strlen(prefix)) == 0,
		"%s: reply '%s', expected '%s...'", what, r, prefix);
	ck_assert_msg(strstr(r, " msg=") != NULL, "%s: no msg= in '%s'",
		what, r);
}

/* A request sent on fd, its reply not waited for. */
static void
conn_send(int fd, const char *text)
{
	char req[REQ_MAX + 1];
	int n = snprintf(req, sizeof(req), "shmpool/1 %s", text);

	ck_assert_int_le(n, REQ_MAX);
	ck_assert_int_eq(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
}

/* Is a reply waiting on fd? */
static int
conn_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/*
 * A create builds its segment (1 GiB here: a second or so to allocate)
 * while the daemon goes on answering: pings on other connections are
 * answered before the create is; a second request on the create's own
 * connection is refused at once (EBUSY); a second create of the name is
 * refused as under way.  A create whose client went away still makes its
 * pool.  SIGTERM waits for a create under way, answers it, and exits 0.
 */
#define BIG_POOL	"objects=1024 object-size=1048576 cache=0"

static void await_pool(const struct daemon *d, const char *name, double secs);

START_TEST(test_create_in_background)
{
	char reply[REPLY_MAX + 1];
	unsigned int pings = 0;
	double deadline;
	struct daemon d;
	const char *r;
	int a, status;

	d_init(&d, "bgcreate");
	d_start(&d);

	a = conn_open(d.sock);
	ck_assert_int_ge(a, 0);
	conn_send(a, "create name=big " BIG_POOL);
	conn_send(a, "ping");
	ck_assert_int_gt(conn_recv(a, reply, sizeof(reply)), 0);
	ck_assert_str_eq(reply, "shmpool/1 error EBUSY msg=a create is under "
		"way on this connection: one request at a time");
	check_error(ask(&d, "create name=big objects=8 object-size=64"),
		"EEXIST", "a second create of big");
	ck_assert(strstr(ask(&d, "create name=big objects=8 object-size=64"),
		"msg=pool 'big' is being created") != NULL);
	deadline = now() + 60;
	while (!conn_ready(a)) {
		ck_assert_msg(now() < deadline, "no answer to the create in "
			"60 s");
		check_alive(&d, "a create under way");
		pings++;
		usleep(1000);
	}
	ck_assert_uint_gt(pings, 0);
	ck_assert_int_gt(conn_recv(a, reply, sizeof(reply)), 0);
	ck_assert_prefix(reply, "shmpool/1 ok name=big ");
	ck_assert_kv(reply, "memory", "shm");
	/* The connection serves requests again. */
	ck_assert_int_gt(conn_call(a, "shmpool/1 info name=big", 23, reply,
		sizeof(reply)), 0);
	ck_assert_prefix(reply, "shmpool/1 ok name=big ");
	ck_assert_kv_u(reply, "objects", 1024);
	close(a);
	ck_assert_prefix(ask(&d, "destroy name=big"), "shmpool/1 ok name=big");

	/* Its client gone at once: the pool is made all the same. */
	a = conn_open(d.sock);
	ck_assert_int_ge(a, 0);
	conn_send(a, "create name=big2 " BIG_POOL);
	close(a);
	await_pool(&d, "big2", 60);
	ck_assert_prefix(ask(&d, "destroy name=big2"),
		"shmpool/1 ok name=big2");

	/* SIGTERM while a create is under way: answered, then exit 0. */
	a = conn_open(d.sock);
	ck_assert_int_ge(a, 0);
	conn_send(a, "create name=big3 " BIG_POOL);
	r = ask(&d, "create name=big3 objects=8 object-size=64");
	ck_assert_msg(strstr(r, "msg=pool 'big3' is being created") != NULL,
		"not under way: '%s'", r);
	ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
	ck_assert_int_gt(conn_recv(a, reply, sizeof(reply)), 0);
	ck_assert_prefix(reply, "shmpool/1 ok name=big3 ");
	close(a);
	ck_assert_msg(wait_exit(d.pid, 60, &status), "shmpoold still running "
		"60 s after SIGTERM");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"status 0x%x; stderr:\n%s", status, slurp(d.err));
	d.pid = -1;
	tu_rm_tree(d.dir);
}
END_TEST

START_TEST(test_bad_requests)
{
	char big[REQ_MAX + 1024], reply[REPLY_MAX + 1];
	uint64_t seed = 0x853c49e6748fea9bULL;
	struct daemon d;
	const char *r;
	size_t i;
	int fd, idle;

	d_init(&d, "bad");
	d_start(&d);

	/* A peer that connects and stays idle blocks no one. */
	idle = conn_open(d.sock);
	ck_assert_int_ge(idle, 0);

	for (i = 0; i < sizeof(bad_fields) / sizeof(bad_fields[0]); i++) {
		r = ask(&d, "%s", bad_fields[i].req);
		ck_assert_msg(strncmp(r, bad_fields[i].prefix,
			strlen(bad_fields[i].prefix)) == 0,
			"'%s': reply '%s', expected '%s...'",
			bad_fields[i].req, r, bad_fields[i].prefix);
		check_alive(&d, bad_fields[i].req);
	}

	/* An attach's cache: a number in range, and one that fits. */
	ck_assert_prefix(ask(&d, "create name=ac objects=1024 object-size=64"),
		"shmpool/1 ok name=ac ");
	ck_assert_str_eq(ask(&d, "attach name=ac cache=684"),
		"shmpool/1 error EINVAL field=cache value=684 msg=cache: a "
		"cache of 684 needs at least 1026 objects (1.5 times it), "
		"pool 'ac' has 1024");
	ck_assert_str_eq(ask(&d, "attach name=ac cache=4097"),
		"shmpool/1 error EINVAL field=cache value=4097 msg=cache: "
		"'4097' is not a number in 0..4096");
	ck_assert_prefix(ask(&d, "destroy name=ac"), "shmpool/1 ok ");

	/* Random bytes. */
	for (i = 0; i < 256; i++)
		big[i] = (char)(tu_rand(&seed) & 0xff);
	big[0] = '\x01';
	check_error(ask_raw(&d, big, 256), "EPROTO", "random bytes");
	check_alive(&d, "random bytes");

	/* A NUL byte, a control byte, in an otherwise good request. */
	check_error(ask_raw(&d, "shmpool/1 ping\0xx", 17), "EPROTO", "NUL");
	check_alive(&d, "a NUL byte");
	check_error(ask_raw(&d, "shmpool/1 info name=p\x7f", 22), "EPROTO",
		"DEL");
	check_error(ask_raw(&d, "shmpool/1 info name=\xe9t\xe9", 23),
		"EPROTO", "Latin-1");
	check_alive(&d, "a non-ASCII byte");

	/* Not the protocol. */
	check_error(ask_raw(&d, "hello", 5), "EPROTO", "hello");
	check_error(ask_raw(&d, "GET / HTTP/1.0\r\n\r\n", 18), "EPROTO",
		"HTTP");
	check_error(ask_raw(&d, "shmpool/x ping", 14), "EPROTO", "shmpool/x");
	check_error(ask_raw(&d, "shmpool/ ping", 13), "EPROTO", "shmpool/");
	check_error(ask_raw(&d, "shmpool/1", 9), "EPROTO", "no verb");
	check_alive(&d, "non-protocol text");

	/* A key given twice in a request that is malformed besides: the
	 * malformed request is the answer. */
	check_error(ask_raw(&d, "shmpool/1 info name=a name=a\nextra", 34),
		"EPROTO", "a key twice, and a second line");
	check_error(ask(&d, "info name=a name=a bad"), "EPROTO",
		"a key twice, and a token without =");
	{
		char many[1024];
		int k, n = snprintf(many, sizeof(many), "info name=a name=a");

		for (k = 0; k < 31; k++)
			n += snprintf(many + n, sizeof(many) - (size_t)n,
				" k%d=1", k);
		check_error(ask(&d, "%s", many), "EPROTO",
			"a key twice, and 33 keys");
		/* 32, one of them twice, is the key given twice, named
		 * with its first value. */
		n = snprintf(many, sizeof(many), "info name=a name=b");
		for (k = 0; k < 30; k++)
			n += snprintf(many + n, sizeof(many) - (size_t)n,
				" k%d=1", k);
		ck_assert_str_eq(ask(&d, "%s", many), "shmpool/1 error EINVAL "
			"field=name value=a msg=key 'name' is given twice");
	}

	/* 4096 bytes is the largest request; one more is too many. */
	memset(big, ' ', sizeof(big));
	memcpy(big, "shmpool/1 ping", 14);
	ck_assert_prefix(ask_raw(&d, big, REQ_MAX), "shmpool/1 ok ");
	r = ask_raw(&d, big, REQ_MAX + 1);
	ck_assert_msg(strcmp(r, "shmpool/1 error EMSGSIZE msg=request of "
		"4097 bytes exceeds 4096") == 0 ||
		strcmp(r, "shmpool/1 error EMSGSIZE msg=request of more than "
		"4096 bytes exceeds 4096") == 0, "4097 bytes: '%s'", r);
	r = ask_raw(&d, big, 5000);
	ck_assert_msg(strcmp(r, "shmpool/1 error EMSGSIZE msg=request of "
		"5000 bytes exceeds 4096") == 0 ||
		strcmp(r, "shmpool/1 error EMSGSIZE msg=request of more than "
		"4096 bytes exceeds 4096") == 0, "5000 bytes: '%s'", r);
	check_alive(&d, "5000 bytes");

	/* A bad request leaves the connection usable. */
	fd = conn_open(d.sock);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_gt(conn_call(fd, "shmpool/1 frob", 14, reply,
		sizeof(reply)), 0);
	check_error(reply, "EINVAL", "frob");
	ck_assert_int_gt(conn_call(fd, "shmpool/1 ping", 14, reply,
		sizeof(reply)), 0);
	ck_assert_prefix(reply, "shmpool/1 ok ");
	close(fd);

	/* A peer that connects and closes without a word. */
	fd = conn_open(d.sock);
	ck_assert_int_ge(fd, 0);
	close(fd);
	check_alive(&d, "a silent peer");

	/* Half a request, then gone before the reply (EPIPE for it). */
	fd = conn_open(d.sock);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(send(fd, "shmpool/1 create name=half obj", 30,
		MSG_NOSIGNAL), 30);
	close(fd);
	check_alive(&d, "half a request");
	/* A whole bad one, then gone. */
	fd = conn_open(d.sock);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(send(fd, "shmpool/1 create name=half objects=0 "
		"object-size=1", 50, MSG_NOSIGNAL), 50);
	shutdown(fd, SHUT_RDWR);
	close(fd);
	check_alive(&d, "a peer that left");

	/* The idle peer is still served. */
	ck_assert_int_gt(conn_call(idle, "shmpool/1 ping", 14, reply,
		sizeof(reply)), 0);
	ck_assert_prefix(reply, "shmpool/1 ok ");
	close(idle);

	/* Nothing was created. */
	ck_assert_str_eq(ask(&d, "list"), "shmpool/1 ok count=0");
	{
		DIR *dir = opendir(d.dir);
		struct dirent *e;

		ck_assert_ptr_nonnull(dir);
		while ((e = readdir(dir)) != NULL)
			ck_assert_msg(strncmp(e->d_name, "shmpool.", 8) != 0,
				"%s/%s was created", d.dir, e->d_name);
		closedir(dir);
	}
	d_finish(&d);
}
END_TEST

/*
 * A segment cut short while the daemon reads it (shmpoold(8): a segment
 * found cut short is logged and from then on left untouched): its loads
 * past the new end take SIGBUS, which it must survive (shmpoold's
 * pool_sigbus_init()).  A client asks "list", which reads every pool's
 * slots, without a pause on one connection from the moment a pool is
 * made, while the segment is cut to one page; a few rounds, as the cut
 * must land in a read to be seen (without the handler, the daemon died
 * of SIGBUS in the first or second round of every run, 2026-12-04).
 */
START_TEST(test_cut_while_read)
{
	char path[PATH_MAX], name[16], reply[REPLY_MAX + 1];
	struct daemon d;
	int round, fd, go[2], status;
	pid_t pid;

	d_init(&d, "cutread");
	d_start(&d);
	for (round = 0; round < 4; round++) {
		snprintf(name, sizeof(name), "c%d", round);
		ck_assert_prefix(ask(&d, "create name=%s objects=65536 "
			"object-size=64 slots=1024 cache=0", name),
			"shmpool/1 ok");
		snprintf(path, sizeof(path), "%s/shmpool.%s", d.dir, name);
		ck_assert_int_eq(pipe(go), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			int c = conn_open(d.sock);
			double end = now() + 10;
			unsigned int k;

			close(go[0]);
			for (k = 0; c >= 0 && now() < end; k++) {
				/* The first read of a new pool's pages is the
				 * slow one (the daemon faults them in): the
				 * cut goes with it. */
				if (k == 0) {
					if (write(go[1], "g", 1) != 1)
						_exit(1);
					end = now() + 0.2;
				}
				if (conn_call(c, "shmpool/1 list", 14, reply,
						sizeof(reply)) <= 0)
					_exit(1);
			}
			_exit(c >= 0 ? 0 : 1);
		}
		close(go[1]);
		ck_assert_int_eq(read(go[0], reply, 1), 1);
		close(go[0]);
		fd = open(path, O_RDWR | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ftruncate(fd, 4096), 0);
		close(fd);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			"round %d: the client lost the daemon", round);
		check_alive(&d, "a segment cut while read");
		check_error(ask(&d, "info name=%s", name), "EIO",
			"info of a segment cut while read");
		ck_assert_prefix(ask(&d, "destroy name=%s", name),
			"shmpool/1 ok name=");
	}
	d_stop(&d);
}
END_TEST

/*
 * What shmpool_attach() makes of replies no shmpoold sends: ctl-worker
 * --serve, in its place on a socket of its own, answers one request with
 * reply.  The attach's return and its message.
 */
static int
attach_to_fake(const char *name, const char *reply, char *msg, size_t msgsz)
{
	const char *top = getenv("top_builddir");
	char sock[PATH_MAX], worker[512], ready[8];
	struct shmpool *pool = NULL;
	int out[2], ret, status;
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/fake.%s.sock", tu_dir(), name);
	snprintf(worker, sizeof(worker), "%s/tests/ctl-worker",
		top != NULL && *top != '\0' ? top : ".");
	ck_assert_int_eq(pipe(out), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(out[1], STDOUT_FILENO);
		execl(worker, worker, "--serve", sock, reply, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	/* "ready": it listens. */
	ck_assert_int_eq(read(out[0], ready, sizeof(ready)), 6);
	ck_assert_int_eq(memcmp(ready, "ready\n", 6), 0);
	close(out[0]);
	setenv("SHMPOOL_SOCKET", sock, 1);
	ret = shmpool_attach(name, NULL, &pool);
	unsetenv("SHMPOOL_SOCKET");
	snprintf(msg, msgsz, "%s", shmpool_last_error());
	ck_assert_ptr_null(pool);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return ret;
}

/* A reply longer than the library reads is one it cannot read (-EPROTO,
 * libshmpool(3)); an error the daemon answers with is passed on. */
START_TEST(test_fake_daemon_replies)
{
	char big[2049], msg[512];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "shmpool/1 ok ", 13);
	ck_assert_int_eq(attach_to_fake("big", big, msg, sizeof(msg)),
		-EPROTO);
	ck_assert_str_eq(msg, "shmpoold's reply was truncated");
	/* An error's text, or its code; a malformed reply called one, not
	 * a request; another version, named. */
	{
		static const struct {
			const char *name, *reply;
			int ret;
			const char *msg;
		} replies[] = {
			{ "gone", "shmpool/1 error ESRCH msg=gone", -ESRCH,
			  "gone" },
			{ "perm", "shmpool/1 error EPERM", -EPERM, "EPERM" },
			{ "bad", "shmpool/1 ok x", -EPROTO,
			  "shmpoold's reply is malformed: 'x' is not "
			  "key=value" },
			{ "empty", "shmpool/1", -EPROTO,
			  "shmpoold's reply is malformed: no verb" },
			{ "v2", "shmpool/2 ok", -EPROTONOSUPPORT,
			  "incompatible versions: shmpoold speaks shmpool/2, "
			  "this library speaks shmpool/1" },
		};
		size_t i;

		for (i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
			ck_assert_int_eq(attach_to_fake(replies[i].name,
				replies[i].reply, msg, sizeof(msg)),
				replies[i].ret);
			ck_assert_str_eq(msg, replies[i].msg);
		}
	}
}
END_TEST

/* Another version of the protocol: EPROTONOSUPPORT, in words. */
START_TEST(test_other_version)
{
	struct daemon d;
	const char *r;

	d_init(&d, "version");
	d_start(&d);
	r = ask_raw(&d, "shmpool/10 list", 15);
	ck_assert_prefix(r, "shmpool/1 error EPROTONOSUPPORT field=version "
		"value=10 msg=incompatible versions");
	r = ask_raw(&d, "shmpool/2 ping", 14);
	ck_assert_str_eq(r, "shmpool/1 error EPROTONOSUPPORT field=version "
		"value=2 msg=incompatible versions: the peer speaks "
		"shmpool/2, this daemon speaks shmpool/1");
	/* Another version however large, or however written. */
	r = ask_raw(&d, "shmpool/4294967296 ping", 23);
	ck_assert_str_eq(r, "shmpool/1 error EPROTONOSUPPORT field=version "
		"value=4294967296 msg=incompatible versions: the peer speaks "
		"shmpool/4294967296, this daemon speaks shmpool/1");
	r = ask_raw(&d, "shmpool/01 ping", 15);
	ck_assert_prefix(r, "shmpool/1 error EPROTONOSUPPORT field=version "
		"value=01 msg=");
	check_error(ask_raw(&d, "shmpool/1x ping", 15), "EPROTO",
		"shmpool/1x");
	check_alive(&d, "shmpool/2");
	d_finish(&d);
}
END_TEST

/*
 * An empty packet is a request too (malformed), not the end of the
 * connection: EPROTO, on a connection that stays usable.
 */
START_TEST(test_empty_packet)
{
	char reply[REPLY_MAX + 1];
	struct daemon d;
	ssize_t n;
	int fd;

	d_init(&d, "empty");
	d_start(&d);
	fd = conn_open(d.sock);
	ck_assert_int_ge(fd, 0);
	n = conn_call(fd, "", 0, reply, sizeof(reply));
	ck_assert_msg(n > 0, "empty packet: %s", n == 0 ? "the daemon closed "
		"the connection without a reply" : strerror((int)-n));
	check_error(reply, "EPROTO", "empty packet");
	ck_assert_int_gt(conn_call(fd, "shmpool/1 ping", 14, reply,
		sizeof(reply)), 0);
	ck_assert_prefix(reply, "shmpool/1 ok ");
	close(fd);
	check_alive(&d, "an empty packet");
	d_finish(&d);
}
END_TEST

/* The length of the list reply, which must be ok. */
static size_t
list_len(const struct daemon *d)
{
	const char *r = ask(d, "list");

	ck_assert_prefix(r, "shmpool/1 ok count=");
	return strlen(r);
}

/* Create a pool of one object of size bytes named c repeated k times
 * (k <= 63; with seq >= 0, its last three characters are seq). */
static void
list_pool(const struct daemon *d, char c, unsigned int k, int seq,
		unsigned int size)
{
	char name[SHMPOOL_NAME_MAX + 1];

	ck_assert_uint_ge(k, 1);
	ck_assert_uint_le(k, SHMPOOL_NAME_MAX);
	memset(name, c, k);
	name[k] = '\0';
	if (seq >= 0) {
		ck_assert_int_lt(seq, 1000);
		name[k - 3] = (char)('0' + seq / 100);
		name[k - 2] = (char)('0' + seq / 10 % 10);
		name[k - 1] = (char)('0' + seq % 10);
	}
	ck_assert_prefix(ask(d, "create name=%s objects=1 object-size=%u "
		"slots=1", name, size), "shmpool/1 ok ");
}

static unsigned int
digits(unsigned int n)
{
	return n < 10 ? 1 : 1 + digits(n / 10);
}

/*
 * list: a reply of 65535 bytes, the largest, is sent; one of 65536 is
 * EMSGSIZE.  Pools of 63-character names fill it to within three lines,
 * which three pools' names make exact (a pool's line holds its name
 * twice, in name= and in path=, and object-size=10 is a byte more than
 * object-size=1).
 */
START_TEST(test_list_largest_reply)
{
	unsigned int n = 0, line, base, k[3], kk, i;
	size_t len, len0;
	long rest;
	int odd;
	struct daemon d;

	d_init(&d, "lst");
	d_start(&d);
	len0 = list_len(&d);
	list_pool(&d, 'f', SHMPOOL_NAME_MAX, (int)n++, 1);
	len = list_len(&d);
	line = (unsigned int)(len - len0);
	base = line - 2 * SHMPOOL_NAME_MAX;
	/* Three lines to go, at most (the count's digits as it will be). */
	for (;;) {
		rest = 65535 - (long)len - (long)(digits(n + 3) - digits(n));
		if (rest <= 3 * (long)line)
			break;
		list_pool(&d, 'f', SHMPOOL_NAME_MAX, (int)n++, 1);
		len = list_len(&d);
	}
	ck_assert_int_gt(rest, 2 * (long)line);
	rest -= 3 * (long)base;
	odd = (int)(rest & 1);
	kk = (unsigned int)(rest - odd) / 2;
	k[0] = kk - 2 < SHMPOOL_NAME_MAX ? kk - 2 : SHMPOOL_NAME_MAX;
	k[1] = kk - k[0] - 1 < SHMPOOL_NAME_MAX ? kk - k[0] - 1 :
		SHMPOOL_NAME_MAX;
	k[2] = kk - k[0] - k[1];
	for (i = 0; i < 3; i++)
		list_pool(&d, (char)('x' + i), k[i], -1,
			i == 2 && odd ? 10 : 1);
	n += 3;
	ck_assert_uint_eq(list_len(&d), 65535);

	/* One byte more: x's object-size 10 rather than 1. */
	{
		char name[SHMPOOL_NAME_MAX + 1];
		const char *r;

		memset(name, 'x', k[0]);
		name[k[0]] = '\0';
		ck_assert_prefix(ask(&d, "destroy name=%s", name),
			"shmpool/1 ok ");
		list_pool(&d, 'x', k[0], -1, 10);
		r = ask(&d, "list");
		ck_assert_str_eq(r, "shmpool/1 error EMSGSIZE msg=the list of "
			"pools does not fit in one reply");
	}
	check_alive(&d, "a list too long");
	d_finish(&d);
}
END_TEST

/*
 * flush of a cache of size 0 (a process attached with cache 0 to a pool
 * with caches): answered, with nothing cached, and no request set, as
 * its owner never looks at one; its gets and puts go on past it.  A
 * cache of 32 beside it gets the request.
 */
START_TEST(test_flush_size_zero)
{
	struct shmpool *pool, *other;
	struct shmpool_cache *c, *c32;
	char req[96], want[96];
	void *objs[4];
	const char *r;
	struct daemon d;

	d_init(&d, "flush0");
	d_start(&d);
	r = ask(&d, "create name=p objects=1024 object-size=64 cache=32");
	ck_assert_prefix(r, "shmpool/1 ok name=p ");
	pool = attach_cache("p", 0);
	other = attach_cache("p", 32);
	c = shmpool_default_cache(pool);
	c32 = shmpool_default_cache(other);
	ck_assert_uint_eq(c->size, 0);
	ck_assert_uint_eq(c32->size, 32);

	snprintf(req, sizeof(req), "flush name=p slot=%u",
		shmpool_cache_slot(c));
	snprintf(want, sizeof(want), "shmpool/1 ok name=p slot=%u "
		"state=requested cached=0", shmpool_cache_slot(c));
	r = ask(&d, "%s", req);
	ck_assert_str_eq(r, want);
	ck_assert_uint_eq(uatomic_read(&c->flush_req), 0);
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 4), 0);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 4), 0);
	ck_assert_uint_eq(shmpool_cache_len_(c), 0);
	ck_assert_uint_eq(c->w, 0);

	snprintf(req, sizeof(req), "flush name=p slot=%u",
		shmpool_cache_slot(c32));
	r = ask(&d, "%s", req);
	ck_assert_kv(r, "state", "requested");
	ck_assert_uint_eq(uatomic_read(&c32->flush_req), 1);

	ck_assert_int_eq(shmpool_detach(other), 0);
	ck_assert_int_eq(shmpool_detach(pool), 0);
	d_finish(&d);
}
END_TEST

/*
 * An attach whose process has room for the socket but not for the
 * segment's descriptor that the daemon sends back: -EMFILE, as for no
 * room at all, and the slot the daemon claimed for it comes back when
 * the process exits.
 */
START_TEST(test_attach_out_of_fds)
{
	struct shmpool *pool;
	struct rlimit lim;
	const char *r;
	struct daemon d;
	int status, fd, slots;
	pid_t pid;
	double end;

	d_init(&d, "nofd");
	d_start(&d);
	r = ask(&d, "create name=p objects=64 object-size=64 cache=0");
	ck_assert_prefix(r, "shmpool/1 ok name=p ");
	for (slots = 3; slots <= 4; slots++) {
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			int ret;

			for (fd = 3; fd < 4096; fd++)
				close(fd);
			lim.rlim_cur = lim.rlim_max = (rlim_t)slots;
			if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
				_exit(100);
			ret = shmpool_attach("p", NULL, &pool);
			/* With 4, the reply's descriptor is what is
			 * refused. */
			_exit(ret == -EMFILE && (slots == 3 ||
				strstr(shmpool_last_error(), "descriptor") !=
				NULL) ? 0 : 100 + (ret < 0 ? -ret : 0) % 100);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert(WIFEXITED(status));
		ck_assert_msg(WEXITSTATUS(status) == 0, "%d descriptors: "
			"attach gave errno %d, not EMFILE (or not the "
			"descriptor's message)", slots,
			WEXITSTATUS(status) - 100);
	}
	/* The second child's slot, claimed by the daemon, is back. */
	end = tu_now() + 10;
	do {
		pool = attach_cache("p", 0);
		slots = (int)tu_slots_in_use(pool);
		ck_assert_int_eq(shmpool_detach(pool), 0);
	} while (slots != 1 && tu_now() < end && usleep(10000) == 0);
	ck_assert_int_eq(slots, 1);
	d_finish(&d);
}
END_TEST

/* mh for one byte at *byte and one descriptor in cbuf (SCM_RIGHTS). */
static void
fd_msg_init(struct msghdr *mh, struct iovec *iov, char *byte, char *cbuf,
		size_t cbufsz)
{
	memset(mh, 0, sizeof(*mh));
	iov->iov_base = byte;
	iov->iov_len = 1;
	mh->msg_iov = iov;
	mh->msg_iovlen = 1;
	mh->msg_control = cbuf;
	mh->msg_controllen = cbufsz;
}

/*
 * A connection whose process is gone by the time the daemon accepts it
 * (the daemon stopped meanwhile; the socket passed on to the parent) is
 * answered all the same, and an attach on it fails with ESRCH.  And an
 * error's value= is the request's value, whole.
 */
/* A connection to d made by a child, which pings first if ping, passes
 * it to us and exits (its pid in *pidp, not reaped). */
static int
conn_from_child(const struct daemon *d, int ping, pid_t *pidp)
{
	char reply[REPLY_MAX + 1], cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov;
	struct msghdr mh;
	struct cmsghdr *cm;
	int sp[2], fd;
	char byte = 'f';
	pid_t pid;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, sp), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fd = conn_open(d->sock);
		if (fd < 0)
			_exit(1);
		if (ping && (conn_call(fd, "shmpool/1 ping", 14, reply,
				sizeof(reply)) <= 0 ||
			     strncmp(reply, "shmpool/1 ok ", 13) != 0))
			_exit(3);
		fd_msg_init(&mh, &iov, &byte, cbuf, sizeof(cbuf));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		_exit(sendmsg(sp[1], &mh, 0) == 1 ? 0 : 2);
	}
	fd_msg_init(&mh, &iov, &byte, cbuf, sizeof(cbuf));
	ck_assert_int_eq(recvmsg(sp[0], &mh, 0), 1);
	cm = CMSG_FIRSTHDR(&mh);
	ck_assert(cm != NULL && cm->cmsg_type == SCM_RIGHTS);
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	close(sp[0]);
	close(sp[1]);
	*pidp = pid;
	return fd;
}

START_TEST(test_gone_peer_and_long_value)
{
	char reply[REPLY_MAX + 1], req[512], want[512], name[201];
	struct daemon d;
	siginfo_t si;
	int fd, status;
	pid_t pid;

	d_init(&d, "gone");
	d_start(&d);
	ck_assert_prefix(ask(&d, "create name=p objects=64 object-size=64"),
		"shmpool/1 ok name=p ");

	memset(name, 'b', 200);
	name[200] = '\0';
	snprintf(req, sizeof(req), "info name=%s", name);
	snprintf(want, sizeof(want), "shmpool/1 error EINVAL field=name "
		"value=%s msg=", name);
	ck_assert_prefix(ask(&d, "%s", req), want);

	/* Gone before the daemon accepted it. */
	ck_assert_int_eq(kill(d.pid, SIGSTOP), 0);
	fd = conn_from_child(&d, 0, &pid);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(kill(d.pid, SIGCONT), 0);
	ck_assert_int_gt(conn_call(fd, "shmpool/1 ping", 14, reply,
		sizeof(reply)), 0);
	ck_assert_prefix(reply, "shmpool/1 ok ");
	ck_assert_int_gt(conn_call(fd, "shmpool/1 attach name=p", 23, reply,
		sizeof(reply)), 0);
	check_error(reply, "ESRCH", "attach for a process gone at accept");
	close(fd);

	/* Accepted while it lived, exited since, not yet reaped (a zombie,
	 * whose /proc entry stays): gone too. */
	fd = conn_from_child(&d, 1, &pid);
	ck_assert_int_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	ck_assert_int_eq(si.si_code, CLD_EXITED);
	ck_assert_int_eq(si.si_status, 0);
	ck_assert_int_gt(conn_call(fd, "shmpool/1 attach name=p", 23, reply,
		sizeof(reply)), 0);
	check_error(reply, "ESRCH", "attach for a process exited, not reaped");
	close(fd);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_kv_u(ask(&d, "info name=p"), "slots-in-use", 0);
	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 5. Credentials: nobody may not create or destroy, nor attach to a 0660
 * pool of root's. */

static const char *nobody_sock;

static int
nobody_worker(void *arg)
{
	int *out = arg;
	char reply[REPLY_MAX + 1];
	static const char *const reqs[] = {
		"shmpool/1 ping",
		"shmpool/1 create name=nob objects=10 object-size=64",
		"shmpool/1 destroy name=e",
		"shmpool/1 destroy name=e force=1",
		/* EPERM whatever else is wrong with the request. */
		"shmpool/1 create name=nob objects=0 object-size=1",
		"shmpool/1 destroy name=e force=x",
		"shmpool/1 create name=nob objects=4",
		"shmpool/1 create name=nob objects=4 object-size=8 bogus=1",
		"shmpool/1 destroy",
		"shmpool/1 flush name=e slot=0",
		"shmpool/1 flush name=e",
		/* A key given twice too. */
		"shmpool/1 create name=a name=a objects=1 object-size=1",
		"shmpool/1 destroy name=e name=e",
		"shmpool/1 flush name=e slot=0 slot=0",
	};
	struct shmpool *pool;
	size_t i;
	int fd, ret;

	if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 ||
	    setuid(NOBODY) != 0 || getuid() != NOBODY)
		return 10;
	/* Dropping root cleared the parent-death signal. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		fd = conn_open(nobody_sock);
		if (fd < 0) {
			dprintf(out[1], "connect: %s\n", strerror(-fd));
			return 11;
		}
		if (conn_call(fd, reqs[i], strlen(reqs[i]), reply,
				sizeof(reply)) <= 0)
			snprintf(reply, sizeof(reply), "no reply");
		close(fd);
		dprintf(out[1], "%s\n", reply);
	}
	ret = shmpool_attach("e", NULL, &pool);
	dprintf(out[1], "attach %d\n", ret);
	return 0;
}

START_TEST(test_credentials)
{
	char buf[8192], *line[20], *save = NULL;
	struct daemon d;
	ssize_t n, len = 0;
	int out[2], i = 0;
	pid_t pid;

	if (geteuid() != 0) {
		printf("SKIP: credentials test needs root\n");
		return;
	}
	d_init(&d, "creds");
	ck_assert_int_eq(chmod(tu_dir(), 0755), 0);
	d_start(&d);
	ck_assert_prefix(ask(&d, "create name=e objects=10 object-size=64"),
		"shmpool/1 ok name=e ");
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	nobody_sock = d.sock;
	pid = fork_worker(nobody_worker, out);
	close(out[1]);
	while ((n = read(out[0], buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += n;
	buf[len] = '\0';
	close(out[0]);
	tu_wait_children(&pid, 1, 5);

	for (line[i] = strtok_r(buf, "\n", &save); line[i] != NULL && i < 19;
			line[++i] = strtok_r(NULL, "\n", &save))
		;
	ck_assert_int_eq(i, 15);
	ck_assert_prefix(line[0], "shmpool/1 ok ");
	check_error(line[1], "EPERM", "create by nobody");
	check_error(line[2], "EPERM", "destroy by nobody");
	check_error(line[3], "EPERM", "forced destroy by nobody");
	check_error(line[4], "EPERM", "create by nobody with objects=0");
	check_error(line[5], "EPERM", "destroy by nobody with force=x");
	check_error(line[6], "EPERM", "create by nobody, a key missing");
	check_error(line[7], "EPERM", "create by nobody, an unknown key");
	check_error(line[8], "EPERM", "destroy by nobody, no name");
	check_error(line[9], "EPERM", "flush by nobody");
	check_error(line[10], "EPERM", "flush by nobody, no slot");
	check_error(line[11], "EPERM", "create by nobody, name twice");
	check_error(line[12], "EPERM", "destroy by nobody, name twice");
	check_error(line[13], "EPERM", "flush by nobody, slot twice");
	ck_assert_msg(strcmp(line[14], "attach -13") == 0,
		"attach by nobody to a 0660 pool of root's: %s, expected "
		"-EACCES", line[14]);

	/* Nothing changed. */
	ck_assert_prefix(ask(&d, "info name=e"), "shmpool/1 ok name=e ");
	check_error(ask(&d, "info name=nob"), "ENOENT", "info nob");
	ck_assert_kv_u(ask(&d, "info name=e"), "slots-in-use", 0);
	d_finish(&d);
}
END_TEST

/*
 * The folders the daemon makes for its socket and pidfile are 0755, and
 * its lock file, index and pidfile 0644, whatever umask it starts with:
 * nobody reaches the socket (0666) and reads the rest.
 */

static int
nobody_ping(void *arg)
{
	char reply[REPLY_MAX + 1];
	int fd;

	if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 ||
	    setuid(NOBODY) != 0 || getuid() != NOBODY)
		return 10;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	fd = conn_open(arg);
	if (fd < 0)
		return 11;
	if (conn_call(fd, "shmpool/1 ping", 14, reply, sizeof(reply)) <= 0 ||
	    strncmp(reply, "shmpool/1 ok ", 13) != 0)
		return 12;
	close(fd);
	return 0;
}

/* path's type and permission bits are mode. */
#define ck_assert_mode(path, mode) do {					\
	struct stat st_;						\
	ck_assert_msg(lstat((path), &st_) == 0, "%s: %s", (path),	\
		strerror(errno));					\
	ck_assert_msg((st_.st_mode & (S_IFMT | 07777)) == (mode),	\
		"%s: mode 0%o, expected 0%o", (path),			\
		(unsigned int)(st_.st_mode & (S_IFMT | 07777)),		\
		(unsigned int)(mode));					\
} while (0)

START_TEST(test_umask_modes)
{
	static const mode_t masks[] = { 077, 0 };
	char nd[280], pd[280], pid[300], path[400], text[400];
	struct daemon d;
	mode_t old;
	size_t i;
	pid_t w;

	ck_assert_int_eq(chmod(tu_dir(), 0755), 0);
	for (i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
		d_init(&d, i == 0 ? "umask077" : "umask0");
		snprintf(nd, sizeof(nd), "%s/nd", d.dir);
		snprintf(d.sock, sizeof(d.sock), "%s/sub/sock", nd);
		snprintf(pd, sizeof(pd), "%s/pd", d.dir);
		snprintf(pid, sizeof(pid), "%s/x.pid", pd);
		snprintf(text, sizeof(text), "pidfile = %s\n", pid);
		write_file(d.conf, text);
		old = umask(masks[i]);
		d_start(&d);
		umask(old);
		ck_assert_prefix(ask(&d, "create name=p objects=8 "
			"object-size=8"), "shmpool/1 ok name=p ");

		ck_assert_mode(nd, S_IFDIR | 0755);
		snprintf(path, sizeof(path), "%s/sub", nd);
		ck_assert_mode(path, S_IFDIR | 0755);
		ck_assert_mode(pd, S_IFDIR | 0755);
		ck_assert_mode(d.sock, S_IFSOCK | 0666);
		snprintf(path, sizeof(path), "%s.lock", d.sock);
		ck_assert_mode(path, S_IFREG | 0644);
		snprintf(path, sizeof(path), "%s.pools", d.sock);
		ck_assert_mode(path, S_IFREG | 0644);
		ck_assert_mode(pid, S_IFREG | 0644);
		if (geteuid() == 0) {
			w = fork_worker(nobody_ping, d.sock);
			tu_wait_children(&w, 1, 5);
		} else {
			printf("SKIP: ping as nobody needs root\n");
		}
		d_stop(&d);
		ck_assert(!exists(pid));
		tu_rm_tree(d.dir);
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* 6. Huge pages (root: reserved and mounted by the fixture). */

#define RESERVE		4

static char huge_mnt[256];
static uint64_t huge_size;
static const char *huge_skip = "not set up";

/* Unchecked fixture: runs in the runner, so it is undone whatever fails
 * (tu_huge_reserve()). */
static void
huge_setup(void)
{
	snprintf(huge_mnt, sizeof(huge_mnt), "%s/hugemnt", tu_dir());
	if (tu_huge_reserve(RESERVE, huge_mnt, &huge_skip) < 0) {
		huge_mnt[0] = '\0';
		return;
	}
	huge_size = (uint64_t)tu_meminfo("Hugepagesize:") << 10;
	huge_skip = NULL;
}

static void
huge_teardown(void)
{
	if (huge_mnt[0] != '\0') {
		DIR *dir = opendir(huge_mnt);
		struct dirent *e;
		char path[512];

		while (dir != NULL && (e = readdir(dir)) != NULL) {
			snprintf(path, sizeof(path), "%s/%s", huge_mnt,
				e->d_name);
			if (e->d_name[0] != '.')
				unlink(path);
		}
		if (dir != NULL)
			closedir(dir);
		huge_mnt[0] = '\0';
	}
	tu_huge_release();
}

START_TEST(test_huge_pages)
{
	long free_before;
	struct shmpool_info info;
	struct shmpool *pool;
	char path[320];
	struct daemon d;
	void *objs[64];
	const char *r;

	if (huge_skip != NULL) {
		printf("SKIP: huge page test: %s\n", huge_skip);
		return;
	}
	d_init(&d, "huge");
	snprintf(d.huge, sizeof(d.huge), "%s", huge_mnt);
	d_start(&d);
	free_before = tu_meminfo("HugePages_Free:");

	r = ask(&d, "create name=h objects=1000 object-size=200 cache=32 "
		"huge=require");
	ck_assert_prefix(r, "shmpool/1 ok name=h ");
	snprintf(path, sizeof(path), "%s/shmpool.h", huge_mnt);
	ck_assert_kv(r, "path", path);
	ck_assert_kv(r, "memory", "huge");
	ck_assert_kv_u(r, "page-size", huge_size);
	ck_assert_int_lt(tu_meminfo("HugePages_Free:"), free_before);
	r = ask(&d, "info name=h");
	ck_assert_kv(r, "memory", "huge");
	ck_assert_kv(r, "huge-policy", "require");
	ck_assert_kv_u(r, "page-size", huge_size);

	pool = attach_cache("h", 32);
	ck_assert_int_eq(shmpool_info(pool, &info), 0);
	ck_assert_uint_eq(info.flags, SHMPOOL_INFO_HUGE);
	ck_assert_uint_eq(info.page_size, huge_size);
	ck_assert_int_eq(tu_mapping_page_kb(path), (long)(huge_size >> 10));
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 64), 0);
	memset(objs[63], 0xa5, 200);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 64), 0);
	ck_assert_int_eq(shmpool_detach(pool), 0);

	/* More than the free huge pages: require fails, prefer falls back. */
	r = ask(&d, "create name=hbig objects=4096 object-size=4096 "
		"huge=require");
	check_error(r, "ENOMEM", "huge=require without enough pages");
	{
		char want[512];

		snprintf(want, sizeof(want), "msg=pool 'hbig': huge=require, "
			"but %.256s has not enough free huge pages for it (",
			huge_mnt);
		ck_assert_msg(strstr(r, want) != NULL, "'%s' does not say "
			"'%s'", r, want);
	}
	ck_assert_int_eq(tu_count_entries(huge_mnt), 1);
	r = ask(&d, "create name=hbig objects=4096 object-size=4096 "
		"huge=prefer");
	ck_assert_prefix(r, "shmpool/1 ok name=hbig ");
	ck_assert_kv(r, "memory", "shm");
	ck_assert_prefix(ask(&d, "destroy name=hbig"),
		"shmpool/1 ok name=hbig");

	ck_assert_prefix(ask(&d, "destroy name=h"), "shmpool/1 ok name=h");
	ck_assert_int_eq(tu_count_entries(huge_mnt), 0);
	ck_assert_int_eq(tu_meminfo("HugePages_Free:"), free_before);
	d_finish(&d);
}
END_TEST

/* huge=require with --hugetlbfs none: ENOMEM; prefer: on shm.  No root. */
START_TEST(test_huge_without_mount)
{
	struct daemon d;
	const char *r;

	d_init(&d, "nohuge");
	d_start(&d);
	r = ask(&d, "create name=h objects=100 object-size=64 huge=require");
	check_error(r, "ENOMEM", "huge=require with --hugetlbfs none");
	check_error(ask(&d, "info name=h"), "ENOENT", "info h");
	r = ask(&d, "create name=h objects=100 object-size=64 huge=prefer");
	ck_assert_prefix(r, "shmpool/1 ok name=h ");
	ck_assert_kv(r, "memory", "shm");
	ck_assert_kv_u(r, "page-size", sysconf(_SC_PAGESIZE));
	r = ask(&d, "create name=h2 objects=100 object-size=64 huge=never");
	ck_assert_kv(r, "memory", "shm");
	ck_assert_kv(ask(&d, "info name=h2"), "huge-policy", "never");
	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 7. Start failures: a second daemon, bad options. */

START_TEST(test_second_daemon)
{
	char want[512], plain[320], missing[320];
	struct daemon d, d2;
	const char *err;

	d_init(&d, "second");
	d_start(&d);
	{
		const char *args[] = {
			"-f", "--socket", d.sock, "--shm-dir", d.dir,
			"--hugetlbfs", "none", "--config", d.conf, NULL
		};
		char err2[340];

		snprintf(err2, sizeof(err2), "%s/stderr2", d.dir);
		err = start_fails(err2, args, 1);
		snprintf(want, sizeof(want), "shmpoold: another shmpoold "
			"(pid %d) is serving %s\n", (int)d.pid, d.sock);
		ck_assert_msg(strstr(err, want) != NULL, "stderr '%s', "
			"expected '%s'", err, want);
	}
	/* The first one still serves, on its socket. */
	check_alive(&d, "a second daemon");
	ck_assert(exists(d.sock));

	/* Other ways not to start, on a socket of their own. */
	d_init(&d2, "second2");
	snprintf(plain, sizeof(plain), "%s/plain", d2.dir);
	ck_assert_int_eq(mkdir(plain, 0755), 0);
	snprintf(missing, sizeof(missing), "%s/missing.conf", d2.dir);
	{
		const char *args[] = {
			"-f", "--socket", d2.sock, "--shm-dir", d2.dir,
			"--hugetlbfs", plain, "--config", d2.conf, NULL
		};
		char want[512];

		err = start_fails(d2.err, args, 1);
		snprintf(want, sizeof(want), "shmpoold: --hugetlbfs %s: not a "
			"hugetlbfs mount\n", plain);
		ck_assert_str_eq(err, want);
	}
	{
		char spaced[340];
		const char *args[] = {
			"-f", "--socket", d2.sock, "--shm-dir", spaced,
			"--hugetlbfs", "none", "--config", d2.conf, NULL
		};
		char want[600];

		snprintf(spaced, sizeof(spaced), "%s/a b", d2.dir);
		ck_assert_int_eq(mkdir(spaced, 0755), 0);
		err = start_fails(d2.err, args, 1);
		snprintf(want, sizeof(want), "shmpoold: --shm-dir '%s': holds "
			"a space, an '=' or a byte that is not printable "
			"ASCII, which the protocol cannot carry\n", spaced);
		ck_assert_str_eq(err, want);
	}
	{
		const char *args[] = {
			"-f", "--socket", d2.sock, "--shm-dir", d2.dir,
			"--hugetlbfs", "none", "--config", missing, NULL
		};

		err = start_fails(d2.err, args, 1);
		ck_assert_msg(strstr(err, missing) != NULL, "stderr '%s' does "
			"not name %s", err, missing);
	}
	{
		const char *args[] = {
			"-f", "--socket", d2.sock, "--no-such-option", NULL
		};

		err = start_fails(d2.err, args, 2);
		ck_assert_msg(strcasestr(err, "usage") != NULL,
			"no usage line on stderr: '%s'", err);
	}
	/* A relative path is a usage error even when an absolute one of
	 * the same option follows it. */
	{
		static const char *const opts[] = {
			"--socket", "--shm-dir", "--pidfile", "--hugetlbfs",
		};
		char pid[340];
		size_t i;

		snprintf(pid, sizeof(pid), "%s/x.pid", d2.dir);
		for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
			const char *abs = i == 0 ? d2.sock : i == 1 ? d2.dir :
				i == 2 ? pid : "none";
			const char *args[] = {
				"-f", "--socket", d2.sock, "--shm-dir", d2.dir,
				"--hugetlbfs", "none", "--config", d2.conf,
				opts[i], "rel", opts[i], abs, NULL
			};

			err = start_fails(d2.err, args, 2);
			ck_assert_msg(strncmp(err, "shmpoold: paths must be "
				"absolute\nusage: ", 40) == 0, "%s rel %s: "
				"stderr '%s'", opts[i], abs, err);
			ck_assert(!exists(pid));
		}
	}
	/* A file that is not a socket at the socket's path stays, and the
	 * daemon does not start (nor leaves its lock file). */
	{
		char file[340], lock[360];
		const char *args[] = {
			"-f", "--socket", file, "--shm-dir", d2.dir,
			"--hugetlbfs", "none", "--config", d2.conf, NULL
		};
		char want[512];

		snprintf(file, sizeof(file), "%s/notes.txt", d2.dir);
		snprintf(lock, sizeof(lock), "%s.lock", file);
		write_file(file, "data\n");
		err = start_fails(d2.err, args, 1);
		snprintf(want, sizeof(want), "shmpoold: cannot listen on %s: "
			"a file that is not a socket is there\n", file);
		ck_assert_str_eq(err, want);
		ck_assert_str_eq(slurp(file), "data\n");
		ck_assert(!exists(lock));
		/* A symbolic link there too, even to a socket's path. */
		ck_assert_int_eq(unlink(file), 0);
		ck_assert_int_eq(symlink(d.sock, file), 0);
		err = start_fails(d2.err, args, 1);
		ck_assert_str_eq(err, want);
		ck_assert(!exists(lock));
		{
			struct stat st;

			ck_assert_int_eq(lstat(file, &st), 0);
			ck_assert(S_ISLNK(st.st_mode));
		}
		ck_assert_int_eq(unlink(file), 0);
	}
	/* A pidfile that cannot be written stops the start before the
	 * config's pools are made. */
	{
		char conf[340], seg[340];
		const char *args[] = {
			"-f", "--socket", d2.sock, "--shm-dir", d2.dir,
			"--hugetlbfs", "none", "--config", conf,
			"--pidfile", "/proc/shmpool-test.pid", NULL
		};

		snprintf(conf, sizeof(conf), "%s/pools.conf", d2.dir);
		snprintf(seg, sizeof(seg), "%s/shmpool.pf", d2.dir);
		write_file(conf, "[pool pf]\nobjects = 8\nobject-size = 8\n");
		err = start_fails(d2.err, args, 1);
		ck_assert_msg(strstr(err, "shmpoold: cannot write "
			"/proc/shmpool-test.pid: ") == err, "stderr '%s'", err);
		ck_assert(!exists(seg));
		snprintf(seg, sizeof(seg), "%s.lock", d2.sock);
		ck_assert(!exists(seg));
		ck_assert_int_eq(unlink(conf), 0);
	}
	ck_assert(!exists(d2.sock));
	tu_rm_tree(d2.dir);
	check_alive(&d, "failed starts");
	d_finish(&d);
}
END_TEST

/*
 * Without -f.  The command returns 0 once the daemon it forks serves, in
 * a session of its own, its pid in the pidfile next to the socket;
 * SIGTERM ends it with exit 0 and takes socket, lock file and pidfile.
 * A command killed before the daemon says it serves leaves no daemon:
 * the daemon, held before it says so by a pidfile that is a FIFO no one
 * reads yet, finds the command gone, exits 1 and leaves none of them.
 * This process is the daemons' subreaper, to wait for them; a failure
 * leaves them to tu_stray().
 */

/* The pid in a pidfile (FIFO or not): a number and a newline. */
static pid_t
read_pid(const char *path)
{
	const char *text = slurp(path);
	size_t n = strlen(text);

	ck_assert_msg(n > 1 && text[n - 1] == '\n', "pidfile %s: '%s'", path,
		text);
	return (pid_t)atol(text);
}

/* The daemon bg (this process's, as subreaper) exits code within
 * STOP_SECS, and leaves none of the three files. */
static void
bg_ends(pid_t bg, int code, const char *sock, const char *lock,
		const char *pidfile)
{
	int status;

	ck_assert(wait_exit(bg, STOP_SECS, &status));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == code,
		"the daemon: status 0x%x, expected exit %d", status, code);
	ck_assert(!exists(sock));
	ck_assert(!exists(lock));
	ck_assert(!exists(pidfile));
}

START_TEST(test_background)
{
	char pidfile[340], lock[340];
	const char *reply;
	struct daemon d;
	pid_t pid, bg;
	int status;

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	d_init(&d, "bg");
	snprintf(pidfile, sizeof(pidfile), "%s/shmpoold.pid", d.dir);
	snprintf(lock, sizeof(lock), "%s.lock", d.sock);
	{
		const char *args[] = {
			"--socket", d.sock, "--shm-dir", d.dir,
			"--hugetlbfs", "none", "--config", d.conf, NULL
		};

		pid = spawn(d.err, args);
	}
	ck_assert(wait_exit(pid, START_SECS, &status));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"shmpoold: status 0x%x; stderr:\n%s", status, slurp(d.err));
	bg = read_pid(pidfile);
	tu_stray(bg);
	ck_assert_int_ne(bg, pid);
	ck_assert_int_eq(getsid(bg), bg);
	/* Serving already: no waiting. */
	reply = ask(&d, "ping");
	ck_assert_prefix(reply, "shmpool/1 ok ");
	ck_assert_kv_u(reply, "pid", bg);
	ck_assert_int_eq(kill(bg, SIGTERM), 0);
	bg_ends(bg, 0, d.sock, lock, pidfile);

	/* The command killed while the daemon is held. */
	ck_assert_int_eq(mkfifo(pidfile, 0644), 0);
	{
		const char *args[] = {
			"--socket", d.sock, "--shm-dir", d.dir,
			"--hugetlbfs", "none", "--config", d.conf,
			"--pidfile", pidfile, NULL
		};
		double deadline = now() + START_SECS;

		pid = spawn(d.err, args);
		/* The socket is made before the pidfile is opened. */
		while (!exists(d.sock)) {
			ck_assert_msg(now() < deadline, "no socket after "
				"%.0f s; stderr:\n%s", START_SECS,
				slurp(d.err));
			ck_assert_int_eq(waitpid(pid, &status, WNOHANG), 0);
			usleep(1000);
		}
	}
	/* The daemon, the command's child, known before anything can
	 * fail: held by the FIFO, it would wait there for ever. */
	{
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children",
			(int)pid, (int)pid);
		bg = (pid_t)atol(slurp(path));
		ck_assert_int_gt(bg, 0);
		tu_stray(bg);
	}
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* Read: the daemon goes on, and finds no one to tell. */
	ck_assert_int_eq(read_pid(pidfile), bg);
	bg_ends(bg, 1, d.sock, lock, pidfile);
	tu_rm_tree(d.dir);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 8. destroy: EBUSY while attached, force=1 anyway, then ENOENT. */

static int
attached_worker(void *arg)
{
	struct pipes *p = arg;
	struct shmpool *pool;
	void *objs[10];

	if (shmpool_attach("d", NULL, &pool) != 0)
		return 10;
	if (report_and_wait(p, pool) != 0)
		return 11;
	/* The segment file is gone; the mapping works on. */
	if (shmpool_get_bulk(pool, objs, 10) != 0 ||
	    shmpool_put_bulk(pool, objs, 10) != 0)
		return 12;
	return shmpool_detach(pool) == 0 ? 0 : 13;
}

START_TEST(test_destroy)
{
	char path[320];
	struct pipes p;
	struct daemon d;
	const char *r;
	pid_t pid;

	d_init(&d, "destroy");
	d_start(&d);
	snprintf(path, sizeof(path), "%s/shmpool.d", d.dir);
	ck_assert_prefix(ask(&d, "create name=d objects=100 object-size=64"),
		"shmpool/1 ok name=d ");
	r = ask(&d, "create name=d objects=100 object-size=64");
	ck_assert_prefix(r, "shmpool/1 error EEXIST field=name value=d msg=");

	pipes_open(&p);
	pid = fork_worker(attached_worker, &p);
	close(p.ready[1]);
	close(p.go[0]);
	await_ready(&p);
	ck_assert_kv_u(ask(&d, "info name=d"), "slots-in-use", 1);

	check_error(ask(&d, "destroy name=d"), "EBUSY", "destroy attached");
	check_error(ask(&d, "destroy name=d force=0"), "EBUSY",
		"destroy force=0");
	ck_assert_prefix(ask(&d, "destroy name=d force=2"),
		"shmpool/1 error EINVAL field=force value=2 msg=");
	ck_assert(exists(path));
	ck_assert_prefix(ask(&d, "info name=d"), "shmpool/1 ok name=d ");

	ck_assert_str_eq(ask(&d, "destroy name=d force=1"),
		"shmpool/1 ok name=d");
	check_error(ask(&d, "info name=d"), "ENOENT", "info after destroy");
	ck_assert(!exists(path));
	ck_assert_str_eq(ask(&d, "list"), "shmpool/1 ok count=0");
	check_error(ask(&d, "destroy name=d force=1"), "ENOENT",
		"destroy twice");

	ck_assert_int_eq(write(p.go[1], "g", 1), 1);
	tu_wait_children(&pid, 1, 5);
	close(p.go[1]);

	/* The name is free again; unattached, it goes without force. */
	ck_assert_prefix(ask(&d, "create name=d objects=100 object-size=64"),
		"shmpool/1 ok name=d ");
	ck_assert_kv_u(ask(&d, "info name=d"), "slots-in-use", 0);
	ck_assert_str_eq(ask(&d, "destroy name=d"), "shmpool/1 ok name=d");
	ck_assert(!exists(path));

	/* A segment moved away and another file put under its name: the
	 * pool goes, and so does nothing else (neither file is the
	 * daemon's to remove any more). */
	{
		char moved[340];

		snprintf(moved, sizeof(moved), "%s/moved.d", d.dir);
		ck_assert_prefix(ask(&d, "create name=d objects=100 "
			"object-size=64"), "shmpool/1 ok name=d ");
		ck_assert_int_eq(rename(path, moved), 0);
		write_file(path, "not a segment\n");
		ck_assert_str_eq(ask(&d, "destroy name=d"),
			"shmpool/1 ok name=d");
		check_error(ask(&d, "info name=d"), "ENOENT",
			"info after destroy of a moved segment");
		ck_assert(exists(path));
		ck_assert(exists(moved));
		ck_assert_int_eq(unlink(path), 0);
		ck_assert_int_eq(unlink(moved), 0);
	}
	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 9. The config file: pools at start, errors, SIGHUP. */

static const char conf_c1[] =
	"# pools of the config test\n"
	"destroy-on-exit = no\n"
	"\n"
	"[pool c1]\n"
	"objects = 128\n"
	"object-size=64\n"
	"cache = 16   # a comment\n"
	"slots = 4\n"
	"huge = never\n"
	"mode = 0640\n";

static const char conf_c2[] =
	"\n"
	"[pool c2]\n"
	"objects = 64\n"
	"object-size = 32\n";

/* A config that must stop shmpoold with "FILE:LINE: msg". */
static void
bad_config(struct daemon *d, const char *text, int line, const char *msg)
{
	const char *args[] = {
		"-f", "--socket", d->sock, "--shm-dir", d->dir,
		"--hugetlbfs", "none", "--config", d->conf, NULL
	};
	char want[512];
	const char *err;

	write_file(d->conf, text);
	err = start_fails(d->err, args, 1);
	snprintf(want, sizeof(want), "%s:%d: %s", d->conf, line, msg);
	ck_assert_msg(strstr(err, want) != NULL, "config\n%s\nstderr '%s', "
		"expected '%s'", text, err, want);
	ck_assert(!exists(d->sock));
}

/* Lines of text before the one that starts with s. */
static int
lines_before(const char *text, const char *s)
{
	const char *end = strstr(text, s);
	int n = 0;

	ck_assert_ptr_nonnull(end);
	for (; text < end; text++)
		n += *text == '\n';
	return n;
}

/* Until info name answers ok. */
static void
await_pool(const struct daemon *d, const char *name, double secs)
{
	double deadline = now() + secs;
	char prefix[128];
	const char *r;

	snprintf(prefix, sizeof(prefix), "shmpool/1 ok name=%s ", name);
	while (strncmp((r = ask(d, "info name=%s", name)), prefix,
			strlen(prefix)) != 0) {
		ck_assert_msg(now() < deadline, "no pool %s after %.0f s: "
			"'%s'", name, secs, r);
		usleep(2000);
	}
}

START_TEST(test_config)
{
	char text[2048], want[1024], path[320];
	struct daemon d, b;
	const char *r;

	/* Broken configs: no start, exit 1, FILE:LINE: on stderr. */
	d_init(&b, "badconf");
	bad_config(&b, "[pool x]\nobjects = 10\nobjcts = 5\n", 3,
		"unknown key 'objcts'");
	bad_config(&b, "# x\nthis is not valid\n", 2,
		"expected 'key = value'");
	bad_config(&b, "[pool x]\nobject-size = 8\nobjects = x\n", 3,
		"objects: 'x' is not a number");
	bad_config(&b, "[pool demo]\nobjects = 8\nobject-size = 8\n\n"
		"[pool demo]\nobjects = 8\nobject-size = 8\n", 5,
		"pool 'demo' is defined twice");
	bad_config(&b, "\n\n\n\n[pool .x]\nobjects = 8\nobject-size = 8\n", 5,
		"bad pool name '.x'");
	/* A key set twice, in a pool or before the first one: refused,
	 * not the last taken; each pool has its own keys. */
	bad_config(&b, "[pool x]\nobjects = 10\nobject-size = 8\n"
		"objects = 20\n", 4, "objects is set twice (first on line 2)");
	bad_config(&b, "destroy-on-exit = yes\n# c\ndestroy-on-exit = no\n"
		"[pool x]\nobjects = 10\nobject-size = 8\n", 3,
		"destroy-on-exit is set twice (first on line 1)");
	bad_config(&b, "[pool x]\nobjects = 10\nobject-size = 8\n"
		"[pool y]\nobjects = 10\nobject-size = 8\n"
		"object-size=8\n", 7,
		"object-size is set twice (first on line 6)");
	/* A socket path as long as a socket's address can hold is the
	 * daemon's limit too (below); one byte more is the file's error. */
	memset(path, 'z', 108);
	path[0] = '/';
	path[108] = '\0';
	snprintf(text, sizeof(text), "# x\nsocket = %s\n", path);
	bad_config(&b, text, 2, "socket: path longer than 107 bytes");
	/* So are folders of more than 1023 bytes, in the file's words. */
	{
		char dir[1100];

		memset(dir, 'd', sizeof(dir) - 1);
		dir[0] = '/';
		dir[sizeof(dir) - 1] = '\0';
		snprintf(text, sizeof(text), "shm-dir = %s\n", dir);
		bad_config(&b, text, 1, "shm-dir: path longer than 1023 bytes");
		snprintf(text, sizeof(text), "\nhugetlbfs = %s\n", dir);
		bad_config(&b, text, 2,
			"hugetlbfs: path longer than 1023 bytes");
	}
	/* And folders whose paths a reply could not carry. */
	bad_config(&b, "shm-dir = /tmp/a b\n", 1, "shm-dir: '/tmp/a b' "
		"holds a space, an '=' or a byte that is not printable ASCII, "
		"which the protocol cannot carry");
	bad_config(&b, "shm-dir = /tmp/a=b\n", 1, "shm-dir: '/tmp/a=b' "
		"holds a space, an '=' or a byte that is not printable ASCII, "
		"which the protocol cannot carry");
	bad_config(&b, "# x\nhugetlbfs = /tmp/a\xc3\xa9\n", 2,
		"hugetlbfs: '/tmp/a\xc3\xa9' holds a space, an '=' or a byte "
		"that is not printable ASCII, which the protocol cannot "
		"carry");
	/* A NUL byte in a line: named, not taken for the line's end. */
	{
		static const char nul[] = "# a\nobjects\0= 5\n";
		FILE *f = fopen(b.conf, "w");

		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(fwrite(nul, 1, sizeof(nul) - 1, f),
			sizeof(nul) - 1);
		ck_assert_int_eq(fclose(f), 0);
		snprintf(want, sizeof(want), "shmpoold: %s:2: a NUL byte in "
			"the line\n", b.conf);
		{
			const char *args[] = {
				"-f", "--socket", b.sock, "--shm-dir", b.dir,
				"--hugetlbfs", "none", "--config", b.conf, NULL
			};

			ck_assert_str_eq(start_fails(b.err, args, 1), want);
		}
	}
	/* A file that cannot be read as a whole: named, with the reason. */
	{
		const char *args[] = {
			"-f", "--socket", b.sock, "--shm-dir", b.dir,
			"--hugetlbfs", "none", "--config", b.dir, NULL
		};

		snprintf(want, sizeof(want), "shmpoold: %s: Is a directory\n",
			b.dir);
		ck_assert_str_eq(start_fails(b.err, args, 1), want);
		ck_assert(!exists(b.sock));
	}
	/* A hugetlbfs of the config's that is not a mount is the config's
	 * error, named by its line (no --hugetlbfs here). */
	{
		const char *args[] = {
			"-f", "--socket", b.sock, "--shm-dir", b.dir,
			"--config", b.conf, NULL
		};
		const char *err;

		snprintf(text, sizeof(text), "# x\nhugetlbfs = %s\n", b.dir);
		write_file(b.conf, text);
		err = start_fails(b.err, args, 1);
		snprintf(want, sizeof(want), "shmpoold: %s:2: hugetlbfs %s: "
			"not a hugetlbfs mount\n", b.conf, b.dir);
		ck_assert_str_eq(err, want);
		ck_assert(!exists(b.sock));
	}
	tu_rm_tree(b.dir);

	/* A pool of the config is created at start; a comment line may be
	 * as long as it likes.  The socket's path is 107 bytes, the most a
	 * socket's address holds. */
	d_init(&d, "config");
	{
		size_t n = 5000, k = strlen(d.sock);
		char *big = malloc(n + sizeof(conf_c1) + 2);

		ck_assert_ptr_nonnull(big);
		memset(big, 'x', n);
		big[0] = '#';
		big[n] = '\n';
		memcpy(big + n + 1, conf_c1, sizeof(conf_c1));
		write_file(d.conf, big);
		free(big);
		ck_assert_uint_lt(k, 100);
		memset(d.sock + k - 4, 'z', 107 - (k - 4));
		d.sock[107] = '\0';
		ck_assert_int_eq(setenv("SHMPOOL_SOCKET", d.sock, 1), 0);
	}
	d_start(&d);
	r = ask(&d, "info name=c1");
	ck_assert_prefix(r, "shmpool/1 ok name=c1 ");
	ck_assert_kv(r, "memory", "shm");
	ck_assert_kv_u(r, "objects", 128);
	ck_assert_kv_u(r, "object-size", 64);
	ck_assert_kv_u(r, "cache", 16);
	ck_assert_kv_u(r, "slots", 4);
	ck_assert_kv(r, "huge-policy", "never");
	ck_assert_kv(r, "mode", "0640");
	check_error(ask(&d, "info name=c2"), "ENOENT", "c2 before SIGHUP");

	/* SIGHUP: c2 is new, so it is created. */
	snprintf(text, sizeof(text), "%s%s", conf_c1, conf_c2);
	write_file(d.conf, text);
	ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
	await_pool(&d, "c2", 2);
	r = ask(&d, "info name=c2");
	ck_assert_kv_u(r, "objects", 64);
	ck_assert_kv_u(r, "object-size", 32);
	ck_assert_prefix(ask(&d, "info name=c1"), "shmpool/1 ok name=c1 ");

	/* SIGHUP with a broken file: logged, the old config kept. */
	snprintf(text, sizeof(text), "%s%s[pool c3]\nobjects = 8\n"
		"object-size = 8\nbroken line\n", conf_c1, conf_c2);
	write_file(d.conf, text);
	ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
	snprintf(want, sizeof(want), "%s:%d: ", d.conf,
		lines_before(text, "broken line") + 1);
	await_stderr(&d, want, 2);
	check_alive(&d, "SIGHUP with a broken config");
	ck_assert_prefix(ask(&d, "info name=c1"), "shmpool/1 ok name=c1 ");
	ck_assert_prefix(ask(&d, "info name=c2"), "shmpool/1 ok name=c2 ");
	check_error(ask(&d, "info name=c3"), "ENOENT", "c3 of a broken file");

	/* SIGHUP without c2: c3 is created, c2 is not destroyed. */
	snprintf(text, sizeof(text), "%s\n[pool c3]\nobjects = 8\n"
		"object-size = 8\n", conf_c1);
	write_file(d.conf, text);
	ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
	await_pool(&d, "c3", 2);
	ck_assert_prefix(ask(&d, "info name=c2"), "shmpool/1 ok name=c2 ");
	ck_assert_prefix(ask(&d, "info name=c1"), "shmpool/1 ok name=c1 ");

	/* Pools outlive the daemon (destroy-on-exit = no) and come back. */
	d_stop(&d);
	snprintf(path, sizeof(path), "%s/shmpool.c1", d.dir);
	ck_assert(exists(path));
	d_start(&d);
	r = ask(&d, "list");
	ck_assert_prefix(r, "shmpool/1 ok count=3\n");
	d_finish(&d);
}
END_TEST

/*
 * The shm dir must be a folder: from the option, the file or the default,
 * a start is refused otherwise, naming who set it.  A reload whose file
 * the daemon would not start with (a hugetlbfs that is no mount, a shm
 * dir that is no folder) is an error, as a file that does not parse: the
 * old config stays, its new pools are not made, its group not taken.  One
 * that changes a setting of the next start only says so, with both
 * values.
 */
START_TEST(test_reload_checks)
{
	char text[2048], want[1200], other[340], missing[340], shm[340];
	char path[360];
	const char *err;
	struct daemon d;

	d_init(&d, "reloadchk");
	snprintf(other, sizeof(other), "%s/other", d.dir);
	snprintf(missing, sizeof(missing), "%s/missing", d.dir);
	snprintf(shm, sizeof(shm), "%s/shm", d.dir);
	ck_assert_int_eq(mkdir(other, 0755), 0);
	ck_assert_int_eq(mkdir(shm, 0755), 0);
	{
		const char *args[] = {
			"-f", "--socket", d.sock, "--shm-dir", missing,
			"--hugetlbfs", "none", "--config", d.conf, NULL
		};

		err = start_fails(d.err, args, 1);
		snprintf(want, sizeof(want), "shmpoold: --shm-dir %s: No such "
			"file or directory\n", missing);
		ck_assert_str_eq(err, want);
		args[4] = d.conf;
		err = start_fails(d.err, args, 1);
		snprintf(want, sizeof(want), "shmpoold: --shm-dir %s: Not a "
			"directory\n", d.conf);
		ck_assert_str_eq(err, want);
	}
	{
		/* The file's hugetlbfs and shm dir, no option over them. */
		const char *args[] = {
			"-f", "--socket", d.sock, "--config", d.conf, NULL
		};

		snprintf(text, sizeof(text), "# a folder that is not\n"
			"shm-dir = %s\nhugetlbfs = none\n", missing);
		write_file(d.conf, text);
		err = start_fails(d.err, args, 1);
		snprintf(want, sizeof(want), "shmpoold: %s:2: shm-dir %s: No "
			"such file or directory\n", d.conf, missing);
		ck_assert_str_eq(err, want);
		ck_assert(!exists(d.sock));

		snprintf(text, sizeof(text), "shm-dir = %s\nhugetlbfs = none\n",
			shm);
		write_file(d.conf, text);
		ck_assert_int_eq(truncate(d.err, 0), 0);
		d.pid = spawn(d.err, args);
		d_wait_ready(&d);
	}
	/* A hugetlbfs that is no mount: refused, nothing taken. */
	snprintf(text, sizeof(text), "shm-dir = %s\nhugetlbfs = %s\n"
		"group = 7\n[pool r1]\nobjects = 8\nobject-size = 8\n",
		shm, other);
	write_file(d.conf, text);
	ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
	snprintf(want, sizeof(want), "SIGHUP: %s:2: hugetlbfs %s: not a "
		"hugetlbfs mount; keeping the old config\n", d.conf, other);
	await_stderr(&d, want, 2);
	check_alive(&d, "a reload of a hugetlbfs that is no mount");
	check_error(ask(&d, "info name=r1"), "ENOENT", "r1 of a refused file");
	/* Its group not taken: a pool made now has the daemon's own. */
	ck_assert_prefix(ask(&d, "create name=g1 objects=8 object-size=8"),
		"shmpool/1 ok name=g1 ");
	{
		struct stat st;

		snprintf(path, sizeof(path), "%s/shmpool.g1", shm);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_int_eq(st.st_gid, getegid());
	}
	/* A shm dir that is no folder: refused too. */
	snprintf(text, sizeof(text), "shm-dir = %s\nhugetlbfs = none\n"
		"[pool r2]\nobjects = 8\nobject-size = 8\n", missing);
	write_file(d.conf, text);
	ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
	snprintf(want, sizeof(want), "SIGHUP: %s:1: shm-dir %s: No such file "
		"or directory; keeping the old config\n", d.conf, missing);
	await_stderr(&d, want, 2);
	check_error(ask(&d, "info name=r2"), "ENOENT", "r2 of a refused file");
	/* Another folder that is one: said, both values; the pool is
	 * made where the daemon makes pools today. */
	snprintf(text, sizeof(text), "shm-dir = %s\nhugetlbfs = none\n"
		"[pool r3]\nobjects = 8\nobject-size = 8\n", other);
	write_file(d.conf, text);
	ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
	snprintf(want, sizeof(want), "SIGHUP: shm-dir %s now, %s from the "
		"next start\n", shm, other);
	await_stderr(&d, want, 2);
	await_pool(&d, "r3", 2);
	snprintf(path, sizeof(path), "%s/shmpool.r3", shm);
	ck_assert_kv(ask(&d, "info name=r3"), "path", path);
	d_finish(&d);
}
END_TEST

/*
 * A reload that changes the pidfile, or drops it, changes nothing until
 * the next start (shmpoold.conf(5)): SIGTERM removes the file the daemon
 * wrote, and leaves alone the one the new config names.
 */
START_TEST(test_reload_keeps_pidfile)
{
	char text[2048], a[320], b[320], want[800];
	struct daemon d;
	int round;

	d_init(&d, "pidreload");
	snprintf(a, sizeof(a), "%s/a.pid", d.dir);
	snprintf(b, sizeof(b), "%s/b.pid", d.dir);
	for (round = 0; round < 2; round++) {
		snprintf(text, sizeof(text), "pidfile = %s\n", a);
		write_file(d.conf, text);
		d_start(&d);
		snprintf(want, sizeof(want), "%ld\n", (long)d.pid);
		ck_assert_str_eq(slurp(a), want);

		/* Another pidfile (someone else's file), socket and shm
		 * dir, then no pidfile. */
		if (round == 0) {
			snprintf(text, sizeof(text), "pidfile = %s\n"
				"socket = %s/b.sock\nshm-dir = %s/b\n", b,
				d.dir, d.dir);
			write_file(d.conf, text);
			write_file(b, "not shmpoold's\n");
		} else {
			write_file(d.conf, "# no pidfile\n");
		}
		ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
		snprintf(want, sizeof(want), "SIGHUP: pidfile %s now, %s from "
			"the next start\n", a, round == 0 ? b : "none");
		await_stderr(&d, want, 2);
		snprintf(want, sizeof(want), "SIGHUP: %s re-read", d.conf);
		await_stderr(&d, want, 2);
		/* The options name the socket and the shm dir: the file's
		 * change nothing, now or at the next start. */
		ck_assert_msg(strstr(slurp(d.err), "SIGHUP: socket") == NULL &&
			strstr(slurp(d.err), "SIGHUP: shm-dir") == NULL,
			"round %d: stderr:\n%s", round, slurp(d.err));
		ck_assert_int_eq(truncate(d.err, 0), 0);
		d_stop(&d);
		ck_assert_msg(!exists(a), "round %d: %s left behind", round,
			a);
		if (round == 0) {
			ck_assert_str_eq(slurp(b), "not shmpoold's\n");
			ck_assert_int_eq(unlink(b), 0);
		}
		/* d_stop() saw its socket and lock go; it made nothing of
		 * the new config's. */
		ck_assert_int_eq(tu_count_entries(d.dir), 3);
	}
	tu_rm_tree(d.dir);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 10. Hostile workers and segments: what a worker or a user that may
 * write a segment does to it must not crash or stall the daemon. */

/* Attach, fill the cache with garbage and a length past its end, die. */
static int
garbage_worker(void *arg)
{
	struct shmpool_cache *c;
	struct shmpool *pool;
	unsigned int i;

	(void)arg;
	if (shmpool_attach("h", NULL, &pool) != 0)
		return 1;
	c = shmpool_default_cache(pool);
	for (i = 0; i < 64; i++)
		c->objs[i] = 0xfffffff0u - i;
	c->w = (c->w & ~(uint64_t)0xffff) | 8000;
	/* And dies in the middle of a change that leaves it so. */
	c->change.w = c->w;
	c->seq = 1;
	return 0;
}

/* Attach to pool h, get 8 objects and put them back: 0, or the exit
 * code of what failed. */
static int
attach_get_put_8(struct shmpool **poolp)
{
	void *objs[8];

	if (shmpool_attach("h", NULL, poolp) != 0)
		return 1;
	if (shmpool_get_bulk(*poolp, objs, 8) != 0)
		return 2;
	return shmpool_put_bulk(*poolp, objs, 8) == 0 ? 0 : 3;
}

/*
 * Gets 8 objects and puts them back (a refill of 24 before), then dies in
 * the middle of a fold of its hits' counts: the change recorded and
 * begun, the totals of its puts moved, its word not yet.
 */
static int
fold_killed_worker(void *arg)
{
	struct shmpool *pool;
	int ret;

	(void)arg;
	ret = attach_get_put_8(&pool);
	if (ret != 0)
		return ret;
#if SHMPOOL_STATS
	{
		struct shmpool_cache *c = shmpool_default_cache(pool);
		uint64_t w = c->w;

		c->change.w = SHMPOOL_W_LEN_(w);
		c->change.objs_adj = c->objs_adj;
		c->change.put_bulk = c->put_bulk + SHMPOOL_W_PUT_CALLS_(w);
		c->change.put_objs = c->put_objs + SHMPOOL_W_PUT_OBJS_(w);
		c->change.get_success_bulk = c->get_success_bulk +
			SHMPOOL_W_GET_CALLS_(w);
		c->seq++;
		c->put_bulk = c->change.put_bulk;
		c->put_objs = c->change.put_objs;
	}
#endif
	return 0;
}

/* A process that claims a slot and dies leaves the ring as it was. */
static int
exit_attached_worker(void *arg)
{
	struct shmpool *pool;

	(void)arg;
	return attach_get_put_8(&pool);
}

/* Slot k of pool name of d is free, its cache at rest (seq even) and
 * every count of it 0. */
static void
check_slot_at_rest(const struct daemon *d, const char *name, unsigned int k)
{
	const struct seg_slot *s;
	char path[400];
	struct stat st;
	void *map;
	int fd;

	snprintf(path, sizeof(path), "%s/shmpool.%s", d->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(fstat(fd, &st), 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	close(fd);
	s = (const struct seg_slot *)((const char *)map +
		((const struct seg_hdr *)map)->slots_off) + k;
	ck_assert_uint_eq(SLOT_STATE(s->owner), SEG_SLOT_FREE);
	ck_assert_uint_eq(s->cache.seq % 2, 0);
	ck_assert_uint_eq(s->cache.w, 0);
#define ZERO(f) ck_assert_uint_eq(s->cache.f, 0);
	SHMPOOL_CACHE_COUNTERS_(ZERO)
#undef ZERO
	munmap(map, (size_t)st.st_size);
}

/* What fold_killed_worker's calls count. */
static const struct shmpool_stats fold_killed_counts = {
	.put_bulk = 1, .put_objs = 8,
	.get_common_pool_bulk = 1, .get_common_pool_objs = 24,
	.get_success_bulk = 1, .get_success_objs = 8,
};

START_TEST(test_hostile)
{
	char path[400], log[64];
	struct shmpool *pool;
	const char *r;
	struct daemon d;
	pid_t pid;
	int fd;

	d_init(&d, "hostile");
	d_start(&d);
	ck_assert_prefix(ask(&d, "create name=h objects=128 object-size=64 "
		"cache=16"), "shmpool/1 ok name=h ");

	/* A dead worker's cache claims 8000 objects of garbage: the daemon
	 * refuses to put them in the ring and frees the slot. */
	pid = fork_worker(garbage_worker, NULL);
	tu_wait_children(&pid, 1, 5);
	snprintf(log, sizeof(log), "slot 0 of pid %ld: cache length 8000",
		(long)pid);
	await_stderr(&d, log, 2);
	r = ask(&d, "info name=h");
	ck_assert_kv_u(r, "slots-in-use", 0);
	ck_assert_kv_u(r, "avail", 128);
	check_alive(&d, "a garbage cache");
	/* Its change was finished, its counts retired: the slot's
	 * counters are zero, and readers find it at rest. */
	check_slot_at_rest(&d, "h", 0);

	/* One killed in the middle of a fold: shmpoold finishes it, and
	 * the counts retired are those of its calls, each once. */
	pid = fork_worker(fold_killed_worker, NULL);
	tu_wait_children(&pid, 1, 5);
	snprintf(log, sizeof(log), "slot 0 of pid %ld reclaimed", (long)pid);
	await_stderr(&d, log, 2);
	ck_assert_int_eq(shmpool_attach("h", NULL, &pool), 0);
	tu_check_stats(pool, SHMPOOL_STATS_RETIRED, &fold_killed_counts,
		"retired, a fold cut short");
	ck_assert_int_eq(shmpool_detach(pool), 0);
	check_slot_at_rest(&d, "h", 0);

	/* The slot is usable again, and the ring is whole. */
	pid = fork_worker(exit_attached_worker, NULL);
	tu_wait_children(&pid, 1, 5);
	snprintf(log, sizeof(log), "slot 0 of pid %ld reclaimed", (long)pid);
	await_stderr(&d, log, 2);
	ck_assert_kv_u(ask(&d, "info name=h"), "avail", 128);

	/* Bytes after the request's newline. */
	check_error(ask_raw(&d, "shmpool/1 ping\n\0junk", 20), "EPROTO",
		"bytes after the newline");
	check_error(ask_raw(&d, "shmpool/1 ping\nshmpool/1 ping", 29),
		"EPROTO", "two requests in one packet");

	/* Someone who may write the segment cuts it short: the daemon must
	 * not touch it again (it would take SIGBUS), and says so. */
	snprintf(path, sizeof(path), "%s/shmpool.h", d.dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	close(fd);
	await_stderr(&d, "pool 'h': ", 2);
	await_stderr(&d, "was truncated", 2);
	check_error(ask(&d, "info name=h"), "EIO", "info of a cut segment");
	check_error(ask(&d, "attach name=h"), "EIO", "attach to a cut segment");
	ck_assert_str_eq(ask(&d, "list"),
		"shmpool/1 ok count=1\npool name=h broken=yes");
	check_alive(&d, "a truncated segment");
	ck_assert_prefix(ask(&d, "destroy name=h"), "shmpool/1 ok name=h");
	ck_assert(!exists(path));

	/* A segment replaced by a link to another file is not adopted. */
	ck_assert_prefix(ask(&d, "create name=l objects=16 object-size=64"),
		"shmpool/1 ok name=l ");
	d_stop(&d);
	snprintf(path, sizeof(path), "%s/shmpool.l", d.dir);
	{
		char real[420];

		snprintf(real, sizeof(real), "%s/real-l", d.dir);
		ck_assert_int_eq(rename(path, real), 0);
		ck_assert_int_eq(symlink(real, path), 0);
	}
	d_start(&d);
	check_error(ask(&d, "info name=l"), "ENOENT", "a linked segment");
	await_stderr(&d, "not adopted", 2);
	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 11. One user cannot take every connection. */

static int
hog_worker(void *arg)
{
	const char *sock = arg;
	int fds[40], i, refused = 0;
	char reply[REPLY_MAX + 1];

	if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 ||
	    setuid(NOBODY) != 0)
		return 100;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (i = 0; i < 40; i++) {
		fds[i] = conn_open(sock);
		if (fds[i] < 0)
			return 101;
	}
	/* Each answers, or was closed by the daemon at once. */
	for (i = 0; i < 40; i++)
		if (conn_call(fds[i], "shmpool/1 ping", 14, reply,
				sizeof(reply)) <= 0)
			refused++;
	return refused;
}

START_TEST(test_connection_cap)
{
	struct daemon d;
	int status;
	pid_t pid;

	if (geteuid() != 0) {
		printf("SKIP: connection cap test needs root\n");
		return;
	}
	d_init(&d, "cap");
	ck_assert_int_eq(chmod(tu_dir(), 0755), 0);
	d_start(&d);
	pid = fork_worker(hog_worker, d.sock);
	ck_assert(wait_exit(pid, 10, &status));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 40 - 32,
		"nobody's 40 connections: status 0x%x, expected %d refused",
		status, 40 - 32);
	check_alive(&d, "a user's 40 connections");
	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 12. Scans counted, with a pool of their own: pools_scan() clears a
 * stalled ring's flag (then repairs that ring, which changes nothing in a
 * pool nobody uses), so a flag set by hand and seen cleared is one scan;
 * the pools are scanned in the order they were created, so a later pool's
 * flag cleared is also every earlier pool's turn of that scan done. */

struct ticker {
	void *map;
	size_t len;
	struct ring *r;		/* the ticking pool's ring */
};

/* Map pool name of d (made by the caller, after the pools it watches). */
static struct ticker
ticker_open(const struct daemon *d, const char *name)
{
	struct ticker t;
	char path[400];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/shmpool.%s", d->dir, name);
	fd = open(path, O_RDWR | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(fstat(fd, &st), 0);
	t.len = (size_t)st.st_size;
	t.map = mmap(NULL, t.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(t.map, MAP_FAILED);
	close(fd);
	t.r = (struct ring *)((char *)t.map +
		((struct seg_hdr *)t.map)->ring_off);
	return t;
}

static void
ticker_close(struct ticker *t)
{
	munmap(t->map, t->len);
}

/* Until k more scans of d are over (each within secs). */
static void
await_scans(const struct daemon *d, const struct ticker *t, int k,
		double secs)
{
	int i;

	for (i = 0; i < k; i++) {
		double deadline = now() + secs;

		uatomic_set(&t->r->stalled, 1);
		while (uatomic_read(&t->r->stalled) != 0) {
			ck_assert_msg(now() < deadline, "scan %d of %d not "
				"seen within %.1f s; stderr:\n%s", i + 1, k,
				secs, slurp(d->err));
			usleep(1000);
		}
	}
}

/* Occurrences of s in d's stderr. */
static int
count_logged(const struct daemon *d, const char *s)
{
	const char *p = slurp(d->err);
	int n = 0;

	while ((p = strstr(p, s)) != NULL) {
		n++;
		p++;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* 13. A dead put's positions covered by a live put's stale record when
 * the dead one's slot is reclaimed, and for many scans after: once the
 * record is gone, the get that waits for them marks the ring stalled,
 * and the next scan makes holes of them. */

#define SR_OBJS		1024	/* in the pool, and entries in its ring */
#define SR_PUT		8	/* positions the killed put claimed */
#define SR_SCANS	22	/* scans over which nothing may change */
#define SR_STALL_SECS	2.0	/* until the stalled get has its answer */

struct stale_arg {
	struct pipes p;
	uint64_t pos;		/* the killed put's first position */
};

/*
 * L: attach, write the record of a put of SR_PUT from pos (as a put whose
 * claim lost to another leaves it when stopped just then), report; on 'c'
 * clear it and say so; on end of file detach.
 */
static int
stale_record_worker(void *arg)
{
	struct stale_arg *a = arg;
	struct shmpool_cache *c;
	struct shmpool *pool;
	char cmd;
	int slot;

	close(a->p.ready[0]);
	close(a->p.go[1]);
	if (shmpool_attach("p", NULL, &pool) != 0)
		return 10;
	c = shmpool_default_cache(pool);
	if (c->size != 0 || uatomic_read(&c->ring_op) != 0)
		return 11;
	uatomic_set(cache_ring_op(c, 0), RING_OP(a->pos, SR_PUT));
	cmm_smp_mb();
	slot = shmpool_cache_slot(c);
	if (write(a->p.ready[1], &slot, sizeof(slot)) != sizeof(slot))
		return 12;
	if (read(a->p.go[0], &cmd, 1) != 1 || cmd != 'c')
		return 13;
	uatomic_set(&c->ring_op, 0);
	cmm_smp_mb();
	if (write(a->p.ready[1], "k", 1) != 1)
		return 14;
	/* Alive until the parent closes the pipe. */
	if (read(a->p.go[0], &cmd, 1) != 0)
		return 15;
	return shmpool_detach(pool) == 0 ? 0 : 16;
}

/*
 * D: take SR_PUT objects, then put them back as ring_put() does, by hand,
 * up to its claim: the record, the claim of SR_PUT positions at a->pos,
 * no writes.  Then report the slot and wait to be killed.
 */
static int
claim_killed_worker(void *arg)
{
	struct stale_arg *a = arg;
	struct shmpool_cache *c;
	struct shmpool *pool;
	struct ring_view *v;
	void *objs[SR_PUT];
	uint64_t pos;
	int slot;

	close(a->p.ready[0]);
	close(a->p.go[1]);
	if (shmpool_attach("p", NULL, &pool) != 0)
		return 10;
	c = shmpool_default_cache(pool);
	if (c->size != 0 || shmpool_get_bulk(pool, objs, SR_PUT) != 0)
		return 11;
	v = &pool_handle(pool)->rings[0];
	pos = uatomic_read(&v->r->prod_head);
	if (pos != a->pos ||
	    pos + SR_PUT - uatomic_read(&v->r->cons_head) > v->size)
		return 12;
	uatomic_set(cache_ring_op(c, 0), RING_OP(pos, SR_PUT));
	if (!ring_claim(&v->r->prod_head, &pos, SR_PUT))
		return 13;
	cmm_smp_mb();
	slot = shmpool_cache_slot(c);
	if (write(a->p.ready[1], &slot, sizeof(slot)) != sizeof(slot))
		return 14;
	for (;;)
		pause();
}

START_TEST(test_stalled_repair)
{
	static void *objs[SR_OBJS];
	uint64_t ents[SR_PUT], pos;
	struct stale_arg al, ad;
	struct pipes pb;
	const struct ring_view *ring;
	const struct seg_slot *slots;
	struct shmpool *pool;
	struct ticker tick;
	struct daemon d;
	char log[256], c;
	const char *r;
	pid_t l, dd, b;
	int slot_l, slot_d, slot_b, status, i;
	double t0, dt;

	d_init(&d, "stalledrepair");
	d_start(&d);
	ck_assert_prefix(ask(&d, "create name=p objects=1024 object-size=64 "
		"cache=0"), "shmpool/1 ok name=p ");
	/* After p: its turn in a scan comes first. */
	ck_assert_prefix(ask(&d, "create name=tick objects=16 object-size=64 "
		"cache=0"), "shmpool/1 ok name=tick ");
	tick = ticker_open(&d, "tick");

	pool = attach_cache("p", 0);
	ring = &pool_handle(pool)->rings[0];
	slots = pool_handle(pool)->slots;
	ck_assert_uint_eq(ring->size, SR_OBJS);
	pos = uatomic_read(&ring->r->prod_head);
	ck_assert_uint_eq(pos, SR_OBJS);

	/* L: the record of a put of positions pos .. pos + 7, and no claim. */
	memset(&al, 0, sizeof(al));
	pipes_open(&al.p);
	al.pos = pos;
	l = fork_worker(stale_record_worker, &al);
	close(al.p.ready[1]);
	close(al.p.go[0]);
	slot_l = await_ready(&al.p);
	ck_assert_uint_eq(uatomic_read(&slots[slot_l].cache.ring_op),
		RING_OP(pos, SR_PUT));

	/* D: 8 taken, the same 8 positions claimed, none written. */
	memset(&ad, 0, sizeof(ad));
	pipes_open(&ad.p);
	ad.pos = pos;
	dd = fork_worker(claim_killed_worker, &ad);
	close(ad.p.ready[1]);
	close(ad.p.go[0]);
	slot_d = await_ready(&ad.p);
	ck_assert_int_ne(slot_d, slot_l);
	ck_assert_uint_eq(tu_slots_in_use(pool), 3);
	ck_assert_uint_eq(uatomic_read(&ring->r->cons_head), SR_PUT);
	ck_assert_uint_eq(uatomic_read(&ring->r->prod_head), SR_OBJS + SR_PUT);
	ck_assert_uint_eq(uatomic_read(&slots[slot_d].cache.ring_op),
		RING_OP(pos, SR_PUT));

	/* The parent takes all that is written: the ring then holds only
	 * D's 8 unwritten positions, their entries still those of the lap
	 * before (positions 0 .. 7, written for lap 0). */
	ck_assert_int_eq(shmpool_generic_get(pool, objs, SR_OBJS - SR_PUT,
		NULL), 0);
	ck_assert_uint_eq(uatomic_read(&ring->r->cons_head), SR_OBJS);
	for (i = 0; i < SR_PUT; i++) {
		ents[i] = uatomic_read(&ring->ents[(pos + i) & ring->mask]);
		ck_assert_uint_eq(ring_ent_seq(ents[i]), ring_seq(ring, i));
	}

	/* kill -9 of D: its slot is reclaimed, its record cleared; L's
	 * record still covers the 8. */
	t0 = now();
	ck_assert_int_eq(kill(dd, SIGKILL), 0);
	ck_assert_int_eq(waitpid(dd, &status, 0), dd);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	await_slots_in_use(pool, 2, t0);
	snprintf(log, sizeof(log), "shmpoold: pool 'p': slot %d of pid %ld "
		"reclaimed (process exited), 0 cached objects back in the "
		"ring\n", slot_d, (long)dd);
	await_stderr(&d, log, RECLAIM_SECS);
	ck_assert_uint_eq(uatomic_read(&slots[slot_d].cache.ring_op), 0);

	/* A repair at each of these scans (the ring marked stalled by
	 * hand, as a waiting get would), and no hole while L's record
	 * covers the positions. */
	for (i = 0; i < SR_SCANS; i++) {
		int k;

		uatomic_set(&ring->r->stalled, 1);
		/* Two: the first may have passed p before the flag. */
		await_scans(&d, &tick, 2, 1.0);
		ck_assert_msg(uatomic_read(&ring->r->stalled) == 0, "scan %d "
			"did not take the stalled ring", i + 1);
		ck_assert_msg(uatomic_read(&ring->r->holes) == 0, "%llu holes "
			"after scan %d, with a live record over them",
			(unsigned long long)uatomic_read(&ring->r->holes),
			i + 1);
		for (k = 0; k < SR_PUT; k++)
			ck_assert_uint_eq(uatomic_read(&ring->ents[(pos + k) &
				ring->mask]), ents[k]);
	}
	dt = now() - t0;
	ck_assert_uint_eq(uatomic_read(&slots[slot_l].cache.ring_op),
		RING_OP(pos, SR_PUT));
	ck_assert_int_eq(count_logged(&d, "positions it had claimed are "
		"skipped"), 0);
	printf("stale record: %d scans in %.2f s after the kill, no hole\n",
		SR_SCANS, dt);

	/* L clears its record and lives on.  No repair is due any more:
	 * three more scans leave the positions alone. */
	ck_assert_int_eq(write(al.p.go[1], "c", 1), 1);
	ck_assert_int_eq(read(al.p.ready[0], &c, 1), 1);
	ck_assert_int_eq(c, 'k');
	ck_assert_uint_eq(uatomic_read(&slots[slot_l].cache.ring_op), 0);
	await_scans(&d, &tick, 3, 1.0);
	ck_assert_uint_eq(uatomic_read(&ring->r->holes), 0);
	ck_assert_int_eq(count_logged(&d, "positions it had claimed are "
		"skipped"), 0);
	ck_assert_int_eq(waitpid(l, &status, WNOHANG), 0);

	/* B: a get of 1 reaches the first of the 8, waits, marks the ring
	 * stalled; the next scan makes holes of the 8; B steps over them
	 * and finds the ring empty. */
	pipes_open(&pb);
	b = fork_worker(blocked_getter, &pb);
	close(pb.ready[1]);
	close(pb.go[0]);
	slot_b = await_ready(&pb);
	ck_assert_int_ne(slot_b, slot_l);
	ck_assert_uint_eq(tu_slots_in_use(pool), 3);
	ck_assert_int_eq(write(pb.go[1], "g", 1), 1);
	t0 = now();
	dt = wait_get_answered(b, pb.ready[0], t0, SR_STALL_SECS, ring,
		&d, "the get behind the unwritten positions", -ENOENT);
	printf("get behind a dead put's positions, stale record gone: "
		"stalled, repaired, answered in %.1f ms\n", dt * 1e3);
	ck_assert_double_lt(dt, SR_STALL_SECS);

	/* The 8 are holes, not stepped over (B's get failed). */
	ck_assert_uint_eq(uatomic_read(&ring->r->holes), SR_PUT);
	ck_assert_uint_eq(uatomic_read(&ring->r->cons_head), SR_OBJS);
	ck_assert_uint_eq(uatomic_read(&ring->r->prod_head), SR_OBJS + SR_PUT);
	for (i = 0; i < SR_PUT; i++)
		ck_assert_uint_eq(uatomic_read(&ring->ents[(pos + i) &
			ring->mask]), ring_ent(ring_seq(ring, pos + i) + 1, 0));
	snprintf(log, sizeof(log), "shmpoold: pool 'p': a process died in "
		"the middle of a put to the ring; %d positions it had claimed "
		"are skipped (their objects are lost with it)\n", SR_PUT);
	await_stderr(&d, log, RECLAIM_SECS);
	ck_assert_int_eq(count_logged(&d, "positions it had claimed are "
		"skipped"), 1);
	ck_assert_uint_eq(shmpool_avail_count(pool), 0);

	/* L detaches; the parent's 1016 go back, and a get of them all
	 * steps over the holes. */
	close(al.p.go[1]);
	tu_wait_children(&l, 1, 5);
	ck_assert_uint_eq(tu_slots_in_use(pool), 1);
	ck_assert_int_eq(shmpool_generic_put(pool, objs, SR_OBJS - SR_PUT,
		NULL), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), SR_OBJS - SR_PUT);
	ck_assert_int_eq(shmpool_generic_get(pool, objs, SR_OBJS - SR_PUT,
		NULL), 0);
	ck_assert_uint_eq(uatomic_read(&ring->r->holes), 0);
	ck_assert_int_eq(shmpool_generic_put(pool, objs, SR_OBJS - SR_PUT,
		NULL), 0);
	check_all_in_ring(pool, SR_OBJS - SR_PUT);
	ck_assert_int_eq(shmpool_detach(pool), 0);
	r = ask(&d, "info name=p");
	ck_assert_kv_u(r, "slots-in-use", 0);
	ck_assert_kv_u(r, "avail", SR_OBJS - SR_PUT);
	ck_assert_kv_u(r, "in-use", SR_PUT);
	ck_assert_int_eq(count_logged(&d, "positions it had claimed are "
		"skipped"), 1);
	ticker_close(&tick);
	close(al.p.ready[0]);
	close(ad.p.ready[0]);
	close(ad.p.go[1]);
	close(pb.ready[0]);
	close(pb.go[1]);
	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/*
 * 14. A daemon out of descriptors cannot read /proc/PID/stat: that says
 * nothing of the process, whose slot stays claimed until a later scan
 * can tell.  Workers attach by path, so that the daemon's scan must watch
 * each (a pidfd, kept, and a /proc read); the limit lets some watches in
 * and leaves exactly one descriptor free, so that for the others the
 * pidfd opens and the read of /proc fails with EMFILE, at every scan.
 *
 * The limit, 20, is low enough for that with a handful of workers and
 * leaves the daemon room to start, create and serve before and after.
 * While the workers live it cannot serve: with one descriptor free, too
 * few for a connection and the read of its peer's /proc/PID/stat, a
 * connection waits in the backlog (test 15).  So nothing is asked of it
 * then; the pools are looked at through their segments, and its scans
 * counted with a pool of their own (await_scans()).
 */

#define FD_LIMIT	20	/* the daemon's RLIMIT_NOFILE, soft and hard */
#define FD_SOFT		12	/* soft limit it is started with */
#define FD_CACHE	16	/* each worker's cache */
#define FD_CACHED	24	/* objects in it: refill of 16 + 8, 8 back */
#define FD_HOLD_SCANS	10
#define FD_MAX_WORKERS	40

/*
 * The daemon's open descriptors below FD_LIMIT, from /proc/PID/fd: the
 * limit bounds a new descriptor's number, not how many are open, and it
 * may have inherited some above (from whoever started the tests).
 */
static int
fd_count(pid_t pid)
{
	struct dirent *de;
	char path[64];
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
	dir = opendir(path);
	ck_assert_msg(dir != NULL, "%s: %s", path, strerror(errno));
	while ((de = readdir(dir)) != NULL)
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9' &&
		    atoi(de->d_name) < FD_LIMIT)
			n++;
	closedir(dir);
	return n;
}

/* "Max open files" of /proc/PID/limits: soft and hard. */
static void
nofile_limits(pid_t pid, long *soft, long *hard)
{
	char path[64];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%ld/limits", (long)pid);
	p = strstr(slurp(path), "Max open files");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(sscanf(p + strlen("Max open files"), "%ld %ld",
		soft, hard), 2);
}

/* Until d's open descriptors are want (within secs). */
static void
await_fd_count(const struct daemon *d, int want, double secs)
{
	double deadline = now() + secs;
	int n;

	while ((n = fd_count(d->pid)) != want) {
		ck_assert_msg(now() < deadline, "shmpoold has %d descriptors "
			"open after %.1f s, expected %d", n, secs, want);
		usleep(1000);
	}
}

static const char *fd_seg;	/* the segment the workers map */

/* Attach by path (no daemon: its scan finds the slot), fill the cache. */
static int
path_worker(void *arg)
{
	struct shmpool_attach_opts o = {
		.path = fd_seg,
		.flags = SHMPOOL_ATTACH_CACHE_SIZE,
		.cache_size = FD_CACHE,
	};
	struct pipes *p = arg;
	struct shmpool *pool;
	void *objs[8];

	if (shmpool_attach("q", &o, &pool) != 0)
		return 10;
	if (shmpool_get_bulk(pool, objs, 8) != 0 ||
	    shmpool_put_bulk(pool, objs, 8) != 0 ||
	    shmpool_cache_len_(shmpool_default_cache(pool)) != FD_CACHED)
		return 11;
	/* Killed while waiting here. */
	report_and_wait(p, pool);
	return 12;
}

START_TEST(test_unreadable_proc_keeps_slot)
{
	static const struct rlimit lim = { FD_SOFT, FD_LIMIT };
	struct pipes pw[FD_MAX_WORKERS];
	pid_t pids[FD_MAX_WORKERS];
	int slot[FD_MAX_WORKERS];
	uint64_t start[FD_MAX_WORKERS];
	const struct seg_slot *slots;
	const struct seg_hdr *hdr;
	struct ticker q, tick;
	struct daemon d;
	char path[400], log[256];
	const char *r;
	long soft, hard;
	int base, nw, watched, i, k, n, status;
	double t0, dt;

	if (geteuid() != 0) {
		printf("SKIP: descriptor limit test reads the daemon's /proc "
			"as root\n");
		return;
	}
	d_init(&d, "fdlimit");
	spawn_nofile = &lim;
	d_start(&d);
	spawn_nofile = NULL;
	/* It raised its soft limit to the hard one. */
	nofile_limits(d.pid, &soft, &hard);
	ck_assert_int_eq(soft, FD_LIMIT);
	ck_assert_int_eq(hard, FD_LIMIT);
	ck_assert_prefix(ask(&d, "create name=q objects=1024 object-size=64 "
		"cache=0"), "shmpool/1 ok name=q ");
	ck_assert_prefix(ask(&d, "create name=tick objects=16 object-size=64 "
		"cache=0"), "shmpool/1 ok name=tick ");
	snprintf(path, sizeof(path), "%s/shmpool.q", d.dir);
	fd_seg = path;
	q = ticker_open(&d, "q");
	tick = ticker_open(&d, "tick");
	hdr = q.map;
	slots = (const struct seg_slot *)((const char *)q.map +
		hdr->slots_off);
	ck_assert_uint_eq(hdr->slot_size, sizeof(struct seg_slot));

	/* What it holds open with no client and no process to watch (the
	 * last connection is closed by the scans): the descriptors below
	 * FD_LIMIT left free are those it can open. */
	await_scans(&d, &tick, 2, 1.0);
	base = fd_count(d.pid);
	ck_assert_int_le(base, FD_LIMIT - 3);
	/* A watch takes a pidfd, and a /proc read one more for a moment:
	 * FD_LIMIT - base - 1 watches fit; three workers more than that
	 * find /proc unreadable at every scan. */
	watched = FD_LIMIT - base - 1;
	nw = watched + 3;
	ck_assert_int_le(nw, FD_MAX_WORKERS);
	ck_assert_int_le(nw, (int)hdr->nb_slots);

	for (i = 0; i < nw; i++) {
		pipes_open(&pw[i]);
		pids[i] = fork_worker(path_worker, &pw[i]);
		close(pw[i].ready[1]);
		close(pw[i].go[0]);
		slot[i] = await_ready(&pw[i]);
		ck_assert_int_eq(slot[i], i);
		start[i] = uatomic_read(&slots[i].start_time);
		ck_assert_uint_ne(start[i], 0);
	}
	await_stderr(&d, "cannot read /proc/", 2);
	await_stderr(&d, "/stat: Too many open files; its slots are looked "
		"at again later", 2);
	/* As many watched as fit: every descriptor but one taken. */
	await_fd_count(&d, FD_LIMIT - 1, 2);

	/* FD_HOLD_SCANS scans: every slot as it was, its cache whole. */
	t0 = now();
	for (k = 0; k < FD_HOLD_SCANS; k++) {
		await_scans(&d, &tick, 1, 1.0);
		for (i = 0; i < nw; i++) {
			ck_assert_msg(uatomic_read(&slots[i].owner) ==
				SLOT_OWNER(SEG_SLOT_CLAIMED, pids[i]),
				"scan %d: slot %d of live pid %ld: owner "
				"0x%llx; stderr:\n%s", k + 1, i, (long)pids[i],
				(unsigned long long)uatomic_read(
				&slots[i].owner), slurp(d.err));
			ck_assert_uint_eq(uatomic_read(&slots[i].start_time),
				start[i]);
			ck_assert_uint_eq(SHMPOOL_W_LEN_(uatomic_read(&slots[i].cache.w)),
				FD_CACHED);
		}
		ck_assert_uint_eq(uatomic_read(&slots[nw].owner), 0);
		ck_assert_uint_eq(uatomic_read(&q.r->prod_head) -
			uatomic_read(&q.r->cons_head),
			1024 - (uint64_t)nw * FD_CACHED);
		/* (A scan opens a pidfd for a moment to try again.) */
		await_fd_count(&d, FD_LIMIT - 1, 1.0);
	}
	dt = now() - t0;
	ck_assert_int_eq(count_logged(&d, " reclaimed ("), 0);
	printf("descriptor limit %d (%d below it at rest): %d workers, %d "
		"watched, %d scans in %.2f s, no slot lost\n", FD_LIMIT, base,
		nw, watched, FD_HOLD_SCANS, dt);

	/* kill -9 of every worker: every slot comes back, with its 24. */
	t0 = now();
	for (i = 0; i < nw; i++) {
		ck_assert_int_eq(kill(pids[i], SIGKILL), 0);
		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	}
	for (;;) {
		for (i = n = 0; i < nw; i++)
			n += uatomic_read(&slots[i].owner) != 0;
		if (n == 0)
			break;
		ck_assert_msg(now() - t0 < 2 * RECLAIM_SECS, "%d of %d slots "
			"still claimed %.0f s after the kill; stderr:\n%s", n,
			nw, 2 * RECLAIM_SECS, slurp(d.err));
		usleep(1000);
	}
	dt = now() - t0;
	printf("descriptor limit: %d slots of dead workers reclaimed in "
		"%.1f ms\n", nw, dt * 1e3);
	for (i = 0; i < nw; i++) {
		snprintf(log, sizeof(log), "shmpoold: pool 'q': slot %d of "
			"pid %ld reclaimed (", i, (long)pids[i]);
		ck_assert_msg(count_logged(&d, log) == 1, "'%s' logged %d "
			"times; stderr:\n%s", log, count_logged(&d, log),
			slurp(d.err));
	}
	ck_assert_int_eq(count_logged(&d, ", 24 cached objects back in the "
		"ring\n"), nw);
	ck_assert_int_eq(count_logged(&d, " reclaimed ("), nw);
	ck_assert_uint_eq(uatomic_read(&q.r->prod_head) -
		uatomic_read(&q.r->cons_head), 1024);
	ck_assert_uint_eq(uatomic_read(&q.r->holes), 0);
	/* Its watches closed: back to what it had at rest, and serving. */
	await_fd_count(&d, base, 2);
	r = ask(&d, "info name=q");
	ck_assert_kv_u(r, "slots-in-use", 0);
	ck_assert_kv_u(r, "avail", 1024);
	ck_assert_kv_u(r, "in-use", 0);
	for (i = 0; i < nw; i++) {
		close(pw[i].ready[0]);
		close(pw[i].go[1]);
	}
	ticker_close(&q);
	ticker_close(&tick);
	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 14. A put of what is no object of the pool (NULL: undefined,
 * libshmpool(3)) leaves a position no get can read; the get that reaches
 * it marks the ring stalled, the next scan makes a hole of it and says
 * so, and the get steps over it to the object put after. */

START_TEST(test_bad_put_repaired)
{
	const struct ring_view *ring;
	struct shmpool *pool;
	struct daemon d;
	struct pipes pb;
	void *objs[4], *obj;
	double dt;
	pid_t b;

	d_init(&d, "badput");
	d_start(&d);
	ck_assert_prefix(ask(&d, "create name=p objects=4 object-size=64 "
		"cache=0"), "shmpool/1 ok name=p ");
	pool = attach_cache("p", 0);
	ring = &pool_handle(pool)->rings[0];
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 4), 0);
	/* objs[0], NULL, objs[1] at positions 4, 5, 6; objs[0] out again. */
	ck_assert_int_eq(shmpool_put(pool, objs[0]), 0);
	ck_assert_int_eq(shmpool_put(pool, NULL), 0);
	ck_assert_int_eq(shmpool_put(pool, objs[1]), 0);
	ck_assert_int_eq(shmpool_get(pool, &obj), 0);
	ck_assert_ptr_eq(obj, objs[0]);
	ck_assert_uint_eq(uatomic_read(&ring->r->cons_head), 5);
	ck_assert_uint_eq(uatomic_read(&ring->r->prod_head), 7);

	/* B: a get of 1 reaches position 5 and waits; the scan after the
	 * ring is marked stalled holes it; B takes objs[1]. */
	pipes_open(&pb);
	b = fork_worker(blocked_getter, &pb);
	close(pb.ready[1]);
	close(pb.go[0]);
	(void)await_ready(&pb);
	ck_assert_int_eq(write(pb.go[1], "g", 1), 1);
	dt = wait_get_answered(b, pb.ready[0], now(), SR_STALL_SECS, ring,
		&d, "the get behind a bad put", 0);
	printf("get behind a bad put: stalled, repaired, answered in "
		"%.1f ms\n", dt * 1e3);
	/* It stepped over the hole to objs[1]: nothing left, no hole. */
	ck_assert_uint_eq(uatomic_read(&ring->r->cons_head), 7);
	ck_assert_uint_eq(uatomic_read(&ring->r->holes), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), 0);
	await_stderr(&d, "shmpoold: pool 'p': 1 positions of the ring held "
		"what is no object of the pool (a put of a bad pointer); they "
		"are skipped\n", RECLAIM_SECS);
	ck_assert_int_eq(count_logged(&d, "a process died in the middle"),
		0);
	close(pb.ready[0]);
	close(pb.go[1]);
	ck_assert_int_eq(shmpool_detach(pool), 0);
	d_finish(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 15. Out of descriptors, the daemon leaves a connection in the backlog
 * (shmpoold(8)).  One descriptor free is not enough: the connection takes
 * one and the read of its peer's /proc/PID/stat another.  The connection
 * waits, and is served once another closes, or at the next scan once the
 * limit is raised. */

/* pid's two lowest free descriptor numbers, from /proc/PID/fd: where
 * its next two go. */
static void
fd_free_two(pid_t pid, int freefd[2])
{
	unsigned char used[1024] = { 0 };
	struct dirent *de;
	char path[64];
	int fd, k;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
	dir = opendir(path);
	ck_assert_msg(dir != NULL, "%s: %s", path, strerror(errno));
	while ((de = readdir(dir)) != NULL) {
		fd = atoi(de->d_name);
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9' &&
		    fd < (int)sizeof(used))
			used[fd] = 1;
	}
	closedir(dir);
	for (fd = 0, k = 0; k < 2 && fd < (int)sizeof(used); fd++)
		if (!used[fd])
			freefd[k++] = fd;
	ck_assert_int_eq(k, 2);
}

#define PAUSED	"shmpoold: accept: Too many open files; pausing\n"

/* Until the daemon has paused its accepts n more times than it had. */
static void
await_paused(const struct daemon *d, int had, int n)
{
	double deadline = now() + 2;

	while (count_logged(d, PAUSED) < had + n) {
		ck_assert_msg(now() < deadline, "'%s' not logged %d more "
			"times within 2 s; stderr:\n%s", PAUSED, n,
			stderr_tail(d));
		usleep(1000);
	}
}

/*
 * A connection that sends ping to a daemon out of descriptors: it waits,
 * through a scan (the second pause), with no reply to read, and is not
 * reset.  Its descriptor.
 */
static int
ping_waiting(const struct daemon *d, const char *what)
{
	struct pollfd pfd = { .events = POLLIN | POLLRDHUP };
	int had = count_logged(d, PAUSED);

	pfd.fd = conn_open(d->sock);
	ck_assert_int_ge(pfd.fd, 0);
	conn_send(pfd.fd, "ping");
	await_paused(d, had, 2);
	ck_assert_msg(poll(&pfd, 1, 0) == 0, "%s: revents 0x%x, expected "
		"none; stderr:\n%s", what, pfd.revents, stderr_tail(d));
	return pfd.fd;
}

START_TEST(test_accept_out_of_fds)
{
	char reply[REPLY_MAX + 1];
	struct rlimit lim, old;
	struct daemon d;
	int a, b, c, freefd[2];

	d_init(&d, "acceptfd");
	d_start(&d);
	/* a is accepted and answered after every connection before it is
	 * closed (d_wait_ready()'s): nothing closes below it from now. */
	a = conn_open(d.sock);
	ck_assert_int_ge(a, 0);
	ck_assert_int_gt(conn_call(a, "shmpool/1 ping", 14, reply,
		sizeof(reply)), 0);
	ck_assert_prefix(reply, "shmpool/1 ok ");
	/* A soft limit that leaves it exactly one descriptor free. */
	fd_free_two(d.pid, freefd);
	ck_assert_int_eq(prlimit(d.pid, RLIMIT_NOFILE, NULL, &old), 0);
	lim.rlim_cur = (rlim_t)freefd[1];
	lim.rlim_max = old.rlim_max;
	ck_assert_int_eq(prlimit(d.pid, RLIMIT_NOFILE, &lim, NULL), 0);

	/* b waits, unanswered. */
	b = ping_waiting(&d, "a connection to a daemon out of descriptors");
	/* a closes: b is served. */
	close(a);
	ck_assert_int_gt(conn_recv(b, reply, sizeof(reply)), 0);
	ck_assert_prefix(reply, "shmpool/1 ok ");

	/* Out again, with b open: c waits until the limit is raised, and
	 * is served at the next scan. */
	c = ping_waiting(&d, "a second connection out of descriptors");
	ck_assert_int_eq(prlimit(d.pid, RLIMIT_NOFILE, &old, NULL), 0);
	ck_assert_int_gt(conn_recv(c, reply, sizeof(reply)), 0);
	ck_assert_prefix(reply, "shmpool/1 ok ");
	ck_assert_int_eq(count_logged(&d, "dropped"), 0);
	close(b);
	close(c);
	d_finish(&d);
}
END_TEST

static Suite *
daemon_suite(void)
{
	Suite *s = suite_create("daemon");
	TCase *tc = tcase_create("daemon");
	TCase *th = tcase_create("hugepages");
	TCase *tr = tcase_create("stalled");
	TCase *tf = tcase_create("fdlimit");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_create_and_workers);
	tcase_add_test(tc, test_kill_worker);
	tcase_add_test(tc, test_kill_in_put);
	tcase_add_test(tc, test_kill_in_put_ring1);
	tcase_add_test(tc, test_reclaim_past_busy_owners);
	tcase_add_test(tc, test_kill_ring_owner_in_put);
	tcase_add_loop_test(tc, test_kill_stepped, 0,
		(int)(sizeof(stepped_ops) / sizeof(stepped_ops[0])));
	tcase_add_test(tc, test_bad_rings_env);
	tcase_add_test(tc, test_kill_daemon);
	tcase_add_test(tc, test_bad_requests);
	tcase_add_test(tc, test_create_in_background);
	tcase_add_test(tc, test_empty_packet);
	tcase_add_test(tc, test_list_largest_reply);
	tcase_add_test(tc, test_flush_size_zero);
	tcase_add_test(tc, test_attach_out_of_fds);
	tcase_add_test(tc, test_gone_peer_and_long_value);
	tcase_add_test(tc, test_other_version);
	tcase_add_test(tc, test_fake_daemon_replies);
	tcase_add_test(tc, test_cut_while_read);
	tcase_add_test(tc, test_credentials);
	tcase_add_test(tc, test_umask_modes);
	tcase_add_test(tc, test_huge_without_mount);
	tcase_add_test(tc, test_second_daemon);
	tcase_add_test(tc, test_background);
	tcase_add_test(tc, test_destroy);
	tcase_add_test(tc, test_config);
	tcase_add_test(tc, test_reload_keeps_pidfile);
	tcase_add_test(tc, test_reload_checks);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_connection_cap);
	suite_add_tcase(s, tc);

	/* Repairs and limits, each case of its own (CK_RUN_CASE). */
	tcase_set_timeout(tr, 30);
	tcase_add_test(tr, test_stalled_repair);
	tcase_add_test(tr, test_bad_put_repaired);
	suite_add_tcase(s, tr);

	tcase_set_timeout(tf, 30);
	tcase_add_test(tf, test_unreadable_proc_keeps_slot);
	tcase_add_test(tf, test_accept_out_of_fds);
	suite_add_tcase(s, tf);

	tcase_set_timeout(th, 30);
	tcase_add_unchecked_fixture(th, huge_setup, huge_teardown);
	tcase_add_test(th, test_huge_pages);
	suite_add_tcase(s, th);
	return s;
}

int
main(void)
{
	/* A reply to a peer that is gone must not kill this process. */
	signal(SIGPIPE, SIG_IGN);
	/* One ring for the pools the daemons here make: the tests of a
	 * killed put follow the ring's positions (which ring, below). */
	setenv("SHMPOOL_RINGS", "1", 1);
	return tu_run(daemon_suite());
}
