// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Emulated zoned device in a regular file, behaving like an NVMe ZNS
 * namespace (zone state machine, open/active limits, zone append), plus
 * conventional zones at the start of the device, as SMR drives have.
 *
 * Image layout (all integers little-endian):
 *   [0, 4096)             header (struct emu_hdr, CRC32C protected)
 *   [4096, ...)           zone table: one struct emu_zent per zone
 *   [data_ofs, end)       zone data, zone i at data_ofs + i * zone size;
 *                         data_ofs is the table's end rounded up to 1 MiB
 * The file is sparse: unwritten zones take no space, resets punch holes.
 *
 * The zone table is mapped MAP_SHARED, so that a `po2zfs-emu set-zone`
 * process and the process using the device see the same bytes: faults are
 * requested by setting bits in a zone's fault byte with atomic operations,
 * and the user of the device applies them at its next operation on that
 * zone. Write pointers and conditions are also stored with atomics, in an
 * order that never lets another process see an empty zone with data.
 *
 * Crash consistency: a write stores its data first and advances the
 * persistent write pointer afterwards, so after kill -9 the write pointer
 * never covers data that is not in the file. Data past the write pointer
 * (a write interrupted before its pointer update) is never returned: reads
 * return zeros from the write pointer on. Flush is fdatasync(), which also
 * writes back the dirty pages of the mapped zone table.
 *
 * Locking. Lock order: zone lock, then res_lock; never two zone locks.
 *   - zone->lock serialises operations on one zone (write pointer advance,
 *     zone management, applying faults). Reads take it only to apply a
 *     pending fault: the write pointer is published after the data.
 *   - e->res_lock guards the open/active accounting and every condition
 *     change, so that closing an implicitly open zone to make room for
 *     another (as ZNS controllers do) needs no second zone lock.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "po2zfs/dev.h"
#include "po2zfs/emu.h"
#include "po2zfs/log.h"

#define EMU_MAGIC "PO2ZEMU\n"
#define EMU_MAGIC_LEN 8
#define EMU_VERSION 1
#define EMU_HDR_BYTES 4096ULL /* the table starts here */
#define EMU_DATA_ALIGN (1ULL << 20)
#define EMU_WHY_LEN 256

#define EMU_FAULT_COND                                        \
	(P2Z_EMU_PENDING_READONLY | P2Z_EMU_PENDING_OFFLINE | \
	 P2Z_EMU_PENDING_ONLINE)
#define EMU_FAULT_ALL (EMU_FAULT_COND | P2Z_EMU_PENDING_FAIL_IO)

/* On-disk header, little-endian, 88 bytes at offset 0. */
struct emu_hdr {
	uint8_t magic[EMU_MAGIC_LEN];
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
	uint32_t reserved;
	uint32_t crc; /* CRC32C of all the bytes before it */
};
_Static_assert(sizeof(struct emu_hdr) == 88, "emu header layout");

/* On-disk zone table entry, little-endian, 16 bytes. */
struct emu_zent {
	/* LBAs of data from the zone start (<= capacity); written under the
	 * zone lock and res_lock */
	uint64_t wp;
	uint8_t cond; /* enum p2z_zone_cond; written under res_lock */
	uint8_t fault; /* P2Z_EMU_PENDING_* bits, set by other processes */
	uint8_t saved_cond; /* cond before read-only/offline; res_lock */
	uint8_t reserved[5];
};
_Static_assert(sizeof(struct emu_zent) == 16, "emu zone entry layout");

/* Geometry and layout of an image, in host order. */
struct emu_geom {
	uint32_t lba_bytes;
	uint64_t zone_lba;
	uint64_t cap_lba;
	uint64_t nr_zones;
	uint64_t nr_cnv;
	uint32_t max_open;
	uint32_t max_active;
	uint32_t max_append_bytes;
	uint64_t zone_bytes;
	uint64_t data_ofs;
	uint64_t map_bytes; /* header and table */
	uint64_t file_bytes;
};

struct emu_zone {
	pthread_mutex_t lock;
	uint64_t open_seq; /* when it was opened; guarded by e->res_lock */
};

struct emu_dev {
	struct p2z_dev dev;
	int fd;
	bool rdonly;
	struct emu_geom g;
	void *map;
	struct emu_zent *zt; /* in map, shared with other processes */
	struct emu_zone *zones;
	pthread_mutex_t res_lock;
	uint32_t nr_open; /* guarded by res_lock */
	uint32_t nr_active; /* guarded by res_lock */
	uint64_t open_seq; /* guarded by res_lock */
};

static struct emu_dev *to_emu(struct p2z_dev *dev)
{
	return container_of(dev, struct emu_dev, dev);
}

