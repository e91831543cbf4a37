// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The emu device's asynchronous ops (dev.h, dev_queue.c): each queue is
 * its own io_uring on the image. A read whose data lies in the image file
 * goes on the ring (IORING_OP_READ on the zone data descriptor, O_DIRECT
 * with -o direct), after the checks and the zeros past the write pointer
 * of p2z_emu_read_plan(), which the synchronous read runs too. Everything
 * else completes inside submit, synchronously, through the synchronous
 * ops under their usual locks: a read answered from the volatile cache or
 * from zeros, a read into a buffer O_DIRECT cannot take, writes, appends,
 * flushes. The queue (dev_queue.c) puts those on its done list and
 * signals its eventfd; their end_io runs from p2z_dev_queue_reap().
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "po2zfs/dev.h"
#include "emu_priv.h"
#include "uring.h"

/**
 * struct p2z_emu_q - one queue's ring
 * @ring: the ring, its completions signalling the queue's eventfd, or a
 *	  ring the queue was given (p2z_emu_queue_init_on())
 * @e: device
 * @on_ring: reads submitted on @ring and not reaped yet
 */
struct p2z_emu_q {
	struct p2z_qring *ring;
	struct p2z_emu_dev *e;
	unsigned int on_ring;
};

int p2z_emu_queue_init(struct p2z_dev *dev, unsigned int depth, int efd,
		       void **bqp)
{
	struct p2z_emu_q *eq = calloc(1, sizeof(*eq));
	int ret;

	if (!eq)
		return -ENOMEM;
	ret = p2z_ring_queue_open(depth, 0, efd, &eq->ring);
	if (ret) {
		free(eq);
		return ret;
	}
	eq->e = p2z_emu_of(dev);
	*bqp = eq;
	return 0;
}

int p2z_emu_queue_init_on(struct p2z_dev *dev, unsigned int depth,
			  struct io_uring *ring, uint64_t tag, void **bqp)
{
	struct p2z_emu_q *eq = calloc(1, sizeof(*eq));
	int ret;

	(void)depth;
	if (!eq)
		return -ENOMEM;
	ret = p2z_ring_queue_share(ring, 0, tag, &eq->ring);
	if (ret) {
		free(eq);
		return ret;
	}
	eq->e = p2z_emu_of(dev);
	*bqp = eq;
	return 0;
}

void p2z_emu_queue_exit(struct p2z_dev *dev, void *bq)
{
	struct p2z_emu_q *eq = bq;

	(void)dev;
	p2z_ring_queue_close(eq->ring);
	free(eq);
}

/* Writes run in the queue's thread; the ring holds @fd for its reads. */
int p2z_emu_queue_hold_fd(struct p2z_dev *dev, void *bq, int fd)
{
	struct p2z_emu_q *eq = bq;

	(void)dev;
	return p2z_ring_queue_hold_fd(eq->ring, fd);
}

/* A piece done here, synchronously: 1 tells the queue it is done. */
static int p2z_emu_sync_piece(struct p2z_dev *dev, struct p2z_io *io)
{
	const struct p2z_dev_ops *ops = dev->ops;

	switch (io->op) {
	case P2Z_IO_READ:
		io->ret = ops->pread(dev, io->buf, io->len, io->ofs);
		break;
	case P2Z_IO_WRITE:
		io->ret =
			ops->pwrite(dev, io->buf, io->len, io->ofs, io->flags);
		break;
	case P2Z_IO_APPEND:
		io->ret = ops->append(dev, io->zidx, io->buf, io->len, &io->lba,
				      io->flags);
		break;
	default:
		io->ret = ops->flush(dev);
	}
	return 1;
}

/*
 * A read: checked, its zeros filled and any cached data copied by
 * p2z_emu_read_plan(); what the image file holds goes on the ring. The
 * piece's @st carries the file range to the reap (issued: bytes, next_lba:
 * byte offset in the image).
 */
static int p2z_emu_submit_read(struct p2z_emu_q *eq, struct p2z_io *io)
{
	struct p2z_emu_dev *e = eq->e;
	struct io_uring_sqe *sqe;
	uint64_t fofs;
	size_t fbytes;
	int ret;

	if (e->direct && (uintptr_t)io->buf % P2Z_EMU_DIO_ALIGN)
		return p2z_emu_sync_piece(&e->dev, io);
	ret = p2z_emu_read_plan(e, io->buf, io->len, io->ofs, &fofs, &fbytes);
	if (ret || !fbytes) {
		io->ret = ret ? ret : (ssize_t)io->len;
		return 1;
	}
	sqe = p2z_ring_queue_sqe(eq->ring);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, e->data_fd, io->buf, (unsigned int)fbytes,
			   fofs);
	io_uring_sqe_set_data(sqe, io);
	io->st.issued = fbytes;
	io->st.next_lba = fofs;
	ret = p2z_ring_queue_submit(eq->ring, sqe);
	if (ret)
		return ret;
	eq->on_ring++;
	if (eq->on_ring > __atomic_load_n(&e->ring_peak, __ATOMIC_RELAXED))
		__atomic_store_n(&e->ring_peak, eq->on_ring, __ATOMIC_RELAXED);
	return 0;
}

int p2z_emu_submit(struct p2z_dev *dev, void *bq, struct p2z_io *io)
{
	if (io->op == P2Z_IO_READ)
		return p2z_emu_submit_read(bq, io);
	return p2z_emu_sync_piece(dev, io);
}

/* A read on the ring completed; a short one reads the rest here. */
static void p2z_emu_reap_one(void *arg, struct p2z_io *io,
			     const struct io_uring_cqe *cqe)
{
	struct p2z_emu_q *eq = arg;
	size_t want = io->st.issued, got;
	uint64_t fofs = io->st.next_lba;
	int ret = 0;

	eq->on_ring--;
	if (cqe->res < 0) {
		ret = cqe->res;
	} else if (!cqe->res) {
		ret = -ENODATA; /* the image shrank under us */
	} else if ((size_t)cqe->res < want) {
		got = (size_t)cqe->res;
		ret = p2z_emu_data_read(eq->e, (char *)io->buf + got,
					want - got, fofs + got);
	}
	io->ret = ret ? p2z_emu_host_error(eq->e, "read", fofs, ret) :
			(ssize_t)io->len;
}

struct p2z_qring *p2z_emu_queue_qring(void *bq)
{
	return ((struct p2z_emu_q *)bq)->ring;
}

int p2z_emu_reap(struct p2z_dev *dev, void *bq, bool wait)
{
	struct p2z_emu_q *eq = bq;

	return p2z_ring_queue_reap(eq->ring, wait, dev->path, p2z_emu_reap_one,
				   eq);
}

int p2z_emu_complete(struct p2z_dev *dev, void *bq,
		     const struct io_uring_cqe *cqe)
{
	struct p2z_emu_q *eq = bq;

	(void)dev;
	return p2z_ring_queue_complete(eq->ring, cqe, p2z_emu_reap_one, eq);
}
