/*
 * segment.c - build and check a pool's segment.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#include "proto.h"
#include "segment-internal.h"


int
shmpool_name_valid(const char *name)
{
	size_t i;

	if (name == NULL || name[0] == '\0' || name[0] == '.')
		return 0;
	for (i = 0; name[i] != '\0'; i++) {
		char c = name[i];

		if (i >= SHMPOOL_NAME_MAX)
			return 0;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return 0;
	}
	return 1;
}

static uint32_t
pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/*
 * Fill hdr's geometry from the parameters (already checked) and return the
 * segment's size.  seg_check() calls it again on what a header claims, so
 * a header is valid only if its offsets are exactly the ones computed here.
 */
uint64_t
seg_layout(const struct shmpool_params *p, uint64_t page_size,
		uint32_t nb_rings, struct seg_hdr *hdr)
{
	uint64_t off;

	hdr->hdr_size = sizeof(struct seg_hdr);
	hdr->page_size = page_size;
	hdr->obj_count = p->obj_count;
	hdr->obj_size = p->obj_size;
	hdr->elt_size = ALIGN_UP(p->obj_size, SHMPOOL_CACHE_LINE);
	hdr->cache_size = p->cache_size;
	hdr->nb_slots = p->nb_slots ? p->nb_slots : SHMPOOL_SLOTS_DEFAULT;
	hdr->slot_size = sizeof(struct seg_slot);
	hdr->ring_size = pow2_at_least(p->obj_count < RING_SIZE_MIN ?
		RING_SIZE_MIN : p->obj_count);

	off = ALIGN_UP(sizeof(struct seg_hdr), SHMPOOL_CACHE_LINE);
	hdr->slots_off = off;
	off += (uint64_t)hdr->nb_slots * hdr->slot_size;
	off = ALIGN_UP(off, SHMPOOL_CACHE_LINE);
	hdr->ring_off = off;
	hdr->nb_rings = nb_rings;
	hdr->ring_stride = ALIGN_UP(ring_mem_size(hdr->ring_size),
		SHMPOOL_CACHE_LINE);
	off += (uint64_t)nb_rings * hdr->ring_stride;
	off = ALIGN_UP(off, 4096);
	hdr->objs_off = off;
	off += (uint64_t)hdr->obj_count * hdr->elt_size;
	hdr->seg_size = ALIGN_UP(off, page_size);
	return hdr->seg_size;
}

/*
 * The rings of a new pool: SHMPOOL_RINGS if set (a power of two, 1 ..
 * SEG_RINGS_MAX), else the CPUs this host can have, rounded up to a power
 * of two, at most SEG_RINGS_MAX.  A negative errno for a bad
 * SHMPOOL_RINGS.
 */
static int
seg_rings(const char *name)
{
	const char *env = getenv("SHMPOOL_RINGS");

	if (env != NULL && env[0] != '\0') {
		uint64_t v;

		/* One digit: "02" is not one of the values either. */
		if (env[1] != '\0' || proto_u64(env, 1, SEG_RINGS_MAX, &v) < 0 ||
				!seg_rings_ok((uint32_t)v))
			return seterr(-EINVAL, "pool '%s': SHMPOOL_RINGS=%s is "
				"not 1, 2, 4 or 8", name, env);
		return (int)v;
	}
#if SHMPOOL_CPU_HERE
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	if (cpus < 1)
		cpus = 1;
	if (cpus > SEG_RINGS_MAX)
		cpus = SEG_RINGS_MAX;
	return (int)pow2_at_least((uint32_t)cpus);
#else
	/* The library cannot tell the CPU (cpu_here()): one ring. */
	return 1;
#endif
}