static int emu_why(char *why, size_t len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int emu_why(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return err;
}

static uint32_t emu_crc32c(const void *buf, size_t len)
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

/* ---- zone table accessors (the table is shared with other processes) */

static uint8_t emu_cond(const struct emu_dev *e, uint64_t zidx)
{
	return __atomic_load_n(&e->zt[zidx].cond, __ATOMIC_ACQUIRE);
}

static uint64_t emu_wp(const struct emu_dev *e, uint64_t zidx)
{
	return le64toh(__atomic_load_n(&e->zt[zidx].wp, __ATOMIC_ACQUIRE));
}

static void emu_store_wp(struct emu_dev *e, uint64_t zidx, uint64_t wp)
{
	__atomic_store_n(&e->zt[zidx].wp, htole64(wp), __ATOMIC_RELEASE);
}

static bool emu_zone_is_cnv(const struct emu_dev *e, uint64_t zidx)
{
	return zidx < e->g.nr_cnv;
}

static uint64_t emu_zone_cap(const struct emu_dev *e, uint64_t zidx)
{
	return emu_zone_is_cnv(e, zidx) ? e->g.zone_lba : e->g.cap_lba;
}

/* File offset of LBA @rel of zone @zidx. */
static uint64_t emu_file_ofs(const struct emu_dev *e, uint64_t zidx,
			     uint64_t rel)
{
	return e->g.data_ofs + zidx * e->g.zone_bytes + rel * e->g.lba_bytes;
}

static bool emu_cond_is_open(uint8_t cond)
{
	return cond == P2Z_ZONE_COND_IMP_OPEN || cond == P2Z_ZONE_COND_EXP_OPEN;
}

static bool emu_cond_is_active(uint8_t cond)
{
	return emu_cond_is_open(cond) || cond == P2Z_ZONE_COND_CLOSED;
}

/*
 * Change a zone's condition and keep the open/active counts right, whatever
 * the old condition was. Caller holds res_lock.
 */
static void __emu_set_cond(struct emu_dev *e, uint64_t zidx, uint8_t cond)
{
	uint8_t old = emu_cond(e, zidx);

	e->nr_open -= emu_cond_is_open(old);
	e->nr_active -= emu_cond_is_active(old);
	e->nr_open += emu_cond_is_open(cond);
	e->nr_active += emu_cond_is_active(cond);
	__atomic_store_n(&e->zt[zidx].cond, cond, __ATOMIC_RELEASE);
}

/* ---- host file I/O */

static int emu_pread_full(int fd, void *buf, size_t len, uint64_t ofs)
{
	while (len) {
		ssize_t ret = pread(fd, buf, len, (off_t)ofs);

		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -errno;
		if (!ret)
			return -ENODATA; /* the image shrank under us */
		buf = (char *)buf + ret;
		len -= (size_t)ret;
		ofs += (uint64_t)ret;
	}
	return 0;
}

static int emu_pwrite_full(int fd, const void *buf, size_t len, uint64_t ofs)
{
	while (len) {
		ssize_t ret = pwrite(fd, buf, len, (off_t)ofs);

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

/* Host I/O errors become -EIO: a host ENOSPC must not read as "zone full". */
static int emu_host_error(struct emu_dev *e, const char *what, uint64_t ofs,
			  int err)
{
	p2z_log(LOG_ERR, "%s: %s of the image at byte %llu failed: %s",
		e->dev.path ? e->dev.path : "emu", what,
		(unsigned long long)ofs, strerror(-err));
	return -EIO;
}

/*
 * Zero a byte range of the image: punch a hole (sparse), else write zeros
 * where the filesystem cannot punch.
 */
static int emu_zero_range(int fd, uint64_t ofs, uint64_t len)
{
	static const char zeros[65536];
	int ret;

	if (!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		       (off_t)ofs, (off_t)len))
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS)
		return -errno;
	while (len) {
		size_t n = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);

		ret = emu_pwrite_full(fd, zeros, n, ofs);
		if (ret)
			return ret;
		ofs += n;
		len -= n;
	}
	return 0;
}

/* ---- geometry and validation */

static int emu_check_values(const struct p2z_emu_params *p, char *why,
			    size_t why_len)
{
	uint64_t lba = p->lba_bytes;

	if (lba != 512 && lba != 4096)
		return emu_why(why, why_len, -EINVAL,
			       "LBA size %llu is not 512 or 4096",
			       (unsigned long long)lba);
	if (!p->zone_bytes || p->zone_bytes % lba)
		return emu_why(
			why, why_len, -EINVAL,
			"zone size %llu is not a non-zero multiple of the LBA size %llu",
			(unsigned long long)p->zone_bytes,
			(unsigned long long)lba);
	if (!p->cap_bytes || p->cap_bytes % lba)
		return emu_why(
			why, why_len, -EINVAL,
			"zone capacity %llu is not a non-zero multiple of the LBA size %llu",
			(unsigned long long)p->cap_bytes,
			(unsigned long long)lba);
	if (p->cap_bytes > p->zone_bytes)
		return emu_why(why, why_len, -EINVAL,
			       "zone capacity %llu exceeds the zone size %llu",
			       (unsigned long long)p->cap_bytes,
			       (unsigned long long)p->zone_bytes);
	if (!p->nr_zones || p->nr_zones > P2Z_EMU_MAX_ZONES)
		return emu_why(why, why_len, -EINVAL,
			       "number of zones %llu is not within 1..%llu",
			       (unsigned long long)p->nr_zones,
			       (unsigned long long)P2Z_EMU_MAX_ZONES);
	if (p->nr_cnv_zones > p->nr_zones)
		return emu_why(why, why_len, -EINVAL,
			       "%llu conventional zones exceed the %llu zones",
			       (unsigned long long)p->nr_cnv_zones,
			       (unsigned long long)p->nr_zones);
	if (p->max_open && p->max_active && p->max_open > p->max_active)
		return emu_why(why, why_len, -EINVAL,
			       "max open zones %u exceeds max active zones %u",
			       p->max_open, p->max_active);
	if (p->max_append_bytes < lba || p->max_append_bytes % lba ||
	    p->max_append_bytes > P2Z_EMU_MAX_XFER_BYTES)
		return emu_why(
			why, why_len, -EINVAL,
			"max append %u is not a multiple of the LBA size %llu from %llu to %u",
			p->max_append_bytes, (unsigned long long)lba,
			(unsigned long long)lba, P2Z_EMU_MAX_XFER_BYTES);
	return 0;
}

/* Validate @p and compute the layout of its image. */
static int emu_geom_from_params(struct emu_geom *g,
				const struct p2z_emu_params *p, char *why,
				size_t why_len)
{
	uint64_t table_end, data_bytes;
	int ret;

	ret = emu_check_values(p, why, why_len);
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
	table_end = EMU_HDR_BYTES + p->nr_zones * sizeof(struct emu_zent);
	g->map_bytes = table_end;
	g->data_ofs = (table_end + EMU_DATA_ALIGN - 1) / EMU_DATA_ALIGN *
		      EMU_DATA_ALIGN;
	if (__builtin_mul_overflow(p->zone_bytes, p->nr_zones, &data_bytes) ||
	    __builtin_add_overflow(data_bytes, g->data_ofs, &g->file_bytes) ||
	    g->file_bytes > (uint64_t)INT64_MAX)
		return emu_why(why, why_len, -EOVERFLOW,
			       "%llu zones of %llu bytes do not fit in a file",
			       (unsigned long long)p->nr_zones,
			       (unsigned long long)p->zone_bytes);
	return 0;
}

int p2z_emu_check_params(const struct p2z_emu_params *p, char *why,
			 size_t why_len)
{
	struct emu_geom g;

	return emu_geom_from_params(&g, p, why, why_len);
}

static void emu_hdr_encode(struct emu_hdr *h, const struct emu_geom *g)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, EMU_MAGIC, EMU_MAGIC_LEN);
	h->version = htole32(EMU_VERSION);
	h->lba_bytes = htole32(g->lba_bytes);
	h->zone_lba = htole64(g->zone_lba);
	h->cap_lba = htole64(g->cap_lba);
	h->nr_zones = htole64(g->nr_zones);
	h->nr_cnv_zones = htole64(g->nr_cnv);
	h->max_open = htole32(g->max_open);
	h->max_active = htole32(g->max_active);
	h->max_append_bytes = htole32(g->max_append_bytes);
	h->zent_bytes = htole32(sizeof(struct emu_zent));
	h->table_ofs = htole64(EMU_HDR_BYTES);
	h->data_ofs = htole64(g->data_ofs);
	h->crc = htole32(emu_crc32c(h, offsetof(struct emu_hdr, crc)));
}

