// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the asynchronous device interface (dev_queue.c): over a
 * scripted fake backend with asynchronous ops of its own, which completes
 * everything in flight in the reverse order of submission (splitting,
 * ordering, errors, FUA, draining at close), and over the emu backend,
 * whose reads go on an io_uring of each queue (emu_async.c: exact bytes of
 * many reads in flight, appends, the eventfd, buffered, direct and with a
 * volatile cache; no thread started).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <liburing.h>

#include "p2z_check.h"
#include "po2zfs/dev.h"
#include "po2zfs/emu.h"
#include "emu_priv.h"
#include "uring.h"

#define LBA 512U
#define XFER (8U * LBA)
#define APPEND (3U * LBA)
#define MAX_PIECES 128

/**
 * struct fake - a scripted backend with asynchronous ops
 * @dev: generic part
 * @nr: pieces submitted
 * @op: op of each piece
 * @len: length of each piece
 * @ofs: offset of each piece (zone index for appends)
 * @flags: flags of each piece
 * @busy_at: pieces in flight when each was submitted (itself not counted)
 * @fly: pieces in flight, in submission order
 * @nr_fly: number of them
 * @max_fly: most pieces in flight at once
 * @fail_at: piece number that completes with @fail_ret, or -1
 * @fail_ret: see @fail_at
 * @reject_at: piece number whose submission fails with -EAGAIN, or -1
 * @sync_at: piece number the backend completes in its submit, or -1
 * @flush_ret: what a flush piece completes with
 * @next_lba: where the next append lands
 * @stray_at: append piece that lands 50 LBAs further, or -1
 * @nr_init: queue_init calls
 * @nr_exit: queue_exit calls
 */
struct fake {
	struct p2z_dev dev;
	unsigned int nr;
	unsigned int op[MAX_PIECES];
	size_t len[MAX_PIECES];
	uint64_t ofs[MAX_PIECES];
	unsigned int flags[MAX_PIECES];
	unsigned int busy_at[MAX_PIECES];
	struct p2z_io *fly[MAX_PIECES];
	unsigned int nr_fly;
	unsigned int max_fly;
	int fail_at;
	ssize_t fail_ret;
	int reject_at;
	int sync_at;
	int flush_ret;
	uint64_t next_lba;
	int stray_at;
	unsigned int nr_init;
	unsigned int nr_exit;
};

static struct fake fk;

/* The byte at native offset @x of the fake device. */
static unsigned char pattern(uint64_t x)
{
	return (unsigned char)(x * 7 + (x >> 9) * 13 + 1);
}

static ssize_t fake_pread(struct p2z_dev *dev, void *buf, size_t len,
			  uint64_t ofs)
{
	(void)dev;
	(void)buf;
	(void)ofs;
	return (ssize_t)len;
}

static ssize_t fake_pwrite(struct p2z_dev *dev, const void *buf, size_t len,
			   uint64_t ofs, unsigned int flags)
{
	(void)dev;
	(void)buf;
	(void)ofs;
	(void)flags;
	return (ssize_t)len;
}

static ssize_t fake_append(struct p2z_dev *dev, uint64_t zidx, const void *buf,
			   size_t len, uint64_t *lba, unsigned int flags)
{
	(void)dev;
	(void)zidx;
	(void)buf;
	(void)flags;
	*lba = 0;
	return (ssize_t)len;
}

static int fake_report(struct p2z_dev *dev, uint64_t zidx, unsigned int nr,
		       struct p2z_zone_info *zi)
{
	(void)dev;
	(void)zidx;
	(void)zi;
	return (int)nr;
}

static int fake_mgmt(struct p2z_dev *dev, uint64_t zidx, enum p2z_zone_op op)
{
	(void)dev;
	(void)zidx;
	(void)op;
	return 0;
}

static int fake_flush(struct p2z_dev *dev)
{
	(void)dev;
	return 0;
}

static void fake_close(struct p2z_dev *dev)
{
	(void)dev;
}

static int fake_open(const char *path, unsigned int flags,
		     struct p2z_dev **devp)
{
	(void)path;
	(void)flags;
	*devp = &fk.dev;
	return 0;
}

static int fake_queue_init(struct p2z_dev *dev, unsigned int depth, int efd,
			   void **bqp)
{
	(void)dev;
	(void)depth;
	(void)efd;
	fk.nr_init++;
	*bqp = &fk;
	return 0;
}

static void fake_queue_exit(struct p2z_dev *dev, void *bq)
{
	(void)dev;
	ck_assert_ptr_eq(bq, &fk);
	ck_assert_uint_eq(fk.nr_fly, 0);
	fk.nr_exit++;
}

static void fake_complete(struct p2z_io *io);

static int fake_submit(struct p2z_dev *dev, void *bq, struct p2z_io *io)
{
	unsigned int n = fk.nr++;

	(void)dev;
	(void)bq;
	ck_assert_uint_lt(n, MAX_PIECES);
	ck_assert_uint_gt(io->len + (io->op == P2Z_IO_FLUSH), 0);
	fk.op[n] = io->op;
	fk.len[n] = io->len;
	fk.ofs[n] = io->op == P2Z_IO_APPEND ? io->zidx : io->ofs;
	fk.flags[n] = io->flags;
	fk.busy_at[n] = fk.nr_fly;
	if ((int)n == fk.reject_at)
		return -EAGAIN;
	/* n rides in io->st's spare field: the piece's state is ours */
	io->st.pieces = n;
	if ((int)n == fk.sync_at) {
		fake_complete(io);
		return 1;
	}
	fk.fly[fk.nr_fly++] = io;
	if (fk.nr_fly > fk.max_fly)
		fk.max_fly = fk.nr_fly;
	return 0;
}

static void fake_complete(struct p2z_io *io)
{
	int n = (int)io->st.pieces;
	size_t i;

	switch (io->op) {
	case P2Z_IO_READ:
		for (i = 0; i < io->len; i++)
			((unsigned char *)io->buf)[i] = pattern(io->ofs + i);
		io->ret = (ssize_t)io->len;
		break;
	case P2Z_IO_APPEND:
		io->lba = fk.next_lba + (n == fk.stray_at ? 50 : 0);
		fk.next_lba = io->lba + io->len / LBA;
		/* fall through */
	case P2Z_IO_WRITE:
		io->ret = (ssize_t)io->len;
		break;
	default:
		io->ret = fk.flush_ret;
	}
	if (n == fk.fail_at)
		io->ret = fk.fail_ret;
}

/* Everything in flight completes, the last submitted first. */
static int fake_reap(struct p2z_dev *dev, void *bq, bool wait)
{
	struct p2z_io *done[MAX_PIECES];
	unsigned int nr = fk.nr_fly, i;

	(void)dev;
	(void)bq;
	ck_assert(!wait || nr);
	memcpy(done, fk.fly, nr * sizeof(done[0]));
	fk.nr_fly = 0;
	for (i = nr; i-- > 0;) {
		fake_complete(done[i]);
		done[i]->end_io(done[i]);
	}
	return (int)nr;
}

