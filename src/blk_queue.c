// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * po2zfs-blk's queues (as ublksrv's lib/ublksrv.c): one per online CPU, at
 * most P2Z_BLK_MAX_QUEUES, each a thread with its own io_uring (SQE128) on
 * /dev/ublkcN. A queue thread fetches every tag, then serves its requests
 * one after the other, synchronously, through the zoned target
 * (p2z_blk_handle(); the nvme and zbd backends keep a ring per calling
 * thread), and commits each result with COMMIT_AND_FETCH. Order within a
 * zone is the block layer's: zone write plugging (Linux 6.10+) sends one
 * write per zone at a time.
 *
 * Data moves with UBLK_F_USER_COPY (which zoned ublk requires): one buffer
 * per tag, pread()/pwrite() on /dev/ublkcN at the tag's offset.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "blk_priv.h"
#include "po2zfs/log.h"

static void p2z_blk_queue_sqe(struct p2z_blk_queue *q, unsigned int tag,
			      uint32_t op, int result, uint64_t zone_lba)
{
	struct p2z_ublksrv_io_cmd *cmd;
	struct io_uring_sqe *sqe;

	/* The ring holds one entry per tag: never full. */
	sqe = io_uring_get_sqe(&q->ring);
	if (!sqe) {
		p2z_log(LOG_ERR, "queue %u: no SQE for tag %u", q->qid, tag);
		return;
	}
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->blk->cdev_fd;
	sqe->cmd_op = op;
	sqe->user_data = tag;
	cmd = (struct p2z_ublksrv_io_cmd *)sqe->cmd;
	cmd->q_id = (__u16)q->qid;
	cmd->tag = (__u16)tag;
	cmd->result = result;
	cmd->zone_append_lba = zone_lba;
}

static void p2z_blk_queue_ready(struct p2z_blk *blk, bool ok)
{
	pthread_mutex_lock(&blk->lock);
	if (ok)
		blk->nr_ready++;
	else
		blk->nr_failed++;
	pthread_cond_signal(&blk->ready);
	pthread_mutex_unlock(&blk->lock);
}

/* Serve completions until every tag is aborted (the device stopped). */
static int p2z_blk_queue_serve(struct p2z_blk_queue *q)
{
	unsigned int live = q->blk->depth, seen, tag;
	struct io_uring_cqe *cqe;
	uint64_t sector;
	unsigned int head;
	int ret, res;

	while (live) {
		ret = io_uring_submit_and_wait(&q->ring, 1);
		if (ret < 0 && ret != -EINTR)
			return ret;
		seen = 0;
		io_uring_for_each_cqe(&q->ring, head, cqe)
		{
			seen++;
			tag = (unsigned int)cqe->user_data;
			if (cqe->res != UBLK_IO_RES_OK) {
				/* UBLK_IO_RES_ABORT: the device is going */
				if (cqe->res != UBLK_IO_RES_ABORT)
					p2z_log(LOG_ERR, "queue %u tag %u: %s",
						q->qid, tag,
						strerror(-cqe->res));
				live--;
				continue;
			}
			sector = 0;
			res = p2z_blk_handle(q, tag, &sector);
			p2z_blk_queue_sqe(q, tag,
					  UBLK_U_IO_COMMIT_AND_FETCH_REQ, res,
					  sector);
		}
		io_uring_cq_advance(&q->ring, seen);
	}
	return 0;
}

static void *p2z_blk_queue_thread(void *arg)
{
	struct p2z_blk_queue *q = arg;
	struct p2z_blk *blk = q->blk;
	unsigned int tag;
	int ret;

	for (tag = 0; tag < blk->depth; tag++)
		p2z_blk_queue_sqe(q, tag, UBLK_U_IO_FETCH_REQ, 0, 0);
	ret = io_uring_submit(&q->ring);
	p2z_blk_queue_ready(blk, ret == (int)blk->depth);
	if (ret != (int)blk->depth) {
		q->ret = ret < 0 ? ret : -EIO;
		return NULL;
	}
	q->ret = p2z_blk_queue_serve(q);
	/* The main thread waits in sigwait() for this. */
	kill(getpid(), SIGUSR1);
	return NULL;
}

static int p2z_blk_queue_init(struct p2z_blk *blk, struct p2z_blk_queue *q)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t max_iods =
		(UBLK_MAX_QUEUE_DEPTH * sizeof(struct ublksrv_io_desc) + page -
		 1) /
		page * page;
	void *p;
	int ret;

	q->blk = blk;
	q->iods_len = (blk->depth * sizeof(struct ublksrv_io_desc) + page - 1) /
		      page * page;
	p = mmap(NULL, q->iods_len, PROT_READ, MAP_SHARED | MAP_POPULATE,
		 blk->cdev_fd, UBLKSRV_CMD_BUF_OFFSET + q->qid * max_iods);
	if (p == MAP_FAILED)
		return -errno;
	q->iods = p;
	ret = posix_memalign(&p, page, (size_t)blk->depth * blk->buf_bytes);
	if (ret) {
		munmap((void *)q->iods, q->iods_len);
		return -ret;
	}
	q->bufs = p;
	ret = io_uring_queue_init(blk->depth, &q->ring, IORING_SETUP_SQE128);
	if (ret) {
		free(q->bufs);
		munmap((void *)q->iods, q->iods_len);
		return ret;
	}
	return 0;
}

static void p2z_blk_queue_exit(struct p2z_blk_queue *q)
{
	io_uring_queue_exit(&q->ring);
	free(q->bufs);
	munmap((void *)q->iods, q->iods_len);
}

/*
 * Start every queue thread; wait until each started one fetched its tags,
 * also when a later one could not start: STOP_DEV only aborts the fetches
 * the kernel already holds, and a thread fetching after it would wait
 * forever (and its join with it).
 */
int p2z_blk_queues_start(struct p2z_blk *blk, unsigned int *started)
{
	unsigned int i;
	int ret = 0;

	*started = 0;
	for (i = 0; i < blk->nr_queues; i++) {
		blk->queues[i].qid = i;
		ret = p2z_blk_queue_init(blk, &blk->queues[i]);
		if (ret)
			break;
		ret = -pthread_create(&blk->queues[i].thread, NULL,
				      p2z_blk_queue_thread, &blk->queues[i]);
		if (ret) {
			p2z_blk_queue_exit(&blk->queues[i]);
			break;
		}
		(*started)++;
	}
	pthread_mutex_lock(&blk->lock);
	while (blk->nr_ready + blk->nr_failed < *started)
		pthread_cond_wait(&blk->ready, &blk->lock);
	if (!ret && blk->nr_failed)
		ret = -EIO;
	pthread_mutex_unlock(&blk->lock);
	return ret;
}

/* Join the queue threads; return why the first that failed ended, or 0. */
int p2z_blk_queues_stop(struct p2z_blk *blk, unsigned int started)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < started; i++) {
		pthread_join(blk->queues[i].thread, NULL);
		if (!ret)
			ret = blk->queues[i].ret;
		p2z_blk_queue_exit(&blk->queues[i]);
	}
	return ret;
}
