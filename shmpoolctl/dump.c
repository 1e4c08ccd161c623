/*
 * dump.c - find the pools' segments and read them: geometry, counts,
 * caches and counters, as text, JSON or Prometheus metrics.
 *
 * A segment is mapped read-only (pool_open_file()): dump never writes to
 * it, takes no lock and needs no daemon.  What it reads others change
 * meanwhile; each number is read once, and the totals are summed from
 * the same reads, so a dump agrees with itself.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shmpoolctl.h"
#include "segment-internal.h"

#define SHM_DIR		"/dev/shm"
#define SEG_PREFIX	"shmpool."
#define INDEX_SUFFIX	".pools"

#define COUNTER(name, help) \
	{ #name, offsetof(struct shmpool_stats, name), help }

/* CNT_* are the places of the counters in struct shmpool_stats. */
#define COUNTER_AT(name, cnt) \
	_Static_assert(offsetof(struct shmpool_stats, name) == \
		(cnt) * sizeof(uint64_t), #name " is not counter " #cnt)
COUNTER_AT(put_bulk, CNT_PUT_BULK);
COUNTER_AT(put_objs, CNT_PUT_OBJS);
COUNTER_AT(put_common_pool_bulk, CNT_PUT_COMMON_POOL_BULK);
COUNTER_AT(put_common_pool_objs, CNT_PUT_COMMON_POOL_OBJS);
COUNTER_AT(get_common_pool_bulk, CNT_GET_COMMON_POOL_BULK);
COUNTER_AT(get_common_pool_objs, CNT_GET_COMMON_POOL_OBJS);
COUNTER_AT(get_success_bulk, CNT_GET_SUCCESS_BULK);
COUNTER_AT(get_success_objs, CNT_GET_SUCCESS_OBJS);
COUNTER_AT(get_fail_bulk, CNT_GET_FAIL_BULK);
COUNTER_AT(get_fail_objs, CNT_GET_FAIL_OBJS);
_Static_assert(sizeof(struct shmpool_stats) == SNAP_COUNTERS * sizeof(uint64_t),
	"struct shmpool_stats has other than SNAP_COUNTERS counters");

const struct counter_desc counters[SNAP_COUNTERS] = {
	[CNT_PUT_BULK] = COUNTER(put_bulk, "Put calls."),
	[CNT_PUT_OBJS] = COUNTER(put_objs, "Objects put."),
	[CNT_PUT_COMMON_POOL_BULK] = COUNTER(put_common_pool_bulk,
		"Enqueues to the ring that puts caused (flushes of a full "
		"cache and uncached puts)."),
	[CNT_PUT_COMMON_POOL_OBJS] = COUNTER(put_common_pool_objs,
		"Objects enqueued to the ring."),
	[CNT_GET_COMMON_POOL_BULK] = COUNTER(get_common_pool_bulk,
		"Dequeues from the ring (cache refills and uncached gets)."),
	[CNT_GET_COMMON_POOL_OBJS] = COUNTER(get_common_pool_objs,
		"Objects dequeued from the ring."),
	[CNT_GET_SUCCESS_BULK] = COUNTER(get_success_bulk,
		"Get calls that succeeded."),
	[CNT_GET_SUCCESS_OBJS] = COUNTER(get_success_objs,
		"Objects the successful gets returned."),
	[CNT_GET_FAIL_BULK] = COUNTER(get_fail_bulk, "Get calls that failed."),
	[CNT_GET_FAIL_OBJS] = COUNTER(get_fail_objs,
		"Objects the failed gets asked for."),
};

/* The counters of a cache (with deadline, cache_stats_add()'s, which
 * says whether its owner was found in the middle of a change: 1), or of
 * a struct shmpool_stats (deadline NULL), as dst[CNT_*]: relaxed 64-bit
 * loads, each counter having a single writer. */
static int
counters_read(uint64_t *dst, const void *base, uint64_t *deadline)
{
	struct shmpool_stats st;
	unsigned int i;
	int stuck = 0;

	memset(&st, 0, sizeof(st));
	if (deadline != NULL) {
		stuck = cache_stats_add(&st, base, deadline);
		base = &st;
	}
	for (i = 0; i < SNAP_COUNTERS; i++)
		dst[i] = uatomic_read((const uint64_t *)((const char *)base +
			counters[i].stats_off));
	return stuck;
}

int
pool_refs_add(struct pool_refs *refs, const char *name, const char *path)
{
	struct pool_ref *v;

	if (refs->n == refs->max) {
		size_t max = refs->max != 0 ? refs->max * 2 : 16;

		v = realloc(refs->v, max * sizeof(*v));
		if (v == NULL)
			return -ENOMEM;
		refs->v = v;
		refs->max = max;
	}
	v = &refs->v[refs->n];
	v->name = strdup(name);
	v->path = path != NULL ? strdup(path) : NULL;
	if (v->name == NULL || (path != NULL && v->path == NULL)) {
		free(v->name);
		free(v->path);
		return -ENOMEM;
	}
	refs->n++;
	return 0;
}

void
pool_refs_free(struct pool_refs *refs)
{
	size_t i;

	for (i = 0; i < refs->n; i++) {
		free(refs->v[i].name);
		free(refs->v[i].path);
	}
	free(refs->v);
	memset(refs, 0, sizeof(*refs));
}

static ssize_t
refs_find(const struct pool_refs *refs, const char *name)
{
	size_t i;

	for (i = 0; i < refs->n; i++)
		if (strcmp(refs->v[i].name, name) == 0)
			return (ssize_t)i;
	return -1;
}

/* Keep only the pool called name (refs came from one source). */
static void
refs_keep(struct pool_refs *refs, const char *name)
{
	ssize_t k = refs_find(refs, name);
	size_t i, j = 0;

	for (i = 0; i < refs->n; i++) {
		if ((ssize_t)i == k) {
			refs->v[j++] = refs->v[i];
		} else {
			free(refs->v[i].name);
			free(refs->v[i].path);
		}
	}
	refs->n = j;
}

/*
 * Source 2: SOCKET.pools, lines "NAME PATH" and # comments.  Returns 0,
 * -ENOENT when there is no index, or another -errno (reported).
 */
static int
refs_from_index(struct ctl *c, struct pool_refs *refs, char *where,
		size_t wsize)
{
	const char *sock = c->socket != NULL ? c->socket : proto_socket_path();
	char *line = NULL, *p, *name, *path;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	FILE *f;
	int ret = 0;

	snprintf(where, wsize, "%s" INDEX_SUFFIX, sock);
	f = fopen(where, "re");
	if (f == NULL) {
		ret = -errno;
		if (ret != -ENOENT)
			ctl_warn(c, "cannot read %s: %s", where,
				strerror(-ret));
		return ret;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' ||
				   line[len - 1] == '\r'))
			line[--len] = '\0';
		for (p = line; *p == ' ' || *p == '\t'; p++)
			;
		if (*p == '\0' || *p == '#')
			continue;
		name = p;
		p += strcspn(p, " \t");
		if (*p != '\0')
			*p++ = '\0';
		path = p + strspn(p, " \t");
		if (!shmpool_name_valid(name) || *path == '\0') {
			ctl_warn(c, "%s:%zu: not 'NAME PATH'; ignored", where,
				lineno);
			continue;
		}
		if (refs_find(refs, name) >= 0)
			continue;
		if (pool_refs_add(refs, name, path) < 0) {
			ret = -ENOMEM;
			break;
		}
	}
	if (ret == 0 && ferror(f)) {
		ret = -EIO;
		ctl_warn(c, "cannot read %s: %s", where, strerror(errno));
	}
	free(line);
	fclose(f);
	return ret;
}

