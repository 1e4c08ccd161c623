/*
 * shmpoolctl.c - create, destroy, list and describe pools through shmpoold.
 *
 * Each verb checks its arguments here, sends one request over the control
 * protocol (shmpool-protocol(7)) and prints the reply.  Exit status: 0 ok,
 * 1 the request failed, 2 usage error, 3 shmpoold unreachable, 4 no such
 * pool.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"
#include "shmpool.h"

#define EXIT_OK			0
#define EXIT_FAILED		1
#define EXIT_USAGE		2
#define EXIT_UNREACHABLE	3
#define EXIT_NO_POOL		4

#define MODE_MAX		0777
#define ACCOUNT_MAX		255	/* bytes in a user or group */

/* What getopt names in its messages, and what ours start with. */
static char progname[] = "shmpoolctl";

static const char usage_main[] =
	"usage: shmpoolctl [-s|--socket PATH] [-h|--help] [-V|--version] "
	"VERB ARGS...\n";

static const char usage_create[] =
	"usage: shmpoolctl [-s PATH] create NAME --objects N --object-size S\n"
	"         [--cache C] [--slots K] [--huge require|prefer|never]\n"
	"         [--owner U] [--group G] [--mode M] [--if-not-exists]\n";

static const char usage_destroy[] =
	"usage: shmpoolctl [-s PATH] destroy NAME [--force]\n";

static const char usage_list[] =
	"usage: shmpoolctl [-s PATH] list\n";

static const char usage_info[] =
	"usage: shmpoolctl [-s PATH] info NAME\n";

static const char usage_ping[] =
	"usage: shmpoolctl [-s PATH] ping\n";

static const char help_text[] =
	"\n"
	"Verbs:\n"
	"  create NAME --objects N --object-size S [--cache C] [--slots K]\n"
	"         [--huge require|prefer|never] [--owner U] [--group G]\n"
	"         [--mode M] [--if-not-exists]\n"
	"                     create the pool NAME of N objects of S bytes\n"
	"  destroy NAME [--force]\n"
	"                     destroy the pool NAME (--force: even while\n"
	"                     processes are attached)\n"
	"  list               list the pools\n"
	"  info NAME          describe the pool NAME\n"
	"  ping               check that shmpoold answers\n"
	"\n"
	"Options:\n"
	"  -s, --socket PATH  shmpoold's socket (default: $" PROTO_SOCKET_ENV
	" or\n"
	"                     " PROTO_SOCKET_DEFAULT ")\n"
	"  -h, --help         print this help and exit\n"
	"  -V, --version      print the version and exit\n"
	"\n"
	"Exit status: 0 ok, 1 the request failed, 2 usage error, 3 shmpoold\n"
	"unreachable, 4 no such pool.\n";

/* One exchange with the daemon. */
struct ctl {
	const char *socket;		/* NULL: proto_socket_path() */
	char *buf;			/* PROTO_REPLY_MAX + 1 bytes */
	struct proto_msg msg;		/* the reply, parsed */
	int unreachable;		/* no reply came */
};

/* A request being built: "VERB key=value ...". */
struct req {
	char text[PROTO_REQ_MAX + 1];
	size_t len;
};

/* Print "shmpoolctl: problem" and the verb's usage; return EXIT_USAGE. */
static int usage_error(const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
usage_error(const char *usage, const char *fmt, ...)
{
	va_list ap;

	if (fmt != NULL) {
		fprintf(stderr, "%s: ", progname);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	fputs(usage, stderr);
	return EXIT_USAGE;
}

/* Append " key=value" (or the verb alone when value is NULL). */
static int
req_add(struct req *r, const char *key, const char *value)
{
	size_t room = sizeof(r->text) - r->len;
	int n;

	if (value == NULL)
		n = snprintf(r->text + r->len, room, "%s%s",
			r->len != 0 ? " " : "", key);
	else
		n = snprintf(r->text + r->len, room, " %s=%s", key, value);
	if (n < 0 || (size_t)n >= room) {
		fprintf(stderr, "%s: the request would exceed %d bytes\n",
			progname, PROTO_REQ_MAX);
		return -1;
	}
	r->len += (size_t)n;
	return 0;
}

static int
req_add_u64(struct req *r, const char *key, uint64_t value)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, value);
	return req_add(r, key, num);
}

