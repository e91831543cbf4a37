// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Asynchronous dispatcher: submission queues, splitting into pieces, and
 * the worker pool that stands in for a backend without asynchronous ops.
 *
 * A queue has @depth pieces; a piece is a struct p2z_io the backend sees,
 * within the device's limits. An io waits on the pending list until the
 * queue has a free piece for it. A read hands out pieces until all of it
 * is issued (they run concurrently); a write or an append hands out one
 * piece, then goes back to the end of the pending list when the piece
 * completed, so its pieces run in order, each after the previous one
 * landed. Completed ios go to the done list, whose end_io calls
 * p2z_dev_queue_reap() makes. Everything here but the pool's lists is the
 * queue owner's: no locks.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "po2zfs/dev.h"
#include "po2zfs/log.h"
#include "dev_priv.h"
#include "uring.h"

#define P2Z_QUEUE_MAX_DEPTH 4096
/* Pool workers per device at most (all its queues together). */
#define P2Z_POOL_MAX_WORKERS 16
/* A pool worker idle for this long exits (the next piece starts one). */
#define P2Z_POOL_IDLE_NS 1000000000L

/**
 * struct p2z_piece - one piece in flight on the backend
 * @io: what the backend sees
 * @req: the caller's io it is a piece of
 * @q: its queue
 * @next_free: free list link
 * @t0: start, for the flush counted after a write without native FUA
 */
struct p2z_piece {
	struct p2z_io io;
	struct p2z_io *req;
	struct p2z_dev_queue *q;
	struct p2z_piece *next_free;
	uint64_t t0;
};

/**
 * struct p2z_dev_queue - a submission queue, owned by one thread
 * @dev: device
 * @aops: the backend's asynchronous ops, or the worker pool's
 * @bq: their state
 * @efd: eventfd, readable when completions wait; -1 on a given ring
 * @pieces: the @depth pieces
 * @free: free pieces
 * @pend: ios waiting for a piece (head, tail)
 * @pend_tail: see @pend
 * @done: completed ios whose end_io has not run (head, tail)
 * @done_tail: see @done
 * @inflight: ios submitted whose end_io has not run
 * @in_reap: p2z_dev_queue_reap() runs: no need to signal @efd
 * @held: p2z_dev_queue_hold_fd() was called
 * @held_fd: the duplicate held for a queue without a ring of its own, or -1
 * @on_ring: opened by p2z_dev_queue_open_on(): completions are fed
 * @edge: p2z_dev_queue_edge() was called: @efd is never read, nor written
 *	  by the owner's calls
 */
struct p2z_dev_queue {
	struct p2z_dev *dev;
	const struct p2z_dev_ops *aops;
	void *bq;
	int efd;
	struct p2z_piece *pieces;
	struct p2z_piece *free;
	struct p2z_io *pend;
	struct p2z_io *pend_tail;
	struct p2z_io *done;
	struct p2z_io *done_tail;
	unsigned int inflight;
	bool in_reap;
	bool held;
	int held_fd;
	bool on_ring;
	bool edge;
};

static void p2z_q_signal(struct p2z_dev_queue *q)
{
	if (q->efd >= 0 && !q->edge)
		eventfd_write(q->efd, 1);
}

static void p2z_q_pend_add(struct p2z_dev_queue *q, struct p2z_io *io)
{
	io->st.next = NULL;
	io->st.queued = true;
	if (q->pend_tail)
		q->pend_tail->st.next = io;
	else
		q->pend = io;
	q->pend_tail = io;
}

/* Off the pending list: the head, or a failed read anywhere on it. */
static void p2z_q_pend_del(struct p2z_dev_queue *q, struct p2z_io *io)
{
	struct p2z_io **pp = &q->pend, *prev = NULL;

	while (*pp && *pp != io) {
		prev = *pp;
		pp = &(*pp)->st.next;
	}
	if (!*pp)
		return;
	*pp = io->st.next;
	if (q->pend_tail == io)
		q->pend_tail = prev;
	io->st.queued = false;
}

static void p2z_q_done_add(struct p2z_dev_queue *q, struct p2z_io *io)
{
	io->st.next = NULL;
	if (q->done_tail)
		q->done_tail->st.next = io;
	else
		q->done = io;
	q->done_tail = io;
	if (!q->in_reap)
		p2z_q_signal(q);
}

