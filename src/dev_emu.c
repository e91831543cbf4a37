// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Emulated zoned device in a regular file, behaving like an NVMe ZNS
 * namespace (zone state machine, open/active limits, zone append), plus
 * conventional zones at the start of the device, as SMR drives have. The
 * image format (layout, creation, validation) is emu_image.c's.
 *
 * The zone table is mapped MAP_SHARED, so that a `po2zfs-emu set-zone`
 * process and the process using the device see the same bytes: faults are
 * requested by setting bits in a zone's fault byte with atomic operations,
 * and the user of the device applies them at its next operation on that
 * zone. A zone's write pointer and condition live in one 8-byte word of
 * its entry (emu_priv.h) and change together, in one aligned atomic store.
 *
 * Crash consistency. Killed (kill -9) at any instant, the process leaves
 * every zone in the state before or after its last change, never a mix (a
 * reset never leaves a full zone reading zeros, a write filling the zone
 * never leaves it active at capacity), because the stores it made are in
 * the page cache, shared with the file. A write stores its data first and
 * advances the write pointer afterwards, so the write pointer never covers
 * data that is not in the file. Data past the write pointer (a write
 * interrupted before its pointer update) is never returned: reads return
 * zeros from the write pointer on. Power loss keeps what was flushed: flush
 * is fdatasync(), which writes back the data and the dirty pages of the
 * mapped zone table. A state word never tears (8 aligned bytes inside one
 * sector), but after power loss an unflushed state change may be lost or
 * kept without the unflushed data it covers (which then reads as zeros),
 * as unflushed writes to a drive with a volatile write cache can be. A
 * reset zeroes the zone's data (a hole) and fdatasync()s before it stores
 * the empty state: a crash in between leaves the old write pointer over
 * zeros, never the zone's old data under a new write pointer.
 *
 * FUA (P2Z_IO_FUA, ops->fua): without a volatile cache, the data goes with
 * RWF_DSYNC and the zone's table entry is msync()ed after its update.
 *
 * Volatile write cache (images created with --volatile-cache; the device
 * reports info.volatile_cache, as NVMe's VWC bit): the process using the
 * device is the drive's cache, so that SIGKILL of it is a power cut. The
 * zone table holds the persisted state; each sequential zone has its
 * state word in memory (emu_zone.vstate) and its written data in a buffer
 * (emu_zone.cbuf: the LBAs from the persisted data's end to the write
 * pointer); each conventional zone a log of its writes (struct
 * emu_cnv_ext), written back in order, read over the image's data. What
 * is volatile, lost at a power cut:
 *   - writes and appends: data, write pointer advance, implicit open,
 *     and the full condition of a write that fills the zone;
 *   - writes to conventional zones;
 *   - open, close and finish (condition changes), and the conditions
 *     faults set on sequential zones (read-only, offline, online).
 * What is not: a reset (as above, the zone's cache dropped first; it is
 * stored in the table when it completes), the power cycle at open (open
 * zones closed), the conditions of conventional zones (faults). Reads see
 * the cached data.
 * Persisting a zone writes its cached data to the image, fdatasync()s,
 * then stores its state word in the table, so a persisted write pointer
 * never covers data that is not in the image; data in the image past the
 * stored write pointer is never read. Flush persists every zone (data of
 * all, one fdatasync(), the states each zone had when its data was
 * written, a second fdatasync()); a FUA write persists its zone and
 * fdatasync()s again (a conventional zone: its log, one fdatasync());
 * when the cache holds more than 64 MiB
 * (P2Z_EMU_CACHE_BYTES, tests only) the zone just written is destaged
 * (persisted, without the second fdatasync()); closing the device
 * persists everything, as a drive's orderly shutdown does.
 *
 * Direct I/O (P2Z_DEV_DIRECT): the zone data goes through a second
 * descriptor of the image opened with O_DIRECT, so that the device costs
 * what a disk costs instead of a memcpy to the page cache; the header and
 * the zone table stay mapped through the first one. Offsets and lengths
 * are whole LBAs, which the open checks the host accepts; a caller's
 * buffer that is not aligned for O_DIRECT goes through an aligned bounce
 * buffer.
 *
 * Locking. Lock order: zone lock, then res_lock; never two zone locks.
 *   - zone->lock serialises operations on one zone (write pointer advance,
 *     zone management, applying faults, its cache). Reads take it only to
 *     apply a pending fault (the write pointer is published after the
 *     data) or to read a zone's cache.
 *   - e->res_lock guards the open/active accounting and every condition
 *     change, so that closing an implicitly open zone to make room for
 *     another (as ZNS controllers do) needs no second zone lock.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "po2zfs/dev.h"
#include "po2zfs/emu.h"
#include "po2zfs/log.h"
#include "emu_priv.h"

/*
 * A zone, and its part of the volatile write cache (images created with
 * --volatile-cache; see "Volatile write cache" above).
 */
struct emu_zone {
	pthread_mutex_t lock;
	uint64_t open_seq; /* when it was opened; guarded by e->res_lock */
	/* The device's state word (host order, packed as the table's): the
	 * table holds the persisted one. Written under res_lock. */
	uint64_t vstate;
	bool dirty; /* vstate may differ from the table; res_lock, atomic */
	bool has_snap; /* flush: store @snap after the data sync; res_lock */
	uint64_t snap;
	/* Cached data, zone lock: of a sequential zone, LBAs [cstart,
	 * cstart + cnlb); of a conventional one, a log of cused bytes of
	 * writes (struct emu_cnv_ext and its data), cnlb LBAs in all. */
	void *cbuf;
	size_t ccap; /* bytes allocated at cbuf */
	size_t cused;
	uint64_t cstart, cnlb;
};

/* A write cached in a conventional zone's log, its data after it. */
struct emu_cnv_ext {
	uint64_t rel; /* LBA in the zone */
	uint64_t nlb;
};

/* Buffer alignment used for O_DIRECT: enough for every Linux filesystem. */
#define EMU_DIO_ALIGN 4096

struct emu_dev {
	struct p2z_dev dev;
	int fd;
	int data_fd; /* zone data: fd, or an O_DIRECT descriptor of the image */
	bool rdonly;
	bool direct; /* data_fd is O_DIRECT */
	struct p2z_emu_geom g;
	void *map;
	struct p2z_emu_zent *zt; /* in map, shared with other processes */
	struct emu_zone *zones;
	pthread_mutex_t res_lock;
	uint32_t nr_open; /* guarded by res_lock */
	uint32_t nr_active; /* guarded by res_lock */
	/* P2Z_EMU_WRITE_DELAY_US, tests only: see __emu_seq_write() */
	unsigned int write_delay_us;
	bool vwc; /* volatile write cache (never on read-only devices) */
	uint64_t cache_max; /* destage beyond this many cached bytes */
	uint64_t cache_bytes; /* cached in all zones; atomic */
	uint64_t open_seq; /* guarded by res_lock */
};

static inline struct emu_dev *P2Z_EMU(struct p2z_dev *dev)
{
	return container_of(dev, struct emu_dev, dev);
}

/* ---- zone table accessors (the table is shared with other processes) */

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
 * A zone's write pointer and condition, from one load. An active zone
 * written to its capacity is full: versions that stored the pointer and
 * the condition separately could be killed between the two, leaving such
 * a zone in an image (power cycles store the repair, emu_power_cycle()).
 */
static void emu_state(const struct emu_dev *e, uint64_t zidx, uint64_t *wp,
		      uint8_t *cond)
{
	uint64_t st;

	if (e->vwc && !emu_zone_is_cnv(e, zidx)) {
		st = __atomic_load_n(&e->zones[zidx].vstate, __ATOMIC_ACQUIRE);
		*wp = st & P2Z_EMU_STATE_WP_MASK;
		*cond = (uint8_t)((st >> P2Z_EMU_STATE_COND_SHIFT) & 0x7f);
	} else {
		p2z_emu_zent_load(&e->zt[zidx], wp, cond);
	}
	if (!emu_zone_is_cnv(e, zidx) && *wp == e->g.cap_lba &&
	    emu_cond_is_active(*cond))
		*cond = P2Z_ZONE_COND_FULL;
}

static uint8_t emu_cond(const struct emu_dev *e, uint64_t zidx)
{
	uint64_t wp;
	uint8_t cond;

	emu_state(e, zidx, &wp, &cond);
	return cond;
}

static uint64_t emu_wp(const struct emu_dev *e, uint64_t zidx)
{
	uint64_t wp;
	uint8_t cond;

	emu_state(e, zidx, &wp, &cond);
	return wp;
}

/*
 * Change a zone's write pointer and condition in one aligned 8-byte store
 * to the shared table (to the zone's volatile state word with a volatile
 * cache), and keep the open/active counts right, whatever the old
 * condition was. Caller holds res_lock.
 */
static void __emu_set_state(struct emu_dev *e, uint64_t zidx, uint64_t wp,
			    uint8_t cond)
{
	uint8_t old = emu_cond(e, zidx);

	e->nr_open -= emu_cond_is_open(old);
	e->nr_active -= emu_cond_is_active(old);
	e->nr_open += emu_cond_is_open(cond);
	e->nr_active += emu_cond_is_active(cond);
	if (e->vwc && !emu_zone_is_cnv(e, zidx)) {
		__atomic_store_n(&e->zones[zidx].vstate,
				 p2z_emu_state_pack(wp, cond),
				 __ATOMIC_RELEASE);
		__atomic_store_n(&e->zones[zidx].dirty, true, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&e->zt[zidx].state,
			 htole64(p2z_emu_state_pack(wp, cond)),
			 __ATOMIC_RELEASE);
}

/* Change a zone's condition only. Caller holds res_lock. */
static void __emu_set_cond(struct emu_dev *e, uint64_t zidx, uint8_t cond)
{
	__emu_set_state(e, zidx, emu_wp(e, zidx), cond);
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

/* Host I/O errors become -EIO: a host ENOSPC must not read as "zone full". */
static int emu_host_error(struct emu_dev *e, const char *what, uint64_t ofs,
			  int err)
{
	p2z_log(LOG_ERR, "%s: %s of the image at byte %llu failed: %s",
		e->dev.path ? e->dev.path : "emu", what,
		(unsigned long long)ofs, strerror(-err));
	return -EIO;
}

static bool emu_buf_is_aligned(const struct emu_dev *e, const void *buf)
{
	return !e->direct || !((uintptr_t)buf % EMU_DIO_ALIGN);
}

/*
 * Read or write zone data. With O_DIRECT, a buffer the host cannot DMA
 * from goes through an aligned copy: the daemon's buffers are aligned, so
 * this costs an allocation only for odd callers (a piece of a po2 view
 * read at an LBA that is not page aligned, a library user).
 */
static int emu_data_read(struct emu_dev *e, void *buf, size_t len, uint64_t ofs)
{
	void *bounce;
	int ret;

	if (emu_buf_is_aligned(e, buf))
		return emu_pread_full(e->data_fd, buf, len, ofs);
	if (posix_memalign(&bounce, EMU_DIO_ALIGN, len))
		return -ENOMEM;
	ret = emu_pread_full(e->data_fd, bounce, len, ofs);
	if (!ret)
		memcpy(buf, bounce, len);
	free(bounce);
	return ret;
}

/* pwrite(2) all of @buf; @rwf: RWF_DSYNC for a FUA write, or 0. */
static int emu_pwrite_full(int fd, const void *buf, size_t len, uint64_t ofs,
			   int rwf)
{
	struct iovec iov;
	ssize_t ret;

	if (!rwf)
		return p2z_emu_pwrite_full(fd, buf, len, ofs);
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

static int emu_data_write(struct emu_dev *e, const void *buf, size_t len,
			  uint64_t ofs, int rwf)
{
	void *bounce;
	int ret;

	if (emu_buf_is_aligned(e, buf))
		return emu_pwrite_full(e->data_fd, buf, len, ofs, rwf);
	if (posix_memalign(&bounce, EMU_DIO_ALIGN, len))
		return -ENOMEM;
	memcpy(bounce, buf, len);
	ret = emu_pwrite_full(e->data_fd, bounce, len, ofs, rwf);
	free(bounce);
	return ret;
}

/*
 * Make the zone table entry of @zidx durable (a FUA write on an image
 * without a volatile cache): msync() of its page of the mapping.
 */
static int emu_sync_zent(struct emu_dev *e, uint64_t zidx)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t at = (uintptr_t)&e->zt[zidx] & ~(page - 1);

	if (msync((void *)at, page, MS_SYNC) < 0)
		return emu_host_error(
			e, "msync", (uint64_t)(at - (uintptr_t)e->map), -errno);
	return 0;
}

static int emu_fdatasync(struct emu_dev *e)
{
	if (fdatasync(e->fd) < 0)
		return emu_host_error(e, "flush", 0, -errno);
	return 0;
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

		ret = p2z_emu_pwrite_full(fd, zeros, n, ofs);
		if (ret)
			return ret;
		ofs += n;
		len -= n;
	}
	return 0;
}

/* ---- volatile write cache (see "Volatile write cache" above) */

/* Default bound of the cache: 64 MiB over all zones. */
#define EMU_CACHE_MAX_BYTES (64ULL << 20)

/* Forget a zone's cached data. Caller holds the zone lock. */
static void __emu_cache_drop(struct emu_dev *e, struct emu_zone *z)
{
	__atomic_sub_fetch(&e->cache_bytes, z->cnlb * e->g.lba_bytes,
			   __ATOMIC_RELAXED);
	z->cnlb = 0;
	z->cused = 0;
	if (z->ccap > P2Z_EMU_MAX_XFER_BYTES) {
		/* Give a large buffer back after a destage. */
		free(z->cbuf);
		z->cbuf = NULL;
		z->ccap = 0;
	}
}

/*
 * Add @nlb LBAs written at zone offset @wp to the zone's cache, which ends
 * at @wp if it holds anything. Caller holds the zone lock.
 *
 * Return: 0 or -ENOMEM.
 */
/* Room for @need bytes at z->cbuf. Caller holds the zone lock. */
static int __emu_cache_reserve(struct emu_zone *z, size_t need)
{
	size_t cap;
	void *p;

	if (need <= z->ccap)
		return 0;
	cap = z->ccap ? z->ccap : 65536;
	while (cap < need)
		cap *= 2;
	p = realloc(z->cbuf, cap);
	if (!p)
		return -ENOMEM;
	z->cbuf = p;
	z->ccap = cap;
	return 0;
}

static int __emu_cache_add(struct emu_dev *e, struct emu_zone *z, uint64_t wp,
			   const void *buf, uint64_t nlb)
{
	size_t len = nlb * e->g.lba_bytes, have;

	if (!z->cnlb)
		z->cstart = wp;
	have = z->cnlb * e->g.lba_bytes;
	if (__emu_cache_reserve(z, have + len))
		return -ENOMEM;
	memcpy((char *)z->cbuf + have, buf, len);
	z->cnlb += nlb;
	__atomic_add_fetch(&e->cache_bytes, len, __ATOMIC_RELAXED);
	return 0;
}

/*
 * Write a zone's cached data to the image (its page cache) and empty the
 * cache. The table is not touched: data past the stored write pointer is
 * never read. Caller holds the zone lock.
 *
 * Return: 1 if data was written, 0 if there was none, or -EIO.
 */
/* Log a write of @nlb LBAs at @rel of a conventional zone; as above. */
static int __emu_cnv_cache_add(struct emu_dev *e, struct emu_zone *z,
			       uint64_t rel, const void *buf, uint64_t nlb)
{
	struct emu_cnv_ext x = { .rel = rel, .nlb = nlb };
	size_t len = nlb * e->g.lba_bytes;
	char *p;

	if (__emu_cache_reserve(z, z->cused + sizeof(x) + len))
		return -ENOMEM;
	p = (char *)z->cbuf + z->cused;
	memcpy(p, &x, sizeof(x));
	memcpy(p + sizeof(x), buf, len);
	z->cused += sizeof(x) + len;
	z->cnlb += nlb;
	__atomic_add_fetch(&e->cache_bytes, len, __ATOMIC_RELAXED);
	return 0;
}

/* The writes logged for a conventional zone to the image, in order. */
static int __emu_cnv_writeback(struct emu_dev *e, uint64_t zidx)
{
	struct emu_zone *z = &e->zones[zidx];
	size_t at = 0, len;
	struct emu_cnv_ext x;
	uint64_t ofs;
	int ret;

	if (!z->cused)
		return 0;
	while (at < z->cused) {
		memcpy(&x, (char *)z->cbuf + at, sizeof(x));
		len = x.nlb * e->g.lba_bytes;
		ofs = emu_file_ofs(e, zidx, x.rel);
		ret = emu_data_write(e, (char *)z->cbuf + at + sizeof(x), len,
				     ofs, 0);
		if (ret) /* the log stays: writing it again is harmless */
			return emu_host_error(e, "write back", ofs, ret);
		at += sizeof(x) + len;
	}
	__emu_cache_drop(e, z);
	return 1;
}

/* LBAs [rel, rel + nlb) of a conventional zone: the image's, then each
 * logged write over them, oldest first. */
static int __emu_cnv_cache_read(struct emu_dev *e, uint64_t zidx, void *buf,
				uint64_t rel, uint64_t nlb)
{
	struct emu_zone *z = &e->zones[zidx];
	uint64_t lba = e->g.lba_bytes, ofs = emu_file_ofs(e, zidx, rel);
	uint64_t from, to;
	struct emu_cnv_ext x;
	size_t at = 0;
	int ret;

	ret = emu_data_read(e, buf, nlb * lba, ofs);
	if (ret)
		return emu_host_error(e, "read", ofs, ret);
	while (at < z->cused) {
		memcpy(&x, (char *)z->cbuf + at, sizeof(x));
		from = x.rel > rel ? x.rel : rel;
		to = x.rel + x.nlb < rel + nlb ? x.rel + x.nlb : rel + nlb;
		if (from < to)
			memcpy((char *)buf + (from - rel) * lba,
			       (char *)z->cbuf + at + sizeof(x) +
				       (from - x.rel) * lba,
			       (to - from) * lba);
		at += sizeof(x) + x.nlb * lba;
	}
	return 0;
}

static int __emu_cache_writeback(struct emu_dev *e, uint64_t zidx)
{
	struct emu_zone *z = &e->zones[zidx];
	uint64_t ofs = emu_file_ofs(e, zidx, z->cstart);
	int ret;

	if (emu_zone_is_cnv(e, zidx))
		return __emu_cnv_writeback(e, zidx);
	if (!z->cnlb)
		return 0;
	ret = emu_data_write(e, z->cbuf, z->cnlb * e->g.lba_bytes, ofs, 0);
	if (ret)
		return emu_host_error(e, "write back", ofs, ret);
	z->cstart += z->cnlb;
	__emu_cache_drop(e, z);
	return 1;
}

/* Store a state word in the zone table. Caller holds res_lock. */
static void __emu_store_state(struct emu_dev *e, uint64_t zidx, uint64_t st)
{
	__atomic_store_n(&e->zt[zidx].state, htole64(st), __ATOMIC_RELEASE);
}

/*
 * Persist one zone: its cached data, fdatasync(), then its state (never a
 * stored write pointer over data that is not in the image), and with
 * @sync a second fdatasync() that makes the state durable too (FUA). A
 * destage (@sync false) only keeps the order. Caller holds the zone lock.
 */
static int __emu_zone_persist(struct emu_dev *e, uint64_t zidx, bool sync)
{
	struct emu_zone *z = &e->zones[zidx];
	int ret;

	ret = __emu_cache_writeback(e, zidx);
	if (ret > 0)
		ret = emu_fdatasync(e);
	if (ret)
		return ret;
	if (emu_zone_is_cnv(e, zidx)) { /* its state is in the table */
		__atomic_store_n(&z->dirty, false, __ATOMIC_RELEASE);
		return 0;
	}
	pthread_mutex_lock(&e->res_lock);
	__emu_store_state(e, zidx, z->vstate);
	__atomic_store_n(&z->dirty, false, __ATOMIC_RELEASE);
	z->has_snap = false; /* older than what is stored now */
	pthread_mutex_unlock(&e->res_lock);
	return sync ? emu_fdatasync(e) : 0;
}

/*
 * Flush a volatile cache: every zone's data to the image, one
 * fdatasync(), every zone's state as it was when its data was written
 * (writes that come meanwhile stay cached), a second fdatasync().
 */
static int emu_cache_flush(struct emu_dev *e)
{
	uint64_t zidx, nr = 0;
	struct emu_zone *z;
	int ret = 0, err;

	for (zidx = 0; zidx < e->g.nr_zones; zidx++) {
		z = &e->zones[zidx];
		if (!__atomic_load_n(&z->dirty, __ATOMIC_ACQUIRE))
			continue;
		pthread_mutex_lock(&z->lock);
		err = __emu_cache_writeback(e, zidx);
		if (err >= 0 && emu_zone_is_cnv(e, zidx)) {
			__atomic_store_n(&z->dirty, false, __ATOMIC_RELEASE);
		} else if (err >= 0) {
			pthread_mutex_lock(&e->res_lock);
			z->snap = z->vstate;
			z->has_snap = true;
			__atomic_store_n(&z->dirty, false, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&e->res_lock);
			nr++;
		}
		pthread_mutex_unlock(&z->lock);
		ret = ret ? ret : (err < 0 ? err : 0);
	}
	err = emu_fdatasync(e);
	if (ret || err || !nr)
		return ret ? ret : err;
	pthread_mutex_lock(&e->res_lock);
	for (zidx = e->g.nr_cnv; zidx < e->g.nr_zones; zidx++) {
		z = &e->zones[zidx];
		if (z->has_snap) /* a reset or a persist since clears it */
			__emu_store_state(e, zidx, z->snap);
		z->has_snap = false;
	}
	pthread_mutex_unlock(&e->res_lock);
	return emu_fdatasync(e);
}

/*
 * Read LBAs [rel, rel + nlb) of a sequential zone below its write pointer,
 * from the image and the cache. Caller holds the zone lock.
 */
static int __emu_cache_read(struct emu_dev *e, uint64_t zidx, void *buf,
			    uint64_t rel, uint64_t nlb)
{
	struct emu_zone *z = &e->zones[zidx];
	uint64_t fend = z->cnlb ? z->cstart : rel + nlb;
	uint64_t nfile = fend > rel ? (fend - rel < nlb ? fend - rel : nlb) : 0;
	uint64_t lba = e->g.lba_bytes, ofs;
	int ret;

	if (nfile) {
		ofs = emu_file_ofs(e, zidx, rel);
		ret = emu_data_read(e, buf, nfile * lba, ofs);
		if (ret)
			return emu_host_error(e, "read", ofs, ret);
	}
	if (nfile < nlb)
		memcpy((char *)buf + nfile * lba,
		       (char *)z->cbuf + (rel + nfile - z->cstart) * lba,
		       (nlb - nfile) * lba);
	return 0;
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
	f = emu_take_faults(e, zidx,
			    io ? P2Z_EMU_PENDING_ALL : P2Z_EMU_PENDING_COND);
	if (f & P2Z_EMU_PENDING_COND) {
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
		/* emu_zone_reset() stores the empty state, after the data is
		 * gone. */
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
 * Store the data of a sequential write at zone offset @wp: into the cache
 * of a volatile-cache device (straight to the image if no memory is left
 * for it), else into the image, with RWF_DSYNC for FUA. Caller holds the
 * zone lock.
 */
static int __emu_seq_store(struct emu_dev *e, uint64_t zidx, const void *buf,
			   uint64_t nlb, uint64_t wp, bool fua)
{
	struct emu_zone *z = &e->zones[zidx];
	uint64_t ofs = emu_file_ofs(e, zidx, wp);
	int ret;

	if (e->vwc) {
		if (!__emu_cache_add(e, z, wp, buf, nlb))
			return 0;
		/* Data in the image past the stored pointer is consistent. */
		ret = __emu_cache_writeback(e, zidx);
		if (ret < 0)
			return ret;
		z->cstart = wp + nlb;
		fua = false;
	}
	ret = emu_data_write(e, buf, nlb * e->g.lba_bytes, ofs,
			     fua ? RWF_DSYNC : 0);
	return ret ? emu_host_error(e, "write", ofs, ret) : 0;
}

/*
 * Write to a sequential zone: data first, then the write pointer. With
 * @fua the write and the zone's earlier ones are durable on return. @wpp
 * gets the zone offset written at. Caller holds the zone lock.
 */
static int __emu_seq_write(struct emu_dev *e, uint64_t zidx, const void *buf,
			   uint64_t nlb, bool append, uint64_t rel, bool fua,
			   uint64_t *wpp)
{
	uint64_t wp = 0;
	uint16_t status;
	int ret;

	pthread_mutex_lock(&e->res_lock);
	status = __emu_prepare_write(e, zidx, nlb, append, rel, &wp);
	pthread_mutex_unlock(&e->res_lock);
	if (status)
		return p2z_dev_nvme_status_errno(status);
	ret = __emu_seq_store(e, zidx, buf, nlb, wp, fua);
	if (ret)
		return ret;
	/* Crash tests widen the window between data and write pointer, where
	 * a killed daemon leaves data past the write pointer on the medium. */
	if (e->write_delay_us)
		usleep(e->write_delay_us);

	/* Pointer and condition in one store: filling the zone makes it
	 * full at once, never an active zone at capacity. */
	pthread_mutex_lock(&e->res_lock);
	__emu_set_state(e, zidx, wp + nlb,
			wp + nlb == e->g.cap_lba ? P2Z_ZONE_COND_FULL :
						   emu_cond(e, zidx));
	pthread_mutex_unlock(&e->res_lock);
	*wpp = wp;
	if (e->vwc && (fua || __atomic_load_n(&e->cache_bytes,
					      __ATOMIC_RELAXED) > e->cache_max))
		return __emu_zone_persist(e, zidx, fua);
	return fua ? emu_sync_zent(e, zidx) : 0;
}

/* ---- device operations */

/*
 * Common checks of a read or write: LBA alignment, transfer size, device
 * range. Fills the zone, the LBA offset in it and the number of LBAs.
 */
static int emu_check_io(const struct emu_dev *e, size_t len, uint64_t ofs,
			uint64_t *zidx, uint64_t *rel, uint64_t *nlb)
{
	uint64_t lba_bytes = e->g.lba_bytes;
	uint64_t total = e->g.nr_zones * e->g.zone_lba;
	uint64_t slba;

	/* Defined on every path: gcc -O3 cannot see that the status map of
	 * an error never returns 0. */
	*zidx = *rel = *nlb = 0;
	if (len % lba_bytes || ofs % lba_bytes || len > P2Z_EMU_MAX_XFER_BYTES)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_INVALID_FIELD);
	slba = ofs / lba_bytes;
	*nlb = len / lba_bytes;
	if (slba >= total || *nlb > total - slba)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_LBA_RANGE);
	*zidx = slba / e->g.zone_lba;
	*rel = slba - *zidx * e->g.zone_lba;
	return 0;
}

static ssize_t emu_pread(struct p2z_dev *dev, void *buf, size_t len,
			 uint64_t ofs)
{
	struct emu_dev *e = P2Z_EMU(dev);
	uint64_t zidx, rel, nlb, end, data = 0;
	bool cached;
	int ret;

	if (!len) /* never from the dispatcher; as nvme and zbd */
		return -EINVAL;
	ret = emu_check_io(e, len, ofs, &zidx, &rel, &nlb);
	if (ret)
		return ret;
	cached = e->vwc;
	if (nlb > e->g.zone_lba - rel)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_ZONE_BOUNDARY);
	ret = emu_zone_check_faults(e, zidx, true);
	if (ret)
		return ret;
	if (emu_cond(e, zidx) == P2Z_ZONE_COND_OFFLINE)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_ZONE_OFFLINE);

	/* Sequential zones hold data up to the write pointer only: zeros
	 * after it, whatever an interrupted write left in the file. A cache
	 * changes under the zone lock. */
	if (cached)
		pthread_mutex_lock(&e->zones[zidx].lock);
	end = emu_zone_is_cnv(e, zidx) ? e->g.zone_lba : emu_wp(e, zidx);
	if (end > rel)
		data = end - rel < nlb ? end - rel : nlb;
	if (data && cached && emu_zone_is_cnv(e, zidx)) {
		ret = __emu_cnv_cache_read(e, zidx, buf, rel, data);
	} else if (data && cached) {
		ret = __emu_cache_read(e, zidx, buf, rel, data);
	} else if (data) {
		uint64_t fofs = emu_file_ofs(e, zidx, rel);

		ret = emu_data_read(e, buf, data * e->g.lba_bytes, fofs);
		if (ret)
			ret = emu_host_error(e, "read", fofs, ret);
	}
	if (cached)
		pthread_mutex_unlock(&e->zones[zidx].lock);
	if (ret)
		return ret;
	memset((char *)buf + data * e->g.lba_bytes, 0,
	       (nlb - data) * e->g.lba_bytes);
	return (ssize_t)len;
}

