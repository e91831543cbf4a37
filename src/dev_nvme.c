// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * NVMe ZNS backend: the namespace's generic char device /dev/ngXnY, driven by
 * io_uring passthrough (IORING_OP_URING_CMD, NVME_URING_CMD_IO) with big
 * SQEs and CQEs, identified through libnvme. This is the only way to reach
 * an NVMe ZNS namespace whose zone size is not a power of two: the kernel
 * hides its block device (see Linux drivers/nvme/host/core.c and zns.c) but
 * keeps the generic char device.
 *
 * Every thread that calls in gets its own ring (uring.h), so worker threads
 * never share a submission queue.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libnvme.h>

#include "po2zfs/dev.h"
#include "po2zfs/dev_nvme.h"
#include "po2zfs/log.h"
#include "po2zfs/nvme_path.h"
#include "uring.h"

#include "nvme_priv.h"

/* ---- commands ---- */

static void p2z_nvme_prep(struct p2z_nvme *nv, struct io_uring_sqe *sqe,
			  const struct p2z_nvme_cmd *c)
{
	struct nvme_uring_cmd *cmd;

	/* An SQE128 entry is two normal ones; the command lives in the rest. */
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = nv->fd;
	sqe->cmd_op = NVME_URING_CMD_IO;
	cmd = (struct nvme_uring_cmd *)sqe->cmd;
	cmd->opcode = c->opcode;
	cmd->nsid = nv->nsid;
	cmd->addr = (uintptr_t)c->buf;
	cmd->data_len = c->len;
	cmd->cdw10 = (uint32_t)c->slba;
	cmd->cdw11 = (uint32_t)(c->slba >> 32);
	cmd->cdw12 = c->cdw12;
	cmd->cdw13 = c->cdw13;
}

/*
 * A completion's res: 0 done, > 0 an NVMe status (with the More and DNR
 * bits), < 0 -errno from the kernel (e.g. -EINVAL for a transfer above the
 * queue's max_hw_sectors).
 */
static int p2z_nvme_res(int res)
{
	uint16_t status;
	int err;

	if (res <= 0)
		return res;
	status = (uint16_t)res & P2Z_NVME_STATUS_MASK;
	err = p2z_dev_nvme_status_errno(status);
	return err ? err : -EIO;
}

/* Run one command and wait for it; @result gets CQE dwords 0-1. */
/*
 * Data the daemon hands in where FUSE put it (after the request header) is
 * dword aligned, which NVMe needs; but the block layer bounces a passthrough
 * buffer itself, page by page, when it is not aligned to the queue's DMA
 * alignment, and the queue of a hidden npo2 disk keeps the default (512).
 * There a copy into the ring's own aligned buffer is cheaper (guest, 6.12,
 * 1 MiB appends of 124 KiB pieces: 9770 us in the device per request
 * without it, 5204 with it); where the queue takes dwords, no copy.
 */
static bool p2z_nvme_bounces(const struct p2z_nvme *nv,
			     const struct p2z_ring *r,
			     const struct p2z_nvme_cmd *c)
{
	return r->buf && c->buf && c->len <= nv->dev.info.max_xfer_bytes &&
	       ((uintptr_t)c->buf & nv->dma_mask) &&
	       (c->opcode == nvme_cmd_write ||
		c->opcode == nvme_zns_cmd_append);
}

static int p2z_nvme_exec(struct p2z_nvme *nv, const struct p2z_nvme_cmd *c,
			 uint64_t *result)
{
	struct p2z_nvme_cmd bc;
	struct p2z_ring *r;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int ret, res;

	ret = p2z_ring_get(&nv->rings, &r);
	if (ret)
		return ret;
	sqe = io_uring_get_sqe(&r->ring);
	if (!sqe)
		return -EBUSY;
	if (p2z_nvme_bounces(nv, r, c)) {
		bc = *c;
		memcpy(r->buf, c->buf, c->len);
		bc.buf = r->buf;
		c = &bc;
	}
	p2z_nvme_prep(nv, sqe, c);
	ret = p2z_ring_submit(r);
	if (ret != 1) {
		/* Not submitted: the SQE goes with the ring, never run. */
		p2z_log(LOG_ERR, "%s: io_uring submit: %s", nv->ng,
			strerror(ret < 0 ? -ret : EIO));
		p2z_ring_discard(r);
		return ret < 0 ? ret : -EIO;
	}
	/* Submitted: the buffer is the kernel's until the completion. */
	p2z_ring_reap(r, &cqe);
	res = cqe->res;
	if (result)
		*result = cqe->big_cqe[0];
	io_uring_cqe_seen(&r->ring, cqe);
	return p2z_nvme_res(res);
}

