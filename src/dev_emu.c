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
 * Volatile write cache: see emu_cache.c. Direct I/O: see emu_host.c.
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

/* ---- zone table accessors (the table is shared with other processes) */

static uint64_t p2z_emu_zone_cap(const struct p2z_emu_dev *e, uint64_t zidx)
{
	return p2z_emu_zone_is_cnv(e, zidx) ? e->g.zone_lba : e->g.cap_lba;
}

static bool p2z_emu_cond_is_open(uint8_t cond)
{
	return cond == P2Z_ZONE_COND_IMP_OPEN || cond == P2Z_ZONE_COND_EXP_OPEN;
}

static bool p2z_emu_cond_is_active(uint8_t cond)
{
	return p2z_emu_cond_is_open(cond) || cond == P2Z_ZONE_COND_CLOSED;
}

/*
 * A zone's write pointer and condition, from one load. An active zone
 * written to its capacity is full: versions that stored the pointer and
 * the condition separately could be killed between the two, leaving such
 * a zone in an image (power cycles store the repair, p2z_emu_power_cycle()).
 */
static void p2z_emu_state(const struct p2z_emu_dev *e, uint64_t zidx,
			  uint64_t *wp, uint8_t *cond)
{
	uint64_t st;

	if (e->vwc && !p2z_emu_zone_is_cnv(e, zidx)) {
		st = __atomic_load_n(&e->zones[zidx].vstate, __ATOMIC_ACQUIRE);
		*wp = st & P2Z_EMU_STATE_WP_MASK;
		*cond = (uint8_t)((st >> P2Z_EMU_STATE_COND_SHIFT) & 0x7f);
	} else {
		p2z_emu_zent_load(&e->zt[zidx], wp, cond);
	}
	if (!p2z_emu_zone_is_cnv(e, zidx) && *wp == e->g.cap_lba &&
	    p2z_emu_cond_is_active(*cond))
		*cond = P2Z_ZONE_COND_FULL;
}

static uint8_t p2z_emu_cond(const struct p2z_emu_dev *e, uint64_t zidx)
{
	uint64_t wp;
	uint8_t cond;

	p2z_emu_state(e, zidx, &wp, &cond);
	return cond;
}

static uint64_t p2z_emu_wp(const struct p2z_emu_dev *e, uint64_t zidx)
{
	uint64_t wp;
	uint8_t cond;

	p2z_emu_state(e, zidx, &wp, &cond);
	return wp;
}

/*
 * Change a zone's write pointer and condition in one aligned 8-byte store
 * to the shared table (to the zone's volatile state word with a volatile
 * cache), and keep the open/active counts right, whatever the old
 * condition was. Caller holds res_lock.
 */
