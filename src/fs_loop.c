// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The FUSE session loop: P2Z_FS_MAX_THREADS worker threads, each with an
 * epoll set holding the eventfd of its own device queue
 * (p2z_dev_queue_open()), the loop's stop eventfd and, for the receivers,
 * the /dev/fuse descriptor (O_NONBLOCK, EPOLLEXCLUSIVE: one sleeping
 * receiver wakes per request). A worker
 * receives a request and processes it; a READ of a zone file or of po2
 * submits its device reads on the worker's queue and returns
 * (fs_file.c), and the worker answers it from the read's completion when
 * the queue's eventfd fires. No lock is taken on that path beyond the
 * zone's short one.
 *
 * The drain rule. A worker with reads in flight on its queue must not
 * block on another thread: a reset, a finish or the errors= policy of a
 * zone waits for the zone's reads in flight, which only their queue's
 * owner completes. So before any request other than READ (writes, which
 * may wait in the zone write sequencer, opens and setattrs that reset,
 * releases that close a zone, fsyncs, invalidations) a worker reaps its
 * queue until nothing of it is in flight (a WRITE that is submitted
 * excepted); a READ that finds a reset pending drains likewise before it
 * waits (p2z_zone_read_submit()); and
 * failed reads, whose errors= policy takes the zone's locks, are finished
 * on the worker only once its queue is drained (p2z_fs_worker_defer()).
 *
 * The fast path (p2z_fs_worker_settle()): a worker left with exactly one
 * read in flight waits for it on its queue and answers it at once, then
 * sleeps in epoll_wait() until the next request, instead of a round trip
 * through the queue's eventfd for the completion and a /dev/fuse read
 * that finds nothing after it.
 *
 * System calls per request (what this loop costs beyond FUSE's own read
 * and reply): a worker plugs its queue while it receives a batch of
 * requests (p2z_dev_queue_plug()), so that the batch's device reads go
 * with one io_uring_enter(), or with the wait of the fast path; its
 * queue's eventfd is edge-triggered (p2z_dev_queue_edge(), EPOLLET),
 * never read: a reap costs no system call, and a worker reaps what
 * completed inside its own calls before it sleeps (p2z_fs_worker_idle()).
 *
 * Writes of zone files never wait for a predecessor on a worker: one
 * that would is parked in the zone's sequencer (fs_file.c), and a
 * sequential zone's write whose turn came is submitted on the worker's
 * queue and answered from its completion, like a READ (so a WRITE does
 * not drain the queue unless fs_file.c finds it will not be submitted); a
 * failed one is finished once the queue is drained
 * (p2z_zone_write_settle() in p2z_fs_worker_drain()); the workers
 * fail those parked past the hold bound (p2z_fs_worker_expire(), at least
 * every P2Z_FS_LOOP_TICK_MS) and, at the end, all of them (EIO). po2
 * writes still wait in their worker (hence P2Z_FS_MAX_THREADS workers).
 *
 * Receivers and spares. Only a few workers receive requests at a time
 * (one per CPU, at least 2, at most half of them; P2Z_FS_RECEIVERS sets
 * it): with every worker receiving, each request of a deep queue woke a
 * sleeping worker of its own, which then cost a wake-up, an epoll_wait()
 * and a device submission per request, and a /dev/fuse read that found
 * nothing; few receivers take the requests that arrive while they work in
 * batches. The others are spares. A receiver about to sleep on another
 * thread (a write held for its predecessor, a reset waiting for reads,
 * the release wait, a page invalidation waiting for reads of the pages:
 * p2z_cond_wait() and p2z_cond_sleeping() run p2z_fs_worker_handoff())
 * first makes a spare a receiver and stops receiving itself, so that the
 * requests it may wait for are still received, as io_uring's io-wq wakes
 * another worker when one blocks; it becomes a spare once it is done.
 * With no spare left it sleeps as a receiver: as many workers as before
 * can be waiting at once (see P2Z_FS_MAX_BACKGROUND).
 *
 * Exit: a signal (fuse_set_signal_handlers()) or the unmount (ENODEV)
 * leaves the session exited; the worker that sees it first wakes the
 * others through the stop eventfd (and every worker looks again at least
 * every P2Z_FS_LOOP_TICK_MS). Each worker then completes everything in
 * flight on its queue and the deferred reads, closes its queue, and
 * returns; the caller destroys the session after p2z_fs_loop() returned.
 */
