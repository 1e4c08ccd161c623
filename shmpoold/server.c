/*
 * server.c - the control socket: one request per packet, checked field by
 * field, one reply per packet.  See shmpool-protocol(7).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "shmpoold.h"

#define CLIENTS_MAX	1024
#define CLIENTS_PER_UID	32	/* for users other than root */
#define CLIENT_IDLE_MS	10000	/* a connection without a request */
#define TEXT_MAX	(PATH_MAX + 512)	/* an error text */

struct client {
	struct ev_tag tag;		/* EV_CLIENT */
	struct peer who;
	uint64_t last_ms;		/* its last request, or its connect */
	struct create_job *job;		/* its create under way, or NULL */
	struct cds_list_head node;
};

static struct ev_tag listen_tag = { .kind = EV_LISTEN, .fd = -1 };
static int listen_paused;		/* out of descriptors */
static CDS_LIST_HEAD(client_list);
static unsigned int nb_clients;

/* A reply being built. */
struct reply {
	char buf[PROTO_REPLY_MAX];	/* the reply and a NUL */
	size_t len;
	int cut;			/* a reply_add() did not fit */
	int fd;				/* sent with it (not closed), or -1 */
	struct pool *claimed;		/* an attach: its slot, given back */
	uint32_t slot;			/* if the reply cannot be sent */
};

/* A reply with no descriptor and no slot to give back, yet. */
static void
reply_init(struct reply *r)
{
	r->fd = -1;
	r->claimed = NULL;
	r->cut = 0;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
reply_add(struct reply *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
reply_add(struct reply *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->cut)
		return;
	va_start(ap, fmt);
	n = vsnprintf(r->buf + r->len, sizeof(r->buf) - r->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->len += (size_t)n;
	if (r->len >= sizeof(r->buf)) {
		r->len = sizeof(r->buf) - 1;
		r->cut = 1;
	}
}

static void
reply_ok(struct reply *r)
{
	r->len = 0;
	r->cut = 0;
	reply_add(r, "shmpool/%d ok", PROTO_VERSION);
}

/* An error reply; field (and its value) when one field is to blame. */
static int
reply_err(struct reply *r, int err, const char *field, const char *value,
		const char *text)
{
	r->len = 0;
	r->cut = 0;
	reply_add(r, "shmpool/%d error %s", PROTO_VERSION,
		proto_errname(err));
	if (field != NULL) {
		reply_add(r, " field=%s", field);
		if (value != NULL)
			reply_add(r, " value=%s", value);
	}
	reply_add(r, " msg=%s", text);
	return err;
}

static void
listen_pause(int pause);
static void
reply_send(struct client *c, struct reply *r);

static void
client_close(struct client *c)
{
	/* Its create goes on; nobody is told how it ended but the log. */
	if (c->job != NULL)
		c->job->owner = NULL;
	cds_list_del(&c->node);
	ev_drop(&c->tag);
	nb_clients--;
	if (listen_paused)
		listen_pause(0);
}

/* A closed client, after the batch (ev_reap()). */
void
client_free(struct ev_tag *tag)
{
	struct client *c = caa_container_of(tag, struct client, tag);

	free(c->who.groups);
	free(c);
}

int
server_start(const char *path, char *err, size_t errsz)
{
	struct sockaddr_un sun;
	struct stat st;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errsz, "socket path '%s' is longer than %zu "
			"bytes", path, sizeof(sun.sun_path) - 1);
		return -1;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errsz, "socket: %s", strerror(errno));
		return -1;
	}
	/* The caller holds the lock: a socket file here is a dead
	 * daemon's, and goes.  Any other file (a symbolic link too) is not
	 * the daemon's to remove: it stops the start. */
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		snprintf(err, errsz, "cannot listen on %s: a file that is not "
			"a socket is there", path);
		close(fd);
		return -1;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		snprintf(err, errsz, "cannot listen on %s: %s", path,
			strerror(errno));
		close(fd);
		return -1;
	}
	/* Bound: the socket file is ours, and goes if the rest fails. */
	if (chmod(path, 0666) < 0 || listen(fd, 64) < 0) {
		snprintf(err, errsz, "cannot listen on %s: %s", path,
			strerror(errno));
		goto fail;
	}
	listen_tag.fd = fd;
	if (ev_add(&listen_tag) < 0) {
		snprintf(err, errsz, "epoll_ctl: %s", strerror(errno));
		listen_tag.fd = -1;
		goto fail;
	}
	return 0;