/* ---- validation ---- */

static int p2z_nvme_check_range(struct p2z_nvme *nv, size_t len, uint64_t ofs)
{
	uint32_t lba_bytes = nv->dev.info.lba_bytes;

	if (!len || len % lba_bytes || ofs % lba_bytes)
		return -EINVAL;
	if (ofs / lba_bytes > nv->nr_lba ||
	    len / lba_bytes > nv->nr_lba - ofs / lba_bytes)
		return -EINVAL;
	return 0;
}

/* CDW12 of a transfer: NLB (0-based), FUA for P2Z_IO_FUA. */
static uint32_t p2z_nvme_cdw12(const struct p2z_nvme *nv, uint32_t len,
			       unsigned int flags)
{
	uint32_t cdw12 = len / nv->dev.info.lba_bytes - 1;

	if (flags & P2Z_IO_FUA)
		cdw12 |= P2Z_NVME_CDW12_FUA;
	return cdw12;
}

static void p2z_nvme_rw_cmd(struct p2z_nvme *nv, struct p2z_nvme_cmd *c,
			    uint8_t opcode, void *buf, uint32_t len,
			    uint64_t ofs, unsigned int flags)
{
	memset(c, 0, sizeof(*c));
	c->opcode = opcode;
	c->slba = ofs / nv->dev.info.lba_bytes;
	c->cdw12 = p2z_nvme_cdw12(nv, len, flags);
	c->buf = buf;
	c->len = len;
}

/* ---- ops ---- */

/*
 * Reads never touch the write pointer, so the pieces of one request go out
 * together (up to the ring size): on the hidden disk of an npo2 namespace a
 * piece is at most 124 KiB, and one at a time would halve the throughput.
 *
 * No piece is left in flight on return, whatever fails: the kernel may
 * write into @buf until a piece completes, and the caller reuses @buf as
 * soon as this returns. A submission that fails stops new pieces; the ones
 * submitted are reaped, then the ring, holding the unsubmitted SQEs, goes.
 */
static ssize_t p2z_nvme_pread(struct p2z_dev *dev, void *buf, size_t len,
			      uint64_t ofs)
{
	struct p2z_nvme *nv = P2Z_NVME(dev);
	uint32_t max = dev->info.max_xfer_bytes;
	unsigned int inflight = 0, queued = 0;
	struct p2z_nvme_cmd c;
	struct p2z_ring *r;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	bool broken = false;
	size_t done = 0;
	int ret, err = 0;

	ret = p2z_nvme_check_range(nv, len, ofs);
	if (ret)
		return ret;
	ret = p2z_ring_get(&nv->rings, &r);
	if (ret)
		return ret;
	while (done < len || inflight) {
		while (!err && done < len && inflight + queued < P2Z_NVME_QD) {
			uint32_t n = len - done < max ? len - done : max;

			sqe = io_uring_get_sqe(&r->ring);
			if (!sqe)
				break;
			p2z_nvme_rw_cmd(nv, &c, nvme_cmd_read,
					(char *)buf + done, n, ofs + done, 0);
			p2z_nvme_prep(nv, sqe, &c);
			done += n;
			queued++;
		}
		if (queued && !broken) {
			ret = p2z_ring_submit(r);
			if (ret > 0) {
				inflight += ret;
				queued -= ret;
			}
			if (queued) {
				p2z_log(LOG_ERR, "%s: io_uring submit: %s",
					nv->ng,
					strerror(ret < 0 ? -ret : EAGAIN));
				broken = true;
				if (!err)
					err = ret < 0 ? ret : -EIO;
			}
		}
		if (!inflight) {
			if (!err && done < len)
				err = -EBUSY; /* no SQE on an idle ring */
			break;
		}
		p2z_ring_reap(r, &cqe);
		ret = p2z_nvme_res(cqe->res);
		io_uring_cqe_seen(&r->ring, cqe);
		inflight--;
		if (ret && !err)
			err = ret;
	}
	/* Nothing in flight now; SQEs never submitted go with the ring. */
	if (broken)
		p2z_ring_discard(r);
	return err ? err : (ssize_t)len;
}

