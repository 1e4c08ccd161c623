/*
 * watch.c - sample the pools every interval and show the rates of gets,
 * puts, failures and ring traffic.
 *
 * On a terminal (stdin and stdout both, and neither --count nor --json)
 * the screen is redrawn in place and keys are read without echo: q,
 * Ctrl-C, SIGTERM, SIGQUIT and SIGHUP quit, and the terminal gets its
 * settings back whichever way it ends.  Otherwise one table per sample
 * is written, or with --json one document at the end (of --count
 * samples, or of one).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "shmpoolctl.h"

#define INTERVAL_MAX_SEC	86400

static const char usage_watch[] =
	"usage: shmpoolctl [-s PATH] watch [NAME] [--interval S] [--count N] "
	"[--json]\n";

/* The rates shown, from the deltas of these counters. */
#define RATES	5
static const struct {
	const char *head;
	const char *key;
	unsigned int counter;
} rates[RATES] = {
	{ "GETS/S", "gets_per_sec", CNT_GET_SUCCESS_OBJS },
	{ "PUTS/S", "puts_per_sec", CNT_PUT_OBJS },
	{ "FAILS/S", "fails_per_sec", CNT_GET_FAIL_OBJS },
	{ "RING-GETS/S", "ring_gets_per_sec", CNT_GET_COMMON_POOL_OBJS },
	{ "RING-PUTS/S", "ring_puts_per_sec", CNT_PUT_COMMON_POOL_OBJS },
};

/* One pool in one sample. */
struct watch_row {
	char name[SHMPOOL_NAME_MAX + 1];
	char *path;
	uint64_t create_time;
	uint32_t create_nsec;
	uint32_t size, avail, in_use, caches_in_use;
	uint64_t stats[SNAP_COUNTERS];
	int has_rates;			/* the previous sample had it too */
	double rate[RATES];
};

struct sample {
	struct watch_row *rows;
	size_t n;
	int64_t t;			/* CLOCK_MONOTONIC, ns */
	char **errs;			/* segments that could not be read */
	size_t nerr;
};

/* The signals watch catches: the first END_SIGNALS end it (with --json,
 * with the document of the samples so far, then of the signal); on a
 * terminal it catches SIGTSTP too, to give the terminal back while
 * stopped. */
static const int watch_signals[] = {
	SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGTSTP
};
#define WATCH_SIGNALS	(sizeof(watch_signals) / sizeof(watch_signals[0]))
#define END_SIGNALS	(WATCH_SIGNALS - 1)

struct watch {
	struct ctl *c;
	const char *name;
	int64_t interval;		/* ns */
	uint64_t count;			/* 0: until told to stop */
	int tty;			/* redraw a terminal */
	int failed;			/* a segment could not be read */
	int reported;			/* a failure printed its document */
	int sig;			/* --json: the signal that ended it */
	/* The actions and mask that the signals it catches had before
	 * (watch_signals' order). */
	struct sigaction saved_act[WATCH_SIGNALS];
	sigset_t saved_mask;
	struct sample prev, cur;
	FILE *doc;			/* --json: the samples so far */
	char *doc_buf;
	size_t doc_len;
	struct jw w;
};

int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static struct timespec
ns_to_ts(int64_t ns)
{
	struct timespec ts;

	if (ns < 0)
		ns = 0;
	ts.tv_sec = (time_t)(ns / NSEC_PER_SEC);
	ts.tv_nsec = (long)(ns % NSEC_PER_SEC);
	return ts;
}

/* Seconds as "S" or "S.FFF": digits, a decimal point, digits; > 0. */
static int
parse_interval(const char *s, int64_t *ns)
{
	int64_t sec = 0, frac = 0, scale = NSEC_PER_SEC / 10;
	const char *p = s;
	int digits = 0;

	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		sec = sec * 10 + (*p - '0');
		if (sec > INTERVAL_MAX_SEC)
			return -1;
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
			frac += (*p - '0') * scale;
			scale /= 10;
		}
	}
	if (*p != '\0' || digits == 0)
		return -1;
	*ns = sec * NSEC_PER_SEC + frac;
	if (*ns <= 0 || *ns > INTERVAL_MAX_SEC * NSEC_PER_SEC)
		return -1;
	return 0;
}

