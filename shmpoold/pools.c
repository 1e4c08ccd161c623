/*
 * pools.c - the daemon's pools: create, adopt, destroy, and the slots of
 * every attached process, watched with a pidfd and reclaimed when it exits.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "shmpoold.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open	434
#endif

CDS_LIST_HEAD(pool_list);

/* One watched process: its pidfd becomes readable when it exits. */
struct watch {
	struct ev_tag tag;		/* EV_PIDFD */
	pid_t pid;
	uint64_t start_time;
	struct cds_list_head node;
};
static CDS_LIST_HEAD(watch_list);

struct pool *
pool_find(const char *name)
{
	struct pool *p;

	cds_list_for_each_entry(p, &pool_list, node)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

static struct watch *
watch_find(pid_t pid, uint64_t start_time)
{
	struct watch *w;

	cds_list_for_each_entry(w, &watch_list, node)
		if (w->pid == pid && w->start_time == start_time)
			return w;
	return NULL;
}

/* Is there a process of that pid (whoever's)? */
static int
pid_taken(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

/*
 * Has the watched process pid (started at start_time) exited, reaped or
 * not?  Its /proc entry stays while it is a zombie, but its pidfd is
 * readable from its exit on; the event loop reclaims its slots when it
 * gets to that event.
 */
static int
watch_proc_exited(pid_t pid, uint64_t start_time)
{
	struct watch *w = watch_find(pid, start_time);
	struct pollfd pfd;

	if (w == NULL)
		return 0;
	pfd.fd = w->tag.fd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	return poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN);
}

/*
 * Is process pid, started at start_time (0: whenever), still there?  1
 * yes; 0 gone, or another process under its pid; a negative errno when
 * its /proc/PID/stat cannot be read now (no descriptor left, no memory),
 * which says nothing either way.
 */
static int
proc_alive(pid_t pid, uint64_t start_time)
{
	uint64_t t;
	int ret = seg_proc_start_time(pid, &t);

	if (ret == -ENOENT || ret == -ESRCH)
		return 0;
	if (ret < 0)
		return ret;
	return start_time == 0 || t == start_time;
}

/*
 * Watch process pid, which started at start_time (0: unknown).  -ESRCH
 * when it is gone, or when pid now names another process.
 */
static int
watch_add(pid_t pid, uint64_t start_time)
{
	struct watch *w;
	int fd, ret;

	if (watch_find(pid, start_time) != NULL)
		return 0;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		if (errno == ESRCH)
			return -ESRCH;
		static int logged;
		int err = errno;

		if (!logged++)
			log_msg(LOG_ERR, "pidfd_open(%ld): %s; processes "
				"cannot be watched", (long)pid, strerror(err));
		return -err;
	}
	/* The pidfd pins the process: if it has the owner's start time
	 * now, the pidfd is the owner's.  A /proc that cannot be read now
	 * says nothing: the slot is looked at again at the next scan. */
	ret = proc_alive(pid, start_time);
	if (ret == 0) {
		close(fd);
		return -ESRCH;
	}
	if (ret < 0) {
		static int logged;

		if (!logged++)
			log_msg(LOG_ERR, "cannot read /proc/%ld/stat: %s; its "
				"slots are looked at again later", (long)pid,
				strerror(-ret));
		close(fd);
		return ret;
	}
	w = calloc(1, sizeof(*w));
	if (w == NULL) {
		close(fd);
		return -ENOMEM;
	}
	w->tag.kind = EV_PIDFD;
	w->tag.fd = fd;
	w->pid = pid;
	w->start_time = start_time;
	if (ev_add(&w->tag) < 0) {
		log_msg(LOG_ERR, "epoll_ctl(pidfd): %s", strerror(errno));
		close(fd);
		free(w);
		return -ENOMEM;
	}
	cds_list_add(&w->node, &watch_list);
	return 0;
}

static void
watch_del(struct watch *w)
{
	cds_list_del(&w->node);
	ev_drop(&w->tag);
}

/* A dropped watch, after the batch (ev_reap()). */
void
watch_free(struct ev_tag *tag)
{
	free(caa_container_of(tag, struct watch, tag));
}

/* Is p's segment still whole?  Someone who may write it could cut it,
 * also while the daemon reads it (pool_sigbus_init()). */
int
pool_intact(struct pool *p)
{
	struct stat st;

	if (p->broken)
		return 0;
	if (p->cut || fstat(p->fd, &st) < 0 ||
			(uint64_t)st.st_size < p->h->map_size) {
		p->broken = 1;
		log_msg(LOG_ERR, "pool '%s': %s was truncated; the daemon no "
			"longer touches it (destroy it)", p->name, p->path);
		return 0;
	}
	return 1;
}

