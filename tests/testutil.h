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

/* Wait for the n children in pids, each to exit 0, within seconds. */
void tu_wait_children(const pid_t *pids, int n, int seconds);

/* Random numbers good enough for tests, one stream per seed. */
static inline uint32_t
tu_rand(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return (uint32_t)(*state >> 11);
}

/* Run the suite with a scratch folder, remove it, return the exit code. */
int tu_run(Suite *s);

#endif /* SHMPOOL_TESTUTIL_H */