/* The interval as a JSON number: "1", "0.25". */
static void
format_interval(int64_t ns, char *buf, size_t size)
{
	int64_t frac = ns % NSEC_PER_SEC;
	size_t len;

	if (frac == 0) {
		snprintf(buf, size, "%" PRId64, ns / NSEC_PER_SEC);
		return;
	}
	snprintf(buf, size, "%" PRId64 ".%09" PRId64, ns / NSEC_PER_SEC,
		frac);
	len = strlen(buf);
	while (len > 0 && buf[len - 1] == '0')
		buf[--len] = '\0';
}

static void
sample_free(struct sample *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->rows[i].path);
	for (i = 0; i < s->nerr; i++)
		free(s->errs[i]);
	free(s->rows);
	free(s->errs);
	memset(s, 0, sizeof(*s));
}

/* The same pool in the previous sample: same name, segment and birth, to
 * the nanosecond (a pool made anew within the second is another). */
static const struct watch_row *
prev_row(const struct sample *prev, const struct watch_row *r)
{
	size_t i;

	for (i = 0; i < prev->n; i++) {
		const struct watch_row *p = &prev->rows[i];

		if (strcmp(p->name, r->name) == 0 &&
		    strcmp(p->path, r->path) == 0 &&
		    p->create_time == r->create_time &&
		    p->create_nsec == r->create_nsec)
			return p;
	}
	return NULL;
}

/*
 * Read every pool into w->cur, with rates against w->prev.  Returns 0,
 * or the exit status of a failure to find the pools (reported).
 */
static int
take_sample(struct watch *w, int first)
{
	struct sample *s = &w->cur;
	struct pool_refs refs;
	struct pool_snap snap;
	char err[CTL_ERRMSG_MAX];
	size_t i;
	unsigned int k;
	int ret;

	memset(s, 0, sizeof(*s));
	/* A pool asked for must be there at first; later it may go. */
	ret = first ? pools_find(w->c, w->name, &refs) :
		pools_lookup(w->c, w->name, &refs);
	if (ret != 0)
		return ret;
	s->rows = calloc(refs.n + 1, sizeof(*s->rows));
	s->errs = calloc(refs.n + 1, sizeof(*s->errs));
	if (s->rows == NULL || s->errs == NULL) {
		pool_refs_free(&refs);
		sample_free(s);
		return ctl_fail_local(w->c, ENOMEM, "out of memory");
	}
	s->t = now_ns();
	for (i = 0; i < refs.n; i++) {
		struct watch_row *r = &s->rows[s->n];
		const struct watch_row *p;
		double dt;

		if (pool_snap_read(&refs.v[i], &snap, 0, err,
				sizeof(err)) < 0) {
			w->failed = 1;
			s->errs[s->nerr] = strdup(err);
			if (s->errs[s->nerr] != NULL)
				s->nerr++;
			continue;
		}
		r->path = strdup(snap.path);
		if (r->path == NULL) {
			pool_snap_free(&snap);
			continue;
		}
		memcpy(r->name, snap.name, sizeof(r->name));
		r->create_time = snap.create_time;
		r->create_nsec = snap.create_nsec;
		r->size = snap.size;
		r->avail = snap.avail;
		r->in_use = snap.in_use;
		r->caches_in_use = snap.caches_in_use;
		memcpy(r->stats, snap.stats, sizeof(r->stats));
		pool_snap_free(&snap);
		s->n++;

		p = prev_row(&w->prev, r);
		dt = (double)(s->t - w->prev.t) / (double)NSEC_PER_SEC;
		if (p == NULL || dt <= 0)
			continue;
		r->has_rates = 1;
		for (k = 0; k < RATES; k++) {
			uint64_t now = r->stats[rates[k].counter];
			uint64_t then = p->stats[rates[k].counter];

			/* A slot being folded may be counted twice or not
			 * at all for a moment: never a negative rate. */
			r->rate[k] = now > then ? (double)(now - then) / dt : 0;
		}
	}
	pool_refs_free(&refs);
	return 0;
}