static unsigned int p2z_q_stat_op(const struct p2z_io *io)
{
	switch (io->op) {
	case P2Z_IO_READ:
		return P2Z_DEV_STAT_READ;
	case P2Z_IO_WRITE:
		return P2Z_DEV_STAT_WRITE;
	case P2Z_IO_APPEND:
		return P2Z_DEV_STAT_APPEND;
	}
	return P2Z_DEV_STAT_FLUSH;
}

/*
 * Nothing of @io in flight any more: count it, as the synchronous calls
 * do, and complete it, or first flush the device for a FUA write on a
 * backend without FUA (counted as a flush, and the FUA count then covers
 * the time until the data was durable).
 */
static void p2z_q_finish(struct p2z_dev_queue *q, struct p2z_io *io)
{
	struct p2z_dev *dev = q->dev;
	ssize_t ret = io->st.err ? io->st.err : (ssize_t)io->st.done;
	bool fua = (io->flags & P2Z_IO_FUA) &&
		   (io->op == P2Z_IO_WRITE || io->op == P2Z_IO_APPEND);

	if (io->op == P2Z_IO_FLUSH)
		ret = io->st.err;
	if (!io->st.flushing)
		p2z_dev_count(dev, p2z_q_stat_op(io), io->st.t0, ret);
	if (fua && !io->st.flushing && ret > 0 && !dev->ops->fua) {
		io->st.flushing = true;
		p2z_q_pend_add(q, io);
		return;
	}
	if (fua)
		p2z_dev_count(dev, P2Z_DEV_STAT_FUA, io->st.t0, ret);
	io->ret = ret;
	p2z_q_done_add(q, io);
}

static void p2z_q_read_done(struct p2z_dev_queue *q, struct p2z_io *io,
			    const struct p2z_io *pio)
{
	if (pio->ret >= 0 && (size_t)pio->ret == pio->len)
		io->st.done += pio->len;
	else if (!io->st.err)
		io->st.err = pio->ret < 0 ? (int)pio->ret : -EIO;
	if (io->st.err && io->st.queued)
		p2z_q_pend_del(q, io);
	if (!io->st.pieces && !io->st.queued)
		p2z_q_finish(q, io);
}

/* A write or append piece: the next one goes, or the io completes. */
static void p2z_q_serial_done(struct p2z_dev_queue *q, struct p2z_io *io,
			      const struct p2z_io *pio)
{
	struct p2z_dev *dev = q->dev;

	if (pio->ret <= 0) {
		if (!io->st.done)
			io->st.err = pio->ret < 0 ? (int)pio->ret : -EIO;
		p2z_q_finish(q, io);
		return;
	}
	if (io->op == P2Z_IO_APPEND) {
		if (!io->st.done) {
			io->lba = pio->lba;
		} else if (pio->lba != io->st.next_lba) {
			io->st.err = (int)p2z_dev_append_strayed(
				dev, io->zidx, io->st.next_lba, pio->lba);
			p2z_q_finish(q, io);
			return;
		}
		io->st.next_lba =
			pio->lba + (uint64_t)pio->ret / dev->info.lba_bytes;
	}
	io->st.done += (size_t)pio->ret;
	io->st.issued = io->st.done;
	if (io->st.done < io->len)
		p2z_q_pend_add(q, io);
	else
		p2z_q_finish(q, io);
}

/* end_io of every piece, called by the backend's reap. */
static void p2z_q_piece_end_io(struct p2z_io *pio)
{
	struct p2z_piece *p = container_of(pio, struct p2z_piece, io);
	struct p2z_dev_queue *q = p->q;
	struct p2z_io *io = p->req;

	io->st.pieces--;
	p->next_free = q->free;
	q->free = p;
	if (pio->op == P2Z_IO_FLUSH && io->op != P2Z_IO_FLUSH) {
		/* the flush after a FUA write */
		p2z_dev_count(q->dev, P2Z_DEV_STAT_FLUSH, p->t0, pio->ret);
		if (pio->ret < 0)
			io->st.err = (int)pio->ret;
		p2z_q_finish(q, io);
	} else if (io->op == P2Z_IO_READ) {
		p2z_q_read_done(q, io, pio);
	} else if (io->op == P2Z_IO_FLUSH) {
		io->st.err = pio->ret < 0 ? (int)pio->ret : 0;
		p2z_q_finish(q, io);
	} else {
		p2z_q_serial_done(q, io, pio);
	}
}