static int
params_check(const char *name, const struct shmpool_params *p)
{
	if (!shmpool_name_valid(name))
		return seterr(-EINVAL, "pool name '%s' is not 1-%d characters "
			"of [A-Za-z0-9._-] not starting with '.'",
			name ? name : "(null)", SHMPOOL_NAME_MAX);
	if (p == NULL)
		return seterr(-EINVAL, "pool '%s': no parameters", name);
	if (p->obj_count < 1 || p->obj_count > SHMPOOL_OBJ_COUNT_MAX)
		return seterr(-EINVAL, "pool '%s': object count %u is out of "
			"range 1..%u", name, p->obj_count,
			SHMPOOL_OBJ_COUNT_MAX);
	if (p->obj_size < 1 || p->obj_size > SHMPOOL_OBJ_SIZE_MAX)
		return seterr(-EINVAL, "pool '%s': object size %u is out of "
			"range 1..%u", name, p->obj_size, SHMPOOL_OBJ_SIZE_MAX);
	if (p->cache_size > SHMPOOL_CACHE_MAX_SIZE)
		return seterr(-EINVAL, "pool '%s': cache size %u is out of "
			"range 0..%u", name, p->cache_size,
			SHMPOOL_CACHE_MAX_SIZE);
	if (SHMPOOL_CACHE_FLUSHTHRESH(p->cache_size) > p->obj_count)
		return seterr(-EINVAL, "pool '%s': cache size %u needs at "
			"least %u objects (1.5 times), the pool has %u", name,
			p->cache_size, SHMPOOL_CACHE_FLUSHTHRESH(p->cache_size),
			p->obj_count);
	if (p->nb_slots > SHMPOOL_SLOTS_MAX)
		return seterr(-EINVAL, "pool '%s': slot count %u is out of "
			"range 0..%u (0: the default, %u)", name, p->nb_slots,
			SHMPOOL_SLOTS_MAX, SHMPOOL_SLOTS_DEFAULT);
	if (!seg_objs_fit(p->obj_count, p->obj_size))
		return seterr(-EINVAL, "pool '%s': %u objects of %u bytes "
			"exceed the 256 GiB a pool can address", name,
			p->obj_count, p->obj_size);
	return 0;
}

static void
seg_init(struct seg_hdr *hdr, const char *name)
{
	uint32_t i, k, unit = hdr->elt_size >> SHMPOOL_REF_SHIFT;
	struct timespec now;

	snprintf(hdr->name, sizeof(hdr->name), "%s", name);
	clock_gettime(CLOCK_REALTIME, &now);
	hdr->create_time = (uint64_t)now.tv_sec;
	hdr->create_nsec = (uint32_t)now.tv_nsec;
	hdr->abi_version = SEG_ABI_VERSION;
	for (i = 0; i < hdr->nb_slots; i++) {
		struct seg_slot *s = (struct seg_slot *)((char *)hdr +
			hdr->slots_off + (uint64_t)i * hdr->slot_size);

		s->cache.slot = i;
	}
	/* Every object put, shared out among the rings in turn: ring k
	 * holds objects k, k + nb_rings, ... at positions 0, 1, ... */
	for (k = 0; k < hdr->nb_rings; k++) {
		struct ring *r = (struct ring *)((char *)hdr + hdr->ring_off +
			k * hdr->ring_stride);
		uint32_t q = 0;

		ring_init(r, hdr->ring_size);
		for (i = k; i < hdr->obj_count; i += hdr->nb_rings, q++)
			r->ents[q] = ring_ent(ring_pos_seq(r->mask, q),
				i * unit);
		r->prod_head = q;
	}
	/* The magic goes in last: a segment is a shmpool once complete. */
	cmm_smp_wmb();
	hdr->magic = SEG_MAGIC;
}

int
shmpool_segment_create(const char *path, const char *name,
		const struct shmpool_params *params, mode_t mode)
{
	return seg_create(path, name, params, mode, (uid_t)-1, (gid_t)-1, 0);
}

/*
 * The segment is built in a hidden file of the same folder
 * (".shmpool-new.<name>.<pid>.<n>") and linked into place complete, with
 * its owner, group and mode already set.
 */