/* Header fields to params; -EUCLEAN if they overflow a byte count. */
static int emu_hdr_params(const struct emu_hdr *h, struct p2z_emu_params *p,
			  char *why, size_t why_len)
{
	uint64_t lba = le32toh(h->lba_bytes);

	memset(p, 0, sizeof(*p));
	p->lba_bytes = le32toh(h->lba_bytes);
	p->nr_zones = le64toh(h->nr_zones);
	p->nr_cnv_zones = le64toh(h->nr_cnv_zones);
	p->max_open = le32toh(h->max_open);
	p->max_active = le32toh(h->max_active);
	p->max_append_bytes = le32toh(h->max_append_bytes);
	if (__builtin_mul_overflow(le64toh(h->zone_lba), lba, &p->zone_bytes) ||
	    __builtin_mul_overflow(le64toh(h->cap_lba), lba, &p->cap_bytes))
		return emu_why(why, why_len, -EUCLEAN,
			       "zone size or capacity overflows");
	return 0;
}

/* Read and check the header of the image open on @fd; fill @g. */
static int emu_load_hdr(int fd, struct emu_geom *g, char *why, size_t len)
{
	char sub[EMU_WHY_LEN] = "";
	struct p2z_emu_params p;
	struct emu_hdr h;
	struct stat st;
	ssize_t n;
	int ret;

	if (fstat(fd, &st) < 0)
		return emu_why(why, len, -errno, "%s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return emu_why(why, len, -EINVAL, "not a regular file");
	n = pread(fd, &h, sizeof(h), 0);
	if (n < 0)
		return emu_why(why, len, -errno, "%s", strerror(errno));
	if ((size_t)n < EMU_MAGIC_LEN ||
	    memcmp(h.magic, EMU_MAGIC, EMU_MAGIC_LEN))
		return emu_why(why, len, -EINVAL,
			       "not an emulated zoned device image (no magic)");
	if ((size_t)n < sizeof(h) || st.st_size < (off_t)EMU_HDR_BYTES)
		return emu_why(why, len, -EUCLEAN,
			       "image truncated inside its header");
	if (le32toh(h.version) != EMU_VERSION)
		return emu_why(why, len, -EUCLEAN,
			       "unsupported image version %u (expected %u)",
			       le32toh(h.version), EMU_VERSION);
	if (le32toh(h.crc) != emu_crc32c(&h, offsetof(struct emu_hdr, crc)))
		return emu_why(why, len, -EUCLEAN, "header checksum mismatch");
	ret = emu_hdr_params(&h, &p, sub, sizeof(sub));
	if (!ret)
		ret = emu_geom_from_params(g, &p, sub, sizeof(sub));
	if (ret)
		return emu_why(why, len, -EUCLEAN, "inconsistent geometry: %s",
			       sub);
	if (le32toh(h.zent_bytes) != sizeof(struct emu_zent) ||
	    le64toh(h.table_ofs) != EMU_HDR_BYTES ||
	    le64toh(h.data_ofs) != g->data_ofs)
		return emu_why(why, len, -EUCLEAN, "inconsistent layout");
	if ((uint64_t)st.st_size < g->file_bytes)
		return emu_why(why, len, -EUCLEAN,
			       "image truncated: %lld bytes, expected %llu",
			       (long long)st.st_size,
			       (unsigned long long)g->file_bytes);
	return 0;
}

static bool emu_cond_is_valid(uint8_t cond, bool cnv)
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

static int emu_check_table(const struct emu_zent *zt, const struct emu_geom *g,
			   char *why, size_t len)
{
	uint64_t zidx;

	for (zidx = 0; zidx < g->nr_zones; zidx++) {
		bool cnv = zidx < g->nr_cnv;
		uint64_t wp = le64toh(
			__atomic_load_n(&zt[zidx].wp, __ATOMIC_ACQUIRE));
		uint8_t cond =
			__atomic_load_n(&zt[zidx].cond, __ATOMIC_ACQUIRE);
		uint8_t fault =
			__atomic_load_n(&zt[zidx].fault, __ATOMIC_RELAXED);

		if (!emu_cond_is_valid(cond, cnv))
			return emu_why(why, len, -EUCLEAN,
				       "zone %llu: invalid condition 0x%x",
				       (unsigned long long)zidx, cond);
		if (wp > (cnv ? 0 : g->cap_lba) ||
		    (cond == P2Z_ZONE_COND_EMPTY && wp))
			return emu_why(
				why, len, -EUCLEAN,
				"zone %llu: write pointer %llu outside the zone",
				(unsigned long long)zidx,
				(unsigned long long)wp);
		if (fault & ~EMU_FAULT_ALL)
			return emu_why(why, len, -EUCLEAN,
				       "zone %llu: invalid fault bits 0x%x",
				       (unsigned long long)zidx, fault);
	}
	return 0;
}

/* Map header and table; @fd is open read-write unless @rdonly. */
static int emu_map(int fd, const struct emu_geom *g, bool rdonly, void **mapp,
		   char *why, size_t len)
{
	int prot = PROT_READ | (rdonly ? 0 : PROT_WRITE);
	void *map;

	map = mmap(NULL, g->map_bytes, prot, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return emu_why(why, len, -errno, "mmap: %s", strerror(errno));
	*mapp = map;
	return 0;
}

/* open(2) an existing image; a directory is "not a regular file". */
static int emu_open_file(const char *path, int flags, char *why, size_t len)
{
	int fd = open(path, flags | O_CLOEXEC | O_NONBLOCK);

	if (fd >= 0)
		return fd;
	if (errno == EISDIR)
		return emu_why(why, len, -EINVAL, "not a regular file");
	return emu_why(why, len, -errno, "%s", strerror(errno));
}

/* ---- faults */

/* Take the fault bits in @mask off a zone's shared fault byte. */
static uint8_t emu_take_faults(struct emu_dev *e, uint64_t zidx, uint8_t mask)
{
	uint8_t *f = &e->zt[zidx].fault;
	uint8_t old = __atomic_load_n(f, __ATOMIC_RELAXED);

	while ((old & mask) &&
	       !__atomic_compare_exchange_n(f, &old, old & ~mask, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		;
	return old & mask;
}

/* Take a zone read-only or offline, remembering where it was. Caller holds
 * res_lock. */
static void __emu_zone_fail(struct emu_dev *e, uint64_t zidx, uint8_t cond)
{
	uint8_t old = emu_cond(e, zidx);

	if (old != P2Z_ZONE_COND_READONLY && old != P2Z_ZONE_COND_OFFLINE)
		e->zt[zidx].saved_cond = old;
	__emu_set_cond(e, zidx, cond);
}

/*
 * Bring a read-only or offline zone back: full if it was full or is
 * written to capacity, empty if it holds no data, else closed, or full
 * (finished, its data still readable) when no active zone is left. Caller
 * holds res_lock.
 */
static void __emu_zone_online(struct emu_dev *e, uint64_t zidx)
{
	uint8_t cond = emu_cond(e, zidx);
	uint64_t wp = emu_wp(e, zidx);

	if (cond != P2Z_ZONE_COND_READONLY && cond != P2Z_ZONE_COND_OFFLINE)
		return;
	if (emu_zone_is_cnv(e, zidx))
		cond = P2Z_ZONE_COND_NOT_WP;
	else if (e->zt[zidx].saved_cond == P2Z_ZONE_COND_FULL)
		cond = P2Z_ZONE_COND_FULL;
	else if (!wp)
		cond = P2Z_ZONE_COND_EMPTY;
	else if (wp == e->g.cap_lba)
		cond = P2Z_ZONE_COND_FULL;
	else if (!e->g.max_active || e->nr_active < e->g.max_active)
		cond = P2Z_ZONE_COND_CLOSED;
	else
		cond = P2Z_ZONE_COND_FULL;
	__emu_set_cond(e, zidx, cond);
}

/*
 * Apply the faults another process set on a zone. With @io, a pending
 * fail-next-io is consumed too, failing the caller's operation once.
 * Caller holds the zone lock.
 *
 * Return: -EIO for a consumed fail-next-io, else 0.
 */
static int __emu_zone_apply_faults(struct emu_dev *e, uint64_t zidx, bool io)
{
	uint8_t f;

	if (e->rdonly || !__atomic_load_n(&e->zt[zidx].fault, __ATOMIC_RELAXED))
		return 0;
	f = emu_take_faults(e, zidx, io ? EMU_FAULT_ALL : EMU_FAULT_COND);
	if (f & EMU_FAULT_COND) {
		pthread_mutex_lock(&e->res_lock);
		if (f & P2Z_EMU_PENDING_ONLINE)
			__emu_zone_online(e, zidx);
		if (f & P2Z_EMU_PENDING_READONLY)
			__emu_zone_fail(e, zidx, P2Z_ZONE_COND_READONLY);
		if (f & P2Z_EMU_PENDING_OFFLINE)
			__emu_zone_fail(e, zidx, P2Z_ZONE_COND_OFFLINE);
		pthread_mutex_unlock(&e->res_lock);
	}
	return (f & P2Z_EMU_PENDING_FAIL_IO) ? -EIO : 0;
}

/* For operations that need no zone lock unless a fault is pending. */
static int emu_zone_check_faults(struct emu_dev *e, uint64_t zidx, bool io)
{
	struct emu_zone *z = &e->zones[zidx];
	int ret;

	if (e->rdonly || !__atomic_load_n(&e->zt[zidx].fault, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&z->lock);
	ret = __emu_zone_apply_faults(e, zidx, io);
	pthread_mutex_unlock(&z->lock);
	return ret;
}

/* ---- zone state machine (NVMe ZNS) */

/* The implicitly open zone opened longest ago, or UINT64_MAX. Caller holds
 * res_lock. A linear scan: only run when the open limit is reached. */
static uint64_t __emu_oldest_imp_open(struct emu_dev *e)
{
	uint64_t zidx, best = UINT64_MAX;

	for (zidx = e->g.nr_cnv; zidx < e->g.nr_zones; zidx++) {
		if (emu_cond(e, zidx) != P2Z_ZONE_COND_IMP_OPEN)
			continue;
		if (best == UINT64_MAX ||
		    e->zones[zidx].open_seq < e->zones[best].open_seq)
			best = zidx;
	}
	return best;
}

/*
 * Open an empty or closed zone, implicitly (@to = IMP_OPEN) or explicitly.
 * As a ZNS controller does, an implicitly open zone is closed to make room
 * when the open limit is reached; explicitly open zones are never closed
 * behind the host's back. Caller holds res_lock.
 */
static uint16_t __emu_zone_open(struct emu_dev *e, uint64_t zidx, uint8_t to)
{
	uint8_t cond = emu_cond(e, zidx);
	uint64_t victim;

	if (cond == P2Z_ZONE_COND_EMPTY && e->g.max_active &&
	    e->nr_active >= e->g.max_active)
		return P2Z_NVME_SC_ZONE_TOO_MANY_ACTIVE;
	if (e->g.max_open && e->nr_open >= e->g.max_open) {
		victim = __emu_oldest_imp_open(e);
		if (victim == UINT64_MAX)
			return P2Z_NVME_SC_ZONE_TOO_MANY_OPEN;
		__emu_set_cond(e, victim, P2Z_ZONE_COND_CLOSED);
	}
	__emu_set_cond(e, zidx, to);
	e->zones[zidx].open_seq = ++e->open_seq;
	return P2Z_NVME_SC_SUCCESS;
}

/* Caller holds the zone lock and res_lock. */
static uint16_t __emu_zone_transition(struct emu_dev *e, uint64_t zidx,
				      enum p2z_zone_op op)
{
	uint8_t cond = emu_cond(e, zidx);

	if (cond == P2Z_ZONE_COND_READONLY || cond == P2Z_ZONE_COND_OFFLINE)
		return P2Z_NVME_SC_ZONE_INVALID_TRANSITION;
	switch (op) {
	case P2Z_ZONE_OP_RESET:
		/* Pointer first: nobody may see an empty zone with data. */
		emu_store_wp(e, zidx, 0);
		__emu_set_cond(e, zidx, P2Z_ZONE_COND_EMPTY);
		return P2Z_NVME_SC_SUCCESS;
	case P2Z_ZONE_OP_OPEN:
		if (cond == P2Z_ZONE_COND_FULL)
			return P2Z_NVME_SC_ZONE_INVALID_TRANSITION;
		if (emu_cond_is_open(cond)) {
			__emu_set_cond(e, zidx, P2Z_ZONE_COND_EXP_OPEN);
			return P2Z_NVME_SC_SUCCESS;
		}
		return __emu_zone_open(e, zidx, P2Z_ZONE_COND_EXP_OPEN);
	case P2Z_ZONE_OP_CLOSE:
		/* An open zone without data becomes closed and stays active,
		 * as on ZNS; closing an empty or full zone is refused. */
		if (emu_cond_is_open(cond))
			__emu_set_cond(e, zidx, P2Z_ZONE_COND_CLOSED);
		else if (cond != P2Z_ZONE_COND_CLOSED)
			return P2Z_NVME_SC_ZONE_INVALID_TRANSITION;
		return P2Z_NVME_SC_SUCCESS;
	case P2Z_ZONE_OP_FINISH:
		/* The stored pointer stays where the data ends: reads return
		 * zeros from there to the capacity. */
		__emu_set_cond(e, zidx, P2Z_ZONE_COND_FULL);
		return P2Z_NVME_SC_SUCCESS;
	}
	return P2Z_NVME_SC_INVALID_FIELD;
}

/*
 * Check a sequential write of @nlb LBAs at zone offset @rel (or at the
 * write pointer for @append) and open the zone implicitly. The checks come
 * in the order of a ZNS controller: zone condition, write pointer, then
 * capacity. Caller holds the zone lock and res_lock.
 */
static uint16_t __emu_prepare_write(struct emu_dev *e, uint64_t zidx,
				    uint64_t nlb, bool append, uint64_t rel,
				    uint64_t *wpp)
{
	uint8_t cond = emu_cond(e, zidx);
	uint64_t wp = emu_wp(e, zidx);

	switch (cond) {
	case P2Z_ZONE_COND_FULL:
		return P2Z_NVME_SC_ZONE_FULL;
	case P2Z_ZONE_COND_READONLY:
		return P2Z_NVME_SC_ZONE_READ_ONLY;
	case P2Z_ZONE_COND_OFFLINE:
		return P2Z_NVME_SC_ZONE_OFFLINE;
	}
	if (!append && rel != wp)
		return P2Z_NVME_SC_ZONE_INVALID_WRITE;
	if (nlb > e->g.cap_lba - wp)
		return P2Z_NVME_SC_ZONE_BOUNDARY;
	*wpp = wp;
	if (cond == P2Z_ZONE_COND_EMPTY || cond == P2Z_ZONE_COND_CLOSED)
		return __emu_zone_open(e, zidx, P2Z_ZONE_COND_IMP_OPEN);
	return P2Z_NVME_SC_SUCCESS;
}

/*
 * Write to a sequential zone: data first, then the persistent write
 * pointer. @wpp gets the zone offset written at. Caller holds the zone lock.
 */
static int __emu_seq_write(struct emu_dev *e, uint64_t zidx, const void *buf,
			   uint64_t nlb, bool append, uint64_t rel,
			   uint64_t *wpp)
{
	uint64_t wp = 0, ofs;
	uint16_t status;
	int ret;

	pthread_mutex_lock(&e->res_lock);
	status = __emu_prepare_write(e, zidx, nlb, append, rel, &wp);
	pthread_mutex_unlock(&e->res_lock);
	if (status)
		return p2z_dev_nvme_status_errno(status);
	ofs = emu_file_ofs(e, zidx, wp);
	ret = emu_pwrite_full(e->fd, buf, nlb * e->g.lba_bytes, ofs);
	if (ret)
		return emu_host_error(e, "write", ofs, ret);

	pthread_mutex_lock(&e->res_lock);
	emu_store_wp(e, zidx, wp + nlb);
	if (wp + nlb == e->g.cap_lba)
		__emu_set_cond(e, zidx, P2Z_ZONE_COND_FULL);
	pthread_mutex_unlock(&e->res_lock);
	*wpp = wp;
	return 0;
}

/* ---- device operations */

/*
 * Common checks of a read or write: LBA alignment, transfer size, device
 * range. Fills the zone, the LBA offset in it and the number of LBAs.
 */
static int emu_check_io(const struct emu_dev *e, size_t len, uint64_t ofs,
			uint64_t *zidx, uint64_t *rel, uint64_t *nlb)
{
	uint64_t lba = e->g.lba_bytes;
	uint64_t total = e->g.nr_zones * e->g.zone_lba;
	uint64_t slba;

	if (len % lba || ofs % lba || len > P2Z_EMU_MAX_XFER_BYTES)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_INVALID_FIELD);
	slba = ofs / lba;
	*nlb = len / lba;
	if (slba >= total || *nlb > total - slba)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_LBA_RANGE);
	*zidx = slba / e->g.zone_lba;
	*rel = slba - *zidx * e->g.zone_lba;
	return 0;
}

static ssize_t emu_pread(struct p2z_dev *dev, void *buf, size_t len,
			 uint64_t ofs)
{
	struct emu_dev *e = to_emu(dev);
	uint64_t zidx, rel, nlb, end, data = 0;
	int ret;

	if (!len)
		return 0;
	ret = emu_check_io(e, len, ofs, &zidx, &rel, &nlb);
	if (ret)
		return ret;
	if (nlb > e->g.zone_lba - rel)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_ZONE_BOUNDARY);
	ret = emu_zone_check_faults(e, zidx, true);
	if (ret)
		return ret;
	if (emu_cond(e, zidx) == P2Z_ZONE_COND_OFFLINE)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_ZONE_OFFLINE);

	/* Sequential zones hold data up to the write pointer only: zeros
	 * after it, whatever an interrupted write left in the file. */
	end = emu_zone_is_cnv(e, zidx) ? e->g.zone_lba : emu_wp(e, zidx);
	if (end > rel)
		data = end - rel < nlb ? end - rel : nlb;
	if (data) {
		uint64_t fofs = emu_file_ofs(e, zidx, rel);

		ret = emu_pread_full(e->fd, buf, data * e->g.lba_bytes, fofs);
		if (ret)
			return emu_host_error(e, "read", fofs, ret);
	}
	memset((char *)buf + data * e->g.lba_bytes, 0,
	       (nlb - data) * e->g.lba_bytes);
	return (ssize_t)len;
}

static ssize_t emu_cnv_write(struct emu_dev *e, uint64_t zidx, uint64_t rel,
			     uint64_t nlb, const void *buf)
{
	uint64_t fofs = emu_file_ofs(e, zidx, rel);
	uint8_t cond;
	int ret;

	ret = emu_zone_check_faults(e, zidx, true);
	if (ret)
		return ret;
	cond = emu_cond(e, zidx);
	if (cond == P2Z_ZONE_COND_READONLY)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_ZONE_READ_ONLY);
	if (cond == P2Z_ZONE_COND_OFFLINE)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_ZONE_OFFLINE);
	if (nlb > e->g.zone_lba - rel)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_ZONE_BOUNDARY);
	ret = emu_pwrite_full(e->fd, buf, nlb * e->g.lba_bytes, fofs);
	if (ret)
		return emu_host_error(e, "write", fofs, ret);
	return (ssize_t)(nlb * e->g.lba_bytes);
}

