/*
 * pool.c - attach and detach, cache slots, counts and descriptions.
 */
#include "config.h"

#include <stddef.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if HAVE_DECL___RSEQ_OFFSET
#include <sys/rseq.h>
#endif

#include <linux/membarrier.h>
#include <sys/syscall.h>

#include "proto.h"
#include "segment-internal.h"

#if SHMPOOL_CPU_HERE
ptrdiff_t rseq_cpu_off;

/* Where each thread's rseq area is, set once when the library is loaded
 * (glibc sets __rseq_offset before any constructor runs). */
static void __attribute__((constructor))
rseq_cpu_off_init(void)
{
	rseq_cpu_off = __rseq_offset;
}
#endif

/* Ring ownership (ring.h): this process takes the others' fences. */
int ring_own_unfenced;

static void __attribute__((constructor))
own_fence_register(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED,
			0, 0) != 0)
		ring_own_unfenced = errno != 0 ? errno : EINVAL;
}

/* Every attachment of this process, for the calls given only a cache. */
static CDS_LIST_HEAD(handles);
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Claim a free slot for process pid (which started at start_time) with a
 * cache of size objects.  One compare-and-swap makes the slot the
 * process's; its start time follows, so shmpoold may see a claimed slot
 * whose start time is still 0 for a moment.
 */
int
slot_claim_for(struct pool_handle *h, unsigned int size, pid_t pid,
		uint64_t start_time, uint32_t *slotp)
{
	uint64_t mine = SLOT_OWNER(SEG_SLOT_CLAIMED, pid);
	uint32_t i;

	if (size > SHMPOOL_CACHE_MAX_SIZE)
		return seterr(-EINVAL, "pool '%s': cache size %u is out of "
			"range 0..%u", h->name, size, SHMPOOL_CACHE_MAX_SIZE);
	if (SHMPOOL_CACHE_FLUSHTHRESH(size) > h->obj_count)
		return seterr(-EINVAL, "pool '%s': cache size %u needs at "
			"least %u objects (1.5 times), the pool has %u",
			h->name, size, SHMPOOL_CACHE_FLUSHTHRESH(size),
			h->obj_count);

	for (i = 0; i < h->nb_slots; i++) {
		struct seg_slot *s = &h->slots[i];
		struct shmpool_cache *c = &s->cache;
		const uint64_t free_word = SLOT_OWNER(SEG_SLOT_FREE, 0);

		if (uatomic_read(&s->owner) != free_word ||
		    uatomic_cmpxchg(&s->owner, free_word, mine) != free_word)
			continue;
		memset(c, 0, offsetof(struct shmpool_cache, objs));
		c->slot = i;
		c->size = size;
		c->flushthresh = SHMPOOL_CACHE_FLUSHTHRESH(size);
		cmm_smp_wmb();
		uatomic_set(&s->start_time, start_time);
		*slotp = i;
		return 0;
	}
	return seterr(-EBUSY, "pool '%s': all %u cache slots are taken",
		h->name, h->nb_slots);
}

static int
slot_claim(struct pool_handle *h, unsigned int size,
		struct shmpool_cache **cachep)
{
	uint64_t start_time = 0;
	uint32_t i;
	int ret;

	(void)seg_proc_start_time(getpid(), &start_time);
	ret = slot_claim_for(h, size, getpid(), start_time, &i);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&h->lock);
	h->owned[i] = 1;
	pthread_mutex_unlock(&h->lock);
	*cachep = &h->slots[i].cache;
	return 0;
}

static void
stats_fold(struct shmpool_stats *dst, struct shmpool_cache *c)
{
	struct shmpool_stats st;
	uint64_t deadline = 0;

	/* The totals as readers make them of the cache's counters
	 * (stats.c), then every counter to 0. */
	memset(&st, 0, sizeof(st));
	cache_stats_add(&st, c, &deadline);
#define FOLD(f) do { uatomic_add(&dst->f, st.f); } while (0)
	FOLD(put_bulk);
	FOLD(put_objs);
	FOLD(put_common_pool_bulk);
	FOLD(put_common_pool_objs);
	FOLD(get_common_pool_bulk);
	FOLD(get_common_pool_objs);
	FOLD(get_success_bulk);
	FOLD(get_success_objs);
	FOLD(get_fail_bulk);
	FOLD(get_fail_objs);
#undef FOLD
	cache_counts_clear(c);
}

