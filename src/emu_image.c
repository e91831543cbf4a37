// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Images of the emulated zoned device (see dev_emu.c for the device):
 * creation, validation, and recording the faults a process that does not
 * use the image injects. The format never calls the device: dev_emu.c
 * builds on this file, not the other way round.
 *
 * Image layout (all integers little-endian):
 *   [0, 4096)             header (struct p2z_emu_hdr, CRC32C protected)
 *   [4096, ...)           zone table: one struct p2z_emu_zent per zone,
 *                         16 bytes (write pointer and condition in one
 *                         8-byte word, see emu_priv.h)
 *   [data_ofs, end)       zone data, zone i at data_ofs + i * zone size;
 *                         data_ofs is the table's end rounded up to 1 MiB
 * The file is sparse: unwritten zones take no space, resets punch holes.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "po2zfs/emu.h"
#include "po2zfs/log.h"
#include "emu_priv.h"

#define EMU_VERSION 1
#define EMU_DATA_ALIGN (1ULL << 20)

/* On-disk header, little-endian, 88 bytes at offset 0. */
struct p2z_emu_hdr {
	uint8_t magic[P2Z_EMU_MAGIC_LEN];
	uint32_t version;
	uint32_t lba_bytes;
	uint64_t zone_lba;
	uint64_t cap_lba;
	uint64_t nr_zones;
	uint64_t nr_cnv_zones;
	uint32_t max_open;
	uint32_t max_active;
	uint32_t max_append_bytes;
	uint32_t zent_bytes;
	uint64_t table_ofs;
	uint64_t data_ofs;
	uint32_t flags; /* EMU_HDR_* (0 in images of older versions) */
	uint32_t crc; /* CRC32C of all the bytes before it */
};

/* Header flags. */
#define EMU_HDR_VOLATILE_CACHE (1U << 0) /* create --volatile-cache */
#define EMU_HDR_FLAGS EMU_HDR_VOLATILE_CACHE
_Static_assert(sizeof(struct p2z_emu_hdr) == 88, "emu header layout");

int p2z_emu_why(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return err;
}

int p2z_emu_pwrite_full(int fd, const void *buf, size_t len, uint64_t ofs,
			int rwf)
{
	struct iovec iov;
	ssize_t ret;

	while (len) {
		iov.iov_base = (void *)buf;
		iov.iov_len = len;
		ret = pwritev2(fd, &iov, 1, (off_t)ofs, rwf);

		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -errno;
		buf = (const char *)buf + ret;
		len -= (size_t)ret;
		ofs += (uint64_t)ret;
	}
	return 0;
}

uint32_t p2z_emu_crc32c(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = ~0U;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78U & -(crc & 1));
	}
	return ~crc;
}

/* ---- geometry and validation */