#define FAKE_OPS(has_fua)                                             \
	{                                                             \
		.name = "fake", .fua = (has_fua), .open = fake_open,  \
		.close = fake_close, .report_zones = fake_report,     \
		.zone_mgmt = fake_mgmt, .pread = fake_pread,          \
		.pwrite = fake_pwrite, .append = fake_append,         \
		.flush = fake_flush, .queue_init = fake_queue_init,   \
		.queue_exit = fake_queue_exit, .submit = fake_submit, \
		.reap = fake_reap,                                    \
	}

static const struct p2z_dev_ops fake_ops = FAKE_OPS(false);
static const struct p2z_dev_ops fake_fua_ops = FAKE_OPS(true);

static struct p2z_dev *fake_dev(const struct p2z_dev_ops *ops)
{
	memset(&fk, 0, sizeof(fk));
	fk.fail_at = -1;
	fk.reject_at = -1;
	fk.sync_at = -1;
	fk.stray_at = -1;
	fk.next_lba = 1000;
	fk.dev.ops = ops;
	fk.dev.info = (struct p2z_dev_info){
		.lba_bytes = LBA,
		.nr_zones = 4,
		.zone_lba = 100,
		.max_append_bytes = APPEND,
		.max_xfer_bytes = XFER,
		.buf_align = 1,
	};
	return &fk.dev;
}

/* What the completions did: end_io calls per io, in order. */
static struct p2z_io *order[MAX_PIECES];
static unsigned int nr_order;

static void record_end_io(struct p2z_io *io)
{
	ck_assert_uint_lt(nr_order, MAX_PIECES);
	order[nr_order++] = io;
	(*(unsigned int *)io->private)++;
}

static void mkio(struct p2z_io *io, unsigned int op, void *buf, size_t len,
		 uint64_t ofs, unsigned int *calls)
{
	memset(io, 0, sizeof(*io));
	io->op = op;
	io->buf = buf;
	io->len = len;
	io->ofs = ofs;
	io->zidx = ofs;
	io->end_io = record_end_io;
	io->private = calls;
	*calls = 0;
	nr_order = 0;
}

static struct p2z_dev_queue *qopen(struct p2z_dev *dev, unsigned int depth)
{
	struct p2z_dev_queue *q = NULL;

	ck_assert_int_eq(p2z_dev_queue_open(dev, depth, &q), 0);
	ck_assert_ptr_nonnull(q);
	return q;
}

static void check_pattern(const unsigned char *b, size_t len, uint64_t ofs)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != pattern(ofs + i))
			ck_abort_msg("byte %zu of the read at %llu: %u, not %u",
				     i, (unsigned long long)ofs, b[i],
				     pattern(ofs + i));
}

static unsigned char rbuf[64 * LBA];

/* Many single-piece reads in flight, completing in reverse order. */
START_TEST(test_reads_out_of_order)
{
	struct p2z_dev_queue *q = qopen(fake_dev(&fake_ops), 16);
	struct p2z_io io[8];
	unsigned int calls[8];
	int i;

	memset(rbuf, 0, sizeof(rbuf));
	for (i = 0; i < 8; i++) {
		mkio(&io[i], P2Z_IO_READ, rbuf + i * 3 * LBA, 3 * LBA,
		     (uint64_t)(7 - i) * 5 * LBA, &calls[i]);
	}
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(p2z_dev_submit(q, &io[i]), 0);
	ck_assert_uint_eq(fk.max_fly, 8);
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 8);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 8), 8);
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 0);
	for (i = 0; i < 8; i++) {
		ck_assert_uint_eq(calls[i], 1);
		ck_assert_int_eq(io[i].ret, 3 * LBA);
		check_pattern(rbuf + i * 3 * LBA, 3 * LBA, io[i].ofs);
		/* the last submitted completed first */
		ck_assert_ptr_eq(order[i], &io[7 - i]);
	}
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_READ].nr, 8);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_READ].bytes, 8 * 3 * LBA);
	p2z_dev_queue_close(q);
	ck_assert_uint_eq(fk.nr_exit, 1);
}
END_TEST

/* 20 LBAs, 8 per piece: 3 pieces at once, one completion with the total. */
START_TEST(test_split_read_completes_once)
{
	struct p2z_dev_queue *q = qopen(fake_dev(&fake_ops), 16);
	struct p2z_io io;
	unsigned int calls;

	mkio(&io, P2Z_IO_READ, rbuf, 20 * LBA, 40 * LBA, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_uint_eq(fk.nr, 3);
	ck_assert_uint_eq(fk.max_fly, 3);
	ck_assert_uint_eq(fk.len[0], XFER);
	ck_assert_uint_eq(fk.len[1], XFER);
	ck_assert_uint_eq(fk.len[2], 4 * LBA);
	ck_assert_uint_eq(fk.ofs[2], 56 * LBA);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_uint_eq(calls, 1);
	ck_assert_int_eq(io.ret, 20 * LBA);
	check_pattern(rbuf, 20 * LBA, 40 * LBA);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_READ].nr, 1);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_READ].bytes, 20 * LBA);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 0), 0);
	p2z_dev_queue_close(q);
}
END_TEST

/* Depth 2: never more than 2 pieces out; the rest waits in the queue. */
START_TEST(test_depth_limits_pieces)
{
	struct p2z_dev_queue *q = qopen(fake_dev(&fake_ops), 2);
	struct p2z_io io[2];
	unsigned int calls[2];

	mkio(&io[0], P2Z_IO_READ, rbuf, 40 * LBA, 0, &calls[0]);
	mkio(&io[1], P2Z_IO_READ, rbuf + 40 * LBA, 8 * LBA, 80 * LBA,
	     &calls[1]);
	ck_assert_int_eq(p2z_dev_submit(q, &io[0]), 0);
	ck_assert_int_eq(p2z_dev_submit(q, &io[1]), 0);
	ck_assert_uint_eq(fk.nr, 2);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 2), 2);
	ck_assert_uint_eq(fk.nr, 6);
	ck_assert_uint_eq(fk.max_fly, 2);
	ck_assert_int_eq(io[0].ret, 40 * LBA);
	ck_assert_int_eq(io[1].ret, 8 * LBA);
	ck_assert_uint_eq(calls[0] + calls[1], 2);
	check_pattern(rbuf, 40 * LBA, 0);
	check_pattern(rbuf + 40 * LBA, 8 * LBA, 80 * LBA);
	p2z_dev_queue_close(q);
}
END_TEST

