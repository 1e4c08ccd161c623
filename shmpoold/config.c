/*
 * config.c - shmpoold.conf, and the parameters of a pool to create, which
 * a config section and a create request share.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "shmpoold.h"

static const char *const policies[] = {
	[SEG_POLICY_UNKNOWN] = "unknown",
	[SEG_POLICY_REQUIRE] = "require",
	[SEG_POLICY_PREFER] = "prefer",
	[SEG_POLICY_NEVER] = "never",
};

const char *
policy_name(int policy)
{
	return policy >= 0 && policy <= SEG_POLICY_NEVER ? policies[policy] :
		"unknown";
}

static int
parse_u32(const char *key, const char *value, uint32_t min, uint32_t max,
		unsigned int *out, char *err, size_t errsz)
{
	uint64_t v;

	if (proto_u64(value, min, max, &v) < 0) {
		snprintf(err, errsz, "%s: '%.64s' is not a number in %u..%u",
			key, value, min, max);
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

static int
parse_user(const char *s, uid_t *uid)
{
	struct passwd *pw = getpwnam(s);
	uint64_t v;

	if (pw != NULL) {
		*uid = pw->pw_uid;
		return 0;
	}
	if (proto_u64(s, 0, UINT32_MAX - 1, &v) < 0)
		return -EINVAL;
	*uid = (uid_t)v;
	return 0;
}

int
parse_group(const char *s, gid_t *gid)
{
	struct group *gr = getgrnam(s);
	uint64_t v;

	if (gr != NULL) {
		*gid = gr->gr_gid;
		return 0;
	}
	if (proto_u64(s, 0, UINT32_MAX - 1, &v) < 0)
		return -EINVAL;
	*gid = (gid_t)v;
	return 0;
}

void
create_req_init(struct create_req *r)
{
	memset(r, 0, sizeof(*r));
	r->policy = SEG_POLICY_PREFER;
	r->mode = MODE_DEFAULT;
	CDS_INIT_LIST_HEAD(&r->node);
}

int
create_req_set(struct create_req *r, const char *key, const char *value,
		char *err, size_t errsz)
{
	int i;

	if (strcmp(key, "name") == 0) {
		if (!shmpool_name_valid(value)) {
			snprintf(err, errsz, "name: '%.64s' is not 1-%d "
				"characters of [A-Za-z0-9._-] not starting "
				"with '.'", value, SHMPOOL_NAME_MAX);
			return -EINVAL;
		}
		snprintf(r->name, sizeof(r->name), "%s", value);
	} else if (strcmp(key, "objects") == 0) {
		return parse_u32(key, value, 1, SHMPOOL_OBJ_COUNT_MAX,
			&r->params.obj_count, err, errsz);
	} else if (strcmp(key, "object-size") == 0) {
		return parse_u32(key, value, 1, SHMPOOL_OBJ_SIZE_MAX,
			&r->params.obj_size, err, errsz);
	} else if (strcmp(key, "cache") == 0) {
		r->cache_set = 1;
		return parse_u32(key, value, 0, SHMPOOL_CACHE_MAX_SIZE,
			&r->params.cache_size, err, errsz);
	} else if (strcmp(key, "slots") == 0) {
		return parse_u32(key, value, 1, SHMPOOL_SLOTS_MAX,
			&r->params.nb_slots, err, errsz);
	} else if (strcmp(key, "huge") == 0) {
		for (i = SEG_POLICY_REQUIRE; i <= SEG_POLICY_NEVER; i++)
			if (strcmp(value, policies[i]) == 0)
				break;
		if (i > SEG_POLICY_NEVER) {
			snprintf(err, errsz, "huge: '%.64s' is not require, "
				"prefer or never", value);
			return -EINVAL;
		}
		r->policy = i;
	} else if (strcmp(key, "owner") == 0) {
		if (parse_user(value, &r->owner) < 0) {
			snprintf(err, errsz, "owner: no user '%.64s'", value);
			return -EINVAL;
		}
		r->owner_set = 1;
	} else if (strcmp(key, "group") == 0) {
		if (parse_group(value, &r->group) < 0) {
			snprintf(err, errsz, "group: no group '%.64s'", value);
			return -EINVAL;
		}
		r->group_set = 1;
	} else if (strcmp(key, "mode") == 0) {
		char *end;
		unsigned long m;

		errno = 0;
		m = strtoul(value, &end, 8);
		if (errno != 0 || *end != '\0' || !isdigit((unsigned char)*value)
				|| m > 0777) {
			snprintf(err, errsz, "mode: '%.64s' is not an octal "
				"mode in 0..0777", value);
			return -EINVAL;
		}
		r->mode = (mode_t)m;
	} else {
		snprintf(err, errsz, "unknown key '%.64s'", key);
		return -ENOENT;
	}
	return 0;
}

int
create_req_finish(struct create_req *r, const char **field, char *err,
		size_t errsz)
{
	unsigned int max_cache;

	*field = NULL;
	if (r->name[0] == '\0') {
		*field = "name";
		snprintf(err, errsz, "name is required");
		return -EINVAL;
	}
	if (r->params.obj_count == 0) {
		*field = "objects";
		snprintf(err, errsz, "objects is required");
		return -EINVAL;
	}
	if (r->params.obj_size == 0) {
		*field = "object-size";
		snprintf(err, errsz, "object-size is required");
		return -EINVAL;
	}
	max_cache = r->params.obj_count * 2 / 3;
	if (!r->cache_set)
		r->params.cache_size = max_cache < CACHE_DEFAULT ? max_cache :
			CACHE_DEFAULT;
	if (SHMPOOL_CACHE_FLUSHTHRESH(r->params.cache_size) >
			r->params.obj_count) {
		*field = "cache";
		snprintf(err, errsz, "cache: %u needs a pool of at least %u "
			"objects (1.5 times), this one has %u",
			r->params.cache_size,
			SHMPOOL_CACHE_FLUSHTHRESH(r->params.cache_size),
			r->params.obj_count);
		return -EINVAL;
	}
	if (r->params.nb_slots == 0)
		r->params.nb_slots = SHMPOOL_SLOTS_DEFAULT;
	if (!seg_objs_fit(r->params.obj_count, r->params.obj_size)) {
		*field = "objects";
		snprintf(err, errsz, "%u objects of %u bytes exceed the "
			"256 GiB a pool can address", r->params.obj_count,
			r->params.obj_size);
		return -EINVAL;
	}
	return 0;
}

void
config_init(struct config *c)
{
	memset(c, 0, sizeof(*c));
	CDS_INIT_LIST_HEAD(&c->pools);
}

void
config_free(struct config *c)
{
	struct create_req *r, *tmp;

	cds_list_for_each_entry_safe(r, tmp, &c->pools, node) {
		cds_list_del(&r->node);
		free(r);
	}
}

void
config_move(struct config *dst, struct config *src)
{
	*dst = *src;
	CDS_INIT_LIST_HEAD(&dst->pools);
	cds_list_splice(&src->pools, &dst->pools);
	CDS_INIT_LIST_HEAD(&src->pools);
}

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int
set_path(char *dst, size_t dstsz, const char *value, const char *key,
		char *err, size_t errsz)
{
	if (value[0] != '/' && strcmp(key, "hugetlbfs") != 0) {
		snprintf(err, errsz, "%s: '%.64s' is not an absolute path",
			key, value);
		return -1;
	}
	if (strlen(value) >= dstsz) {
		snprintf(err, errsz, "%s: path longer than %zu bytes", key,
			dstsz - 1);
		return -1;
	}
	/* The folders of the segments, whose paths go to clients. */
	if ((strcmp(key, "hugetlbfs") == 0 || strcmp(key, "shm-dir") == 0) &&
	    !proto_value_ok(value)) {
		snprintf(err, errsz, "%s: '%.64s' " DIR_NOT_CARRIED, key,
			value);
		return -1;
	}
	strcpy(dst, value);
	return 0;
}