static int p2z_emu_check_values(const struct p2z_emu_params *p, char *why,
				size_t why_len)
{
	uint64_t lba = p->lba_bytes;

	if (lba != 512 && lba != 4096)
		return p2z_emu_why(why, why_len, -EINVAL,
				   "LBA size %llu is not 512 or 4096",
				   (unsigned long long)lba);
	if (!p->zone_bytes || p->zone_bytes % lba)
		return p2z_emu_why(
			why, why_len, -EINVAL,
			"zone size %llu is not a non-zero multiple of the LBA size %llu",
			(unsigned long long)p->zone_bytes,
			(unsigned long long)lba);
	if (!p->cap_bytes || p->cap_bytes % lba)
		return p2z_emu_why(
			why, why_len, -EINVAL,
			"zone capacity %llu is not a non-zero multiple of the LBA size %llu",
			(unsigned long long)p->cap_bytes,
			(unsigned long long)lba);
	if (p->cap_bytes > p->zone_bytes)
		return p2z_emu_why(
			why, why_len, -EINVAL,
			"zone capacity %llu exceeds the zone size %llu",
			(unsigned long long)p->cap_bytes,
			(unsigned long long)p->zone_bytes);
	if (!p->nr_zones || p->nr_zones > P2Z_EMU_MAX_ZONES)
		return p2z_emu_why(why, why_len, -EINVAL,
				   "number of zones %llu is not within 1..%llu",
				   (unsigned long long)p->nr_zones,
				   (unsigned long long)P2Z_EMU_MAX_ZONES);
	if (p->nr_cnv_zones > p->nr_zones)
		return p2z_emu_why(
			why, why_len, -EINVAL,
			"%llu conventional zones exceed the %llu zones",
			(unsigned long long)p->nr_cnv_zones,
			(unsigned long long)p->nr_zones);
	if (p->max_open && p->max_active && p->max_open > p->max_active)
		return p2z_emu_why(
			why, why_len, -EINVAL,
			"max open zones %u exceeds max active zones %u",
			p->max_open, p->max_active);
	if (p->max_append_bytes < lba || p->max_append_bytes % lba ||
	    p->max_append_bytes > P2Z_EMU_MAX_XFER_BYTES)
		return p2z_emu_why(
			why, why_len, -EINVAL,
			"max append %u is not a multiple of the LBA size %llu from %llu to %u",
			p->max_append_bytes, (unsigned long long)lba,
			(unsigned long long)lba, P2Z_EMU_MAX_XFER_BYTES);
	return 0;
}

/* Validate @p and compute the layout of its image. */
static int p2z_emu_geom_from_params(struct p2z_emu_geom *g,
				    const struct p2z_emu_params *p, char *why,
				    size_t why_len)
{
	uint64_t table_end, data_bytes;
	int ret;

	ret = p2z_emu_check_values(p, why, why_len);
	if (ret)
		return ret;
	memset(g, 0, sizeof(*g));
	g->lba_bytes = p->lba_bytes;
	g->zone_lba = p->zone_bytes / p->lba_bytes;
	g->cap_lba = p->cap_bytes / p->lba_bytes;
	g->nr_zones = p->nr_zones;
	g->nr_cnv = p->nr_cnv_zones;
	g->max_open = p->max_open;
	g->max_active = p->max_active;
	g->max_append_bytes = p->max_append_bytes;
	g->zone_bytes = p->zone_bytes;
	/* nr_zones <= 2^20: the table cannot overflow. */
	table_end =
		P2Z_EMU_HDR_BYTES + p->nr_zones * sizeof(struct p2z_emu_zent);
	g->map_bytes = table_end;
	g->data_ofs = (table_end + EMU_DATA_ALIGN - 1) / EMU_DATA_ALIGN *
		      EMU_DATA_ALIGN;
	if (__builtin_mul_overflow(p->zone_bytes, p->nr_zones, &data_bytes) ||
	    __builtin_add_overflow(data_bytes, g->data_ofs, &g->file_bytes) ||
	    g->file_bytes > (uint64_t)INT64_MAX)
		return p2z_emu_why(
			why, why_len, -EOVERFLOW,
			"%llu zones of %llu bytes do not fit in a file",
			(unsigned long long)p->nr_zones,
			(unsigned long long)p->zone_bytes);
	return 0;
}

int p2z_emu_check_params(const struct p2z_emu_params *p, char *why,
			 size_t why_len)
{
	struct p2z_emu_geom g;

	return p2z_emu_geom_from_params(&g, p, why, why_len);
}

static void p2z_emu_hdr_encode(struct p2z_emu_hdr *h,
			       const struct p2z_emu_geom *g)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, P2Z_EMU_MAGIC, P2Z_EMU_MAGIC_LEN);
	h->version = htole32(EMU_VERSION);
	h->lba_bytes = htole32(g->lba_bytes);
	h->zone_lba = htole64(g->zone_lba);
	h->cap_lba = htole64(g->cap_lba);
	h->nr_zones = htole64(g->nr_zones);
	h->nr_cnv_zones = htole64(g->nr_cnv);
	h->max_open = htole32(g->max_open);
	h->max_active = htole32(g->max_active);
	h->max_append_bytes = htole32(g->max_append_bytes);
	h->zent_bytes = htole32(sizeof(struct p2z_emu_zent));
	h->table_ofs = htole64(P2Z_EMU_HDR_BYTES);
	h->data_ofs = htole64(g->data_ofs);
	h->flags = htole32(g->volatile_cache ? EMU_HDR_VOLATILE_CACHE : 0);
	h->crc = htole32(p2z_emu_crc32c(h, offsetof(struct p2z_emu_hdr, crc)));
}