/* 8 LBAs, 3 per append: pieces one at a time, landing contiguously. */
START_TEST(test_split_append_in_order)
{
	struct p2z_dev_queue *q = qopen(fake_dev(&fake_ops), 16);
	struct p2z_io io;
	unsigned int calls, i;

	mkio(&io, P2Z_IO_APPEND, rbuf, 8 * LBA, 2, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_uint_eq(fk.nr, 1);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_uint_eq(calls, 1);
	ck_assert_int_eq(io.ret, 8 * LBA);
	ck_assert_uint_eq(io.lba, 1000);
	ck_assert_uint_eq(fk.nr, 3);
	for (i = 0; i < 3; i++) {
		ck_assert_uint_eq(fk.op[i], P2Z_IO_APPEND);
		ck_assert_uint_eq(fk.ofs[i], 2);
		ck_assert_uint_eq(fk.busy_at[i], 0);
		ck_assert_uint_eq(fk.len[i], i < 2 ? APPEND : 2 * LBA);
	}
	ck_assert_uint_eq(fk.next_lba, 1008);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_APPEND].nr, 1);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_APPEND].bytes, 8 * LBA);
	p2z_dev_queue_close(q);
}
END_TEST

/* The second piece lands elsewhere: -EIO, and no third piece. */
START_TEST(test_split_append_strayed)
{
	struct p2z_dev_queue *q = qopen(fake_dev(&fake_ops), 16);
	struct p2z_io io;
	unsigned int calls;

	fk.stray_at = 1;
	mkio(&io, P2Z_IO_APPEND, rbuf, 8 * LBA, 1, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_uint_eq(calls, 1);
	ck_assert_int_eq(io.ret, -EIO);
	ck_assert_uint_eq(io.lba, 1000);
	ck_assert_uint_eq(fk.nr, 2);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_APPEND].nr_err, 1);
	p2z_dev_queue_close(q);
}
END_TEST

/* Writes go piece after piece too, each at the offset after the last. */
START_TEST(test_split_write_in_order)
{
	struct p2z_dev_queue *q = qopen(fake_dev(&fake_ops), 16);
	struct p2z_io io;
	unsigned int calls, i;

	mkio(&io, P2Z_IO_WRITE, rbuf, 20 * LBA, 100 * LBA, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_int_eq(io.ret, 20 * LBA);
	ck_assert_uint_eq(fk.nr, 3);
	for (i = 0; i < 3; i++) {
		ck_assert_uint_eq(fk.busy_at[i], 0);
		ck_assert_uint_eq(fk.ofs[i], 100 * LBA + i * XFER);
		ck_assert_uint_eq(fk.flags[i], 0);
	}
	p2z_dev_queue_close(q);
}
END_TEST

/*
 * FUA without native FUA: pieces without the flag, one flush after the
 * last piece; with native FUA: the flag on every piece, no flush. A
 * failing flush fails the write.
 */
START_TEST(test_fua_flush_after_last_piece)
{
	struct p2z_dev_queue *q = qopen(fake_dev(&fake_ops), 16);
	struct p2z_io io;
	unsigned int calls, i;

	mkio(&io, P2Z_IO_WRITE, rbuf, 20 * LBA, 0, &calls);
	io.flags = P2Z_IO_FUA;
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_int_eq(io.ret, 20 * LBA);
	ck_assert_uint_eq(calls, 1);
	ck_assert_uint_eq(fk.nr, 4);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(fk.flags[i], 0);
	ck_assert_uint_eq(fk.op[3], P2Z_IO_FLUSH);
	ck_assert_uint_eq(fk.busy_at[3], 0);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_FLUSH].nr, 1);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_FUA].nr, 1);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_WRITE].nr, 1);

	fk.flush_ret = -EIO;
	mkio(&io, P2Z_IO_APPEND, rbuf, 4 * LBA, 0, &calls);
	io.flags = P2Z_IO_FUA;
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_int_eq(io.ret, -EIO);
	ck_assert_uint_eq(fk.nr, 7);
	ck_assert_uint_eq(fk.op[6], P2Z_IO_FLUSH);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_FUA].nr_err, 1);
	p2z_dev_queue_close(q);

	q = qopen(fake_dev(&fake_fua_ops), 16);
	mkio(&io, P2Z_IO_WRITE, rbuf, 20 * LBA, 0, &calls);
	io.flags = P2Z_IO_FUA;
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_int_eq(io.ret, 20 * LBA);
	ck_assert_uint_eq(fk.nr, 3);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(fk.flags[i], P2Z_IO_FUA);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_FLUSH].nr, 0);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_FUA].nr, 1);
	p2z_dev_queue_close(q);
}
END_TEST

/*
 * The middle piece fails: a read fails with its errno once all pieces
 * are back; a write or append returns what the first piece wrote and
 * issues no third piece.
 */