/* The table of a sample: headings, then a row a pool. */
#define WCOLS		(5 + RATES)
#define WCELL		(SHMPOOL_NAME_MAX + 1)

static void
print_table(FILE *f, const struct sample *s)
{
	static const char * const head[5] = {
		"NAME", "SIZE", "AVAIL", "IN-USE", "CACHES",
	};
	char (*cells)[WCOLS][WCELL];
	size_t width[WCOLS], i, r;
	unsigned int k;

	cells = calloc(s->n + 1, sizeof(*cells));
	if (cells == NULL)
		return;
	for (k = 0; k < 5; k++)
		snprintf(cells[0][k], WCELL, "%s", head[k]);
	for (k = 0; k < RATES; k++)
		snprintf(cells[0][5 + k], WCELL, "%s", rates[k].head);
	for (i = 0; i < s->n; i++) {
		const struct watch_row *row = &s->rows[i];
		char (*c)[WCELL] = cells[i + 1];

		snprintf(c[0], WCELL, "%s", row->name);
		snprintf(c[1], WCELL, "%" PRIu32, row->size);
		snprintf(c[2], WCELL, "%" PRIu32, row->avail);
		snprintf(c[3], WCELL, "%" PRIu32, row->in_use);
		snprintf(c[4], WCELL, "%" PRIu32, row->caches_in_use);
		for (k = 0; k < RATES; k++) {
			if (row->has_rates)
				snprintf(c[5 + k], WCELL, "%.1f",
					row->rate[k]);
			else
				snprintf(c[5 + k], WCELL, "-");
		}
	}
	for (k = 0; k < WCOLS; k++) {
		width[k] = 0;
		for (r = 0; r <= s->n; r++)
			if (strlen(cells[r][k]) > width[k])
				width[k] = strlen(cells[r][k]);
	}
	for (r = 0; r <= s->n; r++) {
		fprintf(f, "%-*s", (int)width[0], cells[r][0]);
		for (k = 1; k < WCOLS; k++)
			fprintf(f, " %*s", (int)width[k], cells[r][k]);
		fputc('\n', f);
	}
	free(cells);
}

static void
json_sample(struct watch *w, const struct sample *s)
{
	size_t i;
	unsigned int k;

	jw_obj_open(&w->w, NULL);
	jw_arr_open(&w->w, "pools");
	for (i = 0; i < s->n; i++) {
		const struct watch_row *r = &s->rows[i];

		jw_obj_open(&w->w, NULL);
		jw_str(&w->w, "name", r->name);
		jw_u64(&w->w, "size", r->size);
		jw_u64(&w->w, "avail", r->avail);
		jw_u64(&w->w, "in_use", r->in_use);
		jw_u64(&w->w, "caches_in_use", r->caches_in_use);
		for (k = 0; k < RATES; k++) {
			if (r->has_rates)
				jw_fixed(&w->w, rates[k].key, r->rate[k], 3);
			else
				jw_null(&w->w, rates[k].key);
		}
		jw_obj_close(&w->w);
	}
	jw_arr_close(&w->w);
	jw_obj_close(&w->w);
}

/* What a sample shows, where it goes. */
static void
show_sample(struct watch *w, const struct sample *s, uint64_t nth)
{
	FILE *f = w->c->out;
	char when[32], every[32];
	struct tm tm;
	time_t t;
	size_t i;

	if (w->doc != NULL) {
		json_sample(w, s);
		for (i = 0; i < s->nerr; i++)
			ctl_warn(w->c, "%s", s->errs[i]);
		return;
	}
	if (!w->tty) {
		if (nth > 1)
			fputc('\n', f);
		print_table(f, s);
		for (i = 0; i < s->nerr; i++)
			ctl_warn(w->c, "%s", s->errs[i]);
		fflush(f);
		return;
	}
	t = time(NULL);
	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	format_interval(w->interval, every, sizeof(every));
	fputs("\033[H\033[2J", f);
	fprintf(f, "shmpoolctl watch%s%s: every %ss, %s (q quits)\n\n",
		w->name != NULL ? " " : "", w->name != NULL ? w->name : "",
		every, when);
	print_table(f, s);
	if (w->name != NULL && s->n == 0 && s->nerr == 0)
		fprintf(f, "\nno pool '%s' now\n", w->name);
	for (i = 0; i < s->nerr; i++)
		fprintf(f, "\n%s", s->errs[i]);
	if (s->nerr > 0)
		fputc('\n', f);
	fflush(f);
}

