/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the zone table (zone.c) and its errors= policy (zone_errors.c)
 * share: the per-zone state and the table's private counters. Private to
 * those two files; the rest of the program sees po2zfs/zone.h only.
 */
#ifndef PO2ZFS_ZONE_PRIV_H
#define PO2ZFS_ZONE_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "po2zfs/zone.h"

struct p2z_zone {
	pthread_mutex_t wr_lock;
	pthread_rwlock_t io_lock;
	pthread_mutex_t lock;
	uint64_t start_bytes; /* constant */
	uint64_t cap_bytes; /* constant */
	uint8_t type; /* constant */
	uint8_t cond; /* guarded by lock */
	bool active; /* guarded by lock: counted in nr_active */
	unsigned int flags; /* guarded by lock */
	/* guarded by wr_lock; written with atomics: get_state reads it
	 * without the lock */
	unsigned int wr_refs;
	uint64_t wp_bytes; /* guarded by lock */
	uint64_t size_bytes; /* guarded by lock */
	/*
	 * End of the data really written, <= size_bytes; guarded by lock.
	 * Smaller than the size only for a zone finished during this mount:
	 * the rest reads as zeros without asking the device.
	 */
	uint64_t data_bytes;
	/*
	 * Guarded by lock: bumped by every change of the cached state, each
	 * of which ends with __p2z_zone_account(). A report read without
	 * the lock is applied only if it did not change meanwhile.
	 */
	uint64_t state_seq;
	/*
	 * The errors= policy ran on the zone since p2z_zone_clear_changed()
	 * last looked: its size, mode or access may have changed behind the
	 * file. Set by zone.c after each policy run.
	 */
	atomic_bool changed;
	/*
	 * The write sequencer (zone_seq.c), guarded by lock: seq_cond is
	 * signalled by every end of a write and of a barrier. seq_busy: a
	 * write is at the device (it ends at seq_end); seq_barrier: a reset
	 * or finish runs; seq_gen: bumped by a failed write and a barrier,
	 * failing the writes waiting then; seq_waiting: writes waiting.
	 */
	pthread_cond_t seq_cond;
	bool seq_busy;
	bool seq_barrier;
	uint64_t seq_end;
	uint64_t seq_gen;
	unsigned int seq_waiting;
	unsigned int seq_inflight; /* writes submitted on a device queue */
	/* CLOCK_MONOTONIC ms of the last end of a write: the hold bound's start */
	uint64_t seq_progress_ms;
	/* Parked asynchronous writes (p2z_zone_write_async()), arrival order. */
	struct p2z_zone_wr *seq_parked;
	unsigned int seq_nparked;
	/*
	 * Asynchronous reads at the device (p2z_zone_read_submit()), guarded
	 * by lock; rd_cond is signalled when rd_inflight drops to 0. They
	 * hold no io_lock: whoever takes io_lock for write drains them.
	 */
	unsigned int rd_inflight;
	pthread_cond_t rd_cond;
};

struct p2z_zone_table_priv {
	atomic_bool rdonly;
	atomic_uint_fast64_t used_bytes;
	atomic_uint_fast64_t nr_active;
	atomic_uint_fast64_t nr_exp_open;
	uint64_t cap_bytes;
	uint32_t max_exp_open; /* 0: explicit-open off */
	bool use_append;
	atomic_uint nr_parked; /* parked writes, all zones (zone_seq.c) */
};

static inline bool p2z_zone_is_seq(const struct p2z_zone *z)
{
	return z->type == P2Z_ZONE_TYPE_SEQ;
}

/* zone.c */

/**
 * __p2z_zone_account() - keep nr_active in step with a zone
 * @zt: zone table
 * @z: the zone, z->lock held
 */
void __p2z_zone_account(struct p2z_zone_table *zt, struct p2z_zone *z);

/**
 * __p2z_zone_set_size() - change a zone's file size and the usage counter
 * @zt: zone table
 * @z: the zone, z->lock held
 * @size: new size in bytes
 */
void __p2z_zone_set_size(struct p2z_zone_table *zt, struct p2z_zone *z,
			 uint64_t size);

