/*
 * ctl-worker.c - a worker that tests/ctl.sh drives: it attaches to a pool
 * by name through shmpoold and runs a script of gets and puts, so that the
 * counters and cache lengths shmpoolctl shows can be predicted exactly.
 *
 *   ctl-worker POOL [--cache N] OP...
 *
 * The pool is found through $SHMPOOL_SOCKET; --cache N attaches with a
 * cache of N objects (SHMPOOL_ATTACH_CACHE_SIZE) instead of the pool's
 * default.  The OPs run in order:
 *
 *   get:N      shmpool_get_bulk() of N objects, pushed on a private stack
 *              (exit 10 if it fails)
 *   put:N      shmpool_put_bulk() of the top N objects of the stack, in the
 *              order they were got
 *   getfail:N  a shmpool_get_bulk() of N that must fail with -ENOENT
 *              (exit 11 otherwise)
 *   wait       print "waiting", then block until a line arrives on stdin
 *   hold       print "ready", then block until killed or stdin ends
 *   stall      leave the default cache as if stopped in the middle of a
 *              change that changes nothing (its record written, its seq
 *              odd): readers take the record (with stats; else nothing)
 *   breakring  move ring 0's consumers' head past its producers' (heads
 *              no ring can have), until
 *   fixring    puts it back
 *   detach     shmpool_detach()
 *
 *   ctl-worker --serve SOCKET REPLY
 *
 * stands in for shmpoold on SOCKET instead (a SOCK_SEQPACKET socket it
 * makes): once it listens it prints "ready", answers one request with
 * REPLY, as it is, waits for the client to close, removes SOCKET and
 * exits 0; for replies shmpoold never sends (tests/ctl.sh,
 * tests/check_daemon.c).
 *
 * Then it exits 0, without detaching unless asked: the objects it still
 * holds stay in use, its cache is reclaimed by shmpoold.  Exit 1 for a
 * failure other than those above, 2 for a bad command line (checked whole
 * before attaching).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "shmpool.h"
#include "segment-internal.h"

#define EXIT_USAGE	2
#define EXIT_GET	10
#define EXIT_GETFAIL	11

enum op_kind { OP_GET, OP_PUT, OP_GETFAIL, OP_WAIT, OP_HOLD, OP_STALL,
	OP_BREAKRING, OP_FIXRING, OP_DETACH };

struct op {
	enum op_kind kind;
	unsigned int n;
	const char *text;		/* as given, for messages */
};

/* The objects got and not put back yet; the top is objs[len - 1]. */
struct stack {
	void **objs;
	size_t len;
	size_t cap;
};

static const char progname[] = "ctl-worker";

static void
usage(void)
{
	fprintf(stderr, "usage: %s POOL [--cache N] "
		"{get:N|put:N|getfail:N|wait|hold|detach}...\n"
		"       %s --serve SOCKET REPLY\n", progname, progname);
}

/* A count in 1 .. SHMPOOL_OBJ_COUNT_MAX; -1 if s is not one. */
static int
parse_count(const char *s, unsigned int *n)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0 ||
	    v > SHMPOOL_OBJ_COUNT_MAX)
		return -1;
	*n = (unsigned int)v;
	return 0;
}

static int
parse_op(const char *s, struct op *op)
{
	static const struct {
		const char *prefix;
		enum op_kind kind;
	} counted[] = {
		{ "get:", OP_GET },
		{ "put:", OP_PUT },
		{ "getfail:", OP_GETFAIL },
	};
	size_t i;

	op->text = s;
	op->n = 0;
	for (i = 0; i < sizeof(counted) / sizeof(counted[0]); i++) {
		size_t len = strlen(counted[i].prefix);

		if (strncmp(s, counted[i].prefix, len) == 0) {
			op->kind = counted[i].kind;
			return parse_count(s + len, &op->n);
		}
	}
	if (strcmp(s, "wait") == 0)
		op->kind = OP_WAIT;
	else if (strcmp(s, "hold") == 0)
		op->kind = OP_HOLD;
	else if (strcmp(s, "stall") == 0)
		op->kind = OP_STALL;
	else if (strcmp(s, "breakring") == 0)
		op->kind = OP_BREAKRING;
	else if (strcmp(s, "fixring") == 0)
		op->kind = OP_FIXRING;
	else if (strcmp(s, "detach") == 0)
		op->kind = OP_DETACH;
	else
		return -1;
	return 0;
}

/*
 * Check the whole script before attaching: each op known, no put of more
 * than is held, nothing that touches the pool once detached.
 */
