// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A ring per calling thread; see uring.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "po2zfs/log.h"
#include "uring.h"

static void p2z_ring_free(struct p2z_ring *r)
{
	io_uring_queue_exit(&r->ring);
	free(r->buf);
	free(r);
}

/* pthread key destructor: the thread that owned @arg is exiting. */
static void p2z_ring_destroy(void *arg)
{
	struct p2z_ring *r = arg;
	struct p2z_rings *rs = r->rs;

	pthread_mutex_lock(&rs->lock);
	if (r->prev)
		r->prev->next = r->next;
	else
		rs->list = r->next;
	if (r->next)
		r->next->prev = r->prev;
	pthread_mutex_unlock(&rs->lock);
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
	ret = pthread_mutex_init(&rs->lock, NULL);
	if (ret) {
		pthread_key_delete(rs->key);
		return -ret;
	}
	rs->entries = entries;
	rs->flags = flags;
	rs->buf_bytes = buf_bytes;
	rs->name = name;
	return 0;
}

void p2z_rings_destroy(struct p2z_rings *rs)
{
	struct p2z_ring *r, *next;

	/* Deleting the key runs no destructor: the list has them all. */
	pthread_key_delete(rs->key);
	for (r = rs->list; r; r = next) {
		next = r->next;
		p2z_ring_free(r);
	}
	rs->list = NULL;
	pthread_mutex_destroy(&rs->lock);
}

void p2z_ring_discard(struct p2z_ring *r)
{
	pthread_setspecific(r->rs->key, NULL);
	p2z_ring_destroy(r);
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
		p2z_log(LOG_ERR, "%s: io_uring setup (flags 0x%x): %s",
			rs->name, rs->flags, strerror(-ret));
		free(r->buf);
		free(r);
		return ret;
	}
	r->rs = rs;
	ret = pthread_setspecific(rs->key, r);
	if (ret) {
		p2z_ring_free(r);
		return -ret;
	}
	pthread_mutex_lock(&rs->lock);
	r->next = rs->list;
	if (rs->list)
		rs->list->prev = r;
	rs->list = r;
	pthread_mutex_unlock(&rs->lock);
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