static ssize_t emu_pwrite(struct p2z_dev *dev, const void *buf, size_t len,
			  uint64_t ofs)
{
	struct emu_dev *e = to_emu(dev);
	uint64_t zidx, rel, nlb, wp;
	struct emu_zone *z;
	int ret;

	if (e->rdonly)
		return -EBADF;
	if (!len)
		return 0;
	ret = emu_check_io(e, len, ofs, &zidx, &rel, &nlb);
	if (ret)
		return ret;
	if (emu_zone_is_cnv(e, zidx))
		return emu_cnv_write(e, zidx, rel, nlb, buf);
	z = &e->zones[zidx];
	pthread_mutex_lock(&z->lock);
	ret = __emu_zone_apply_faults(e, zidx, true);
	if (!ret)
		ret = __emu_seq_write(e, zidx, buf, nlb, false, rel, &wp);
	pthread_mutex_unlock(&z->lock);
	return ret ? ret : (ssize_t)len;
}

static ssize_t emu_append(struct p2z_dev *dev, uint64_t zidx, const void *buf,
			  size_t len, uint64_t *lba)
{
	struct emu_dev *e = to_emu(dev);
	struct emu_zone *z;
	uint64_t wp;
	int ret;

	if (e->rdonly)
		return -EBADF;
	if (zidx >= e->g.nr_zones || emu_zone_is_cnv(e, zidx) ||
	    len % e->g.lba_bytes || len > e->g.max_append_bytes)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_INVALID_FIELD);
	if (!len)
		return 0;
	z = &e->zones[zidx];
	pthread_mutex_lock(&z->lock);
	ret = __emu_zone_apply_faults(e, zidx, true);
	if (!ret)
		ret = __emu_seq_write(e, zidx, buf, len / e->g.lba_bytes, true,
				      0, &wp);
	pthread_mutex_unlock(&z->lock);
	if (ret)
		return ret;
	*lba = zidx * e->g.zone_lba + wp;
	return (ssize_t)len;
}