fail:
	close(fd);
	unlink(path);
	return -1;
}

void
server_stop(const char *path)
{
	struct client *c, *tmp;

	cds_list_for_each_entry_safe(c, tmp, &client_list, node)
		client_close(c);
	if (listen_tag.fd >= 0) {
		close(listen_tag.fd);
		listen_tag.fd = -1;
		unlink(path);
	}
}

static void
listen_pause(int pause)
{
	struct epoll_event ev = { .events = pause ? 0 : EPOLLIN };

	ev.data.ptr = &listen_tag;
	if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_tag.fd, &ev) == 0)
		listen_paused = pause;
}

/* Called every scan interval: idle clients go, a paused listen resumes. */
void
server_tick(void)
{
	uint64_t now = now_ms();
	struct client *c, *tmp;

	cds_list_for_each_entry_safe(c, tmp, &client_list, node)
		if (c->job == NULL && now - c->last_ms > CLIENT_IDLE_MS)
			client_close(c);
	if (listen_paused && listen_tag.fd >= 0)
		listen_pause(0);
}

/* The peer's supplementary groups, however many. */
static int
peer_groups(int fd, struct peer *who)
{
	socklen_t len = 32 * sizeof(gid_t);

	for (;;) {
		gid_t *g = malloc(len > 0 ? len : sizeof(gid_t));

		if (g == NULL)
			return -1;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) == 0) {
			who->groups = g;
			who->nb_groups = len / sizeof(gid_t);
			return 0;
		}
		free(g);
		/* ERANGE: len now says how much is needed. */
		if (errno != ERANGE)
			return -1;
	}
}

static void
server_accept(void)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct client *c, *o;
	unsigned int same_uid = 0;
	int fd, spare, ret;

	/*
	 * A connection takes a descriptor, and the read of its peer's
	 * /proc/PID/stat one more for a moment: with fewer than two free,
	 * the connection is left in the backlog, not taken and dropped.
	 * spare holds the second one through the accept.
	 */
	fd = spare = fcntl(listen_tag.fd, F_DUPFD_CLOEXEC, 0);
	if (spare >= 0) {
		int e;

		fd = accept4(listen_tag.fd, NULL, NULL,
			SOCK_NONBLOCK | SOCK_CLOEXEC);
		e = errno;
		close(spare);
		errno = e;
	}
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE) {
			/* The connection waits in the backlog; stop asking
			 * until a descriptor is free or the next tick. */
			log_msg(LOG_WARNING, "accept: %s; pausing",
				strerror(errno));
			listen_pause(1);
		} else if (errno != EAGAIN && errno != EINTR) {
			log_msg(LOG_WARNING, "accept: %s", strerror(errno));
		}
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		log_msg(LOG_WARNING, "SO_PEERCRED: %s", strerror(errno));
		close(fd);
		return;
	}
	cds_list_for_each_entry(o, &client_list, node)
		same_uid += o->who.uid == cred.uid;
	if (nb_clients >= CLIENTS_MAX ||
	    (cred.uid != 0 && same_uid >= CLIENTS_PER_UID)) {
		log_msg(LOG_WARNING, "uid %ld has %u connections (%u in all); "
			"refusing another", (long)cred.uid, same_uid,
			nb_clients);
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(fd);
		return;
	}
	c->tag.kind = EV_CLIENT;
	c->tag.fd = fd;
	c->who.pid = cred.pid;
	c->who.uid = cred.uid;
	c->who.gid = cred.gid;
	if (peer_groups(fd, &c->who) < 0) {
		log_msg(LOG_WARNING, "SO_PEERGROUPS: %s", strerror(errno));
		close(fd);
		free(c);
		return;
	}
	ret = seg_proc_start_time(cred.pid, &c->who.start_time);
	if (ret == -ENOENT || ret == -ESRCH) {
		/* Gone already (its socket outlived it, in a child or
		 * another holder): answered all the same, but an attach
		 * for it fails with ESRCH (pool_attach()). */
		c->who.gone = 1;
	} else if (ret < 0) {
		/* No descriptor left to tell: say so. */
		log_msg(LOG_WARNING, "connection of pid %ld dropped: "
			"cannot read its /proc/%ld/stat: %s",
			(long)cred.pid, (long)cred.pid, strerror(-ret));
		close(fd);
		free(c->who.groups);
		free(c);
		return;
	}
	c->last_ms = now_ms();
	if (ev_add(&c->tag) < 0) {
		close(fd);
		free(c->who.groups);
		free(c);
		return;
	}
	cds_list_add(&c->node, &client_list);
	nb_clients++;
}