/*
 * A write to a conventional zone with a volatile cache: logged, the zone
 * persisted for FUA or destaged past the cache's bound; written back and
 * then through if no memory is left for the log.
 */
static int emu_cnv_cache_write(struct emu_dev *e, uint64_t zidx, uint64_t rel,
			       uint64_t nlb, const void *buf, bool fua)
{
	struct emu_zone *z = &e->zones[zidx];
	uint64_t fofs = emu_file_ofs(e, zidx, rel);
	int ret;

	pthread_mutex_lock(&z->lock);
	ret = __emu_cnv_cache_add(e, z, rel, buf, nlb);
	if (!ret) {
		__atomic_store_n(&z->dirty, true, __ATOMIC_RELEASE);
		if (fua || __atomic_load_n(&e->cache_bytes, __ATOMIC_RELAXED) >
				   e->cache_max)
			ret = __emu_zone_persist(e, zidx, fua);
	} else {
		/* No memory for the log: the log, then this write, in order. */
		ret = __emu_cache_writeback(e, zidx);
		if (ret >= 0) {
			ret = emu_data_write(e, buf, nlb * e->g.lba_bytes, fofs,
					     fua ? RWF_DSYNC : 0);
			if (ret)
				ret = emu_host_error(e, "write", fofs, ret);
		}
	}
	pthread_mutex_unlock(&z->lock);
	return ret;
}

