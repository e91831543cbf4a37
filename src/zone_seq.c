// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The per-zone write sequencer (the block layer's zone write plugging,
 * block/blk-zoned.c, for the daemon): at most one write of a sequential
 * zone at the device, the others waiting their turn in offset order.
 *
 * The expected offset of a zone is its write pointer plus the bytes of the
 * write in flight. A write arriving
 *  - at the expected offset is started, or queued behind the one in flight;
 *  - ahead of it is held until its predecessors arrived and were written,
 *    or until the zone made no progress for P2Z_ZONE_HOLD_MS (zone option
 *    hold_ms) since the write arrived and since the last write of the
 *    zone ended: then it fails with -EINVAL, as a writer with a gap does
 *    on zonefs at once. A deep queue of a slow zone keeps its writes: the
 *    bound is for a predecessor that never comes, not for a long wait;
 *  - behind it fails with -EINVAL at once (zonefs).
 * Appends (O_APPEND) take the next turn, whatever their offset.
 *
 * A failed write fails the writes waiting at that moment with -EIO: their
 * predecessor is missing for good (the errors= policy ran in the failed
 * write, under z->wr_lock, before they are woken). A reset or finish
 * (truncate) waits for the write in flight, then fails the waiting ones
 * with -EIO too; writes arriving during it wait for its end. Nothing is
 * lost: every waiter returns.
 *
 * The errors= policy of a read or flush error is a barrier too
 * (p2z_zone_seq_hold()): it waits for the write in flight (a failed one
 * included, settled by its thread) and holds the writes arriving during
 * it, without failing them: no predecessor of theirs is missing. After it
 * their expected offset is the write pointer it re-read from the device,
 * and the ordinary checks decide (-EPERM, -EROFS, -EINVAL behind it).
 *
 * The non-blocking form (p2z_zone_write_async()) decides the same way but
 * never waits: a write that would wait is parked on the zone's list
 * (z->seq_parked) with the generation and a deadline, and returns. Whoever
 * ends a turn (p2z_zone_seq_leave() then p2z_zone_seq_kick(): the thread
 * that wrote the predecessor, blocking or not, or the end of a barrier)
 * fails the parked writes of an older generation with -EIO, those now
 * behind the expected offset with -EINVAL, and writes the one whose turn
 * came, in its own thread, then looks again. p2z_zone_seq_expire() fails
 * those held past their deadline with -EINVAL. Both forms may be mixed on
 * a zone.
 *
 * The state is the zone's (zone_priv.h), guarded by z->lock, with
 * z->seq_cond to wait on. Writes of different zones never wait for each
 * other. Conventional zones are not sequenced.
 */
#include "zone_priv.h"

#include <errno.h>
#include <time.h>

#include "po2zfs/cond.h"

int p2z_zone_seq_init(struct p2z_zone *z)
{
	pthread_condattr_t attr;
	int ret;

	ret = pthread_condattr_init(&attr);
	if (ret)
		return -ret;
	ret = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!ret)
		ret = pthread_cond_init(&z->seq_cond, &attr);
	pthread_condattr_destroy(&attr);
	z->seq_busy = false;
	z->seq_barrier = false;
	z->seq_end = 0;
	z->seq_gen = 0;
	z->seq_waiting = 0;
	z->seq_parked = NULL;
	z->seq_nparked = 0;
	z->seq_progress_ms = 0;
	return -ret;
}

void p2z_zone_seq_destroy(struct p2z_zone *z)
{
	pthread_cond_destroy(&z->seq_cond);
}

static uint64_t p2z_zone_seq_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static unsigned int p2z_zone_seq_hold_ms(const struct p2z_zone_table *zt)
{
	return zt->opts.hold_ms ? zt->opts.hold_ms : P2Z_ZONE_HOLD_MS;
}

/*
 * When a write held since @since_ms expires: the hold bound after the
 * later of its arrival and the zone's last progress. z->lock held.
 */
static uint64_t __p2z_zone_seq_expiry(const struct p2z_zone_table *zt,
				      const struct p2z_zone *z,
				      uint64_t since_ms)
{
	uint64_t t = since_ms > z->seq_progress_ms ? since_ms :
						     z->seq_progress_ms;

	return t + p2z_zone_seq_hold_ms(zt);
}