/*
 * Send the request and wait for the reply.  Returns 0 for "ok", or the
 * negative errno of a daemon error or of a transport failure (then
 * c->unreachable is set when nothing answered); the detail is in
 * shmpool_last_error().
 */
static int
ctl_call(struct ctl *c, const struct req *r)
{
	int sock, ret;

	memset(&c->msg, 0, sizeof(c->msg));
	c->unreachable = 0;
	sock = proto_connect(c->socket);
	if (sock < 0) {
		c->unreachable = 1;
		return sock;
	}
	ret = proto_call(sock, r->text, c->buf, PROTO_REPLY_MAX + 1, &c->msg,
		NULL);
	close(sock);
	/* A transport failure leaves the message unparsed. */
	if (ret == -ECONNREFUSED && c->msg.verb == NULL)
		c->unreachable = 1;
	return ret;
}

/* Report a failed call; returns the exit status. */
static int
ctl_fail(const struct ctl *c, int ret, int enoent_is_no_pool)
{
	const char *text = shmpool_last_error();

	if (text == NULL || text[0] == '\0')
		text = proto_errname(ret);
	fprintf(stderr, "%s: %s\n", progname, text);
	if (c->unreachable)
		return EXIT_UNREACHABLE;
	if (enoent_is_no_pool && ret == -ENOENT)
		return EXIT_NO_POOL;
	return EXIT_FAILED;
}

static const char *
reply_get(const struct ctl *c, const char *key)
{
	const char *v = proto_get(&c->msg, key);

	return v != NULL ? v : "?";
}

/* Take NAME from the arguments left over: exactly one, a valid name. */
static int
take_name(const char *usage, char **args, int nargs, const char **namep)
{
	if (nargs == 0)
		return usage_error(usage, "missing the pool NAME");
	if (nargs > 1)
		return usage_error(usage, "unexpected argument '%s'", args[1]);
	if (!shmpool_name_valid(args[0]))
		return usage_error(usage, "bad pool name '%s': a name is 1-%d "
			"of A-Z a-z 0-9 . _ -, not starting with '.'",
			args[0], SHMPOOL_NAME_MAX);
	*namep = args[0];
	return 0;
}

/*
 * Parse the arguments of a verb: the options in opts, the non-options
 * (in any order among them) gathered in args[0 .. *nargs).  argv[0] is
 * the verb, which is replaced by the program's name for getopt's
 * messages.  Returns the next option as getopt_long() does, with 1 never
 * returned; -1 at the end.
 */
struct verb_args {
	int argc;
	char **argv;
	const struct option *opts;
	char **args;			/* argc entries */
	int nargs;
};

static int
next_opt(struct verb_args *va)
{
	int ch;

	for (;;) {
		/* "-": non-options come back as 1, whatever the environment. */
		ch = getopt_long(va->argc, va->argv, "-h", va->opts, NULL);
		if (ch != 1)
			break;
		va->args[va->nargs++] = optarg;
	}
	if (ch == -1)
		/* What follows "--" is not options. */
		while (optind < va->argc)
			va->args[va->nargs++] = va->argv[optind++];
	return ch;
}

static int
verb_args_init(struct verb_args *va, int argc, char **argv,
		const struct option *opts)
{
	va->argc = argc;
	va->argv = argv;
	va->opts = opts;
	va->nargs = 0;
	va->args = calloc((size_t)argc, sizeof(*va->args));
	if (va->args == NULL) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return -1;
	}
	argv[0] = progname;
	optind = 0;		/* reinitialize getopt for a new vector */
	opterr = 1;
	return 0;
}

static int
verb_help(const char *usage)
{
	fputs(usage, stdout);
	return EXIT_OK;
}

/* A decimal option in [min, max], or a usage error. */
static int
parse_num(const char *usage, const char *opt, const char *s, uint64_t min,
		uint64_t max, uint64_t *out)
{
	if (proto_u64(s, min, max, out) < 0)
		return usage_error(usage, "--%s: '%s' is not a decimal number "
			"in %" PRIu64 "..%" PRIu64, opt, s, min, max);
	return 0;
}