/* The keys a verb takes; required ones first, then a NULL, then the rest. */
struct verb {
	const char *name;
	int (*fn)(struct client *c, const struct proto_msg *m,
		struct reply *r);
	const char *keys[12];
	/* For root and the daemon's group alone: what the verb does, for
	 * the EPERM reply to anyone else, whatever the request holds
	 * (handle()); NULL for a verb open to all. */
	const char *managed;
};

/* Root and the daemon's group may change pools; else an EPERM reply. */
static int
deny_unless_manager(const struct client *c, struct reply *r,
		const char *what)
{
	char text[256];

	if (c->who.uid == 0 || peer_in_group(&c->who, denv.group))
		return 0;
	snprintf(text, sizeof(text), "uid %ld is neither root nor in "
		"shmpoold's group %ld: it may not %s", (long)c->who.uid,
		(long)denv.group, what);
	return reply_err(r, EPERM, NULL, NULL, text);
}

static struct pool *
need_pool(const struct proto_msg *m, struct reply *r)
{
	const char *name = proto_get(m, "name");
	struct pool *p;
	char text[TEXT_MAX];

	if (!shmpool_name_valid(name)) {
		snprintf(text, sizeof(text), "name: '%.64s' is not 1-%d "
			"characters of [A-Za-z0-9._-] not starting with '.'",
			name, SHMPOOL_NAME_MAX);
		reply_err(r, EINVAL, "name", name, text);
		return NULL;
	}
	p = pool_find(name);
	if (p == NULL) {
		snprintf(text, sizeof(text), "no pool '%s'", name);
		reply_err(r, ENOENT, "name", name, text);
	}
	return p;
}

static int
do_ping(struct client *c, const struct proto_msg *m, struct reply *r)
{
	(void)c;
	(void)m;
	reply_ok(r);
	reply_add(r, " protocol=%d version=%s pid=%ld", PROTO_VERSION,
		PACKAGE_VERSION, (long)getpid());
	return 0;
}

static int
do_create(struct client *c, const struct proto_msg *m, struct reply *r)
{
	struct create_req req;
	const char *field;
	char text[TEXT_MAX];
	unsigned int i;
	int ret;

	create_req_init(&req);
	for (i = 0; i < m->nkv; i++) {
		ret = create_req_set(&req, m->kv[i].key, m->kv[i].value, text,
			sizeof(text));
		if (ret < 0)
			return reply_err(r, EINVAL, m->kv[i].key,
				m->kv[i].value, text);
	}
	if (create_req_finish(&req, &field, text, sizeof(text)) < 0)
		return reply_err(r, EINVAL, field, proto_get(m, field), text);
	if (!req.owner_set)
		req.owner = c->who.uid;
	else if (c->who.uid != 0 && req.owner != c->who.uid) {
		snprintf(text, sizeof(text), "owner: only root may create a "
			"pool for another user");
		return reply_err(r, EPERM, "owner", proto_get(m, "owner"),
			text);
	}
	if (!req.group_set) {
		req.group = denv.group;
	} else if (c->who.uid != 0 && req.group != denv.group &&
		   !peer_in_group(&c->who, req.group)) {
		snprintf(text, sizeof(text), "group: only root may give a "
			"pool to a group it is not in");
		return reply_err(r, EPERM, "group", proto_get(m, "group"),
			text);
	}
	/* The answer comes when the segment is built (job_done()). */
	ret = pool_create_start(&req, c, &c->job, &field, text, sizeof(text));
	if (ret < 0)
		return reply_err(r, -ret, field,
			field != NULL ? proto_get(m, field) : NULL, text);
	return 0;
}

