/*
 * main.c - shmpoold: options, configuration, daemonizing, signals and the
 * event loop.  See shmpoold(8).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/magic.h>

#include "proto.h"
#include "shmpoold.h"

struct daemon_env denv;
int epoll_fd = -1;

static int foreground;
static int use_syslog;

struct opts {
	const char *socket;
	const char *config;
	const char *hugetlbfs;
	const char *shm_dir;
	const char *pidfile;
};

void
log_msg(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (use_syslog) {
		vsyslog(prio, fmt, ap);
	} else {
		fputs("shmpoold: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: shmpoold [-f|--foreground] [-s|--socket PATH] "
		"[-c|--config FILE]\n"
		"                [--hugetlbfs DIR|none] [--shm-dir DIR] "
		"[-p|--pidfile FILE]\n"
		"                [-h|--help] [-V|--version]\n");
}

/* The first hugetlbfs mount in /proc/mounts, or "". */
static void
find_hugetlbfs(char *dir, size_t dirsz)
{
	char dev[256], mnt[PATH_MAX], type[64];
	FILE *f = fopen("/proc/mounts", "re");

	dir[0] = '\0';
	if (f == NULL)
		return;
	while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, mnt, type) == 3) {
		if (strcmp(type, "hugetlbfs") == 0) {
			char *s, *d;

			/* Undo /proc/mounts' octal escapes (\040). */
			for (s = d = mnt; *s != '\0'; d++) {
				if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3'
				    && s[2] >= '0' && s[2] <= '7' &&
				    s[3] >= '0' && s[3] <= '7') {
					*d = (char)((s[1] - '0') * 64 +
						(s[2] - '0') * 8 + s[3] - '0');
					s += 4;
				} else {
					*d = *s++;
				}
			}
			*d = '\0';
			/* One whose path a client could not be told is
			 * passed over. */
			if (strlen(mnt) < dirsz && proto_value_ok(mnt)) {
				memcpy(dir, mnt, strlen(mnt) + 1);
				break;
			}
		}
	}
	fclose(f);
}

/*
 * path as an absolute path: itself, or joined to the folder the daemon
 * starts in, in buf (not resolved: a link is read again as a link).  For
 * --config, read again on SIGHUP by a daemon that may work in / by then;
 * path itself when the folder cannot be had (config_load() then says
 * what is wrong with it).
 */
static const char *
path_absolute(const char *path, char *buf, size_t bufsz)
{
	size_t n;

	if (path[0] == '/' || getcwd(buf, bufsz) == NULL)
		return path;
	n = strlen(buf);
	if (snprintf(buf + n, bufsz - n, "/%s", path) >= (int)(bufsz - n))
		return path;
	return buf;
}

/* In err, why folder v of key (hugetlbfs, shm-dir) will not do, named
 * by who set it: the option, the config's line (not 0), or the default. */
static void
dir_error(char *err, size_t errsz, const char *key, int option,
		const struct config *c, unsigned int line, const char *v,
		const char *why)
{
	if (option)
		snprintf(err, errsz, "--%s %.256s: %s", key, v, why);
	else if (line != 0)
		snprintf(err, errsz, "%.400s:%u: %s %.256s: %s", c->file, line,
			key, v, why);
	else
		snprintf(err, errsz, "%s %.256s: %s", key, v, why);
}

/* Whether folder v, given as option --key, can be one: not too long, and
 * a path the protocol can carry (config.c checks the config's). */
static int
dir_option_ok(char *err, size_t errsz, const char *key, const char *v)
{
	if (strlen(v) >= DIR_MAX) {
		snprintf(err, errsz, "--%s: path longer than %d bytes", key,
			DIR_MAX - 1);
		return 0;
	}
	if (!proto_value_ok(v)) {
		snprintf(err, errsz, "--%s '%.256s': " DIR_NOT_CARRIED, key, v);
		return 0;
	}
	return 1;
}

/* Merge options, environment, config and defaults into *env: denv at
 * start, a reload's next one (what the next start would take). */
