// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Zoned block device backend: SMR disks, po2 NVMe ZNS namespaces as
 * /dev/nvmeXnY, null_blk, dm devices. Zone report and management through
 * libzbd, data through io_uring (IORING_OP_READ/WRITE) on the device opened
 * O_DIRECT. A block device has no zone append for user space: "append"
 * writes at the zone's write pointer, cached per zone and only ever moved
 * under the zone's stripe lock, so appends of one zone are serialized.
 *
 * libzbd returns -1 with errno for some failures and -errno for others, and
 * -1 is also -EPERM: every call is normalised here, in p2z_zbd_ret().
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <libzbd/zbd.h>

#include "po2zfs/dev.h"
#include "po2zfs/dev_zbd.h"
#include "po2zfs/log.h"
#include "po2zfs/sysfs.h"
#include "uring.h"

#define P2Z_ZBD_QD 8
#define P2Z_ZBD_NR_LOCKS 64
#define P2Z_ZBD_MAX_XFER (4U << 20)
#define P2Z_ZBD_WP_UNKNOWN UINT64_MAX

/**
 * struct p2z_zbd - an open zoned block device
 * @dev: generic part, first
 * @fd: from zbd_open(), O_DIRECT
 * @claim_fd: the device opened O_EXCL for as long as it is open (the
 *	      kernel then refuses to mount it or claim it again), or -1
 * @name: the kernel's name of the device, for messages
 * @zone_bytes: zone size in bytes
 * @lock: stripe locks: zone z is guarded by lock[z % P2Z_ZBD_NR_LOCKS]
 * @wp_lba: cached write pointer per zone, P2Z_ZBD_WP_UNKNOWN until read
 *	    from the device; guarded by the zone's stripe lock
 * @rings: one ring per calling thread, each with a bounce buffer of
 *	   max_xfer_bytes for callers' buffers that O_DIRECT refuses
 */
struct p2z_zbd {
	struct p2z_dev dev;
	int fd;
	int claim_fd;
	char name[NAME_MAX + 1];
	uint64_t zone_bytes;
	pthread_mutex_t lock[P2Z_ZBD_NR_LOCKS];
	uint64_t *wp_lba;
	struct p2z_rings rings;
};

static inline struct p2z_zbd *P2Z_ZBD(struct p2z_dev *dev)
{
	return container_of(dev, struct p2z_zbd, dev);
}

/*
 * libzbd: 0 on success; -1 with errno set (zbd_open(), zone operations,
 * a bad fd); -errno from the report ioctl or -ENOMEM. A -1 is read as
 * "look at errno", which the caller cleared before the call.
 */
static int p2z_zbd_ret(int ret, int err)
{
	if (ret >= 0)
		return 0;
	if (ret == -1)
		return err ? -err : -EIO;
	return ret;
}

/* ---- data ---- */

/*
 * One read or write, looping over short transfers; returns 0 or -errno.
 * A write with P2Z_IO_FUA goes with RWF_DSYNC: on a block device opened
 * O_DIRECT the kernel sends it with REQ_FUA (a flush after it where the
 * device has no FUA), so it is on stable media when it completes.
 */
static int p2z_zbd_rw(struct p2z_zbd *zbd, struct p2z_ring *r, bool write,
		      void *buf, size_t len, uint64_t ofs, unsigned int flags)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int ret, res;

	while (len) {
		/* One SQE moves at most 2^31 - 4096 bytes anyway (MAX_RW_COUNT) */
		unsigned int n = len < (1U << 30) ? len : (1U << 30);

		sqe = io_uring_get_sqe(&r->ring);
		if (!sqe)
			return -EBUSY;
		if (write)
			io_uring_prep_write(sqe, zbd->fd, buf, n, ofs);
		else
			io_uring_prep_read(sqe, zbd->fd, buf, n, ofs);
		if (write && (flags & P2Z_IO_FUA))
			sqe->rw_flags = RWF_DSYNC;
		ret = p2z_ring_submit(r);
		if (ret != 1) {
			/* Not submitted: the SQE must not run later, with a
			 * buffer the caller has reused. It goes with the ring. */
			p2z_ring_discard(r);
			return ret < 0 ? ret : -EIO;
		}
		/* The buffer is the kernel's until the completion. */
		p2z_ring_reap(r, &cqe);
		res = cqe->res;
		io_uring_cqe_seen(&r->ring, cqe);
		if (res < 0)
			return res;
		/* Nothing moved: past the end of the device. */
		if (!res)
			return -EIO;
		buf = (char *)buf + res;
		len -= res;
		ofs += res;
	}
	return 0;
}

