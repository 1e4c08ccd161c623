/*
 * check_segment.c - creating segments, refusing bad ones and bad
 * arguments, and one segment mapped at two addresses at once.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "segment-internal.h"
#include "testutil.h"

static int
attach_path(const char *name, const char *path, struct shmpool **pool)
{
	struct shmpool_attach_opts o = { .path = path };

	return shmpool_attach(name, &o, pool);
}

/* Files in the scratch folder whose names start with prefix. */
static int
count_files(const char *prefix)
{
	DIR *d = opendir(tu_dir());
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

START_TEST(test_create_and_info)
{
	struct shmpool_info info;
	struct shmpool *pool;
	struct stat st;

	tu_create("info", 1000, 65, 16, 8);
	ck_assert_int_eq(stat(tu_path("info"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	pool = tu_attach("info", -1);
	ck_assert_int_eq(shmpool_info(pool, &info), 0);
	ck_assert_str_eq(info.name, "info");
	ck_assert_uint_eq(info.obj_count, 1000);
	ck_assert_uint_eq(info.obj_size, 65);
	ck_assert_uint_eq(info.elt_size, 128);
	ck_assert_uint_eq(info.cache_size, 16);
	ck_assert_uint_eq(info.nb_slots, 8);
	ck_assert_uint_eq(info.slots_in_use, 1);
	ck_assert_uint_eq(info.flags, 0);
	ck_assert_uint_eq(info.page_size, (uint64_t)sysconf(_SC_PAGESIZE));
	ck_assert_uint_eq(info.seg_size, (uint64_t)st.st_size);
	ck_assert_uint_eq(info.abi_version, SEG_ABI_VERSION);
	ck_assert_uint_eq(shmpool_avail_count(pool), 1000);
	ck_assert_uint_eq(shmpool_in_use_count(pool), 0);
	ck_assert_int_eq(shmpool_info(NULL, &info), -EINVAL);
	ck_assert_int_eq(shmpool_info(pool, NULL), -EINVAL);

	/* Object numbers and pointers. */
	ck_assert_int_eq(shmpool_obj_index(pool, shmpool_obj_at(pool, 999)),
		999);
	ck_assert_ptr_null(shmpool_obj_at(pool, 1000));
	ck_assert_int_eq(shmpool_obj_index(pool,
		(char *)shmpool_obj_at(pool, 3) + 1), -EINVAL);
	ck_assert_int_eq(shmpool_obj_index(pool, &info), -EINVAL);
	ck_assert_int_eq(shmpool_obj_index(pool, NULL), -EINVAL);

	/* One pool per path. */
	{
		struct shmpool_params p = { .obj_count = 10, .obj_size = 8 };

		ck_assert_int_eq(shmpool_segment_create(tu_path("info"), "info",
			&p, 0600), -EEXIST);
	}
	/* Said before the segment is made: a process that could not write
	 * a second copy (a file size limit of one page here) still hears
	 * -EEXIST, not the error of the copy. */
	{
		struct shmpool_params p = { .obj_count = 1000, .obj_size = 64 };
		struct rlimit rl = { 4096, 4096 };
		int status;
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			signal(SIGXFSZ, SIG_IGN);
			if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
				_exit(2);
			_exit(shmpool_segment_create(tu_path("info"), "info",
				&p, 0600) == -EEXIST ? 0 : 1);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert(WIFEXITED(status));
		ck_assert_int_eq(WEXITSTATUS(status), 0);
	}
	ck_assert_int_eq(count_files("shmpool.info"), 1);
	shmpool_detach(pool);
}
END_TEST

#define NAME64	"0123456789abcdef0123456789abcdef" \
		"0123456789abcdef0123456789abcdef"

START_TEST(test_create_refuses_bad_parameters)
{
	static const struct {
		const char *name;
		struct shmpool_params p;
	} bad[] = {
		{ "", { 10, 8, 0, 0 } },
		{ ".hidden", { 10, 8, 0, 0 } },
		{ "a/b", { 10, 8, 0, 0 } },
		{ "sp ace", { 10, 8, 0, 0 } },
		{ NAME64, { 10, 8, 0, 0 } },
		{ "count0", { 0, 8, 0, 0 } },
		{ "countmax", { SHMPOOL_OBJ_COUNT_MAX + 1, 8, 0, 0 } },
		{ "size0", { 10, 0, 0, 0 } },
		{ "sizemax", { 10, SHMPOOL_OBJ_SIZE_MAX + 1, 0, 0 } },
		{ "cachemax", { 100000, 8, SHMPOOL_CACHE_MAX_SIZE + 1, 0 } },
		{ "cache15", { 10, 8, 8, 0 } },
		{ "slots", { 10, 8, 0, SHMPOOL_SLOTS_MAX + 1 } },
		{ "huge", { 1U << 30, 1U << 20, 0, 0 } },
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char path[256];

		snprintf(path, sizeof(path), "%s/bad.%u", tu_dir(), i);
		ck_assert_msg(shmpool_segment_create(path, bad[i].name,
			&bad[i].p, 0600) == -EINVAL, "case %u (%s)", i,
			bad[i].name);
		ck_assert_str_ne(shmpool_last_error(), "");
	}
	ck_assert_int_eq(count_files("bad."), 0);
	ck_assert_int_eq(shmpool_segment_create(NULL, "x", &bad[0].p, 0600),
		-EINVAL);
	ck_assert_int_eq(shmpool_segment_create(tu_path("x"), "x", NULL, 0600),
		-EINVAL);
	/* The message names the field and the value. */
	{
		struct shmpool_params p = { .obj_count = 10, .obj_size = 0 };

		shmpool_segment_create(tu_path("rx"), "rx", &p, 0600);
		ck_assert_str_eq(shmpool_last_error(), "pool 'rx': object "
			"size 0 is out of range 1..1048576");
	}
	/* The edges are accepted. */
	tu_create(&NAME64[1], 15, 1, 10, 1);
}
END_TEST

/* Copy the good segment of pool "good" to path, then apply change. */
static void
make_bad_copy(const char *path, void (*change)(int fd, struct seg_hdr *hdr))
{
	struct shmpool_params p = { .obj_count = 64, .obj_size = 64 };
	struct seg_hdr *hdr;
	struct stat st;
	int fd;

	ck_assert_int_eq(shmpool_segment_create(path, "good", &p, 0600), 0);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	hdr = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(hdr, MAP_FAILED);
	change(fd, hdr);
	munmap(hdr, (size_t)st.st_size);
	close(fd);
}

static void bad_magic(int fd, struct seg_hdr *h) { (void)fd; h->magic ^= 1; }
static void bad_abi(int fd, struct seg_hdr *h) { (void)fd; h->abi_version = 99; }
static void bad_ring_off(int fd, struct seg_hdr *h) { (void)fd; h->ring_off += 64; }
static void bad_rings(int fd, struct seg_hdr *h) { (void)fd; h->nb_rings = 3; }
static void many_rings(int fd, struct seg_hdr *h) { (void)fd; h->nb_rings = 16; }
static void more_rings(int fd, struct seg_hdr *h) { (void)fd; h->nb_rings = h->nb_rings == 8 ? 4 : h->nb_rings * 2; }
static void bad_stride(int fd, struct seg_hdr *h) { (void)fd; h->ring_stride += 64; }
static void bad_objs_off(int fd, struct seg_hdr *h) { (void)fd; h->objs_off = h->seg_size; }
static void bad_count(int fd, struct seg_hdr *h) { (void)fd; h->obj_count = 100000; }
static void bad_name(int fd, struct seg_hdr *h) { (void)fd; memset(h->name, 'a', sizeof(h->name)); }
static void truncated(int fd, struct seg_hdr *h) { ck_assert_int_eq(ftruncate(fd, (off_t)h->seg_size - 4096), 0); }
static void tiny(int fd, struct seg_hdr *h) { (void)h; ck_assert_int_eq(ftruncate(fd, 100), 0); }
static void longer(int fd, struct seg_hdr *h) { ck_assert_int_eq(ftruncate(fd, (off_t)h->seg_size + 4096), 0); }

START_TEST(test_attach_refuses_bad_segments)
{
	static const struct {
		void (*change)(int, struct seg_hdr *);
		int err;
	} cases[] = {
		{ bad_magic, -EBADMSG },
		{ bad_abi, -EPROTO },
		{ bad_ring_off, -EBADMSG },
		{ bad_rings, -EBADMSG },
		{ many_rings, -EBADMSG },
		{ more_rings, -EBADMSG },
		{ bad_stride, -EBADMSG },
		{ bad_objs_off, -EBADMSG },
		{ bad_count, -EBADMSG },
		{ bad_name, -EBADMSG },
		{ truncated, -EBADMSG },
		{ tiny, -EBADMSG },
		{ longer, -EBADMSG },
	};
	struct shmpool *pool = NULL;
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[256];

		snprintf(path, sizeof(path), "%s/corrupt.%u", tu_dir(), i);
		make_bad_copy(path, cases[i].change);
		ck_assert_msg(attach_path("good", path, &pool) == cases[i].err,
			"case %u: %s", i, shmpool_last_error());
		ck_assert_ptr_null(pool);
	}
	ck_assert_int_eq(attach_path("good", tu_dir(), &pool), -EISDIR);
	ck_assert_int_eq(attach_path("good", "/nonexistent/x", &pool),
		-ENOENT);
	ck_assert_str_eq(shmpool_last_error(),
		"no pool 'good' (no segment '/nonexistent/x')");

	/* The message says what was wrong, with the value. */
	{
		char path[256], want[512];

		snprintf(path, sizeof(path), "%s/corrupt.1", tu_dir());
		ck_assert_int_eq(attach_path("good", path, &pool), -EPROTO);
		snprintf(want, sizeof(want), "%s: segment ABI version 99, "
			"this library understands %d", path, SEG_ABI_VERSION);
		ck_assert_str_eq(shmpool_last_error(), want);
	}
}
END_TEST

START_TEST(test_attach_refuses_bad_arguments)
{
	struct shmpool *pool = NULL;
	struct shmpool_attach_opts o = { .path = NULL };

	tu_create("args", 64, 64, 8, 2);
	o.path = tu_path("args");
	ck_assert_int_eq(shmpool_attach(NULL, &o, &pool), -EINVAL);
	ck_assert_int_eq(shmpool_attach("args", &o, NULL), -EINVAL);
	ck_assert_int_eq(shmpool_attach("bad/name", &o, &pool), -EINVAL);
	ck_assert_int_eq(shmpool_attach("other", &o, &pool), -EINVAL);
	/* A flag this library does not know. */
	o.flags = 0x80;
	ck_assert_int_eq(shmpool_attach("args", &o, &pool), -EINVAL);
	ck_assert_str_eq(shmpool_last_error(), "unknown attach flags 0x80");
	o.flags = SHMPOOL_ATTACH_CACHE_SIZE | 0x2;
	ck_assert_int_eq(shmpool_attach("args", &o, &pool), -EINVAL);
	o.flags = SHMPOOL_ATTACH_CACHE_SIZE;
	o.cache_size = SHMPOOL_CACHE_MAX_SIZE + 1;
	ck_assert_int_eq(shmpool_attach("args", &o, &pool), -EINVAL);
	o.cache_size = 43;	/* 1.5 * 43 = 64 fits, 1.5 * 44 = 66 does not */
	ck_assert_int_eq(shmpool_attach("args", &o, &pool), 0);
	ck_assert_uint_eq(shmpool_default_cache(pool)->size, 43);
	o.cache_size = 44;
	{
		struct shmpool *p2 = NULL;

		ck_assert_int_eq(shmpool_attach("args", &o, &p2), -EINVAL);
		o.cache_size = 0;
		ck_assert_int_eq(shmpool_attach("args", &o, &p2), 0);
		/* Two slots: a third attachment finds none. */
		{
			struct shmpool *p3 = NULL;

			ck_assert_int_eq(shmpool_attach("args", &o, &p3),
				-EBUSY);
		}
		shmpool_detach(p2);
	}
	ck_assert_int_eq(shmpool_detach(NULL), -EINVAL);
	shmpool_detach(pool);
}
END_TEST

START_TEST(test_get_put_refuse_bad_arguments)
{
	struct shmpool_stats before, after;
	struct shmpool *pool;
	void *objs[65], *obj = NULL;

	tu_create("getput", 64, 64, 8, 2);
	pool = tu_attach("getput", -1);
	ck_assert_int_eq(shmpool_stats_read(pool, SHMPOOL_STATS_ALL, &before), 0);

	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 0), -EINVAL);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 0), -EINVAL);
	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 65), -EINVAL);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 65), -EINVAL);
	ck_assert_int_eq(shmpool_get_bulk(pool, NULL, 1), -EINVAL);
	ck_assert_int_eq(shmpool_put_bulk(pool, NULL, 1), -EINVAL);
	ck_assert_int_eq(shmpool_get_bulk(NULL, objs, 1), -EINVAL);
	ck_assert_int_eq(shmpool_put_bulk(NULL, objs, 1), -EINVAL);
	ck_assert_int_eq(shmpool_get(NULL, &obj), -EINVAL);
	ck_assert_int_eq(shmpool_get(pool, NULL), -EINVAL);
	ck_assert_int_eq(shmpool_put(NULL, obj), -EINVAL);
	ck_assert_int_eq(shmpool_generic_get(pool, NULL, 1, NULL), -EINVAL);
	ck_assert_int_eq(shmpool_generic_put(pool, objs, 0, NULL), -EINVAL);
	ck_assert_int_eq(shmpool_generic_get(NULL, objs, 1,
		shmpool_default_cache(pool)), -EINVAL);
	ck_assert_int_eq(shmpool_generic_put(NULL, objs, 1,
		shmpool_default_cache(pool)), -EINVAL);
	/* The inline code's out-of-line entries, which it calls with pool
	 * and objs tested, refuse a bad n (check_stats: what they do with
	 * good arguments). */
	ck_assert_int_eq(shmpool_generic_get_slow_(pool, objs, 0,
		shmpool_default_cache(pool)), -EINVAL);
	ck_assert_int_eq(shmpool_generic_put_slow_(pool, objs, 0, NULL),
		-EINVAL);
	ck_assert_int_eq(shmpool_generic_get_slow_(pool, objs, 65, NULL),
		-EINVAL);
	ck_assert_int_eq(shmpool_generic_put_slow_(pool, objs, 65,
		shmpool_default_cache(pool)), -EINVAL);
	ck_assert_ptr_null(shmpool_default_cache(NULL));
	ck_assert_int_eq(shmpool_cache_slot(NULL), -EINVAL);
	ck_assert_uint_eq(shmpool_avail_count(NULL), 0);
	ck_assert_uint_eq(shmpool_in_use_count(NULL), 0);

	/* Nothing moved, nothing counted. */
	ck_assert_int_eq(shmpool_stats_read(pool, SHMPOOL_STATS_ALL, &after), 0);
	ck_assert_mem_eq(&before, &after, sizeof(before));
	ck_assert_uint_eq(shmpool_avail_count(pool), 64);
	ck_assert_uint_eq(shmpool_cache_len_(shmpool_default_cache(pool)), 0);
	ck_assert_uint_eq(rings_count(pool_handle(pool)), 64);
	shmpool_detach(pool);
}
END_TEST