/* Header fields to params; -EUCLEAN if they overflow a byte count. */
static int p2z_emu_hdr_params(const struct p2z_emu_hdr *h,
			      struct p2z_emu_params *p, char *why,
			      size_t why_len)
{
	uint64_t lba = le32toh(h->lba_bytes);

	memset(p, 0, sizeof(*p));
	p->lba_bytes = le32toh(h->lba_bytes);
	p->nr_zones = le64toh(h->nr_zones);
	p->nr_cnv_zones = le64toh(h->nr_cnv_zones);
	p->max_open = le32toh(h->max_open);
	p->max_active = le32toh(h->max_active);
	p->max_append_bytes = le32toh(h->max_append_bytes);
	if (le32toh(h->flags) & ~EMU_HDR_FLAGS)
		return p2z_emu_why(why, why_len, -EUCLEAN,
				   "unknown header flags 0x%x",
				   le32toh(h->flags) & ~EMU_HDR_FLAGS);
	if (__builtin_mul_overflow(le64toh(h->zone_lba), lba, &p->zone_bytes) ||
	    __builtin_mul_overflow(le64toh(h->cap_lba), lba, &p->cap_bytes))
		return p2z_emu_why(why, why_len, -EUCLEAN,
				   "zone size or capacity overflows");
	return 0;
}

/* fstat() @fd into @st and refuse anything but a regular file. */
static int p2z_emu_check_regular(int fd, struct stat *st, char *why, size_t len)
{
	if (fstat(fd, st) < 0)
		return p2z_emu_why(why, len, -errno, "%s", strerror(errno));
	if (!S_ISREG(st->st_mode))
		return p2z_emu_why(why, len, -EINVAL, "not a regular file");
	return 0;
}

/* Read and check the header of the image open on @fd; fill @g. */
static int p2z_emu_load_hdr(int fd, struct p2z_emu_geom *g, char *why,
			    size_t len)
{
	char sub[P2Z_EMU_WHY_LEN] = "";
	struct p2z_emu_params p;
	struct p2z_emu_hdr h;
	struct stat st;
	ssize_t n;
	int ret;

	ret = p2z_emu_check_regular(fd, &st, why, len);
	if (ret)
		return ret;
	n = pread(fd, &h, sizeof(h), 0);
	if (n < 0)
		return p2z_emu_why(why, len, -errno, "%s", strerror(errno));
	if ((size_t)n < P2Z_EMU_MAGIC_LEN ||
	    memcmp(h.magic, P2Z_EMU_MAGIC, P2Z_EMU_MAGIC_LEN))
		return p2z_emu_why(
			why, len, -EINVAL,
			"not an emulated zoned device image (no magic)");
	if ((size_t)n < sizeof(h) || st.st_size < (off_t)P2Z_EMU_HDR_BYTES)
		return p2z_emu_why(why, len, -EUCLEAN,
				   "image truncated inside its header");
	if (le32toh(h.version) != EMU_VERSION)
		return p2z_emu_why(why, len, -EUCLEAN,
				   "unsupported image version %u (expected %u)",
				   le32toh(h.version), EMU_VERSION);
	if (le32toh(h.crc) !=
	    p2z_emu_crc32c(&h, offsetof(struct p2z_emu_hdr, crc)))
		return p2z_emu_why(why, len, -EUCLEAN,
				   "header checksum mismatch");
	ret = p2z_emu_hdr_params(&h, &p, sub, sizeof(sub));
	if (!ret)
		ret = p2z_emu_geom_from_params(g, &p, sub, sizeof(sub));
	if (ret)
		return p2z_emu_why(why, len, -EUCLEAN,
				   "inconsistent geometry: %s", sub);
	g->volatile_cache = le32toh(h.flags) & EMU_HDR_VOLATILE_CACHE;
	if (le32toh(h.zent_bytes) != sizeof(struct p2z_emu_zent) ||
	    le64toh(h.table_ofs) != P2Z_EMU_HDR_BYTES ||
	    le64toh(h.data_ofs) != g->data_ofs)
		return p2z_emu_why(why, len, -EUCLEAN, "inconsistent layout");
	if ((uint64_t)st.st_size < g->file_bytes)
		return p2z_emu_why(why, len, -EUCLEAN,
				   "image truncated: %lld bytes, expected %llu",
				   (long long)st.st_size,
				   (unsigned long long)g->file_bytes);
	return 0;
}