/* The terminal's settings before watch changed them. */
static struct termios tty_saved;
static volatile sig_atomic_t got_signal;

static void
on_signal(int sig)
{
	got_signal = sig;
}

static void
tty_raw(void)
{
	struct termios raw = tty_saved;

	/* Keys one at a time, unseen; Ctrl-C still sends SIGINT. */
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
}

static void
tty_restore(void)
{
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &tty_saved);
}

/* Give each of the n signals sigs the handler h, and make *set of them. */
static void
signals_handle(const int *sigs, size_t n, void (*h)(int), sigset_t *set)
{
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	sigemptyset(set);
	for (i = 0; i < n; i++) {
		sigaction(sigs[i], &sa, NULL);
		sigaddset(set, sigs[i]);
	}
}

/* Catch the n signals sigs (on_signal()), blocked but while waiting
 * with *waitmask (ppoll()'s), which is made here. */
static void
signals_catch(const int *sigs, size_t n, sigset_t *waitmask)
{
	sigset_t block;
	size_t i;

	signals_handle(sigs, n, on_signal, &block);
	sigprocmask(SIG_BLOCK, &block, waitmask);
	for (i = 0; i < n; i++)
		sigdelset(waitmask, sigs[i]);
}

/*
 * The actions of the first n of watch_signals, and the signal mask, saved
 * in w; then those of the n signals the process was not started ignoring
 * (nohup, a shell's background job: they stay ignored) caught, blocked but
 * while waiting with *waitmask (signals_catch()).
 */
static void
signals_take(struct watch *w, size_t n, sigset_t *waitmask)
{
	int sigs[WATCH_SIGNALS];
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		sigaction(watch_signals[i], NULL, &w->saved_act[i]);
		if (w->saved_act[i].sa_handler != SIG_IGN)
			sigs[k++] = watch_signals[i];
	}
	sigprocmask(SIG_BLOCK, NULL, &w->saved_mask);
	signals_catch(sigs, k, waitmask);
}

/* The actions of the first n of watch_signals, and the mask, as
 * signals_take() found them. */
static void
signals_restore(const struct watch *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		sigaction(watch_signals[i], &w->saved_act[i], NULL);
	sigprocmask(SIG_SETMASK, &w->saved_mask, NULL);
}

/*
 * After a --json watch that ended on its own: one of the signals that end
 * it that came in its last sample, where it was blocked, taken and
 * returned (watch, or its batch, ends of it once the document is out);
 * else 0, and the signals' actions and mask as signals_take() found them,
 * for the lines of a batch after it.
 */
static int
signals_settle(const struct watch *w)
{
	static const struct timespec now = { 0, 0 };
	sigset_t set;
	size_t i;
	int sig;

	sigemptyset(&set);
	for (i = 0; i < END_SIGNALS; i++)
		sigaddset(&set, watch_signals[i]);
	sig = sigtimedwait(&set, NULL, &now);
	if (sig > 0)
		return sig;
	signals_restore(w, END_SIGNALS);
	return 0;
}

/*
 * Take the terminal: no echo, no line editing; the signals that end or
 * stop us blocked but while waiting (in ppoll()), so that each is seen
 * there, never in the middle of a redraw (but for those the process was
 * started ignoring: signals_take()).
 */