/**
 * p2z_zone_info_wp() - the device's write pointer as an offset in the zone
 * @zt: zone table
 * @z: the zone
 * @zi: what the device reported for it
 *
 * Return: the offset in bytes, within [0, capacity]; 0 for conventional
 * zones. Not valid for read-only and offline zones on ZNS.
 */
uint64_t p2z_zone_info_wp(const struct p2z_zone_table *zt,
			  const struct p2z_zone *z,
			  const struct p2z_zone_info *zi);

/**
 * __p2z_zone_write_check() - the checks of a write at the write pointer
 * @zt: zone table
 * @z: the zone, z->lock held
 * @ofs: offset; set to the file size for @append
 * @len: bytes; cut at the capacity
 * @append: O_APPEND
 *
 * Return: 0, -EPERM, -EROFS, -EFBIG or -EINVAL (unaligned, or a
 * sequential zone's write not at the write pointer).
 */
int __p2z_zone_write_check(struct p2z_zone_table *zt, struct p2z_zone *z,
			   uint64_t *ofs, size_t *len, bool append);

/**
 * __p2z_zone_drain_reads() - wait for the zone's asynchronous reads
 * @z: the zone, z->io_lock held for write (no new read starts)
 */
void __p2z_zone_drain_reads(struct p2z_zone *z);

/* zone_seq.c */

/**
 * p2z_zone_seq_init() - set up a zone's write sequencer
 * @z: the zone
 *
 * Return: 0 or -errno.
 */
int p2z_zone_seq_init(struct p2z_zone *z);

/**
 * p2z_zone_seq_destroy() - free it; no write in flight or waiting
 * @z: the zone
 */
void p2z_zone_seq_destroy(struct p2z_zone *z);

/**
 * __p2z_zone_seq_enter() - wait for a write's turn in a sequential zone
 * @zt: zone table
 * @z: the zone, no lock held
 * @ofs: offset of the write; for @append set to where it goes
 * @len: bytes; cut at the capacity
 * @append: O_APPEND: the next turn, at the write pointer
 *
 * Returns once the write is the zone's next one (and the checks of
 * __p2z_zone_write_check() passed), or fails it: see the top of
 * zone_seq.c. On 0 with a nonzero *@len the write is the zone's write in
 * flight until p2z_zone_seq_leave().
 *
 * Return: 0, -EINVAL (behind the expected offset, or held ahead of it for
 * longer than the hold bound), -EIO (a predecessor failed or the zone was
 * reset or finished meanwhile), or an error of the write checks.
 */
int __p2z_zone_seq_enter(struct p2z_zone_table *zt, struct p2z_zone *z,
			 uint64_t *ofs, size_t *len, bool append);

/**
 * p2z_zone_seq_leave() - the write in flight ended; start the next
 * @z: the zone, no lock held (wr_lock may be)
 * @failed: it failed: the writes waiting now fail with -EIO
 */
void p2z_zone_seq_leave(struct p2z_zone *z, bool failed);

/**
 * p2z_zone_seq_barrier() - wait for the write in flight and keep new ones
 *			    out; the writes waiting fail with -EIO
 * @z: the zone, no lock held
 *
 * For a reset or finish: ended by p2z_zone_seq_unbarrier().
 */
void p2z_zone_seq_barrier(struct p2z_zone *z);

/**
 * p2z_zone_seq_hold() - p2z_zone_seq_barrier() that fails no waiting write
 * @z: the zone, no lock held (nor z->wr_lock, nor a turn of the zone)
 *
 * For the errors= policy of a read or flush error: no write of the zone
 * is at the device or starts until p2z_zone_seq_unbarrier(); the writes
 * held meanwhile then go on from the write pointer the policy re-read.
 */
void p2z_zone_seq_hold(struct p2z_zone *z);

/**
 * p2z_zone_seq_unbarrier() - end a barrier; writes arriving meanwhile go on
 * @z: the zone, no lock held
 */
void p2z_zone_seq_unbarrier(struct p2z_zone *z);

/**
 * p2z_zone_seq_kick() - write the parked writes whose turn came
 * @zt: zone table
 * @z: the zone, no lock held
 *
 * Called after p2z_zone_seq_leave() and p2z_zone_seq_unbarrier(); fails
 * the parked writes a failed predecessor or a barrier doomed.
 */
void p2z_zone_seq_kick(struct p2z_zone_table *zt, struct p2z_zone *z);