static int emu_zone_mgmt(struct p2z_dev *dev, uint64_t zidx,
			 enum p2z_zone_op op)
{
	struct emu_dev *e = to_emu(dev);
	struct emu_zone *z;
	uint16_t status;
	int ret;

	if (e->rdonly)
		return -EBADF;
	/* Conventional zones have no zone operations (ZBC: invalid field). */
	if (zidx >= e->g.nr_zones || emu_zone_is_cnv(e, zidx))
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_INVALID_FIELD);
	z = &e->zones[zidx];
	pthread_mutex_lock(&z->lock);
	ret = __emu_zone_apply_faults(e, zidx, true);
	if (!ret) {
		pthread_mutex_lock(&e->res_lock);
		status = __emu_zone_transition(e, zidx, op);
		pthread_mutex_unlock(&e->res_lock);
		ret = p2z_dev_nvme_status_errno(status);
	}
	if (!ret && op == P2Z_ZONE_OP_RESET) {
		/* Give the space back. Reads past the write pointer return
		 * zeros anyway, so a failure here loses nothing. */
		uint64_t fofs = emu_file_ofs(e, zidx, 0);
		int err = emu_zero_range(e->fd, fofs, e->g.zone_bytes);

		if (err)
			p2z_log(LOG_WARNING,
				"%s: zone %llu: freeing the data of the reset zone failed: %s",
				dev->path, (unsigned long long)zidx,
				strerror(-err));
	}
	pthread_mutex_unlock(&z->lock);
	return ret;
}