static void p2z_zone_seq_timespec(uint64_t ms, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ms / 1000);
	ts->tv_nsec = (long)(ms % 1000) * 1000000L;
}

/*
 * Whether the write at ofs may start now (0), must wait (1), or is behind
 * the expected offset (-EINVAL). Sets *held for a write ahead of it.
 * z->lock held.
 */
static int __p2z_zone_seq_turn(const struct p2z_zone *z, uint64_t ofs,
			       bool append, bool *held)
{
	uint64_t next = z->seq_busy ? z->seq_end : z->wp_bytes;

	*held = false;
	if (z->seq_barrier)
		return 1;
	if (append)
		return z->seq_busy ? 1 : 0;
	if (ofs < next)
		return -EINVAL;
	*held = ofs > next;
	return *held || z->seq_busy ? 1 : 0;
}

/* Wait for the zone's next change; -ETIMEDOUT past ts. z->lock held. */
static int __p2z_zone_seq_wait(struct p2z_zone *z, const struct timespec *ts)
{
	int ret;

	z->seq_waiting++;
	if (ts)
		ret = p2z_cond_timedwait(&z->seq_cond, &z->lock, ts);
	else
		ret = p2z_cond_wait(&z->seq_cond, &z->lock);
	z->seq_waiting--;
	return -ret;
}

/*
 * The checks that do not depend on the write pointer, made before a write
 * waits (zonefs' order: -EPERM, -EROFS, -EFBIG, -EINVAL). z->lock held.
 */
static int __p2z_zone_seq_precheck(struct p2z_zone_table *zt,
				   const struct p2z_zone *z, uint64_t ofs,
				   size_t len, bool append)
{
	uint64_t lba = zt->geom.lba_bytes;

	if (z->flags & (P2Z_ZONE_F_RDONLY | P2Z_ZONE_F_OFFLINE))
		return -EPERM;
	if (p2z_zone_table_is_rdonly(zt))
		return -EROFS;
	if (append)
		return 0;
	if (ofs >= z->cap_bytes)
		return -EFBIG;
	if (ofs % lba || len % lba)
		return -EINVAL;
	return 0;
}

int __p2z_zone_seq_enter(struct p2z_zone_table *zt, struct p2z_zone *z,
			 uint64_t *ofs, size_t *len, bool append)
{
	struct timespec ts = { 0 };
	bool timed = false, expired = false, held;
	uint64_t gen, since_ms = 0;
	int ret;

	pthread_mutex_lock(&z->lock);
	while (z->seq_barrier)
		__p2z_zone_seq_wait(z, NULL);
	gen = z->seq_gen;
	ret = __p2z_zone_seq_precheck(zt, z, *ofs, *len, append);
	while (!ret) {
		if (z->seq_gen != gen) {
			ret = -EIO;
			break;
		}
		ret = __p2z_zone_seq_turn(z, *ofs, append, &held);
		if (ret <= 0)
			break;
		ret = 0;
		if (held && expired) {
			ret = -EINVAL;
			break;
		}
		if (held && !timed) {
			since_ms = p2z_zone_seq_now_ms();
			timed = true;
		}
		if (held)
			p2z_zone_seq_timespec(
				__p2z_zone_seq_expiry(zt, z, since_ms), &ts);
		/* Timed out with no progress since: the bound passed. */
		if (__p2z_zone_seq_wait(z, held ? &ts : NULL) == -ETIMEDOUT &&
		    p2z_zone_seq_now_ms() >=
			    __p2z_zone_seq_expiry(zt, z, since_ms))
			expired = true;
	}
	/* The checks of a write, now at the write pointer. */
	if (!ret)
		ret = __p2z_zone_write_check(zt, z, ofs, len, append);
	if (!ret && *len) {
		z->seq_busy = true;
		z->seq_end = *ofs + *len;
	}
	pthread_mutex_unlock(&z->lock);
	return ret;
}

void p2z_zone_seq_leave(struct p2z_zone *z, bool failed)
{
	pthread_mutex_lock(&z->lock);
	z->seq_busy = false;
	z->seq_progress_ms = p2z_zone_seq_now_ms();
	if (failed)
		z->seq_gen++;
	pthread_cond_broadcast(&z->seq_cond);
	pthread_mutex_unlock(&z->lock);
}