START_TEST(test_error_in_middle_piece)
{
	struct p2z_dev_queue *q = qopen(fake_dev(&fake_ops), 16);
	struct p2z_io io;
	unsigned int calls;

	fk.fail_at = 1;
	fk.fail_ret = -ENXIO;
	mkio(&io, P2Z_IO_READ, rbuf, 20 * LBA, 0, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_uint_eq(calls, 1);
	ck_assert_int_eq(io.ret, -ENXIO);
	ck_assert_uint_eq(fk.dev.stats[P2Z_DEV_STAT_READ].nr_err, 1);
	p2z_dev_queue_close(q);

	q = qopen(fake_dev(&fake_ops), 16);
	fk.fail_at = 1;
	fk.fail_ret = -EILSEQ;
	mkio(&io, P2Z_IO_WRITE, rbuf, 20 * LBA, 0, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_int_eq(io.ret, XFER);
	ck_assert_uint_eq(fk.nr, 2);

	fk.fail_at = 3;
	fk.fail_ret = -ENOSPC;
	mkio(&io, P2Z_IO_APPEND, rbuf, 8 * LBA, 0, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_int_eq(io.ret, APPEND);
	ck_assert_uint_eq(fk.nr, 4);

	/* the first piece failing: its errno */
	fk.fail_at = 4;
	mkio(&io, P2Z_IO_APPEND, rbuf, 8 * LBA, 0, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_int_eq(io.ret, -ENOSPC);
	ck_assert_uint_eq(calls, 1);
	p2z_dev_queue_close(q);
}
END_TEST

/* A piece the backend refuses completes its io with the errno, later. */
START_TEST(test_backend_refuses_piece)
{
	struct p2z_dev_queue *q = qopen(fake_dev(&fake_ops), 16);
	struct p2z_io io;
	unsigned int calls;

	fk.reject_at = 2;
	mkio(&io, P2Z_IO_READ, rbuf, 20 * LBA, 0, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_uint_eq(calls, 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_uint_eq(calls, 1);
	ck_assert_int_eq(io.ret, -EAGAIN);
	p2z_dev_queue_close(q);
}
END_TEST

/*
 * Pieces the backend completes in its submit (zbd's appends): a split
 * append goes on, lands contiguously, and completes from the reap only.
 */
START_TEST(test_backend_completes_in_submit)
{
	struct p2z_dev_queue *q = qopen(fake_dev(&fake_ops), 16);
	struct p2z_io io;
	unsigned int calls;

	fk.sync_at = 0;
	mkio(&io, P2Z_IO_APPEND, rbuf, 8 * LBA, 3, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_uint_eq(fk.nr, 2);
	ck_assert_uint_eq(calls, 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_uint_eq(calls, 1);
	ck_assert_int_eq(io.ret, 8 * LBA);
	ck_assert_uint_eq(io.lba, 1000);
	ck_assert_uint_eq(fk.nr, 3);

	/* all of it in the submit: the eventfd says so */
	fk.sync_at = 3;
	mkio(&io, P2Z_IO_READ, rbuf, 2 * LBA, 0, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_uint_eq(calls, 0);
	{
		struct pollfd pfd = { .fd = p2z_dev_queue_fd(q),
				      .events = POLLIN };

		ck_assert_int_eq(poll(&pfd, 1, 0), 1);
	}
	ck_assert_int_eq(p2z_dev_queue_reap(q, 0), 1);
	ck_assert_int_eq(io.ret, 2 * LBA);
	check_pattern(rbuf, 2 * LBA, 0);
	p2z_dev_queue_close(q);
}
END_TEST

/* Bad requests are refused at submission and never complete. */
START_TEST(test_submit_checks)
{
	struct p2z_dev_queue *q = qopen(fake_dev(&fake_ops), 16);
	struct p2z_io io;
	unsigned int calls;

	mkio(&io, P2Z_IO_READ, rbuf, LBA + 1, 0, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), -EINVAL);
	mkio(&io, P2Z_IO_WRITE, rbuf, LBA, 1, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), -EINVAL);
	mkio(&io, P2Z_IO_APPEND, rbuf, LBA, 4, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), -EINVAL);
	mkio(&io, 9, rbuf, LBA, 0, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io), -EINVAL);
	mkio(&io, P2Z_IO_READ, rbuf, LBA, 0, &calls);
	io.end_io = NULL;
	ck_assert_int_eq(p2z_dev_submit(q, &io), -EINVAL);
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 0);
	ck_assert_uint_eq(calls, 0);
	ck_assert_uint_eq(fk.nr, 0);
	ck_assert_int_eq(p2z_dev_queue_open(&fk.dev, 0, &q), -EINVAL);
	ck_assert_int_eq(p2z_dev_queue_open(&fk.dev, 4097, &q), -EINVAL);

	/* zero length: answered without the backend, signalled */
	mkio(&io, P2Z_IO_WRITE, rbuf, 0, 0, &calls);
	io.ret = 77;
	ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
	ck_assert_uint_eq(calls, 0);
	{
		struct pollfd pfd = { .fd = p2z_dev_queue_fd(q),
				      .events = POLLIN };

		ck_assert_int_eq(poll(&pfd, 1, 0), 1);
		ck_assert_int_eq(p2z_dev_queue_reap(q, 0), 1);
		ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	}
	ck_assert_uint_eq(calls, 1);
	ck_assert_int_eq(io.ret, 0);
	ck_assert_uint_eq(fk.nr, 0);
	p2z_dev_queue_close(q);
}
END_TEST

/* Closing with ios in flight and waiting: every end_io runs once. */
START_TEST(test_close_drains)
{
	struct p2z_dev_queue *q = qopen(fake_dev(&fake_ops), 2);
	struct p2z_io io[6];
	unsigned int calls[6];
	int i;

	for (i = 0; i < 6; i++) {
		mkio(&io[i], i % 2 ? P2Z_IO_WRITE : P2Z_IO_READ,
		     rbuf + i * XFER, 2 * XFER, (uint64_t)i * 2 * XFER,
		     &calls[i]);
		ck_assert_int_eq(p2z_dev_submit(q, &io[i]), 0);
	}
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 6);
	p2z_dev_queue_close(q);
	ck_assert_uint_eq(fk.nr_exit, 1);
	ck_assert_uint_eq(fk.nr, 12);
	for (i = 0; i < 6; i++) {
		ck_assert_uint_eq(calls[i], 1);
		ck_assert_int_eq(io[i].ret, 2 * XFER);
	}
}
END_TEST

/* An end_io submitting the next io: a chain of 5 on one io struct. */
static unsigned int chain_left;
static struct p2z_dev_queue *chain_q;

static void chain_end_io(struct p2z_io *io)
{
	ck_assert_int_eq(io->ret, LBA);
	if (--chain_left) {
		io->ofs += LBA;
		ck_assert_int_eq(p2z_dev_submit(chain_q, io), 0);
	}
}

START_TEST(test_end_io_submits)
{
	struct p2z_io io = { .op = P2Z_IO_READ, .buf = rbuf, .len = LBA };

	chain_q = qopen(fake_dev(&fake_ops), 1);
	chain_left = 5;
	io.end_io = chain_end_io;
	ck_assert_int_eq(p2z_dev_submit(chain_q, &io), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(chain_q, 5), 5);
	ck_assert_uint_eq(chain_left, 0);
	ck_assert_uint_eq(io.ofs, 4 * LBA);
	ck_assert_uint_eq(fk.nr, 5);
	p2z_dev_queue_close(chain_q);
}
END_TEST

/* The emu backend: its own asynchronous ops (emu_async.c) */

#define ZONE_LBA 256U
#define NR_ZONES 4U

static char tmpdir[PATH_MAX];
static char img[PATH_MAX + 16];

static void emu_setup(void)
{
	p2z_check_mkdtemp(tmpdir, sizeof(tmpdir), "check_async");
	snprintf(img, sizeof(img), "%s/z.img", tmpdir);
}

static void emu_teardown(void)
{
	p2z_check_rmdtemp(tmpdir);
}

static struct p2z_dev *emu_dev_c(unsigned int flags, unsigned int cflags)
{
	struct p2z_emu_params p = {
		.lba_bytes = LBA,
		.zone_bytes = ZONE_LBA * LBA,
		.cap_bytes = ZONE_LBA * LBA,
		.nr_zones = NR_ZONES,
		.max_append_bytes = 4 * LBA,
	};
	struct p2z_dev *dev = NULL;

	ck_assert_int_eq(p2z_emu_create(img, &p, cflags), 0);
	ck_assert_int_eq(p2z_dev_open(img, "emu", flags, &dev), 0);
	return dev;
}

static struct p2z_dev *emu_dev(unsigned int flags)
{
	return emu_dev_c(flags, 0);
}

static unsigned char *emu_buf(size_t len)
{
	unsigned char *b = aligned_alloc(4096, len);

	ck_assert_ptr_nonnull(b);
	return b;
}

static void count_end_io(struct p2z_io *io)
{
	(*(unsigned int *)io->private)++;
}

/*
 * Zone 1 written by 4 async writes in order (each submitted after the
 * previous one completed), then read back by 64 one-LBA reads in flight
 * 16 at a time, exact bytes; an append of 12 LBAs (3 pieces) lands at the
 * write pointer; the eventfd says when completions wait.
 */
static void emu_async_round(unsigned int flags)
{
	struct p2z_dev *dev = emu_dev(flags);
	struct p2z_dev_queue *q = qopen(dev, 16);
	size_t zbytes = ZONE_LBA * LBA;
	unsigned char *w = emu_buf(zbytes), *r = emu_buf(zbytes);
	struct pollfd pfd = { .events = POLLIN };
	struct p2z_io io[64];
	unsigned int calls = 0;
	size_t i;

	for (i = 0; i < zbytes; i++)
		w[i] = pattern(i);
	memset(r, 0, zbytes);
	for (i = 0; i < 4; i++) {
		io[i] = (struct p2z_io){ .op = P2Z_IO_WRITE,
					 .buf = w + i * 16 * LBA,
					 .len = 16 * LBA,
					 .ofs = zbytes + i * 16 * LBA,
					 .flags = i == 3 ? P2Z_IO_FUA : 0,
					 .end_io = count_end_io,
					 .private = &calls };
		ck_assert_int_eq(p2z_dev_submit(q, &io[i]), 0);
		ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
		ck_assert_int_eq(io[i].ret, 16 * LBA);
	}
	ck_assert_uint_eq(dev->stats[P2Z_DEV_STAT_FUA].nr, 1);
	for (i = 0; i < 64; i++) {
		io[i] = (struct p2z_io){ .op = P2Z_IO_READ,
					 .buf = r + i * LBA,
					 .len = LBA,
					 .ofs = zbytes + i * LBA,
					 .end_io = count_end_io,
					 .private = &calls };
		ck_assert_int_eq(p2z_dev_submit(q, &io[i]), 0);
	}
	pfd.fd = p2z_dev_queue_fd(q);
	ck_assert_int_eq(poll(&pfd, 1, 10000), 1);
	calls = 0;
	while (calls < 64)
		ck_assert_int_ge(p2z_dev_queue_reap(q, 1), 1);
	for (i = 0; i < 64; i++)
		ck_assert_int_eq(io[i].ret, LBA);
	ck_assert_int_eq(memcmp(r, w, 64 * LBA), 0);

	io[0] = (struct p2z_io){ .op = P2Z_IO_APPEND,
				 .buf = w,
				 .len = 12 * LBA,
				 .zidx = 1,
				 .flags = P2Z_IO_FUA,
				 .end_io = count_end_io,
				 .private = &calls };
	ck_assert_int_eq(p2z_dev_submit(q, &io[0]), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_int_eq(io[0].ret, 12 * LBA);
	ck_assert_uint_eq(io[0].lba, ZONE_LBA + 64);
	ck_assert_int_eq(p2z_dev_pread(dev, r, 12 * LBA, zbytes + 64 * LBA),
			 12 * LBA);
	ck_assert_int_eq(memcmp(r, w, 12 * LBA), 0);

	/* a device error comes back as the io's result */
	io[0] = (struct p2z_io){ .op = P2Z_IO_WRITE,
				 .buf = w,
				 .len = LBA,
				 .ofs = zbytes,
				 .end_io = count_end_io,
				 .private = &calls };
	ck_assert_int_eq(p2z_dev_submit(q, &io[0]), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_int_eq(io[0].ret, -EILSEQ);

	/* closing with reads in flight runs each end_io once */
	calls = 0;
	for (i = 0; i < 40; i++) {
		io[i] = (struct p2z_io){ .op = P2Z_IO_READ,
					 .buf = r + i * LBA,
					 .len = LBA,
					 .ofs = zbytes + i * LBA,
					 .end_io = count_end_io,
					 .private = &calls };
		ck_assert_int_eq(p2z_dev_submit(q, &io[i]), 0);
	}
	p2z_dev_queue_close(q);
	ck_assert_uint_eq(calls, 40);
	free(w);
	free(r);
	p2z_dev_close(dev);
}

START_TEST(test_emu_pool)
{
	emu_async_round(0);
}
END_TEST

START_TEST(test_emu_pool_direct)
{
	emu_async_round(P2Z_DEV_DIRECT);
}
END_TEST

/* The threads of this process. */
static unsigned int nr_tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A host that refuses io_uring (kernel.io_uring_disabled, seccomp). */
static int refuse_queue_init(struct p2z_dev *dev, unsigned int depth, int efd,
			     void **bq)
{
	(void)dev;
	(void)depth;
	(void)efd;
	(void)bq;
	return -EPERM;
}

/*
 * A backend whose own queue the host refuses is served by the worker
 * pool (emu used to fail the queue's open with EPERM then), and the pool
 * starts its workers lazily: an open queue costs no thread (it cost 8
 * before), reads one at a time no more than the first one started; the
 * bytes come back exact.
 */
START_TEST(test_emu_pool_lazy)
{
	struct p2z_dev *dev = emu_dev(0);
	struct p2z_dev_ops refusing = *dev->ops;
	unsigned int before, calls = 0, first = 0, i;
	struct p2z_dev_queue *q;

	refusing.queue_init = refuse_queue_init;
	dev->ops = &refusing;
	before = nr_tasks();
	q = qopen(dev, 16);
	unsigned char *w = emu_buf(4096), *r = emu_buf(4096);
	struct p2z_io io;

	ck_assert_uint_eq(nr_tasks(), before);
	for (i = 0; i < LBA; i++)
		w[i] = pattern(i);
	ck_assert_int_eq(p2z_dev_pwrite(dev, w, LBA, 0, 0), (ssize_t)LBA);
	for (i = 0; i < 4; i++) {
		memset(r, 0, LBA);
		io = (struct p2z_io){ .op = P2Z_IO_READ,
				      .buf = r,
				      .len = LBA,
				      .end_io = count_end_io,
				      .private = &calls };
		ck_assert_int_eq(p2z_dev_submit(q, &io), 0);
		ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
		ck_assert_int_eq(io.ret, (ssize_t)LBA);
		ck_assert_mem_eq(r, w, LBA);
		/* The first read started the worker (and TSan its own). */
		if (!i)
			first = nr_tasks();
		ck_assert_uint_eq(nr_tasks(), first);
	}
	ck_assert_uint_eq(calls, 4);
	p2z_dev_queue_close(q);
	free(w);
	free(r);
	p2z_dev_close(dev);
}
END_TEST

/* One LBA read of zone 1 into its own page of @r, for emu_native(). */
static void emu_read_io(struct p2z_io *io, unsigned char *r, unsigned int i,
			unsigned int *calls)
{
	*io = (struct p2z_io){ .op = P2Z_IO_READ,
			       .buf = r + i * 4096,
			       .len = LBA,
			       .ofs = ZONE_LBA * LBA + i * LBA,
			       .end_io = count_end_io,
			       .private = calls };
}

/* Zone 1's first 16 LBAs written with the pattern of w, synchronously. */
static void emu_write16(struct p2z_dev *dev, unsigned char *w)
{
	unsigned int i;

	for (i = 0; i < 16 * LBA; i++)
		w[i] = pattern(i);
	ck_assert_int_eq(p2z_dev_pwrite(dev, w, 16 * LBA, ZONE_LBA * LBA, 0),
			 (ssize_t)(16 * LBA));
}

/* 16 one-LBA reads of them submitted at once, into r poisoned first. */
static void emu_submit16(struct p2z_dev_queue *q, struct p2z_io *io,
			 unsigned char *r, unsigned int *calls)
{
	unsigned int i;

	memset(r, 0xff, 16 * 4096);
	*calls = 0;
	for (i = 0; i < 16; i++) {
		emu_read_io(&io[i], r, i, calls);
		ck_assert_int_eq(p2z_dev_submit(q, &io[i]), 0);
	}
}

/* Reap until the 16 reads completed; each read its LBA of w exactly. */
static void emu_reap16(struct p2z_dev_queue *q, const struct p2z_io *io,
		       const unsigned char *r, const unsigned char *w,
		       const unsigned int *calls)
{
	unsigned int i;

	while (*calls < 16)
		ck_assert_int_ge(p2z_dev_queue_reap(q, 1), 1);
	for (i = 0; i < 16; i++) {
		ck_assert_int_eq(io[i].ret, (ssize_t)LBA);
		ck_assert_mem_eq(r + i * 4096, w + i * LBA, LBA);
	}
}

/*
 * emu has asynchronous ops of its own (emu_async.c): 16 reads submitted
 * at once are all on the queue's ring together (without a volatile cache;
 * with one they are answered from memory inside submit), and no thread is
 * started for them (the worker pool started some); exact bytes, zeros past
 * the write pointer, an offline zone's error as the synchronous read's; a
 * write completed inside submit makes the eventfd readable before any
 * reap, and its end_io runs from the reap only.
 */
static void emu_native(unsigned int flags, unsigned int cflags)
{
	struct p2z_dev *dev = emu_dev_c(flags, cflags);
	struct p2z_emu_dev *e = p2z_emu_of(dev);
	struct p2z_dev_queue *q = qopen(dev, 16);
	unsigned char *w = emu_buf(16 * 4096), *r = emu_buf(16 * 4096);
	struct pollfd pfd = { .events = POLLIN };
	unsigned int calls = 0, before;
	struct p2z_io io[16];
	ssize_t sync_err;

	emu_write16(dev, w);
	/* warm up: whatever a first read starts (TSan's own thread) */
	emu_read_io(&io[0], r, 0, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io[0]), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	before = nr_tasks();
	emu_submit16(q, io, r, &calls);
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 16);
	ck_assert_uint_eq(calls, 0);
	ck_assert_uint_eq(nr_tasks(), before);
	ck_assert_uint_eq(__atomic_load_n(&e->ring_peak, __ATOMIC_RELAXED),
			  cflags ? 0 : 16);
	pfd.fd = p2z_dev_queue_fd(q);
	ck_assert_int_eq(poll(&pfd, 1, 10000), 1);
	emu_reap16(q, io, r, w, &calls);

	/* past the write pointer: zeros */
	memset(r, 0xff, 4 * LBA);
	io[0] = (struct p2z_io){ .op = P2Z_IO_READ,
				 .buf = r,
				 .len = 4 * LBA,
				 .ofs = ZONE_LBA * LBA + 14 * LBA,
				 .end_io = count_end_io,
				 .private = &calls };
	ck_assert_int_eq(p2z_dev_submit(q, &io[0]), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_int_eq(io[0].ret, (ssize_t)(4 * LBA));
	ck_assert_mem_eq(r, w + 14 * LBA, 2 * LBA);
	memset(w, 0, 2 * LBA);
	ck_assert_mem_eq(r + 2 * LBA, w, 2 * LBA);

	/* a write completes inside submit: readable before the reap */
	io[0] = (struct p2z_io){ .op = P2Z_IO_WRITE,
				 .buf = w,
				 .len = LBA,
				 .ofs = ZONE_LBA * LBA + 16 * LBA,
				 .end_io = count_end_io,
				 .private = &calls };
	calls = 0;
	ck_assert_int_eq(p2z_dev_submit(q, &io[0]), 0);
	ck_assert_uint_eq(calls, 0);
	ck_assert_int_eq(poll(&pfd, 1, 0), 1);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 0), 1);
	ck_assert_uint_eq(calls, 1);
	ck_assert_int_eq(io[0].ret, (ssize_t)LBA);

	/* an offline zone: the synchronous read's error */
	ck_assert_int_eq(p2z_emu_set_fault(img, 2, P2Z_EMU_FAULT_OFFLINE), 0);
	io[0] = (struct p2z_io){ .op = P2Z_IO_READ,
				 .buf = r,
				 .len = LBA,
				 .ofs = 2 * ZONE_LBA * LBA,
				 .end_io = count_end_io,
				 .private = &calls };
	ck_assert_int_eq(p2z_dev_submit(q, &io[0]), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	sync_err = p2z_dev_pread(dev, r, LBA, 2 * ZONE_LBA * LBA);
	ck_assert_int_lt(sync_err, 0);
	ck_assert_int_eq(io[0].ret, sync_err);
	p2z_dev_queue_close(q);
	free(w);
	free(r);
	p2z_dev_close(dev);
}

/*
 * A plugged ring keeps its SQEs until it is unplugged (one io_uring_enter
 * for all) or a reap that waits sends them; a shared ring has no plug.
 */
START_TEST(test_ring_plug)
{
	struct io_uring_cqe *cqe;
	struct p2z_qring *qr;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	unsigned int i;

	ck_assert_int_ge(efd, 0);
	ck_assert_int_eq(p2z_ring_queue_open(8, 0, efd, &qr), 0);
	p2z_ring_queue_plug(qr);
	for (i = 0; i < 3; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(qr->ring);

		ck_assert_ptr_nonnull(sqe);
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, NULL);
		ck_assert_int_eq(p2z_ring_queue_submit(qr, sqe), 0);
	}
	ck_assert_uint_eq(io_uring_sq_ready(qr->ring), 3);
	ck_assert_uint_eq(io_uring_cq_ready(qr->ring), 0);
	ck_assert_int_eq(p2z_ring_queue_unplug(qr), 0);
	ck_assert_uint_eq(io_uring_sq_ready(qr->ring), 0);
	ck_assert_int_eq(io_uring_wait_cqe_nr(qr->ring, &cqe, 3), 0);
	io_uring_cq_advance(qr->ring, 3);
	/* unplugged: at once */
	ck_assert_int_eq(p2z_ring_queue_submit(qr, io_uring_get_sqe(qr->ring)),
			 0);
	ck_assert_uint_eq(io_uring_sq_ready(qr->ring), 0);
	p2z_ring_queue_close(qr);
	close(efd);
}
END_TEST

/*
 * p2z_dev_queue_plug() on emu's ring: 16 reads submitted while plugged are
 * not sent (nothing completes, however long a reap without wait looks),
 * unplugging sends them; on an edge queue (p2z_dev_queue_edge()) the
 * kernel's signals make the eventfd readable and no reap clears it; a reap
 * waiting for the one read in flight sends it with its wait and quiets the
 * ring (no signal); a write completed inside submit signals nothing and
 * waits on p2z_dev_queue_ready() until a reap.
 */
START_TEST(test_emu_plug_edge)
{
	struct p2z_dev *dev = emu_dev(0);
	struct p2z_dev_queue *q = qopen(dev, 16);
	unsigned char *w = emu_buf(16 * 4096), *r = emu_buf(16 * 4096);
	struct pollfd pfd = { .events = POLLIN };
	unsigned int calls = 0, i;
	struct p2z_io io[16];
	eventfd_t cnt;

	emu_write16(dev, w);
	p2z_dev_queue_edge(q);
	pfd.fd = p2z_dev_queue_fd(q);
	ck_assert_int_eq(p2z_dev_queue_plug(q, true), 0);
	emu_submit16(q, io, r, &calls);
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(p2z_dev_queue_reap(q, 0), 0);
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 16);
	ck_assert_int_eq(p2z_dev_queue_plug(q, false), 0);
	ck_assert_int_eq(poll(&pfd, 1, 10000), 1);
	emu_reap16(q, io, r, w, &calls);
	/* edge: the reaps left the eventfd as the kernel wrote it */
	ck_assert_int_eq(poll(&pfd, 1, 0), 1);
	ck_assert_int_eq(eventfd_read(pfd.fd, &cnt), 0);
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);

	/* plugged, one read: the waiting reap sends it, quietly */
	calls = 0;
	ck_assert_int_eq(p2z_dev_queue_plug(q, true), 0);
	emu_read_io(&io[0], r, 3, &calls);
	ck_assert_int_eq(p2z_dev_submit(q, &io[0]), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), 1);
	ck_assert_int_eq(p2z_dev_queue_plug(q, false), 0);
	ck_assert_uint_eq(calls, 1);
	ck_assert_int_eq(io[0].ret, (ssize_t)LBA);
	ck_assert_mem_eq(r + 3 * 4096, w + 3 * LBA, LBA);
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);

	/* completed inside submit: no signal, ready until reaped */
	io[0] = (struct p2z_io){ .op = P2Z_IO_WRITE,
				 .buf = w,
				 .len = LBA,
				 .ofs = ZONE_LBA * LBA + 16 * LBA,
				 .end_io = count_end_io,
				 .private = &calls };
	calls = 0;
	ck_assert(!p2z_dev_queue_ready(q));
	ck_assert_int_eq(p2z_dev_submit(q, &io[0]), 0);
	ck_assert_uint_eq(calls, 0);
	ck_assert(p2z_dev_queue_ready(q));
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 0), 1);
	ck_assert_uint_eq(calls, 1);
	ck_assert(!p2z_dev_queue_ready(q));
	ck_assert_int_eq(io[0].ret, (ssize_t)LBA);
	p2z_dev_queue_close(q);
	free(w);
	free(r);
	p2z_dev_close(dev);
}
END_TEST

