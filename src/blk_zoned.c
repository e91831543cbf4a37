// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * po2zfs-blk's zoned target (as ublksrv's targets/): the requests of the
 * po2 zoned block device served through p2z_dev_*(), and the write pointer
 * cache they keep.
 *
 * Reads return the device's data up to the write pointer and zeros after
 * it, up to the po2 zone end: the server keeps each zone's write pointer
 * (from the report at start, then from its own completed writes, appends,
 * resets and finishes; from a new report of the zone after a failure), so
 * the device is never asked for anything past a write pointer (dev.h).
 * Writes touching the gap between capacity and the po2 zone end fail with
 * EIO, as dm-po2zoned's do.
 *
 * Every function returns what COMMIT carries: bytes, 0 or -errno.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blk_priv.h"
#include "po2zfs/log.h"

/* Zones: the server's write pointers. */

static uint64_t p2z_blk_readable(const struct p2z_blk_zone *z)
{
	if (z->type == P2Z_ZONE_TYPE_CNV)
		return z->cap_lba;
	return __atomic_load_n(&z->wp_ofs, __ATOMIC_ACQUIRE);
}

static void p2z_blk_set_wp(struct p2z_blk_zone *z, uint64_t wp_ofs)
{
	__atomic_store_n(&z->wp_ofs, wp_ofs, __ATOMIC_RELEASE);
}

/*
 * After a completed write or append: writes and appends to one zone run on
 * several queues and finish in any order, so the write pointer only moves
 * forward (p2z_blk_wp_advance(): one that finished later but landed
 * earlier must not pull it back over data another one acknowledged).
 */
