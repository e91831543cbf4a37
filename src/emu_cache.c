// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The emu device's volatile write cache (dev_emu.c runs the device; the
 * state both share is in emu_priv.h).
 *
 * Volatile write cache (images created with --volatile-cache; the device
 * reports info.volatile_cache, as NVMe's VWC bit): the process using the
 * device is the drive's cache, so that SIGKILL of it is a power cut. The
 * zone table holds the persisted state; each sequential zone has its
 * state word in memory (p2z_emu_zone.vstate) and its written data in a buffer
 * (p2z_emu_zone.cbuf: the LBAs from the persisted data's end to the write
 * pointer); each conventional zone a log of its writes (struct
 * p2z_emu_cnv_ext), written back in order, read over the image's data. What
 * is volatile, lost at a power cut:
 *   - writes and appends: data, write pointer advance, implicit open,
 *     and the full condition of a write that fills the zone;
 *   - writes to conventional zones;
 *   - open, close and finish (condition changes), and the conditions
 *     faults set on sequential zones (read-only, offline, online).
 * What is not: a reset (see dev_emu.c; the zone's cache dropped first; it is
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
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "emu_priv.h"

/* Forget a zone's cached data. Caller holds the zone lock. */
void __p2z_emu_cache_drop(struct p2z_emu_dev *e, struct p2z_emu_zone *z)
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
static int __p2z_emu_cache_reserve(struct p2z_emu_zone *z, size_t need)
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

int __p2z_emu_cache_add(struct p2z_emu_dev *e, struct p2z_emu_zone *z,
			uint64_t wp, const void *buf, uint64_t nlb)
{
	size_t len = nlb * e->g.lba_bytes, have;

	if (!z->cnlb)
		z->cstart = wp;
	have = z->cnlb * e->g.lba_bytes;
	if (__p2z_emu_cache_reserve(z, have + len))
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
static int __p2z_emu_cnv_cache_add(struct p2z_emu_dev *e,
				   struct p2z_emu_zone *z, uint64_t rel,
				   const void *buf, uint64_t nlb)
{
	struct p2z_emu_cnv_ext x = { .rel = rel, .nlb = nlb };
	size_t len = nlb * e->g.lba_bytes;
	char *p;

	if (__p2z_emu_cache_reserve(z, z->cused + sizeof(x) + len))
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
static int __p2z_emu_cnv_writeback(struct p2z_emu_dev *e, uint64_t zidx)
{
	struct p2z_emu_zone *z = &e->zones[zidx];
	size_t at = 0, len;
	struct p2z_emu_cnv_ext x;
	uint64_t ofs;
	int ret;

	if (!z->cused)
		return 0;
	while (at < z->cused) {
		memcpy(&x, (char *)z->cbuf + at, sizeof(x));
		len = x.nlb * e->g.lba_bytes;
		ofs = p2z_emu_file_ofs(e, zidx, x.rel);
		ret = p2z_emu_data_write(e, (char *)z->cbuf + at + sizeof(x),
					 len, ofs, 0);
		if (ret) /* the log stays: writing it again is harmless */
			return p2z_emu_host_error(e, "write back", ofs, ret);
		at += sizeof(x) + len;
	}
	__p2z_emu_cache_drop(e, z);
	return 1;
}

/* LBAs [rel, rel + nlb) of a conventional zone: the image's, then each
 * logged write over them, oldest first. */
int __p2z_emu_cnv_cache_read(struct p2z_emu_dev *e, uint64_t zidx, void *buf,
			     uint64_t rel, uint64_t nlb)
{
	struct p2z_emu_zone *z = &e->zones[zidx];
	uint64_t lba = e->g.lba_bytes, ofs = p2z_emu_file_ofs(e, zidx, rel);
	uint64_t from, to;
	struct p2z_emu_cnv_ext x;
	size_t at = 0;
	int ret;

	ret = p2z_emu_data_read(e, buf, nlb * lba, ofs);
	if (ret)
		return p2z_emu_host_error(e, "read", ofs, ret);
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

int __p2z_emu_cache_writeback(struct p2z_emu_dev *e, uint64_t zidx)
{
	struct p2z_emu_zone *z = &e->zones[zidx];
	uint64_t ofs = p2z_emu_file_ofs(e, zidx, z->cstart);
	int ret;

	if (p2z_emu_zone_is_cnv(e, zidx))
		return __p2z_emu_cnv_writeback(e, zidx);
	if (!z->cnlb)
		return 0;
	ret = p2z_emu_data_write(e, z->cbuf, z->cnlb * e->g.lba_bytes, ofs, 0);
	if (ret)
		return p2z_emu_host_error(e, "write back", ofs, ret);
	z->cstart += z->cnlb;
	__p2z_emu_cache_drop(e, z);
	return 1;
}

/* Store a state word in the zone table. Caller holds res_lock. */
void __p2z_emu_store_state(struct p2z_emu_dev *e, uint64_t zidx, uint64_t st)
{
	__atomic_store_n(&e->zt[zidx].state, htole64(st), __ATOMIC_RELEASE);
}

/*
 * Persist one zone: its cached data, fdatasync(), then its state (never a
 * stored write pointer over data that is not in the image), and with
 * @sync a second fdatasync() that makes the state durable too (FUA). A
 * destage (@sync false) only keeps the order. Caller holds the zone lock.
 */
int __p2z_emu_zone_persist(struct p2z_emu_dev *e, uint64_t zidx, bool sync)
{
	struct p2z_emu_zone *z = &e->zones[zidx];
	int ret;

	ret = __p2z_emu_cache_writeback(e, zidx);
	if (ret > 0)
		ret = p2z_emu_fdatasync(e);
	if (ret)
		return ret;
	if (p2z_emu_zone_is_cnv(e, zidx)) { /* its state is in the table */
		__atomic_store_n(&z->dirty, false, __ATOMIC_RELEASE);
		return 0;
	}
	pthread_mutex_lock(&e->res_lock);
	__p2z_emu_store_state(e, zidx, z->vstate);
	__atomic_store_n(&z->dirty, false, __ATOMIC_RELEASE);
	z->has_snap = false; /* older than what is stored now */
	pthread_mutex_unlock(&e->res_lock);
	return sync ? p2z_emu_fdatasync(e) : 0;
}

/*
 * Flush a volatile cache: every zone's data to the image, one
 * fdatasync(), every zone's state as it was when its data was written
 * (writes that come meanwhile stay cached), a second fdatasync().
 */
int p2z_emu_cache_flush(struct p2z_emu_dev *e)
{
	uint64_t zidx, nr = 0;
	struct p2z_emu_zone *z;
	int ret = 0, err;

	for (zidx = 0; zidx < e->g.nr_zones; zidx++) {
		z = &e->zones[zidx];
		if (!__atomic_load_n(&z->dirty, __ATOMIC_ACQUIRE))
			continue;
		pthread_mutex_lock(&z->lock);
		err = __p2z_emu_cache_writeback(e, zidx);
		if (err >= 0 && p2z_emu_zone_is_cnv(e, zidx)) {
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
	err = p2z_emu_fdatasync(e);
	if (ret || err || !nr)
		return ret ? ret : err;
	pthread_mutex_lock(&e->res_lock);
	for (zidx = e->g.nr_cnv; zidx < e->g.nr_zones; zidx++) {
		z = &e->zones[zidx];
		if (z->has_snap) /* a reset or a persist since clears it */
			__p2z_emu_store_state(e, zidx, z->snap);
		z->has_snap = false;
	}
	pthread_mutex_unlock(&e->res_lock);
	return p2z_emu_fdatasync(e);
}

/*
 * Read LBAs [rel, rel + nlb) of a sequential zone below its write pointer,
 * from the image and the cache. Caller holds the zone lock.
 */
int __p2z_emu_cache_read(struct p2z_emu_dev *e, uint64_t zidx, void *buf,
			 uint64_t rel, uint64_t nlb)
{
	struct p2z_emu_zone *z = &e->zones[zidx];
	uint64_t fend = z->cnlb ? z->cstart : rel + nlb;
	uint64_t nfile = fend > rel ? (fend - rel < nlb ? fend - rel : nlb) : 0;
	uint64_t lba = e->g.lba_bytes, ofs;
	int ret;

	if (nfile) {
		ofs = p2z_emu_file_ofs(e, zidx, rel);
		ret = p2z_emu_data_read(e, buf, nfile * lba, ofs);
		if (ret)
			return p2z_emu_host_error(e, "read", ofs, ret);
	}
	if (nfile < nlb)
		memcpy((char *)buf + nfile * lba,
		       (char *)z->cbuf + (rel + nfile - z->cstart) * lba,
		       (nlb - nfile) * lba);
	return 0;
}

/*
 * A write to a conventional zone with a volatile cache: logged, the zone
 * persisted for FUA or destaged past the cache's bound; written back and
 * then through if no memory is left for the log.
 */
int p2z_emu_cnv_cache_write(struct p2z_emu_dev *e, uint64_t zidx, uint64_t rel,
			    uint64_t nlb, const void *buf, bool fua)
{
	struct p2z_emu_zone *z = &e->zones[zidx];
	uint64_t fofs = p2z_emu_file_ofs(e, zidx, rel);
	int ret;

	pthread_mutex_lock(&z->lock);
	ret = __p2z_emu_cnv_cache_add(e, z, rel, buf, nlb);
	if (!ret) {
		__atomic_store_n(&z->dirty, true, __ATOMIC_RELEASE);
		if (fua || __atomic_load_n(&e->cache_bytes, __ATOMIC_RELAXED) >
				   e->cache_max)
			ret = __p2z_emu_zone_persist(e, zidx, fua);
	} else {
		/* No memory for the log: the log, then this write, in order. */
		ret = __p2z_emu_cache_writeback(e, zidx);
		if (ret >= 0) {
			ret = p2z_emu_data_write(e, buf, nlb * e->g.lba_bytes,
						 fofs, fua ? RWF_DSYNC : 0);
			if (ret)
				ret = p2z_emu_host_error(e, "write", fofs, ret);
		}
	}
	pthread_mutex_unlock(&z->lock);
	return ret;
}