static bool p2z_emu_cond_is_valid(uint8_t cond, bool cnv)
{
	switch (cond) {
	case P2Z_ZONE_COND_READONLY:
	case P2Z_ZONE_COND_OFFLINE:
		return true;
	case P2Z_ZONE_COND_NOT_WP:
		return cnv;
	case P2Z_ZONE_COND_EMPTY:
	case P2Z_ZONE_COND_IMP_OPEN:
	case P2Z_ZONE_COND_EXP_OPEN:
	case P2Z_ZONE_COND_CLOSED:
	case P2Z_ZONE_COND_FULL:
		return !cnv;
	}
	return false;
}

static int p2z_emu_check_table(const struct p2z_emu_zent *zt,
			       const struct p2z_emu_geom *g, char *why,
			       size_t len)
{
	uint64_t zidx;

	for (zidx = 0; zidx < g->nr_zones; zidx++) {
		bool cnv = zidx < g->nr_cnv;
		uint64_t wp;
		uint8_t cond;
		uint8_t fault =
			__atomic_load_n(&zt[zidx].fault, __ATOMIC_RELAXED);

		p2z_emu_zent_load(&zt[zidx], &wp, &cond);
		if (!p2z_emu_cond_is_valid(cond, cnv))
			return p2z_emu_why(why, len, -EUCLEAN,
					   "zone %llu: invalid condition 0x%x",
					   (unsigned long long)zidx, cond);
		if (wp > (cnv ? 0 : g->cap_lba) ||
		    (cond == P2Z_ZONE_COND_EMPTY && wp))
			return p2z_emu_why(
				why, len, -EUCLEAN,
				"zone %llu: write pointer %llu outside the zone",
				(unsigned long long)zidx,
				(unsigned long long)wp);
		if (fault & ~P2Z_EMU_PENDING_ALL)
			return p2z_emu_why(why, len, -EUCLEAN,
					   "zone %llu: invalid fault bits 0x%x",
					   (unsigned long long)zidx, fault);
	}
	return 0;
}