START_TEST(test_emu_native_ring)
{
	emu_native(0, 0);
}
END_TEST

START_TEST(test_emu_native_ring_direct)
{
	emu_native(P2Z_DEV_DIRECT, 0);
}
END_TEST

START_TEST(test_emu_native_volatile_cache)
{
	emu_native(P2Z_DEV_DIRECT, P2Z_EMU_CREATE_VOLATILE_CACHE);
}
END_TEST

/*
 * p2z_dev_queue_hold_fd(): the queue keeps a pipe's write end open after
 * the caller closed its own descriptor, until p2z_dev_queue_close() (the
 * read end sees EOF only then; a ring is freed by the kernel's exit work,
 * so the EOF may come a little after the close: poll waits for it). This
 * is what keeps po2zfs-blk's /dev/ublkcN open until a killed server's
 * device commands are over.
 */
static void hold_fd_round(struct p2z_dev *dev)
{
	struct p2z_dev_queue *q = qopen(dev, 4);
	struct pollfd pfd = { .events = POLLIN };
	int p[2];
	char c;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pfd.fd = p[0];
	ck_assert_int_eq(p2z_dev_queue_hold_fd(q, -1), -EINVAL);
	ck_assert_int_eq(p2z_dev_queue_hold_fd(q, p[1]), 0);
	ck_assert_int_eq(p2z_dev_queue_hold_fd(q, p[1]), -EBUSY);
	ck_assert_int_eq(close(p[1]), 0);
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	p2z_dev_queue_close(q);
	ck_assert_int_eq(poll(&pfd, 1, 10000), 1);
	ck_assert(pfd.revents & POLLHUP);
	ck_assert_int_eq(read(p[0], &c, 1), 0);
	ck_assert_int_eq(close(p[0]), 0);
}