/* The next piece of @io, the head of the pending list, into @p. */
static void p2z_q_fill_piece(struct p2z_dev_queue *q, struct p2z_io *io,
			     struct p2z_io *pio)
{
	const struct p2z_dev_info *in = &q->dev->info;
	size_t max = in->max_xfer_bytes, n = io->len - io->st.issued;

	if (io->op == P2Z_IO_APPEND && in->max_append_bytes < max)
		max = in->max_append_bytes;
	if (n > max)
		n = max;
	memset(pio, 0, sizeof(*pio));
	pio->op = io->st.flushing ? P2Z_IO_FLUSH : io->op;
	pio->flags = q->dev->ops->fua ? io->flags : io->flags & ~P2Z_IO_FUA;
	if (pio->op != P2Z_IO_FLUSH) {
		pio->buf = (char *)io->buf + io->st.issued;
		pio->len = n;
		pio->ofs = io->ofs + io->st.issued;
		pio->zidx = io->zidx;
		io->st.issued += n;
	}
	pio->end_io = p2z_q_piece_end_io;
}

/* Hand out free pieces to the pending ios, in order. */
static void p2z_q_kick(struct p2z_dev_queue *q)
{
	while (q->free && q->pend) {
		struct p2z_piece *p = q->free;
		struct p2z_io *io = q->pend;
		int ret;

		q->free = p->next_free;
		p->req = io;
		p->t0 = p2z_stat_now();
		p2z_q_fill_piece(q, io, &p->io);
		if (io->op != P2Z_IO_READ || io->st.issued == io->len)
			p2z_q_pend_del(q, io);
		io->st.pieces++;
		ret = q->aops->submit(q->dev, q->bq, &p->io);
		if (ret) {
			/* refused (-errno), or done already (1) */
			if (ret < 0)
				p->io.ret = ret;
			p2z_q_piece_end_io(&p->io);
		}
	}
}

static int p2z_q_check(const struct p2z_dev *dev, const struct p2z_io *io)
{
	const struct p2z_dev_info *in = &dev->info;

	switch (io->op) {
	case P2Z_IO_READ:
	case P2Z_IO_WRITE:
		if (io->len % in->lba_bytes || io->ofs % in->lba_bytes)
			return -EINVAL;
		return 0;
	case P2Z_IO_APPEND:
		if (!dev->ops->append || !in->max_append_bytes)
			return -EOPNOTSUPP;
		if (io->zidx >= in->nr_zones || io->len % in->lba_bytes)
			return -EINVAL;
		return 0;
	case P2Z_IO_FLUSH:
		return 0;
	}
	return -EINVAL;
}

int p2z_dev_submit(struct p2z_dev_queue *q, struct p2z_io *io)
{
	int ret;

	if (!q || !io || !io->end_io)
		return -EINVAL;
	ret = p2z_q_check(q->dev, io);
	if (ret)
		return ret;
	memset(&io->st, 0, sizeof(io->st));
	io->st.t0 = p2z_stat_now();
	io->ret = 0;
	io->lba = 0;
	q->inflight++;
	/* Zero-length: checked, answered here, never seen by a backend. */
	if (!io->len && io->op != P2Z_IO_FLUSH) {
		p2z_q_finish(q, io);
		return 0;
	}
	p2z_q_pend_add(q, io);
	p2z_q_kick(q);
	return 0;
}

/* Run the end_io of every completed io, including any that they submit. */
static unsigned int p2z_q_run_done(struct p2z_dev_queue *q)
{
	unsigned int n = 0;

	while (q->done) {
		struct p2z_io *io = q->done;

		q->done = io->st.next;
		if (!q->done)
			q->done_tail = NULL;
		q->inflight--;
		io->end_io(io);
		n++;
	}
	return n;
}

/*
 * The queue's ring, for plugging and quieting, or NULL (the pool). A given
 * ring (on_ring) is shared: uring.c's plug and quiet leave it alone.
 */
static struct p2z_qring *p2z_q_qring(struct p2z_dev_queue *q)
{
	return q->aops->queue_qring ? q->aops->queue_qring(q->bq) : NULL;
}