static void p2z_blk_advance_wp(struct p2z_blk_zone *z, uint64_t wp_ofs)
{
	uint64_t cur = __atomic_load_n(&z->wp_ofs, __ATOMIC_RELAXED), next;

	do {
		next = p2z_blk_wp_advance(cur, wp_ofs);
		if (next == cur)
			return;
	} while (!__atomic_compare_exchange_n(&z->wp_ofs, &cur, next, true,
					      __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

static void p2z_blk_zone_load(struct p2z_blk_zone *z,
			      const struct p2z_zone_info *zi)
{
	z->cap_lba = zi->cap_lba;
	z->type = zi->type;
	p2z_blk_set_wp(z, p2z_blk_wp_ofs(zi));
}

/*
 * After a failed write or zone operation: the device says where it is.
 * Only forward (but to 0 for a zone gone offline): an append on another
 * queue may have completed, and moved the cached pointer past what this
 * report saw, between the report and now.
 */
static void p2z_blk_zone_refresh(struct p2z_blk *blk, uint64_t zidx)
{
	struct p2z_blk_zone *z = &blk->zones[zidx];
	struct p2z_zone_info zi;

	if (p2z_dev_report_zones(blk->dev, zidx, 1, &zi) != 1 ||
	    zi.start_lba != p2z_geom_zone_start(&blk->g, zidx))
		return;
	if (zi.cond == P2Z_ZONE_COND_OFFLINE)
		p2z_blk_set_wp(z, 0);
	else
		p2z_blk_advance_wp(z, p2z_blk_wp_ofs(&zi));
}

static int p2z_blk_zone_load_fn(const struct p2z_zone_info *zi, uint64_t zidx,
				void *arg)
{
	struct p2z_blk *blk = arg;

	p2z_blk_zone_load(&blk->zones[zidx], zi);
	return 0;
}

/* Load every zone's write pointer (a failed report is logged by the walk). */
int p2z_blk_zones_init(struct p2z_blk *blk)
{
	blk->zones = calloc(blk->g.nr_zones, sizeof(*blk->zones));
	if (!blk->zones)
		return -ENOMEM;
	return p2z_dev_zone_walk(blk->dev, 0, blk->g.nr_zones,
				 p2z_blk_zone_load_fn, blk);
}

/* Requests. Each returns the result COMMIT carries: bytes or -errno. */

static uint64_t p2z_blk_buf_ofs(unsigned int qid, unsigned int tag)
{
	return UBLKSRV_IO_BUF_OFFSET + ((uint64_t)qid << UBLK_QID_OFF) +
	       ((uint64_t)tag << UBLK_TAG_OFF);
}

static int p2z_blk_read(struct p2z_blk *blk, const struct ublksrv_io_desc *iod,
			char *buf, uint64_t buf_ofs)
{
	uint64_t ofs = iod->start_sector << P2Z_BLK_SECTOR_SHIFT;
	uint64_t len = (uint64_t)iod->nr_sectors << P2Z_BLK_SECTOR_SHIFT;
	uint64_t done = 0, zidx, n, native;
	struct p2z_geom_piece pc;
	struct p2z_blk_zone *z;
	ssize_t ret;

	if (len > blk->buf_bytes)
		return -EIO;
	while (done < len) {
		if (p2z_geom_po2_zone_of_byte(&blk->g, ofs + done, &zidx))
			return -EIO;
		z = &blk->zones[zidx];
		if (p2z_geom_po2_piece(&blk->g, ofs + done, len - done,
				       z->cap_lba, &pc))
			return -EIO;
		n = p2z_blk_read_len(&pc, p2z_blk_readable(z)
						  << blk->g.lba_shift);
		if (n) {
			native = (p2z_geom_zone_start(&blk->g, zidx)
				  << blk->g.lba_shift) +
				 pc.zone_ofs;
			ret = p2z_dev_pread(blk->dev, buf + done, n, native);
			if (ret < 0)
				return p2z_blk_errno((int)ret);
		}
		memset(buf + done + n, 0, pc.len - n);
		done += pc.len;
	}
	ret = pwrite(blk->cdev_fd, buf, len, buf_ofs);
	if (ret < 0)
		return -errno;
	return ret == (ssize_t)len ? (int)len : -EIO;
}

static int p2z_blk_write(struct p2z_blk *blk, const struct ublksrv_io_desc *iod,
			 char *buf, uint64_t buf_ofs)
{
	struct p2z_blk_target t;
	struct p2z_blk_zone *z;
	uint64_t zidx, native;
	ssize_t ret;

	if (p2z_blk_zone_of(&blk->g, iod->start_sector, false, &zidx))
		return -EIO;
	z = &blk->zones[zidx];
	ret = p2z_blk_write_target(&blk->g, iod->start_sector, iod->nr_sectors,
				   z->cap_lba, &t);
	if (ret || t.len > blk->buf_bytes)
		return -EIO;
	ret = pread(blk->cdev_fd, buf, t.len, buf_ofs);
	if (ret != (ssize_t)t.len)
		return ret < 0 ? -errno : -EIO;
	native = (p2z_geom_zone_start(&blk->g, zidx) << blk->g.lba_shift) +
		 t.zone_ofs;
	ret = p2z_dev_pwrite(blk->dev, buf, t.len, native,
			     p2z_blk_io_flags(iod->op_flags));
	if (ret != (ssize_t)t.len) {
		p2z_blk_zone_refresh(blk, zidx);
		return p2z_blk_errno(ret < 0 ? (int)ret : -EIO);
	}
	if (z->type != P2Z_ZONE_TYPE_CNV)
		p2z_blk_advance_wp(z, (t.zone_ofs + t.len) >> blk->g.lba_shift);
	return (int)t.len;
}

static int p2z_blk_append(struct p2z_blk *blk,
			  const struct ublksrv_io_desc *iod, char *buf,
			  uint64_t buf_ofs, uint64_t *sector)
{
	uint64_t len = (uint64_t)iod->nr_sectors << P2Z_BLK_SECTOR_SHIFT;
	uint64_t zidx, lba, wp_ofs;
	ssize_t ret;

	if (p2z_blk_zone_of(&blk->g, iod->start_sector, true, &zidx) || !len ||
	    len > blk->buf_bytes || len & (blk->g.lba_bytes - 1))
		return -EIO;
	ret = pread(blk->cdev_fd, buf, len, buf_ofs);
	if (ret != (ssize_t)len)
		return ret < 0 ? -errno : -EIO;
	ret = p2z_dev_append(blk->dev, zidx, buf, len, &lba,
			     p2z_blk_io_flags(iod->op_flags));
	if (ret != (ssize_t)len ||
	    p2z_blk_append_done(&blk->g, zidx, blk->zones[zidx].cap_lba, lba,
				len >> blk->g.lba_shift, sector, &wp_ofs)) {
		p2z_blk_zone_refresh(blk, zidx);
		return p2z_blk_errno(ret < 0 ? (int)ret : -EIO);
	}
	p2z_blk_advance_wp(&blk->zones[zidx], wp_ofs);
	return (int)len;
}

static int p2z_blk_zone_op(struct p2z_blk *blk, uint64_t zidx,
			   enum p2z_zone_op op)
{
	struct p2z_blk_zone *z = &blk->zones[zidx];
	int ret;

	/*
	 * The cached write pointer never runs ahead of the device's: reads
	 * stop at it before the reset starts (a read racing the reset gets
	 * zeros), and after a finish only once the device is done.
	 */
	if (op == P2Z_ZONE_OP_RESET && z->type != P2Z_ZONE_TYPE_CNV)
		p2z_blk_set_wp(z, 0);
	ret = p2z_dev_zone_mgmt(blk->dev, zidx, op);
	if (ret) {
		p2z_blk_zone_refresh(blk, zidx);
		return p2z_blk_errno(ret);
	}
	if (op == P2Z_ZONE_OP_FINISH)
		p2z_blk_set_wp(z, z->cap_lba);
	return 0;
}

static int p2z_blk_zone_mgmt(struct p2z_blk *blk,
			     const struct ublksrv_io_desc *iod,
			     enum p2z_zone_op op)
{
	uint64_t zidx;

	if (p2z_blk_zone_of(&blk->g, iod->start_sector, true, &zidx))
		return -EIO;
	return p2z_blk_zone_op(blk, zidx, op);
}

/**
 * struct p2z_blk_walk - a request's zone walk
 * @blk: the server
 * @bz: report: the entries filled
 * @done: report: entries filled so far
 * @ret: the zone operation's or the entry's error that stopped the walk
 *	 (the walk then returns 1): a failed report is told apart by it
 */
struct p2z_blk_walk {
	struct p2z_blk *blk;
	struct blk_zone *bz;
	unsigned int done;
	int ret;
};

/* A stopped walk's result: @w->ret if a callback stopped it. */
static int p2z_blk_walk_ret(const struct p2z_blk_walk *w, int ret)
{
	if (ret > 0)
		return w->ret;
	return ret < 0 ? p2z_blk_errno(ret) : 0;
}

static int p2z_blk_reset_fn(const struct p2z_zone_info *zi, uint64_t zidx,
			    void *arg)
{
	struct p2z_blk_walk *w = arg;

	if (!p2z_blk_zone_is_reset_by_all(zi))
		return 0;
	w->ret = p2z_blk_zone_op(w->blk, zidx, P2Z_ZONE_OP_RESET);
	return w->ret ? 1 : 0;
}

/*
 * Reset every zone the device has open, closed or full, as it reports them
 * now: the cached write pointers miss zones opened but not written (which
 * would keep holding open and active resources), and would try read-only
 * or offline ones.
 */
static int p2z_blk_reset_all(struct p2z_blk *blk)
{
	struct p2z_blk_walk w = { .blk = blk };

	return p2z_blk_walk_ret(&w,
				p2z_dev_zone_walk(blk->dev, 0, blk->g.nr_zones,
						  p2z_blk_reset_fn, &w));
}

static int p2z_blk_report_fn(const struct p2z_zone_info *zi, uint64_t zidx,
			     void *arg)
{
	struct p2z_blk_walk *w = arg;

	(void)zidx;
	if (p2z_blk_report(&w->blk->g, zi, &w->bz[w->done])) {
		w->ret = -EIO;
		return 1;
	}
	w->done++;
	return 0;
}

/*
 * Fill the request's buffer with struct blk_zone entries from the zone
 * holding start_sector on; the kernel zeroed the buffer, so a shorter
 * report ends at the first zero-length entry by itself.
 */
static int p2z_blk_report_zones(struct p2z_blk *blk,
				const struct ublksrv_io_desc *iod, char *buf,
				uint64_t buf_ofs)
{
	struct p2z_blk_walk w = { .blk = blk, .bz = (struct blk_zone *)buf };
	uint64_t zidx, want = iod->nr_sectors, max;
	int ret;

	/*
	 * Any sector of the first zone: ublk passes BLKREPORTZONE's start
	 * sector through unaligned (and adds the zone size for each further
	 * request), as the block layer allows.
	 */
	if (p2z_blk_zone_of(&blk->g, iod->start_sector, false, &zidx))
		return -EIO;
	max = blk->buf_bytes / sizeof(*w.bz);
	if (want > max)
		want = max;
	if (want > blk->g.nr_zones - zidx)
		want = blk->g.nr_zones - zidx;
	ret = p2z_blk_walk_ret(&w, p2z_dev_zone_walk(blk->dev, zidx, want,
						     p2z_blk_report_fn, &w));
	if (ret)
		return ret;
	if (w.done && pwrite(blk->cdev_fd, buf, w.done * sizeof(*w.bz),
			     buf_ofs) != (ssize_t)(w.done * sizeof(*w.bz)))
		return -EIO;
	/*
	 * The request's length is the kernel's buffer, which may be longer
	 * than the entries; ublk cuts a result to the request's length, and a
	 * shorter one would make the block layer requeue the rest.
	 */
	return (int)blk->buf_bytes;
}

int p2z_blk_handle(struct p2z_blk_queue *q, unsigned int tag,
		   uint64_t *append_sector)
{
	const struct ublksrv_io_desc *iod = &q->iods[tag];
	struct p2z_blk *blk = q->blk;
	char *buf = q->bufs + (size_t)tag * blk->buf_bytes;
	uint64_t buf_ofs = p2z_blk_buf_ofs(q->qid, tag);

	switch (ublksrv_get_op(iod)) {
	case UBLK_IO_OP_READ:
		return p2z_blk_read(blk, iod, buf, buf_ofs);
	case UBLK_IO_OP_WRITE:
		return p2z_blk_write(blk, iod, buf, buf_ofs);
	case UBLK_IO_OP_ZONE_APPEND:
		return p2z_blk_append(blk, iod, buf, buf_ofs, append_sector);
	case UBLK_IO_OP_FLUSH:
		return p2z_dev_flush(blk->dev) ? -EIO : 0;
	case UBLK_IO_OP_ZONE_OPEN:
		return p2z_blk_zone_mgmt(blk, iod, P2Z_ZONE_OP_OPEN);
	case UBLK_IO_OP_ZONE_CLOSE:
		return p2z_blk_zone_mgmt(blk, iod, P2Z_ZONE_OP_CLOSE);
	case UBLK_IO_OP_ZONE_FINISH:
		return p2z_blk_zone_mgmt(blk, iod, P2Z_ZONE_OP_FINISH);
	case UBLK_IO_OP_ZONE_RESET:
		return p2z_blk_zone_mgmt(blk, iod, P2Z_ZONE_OP_RESET);
	case UBLK_IO_OP_ZONE_RESET_ALL:
		return p2z_blk_reset_all(blk);
	case UBLK_IO_OP_REPORT_ZONES:
		return p2z_blk_report_zones(blk, iod, buf, buf_ofs);
	default:
		return -EOPNOTSUPP;
	}
}