/*
 * One Write command: p2z_dev_pwrite() hands in pieces of at most
 * max_xfer_bytes, one at a time, so writes of a zone stay in order.
 */
static ssize_t p2z_nvme_pwrite(struct p2z_dev *dev, const void *buf, size_t len,
			       uint64_t ofs, unsigned int flags)
{
	struct p2z_nvme *nv = P2Z_NVME(dev);
	struct p2z_nvme_cmd c;
	int ret;

	if (dev->flags & P2Z_DEV_RDONLY)
		return -EROFS;
	ret = p2z_nvme_check_range(nv, len, ofs);
	if (ret)
		return ret;
	if (len > dev->info.max_xfer_bytes)
		return -EINVAL;
	p2z_nvme_rw_cmd(nv, &c, nvme_cmd_write, (void *)buf, len, ofs, flags);
	ret = p2z_nvme_exec(nv, &c, NULL);
	return ret ? ret : (ssize_t)len;
}

bool p2z_nvme_append_fits(uint64_t start, uint64_t cap, uint64_t lba,
			  uint64_t nlb)
{
	return lba >= start && lba - start <= cap && nlb <= cap - (lba - start);
}

/*
 * The device says where an append went: all of its @nlb LBAs must be within
 * the zone's capacity (as last reported; before any report, its size).
 */
static int p2z_nvme_check_landing(struct p2z_nvme *nv, uint64_t zidx,
				  uint64_t lba, uint64_t nlb)
{
	uint64_t start = zidx * nv->dev.info.zone_lba;
	uint64_t cap = __atomic_load_n(&nv->cap_lba[zidx], __ATOMIC_RELAXED);

	if (p2z_nvme_append_fits(start, cap, lba, nlb))
		return 0;
	p2z_log(LOG_ERR,
		"%s: zone %" PRIu64 ": append of %" PRIu64
		" LBAs landed at LBA %" PRIu64 ", past the zone's capacity"
		" (%" PRIu64 " LBAs from %" PRIu64 ")",
		nv->ng, zidx, nlb, lba, cap, start);
	return -EIO;
}

static ssize_t p2z_nvme_append(struct p2z_dev *dev, uint64_t zidx,
			       const void *buf, size_t len, uint64_t *lba,
			       unsigned int flags)
{
	struct p2z_nvme *nv = P2Z_NVME(dev);
	uint32_t lba_bytes = dev->info.lba_bytes;
	struct p2z_nvme_cmd c;
	uint64_t result = 0;
	int ret;

	if (dev->flags & P2Z_DEV_RDONLY)
		return -EROFS;
	if (zidx >= dev->info.nr_zones || !len || len % lba_bytes ||
	    len > dev->info.max_append_bytes)
		return -EINVAL;
	memset(&c, 0, sizeof(c));
	c.opcode = nvme_zns_cmd_append;
	c.slba = zidx * dev->info.zone_lba;
	c.cdw12 = p2z_nvme_cdw12(nv, len, flags);
	c.buf = (void *)buf;
	c.len = len;
	ret = p2z_nvme_exec(nv, &c, &result);
	if (ret)
		return ret;
	ret = p2z_nvme_check_landing(nv, zidx, result, len / lba_bytes);
	if (ret)
		return ret;
	*lba = result;
	return len;
}

static int p2z_nvme_zone_mgmt(struct p2z_dev *dev, uint64_t zidx,
			      enum p2z_zone_op op)
{
	static const uint8_t zsa[] = {
		[P2Z_ZONE_OP_RESET] = NVME_ZNS_ZSA_RESET,
		[P2Z_ZONE_OP_OPEN] = NVME_ZNS_ZSA_OPEN,
		[P2Z_ZONE_OP_CLOSE] = NVME_ZNS_ZSA_CLOSE,
		[P2Z_ZONE_OP_FINISH] = NVME_ZNS_ZSA_FINISH,
	};
	struct p2z_nvme_cmd c;