#include "fs_priv.h"

#include <linux/fuse.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "po2zfs/cond.h"
#include "po2zfs/log.h"

/* Pieces in flight per worker queue. */
#define P2Z_FS_QUEUE_DEPTH 32U
/* How often a worker looks at the session's exit flag at least. */
#define P2Z_FS_LOOP_TICK_MS 200
/* Requests a worker receives in a row at most before epoll_wait(). */
#define P2Z_FS_LOOP_BATCH 8U

enum { P2Z_FS_EV_FUSE, P2Z_FS_EV_QUEUE, P2Z_FS_EV_STOP };

struct p2z_fs_loop {
	struct p2z_fs *fs;
	struct fuse_session *se;
	int stop_fd;
	int err; /* a worker could not run: -errno */
	unsigned int reads; /* reads in flight, all queues (atomic, lags) */
	struct p2z_fs_worker *workers;
	unsigned int nr;
	unsigned int receivers; /* receiving at a time (at the start) */
	pthread_mutex_t spare_lock;
	struct p2z_fs_worker *spares; /* not receiving, idle or busy */
};

static __thread struct p2z_fs_worker *p2z_fs_self;

struct p2z_fs_worker *p2z_fs_worker_self(void)
{
	return p2z_fs_self;
}

void p2z_fs_worker_defer(struct p2z_fs_worker *w, struct p2z_fs_rd *rd)
{
	rd->next = NULL;
	if (w->defer_tail)
		w->defer_tail->next = rd;
	else
		w->deferred = rd;
	w->defer_tail = rd;
}

/*
 * Reap until nothing is in flight, then finish the failed writes (their
 * errors= policy waits for reads), which may submit more: until none.
 */
void p2z_fs_worker_drain(struct p2z_fs_worker *w)
{
	do {
		while (p2z_dev_queue_inflight(w->q))
			p2z_dev_queue_reap(w->q, 1);
	} while (p2z_zone_write_settle());
}

/* Finish the failed reads and writes: their errors= policy may block. */
static void p2z_fs_worker_run_deferred(struct p2z_fs_worker *w)
{
	if (p2z_zone_write_unsettled())
		p2z_fs_worker_drain(w);
	while (w->deferred) {
		struct p2z_fs_rd *rd;

		p2z_fs_worker_drain(w);
		rd = w->deferred;
		w->deferred = rd->next;
		if (!w->deferred)
			w->defer_tail = NULL;
		p2z_fs_read_finish(rd);
	}
}

/*
 * Parked writes past their hold bound get EINVAL (all of them, EIO, at the
 * end); their replies may invalidate, so the queue is drained first.
 */
static void p2z_fs_worker_expire(struct p2z_fs_worker *w, bool all)
{
	struct p2z_zone_table *zt = w->loop->fs->zt;

	if (!p2z_zone_seq_parked(zt))
		return;
	p2z_fs_worker_drain(w);
	p2z_zone_seq_expire(zt, all);
}

/*
 * Request buffers. libfuse 3.14 to 3.16 reads a request into fuse_buf.mem,
 * at most FUSE_MAX_MAX_PAGES (256) pages and a 4 KiB header (its
 * se->bufsize, which INIT only lowers; at least 8 KiB), and allocates the
 * buffer itself if mem is NULL. The loop gives it buffers of its own,
 * placed so that a WRITE's data, after its fuse_in_header and
 * fuse_write_in, starts on a page: the alignment every backend takes
 * (O_DIRECT, NVMe DMA) without a copy. And a write submitted to the device
 * keeps the buffer while the worker receives into another one
 * (p2z_fs_worker_take_buf()), where it copied its data out before (a 128
 * KiB memcpy() per append: a quarter of the daemon's time per append in
 * the guest profile). Other libfuse versions keep their own buffers and
 * the copy. Free buffers wait in fs->rbufs for the next taker: a page
 * for the headers, then what libfuse reads at most.
 */
