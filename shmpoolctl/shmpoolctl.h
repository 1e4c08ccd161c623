/*
 * shmpoolctl.h - what the parts of shmpoolctl share: the context of one
 * verb, error reporting, argument parsing, the JSON writer, and the
 * read-only view of segments that dump and watch take.
 */
#ifndef SHMPOOLCTL_H
#define SHMPOOLCTL_H

#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "proto.h"
#include "shmpool.h"

#define EXIT_OK			0
#define EXIT_FAILED		1
#define EXIT_USAGE		2
#define EXIT_UNREACHABLE	3
#define EXIT_NO_POOL		4
/* A batch line ended by signal s reads EXIT_SIGNAL_BASE + s, as a shell
 * tells a process that died of it. */
#define EXIT_SIGNAL_BASE	128

#define CTL_ERRMSG_MAX		1024	/* bytes in an error message */

#define NSEC_PER_SEC		INT64_C(1000000000)

/* CLOCK_MONOTONIC, in ns. */
int64_t now_ns(void);

extern char progname[];

/* The context of one verb: where it reaches the daemon, where it writes. */
struct ctl {
	const char *socket;		/* NULL: proto_socket_path() */
	char *buf;			/* PROTO_REPLY_MAX + 1 bytes */
	struct proto_msg msg;		/* the reply, parsed */
	int unreachable;		/* no reply came */
	int timed_out;			/* ... within the request's wait */
	int json;			/* write JSON documents */
	FILE *out;			/* the verb's output */
	const char *where;		/* "FILE:LINE" in a batch, else NULL */
	int quiet;			/* no warnings (watch on a terminal) */
};

/*
 * Report a failure: "shmpoolctl: [WHERE: ]message" on stderr and, with
 * --json, {"error":{...}} on c->out.  code is an errno name, "usage" or
 * "unreachable"; field and value (either may be NULL) name what the
 * daemon blamed.  Return status.
 */