/*
 * A segment cut short between pool_intact()'s look at its size and the
 * loads that follow: a load past its new end takes SIGBUS (BUS_ADRERR),
 * which would kill the daemon, and with it every reclaim.  The handler
 * maps a page of zeros of the daemon's own where the page cut off was,
 * so that the load completes, and marks the pool, which pool_intact()
 * then finds broken: what the daemon does with the zeros meanwhile stays
 * in its own pages.  The page of zeros is of the first size that maps
 * over the mapping's own (one base page; a huge page's size fails, as
 * part of one, until its own size is tried).  The pool is marked on the
 * thread that reads the pools only (the list is that thread's); a
 * segment not yet in it (being opened, or built by a create's thread) is
 * found cut by its size.  Any other SIGBUS is what it would be without
 * the handler.
 */
static pid_t pool_tid;
static uint64_t pool_page_sizes[] = { 4096, UINT64_C(1) << 21,
	UINT64_C(1) << 30 };

static int
zero_page(uintptr_t a, uint64_t size)
{
	void *page = (void *)(a & ~(uintptr_t)(size - 1));

	/* A size that does not divide the mapping's pages (part of a huge
	 * page) fails and maps nothing. */
	return mmap(page, size, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED;
}

static void
pool_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	struct sigaction sa;
	struct pool *p;
	unsigned int i;
	int err = errno;

	(void)sig;
	(void)uc;
	if (si->si_code == BUS_ADRERR) {
		if ((pid_t)syscall(SYS_gettid) == pool_tid)
			cds_list_for_each_entry(p, &pool_list, node)
				if (a - (uintptr_t)p->h->hdr < p->h->map_size)
					p->cut = 1;
		for (i = 0; i < sizeof(pool_page_sizes) /
				sizeof(pool_page_sizes[0]); i++)
			if (zero_page(a, pool_page_sizes[i]))
				goto out;
	}
	/* Not a segment's page: the load faults again, and kills. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(SIGBUS, &sa, NULL);
out:
	errno = err;
}

/* Called by the thread that reads the pools, before any is opened. */
int
pool_sigbus_init(void)
{
	struct sigaction sa;
	long ps = sysconf(_SC_PAGESIZE);

	pool_tid = (pid_t)syscall(SYS_gettid);
	if (ps > 0)
		pool_page_sizes[0] = (uint64_t)ps;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = pool_on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL);
}

/*
 * Make holes of the ring positions that dead producers claimed and never
 * wrote, and of those a put of what is no object of the pool spoiled
 * (ring_repair()), when a slot is reclaimed.  A position that a live
 * record still covers is left: the record of a put that lost its claim to
 * the dead one, rewritten at its next try, can cover it for a moment (or
 * for long, if that process is stopped just then).  The gets that wait
 * for such a position mark the ring stalled, and the scan repairs a
 * stalled ring again.
 */
static int
pool_repair(struct pool *p)
{
	struct ring_repair_stats rst;
	uint64_t holes = 0, spoiled = 0;
	uint32_t i;
	int ret = 0;

	/* Each ring against the slots' records of their puts to it. */
	for (i = 0; i < p->h->nb_rings; i++) {
		if (ring_repair(&p->h->rings[i], i,
				&p->h->slots[0].cache.ring_op,
				&p->h->slots[0].cache.ring_op_ring,
				sizeof(struct seg_slot), p->h->nb_slots,
				&rst) < 0) {
			if (!p->repair_logged++)
				log_msg(LOG_ERR, "pool '%s': the heads of ring "
					"%u are corrupt; it cannot be repaired",
					p->name, i);
			ret = -EBADMSG;
			continue;
		}
		holes += rst.holes - rst.spoiled;
		spoiled += rst.spoiled;
	}
	if (ret < 0)
		return ret;
	p->repair_logged = 0;
	if (holes != 0)
		log_msg(LOG_WARNING, "pool '%s': a process died in the middle "
			"of a put to the ring; %" PRIu64 " positions it had "
			"claimed are skipped (their objects are lost with it)",
			p->name, holes);
	if (spoiled != 0)
		log_msg(LOG_WARNING, "pool '%s': %" PRIu64 " positions of the "
			"ring held what is no object of the pool (a put of a "
			"bad pointer); they are skipped", p->name, spoiled);
	return 0;
}

/*
 * Take slot i of p back from its owner pid: its objects to the ring, its
 * counts to the retired totals.  The owner is dead, unless it asked
 * (detach, live == 1).  What the slot holds came from a process that may
 * have been killed anywhere, or been malicious: the cache is checked
 * before a single reference goes to the ring.
 */