static int
settle(const struct opts *o, const struct config *c, struct daemon_env *env,
		char *err, size_t errsz)
{
	const char *s, *h;
	struct statfs sfs;
	struct stat st;
	int e;

	memset(env, 0, sizeof(*env));
	s = o->socket != NULL ? o->socket : getenv(PROTO_SOCKET_ENV);
	if (s == NULL || *s == '\0')
		s = c->socket[0] != '\0' ? c->socket : PROTO_SOCKET_DEFAULT;
	if (strlen(s) >= sizeof(env->socket)) {
		snprintf(err, errsz, "socket path '%s' is longer than %zu "
			"bytes", s, sizeof(env->socket) - 1);
		return -1;
	}
	/* --socket and the configuration key were checked already; the
	 * environment's too, here: a daemon that forks works in /. */
	if (s[0] != '/') {
		snprintf(err, errsz, "socket path '%s' (%s) is not an absolute "
			"path", s, PROTO_SOCKET_ENV);
		return -1;
	}
	strcpy(env->socket, s);

	h = o->hugetlbfs != NULL ? o->hugetlbfs :
		c->hugetlbfs[0] != '\0' ? c->hugetlbfs : NULL;
	if (h == NULL) {
		find_hugetlbfs(env->hugetlbfs, sizeof(env->hugetlbfs));
	} else if (strcmp(h, "none") != 0) {
		/* The config's was checked as it was read (set_path()). */
		if (o->hugetlbfs != NULL && !dir_option_ok(err, errsz,
				"hugetlbfs", h))
			return -1;
		if (statfs(h, &sfs) < 0 || sfs.f_type != HUGETLBFS_MAGIC) {
			dir_error(err, errsz, "hugetlbfs", o->hugetlbfs != NULL,
				c, c->hugetlbfs_line, h,
				"not a hugetlbfs mount");
			return -1;
		}
		memcpy(env->hugetlbfs, h, strlen(h) + 1);
	}
	s = o->shm_dir != NULL ? o->shm_dir :
		c->shm_dir[0] != '\0' ? c->shm_dir : SHM_DIR_DEFAULT;
	if (o->shm_dir != NULL && !dir_option_ok(err, errsz, "shm-dir", s))
		return -1;
	e = stat(s, &st) < 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
	if (e != 0) {
		dir_error(err, errsz, "shm-dir", o->shm_dir != NULL, c,
			c->shm_dir[0] != '\0' ? c->shm_dir_line : 0, s,
			strerror(e));
		return -1;
	}
	memcpy(env->shm_dir, s, strlen(s) + 1);
	env->group = c->group_set ? c->group : getegid();
	return 0;
}

/*
 * The pidfile a daemon with options o, config c and env writes: -p's,
 * the config's, or, forked, shmpoold.pid next to the socket (in buf);
 * NULL for none.
 */
static const char *
pidfile_of(const struct opts *o, const struct config *c,
		const struct daemon_env *env, char *buf, size_t bufsz)
{
	const char *slash;

	if (o->pidfile != NULL)
		return o->pidfile;
	if (c->pidfile[0] != '\0') {
		snprintf(buf, bufsz, "%s", c->pidfile);
		return buf;
	}
	if (foreground)
		return NULL;
	/* Next to the socket: two daemons on two sockets do not share
	 * it. */
	slash = strrchr(env->socket, '/');
	snprintf(buf, bufsz, "%.*s/shmpoold.pid", (int)(slash - env->socket),
		env->socket);
	return buf;
}

static int
config_lists(const struct config *c, const char *name)
{
	struct create_req *r;

	cds_list_for_each_entry(r, &c->pools, node)
		if (strcmp(r->name, name) == 0)
			return 1;
	return 0;
}

/*
 * Create the config's pools that do not exist yet; with old (a reload),
 * only those old did not list: a pool the operator destroyed since is not
 * made again.  At start, before the socket serves, one after the other;
 * on a reload, each in the background, as a client's create, so that
 * the daemon goes on answering (failures are logged when they end).
 */
static void
config_pools(const struct config *c, const struct config *old)
{
	struct create_req *r, req;
	struct create_job *j;
	const char *field;
	char err[PATH_MAX + 512];
	int ret;

	cds_list_for_each_entry(r, &c->pools, node) {
		if (pool_find(r->name) != NULL || pool_being_created(r->name) ||
		    (old != NULL && config_lists(old, r->name)))
			continue;
		req = *r;
		if (!req.owner_set)
			req.owner = geteuid();
		if (!req.group_set)
			req.group = denv.group;
		if (old == NULL) {
			ret = pool_create(&req, &field, err, sizeof(err));
		} else {
			ret = pool_create_start(&req, NULL, &j, &field, err,
				sizeof(err));
			if (ret == 0)
				snprintf(j->origin, sizeof(j->origin),
					"%.*s:%u", PATH_MAX - 1, c->file,
					r->line);
		}
		if (ret < 0)
			log_msg(LOG_ERR, "%s:%u: pool '%s' not created: %s",
				c->file, r->line, r->name, err);
	}
}

/* A reload's word on a setting that changes only at the next start. */
static void
reload_later(const char *what, const char *now, const char *next)
{
	if (strcmp(now, next) != 0)
		log_msg(LOG_WARNING, "SIGHUP: %s %s now, %s from the next "
			"start", what, now, next);
}