static void emu_fill_zone_info(struct emu_dev *e, uint64_t zidx,
			       struct p2z_zone_info *zi)
{
	uint64_t start = zidx * e->g.zone_lba;
	uint64_t cap = emu_zone_cap(e, zidx);

	zi->start_lba = start;
	zi->cap_lba = cap;
	zi->cond = emu_cond(e, zidx);
	if (emu_zone_is_cnv(e, zidx)) {
		zi->type = P2Z_ZONE_TYPE_CNV;
		zi->wp_lba = start;
	} else {
		zi->type = P2Z_ZONE_TYPE_SEQ;
		zi->wp_lba = start + (zi->cond == P2Z_ZONE_COND_FULL ?
					      cap :
					      emu_wp(e, zidx));
	}
}

static int emu_report_zones(struct p2z_dev *dev, uint64_t zidx, unsigned int nr,
			    struct p2z_zone_info *zi)
{
	struct emu_dev *e = to_emu(dev);
	unsigned int i;

	if (zidx >= e->g.nr_zones)
		return 0;
	if (nr > e->g.nr_zones - zidx)
		nr = (unsigned int)(e->g.nr_zones - zidx);
	for (i = 0; i < nr; i++)
		emu_zone_check_faults(e, zidx + i, false);
	/* res_lock: each zone's condition and pointer are one snapshot. */
	pthread_mutex_lock(&e->res_lock);
	for (i = 0; i < nr; i++)
		emu_fill_zone_info(e, zidx + i, &zi[i]);
	pthread_mutex_unlock(&e->res_lock);
	return (int)nr;
}

static int emu_flush(struct p2z_dev *dev)
{
	struct emu_dev *e = to_emu(dev);

	if (e->rdonly)
		return 0;
	if (fdatasync(e->fd) < 0)
		return emu_host_error(e, "flush", 0, -errno);
	return 0;
}

/* ---- open and close */

static void emu_free(struct emu_dev *e)
{
	uint64_t zidx;

	for (zidx = 0; zidx < e->g.nr_zones; zidx++)
		pthread_mutex_destroy(&e->zones[zidx].lock);
	pthread_mutex_destroy(&e->res_lock);
	munmap(e->map, e->g.map_bytes);
	close(e->fd);
	free(e->zones);
	free(e);
}