/*
 * Give back a slot that process pid owns: its objects to the ring, its
 * counters to the retired totals.  Neither move is counted, so the pool's
 * aggregate stays the same.  -ESRCH when pid does not own the slot (it was
 * given back already, perhaps claimed again by someone else); -ENOSPC when
 * the ring has no room (only a double put does that): the slot then stays
 * RELEASING with its objects; -EAGAIN, the same, when a ring was owned by
 * another cache in the middle of a claim and the caller may not wait
 * (!wait: shmpoold, which tries again at its next scan).  A slot found
 * RELEASING is finished: its owner died giving it back.
 */
int
slot_retire(struct pool_handle *h, struct seg_slot *s, pid_t pid, int wait)
{
	uint64_t claimed = SLOT_OWNER(SEG_SLOT_CLAIMED, pid);
	uint64_t releasing = SLOT_OWNER(SEG_SLOT_RELEASING, pid);
	uint64_t cur;
	uint32_t fold;
	int ret;

	cur = uatomic_cmpxchg(&s->owner, claimed, releasing);
	if (cur != claimed && cur != releasing)
		return -ESRCH;
	ret = cache_flush(h, &s->cache, wait);
	if (ret < 0)
		return ret;
	/* folds is odd while the counters move, so that a reader of the
	 * whole pool's sum sees the move as one step (stats.c).  Odd already
	 * when the owner died in the middle of it. */
	fold = uatomic_read(&s->folds) | 1;
	uatomic_set(&s->folds, fold);
	cmm_smp_wmb();
	stats_fold(&h->hdr->retired, &s->cache);
	cmm_smp_wmb();
	uatomic_set(&s->folds, fold + 1);
	s->cache.size = 0;
	s->cache.flushthresh = 0;
	s->start_time = 0;
	/* Nothing of the slot's is being put now (its owner is detaching or
	 * dead): no record may cover a position for the next owner, nor
	 * while the slot is free (shmpoold reads every slot's).  Every slot
	 * is freed here, so that a claim finds it 0. */
	uatomic_set(&s->cache.ring_op, 0);
	rings_own_drop(h, (uint32_t)(s - h->slots));
	/* Everything above is done before the slot can be claimed again. */
	cmm_smp_wmb();
	uatomic_set(&s->owner, SLOT_OWNER(SEG_SLOT_FREE, 0));
	return 0;
}

/*
 * Map the segment open on fd and check its header.  The header is copied
 * first and only the copy is checked and used: another process that can
 * write the segment must not change the geometry between check and use.
 */