int
seg_create(const char *path, const char *name,
		const struct shmpool_params *params, mode_t mode, uid_t uid,
		gid_t gid, uint32_t flags)
{
	static unsigned int serial;
	const char *base;
	int dirlen;
	struct shmpool_params p;
	struct seg_hdr geom, *hdr;
	struct statfs sfs;
	struct stat st;
	uint64_t page_size, size;
	char tmp[4096];
	int fd, ret, rings;

	clearerr_shmpool();
	if (path == NULL)
		return seterr(-EINVAL, "no segment path");
	ret = params_check(name, params);
	if (ret < 0)
		return ret;
	rings = seg_rings(name);
	if (rings < 0)
		return rings;
	p = *params;
	if (p.nb_slots == 0)
		p.nb_slots = SHMPOOL_SLOTS_DEFAULT;

	/* A file there already: said before the segment is made, which
	 * could otherwise fail first for want of room for a second copy.
	 * The link below still refuses one that appears meanwhile. */
	if (lstat(path, &st) == 0)
		return seterr(-EEXIST, "pool '%s': '%s' already exists", name,
			path);

	base = strrchr(path, '/');
	base = base != NULL ? base + 1 : path;
	dirlen = (int)(base - path);
	if (snprintf(tmp, sizeof(tmp), "%.*s" SEG_TMP_PREFIX "%s.%ld.%u",
			dirlen, path, name, (long)getpid(),
			uatomic_add_return(&serial, 1)) >= (int)sizeof(tmp))
		return seterr(-ENAMETOOLONG, "segment path '%s' is too long",
			path);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return seterr(-errno, "cannot create '%s': %s", tmp,
			strerror(errno));
	if ((uid != (uid_t)-1 || gid != (gid_t)-1) && fchown(fd, uid, gid) < 0) {
		ret = seterr(-errno, "'%s': cannot give it to %ld:%ld: %s",
			tmp, (long)uid, (long)gid, strerror(errno));
		goto fail;
	}
	if (fchmod(fd, mode) < 0 || fstatfs(fd, &sfs) < 0) {
		ret = seterr(-errno, "'%s': %s", tmp, strerror(errno));
		goto fail;
	}
	if (sfs.f_type == HUGETLBFS_MAGIC)
		page_size = (uint64_t)sfs.f_bsize;
	else
		page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	memset(&geom, 0, sizeof(geom));
	size = seg_layout(&p, page_size, (uint32_t)rings, &geom);

	/* Allocate every page now, so that ENOSPC is an error here rather
	 * than a SIGBUS in some process later. */
	ret = posix_fallocate(fd, 0, (off_t)size);
	if (ret != 0) {
		ret = seterr(-ret, "pool '%s': cannot allocate %" PRIu64
			" bytes in '%s': %s", name, size, tmp, strerror(ret));
		goto fail;
	}
	hdr = mmap(NULL, size, PROT_READ | PROT_WRITE,
		MAP_SHARED | MAP_POPULATE, fd, 0);
	if (hdr == MAP_FAILED) {
		ret = seterr(-errno, "pool '%s': cannot map %" PRIu64
			" bytes: %s", name, size, strerror(errno));
		goto fail;
	}
	memcpy(hdr, &geom, sizeof(geom));
	hdr->flags = flags;
	if (sfs.f_type == HUGETLBFS_MAGIC)
		hdr->flags |= SEG_FLAG_HUGE;
	seg_init(hdr, name);
	munmap(hdr, size);

	if (link(tmp, path) < 0) {
		ret = errno == EEXIST ?
			seterr(-EEXIST, "pool '%s': '%s' already exists", name,
				path) :
			seterr(-errno, "pool '%s': cannot link '%s': %s", name,
				path, strerror(errno));
		goto fail;
	}
	unlink(tmp);
	close(fd);
	return 0;
fail:
	unlink(tmp);
	close(fd);
	return ret;
}

