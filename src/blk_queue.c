// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * po2zfs-blk's queues (as ublksrv's lib/ublksrv.c): one per online CPU, at
 * most P2Z_BLK_MAX_QUEUES, each a thread with its own io_uring (SQE128,
 * CQE32) on /dev/ublkcN and its own asynchronous device queue, so that
 * every tag can be at the device at once. A queue thread fetches every
 * tag, then hands each request the kernel sends to the zoned target
 * (p2z_blk_handle()), which starts it on the device queue and returns.
 * The device queue's commands go on the same ring (p2z_dev_queue_open_on():
 * user_data their io with P2Z_BLK_UD_DEV; a tag's ublk commands carry the
 * tag), submitted with the commits by the loop's one io_uring_enter(), and
 * each of their completions is fed to p2z_dev_queue_complete(), whose
 * end_io calls commit the tags (COMMIT_AND_FETCH; an append's landing
 * sector in zone_append_lba): as ublksrv's and rublk's targets, a request
 * costs its device command's enter and its commit's. A backend that cannot
 * share a ring (the worker pool) gets a device queue of its own
 * (p2z_dev_queue_open()), whose eventfd is polled on the ring
 * (P2Z_BLK_UD_EVENT): when it fires the thread reaps the device queue; a
 * queue holding a single request, at the device, waits on the device
 * queue itself instead (p2z_blk_queue_wait_one(): QD1 latency). Zone
 * operations and reports are served synchronously after the zone's writes
 * in flight completed.
 *
 * Order within a zone is the block layer's: zone write plugging (Linux
 * 6.10+) sends one write per zone at a time, and a zone's gate
 * (p2z_blk_gate_enter()) holds a write arriving while another one of the
 * zone is in flight until it completed. Reads and appends run concurrently;
 * an append the device queue would split has its zone's appends to itself.
 * A request waiting at a gate keeps reaping this queue's completions
 * (p2z_blk_queue_wait()), so queues waiting on each other always progress.
 *
 * Data moves with UBLK_F_USER_COPY (which zoned ublk requires): one buffer
 * per tag, pread() of a write's data from /dev/ublkcN at the tag's offset
 * before it is submitted, pwrite() of a read's data after it completed.
 *
 * Stop: the kernel aborts a tag's fetch only once its request was
 * committed, so a thread whose tags are all aborted has nothing in flight;
 * it drains its device queue (serving the ring until nothing is in flight,
 * p2z_blk_queue_drain(), or p2z_dev_queue_close() waits) and ends; the
 * final flush comes after every thread ended.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "blk_priv.h"
#include "po2zfs/log.h"

/*
 * The ring's user_data of a device command of a queue on the ring itself
 * (p2z_dev_queue_open_on()): its struct p2z_io with this bit; distinct
 * from the tags and from P2Z_BLK_UD_EVENT / P2Z_BLK_UD_WAKE.
 */
#define P2Z_BLK_UD_DEV (1ULL << 62)

/* Whether @q's device queue is on its ring (else: its eventfd is polled). */
static bool p2z_blk_queue_on_ring(struct p2z_blk_queue *q)
{
	return p2z_dev_queue_fd(q->dq) < 0;
}

static bool p2z_blk_ud_dev(uint64_t ud)
{
	return (ud & (P2Z_BLK_UD_EVENT | P2Z_BLK_UD_DEV)) == P2Z_BLK_UD_DEV;
}

/*
 * A device completion on the ring: to the device queue, and marked done
 * (P2Z_BLK_UD_WAKE, which the loop skips) for a scan that meets it again.
 */
static void p2z_blk_queue_feed(struct p2z_blk_queue *q,
			       struct io_uring_cqe *cqe)
{
	if (p2z_dev_queue_complete(q->dq, cqe) >= 0)
		cqe->user_data = P2Z_BLK_UD_WAKE;
}

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