/* A user or group: a name or a number, one protocol token. */
static int
parse_account(const char *usage, const char *opt, const char *s)
{
	size_t i, len = strlen(s);

	for (i = 0; i < len; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == '=')
			break;
	if (len == 0 || len > ACCOUNT_MAX || i < len)
		return usage_error(usage, "--%s: '%.*s' is not a %s name or "
			"number", opt, ACCOUNT_MAX, s,
			strcmp(opt, "owner") == 0 ? "user" : "group");
	return 0;
}

/* An octal mode, 0 .. 0777. */
static int
parse_mode(const char *usage, const char *s, unsigned int *out)
{
	unsigned int v = 0;
	const char *p;

	for (p = s; *p >= '0' && *p <= '7'; p++) {
		v = v * 8 + (unsigned int)(*p - '0');
		if (v > MODE_MAX)
			break;
	}
	if (p == s || *p != '\0')
		return usage_error(usage, "--mode: '%s' is not an octal mode "
			"in 0..0777", s);
	*out = v;
	return 0;
}

enum {
	OPT_OBJECTS = 256,
	OPT_OBJECT_SIZE,
	OPT_CACHE,
	OPT_SLOTS,
	OPT_HUGE,
	OPT_OWNER,
	OPT_GROUP,
	OPT_MODE,
	OPT_IF_NOT_EXISTS,
	OPT_FORCE,
};