static void
create_reply(struct reply *r, const struct pool *p)
{
	reply_ok(r);
	reply_add(r, " name=%s path=%s memory=%s page-size=%" PRIu64, p->name,
		p->path, p->h->hdr->flags & SEG_FLAG_HUGE ? "huge" : "shm",
		p->h->hdr->page_size);
}

static int
do_destroy(struct client *c, const struct proto_msg *m, struct reply *r)
{
	const char *f = proto_get(m, "force");
	struct pool *p;
	char text[TEXT_MAX], name[SHMPOOL_NAME_MAX + 1];
	int force = 0, ret;

	(void)c;

	if (f != NULL) {
		if (strcmp(f, "0") != 0 && strcmp(f, "1") != 0)
			return reply_err(r, EINVAL, "force", f,
				"force: not 0 or 1");
		force = f[0] == '1';
	}
	p = need_pool(m, r);
	if (p == NULL)
		return -1;
	snprintf(name, sizeof(name), "%s", p->name);
	ret = pool_destroy(p, force, text, sizeof(text));
	if (ret < 0)
		return reply_err(r, -ret, ret == -EBUSY ? "name" : NULL,
			name, text);
	reply_ok(r);
	reply_add(r, " name=%s", name);
	return 0;
}

static void
pool_summary(struct reply *r, struct pool *p)
{
	struct shmpool_info info;
	unsigned int avail;

	if (!pool_intact(p)) {
		reply_add(r, " name=%s broken=yes", p->name);
		return;
	}
	avail = shmpool_avail_count(&p->h->pub);
	shmpool_info(&p->h->pub, &info);
	reply_add(r, " name=%s memory=%s objects=%u object-size=%u "
		"slots-in-use=%u avail=%u path=%s", p->name,
		info.flags & SHMPOOL_INFO_HUGE ? "huge" : "shm",
		info.obj_count, info.obj_size, info.slots_in_use, avail,
		p->path);
}

static int
do_list(struct client *c, const struct proto_msg *m, struct reply *r)
{
	unsigned int n = 0;
	struct pool *p;

	(void)c;
	(void)m;
	cds_list_for_each_entry(p, &pool_list, node)
		n++;
	reply_ok(r);
	reply_add(r, " count=%u", n);
	cds_list_for_each_entry(p, &pool_list, node) {
		reply_add(r, "\npool");
		pool_summary(r, p);
	}
	if (r->cut)
		return reply_err(r, EMSGSIZE, NULL, NULL,
			"the list of pools does not fit in one reply");
	return 0;
}