/* Without a volatile cache, FUA is RWF_DSYNC. */
static ssize_t emu_cnv_write(struct emu_dev *e, uint64_t zidx, uint64_t rel,
			     uint64_t nlb, const void *buf, bool fua)
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
	if (e->vwc) {
		ret = emu_cnv_cache_write(e, zidx, rel, nlb, buf, fua);
		return ret ? ret : (ssize_t)(nlb * e->g.lba_bytes);
	}
	ret = emu_data_write(e, buf, nlb * e->g.lba_bytes, fofs,
			     fua ? RWF_DSYNC : 0);
	if (ret)
		return emu_host_error(e, "write", fofs, ret);
	return (ssize_t)(nlb * e->g.lba_bytes);
}

static ssize_t emu_pwrite(struct p2z_dev *dev, const void *buf, size_t len,
			  uint64_t ofs, unsigned int flags)
{
	struct emu_dev *e = P2Z_EMU(dev);
	bool fua = flags & P2Z_IO_FUA;
	uint64_t zidx, rel, nlb, wp;
	struct emu_zone *z;
	int ret;

	if (e->rdonly)
		return -EROFS;
	if (!len) /* never from the dispatcher; as nvme and zbd */
		return -EINVAL;
	ret = emu_check_io(e, len, ofs, &zidx, &rel, &nlb);
	if (ret)
		return ret;
	if (emu_zone_is_cnv(e, zidx))
		return emu_cnv_write(e, zidx, rel, nlb, buf, fua);
	z = &e->zones[zidx];
	pthread_mutex_lock(&z->lock);
	ret = __emu_zone_apply_faults(e, zidx, true);
	if (!ret)
		ret = __emu_seq_write(e, zidx, buf, nlb, false, rel, fua, &wp);
	pthread_mutex_unlock(&z->lock);
	return ret ? ret : (ssize_t)len;
}