void p2z_blk_queue_commit(struct p2z_blk_queue *q, unsigned int tag, int res,
			  uint64_t zone_lba)
{
	q->busy--;
	__atomic_sub_fetch(&q->blk->inflight, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&q->blk->nr_served, 1, __ATOMIC_RELAXED);
	p2z_blk_queue_sqe(q, tag, UBLK_U_IO_COMMIT_AND_FETCH_REQ, res,
			  zone_lba);
	if (q->blk->slots)
		q->committed[q->nr_committed++] = tag;
}

/*
 * io_uring_submit() and the append slots of what it committed freed, then
 * the wait for @wait completions. The slots go before the wait: the kernel
 * handled the commits inside the submit, and a server killed while it
 * waits must not leave LANDED slots of requests the kernel completed (a
 * recovery would carry them forward as stale ones, blk_zoned.c).
 */
static int p2z_blk_queue_submit(struct p2z_blk_queue *q, unsigned int wait)
{
	int ret;

	if (!q->nr_committed)
		return wait ? io_uring_submit_and_wait(&q->ring, wait) :
			      io_uring_submit(&q->ring);
	ret = io_uring_submit(&q->ring);
	if (ret < 0)
		return ret;
	p2z_blk_slots_free(q);
	return wait ? io_uring_submit_and_wait(&q->ring, wait) : ret;
}