static int emu_alloc(struct emu_dev **ep, const struct emu_geom *g, int fd,
		     void *map, bool rdonly)
{
	struct emu_dev *e;
	uint64_t zidx;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->zones = calloc(g->nr_zones, sizeof(*e->zones));
	if (!e->zones) {
		free(e);
		return -ENOMEM;
	}
	for (zidx = 0; zidx < g->nr_zones; zidx++)
		pthread_mutex_init(&e->zones[zidx].lock, NULL);
	pthread_mutex_init(&e->res_lock, NULL);
	e->fd = fd;
	e->rdonly = rdonly;
	e->g = *g;
	e->map = map;
	e->zt = (struct emu_zent *)((char *)map + EMU_HDR_BYTES);
	e->dev.ops = &p2z_dev_emu_ops;
	e->dev.info = (struct p2z_dev_info){
		.lba_bytes = g->lba_bytes,
		.nr_zones = g->nr_zones,
		.zone_lba = g->zone_lba,
		.nr_cnv_zones = g->nr_cnv,
		.max_open = g->max_open,
		.max_active = g->max_active,
		.max_append_bytes = g->max_append_bytes,
		.max_xfer_bytes = P2Z_EMU_MAX_XFER_BYTES,
	};
	*ep = e;
	return 0;
}

/*
 * Opening for writing is a power cycle: as a ZNS drive does, zones left
 * open become closed (or empty if they hold no data, as QEMU does). Then
 * faults set while nobody used the image take effect. Single-threaded.
 */
static void emu_power_cycle(struct emu_dev *e)
{
	uint64_t zidx;

	for (zidx = e->g.nr_cnv; zidx < e->g.nr_zones; zidx++) {
		uint8_t cond = emu_cond(e, zidx);
		uint8_t to = cond;

		if (emu_cond_is_active(cond) && !emu_wp(e, zidx))
			to = P2Z_ZONE_COND_EMPTY;
		else if (emu_cond_is_open(cond))
			to = P2Z_ZONE_COND_CLOSED;
		if (to != cond)
			__atomic_store_n(&e->zt[zidx].cond, to,
					 __ATOMIC_RELEASE);
		e->nr_active += to == P2Z_ZONE_COND_CLOSED;
	}
	for (zidx = 0; zidx < e->g.nr_zones; zidx++)
		emu_zone_check_faults(e, zidx, false);
}

static int emu_do_open(const char *path, unsigned int flags,
		       struct emu_dev **ep, char *why, size_t len)
{
	bool rdonly = flags & P2Z_DEV_RDONLY;
	struct emu_geom g;
	void *map = NULL;
	int fd, ret;

	fd = emu_open_file(path, rdonly ? O_RDONLY : O_RDWR, why, len);
	if (fd < 0)
		return fd;
	/* One writer at a time; readers (report) need no lock. */
	if (!rdonly && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ?
			      emu_why(why, len, -EBUSY,
				      "in use by another process") :
			      emu_why(why, len, -errno, "flock: %s",
				      strerror(errno));
		goto out_close;
	}
	ret = emu_load_hdr(fd, &g, why, len);
	if (ret)
		goto out_close;
	ret = emu_map(fd, &g, rdonly, &map, why, len);
	if (ret)
		goto out_close;
	ret = emu_check_table((struct emu_zent *)((char *)map + EMU_HDR_BYTES),
			      &g, why, len);
	if (ret)
		goto out_unmap;
	ret = emu_alloc(ep, &g, fd, map, rdonly);
	if (ret) {
		emu_why(why, len, ret, "out of memory");
		goto out_unmap;
	}
	if (!rdonly)
		emu_power_cycle(*ep);
	return 0;

out_unmap:
	munmap(map, g.map_bytes);
out_close:
	close(fd);
	return ret;
}

static int emu_open(const char *path, unsigned int flags, struct p2z_dev **devp)
{
	char why[EMU_WHY_LEN];
	struct emu_dev *e;
	int ret;

	ret = emu_do_open(path, flags, &e, why, sizeof(why));
	if (ret) {
		p2z_log(LOG_ERR, "%s: %s", path, why);
		return ret;
	}
	*devp = &e->dev;
	return 0;
}

static void emu_close(struct p2z_dev *dev)
{
	emu_free(to_emu(dev));
}

static int emu_probe(const char *path)
{
	char magic[EMU_MAGIC_LEN];
	struct stat st;
	int fd, ok;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	ok = !fstat(fd, &st) && S_ISREG(st.st_mode) &&
	     pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	     !memcmp(magic, EMU_MAGIC, EMU_MAGIC_LEN);
	close(fd);
	return ok;
}

const struct p2z_dev_ops p2z_dev_emu_ops = {
	.name = "emu",
	.probe = emu_probe,
	.open = emu_open,
	.close = emu_close,
	.report_zones = emu_report_zones,
	.zone_mgmt = emu_zone_mgmt,
	.pread = emu_pread,
	.pwrite = emu_pwrite,
	.append = emu_append,
	.flush = emu_flush,
};

/* ---- images */

static int emu_open_for_create(const char *path, bool force, bool *created,
			       char *why, size_t len)
{
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd >= 0) {
		*created = true;
		return fd;
	}
	if (errno != EEXIST)
		return emu_why(why, len, -errno, "%s", strerror(errno));
	if (!force)
		return emu_why(why, len, -EEXIST,
			       "already exists (force to overwrite)");
	*created = false;
	/* O_NONBLOCK: do not hang on a FIFO before refusing it. */
	return emu_open_file(path, O_RDWR, why, len);
}

static int emu_write_table(int fd, const struct emu_geom *g, char *why,
			   size_t len)
{
	struct emu_zent buf[256];
	uint64_t zidx = 0, i, n;
	int ret;

	while (zidx < g->nr_zones) {
		n = g->nr_zones - zidx < 256 ? g->nr_zones - zidx : 256;
		memset(buf, 0, sizeof(buf));
		for (i = 0; i < n; i++)
			buf[i].cond = zidx + i < g->nr_cnv ?
					      P2Z_ZONE_COND_NOT_WP :
					      P2Z_ZONE_COND_EMPTY;
		ret = emu_pwrite_full(fd, buf, n * sizeof(buf[0]),
				      EMU_HDR_BYTES + zidx * sizeof(buf[0]));
		if (ret)
			return emu_why(why, len, ret,
				       "writing the zone table: %s",
				       strerror(-ret));
		zidx += n;
	}
	return 0;
}