static int
reclaim(struct pool *p, uint32_t i, pid_t pid, int live, const char *why)
{
	struct seg_slot *s = &p->h->slots[i];
	struct shmpool_cache *c = &s->cache;
	uint64_t claimed = SLOT_OWNER(SEG_SLOT_CLAIMED, pid);
	uint64_t releasing = SLOT_OWNER(SEG_SLOT_RELEASING, pid), cur;
	uint32_t len, k;
	uint32_t limit = SHMPOOL_CACHE_OBJS_MAX;
	int ret;

	if (!pool_intact(p))
		return -EIO;
	/* The slot is ours before anything of it is touched: it may have
	 * been given back, and claimed by another process, since its owner
	 * was looked at. */
	cur = uatomic_cmpxchg(&s->owner, claimed, releasing);
	if (cur != claimed && cur != releasing)
		return -ESRCH;
	if (!live) {
		/* The owner is gone: what its record says it was writing
		 * to the ring is finished now, as what every other dead
		 * process left. */
		uatomic_set(&c->ring_op, 0);
		cache_change_finish(c);
		ret = pool_repair(p);
		if (ret < 0)
			return ret;
	}
	/* The slot's number, which the flush below claims as (its owner
	 * word, libshmpool/ring.h), as the slot's place says. */
	if (uatomic_read(&c->slot) != i) {
		log_msg(LOG_ERR, "pool '%s' slot %u of pid %ld: its cache "
			"names slot %u; set back", p->name, i, (long)pid,
			uatomic_read(&c->slot));
		uatomic_set(&c->slot, i);
	}
	len = cache_len_read(c);
	if (len > limit || len > p->h->obj_count)
		goto bad;
	for (k = 0; k < len; k++)
		if (c->objs[k] % p->h->elt_size != 0 ||
		    c->objs[k] / p->h->elt_size >= p->h->obj_count)
			goto bad;
	/* Not waiting for a ring's owner in the middle of a claim: it may
	 * be stopped, or dead and reclaimed only after this slot.  A dead
	 * owner's slot stays RELEASING, and the scan tries again (said
	 * once); a live owner's is its own again, as before it asked. */
	ret = slot_retire(p->h, s, pid, 0);
	if (ret == -EAGAIN && live && cur == claimed) {
		uatomic_cmpxchg(&s->owner, releasing, claimed);
		log_msg(LOG_INFO, "pool '%s' slot %u of pid %ld: a ring's "
			"owner is in the middle of a claim; the slot stays "
			"its owner's, with its %u cached objects", p->name, i,
			(long)pid, len);
	} else if (ret == -EAGAIN && !live && cur == claimed)
		log_msg(LOG_INFO, "pool '%s' slot %u of pid %ld: a ring's "
			"owner is in the middle of a claim; its %u cached "
			"objects go back at a later scan", p->name, i,
			(long)pid, len);
	else if (ret == -ENOSPC)
		log_msg(LOG_ERR, "pool '%s' slot %u: the ring has no room for "
			"%u cached objects (some object was put twice); the "
			"slot keeps them", p->name, i, len);
	else if (ret == 0)
		log_msg(LOG_INFO, "pool '%s': slot %u of pid %ld reclaimed "
			"(%s), %u cached objects back in the ring", p->name,
			i, (long)pid, why, len);
	return ret;
bad:
	log_msg(LOG_ERR, "pool '%s' slot %u of pid %ld: cache length %u or "
		"an object reference is out of range; its cached objects are "
		"lost", p->name, i, (long)pid, len);
	cache_forget(c);
	return slot_retire(p->h, s, pid, 0);
}

/* The slot's owner, if claimed (or being released); 0 if free. */
static inline pid_t
slot_owner(const struct seg_slot *s, uint64_t *start_time)
{
	uint64_t o = uatomic_read(&s->owner);

	*start_time = 0;
	if (SLOT_STATE(o) == SEG_SLOT_FREE)
		return 0;
	cmm_smp_rmb();
	*start_time = uatomic_read(&s->start_time);
	return SLOT_PID(o);
}

void
watch_exited(struct ev_tag *tag)
{
	struct watch *w = caa_container_of(tag, struct watch, tag);
	struct pool *p;
	uint32_t i;

	cds_list_for_each_entry(p, &pool_list, node) {
		if (!pool_intact(p))
			continue;
		for (i = 0; i < p->h->nb_slots; i++) {
			uint64_t t;

			if (slot_owner(&p->h->slots[i], &t) == w->pid &&
			    t == w->start_time)
				reclaim(p, i, w->pid, 0, "process exited");
		}
	}
	/* A reclaim put off now is done by the scan, which finds the
	 * owner gone. */
	watch_del(w);
}