	if (dev->flags & P2Z_DEV_RDONLY)
		return -EROFS;
	if (zidx >= dev->info.nr_zones || (unsigned int)op >= sizeof(zsa))
		return -EINVAL;
	memset(&c, 0, sizeof(c));
	c.opcode = nvme_zns_cmd_mgmt_send;
	c.slba = zidx * dev->info.zone_lba;
	c.cdw13 = zsa[op];
	return p2z_nvme_exec(P2Z_NVME(dev), &c, NULL);
}

static int p2z_nvme_flush(struct p2z_dev *dev)
{
	struct p2z_nvme_cmd c;

	if (dev->flags & P2Z_DEV_RDONLY)
		return 0;
	memset(&c, 0, sizeof(c));
	c.opcode = nvme_cmd_flush;
	return p2z_nvme_exec(P2Z_NVME(dev), &c, NULL);
}

/* ---- asynchronous ---- */

/* Passthrough commands are 128-byte SQEs with 32-byte CQEs. */
#define P2Z_NVME_RING_FLAGS (IORING_SETUP_SQE128 | IORING_SETUP_CQE32)

/* A queue is its own ring on the device (uring.h), or a ring it is given. */
static int p2z_nvme_queue_init(struct p2z_dev *dev, unsigned int depth, int efd,
			       void **bqp)
{
	struct p2z_qring *qr;
	int ret;

	(void)dev;
	ret = p2z_ring_queue_open(depth, P2Z_NVME_RING_FLAGS, efd, &qr);
	if (!ret)
		*bqp = qr;
	return ret;
}

static int p2z_nvme_queue_init_on(struct p2z_dev *dev, unsigned int depth,
				  struct io_uring *ring, uint64_t tag,
				  void **bqp)
{
	struct p2z_qring *qr;
	int ret;

	(void)dev;
	(void)depth;
	ret = p2z_ring_queue_share(ring, P2Z_NVME_RING_FLAGS, tag, &qr);
	if (!ret)
		*bqp = qr;
	return ret;
}

static void p2z_nvme_queue_exit(struct p2z_dev *dev, void *bq)
{
	(void)dev;
	p2z_ring_queue_close(bq);
}

static int p2z_nvme_queue_hold_fd(struct p2z_dev *dev, void *bq, int fd)
{
	(void)dev;
	return p2z_ring_queue_hold_fd(bq, fd);
}

/* The command of one piece, or -errno for a piece the device never sees. */
static int p2z_nvme_io_cmd(struct p2z_nvme *nv, const struct p2z_io *io,
			   struct p2z_nvme_cmd *c)
{
	const struct p2z_dev_info *in = &nv->dev.info;
	bool rdonly = nv->dev.flags & P2Z_DEV_RDONLY;
	int ret = 0;

	memset(c, 0, sizeof(*c));
	switch (io->op) {
	case P2Z_IO_READ:
	case P2Z_IO_WRITE:
		if (io->op == P2Z_IO_WRITE && rdonly)
			return -EROFS;
		ret = p2z_nvme_check_range(nv, io->len, io->ofs);
		if (!ret && io->len > in->max_xfer_bytes)
			ret = -EINVAL;
		if (!ret)
			p2z_nvme_rw_cmd(nv, c,
					io->op == P2Z_IO_READ ? nvme_cmd_read :
								nvme_cmd_write,
					io->buf, io->len, io->ofs, io->flags);
		return ret;
	case P2Z_IO_APPEND:
		if (rdonly)
			return -EROFS;
		if (io->zidx >= in->nr_zones || !io->len ||
		    io->len % in->lba_bytes || io->len > in->max_append_bytes)
			return -EINVAL;
		c->opcode = nvme_zns_cmd_append;
		c->slba = io->zidx * in->zone_lba;
		c->cdw12 = p2z_nvme_cdw12(nv, io->len, io->flags);
		c->buf = io->buf;
		c->len = io->len;
		return 0;
	}
	c->opcode = nvme_cmd_flush;
	return 0;
}