START_TEST(test_two_mappings)
{
	struct shmpool *a, *b;
	void *objs[16];
	unsigned int i;

	tu_create("twice", 16, 100, 0, 4);
	a = tu_attach("twice", 0);
	b = tu_attach("twice", 0);
	ck_assert_ptr_ne(a->objbase, b->objbase);

	/* Through a: take every object, write its number, put it back. */
	ck_assert_int_eq(shmpool_get_bulk(a, objs, 16), 0);
	for (i = 0; i < 16; i++) {
		ck_assert(objs[i] >= (void *)a->objbase &&
			objs[i] < (void *)(a->objbase + 16 * 128));
		snprintf(objs[i], 100, "object %ld",
			shmpool_obj_index(a, objs[i]));
	}
	ck_assert_int_eq(shmpool_put_bulk(a, objs, 16), 0);

	/* Through b: the same objects at b's addresses, with what a wrote. */
	ck_assert_int_eq(shmpool_get_bulk(b, objs, 16), 0);
	for (i = 0; i < 16; i++) {
		char want[100];

		ck_assert(objs[i] >= (void *)b->objbase &&
			objs[i] < (void *)(b->objbase + 16 * 128));
		snprintf(want, sizeof(want), "object %ld",
			shmpool_obj_index(b, objs[i]));
		ck_assert_str_eq(objs[i], want);
	}
	ck_assert_uint_eq(shmpool_in_use_count(a), 16);
	ck_assert_int_eq(shmpool_put_bulk(b, objs, 16), 0);
	ck_assert_uint_eq(shmpool_avail_count(a), 16);
	shmpool_detach(a);
	shmpool_detach(b);
}
END_TEST