/* Undo the octal escapes of /proc/mounts (\040 for a space) in place. */
static void
mount_unescape(char *s)
{
	char *d = s;

	while (*s != '\0') {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				(s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* Every shmpool.NAME regular file in dir. */
static int
refs_from_dir(struct ctl *c, struct pool_refs *refs, const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	const char *name;
	ssize_t k;
	DIR *d;

	d = opendir(dir);
	if (d == NULL) {
		if (errno != ENOENT)
			ctl_warn(c, "cannot read %s: %s", dir,
				strerror(errno));
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, SEG_PREFIX, strlen(SEG_PREFIX)) != 0)
			continue;
		name = de->d_name + strlen(SEG_PREFIX);
		if (!shmpool_name_valid(name) ||
		    fstatat(dirfd(d), de->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		k = refs_find(refs, name);
		if (k >= 0) {
			ctl_warn(c, "pool '%s': %s ignored, %s was found "
				"first", name, path, refs->v[k].path);
			continue;
		}
		if (pool_refs_add(refs, name, path) < 0) {
			closedir(d);
			return -ENOMEM;
		}
	}
	closedir(d);
	return 0;
}

static int
ref_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pool_ref *)a)->name,
		((const struct pool_ref *)b)->name);
}

/* Source 3: the hugetlbfs mounts (as shmpoold adopts), then /dev/shm. */
static int
refs_from_scan(struct ctl *c, struct pool_refs *refs)
{
	char *line = NULL, *dev, *dir, *type, *save;
	size_t cap = 0;
	FILE *f;
	int ret = 0;

	f = fopen("/proc/mounts", "re");
	if (f != NULL) {
		while (ret == 0 && getline(&line, &cap, f) >= 0) {
			dev = strtok_r(line, " \t\n", &save);
			dir = dev != NULL ? strtok_r(NULL, " \t\n", &save) :
				NULL;
			type = dir != NULL ? strtok_r(NULL, " \t\n", &save) :
				NULL;
			if (type == NULL || strcmp(type, "hugetlbfs") != 0)
				continue;
			mount_unescape(dir);
			ret = refs_from_dir(c, refs, dir);
		}
		free(line);
		fclose(f);
	}
	if (ret == 0)
		ret = refs_from_dir(c, refs, SHM_DIR);
	if (refs->n > 1)
		qsort(refs->v, refs->n, sizeof(refs->v[0]), ref_cmp);
	return ret;
}