int
seg_check(const struct seg_hdr *hdr, uint64_t file_size, const char *what)
{
	struct shmpool_params p;
	struct seg_hdr geom;

	if (file_size < sizeof(*hdr))
		return seterr(-EBADMSG, "%s: %" PRIu64 " bytes is too small "
			"for a shmpool segment header (%zu)", what, file_size,
			sizeof(*hdr));
	if (hdr->magic != SEG_MAGIC)
		return seterr(-EBADMSG, "%s: not a shmpool segment (magic "
			"0x%016" PRIx64 ")", what, hdr->magic);
	if (hdr->abi_version != SEG_ABI_VERSION)
		return seterr(-EPROTO, "%s: segment ABI version %u, this "
			"library understands %u", what, hdr->abi_version,
			SEG_ABI_VERSION);
	if (hdr->hdr_size != sizeof(*hdr))
		return seterr(-EBADMSG, "%s: header size %u, expected %zu",
			what, hdr->hdr_size, sizeof(*hdr));
	if (hdr->seg_size > file_size)
		return seterr(-EBADMSG, "%s: truncated: the header says %"
			PRIu64 " bytes, the file has %" PRIu64, what,
			hdr->seg_size, file_size);
	/* A segment's file is as long as it was made (seg_create()). */
	if (hdr->seg_size < file_size)
		return seterr(-EBADMSG, "%s: the header says %" PRIu64
			" bytes, the file has %" PRIu64, what, hdr->seg_size,
			file_size);
	if (memchr(hdr->name, '\0', sizeof(hdr->name)) == NULL ||
			!shmpool_name_valid(hdr->name))
		return seterr(-EBADMSG, "%s: bad pool name in header", what);
	if (hdr->page_size < 4096 || hdr->page_size > (UINT64_C(1) << 30) ||
			(hdr->page_size & (hdr->page_size - 1)) != 0)
		return seterr(-EBADMSG, "%s: page size %" PRIu64 " is not a "
			"power of two in 4096..1G", what, hdr->page_size);
	p.obj_count = hdr->obj_count;
	p.obj_size = hdr->obj_size;
	p.cache_size = hdr->cache_size;
	p.nb_slots = hdr->nb_slots;
	if (p.nb_slots == 0 || params_check(hdr->name, &p) < 0)
		return seterr(-EBADMSG, "%s: header parameters out of range "
			"(%u objects of %u bytes, cache %u, %u slots)", what,
			p.obj_count, p.obj_size, p.cache_size, p.nb_slots);
	if (!seg_rings_ok(hdr->nb_rings))
		return seterr(-EBADMSG, "%s: %u rings is not a power of two "
			"in 1..%d", what, hdr->nb_rings, SEG_RINGS_MAX);
	memset(&geom, 0, sizeof(geom));
	seg_layout(&p, hdr->page_size, hdr->nb_rings, &geom);
	if (geom.elt_size != hdr->elt_size ||
			geom.slot_size != hdr->slot_size ||
			geom.ring_size != hdr->ring_size ||
			geom.slots_off != hdr->slots_off ||
			geom.ring_off != hdr->ring_off ||
			geom.ring_stride != hdr->ring_stride ||
			geom.objs_off != hdr->objs_off ||
			geom.seg_size != hdr->seg_size)
		return seterr(-EBADMSG, "%s: header layout does not match its "
			"parameters", what);
	return 0;
}

int
seg_proc_start_time(pid_t pid, uint64_t *start_time)
{
	char path[64], buf[1024], *p;
	unsigned long long t;
	ssize_t len;
	int fd, field, err;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	err = errno;
	close(fd);
	/* Gone between the open and the read: nothing, or ESRCH. */
	if (len == 0 || (len < 0 && err == ESRCH))
		return -ESRCH;
	if (len < 0)
		return -err;
	buf[len] = '\0';
	/* The command name may hold spaces and parentheses: skip to the
	 * last ')', after which field 3 (state) starts. */
	p = strrchr(buf, ')');
	if (p == NULL)
		return -EIO;
	for (field = 2; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p + 1, "%llu", &t) != 1)
		return -EIO;
	*start_time = t;
	return 0;
}