/* Every piece is one passthrough command on the queue's ring. */
static int p2z_nvme_submit(struct p2z_dev *dev, void *bq, struct p2z_io *io)
{
	struct p2z_nvme *nv = P2Z_NVME(dev);
	struct p2z_qring *qr = bq;
	struct io_uring_sqe *sqe;
	struct p2z_nvme_cmd c;
	int ret;

	if (io->op == P2Z_IO_FLUSH && (dev->flags & P2Z_DEV_RDONLY)) {
		io->ret = 0;
		return 1;
	}
	ret = p2z_nvme_io_cmd(nv, io, &c);
	if (ret) {
		io->ret = ret;
		return 1;
	}
	sqe = p2z_ring_queue_sqe(qr);
	if (!sqe)
		return -EBUSY;
	p2z_nvme_prep(nv, sqe, &c);
	io_uring_sqe_set_data(sqe, io);
	return p2z_ring_queue_submit(qr, sqe);
}

/* The result of a piece from its completion. */
static void p2z_nvme_io_done(struct p2z_nvme *nv, struct p2z_io *io,
			     const struct io_uring_cqe *cqe)
{
	uint32_t lba_bytes = nv->dev.info.lba_bytes;
	int ret = p2z_nvme_res(cqe->res);

	if (!ret && io->op == P2Z_IO_APPEND) {
		ret = p2z_nvme_check_landing(nv, io->zidx, cqe->big_cqe[0],
					     io->len / lba_bytes);
		io->lba = cqe->big_cqe[0];
	}
	if (ret)
		io->ret = ret;
	else
		io->ret = io->op == P2Z_IO_FLUSH ? 0 : (ssize_t)io->len;
}

static void p2z_nvme_reap_one(void *arg, struct p2z_io *io,
			      const struct io_uring_cqe *cqe)
{
	p2z_nvme_io_done(arg, io, cqe);
}

static int p2z_nvme_reap(struct p2z_dev *dev, void *bq, bool wait)
{
	struct p2z_nvme *nv = P2Z_NVME(dev);

	return p2z_ring_queue_reap(bq, wait, nv->ng, p2z_nvme_reap_one, nv);
}

static int p2z_nvme_complete(struct p2z_dev *dev, void *bq,
			     const struct io_uring_cqe *cqe)
{
	return p2z_ring_queue_complete(bq, cqe, p2z_nvme_reap_one,
				       P2Z_NVME(dev));
}

static bool p2z_nvme_cond_is_known(uint8_t cond)
{
	switch (cond) {
	case P2Z_ZONE_COND_EMPTY:
	case P2Z_ZONE_COND_IMP_OPEN:
	case P2Z_ZONE_COND_EXP_OPEN:
	case P2Z_ZONE_COND_CLOSED:
	case P2Z_ZONE_COND_READONLY:
	case P2Z_ZONE_COND_FULL:
	case P2Z_ZONE_COND_OFFLINE:
		return true;
	}
	return false;
}

static int p2z_nvme_parse_zone(const struct p2z_dev_info *info,
			       const char *name, uint64_t zidx,
			       const struct nvme_zns_desc *d,
			       struct p2z_zone_info *zi)
{
	uint64_t start = le64toh(d->zslba);
	uint64_t cap = le64toh(d->zcap);
	uint64_t wp = le64toh(d->wp);
	uint8_t cond = d->zs >> 4;
	uint64_t zslba;

	if ((d->zt & 0xf) != NVME_ZONE_TYPE_SEQWRITE_REQ ||
	    !p2z_nvme_cond_is_known(cond) || zidx >= info->nr_zones ||
	    __builtin_mul_overflow(zidx, info->zone_lba, &zslba) ||
	    start != zslba || cap > info->zone_lba) {
		p2z_log(LOG_ERR,
			"%s: zone %" PRIu64 ": bad descriptor (type 0x%x"
			" state 0x%x zslba %" PRIu64 " zcap %" PRIu64 ")",
			name, zidx, d->zt, d->zs, start, cap);
		return -EIO;
	}
	zi->start_lba = start;
	zi->cap_lba = cap;
	zi->type = P2Z_ZONE_TYPE_SEQ;
	zi->cond = cond;
	/*
	 * The write pointer of a full, read-only or offline zone is not valid
	 * (QEMU reports all ones, see nvme_wp_is_valid()). A full zone holds
	 * its capacity; of a read-only or offline one nothing is known to be
	 * readable, so it reads as empty, as zonefs shows it.
	 */
	switch (cond) {
	case P2Z_ZONE_COND_FULL:
		zi->wp_lba = start + cap;
		break;
	case P2Z_ZONE_COND_READONLY:
	case P2Z_ZONE_COND_OFFLINE:
		zi->wp_lba = start;
		break;
	default:
		if (wp < start || wp - start > cap) {
			p2z_log(LOG_ERR,
				"%s: zone %" PRIu64 ": write pointer %" PRIu64
				" outside the zone",
				name, zidx, wp);
			return -EIO;
		}
		zi->wp_lba = wp;
	}
	return 0;
}