static int
do_info(struct client *c, const struct proto_msg *m, struct reply *r)
{
	struct shmpool_info info;
	char text[TEXT_MAX];
	unsigned int avail;
	struct stat st;
	struct pool *p;

	(void)c;
	p = need_pool(m, r);
	if (p == NULL)
		return -1;
	if (!pool_intact(p)) {
		snprintf(text, sizeof(text), "pool '%s': its segment %s was "
			"truncated; destroy it", p->name, p->path);
		return reply_err(r, EIO, "name", p->name, text);
	}
	shmpool_info(&p->h->pub, &info);
	avail = shmpool_avail_count(&p->h->pub);
	if (fstat(p->fd, &st) < 0)
		memset(&st, 0, sizeof(st));
	reply_ok(r);
	reply_add(r, " name=%s path=%s memory=%s page-size=%" PRIu64
		" segment-size=%" PRIu64 " objects=%u object-size=%u "
		"element-size=%u cache=%u slots=%u slots-in-use=%u avail=%u "
		"in-use=%u huge-policy=%s owner=%ld group=%ld mode=0%03o "
		"created=%" PRIu64, p->name, p->path,
		info.flags & SHMPOOL_INFO_HUGE ? "huge" : "shm",
		info.page_size, info.seg_size, info.obj_count, info.obj_size,
		info.elt_size, info.cache_size, info.nb_slots,
		info.slots_in_use, avail, info.obj_count - avail,
		policy_name((int)((p->h->hdr->flags & SEG_FLAG_POLICY_MASK) >>
			SEG_FLAG_POLICY_SHIFT)),
		(long)st.st_uid, (long)st.st_gid,
		(unsigned int)(st.st_mode & 0777), p->h->hdr->create_time);
	return 0;
}

static int
do_attach(struct client *c, const struct proto_msg *m, struct reply *r)
{
	const char *cs = proto_get(m, "cache");
	unsigned int cache;
	uint32_t slot;
	struct pool *p;
	char text[TEXT_MAX];
	uint64_t v;
	int ret;

	p = need_pool(m, r);
	if (p == NULL)
		return -1;
	cache = p->h->cache_size;
	if (cs != NULL) {
		if (proto_u64(cs, 0, SHMPOOL_CACHE_MAX_SIZE, &v) < 0) {
			snprintf(text, sizeof(text), "cache: '%.32s' is not a "
				"number in 0..%u", cs, SHMPOOL_CACHE_MAX_SIZE);
			return reply_err(r, EINVAL, "cache", cs, text);
		}
		if (SHMPOOL_CACHE_FLUSHTHRESH(v) > p->h->obj_count) {
			snprintf(text, sizeof(text), "cache: a cache of %u "
				"needs at least %u objects (1.5 times it), "
				"pool '%s' has %u", (unsigned int)v,
				(unsigned int)SHMPOOL_CACHE_FLUSHTHRESH(v),
				p->name, p->h->obj_count);
			return reply_err(r, EINVAL, "cache", cs, text);
		}
		cache = (unsigned int)v;
	}
	if (!pool_may_open(p, &c->who)) {
		snprintf(text, sizeof(text), "uid %ld may not open pool '%s' "
			"(%s) for reading and writing", (long)c->who.uid,
			p->name, p->path);
		return reply_err(r, EACCES, "name", p->name, text);
	}
	ret = pool_attach(p, &c->who, cache, &slot, text, sizeof(text));
	if (ret < 0)
		return reply_err(r, -ret, ret == -EBUSY ? "name" : NULL,
			p->name, text);
	reply_ok(r);
	reply_add(r, " name=%s slot=%u", p->name, slot);
	r->fd = p->fd;
	r->claimed = p;
	r->slot = slot;
	log_msg(LOG_INFO, "pool '%s': slot %u to pid %ld", p->name, slot,
		(long)c->who.pid);
	return 0;
}

static int
do_detach(struct client *c, const struct proto_msg *m, struct reply *r)
{
	struct pool *p;
	unsigned int n;

	p = need_pool(m, r);
	if (p == NULL)
		return -1;
	n = pool_detach(p, &c->who);
	reply_ok(r);
	reply_add(r, " name=%s released=%u", p->name, n);
	return 0;
}

static int
do_flush(struct client *c, const struct proto_msg *m, struct reply *r)
{
	const char *ks = proto_get(m, "slot");
	unsigned int cached;
	struct pool *p;
	char text[TEXT_MAX];
	uint64_t slot;
	int ret;

	(void)c;

	p = need_pool(m, r);
	if (p == NULL)
		return -1;
	if (proto_u64(ks, 0, p->h->nb_slots - 1, &slot) < 0) {
		snprintf(text, sizeof(text), "slot: '%.32s' is not a number in "
			"0..%u", ks, p->h->nb_slots - 1);
		return reply_err(r, EINVAL, "slot", ks, text);
	}
	ret = pool_flush(p, (uint32_t)slot, &cached, text, sizeof(text));
	if (ret < 0)
		return reply_err(r, -ret, ret == -ENOENT ? "slot" : NULL, ks,
			text);
	reply_ok(r);
	reply_add(r, " name=%s slot=%u state=%s cached=%u", p->name,
		(unsigned int)slot, ret == 0 ? "requested" : "reclaimed",
		cached);
	return 0;
}