/*
 * O_DIRECT wants buffers aligned to the logical block size; FUSE hands in
 * data right after its request header. Those go through the bounce buffer.
 */
static int p2z_zbd_io(struct p2z_zbd *zbd, bool write, void *buf, size_t len,
		      uint64_t ofs, unsigned int flags)
{
	uint32_t max = zbd->dev.info.max_xfer_bytes;
	struct p2z_ring *r;
	size_t done = 0;
	int ret;

	ret = p2z_ring_get(&zbd->rings, &r);
	if (ret)
		return ret;
	if (!((uintptr_t)buf % zbd->dev.info.lba_bytes))
		return p2z_zbd_rw(zbd, r, write, buf, len, ofs, flags);
	while (done < len) {
		uint32_t n = len - done < max ? len - done : max;

		if (write)
			memcpy(r->buf, (char *)buf + done, n);
		ret = p2z_zbd_rw(zbd, r, write, r->buf, n, ofs + done, flags);
		if (ret)
			return ret;
		if (!write)
			memcpy((char *)buf + done, r->buf, n);
		done += n;
	}
	return 0;
}

static int p2z_zbd_check_range(struct p2z_zbd *zbd, size_t len, uint64_t ofs)
{
	const struct p2z_dev_info *info = &zbd->dev.info;
	uint64_t size = info->nr_zones * zbd->zone_bytes;

	if (!len || len % info->lba_bytes || ofs % info->lba_bytes)
		return -EINVAL;
	if (ofs > size || len > size - ofs)
		return -EINVAL;
	return 0;
}

static pthread_mutex_t *p2z_zbd_lock(struct p2z_zbd *zbd, uint64_t zidx)
{
	return &zbd->lock[zidx % P2Z_ZBD_NR_LOCKS];
}

static ssize_t p2z_zbd_pread(struct p2z_dev *dev, void *buf, size_t len,
			     uint64_t ofs)
{
	struct p2z_zbd *zbd = P2Z_ZBD(dev);
	int ret;

	ret = p2z_zbd_check_range(zbd, len, ofs);
	if (!ret)
		ret = p2z_zbd_io(zbd, false, buf, len, ofs, 0);
	return ret ? ret : (ssize_t)len;
}

/*
 * Write @len bytes at @ofs, which lies in zone @zidx, and keep the cached
 * write pointer right. Caller holds the zone's stripe lock.
 */
static int __p2z_zbd_write(struct p2z_zbd *zbd, uint64_t zidx, const void *buf,
			   size_t len, uint64_t ofs, unsigned int flags)
{
	uint32_t lba_bytes = zbd->dev.info.lba_bytes;
	int ret;

	ret = p2z_zbd_io(zbd, true, (void *)buf, len, ofs, flags);
	if (ret || zbd->wp_lba[zidx] != ofs / lba_bytes)
		zbd->wp_lba[zidx] = P2Z_ZBD_WP_UNKNOWN;
	else
		zbd->wp_lba[zidx] += len / lba_bytes;
	return ret;
}

/* A write inside one zone at a time: the zone's lock orders them. */
static ssize_t p2z_zbd_pwrite(struct p2z_dev *dev, const void *buf, size_t len,
			      uint64_t ofs, unsigned int flags)
{
	struct p2z_zbd *zbd = P2Z_ZBD(dev);
	size_t done = 0;
	int ret;

	if (dev->flags & P2Z_DEV_RDONLY)
		return -EROFS;
	ret = p2z_zbd_check_range(zbd, len, ofs);
	if (ret)
		return ret;
	while (done < len) {
		uint64_t zidx = (ofs + done) / zbd->zone_bytes;
		uint64_t left = (zidx + 1) * zbd->zone_bytes - (ofs + done);
		size_t n = len - done < left ? len - done : left;

		pthread_mutex_lock(p2z_zbd_lock(zbd, zidx));
		ret = __p2z_zbd_write(zbd, zidx, (const char *)buf + done, n,
				      ofs + done, flags);
		pthread_mutex_unlock(p2z_zbd_lock(zbd, zidx));
		if (ret)
			return done ? (ssize_t)done : ret;
		done += n;
	}
	return done;
}