/* A request taken from the kernel: count it, and the most at once. */
static void p2z_blk_queue_taken(struct p2z_blk *blk)
{
	unsigned int n =
		__atomic_add_fetch(&blk->inflight, 1, __ATOMIC_RELAXED);
	unsigned int max =
		__atomic_load_n(&blk->max_inflight, __ATOMIC_RELAXED);

	while (n > max &&
	       !__atomic_compare_exchange_n(&blk->max_inflight, &max, n, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/*
 * A request waiting at a gate, called from the loop over the ring's
 * completions: feed every device completion there is, from the ring's
 * head on, without consuming anything; wait 1 ms at most for one more.
 */
static void p2z_blk_queue_wait_ring(struct p2z_blk_queue *q)
{
	struct __kernel_timespec ts = { .tv_nsec = 1000000 };
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0, fed = 0;

	p2z_dev_queue_reap(q->dq, 0);
	io_uring_for_each_cqe(&q->ring, head, cqe)
	{
		seen++;
		if (p2z_blk_ud_dev(cqe->user_data)) {
			p2z_blk_queue_feed(q, cqe);
			fed += cqe->user_data == P2Z_BLK_UD_WAKE;
		}
	}
	if (fed)
		return;
	p2z_blk_queue_submit(q, 0);
	if (p2z_dev_queue_inflight(q->dq))
		io_uring_wait_cqes(&q->ring, &cqe, seen + 1, &ts, NULL);
	else
		poll(NULL, 0, 1);
}

void p2z_blk_queue_wait(struct p2z_blk_queue *q)
{
	struct pollfd pfd = { .fd = p2z_dev_queue_fd(q->dq), .events = POLLIN };

	if (pfd.fd < 0) {
		p2z_blk_queue_wait_ring(q);
		return;
	}
	p2z_blk_queue_submit(q, 0);
	if (p2z_dev_queue_inflight(q->dq))
		poll(&pfd, 1, 1);
	else
		poll(NULL, 0, 1);
	p2z_dev_queue_reap(q->dq, 0);
}

/* Poll the device queue's eventfd on the ring (one shot, armed again). */
static void p2z_blk_queue_arm(struct p2z_blk_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe) {
		p2z_log(LOG_ERR, "queue %u: no SQE for the event poll", q->qid);
		return;
	}
	memset(sqe, 0, 2 * sizeof(*sqe));
	io_uring_prep_poll_add(sqe, p2z_dev_queue_fd(q->dq), POLLIN);
	sqe->user_data = P2Z_BLK_UD_EVENT;
}

/*
 * One request held, at the device, and no ublk completion waiting: wait on
 * the device itself, as a synchronous server would (its completion then
 * skips the eventfd's trip through the ring). A request arriving meanwhile
 * waits for that completion at most; with two or more held, the ring waits
 * for both kinds.
 */
static void p2z_blk_queue_wait_one(struct p2z_blk_queue *q)
{
	if (p2z_blk_queue_on_ring(q)) {
		/* what completed without the ring */
		p2z_dev_queue_reap(q->dq, 0);
		return;
	}
	if (q->busy != 1 || p2z_dev_queue_inflight(q->dq) != 1 ||
	    io_uring_cq_ready(&q->ring))
		return;
	p2z_blk_queue_submit(q, 0);
	p2z_dev_queue_reap(q->dq, 1);
}

/*
 * A request was just started on the ring and more completions follow it
 * in this batch: submit its device command now rather than with the
 * batch, so that it does not wait for the requests after it (a write's
 * data copy, pread() from /dev/ublkcN, takes long). A batch's last request
 * goes with the loop's submit-and-wait: at QD1, one system call.
 */
static void p2z_blk_queue_early(struct p2z_blk_queue *q, unsigned int seen)
{
	if (p2z_blk_queue_on_ring(q) && io_uring_sq_ready(&q->ring) &&
	    io_uring_cq_ready(&q->ring) > seen)
		p2z_blk_queue_submit(q, 0);
}

/*
 * Serve completions until every tag is aborted (the device stopped), or at
 * a handover until what this queue started is committed: a request the
 * kernel sends after it is left alone (the kernel sends it again to the
 * next server), the fetches stay, and the thread's end cancels them.
 */
static int p2z_blk_queue_serve(struct p2z_blk_queue *q)
{
	unsigned int live = q->blk->depth, seen, tag;
	struct io_uring_cqe *cqe;
	unsigned int head;
	bool handover;
	int ret;

	if (!p2z_blk_queue_on_ring(q))
		p2z_blk_queue_arm(q);

	while (live) {
		handover = __atomic_load_n(&q->blk->handover, __ATOMIC_ACQUIRE);
		if (handover && !q->busy)
			return p2z_blk_queue_submit(q, 0) < 0 ? -EIO : 0;
		p2z_blk_queue_wait_one(q);
		ret = p2z_blk_queue_submit(q, 1);
		if (ret < 0 && ret != -EINTR)
			return ret;
		seen = 0;
		io_uring_for_each_cqe(&q->ring, head, cqe)
		{
			seen++;
			if (cqe->user_data == P2Z_BLK_UD_EVENT) {
				p2z_dev_queue_reap(q->dq, 0);
				p2z_blk_queue_arm(q);
				continue;
			}
			if (p2z_blk_ud_dev(cqe->user_data)) {
				p2z_blk_queue_feed(q, cqe);
				continue;
			}
			if (cqe->user_data == P2Z_BLK_UD_WAKE || handover)
				continue;
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
			q->busy++;
			p2z_blk_queue_taken(q->blk);
			p2z_blk_handle(q, tag);
			p2z_blk_queue_early(q, seen);
		}
		io_uring_cq_advance(&q->ring, seen);
	}
	return 0;
}

/*
 * Before the device queue on the ring closes: serve the ring until it has
 * nothing in flight (at a stop or a handover every tag was committed, so
 * nothing is; a request the kernel sends meanwhile is left alone, as in
 * p2z_blk_queue_serve()).
 */
static void p2z_blk_queue_drain(struct p2z_blk_queue *q)
{
	struct io_uring_cqe *cqe;
	unsigned int head, seen;

	if (!p2z_blk_queue_on_ring(q))
		return;
	for (;;) {
		p2z_dev_queue_reap(q->dq, 0);
		if (!p2z_dev_queue_inflight(q->dq))
			break;
		if (p2z_blk_queue_submit(q, 1) < 0)
			poll(NULL, 0, 1);
		seen = 0;
		io_uring_for_each_cqe(&q->ring, head, cqe)
		{
			seen++;
			if (p2z_blk_ud_dev(cqe->user_data))
				p2z_blk_queue_feed(q, cqe);
		}
		io_uring_cq_advance(&q->ring, seen);
	}
	p2z_blk_queue_submit(q, 0);
}

static void *p2z_blk_queue_thread(void *arg)
{
	struct p2z_blk_queue *q = arg;
	struct p2z_blk *blk = q->blk;
	unsigned int tag;
	int ret;

	/* The device's commands on this ring, else on a ring of their own. */
	ret = p2z_dev_queue_open_on(blk->dev, blk->depth, &q->ring,
				    P2Z_BLK_UD_DEV, &q->dq);
	if (ret)
		ret = p2z_dev_queue_open(blk->dev, blk->depth, &q->dq);
	/*
	 * The device queue holds /dev/ublkcN: released, and START_USER_RECOVERY
	 * possible, only after the queue's last device command completed, even
	 * if this process is killed (src/README.md, "ublk user recovery"). On
	 * this ring, the ring holds it, which the kernel frees only after its
	 * last command, device or ublk, completed.
	 */
	if (!ret) {
		ret = p2z_dev_queue_hold_fd(q->dq, blk->cdev_fd);
		if (ret) {
			p2z_dev_queue_close(q->dq);
			q->dq = NULL;
		}
	}
	if (ret) {
		p2z_log(LOG_ERR, "queue %u: device queue: %s", q->qid,
			strerror(-ret));
		q->ret = ret;
		p2z_blk_queue_ready(blk, false);
		return NULL;
	}
	for (tag = 0; tag < blk->depth; tag++)
		p2z_blk_queue_sqe(q, tag, UBLK_U_IO_FETCH_REQ, 0, 0);
	ret = io_uring_submit(&q->ring);
	p2z_blk_queue_ready(blk, ret == (int)blk->depth);
	if (ret != (int)blk->depth) {
		q->ret = ret < 0 ? ret : -EIO;
		p2z_dev_queue_close(q->dq);
		return NULL;
	}
	q->ret = p2z_blk_queue_serve(q);
	/* Nothing is in flight once every tag was aborted; drain anyway. */
	p2z_blk_queue_drain(q);
	p2z_dev_queue_close(q->dq);
	q->dq = NULL;
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
	unsigned int i;
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
	q->tags = calloc(blk->depth, sizeof(*q->tags));
	q->committed = calloc(blk->depth, sizeof(*q->committed));
	if (!q->committed) {
		free(q->tags);
		q->tags = NULL;
	}
	/*
	 * A command per tag and the event poll, or a device command per tag
	 * (p2z_dev_queue_open_on(): NVMe passthrough's 128-byte SQEs and
	 * 32-byte CQEs)
	 */
	ret = q->tags ? io_uring_queue_init(2 * blk->depth, &q->ring,
					    IORING_SETUP_SQE128 |
						    IORING_SETUP_CQE32) :
			-ENOMEM;
	if (ret) {
		free(q->tags);
		free(q->committed);
		free(q->bufs);
		munmap((void *)q->iods, q->iods_len);
		return ret;
	}
	for (i = 0; i < blk->depth; i++) {
		q->tags[i].q = q;
		q->tags[i].tag = i;
	}
	return 0;
}

static void p2z_blk_queue_exit(struct p2z_blk_queue *q)
{
	io_uring_queue_exit(&q->ring);
	free(q->tags);
	free(q->committed);
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
	if (started)
		p2z_log(LOG_INFO,
			"/dev/ublkb%" PRIu32 ": %" PRIu64
			" requests served, at most %u in flight",
			blk->dev_id, blk->nr_served, blk->max_inflight);
	return ret;
}
