/*
 * shmpoold.h - the daemon's modules: configuration, pools, the control
 * server.  One epoll loop in one thread, which alone touches this state;
 * a client's create builds its segment in a thread of its own (struct
 * create_job).  Nothing here is on a worker's get/put path.
 */
#ifndef SHMPOOLD_H
#define SHMPOOLD_H

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <syslog.h>
#include <urcu/list.h>

#include "shmpool.h"
#include "segment-internal.h"

#define CONFIG_FILE_DEFAULT	"/etc/shmpool/shmpoold.conf"
#define SHM_DIR_DEFAULT		"/dev/shm"
#define CACHE_DEFAULT		256
#define MODE_DEFAULT		0660
#define SCAN_INTERVAL_MS	50	/* slots claimed without the daemon */

/* log.c-like helpers in main.c: stderr in the foreground, else syslog. */
void log_msg(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A pool to create, from a request or a config section. */
struct create_req {
	char name[SHMPOOL_NAME_MAX + 1];
	struct shmpool_params params;
	int cache_set;
	int policy;			/* SEG_POLICY_* */
	uid_t owner;
	int owner_set;
	gid_t group;
	int group_set;
	mode_t mode;
	unsigned int line;		/* in the config file, or 0 */
	struct cds_list_head node;
};

void create_req_init(struct create_req *r);
/* Set one key; 0, -EINVAL (bad value) or -ENOENT (unknown key). */
int create_req_set(struct create_req *r, const char *key, const char *value,
		char *err, size_t errsz);
/* Defaults and the checks across keys; 0 or -EINVAL, *field names it. */
int create_req_finish(struct create_req *r, const char **field,
		char *err, size_t errsz);
const char *policy_name(int policy);

/* The longest folder path, and a NUL: the config's limit too, so that a
 * path too long is the file's error, at its line. */
#define DIR_MAX	1024

struct config {
	char file[PATH_MAX];		/* "" when the embedded defaults */
	char socket[108];
	char hugetlbfs[DIR_MAX];	/* "" unset, "none" disabled */
	char shm_dir[DIR_MAX];
	unsigned int hugetlbfs_line;	/* where each was set, for errors */
	unsigned int shm_dir_line;
	char pidfile[PATH_MAX];
	gid_t group;
	int group_set;
	int destroy_on_exit;
	struct cds_list_head pools;	/* struct create_req */
};

void config_init(struct config *c);
/* Load file into c (initialised); 0 or -1 with "FILE:LINE: problem". */
int config_load(const char *file, struct config *c, char *err, size_t errsz);
void config_free(struct config *c);
/* Move src's contents into dst (whose own are freed first by the caller). */
void config_move(struct config *dst, struct config *src);
int parse_group(const char *s, gid_t *gid);
/* Why a folder whose path is no protocol value (proto_value_ok()) is
 * refused: a segment's path goes to clients as path=. */
#define DIR_NOT_CARRIED	"holds a space, an '=' or a byte that is not " \
	"printable ASCII, which the protocol cannot carry"

/* What the daemon runs with, options and config merged. */
struct daemon_env {
	char socket[108];
	char hugetlbfs[DIR_MAX];	/* "" when no huge pages */
	char shm_dir[DIR_MAX];
	gid_t group;
};
extern struct daemon_env denv;

/* Tags for the epoll loop: the first member of each watched object. */
enum ev_kind { EV_LISTEN, EV_CLIENT, EV_SIGNAL, EV_TIMER, EV_PIDFD, EV_JOB };
struct ev_tag {
	enum ev_kind kind;
	int fd;
	int dead;			/* dropped; freed after the batch */
	struct cds_list_head dead_node;	/* in the graveyard, once dropped */
};

/* main.c: have the loop wait for t->fd to be readable; 0 or -1 (errno). */
int ev_add(struct ev_tag *t);
/*
 * main.c: take t (a client's or a watch's) out of the loop and close its
 * descriptor; it is freed by ev_reap() after the batch of events, which
 * may still hold one of its, and the loop skips those.
 */
void ev_drop(struct ev_tag *t);
void ev_reap(void);
/* pools.c */
struct pool {
	struct cds_list_head node;
	char name[SHMPOOL_NAME_MAX + 1];
	char path[PATH_MAX];
	int fd;				/* the segment, sent on attach */
	struct pool_handle *h;
	int broken;			/* truncated: not touched any more */
	volatile sig_atomic_t cut;	/* a load found it cut short
					   (pool_sigbus_init()) */
	unsigned int repair_logged;
};

/* A client, as SO_PEERCRED and SO_PEERGROUPS saw it when it connected. */
struct peer {
	pid_t pid;
	uint64_t start_time;		/* of pid then, to notice its reuse */
	uid_t uid;
	gid_t gid;
	gid_t *groups;			/* supplementary, malloc'd */
	unsigned int nb_groups;
	int gone;			/* gone before it was accepted */
};

/*
 * A pool being created for a client: its segment (gigabytes can take
 * seconds to allocate) is built by a thread of its own, so that the
 * daemon goes on answering meanwhile; the eventfd of tag says when it is
 * done, and the loop finishes the creation (pool_create_end()).
 */
struct create_job {
	struct ev_tag tag;		/* EV_JOB */
	struct cds_list_head node;
	struct create_req req;
	void *owner;			/* the client to answer, or NULL */
	char origin[PATH_MAX + 16];	/* "FILE:LINE" of a config's pool */
	pthread_t thread;
	/* What the thread made of it. */
	int ret;
	char path[PATH_MAX];
	char err[PATH_MAX + 512];
	char note[PATH_MAX + 512];	/* logged: huge pages fell through */
};

int pools_adopt(void);
void pools_index_write(void);
struct pool *pool_find(const char *name);
int pool_create(const struct create_req *r, const char **field, char *err,
		size_t errsz);
/* The same in a thread: 0 with *jp under way, or the error at once. */
int pool_create_start(const struct create_req *r, void *owner,
		struct create_job **jp, const char **field, char *err,
		size_t errsz);
/* Once its eventfd is readable (or to wait for it): the build's result
 * and the pool (*pp); the caller frees j.  Its errors name no field. */
int pool_create_end(struct create_job *j, struct pool **pp, char *err,
		size_t errsz);
/* The oldest creation under way, or NULL. */
struct create_job *pool_create_pending(void);
/* Is a pool of that name being created? */
int pool_being_created(const char *name);
int pool_destroy(struct pool *p, int force, char *err, size_t errsz);
void pools_destroy_all(void);
void pools_release(void);
unsigned int pool_live_slots(struct pool *p);
int pool_attach(struct pool *p, const struct peer *who, unsigned int cache,
		uint32_t *slotp, char *err, size_t errsz);
void pool_unclaim(struct pool *p, uint32_t slot, pid_t pid);
int pool_flush(struct pool *p, uint32_t slot, unsigned int *cached,
		char *err, size_t errsz);
unsigned int pool_detach(struct pool *p, const struct peer *who);
int pool_may_open(const struct pool *p, const struct peer *who);
void pools_scan(void);
int pool_intact(struct pool *p);
int pool_sigbus_init(void);
void watch_prune(void);
void watch_exited(struct ev_tag *tag);
void watch_free(struct ev_tag *tag);
extern struct cds_list_head pool_list;

/* server.c */
int server_start(const char *path, char *err, size_t errsz);
void server_stop(const char *path);
void server_tick(void);
void server_event(void *tag, uint32_t events);
/* Wait for every create under way, and answer its client (shutdown). */
void server_jobs_finish(void);
void client_free(struct ev_tag *tag);

extern int epoll_fd;
int peer_in_group(const struct peer *who, gid_t gid);

#endif /* SHMPOOLD_H */