#define P2Z_FS_RBUF_HDR \
	(sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in))
#define P2Z_FS_RBUF_CACHE 64

static bool p2z_fs_rbuf_ours(void)
{
	int v = fuse_version();

	return v >= FUSE_MAKE_VERSION(3, 14) && v <= FUSE_MAKE_VERSION(3, 16);
}

int p2z_fs_rbufs_init(struct p2z_fs *fs)
{
	/* A page, checked by p2z_fs_alloc() before the pools are made. */
	size_t align = (size_t)fs->page_bytes;

	return p2z_fs_pool_init(&fs->rbufs, align + 256 * align + 0x1000, align,
				P2Z_FS_RBUF_CACHE);
}

/* The most libfuse reads into a request buffer of @p. */
static size_t p2z_fs_rbuf_bytes(const struct p2z_fs_pool *p)
{
	return p->bytes - p->align;
}

/* Where libfuse reads a request into the request buffer rbuf of @p. */
static void *p2z_fs_rbuf_mem(const struct p2z_fs_pool *p, void *rbuf)
{
	return (char *)rbuf + p->align - P2Z_FS_RBUF_HDR;
}

void *p2z_fs_worker_take_buf(struct p2z_fs_worker *w, const void *data,
			     size_t len)
{
	struct p2z_fs_pool *p = &w->loop->fs->rbufs;
	const char *mem = w->fbuf.mem, *d = data;
	size_t max = p2z_fs_rbuf_bytes(p);
	void *rbuf = w->rbuf, *next;

	if (!rbuf || d < mem || len > max || (size_t)(d - mem) > max - len)
		return NULL;
	next = p2z_fs_pool_get(p);
	if (!next)
		return NULL;
	w->rbuf = next;
	w->fbuf.mem = p2z_fs_rbuf_mem(p, next);
	return rbuf;
}

/*
 * Whether the request received is a READ or a WRITE (libfuse never splices
 * here): a WRITE drains in p2z_fs_write_buf() unless it is submitted.
 */
static bool p2z_fs_buf_is_read(const struct fuse_buf *b)
{
	const struct fuse_in_header *h = b->mem;

	return !(b->flags & FUSE_BUF_IS_FD) && b->size >= sizeof(*h) &&
	       (h->opcode == FUSE_READ || h->opcode == FUSE_WRITE);
}

/* Bring the loop's count of reads in flight up to date with w's queue. */
static void p2z_fs_worker_count(struct p2z_fs_worker *w)
{
	unsigned int n = p2z_dev_queue_inflight(w->q);

	if (n != w->counted)
		__atomic_add_fetch(&w->loop->reads, n - w->counted,
				   __ATOMIC_RELAXED);
	w->counted = n;
}

/*
 * The fast path, when /dev/fuse has nothing waiting and no other read is
 * in flight in the loop (a lone synchronous reader; the count lags, which
 * costs at most a fast path taken or missed): a read alone on the queue
 * is waited for right here (a device read, never another thread:
 * the drain rule holds) and answered, the ring's eventfd signals quieted
 * meanwhile (p2z_dev_queue_edge()), so that a queue-depth-1 reader costs
 * no epoll_wait() round trip for the completion; the caller then ends
 * its batch. With more reads in flight the completions come through
 * epoll, and requests waiting are received first (batched submissions).
 * Return: whether it answered a read.
 */
static bool p2z_fs_worker_settle(struct p2z_fs_worker *w)
{
	p2z_fs_worker_count(w);
	if (p2z_dev_queue_inflight(w->q) != 1 || w->deferred ||
	    __atomic_load_n(&w->loop->reads, __ATOMIC_RELAXED) > 1)
		return false;
	/* Sends the read held back by the plug and waits: one system call. */
	p2z_dev_queue_reap(w->q, 1);
	p2z_fs_worker_count(w);
	return true;
}