/* Drop the watches that no slot refers to any more. */
void
watch_prune(void)
{
	struct watch *w, *tmp;
	struct pool *p;
	uint32_t i;

	cds_list_for_each_entry_safe(w, tmp, &watch_list, node) {
		int used = 0;

		cds_list_for_each_entry(p, &pool_list, node) {
			if (p->broken)
				continue;
			for (i = 0; i < p->h->nb_slots && !used; i++) {
				uint64_t t;

				used = slot_owner(&p->h->slots[i], &t) ==
					w->pid && t == w->start_time;
			}
			if (used)
				break;
		}
		if (!used)
			watch_del(w);
	}
}

/*
 * Look at every slot: a claimed slot whose owner is not watched yet (it
 * claimed without the daemon, or the daemon restarted) gets a watch, or
 * is reclaimed at once when its owner is gone.
 */
void
pools_scan(void)
{
	struct pool *p;
	uint32_t i;
	int stalled;

	cds_list_for_each_entry(p, &pool_list, node) {
		if (!pool_intact(p))
			continue;
		/* A get waited long: the repair at a reclaim left
		 * something, or a shmpoold before this one died. */
		stalled = 0;
		for (i = 0; i < p->h->nb_rings; i++) {
			if (uatomic_read(&p->h->rings[i].r->stalled) == 0)
				continue;
			uatomic_set(&p->h->rings[i].r->stalled, 0);
			stalled = 1;
		}
		if (stalled)
			pool_repair(p);
		for (i = 0; i < p->h->nb_slots; i++) {
			uint64_t t = 0;
			pid_t pid = slot_owner(&p->h->slots[i], &t);

			if (pid == 0)
				continue;
			if (pid < 0) {
				/* Only a corrupted slot has that. */
				reclaim(p, i, pid, 0, "no owner");
			} else if (t == 0) {
				/* The claim is not complete: wait, unless
				 * the claimer is gone. */
				if (!pid_taken(pid))
					reclaim(p, i, pid, 0, "claimer gone");
			} else if (watch_find(pid, t) == NULL) {
				int ret = watch_add(pid, t);

				/* Its pid free, or another process's now
				 * (which started at another time). */
				if (ret == -ESRCH)
					reclaim(p, i, pid, 0, pid_taken(pid) ?
						"owner gone, its pid now "
						"another process's" :
						"owner gone");
				else if (ret == 0)
					log_msg(LOG_INFO, "pool '%s': slot %u "
						"of pid %ld, claimed without "
						"shmpoold or before it "
						"started, watched", p->name,
						i, (long)pid);
			}
		}
	}
}

static int
pool_add(const char *path, const char *name, struct pool **pp)
{
	struct pool *p;
	int ret;

	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	/* Never follow a link: whoever may write the folder could point
	 * it at any file, which attach would then hand out. */
	p->fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		O_CLOEXEC);
	if (p->fd < 0) {
		ret = seterr(-errno, "cannot open %s: %s", path,
			strerror(errno));
		free(p);
		return ret;
	}
	ret = pool_open_fd(p->fd, path, name, &p->h);
	if (ret < 0) {
		close(p->fd);
		free(p);
		return ret;
	}
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->path, sizeof(p->path), "%s", path);
	cds_list_add_tail(&p->node, &pool_list);
	if (pp != NULL)
		*pp = p;
	return 0;
}

static void
pool_free(struct pool *p)
{
	cds_list_del(&p->node);
	pool_close(p->h);
	close(p->fd);
	free(p);
}