static int
check_script(const struct op *ops, int nops)
{
	unsigned long held = 0;
	int i, detached = 0;

	for (i = 0; i < nops; i++) {
		const struct op *op = &ops[i];

		if (detached && op->kind != OP_WAIT && op->kind != OP_HOLD) {
			fprintf(stderr, "%s: %s: the pool is detached by then\n",
				progname, op->text);
			return -1;
		}
		switch (op->kind) {
		case OP_GET:
			held += op->n;
			break;
		case OP_PUT:
			if (op->n > held) {
				fprintf(stderr, "%s: %s: only %lu objects are "
					"held by then\n", progname, op->text,
					held);
				return -1;
			}
			held -= op->n;
			break;
		case OP_DETACH:
			detached = 1;
			break;
		default:
			break;
		}
	}
	return 0;
}

static int
stack_reserve(struct stack *st, size_t more)
{
	void **objs;
	size_t cap;

	if (st->len + more <= st->cap)
		return 0;
	cap = st->cap != 0 ? st->cap : 64;
	while (cap < st->len + more)
		cap *= 2;
	objs = realloc(st->objs, cap * sizeof(*objs));
	if (objs == NULL) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return -1;
	}
	st->objs = objs;
	st->cap = cap;
	return 0;
}

/* Print a line for the driving script, at once. */
static int
say(const char *line)
{
	if (printf("%s\n", line) < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "%s: cannot write to stdout: %s\n", progname,
			strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Read stdin until a newline (line != 0) or its end.  read(2) one byte at
 * a time: nothing meant for a later wait is consumed.  Returns 1 for a
 * line, 0 at the end of input, -1 on error.
 */
static int
read_stdin(int line)
{
	char ch;
	ssize_t n;

	for (;;) {
		n = read(STDIN_FILENO, &ch, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "%s: cannot read stdin: %s\n",
				progname, strerror(errno));
			return -1;
		}
		if (n == 0)
			return 0;
		if (line && ch == '\n')
			return 1;
	}
}

static int
run_op(struct shmpool **poolp, struct stack *st, const struct op *op)
{
	void **objs;
	int ret;

	switch (op->kind) {
	case OP_GET:
		if (stack_reserve(st, op->n) < 0)
			return EXIT_FAILURE;
		ret = shmpool_get_bulk(*poolp, &st->objs[st->len], op->n);
		if (ret < 0) {
			fprintf(stderr, "%s: %s: %s\n", progname, op->text,
				shmpool_strerror(ret));
			return EXIT_GET;
		}
		st->len += op->n;
		return 0;
	case OP_PUT:
		ret = shmpool_put_bulk(*poolp, &st->objs[st->len - op->n],
			op->n);
		if (ret < 0) {
			fprintf(stderr, "%s: %s: %s\n", progname, op->text,
				shmpool_strerror(ret));
			return EXIT_FAILURE;
		}
		st->len -= op->n;
		return 0;
	case OP_GETFAIL:
		objs = calloc(op->n, sizeof(*objs));
		if (objs == NULL) {
			fprintf(stderr, "%s: out of memory\n", progname);
			return EXIT_FAILURE;
		}
		ret = shmpool_get_bulk(*poolp, objs, op->n);
		free(objs);
		if (ret != -ENOENT) {
			fprintf(stderr, "%s: %s: expected %s, got %s\n",
				progname, op->text, shmpool_strerror(-ENOENT),
				ret == 0 ? "success" : shmpool_strerror(ret));
			return EXIT_GETFAIL;
		}
		return 0;
	case OP_WAIT:
		if (say("waiting") < 0)
			return EXIT_FAILURE;
		ret = read_stdin(1);
		if (ret <= 0) {
			if (ret == 0)
				fprintf(stderr, "%s: wait: stdin ended before "
					"a line came\n", progname);
			return EXIT_FAILURE;
		}
		return 0;
	case OP_HOLD:
		if (say("ready") < 0)
			return EXIT_FAILURE;
		return read_stdin(0) < 0 ? EXIT_FAILURE : 0;
	case OP_STALL:
#if SHMPOOL_STATS
	{
		struct shmpool_cache *c = shmpool_default_cache(*poolp);

		c->change.w = c->w;
		c->change.objs_adj = c->objs_adj;
		c->change.put_bulk = c->put_bulk;
		c->change.put_objs = c->put_objs;
		c->change.get_success_bulk = c->get_success_bulk;
		c->seq++;
	}
#endif
		return 0;
	case OP_BREAKRING:
	case OP_FIXRING:
	{
		struct ring *r = pool_handle(*poolp)->rings[0].r;
		static uint64_t moved;

		/* Consumers 5 positions past producers, and back. */
		if (op->kind == OP_BREAKRING) {
			moved = r->prod_head - r->cons_head + 5;
			r->cons_head += moved;
		} else {
			r->cons_head -= moved;
		}
		return 0;
	}
	case OP_DETACH:
		ret = shmpool_detach(*poolp);
		*poolp = NULL;
		if (ret < 0) {
			fprintf(stderr, "%s: detach: %s\n", progname,
				shmpool_strerror(ret));
			return EXIT_FAILURE;
		}
		return 0;
	}
	return EXIT_FAILURE;
}

/* --serve (above): 0, or 1 with a message. */
static int
serve(const char *path, const char *reply)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[4096];
	int ls, c;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "%s: --serve: path too long\n", progname);
		return 1;
	}
	strcpy(sa.sun_path, path);
	ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(ls, 1) < 0) {
		fprintf(stderr, "%s: --serve %s: %s\n", progname, path,
			strerror(errno));
		return 1;
	}
	/* Not before listen(): a connect to the file alone is refused. */
	if (say("ready") < 0) {
		unlink(path);
		return 1;
	}
	c = accept(ls, NULL, NULL);
	if (c < 0 || recv(c, req, sizeof(req), 0) <= 0 ||
	    send(c, reply, strlen(reply), MSG_NOSIGNAL) !=
	    (ssize_t)strlen(reply)) {
		fprintf(stderr, "%s: --serve %s: %s\n", progname, path,
			strerror(errno));
		unlink(path);
		return 1;
	}
	/* Until the client has read it and gone. */
	(void)recv(c, req, sizeof(req), 0);
	close(c);
	close(ls);
	unlink(path);
	return 0;
}