static void p2z_fs_loop_stop(struct p2z_fs_loop *lp)
{
	fuse_session_exit(lp->se);
	eventfd_write(lp->stop_fd, 1);
}

/*
 * Receive and serve one request; false: nothing more now (or the end).
 * Nothing waiting, the fast path may answer a read. After it answered
 * one, the batch ends too: a lone reader's next request comes only after
 * the answer, so a /dev/fuse read now would find nothing (one system call
 * per request), where epoll_wait() sleeps until it is there.
 */
static bool p2z_fs_worker_receive_one(struct p2z_fs_loop *lp,
				      struct p2z_fs_worker *w)
{
	int ret = fuse_session_receive_buf(lp->se, &w->fbuf);

	if (ret == -EAGAIN || ret == -EINTR) {
		p2z_fs_worker_settle(w);
		return false;
	}
	if (ret <= 0 || fuse_session_exited(lp->se)) {
		/* 0: unmounted (ENODEV) or exited by a signal */
		if (ret < 0)
			p2z_log(LOG_ERR, "reading /dev/fuse: %s",
				strerror(-ret));
		p2z_fs_loop_stop(lp);
		return false;
	}
	if (!p2z_fs_buf_is_read(&w->fbuf))
		p2z_fs_worker_drain(w);
	fuse_session_process_buf(lp->se, &w->fbuf);
	/* A lone reader sends nothing more before its answer: wait for it. */
	if (p2z_fs_worker_settle(w))
		return false;
	if (p2z_dev_queue_inflight(w->q))
		p2z_dev_queue_reap(w->q, 0);
	p2z_fs_worker_count(w);
	return true;
}

/*
 * Serve the requests waiting, up to P2Z_FS_LOOP_BATCH (one epoll_wait()
 * each would cost a system call per request), reaping in between, with
 * the queue plugged: their device reads go at the end, together.
 */
static void p2z_fs_worker_receive(struct p2z_fs_loop *lp,
				  struct p2z_fs_worker *w)
{
	unsigned int i;
	int ret;

	p2z_dev_queue_plug(w->q, true);
	for (i = 0; i < P2Z_FS_LOOP_BATCH && !w->deferred &&
		    !p2z_zone_write_unsettled() &&
		    __atomic_load_n(&w->receiver, __ATOMIC_RELAXED);
	     i++)
		if (!p2z_fs_worker_receive_one(lp, w))
			break;
	ret = p2z_dev_queue_plug(w->q, false);
	if (ret) {
		/* Left on the ring: a reap that waits sends them. */
		p2z_log(LOG_ERR, "submitting device reads: %s; waiting",
			strerror(-ret));
		p2z_fs_worker_drain(w);
	}
	p2z_dev_queue_reap(w->q, 0);
}

/*
 * Before sleeping: answer what completed inside the worker's own calls
 * (they signal nothing, p2z_dev_queue_edge()), finish the failed requests
 * and the expired parked writes, until nothing of that is left.
 */
static void p2z_fs_worker_idle(struct p2z_fs_worker *w)
{
	do {
		while (p2z_dev_queue_ready(w->q))
			p2z_dev_queue_reap(w->q, 0);
		p2z_fs_worker_run_deferred(w);
		p2z_fs_worker_expire(w, false);
	} while (p2z_dev_queue_ready(w->q));
	p2z_fs_worker_count(w);
}