static int
tty_setup(struct watch *w, sigset_t *waitmask)
{
	if (tcgetattr(STDIN_FILENO, &tty_saved) < 0)
		return -errno;
	signals_take(w, WATCH_SIGNALS, waitmask);
	tty_raw();
	return 0;
}

/* Give the terminal back, and the signals their actions and mask. */
static void
tty_done(const struct watch *w)
{
	tty_restore();
	signals_restore(w, WATCH_SIGNALS);
}

/* Ctrl-Z: the terminal as it was while stopped, ours again after. */
static void
tty_stop(void)
{
	struct sigaction sa, old;
	sigset_t tstp;

	tty_restore();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTSTP, &sa, &old);
	sigemptyset(&tstp);
	sigaddset(&tstp, SIGTSTP);
	raise(SIGTSTP);
	/* Stops here, until SIGCONT. */
	sigprocmask(SIG_UNBLOCK, &tstp, NULL);
	sigprocmask(SIG_BLOCK, &tstp, NULL);
	sigaction(SIGTSTP, &old, NULL);
	tcgetattr(STDIN_FILENO, &tty_saved);
	tty_raw();
}

/*
 * Wait until deadline, reading keys from the terminal if keys (else
 * only the signals waitmask lets in: --json).  Returns 0 at the
 * deadline, 1 when told to quit (q, or a signal: its number in
 * got_signal).
 */
static int
tick_wait(int64_t deadline, const sigset_t *waitmask, int keys_too)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	struct timespec ts;
	char keys[64];
	ssize_t n, i;
	int64_t left;
	int ret;

	for (;;) {
		if (got_signal == SIGTSTP) {
			got_signal = 0;
			tty_stop();
			continue;
		}
		if (got_signal != 0)
			return 1;
		left = deadline - now_ns();
		if (left <= 0)
			return 0;
		ts = ns_to_ts(left);
		ret = ppoll(keys_too ? &pfd : NULL, keys_too ? 1 : 0, &ts,
			waitmask);
		if (ret < 0 && errno != EINTR)
			return 1;
		if (ret <= 0)
			continue;
		if (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))
			return 1;
		n = read(STDIN_FILENO, keys, sizeof(keys));
		for (i = 0; i < n; i++)
			if (keys[i] == 'q' || keys[i] == 'Q')
				return 1;
	}
}

/* The next tick; when behind (a slow read, a stop), the next from now. */
static void
next_tick(int64_t *deadline, int64_t start, int64_t interval)
{
	int64_t now = now_ns();

	*deadline += interval;
	if (*deadline <= now)
		*deadline = start + ((now - start) / interval + 1) * interval;
}


static int
watch_run(struct watch *w)
{
	sigset_t waitmask;
	int64_t start, deadline;
	uint64_t nth;
	int ret, quit = 0;

	if (w->tty && tty_setup(w, &waitmask) < 0)
		w->tty = 0;
	if (w->tty)
		w->c->quiet = 1;
	else if (w->doc != NULL)
		/* Seen while waiting (tick_wait()), never in the middle of
		 * a sample. */
		signals_take(w, END_SIGNALS, &waitmask);
	ret = take_sample(w, 1);
	if (ret != 0) {
		w->reported = 1;
		goto out;
	}
	if (w->tty)
		show_sample(w, &w->cur, 0);
	w->prev = w->cur;
	memset(&w->cur, 0, sizeof(w->cur));
	start = deadline = w->prev.t;
	for (nth = 1; w->count == 0 || nth <= w->count; nth++) {
		next_tick(&deadline, start, w->interval);
		if (w->tty) {
			quit = tick_wait(deadline, &waitmask, 1);
			if (quit)
				break;
		} else if (w->doc != NULL) {
			if (tick_wait(deadline, &waitmask, 0)) {
				w->sig = got_signal;
				break;
			}
		} else {
			struct timespec ts = ns_to_ts(deadline);

			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
					&ts, NULL) == EINTR)
				;
		}
		ret = take_sample(w, 0);
		if (ret != 0) {
			w->reported = 1;
			goto out;
		}
		show_sample(w, &w->cur, nth);
		sample_free(&w->prev);
		w->prev = w->cur;
		memset(&w->cur, 0, sizeof(w->cur));
	}
