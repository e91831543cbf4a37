// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A ring per calling thread; see uring.h.
 *
 * Who frees a ring: whoever takes it off the list, under p2z_rings_lock:
 * its thread's key destructor, p2z_ring_discard(), or p2z_rings_destroy().
 * A thread that exits while the device closes (an idle FUSE worker at
 * unmount) may run its destructor after the teardown freed the ring and
 * the registry: the destructor therefore never dereferences its argument
 * before finding it on the list, owned by the calling thread, and the lock
 * is static, never destroyed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "po2zfs/dev.h"
#include "po2zfs/log.h"
#include "uring.h"

/* Guards p2z_rings_all and every registry's @nr; never destroyed. */
static pthread_mutex_t p2z_rings_lock = PTHREAD_MUTEX_INITIALIZER;

/* Every ring of every registry, not yet freed. */
static struct p2z_ring *p2z_rings_all;

static void __p2z_ring_unlink(struct p2z_ring *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		p2z_rings_all = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->rs->nr--;
}

static void p2z_ring_free(struct p2z_ring *r)
{
	io_uring_queue_exit(&r->ring);
	free(r->buf);
	free(r);
}

/*
 * pthread key destructor: the thread that owned @arg is exiting. @arg may
 * already be freed (the registry was torn down meanwhile), and its address
 * reused by another thread's ring: only a ring on the list and owned by
 * this thread is this thread's.
 */
static void p2z_ring_destroy(void *arg)
{
	pthread_t self = pthread_self();
	struct p2z_ring *r;

	pthread_mutex_lock(&p2z_rings_lock);
	for (r = p2z_rings_all; r; r = r->next)
		if (r == arg && pthread_equal(r->owner, self))
			break;
	if (r)
		__p2z_ring_unlink(r);
	pthread_mutex_unlock(&p2z_rings_lock);
	if (r)
		p2z_ring_free(r);
}

int p2z_rings_init(struct p2z_rings *rs, unsigned int entries,
		   unsigned int flags, size_t buf_bytes, const char *name)
{
	int ret;

	memset(rs, 0, sizeof(*rs));
	ret = pthread_key_create(&rs->key, p2z_ring_destroy);
	if (ret)
		return -ret;
	rs->entries = entries;
	rs->flags = flags;
	rs->buf_bytes = buf_bytes;
	rs->name = name;
	return 0;
}

/*
 * Deleting the key stops destructors from being called from now on, but
 * not one a thread already started: that one finds nothing on the list.
 */
void p2z_rings_destroy(struct p2z_rings *rs)
{
	struct p2z_ring *r, *next, *mine = NULL;

	pthread_key_delete(rs->key);
	pthread_mutex_lock(&p2z_rings_lock);
	for (r = p2z_rings_all; r; r = next) {
		next = r->next;
		if (r->rs != rs)
			continue;
		__p2z_ring_unlink(r);
		r->next = mine;
		mine = r;
	}
	pthread_mutex_unlock(&p2z_rings_lock);
	for (r = mine; r; r = next) {
		next = r->next;
		p2z_ring_free(r);
	}
}

unsigned int p2z_rings_nr(struct p2z_rings *rs)
{
	unsigned int nr;

	pthread_mutex_lock(&p2z_rings_lock);
	nr = rs->nr;
	pthread_mutex_unlock(&p2z_rings_lock);
	return nr;
}

void p2z_ring_discard(struct p2z_ring *r)
{
	pthread_setspecific(r->rs->key, NULL);
	p2z_ring_destroy(r);
}

/*
 * No ring for this thread: a resource of this host (EMFILE, ENFILE, ENOMEM,
 * EPERM or ENOSYS where io_uring is disabled), not of the device. Said
 * once per registry: every request of the thread fails the same way.
 */
