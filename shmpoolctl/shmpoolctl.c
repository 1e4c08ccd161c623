/*
 * shmpoolctl.c - create, destroy, list, describe and flush pools through
 * shmpoold; run verbs from a batch file; dump and watch (dump.c, watch.c)
 * read the segments themselves.
 *
 * Each verb checks its arguments here, sends one request over the control
 * protocol (shmpool-protocol(7)) and prints the reply, as text or as one
 * JSON document.  Exit status: 0 ok, 1 the request failed, 2 usage error,
 * 3 shmpoold unreachable, 4 no such pool.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "segment-internal.h"
#include "shmpoolctl.h"

#define MODE_MAX		0777
#define ACCOUNT_MAX		255	/* bytes in a user or group */

/* What our messages start with. */
char progname[] = "shmpoolctl";

static const char usage_main[] =
	"usage: shmpoolctl [-s|--socket PATH] [--json] VERB ARGS...\n"
	"       shmpoolctl [-s|--socket PATH] [--json] -f|--file FILE|- "
	"[--keep-going]\n"
	"       shmpoolctl -h|--help | -V|--version\n";

static const char usage_create[] =
	"usage: shmpoolctl [-s PATH] create NAME --objects N --object-size S\n"
	"         [--cache C] [--slots K] [--huge require|prefer|never]\n"
	"         [--owner U] [--group G] [--mode M] [--if-not-exists] "
	"[--json]\n";

static const char usage_destroy[] =
	"usage: shmpoolctl [-s PATH] destroy NAME [--force] [--json]\n";

static const char usage_list[] =
	"usage: shmpoolctl [-s PATH] list [--json]\n";

static const char usage_info[] =
	"usage: shmpoolctl [-s PATH] info NAME [--json]\n";

static const char usage_ping[] =
	"usage: shmpoolctl [-s PATH] ping [--json]\n";

static const char usage_flush[] =
	"usage: shmpoolctl [-s PATH] flush NAME --slot K [--json]\n";

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
	"  flush NAME --slot K\n"
	"                     have the cache in slot K of NAME emptied into\n"
	"                     the ring\n"
	"  dump [NAME] [--per-cache] [--json|--prometheus]\n"
	"                     print the pools' geometry, counts and counters,\n"
	"                     read from the segments (no daemon needed)\n"
	"  watch [NAME] [--interval S] [--count N]\n"
	"                     show get, put and ring rates every S seconds\n"
	"Each verb takes --json and --help.\n"
	"\n"
	"Options:\n"
	"  -s, --socket PATH  shmpoold's socket (default: $" PROTO_SOCKET_ENV
	" or\n"
	"                     " PROTO_SOCKET_DEFAULT ")\n"
	"      --json         print one JSON document\n"
	"  -f, --file FILE    run the verbs of FILE, one a line (- for stdin)\n"
	"      --keep-going   with -f: go on after a line that fails\n"
	"  -h, --help         print this help and exit\n"
	"  -V, --version      print the version and exit\n"
	"\n"
	"Exit status: 0 ok, 1 the request failed, 2 usage error, 3 shmpoold\n"
	"unreachable, 4 no such pool.\n";

/* A request being built: "VERB key=value ...". */
struct req {
	char text[PROTO_REQ_MAX + 1];
	size_t len;
	int wait_s;			/* for the reply; 0: the default 5 s */
};

/*
 * A create waits for its segment to be allocated, which for gigabytes
 * takes seconds; the daemon answers other requests meanwhile.
 */
#define CREATE_WAIT_S	600

static void
vreport(const struct ctl *c, const char *fmt, va_list ap, char *msg,
		size_t msgsz)
{
	vsnprintf(msg, msgsz, fmt, ap);
	/* What was printed comes before what went wrong. */
	if (c->out == stdout)
		fflush(stdout);
	if (c->where != NULL)
		fprintf(stderr, "%s: %s: %s\n", progname, c->where, msg);
	else
		fprintf(stderr, "%s: %s\n", progname, msg);
}

static void
error_doc(struct ctl *c, int status, const char *code, const char *field,
		const char *value, const char *msg)
{
	struct jw w;

	jw_init(&w, c->out);
	jw_obj_open(&w, NULL);
	jw_obj_open(&w, "error");
	jw_i64(&w, "exit", status);
	jw_str(&w, "code", code);
	jw_str(&w, "message", msg);
	if (field != NULL)
		jw_str(&w, "field", field);
	if (value != NULL)
		jw_str(&w, "value", value);
	jw_obj_close(&w);
	jw_obj_close(&w);
	jw_end(&w);
}

int
ctl_error(struct ctl *c, int status, const char *code, const char *field,
		const char *value, const char *fmt, ...)
{
	char msg[CTL_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vreport(c, fmt, ap, msg, sizeof(msg));
	va_end(ap);
	if (c->json)
		error_doc(c, status, code, field, value, msg);
	return status;
}

void
ctl_warn(const struct ctl *c, const char *fmt, ...)
{
	char msg[CTL_ERRMSG_MAX];
	va_list ap;

	if (c->quiet)
		return;
	va_start(ap, fmt);
	vreport(c, fmt, ap, msg, sizeof(msg));
	va_end(ap);
}

int
usage_error(struct ctl *c, const char *usage, const char *fmt, ...)
{
	char msg[CTL_ERRMSG_MAX] = "";
	va_list ap;

	if (fmt != NULL) {
		va_start(ap, fmt);
		vreport(c, fmt, ap, msg, sizeof(msg));
		va_end(ap);
	}
	fputs(usage, stderr);
	if (c->json)
		error_doc(c, EXIT_USAGE, "usage", NULL, NULL, msg);
	return EXIT_USAGE;
}

int
verb_help(struct ctl *c, const char *usage)
{
	struct jw w;

	if (!c->json) {
		fputs(usage, c->out);
		return EXIT_OK;
	}
	jw_init(&w, c->out);
	jw_obj_open(&w, NULL);
	jw_str(&w, "usage", usage);
	jw_obj_close(&w);
	jw_end(&w);
	return EXIT_OK;
}

/* Append " key=value" (or the verb alone when value is NULL). */
static int
req_add(struct ctl *c, struct req *r, const char *key, const char *value)
{
	size_t room = sizeof(r->text) - r->len;
	int n;

	if (value == NULL)
		n = snprintf(r->text + r->len, room, "%s%s",
			r->len != 0 ? " " : "", key);
	else
		n = snprintf(r->text + r->len, room, " %s=%s", key, value);
	if (n < 0 || (size_t)n >= room)
		return usage_error(c, "", "the request would exceed %d bytes",
			PROTO_REQ_MAX);
	r->len += (size_t)n;
	return 0;
}

static int
req_add_u64(struct ctl *c, struct req *r, const char *key, uint64_t value)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, value);
	return req_add(c, r, key, num);
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
	c->timed_out = 0;
	sock = proto_connect(c->socket);
	if (sock < 0) {
		c->unreachable = 1;
		return sock;
	}
	if (r->wait_s > 0) {
		struct timeval tv = { .tv_sec = r->wait_s };

		setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	ret = proto_call(sock, r->text, c->buf, PROTO_REPLY_MAX + 1, &c->msg,
		NULL);
	close(sock);
	/* No reply in time (the protocol has no ETIMEDOUT error). */
	c->timed_out = ret == -ETIMEDOUT;
	if (c->timed_out)
		ret = -ECONNREFUSED;
	/* A transport failure leaves the message unparsed. */
	if (ret == -ECONNREFUSED && c->msg.verb == NULL)
		c->unreachable = 1;
	return ret;
}

