/*
 * testutil.h - what the Check suites share: a scratch folder for segments,
 * pools made there, and children waited for with a deadline.
 */
#ifndef SHMPOOL_TESTUTIL_H
#define SHMPOOL_TESTUTIL_H

#include <check.h>
#include <stdint.h>
#include <sys/types.h>

#include "shmpool.h"

/* The suite's scratch folder (made by tu_run()) and a segment path in it. */
const char *tu_dir(void);
const char *tu_path(const char *name);

/* Create pool name in the scratch folder; fails the test on error. */
void tu_create(const char *name, unsigned int count, unsigned int size,
		unsigned int cache, unsigned int slots);

/* Attach to it; cache < 0 keeps the pool's default cache size. */
struct shmpool *tu_attach(const char *name, int cache);

/* Slots in use in the pool, as the attachment sees them. */
unsigned int tu_slots_in_use(const struct shmpool *pool);

/* Seconds on the monotonic clock. */
double tu_now(void);

/* Wait for the n children in pids, each to exit 0, within seconds. */
void tu_wait_children(const pid_t *pids, int n, int seconds);

/* Counter f of st is that of e, or 0 in a build without stats. */
#define TU_CHECK_FIELD(st, e, f, what)					\
	ck_assert_msg((st).f == (SHMPOOL_STATS ? (e).f : 0),		\
		"%s: %s is %llu, expected %llu", what, #f,		\
		(unsigned long long)(st).f,				\
		(unsigned long long)(SHMPOOL_STATS ? (e).f : 0))

/* The counters of slot (or SHMPOOL_STATS_*) of pool are e, or all 0 in a
 * build without stats; what names the check in a failure. */
void tu_check_stats(const struct shmpool *pool, int slot,
		const struct shmpool_stats *e, const char *what);

/* a + times x b, counter by counter. */
struct shmpool_stats tu_stats_add(struct shmpool_stats a,
		const struct shmpool_stats *b, int times);

/* Random numbers good enough for tests, one stream per seed. */
static inline uint32_t
tu_rand(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return (uint32_t)(*state >> 11);
}

/* Remove dir and everything in it (not crossing into mounts). */
void tu_rm_tree(const char *dir);

/* A field of /proc/meminfo, e.g. "HugePages_Free:" or "Hugepagesize:". */
long tu_meminfo(const char *field);

/* KernelPageSize, in kB, of this process's mapping of path. */
long tu_mapping_page_kb(const char *path);

/* Entries in folder dir, other than . and .. */
int tu_count_entries(const char *dir);

/*
 * Huge pages for a suite, as root: tu_huge_reserve() waits (up to 60 s)
 * for the lock that the suites' other runs on this machine take for
 * theirs, adds n pages to nr_hugepages and mounts a hugetlbfs at mnt (a
 * folder it makes); 0, or -1 with nothing left changed and the reason in
 * *why.  tu_huge_release() unmounts it, removes the folder, takes the n
 * pages it added off nr_hugepages again (those others added stay) and
 * drops the lock; so does a SIGINT, SIGTERM or SIGHUP to the runner
 * meanwhile (one it is not ignoring), which then meets the action it had
 * before (Check's own, or the default).
 */
int tu_huge_reserve(long n, const char *mnt, const char **why);
void tu_huge_release(void);

/* A process a test started out of Check's reach (a daemon that forked,
 * in a session of its own): tu_run() kills it after the suite if it is
 * still running there (its command line naming the scratch folder), as a
 * failed test leaves it. */
void tu_stray(pid_t pid);

/* Run the suite with a scratch folder, remove it, return the exit code. */
int tu_run(Suite *s);

#endif /* SHMPOOL_TESTUTIL_H */