/* Fill the file open on @fd with an empty device; the header goes last. */
static int emu_format(int fd, const struct emu_geom *g, char *why, size_t len)
{
	struct emu_hdr h;
	struct stat st;
	int ret;

	if (fstat(fd, &st) < 0)
		return emu_why(why, len, -errno, "%s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return emu_why(why, len, -EINVAL, "not a regular file");
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ?
			       emu_why(why, len, -EBUSY,
				       "in use by another process") :
			       emu_why(why, len, -errno, "flock: %s",
				       strerror(errno));
	if (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)g->file_bytes) < 0)
		return emu_why(why, len, -errno,
			       "sizing the image to %llu bytes: %s",
			       (unsigned long long)g->file_bytes,
			       strerror(errno));
	ret = emu_write_table(fd, g, why, len);
	if (ret)
		return ret;
	emu_hdr_encode(&h, g);
	ret = emu_pwrite_full(fd, &h, sizeof(h), 0);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (ret)
		return emu_why(why, len, ret, "writing the header: %s",
			       strerror(-ret));
	return 0;
}

int p2z_emu_create(const char *path, const struct p2z_emu_params *p, bool force)
{
	char why[EMU_WHY_LEN];
	bool created = false;
	struct emu_geom g;
	int fd, ret;

	ret = emu_geom_from_params(&g, p, why, sizeof(why));
	if (ret)
		goto out_log;
	fd = emu_open_for_create(path, force, &created, why, sizeof(why));
	if (fd < 0) {
		ret = fd;
		goto out_log;
	}
	ret = emu_format(fd, &g, why, sizeof(why));
	close(fd);
	if (ret && created)
		unlink(path);
	if (!ret)
		return 0;
out_log:
	p2z_log(LOG_ERR, "%s: %s", path, why);
	return ret;
}

static void emu_geom_params(const struct emu_geom *g, struct p2z_emu_params *p)
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
	struct emu_dev *e;
	int ret;

	ret = emu_do_open(path, P2Z_DEV_RDONLY, &e, why, why_len);
	if (ret)
		return ret;
	if (p)
		emu_geom_params(&e->g, p);
	emu_free(e);
	return 0;
}

/* Record a fault in a shared fault byte; the last condition fault wins. */
static void emu_record_fault(uint8_t *f, enum p2z_emu_fault fault)
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
			new = (old & ~EMU_FAULT_COND) |
			      P2Z_EMU_PENDING_READONLY;
			break;
		case P2Z_EMU_FAULT_OFFLINE:
			new = (old & ~EMU_FAULT_COND) | P2Z_EMU_PENDING_OFFLINE;
			break;
		default:
			new = (old & ~EMU_FAULT_COND) | P2Z_EMU_PENDING_ONLINE;
			break;
		}
	} while (!__atomic_compare_exchange_n(
		f, &old, new, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
}

static int emu_do_set_fault(const char *path, uint64_t zidx,
			    enum p2z_emu_fault fault, char *why, size_t len)
{
	struct emu_zent *zt;
	struct emu_dev *e;
	struct emu_geom g;
	void *map = NULL;
	int fd, ret;

	if ((unsigned int)fault > P2Z_EMU_FAULT_FAIL_NEXT_IO)
		return emu_why(why, len, -EINVAL, "unknown fault %d", fault);
	fd = emu_open_file(path, O_RDWR, why, len);
	if (fd < 0)
		return fd;
	ret = emu_load_hdr(fd, &g, why, len);
	if (!ret && zidx >= g.nr_zones)
		ret = emu_why(why, len, -EINVAL,
			      "zone %llu out of range (%llu zones)",
			      (unsigned long long)zidx,
			      (unsigned long long)g.nr_zones);
	if (!ret)
		ret = emu_map(fd, &g, false, &map, why, len);
	close(fd);
	if (ret)
		return ret;
	zt = (struct emu_zent *)((char *)map + EMU_HDR_BYTES);
	emu_record_fault(&zt[zidx].fault, fault);
	munmap(map, g.map_bytes);

	if (fault == P2Z_EMU_FAULT_CLEAR || fault == P2Z_EMU_FAULT_FAIL_NEXT_IO)
		return 0;
	/* Nobody is using the image: apply the condition change now, by
	 * opening it (which applies pending faults). Else its user will. */
	ret = emu_do_open(path, 0, &e, why, len);
	if (ret == -EBUSY)
		return 0;
	if (!ret)
		emu_free(e);
	return ret;
}

int p2z_emu_set_fault(const char *path, uint64_t zidx, enum p2z_emu_fault fault)
{
	char why[EMU_WHY_LEN];
	int ret;

	ret = emu_do_set_fault(path, zidx, fault, why, sizeof(why));
	if (ret)
		p2z_log(LOG_ERR, "%s: %s", path, why);
	return ret;
}

int p2z_emu_pending_faults(struct p2z_dev *dev, uint64_t zidx)
{
	struct emu_dev *e;

	if (!dev || dev->ops != &p2z_dev_emu_ops)
		return -EINVAL;
	e = to_emu(dev);
	if (zidx >= e->g.nr_zones)
		return -EINVAL;
	return __atomic_load_n(&e->zt[zidx].fault, __ATOMIC_ACQUIRE) &
	       EMU_FAULT_ALL;
}

static const struct {
	const char *word;
	enum p2z_emu_fault fault;
} emu_fault_words[] = {
	{ "clear", P2Z_EMU_FAULT_CLEAR },
	{ "read-only", P2Z_EMU_FAULT_READONLY },
	{ "offline", P2Z_EMU_FAULT_OFFLINE },
	{ "online", P2Z_EMU_FAULT_ONLINE },
	{ "fail-next-io", P2Z_EMU_FAULT_FAIL_NEXT_IO },
};

#define EMU_NR_FAULT_WORDS \
	(sizeof(emu_fault_words) / sizeof(emu_fault_words[0]))

int p2z_emu_fault_parse(const char *word, enum p2z_emu_fault *fault)
{
	size_t i;

	for (i = 0; i < EMU_NR_FAULT_WORDS; i++) {
		if (!strcmp(word, emu_fault_words[i].word)) {
			*fault = emu_fault_words[i].fault;
			return 0;
		}
	}
	return -EINVAL;
}

const char *p2z_emu_fault_name(enum p2z_emu_fault fault)
{
	size_t i;

	for (i = 0; i < EMU_NR_FAULT_WORDS; i++)
		if (emu_fault_words[i].fault == fault)
			return emu_fault_words[i].word;
	return "unknown";
}