/*
 * Report a failed call; returns the exit status.  ENOENT is "no such
 * pool" (4) when no_pool is set and the daemon blamed the name (or
 * nothing in particular).
 */
static int
call_fail(struct ctl *c, int ret, int no_pool)
{
	const char *text = shmpool_last_error();
	const char *code = NULL, *field = NULL, *value = NULL;
	int status = EXIT_FAILED;

	if (text == NULL || text[0] == '\0')
		text = strerror(-ret);
	if (c->unreachable)
		return ctl_error(c, EXIT_UNREACHABLE, "unreachable", NULL,
			NULL, "%s", text);
	if (c->msg.verb != NULL && strcmp(c->msg.verb, "error") == 0 &&
	    c->msg.code != NULL && c->msg.code[0] != '\0') {
		/* The library's reading of it: a name it does not know is
		 * EIO (shmpool-protocol(7)). */
		code = proto_errname(proto_errnum(c->msg.code));
		field = proto_get(&c->msg, "field");
		value = proto_get(&c->msg, "value");
	}
	if (no_pool && ret == -ENOENT &&
	    (field == NULL || strcmp(field, "name") == 0))
		status = EXIT_NO_POOL;
	return ctl_error(c, status, code != NULL ? code : proto_errname(ret),
		field, value, "%s", text);
}

static const char *
reply_get(const struct ctl *c, const char *key)
{
	const char *v = proto_get(&c->msg, key);

	return v != NULL ? v : "?";
}

/* A reply value as JSON: a number when it reads as one, else a string. */
static int
is_number(const char *v)
{
	size_t i, len = strlen(v);

	if (len == 0 || len > 20 || (v[0] == '0' && len > 1))
		return 0;
	for (i = 0; i < len; i++)
		if (v[i] < '0' || v[i] > '9')
			return 0;
	return 1;
}

/* Keys whose values stay strings, however they read. */
static int
is_string_key(const char *key)
{
	static const char * const keys[] = {
		"name", "path", "mode", "version", "memory", "huge-policy",
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(key, keys[i]) == 0)
			return 1;
	return 0;
}

/* One reply key=value as a JSON member: '-' in the key becomes '_'. */
static void
jw_reply_kv(struct jw *w, const char *key, const char *value)
{
	char k[64];
	size_t i;

	snprintf(k, sizeof(k), "%s", key);
	for (i = 0; k[i] != '\0'; i++)
		if (k[i] == '-')
			k[i] = '_';
	if (strcmp(key, "broken") == 0 &&
	    (strcmp(value, "yes") == 0 || strcmp(value, "no") == 0))
		jw_bool(w, k, value[0] == 'y');
	else if (!is_string_key(key) && is_number(value))
		jw_raw(w, k, value, strlen(value));
	else
		jw_str(w, k, value);
}

/* Take NAME from the arguments left over: one (or none if optional). */
int
take_name(struct ctl *c, const char *usage, char **args, int nargs,
		int required, const char **namep)
{
	*namep = NULL;
	if (nargs == 0)
		return required ? usage_error(c, usage,
			"missing the pool NAME") : 0;
	if (nargs > 1)
		return usage_error(c, usage, "unexpected argument '%s'",
			args[1]);
	if (!shmpool_name_valid(args[0]))
		return usage_error(c, usage, "bad pool name '%s': a name is "
			"1-%d of A-Z a-z 0-9 . _ -, not starting with '.'",
			args[0], SHMPOOL_NAME_MAX);
	*namep = args[0];
	return 0;
}

/*
 * A quiet getopt_long() of argv against optstring and opts, before the
 * real one, whose first error would come before them: whether it meets
 * the option json_code (--json, whole or by a start that names it
 * alone) and, with help not NULL, 'h' (-h, --help).  getopt_long()
 * itself reads the words, so that a value (--owner --json) is one.
 * Returns where it stopped (with "+", the verb); optind is 0 again, for
 * the real pass.
 */
static int
opts_peek(int argc, char **argv, const char *optstring,
		const struct option *opts, int json_code, int *json, int *help)
{
	int ch, stop;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
		if (ch == json_code)
			*json = 1;
		else if (ch == 'h' && help != NULL)
			*help = 1;
	}
	stop = optind;
	optind = 0;
	return stop;
}

int
verb_args_init(struct verb_args *va, struct ctl *c, const char *usage,
		int argc, char **argv, const struct option *opts)
{
	va->c = c;
	va->usage = usage;
	va->argc = argc;
	va->argv = argv;
	va->opts = opts;
	va->nargs = 0;
	va->help = 0;
	/* --json and --help wherever they stand: each is told of, and
	 * as, whatever else is wrong. */
	opts_peek(argc, argv, "-:h", opts, OPT_JSON, &c->json, &va->help);
	va->args = calloc((size_t)argc, sizeof(*va->args));
	if (va->args == NULL)
		return ctl_fail_local(c, ENOMEM, "out of memory");
	argv[0] = progname;
	optind = 0;		/* reinitialize getopt for a new vector */
	opterr = 0;		/* our messages, with their FILE:LINE */
	return 0;
}

void
verb_args_free(struct verb_args *va)
{
	free(va->args);
	va->args = NULL;
}