static int
pool_map(int fd, const char *what, int prot, struct seg_hdr **hdrp,
		size_t *sizep, struct seg_hdr *geom)
{
	struct stat st;
	void *map;
	uint32_t i;
	int ret;

	if (fstat(fd, &st) < 0)
		return seterr(-errno, "'%s': %s", what, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return seterr(-EBADMSG, "%s: not a regular file", what);
	if (st.st_size < (off_t)sizeof(struct seg_hdr))
		return seterr(-EBADMSG, "%s: %jd bytes is too small for a "
			"shmpool segment header (%zu)", what,
			(intmax_t)st.st_size, sizeof(struct seg_hdr));
	map = mmap(NULL, (size_t)st.st_size, prot, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return seterr(-errno, "cannot map '%s': %s", what,
			strerror(errno));
	memcpy(geom, map, sizeof(*geom));
	ret = seg_check(geom, (uint64_t)st.st_size, what);
	/* Each ring made as the header says (a count of rings changed may
	 * leave the layout as it was). */
	for (i = 0; ret == 0 && i < geom->nb_rings; i++) {
		const struct ring *r = (const struct ring *)((char *)map +
			geom->ring_off + i * geom->ring_stride);

		if (r->size != geom->ring_size ||
				r->mask != geom->ring_size - 1)
			ret = seterr(-EBADMSG, "%s: ring %u of %u is not one "
				"of %u entries", what, i, geom->nb_rings,
				geom->ring_size);
	}
	if (ret < 0) {
		munmap(map, (size_t)st.st_size);
		return ret;
	}
	*hdrp = map;
	*sizep = (size_t)st.st_size;
	return 0;
}

static int
pool_open_prot(int fd, const char *what, const char *name, int prot,
		struct pool_handle **hp)
{
	struct pool_handle *h;
	void *mem;
	struct seg_hdr *hdr = NULL, geom;
	size_t size = 0;
	uint32_t i;
	int ret;

	ret = pool_map(fd, what, prot, &hdr, &size, &geom);
	if (ret < 0)
		return ret;
	if (name != NULL && strcmp(geom.name, name) != 0) {
		ret = seterr(-EINVAL, "segment '%s' holds pool '%s', not '%s'",
			what, geom.name, name);
		goto unmap;
	}
	/* On a cache line: what a get or put past the cache reads of it
	 * (pub and objbase2, the ring mask, ring_r[] and ring 0's geometry)
	 * is then its first two lines; and objbase2, which the short copies
	 * load whole, is 16-byte aligned as it asks. */
	_Static_assert(SHMPOOL_CACHE_LINE % _Alignof(struct pool_handle) == 0,
		"a cache line is aligned enough for struct pool_handle");
	_Static_assert(offsetof(struct pool_handle, rings) +
		offsetof(struct ring_view, mask) + sizeof(uint32_t) <=
		2 * SHMPOOL_CACHE_LINE, "the hot part of struct pool_handle "
		"in two cache lines");
	if (posix_memalign(&mem, SHMPOOL_CACHE_LINE, sizeof(*h)) != 0)
		mem = NULL;
	h = mem;
	if (h != NULL) {
		memset(h, 0, sizeof(*h));
		h->owned = calloc(geom.nb_slots, 1);
	}
	if (h == NULL || h->owned == NULL) {
		free(h);
		ret = seterr(-ENOMEM, "out of memory");
		goto unmap;
	}
	h->pid = getpid();
	h->hdr = hdr;
	h->map_size = size;
	h->slots = (struct seg_slot *)((char *)hdr + geom.slots_off);
	h->nb_slots = geom.nb_slots;
	h->obj_count = geom.obj_count;
	h->elt_size = geom.elt_size;
	h->cache_size = geom.cache_size;
	h->nb_rings = geom.nb_rings;
	h->ring_mask = geom.nb_rings - 1;
	for (i = 0; i < geom.nb_rings; i++) {
		struct ring_view *v = &h->rings[i];

		v->r = (struct ring *)((char *)hdr + geom.ring_off +
			i * geom.ring_stride);
		v->ents = v->r->ents;
		v->own = h;
		v->size = geom.ring_size;
		v->mask = geom.ring_size - 1;
		h->ring_r[i] = v->r;
	}
	h->pub.objbase = (char *)hdr + geom.objs_off;
	h->objbase2[0] = (uint64_t)(uintptr_t)h->pub.objbase;
	h->objbase2[1] = h->objbase2[0];
	memcpy(h->name, geom.name, sizeof(h->name));
	pthread_mutex_init(&h->lock, NULL);
	CDS_INIT_LIST_HEAD(&h->node);
	*hp = h;
	return 0;
unmap:
	munmap(hdr, size);
	return ret;
}

int
pool_open_fd(int fd, const char *what, const char *name,
		struct pool_handle **hp)
{
	return pool_open_prot(fd, what, name, PROT_READ | PROT_WRITE, hp);
}

/*
 * Map the segment at path, for reading and writing (the path hook of
 * shmpool_attach()) or for reading only (shmpoolctl dump: whatever the
 * reader does, it cannot write).  Links are not followed, and O_NONBLOCK
 * keeps a FIFO put in the segment's place from hanging us (pool_map()
 * refuses anything but a regular file).
 */
int
pool_open_file(const char *path, const char *name, int writable,
		struct pool_handle **hp)
{
	int fd, ret;

	fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW |
		O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT && name != NULL)
			return seterr(-ENOENT, "no pool '%s' (no segment "
				"'%s')", name, path);
		return seterr(-errno, "cannot open segment '%s': %s", path,
			strerror(errno));
	}
	ret = pool_open_prot(fd, path, name,
		writable ? PROT_READ | PROT_WRITE : PROT_READ, hp);
	close(fd);
	return ret;
}