/* ---- zones ---- */

static bool p2z_zbd_cond_is_known(unsigned int cond)
{
	switch (cond) {
	case ZBD_ZONE_COND_NOT_WP:
	case ZBD_ZONE_COND_EMPTY:
	case ZBD_ZONE_COND_IMP_OPEN:
	case ZBD_ZONE_COND_EXP_OPEN:
	case ZBD_ZONE_COND_CLOSED:
	case ZBD_ZONE_COND_READONLY:
	case ZBD_ZONE_COND_FULL:
	case ZBD_ZONE_COND_OFFLINE:
		return true;
	}
	return false;
}

/* Type and condition agree: only conventional zones have no wp. */
static bool p2z_zbd_zone_is_sane(const struct zbd_zone *z)
{
	if (!p2z_zbd_cond_is_known(z->cond))
		return false;
	switch (z->type) {
	case ZBD_ZONE_TYPE_CNV:
		return z->cond == ZBD_ZONE_COND_NOT_WP ||
		       z->cond == ZBD_ZONE_COND_READONLY ||
		       z->cond == ZBD_ZONE_COND_OFFLINE;
	case ZBD_ZONE_TYPE_SWR:
	case ZBD_ZONE_TYPE_SWP:
		return z->cond != ZBD_ZONE_COND_NOT_WP;
	}
	return false;
}

/*
 * Every zone has the device's zone size, except that the block layer lets
 * the last zone of a disk whose capacity is no multiple of it be smaller
 * (SMR disks, null_blk): a runt, still a whole number of LBAs.
 */
static bool p2z_zbd_len_is_valid(const struct p2z_dev_info *info, uint64_t zidx,
				 const struct zbd_zone *z)
{
	uint64_t zone_bytes = info->zone_lba * info->lba_bytes;

	if (zidx + 1 == info->nr_zones)
		return z->len && z->len <= zone_bytes &&
		       !(z->len % info->lba_bytes);
	return z->len == zone_bytes;
}

static int p2z_zbd_parse_zone(const struct p2z_dev_info *info, const char *name,
			      uint64_t zidx, const struct zbd_zone *z,
			      struct p2z_zone_info *zi)
{
	uint32_t lba_bytes = info->lba_bytes;
	uint64_t zone_bytes, start;

	if (zidx >= info->nr_zones ||
	    __builtin_mul_overflow(info->zone_lba, (uint64_t)lba_bytes,
				   &zone_bytes) ||
	    __builtin_mul_overflow(zidx, zone_bytes, &start) ||
	    z->start != start || !p2z_zbd_len_is_valid(info, zidx, z) ||
	    z->capacity > z->len || z->capacity % lba_bytes ||
	    !p2z_zbd_zone_is_sane(z)) {
		p2z_log(LOG_ERR,
			"%s: zone %" PRIu64 ": bad report (type %u cond 0x%x"
			" start %llu len %llu capacity %llu)",
			name, zidx, z->type, z->cond, z->start, z->len,
			z->capacity);
		return -EIO;
	}
	zi->start_lba = z->start / lba_bytes;
	zi->cap_lba = z->capacity / lba_bytes;
	zi->cond = z->cond;
	/* Host-aware zones (sequential write preferred) are used as SWR. */
	zi->type = z->type == ZBD_ZONE_TYPE_CNV ? P2Z_ZONE_TYPE_CNV :
						  P2Z_ZONE_TYPE_SEQ;
	/*
	 * The kernel reports a full zone's write pointer at start + zone size
	 * (nvme_zone_parse_entry()); the interface wants start + capacity.
	 * Read-only and offline zones have no valid write pointer: they read
	 * as empty, as zonefs shows them.
	 */
	switch (z->cond) {
	case ZBD_ZONE_COND_NOT_WP:
	case ZBD_ZONE_COND_READONLY:
	case ZBD_ZONE_COND_OFFLINE:
		zi->wp_lba = zi->start_lba;
		break;
	case ZBD_ZONE_COND_FULL:
		zi->wp_lba = zi->start_lba + zi->cap_lba;
		break;
	default:
		if (z->wp < z->start || z->wp - z->start > z->capacity ||
		    z->wp % lba_bytes) {
			p2z_log(LOG_ERR,
				"%s: zone %" PRIu64 ": write pointer %llu"
				" outside the zone",
				name, zidx, z->wp);
			return -EIO;
		}
		zi->wp_lba = z->wp / lba_bytes;
	}
	return 0;
}