/* A segment being built by a process that is gone: remove it. */
static void
remove_stale_tmp(const char *dir, const char *file)
{
	const char *dot = strrchr(file, '.');
	char path[PATH_MAX];
	const char *q;
	long pid;

	/* ".shmpool-new.NAME.PID.N": PID is the field before the last. */
	for (q = dot - 1; dot != NULL && q > file && *q != '.'; q--)
		;
	if (dot == NULL || q <= file)
		return;
	pid = strtol(q + 1, NULL, 10);
	if (pid <= 0 || pid == (long)getpid() ||
	    (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (unlink(path) == 0)
		log_msg(LOG_INFO, "removed %s, left by a creation that did "
			"not finish", path);
}

/* Adopt the segments of one folder. */
static void
adopt_dir(const char *dir)
{
	struct dirent *de;
	DIR *d;

	if (dir[0] == '\0')
		return;
	d = opendir(dir);
	if (d == NULL) {
		log_msg(LOG_WARNING, "cannot read %s: %s", dir,
			strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL) {
		const char *name = de->d_name + strlen("shmpool.");
		char path[PATH_MAX];
		int ret;

		if (strncmp(de->d_name, SEG_TMP_PREFIX,
				strlen(SEG_TMP_PREFIX)) == 0) {
			remove_stale_tmp(dir, de->d_name);
			continue;
		}
		if (strncmp(de->d_name, "shmpool.", 8) != 0 ||
		    !shmpool_name_valid(name))
			continue;
		if (pool_find(name) != NULL) {
			log_msg(LOG_WARNING, "%s/%s: pool '%s' is already "
				"adopted from another folder; ignored", dir,
				de->d_name, name);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		ret = pool_add(path, name, NULL);
		if (ret < 0)
			log_msg(LOG_WARNING, "%s: not adopted: %s", path,
				shmpool_last_error()[0] != '\0' ?
				shmpool_last_error() : strerror(-ret));
		else
			log_msg(LOG_INFO, "pool '%s' adopted from %s", name,
				path);
	}
	closedir(d);
}

/*
 * SOCKET.pools: one line "NAME PATH" per pool, for shmpoolctl dump to find
 * the segments while shmpoold is down.  Replaced whole on every change.
 */
void
pools_index_write(void)
{
	char path[sizeof(denv.socket) + 8], tmp[sizeof(denv.socket) + 12];
	struct pool *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s.pools", denv.socket);
	snprintf(tmp, sizeof(tmp), "%s.pools~", denv.socket);
	f = fopen(tmp, "we");
	if (f == NULL) {
		log_msg(LOG_WARNING, "cannot write %s: %s", tmp,
			strerror(errno));
		return;
	}
	/* For shmpoolctl dump by anyone, whatever the daemon's umask. */
	fchmod(fileno(f), 0644);
	fprintf(f, "# The pools of the shmpoold serving %s: name, segment.\n",
		denv.socket);
	cds_list_for_each_entry(p, &pool_list, node)
		fprintf(f, "%s %s\n", p->name, p->path);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		log_msg(LOG_WARNING, "cannot write %s: %s", path,
			strerror(errno));
		unlink(tmp);
	}
}

int
pools_adopt(void)
{
	adopt_dir(denv.hugetlbfs);
	adopt_dir(denv.shm_dir);
	pools_index_write();
	pools_scan();
	return 0;
}

static int
file_exists(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	if (dir[0] == '\0')
		return 0;
	snprintf(path, sizeof(path), "%s/shmpool.%s", dir, name);
	return lstat(path, &st) == 0;
}

/* Creations whose segment a thread is building (pool_create_start()). */
static CDS_LIST_HEAD(job_list);

/*
 * Before a creation builds anything: the name free (no pool, no file, no
 * creation under way) and, for huge=require, a hugetlbfs to build in.
 */
static int
create_check(const struct create_req *r, const char **field, char *err,
		size_t errsz)
{
	const char *dir;

	*field = NULL;
	if (pool_find(r->name) != NULL) {
		*field = "name";
		snprintf(err, errsz, "pool '%s' already exists", r->name);
		return -EEXIST;
	}
	if (pool_being_created(r->name)) {
		*field = "name";
		snprintf(err, errsz, "pool '%s' is being created", r->name);
		return -EEXIST;
	}
	/* A file of the name that is no pool of ours (one made without
	 * the daemon, or one it did not adopt): not a pool that will
	 * come, which create --if-not-exists would wait for. */
	dir = file_exists(denv.hugetlbfs, r->name) ? denv.hugetlbfs :
		file_exists(denv.shm_dir, r->name) ? denv.shm_dir : NULL;
	if (dir != NULL) {
		*field = "path";
		snprintf(err, errsz, "pool '%s': %s/shmpool.%s is in the way, "
			"a file shmpoold does not serve (remove it, or restart "
			"shmpoold to adopt it)", r->name, dir, r->name);
		return -EEXIST;
	}
	if (r->policy == SEG_POLICY_REQUIRE && denv.hugetlbfs[0] == '\0') {
		snprintf(err, errsz, "pool '%s': huge=require, but shmpoold "
			"has no hugetlbfs mount (see --hugetlbfs)", r->name);
		return -ENOMEM;
	}
	return 0;
}

/* Build j's segment in dir (create_build()): seg_create()'s result. */
static int
create_build_in(struct create_job *j, const char *dir)
{
	const struct create_req *r = &j->req;

	snprintf(j->path, sizeof(j->path), "%s/shmpool.%s", dir, r->name);
	return seg_create(j->path, r->name, &r->params, r->mode, r->owner,
		r->group, (uint32_t)r->policy << SEG_FLAG_POLICY_SHIFT);
}

/*
 * Build the segment: on hugetlbfs when the policy allows and the pages
 * are there, else in shm_dir.  Touches nothing but j and the files, so
 * that it can run in a thread of its own; the result is in j.
 */
static void
create_build(struct create_job *j)
{
	const struct create_req *r = &j->req;
	int ret;

	j->note[0] = '\0';
	if (r->policy != SEG_POLICY_NEVER && denv.hugetlbfs[0] != '\0') {
		ret = create_build_in(j, denv.hugetlbfs);
		if (ret == 0) {
			j->ret = 0;
			return;
		}
		if (ret != -ENOSPC && ret != -ENOMEM) {
			snprintf(j->err, sizeof(j->err), "%s",
				shmpool_last_error());
			j->ret = ret;
			return;
		}
		if (r->policy == SEG_POLICY_REQUIRE) {
			snprintf(j->err, sizeof(j->err), "pool '%s': "
				"huge=require, but %s has not enough free huge "
				"pages for it (%s)", r->name, denv.hugetlbfs,
				shmpool_last_error());
			j->ret = -ENOMEM;
			return;
		}
		snprintf(j->note, sizeof(j->note), "pool '%s': no huge pages "
			"(%s); using %s", r->name, shmpool_last_error(),
			denv.shm_dir);
	}
	ret = create_build_in(j, denv.shm_dir);
	if (ret < 0)
		snprintf(j->err, sizeof(j->err), "%s", shmpool_last_error());
	j->ret = ret == -ENOSPC ? -ENOMEM : ret;
}

/* The segment built: the pool in the list (the daemon's thread). */
static int
create_end(struct create_job *j, struct pool **pp, char *err, size_t errsz)
{
	const struct create_req *r = &j->req;
	struct pool *p;
	int ret;

	if (j->note[0] != '\0')
		log_msg(LOG_INFO, "%s", j->note);
	if (j->ret < 0) {
		snprintf(err, errsz, "%s", j->err);
		return j->ret;
	}
	ret = pool_add(j->path, r->name, &p);
	if (ret < 0) {
		snprintf(err, errsz, "pool '%s': %s", r->name,
			shmpool_last_error());
		unlink(j->path);
		return ret;
	}
	pools_index_write();
	log_msg(LOG_INFO, "pool '%s' created in %s: %u objects of %u bytes, "
		"cache %u, %u slots", r->name, j->path, r->params.obj_count,
		r->params.obj_size, r->params.cache_size, r->params.nb_slots);
	*pp = p;
	return 0;
}

/* The checks passed, a job for r: 0, or the error. */
static int
create_job_new(const struct create_req *r, struct create_job **jp,
		const char **field, char *err, size_t errsz)
{
	int ret = create_check(r, field, err, errsz);

	if (ret < 0)
		return ret;
	*jp = calloc(1, sizeof(**jp));
	if (*jp == NULL) {
		snprintf(err, errsz, "pool '%s': out of memory", r->name);
		return -ENOMEM;
	}
	(*jp)->req = *r;
	return 0;
}

int
pool_create(const struct create_req *r, const char **field, char *err,
		size_t errsz)
{
	struct create_job *j;
	struct pool *p;
	int ret;

	ret = create_job_new(r, &j, field, err, errsz);
	if (ret < 0)
		return ret;
	create_build(j);
	ret = create_end(j, &p, err, errsz);
	free(j);
	return ret;
}

static void *
create_thread(void *arg)
{
	struct create_job *j = arg;
	uint64_t one = 1;

	create_build(j);
	/* The daemon's loop takes it from here (pool_create_end()). */
	if (write(j->tag.fd, &one, sizeof(one)) < 0)
		abort();	/* an eventfd written once cannot refuse */
	return NULL;
}

int
pool_create_start(const struct create_req *r, void *owner,
		struct create_job **jp, const char **field, char *err,
		size_t errsz)
{
	struct create_job *j;
	int ret;

	ret = create_job_new(r, &j, field, err, errsz);
	if (ret < 0)
		return ret;
	j->owner = owner;
	j->tag.kind = EV_JOB;
	j->tag.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (j->tag.fd < 0) {
		ret = -errno;
		snprintf(err, errsz, "pool '%s': eventfd: %s", r->name,
			strerror(errno));
		free(j);
		return ret;
	}
	if (ev_add(&j->tag) < 0) {
		ret = -errno;
		snprintf(err, errsz, "pool '%s': epoll: %s", r->name,
			strerror(errno));
		goto fail;
	}
	ret = pthread_create(&j->thread, NULL, create_thread, j);
	if (ret != 0) {
		snprintf(err, errsz, "pool '%s': cannot start a thread to "
			"build it: %s", r->name, strerror(ret));
		epoll_ctl(epoll_fd, EPOLL_CTL_DEL, j->tag.fd, NULL);
		/* EAGAIN has no name on the wire: out of resources. */
		ret = ret == EAGAIN ? -ENOMEM : -ret;
		goto fail;
	}
	cds_list_add_tail(&j->node, &job_list);
	*jp = j;
	return 0;
fail:
	close(j->tag.fd);
	free(j);
	return ret;
}

int
pool_create_end(struct create_job *j, struct pool **pp, char *err,
		size_t errsz)
{
	pthread_join(j->thread, NULL);
	epoll_ctl(epoll_fd, EPOLL_CTL_DEL, j->tag.fd, NULL);
	close(j->tag.fd);
	cds_list_del(&j->node);
	return create_end(j, pp, err, errsz);
}

int
pool_being_created(const char *name)
{
	struct create_job *j;

	cds_list_for_each_entry(j, &job_list, node)
		if (strcmp(j->req.name, name) == 0)
			return 1;
	return 0;
}

struct create_job *
pool_create_pending(void)
{
	return cds_list_empty(&job_list) ? NULL :
		cds_list_first_entry(&job_list, struct create_job, node);
}

/* Slots claimed by a process that is still there. */
unsigned int
pool_live_slots(struct pool *p)
{
	unsigned int n = 0;
	uint32_t i;

	if (!pool_intact(p))
		return 0;
	for (i = 0; i < p->h->nb_slots; i++) {
		uint64_t st = 0;
		pid_t pid = slot_owner(&p->h->slots[i], &st);

		if (pid == 0)
			continue;
		/* Live unless known gone: a /proc that cannot be read now
		 * counts the slot in (destroy must not think it idle). */
		if (pid < 0 || proc_alive(pid, st) != 0)
			n++;
	}
	return n;
}

int
pool_destroy(struct pool *p, int force, char *err, size_t errsz)
{
	unsigned int live = pool_live_slots(p);
	struct stat at, seg;

	if (live > 0 && !force) {
		snprintf(err, errsz, "pool '%s' is in use: %u cache slot%s "
			"attached; destroying it anyway takes force=1 "
			"(shmpoolctl destroy --force)", p->name, live,
			live == 1 ? "" : "s");
		return -EBUSY;
	}
	/* The segment, not whatever file now has its name (the segment
	 * moved, another file put there): that one stays. */
	if (lstat(p->path, &at) == 0 && fstat(p->fd, &seg) == 0 &&
	    (at.st_dev != seg.st_dev || at.st_ino != seg.st_ino))
		log_msg(LOG_WARNING, "pool '%s': %s is no longer its segment "
			"file: left as it is", p->name, p->path);
	else if (unlink(p->path) < 0 && errno != ENOENT) {
		snprintf(err, errsz, "pool '%s': cannot remove %s: %s",
			p->name, p->path, strerror(errno));
		return -EIO;
	}
	log_msg(LOG_INFO, "pool '%s' destroyed%s", p->name,
		live > 0 ? " (forced, with attached processes)" : "");
	pool_free(p);
	pools_index_write();
	watch_prune();
	return 0;
}

void
pools_destroy_all(void)
{
	struct pool *p, *tmp;
	char err[256];

	cds_list_for_each_entry_safe(p, tmp, &pool_list, node)
		pool_destroy(p, 1, err, sizeof(err));
}

/* At exit: unmap every pool (the segments stay) and drop the watches. */
void
pools_release(void)
{
	struct watch *w, *wtmp;
	struct pool *p, *tmp;

	cds_list_for_each_entry_safe(p, tmp, &pool_list, node)
		pool_free(p);
	cds_list_for_each_entry_safe(w, wtmp, &watch_list, node)
		watch_del(w);
}

int
peer_in_group(const struct peer *who, gid_t gid)
{
	unsigned int i;

	if (who->gid == gid)
		return 1;
	for (i = 0; i < who->nb_groups; i++)
		if (who->groups[i] == gid)
			return 1;
	return 0;
}

/* May the peer open p's segment for reading and writing? */
int
pool_may_open(const struct pool *p, const struct peer *who)
{
	struct stat st;
	mode_t need;

	if (fstat(p->fd, &st) < 0)
		return 0;
	if (who->uid == 0)
		return 1;
	if (who->uid == st.st_uid)
		need = S_IRUSR | S_IWUSR;
	else if (peer_in_group(who, st.st_gid))
		need = S_IRGRP | S_IWGRP;
	else
		need = S_IROTH | S_IWOTH;
	return (st.st_mode & need) == need;
}

int
pool_attach(struct pool *p, const struct peer *who, unsigned int cache,
		uint32_t *slotp, char *err, size_t errsz)
{
	int ret;

	if (!pool_intact(p)) {
		snprintf(err, errsz, "pool '%s': its segment was truncated",
			p->name);
		return -EIO;
	}
	/* The process that connected, not one that took its pid since. */
	if (who->gone || proc_alive(who->pid, who->start_time) == 0) {
		snprintf(err, errsz, "process %ld is gone", (long)who->pid);
		return -ESRCH;
	}
	ret = watch_add(who->pid, who->start_time);
	if (ret == 0 && watch_proc_exited(who->pid, who->start_time))
		ret = -ESRCH;
	if (ret < 0) {
		snprintf(err, errsz, ret == -ESRCH ? "process %ld is gone" :
			"cannot watch process %ld (out of file descriptors?)",
			(long)who->pid);
		return ret == -ESRCH ? -ESRCH : -EMFILE;
	}
	ret = slot_claim_for(p->h, cache, who->pid, who->start_time, slotp);
	if (ret < 0) {
		snprintf(err, errsz, "%s", shmpool_last_error());
		watch_prune();
		return ret;
	}
	return 0;
}

/* Give back slot of p, just claimed for pid, which did not get it. */
void
pool_unclaim(struct pool *p, uint32_t slot, pid_t pid)
{
	if (pool_intact(p) && slot < p->h->nb_slots) {
		slot_retire(p->h, &p->h->slots[slot], pid, 0);
		log_msg(LOG_INFO, "pool '%s': slot %u given back (pid %ld "
			"did not get the reply to its attach)", p->name, slot,
			(long)pid);
	}
	watch_prune();
}

/*
 * shmpoolctl flush: empty slot's cache into the ring.  A slot whose owner
 * is gone is reclaimed now (1); a live owner is asked to flush at its next
 * get or put (0), since only it may write its cache.  *cached: objects in
 * the cache when asked.
 */
int
pool_flush(struct pool *p, uint32_t slot, unsigned int *cached, char *err,
		size_t errsz)
{
	struct seg_slot *s;
	uint64_t st;
	int gone = 0;
	pid_t pid;

	if (!pool_intact(p)) {
		snprintf(err, errsz, "pool '%s': its segment was truncated",
			p->name);
		return -EIO;
	}
	s = &p->h->slots[slot];
	pid = slot_owner(s, &st);
	*cached = cache_len_read(&s->cache);
	if (pid == 0) {
		snprintf(err, errsz, "pool '%s': slot %u holds no cache",
			p->name, slot);
		return -ENOENT;
	}
	if (pid > 0 && st != 0) {
		int ret = proc_alive(pid, st);

		if (ret < 0) {
			snprintf(err, errsz, "pool '%s': slot %u: cannot tell "
				"whether pid %ld lives: %s", p->name, slot,
				(long)pid, strerror(-ret));
			return -EIO;
		}
		gone = ret == 0;
	}
	if (pid < 0 || gone) {
		int ret = reclaim(p, slot, pid, 0,
			"flush requested, owner gone");

		/* Put off (a ring's owner in the middle of a claim): a scan
		 * reclaims it later. */
		if (ret == -EAGAIN)
			return 0;
		if (ret < 0) {
			snprintf(err, errsz, "pool '%s': slot %u: cannot "
				"reclaim it", p->name, slot);
			return -EIO;
		}
		return 1;
	}
	/* A cache of size 0 never holds an object, and its owner never
	 * looks at the request (libshmpool's cache_idle_for()). */
	if (uatomic_read(&s->cache.size) != 0)
		uatomic_set(&s->cache.flush_req, 1);
	log_msg(LOG_INFO, "pool '%s': slot %u (pid %ld) asked to flush its "
		"%u cached objects", p->name, slot, (long)pid, *cached);
	return 0;
}

unsigned int
pool_detach(struct pool *p, const struct peer *who)
{
	unsigned int n = 0;
	uint32_t i;

	if (!pool_intact(p))
		return 0;
	for (i = 0; i < p->h->nb_slots; i++) {
		uint64_t t;

		if (slot_owner(&p->h->slots[i], &t) == who->pid &&
		    t == who->start_time &&
		    reclaim(p, i, who->pid, 1, "detach requested") == 0)
			n++;
	}
	watch_prune();
	return n;
}