/* The options that only come before the verb. */
static int
is_global_opt(const char *arg)
{
	static const char * const opts[] = {
		"-s", "-f", "-V", "--socket", "--file", "--keep-going",
		"--version",
	};
	size_t i, len;

	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		len = strlen(opts[i]);
		if (strncmp(arg, opts[i], len) == 0 &&
		    (arg[len] == '\0' || arg[len] == '=' ||
		     (opts[i][1] != '-' && arg[2] != '\0')))
			return 1;
	}
	return 0;
}

/* Say what getopt found wrong with the option just read. */
static int
opt_problem(struct verb_args *va, int ch)
{
	const char *arg = optind > 0 && optind <= va->argc ?
		va->argv[optind - 1] : "";
	const struct option *o;
	size_t len;
	int matches = 0;

	if (!va->top && arg[0] == '-' && is_global_opt(arg))
		return usage_error(va->c, va->usage, va->c->where != NULL ?
			"'%s' is not allowed in a batch line: global options "
			"come before -f" : "'%s' is a global option: give it "
			"before the verb", arg);
	if (ch == ':' && strncmp(arg, "--", 2) != 0)
		return usage_error(va->c, va->usage, "option '-%c' needs an "
			"argument", optopt > 0 && optopt < 128 ? optopt : '?');
	if (ch == ':') {
		for (o = va->opts; o->name != NULL; o++)
			if (o->val == optopt && o->has_arg != no_argument)
				return usage_error(va->c, va->usage, "option "
					"'--%s' needs an argument", o->name);
		return usage_error(va->c, va->usage, "option '%s' needs an "
			"argument", arg);
	}
	if (strncmp(arg, "--", 2) != 0)
		return usage_error(va->c, va->usage, "unknown option '-%c'",
			optopt > 0 && optopt < 128 ? optopt : '?');
	len = strcspn(arg + 2, "=");
	for (o = va->opts; o->name != NULL; o++) {
		if (strncmp(o->name, arg + 2, len) != 0)
			continue;
		if (o->name[len] == '\0')
			return usage_error(va->c, va->usage, "option '--%s' "
				"takes no argument", o->name);
		matches++;
	}
	if (matches > 1)
		return usage_error(va->c, va->usage, "option '%.*s' is "
			"ambiguous", (int)len + 2, arg);
	return usage_error(va->c, va->usage, "unknown option '%.*s'",
		(int)len + 2, arg);
}

int
next_opt(struct verb_args *va, int *status)
{
	int ch;

	/* Asked for anywhere: first, before any fault of the rest. */
	if (va->help) {
		va->help = 0;
		return 'h';
	}
	for (;;) {
		/* "-": non-options come back as 1, whatever the
		 * environment; ":": a missing argument as ':'. */
		ch = getopt_long(va->argc, va->argv, "-:h", va->opts, NULL);
		if (ch == 1)
			va->args[va->nargs++] = optarg;
		else if (ch == OPT_JSON)
			va->c->json = 1;
		else
			break;
	}
	if (ch == -1)
		/* What follows "--" is not options. */
		while (optind < va->argc)
			va->args[va->nargs++] = va->argv[optind++];
	if (ch == '?' || ch == ':') {
		*status = opt_problem(va, ch);
		return '?';
	}
	return ch;
}

/* A decimal option in [min, max], or a usage error. */
int
parse_num(struct ctl *c, const char *usage, const char *opt, const char *s,
		uint64_t min, uint64_t max, uint64_t *out)
{
	if (proto_u64(s, min, max, out) < 0)
		return usage_error(c, usage, "--%s: '%s' is not a decimal "
			"number in %" PRIu64 "..%" PRIu64, opt, s, min, max);
	return 0;
}

#define ACCOUNT_ID_MAX	4294967294ULL	/* the largest uid or gid */

/* A user or group: a name or a number, one protocol token.  A name
 * holds no ':' (the field separator of /etc/passwd and /etc/group) and
 * no '/', which no user or group name can. */
static int
parse_account(struct ctl *c, const char *usage, const char *opt,
		const char *s)
{
	size_t len = strlen(s);
	uint64_t id;

	if (len > ACCOUNT_MAX || !proto_value_ok(s) ||
	    strpbrk(s, ":/") != NULL || s[0] == '-')
		return usage_error(c, usage, "--%s: '%.*s' is not a %s name "
			"or number", opt, ACCOUNT_MAX, s,
			strcmp(opt, "owner") == 0 ? "user" : "group");
	/* A number is an id: (uid_t)-1 and (gid_t)-1 mean none.  Read as
	 * shmpoold reads it (proto_u64(): leading zeros too). */
	if (strspn(s, "0123456789") == len &&
	    proto_u64(s, 0, ACCOUNT_ID_MAX, &id) < 0)
		return usage_error(c, usage, "--%s: %.*s is out of range "
			"0..%llu", opt, ACCOUNT_MAX, s,
			(unsigned long long)ACCOUNT_ID_MAX);
	return 0;
}