int p2z_zbd_report_parse(const struct p2z_dev_info *info, const char *name,
			 uint64_t zidx, unsigned int nr,
			 const struct zbd_zone *zones, unsigned int got,
			 struct p2z_zone_info *zi)
{
	unsigned int i;
	int ret;

	if (!got || got > nr || got > INT_MAX || !info->lba_bytes) {
		p2z_log(LOG_ERR,
			"%s: report from zone %" PRIu64
			": %u zones for %u asked",
			name, zidx, got, nr);
		return -EIO;
	}
	for (i = 0; i < got; i++) {
		ret = p2z_zbd_parse_zone(info, name, zidx + i, &zones[i],
					 &zi[i]);
		if (ret)
			return ret;
	}
	return (int)got;
}

static int p2z_zbd_report(struct p2z_zbd *zbd, uint64_t zidx, unsigned int nr,
			  struct zbd_zone *zones, unsigned int *got)
{
	int ret;

	*got = nr;
	errno = 0;
	ret = zbd_report_zones(zbd->fd, zidx * zbd->zone_bytes, 0, ZBD_RO_ALL,
			       zones, got);
	ret = p2z_zbd_ret(ret, errno);
	if (ret)
		p2z_log(LOG_ERR, "%s: report zones from %" PRIu64 ": %s",
			zbd->name, zidx, strerror(-ret));
	return ret;
}

static int p2z_zbd_report_zones(struct p2z_dev *dev, uint64_t zidx,
				unsigned int nr, struct p2z_zone_info *zi)
{
	struct p2z_zbd *zbd = P2Z_ZBD(dev);
	struct zbd_zone *zones;
	unsigned int got;
	int ret;

	if (zidx >= dev->info.nr_zones || !nr)
		return 0;
	if (nr > dev->info.nr_zones - zidx)
		nr = dev->info.nr_zones - zidx;
	zones = calloc(nr, sizeof(*zones));
	if (!zones)
		return -ENOMEM;
	ret = p2z_zbd_report(zbd, zidx, nr, zones, &got);
	if (!ret)
		ret = p2z_zbd_report_parse(&dev->info, zbd->name, zidx, nr,
					   zones, got, zi);
	free(zones);
	return ret;
}

/* The cached write pointer of zone @zidx, read from the device if unknown. */
static int __p2z_zbd_wp(struct p2z_zbd *zbd, uint64_t zidx, uint64_t *wp)
{
	struct p2z_zone_info zi;
	struct zbd_zone z;
	unsigned int got;
	int ret;

	if (zbd->wp_lba[zidx] == P2Z_ZBD_WP_UNKNOWN) {
		ret = p2z_zbd_report(zbd, zidx, 1, &z, &got);
		if (ret)
			return ret;
		if (got != 1)
			return -EIO;
		ret = p2z_zbd_report_parse(&zbd->dev.info, zbd->name, zidx, 1,
					   &z, got, &zi);
		if (ret < 0)
			return ret;
		if (zi.type != P2Z_ZONE_TYPE_SEQ)
			return -EINVAL;
		zbd->wp_lba[zidx] = zi.wp_lba;
	}
	*wp = zbd->wp_lba[zidx];
	return 0;
}

static ssize_t p2z_zbd_append(struct p2z_dev *dev, uint64_t zidx,
			      const void *buf, size_t len, uint64_t *lba,
			      unsigned int flags)
{
	struct p2z_zbd *zbd = P2Z_ZBD(dev);
	uint32_t lba_bytes = dev->info.lba_bytes;
	uint64_t wp;
	int ret;

	if (dev->flags & P2Z_DEV_RDONLY)
		return -EROFS;
	if (zidx >= dev->info.nr_zones || !len || len % lba_bytes ||
	    len > dev->info.max_append_bytes)
		return -EINVAL;
	pthread_mutex_lock(p2z_zbd_lock(zbd, zidx));
	ret = __p2z_zbd_wp(zbd, zidx, &wp);
	if (!ret)
		ret = __p2z_zbd_write(zbd, zidx, buf, len, wp * lba_bytes,
				      flags);
	pthread_mutex_unlock(p2z_zbd_lock(zbd, zidx));
	if (ret)
		return ret;
	*lba = wp;
	return len;
}