static const struct verb verbs[] = {
	{ "ping", do_ping, { NULL }, NULL },
	{ "create", do_create, { "name", "objects", "object-size", NULL,
		"cache", "slots", "huge", "owner", "group", "mode", NULL },
		"create pools" },
	{ "destroy", do_destroy, { "name", NULL, "force", NULL },
		"destroy pools" },
	{ "list", do_list, { NULL }, NULL },
	{ "info", do_info, { "name", NULL }, NULL },
	{ "attach", do_attach, { "name", NULL, "cache", NULL }, NULL },
	{ "detach", do_detach, { "name", NULL }, NULL },
	{ "flush", do_flush, { "name", "slot", NULL }, "flush caches" },
};

static void
handle(struct client *c, char *buf, size_t len, struct reply *r)
{
	const struct verb *v = NULL;
	struct proto_msg m;
	const char *bad;
	char text[TEXT_MAX];
	unsigned int i, k;
	int ret, opt;

	ret = proto_parse(buf, len, &m, text, sizeof(text), &bad);
	if (ret == -EPROTONOSUPPORT) {
		snprintf(text, sizeof(text), "incompatible versions: the peer "
			"speaks shmpool/%s, this daemon speaks shmpool/%d",
			m.version, PROTO_VERSION);
		reply_err(r, EPROTONOSUPPORT, "version", m.version, text);
		return;
	}
	if (ret < 0 && ret != -EINVAL) {
		char why[TEXT_MAX + 32];

		snprintf(why, sizeof(why), "malformed request: %s", text);
		reply_err(r, EPROTO, NULL, NULL, why);
		return;
	}
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(verbs[i].name, m.verb) == 0)
			v = &verbs[i];
	if (m.rest != NULL) {
		reply_err(r, EPROTO, NULL, NULL,
			"malformed request: more than one line");
		return;
	}
	if (ret == -EINVAL) {
		/* A key given twice (the line parsed whole, the verb
		 * read): one who may not use the verb is told that first,
		 * as for any other fault of its keys. */
		if (v != NULL && v->managed != NULL &&
		    deny_unless_manager(c, r, v->managed))
			return;
		reply_err(r, EINVAL, bad, proto_get(&m, bad), text);
		return;
	}
	if (v == NULL) {
		snprintf(text, sizeof(text), "unknown verb '%.64s'", m.verb);
		reply_err(r, EINVAL, "verb", m.verb, text);
		return;
	}
	if (v->managed != NULL && deny_unless_manager(c, r, v->managed))
		return;
	/* (A status, "error" and its code, makes an unknown verb.) */
	if (m.text != NULL) {
		reply_err(r, EINVAL, "msg", NULL,
			"a request has no status and no msg=");
		return;
	}
	for (i = 0; i < m.nkv; i++) {
		int known = 0;

		for (k = 0, opt = 0; k < 12; k++) {
			if (v->keys[k] == NULL) {
				if (opt++)
					break;
				continue;
			}
			if (strcmp(v->keys[k], m.kv[i].key) == 0)
				known = 1;
		}
		if (!known) {
			snprintf(text, sizeof(text), "unknown key '%.64s' for "
				"%s", m.kv[i].key, v->name);
			reply_err(r, EINVAL, m.kv[i].key, m.kv[i].value, text);
			return;
		}
	}
	for (k = 0; k < 12 && v->keys[k] != NULL; k++) {
		if (proto_get(&m, v->keys[k]) == NULL) {
			snprintf(text, sizeof(text), "%s is required",
				v->keys[k]);
			reply_err(r, EINVAL, v->keys[k], NULL, text);
			return;
		}
	}
	v->fn(c, &m, r);
}