int
pools_lookup(struct ctl *c, const char *name, struct pool_refs *refs)
{
	char index[PATH_MAX + 16];
	int ret;

	memset(refs, 0, sizeof(*refs));
	if (pools_from_daemon(c, refs) == 0) {
		snprintf(refs->source, sizeof(refs->source), "shmpoold's list");
		goto found;
	}
	pool_refs_free(refs);
	ret = refs_from_index(c, refs, index, sizeof(index));
	if (ret == 0) {
		snprintf(refs->source, sizeof(refs->source), "%s", index);
		goto found;
	}
	pool_refs_free(refs);
	/* No index, or none to read (said so): look for the files. */
	if (ret != -ENOMEM)
		ret = refs_from_scan(c, refs);
	if (ret < 0) {
		pool_refs_free(refs);
		return ctl_fail_local(c, -ret, "out of memory");
	}
	snprintf(refs->source, sizeof(refs->source), SHM_DIR " and the "
		"hugetlbfs mounts");
found:
	if (name != NULL)
		refs_keep(refs, name);
	return 0;
}

int
pools_find(struct ctl *c, const char *name, struct pool_refs *refs)
{
	int ret;

	ret = pools_lookup(c, name, refs);
	if (ret != 0 || name == NULL || refs->n > 0)
		return ret;
	ret = ctl_error(c, EXIT_NO_POOL, "ENOENT", "name", name,
		"no pool '%s' (looked in %s)", name, refs->source);
	pool_refs_free(refs);
	return ret;
}

/* The name the process pid goes by, if it is still the one that
 * started at start_time (0: unknown). */
static int
process_name(pid_t pid, uint64_t start_time, char *buf, size_t size)
{
	char path[64];
	uint64_t t;
	ssize_t len;
	int fd;

	if (pid <= 0)
		return 0;
	if (start_time != 0 &&
	    (seg_proc_start_time(pid, &t) < 0 || t != start_time))
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, size - 1);
	close(fd);
	if (len <= 0)
		return 0;
	if (buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	return 1;
}

/*
 * Reading a segment someone cuts short raises SIGBUS: turn it into an
 * error for this pool, not a crash (and, in watch, a raw terminal).
 */
static sigjmp_buf bus_jmp;
static volatile sig_atomic_t bus_armed;