static int
global_set(struct config *c, const char *key, const char *value, char *err,
		size_t errsz)
{
	if (strcmp(key, "socket") == 0)
		return set_path(c->socket, sizeof(c->socket), value, key,
			err, errsz);
	if (strcmp(key, "hugetlbfs") == 0) {
		if (strcmp(value, "none") != 0 && value[0] != '/') {
			snprintf(err, errsz, "hugetlbfs: '%.64s' is neither "
				"an absolute path nor 'none'", value);
			return -1;
		}
		return set_path(c->hugetlbfs, sizeof(c->hugetlbfs), value,
			key, err, errsz);
	}
	if (strcmp(key, "shm-dir") == 0)
		return set_path(c->shm_dir, sizeof(c->shm_dir), value, key,
			err, errsz);
	if (strcmp(key, "pidfile") == 0)
		return set_path(c->pidfile, sizeof(c->pidfile), value, key,
			err, errsz);
	if (strcmp(key, "group") == 0) {
		if (parse_group(value, &c->group) < 0) {
			snprintf(err, errsz, "group: no group '%.64s'", value);
			return -1;
		}
		c->group_set = 1;
		return 0;
	}
	if (strcmp(key, "destroy-on-exit") == 0) {
		if (strcmp(value, "yes") == 0)
			c->destroy_on_exit = 1;
		else if (strcmp(value, "no") == 0)
			c->destroy_on_exit = 0;
		else {
			snprintf(err, errsz, "destroy-on-exit: '%.64s' is not "
				"yes or no", value);
			return -1;
		}
		return 0;
	}
	snprintf(err, errsz, "unknown key '%.64s'", key);
	return -1;
}

static int
pool_end(struct create_req *r, const char *file, char *err, size_t errsz)
{
	char msg[256];
	const char *field;

	if (r == NULL || create_req_finish(r, &field, msg, sizeof(msg)) == 0)
		return 0;
	snprintf(err, errsz, "%s:%u: pool '%s': %s", file, r->line, r->name,
		msg);
	return -1;
}

/* The keys set so far in one section (or before the first), each with
 * its line, so that a second setting of one is refused rather than taken
 * over the first. */