/*
 * SIGHUP: take the new config (nc) in place of conf, the daemon's
 * options being o, its pidfile pidfile (NULL: none).  A config that the
 * daemon would not start with (settle()) is an error, as one that does
 * not parse: the old one stays.  The socket, the folders and the pidfile
 * that the next start would take, where they differ from today's, are
 * logged, each with both values: whether the file's or an option's.
 */
static void
reload(struct config *conf, struct config *nc, const struct opts *o,
		const char *pidfile)
{
	struct daemon_env next;
	struct config old;
	char err[1024], buf[PATH_MAX];
	const char *np;

	if (settle(o, nc, &next, err, sizeof(err)) < 0) {
		log_msg(LOG_ERR, "SIGHUP: %s; keeping the old config", err);
		return;
	}
	reload_later("socket", denv.socket, next.socket);
	reload_later("hugetlbfs", denv.hugetlbfs[0] != '\0' ?
		denv.hugetlbfs : "none", next.hugetlbfs[0] != '\0' ?
		next.hugetlbfs : "none");
	reload_later("shm-dir", denv.shm_dir, next.shm_dir);
	np = pidfile_of(o, nc, &next, buf, sizeof(buf));
	reload_later("pidfile", pidfile != NULL ? pidfile : "none",
		np != NULL ? np : "none");
	denv.group = next.group;
	config_init(&old);
	config_move(&old, conf);
	config_move(conf, nc);
	config_pools(conf, &old);
	config_free(&old);
	log_msg(LOG_INFO, "SIGHUP: %s re-read", conf->file);
}

/* Lock the socket's lock file path (the socket's path and ".lock"). */
static int
lock_socket(const char *path, int *lockfd, char *err, size_t errsz)
{
	char buf[32];
	ssize_t n;
	int fd;

	for (;;) {
		struct stat a, b;

		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			snprintf(err, errsz, "cannot open %s: %s", path,
				strerror(errno));
			return -1;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			n = pread(fd, buf, sizeof(buf) - 1, 0);
			buf[n > 0 ? n : 0] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			snprintf(err, errsz, "another shmpoold (pid %s) is "
				"serving %s", buf[0] != '\0' ? buf : "unknown",
				denv.socket);
			close(fd);
			return -1;
		}
		/* A daemon that was stopping may have removed the file we
		 * locked: the lock counts only on the file at path. */
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			break;
		close(fd);
	}
	/* Readable by all whatever the umask, as the pidfile and the index
	 * are (a file of another owner's that we may write keeps its
	 * mode). */
	fchmod(fd, 0644);
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
		snprintf(err, errsz, "cannot write %s: %s", path,
			strerror(errno));
		/* Locked: the file is ours to remove. */
		unlink(path);
		close(fd);
		return -1;
	}
	*lockfd = fd;
	return 0;
}

/*
 * mkdir(2) takes the umask off the mode: a folder made here is 0755
 * whatever the daemon's umask, so that anyone can reach the socket in
 * it (shmpoold(8)).
 */
static int
mkdir_0755(const char *dir)
{
	if (mkdir(dir, 0755) < 0)
		return -1;
	chmod(dir, 0755);
	return 0;
}

static void
mkdir_parent(const char *path)
{
	char dir[PATH_MAX], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return;
	*slash = '\0';
	if (mkdir_0755(dir) < 0 && errno == ENOENT) {
		mkdir_parent(dir);
		mkdir_0755(dir);
	}
}

/* Tags dropped while the event loop may still hold their events. */
static CDS_LIST_HEAD(ev_graveyard);

void
ev_drop(struct ev_tag *t)
{
	epoll_ctl(epoll_fd, EPOLL_CTL_DEL, t->fd, NULL);
	close(t->fd);
	t->fd = -1;
	t->dead = 1;
	cds_list_add(&t->dead_node, &ev_graveyard);
}

/* After a batch of events: free what was dropped during it. */
void
ev_reap(void)
{
	struct ev_tag *t, *tmp;

	cds_list_for_each_entry_safe(t, tmp, &ev_graveyard, dead_node) {
		cds_list_del(&t->dead_node);
		if (t->kind == EV_CLIENT)
			client_free(t);
		else
			watch_free(t);
	}
}