int ctl_error(struct ctl *c, int status, const char *code, const char *field,
		const char *value, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* A usage error: the message (unless fmt is NULL), the usage lines. */
int usage_error(struct ctl *c, const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A local failure (exit 1) for errno value err (positive or negative). */
#define ctl_fail_local(c, err, ...) \
	ctl_error((c), EXIT_FAILED, proto_errname(err), NULL, NULL, __VA_ARGS__)

/* A warning that changes nothing: "shmpoolctl: [WHERE: ]message". */
void ctl_warn(const struct ctl *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* --help after a verb: its usage, as text or as {"usage":"..."}. */
int verb_help(struct ctl *c, const char *usage);

/*
 * The arguments of a verb: its options, and the non-options (in any order
 * among them) gathered in args[0 .. nargs).
 */
struct verb_args {
	struct ctl *c;
	const char *usage;
	int argc;
	char **argv;
	const struct option *opts;
	char **args;			/* argc entries */
	int nargs;
	int top;			/* the global options, not a verb's */
	int help;			/* -h or --help among them */
};

/* Every verb takes these two besides its own. */
#define OPT_JSON		255
#define VERB_COMMON_OPTS \
	{ "json", no_argument, NULL, OPT_JSON }, \
	{ "help", no_argument, NULL, 'h' }

int verb_args_init(struct verb_args *va, struct ctl *c, const char *usage,
		int argc, char **argv, const struct option *opts);
void verb_args_free(struct verb_args *va);

/*
 * The next option, as getopt_long() returns it; --json is taken here.
 * -1 at the end; '?' after a usage error was reported (its status in
 * *status).
 */
int next_opt(struct verb_args *va, int *status);

/* A decimal option in [min, max]; 0 or a reported usage error. */
int parse_num(struct ctl *c, const char *usage, const char *opt,
		const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* At most one NAME among the arguments, which must be a pool name. */
int take_name(struct ctl *c, const char *usage, char **args, int nargs,
		int required, const char **namep);

/* json.c: a writer of one compact JSON document. */
#define JW_DEPTH_MAX	16
struct jw {
	FILE *f;
	unsigned int depth;
	unsigned char nonempty[JW_DEPTH_MAX];
};

void jw_init(struct jw *w, FILE *f);
void jw_obj_open(struct jw *w, const char *key);
void jw_obj_close(struct jw *w);
void jw_arr_open(struct jw *w, const char *key);
void jw_arr_close(struct jw *w);
void jw_str(struct jw *w, const char *key, const char *s);
void jw_strn(struct jw *w, const char *key, const char *s, size_t len);
void jw_u64(struct jw *w, const char *key, uint64_t v);
void jw_i64(struct jw *w, const char *key, int64_t v);
void jw_bool(struct jw *w, const char *key, int v);
void jw_null(struct jw *w, const char *key);
void jw_fixed(struct jw *w, const char *key, double v, int decimals);
/* A value already in JSON (a number's digits, a document). */
void jw_raw(struct jw *w, const char *key, const char *text, size_t len);
/* Ends the document with a newline. */
void jw_end(struct jw *w);
/* s as a JSON string, quotes included. */
void json_write_string(FILE *f, const char *s, size_t len);

/*
 * dump.c: the segments, found and read without a lock, without the
 * daemon, never written.
 */
#define SNAP_COUNTERS	10

/* Indexes in counters[] and in the arrays of counts below. */
enum {
	CNT_PUT_BULK,
	CNT_PUT_OBJS,
	CNT_PUT_COMMON_POOL_BULK,
	CNT_PUT_COMMON_POOL_OBJS,
	CNT_GET_COMMON_POOL_BULK,
	CNT_GET_COMMON_POOL_OBJS,
	CNT_GET_SUCCESS_BULK,
	CNT_GET_SUCCESS_OBJS,
	CNT_GET_FAIL_BULK,
	CNT_GET_FAIL_OBJS,
};

/* The counters, in struct shmpool_stats order. */
struct counter_desc {
	const char *name;
	size_t stats_off;		/* in struct shmpool_stats */
	const char *help;
};
extern const struct counter_desc counters[SNAP_COUNTERS];

/* A pool to read: its name and its segment. */
struct pool_ref {
	char *name;
	char *path;			/* NULL: shmpoold reports it broken */
};

struct pool_refs {
	struct pool_ref *v;
	size_t n, max;
	char source[PATH_MAX + 64];	/* where they were found, for messages */
};

/*
 * Find the pools (all, or only name): shmpoold's list, else the index
 * next to its socket, else the segment files in /dev/shm and hugetlbfs
 * mounts.  Returns 0, EXIT_NO_POOL (name was not found, reported) or
 * EXIT_FAILED (reported).
 */
int pools_find(struct ctl *c, const char *name, struct pool_refs *refs);
/* The same, but a name not found leaves refs empty, unreported. */
int pools_lookup(struct ctl *c, const char *name, struct pool_refs *refs);
int pool_refs_add(struct pool_refs *refs, const char *name, const char *path);
void pool_refs_free(struct pool_refs *refs);

/*
 * shmpoolctl.c: the pools shmpoold lists, with their paths.  Returns 0,
 * or -1 when the daemon does not answer or fails: the caller looks
 * elsewhere (only running out of memory is reported).
 */
int pools_from_daemon(struct ctl *c, struct pool_refs *refs);

struct slot_snap {
	uint32_t slot;
	uint32_t state;			/* SEG_SLOT_* */
	pid_t pid;
	uint32_t len;			/* objects in its cache */
	uint64_t stats[SNAP_COUNTERS];
	char process[64];		/* /proc/PID/comm; "" when unknown */
	int has_process;
};

/* What one read of a segment saw. */
struct pool_snap {
	char name[SHMPOOL_NAME_MAX + 1];
	const char *path;
	int huge;
	uint64_t page_size, seg_size, create_time;
	uint32_t create_nsec;		/* 0 in a segment that does not keep it */
	uint32_t size, obj_size, elt_size, trailer_size;
	uint32_t cache_size, flushthresh, nb_slots, nb_rings;
	uint32_t common_pool_count, avail, in_use, caches_in_use;
	uint64_t total_cache_count;
	uint64_t stats[SNAP_COUNTERS];	/* live slots + retired */
	uint64_t retired[SNAP_COUNTERS];
	struct slot_snap *slots;	/* the live (not free) ones */
	uint32_t nb_live;
	/* Slots read as best could be, to be said (dump): in the middle
	 * of a change or a release that did not end (an owner stopped or
	 * killed there, not reclaimed yet); with a cache length past the
	 * pool's objects (counted as 0); in a state no library writes. */
	uint32_t unsettled, bad_len, bad_state;
	/* Rings whose heads are not those of a ring (ring_heads_read()):
	 * their counts taken as clamped. */
	uint32_t bad_rings;
};

/*
 * Read the segment of ref read-only into snap (with the processes' names
 * when want_process).  Returns 0, or -errno with the reason in err.
 */
int pool_snap_read(const struct pool_ref *ref, struct pool_snap *snap,
		int want_process, char *err, size_t errsz);
void pool_snap_free(struct pool_snap *snap);

int do_dump(struct ctl *c, int argc, char **argv);

/* watch.c */
int do_watch(struct ctl *c, int argc, char **argv);
/* The options of dump and watch, for wants_json() too. */
extern const struct option dump_opts[];
extern const struct option watch_opts[];
/* End the process of sig, one of the signals that end watch, caught and
 * blocked since (a batch's ctl.sig): its default action back, it alone
 * unblocked, and raised. */
void watch_die_of(int sig);

#endif /* SHMPOOLCTL_H */