static int p2z_zbd_zone_mgmt(struct p2z_dev *dev, uint64_t zidx,
			     enum p2z_zone_op op)
{
	static const enum zbd_zone_op zop[] = {
		[P2Z_ZONE_OP_RESET] = ZBD_OP_RESET,
		[P2Z_ZONE_OP_OPEN] = ZBD_OP_OPEN,
		[P2Z_ZONE_OP_CLOSE] = ZBD_OP_CLOSE,
		[P2Z_ZONE_OP_FINISH] = ZBD_OP_FINISH,
	};
	struct p2z_zbd *zbd = P2Z_ZBD(dev);
	int ret;

	if (dev->flags & P2Z_DEV_RDONLY)
		return -EROFS;
	if (zidx >= dev->info.nr_zones ||
	    (unsigned int)op >= sizeof(zop) / sizeof(zop[0]))
		return -EINVAL;
	pthread_mutex_lock(p2z_zbd_lock(zbd, zidx));
	errno = 0;
	ret = zbd_zones_operation(zbd->fd, zop[op], zidx * zbd->zone_bytes,
				  zbd->zone_bytes);
	ret = p2z_zbd_ret(ret, errno);
	/* Reset and finish move the write pointer; failures leave it unsure. */
	if (ret || op == P2Z_ZONE_OP_RESET || op == P2Z_ZONE_OP_FINISH)
		zbd->wp_lba[zidx] = P2Z_ZBD_WP_UNKNOWN;
	pthread_mutex_unlock(p2z_zbd_lock(zbd, zidx));
	return ret;
}

static int p2z_zbd_flush(struct p2z_dev *dev)
{
	struct p2z_zbd *zbd = P2Z_ZBD(dev);

	if (dev->flags & P2Z_DEV_RDONLY)
		return 0;
	return fdatasync(zbd->fd) ? -errno : 0;
}

/* ---- asynchronous ---- */

/* A queue is its own ring on the device (uring.h), or a ring it is given. */
static int p2z_zbd_queue_init(struct p2z_dev *dev, unsigned int depth, int efd,
			      void **bqp)
{
	struct p2z_qring *qr;
	int ret;

	(void)dev;
	ret = p2z_ring_queue_open(depth, 0, efd, &qr);
	if (!ret)
		*bqp = qr;
	return ret;
}

static int p2z_zbd_queue_init_on(struct p2z_dev *dev, unsigned int depth,
				 struct io_uring *ring, uint64_t tag,
				 void **bqp)
{
	struct p2z_qring *qr;
	int ret;

	(void)dev;
	(void)depth;
	ret = p2z_ring_queue_share(ring, 0, tag, &qr);
	if (!ret)
		*bqp = qr;
	return ret;
}

static void p2z_zbd_queue_exit(struct p2z_dev *dev, void *bq)
{
	(void)dev;
	p2z_ring_queue_close(bq);
}

static int p2z_zbd_queue_hold_fd(struct p2z_dev *dev, void *bq, int fd)
{
	(void)dev;
	return p2z_ring_queue_hold_fd(bq, fd);
}

/* A piece done here, synchronously: 1 tells the queue it is done. */
static int p2z_zbd_sync_piece(struct p2z_dev *dev, struct p2z_io *io)
{
	switch (io->op) {
	case P2Z_IO_READ:
		io->ret = p2z_zbd_pread(dev, io->buf, io->len, io->ofs);
		break;
	case P2Z_IO_WRITE:
		io->ret = p2z_zbd_pwrite(dev, io->buf, io->len, io->ofs,
					 io->flags);
		break;
	case P2Z_IO_APPEND:
		io->ret = p2z_zbd_append(dev, io->zidx, io->buf, io->len,
					 &io->lba, io->flags);
		break;
	default:
		io->ret = p2z_zbd_flush(dev);
	}
	return 1;
}