int p2z_nvme_report_parse(const struct p2z_dev_info *info, const char *name,
			  uint64_t zidx, unsigned int nr,
			  const struct nvme_zone_report *rep, size_t len,
			  struct p2z_zone_info *zi)
{
	const size_t hdr = sizeof(struct nvme_zone_report);
	const size_t desc = sizeof(struct nvme_zns_desc);
	uint64_t got, i;
	int ret;

	got = len < hdr ? 0 : le64toh(rep->nr_zones);
	if (!got || got > nr || got > (len - hdr) / desc || got > INT_MAX) {
		p2z_log(LOG_ERR,
			"%s: report from zone %" PRIu64 ": %" PRIu64
			" zones for %u asked, in %zu bytes",
			name, zidx, got, nr, len);
		return -EIO;
	}
	for (i = 0; i < got; i++) {
		ret = p2z_nvme_parse_zone(info, name, zidx + i,
					  &rep->entries[i], &zi[i]);
		if (ret)
			return ret;
	}
	return (int)got;
}

/* Remember the capacities of @nr zones from @zidx for append checks. */
static void p2z_nvme_note_caps(struct p2z_nvme *nv, uint64_t zidx,
			       const struct p2z_zone_info *zi, int nr)
{
	int i;

	for (i = 0; i < nr; i++)
		__atomic_store_n(&nv->cap_lba[zidx + i], zi[i].cap_lba,
				 __ATOMIC_RELAXED);
}

/* Zone Management Receive, basic report of all zones, partial. */
static int p2z_nvme_report_zones(struct p2z_dev *dev, uint64_t zidx,
				 unsigned int nr, struct p2z_zone_info *zi)
{
	struct p2z_nvme *nv = P2Z_NVME(dev);
	const size_t desc = sizeof(struct nvme_zns_desc);
	size_t hdr = sizeof(struct nvme_zone_report);
	unsigned int per_cmd = 1; /* one zone's report fits any MDTS */
	struct nvme_zone_report *rep;
	struct p2z_nvme_cmd c;
	unsigned int done = 0;
	int ret = 0;

	if (zidx >= dev->info.nr_zones || !nr)
		return 0;
	if (nr > INT_MAX)
		nr = INT_MAX;
	if (nr > dev->info.nr_zones - zidx)
		nr = dev->info.nr_zones - zidx;
	if (dev->info.max_xfer_bytes > hdr + desc)
		per_cmd = (dev->info.max_xfer_bytes - hdr) / desc;
	if (per_cmd > nr)
		per_cmd = nr;
	rep = aligned_alloc(4096, (hdr + per_cmd * desc + 4095) / 4096 * 4096);
	if (!rep)
		return -ENOMEM;
	while (done < nr) {
		unsigned int n = nr - done < per_cmd ? nr - done : per_cmd;

		memset(&c, 0, sizeof(c));
		c.opcode = nvme_zns_cmd_mgmt_recv;
		c.slba = (zidx + done) * dev->info.zone_lba;
		c.len = hdr + n * desc;
		c.cdw12 = c.len / 4 - 1; /* NUMD, 0-based dwords */
		c.cdw13 = NVME_ZNS_ZRA_REPORT_ZONES |
			  NVME_ZNS_ZRAS_REPORT_ALL << 8 |
			  1U << 16; /* partial */
		c.buf = rep;
		memset(rep, 0, c.len);
		ret = p2z_nvme_exec(nv, &c, NULL);
		if (ret)
			break;
		/* At least one zone or -EIO: every round makes progress. */
		ret = p2z_nvme_report_parse(&dev->info, nv->ng, zidx + done, n,
					    rep, c.len, &zi[done]);
		if (ret < 0)
			break;
		p2z_nvme_note_caps(nv, zidx + done, &zi[done], ret);
		done += ret;
		ret = 0;
	}
	free(rep);
	return ret ? ret : (int)done;
}