/* Wait for the write in flight and keep new ones out; doom the waiting. */
static void p2z_zone_seq_bar(struct p2z_zone *z, bool doom)
{
	pthread_mutex_lock(&z->lock);
	while (z->seq_busy || z->seq_barrier)
		__p2z_zone_seq_wait(z, NULL);
	z->seq_barrier = true;
	if (doom)
		z->seq_gen++;
	pthread_cond_broadcast(&z->seq_cond);
	pthread_mutex_unlock(&z->lock);
}

void p2z_zone_seq_barrier(struct p2z_zone *z)
{
	p2z_zone_seq_bar(z, true);
}

void p2z_zone_seq_hold(struct p2z_zone *z)
{
	p2z_zone_seq_bar(z, false);
}

void p2z_zone_seq_unbarrier(struct p2z_zone *z)
{
	pthread_mutex_lock(&z->lock);
	z->seq_barrier = false;
	pthread_cond_broadcast(&z->seq_cond);
	pthread_mutex_unlock(&z->lock);
}

unsigned int p2z_zone_seq_waiting(struct p2z_zone_table *zt, uint64_t zidx)
{
	struct p2z_zone *z;
	unsigned int n;

	if (zidx >= zt->geom.nr_zones)
		return 0;
	z = &zt->zones[zidx];
	pthread_mutex_lock(&z->lock);
	n = z->seq_waiting + z->seq_nparked;
	pthread_mutex_unlock(&z->lock);
	return n;
}

static void p2z_zone_seq_fail_list(struct p2z_zone_wr *wr)
{
	while (wr) {
		struct p2z_zone_wr *next = wr->next;

		wr->done(wr, wr->ret);
		wr = next;
	}
}

/* Unlink *pp from z's parked list onto *fail with ret. z->lock held. */
static struct p2z_zone_wr *__p2z_zone_seq_unpark(struct p2z_zone_table *zt,
						 struct p2z_zone *z,
						 struct p2z_zone_wr **pp)
{
	struct p2z_zone_wr *wr = *pp;

	*pp = wr->next;
	wr->next = NULL;
	z->seq_nparked--;
	atomic_fetch_sub(&zt->priv->nr_parked, 1);
	return wr;
}

static void __p2z_zone_seq_park(struct p2z_zone_table *zt, struct p2z_zone *z,
				struct p2z_zone_wr *wr)
{
	struct p2z_zone_wr **pp = &z->seq_parked;

	while (*pp)
		pp = &(*pp)->next;
	wr->next = NULL;
	wr->gen = z->seq_gen;
	wr->since_ms = p2z_zone_seq_now_ms();
	*pp = wr;
	z->seq_nparked++;
	atomic_fetch_add(&zt->priv->nr_parked, 1);
}

/*
 * Take the turn for wr (checks, busy) or set wr->ret: 0 it has the turn,
 * 1 nothing to write (wr->ret set). z->lock held.
 */
static int __p2z_zone_seq_take(struct p2z_zone_table *zt, struct p2z_zone *z,
			       struct p2z_zone_wr *wr)
{
	int ret = __p2z_zone_write_check(zt, z, &wr->ofs, &wr->len, wr->append);

	if (ret || !wr->len) {
		wr->ret = ret;
		return 1;
	}
	z->seq_busy = true;
	z->seq_end = wr->ofs + wr->len;
	return 0;
}

/*
 * The parked writes doomed (older generation: -EIO; behind: -EINVAL) go
 * to *fail; returns the one whose turn came, with the turn. z->lock held.
 */
static struct p2z_zone_wr *__p2z_zone_seq_next(struct p2z_zone_table *zt,
					       struct p2z_zone *z,
					       struct p2z_zone_wr **fail)
{
	struct p2z_zone_wr **pp = &z->seq_parked, *wr, *run = NULL;
	bool held;
	int turn;