/*
 * Reads and writes from aligned buffers and flushes go on the ring; a
 * write stops at the end of its zone (the queue issues the rest as the
 * next piece). Appends (a write pointer of our own, under the zone lock),
 * unaligned buffers (a bounce buffer), a read-only device and bad ranges
 * go through the synchronous ops, here.
 */
static int p2z_zbd_submit(struct p2z_dev *dev, void *bq, struct p2z_io *io)
{
	struct p2z_zbd *zbd = P2Z_ZBD(dev);
	struct p2z_qring *qr = bq;
	struct io_uring_sqe *sqe;
	size_t n = io->len;

	if (io->op == P2Z_IO_APPEND || (dev->flags & P2Z_DEV_RDONLY) ||
	    (io->op != P2Z_IO_FLUSH &&
	     ((uintptr_t)io->buf % dev->info.lba_bytes ||
	      p2z_zbd_check_range(zbd, io->len, io->ofs))))
		return p2z_zbd_sync_piece(dev, io);
	if (io->op == P2Z_IO_WRITE &&
	    n > zbd->zone_bytes - io->ofs % zbd->zone_bytes)
		n = zbd->zone_bytes - io->ofs % zbd->zone_bytes;
	sqe = p2z_ring_queue_sqe(qr);
	if (!sqe)
		return -EBUSY;
	if (io->op == P2Z_IO_READ)
		io_uring_prep_read(sqe, zbd->fd, io->buf, n, io->ofs);
	else if (io->op == P2Z_IO_WRITE)
		io_uring_prep_write(sqe, zbd->fd, io->buf, n, io->ofs);
	else
		io_uring_prep_fsync(sqe, zbd->fd, IORING_FSYNC_DATASYNC);
	if (io->op == P2Z_IO_WRITE && (io->flags & P2Z_IO_FUA))
		sqe->rw_flags = RWF_DSYNC;
	io_uring_sqe_set_data(sqe, io);
	return p2z_ring_queue_submit(qr, sqe);
}

/* A write on the ring completed: move the cached write pointer. */
static void p2z_zbd_write_done(struct p2z_zbd *zbd, const struct p2z_io *io)
{
	uint32_t lba_bytes = zbd->dev.info.lba_bytes;
	uint64_t zidx = io->ofs / zbd->zone_bytes;

	pthread_mutex_lock(p2z_zbd_lock(zbd, zidx));
	if (io->ret <= 0 || zbd->wp_lba[zidx] != io->ofs / lba_bytes)
		zbd->wp_lba[zidx] = P2Z_ZBD_WP_UNKNOWN;
	else
		zbd->wp_lba[zidx] += (uint64_t)io->ret / lba_bytes;
	pthread_mutex_unlock(p2z_zbd_lock(zbd, zidx));
}

static void p2z_zbd_reap_one(void *arg, struct p2z_io *io,
			     const struct io_uring_cqe *cqe)
{
	io->ret = cqe->res;
	/* Nothing moved: past the end of the device. */
	if (!io->ret && io->op != P2Z_IO_FLUSH)
		io->ret = -EIO;
	if (io->op == P2Z_IO_WRITE)
		p2z_zbd_write_done(arg, io);
}

static int p2z_zbd_reap(struct p2z_dev *dev, void *bq, bool wait)
{
	return p2z_ring_queue_reap(bq, wait, dev->path, p2z_zbd_reap_one,
				   P2Z_ZBD(dev));
}

static int p2z_zbd_complete(struct p2z_dev *dev, void *bq,
			    const struct io_uring_cqe *cqe)
{
	return p2z_ring_queue_complete(bq, cqe, p2z_zbd_reap_one, P2Z_ZBD(dev));
}

/* ---- probe/open/close ---- */

static int p2z_zbd_sysfs_read(const char *name, const char *attr, char *buf,
			      size_t size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/block/%s/%s", name, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return 0;
}

/*
 * The kernel's name of the block device behind @path, or -errno: found
 * by its device number (/sys/dev/block/MAJ:MIN), whatever the node is
 * called.
 */
static int p2z_zbd_kname(const char *path, char *name, size_t size)
{
	char link[64], *real;
	struct stat st;
	int ret = 0;

	if (stat(path, &st))
		return -errno;
	if (!S_ISBLK(st.st_mode))
		return -ENOTBLK;
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(st.st_rdev),
		 minor(st.st_rdev));
	real = realpath(link, NULL);
	if (!real)
		return -errno;
	snprintf(name, size, "%s", strrchr(real, '/') + 1);
	free(real);
	return ret;
}