static void __p2z_emu_set_state(struct p2z_emu_dev *e, uint64_t zidx,
				uint64_t wp, uint8_t cond)
{
	uint8_t old = p2z_emu_cond(e, zidx);

	e->nr_open -= p2z_emu_cond_is_open(old);
	e->nr_active -= p2z_emu_cond_is_active(old);
	e->nr_open += p2z_emu_cond_is_open(cond);
	e->nr_active += p2z_emu_cond_is_active(cond);
	if (e->vwc && !p2z_emu_zone_is_cnv(e, zidx)) {
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
static void __p2z_emu_set_cond(struct p2z_emu_dev *e, uint64_t zidx,
			       uint8_t cond)
{
	__p2z_emu_set_state(e, zidx, p2z_emu_wp(e, zidx), cond);
}

/* ---- faults */

/* Take the fault bits in @mask off a zone's shared fault byte. */
static uint8_t p2z_emu_take_faults(struct p2z_emu_dev *e, uint64_t zidx,
				   uint8_t mask)
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
static void __p2z_emu_zone_fail(struct p2z_emu_dev *e, uint64_t zidx,
				uint8_t cond)
{
	uint8_t old = p2z_emu_cond(e, zidx);

	if (old != P2Z_ZONE_COND_READONLY && old != P2Z_ZONE_COND_OFFLINE)
		e->zt[zidx].saved_cond = old;
	__p2z_emu_set_cond(e, zidx, cond);
}

/*
 * Bring a read-only or offline zone back: full if it was full or is
 * written to capacity, empty if it holds no data, else closed, or full
 * (finished, its data still readable) when no active zone is left. Caller
 * holds res_lock.
 */
static void __p2z_emu_zone_online(struct p2z_emu_dev *e, uint64_t zidx)
{
	uint8_t cond = p2z_emu_cond(e, zidx);
	uint64_t wp = p2z_emu_wp(e, zidx);

	if (cond != P2Z_ZONE_COND_READONLY && cond != P2Z_ZONE_COND_OFFLINE)
		return;
	if (p2z_emu_zone_is_cnv(e, zidx))
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
	__p2z_emu_set_cond(e, zidx, cond);
}

/*
 * Apply the faults another process set on a zone. With @io, a pending
 * fail-next-io is consumed too, failing the caller's operation once.
 * Caller holds the zone lock.
 *
 * Return: -EIO for a consumed fail-next-io, else 0.
 */
static int __p2z_emu_zone_apply_faults(struct p2z_emu_dev *e, uint64_t zidx,
				       bool io)
{
	uint8_t f;

	if (e->rdonly || !__atomic_load_n(&e->zt[zidx].fault, __ATOMIC_RELAXED))
		return 0;
	f = p2z_emu_take_faults(
		e, zidx, io ? P2Z_EMU_PENDING_ALL : P2Z_EMU_PENDING_COND);
	if (f & P2Z_EMU_PENDING_COND) {
		pthread_mutex_lock(&e->res_lock);
		if (f & P2Z_EMU_PENDING_ONLINE)
			__p2z_emu_zone_online(e, zidx);
		if (f & P2Z_EMU_PENDING_READONLY)
			__p2z_emu_zone_fail(e, zidx, P2Z_ZONE_COND_READONLY);
		if (f & P2Z_EMU_PENDING_OFFLINE)
			__p2z_emu_zone_fail(e, zidx, P2Z_ZONE_COND_OFFLINE);
		pthread_mutex_unlock(&e->res_lock);
	}
	return (f & P2Z_EMU_PENDING_FAIL_IO) ? -EIO : 0;
}

/* For operations that need no zone lock unless a fault is pending. */
static int p2z_emu_zone_check_faults(struct p2z_emu_dev *e, uint64_t zidx,
				     bool io)
{
	struct p2z_emu_zone *z = &e->zones[zidx];
	int ret;

	if (e->rdonly || !__atomic_load_n(&e->zt[zidx].fault, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&z->lock);
	ret = __p2z_emu_zone_apply_faults(e, zidx, io);
	pthread_mutex_unlock(&z->lock);
	return ret;
}

/* ---- zone state machine (NVMe ZNS) */

/* The implicitly open zone opened longest ago, or UINT64_MAX. Caller holds
 * res_lock. A linear scan: only run when the open limit is reached. */
static uint64_t __p2z_emu_oldest_imp_open(struct p2z_emu_dev *e)
{
	uint64_t zidx, best = UINT64_MAX;

	for (zidx = e->g.nr_cnv; zidx < e->g.nr_zones; zidx++) {
		if (p2z_emu_cond(e, zidx) != P2Z_ZONE_COND_IMP_OPEN)
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
static uint16_t __p2z_emu_zone_open(struct p2z_emu_dev *e, uint64_t zidx,
				    uint8_t to)
{
	uint8_t cond = p2z_emu_cond(e, zidx);
	uint64_t victim;

	if (cond == P2Z_ZONE_COND_EMPTY && e->g.max_active &&
	    e->nr_active >= e->g.max_active)
		return P2Z_NVME_SC_ZONE_TOO_MANY_ACTIVE;
	if (e->g.max_open && e->nr_open >= e->g.max_open) {
		victim = __p2z_emu_oldest_imp_open(e);
		if (victim == UINT64_MAX)
			return P2Z_NVME_SC_ZONE_TOO_MANY_OPEN;
		__p2z_emu_set_cond(e, victim, P2Z_ZONE_COND_CLOSED);
	}
	__p2z_emu_set_cond(e, zidx, to);
	e->zones[zidx].open_seq = ++e->open_seq;
	return P2Z_NVME_SC_SUCCESS;
}

/* Caller holds the zone lock and res_lock. */
static uint16_t __p2z_emu_zone_transition(struct p2z_emu_dev *e, uint64_t zidx,
					  enum p2z_zone_op op)
{
	uint8_t cond = p2z_emu_cond(e, zidx);

	if (cond == P2Z_ZONE_COND_READONLY || cond == P2Z_ZONE_COND_OFFLINE)
		return P2Z_NVME_SC_ZONE_INVALID_TRANSITION;
	switch (op) {
	case P2Z_ZONE_OP_RESET:
		/* __p2z_emu_zone_reset() stores the empty state, after the data is
		 * gone. */
		return P2Z_NVME_SC_SUCCESS;
	case P2Z_ZONE_OP_OPEN:
		if (cond == P2Z_ZONE_COND_FULL)
			return P2Z_NVME_SC_ZONE_INVALID_TRANSITION;
		if (p2z_emu_cond_is_open(cond)) {
			__p2z_emu_set_cond(e, zidx, P2Z_ZONE_COND_EXP_OPEN);
			return P2Z_NVME_SC_SUCCESS;
		}
		return __p2z_emu_zone_open(e, zidx, P2Z_ZONE_COND_EXP_OPEN);
	case P2Z_ZONE_OP_CLOSE:
		/* An open zone without data becomes closed and stays active,
		 * as on ZNS; closing an empty or full zone is refused. */
		if (p2z_emu_cond_is_open(cond))
			__p2z_emu_set_cond(e, zidx, P2Z_ZONE_COND_CLOSED);
		else if (cond != P2Z_ZONE_COND_CLOSED)
			return P2Z_NVME_SC_ZONE_INVALID_TRANSITION;
		return P2Z_NVME_SC_SUCCESS;
	case P2Z_ZONE_OP_FINISH:
		/* The stored pointer stays where the data ends: reads return
		 * zeros from there to the capacity. */
		__p2z_emu_set_cond(e, zidx, P2Z_ZONE_COND_FULL);
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
static uint16_t __p2z_emu_prepare_write(struct p2z_emu_dev *e, uint64_t zidx,
					uint64_t nlb, bool append, uint64_t rel,
					uint64_t *wpp)
{
	uint8_t cond = p2z_emu_cond(e, zidx);
	uint64_t wp = p2z_emu_wp(e, zidx);

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
		return __p2z_emu_zone_open(e, zidx, P2Z_ZONE_COND_IMP_OPEN);
	return P2Z_NVME_SC_SUCCESS;
}

/*
 * Store the data of a sequential write at zone offset @wp: into the cache
 * of a volatile-cache device (straight to the image if no memory is left
 * for it), else into the image, with RWF_DSYNC for FUA. Caller holds the
 * zone lock.
 */
static int __p2z_emu_seq_store(struct p2z_emu_dev *e, uint64_t zidx,
			       const void *buf, uint64_t nlb, uint64_t wp,
			       bool fua)
{
	struct p2z_emu_zone *z = &e->zones[zidx];
	uint64_t ofs = p2z_emu_file_ofs(e, zidx, wp);
	int ret;

	if (e->vwc) {
		if (!__p2z_emu_cache_add(e, z, wp, buf, nlb))
			return 0;
		/* Data in the image past the stored pointer is consistent. */
		ret = __p2z_emu_cache_writeback(e, zidx);
		if (ret < 0)
			return ret;
		z->cstart = wp + nlb;
		fua = false;
	}
	ret = p2z_emu_data_write(e, buf, nlb * e->g.lba_bytes, ofs,
				 fua ? RWF_DSYNC : 0);
	return ret ? p2z_emu_host_error(e, "write", ofs, ret) : 0;
}

/*
 * Write to a sequential zone: data first, then the write pointer. With
 * @fua the write and the zone's earlier ones are durable on return. @wpp
 * gets the zone offset written at. Caller holds the zone lock.
 */
static int __p2z_emu_seq_write(struct p2z_emu_dev *e, uint64_t zidx,
			       const void *buf, uint64_t nlb, bool append,
			       uint64_t rel, bool fua, uint64_t *wpp)
{
	uint64_t wp = 0;
	uint16_t status;
	int ret;

	pthread_mutex_lock(&e->res_lock);
	status = __p2z_emu_prepare_write(e, zidx, nlb, append, rel, &wp);
	pthread_mutex_unlock(&e->res_lock);
	if (status)
		return p2z_dev_nvme_status_errno(status);
	ret = __p2z_emu_seq_store(e, zidx, buf, nlb, wp, fua);
	if (ret)
		return ret;
	/* Crash tests widen the window between data and write pointer, where
	 * a killed daemon leaves data past the write pointer on the medium. */
	if (e->write_delay_us)
		usleep(e->write_delay_us);

	/* Pointer and condition in one store: filling the zone makes it
	 * full at once, never an active zone at capacity. */
	pthread_mutex_lock(&e->res_lock);
	__p2z_emu_set_state(e, zidx, wp + nlb,
			    wp + nlb == e->g.cap_lba ? P2Z_ZONE_COND_FULL :
						       p2z_emu_cond(e, zidx));
	pthread_mutex_unlock(&e->res_lock);
	*wpp = wp;
	if (e->vwc && (fua || __atomic_load_n(&e->cache_bytes,
					      __ATOMIC_RELAXED) > e->cache_max))
		return __p2z_emu_zone_persist(e, zidx, fua);
	return fua ? p2z_emu_sync_zent(e, zidx) : 0;
}

/* ---- device operations */

/*
 * Common checks of a read or write: LBA alignment, transfer size, device
 * range. Fills the zone, the LBA offset in it and the number of LBAs.
 */
static int p2z_emu_check_io(const struct p2z_emu_dev *e, size_t len,
			    uint64_t ofs, uint64_t *zidx, uint64_t *rel,
			    uint64_t *nlb)
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

int p2z_emu_read_plan(struct p2z_emu_dev *e, void *buf, size_t len,
		      uint64_t ofs, uint64_t *fofs, size_t *fbytes)
{
	uint64_t zidx, rel, nlb, end, data = 0;
	bool cached;
	int ret;

	*fofs = 0;
	*fbytes = 0;
	if (!len) /* never from the dispatcher; as nvme and zbd */
		return -EINVAL;
	ret = p2z_emu_check_io(e, len, ofs, &zidx, &rel, &nlb);
	if (ret)
		return ret;
	cached = e->vwc;
	if (nlb > e->g.zone_lba - rel)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_ZONE_BOUNDARY);
	ret = p2z_emu_zone_check_faults(e, zidx, true);
	if (ret)
		return ret;
	if (p2z_emu_cond(e, zidx) == P2Z_ZONE_COND_OFFLINE)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_ZONE_OFFLINE);

	/* Sequential zones hold data up to the write pointer only: zeros
	 * after it, whatever an interrupted write left in the file. A cache
	 * changes under the zone lock. */
	if (cached)
		pthread_mutex_lock(&e->zones[zidx].lock);
	end = p2z_emu_zone_is_cnv(e, zidx) ? e->g.zone_lba :
					     p2z_emu_wp(e, zidx);
	if (end > rel)
		data = end - rel < nlb ? end - rel : nlb;
	if (data && cached && p2z_emu_zone_is_cnv(e, zidx)) {
		ret = __p2z_emu_cnv_cache_read(e, zidx, buf, rel, data);
	} else if (data && cached) {
		ret = __p2z_emu_cache_read(e, zidx, buf, rel, data);
	} else if (data) {
		*fofs = p2z_emu_file_ofs(e, zidx, rel);
		*fbytes = data * e->g.lba_bytes;
	}
	if (cached)
		pthread_mutex_unlock(&e->zones[zidx].lock);
	if (ret)
		return ret;
	memset((char *)buf + data * e->g.lba_bytes, 0,
	       (nlb - data) * e->g.lba_bytes);
	return 0;
}

static ssize_t p2z_emu_pread(struct p2z_dev *dev, void *buf, size_t len,
			     uint64_t ofs)
{
	struct p2z_emu_dev *e = p2z_emu_of(dev);
	uint64_t fofs;
	size_t fbytes;
	int ret;

	ret = p2z_emu_read_plan(e, buf, len, ofs, &fofs, &fbytes);
	if (!ret && fbytes) {
		ret = p2z_emu_data_read(e, buf, fbytes, fofs);
		if (ret)
			ret = p2z_emu_host_error(e, "read", fofs, ret);
	}
	return ret ? ret : (ssize_t)len;
}

/* Without a volatile cache, FUA is RWF_DSYNC. */
static ssize_t p2z_emu_cnv_write(struct p2z_emu_dev *e, uint64_t zidx,
				 uint64_t rel, uint64_t nlb, const void *buf,
				 bool fua)
{
	uint64_t fofs = p2z_emu_file_ofs(e, zidx, rel);
	uint8_t cond;
	int ret;

	ret = p2z_emu_zone_check_faults(e, zidx, true);
	if (ret)
		return ret;
	cond = p2z_emu_cond(e, zidx);
	if (cond == P2Z_ZONE_COND_READONLY)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_ZONE_READ_ONLY);
	if (cond == P2Z_ZONE_COND_OFFLINE)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_ZONE_OFFLINE);
	if (nlb > e->g.zone_lba - rel)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_ZONE_BOUNDARY);
	if (e->vwc) {
		ret = p2z_emu_cnv_cache_write(e, zidx, rel, nlb, buf, fua);
		return ret ? ret : (ssize_t)(nlb * e->g.lba_bytes);
	}
	ret = p2z_emu_data_write(e, buf, nlb * e->g.lba_bytes, fofs,
				 fua ? RWF_DSYNC : 0);
	if (ret)
		return p2z_emu_host_error(e, "write", fofs, ret);
	return (ssize_t)(nlb * e->g.lba_bytes);
}

static ssize_t p2z_emu_pwrite(struct p2z_dev *dev, const void *buf, size_t len,
			      uint64_t ofs, unsigned int flags)
{
	struct p2z_emu_dev *e = p2z_emu_of(dev);
	bool fua = flags & P2Z_IO_FUA;
	uint64_t zidx, rel, nlb, wp;
	struct p2z_emu_zone *z;
	int ret;

	if (e->rdonly)
		return -EROFS;
	if (!len) /* never from the dispatcher; as nvme and zbd */
		return -EINVAL;
	ret = p2z_emu_check_io(e, len, ofs, &zidx, &rel, &nlb);
	if (ret)
		return ret;
	if (p2z_emu_zone_is_cnv(e, zidx))
		return p2z_emu_cnv_write(e, zidx, rel, nlb, buf, fua);
	z = &e->zones[zidx];
	pthread_mutex_lock(&z->lock);
	ret = __p2z_emu_zone_apply_faults(e, zidx, true);
	if (!ret)
		ret = __p2z_emu_seq_write(e, zidx, buf, nlb, false, rel, fua,
					  &wp);
	pthread_mutex_unlock(&z->lock);
	return ret ? ret : (ssize_t)len;
}

static ssize_t p2z_emu_append(struct p2z_dev *dev, uint64_t zidx,
			      const void *buf, size_t len, uint64_t *lba,
			      unsigned int flags)
{
	struct p2z_emu_dev *e = p2z_emu_of(dev);
	bool fua = flags & P2Z_IO_FUA;
	struct p2z_emu_zone *z;
	uint64_t wp;
	int ret;

	if (e->rdonly)
		return -EROFS;
	if (zidx >= e->g.nr_zones || p2z_emu_zone_is_cnv(e, zidx) ||
	    len % e->g.lba_bytes || len > e->g.max_append_bytes)
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_INVALID_FIELD);
	if (!len) /* never from the dispatcher; as nvme and zbd */
		return -EINVAL;
	z = &e->zones[zidx];
	pthread_mutex_lock(&z->lock);
	ret = __p2z_emu_zone_apply_faults(e, zidx, true);
	if (!ret)
		ret = __p2z_emu_seq_write(e, zidx, buf, len / e->g.lba_bytes,
					  true, 0, fua, &wp);
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
static int __p2z_emu_zone_reset(struct p2z_emu_dev *e, uint64_t zidx)
{
	struct p2z_emu_zone *z = &e->zones[zidx];
	uint64_t fofs = p2z_emu_file_ofs(e, zidx, 0);
	int ret;

	if (e->vwc) {
		pthread_mutex_lock(&e->res_lock);
		z->has_snap = false; /* a flush must not store it now */
		pthread_mutex_unlock(&e->res_lock);
		__p2z_emu_cache_drop(e, z);
	}
	ret = p2z_emu_zero_range(e->fd, fofs, e->g.zone_bytes);
	if (ret)
		return p2z_emu_host_error(e, "zeroing the reset zone", fofs,
					  ret);
	ret = p2z_emu_fdatasync(e);
	if (ret)
		return ret;
	pthread_mutex_lock(&e->res_lock);
	/* One store: never a full zone reading zeros, nor an empty one
	 * with data. */
	__p2z_emu_set_state(e, zidx, 0, P2Z_ZONE_COND_EMPTY);
	if (e->vwc) {
		__p2z_emu_store_state(e, zidx, z->vstate);
		__atomic_store_n(&z->dirty, false, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&e->res_lock);
	return 0;
}

static int p2z_emu_zone_mgmt(struct p2z_dev *dev, uint64_t zidx,
			     enum p2z_zone_op op)
{
	struct p2z_emu_dev *e = p2z_emu_of(dev);
	struct p2z_emu_zone *z;
	uint16_t status;
	int ret;

	if (e->rdonly)
		return -EROFS;
	/* Conventional zones have no zone operations (ZBC: invalid field). */
	if (zidx >= e->g.nr_zones || p2z_emu_zone_is_cnv(e, zidx))
		return p2z_dev_nvme_status_errno(P2Z_NVME_SC_INVALID_FIELD);
	z = &e->zones[zidx];
	pthread_mutex_lock(&z->lock);
	ret = __p2z_emu_zone_apply_faults(e, zidx, true);
	if (!ret) {
		pthread_mutex_lock(&e->res_lock);
		status = __p2z_emu_zone_transition(e, zidx, op);
		pthread_mutex_unlock(&e->res_lock);
		ret = p2z_dev_nvme_status_errno(status);
	}
	if (!ret && op == P2Z_ZONE_OP_RESET)
		ret = __p2z_emu_zone_reset(e, zidx);
	pthread_mutex_unlock(&z->lock);
	return ret;
}

static void p2z_emu_fill_zone_info(struct p2z_emu_dev *e, uint64_t zidx,
				   struct p2z_zone_info *zi)
{
	uint64_t start = zidx * e->g.zone_lba;
	uint64_t cap = p2z_emu_zone_cap(e, zidx);

	zi->start_lba = start;
	zi->cap_lba = cap;
	zi->cond = p2z_emu_cond(e, zidx);
	if (p2z_emu_zone_is_cnv(e, zidx)) {
		zi->type = P2Z_ZONE_TYPE_CNV;
		zi->wp_lba = start;
	} else {
		zi->type = P2Z_ZONE_TYPE_SEQ;
		zi->wp_lba = start + (zi->cond == P2Z_ZONE_COND_FULL ?
					      cap :
					      p2z_emu_wp(e, zidx));
	}
}

static int p2z_emu_report_zones(struct p2z_dev *dev, uint64_t zidx,
				unsigned int nr, struct p2z_zone_info *zi)
{
	struct p2z_emu_dev *e = p2z_emu_of(dev);
	unsigned int i;

	if (zidx >= e->g.nr_zones)
		return 0;
	if (nr > e->g.nr_zones - zidx)
		nr = (unsigned int)(e->g.nr_zones - zidx);
	for (i = 0; i < nr; i++)
		p2z_emu_zone_check_faults(e, zidx + i, false);
	/* res_lock: each zone's condition and pointer are one snapshot. */
	pthread_mutex_lock(&e->res_lock);
	for (i = 0; i < nr; i++)
		p2z_emu_fill_zone_info(e, zidx + i, &zi[i]);
	pthread_mutex_unlock(&e->res_lock);
	return (int)nr;
}

static int p2z_emu_flush(struct p2z_dev *dev)
{
	struct p2z_emu_dev *e = p2z_emu_of(dev);

	if (e->rdonly)
		return 0;
	return e->vwc ? p2z_emu_cache_flush(e) : p2z_emu_fdatasync(e);
}

/* ---- open and close */

static void p2z_emu_free(struct p2z_emu_dev *e)
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

static int p2z_emu_alloc(struct p2z_emu_dev **ep, const struct p2z_emu_geom *g,
			 int fd, void *map, bool rdonly)
{
	const char *delay = getenv("P2Z_EMU_WRITE_DELAY_US");
	const char *cmax = getenv("P2Z_EMU_CACHE_BYTES");
	struct p2z_emu_dev *e;
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
	e->cache_max = cmax ? strtoull(cmax, NULL, 10) :
			      P2Z_EMU_CACHE_MAX_BYTES;
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
static void p2z_emu_power_cycle(struct p2z_emu_dev *e)
{
	uint64_t zidx, wp;
	uint8_t stored, cond, to;

	for (zidx = e->g.nr_cnv; zidx < e->g.nr_zones; zidx++) {
		p2z_emu_zent_load(&e->zt[zidx], &wp, &stored);
		cond = stored;
		if (wp == e->g.cap_lba && p2z_emu_cond_is_active(cond))
			cond = P2Z_ZONE_COND_FULL;
		to = cond;
		if (p2z_emu_cond_is_active(cond) && !wp)
			to = P2Z_ZONE_COND_EMPTY;
		else if (p2z_emu_cond_is_open(cond))
			to = P2Z_ZONE_COND_CLOSED;
		if (to != stored)
			__atomic_store_n(&e->zt[zidx].state,
					 htole64(p2z_emu_state_pack(wp, to)),
					 __ATOMIC_RELEASE);
		e->nr_active += to == P2Z_ZONE_COND_CLOSED;
		e->zones[zidx].vstate = p2z_emu_state_pack(wp, to);
	}
	for (zidx = 0; zidx < e->g.nr_zones; zidx++)
		p2z_emu_zone_check_faults(e, zidx, false);
}

static int p2z_emu_do_open(const char *path, unsigned int flags,
			   struct p2z_emu_dev **ep, char *why, size_t len)
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
		ret = p2z_emu_open_direct(path, fd, &g, rdonly, &dfd, why, len);
		if (ret)
			goto out_unmap;
	}
	ret = p2z_emu_alloc(ep, &g, fd, map, rdonly);
	if (ret) {
		p2z_emu_why(why, len, ret, "out of memory");
		goto out_close_dfd;
	}
	if (dfd >= 0) {
		(*ep)->data_fd = dfd;
		(*ep)->direct = true;
		(*ep)->dev.info.buf_align = P2Z_EMU_DIO_ALIGN;
	}
	if (!rdonly)
		p2z_emu_power_cycle(*ep);
	return 0;

out_close_dfd:
	if (dfd >= 0)
		close(dfd);
out_unmap:
	munmap(map, g.map_bytes);
	close(fd);
	return ret;
}

static int p2z_emu_open(const char *path, unsigned int flags,
			struct p2z_dev **devp)
{
	char why[P2Z_EMU_WHY_LEN];
	struct p2z_emu_dev *e;
	int ret;

	ret = p2z_emu_do_open(path, flags, &e, why, sizeof(why));
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
static void p2z_emu_shutdown(struct p2z_emu_dev *e)
{
	int ret;

	if (e->vwc) {
		ret = p2z_emu_cache_flush(e);
		if (ret)
			p2z_log(LOG_ERR,
				"%s: writing back the volatile cache at close: %s",
				e->dev.path ? e->dev.path : "emu",
				strerror(-ret));
	}
	p2z_emu_free(e);
}

static void p2z_emu_close(struct p2z_dev *dev)
{
	p2z_emu_shutdown(p2z_emu_of(dev));
}

static int p2z_emu_probe(const char *path)
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
	.probe = p2z_emu_probe,
	.open = p2z_emu_open,
	.close = p2z_emu_close,
	.report_zones = p2z_emu_report_zones,
	.zone_mgmt = p2z_emu_zone_mgmt,
	.pread = p2z_emu_pread,
	.pwrite = p2z_emu_pwrite,
	.append = p2z_emu_append,
	.flush = p2z_emu_flush,
	.queue_init = p2z_emu_queue_init,
	.queue_exit = p2z_emu_queue_exit,
	.submit = p2z_emu_submit,
	.reap = p2z_emu_reap,
	.queue_hold_fd = p2z_emu_queue_hold_fd,
	.queue_init_on = p2z_emu_queue_init_on,
	.complete = p2z_emu_complete,
	.queue_qring = p2z_emu_queue_qring,
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
	struct p2z_emu_dev *e;
	int ret;

	ret = p2z_emu_image_record_fault(path, zidx, fault, why, sizeof(why));
	if (!ret && fault != P2Z_EMU_FAULT_CLEAR &&
	    fault != P2Z_EMU_FAULT_FAIL_NEXT_IO) {
		ret = p2z_emu_do_open(path, 0, &e, why, sizeof(why));
		if (!ret)
			p2z_emu_shutdown(e);
		else if (ret == -EBUSY)
			ret = 0;
	}
	if (ret)
		p2z_log(LOG_ERR, "%s: %s", path, why);
	return ret;
}

int p2z_emu_pending_faults(struct p2z_dev *dev, uint64_t zidx)
{
	struct p2z_emu_dev *e;

	if (!dev || dev->ops != &p2z_dev_emu_ops)
		return -EINVAL;
	e = p2z_emu_of(dev);
	if (zidx >= e->g.nr_zones)
		return -EINVAL;
	return __atomic_load_n(&e->zt[zidx].fault, __ATOMIC_ACQUIRE) &
	       P2Z_EMU_PENDING_ALL;
}