static void
on_sigbus(int sig)
{
	if (bus_armed) {
		bus_armed = 0;
		siglongjmp(bus_jmp, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
sigbus_catch(void)
{
	static int done;
	struct sigaction sa;

	if (done++)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}


/*
 * One pass over the slots into snap; the owner words as they were before
 * each slot was read go to owners[].  0, or 1 if a slot was being
 * released (its counters moving to the retired totals).
 */
static int
snap_slots(struct pool_handle *h, struct pool_snap *snap, uint64_t *owners,
		int want_process, uint64_t *deadline)
{
	int releasing = 0;
	uint32_t i, len;

	snap->nb_live = 0;
	snap->total_cache_count = 0;
	snap->unsettled = 0;
	snap->bad_len = 0;
	snap->bad_state = 0;
	for (i = 0; i < h->nb_slots; i++) {
		const struct seg_slot *s = &h->slots[i];
		struct slot_snap *ss = &snap->slots[snap->nb_live];
		uint64_t owner = uatomic_read(&s->owner);

		owners[i] = owner;
		if (SLOT_STATE(owner) == SEG_SLOT_FREE)
			continue;
		releasing |= SLOT_STATE(owner) == SEG_SLOT_RELEASING;
		snap->unsettled += SLOT_STATE(owner) == SEG_SLOT_RELEASING;
		snap->bad_state += SLOT_STATE(owner) > SEG_SLOT_RELEASING;
		cmm_smp_rmb();
		ss->slot = i;
		ss->state = SLOT_STATE(owner);
		ss->pid = SLOT_PID(owner);
		len = cache_len_read(&s->cache);
		/* A length out of range is no count. */
		ss->len = len > h->obj_count ? 0 : len;
		snap->bad_len += len > h->obj_count;
		if (counters_read(ss->stats, &s->cache, deadline) &&
		    SLOT_STATE(owner) != SEG_SLOT_RELEASING)
			snap->unsettled++;
		ss->has_process = 0;
		if (want_process)
			ss->has_process = process_name(ss->pid,
				uatomic_read(&s->start_time), ss->process,
				sizeof(ss->process));
		snap->total_cache_count += ss->len;
		snap->nb_live++;
	}
	return releasing;
}

/* Did any slot change owner since owners[] was taken? */
static int
owners_changed(const struct pool_handle *h, const uint64_t *owners)
{
	uint32_t i;

	cmm_smp_rmb();
	for (i = 0; i < h->nb_slots; i++)
		if (uatomic_read(&h->slots[i].owner) != owners[i])
			return 1;
	return 0;
}

int
pool_snap_read(const struct pool_ref *ref, struct pool_snap *snap,
		int want_process, char *err, size_t errsz)
{
	struct pool_handle *h;
	const struct seg_hdr *hdr;
	uint64_t r2[SNAP_COUNTERS], *owners;
	uint64_t ring, deadline = 0, caches_deadline = 0;
	uint32_t i, tries = 0;
	uint64_t avail;
	int ret, releasing;

	memset(snap, 0, sizeof(*snap));
	snprintf(snap->name, sizeof(snap->name), "%s", ref->name);
	snap->path = ref->path;
	if (ref->path == NULL) {
		snprintf(err, errsz, "pool '%s': shmpoold reports it broken "
			"(its segment was truncated)", ref->name);
		return -EIO;
	}
	sigbus_catch();
	ret = pool_open_file(ref->path, ref->name, 0, &h);
	if (ret < 0) {
		snprintf(err, errsz, "pool '%s': %s", ref->name,
			shmpool_last_error()[0] != '\0' ?
			shmpool_last_error() : strerror(-ret));
		return ret;
	}
	snap->slots = calloc(h->nb_slots, sizeof(*snap->slots));
	owners = calloc(h->nb_slots, sizeof(*owners));
	if (snap->slots == NULL || owners == NULL) {
		free(owners);
		free(snap->slots);
		snap->slots = NULL;
		pool_close(h);
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	if (sigsetjmp(bus_jmp, 1) != 0) {
		free(owners);
		free(snap->slots);
		snap->slots = NULL;
		pool_close(h);
		snprintf(err, errsz, "pool '%s': %s was cut short while "
			"being read", ref->name, ref->path);
		return -EIO;
	}
	bus_armed = 1;

	hdr = h->hdr;
	snap->huge = !!(uatomic_read(&hdr->flags) & SEG_FLAG_HUGE);
	snap->page_size = uatomic_read(&hdr->page_size);
	snap->seg_size = h->map_size;
	snap->create_time = uatomic_read(&hdr->create_time);
	snap->create_nsec = uatomic_read(&hdr->create_nsec);
	snap->size = h->obj_count;
	snap->obj_size = uatomic_read(&hdr->obj_size);
	snap->elt_size = h->elt_size;
	/* The padding after an object (the header was checked once, and
	 * another process could have changed it since). */
	snap->trailer_size = snap->elt_size > snap->obj_size ?
		snap->elt_size - snap->obj_size : 0;
	snap->cache_size = h->cache_size;
	snap->flushthresh = SHMPOOL_CACHE_FLUSHTHRESH(h->cache_size);
	snap->nb_slots = h->nb_slots;
	snap->nb_rings = h->nb_rings;

	/*
	 * A slot released meanwhile moves its counters into the retired
	 * totals: read the retired totals before and after the slots, and
	 * again until nothing moved in between, so that no count is seen
	 * twice or not at all.  Workers that only get and put do not make
	 * it retry.
	 */
	for (;;) {
		counters_read(snap->retired, &hdr->retired, NULL);
		cmm_smp_rmb();
		releasing = snap_slots(h, snap, owners, want_process,
			&caches_deadline);
		counters_read(r2, &hdr->retired, NULL);
		if (!releasing && !owners_changed(h, owners) &&
		    memcmp(r2, snap->retired, sizeof(r2)) == 0)
			break;
		/* A slot being released, or owners that came and went: a
		 * release takes a moment, one stopped or killed in the
		 * middle of it lasts (snap->unsettled says so).  The
		 * caches' own wait is another, spent once. */
		if (!read_again(&tries, &deadline))
			break;
	}
	ring = rings_count(h);
	/* A ring's heads no ring can have, or more positions between them
	 * than the pool's objects and the holes among them (read after the
	 * heads: a warning, not an error). */
	for (i = 0; i < h->nb_rings; i++) {
		uint64_t cons, prod;

		snap->bad_rings += ring_heads_read(&h->rings[i], &cons,
			&prod) < 0 || prod - cons > h->obj_count +
			uatomic_read(&h->rings[i].r->holes);
	}
	bus_armed = 0;

	snap->common_pool_count = ring > h->obj_count ? h->obj_count : ring;
	if (snap->total_cache_count > h->obj_count)
		snap->total_cache_count = h->obj_count;
	for (i = 0; i < SNAP_COUNTERS; i++) {
		uint32_t k;

		snap->stats[i] = snap->retired[i];
		for (k = 0; k < snap->nb_live; k++)
			snap->stats[i] += snap->slots[k].stats[i];
	}
	snap->caches_in_use = snap->nb_live;
	avail = snap->common_pool_count + snap->total_cache_count;
	snap->avail = avail > snap->size ? snap->size : (uint32_t)avail;
	snap->in_use = snap->size - snap->avail;
	free(owners);
	pool_close(h);
	return 0;
}

/* What snap could only read as best it could, on stderr: the numbers
 * printed are those, and the exit status stays 0. */
static void
snap_warn(const struct ctl *c, const struct pool_snap *snap)
{
	if (snap->unsettled > 0)
		ctl_warn(c, "pool '%s': %u slot(s) in the middle of a change "
			"that did not end (an owner stopped or killed there, "
			"not yet reclaimed by shmpoold): their counts are "
			"read as their records say", snap->name,
			snap->unsettled);
	if (snap->bad_len > 0)
		ctl_warn(c, "pool '%s': %u slot(s) with a cache length past "
			"the pool's %u objects (a corrupt segment): counted "
			"as 0", snap->name, snap->bad_len, snap->size);
	if (snap->bad_state > 0)
		ctl_warn(c, "pool '%s': %u slot(s) in a state no library "
			"writes (a corrupt segment): listed as in use",
			snap->name, snap->bad_state);
	if (snap->bad_rings > 0)
		ctl_warn(c, "pool '%s': %u ring(s) whose heads no ring can "
			"have (a corrupt segment): their objects counted as "
			"0 to the ring's size", snap->name, snap->bad_rings);
}

void
pool_snap_free(struct pool_snap *snap)
{
	free(snap->slots);
	snap->slots = NULL;
}

/* Bytes a text line cannot hold as they are, as \ooo; with_space for a
 * column of a table. */
static int
must_escape(unsigned char ch, int with_space)
{
	return ch < 0x20 || ch == 0x7f || ch == '\\' ||
		(with_space && ch == ' ');
}

static void
text_escaped(FILE *f, const char *s, int with_space)
{
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (must_escape(*p, with_space))
			fprintf(f, "\\%03o", *p);
		else
			fputc(*p, f);
	}
}

/* The process column: its name escaped, or "-" (size: 4 bytes a byte). */
static void
process_cell(const struct slot_snap *ss, char *buf, size_t size)
{
	const unsigned char *p = (const unsigned char *)ss->process;
	size_t n = 0;

	if (!ss->has_process || *p == '\0') {
		snprintf(buf, size, "-");
		return;
	}
	for (; *p != '\0' && n + 5 <= size; p++) {
		if (must_escape(*p, 1))
			n += (size_t)snprintf(buf + n, size - n, "\\%03o", *p);
		else
			buf[n++] = (char)*p;
	}
	buf[n] = '\0';
}

/* The --per-cache table: numbers right-aligned, the process left. */
#define PC_COLS		(4 + SNAP_COUNTERS)
#define PC_PROCESS	2
#define PC_CELL		(64 * 4 + 1)

static void
per_cache_table(FILE *f, const struct pool_snap *snap)
{
	char (*cells)[PC_COLS][PC_CELL];
	const char *head[PC_COLS] = { "slot", "pid", "process", "len" };
	size_t width[PC_COLS];
	uint32_t r;
	unsigned int k;

	for (k = 0; k < SNAP_COUNTERS; k++)
		head[4 + k] = counters[k].name;
	cells = calloc(snap->nb_live + 1, sizeof(*cells));
	if (cells == NULL)
		return;
	for (k = 0; k < PC_COLS; k++)
		snprintf(cells[0][k], PC_CELL, "%s", head[k]);
	for (r = 0; r < snap->nb_live; r++) {
		const struct slot_snap *ss = &snap->slots[r];
		char (*row)[PC_CELL] = cells[r + 1];

		snprintf(row[0], PC_CELL, "%" PRIu32, ss->slot);
		snprintf(row[1], PC_CELL, "%ld", (long)ss->pid);
		process_cell(ss, row[2], PC_CELL);
		snprintf(row[3], PC_CELL, "%" PRIu32, ss->len);
		for (k = 0; k < SNAP_COUNTERS; k++)
			snprintf(row[4 + k], PC_CELL, "%" PRIu64,
				ss->stats[k]);
	}
	for (k = 0; k < PC_COLS; k++) {
		width[k] = 0;
		for (r = 0; r <= snap->nb_live; r++)
			if (strlen(cells[r][k]) > width[k])
				width[k] = strlen(cells[r][k]);
	}
	for (r = 0; r <= snap->nb_live; r++) {
		fputs("  ", f);
		for (k = 0; k < PC_COLS; k++) {
			if (k > 0)
				fputc(' ', f);
			if (k == PC_PROCESS)
				fprintf(f, "%-*s", (int)width[k], cells[r][k]);
			else
				fprintf(f, "%*s", (int)width[k], cells[r][k]);
		}
		fputc('\n', f);
	}
	free(cells);
}

static void
dump_text(FILE *f, const struct pool_snap *snap, int per_cache)
{
	uint32_t k;
	unsigned int i;

	fprintf(f, "pool %s@", snap->name);
	text_escaped(f, snap->path, 0);
	fprintf(f, "\n"
		"  memory=%s\n"
		"  page_size=%" PRIu64 "\n"
		"  segment_size=%" PRIu64 "\n"
		"  size=%" PRIu32 "\n"
		"  populated_size=%" PRIu32 "\n"
		"  object_size=%" PRIu32 "\n"
		"  header_size=0\n"
		"  trailer_size=%" PRIu32 "\n"
		"  total_obj_size=%" PRIu32 "\n"
		"  cache_size=%" PRIu32 "\n"
		"  flushthresh=%" PRIu32 "\n"
		"  slots=%" PRIu32 "\n"
		"  rings=%" PRIu32 "\n"
		"  common_pool_count=%" PRIu32 "\n"
		"  avail_count=%" PRIu32 "\n"
		"  in_use_count=%" PRIu32 "\n"
		"  caches_in_use=%" PRIu32 "\n",
		snap->huge ? "huge" : "shm", snap->page_size, snap->seg_size,
		snap->size, snap->size, snap->obj_size,
		snap->trailer_size, snap->elt_size,
		snap->cache_size, snap->flushthresh, snap->nb_slots,
		snap->nb_rings, snap->common_pool_count, snap->avail, snap->in_use,
		snap->caches_in_use);
	for (k = 0; k < snap->nb_live; k++)
		fprintf(f, "  cache[%" PRIu32 "]: pid=%ld len=%" PRIu32 "\n",
			snap->slots[k].slot, (long)snap->slots[k].pid,
			snap->slots[k].len);
	fprintf(f, "  total_cache_count=%" PRIu64 "\n",
		snap->total_cache_count);
	if (per_cache)
		per_cache_table(f, snap);
	fputs("  stats:\n", f);
	for (i = 0; i < SNAP_COUNTERS; i++)
		fprintf(f, "    %s=%" PRIu64 "\n", counters[i].name,
			snap->stats[i]);
	fputs("  retired:\n", f);
	for (i = 0; i < SNAP_COUNTERS; i++)
		fprintf(f, "    %s=%" PRIu64 "\n", counters[i].name,
			snap->retired[i]);
}

static void
jw_counters(struct jw *w, const char *key, const uint64_t *v)
{
	unsigned int i;

	jw_obj_open(w, key);
	for (i = 0; i < SNAP_COUNTERS; i++)
		jw_u64(w, counters[i].name, v[i]);
	jw_obj_close(w);
}

static void
dump_json_pool(struct jw *w, const struct pool_snap *snap)
{
	uint32_t k;

	jw_obj_open(w, NULL);
	jw_str(w, "name", snap->name);
	jw_str(w, "path", snap->path);
	jw_str(w, "memory", snap->huge ? "huge" : "shm");
	jw_u64(w, "page_size", snap->page_size);
	jw_u64(w, "segment_size", snap->seg_size);
	jw_u64(w, "size", snap->size);
	jw_u64(w, "populated_size", snap->size);
	jw_u64(w, "object_size", snap->obj_size);
	jw_u64(w, "header_size", 0);
	jw_u64(w, "trailer_size", snap->trailer_size);
	jw_u64(w, "total_obj_size", snap->elt_size);
	jw_u64(w, "cache_size", snap->cache_size);
	jw_u64(w, "flushthresh", snap->flushthresh);
	jw_u64(w, "slots", snap->nb_slots);
	jw_u64(w, "rings", snap->nb_rings);
	jw_u64(w, "common_pool_count", snap->common_pool_count);
	jw_u64(w, "avail_count", snap->avail);
	jw_u64(w, "in_use_count", snap->in_use);
	jw_u64(w, "caches_in_use", snap->caches_in_use);
	jw_u64(w, "total_cache_count", snap->total_cache_count);
	jw_arr_open(w, "caches");
	for (k = 0; k < snap->nb_live; k++) {
		const struct slot_snap *ss = &snap->slots[k];

		jw_obj_open(w, NULL);
		jw_u64(w, "slot", ss->slot);
		jw_i64(w, "pid", ss->pid);
		if (ss->has_process)
			jw_str(w, "process", ss->process);
		else
			jw_null(w, "process");
		jw_u64(w, "len", ss->len);
		jw_counters(w, "stats", ss->stats);
		jw_obj_close(w);
	}
	jw_arr_close(w);
	jw_counters(w, "stats", snap->stats);
	jw_counters(w, "retired", snap->retired);
	jw_obj_close(w);
}

/* A label value: backslash, double quote and newline escaped. */
static void
prom_label(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void
prom_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP shmpool_%s %s\n# TYPE shmpool_%s %s\n", name, help,
		name, type);
}

static void
prom_sample(FILE *f, const char *family, const char *pool, const char *slot,
		uint64_t v)
{
	fprintf(f, "shmpool_%s{pool=\"", family);
	prom_label(f, pool);
	if (slot != NULL)
		fprintf(f, "\",slot=\"%s", slot);
	fprintf(f, "\"} %" PRIu64 "\n", v);
}

/* Each family once, with the samples of every pool. */
static void
dump_prometheus(FILE *f, const struct pool_snap *snaps, size_t n)
{
	static const struct {
		const char *name;
		const char *help;
		size_t off;
	} gauges[] = {
		{ "size", "Objects in the pool.",
			offsetof(struct pool_snap, size) },
		{ "avail", "Free objects: in the rings and in the caches.",
			offsetof(struct pool_snap, avail) },
		{ "in_use", "Objects taken and not put back.",
			offsetof(struct pool_snap, in_use) },
		{ "common_pool_count", "Free objects in the rings.",
			offsetof(struct pool_snap, common_pool_count) },
		{ "caches_in_use", "Slots in use.",
			offsetof(struct pool_snap, caches_in_use) },
	};
	char slot[16];
	unsigned int i, g;
	size_t p;
	uint32_t k;

	for (i = 0; i < SNAP_COUNTERS; i++) {
		prom_family(f, counters[i].name, "counter", counters[i].help);
		for (p = 0; p < n; p++) {
			for (k = 0; k < snaps[p].nb_live; k++) {
				snprintf(slot, sizeof(slot), "%" PRIu32,
					snaps[p].slots[k].slot);
				prom_sample(f, counters[i].name, snaps[p].name,
					slot, snaps[p].slots[k].stats[i]);
			}
			prom_sample(f, counters[i].name, snaps[p].name,
				"retired", snaps[p].retired[i]);
		}
	}
	for (g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
		prom_family(f, gauges[g].name, "gauge", gauges[g].help);
		for (p = 0; p < n; p++)
			prom_sample(f, gauges[g].name, snaps[p].name, NULL,
				*(const uint32_t *)((const char *)&snaps[p] +
					gauges[g].off));
	}
	prom_family(f, "cache_len", "gauge",
		"Objects in the cache of each slot in use.");
	for (p = 0; p < n; p++) {
		for (k = 0; k < snaps[p].nb_live; k++) {
			snprintf(slot, sizeof(slot), "%" PRIu32,
				snaps[p].slots[k].slot);
			prom_sample(f, "cache_len", snaps[p].name, slot,
				snaps[p].slots[k].len);
		}
	}
}

static const char usage_dump[] =
	"usage: shmpoolctl [-s PATH] dump [NAME] [--per-cache] "
	"[--json | --prometheus]\n";

enum {
	OPT_PER_CACHE = 256,
	OPT_PROMETHEUS,
};

const struct option dump_opts[] = {
	{ "per-cache", no_argument, NULL, OPT_PER_CACHE },
	{ "prometheus", no_argument, NULL, OPT_PROMETHEUS },
	VERB_COMMON_OPTS,
	{ NULL, 0, NULL, 0 },
};

/* A segment that could not be read: named in the JSON document too. */
struct dump_err {
	const char *name;
	const char *path;
	char msg[CTL_ERRMSG_MAX];
};

int
do_dump(struct ctl *c, int argc, char **argv)
{
	struct verb_args va;
	struct pool_refs refs;
	struct pool_snap *snaps;
	struct dump_err *errs;
	const char *name = NULL;
	size_t i, n = 0, nerr = 0;
	int ch, ret, per_cache = 0, prometheus = 0;
	struct jw w;

	ret = verb_args_init(&va, c, usage_dump, argc, argv, dump_opts);
	if (ret != 0)
		return ret;
	while (ret == 0 && (ch = next_opt(&va, &ret)) != -1) {
		if (ch == OPT_PER_CACHE)
			per_cache = 1;
		else if (ch == OPT_PROMETHEUS)
			prometheus = 1;
		else if (ch == 'h')
			ret = -1;
	}
	if (ret == 0)
		ret = take_name(c, usage_dump, va.args, va.nargs, 0, &name);
	if (ret == 0 && prometheus && c->json)
		ret = usage_error(c, usage_dump, "--json and --prometheus "
			"exclude each other");
	verb_args_free(&va);
	if (ret < 0)
		return verb_help(c, usage_dump);
	if (ret != 0)
		return ret;

	ret = pools_find(c, name, &refs);
	if (ret != 0)
		return ret;
	snaps = calloc(refs.n + 1, sizeof(*snaps));
	errs = calloc(refs.n + 1, sizeof(*errs));
	if (snaps == NULL || errs == NULL) {
		free(snaps);
		free(errs);
		pool_refs_free(&refs);
		return ctl_fail_local(c, ENOMEM, "out of memory");
	}
	for (i = 0; i < refs.n; i++) {
		struct dump_err *e = &errs[nerr];

		ret = pool_snap_read(&refs.v[i], &snaps[n], 1, e->msg,
			sizeof(e->msg));
		if (ret == 0) {
			snap_warn(c, &snaps[n]);
			n++;
			continue;
		}
		/* One pool asked for and not read: that is the answer. */
		if (name != NULL) {
			/* A stale index line: the segment is gone. */
			ret = ctl_error(c, ret == -ENOENT ? EXIT_NO_POOL :
				EXIT_FAILED, proto_errname(ret), "name", name,
				"%s", e->msg);
			goto out;
		}
		ctl_warn(c, "%s", e->msg);
		e->name = refs.v[i].name;
		e->path = refs.v[i].path;
		nerr++;
	}

	if (prometheus) {
		dump_prometheus(c->out, snaps, n);
	} else if (c->json) {
		jw_init(&w, c->out);
		jw_obj_open(&w, NULL);
		jw_arr_open(&w, "pools");
		for (i = 0; i < n; i++)
			dump_json_pool(&w, &snaps[i]);
		jw_arr_close(&w);
		if (nerr > 0) {
			jw_arr_open(&w, "errors");
			for (i = 0; i < nerr; i++) {
				jw_obj_open(&w, NULL);
				jw_str(&w, "name", errs[i].name);
				jw_str(&w, "path", errs[i].path);
				jw_str(&w, "message", errs[i].msg);
				jw_obj_close(&w);
			}
			jw_arr_close(&w);
		}
		jw_obj_close(&w);
		jw_end(&w);
	} else {
		for (i = 0; i < n; i++) {
			if (i > 0)
				fputc('\n', c->out);
			dump_text(c->out, &snaps[i], per_cache);
		}
	}
	ret = nerr > 0 ? EXIT_FAILED : EXIT_OK;
out:
	for (i = 0; i < n; i++)
		pool_snap_free(&snaps[i]);
	free(snaps);
	free(errs);
	pool_refs_free(&refs);
	return ret;
}