START_TEST(test_strerror)
{
	ck_assert_str_eq(shmpool_strerror(0), "success");
	ck_assert_str_eq(shmpool_strerror(-EBADMSG),
		"not a shmpool segment, or a corrupt one");
	ck_assert_str_eq(shmpool_strerror(-EPROTO),
		"shmpool segment of an unsupported ABI version, or a reply "
		"from shmpoold this library cannot read");
	ck_assert_str_eq(shmpool_strerror(-EBUSY),
		"every cache slot of the pool is taken");
	ck_assert_str_eq(shmpool_strerror(-ENOENT), "No such file or directory");
	ck_assert_str_eq(shmpool_strerror(-EINVAL), "Invalid argument");
}
END_TEST

static Suite *
segment_suite(void)
{
	Suite *s = suite_create("segment");
	TCase *tc = tcase_create("segment");

	tcase_add_test(tc, test_create_and_info);
	tcase_add_test(tc, test_create_refuses_bad_parameters);
	tcase_add_test(tc, test_attach_refuses_bad_segments);
	tcase_add_test(tc, test_attach_refuses_bad_arguments);
	tcase_add_test(tc, test_get_put_refuse_bad_arguments);
	tcase_add_test(tc, test_two_mappings);
	tcase_add_test(tc, test_strerror);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return tu_run(segment_suite());
}