static ssize_t emu_append(struct p2z_dev *dev, uint64_t zidx, const void *buf,
			  size_t len, uint64_t *lba, unsigned int flags)
{
	struct emu_dev *e = P2Z_EMU(dev);
	bool fua = flags & P2Z_IO_FUA;
	struct emu_zone *z;
	uint64_t wp;
	int ret;

	if (e->rdonly)
		return -EROFS;
	if (zidx >= e->g.nr_zones || emu_zone_is_cnv(e, zidx) ||
	    len % e->g.lba_bytes || len > e->g.max_append_bytes)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_INVALID_FIELD);
	if (!len) /* never from the dispatcher; as nvme and zbd */
		return -EINVAL;
	z = &e->zones[zidx];
	pthread_mutex_lock(&z->lock);
	ret = __emu_zone_apply_faults(e, zidx, true);
	if (!ret)
		ret = __emu_seq_write(e, zidx, buf, len / e->g.lba_bytes, true,
				      0, fua, &wp);
	pthread_mutex_unlock(&z->lock);
	if (ret)
		return ret;
	*lba = zidx * e->g.zone_lba + wp;
	return (ssize_t)len;
}

/*
 * Reset a zone whose condition allows it: its cached data dropped, its
 * data zeroed in the image (a hole) and synced, then the empty state
 * stored, in the table too with a volatile cache (a reset is never
 * cached). In this order, a crash between two steps leaves the old write
 * pointer over zeros, never old data under a new write pointer. Caller
 * holds the zone lock.
 */