out:
	if (w->tty) {
		int sig = got_signal;

		tty_done(w);
		w->c->quiet = 0;
		if (sig != 0 && sig != SIGTSTP) {
			sample_free(&w->prev);
			/* Die of it, now that the terminal is back. */
			watch_die_of(sig);
		}
	}
	if (ret == 0 && w->failed)
		ret = EXIT_FAILED;
	return ret;
}

enum {
	OPT_INTERVAL = 256,
	OPT_COUNT,
};

const struct option watch_opts[] = {
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "count", required_argument, NULL, OPT_COUNT },
	VERB_COMMON_OPTS,
	{ NULL, 0, NULL, 0 },
};

int
do_watch(struct ctl *c, int argc, char **argv)
{
	struct verb_args va;
	struct watch w;
	char every[32];
	int ch, ret, has_count = 0;

	memset(&w, 0, sizeof(w));
	w.c = c;
	w.interval = NSEC_PER_SEC;
	ret = verb_args_init(&va, c, usage_watch, argc, argv, watch_opts);
	if (ret != 0)
		return ret;
	while (ret == 0 && (ch = next_opt(&va, &ret)) != -1) {
		if (ch == OPT_INTERVAL) {
			if (parse_interval(optarg, &w.interval) < 0)
				ret = usage_error(c, usage_watch, "--interval: "
					"'%s' is not a number of seconds "
					"from 0.000000001 to %d", optarg,
					INTERVAL_MAX_SEC);
		} else if (ch == OPT_COUNT) {
			ret = parse_num(c, usage_watch, "count", optarg, 1,
				UINT32_MAX, &w.count);
			has_count = 1;
		} else if (ch == 'h') {
			ret = -1;
		}
	}
	if (ret == 0)
		ret = take_name(c, usage_watch, va.args, va.nargs, 0, &w.name);
	/* One document: without --count, of one sample. */
	if (c->json && !has_count)
		w.count = 1;
	verb_args_free(&va);
	if (ret < 0)
		return verb_help(c, usage_watch);
	if (ret != 0)
		return ret;

	w.tty = !has_count && !c->json && c->out == stdout &&
		isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	if (c->json) {
		w.doc = open_memstream(&w.doc_buf, &w.doc_len);
		if (w.doc == NULL)
			return ctl_fail_local(c, errno, "%s", strerror(errno));
		jw_init(&w.w, w.doc);
		format_interval(w.interval, every, sizeof(every));
		jw_obj_open(&w.w, NULL);
		jw_raw(&w.w, "interval", every, strlen(every));
		jw_arr_open(&w.w, "samples");
	}
	ret = watch_run(&w);
	if (w.doc != NULL && w.sig == 0)
		w.sig = signals_settle(&w);
	sample_free(&w.prev);
	sample_free(&w.cur);
	if (w.doc != NULL) {
		jw_arr_close(&w.w);
		jw_obj_close(&w.w);
		jw_end(&w.w);
		fclose(w.doc);
		/* A failure to find the pools printed its own document. */
		if (!w.reported)
			fwrite(w.doc_buf, 1, w.doc_len, c->out);
		free(w.doc_buf);
	}
	if (w.sig != 0) {
		/* In a batch, the batch dies of it once its own document
		 * is out (run_batch()); the signals stay caught and blocked
		 * until then. */
		if (c->where != NULL)
			return EXIT_SIGNAL_BASE + w.sig;
		/* Die of it, as without the wait for it. */
		watch_die_of(w.sig);
	}
	return ret;
}

void
watch_die_of(int sig)
{
	sigset_t unblock;

	fflush(stdout);
	/* That one alone given its default action and unblocked: another
	 * that came since and is blocked stays so, and the process dies of
	 * the one its document (a batch's) names. */
	signals_handle(&sig, 1, SIG_DFL, &unblock);
	sigprocmask(SIG_UNBLOCK, &unblock, NULL);
	raise(sig);
}