int p2z_dev_queue_reap(struct p2z_dev_queue *q, unsigned int min_wait)
{
	struct p2z_qring *qr = NULL;
	eventfd_t cnt;
	unsigned int n = 0;

	if (!q || q->in_reap || (q->on_ring && min_wait))
		return -EINVAL;
	/* Cleared first: a completion arriving later signals it again. */
	if (q->efd >= 0 && !q->edge)
		eventfd_read(q->efd, &cnt);
	/*
	 * Waiting for everything in flight, an edge owner needs no signal of
	 * it: quiet the ring until nothing is in flight (p2z_ring_queue_quiet()).
	 */
	if (q->edge && min_wait && min_wait >= q->inflight)
		qr = p2z_q_qring(q);
	if (qr)
		p2z_ring_queue_quiet(qr, true);
	q->in_reap = true;
	for (;;) {
		q->aops->reap(q->dev, q->bq, false);
		p2z_q_kick(q);
		n += p2z_q_run_done(q);
		if (n >= min_wait || !q->inflight)
			break;
		/* Not done, nothing pending without a piece: one is out. */
		q->aops->reap(q->dev, q->bq, true);
		p2z_q_kick(q);
	}
	q->in_reap = false;
	if (qr) {
		p2z_ring_queue_quiet(qr, false);
		/* An end_io submitted more: the signal of one may be lost. */
		if (q->inflight)
			eventfd_write(q->efd, 1);
	}
	return (int)n;
}

int p2z_dev_queue_plug(struct p2z_dev_queue *q, bool plug)
{
	struct p2z_qring *qr;

	if (!q)
		return -EINVAL;
	qr = p2z_q_qring(q);
	if (!qr)
		return 0;
	if (plug) {
		p2z_ring_queue_plug(qr);
		return 0;
	}
	return p2z_ring_queue_unplug(qr);
}

void p2z_dev_queue_edge(struct p2z_dev_queue *q)
{
	q->edge = true;
}

bool p2z_dev_queue_ready(struct p2z_dev_queue *q)
{
	return q->done != NULL;
}

int p2z_dev_queue_complete(struct p2z_dev_queue *q,
			   const struct io_uring_cqe *cqe)
{
	int n;

	if (!q || !cqe || !q->on_ring || q->in_reap)
		return -EINVAL;
	q->in_reap = true;
	q->aops->complete(q->dev, q->bq, cqe);
	p2z_q_kick(q);
	n = (int)p2z_q_run_done(q);
	q->in_reap = false;
	return n;
}

int p2z_dev_queue_fd(struct p2z_dev_queue *q)
{
	return q->efd;
}

unsigned int p2z_dev_queue_inflight(struct p2z_dev_queue *q)
{
	return q->inflight;
}

/*
 * The worker pool: the asynchronous ops of a backend without any (none
 * now; emu had none before emu_async.c), running its synchronous ops on a
 * few threads, so that the requests of the queues overlap on the device. One pool per
 * device, shared by all its queues: a daemon with a queue per FUSE worker
 * would otherwise multiply the pool threads by its workers.
 */

/**
 * struct p2z_pool - the workers of one device, shared by its queues
 * @dev: device
 * @next: list of the pools (p2z_pools)
 * @refs: queues using it; guarded by p2z_pools_lock
 * @lock: guards everything below and every queue's struct p2z_pool_q
 * @work_cv: signalled when work arrives or @stop is set
 * @exit_cv: signalled when @nr drops to 0
 * @work: pieces to run (head, tail)
 * @work_tail: see @work
 * @stop: workers exit
 * @nr: workers running
 * @idle: workers waiting for work
 * @nr_work: pieces on @work
 * @attr: detached threads
 *
 * Workers start lazily: a submission starts one when more pieces wait than
 * workers are idle, up to P2Z_POOL_MAX_WORKERS, so that a device that never
 * overlaps two pieces costs one thread, and one without any queue in use
 * none; a worker idle for P2Z_POOL_IDLE_NS exits. Workers are detached:
 * stopping waits for @nr to drop to 0.
 */
struct p2z_pool {
	struct p2z_dev *dev;
	struct p2z_pool *next;
	unsigned int refs;
	pthread_mutex_t lock;
	pthread_cond_t work_cv;
	pthread_cond_t exit_cv;
	struct p2z_io *work;
	struct p2z_io *work_tail;
	bool stop;
	unsigned int nr;
	unsigned int idle;
	unsigned int nr_work;
	pthread_attr_t attr;
};