static int __emu_zone_reset(struct emu_dev *e, uint64_t zidx)
{
	struct emu_zone *z = &e->zones[zidx];
	uint64_t fofs = emu_file_ofs(e, zidx, 0);
	int ret;

	if (e->vwc) {
		pthread_mutex_lock(&e->res_lock);
		z->has_snap = false; /* a flush must not store it now */
		pthread_mutex_unlock(&e->res_lock);
		__emu_cache_drop(e, z);
	}
	ret = emu_zero_range(e->fd, fofs, e->g.zone_bytes);
	if (ret)
		return emu_host_error(e, "zeroing the reset zone", fofs, ret);
	ret = emu_fdatasync(e);
	if (ret)
		return ret;
	pthread_mutex_lock(&e->res_lock);
	/* One store: never a full zone reading zeros, nor an empty one
	 * with data. */
	__emu_set_state(e, zidx, 0, P2Z_ZONE_COND_EMPTY);
	if (e->vwc) {
		__emu_store_state(e, zidx, z->vstate);
		__atomic_store_n(&z->dirty, false, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&e->res_lock);
	return 0;
}

static int emu_zone_mgmt(struct p2z_dev *dev, uint64_t zidx,
			 enum p2z_zone_op op)
{
	struct emu_dev *e = P2Z_EMU(dev);
	struct emu_zone *z;
	uint16_t status;
	int ret;

	if (e->rdonly)
		return -EROFS;
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
	if (!ret && op == P2Z_ZONE_OP_RESET)
		ret = __emu_zone_reset(e, zidx);
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
	struct emu_dev *e = P2Z_EMU(dev);
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
	struct emu_dev *e = P2Z_EMU(dev);

	if (e->rdonly)
		return 0;
	return e->vwc ? emu_cache_flush(e) : emu_fdatasync(e);
}

/* ---- open and close */

static void emu_free(struct emu_dev *e)
{
	uint64_t zidx;

	for (zidx = 0; zidx < e->g.nr_zones; zidx++) {
		pthread_mutex_destroy(&e->zones[zidx].lock);
		free(e->zones[zidx].cbuf);
	}
	pthread_mutex_destroy(&e->res_lock);
	munmap(e->map, e->g.map_bytes);
	if (e->data_fd != e->fd)
		close(e->data_fd);
	close(e->fd);
	free(e->zones);
	free(e);
}

static int emu_alloc(struct emu_dev **ep, const struct p2z_emu_geom *g, int fd,
		     void *map, bool rdonly)
{
	const char *delay = getenv("P2Z_EMU_WRITE_DELAY_US");
	const char *cmax = getenv("P2Z_EMU_CACHE_BYTES");
	struct emu_dev *e;
	uint64_t zidx;
	int ret;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->zones = calloc(g->nr_zones, sizeof(*e->zones));
	if (!e->zones) {
		free(e);
		return -ENOMEM;
	}
	for (zidx = 0; zidx < g->nr_zones; zidx++) {
		ret = pthread_mutex_init(&e->zones[zidx].lock, NULL);
		if (ret)
			goto out_destroy_locks;
	}
	ret = pthread_mutex_init(&e->res_lock, NULL);
	if (ret)
		goto out_destroy_locks;
	e->fd = fd;
	e->data_fd = fd;
	e->rdonly = rdonly;
	if (delay)
		e->write_delay_us = strtoul(delay, NULL, 10) % 1000000;
	/* A read-only user sees the image as stored: no cache to read. */
	e->vwc = g->volatile_cache && !rdonly;
	e->cache_max = cmax ? strtoull(cmax, NULL, 10) : EMU_CACHE_MAX_BYTES;
	e->g = *g;
	e->map = map;
	e->zt = p2z_emu_table(map);
	e->dev.ops = &p2z_dev_emu_ops;
	e->dev.info = (struct p2z_dev_info){
		.lba_bytes = g->lba_bytes,
		.nr_zones = g->nr_zones,
		.zone_lba = g->zone_lba,
		.max_open = g->max_open,
		.max_active = g->max_active,
		.max_append_bytes = g->max_append_bytes,
		.max_xfer_bytes = P2Z_EMU_MAX_XFER_BYTES,
		.volatile_cache = g->volatile_cache,
	};
	*ep = e;
	return 0;

out_destroy_locks:
	while (zidx--)
		pthread_mutex_destroy(&e->zones[zidx].lock);
	free(e->zones);
	free(e);
	return -ret;
}

/*
 * Opening for writing is a power cycle: as a ZNS drive does, zones left
 * open become closed (or empty if they hold no data, as QEMU does), and a
 * zone an older version left active at capacity is stored full. Then
 * faults set while nobody used the image take effect. Single-threaded.
 */
static void emu_power_cycle(struct emu_dev *e)
{
	uint64_t zidx, wp;
	uint8_t stored, cond, to;

	for (zidx = e->g.nr_cnv; zidx < e->g.nr_zones; zidx++) {
		p2z_emu_zent_load(&e->zt[zidx], &wp, &stored);
		cond = stored;
		if (wp == e->g.cap_lba && emu_cond_is_active(cond))
			cond = P2Z_ZONE_COND_FULL;
		to = cond;
		if (emu_cond_is_active(cond) && !wp)
			to = P2Z_ZONE_COND_EMPTY;
		else if (emu_cond_is_open(cond))
			to = P2Z_ZONE_COND_CLOSED;
		if (to != stored)
			__atomic_store_n(&e->zt[zidx].state,
					 htole64(p2z_emu_state_pack(wp, to)),
					 __ATOMIC_RELEASE);
		e->nr_active += to == P2Z_ZONE_COND_CLOSED;
		e->zones[zidx].vstate = p2z_emu_state_pack(wp, to);
	}
	for (zidx = 0; zidx < e->g.nr_zones; zidx++)
		emu_zone_check_faults(e, zidx, false);
}

#ifdef STATX_DIOALIGN
/* The file offset alignment of direct I/O on @fd, or 0 if not known. */
static uint32_t emu_dio_offset_align(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) < 0 ||
	    !(stx.stx_mask & STATX_DIOALIGN))
		return 0;
	/* 0 with the bit set: no direct I/O on this file at all. */
	return stx.stx_dio_offset_align ? stx.stx_dio_offset_align : UINT32_MAX;
}
#else
static uint32_t emu_dio_offset_align(int fd)
{
	(void)fd;
	return 0;
}
#endif