static void
client_read(struct client *c)
{
	static struct reply r;
	char buf[PROTO_REQ_MAX + 1];
	union proto_cbuf cbuf;
	struct msghdr mh;
	struct iovec iov;
	ssize_t len;
	int fd;

	proto_msg_init(&mh, &iov, buf, PROTO_REQ_MAX, &cbuf);
	len = recvmsg(c->tag.fd, &mh, MSG_TRUNC | MSG_CMSG_CLOEXEC);
	if (len < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (len == 0) {
		/* An empty packet or the end of the connection: only the
		 * latter leaves the socket hung up. */
		struct pollfd pfd = { .fd = c->tag.fd, .events = POLLRDHUP };

		if (poll(&pfd, 1, 0) != 0 &&
		    (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			client_close(c);
			return;
		}
	} else if (len < 0) {
		client_close(c);
		return;
	}
	/* Descriptors a client sends are not wanted. */
	fd = proto_take_fd(&mh);
	if (fd >= 0)
		close(fd);
	c->last_ms = now_ms();
	reply_init(&r);
	if (len > PROTO_REQ_MAX || (mh.msg_flags & MSG_TRUNC)) {
		char text[128];

		snprintf(text, sizeof(text), "request of %zd bytes exceeds "
			"%d", len, PROTO_REQ_MAX);
		reply_err(&r, EMSGSIZE, NULL, NULL, text);
	} else if (c->job != NULL) {
		reply_err(&r, EBUSY, NULL, NULL, "a create is under way on "
			"this connection: one request at a time");
	} else {
		handle(c, buf, (size_t)len, &r);
		/* A create under way answers when it is done (job_done()). */
		if (c->job != NULL)
			return;
	}
	reply_send(c, &r);
}

/* Send r to c; a client that cannot take it is dropped. */
static void
reply_send(struct client *c, struct reply *r)
{
	union proto_cbuf cbuf;
	struct msghdr mh;
	struct iovec iov;

	proto_msg_init(&mh, &iov, r->buf, r->len, r->fd >= 0 ? &cbuf : NULL);
	if (r->fd >= 0)
		proto_msg_put_fd(&mh, r->fd);
	if (sendmsg(c->tag.fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* A client that does not read its replies is dropped, and
		 * an attach it did not receive is undone. */
		log_msg(LOG_WARNING, "reply to pid %ld: %s", (long)c->who.pid,
			strerror(errno));
		if (r->claimed != NULL)
			pool_unclaim(r->claimed, r->slot, c->who.pid);
		client_close(c);
	}
}

/* A create's segment is built (or not): finish it, answer its client. */
static void
job_done(struct create_job *j)
{
	static struct reply r;
	struct client *c = j->owner;
	char text[TEXT_MAX];
	struct pool *p;
	int ret;

	ret = pool_create_end(j, &p, text, sizeof(text));
	if (c == NULL && ret < 0)
		log_msg(LOG_ERR, "%s%spool '%s' not created: %s", j->origin,
			j->origin[0] != '\0' ? ": " : "", j->req.name, text);
	if (c != NULL) {
		c->job = NULL;
		c->last_ms = now_ms();
		reply_init(&r);
		if (ret < 0)
			reply_err(&r, -ret, NULL, NULL, text);
		else
			create_reply(&r, p);
		reply_send(c, &r);
	}
	free(j);
}

void
server_jobs_finish(void)
{
	struct create_job *j;

	while ((j = pool_create_pending()) != NULL)
		job_done(j);
}

void
server_event(void *tag, uint32_t events)
{
	struct ev_tag *t = tag;

	(void)events;
	if (t->kind == EV_LISTEN) {
		server_accept();
	} else if (t->kind == EV_CLIENT) {
		struct client *c = caa_container_of(t, struct client, tag);

		client_read(c);
	} else if (t->kind == EV_JOB) {
		job_done(caa_container_of(t, struct create_job, tag));
	}
}