/**
 * struct p2z_pool_q - one queue's side of its device's pool
 * @pl: the pool
 * @efd: the queue's eventfd
 * @done_cv: signalled when a piece of this queue completes
 * @done: its completed pieces (a stack; order does not matter)
 */
struct p2z_pool_q {
	struct p2z_pool *pl;
	int efd;
	pthread_cond_t done_cv;
	struct p2z_io *done;
};

static pthread_mutex_t p2z_pools_lock = PTHREAD_MUTEX_INITIALIZER;
static struct p2z_pool *p2z_pools;

static ssize_t p2z_pool_run(struct p2z_dev *dev, struct p2z_io *io)
{
	const struct p2z_dev_ops *ops = dev->ops;

	switch (io->op) {
	case P2Z_IO_READ:
		return ops->pread(dev, io->buf, io->len, io->ofs);
	case P2Z_IO_WRITE:
		return ops->pwrite(dev, io->buf, io->len, io->ofs, io->flags);
	case P2Z_IO_APPEND:
		return ops->append(dev, io->zidx, io->buf, io->len, &io->lba,
				   io->flags);
	case P2Z_IO_FLUSH:
		return ops->flush(dev);
	}
	return -EINVAL;
}

/* Wait for work, at most P2Z_POOL_IDLE_NS; pl->lock held. */
static void p2z_pool_wait(struct p2z_pool *pl)
{
	struct timespec end;
	int ret = 0;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_nsec += P2Z_POOL_IDLE_NS % 1000000000L;
	end.tv_sec +=
		P2Z_POOL_IDLE_NS / 1000000000L + end.tv_nsec / 1000000000L;
	end.tv_nsec %= 1000000000L;
	while (!pl->work && !pl->stop && ret != ETIMEDOUT) {
		pl->idle++;
		ret = pthread_cond_timedwait(&pl->work_cv, &pl->lock, &end);
		pl->idle--;
	}
}

static void *p2z_pool_worker(void *arg)
{
	struct p2z_pool *pl = arg;
	struct p2z_pool_q *pq;
	struct p2z_io *io;

	pthread_mutex_lock(&pl->lock);
	for (;;) {
		p2z_pool_wait(pl);
		if (!pl->work)
			break;
		io = pl->work;
		pl->nr_work--;
		pl->work = io->st.next;
		if (!pl->work)
			pl->work_tail = NULL;
		pthread_mutex_unlock(&pl->lock);
		io->ret = p2z_pool_run(pl->dev, io);
		/* The pool sees pieces only (p2z_q_kick()). */
		pq = ((struct p2z_piece *)io)->q->bq;
		pthread_mutex_lock(&pl->lock);
		io->st.next = pq->done;
		pq->done = io;
		pthread_cond_signal(&pq->done_cv);
		eventfd_write(pq->efd, 1);
	}
	/* Idle too long, or stopping: the last one out wakes the stopper. */
	if (!--pl->nr)
		pthread_cond_broadcast(&pl->exit_cv);
	pthread_mutex_unlock(&pl->lock);
	return NULL;
}

static void p2z_pool_free(struct p2z_pool *pl)
{
	pthread_mutex_lock(&pl->lock);
	pl->stop = true;
	pthread_cond_broadcast(&pl->work_cv);
	while (pl->nr)
		pthread_cond_wait(&pl->exit_cv, &pl->lock);
	pthread_mutex_unlock(&pl->lock);
	pthread_attr_destroy(&pl->attr);
	pthread_cond_destroy(&pl->exit_cv);
	pthread_cond_destroy(&pl->work_cv);
	pthread_mutex_destroy(&pl->lock);
	free(pl);
}

static struct p2z_pool *p2z_pool_new(struct p2z_dev *dev)
{
	struct p2z_pool *pl = calloc(1, sizeof(*pl));
	pthread_condattr_t ca;

	if (!pl)
		return NULL;
	pl->dev = dev;
	pthread_mutex_init(&pl->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pl->work_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&pl->exit_cv, NULL);
	pthread_attr_init(&pl->attr);
	pthread_attr_setdetachstate(&pl->attr, PTHREAD_CREATE_DETACHED);
	return pl;
}

/* The device's pool, one more reference; NULL: out of memory. */
static struct p2z_pool *p2z_pool_get(struct p2z_dev *dev)
{
	struct p2z_pool *pl;