/* An octal mode, 0 .. 0777. */
static int
parse_mode(struct ctl *c, const char *usage, const char *s, unsigned int *out)
{
	unsigned int v = 0;
	const char *p;

	for (p = s; *p >= '0' && *p <= '7'; p++) {
		v = v * 8 + (unsigned int)(*p - '0');
		if (v > MODE_MAX)
			break;
	}
	if (p == s || *p != '\0')
		return usage_error(c, usage, "--mode: '%s' is not an octal "
			"mode in 0..0777", s);
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
	OPT_SLOT,
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
	VERB_COMMON_OPTS,
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

/* Returns 0, -1 for --help, or the status of a usage error. */
static int
create_parse(struct verb_args *va, struct create_args *a)
{
	struct ctl *c = va->c;
	const char *u = usage_create;
	int ch, ret = 0;

	while ((ch = next_opt(va, &ret)) != -1) {
		switch (ch) {
		case OPT_OBJECTS:
			ret = parse_num(c, u, "objects", optarg, 1,
				SHMPOOL_OBJ_COUNT_MAX, &a->objects);
			a->has_objects = 1;
			break;
		case OPT_OBJECT_SIZE:
			ret = parse_num(c, u, "object-size", optarg, 1,
				SHMPOOL_OBJ_SIZE_MAX, &a->object_size);
			a->has_object_size = 1;
			break;
		case OPT_CACHE:
			ret = parse_num(c, u, "cache", optarg, 0,
				SHMPOOL_CACHE_MAX_SIZE, &a->cache);
			a->has_cache = 1;
			break;
		case OPT_SLOTS:
			ret = parse_num(c, u, "slots", optarg, 1,
				SHMPOOL_SLOTS_MAX, &a->slots);
			a->has_slots = 1;
			break;
		case OPT_HUGE:
			if (strcmp(optarg, "require") != 0 &&
			    strcmp(optarg, "prefer") != 0 &&
			    strcmp(optarg, "never") != 0)
				ret = usage_error(c, u, "--huge: '%s' is not "
					"require, prefer or never", optarg);
			a->huge = optarg;
			break;
		case OPT_OWNER:
			ret = parse_account(c, u, "owner", optarg);
			a->owner = optarg;
			break;
		case OPT_GROUP:
			ret = parse_account(c, u, "group", optarg);
			a->group = optarg;
			break;
		case OPT_MODE:
			ret = parse_mode(c, u, optarg, &a->mode);
			a->has_mode = 1;
			break;
		case OPT_IF_NOT_EXISTS:
			a->if_not_exists = 1;
			break;
		case 'h':
			return -1;
		default:
			/* next_opt() said what was wrong. */
			break;
		}
		if (ret != 0)
			return ret;
	}

	ret = take_name(c, u, va->args, va->nargs, 1, &a->name);
	if (ret != 0)
		return ret;
	if (!a->has_objects)
		return usage_error(c, u, "--objects is required");
	if (!a->has_object_size)
		return usage_error(c, u, "--object-size is required");
	/* A cache flushes at 1.5 times its size (rounded down, as
	 * SHMPOOL_CACHE_FLUSHTHRESH()): the pool must hold that. */
	if (a->has_cache && a->cache * 3 / 2 > a->objects)
		return usage_error(c, u, "--cache: %" PRIu64 " needs at least "
			"%" PRIu64 " objects (1.5 times), --objects is %"
			PRIu64, a->cache, a->cache * 3 / 2, a->objects);
	if (!seg_objs_fit(a->objects, a->object_size))
		return usage_error(c, u, "--objects %" PRIu64 " of "
			"--object-size %" PRIu64 " exceed the 256 GiB a pool "
			"can address", a->objects, a->object_size);
	return 0;
}

#define EXISTS		1	/* await_pool(): the pool is there */
#define AWAIT_POLL_NS	50000000

/* An EEXIST that names the pool (field=name: it exists or is being
 * created), not a file in the way that no pool will come from. */
static int
eexist_of_pool(const struct ctl *c)
{
	const char *field = proto_get(&c->msg, "field");

	return field == NULL || strcmp(field, "name") == 0;
}

/*
 * create --if-not-exists found the name taken: by a pool, or by another
 * create still building its segment, whose pool answers info only once
 * built.  Wait until info answers (EXISTS), or create it after all if
 * that other create failed (0, the create's reply in c->msg); else the
 * failure, as ctl_call() returns it, or -ETIMEDOUT after CREATE_WAIT_S.
 */
static int
await_pool(struct ctl *c, const struct req *create, const char *name)
{
	const struct timespec pause = { 0, AWAIT_POLL_NS };
	struct req info = { .len = 0 };
	int64_t start;
	int ret;

	ret = req_add(c, &info, "info", NULL);
	if (ret == 0)
		ret = req_add(c, &info, "name", name);
	if (ret != 0)
		return ret;
	/* The time the requests take counts too. */
	start = now_ns();
	for (;;) {
		ret = ctl_call(c, &info);
		if (ret == 0)
			return EXISTS;
		if (ret != -ENOENT || c->unreachable)
			return ret;
		if (now_ns() - start >= CREATE_WAIT_S * NSEC_PER_SEC)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
		ret = ctl_call(c, create);
		if (ret != -EEXIST || c->unreachable || !eexist_of_pool(c))
			return ret;
	}
}

static int
do_create(struct ctl *c, int argc, char **argv)
{
	struct create_args a;
	struct verb_args va;
	struct req r = { .len = 0, .wait_s = CREATE_WAIT_S };
	const char *name;
	char mode[16];
	struct jw w;
	int ret;

	memset(&a, 0, sizeof(a));
	ret = verb_args_init(&va, c, usage_create, argc, argv, create_opts);
	if (ret != 0)
		return ret;
	ret = create_parse(&va, &a);
	verb_args_free(&va);
	if (ret < 0)
		return verb_help(c, usage_create);
	if (ret != 0)
		return ret;

	if (a.has_mode)
		snprintf(mode, sizeof(mode), "0%03o", a.mode);
	if ((ret = req_add(c, &r, "create", NULL)) != 0 ||
	    (ret = req_add(c, &r, "name", a.name)) != 0 ||
	    (ret = req_add_u64(c, &r, "objects", a.objects)) != 0 ||
	    (ret = req_add_u64(c, &r, "object-size", a.object_size)) != 0 ||
	    (a.has_cache &&
	     (ret = req_add_u64(c, &r, "cache", a.cache)) != 0) ||
	    (a.has_slots &&
	     (ret = req_add_u64(c, &r, "slots", a.slots)) != 0) ||
	    (a.huge != NULL && (ret = req_add(c, &r, "huge", a.huge)) != 0) ||
	    (a.owner != NULL &&
	     (ret = req_add(c, &r, "owner", a.owner)) != 0) ||
	    (a.group != NULL &&
	     (ret = req_add(c, &r, "group", a.group)) != 0) ||
	    (a.has_mode && (ret = req_add(c, &r, "mode", mode)) != 0))
		return ret;

	ret = ctl_call(c, &r);
	if (ret == -EEXIST && a.if_not_exists && !c->unreachable &&
	    eexist_of_pool(c))
		ret = await_pool(c, &r, a.name);
	/* A local failure, named here: the protocol has no ETIMEDOUT
	 * (a client takes one from the daemon for EIO), and the library's
	 * -ETIMEDOUT is a reply that did not come (ctl_call()). */
	if (ret == -ETIMEDOUT)
		return ctl_error(c, EXIT_FAILED, "ETIMEDOUT", NULL, NULL,
			"pool '%s' is still being created after %d s", a.name,
			CREATE_WAIT_S);
	if (ret == EXISTS) {
		if (c->json) {
			jw_init(&w, c->out);
			jw_obj_open(&w, NULL);
			jw_str(&w, "name", a.name);
			jw_bool(&w, "created", 0);
			jw_obj_close(&w);
			jw_end(&w);
		} else {
			fprintf(c->out, "pool %s exists\n", a.name);
		}
		return EXIT_OK;
	}
	if (ret < 0 && c->timed_out)
		return ctl_error(c, EXIT_UNREACHABLE, "unreachable", NULL, NULL,
			"shmpoold did not answer in time while creating '%s'; "
			"it may still be building it (see shmpoolctl info %s)",
			a.name, a.name);
	if (ret < 0)
		return call_fail(c, ret, 0);
	name = proto_get(&c->msg, "name") != NULL ?
		proto_get(&c->msg, "name") : a.name;
	if (!c->json) {
		fprintf(c->out, "created %s (memory=%s page-size=%s path=%s)\n",
			name, reply_get(c, "memory"), reply_get(c, "page-size"),
			reply_get(c, "path"));
		return EXIT_OK;
	}
	jw_init(&w, c->out);
	jw_obj_open(&w, NULL);
	jw_str(&w, "name", name);
	jw_bool(&w, "created", 1);
	jw_reply_kv(&w, "path", reply_get(c, "path"));
	jw_reply_kv(&w, "memory", reply_get(c, "memory"));
	jw_reply_kv(&w, "page-size", reply_get(c, "page-size"));
	jw_obj_close(&w);
	jw_end(&w);
	return EXIT_OK;
}

static const struct option destroy_opts[] = {
	{ "force", no_argument, NULL, OPT_FORCE },
	VERB_COMMON_OPTS,
	{ NULL, 0, NULL, 0 },
};

static int
do_destroy(struct ctl *c, int argc, char **argv)
{
	struct verb_args va;
	struct req r = { .len = 0 };
	const char *name = NULL;
	int ch, force = 0, ret;
	struct jw w;

	ret = verb_args_init(&va, c, usage_destroy, argc, argv, destroy_opts);
	if (ret != 0)
		return ret;
	while (ret == 0 && (ch = next_opt(&va, &ret)) != -1) {
		if (ch == OPT_FORCE)
			force = 1;
		else if (ch == 'h')
			ret = -1;
	}
	if (ret == 0)
		ret = take_name(c, usage_destroy, va.args, va.nargs, 1, &name);
	verb_args_free(&va);
	if (ret < 0)
		return verb_help(c, usage_destroy);
	if (ret != 0)
		return ret;

	if ((ret = req_add(c, &r, "destroy", NULL)) != 0 ||
	    (ret = req_add(c, &r, "name", name)) != 0 ||
	    (force && (ret = req_add(c, &r, "force", "1")) != 0))
		return ret;
	ret = ctl_call(c, &r);
	if (ret < 0)
		return call_fail(c, ret, 1);
	if (!c->json) {
		fprintf(c->out, "destroyed %s\n", name);
		return EXIT_OK;
	}
	jw_init(&w, c->out);
	jw_obj_open(&w, NULL);
	jw_str(&w, "name", name);
	jw_bool(&w, "destroyed", 1);
	jw_obj_close(&w);
	jw_end(&w);
	return EXIT_OK;
}

static const struct option plain_opts[] = {
	VERB_COMMON_OPTS,
	{ NULL, 0, NULL, 0 },
};

/*
 * The arguments of a verb with no options: NAME when namep is not NULL,
 * else nothing.  Returns 0, -1 for --help, or the status of an error.
 */
static int
plain_parse(struct ctl *c, const char *usage, int argc, char **argv,
		const char **namep)
{
	struct verb_args va;
	int ch, ret;

	ret = verb_args_init(&va, c, usage, argc, argv, plain_opts);
	if (ret != 0)
		return ret;
	while (ret == 0 && (ch = next_opt(&va, &ret)) != -1)
		if (ch == 'h')
			ret = -1;
	if (ret == 0 && namep != NULL)
		ret = take_name(c, usage, va.args, va.nargs, 1, namep);
	else if (ret == 0 && va.nargs > 0)
		ret = usage_error(c, usage, "unexpected argument '%s'",
			va.args[0]);
	verb_args_free(&va);
	return ret;
}

/* Print each key of the reply, in its order: key: value, or JSON. */
static void
print_keys(struct ctl *c)
{
	const struct proto_msg *msg = &c->msg;
	unsigned int i;
	struct jw w;

	if (!c->json) {
		for (i = 0; i < msg->nkv; i++)
			fprintf(c->out, "%s: %s\n", msg->kv[i].key,
				msg->kv[i].value);
		if (msg->text != NULL)
			fprintf(c->out, "msg: %s\n", msg->text);
		return;
	}
	jw_init(&w, c->out);
	jw_obj_open(&w, NULL);
	for (i = 0; i < msg->nkv; i++)
		jw_reply_kv(&w, msg->kv[i].key, msg->kv[i].value);
	if (msg->text != NULL)
		jw_str(&w, "msg", msg->text);
	jw_obj_close(&w);
	jw_end(&w);
}

static int
do_info(struct ctl *c, int argc, char **argv)
{
	struct req r = { .len = 0 };
	const char *name = NULL;
	int ret;

	ret = plain_parse(c, usage_info, argc, argv, &name);
	if (ret < 0)
		return verb_help(c, usage_info);
	if (ret != 0)
		return ret;
	if ((ret = req_add(c, &r, "info", NULL)) != 0 ||
	    (ret = req_add(c, &r, "name", name)) != 0)
		return ret;
	ret = ctl_call(c, &r);
	if (ret < 0)
		return call_fail(c, ret, 1);
	print_keys(c);
	return EXIT_OK;
}

static int
do_ping(struct ctl *c, int argc, char **argv)
{
	struct req r = { .len = 0 };
	int ret;

	ret = plain_parse(c, usage_ping, argc, argv, NULL);
	if (ret < 0)
		return verb_help(c, usage_ping);
	if (ret != 0)
		return ret;
	if ((ret = req_add(c, &r, "ping", NULL)) != 0)
		return ret;
	ret = ctl_call(c, &r);
	if (ret < 0)
		return call_fail(c, ret, 0);
	print_keys(c);
	return EXIT_OK;
}

static const struct option flush_opts[] = {
	{ "slot", required_argument, NULL, OPT_SLOT },
	VERB_COMMON_OPTS,
	{ NULL, 0, NULL, 0 },
};

static int
do_flush(struct ctl *c, int argc, char **argv)
{
	struct verb_args va;
	struct req r = { .len = 0 };
	const char *name = NULL, *state;
	uint64_t slot = 0;
	int ch, has_slot = 0, ret;
	struct jw w;

	ret = verb_args_init(&va, c, usage_flush, argc, argv, flush_opts);
	if (ret != 0)
		return ret;
	while (ret == 0 && (ch = next_opt(&va, &ret)) != -1) {
		if (ch == OPT_SLOT) {
			/* Any slot number: the daemon knows the pool's
			 * range (and refuses one out of it, exit 1). */
			if (proto_u64(optarg, 0, UINT64_MAX, &slot) < 0)
				ret = usage_error(c, usage_flush, "--slot: "
					"'%s' is not a decimal number",
					optarg);
			has_slot = 1;
		} else if (ch == 'h') {
			ret = -1;
		}
	}
	if (ret == 0)
		ret = take_name(c, usage_flush, va.args, va.nargs, 1, &name);
	if (ret == 0 && !has_slot)
		ret = usage_error(c, usage_flush, "--slot is required");
	verb_args_free(&va);
	if (ret < 0)
		return verb_help(c, usage_flush);
	if (ret != 0)
		return ret;

	if ((ret = req_add(c, &r, "flush", NULL)) != 0 ||
	    (ret = req_add(c, &r, "name", name)) != 0 ||
	    (ret = req_add_u64(c, &r, "slot", slot)) != 0)
		return ret;
	ret = ctl_call(c, &r);
	if (ret < 0)
		return call_fail(c, ret, 1);
	state = reply_get(c, "state");
	if (c->json) {
		jw_init(&w, c->out);
		jw_obj_open(&w, NULL);
		jw_reply_kv(&w, "name", reply_get(c, "name"));
		jw_reply_kv(&w, "slot", reply_get(c, "slot"));
		jw_reply_kv(&w, "state", state);
		jw_reply_kv(&w, "cached", reply_get(c, "cached"));
		jw_obj_close(&w);
		jw_end(&w);
	} else if (strcmp(state, "reclaimed") == 0) {
		fprintf(c->out, "pool %s slot %" PRIu64 ": owner gone, slot "
			"reclaimed (%s objects back in the ring)\n", name,
			slot, reply_get(c, "cached"));
	} else {
		fprintf(c->out, "pool %s slot %" PRIu64 ": flush requested "
			"(%s objects cached); its owner empties it at its "
			"next get or put\n", name, slot,
			reply_get(c, "cached"));
	}
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

/* One line "pool key=value ..." of the list reply, split in place. */
#define POOL_LINE_KEYS	16
struct pool_line {
	unsigned int nkv;
	struct proto_kv kv[POOL_LINE_KEYS];
};

/* Returns 0, or -1 for a line that is not a pool (skipped). */
static int
pool_line_parse(char *line, struct pool_line *pl)
{
	char *p = line, *tok, *eq;
	int first = 1;

	pl->nkv = 0;
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
		if (eq == NULL || pl->nkv == POOL_LINE_KEYS)
			continue;
		*eq = '\0';
		pl->kv[pl->nkv].key = tok;
		pl->kv[pl->nkv].value = eq + 1;
		pl->nkv++;
	}
	return first ? -1 : 0;
}

static const char *
pool_line_get(const struct pool_line *pl, const char *key)
{
	unsigned int i;

	for (i = 0; i < pl->nkv; i++)
		if (strcmp(pl->kv[i].key, key) == 0)
			return pl->kv[i].value;
	return NULL;
}

/*
 * The pool lines of the list reply in c->buf, parsed in place; *np of
 * them.  NULL (reported) when out of memory.
 */
static struct pool_line *
list_lines(struct ctl *c, size_t *np)
{
	struct pool_line *lines;
	size_t n = 0, max = 1;
	char *p, *eol;

	/* The pool lines follow the first; they are ours to cut up. */
	p = c->msg.rest != NULL ? c->buf + (c->msg.rest - c->buf) : NULL;
	for (eol = p; eol != NULL && *eol != '\0'; eol++)
		if (*eol == '\n')
			max++;
	lines = calloc(max, sizeof(*lines));
	if (lines == NULL) {
		ctl_fail_local(c, ENOMEM, "out of memory");
		return NULL;
	}
	while (p != NULL && *p != '\0') {
		eol = strchr(p, '\n');
		if (eol != NULL)
			*eol = '\0';
		if (n < max && pool_line_parse(p, &lines[n]) == 0)
			n++;
		p = eol != NULL ? eol + 1 : NULL;
	}
	*np = n;
	return lines;
}

static void
list_print_row(FILE *f, const char * const *row, const size_t *width)
{
	unsigned int i;

	for (i = 0; i < LIST_COLS; i++) {
		int w = (int)width[i];
		const char *sep = i + 1 < LIST_COLS ? " " : "\n";

		if (list_cols[i].right)
			fprintf(f, "%*s%s", w, row[i], sep);
		else if (i + 1 < LIST_COLS)
			fprintf(f, "%-*s%s", w, row[i], sep);
		else
			fprintf(f, "%s%s", row[i], sep);
	}
}

static void
list_text(struct ctl *c, const struct pool_line *lines, size_t n)
{
	const char *head[LIST_COLS], *row[LIST_COLS], *v;
	size_t width[LIST_COLS], i, j;

	for (j = 0; j < LIST_COLS; j++) {
		head[j] = list_cols[j].head;
		width[j] = strlen(head[j]);
		for (i = 0; i < n; i++) {
			v = pool_line_get(&lines[i], list_cols[j].key);
			if (v != NULL && strlen(v) > width[j])
				width[j] = strlen(v);
		}
	}
	list_print_row(c->out, head, width);
	for (i = 0; i < n; i++) {
		for (j = 0; j < LIST_COLS; j++) {
			v = pool_line_get(&lines[i], list_cols[j].key);
			row[j] = v != NULL ? v : "-";
		}
		list_print_row(c->out, row, width);
	}
}

static void
list_json(struct ctl *c, const struct pool_line *lines, size_t n)
{
	struct jw w;
	size_t i;
	unsigned int k;

	jw_init(&w, c->out);
	jw_obj_open(&w, NULL);
	jw_arr_open(&w, "pools");
	for (i = 0; i < n; i++) {
		jw_obj_open(&w, NULL);
		for (k = 0; k < lines[i].nkv; k++)
			jw_reply_kv(&w, lines[i].kv[k].key,
				lines[i].kv[k].value);
		jw_obj_close(&w);
	}
	jw_arr_close(&w);
	jw_obj_close(&w);
	jw_end(&w);
}

static int
do_list(struct ctl *c, int argc, char **argv)
{
	struct req r = { .len = 0 };
	struct pool_line *lines;
	size_t n;
	int ret;

	ret = plain_parse(c, usage_list, argc, argv, NULL);
	if (ret < 0)
		return verb_help(c, usage_list);
	if (ret != 0)
		return ret;
	if ((ret = req_add(c, &r, "list", NULL)) != 0)
		return ret;
	ret = ctl_call(c, &r);
	if (ret < 0)
		return call_fail(c, ret, 0);
	lines = list_lines(c, &n);
	if (lines == NULL)
		return EXIT_FAILED;
	if (c->json)
		list_json(c, lines, n);
	else
		list_text(c, lines, n);
	free(lines);
	return EXIT_OK;
}

/* dump and watch do without the daemon: one that is stopped (SIGSTOP)
 * holds them up no more than this. */
#define LIST_WAIT_S	1

int
pools_from_daemon(struct ctl *c, struct pool_refs *refs)
{
	struct req r = { .len = 0, .wait_s = LIST_WAIT_S };
	struct pool_line *lines;
	const char *name, *path, *broken;
	size_t n, i;

	if (req_add(c, &r, "list", NULL) != 0 || ctl_call(c, &r) < 0)
		return -1;
	lines = list_lines(c, &n);
	if (lines == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		name = pool_line_get(&lines[i], "name");
		path = pool_line_get(&lines[i], "path");
		broken = pool_line_get(&lines[i], "broken");
		if (name == NULL)
			continue;
		if (broken != NULL && strcmp(broken, "yes") == 0)
			path = NULL;
		else if (path == NULL)
			continue;
		if (pool_refs_add(refs, name, path) < 0) {
			free(lines);
			return -1;
		}
	}
	free(lines);
	return 0;
}

static const struct verb {
	const char *name;
	int (*run)(struct ctl *c, int argc, char **argv);
	const struct option *opts;
} verbs[] = {
	{ "create", do_create, create_opts },
	{ "destroy", do_destroy, destroy_opts },
	{ "list", do_list, plain_opts },
	{ "info", do_info, plain_opts },
	{ "ping", do_ping, plain_opts },
	{ "flush", do_flush, flush_opts },
	{ "dump", do_dump, dump_opts },
	{ "watch", do_watch, watch_opts },
};

#define VERB_NAMES	"create, destroy, list, info, ping, flush, dump or watch"

/* The verb name, or NULL. */
static const struct verb *
verb_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(name, verbs[i].name) == 0)
			return &verbs[i];
	return NULL;
}