static const struct option create_opts[] = {
	{ "objects", required_argument, NULL, OPT_OBJECTS },
	{ "object-size", required_argument, NULL, OPT_OBJECT_SIZE },
	{ "cache", required_argument, NULL, OPT_CACHE },
	{ "slots", required_argument, NULL, OPT_SLOTS },
	{ "huge", required_argument, NULL, OPT_HUGE },
	{ "owner", required_argument, NULL, OPT_OWNER },
	{ "group", required_argument, NULL, OPT_GROUP },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "if-not-exists", no_argument, NULL, OPT_IF_NOT_EXISTS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct create_args {
	const char *name;
	uint64_t objects, object_size, cache, slots;
	int has_objects, has_object_size, has_cache, has_slots;
	const char *huge, *owner, *group;
	unsigned int mode;
	int has_mode, if_not_exists;
};

static int
create_parse(struct verb_args *va, struct create_args *a)
{
	const char *u = usage_create;
	int ch, ret;

	while ((ch = next_opt(va)) != -1) {
		ret = 0;
		switch (ch) {
		case OPT_OBJECTS:
			ret = parse_num(u, "objects", optarg, 1,
				SHMPOOL_OBJ_COUNT_MAX, &a->objects);
			a->has_objects = 1;
			break;
		case OPT_OBJECT_SIZE:
			ret = parse_num(u, "object-size", optarg, 1,
				SHMPOOL_OBJ_SIZE_MAX, &a->object_size);
			a->has_object_size = 1;
			break;
		case OPT_CACHE:
			ret = parse_num(u, "cache", optarg, 0,
				SHMPOOL_CACHE_MAX_SIZE, &a->cache);
			a->has_cache = 1;
			break;
		case OPT_SLOTS:
			ret = parse_num(u, "slots", optarg, 1,
				SHMPOOL_SLOTS_MAX, &a->slots);
			a->has_slots = 1;
			break;
		case OPT_HUGE:
			if (strcmp(optarg, "require") != 0 &&
			    strcmp(optarg, "prefer") != 0 &&
			    strcmp(optarg, "never") != 0)
				return usage_error(u, "--huge: '%s' is not "
					"require, prefer or never", optarg);
			a->huge = optarg;
			break;
		case OPT_OWNER:
			ret = parse_account(u, "owner", optarg);
			a->owner = optarg;
			break;
		case OPT_GROUP:
			ret = parse_account(u, "group", optarg);
			a->group = optarg;
			break;
		case OPT_MODE:
			ret = parse_mode(u, optarg, &a->mode);
			a->has_mode = 1;
			break;
		case OPT_IF_NOT_EXISTS:
			a->if_not_exists = 1;
			break;
		case 'h':
			return -1;
		default:
			/* getopt said what was wrong. */
			return usage_error(u, NULL);
		}
		if (ret != 0)
			return ret;
	}

	ret = take_name(u, va->args, va->nargs, &a->name);
	if (ret != 0)
		return ret;
	if (!a->has_objects)
		return usage_error(u, "--objects is required");
	if (!a->has_object_size)
		return usage_error(u, "--object-size is required");
	/* A cache flushes at 1.5 times its size: the pool must hold that. */
	if (a->has_cache && a->cache * 3 > a->objects * 2)
		return usage_error(u, "--cache: %" PRIu64 " needs at least "
			"%" PRIu64 " objects (1.5 times), --objects is %"
			PRIu64, a->cache, (a->cache * 3 + 1) / 2, a->objects);
	return 0;
}

static int
do_create(struct ctl *c, int argc, char **argv)
{
	struct create_args a;
	struct verb_args va;
	struct req r = { .len = 0 };
	char mode[16];
	int ret;

	memset(&a, 0, sizeof(a));
	if (verb_args_init(&va, argc, argv, create_opts) < 0)
		return EXIT_FAILED;
	ret = create_parse(&va, &a);
	free(va.args);
	if (ret < 0)
		return verb_help(usage_create);
	if (ret != 0)
		return ret;

	if (req_add(&r, "create", NULL) < 0 ||
	    req_add(&r, "name", a.name) < 0 ||
	    req_add_u64(&r, "objects", a.objects) < 0 ||
	    req_add_u64(&r, "object-size", a.object_size) < 0 ||
	    (a.has_cache && req_add_u64(&r, "cache", a.cache) < 0) ||
	    (a.has_slots && req_add_u64(&r, "slots", a.slots) < 0) ||
	    (a.huge != NULL && req_add(&r, "huge", a.huge) < 0) ||
	    (a.owner != NULL && req_add(&r, "owner", a.owner) < 0) ||
	    (a.group != NULL && req_add(&r, "group", a.group) < 0))
		return EXIT_USAGE;
	if (a.has_mode) {
		snprintf(mode, sizeof(mode), "0%03o", a.mode);
		if (req_add(&r, "mode", mode) < 0)
			return EXIT_USAGE;
	}

	ret = ctl_call(c, &r);
	if (ret == -EEXIST && a.if_not_exists && !c->unreachable) {
		printf("pool %s exists\n", a.name);
		return EXIT_OK;
	}
	if (ret < 0)
		return ctl_fail(c, ret, 0);
	printf("created %s (memory=%s page-size=%s path=%s)\n",
		proto_get(&c->msg, "name") != NULL ?
		proto_get(&c->msg, "name") : a.name,
		reply_get(c, "memory"), reply_get(c, "page-size"),
		reply_get(c, "path"));
	return EXIT_OK;
}

static const struct option destroy_opts[] = {
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int
do_destroy(struct ctl *c, int argc, char **argv)
{
	struct verb_args va;
	struct req r = { .len = 0 };
	const char *name = NULL;
	int ch, force = 0, ret = 0;

	if (verb_args_init(&va, argc, argv, destroy_opts) < 0)
		return EXIT_FAILED;
	while (ret == 0 && (ch = next_opt(&va)) != -1) {
		if (ch == OPT_FORCE)
			force = 1;
		else if (ch == 'h')
			ret = -1;
		else
			ret = usage_error(usage_destroy, NULL);
	}
	if (ret == 0)
		ret = take_name(usage_destroy, va.args, va.nargs, &name);
	free(va.args);
	if (ret < 0)
		return verb_help(usage_destroy);
	if (ret != 0)
		return ret;

	if (req_add(&r, "destroy", NULL) < 0 ||
	    req_add(&r, "name", name) < 0 ||
	    (force && req_add(&r, "force", "1") < 0))
		return EXIT_USAGE;
	ret = ctl_call(c, &r);
	if (ret < 0)
		return ctl_fail(c, ret, 1);
	printf("destroyed %s\n", name);
	return EXIT_OK;
}

static const struct option plain_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/*
 * The arguments of a verb with no options: NAME when namep is not NULL,
 * else nothing.  Returns 0, -1 for --help, or EXIT_USAGE.
 */
static int
plain_parse(const char *usage, int argc, char **argv, const char **namep)
{
	struct verb_args va;
	int ch, ret = 0;

	if (verb_args_init(&va, argc, argv, plain_opts) < 0)
		return EXIT_FAILED;
	while (ret == 0 && (ch = next_opt(&va)) != -1)
		ret = ch == 'h' ? -1 : usage_error(usage, NULL);
	if (ret == 0 && namep != NULL)
		ret = take_name(usage, va.args, va.nargs, namep);
	else if (ret == 0 && va.nargs > 0)
		ret = usage_error(usage, "unexpected argument '%s'",
			va.args[0]);
	free(va.args);
	return ret;
}

/* Print key: value for each key of the reply, in its order. */
static void
print_keys(const struct proto_msg *msg)
{
	unsigned int i;

	for (i = 0; i < msg->nkv; i++)
		printf("%s: %s\n", msg->kv[i].key, msg->kv[i].value);
	if (msg->text != NULL)
		printf("msg: %s\n", msg->text);
}

static int
do_info(struct ctl *c, int argc, char **argv)
{
	struct req r = { .len = 0 };
	const char *name = NULL;
	int ret;

	ret = plain_parse(usage_info, argc, argv, &name);
	if (ret < 0)
		return verb_help(usage_info);
	if (ret != 0)
		return ret;
	if (req_add(&r, "info", NULL) < 0 || req_add(&r, "name", name) < 0)
		return EXIT_USAGE;
	ret = ctl_call(c, &r);
	if (ret < 0)
		return ctl_fail(c, ret, 1);
	print_keys(&c->msg);
	return EXIT_OK;
}

static int
do_ping(struct ctl *c, int argc, char **argv)
{
	struct req r = { .len = 0 };
	int ret;

	ret = plain_parse(usage_ping, argc, argv, NULL);
	if (ret < 0)
		return verb_help(usage_ping);
	if (ret != 0)
		return ret;
	if (req_add(&r, "ping", NULL) < 0)
		return EXIT_USAGE;
	ret = ctl_call(c, &r);
	if (ret < 0)
		return ctl_fail(c, ret, 0);
	print_keys(&c->msg);
	return EXIT_OK;
}

/* The columns of list: the reply key, the heading, right-aligned or not. */
#define LIST_COLS	6
static const struct {
	const char *key;
	const char *head;
	int right;
} list_cols[LIST_COLS] = {
	{ "name", "NAME", 0 },
	{ "memory", "MEMORY", 0 },
	{ "objects", "OBJECTS", 1 },
	{ "object-size", "OBJECT-SIZE", 1 },
	{ "slots-in-use", "SLOTS-IN-USE", 1 },
	{ "avail", "AVAIL", 1 },
};

static int
is_sep(char ch)
{
	return ch == ' ' || ch == '\t';
}

/*
 * Split one line "pool key=value ..." in place into the columns of row
 * (missing keys read "-").  Returns 0, or -1 for a line that is not a
 * pool (skipped).
 */
static int
list_parse_line(char *line, const char **row)
{
	char *p = line, *tok, *eq;
	int first = 1;
	unsigned int i;

	for (i = 0; i < LIST_COLS; i++)
		row[i] = "-";
	for (;;) {
		while (is_sep(*p))
			p++;
		if (*p == '\0')
			break;
		tok = p;
		while (*p != '\0' && !is_sep(*p))
			p++;
		if (*p != '\0')
			*p++ = '\0';
		if (first) {
			if (strcmp(tok, "pool") != 0)
				return -1;
			first = 0;
			continue;
		}
		eq = strchr(tok, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		for (i = 0; i < LIST_COLS; i++)
			if (strcmp(tok, list_cols[i].key) == 0)
				row[i] = eq + 1;
	}
	return first ? -1 : 0;
}

static void
list_print_row(const char * const *row, const size_t *width)
{
	unsigned int i;

	for (i = 0; i < LIST_COLS; i++) {
		int w = (int)width[i];
		const char *sep = i + 1 < LIST_COLS ? " " : "\n";

		if (list_cols[i].right)
			printf("%*s%s", w, row[i], sep);
		else if (i + 1 < LIST_COLS)
			printf("%-*s%s", w, row[i], sep);
		else
			printf("%s%s", row[i], sep);
	}
}

static int
do_list(struct ctl *c, int argc, char **argv)
{
	struct req r = { .len = 0 };
	const char *head[LIST_COLS];
	const char *(*rows)[LIST_COLS];
	size_t width[LIST_COLS], nrows = 0, maxrows = 1, i, j;
	char *p, *eol;
	int ret;

	ret = plain_parse(usage_list, argc, argv, NULL);
	if (ret < 0)
		return verb_help(usage_list);
	if (ret != 0)
		return ret;
	if (req_add(&r, "list", NULL) < 0)
		return EXIT_USAGE;
	ret = ctl_call(c, &r);
	if (ret < 0)
		return ctl_fail(c, ret, 0);

	/* The pool lines follow the first; they are ours to cut up. */
	p = c->msg.rest != NULL ? c->buf + (c->msg.rest - c->buf) : NULL;
	for (eol = p; eol != NULL && *eol != '\0'; eol++)
		if (*eol == '\n')
			maxrows++;
	rows = calloc(maxrows, sizeof(*rows));
	if (rows == NULL) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return EXIT_FAILED;
	}
	while (p != NULL && *p != '\0') {
		eol = strchr(p, '\n');
		if (eol != NULL)
			*eol = '\0';
		if (list_parse_line(p, rows[nrows]) == 0)
			nrows++;
		p = eol != NULL ? eol + 1 : NULL;
	}

	for (j = 0; j < LIST_COLS; j++) {
		head[j] = list_cols[j].head;
		width[j] = strlen(head[j]);
		for (i = 0; i < nrows; i++)
			if (strlen(rows[i][j]) > width[j])
				width[j] = strlen(rows[i][j]);
	}
	list_print_row(head, width);
	for (i = 0; i < nrows; i++)
		list_print_row(rows[i], width);
	free(rows);
	return EXIT_OK;
}

static const struct {
	const char *name;
	int (*run)(struct ctl *c, int argc, char **argv);
} verbs[] = {
	{ "create", do_create },
	{ "destroy", do_destroy },
	{ "list", do_list },
	{ "info", do_info },
	{ "ping", do_ping },
};

static const struct option main_opts[] = {
	{ "socket", required_argument, NULL, 's' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

int
main(int argc, char **argv)
{
	struct ctl c = { .socket = NULL };
	const char *verb;
	size_t i;
	int ch, ret;

	if (argc < 1)
		return usage_error(usage_main, "no arguments");
	argv[0] = progname;
	/* "+": stop at the verb, whose options are its own. */
	while ((ch = getopt_long(argc, argv, "+s:hV", main_opts, NULL)) != -1) {
		switch (ch) {
		case 's':
			if (optarg[0] == '\0')
				return usage_error(usage_main,
					"--socket: the path is empty");
			c.socket = optarg;
			break;
		case 'h':
			fputs(usage_main, stdout);
			fputs(help_text, stdout);
			return EXIT_OK;
		case 'V':
			printf("%s (shmpool) %s\n", progname, PACKAGE_VERSION);
			return EXIT_OK;
		default:
			return usage_error(usage_main, NULL);
		}
	}
	if (optind >= argc)
		return usage_error(usage_main, "missing VERB (create, destroy, "
			"list, info or ping)");
	verb = argv[optind];
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(verb, verbs[i].name) == 0)
			break;
	if (i == sizeof(verbs) / sizeof(verbs[0]))
		return usage_error(usage_main, "unknown verb '%s' (create, "
			"destroy, list, info or ping)", verb);

	c.buf = malloc(PROTO_REPLY_MAX + 1);
	if (c.buf == NULL) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return EXIT_FAILED;
	}
	ret = verbs[i].run(&c, argc - optind, argv + optind);
	free(c.buf);

	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: cannot write the output: %s\n", progname,
			strerror(errno));
		if (ret == EXIT_OK)
			ret = EXIT_FAILED;
	}
	return ret;
}