/* Map header and table; @fd is open read-write unless @rdonly. */
static int p2z_emu_map(int fd, const struct p2z_emu_geom *g, bool rdonly,
		       void **mapp, char *why, size_t len)
{
	int prot = PROT_READ | (rdonly ? 0 : PROT_WRITE);
	void *map;

	map = mmap(NULL, g->map_bytes, prot, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return p2z_emu_why(why, len, -errno, "mmap: %s",
				   strerror(errno));
	*mapp = map;
	return 0;
}

/* open(2) an existing image; a directory is "not a regular file". */
static int p2z_emu_open_file(const char *path, int flags, char *why, size_t len)
{
	int fd = open(path, flags | O_CLOEXEC | O_NONBLOCK);

	if (fd >= 0)
		return fd;
	if (errno == EISDIR)
		return p2z_emu_why(why, len, -EINVAL, "not a regular file");
	return p2z_emu_why(why, len, -errno, "%s", strerror(errno));
}

/*
 * Take the image's lock without waiting: one writer, or any number of
 * read-only users, never both (see enum p2z_emu_lock).
 */
static int p2z_emu_take_lock(int fd, enum p2z_emu_lock lock, char *why,
			     size_t len)
{
	int op = lock == P2Z_EMU_LOCK_EXCL ? LOCK_EX : LOCK_SH;

	if (lock == P2Z_EMU_LOCK_NONE)
		return 0;
	if (!flock(fd, op | LOCK_NB))
		return 0;
	return errno == EWOULDBLOCK ?
		       p2z_emu_why(
			       why, len, -EBUSY,
			       "Device or resource busy (mounted by po2zfs, or in use by another program)") :
		       p2z_emu_why(why, len, -errno, "flock: %s",
				   strerror(errno));
}

int p2z_emu_image_load(const char *path, bool rdonly, enum p2z_emu_lock lock,
		       int *fdp, struct p2z_emu_geom *g, void **mapp, char *why,
		       size_t why_len)
{
	void *map = NULL;
	int fd, ret;

	fd = p2z_emu_open_file(path, rdonly ? O_RDONLY : O_RDWR, why, why_len);
	if (fd < 0)
		return fd;
	ret = p2z_emu_take_lock(fd, rdonly ? lock : P2Z_EMU_LOCK_EXCL, why,
				why_len);
	if (!ret)
		ret = p2z_emu_load_hdr(fd, g, why, why_len);
	if (!ret)
		ret = p2z_emu_map(fd, g, rdonly, &map, why, why_len);
	if (ret)
		goto out_close;
	ret = p2z_emu_check_table(p2z_emu_table(map), g, why, why_len);
	if (ret)
		goto out_unmap;
	*fdp = fd;
	*mapp = map;
	return 0;

out_unmap:
	munmap(map, g->map_bytes);
out_close:
	close(fd);
	return ret;
}

/* ---- images */

/*
 * Whether the file open on @fd starts with an image's magic: --force
 * replaces an image, never another file (a VM disk mistyped for one).
 */
static int p2z_emu_check_replaceable(int fd, char *why, size_t len)
{
	char magic[P2Z_EMU_MAGIC_LEN];
	struct stat st;
	ssize_t n;
	int ret;

	ret = p2z_emu_check_regular(fd, &st, why, len);
	if (ret)
		return ret;
	n = pread(fd, magic, sizeof(magic), 0);
	if (n < 0)
		return p2z_emu_why(why, len, -errno, "%s", strerror(errno));
	if (n != (ssize_t)sizeof(magic) ||
	    memcmp(magic, P2Z_EMU_MAGIC, P2Z_EMU_MAGIC_LEN))
		return p2z_emu_why(
			why, len, -EINVAL,
			"exists and is not an emulated zoned device image: refusing to overwrite it");
	return 0;
}

/*
 * A new image is created 0600 (less with the umask): it holds whatever
 * the device's user writes. --force replaces an existing image only, and
 * never through a symbolic link.
 */
static int p2z_emu_open_for_create(const char *path, bool force, bool *created,
				   char *why, size_t len)
{
	int fd, ret;

	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0) {
		*created = true;
		return fd;
	}
	if (errno != EEXIST)
		return p2z_emu_why(why, len, -errno, "%s", strerror(errno));
	if (!force)
		return p2z_emu_why(why, len, -EEXIST,
				   "already exists (force to overwrite)");
	*created = false;
	/* O_NONBLOCK: do not hang on a FIFO before refusing it. */
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ELOOP)
		return p2z_emu_why(
			why, len, -ELOOP,
			"is a symbolic link: refusing to overwrite through it");
	if (fd < 0 && errno == EISDIR)
		return p2z_emu_why(why, len, -EINVAL, "not a regular file");
	if (fd < 0)
		return p2z_emu_why(why, len, -errno, "%s", strerror(errno));
	ret = p2z_emu_check_replaceable(fd, why, len);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