/*
 * Check that the host takes direct I/O of one LBA. statx() says what the
 * filesystem needs (Linux 6.1 and later); without it, a test read must do,
 * and it proves less: reading a hole needs no alignment on some
 * filesystems.
 */
static int emu_probe_direct(int dfd, const struct p2z_emu_geom *g, char *why,
			    size_t len)
{
	uint32_t align = emu_dio_offset_align(dfd);
	void *buf;
	ssize_t n;
	int err;

	if (align == UINT32_MAX)
		return p2z_emu_why(
			why, len, -EINVAL,
			"direct: the filesystem of the image does not support O_DIRECT");
	if (align > g->lba_bytes)
		return p2z_emu_why(
			why, len, -EINVAL,
			"direct: the image's %u-byte LBAs are smaller than the %u-byte blocks direct I/O needs here: use an image with %u-byte LBAs, or no direct",
			g->lba_bytes, align, align);

	if (posix_memalign(&buf, EMU_DIO_ALIGN, g->lba_bytes))
		return p2z_emu_why(why, len, -ENOMEM, "out of memory");
	do
		n = pread(dfd, buf, g->lba_bytes, (off_t)g->data_ofs);
	while (n < 0 && errno == EINTR);
	err = n < 0 ? errno : 0;
	free(buf);
	if (err == EINVAL)
		return p2z_emu_why(
			why, len, -EINVAL,
			"direct: the host refuses direct I/O of %u-byte blocks here (its disk's block is larger): use an image with 4096-byte LBAs, or no direct",
			g->lba_bytes);
	if (err)
		return p2z_emu_why(why, len, -err, "direct: test read: %s",
				   strerror(err));
	return 0;
}