/**
 * __p2z_zone_write_turn() - a sequential zone's write that has its turn
 * @zt: zone table
 * @z: the zone, no lock held
 * @zidx: its index
 * @buf: data
 * @len: bytes (checked, nonzero)
 * @ofs: where (checked)
 * @flags: P2Z_IO_FUA or 0
 *
 * Writes, applies errors=, and ends the turn (p2z_zone_seq_leave()).
 *
 * Return: as p2z_zone_write().
 */
ssize_t __p2z_zone_write_turn(struct p2z_zone_table *zt, struct p2z_zone *z,
			      uint64_t zidx, const void *buf, size_t len,
			      uint64_t ofs, unsigned int flags);

/**
 * __p2z_zone_write_end() - what follows a sequential zone's device write
 * @zt: zone table
 * @z: the zone; z->wr_lock held if the write may fail
 * @zidx: its index
 * @len: bytes written
 * @ofs: where
 * @n: the device's result
 * @desync: an append landed elsewhere
 *
 * Advances the write pointer by what was written, applies errors= on a
 * failure. Does not end the turn.
 *
 * Return: as p2z_zone_write().
 */
ssize_t __p2z_zone_write_end(struct p2z_zone_table *zt, struct p2z_zone *z,
			     uint64_t zidx, size_t len, uint64_t ofs, ssize_t n,
			     bool desync);

/**
 * __p2z_zone_write_submit() - submit a write that has its turn on wr->q
 * @zt: zone table
 * @z: the zone, no lock held
 * @wr: the write (checked, nonzero, data valid until its completion)
 *
 * Its completion calls __p2z_zone_seq_complete() on the queue's thread.
 *
 * Return: 0 submitted, or -errno (nothing submitted, the turn still held).
 */
int __p2z_zone_write_submit(struct p2z_zone_table *zt, struct p2z_zone *z,
			    struct p2z_zone_wr *wr);

/**
 * __p2z_zone_seq_complete() - a submitted write completed
 * @zt: zone table
 * @z: the zone, no lock held
 * @wr: the write
 * @n: the device's result
 * @desync: an append landed elsewhere
 *
 * Success: advances the zone, ends the turn, runs @wr->done and submits
 * the next parked write on the same queue. Failure: kept for
 * p2z_zone_write_settle() (the errors= policy may wait for reads).
 */
void __p2z_zone_seq_complete(struct p2z_zone_table *zt, struct p2z_zone *z,
			     struct p2z_zone_wr *wr, ssize_t n, bool desync);

/**
 * __p2z_zone_seq_idle() - wait until no write of the zone is on a queue
 * @z: the zone, no lock held
 */
void __p2z_zone_seq_idle(struct p2z_zone *z);

/* zone_errors.c */

/**
 * p2z_zone_err_is_io() - whether an error may say something about a zone
 * @err: negative errno
 *
 * Return: false for the errors of resources (of the device or of this
 * process), returned as they are without the errors= policy; true else.
 */
bool p2z_zone_err_is_io(int err);

/**
 * p2z_zone_set_rdonly() - switch the whole table to read-only, once
 * @zt: zone table
 * @why: logged reason
 *
 * Calls the on_rdonly hook of the zone options the first time.
 */
void p2z_zone_set_rdonly(struct p2z_zone_table *zt, const char *why);

/**
 * __p2z_zone_io_error() - re-read a zone after an I/O error and apply the
 *			   errors= policy
 * @zt: zone table
 * @z: the zone, z->wr_lock held
 * @zidx: its index
 * @write: whether the failed operation wrote (or changed the zone)
 *
 * Drains the zone's readers first: the write pointer may move back.
 */
void __p2z_zone_io_error(struct p2z_zone_table *zt, struct p2z_zone *z,
			 uint64_t zidx, bool write);

/**
 * p2z_zone_io_error() - __p2z_zone_io_error() taking z->wr_lock
 * @zt: zone table
 * @z: the zone
 * @zidx: its index
 * @write: whether the failed operation wrote (or changed the zone)
 */
void p2z_zone_io_error(struct p2z_zone_table *zt, struct p2z_zone *z,
		       uint64_t zidx, bool write);

#endif /* PO2ZFS_ZONE_PRIV_H */