/* The options of the verb v; for NULL, a word that is no verb, those
 * every verb takes (its --json is still read: the error is told in
 * JSON). */
static const struct option *
verb_opts(const struct verb *v)
{
	static const struct option common[] = {
		VERB_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};

	return v != NULL ? v->opts : common;
}

/* Run the verb argv[0] with its arguments. */
static int
run_verb(struct ctl *c, int argc, char **argv)
{
	const struct verb *v = verb_find(argv[0]);

	/* A verb reads its own --json (verb_args_init()); a word that is
	 * no verb, one after it too. */
	if (v != NULL)
		return v->run(c, argc, argv);
	opts_peek(argc, argv, "-:h", verb_opts(NULL), OPT_JSON, &c->json,
		NULL);
	if (c->where != NULL && argv[0][0] == '-')
		return usage_error(c, usage_main, "a batch line starts with a "
			"verb (" VERB_NAMES "), not the option '%s'",
			argv[0]);
	return usage_error(c, usage_main, "unknown verb '%s' (" VERB_NAMES
		")", argv[0]);
}

/* Split line in place on spaces and tabs; returns the count of words. */
static int
split_line(char *line, char **words)
{
	char *p = line;
	int n = 0;

	for (;;) {
		while (is_sep(*p))
			p++;
		if (*p == '\0')
			return n;
		words[n++] = p;
		while (*p != '\0' && !is_sep(*p))
			p++;
		if (*p != '\0')
			*p++ = '\0';
	}
}