/*
 * Open the image a second time, with O_DIRECT, for the zone data. The
 * descriptor must reach the file the first one holds (and locks): a path
 * renamed over meanwhile is refused.
 */
static int emu_open_direct(const char *path, int fd,
			   const struct p2z_emu_geom *g, bool rdonly, int *dfdp,
			   char *why, size_t len)
{
	struct stat a, b;
	int dfd, ret;

	dfd = open(path, (rdonly ? O_RDONLY : O_RDWR) | O_DIRECT | O_CLOEXEC);
	if (dfd < 0 && errno == EINVAL)
		return p2z_emu_why(
			why, len, -EINVAL,
			"direct: the filesystem of the image does not support O_DIRECT");
	if (dfd < 0)
		return p2z_emu_why(why, len, -errno,
				   "direct: opening the image again: %s",
				   strerror(errno));
	if (fstat(fd, &a) < 0 || fstat(dfd, &b) < 0)
		ret = p2z_emu_why(why, len, -errno, "direct: %s",
				  strerror(errno));
	else if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		ret = p2z_emu_why(
			why, len, -ESTALE,
			"direct: the image was replaced while opened");
	else
		ret = emu_probe_direct(dfd, g, why, len);
	if (ret) {
		close(dfd);
		return ret;
	}
	*dfdp = dfd;
	return 0;
}