/* ---- open/close ---- */

static void p2z_nvme_close(struct p2z_dev *dev)
{
	struct p2z_nvme *nv = P2Z_NVME(dev);

	/* No call is in flight: every thread's ring can go. */
	p2z_rings_destroy(&nv->rings);
	p2z_nvme_path_close(&nv->np);
	free(nv->cap_lba);
	free(nv);
}

/* Every zone's capacity is its size until a report says otherwise. */
static int p2z_nvme_caps_alloc(struct p2z_nvme *nv)
{
	uint64_t z;

	nv->cap_lba = calloc(nv->dev.info.nr_zones, sizeof(*nv->cap_lba));
	if (!nv->cap_lba)
		return -ENOMEM;
	for (z = 0; z < nv->dev.info.nr_zones; z++)
		nv->cap_lba[z] = nv->dev.info.zone_lba;
	return 0;
}

static int p2z_nvme_open(const char *path, unsigned int flags,
			 struct p2z_dev **devp)
{
	int oflags = flags & P2Z_DEV_RDONLY ? O_RDONLY : O_RDWR;
	struct p2z_nvme_path *w;
	struct p2z_nvme *nv;
	int ret;

	w = calloc(1, sizeof(*w));
	nv = calloc(1, sizeof(*nv));
	if (!w || !nv) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = p2z_nvme_path_open(path, oflags, w);
	if (ret)
		goto out_free;
	/* Owned for as long as it is open, unless only looked at. */
	if (!(flags & P2Z_DEV_PEEK)) {
		ret = p2z_nvme_path_claim(w);
		if (ret)
			goto out_close;
	}
	ret = p2z_nvme_identify(nv, w);
	if (ret)
		goto out_close;
	ret = p2z_nvme_caps_alloc(nv);
	if (ret)
		goto out_close;
	snprintf(nv->ng, sizeof(nv->ng), "%s", w->ng);
	nv->dma_mask = p2z_nvme_path_dma_mask("/sys", w) | 3;
	nv->dev.info.buf_align = nv->dma_mask + 1;
	ret = p2z_rings_init(&nv->rings, P2Z_NVME_QD,
			     IORING_SETUP_SQE128 | IORING_SETUP_CQE32,
			     nv->dma_mask > 3 ? nv->dev.info.max_xfer_bytes : 0,
			     nv->ng);
	if (ret)
		goto out_close;
	nv->np = *w;
	nv->fd = w->fd;
	nv->nsid = w->nsid;
	nv->dev.flags = flags;
	free(w);
	*devp = &nv->dev;
	return 0;

out_close:
	p2z_nvme_path_close(w);
out_free:
	if (nv)
		free(nv->cap_lba);
	free(nv);
	free(w);
	return ret;
}

const struct p2z_dev_ops p2z_dev_nvme_ops = {
	.name = "nvme",
	.fua = true,
	.splits_reads = true,
	.probe = p2z_nvme_path_probe,
	.open = p2z_nvme_open,
	.close = p2z_nvme_close,
	.report_zones = p2z_nvme_report_zones,
	.zone_mgmt = p2z_nvme_zone_mgmt,
	.pread = p2z_nvme_pread,
	.pwrite = p2z_nvme_pwrite,
	.append = p2z_nvme_append,
	.flush = p2z_nvme_flush,
	.queue_init = p2z_nvme_queue_init,
	.queue_exit = p2z_nvme_queue_exit,
	.submit = p2z_nvme_submit,
	.reap = p2z_nvme_reap,
	.queue_hold_fd = p2z_nvme_queue_hold_fd,
	.queue_init_on = p2z_nvme_queue_init_on,
	.complete = p2z_nvme_complete,
	.queue_qring = p2z_ring_queue_self,
};