	while ((wr = *pp)) {
		if (wr->gen != z->seq_gen) {
			wr->ret = -EIO;
		} else if (!run && !z->seq_barrier) {
			turn = __p2z_zone_seq_turn(z, wr->ofs, wr->append,
						   &held);
			if (turn > 0) {
				pp = &wr->next;
				continue;
			}
			wr->ret = turn;
			if (!turn) {
				run = __p2z_zone_seq_unpark(zt, z, pp);
				if (!__p2z_zone_seq_take(zt, z, run))
					continue;
				wr = run;
				run = NULL;
				wr->next = *fail;
				*fail = wr;
				continue;
			}
		} else {
			pp = &wr->next;
			continue;
		}
		wr = __p2z_zone_seq_unpark(zt, z, pp);
		wr->next = *fail;
		*fail = wr;
	}
	return run;
}

/* Failed submitted writes of this thread, for p2z_zone_write_settle(). */
static __thread struct p2z_zone_wr *p2z_zone_seq_failed;

/*
 * Submit wr, which has the turn, on wr->q: 0 submitted, else the data
 * could not be kept or the queue refused it (write it here instead).
 */
static int p2z_zone_seq_submit(struct p2z_zone_table *zt, struct p2z_zone *z,
			       struct p2z_zone_wr *wr)
{
	if (wr->hold && !wr->held && wr->hold(wr))
		return -ENOMEM;
	wr->held = true;
	wr->zt = zt;
	return __p2z_zone_write_submit(zt, z, wr);
}

/*
 * Write wr, which has the turn, then every parked write whose turn came;
 * with a queue q, submit it there instead and return (the completion goes
 * on).
 */
static void p2z_zone_seq_run(struct p2z_zone_table *zt, struct p2z_zone *z,
			     struct p2z_zone_wr *wr, struct p2z_dev_queue *q)
{
	struct p2z_zone_wr *fail;
	ssize_t n;

	while (wr) {
		wr->q = q;
		if (q && !p2z_zone_seq_submit(zt, z, wr))
			return;
		n = __p2z_zone_write_turn(zt, z, wr->zidx, wr->buf, wr->len,
					  wr->ofs, wr->flags);
		wr->done(wr, n);
		fail = NULL;
		pthread_mutex_lock(&z->lock);
		wr = __p2z_zone_seq_next(zt, z, &fail);
		pthread_mutex_unlock(&z->lock);
		p2z_zone_seq_fail_list(fail);
	}
}

/* End a submitted write's turn with n, then go on with the parked ones. */
static void p2z_zone_seq_end(struct p2z_zone_table *zt, struct p2z_zone *z,
			     struct p2z_zone_wr *wr, ssize_t n, bool failed)
{
	struct p2z_dev_queue *q = wr->q;
	struct p2z_zone_wr *fail = NULL, *next;

	p2z_zone_seq_leave(z, failed);
	wr->done(wr, n); /* may free wr */
	pthread_mutex_lock(&z->lock);
	next = __p2z_zone_seq_next(zt, z, &fail);
	pthread_mutex_unlock(&z->lock);
	p2z_zone_seq_fail_list(fail);
	p2z_zone_seq_run(zt, z, next, q);
}

void __p2z_zone_seq_complete(struct p2z_zone_table *zt, struct p2z_zone *z,
			     struct p2z_zone_wr *wr, ssize_t n, bool desync)
{
	if ((n == (ssize_t)wr->len && !desync) ||
	    (n < 0 && !p2z_zone_err_is_io((int)n))) {
		/* No errors= policy: nothing here can block. */
		n = __p2z_zone_write_end(zt, z, wr->zidx, wr->len, wr->ofs, n,
					 false);
		p2z_zone_seq_end(zt, z, wr, n, n != (ssize_t)wr->len);
		return;
	}
	/* The turn stays held: a barrier or a successor waits for settle. */
	wr->ret = n;
	wr->desync = desync;
	wr->next = p2z_zone_seq_failed;
	p2z_zone_seq_failed = wr;
}

bool p2z_zone_write_unsettled(void)
{
	return p2z_zone_seq_failed != NULL;
}