static void p2z_ring_setup_failed(struct p2z_rings *rs, int err)
{
	if (__atomic_exchange_n(&rs->setup_err_told, true, __ATOMIC_RELAXED))
		return;
	p2z_log(LOG_ERR,
		"%s: io_uring setup (flags 0x%x): %s; the requests of a "
		"thread without a ring fail with it (said once)",
		rs->name, rs->flags, strerror(-err));
}

int p2z_ring_get(struct p2z_rings *rs, struct p2z_ring **rp)
{
	struct p2z_ring *r = pthread_getspecific(rs->key);
	struct io_uring_params p;
	int ret;

	if (r) {
		*rp = r;
		return 0;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (rs->buf_bytes) {
		r->buf = aligned_alloc(4096, (rs->buf_bytes + 4095) & ~4095UL);
		if (!r->buf) {
			free(r);
			return -ENOMEM;
		}
	}
	memset(&p, 0, sizeof(p));
	p.flags = rs->flags;
	ret = io_uring_queue_init_params(rs->entries, &r->ring, &p);
	if (ret < 0) {
		p2z_ring_setup_failed(rs, ret);
		free(r->buf);
		free(r);
		return ret;
	}
	r->rs = rs;
	r->owner = pthread_self();
	ret = pthread_setspecific(rs->key, r);
	if (ret) {
		p2z_ring_free(r);
		return -ret;
	}
	pthread_mutex_lock(&p2z_rings_lock);
	r->next = p2z_rings_all;
	if (p2z_rings_all)
		p2z_rings_all->prev = r;
	p2z_rings_all = r;
	rs->nr++;
	pthread_mutex_unlock(&p2z_rings_lock);
	*rp = r;
	return 0;
}

int p2z_ring_submit(struct p2z_ring *r)
{
	int ret;

	do {
		ret = io_uring_submit(&r->ring);
	} while (ret == -EINTR);
	return ret;
}

void p2z_ring_reap(struct p2z_ring *r, struct io_uring_cqe **cqe)
{
	/* 1 ms: the system call also runs the task work completing it. */
	const struct timespec pause = { .tv_nsec = 1000000 };
	bool told = false;
	int ret;

	for (;;) {
		/* Looks at the completion queue before entering the kernel. */
		ret = io_uring_wait_cqe(&r->ring, cqe);
		if (!ret)
			return;
		if (ret == -EINTR)
			continue;
		if (!told)
			p2z_log(LOG_ERR,
				"%s: io_uring wait: %s; polling for the "
				"completion of a command in flight",
				r->rs->name, strerror(-ret));
		told = true;
		nanosleep(&pause, NULL);
	}
}

int p2z_ring_queue_open(unsigned int depth, unsigned int setup_flags, int efd,
			struct p2z_qring **qrp)
{
	struct p2z_qring *qr = calloc(1, sizeof(*qr) + sizeof(*qr->ring));
	struct io_uring_params p;
	int ret;

	if (!qr)
		return -ENOMEM;
	qr->ring = (struct io_uring *)(qr + 1);
	memset(&p, 0, sizeof(p));
	p.flags = setup_flags;
	ret = io_uring_queue_init_params(depth, qr->ring, &p);
	if (ret < 0)
		goto out_free;
	ret = io_uring_register_eventfd(qr->ring, efd);
	if (ret < 0)
		goto out_exit;
	*qrp = qr;
	return 0;

out_exit:
	io_uring_queue_exit(qr->ring);
out_free:
	free(qr);
	return ret;
}

int p2z_ring_queue_share(struct io_uring *ring, unsigned int setup_flags,
			 uint64_t tag, struct p2z_qring **qrp)
{
	struct p2z_qring *qr;

	if (!ring || !tag || (ring->flags & setup_flags) != setup_flags)
		return -EINVAL;
	qr = calloc(1, sizeof(*qr));
	if (!qr)
		return -ENOMEM;
	qr->ring = ring;
	qr->tag = tag;
	qr->shared = true;
	*qrp = qr;
	return 0;
}

int p2z_ring_queue_reap(struct p2z_qring *qr, bool wait, const char *name,
			void (*done)(void *arg, struct p2z_io *io,
				     const struct io_uring_cqe *cqe),
			void *arg)
{
	struct io_uring *ring = qr->ring;
	struct io_uring_cqe *cqe;
	struct p2z_io *io;
	int n = 0;

	/* A shared ring's completions are fed by its owner. */
	if (qr->shared)
		return 0;
	for (;;) {
		while (!io_uring_peek_cqe(ring, &cqe)) {
			io = io_uring_cqe_get_data(cqe);
			if (io)
				done(arg, io, cqe);
			io_uring_cqe_seen(ring, cqe);
			if (!io)
				continue;
			io->end_io(io);
			n++;
		}
		if (n || !wait)
			return n;
		p2z_ring_wait(ring, name);
	}
}

struct p2z_qring *p2z_ring_queue_self(void *bq)
{
	return bq;
}

void p2z_ring_queue_plug(struct p2z_qring *qr)
{
	if (!qr->shared)
		qr->plugged = true;
}

int p2z_ring_queue_unplug(struct p2z_qring *qr)
{
	int ret;

	qr->plugged = false;
	if (qr->shared || !io_uring_sq_ready(qr->ring))
		return 0;
	do {
		ret = io_uring_submit(qr->ring);
	} while (ret == -EINTR);
	return ret < 0 ? ret : 0;
}

void p2z_ring_queue_quiet(struct p2z_qring *qr, bool quiet)
{
	if (!qr->shared)
		io_uring_cq_eventfd_toggle(qr->ring, !quiet);
}

int p2z_ring_queue_complete(struct p2z_qring *qr,
			    const struct io_uring_cqe *cqe,
			    void (*done)(void *arg, struct p2z_io *io,
					 const struct io_uring_cqe *cqe),
			    void *arg)
{
	struct p2z_io *io =
		(struct p2z_io *)(uintptr_t)(cqe->user_data & ~qr->tag);

	if (!io)
		return 0;
	done(arg, io, cqe);
	io->end_io(io);
	return 1;
}

int p2z_ring_queue_hold_fd(struct p2z_qring *qr, int fd)
{
	/*
	 * The kernel puts a ring's fixed files in io_ring_ctx_free(), which
	 * its exit work (io_ring_exit_work()) reaches only once every
	 * request on the ring completed, even after the process was killed.
	 */
	int ret = io_uring_register_files(qr->ring, &fd, 1);

	return ret < 0 ? ret : 0;
}

void p2z_ring_queue_close(struct p2z_qring *qr)
{
	if (!qr->shared)
		io_uring_queue_exit(qr->ring);
	free(qr);
}

int p2z_ring_queue_submit(struct p2z_qring *qr, struct io_uring_sqe *sqe)
{
	if (qr->shared) {
		sqe->user_data |= qr->tag;
		return 0;
	}
	return qr->plugged ? 0 : p2z_ring_submit_one(qr->ring, sqe);
}

int p2z_ring_submit_one(struct io_uring *ring, struct io_uring_sqe *sqe)
{
	int ret;

	do {
		ret = io_uring_submit(ring);
	} while (ret == -EINTR);
	if (ret >= 1)
		return 0;
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data(sqe, NULL);
	return ret < 0 ? ret : -EIO;
}

void p2z_ring_wait(struct io_uring *ring, const char *name)
{
	const struct timespec pause = { .tv_nsec = 1000000 };
	bool told = false;
	int ret;

	for (;;) {
		/* One system call sends the SQEs held back and waits. */
		ret = io_uring_submit_and_wait(ring, 1);
		if (ret >= 0 || ret == -EINTR || io_uring_cq_ready(ring))
			return;
		if (!told)
			p2z_log(LOG_ERR,
				"%s: io_uring wait: %s; polling for the "
				"completion of a command in flight",
				name, strerror(-ret));
		told = true;
		nanosleep(&pause, NULL);
	}
}