START_TEST(test_queue_hold_fd_ring)
{
	struct p2z_dev *dev = emu_dev(0);

	ck_assert_ptr_nonnull(dev->ops->queue_hold_fd);
	hold_fd_round(dev);
	p2z_dev_close(dev);
}
END_TEST

START_TEST(test_queue_hold_fd_pool)
{
	struct p2z_dev *dev = emu_dev(0);
	struct p2z_dev_ops refusing = *dev->ops;

	refusing.queue_init = refuse_queue_init;
	dev->ops = &refusing;
	hold_fd_round(dev);
	p2z_dev_close(dev);
}
END_TEST

/*
 * p2z_dev_queue_open_on(): the queue's commands go on a ring the caller
 * owns (po2zfs-blk's ublk ring), mixed with the caller's own commands: 16
 * reads and 8 of the caller's no-ops submitted together, each completion
 * carrying the tag fed to p2z_dev_queue_complete(), the others left to the
 * caller: exact bytes, each end_io once, every no-op seen. A write done
 * inside submit completes from p2z_dev_queue_reap(q, 0), which never
 * waits. The ring holds the file of p2z_dev_queue_hold_fd() after the
 * queue closed, until the ring itself is freed.
 */
#define ON_RING_TAG (1ULL << 62)

START_TEST(test_queue_on_ring)
{
	struct p2z_dev *dev = emu_dev(0);
	struct p2z_dev_ops no_share = *dev->ops;
	unsigned char *w = emu_buf(16 * 4096), *r = emu_buf(16 * 4096);
	struct pollfd pfd = { .events = POLLIN };
	unsigned int calls = 0, foreign = 0, seen, head, i;
	struct p2z_dev_queue *q, *own;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	struct p2z_io io[16];
	int p[2];
	char c;

	ck_assert_int_eq(io_uring_queue_init(64, &ring,
					     IORING_SETUP_SQE128 |
						     IORING_SETUP_CQE32),
			 0);
	ck_assert_int_eq(p2z_dev_queue_open_on(dev, 16, &ring, 0, &q), -EINVAL);
	ck_assert_int_eq(p2z_dev_queue_open_on(dev, 16, &ring, ON_RING_TAG, &q),
			 0);
	ck_assert_int_eq(p2z_dev_queue_fd(q), -1);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 1), -EINVAL);
	emu_write16(dev, w);
	memset(r, 0xff, 16 * 4096);
	for (i = 0; i < 16; i++) {
		emu_read_io(&io[i], r, i, &calls);
		ck_assert_int_eq(p2z_dev_submit(q, &io[i]), 0);
		if (i % 2)
			continue;
		sqe = io_uring_get_sqe(&ring);
		ck_assert_ptr_nonnull(sqe);
		io_uring_prep_nop(sqe);
		sqe->user_data = 1000 + i;
	}
	/* nothing submitted by the queue itself: the caller's submit does */
	ck_assert_uint_eq(io_uring_sq_ready(&ring), 24);
	ck_assert_uint_eq(calls, 0);
	while (calls < 16 || foreign < 8) {
		ck_assert_int_ge(io_uring_submit_and_wait(&ring, 1), 0);
		seen = 0;
		io_uring_for_each_cqe(&ring, head, cqe)
		{
			seen++;
			if (cqe->user_data & ON_RING_TAG) {
				ck_assert_int_eq(p2z_dev_queue_complete(q, cqe),
						 1);
				continue;
			}
			ck_assert_uint_eq(cqe->user_data, 1000 + 2 * foreign);
			ck_assert_int_eq(cqe->res, 0);
			foreign++;
		}
		io_uring_cq_advance(&ring, seen);
	}
	ck_assert_uint_eq(calls, 16);
	ck_assert_uint_eq(foreign, 8);
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 0);
	for (i = 0; i < 16; i++) {
		ck_assert_int_eq(io[i].ret, (ssize_t)LBA);
		ck_assert_mem_eq(r + i * 4096, w + i * LBA, LBA);
	}

	/* a write done inside submit: its end_io from the reap only */
	io[0] = (struct p2z_io){ .op = P2Z_IO_WRITE,
				 .buf = w,
				 .len = LBA,
				 .ofs = ZONE_LBA * LBA + 16 * LBA,
				 .end_io = count_end_io,
				 .private = &calls };
	calls = 0;
	ck_assert_int_eq(p2z_dev_submit(q, &io[0]), 0);
	ck_assert_uint_eq(calls, 0);
	ck_assert_uint_eq(io_uring_sq_ready(&ring), 0);
	ck_assert_int_eq(p2z_dev_queue_reap(q, 0), 1);
	ck_assert_uint_eq(calls, 1);
	ck_assert_int_eq(io[0].ret, (ssize_t)LBA);

	/* a queue with a ring of its own is fed nothing */
	own = qopen(dev, 4);
	ck_assert_int_eq(p2z_dev_queue_complete(own, cqe), -EINVAL);
	p2z_dev_queue_close(own);
	/* a backend that cannot share */
	no_share.queue_init_on = NULL;
	dev->ops = &no_share;
	ck_assert_int_eq(p2z_dev_queue_open_on(dev, 4, &ring, ON_RING_TAG,
					       &own),
			 -EOPNOTSUPP);
	dev->ops = &p2z_dev_emu_ops;

	/* the ring, not the queue, holds the file */
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pfd.fd = p[0];
	ck_assert_int_eq(p2z_dev_queue_hold_fd(q, p[1]), 0);
	ck_assert_int_eq(p2z_dev_queue_hold_fd(q, p[1]), -EBUSY);
	ck_assert_int_eq(close(p[1]), 0);
	p2z_dev_queue_close(q);
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	io_uring_queue_exit(&ring);
	ck_assert_int_eq(poll(&pfd, 1, 10000), 1);
	ck_assert(pfd.revents & POLLHUP);
	ck_assert_int_eq(read(p[0], &c, 1), 0);
	ck_assert_int_eq(close(p[0]), 0);
	free(w);
	free(r);
	p2z_dev_close(dev);
}
END_TEST