static int emu_do_open(const char *path, unsigned int flags,
		       struct emu_dev **ep, char *why, size_t len)
{
	bool rdonly = flags & P2Z_DEV_RDONLY;
	enum p2z_emu_lock lock = P2Z_EMU_LOCK_EXCL;
	struct p2z_emu_geom g;
	int fd, dfd = -1, ret;
	void *map;

	/* Every user locks the image, read-only ones too: see emu_image.c. */
	if (rdonly)
		lock = flags & P2Z_DEV_PEEK ? P2Z_EMU_LOCK_NONE :
					      P2Z_EMU_LOCK_SHARED;
	ret = p2z_emu_image_load(path, rdonly, lock, &fd, &g, &map, why, len);
	if (ret)
		return ret;
	if (flags & P2Z_DEV_DIRECT) {
		ret = emu_open_direct(path, fd, &g, rdonly, &dfd, why, len);
		if (ret)
			goto out_unmap;
	}
	ret = emu_alloc(ep, &g, fd, map, rdonly);
	if (ret) {
		p2z_emu_why(why, len, ret, "out of memory");
		goto out_close_dfd;
	}
	if (dfd >= 0) {
		(*ep)->data_fd = dfd;
		(*ep)->direct = true;
		(*ep)->dev.info.buf_align = EMU_DIO_ALIGN;
	}
	if (!rdonly)
		emu_power_cycle(*ep);
	return 0;

out_close_dfd:
	if (dfd >= 0)
		close(dfd);
out_unmap:
	munmap(map, g.map_bytes);
	close(fd);
	return ret;
}

static int emu_open(const char *path, unsigned int flags, struct p2z_dev **devp)
{
	char why[P2Z_EMU_WHY_LEN];
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

/*
 * Closing the device is an orderly shutdown: a volatile cache is written
 * back first, as a drive does on a shutdown notification.
 */
static void emu_shutdown(struct emu_dev *e)
{
	int ret;

	if (e->vwc) {
		ret = emu_cache_flush(e);
		if (ret)
			p2z_log(LOG_ERR,
				"%s: writing back the volatile cache at close: %s",
				e->dev.path ? e->dev.path : "emu",
				strerror(-ret));
	}
	emu_free(e);
}

static void emu_close(struct p2z_dev *dev)
{
	emu_shutdown(P2Z_EMU(dev));
}

static int emu_probe(const char *path)
{
	char magic[P2Z_EMU_MAGIC_LEN];
	struct stat st;
	int fd, ok;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	ok = !fstat(fd, &st) && S_ISREG(st.st_mode) &&
	     pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	     !memcmp(magic, P2Z_EMU_MAGIC, P2Z_EMU_MAGIC_LEN);
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
	.fua = true,
};

/*
 * The image records the fault (emu_image.c); the device applies it. If
 * nobody is using the image, apply the condition change now by opening it
 * for writing and closing it again (a power cycle). Else its user will.
 */
int p2z_emu_set_fault(const char *path, uint64_t zidx, enum p2z_emu_fault fault)
{
	char why[P2Z_EMU_WHY_LEN];
	struct emu_dev *e;
	int ret;

	ret = p2z_emu_image_record_fault(path, zidx, fault, why, sizeof(why));
	if (!ret && fault != P2Z_EMU_FAULT_CLEAR &&
	    fault != P2Z_EMU_FAULT_FAIL_NEXT_IO) {
		ret = emu_do_open(path, 0, &e, why, sizeof(why));
		if (!ret)
			emu_shutdown(e);
		else if (ret == -EBUSY)
			ret = 0;
	}
	if (ret)
		p2z_log(LOG_ERR, "%s: %s", path, why);
	return ret;
}

int p2z_emu_pending_faults(struct p2z_dev *dev, uint64_t zidx)
{
	struct emu_dev *e;

	if (!dev || dev->ops != &p2z_dev_emu_ops)
		return -EINVAL;
	e = P2Z_EMU(dev);
	if (zidx >= e->g.nr_zones)
		return -EINVAL;
	return __atomic_load_n(&e->zt[zidx].fault, __ATOMIC_ACQUIRE) &
	       P2Z_EMU_PENDING_ALL;
}