static int p2z_zbd_probe(const char *path)
{
	char name[NAME_MAX + 1], model[32];

	if (p2z_zbd_kname(path, name, sizeof(name)))
		return 0;
	/* NVMe namespaces go to the nvme backend, npo2 or not. */
	if (!strncmp(name, "nvme", 4))
		return 0;
	if (p2z_zbd_sysfs_read(name, "queue/zoned", model, sizeof(model)))
		return 0;
	return !strcmp(model, "host-managed") || !strcmp(model, "host-aware");
}

/* 0 or a huge max_sectors_kb must not wrap below the 4 MiB cap. */
uint32_t p2z_zbd_max_xfer(const char *sysfs, const char *name,
			  uint32_t lba_bytes)
{
	uint32_t max = P2Z_ZBD_MAX_XFER;
	char dir[PATH_MAX];
	uint64_t kb;

	if (snprintf(dir, sizeof(dir), "%s/block/%s/queue", sysfs, name) <
		    (int)sizeof(dir) &&
	    !p2z_sysfs_u64(dir, "max_sectors_kb", &kb) && kb && kb < max / 1024)
		max = (uint32_t)kb * 1024;
	if (!lba_bytes)
		return max;
	max -= max % lba_bytes;
	return max ? max : lba_bytes;
}

bool p2z_zbd_volatile_cache(const char *sysfs, const char *name)
{
	char path[PATH_MAX], mode[32];

	if (snprintf(path, sizeof(path), "%s/block/%s/queue/write_cache", sysfs,
		     name) >= (int)sizeof(path) ||
	    p2z_sysfs_read(path, mode, sizeof(mode))) {
		p2z_log(LOG_WARNING,
			"%s: write cache mode unknown: taken as volatile",
			name);
		return true;
	}
	return strcmp(mode, "write through") != 0;
}

static int p2z_zbd_geometry(struct p2z_zbd *zbd, const struct zbd_info *zi)
{
	struct p2z_dev_info *info = &zbd->dev.info;

	info->lba_bytes = zi->lblock_size;
	if (!zi->lblock_size || !zi->zone_size ||
	    zi->zone_size % zi->lblock_size) {
		p2z_log(LOG_ERR, "%s: bad zone size %llu", zbd->name,
			zi->zone_size);
		return -EINVAL;
	}
	zbd->zone_bytes = zi->zone_size;
	info->zone_lba = zi->zone_size / zi->lblock_size;
	info->nr_zones = zi->nr_zones;
	/* libzbd: 0 no limit, -1 unknown. */
	info->max_open =
		zi->max_nr_open_zones == UINT_MAX ? 0 : zi->max_nr_open_zones;
	info->max_active = zi->max_nr_active_zones == UINT_MAX ?
				   0 :
				   zi->max_nr_active_zones;
	info->max_xfer_bytes =
		p2z_zbd_max_xfer("/sys", zbd->name, zi->lblock_size);
	info->max_append_bytes = info->max_xfer_bytes;
	info->buf_align = zi->lblock_size; /* O_DIRECT */
	info->volatile_cache = p2z_zbd_volatile_cache("/sys", zbd->name);
	return 0;
}

static void p2z_zbd_close(struct p2z_dev *dev)
{
	struct p2z_zbd *zbd = P2Z_ZBD(dev);
	int i;

	/* No call is in flight: every thread's ring can go. */
	p2z_rings_destroy(&zbd->rings);
	for (i = 0; i < P2Z_ZBD_NR_LOCKS; i++)
		pthread_mutex_destroy(&zbd->lock[i]);
	zbd_close(zbd->fd);
	if (zbd->claim_fd >= 0)
		close(zbd->claim_fd);
	free(zbd->wp_lba);
	free(zbd);
}

/*
 * Own the device for as long as it is open: an O_EXCL open of a block
 * device fails with EBUSY if it is mounted or claimed, and makes the
 * kernel refuse mounts and other claims until it is closed.
 */