int
ev_add(struct ev_tag *t)
{
	struct epoll_event ev;

	ev.events = EPOLLIN;
	ev.data.ptr = t;
	return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, t->fd, &ev);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "hugetlbfs", required_argument, NULL, 'H' },
		{ "shm-dir", required_argument, NULL, 'D' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct ev_tag sig_tag = { .kind = EV_SIGNAL, .fd = -1 };
	struct ev_tag timer_tag = { .kind = EV_TIMER, .fd = -1 };
	struct itimerspec its = {
		.it_interval = { 0, SCAN_INTERVAL_MS * 1000000L },
		.it_value = { 0, SCAN_INTERVAL_MS * 1000000L },
	};
	static char config_abs[PATH_MAX];
	/* Static: it lasts as long as the process, whichever way main()
	 * returns (the parent of a daemon that forks, a start that fails),
	 * as the leak checker of the sanitizer builds sees it. */
	static struct config conf;
	struct opts o = { 0 };
	const char *pidfile = NULL;
	/* The pidfile's own copy: a reload replaces conf, and the file to
	 * remove at the end is the one written at the start. */
	char pidpath[PATH_MAX];
	char err[1024], lockpath[sizeof(denv.socket) + 8];
	int opt, ready[2] = { -1, -1 }, lockfd = -1, running = 1, code = 0;
	sigset_t mask;

	while ((opt = getopt_long(argc, argv, "fs:c:p:hV", longopts,
			NULL)) != -1) {
		switch (opt) {
		case 'f':
			foreground = 1;
			break;
		case 's':
			o.socket = optarg;
			break;
		case 'c':
			o.config = path_absolute(optarg, config_abs,
				sizeof(config_abs));
			break;
		case 'H':
			o.hugetlbfs = optarg;
			break;
		case 'D':
			o.shm_dir = optarg;
			break;
		case 'p':
			o.pidfile = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("shmpoold %s (protocol %d)\n", PACKAGE_VERSION,
				PROTO_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		/* Each value as it is given: a relative path is refused
		 * even when a later one of the same option takes its place. */
		if ((opt == 's' || opt == 'H' || opt == 'D' || opt == 'p') &&
		    optarg[0] != '/' &&
		    (opt != 'H' || strcmp(optarg, "none") != 0)) {
			fprintf(stderr, "shmpoold: paths must be absolute\n");
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "shmpoold: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}

	/* The library's rings need every process on them registered for
	 * the others' fences (libshmpool/ring.h, ring ownership). */
	if (ring_own_unfenced != 0) {
		fprintf(stderr, "shmpoold: membarrier(2) registration "
			"(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) failed: "
			"%s; shmpoold needs it (Linux 4.16 or later, not "
			"denied by a seccomp filter)\n",
			strerror(ring_own_unfenced));
		return 1;
	}
	config_init(&conf);
	if (o.config != NULL || access(CONFIG_FILE_DEFAULT, F_OK) == 0) {
		if (config_load(o.config != NULL ? o.config :
				CONFIG_FILE_DEFAULT, &conf, err,
				sizeof(err)) < 0) {
			fprintf(stderr, "shmpoold: %s\n", err);
			return 1;
		}
	}
	if (settle(&o, &conf, &denv, err, sizeof(err)) < 0) {
		fprintf(stderr, "shmpoold: %s\n", err);
		return 1;
	}
	pidfile = pidfile_of(&o, &conf, &denv, pidpath,
		sizeof(pidpath));

	if (!foreground) {
		pid_t pid;
		char c;

		if (pipe2(ready, O_CLOEXEC) < 0) {
			perror("shmpoold: pipe");
			return 1;
		}
		pid = fork();
		if (pid < 0) {
			perror("shmpoold: fork");
			return 1;
		}
		if (pid > 0) {
			int status;

			/* Return once the daemon serves, or failed. */
			close(ready[1]);
			if (read(ready[0], &c, 1) == 1)
				return 0;
			waitpid(pid, &status, 0);
			return 1;
		}
		close(ready[0]);
		setsid();
	}

	signal(SIGPIPE, SIG_IGN);
	if (pool_sigbus_init() < 0) {
		fprintf(stderr, "shmpoold: SIGBUS handler: %s\n",
			strerror(errno));
		return 1;
	}
	/* A pidfd per attached process, a descriptor per client. */
	{
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	sig_tag.fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	timer_tag.fd = timerfd_create(CLOCK_MONOTONIC,
		TFD_NONBLOCK | TFD_CLOEXEC);
	if (epoll_fd < 0 || sig_tag.fd < 0 || timer_tag.fd < 0 ||
	    ev_add(&sig_tag) < 0 ||
	    ev_add(&timer_tag) < 0 ||
	    timerfd_settime(timer_tag.fd, 0, &its, NULL) < 0) {
		fprintf(stderr, "shmpoold: event setup: %s\n",
			strerror(errno));
		return 1;
	}

	mkdir_parent(denv.socket);
	snprintf(lockpath, sizeof(lockpath), "%s.lock", denv.socket);
	if (lock_socket(lockpath, &lockfd, err, sizeof(err)) < 0) {
		fprintf(stderr, "shmpoold: %s\n", err);
		return 1;
	}
	if (server_start(denv.socket, err, sizeof(err)) < 0) {
		fprintf(stderr, "shmpoold: %s\n", err);
		unlink(lockpath);
		return 1;
	}
	if (!foreground) {
		openlog("shmpoold", LOG_PID, LOG_DAEMON);
		use_syslog = 1;
	}
	/* Before the config's pools: a start that fails here has created
	 * none. */
	if (pidfile != NULL) {
		FILE *f;

		mkdir_parent(pidfile);
		f = fopen(pidfile, "we");
		if (f != NULL)
			fchmod(fileno(f), 0644);	/* as the lock file */
		if (f == NULL || fprintf(f, "%ld\n", (long)getpid()) < 0 ||
		    fclose(f) != 0) {
			fprintf(stderr, "shmpoold: cannot write %s: %s\n",
				pidfile, strerror(errno));
			/* Made, but not whole. */
			if (f != NULL)
				unlink(pidfile);
			server_stop(denv.socket);
			unlink(lockpath);
			return 1;
		}
	}
	pools_adopt();
	config_pools(&conf, NULL);
	if (!foreground) {
		int null = open("/dev/null", O_RDWR);

		/* A failed chdir, and a command that started us and is gone
		 * (killed while it waited): we do not serve, and the
		 * socket, lock file and pidfile go as at SIGTERM.  The
		 * chdir first, so that a command told we serve does. */
		if (chdir("/") < 0) {
			log_msg(LOG_ERR, "chdir /: %s: not serving",
				strerror(errno));
			running = 0;
			code = 1;
		} else if (write(ready[1], "1", 1) != 1) {
			log_msg(LOG_ERR, "the command that started it is gone "
				"(%s): not serving", strerror(errno));
			running = 0;
			code = 1;
		}
		close(ready[1]);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			if (null > 2)
				close(null);
		}
	}
	if (running)
		log_msg(LOG_INFO, "serving %s (hugetlbfs %s, shm %s)",
			denv.socket, denv.hugetlbfs[0] != '\0' ?
			denv.hugetlbfs : "none", denv.shm_dir);

	while (running) {
		struct epoll_event evs[32];
		int i, n;

		n = epoll_wait(epoll_fd, evs, 32, -1);
		if (n < 0 && errno != EINTR) {
			log_msg(LOG_ERR, "epoll_wait: %s", strerror(errno));
			break;
		}
		for (i = 0; i < n; i++) {
			struct ev_tag *t = evs[i].data.ptr;
			struct signalfd_siginfo si;
			uint64_t ticks;

			if (t->dead)
				continue;
			switch (t->kind) {
			case EV_SIGNAL:
				if (read(t->fd, &si, sizeof(si)) !=
						sizeof(si))
					break;
				if (si.ssi_signo == SIGHUP) {
					struct config nc;

					config_init(&nc);
					if (conf.file[0] == '\0') {
						log_msg(LOG_INFO, "SIGHUP: no "
							"config file");
					} else if (config_load(conf.file, &nc,
							err, sizeof(err)) < 0) {
						log_msg(LOG_ERR, "SIGHUP: %s; "
							"keeping the old "
							"config", err);
					} else {
						reload(&conf, &nc, &o,
							pidfile);
					}
					/* What was not taken (a reload
					 * takes it all). */
					config_free(&nc);
				} else {
					running = 0;
				}
				break;
			case EV_TIMER:
				if (read(t->fd, &ticks, sizeof(ticks)) > 0) {
					pools_scan();
					watch_prune();
					server_tick();
				}
				break;
			case EV_PIDFD:
				watch_exited(t);
				break;
			default:
				server_event(t, evs[i].events);
				break;
			}
		}
		ev_reap();
	}

	log_msg(LOG_INFO, "shutting down%s", conf.destroy_on_exit ?
		", destroying every pool (destroy-on-exit)" : "");
	server_jobs_finish();
	server_stop(denv.socket);
	ev_reap();
	if (conf.destroy_on_exit)
		pools_destroy_all();
	pools_release();
	close(sig_tag.fd);
	close(timer_tag.fd);
	close(epoll_fd);
	if (pidfile != NULL)
		unlink(pidfile);
	unlink(lockpath);
	close(lockfd);
	config_free(&conf);
	return code;
}