/* One line's result in the batch document: what the verb printed. */
static void
batch_result(struct jw *w, unsigned long lineno, const char *verb, int status,
		const char *doc, size_t len)
{
	while (len > 0 && (doc[len - 1] == '\n' || doc[len - 1] == ' '))
		len--;
	jw_obj_open(w, NULL);
	jw_u64(w, "line", lineno);
	jw_str(w, "verb", verb);
	jw_i64(w, "exit", status);
	if (len > 0)
		jw_raw(w, "result", doc, len);
	else
		jw_null(w, "result");
	jw_obj_close(w);
}

/*
 * Run the verbs of file ("-": stdin), one a line.  Stops at the first
 * line that fails unless keep_going; returns the status of that line,
 * else 0.
 */
static int
run_batch(struct ctl *g, const char *file, int keep_going)
{
	const char *label = strcmp(file, "-") == 0 ? "-" : file;
	char *line = NULL, **words = NULL, *doc, *verb, where[PATH_MAX + 32];
	size_t cap = 0, doclen;
	unsigned long lineno = 0;
	int first_fail = 0, status, n, nul, sig = 0, open_err, err;
	struct jw w;
	ssize_t len;
	FILE *in;

	in = strcmp(file, "-") == 0 ? stdin : fopen(file, "re");
	open_err = in == NULL ? errno : 0;
	if (g->json) {
		jw_init(&w, stdout);
		jw_obj_open(&w, NULL);
		jw_arr_open(&w, "results");
	}
	while (in != NULL && (len = getline(&line, &cap, in)) >= 0) {
		struct ctl c = *g;
		char *p;

		lineno++;
		while (len > 0 && (line[len - 1] == '\n' ||
				   line[len - 1] == '\r'))
			line[--len] = '\0';
		/* A NUL would end the line early, unseen: the line fails. */
		nul = memchr(line, '\0', (size_t)len) != NULL;
		for (p = line; is_sep(*p); p++)
			;
		if (!nul && (*p == '\0' || *p == '#'))
			continue;
		free(words);
		words = calloc((size_t)len / 2 + 2, sizeof(*words));
		if (words == NULL) {
			status = ctl_fail_local(g, ENOMEM, "out of memory");
			if (first_fail == 0)
				first_fail = status;
			break;
		}
		n = split_line(line, words);
		snprintf(where, sizeof(where), "%s:%lu", label, lineno);
		c.where = where;
		doc = NULL;
		doclen = 0;
		if (g->json) {
			c.out = open_memstream(&doc, &doclen);
			if (c.out == NULL) {
				status = ctl_fail_local(&c, errno, "%s",
					strerror(errno));
				if (first_fail == 0)
					first_fail = status;
				break;
			}
		}
		/* The verb's name: run_verb() makes argv[0] the program's. */
		verb = n > 0 ? words[0] : "";
		if (nul)
			status = ctl_error(&c, EXIT_USAGE, "usage", NULL, NULL,
				"a NUL byte in the line");
		else
			status = run_verb(&c, n, words);
		if (g->json) {
			fclose(c.out);
			batch_result(&w, lineno, verb, status, doc, doclen);
			free(doc);
		}
		if (status != EXIT_OK && first_fail == 0)
			first_fail = status;
		/* A signal that ended the line (watch: no other status is
		 * above 4) ends the batch, even with --keep-going: its
		 * document first, then of it. */
		if (status > EXIT_SIGNAL_BASE) {
			sig = status - EXIT_SIGNAL_BASE;
			break;
		}
		if (status != EXIT_OK && !keep_going)
			break;
	}
	/* Why getline() stopped, before anything else sets errno. */
	err = open_err != 0 ? open_err :
		ferror(in) ? (errno != 0 ? errno : EIO) : 0;
	if (g->json)
		jw_arr_close(&w);
	if (err != 0) {
		struct ctl c = *g;

		/* With --json, the batch's document says why too, as an
		 * "error" beside the lines that ran (none if the file did
		 * not open): the error document, {"error":{...}}, without
		 * its outer braces. */
		doc = NULL;
		doclen = 0;
		if (g->json && (c.out = open_memstream(&doc, &doclen)) == NULL)
			c.json = 0;
		status = ctl_fail_local(&c, err, "cannot %s '%s': %s",
			open_err != 0 ? "open" : "read", file, strerror(err));
		if (g->json && c.json) {
			const size_t pre = sizeof("{\"error\":") - 1;

			fclose(c.out);
			while (doclen > 0 && doc[doclen - 1] != '}')
				doclen--;
			if (doclen > pre + 1)
				jw_raw(&w, "error", doc + pre,
					doclen - pre - 1);
			free(doc);
		}
		if (first_fail == 0)
			first_fail = status;
	}
	free(words);
	free(line);
	if (in != NULL && in != stdin)
		fclose(in);
	if (g->json) {
		jw_i64(&w, "exit", first_fail);
		jw_obj_close(&w);
		jw_end(&w);
	}
	if (sig != 0)
		watch_die_of(sig);
	return first_fail;
}