	pthread_mutex_lock(&p2z_pools_lock);
	for (pl = p2z_pools; pl && pl->dev != dev; pl = pl->next)
		;
	if (!pl) {
		pl = p2z_pool_new(dev);
		if (pl) {
			pl->next = p2z_pools;
			p2z_pools = pl;
		}
	}
	if (pl)
		pl->refs++;
	pthread_mutex_unlock(&p2z_pools_lock);
	return pl;
}

static void p2z_pool_put(struct p2z_pool *pl)
{
	struct p2z_pool **pp;

	pthread_mutex_lock(&p2z_pools_lock);
	if (--pl->refs) {
		pl = NULL;
	} else {
		for (pp = &p2z_pools; *pp != pl; pp = &(*pp)->next)
			;
		*pp = pl->next;
	}
	pthread_mutex_unlock(&p2z_pools_lock);
	if (pl)
		p2z_pool_free(pl);
}

static int p2z_pool_init(struct p2z_dev *dev, unsigned int depth, int efd,
			 void **bqp)
{
	struct p2z_pool_q *pq = calloc(1, sizeof(*pq));

	(void)depth;
	if (!pq)
		return -ENOMEM;
	pq->pl = p2z_pool_get(dev);
	if (!pq->pl) {
		free(pq);
		return -ENOMEM;
	}
	pq->efd = efd;
	pthread_cond_init(&pq->done_cv, NULL);
	*bqp = pq;
	return 0;
}

static void p2z_pool_exit(struct p2z_dev *dev, void *bq)
{
	struct p2z_pool_q *pq = bq;

	(void)dev;
	p2z_pool_put(pq->pl);
	pthread_cond_destroy(&pq->done_cv);
	free(pq);
}

static int p2z_pool_submit(struct p2z_dev *dev, void *bq, struct p2z_io *io)
{
	struct p2z_pool_q *pq = bq;
	struct p2z_pool *pl = pq->pl;
	int ret = 0;

	(void)dev;
	io->st.next = NULL;
	pthread_mutex_lock(&pl->lock);
	/* Start a worker when the idle ones cannot take this piece too. */
	if (pl->nr_work >= pl->idle && pl->nr < P2Z_POOL_MAX_WORKERS) {
		pthread_t tid;

		ret = -pthread_create(&tid, &pl->attr, p2z_pool_worker, pl);
		if (!ret)
			pl->nr++;
		else if (pl->nr)
			ret = 0; /* the running workers take it later */
	}
	if (!ret) {
		if (pl->work_tail)
			pl->work_tail->st.next = io;
		else
			pl->work = io;
		pl->work_tail = io;
		pl->nr_work++;
		pthread_cond_signal(&pl->work_cv);
	}
	pthread_mutex_unlock(&pl->lock);
	return ret;
}

static int p2z_pool_reap(struct p2z_dev *dev, void *bq, bool wait)
{
	struct p2z_pool_q *pq = bq;
	struct p2z_pool *pl = pq->pl;
	struct p2z_io *io, *next;
	int n = 0;

	(void)dev;
	pthread_mutex_lock(&pl->lock);
	while (wait && !pq->done)
		pthread_cond_wait(&pq->done_cv, &pl->lock);
	io = pq->done;
	pq->done = NULL;
	pthread_mutex_unlock(&pl->lock);
	for (; io; io = next, n++) {
		next = io->st.next;
		io->end_io(io);
	}
	return n;
}

static const struct p2z_dev_ops p2z_pool_ops = {
	.name = "pool",
	.queue_init = p2z_pool_init,
	.queue_exit = p2z_pool_exit,
	.submit = p2z_pool_submit,
	.reap = p2z_pool_reap,
};

/*
 * Whether a backend's own queue was refused by the host rather than the
 * device: io_uring disabled (sysctl kernel.io_uring_disabled, a seccomp
 * filter), not built, or the locked-memory limit. The worker pool, which
 * calls the synchronous ops, serves such a queue instead.
 */
static bool p2z_queue_host_refused(int err)
{
	return err == -ENOSYS || err == -EPERM || err == -EACCES ||
	       err == -ENOMEM;
}

static void p2z_queue_fallback_note(const struct p2z_dev *dev, int err)
{
	static int noted;

	if (!__atomic_exchange_n(&noted, 1, __ATOMIC_RELAXED))
		p2z_log(LOG_WARNING,
			"%s: no io_uring queue (%s): the worker pool serves it",
			dev->path, strerror(-err));
}