static Suite *async_suite(void)
{
	Suite *s = suite_create("async");
	TCase *tc = tcase_create("fake");

	tcase_add_test(tc, test_reads_out_of_order);
	tcase_add_test(tc, test_split_read_completes_once);
	tcase_add_test(tc, test_depth_limits_pieces);
	tcase_add_test(tc, test_split_append_in_order);
	tcase_add_test(tc, test_split_append_strayed);
	tcase_add_test(tc, test_split_write_in_order);
	tcase_add_test(tc, test_fua_flush_after_last_piece);
	tcase_add_test(tc, test_error_in_middle_piece);
	tcase_add_test(tc, test_backend_refuses_piece);
	tcase_add_test(tc, test_backend_completes_in_submit);
	tcase_add_test(tc, test_submit_checks);
	tcase_add_test(tc, test_close_drains);
	tcase_add_test(tc, test_end_io_submits);
	suite_add_tcase(s, tc);
	tc = tcase_create("emu");
	tcase_add_checked_fixture(tc, emu_setup, emu_teardown);
	tcase_add_test(tc, test_emu_pool);
	tcase_add_test(tc, test_emu_pool_direct);
	tcase_add_test(tc, test_emu_pool_lazy);
	tcase_add_test(tc, test_emu_native_ring);
	tcase_add_test(tc, test_emu_native_ring_direct);
	tcase_add_test(tc, test_emu_native_volatile_cache);
	tcase_add_test(tc, test_ring_plug);
	tcase_add_test(tc, test_emu_plug_edge);
	tcase_add_test(tc, test_queue_hold_fd_ring);
	tcase_add_test(tc, test_queue_hold_fd_pool);
	tcase_add_test(tc, test_queue_on_ring);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return p2z_check_run(async_suite());
}