static int p2z_zbd_claim(struct p2z_zbd *zbd, const char *path)
{
	int ret;

	zbd->claim_fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (zbd->claim_fd >= 0)
		return 0;
	ret = -errno;
	p2z_log(LOG_ERR, "%s: %s", path,
		ret == -EBUSY ?
			"Device or resource busy (mounted, or claimed by another program)" :
			strerror(-ret));
	return ret;
}

static int p2z_zbd_open(const char *path, unsigned int flags,
			struct p2z_dev **devp)
{
	int oflags = (flags & P2Z_DEV_RDONLY ? O_RDONLY : O_RDWR) | O_DIRECT;
	char model[32];
	struct p2z_zbd *zbd;
	struct zbd_info zi;
	uint64_t z;
	int ret, i;

	zbd = calloc(1, sizeof(*zbd));
	if (!zbd)
		return -ENOMEM;
	zbd->claim_fd = -1;
	ret = p2z_zbd_kname(path, zbd->name, sizeof(zbd->name));
	if (ret) {
		p2z_log(LOG_ERR, "%s: %s", path,
			ret == -ENOTBLK ? "not a block device" :
					  strerror(-ret));
		goto out_free;
	}
	if (p2z_zbd_sysfs_read(zbd->name, "queue/zoned", model,
			       sizeof(model)) ||
	    (strcmp(model, "host-managed") && strcmp(model, "host-aware"))) {
		p2z_log(LOG_ERR, "%s: not a zoned block device", path);
		ret = -EMEDIUMTYPE;
		goto out_free;
	}
	/* Claimed before anything is read, unless only looked at. */
	if (!(flags & P2Z_DEV_PEEK)) {
		ret = p2z_zbd_claim(zbd, path);
		if (ret)
			goto out_free;
	}
	errno = 0;
	zbd->fd = zbd_open(path, oflags | O_CLOEXEC, &zi);
	if (zbd->fd < 0) {
		ret = p2z_zbd_ret(zbd->fd, errno);
		p2z_log(LOG_ERR, "%s: %s", path, strerror(-ret));
		goto out_free;
	}
	zbd->dev.flags = flags;
	ret = p2z_zbd_geometry(zbd, &zi);
	if (ret)
		goto out_close;
	ret = -ENOMEM;
	zbd->wp_lba = malloc(zbd->dev.info.nr_zones * sizeof(*zbd->wp_lba));
	if (!zbd->wp_lba)
		goto out_close;
	for (z = 0; z < zbd->dev.info.nr_zones; z++)
		zbd->wp_lba[z] = P2Z_ZBD_WP_UNKNOWN;
	ret = p2z_rings_init(&zbd->rings, P2Z_ZBD_QD, 0,
			     zbd->dev.info.max_xfer_bytes, zbd->name);
	if (ret)
		goto out_close;
	for (i = 0; i < P2Z_ZBD_NR_LOCKS; i++) {
		ret = -pthread_mutex_init(&zbd->lock[i], NULL);
		if (ret)
			goto out_destroy_locks;
	}
	*devp = &zbd->dev;
	return 0;

out_destroy_locks:
	while (i--)
		pthread_mutex_destroy(&zbd->lock[i]);
	p2z_rings_destroy(&zbd->rings);
out_close:
	zbd_close(zbd->fd);
out_free:
	if (zbd->claim_fd >= 0)
		close(zbd->claim_fd);
	free(zbd->wp_lba);
	free(zbd);
	return ret;
}

const struct p2z_dev_ops p2z_dev_zbd_ops = {
	.name = "zbd",
	.fua = true,
	.splits_reads = true,
	.probe = p2z_zbd_probe,
	.open = p2z_zbd_open,
	.close = p2z_zbd_close,
	.report_zones = p2z_zbd_report_zones,
	.zone_mgmt = p2z_zbd_zone_mgmt,
	.pread = p2z_zbd_pread,
	.pwrite = p2z_zbd_pwrite,
	.append = p2z_zbd_append,
	.flush = p2z_zbd_flush,
	.queue_init = p2z_zbd_queue_init,
	.queue_exit = p2z_zbd_queue_exit,
	.submit = p2z_zbd_submit,
	.reap = p2z_zbd_reap,
	.queue_hold_fd = p2z_zbd_queue_hold_fd,
	.queue_init_on = p2z_zbd_queue_init_on,
	.complete = p2z_zbd_complete,
	.queue_qring = p2z_ring_queue_self,
};