int
main(int argc, char **argv)
{
	struct shmpool_attach_opts opts = { .path = NULL, .flags = 0 };
	struct stack st = { .objs = NULL, .len = 0, .cap = 0 };
	struct shmpool *pool = NULL;
	struct op *ops;
	const char *name;
	int i, first, nops, ret;

	/* Run through libtool's wrapper or not, this is the name
	 * /proc/PID/comm shows (and shmpoolctl dump --per-cache). */
	prctl(PR_SET_NAME, progname, 0, 0, 0);

	if (argc < 2) {
		usage();
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--serve") == 0) {
		if (argc != 4) {
			usage();
			return EXIT_USAGE;
		}
		return serve(argv[2], argv[3]);
	}
	name = argv[1];
	first = 2;
	if (argc > 2 && strcmp(argv[2], "--cache") == 0) {
		unsigned long v;
		char *end;

		if (argc < 4 || argv[3][0] < '0' || argv[3][0] > '9') {
			usage();
			return EXIT_USAGE;
		}
		errno = 0;
		v = strtoul(argv[3], &end, 10);
		if (errno != 0 || *end != '\0' || v > SHMPOOL_CACHE_MAX_SIZE) {
			fprintf(stderr, "%s: --cache: '%s' is not a number in "
				"0..%d\n", progname, argv[3],
				SHMPOOL_CACHE_MAX_SIZE);
			return EXIT_USAGE;
		}
		opts.flags = SHMPOOL_ATTACH_CACHE_SIZE;
		opts.cache_size = (unsigned int)v;
		first = 4;
	}

	nops = argc - first;
	ops = calloc(nops > 0 ? (size_t)nops : 1, sizeof(*ops));
	if (ops == NULL) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return EXIT_FAILURE;
	}
	for (i = 0; i < nops; i++) {
		if (parse_op(argv[first + i], &ops[i]) < 0) {
			fprintf(stderr, "%s: bad op '%s'\n", progname,
				argv[first + i]);
			usage();
			free(ops);
			return EXIT_USAGE;
		}
	}
	if (check_script(ops, nops) < 0) {
		free(ops);
		return EXIT_USAGE;
	}

	ret = shmpool_attach(name, opts.flags != 0 ? &opts : NULL, &pool);
	if (ret < 0) {
		const char *detail = shmpool_last_error();

		fprintf(stderr, "%s: cannot attach to pool '%s': %s\n",
			progname, name, detail[0] != '\0' ? detail :
			shmpool_strerror(ret));
		free(ops);
		return EXIT_FAILURE;
	}

	ret = 0;
	for (i = 0; i < nops && ret == 0; i++)
		ret = run_op(&pool, &st, &ops[i]);
	free(st.objs);
	free(ops);
	return ret;
}