void
pool_close(struct pool_handle *h)
{
	munmap(h->hdr, h->map_size);
	pthread_mutex_destroy(&h->lock);
	free(h->owned);
	free(h);
}

/* Ask shmpoold for the pool: it sends the segment and claims a slot. */
static int
attach_daemon(const char *name, const struct shmpool_attach_opts *opts,
		struct pool_handle **hp)
{
	char req[128], reply[1024];
	struct proto_msg msg;
	struct pool_handle *h;
	struct seg_slot *s;
	uint64_t slot;
	int sock, fd, ret;

	if (opts != NULL && (opts->flags & SHMPOOL_ATTACH_CACHE_SIZE))
		snprintf(req, sizeof(req), "attach name=%s cache=%u", name,
			opts->cache_size);
	else
		snprintf(req, sizeof(req), "attach name=%s", name);
	sock = proto_connect(NULL);
	if (sock < 0)
		return sock;
	ret = proto_call(sock, req, reply, sizeof(reply), &msg, &fd);
	close(sock);
	/* A daemon that does not answer is one that cannot be reached. */
	if (ret == -ETIMEDOUT)
		ret = -ECONNREFUSED;
	if (ret < 0)
		return ret;
	if (fd < 0 || proto_u64(proto_get(&msg, "slot"), 0,
			SHMPOOL_SLOTS_MAX - 1, &slot) < 0) {
		if (fd >= 0)
			close(fd);
		return seterr(-EPROTO, "shmpoold's attach reply has no "
			"segment or no slot");
	}
	ret = pool_open_fd(fd, name, name, &h);
	close(fd);
	if (ret < 0)
		return ret;
	s = slot < h->nb_slots ? &h->slots[slot] : NULL;
	if (s == NULL || uatomic_read(&s->owner) !=
			SLOT_OWNER(SEG_SLOT_CLAIMED, getpid())) {
		pool_close(h);
		return seterr(-EPROTO, "pool '%s': shmpoold answered with "
			"slot %" PRIu64 ", which this process does not own",
			name, slot);
	}
	h->owned[slot] = 1;
	h->pub.cache = &s->cache;
	*hp = h;
	return 0;
}

int
shmpool_attach(const char *name, const struct shmpool_attach_opts *opts,
		struct shmpool **poolp)
{
	struct pool_handle *h;
	unsigned int cache_size;
	int ret;

	clearerr_shmpool();
	if (poolp == NULL)
		return seterr(-EINVAL, "no place for the pool handle");
	if (!shmpool_name_valid(name))
		return seterr(-EINVAL, "pool name '%s' is not 1-%d characters "
			"of [A-Za-z0-9._-] not starting with '.'",
			name ? name : "(null)", SHMPOOL_NAME_MAX);
	if (opts != NULL && (opts->flags & ~SHMPOOL_ATTACH_CACHE_SIZE) != 0)
		return seterr(-EINVAL, "unknown attach flags 0x%x",
			opts->flags & ~SHMPOOL_ATTACH_CACHE_SIZE);
	if (ring_own_unfenced != 0)
		return seterr(-ENOSYS, "membarrier(2) registration "
			"(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) failed: "
			"%s; libshmpool needs it (Linux 4.16 or later, not "
			"denied by a seccomp filter)",
			strerror(ring_own_unfenced));
	if (opts == NULL || opts->path == NULL) {
		ret = attach_daemon(name, opts, &h);
		if (ret < 0)
			return ret;
	} else {
		ret = pool_open_file(opts->path, name, 1, &h);
		if (ret < 0)
			return ret;
		cache_size = opts->flags & SHMPOOL_ATTACH_CACHE_SIZE ?
			opts->cache_size : h->cache_size;
		ret = slot_claim(h, cache_size, &h->pub.cache);
		if (ret < 0) {
			pool_close(h);
			return ret;
		}
	}
	pool_slow_paths(h);
	pthread_mutex_lock(&handles_lock);
	cds_list_add(&h->node, &handles);
	pthread_mutex_unlock(&handles_lock);
	*poolp = &h->pub;
	return 0;
}