static int p2z_emu_write_table(int fd, const struct p2z_emu_geom *g, char *why,
			       size_t len)
{
	struct p2z_emu_zent buf[256];
	uint64_t zidx = 0, i, n;
	int ret;

	while (zidx < g->nr_zones) {
		n = g->nr_zones - zidx < 256 ? g->nr_zones - zidx : 256;
		memset(buf, 0, sizeof(buf));
		for (i = 0; i < n; i++)
			buf[i].cond = zidx + i < g->nr_cnv ?
					      P2Z_ZONE_COND_NOT_WP :
					      P2Z_ZONE_COND_EMPTY;
		ret = p2z_emu_pwrite_full(
			fd, buf, n * sizeof(buf[0]),
			P2Z_EMU_HDR_BYTES + zidx * sizeof(buf[0]), 0);
		if (ret)
			return p2z_emu_why(why, len, ret,
					   "writing the zone table: %s",
					   strerror(-ret));
		zidx += n;
	}
	return 0;
}

/* Fill the file open on @fd with an empty device; the header goes last. */
static int p2z_emu_format(int fd, const struct p2z_emu_geom *g, char *why,
			  size_t len)
{
	struct p2z_emu_hdr h;
	struct stat st;
	int ret;

	ret = p2z_emu_check_regular(fd, &st, why, len);
	if (!ret)
		ret = p2z_emu_take_lock(fd, P2Z_EMU_LOCK_EXCL, why, len);
	if (ret)
		return ret;
	if (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)g->file_bytes) < 0)
		return p2z_emu_why(why, len, -errno,
				   "sizing the image to %llu bytes: %s",
				   (unsigned long long)g->file_bytes,
				   strerror(errno));
	ret = p2z_emu_write_table(fd, g, why, len);
	if (ret)
		return ret;
	p2z_emu_hdr_encode(&h, g);
	ret = p2z_emu_pwrite_full(fd, &h, sizeof(h), 0, 0);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (ret)
		return p2z_emu_why(why, len, ret, "writing the header: %s",
				   strerror(-ret));
	return 0;
}

int p2z_emu_create(const char *path, const struct p2z_emu_params *p,
		   unsigned int flags)
{
	bool force = flags & P2Z_EMU_CREATE_FORCE;
	char why[P2Z_EMU_WHY_LEN];
	bool created = false;
	struct p2z_emu_geom g;
	int fd, ret;

	ret = p2z_emu_geom_from_params(&g, p, why, sizeof(why));
	if (ret)
		goto out_log;
	g.volatile_cache = flags & P2Z_EMU_CREATE_VOLATILE_CACHE;
	fd = p2z_emu_open_for_create(path, force, &created, why, sizeof(why));
	if (fd < 0) {
		ret = fd;
		goto out_log;
	}
	ret = p2z_emu_format(fd, &g, why, sizeof(why));
	close(fd);
	if (ret && created)
		unlink(path);
	if (!ret)
		return 0;
out_log:
	p2z_log(LOG_ERR, "%s: %s", path, why);
	return ret;
}

static void p2z_emu_geom_params(const struct p2z_emu_geom *g,
				struct p2z_emu_params *p)
{
	p->lba_bytes = g->lba_bytes;
	p->zone_bytes = g->zone_bytes;
	p->cap_bytes = g->cap_lba * g->lba_bytes;
	p->nr_zones = g->nr_zones;
	p->nr_cnv_zones = g->nr_cnv;
	p->max_open = g->max_open;
	p->max_active = g->max_active;
	p->max_append_bytes = g->max_append_bytes;
}

int p2z_emu_check_image(const char *path, struct p2z_emu_params *p, char *why,
			size_t why_len)
{
	struct p2z_emu_geom g;
	void *map;
	int fd, ret;

	ret = p2z_emu_image_load(path, true, P2Z_EMU_LOCK_NONE, &fd, &g, &map,
				 why, why_len);
	if (ret)
		return ret;
	if (p)
		p2z_emu_geom_params(&g, p);
	munmap(map, g.map_bytes);
	close(fd);
	return 0;
}