#define SECTION_KEYS_MAX	16
struct section_keys {
	unsigned int n;
	struct {
		char key[32];
		unsigned int line;
	} k[SECTION_KEYS_MAX];
};

/* The line where key was set already in sk, or 0. */
static unsigned int
section_key_line(const struct section_keys *sk, const char *key)
{
	unsigned int i;

	for (i = 0; i < sk->n; i++)
		if (strcmp(sk->k[i].key, key) == 0)
			return sk->k[i].line;
	return 0;
}

/* Record key, set on line (a key that was accepted: one of the few
 * there are, each shorter than the room for it). */
static void
section_key_add(struct section_keys *sk, const char *key, unsigned int line)
{
	if (sk->n == SECTION_KEYS_MAX)
		return;
	snprintf(sk->k[sk->n].key, sizeof(sk->k[sk->n].key), "%s", key);
	sk->k[sk->n].line = line;
	sk->n++;
}

int
config_load(const char *file, struct config *c, char *err, size_t errsz)
{
	struct create_req *pool = NULL, *r;
	struct section_keys sk = { .n = 0 };
	char *line = NULL, msg[256];
	size_t linesz = 0;
	unsigned int lineno = 0, first;
	ssize_t len;
	FILE *f;

	f = fopen(file, "re");
	if (f == NULL) {
		snprintf(err, errsz, "%s: %s", file, strerror(errno));
		return -1;
	}
	snprintf(c->file, sizeof(c->file), "%s", file);
	errno = 0;
	while ((len = getline(&line, &linesz, f)) >= 0) {
		char *p, *eq, *key, *value, *hash;

		lineno++;
		if (memchr(line, '\0', (size_t)len) != NULL) {
			snprintf(msg, sizeof(msg), "a NUL byte in the line");
			goto bad;
		}
		hash = strchr(line, '#');
		if (hash != NULL)
			*hash = '\0';
		p = trim(line);
		if (*p == '\0')
			continue;
		if (*p == '[') {
			char *end = strchr(p, ']');
			char *name;

			if (end == NULL || end[1] != '\0' ||
			    strncmp(p, "[pool", 5) != 0 ||
			    !isspace((unsigned char)p[5])) {
				snprintf(msg, sizeof(msg), "expected a section "
					"'[pool NAME]'");
				goto bad;
			}
			*end = '\0';
			name = trim(p + 5);
			if (pool_end(pool, file, err, errsz) < 0)
				goto fail;
			if (!shmpool_name_valid(name)) {
				snprintf(msg, sizeof(msg), "bad pool name "
					"'%.64s'", name);
				goto bad;
			}
			cds_list_for_each_entry(r, &c->pools, node) {
				if (strcmp(r->name, name) == 0) {
					snprintf(msg, sizeof(msg), "pool '%s' "
						"is defined twice (first on "
						"line %u)", name, r->line);
					goto bad;
				}
			}
			pool = malloc(sizeof(*pool));
			if (pool == NULL) {
				snprintf(msg, sizeof(msg), "out of memory");
				goto bad;
			}
			create_req_init(pool);
			snprintf(pool->name, sizeof(pool->name), "%s", name);
			pool->line = lineno;
			cds_list_add_tail(&pool->node, &c->pools);
			sk.n = 0;
			continue;
		}
		eq = strchr(p, '=');
		if (eq == NULL) {
			snprintf(msg, sizeof(msg), "expected 'key = value'");
			goto bad;
		}
		*eq = '\0';
		key = trim(p);
		value = trim(eq + 1);
		if (*key == '\0' || *value == '\0') {
			snprintf(msg, sizeof(msg), "expected 'key = value'");
			goto bad;
		}
		first = section_key_line(&sk, key);
		if (first != 0) {
			snprintf(msg, sizeof(msg), "%s is set twice (first on "
				"line %u)", key, first);
			goto bad;
		}
		if (pool != NULL) {
			if (strcmp(key, "name") == 0) {
				snprintf(msg, sizeof(msg), "unknown key "
					"'name' (the section names the pool)");
				goto bad;
			}
			if (create_req_set(pool, key, value, msg,
					sizeof(msg)) < 0)
				goto bad;
		} else if (global_set(c, key, value, msg, sizeof(msg)) < 0) {
			goto bad;
		} else if (strcmp(key, "hugetlbfs") == 0) {
			c->hugetlbfs_line = lineno;
		} else if (strcmp(key, "shm-dir") == 0) {
			c->shm_dir_line = lineno;
		}
		section_key_add(&sk, key, lineno);
	}
	if (ferror(f)) {
		snprintf(err, errsz, "%s: %s", file, strerror(errno != 0 ?
			errno : EIO));
		goto fail;
	}
	if (pool_end(pool, file, err, errsz) < 0)
		goto fail;
	free(line);
	fclose(f);
	return 0;
bad:
	snprintf(err, errsz, "%s:%u: %s", file, lineno, msg);
fail:
	free(line);
	fclose(f);
	config_free(c);
	config_init(c);
	return -1;
}