/* The refusal of a call through h, which the caller inherited through
 * fork(2). */
static int
inherited_err(const struct pool_handle *h)
{
	return seterr(-EINVAL, "pool '%s': an attachment of pid %ld, which "
		"this process inherited through fork(); attach again in this "
		"process", h->name, (long)h->pid);
}

int
shmpool_detach(struct shmpool *pool)
{
	struct pool_handle *h = NULL;
	struct cds_list_head *pos;
	uint32_t i, full = 0;
	int found = 0;

	clearerr_shmpool();
	if (pool == NULL)
		return seterr(-EINVAL, "NULL pool");
	/* Only an attachment of this process's list: one detached already
	 * is not there (its memory is not read).  A handle is made from a
	 * node of the list only, never from pool (which may be anything)
	 * nor from the list's head, which no handle holds. */
	pthread_mutex_lock(&handles_lock);
	cds_list_for_each(pos, &handles) {
		h = cds_list_entry(pos, struct pool_handle, node);
		if (&h->pub == pool) {
			/* One inherited through fork(2) stays the
			 * parent's: left as it is. */
			found = pool_handle_mine(h) ? 1 : -1;
			if (found > 0)
				cds_list_del(pos);
			break;
		}
	}
	pthread_mutex_unlock(&handles_lock);
	if (found < 0)
		return inherited_err(h);
	if (!found)
		return seterr(-EINVAL, "not an attachment of this process "
			"(detached already?)");
	for (i = 0; i < h->nb_slots; i++)
		if (h->owned[i] &&
		    slot_retire(h, &h->slots[i], getpid(), 1) == -ENOSPC)
			full++;
	if (full != 0)
		seterr(-ENOSPC, "pool '%s': the ring is full (an object was "
			"put twice): %u cache(s) kept their objects and slots",
			h->name, full);
	pool_close(h);
	return full != 0 ? -ENOSPC : 0;
}

/* The attachment that claimed cache, or NULL. */
struct pool_handle *
pool_find_cache(const struct shmpool_cache *cache)
{
	struct pool_handle *h, *found = NULL;
	struct cds_list_head *pos;

	if (cache == NULL)
		return NULL;
	pthread_mutex_lock(&handles_lock);
	/* A handle made from a node of the list only (see
	 * shmpool_detach()). */
	cds_list_for_each(pos, &handles) {
		const char *p = (const char *)slot_of(cache);
		const char *first;
		size_t off;

		h = cds_list_entry(pos, struct pool_handle, node);
		first = (const char *)h->slots;
		if (p < first ||
		    p >= first + (size_t)h->nb_slots * sizeof(struct seg_slot))
			continue;
		off = (size_t)(p - first);
		if (off % sizeof(struct seg_slot) == 0 &&
		    h->owned[off / sizeof(struct seg_slot)] &&
		    pool_handle_mine(h))
			found = h;
		break;
	}
	pthread_mutex_unlock(&handles_lock);
	return found;
}

struct shmpool_cache *
shmpool_default_cache(struct shmpool *pool)
{
	return shmpool_default_cache_(pool);
}

int
shmpool_cache_claim(struct shmpool *pool, unsigned int size,
		struct shmpool_cache **cachep)
{
	clearerr_shmpool();
	if (pool == NULL || cachep == NULL)
		return seterr(-EINVAL, "NULL pool or cache pointer");
	if (!pool_handle_mine(pool_handle(pool)))
		return inherited_err(pool_handle(pool));
	return slot_claim(pool_handle(pool), size, cachep);
}