/* Record a fault in a shared fault byte; the last condition fault wins. */
static void p2z_emu_record_fault(uint8_t *f, enum p2z_emu_fault fault)
{
	uint8_t old = __atomic_load_n(f, __ATOMIC_RELAXED), new;

	do {
		switch (fault) {
		case P2Z_EMU_FAULT_CLEAR:
			new = 0;
			break;
		case P2Z_EMU_FAULT_FAIL_NEXT_IO:
			new = old | P2Z_EMU_PENDING_FAIL_IO;
			break;
		case P2Z_EMU_FAULT_READONLY:
			new = (old & ~P2Z_EMU_PENDING_COND) |
			      P2Z_EMU_PENDING_READONLY;
			break;
		case P2Z_EMU_FAULT_OFFLINE:
			new = (old & ~P2Z_EMU_PENDING_COND) |
			      P2Z_EMU_PENDING_OFFLINE;
			break;
		default:
			new = (old & ~P2Z_EMU_PENDING_COND) |
			      P2Z_EMU_PENDING_ONLINE;
			break;
		}
	} while (!__atomic_compare_exchange_n(
		f, &old, new, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
}

int p2z_emu_image_record_fault(const char *path, uint64_t zidx,
			       enum p2z_emu_fault fault, char *why, size_t len)
{
	struct p2z_emu_zent *zt;
	struct p2z_emu_geom g;
	void *map = NULL;
	int fd, ret;

	if ((unsigned int)fault > P2Z_EMU_FAULT_FAIL_NEXT_IO)
		return p2z_emu_why(why, len, -EINVAL, "unknown fault %d",
				   fault);
	fd = p2z_emu_open_file(path, O_RDWR, why, len);
	if (fd < 0)
		return fd;
	ret = p2z_emu_load_hdr(fd, &g, why, len);
	if (!ret && zidx >= g.nr_zones)
		ret = p2z_emu_why(why, len, -EINVAL,
				  "zone %llu out of range (%llu zones)",
				  (unsigned long long)zidx,
				  (unsigned long long)g.nr_zones);
	if (!ret)
		ret = p2z_emu_map(fd, &g, false, &map, why, len);
	close(fd);
	if (ret)
		return ret;
	zt = p2z_emu_table(map);
	p2z_emu_record_fault(&zt[zidx].fault, fault);
	munmap(map, g.map_bytes);
	return 0;
}

static const struct {
	const char *word;
	enum p2z_emu_fault fault;
} p2z_emu_fault_words[] = {
	{ "clear", P2Z_EMU_FAULT_CLEAR },
	{ "read-only", P2Z_EMU_FAULT_READONLY },
	{ "offline", P2Z_EMU_FAULT_OFFLINE },
	{ "online", P2Z_EMU_FAULT_ONLINE },
	{ "fail-next-io", P2Z_EMU_FAULT_FAIL_NEXT_IO },
};

#define EMU_NR_FAULT_WORDS \
	(sizeof(p2z_emu_fault_words) / sizeof(p2z_emu_fault_words[0]))

int p2z_emu_fault_parse(const char *word, enum p2z_emu_fault *fault)
{
	size_t i;

	for (i = 0; i < EMU_NR_FAULT_WORDS; i++) {
		if (!strcmp(word, p2z_emu_fault_words[i].word)) {
			*fault = p2z_emu_fault_words[i].fault;
			return 0;
		}
	}
	return -EINVAL;
}

const char *p2z_emu_fault_name(enum p2z_emu_fault fault)
{
	size_t i;

	for (i = 0; i < EMU_NR_FAULT_WORDS; i++)
		if (p2z_emu_fault_words[i].fault == fault)
			return p2z_emu_fault_words[i].word;
	return "unknown";
}