unsigned int p2z_zone_write_settle(void)
{
	unsigned int nr = 0;

	while (p2z_zone_seq_failed) {
		struct p2z_zone_wr *wr = p2z_zone_seq_failed;
		struct p2z_zone_table *zt = wr->zt;
		struct p2z_zone *z = &zt->zones[wr->zidx];
		ssize_t n;

		p2z_zone_seq_failed = wr->next;
		wr->next = NULL;
		pthread_mutex_lock(&z->wr_lock);
		n = __p2z_zone_write_end(zt, z, wr->zidx, wr->len, wr->ofs,
					 wr->ret, wr->desync);
		pthread_mutex_unlock(&z->wr_lock);
		p2z_zone_seq_end(zt, z, wr, n, true);
		nr++;
	}
	return nr;
}

void p2z_zone_seq_kick(struct p2z_zone_table *zt, struct p2z_zone *z)
{
	struct p2z_zone_wr *fail = NULL, *wr;

	pthread_mutex_lock(&z->lock);
	if (!z->seq_parked) {
		pthread_mutex_unlock(&z->lock);
		return;
	}
	wr = __p2z_zone_seq_next(zt, z, &fail);
	pthread_mutex_unlock(&z->lock);
	p2z_zone_seq_fail_list(fail);
	p2z_zone_seq_run(zt, z, wr, NULL);
}

/* Decide for a new write: 0 run it, 1 parked, 2 done (wr->ret). */
static int __p2z_zone_seq_arrive(struct p2z_zone_table *zt, struct p2z_zone *z,
				 struct p2z_zone_wr *wr)
{
	bool held;
	int ret;

	ret = __p2z_zone_seq_precheck(zt, z, wr->ofs, wr->len, wr->append);
	if (!ret && !z->seq_barrier) {
		ret = __p2z_zone_seq_turn(z, wr->ofs, wr->append, &held);
		if (!ret)
			return __p2z_zone_seq_take(zt, z, wr) ? 2 : 0;
		ret = ret > 0 ? 0 : ret; /* 1: wait, parked below */
	}
	if (ret) {
		wr->ret = ret;
		return 2;
	}
	ret = wr->hold ? wr->hold(wr) : 0;
	wr->held = true;
	if (ret) {
		wr->ret = ret;
		return 2;
	}
	__p2z_zone_seq_park(zt, z, wr);
	return 1;
}

void p2z_zone_write_async(struct p2z_zone_table *zt, struct p2z_zone_wr *wr)
{
	struct p2z_zone *z =
		wr->zidx < zt->geom.nr_zones ? &zt->zones[wr->zidx] : NULL;
	int ret;

	if (!z || (wr->flags & ~P2Z_IO_FUA) || !p2z_zone_is_seq(z)) {
		wr->done(wr,
			 z ? p2z_zone_write(zt, wr->zidx, wr->buf, wr->len,
					    wr->ofs, wr->append, wr->flags) :
			     -EINVAL);
		return;
	}
	pthread_mutex_lock(&z->lock);
	ret = __p2z_zone_seq_arrive(zt, z, wr);
	pthread_mutex_unlock(&z->lock);
	if (ret == 2)
		wr->done(wr, wr->ret);
	else if (!ret)
		p2z_zone_seq_run(zt, z, wr, wr->q);
}

unsigned int p2z_zone_seq_expire(struct p2z_zone_table *zt, bool all)
{
	struct p2z_zone_wr *fail, **pp;
	unsigned int n = 0;
	uint64_t zidx, now;

	if (!atomic_load(&zt->priv->nr_parked))
		return 0;
	now = p2z_zone_seq_now_ms();
	for (zidx = 0; zidx < zt->geom.nr_zones; zidx++) {
		struct p2z_zone *z = &zt->zones[zidx];

		fail = NULL;
		pthread_mutex_lock(&z->lock);
		pp = &z->seq_parked;
		while (*pp) {
			struct p2z_zone_wr *wr = *pp;

			if (!all &&
			    now < __p2z_zone_seq_expiry(zt, z, wr->since_ms)) {
				pp = &wr->next;
				continue;
			}
			wr = __p2z_zone_seq_unpark(zt, z, pp);
			wr->ret = all ? -EIO : -EINVAL;
			wr->next = fail;
			fail = wr;
			n++;
		}
		pthread_mutex_unlock(&z->lock);
		p2z_zone_seq_fail_list(fail);
	}
	return n;
}

unsigned int p2z_zone_seq_parked(struct p2z_zone_table *zt)
{
	return atomic_load(&zt->priv->nr_parked);
}