int
shmpool_cache_release(struct shmpool_cache *cache)
{
	struct pool_handle *h = pool_find_cache(cache);
	uint64_t releasing = SLOT_OWNER(SEG_SLOT_RELEASING, getpid());
	struct seg_slot *s;

	clearerr_shmpool();
	if (h == NULL)
		return seterr(-EINVAL, "not a cache claimed in this process");
	if (cache == h->pub.cache)
		return seterr(-EINVAL, "the default cache is released by "
			"shmpool_detach()");
	s = slot_of(cache);
	pthread_mutex_lock(&h->lock);
	h->owned[s - h->slots] = 0;
	pthread_mutex_unlock(&h->lock);
	if (slot_retire(h, s, getpid(), 1) == -ENOSPC) {
		/* Still this process's cache, with its objects, to use or
		 * release again once the ring has room; unless shmpoold
		 * took the slot meanwhile. */
		if (uatomic_cmpxchg(&s->owner, releasing,
				SLOT_OWNER(SEG_SLOT_CLAIMED, getpid())) ==
				releasing) {
			pthread_mutex_lock(&h->lock);
			h->owned[s - h->slots] = 1;
			pthread_mutex_unlock(&h->lock);
		}
		return seterr(-ENOSPC, "pool '%s': the ring is full (an object "
			"was put twice); the cache keeps its objects and "
			"stays claimed", h->name);
	}
	return 0;
}

int
shmpool_cache_flush(struct shmpool_cache *cache)
{
	struct pool_handle *h = pool_find_cache(cache);

	clearerr_shmpool();
	if (h == NULL)
		return seterr(-EINVAL, "not a cache claimed in this process");
	if (cache_flush(h, cache, 1) < 0)
		return seterr(-ENOSPC, "pool '%s': the ring is full (an "
			"object was put twice)", h->hdr->name);
	return 0;
}

int
shmpool_cache_slot(const struct shmpool_cache *cache)
{
	return cache == NULL ? -EINVAL : (int)cache->slot;
}

unsigned int
shmpool_avail_count(const struct shmpool *pool)
{
	const struct pool_handle *h;
	uint64_t count;
	uint32_t i;

	if (pool == NULL)
		return 0;
	h = pool_handle(pool);
	count = rings_count(h);
	for (i = 0; i < h->nb_slots; i++) {
		uint32_t len = cache_len_read(&h->slots[i].cache);

		count += len > SHMPOOL_CACHE_OBJS_MAX ? 0 : len;
	}
	return count > h->obj_count ? h->obj_count : (unsigned int)count;
}

unsigned int
shmpool_in_use_count(const struct shmpool *pool)
{
	if (pool == NULL)
		return 0;
	return pool_handle(pool)->obj_count - shmpool_avail_count(pool);
}

int
shmpool_info(const struct shmpool *pool, struct shmpool_info *info)
{
	const struct pool_handle *h;
	const struct seg_hdr *hdr;
	uint32_t i;

	if (pool == NULL || info == NULL)
		return -EINVAL;
	h = pool_handle(pool);
	hdr = h->hdr;
	memset(info, 0, sizeof(*info));
	memcpy(info->name, hdr->name, sizeof(info->name));
	info->name[SHMPOOL_NAME_MAX] = '\0';
	info->obj_count = h->obj_count;
	info->obj_size = hdr->obj_size;
	info->elt_size = h->elt_size;
	info->cache_size = hdr->cache_size;
	info->nb_slots = h->nb_slots;
	for (i = 0; i < h->nb_slots; i++)
		if (SLOT_STATE(uatomic_read(&h->slots[i].owner)) !=
				SEG_SLOT_FREE)
			info->slots_in_use++;
	info->flags = hdr->flags & SEG_FLAG_HUGE ? SHMPOOL_INFO_HUGE : 0;
	info->seg_size = hdr->seg_size;
	info->page_size = hdr->page_size;
	info->abi_version = hdr->abi_version;
	return 0;
}

long
shmpool_obj_index(const struct shmpool *pool, const void *obj)
{
	const struct pool_handle *h;
	uintptr_t off;

	if (pool == NULL || obj == NULL)
		return -EINVAL;
	h = pool_handle(pool);
	off = (uintptr_t)obj - (uintptr_t)pool->objbase;
	if ((const char *)obj < pool->objbase ||
	    off >= (uint64_t)h->obj_count * h->elt_size ||
	    off % h->elt_size != 0)
		return -EINVAL;
	return (long)(off / h->elt_size);
}

void *
shmpool_obj_at(const struct shmpool *pool, unsigned int index)
{
	if (pool == NULL || index >= pool_handle(pool)->obj_count)
		return NULL;
	return pool->objbase + (uint64_t)index * pool_handle(pool)->elt_size;
}