static int p2z_fs_epoll_add(int epfd, int fd, uint32_t events, uint32_t tag)
{
	struct epoll_event ev = { .events = events, .data.u32 = tag };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* Add /dev/fuse to w's epoll set, or remove it. */
static int p2z_fs_worker_listen(struct p2z_fs_worker *w, bool on)
{
	int fd = fuse_session_fd(w->loop->se);

	if (on)
		return p2z_fs_epoll_add(w->epfd, fd, EPOLLIN | EPOLLEXCLUSIVE,
					P2Z_FS_EV_FUSE);
	return epoll_ctl(w->epfd, EPOLL_CTL_DEL, fd, NULL) ? -errno : 0;
}

/* Put w on the spare list unless it receives or is on it. */
static void p2z_fs_worker_spare(struct p2z_fs_worker *w)
{
	struct p2z_fs_loop *lp = w->loop;

	pthread_mutex_lock(&lp->spare_lock);
	if (!__atomic_load_n(&w->receiver, __ATOMIC_RELAXED) && !w->spare) {
		w->spare = true;
		w->next_spare = lp->spares;
		lp->spares = w;
	}
	pthread_mutex_unlock(&lp->spare_lock);
}

/*
 * The calling worker is about to sleep on another thread (p2z_cond_on_sleep(),
 * any lock held): a spare receives in its place, then it stops receiving.
 * A spare taken off the list is marked a receiver under the list's lock,
 * so that it does not put itself back on it meanwhile.
 */
static void p2z_fs_worker_handoff(void *arg)
{
	struct p2z_fs_worker *w = arg, *s;
	struct p2z_fs_loop *lp = w->loop;
	int ret;

	if (!__atomic_load_n(&w->receiver, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&lp->spare_lock);
	s = lp->spares;
	if (s) {
		lp->spares = s->next_spare;
		s->spare = false;
		__atomic_store_n(&s->receiver, true, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&lp->spare_lock);
	if (!s)
		return; /* none left: w sleeps as a receiver */
	ret = p2z_fs_worker_listen(s, true);
	if (ret) {
		p2z_log(LOG_ERR, "a spare worker cannot receive: %s",
			strerror(-ret));
		__atomic_store_n(&s->receiver, false, __ATOMIC_RELAXED);
		p2z_fs_worker_spare(s);
		return;
	}
	/* Failing that, two receive: no harm. */
	if (!p2z_fs_worker_listen(w, false))
		__atomic_store_n(&w->receiver, false, __ATOMIC_RELAXED);
}

static void *p2z_fs_worker_run(void *arg)
{
	struct p2z_fs_worker *w = arg;
	struct p2z_fs_loop *lp = w->loop;
	struct epoll_event ev[4];
	bool stop = false;
	int i, n;

	/* A queue is its opener's (nvme and zbd rings may be bound to it). */
	n = p2z_dev_queue_open(lp->fs->zt->dev, P2Z_FS_QUEUE_DEPTH, &w->q);
	if (!n) {
		p2z_dev_queue_edge(w->q);
		n = p2z_fs_epoll_add(w->epfd, p2z_dev_queue_fd(w->q),
				     EPOLLIN | EPOLLET, P2Z_FS_EV_QUEUE);
	}
	if (n) {
		p2z_log(LOG_ERR, "opening a worker's device queue: %s",
			strerror(-n));
		__atomic_store_n(&lp->err, n, __ATOMIC_RELAXED);
		p2z_fs_loop_stop(lp);
		p2z_dev_queue_close(w->q);
		return NULL;
	}
	p2z_fs_self = w;
	p2z_cond_on_sleep(p2z_fs_worker_handoff, w);
	while (!stop && !fuse_session_exited(lp->se)) {
		p2z_fs_worker_idle(w);
		if (!__atomic_load_n(&w->receiver, __ATOMIC_RELAXED))
			p2z_fs_worker_spare(w);
		n = epoll_wait(w->epfd, ev, 4, P2Z_FS_LOOP_TICK_MS);
		if (n < 0 && errno != EINTR) {
			p2z_log(LOG_ERR, "epoll_wait: %s", strerror(errno));
			p2z_fs_loop_stop(lp);
			break;
		}
		for (i = 0; i < n; i++) {
			if (ev[i].data.u32 == P2Z_FS_EV_QUEUE)
				p2z_dev_queue_reap(w->q, 0);
			else if (ev[i].data.u32 == P2Z_FS_EV_STOP)
				stop = true;
			else if (__atomic_load_n(&w->receiver,
						 __ATOMIC_RELAXED))
				p2z_fs_worker_receive(lp, w);
		}
	}
	eventfd_write(lp->stop_fd, 1);
	p2z_fs_worker_drain(w);
	p2z_fs_worker_run_deferred(w);
	p2z_fs_worker_expire(w, true);
	p2z_cond_on_sleep(NULL, NULL);
	p2z_fs_self = NULL;
	p2z_dev_queue_close(w->q);
	return NULL;
}

/*
 * Everything but the thread: its queue must be opened by itself. The first
 * lp->receivers workers receive, the others start as spares.
 */
static int p2z_fs_worker_init(struct p2z_fs_loop *lp, struct p2z_fs_worker *w,
			      unsigned int i)
{
	int ret;

	w->loop = lp;
	if (p2z_fs_rbuf_ours()) {
		w->rbuf = p2z_fs_pool_get(&lp->fs->rbufs);
		if (!w->rbuf)
			return -ENOMEM;
		w->fbuf.mem = p2z_fs_rbuf_mem(&lp->fs->rbufs, w->rbuf);
	}
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->epfd < 0)
		return -errno;
	ret = p2z_fs_epoll_add(w->epfd, lp->stop_fd, EPOLLIN, P2Z_FS_EV_STOP);
	if (ret)
		return ret;
	if (i >= lp->receivers) {
		p2z_fs_worker_spare(w);
		return 0;
	}
	ret = p2z_fs_worker_listen(w, true);
	if (!ret)
		w->receiver = true;
	return ret;
}

/*
 * One per CPU, at least 2, at most half the workers; P2Z_FS_RECEIVERS (1 to
 * all of them) sets it for tests and benchmarks.
 */
static unsigned int p2z_fs_loop_receivers(unsigned int nr)
{
	const char *env = getenv("P2Z_FS_RECEIVERS");
	long n;

	if (env && *env) {
		n = strtol(env, NULL, 10);
		return n < 1 ? 1 : n > (long)nr ? nr : (unsigned int)n;
	}
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n > (long)nr / 2)
		n = nr / 2;
	return n < 2 ? 2 : (unsigned int)n;
}

static void p2z_fs_worker_exit(struct p2z_fs_worker *w)
{
	if (w->epfd >= 0)
		close(w->epfd);
	if (w->rbuf)
		p2z_fs_pool_put(&w->loop->fs->rbufs, w->rbuf);
	else
		free(w->fbuf.mem);
}

int p2z_fs_loop(struct p2z_fs *fs)
{
	struct p2z_fs_loop lp = { .fs = fs, .se = fs->se };
	unsigned int i, started = 0;
	int flags, ret;

	flags = fcntl(fuse_session_fd(lp.se), F_GETFL);
	if (flags < 0 ||
	    fcntl(fuse_session_fd(lp.se), F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	lp.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (lp.stop_fd < 0)
		return -errno;
	lp.nr = P2Z_FS_MAX_THREADS;
	lp.receivers = p2z_fs_loop_receivers(lp.nr);
	pthread_mutex_init(&lp.spare_lock, NULL);
	lp.workers = calloc(lp.nr, sizeof(*lp.workers));
	ret = lp.workers ? 0 : -ENOMEM;
	for (i = 0; !ret && i < lp.nr; i++) {
		lp.workers[i].epfd = -1;
		ret = p2z_fs_worker_init(&lp, &lp.workers[i], i);
		if (!ret)
			ret = -pthread_create(&lp.workers[i].tid, NULL,
					      p2z_fs_worker_run,
					      &lp.workers[i]);
		if (!ret)
			started++;
	}
	if (ret) {
		p2z_log(LOG_ERR, "starting the workers: %s", strerror(-ret));
		p2z_fs_loop_stop(&lp);
	}
	for (i = 0; i < started; i++)
		pthread_join(lp.workers[i].tid, NULL);
	for (i = 0; lp.workers && i < lp.nr && i <= started; i++)
		p2z_fs_worker_exit(&lp.workers[i]);
	free(lp.workers);
	pthread_mutex_destroy(&lp.spare_lock);
	close(lp.stop_fd);
	return ret ? ret : __atomic_load_n(&lp.err, __ATOMIC_RELAXED);
}
