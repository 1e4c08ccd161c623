/*
 * check_hugepages.c - a pool on huge pages, for real: as root the suite
 * reserves a few huge pages, mounts hugetlbfs in its scratch folder,
 * creates pools there, and puts both back afterwards.  Not root: skipped.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define RESERVE		4	/* huge pages this suite adds */

static char mnt[256];
static uint64_t huge_size;	/* bytes in a default huge page */

START_TEST(test_pool_on_huge_pages)
{
	struct shmpool_params p = { .obj_count = 1000, .obj_size = 200,
		.cache_size = 32 };
	struct shmpool_attach_opts o;
	struct shmpool_info info;
	struct shmpool *pool;
	char path[300];
	long free_before = tu_meminfo("HugePages_Free:");
	void *objs[64];

	snprintf(path, sizeof(path), "%s/shmpool.huge", mnt);
	ck_assert_int_eq(shmpool_segment_create(path, "huge", &p, 0600), 0);
	o = (struct shmpool_attach_opts){ .path = path };
	ck_assert_int_eq(shmpool_attach("huge", &o, &pool), 0);
	ck_assert_int_eq(shmpool_info(pool, &info), 0);
	ck_assert_uint_eq(info.flags, SHMPOOL_INFO_HUGE);
	ck_assert_uint_eq(info.page_size, huge_size);
	ck_assert_uint_eq(info.seg_size % huge_size, 0);
	/* Allocated at creation: the pages are gone from the free count. */
	ck_assert_int_eq(tu_meminfo("HugePages_Free:"),
		free_before - (long)(info.seg_size / huge_size));
	ck_assert_int_eq(tu_mapping_page_kb(path), (long)(huge_size >> 10));

	ck_assert_int_eq(shmpool_get_bulk(pool, objs, 64), 0);
	memset(objs[63], 0xa5, 200);
	ck_assert_int_eq(shmpool_put_bulk(pool, objs, 64), 0);
	ck_assert_uint_eq(shmpool_avail_count(pool), 1000);
	shmpool_detach(pool);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(tu_meminfo("HugePages_Free:"), free_before);
}
END_TEST

START_TEST(test_not_enough_huge_pages)
{
	long free_pages = tu_meminfo("HugePages_Free:");
	struct shmpool_params p = { .obj_count = 4096, .obj_size = 0 };
	char path[300];
	struct stat st;
	int ret;

	/* One page more than there are free. */
	p.obj_size = (unsigned int)(huge_size / 4096 * (uint64_t)free_pages) +
		SHMPOOL_CACHE_LINE;
	if (p.obj_size > SHMPOOL_OBJ_SIZE_MAX) {
		p.obj_size = SHMPOOL_OBJ_SIZE_MAX;
		p.obj_count = (unsigned int)(huge_size * (uint64_t)free_pages /
			SHMPOOL_OBJ_SIZE_MAX) + 1;
	}
	snprintf(path, sizeof(path), "%s/shmpool.toobig", mnt);
	ret = shmpool_segment_create(path, "toobig", &p, 0600);
	ck_assert_msg(ret == -ENOSPC || ret == -ENOMEM, "create: %d (%s)",
		ret, shmpool_last_error());
	/* Nothing left behind: no file, every page free again. */
	ck_assert_int_eq(stat(path, &st), -1);
	ck_assert_int_eq(tu_count_entries(mnt), 0);
	ck_assert_int_eq(tu_meminfo("HugePages_Free:"), free_pages);
}
END_TEST

int
main(void)
{
	Suite *s;
	TCase *tc;
	const char *why;
	int ret;

	snprintf(mnt, sizeof(mnt), "/tmp/shmpool-huge.%ld", (long)getpid());
	if (tu_huge_reserve(RESERVE, mnt, &why) < 0) {
		printf("SKIP: huge page tests: %s\n", why);
		return 77;
	}
	huge_size = (uint64_t)tu_meminfo("Hugepagesize:") << 10;
	s = suite_create("hugepages");
	tc = tcase_create("hugepages");
	tcase_add_test(tc, test_pool_on_huge_pages);
	tcase_add_test(tc, test_not_enough_huge_pages);
	suite_add_tcase(s, tc);
	ret = tu_run(s);

	/* Put the machine back as it was. */
	tu_huge_release();
	return ret;
}
