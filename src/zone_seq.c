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
 *    or until P2Z_ZONE_HOLD_MS (zone option hold_ms) passed: then it fails
 *    with -EINVAL, as a writer with a gap does on zonefs at once;
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
 * The state is the zone's (zone_priv.h), guarded by z->lock, with
 * z->seq_cond to wait on. Writes of different zones never wait for each
 * other. Conventional zones are not sequenced.
 */
#include "zone_priv.h"

#include <errno.h>
#include <time.h>

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
	return -ret;
}

void p2z_zone_seq_destroy(struct p2z_zone *z)
{
	pthread_cond_destroy(&z->seq_cond);
}

static void p2z_zone_seq_deadline(const struct p2z_zone_table *zt,
				  struct timespec *ts)
{
	unsigned int ms = zt->opts.hold_ms ? zt->opts.hold_ms :
					     P2Z_ZONE_HOLD_MS;

	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
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
		ret = pthread_cond_timedwait(&z->seq_cond, &z->lock, ts);
	else
		ret = pthread_cond_wait(&z->seq_cond, &z->lock);
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
	uint64_t gen;
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
			p2z_zone_seq_deadline(zt, &ts);
			timed = true;
		}
		if (__p2z_zone_seq_wait(z, held ? &ts : NULL) == -ETIMEDOUT)
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
	if (failed)
		z->seq_gen++;
	pthread_cond_broadcast(&z->seq_cond);
	pthread_mutex_unlock(&z->lock);
}

void p2z_zone_seq_barrier(struct p2z_zone *z)
{
	pthread_mutex_lock(&z->lock);
	while (z->seq_busy || z->seq_barrier)
		__p2z_zone_seq_wait(z, NULL);
	z->seq_barrier = true;
	z->seq_gen++;
	pthread_cond_broadcast(&z->seq_cond);
	pthread_mutex_unlock(&z->lock);
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
	n = z->seq_waiting;
	pthread_mutex_unlock(&z->lock);
	return n;
}