/* A queue of @depth free pieces, with an eventfd if @efd. */
static struct p2z_dev_queue *p2z_q_alloc(struct p2z_dev *dev,
					 unsigned int depth, bool efd)
{
	struct p2z_dev_queue *q = calloc(1, sizeof(*q));
	unsigned int i;

	if (!q)
		return NULL;
	q->pieces = calloc(depth, sizeof(*q->pieces));
	q->efd = efd ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
	if (!q->pieces || (efd && q->efd < 0)) {
		if (q->efd >= 0)
			close(q->efd);
		free(q->pieces);
		free(q);
		return NULL;
	}
	for (i = 0; i < depth; i++) {
		q->pieces[i].q = q;
		q->pieces[i].next_free = q->free;
		q->free = &q->pieces[i];
	}
	q->held_fd = -1;
	q->dev = dev;
	return q;
}

static void p2z_q_free(struct p2z_dev_queue *q)
{
	if (q->held_fd >= 0)
		close(q->held_fd);
	if (q->efd >= 0)
		close(q->efd);
	free(q->pieces);
	free(q);
}

int p2z_dev_queue_open(struct p2z_dev *dev, unsigned int depth,
		       struct p2z_dev_queue **qp)
{
	struct p2z_dev_queue *q;
	int ret;

	if (!dev || !qp || !depth || depth > P2Z_QUEUE_MAX_DEPTH)
		return -EINVAL;
	q = p2z_q_alloc(dev, depth, true);
	if (!q)
		return -ENOMEM;
	q->aops = dev->ops->submit ? dev->ops : &p2z_pool_ops;
	ret = q->aops->queue_init(dev, depth, q->efd, &q->bq);
	if (ret && q->aops != &p2z_pool_ops && p2z_queue_host_refused(ret)) {
		p2z_queue_fallback_note(dev, ret);
		q->aops = &p2z_pool_ops;
		ret = q->aops->queue_init(dev, depth, q->efd, &q->bq);
	}
	if (ret) {
		p2z_q_free(q);
		return ret;
	}
	*qp = q;
	return 0;
}

int p2z_dev_queue_open_on(struct p2z_dev *dev, unsigned int depth,
			  struct io_uring *ring, uint64_t tag,
			  struct p2z_dev_queue **qp)
{
	struct p2z_dev_queue *q;
	int ret;

	if (!dev || !qp || !ring || !tag || !depth ||
	    depth > P2Z_QUEUE_MAX_DEPTH)
		return -EINVAL;
	if (!dev->ops->queue_init_on || !dev->ops->complete)
		return -EOPNOTSUPP;
	q = p2z_q_alloc(dev, depth, false);
	if (!q)
		return -ENOMEM;
	q->aops = dev->ops;
	q->on_ring = true;
	ret = q->aops->queue_init_on(dev, depth, ring, tag, &q->bq);
	if (ret) {
		p2z_q_free(q);
		return ret;
	}
	*qp = q;
	return 0;
}

/*
 * A queue on a given ring cannot wait: its owner drained it. If it did not,
 * the pieces in flight stay allocated (the kernel may still complete them
 * into their buffers), and so does the queue.
 */
void p2z_dev_queue_close(struct p2z_dev_queue *q)
{
	if (!q)
		return;
	if (q->on_ring) {
		p2z_dev_queue_reap(q, 0);
		if (q->inflight) {
			p2z_log(LOG_ERR,
				"%s: queue closed with %u requests in flight",
				q->dev->path, q->inflight);
			return;
		}
	}
	while (q->inflight)
		p2z_dev_queue_reap(q, q->inflight);
	q->aops->queue_exit(q->dev, q->bq);
	p2z_q_free(q);
}

int p2z_dev_queue_hold_fd(struct p2z_dev_queue *q, int fd)
{
	int ret;

	if (!q || fd < 0)
		return -EINVAL;
	if (q->held)
		return -EBUSY;
	if (q->aops->queue_hold_fd) {
		ret = q->aops->queue_hold_fd(q->dev, q->bq, fd);
	} else {
		q->held_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		ret = q->held_fd < 0 ? -errno : 0;
	}
	q->held = !ret;
	return ret;
}