enum {
	OPT_MAIN_JSON = 256,
	OPT_KEEP_GOING,
};

static const struct option main_opts[] = {
	{ "socket", required_argument, NULL, 's' },
	{ "json", no_argument, NULL, OPT_MAIN_JSON },
	{ "file", required_argument, NULL, 'f' },
	{ "keep-going", no_argument, NULL, OPT_KEEP_GOING },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* -h: the usage and the verbs; with --json, {"usage":"..."}. */
static int
main_help(struct ctl *c)
{
	struct jw w;

	if (!c->json) {
		fputs(usage_main, stdout);
		fputs(help_text, stdout);
		return EXIT_OK;
	}
	jw_init(&w, stdout);
	jw_obj_open(&w, NULL);
	jw_str(&w, "usage", usage_main);
	jw_str(&w, "help", help_text);
	jw_obj_close(&w);
	jw_end(&w);
	return EXIT_OK;
}

/* -V; with --json, {"version":"..."}. */
static int
main_version(struct ctl *c)
{
	struct jw w;

	if (!c->json) {
		printf("%s (shmpool) %s\n", progname, PACKAGE_VERSION);
		return EXIT_OK;
	}
	jw_init(&w, stdout);
	jw_obj_open(&w, NULL);
	jw_str(&w, "version", PACKAGE_VERSION);
	jw_obj_close(&w);
	jw_end(&w);
	return EXIT_OK;
}

int
main(int argc, char **argv)
{
	struct ctl c = { .socket = NULL };
	struct verb_args va = {
		.c = &c, .usage = usage_main, .opts = main_opts, .top = 1,
	};
	const char *file = NULL;
	int ch, ret = 0, keep_going = 0;

	c.out = stdout;
	if (argc < 1)
		return usage_error(&c, usage_main, "no arguments");
	argv[0] = progname;
	/* --json before the verb, and after it in the verb's options:
	 * an error of the global options is told as JSON too. */
	ch = opts_peek(argc, argv, "+:s:f:hV", main_opts, OPT_MAIN_JSON,
		&c.json, NULL);
	if (ch < argc)
		opts_peek(argc - ch, argv + ch, "-:h",
			verb_opts(verb_find(argv[ch])), OPT_JSON, &c.json,
			NULL);
	va.argc = argc;
	va.argv = argv;
	opterr = 0;
	/* "+": stop at the verb, whose options are its own. */
	while (ret == 0 &&
	       (ch = getopt_long(argc, argv, "+:s:f:hV", main_opts, NULL)) != -1) {
		switch (ch) {
		case 's':
			if (optarg[0] == '\0')
				ret = usage_error(&c, usage_main,
					"--socket: the path is empty");
			c.socket = optarg;
			break;
		case 'f':
			if (optarg[0] == '\0')
				ret = usage_error(&c, usage_main,
					"--file: the path is empty");
			file = optarg;
			break;
		case OPT_MAIN_JSON:
			c.json = 1;
			break;
		case OPT_KEEP_GOING:
			keep_going = 1;
			break;
		case 'h':
			return main_help(&c);
		case 'V':
			return main_version(&c);
		default:
			ret = opt_problem(&va, ch);
			break;
		}
	}
	if (ret != 0)
		return ret;
	if (file != NULL && optind < argc)
		return usage_error(&c, usage_main, "unexpected '%s': with -f "
			"the verbs come from %s", argv[optind],
			strcmp(file, "-") == 0 ? "stdin" : "the file");
	if (keep_going && file == NULL)
		return usage_error(&c, usage_main, "--keep-going goes with -f");
	if (file == NULL && optind >= argc)
		return usage_error(&c, usage_main, "missing VERB (" VERB_NAMES
			")");

	c.buf = malloc(PROTO_REPLY_MAX + 1);
	if (c.buf == NULL)
		return ctl_fail_local(&c, ENOMEM, "out of memory");
	if (file != NULL)
		ret = run_batch(&c, file, keep_going);
	else
		ret = run_verb(&c, argc - optind, argv + optind);
	free(c.buf);

	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: cannot write the output: %s\n", progname,
			strerror(errno));
		if (ret == EXIT_OK)
			ret = EXIT_FAILED;
	}
	return ret;
}
