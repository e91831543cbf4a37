/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Zone table: the cached state of every zone of a device (write pointer,
 * condition, capacity), read with one report at mount, and the operations
 * the filesystem performs on zones: read clamped to the write pointer,
 * append at the write pointer, reset, finish, explicit open/close, flush.
 * After an I/O error the zone is re-read from the device and the errors=
 * policy applied, with the meanings of Linux zonefs (fs/zonefs/super.c).
 *
 * Sizes and offsets are in bytes, relative to the start of the zone unless
 * named otherwise. Every call returns 0 or a non-negative count, or -errno.
 *
 * Per zone, three locks, always taken in this order:
 *   wr_lock  serialises writers, zone management and error handling (the
 *	      role of the inode lock in zonefs)
 *   io_lock  read-shared by reads while they are at the device, taken
 *	      exclusively by anything that can move the write pointer back
 *	      (reset, error handling), so that no read ever reaches the device
 *	      past a write pointer (zonefs' inode_dio_wait())
 *   lock     guards the cached state (zonefs' i_truncate_mutex); held only
 *	      briefly, never across data transfers nor zone reports
 * Table-wide counters are atomics and need no lock.
 */
#ifndef PO2ZFS_ZONE_H
#define PO2ZFS_ZONE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "po2zfs/dev.h"
#include "po2zfs/geom.h"

/* What to do after an I/O error (mount option errors=, as in zonefs). */
enum p2z_errors {
	P2Z_ERRORS_REMOUNT_RO, /* the whole filesystem stops accepting writes */
	P2Z_ERRORS_ZONE_RO, /* the zone's file becomes read-only */
	P2Z_ERRORS_ZONE_OFFLINE, /* the zone's file: size 0, no access */
	P2Z_ERRORS_REPAIR, /* only fix the file size from the device */
};

/**
 * struct p2z_zone_opts - zone table options
 * @errors: I/O error policy
 * @rdonly: read-only table: no writes, no zone management, and mounting
 *	    leaves explicitly open zones alone
 * @explicit_open: p2z_zone_get_write() explicitly opens the zone (ignored
 *		   with a notice when the device has no open zone limit, as
 *		   zonefs does)
 * @no_append: write at the write pointer even when the device can zone
 *	       append (tests use it to cover both write paths)
 * @on_rdonly: called once if the table switches to read-only while in use
 *	       (errors=remount-ro, or a failed zone close), with
 *	       @on_rdonly_arg; NULL: nothing to call. It runs in the thread
 *	       that hit the error, with zone locks held: it must not block
 *	       nor call into the table.
 * @on_rdonly_arg: argument of @on_rdonly
 * @hold_ms: how long a write ahead of a sequential zone's expected offset
 *	     waits for its predecessors, with no write of the zone ending
 *	     meanwhile, before it fails with -EINVAL (see p2z_zone_write());
 *	     0: P2Z_ZONE_HOLD_MS
 */
struct p2z_zone_opts {
	enum p2z_errors errors;
	bool rdonly;
	bool explicit_open;
	bool no_append;
	void (*on_rdonly)(void *arg);
	void *on_rdonly_arg;
	unsigned int hold_ms;
};

/* Default hold bound (ms) of a write ahead of its predecessors: no progress. */
#define P2Z_ZONE_HOLD_MS 1000U

/* struct p2z_zone_state.flags */
#define P2Z_ZONE_F_RDONLY (1U << 0) /* writes refused: zone read-only */
#define P2Z_ZONE_F_OFFLINE (1U << 1) /* all access refused, size 0 */
#define P2Z_ZONE_F_OPEN (1U << 2) /* explicitly opened by the table */

/**
 * struct p2z_zone_state - snapshot of one zone
 * @zidx: zone index on the device
 * @type: enum p2z_zone_type
 * @cond: enum p2z_zone_cond, the device's condition as last seen
 * @flags: P2Z_ZONE_F_* (read-only and offline also result from errors=)
 * @wr_refs: writers holding an explicit-open reference
 * @start_bytes: native byte offset of the zone on the device
 * @cap_bytes: zone capacity
 * @wp_bytes: the device's write pointer, from the zone start (capacity for
 *	      a full zone, 0 for conventional zones)
 * @size_bytes: file size: @wp_bytes for sequential zones, @cap_bytes for
 *		conventional zones, 0 for offline zones and for sequential
 *		zones found read-only at mount
 */
struct p2z_zone_state {
	uint64_t zidx;
	uint8_t type;
	uint8_t cond;
	unsigned int flags;
	unsigned int wr_refs;
	uint64_t start_bytes;
	uint64_t cap_bytes;
	uint64_t wp_bytes;
	uint64_t size_bytes;
};

/**
 * struct p2z_zone_usage - table-wide counters
 * @cap_bytes: sum of the capacities of all zones
 * @used_bytes: sum of the file sizes of all zones
 * @nr_active: sequential zones partially written or explicitly open
 * @nr_exp_open: zones held explicitly open (explicit-open option)
 */
struct p2z_zone_usage {
	uint64_t cap_bytes;
	uint64_t used_bytes;
	uint64_t nr_active;
	uint64_t nr_exp_open;
};

/**
 * struct p2z_zone_dev_facts - what the filesystem shows of the device
 * @backend: name of its backend ("nvme", "zbd", "emu")
 * @path: the path it was opened by
 * @max_open: maximum open zones, 0 = no limit
 * @max_active: maximum active zones, 0 = no limit
 * @max_append_bytes: largest single zone append, 0 = no zone append
 *
 * The strings belong to the device: valid while the table is open.
 */
struct p2z_zone_dev_facts {
	const char *backend;
	const char *path;
	uint32_t max_open;
	uint32_t max_active;
	uint32_t max_append_bytes;
};

struct p2z_zone;
struct p2z_zone_table_priv;

/**
 * struct p2z_zone_table - all zones of one device
 * @dev: the device (not owned)
 * @geom: its geometry
 * @opts: options given to p2z_zone_table_open()
 * @nr_seq: number of sequential zones
 * @nr_cnv: number of conventional zones
 * @seq_zidx: zone index of each sequential zone, in device order
 * @cnv_zidx: zone index of each conventional zone, in device order
 * @zones: per-zone state, private to zone.c
 * @priv: table-wide counters, private to zone.c
 *
 * All fields are constant after p2z_zone_table_open(); read them directly.
 */
struct p2z_zone_table {
	struct p2z_dev *dev;
	struct p2z_geom geom;
	struct p2z_zone_opts opts;
	uint64_t nr_seq;
	uint64_t nr_cnv;
	uint64_t *seq_zidx;
	uint64_t *cnv_zidx;
	struct p2z_zone *zones;
	struct p2z_zone_table_priv *priv;
};

/* zone.c: the table */

/**
 * p2z_zone_table_open() - read the zone table of a device
 * @dev: open device; must outlive the table
 * @opts: options
 * @ztp: result
 *
 * Reports every zone once. Writes no data: unless @opts->rdonly, zones left
 * explicitly open (by a crash) are closed, or reset if nothing was written
 * to them, so that open-zone accounting starts from zero as in zonefs.
 * Zones found offline get size 0 and refuse all access; sequential zones
 * found read-only get size 0 too (their write pointer is not valid, as
 * zonefs reasons) and refuse writes.
 *
 * Return: 0, -ENOMEM, -EIO for an inconsistent report, or the device's
 * -errno (a one-line reason is logged).
 */
int p2z_zone_table_open(struct p2z_dev *dev, const struct p2z_zone_opts *opts,
			struct p2z_zone_table **ztp);

/**
 * p2z_zone_table_close() - free a zone table
 * @zt: table, may be NULL
 *
 * Closes zones still held explicitly open. Does not close the device.
 */
void p2z_zone_table_close(struct p2z_zone_table *zt);

/**
 * p2z_zone_table_is_rdonly() - whether the table refuses all writes
 * @zt: table
 *
 * Return: true if opened read-only or switched read-only by
 * errors=remount-ro after an I/O error.
 */
bool p2z_zone_table_is_rdonly(struct p2z_zone_table *zt);

/**
 * p2z_zone_table_usage() - table-wide counters
 * @zt: table
 * @u: result
 */
void p2z_zone_table_usage(struct p2z_zone_table *zt, struct p2z_zone_usage *u);

/**
 * p2z_zone_table_flush() - flush the device's write cache
 * @zt: table
 *
 * For writers that address no single zone (the po2 view).
 *
 * Return: 0 or -EIO.
 */
int p2z_zone_table_flush(struct p2z_zone_table *zt);

/**
 * p2z_zone_table_dev_stats() - the device's request counters
 * @zt: table
 *
 * Return: P2Z_DEV_STAT_NR counters (see stats.h), to read or reset.
 */
struct p2z_stat *p2z_zone_table_dev_stats(struct p2z_zone_table *zt);

/**
 * p2z_zone_table_dev_facts() - the device's name and limits, for display
 * @zt: table
 * @f: result
 *
 * The filesystem shows these (user.dev.* xattrs) without reaching into the
 * device layer.
 */
void p2z_zone_table_dev_facts(const struct p2z_zone_table *zt,
			      struct p2z_zone_dev_facts *f);

/* zone.c: one zone */

/**
 * p2z_zone_state_cond_name() - the word for the condition of a snapshot
 * @st: snapshot from p2z_zone_get_state()
 *
 * The words of p2z_zone_cond_name() ("empty", "implicit-open", ...), for
 * the layers above the zone table.
 *
 * Return: a static string.
 */
const char *p2z_zone_state_cond_name(const struct p2z_zone_state *st);

/**
 * p2z_zone_get_state() - snapshot of a zone
 * @zt: table
 * @zidx: zone index, < geom.nr_zones
 * @refresh: first re-read the zone's condition from the device (the device
 *	     may close implicitly open zones on its own); the cached write
 *	     pointer stays authoritative. The report holds no zone lock (the
 *	     zone's reads and writes do not wait for it); if the table changed
 *	     the zone meanwhile, the cached condition is newer and kept
 * @st: result
 *
 * Return: 0, or -EINVAL for a bad @zidx.
 */
int p2z_zone_get_state(struct p2z_zone_table *zt, uint64_t zidx, bool refresh,
		       struct p2z_zone_state *st);

struct p2z_dev_queue;
struct p2z_zone_rd;

/**
 * struct p2z_zone_rd - an asynchronous read of a zone (p2z_zone_read_submit())
 * @io: the device read; the zone layer's
 * @zt: table
 * @zidx: zone index
 * @ofs: offset in the zone
 * @n: bytes the read returns (cut at the file size)
 * @dn: of which read from the device (the rest are zeros supplied here)
 * @end_io: called once, from p2z_dev_queue_reap() on the queue's owner,
 *	    with @n or the device's raw -errno (give it to
 *	    p2z_zone_read_error()); may free @rd, must not block on another
 *	    thread
 * @private: the caller's
 */
struct p2z_zone_rd {
	struct p2z_io io;
	struct p2z_zone_table *zt;
	uint64_t zidx;
	uint64_t ofs;
	size_t n;
	size_t dn;
	void (*end_io)(struct p2z_zone_rd *rd, ssize_t ret);
	void *private;
};

/**
 * p2z_zone_read_submit() - start a read of a zone on a device queue
 * @zt: table
 * @q: the calling thread's own queue
 * @rd: the read; @rd->end_io and @rd->private set by the caller
 * @zidx: zone index
 * @buf: destination, as for p2z_zone_read()
 * @len: bytes, a multiple of the LBA size
 * @ofs: offset in the zone, a multiple of the LBA size
 *
 * As p2z_zone_read(), but the device read runs on @q and no zone lock is
 * held while it is in flight: the zone counts it instead, and a reset,
 * finish or errors= policy run waits for that count to drop. If a reset
 * is pending, this drains @q (runs its completions) before waiting for
 * it, so that a reset never waits for reads queued behind the caller.
 *
 * Return: -EINPROGRESS (queued: @rd->end_io runs later), bytes read when
 * done already (past the file size, or zeros only; no end_io call), or a
 * raw -errno (no end_io call; give it to p2z_zone_read_error()).
 */
ssize_t p2z_zone_read_submit(struct p2z_zone_table *zt, struct p2z_dev_queue *q,
			     struct p2z_zone_rd *rd, uint64_t zidx, void *buf,
			     size_t len, uint64_t ofs);

/**
 * p2z_zone_read_error() - the errors= policy after a failed read
 * @zt: table
 * @zidx: zone index
 * @ofs: where the read was
 * @err: the raw -errno of p2z_zone_read_submit() or of the end_io
 *
 * May block on the zone's locks: call it only with no read of the
 * caller's still in flight.
 *
 * Return: the error to report: @err, or -EIO after a device error (the
 * policy has been applied).
 */
ssize_t p2z_zone_read_error(struct p2z_zone_table *zt, uint64_t zidx,
			    uint64_t ofs, ssize_t err);

/**
 * p2z_zone_clear_changed() - whether the errors= policy changed a zone
 * @zt: table
 * @zidx: zone index
 *
 * After a device error the errors= policy may change a zone's size, mode
 * or access, whichever request (on whichever file) met the error. The
 * filesystem asks after the requests that may have met one and drops what
 * the kernel caches of the zone's file.
 *
 * Return: true once after each run of the policy on the zone (clearing
 * the flag), false otherwise and for a bad @zidx.
 */
bool p2z_zone_clear_changed(struct p2z_zone_table *zt, uint64_t zidx);

/**
 * p2z_zone_read() - read from a zone, never past its write pointer
 * @zt: table
 * @zidx: zone index
 * @buf: destination, aligned to P2Z_ZONE_BUF_ALIGN
 * @len: bytes, a multiple of the LBA size
 * @ofs: offset in the zone, a multiple of the LBA size
 *
 * Reads stop at the file size; bytes between the end of written data and
 * the file size (a zone finished during this mount) are zeros supplied
 * here, not read from the device.
 *
 * Return: bytes read (0 at or past the file size), -EINVAL for unaligned
 * @ofs or @len, -EPERM for an offline zone, -EIO after a device error
 * (the errors= policy has been applied).
 */
ssize_t p2z_zone_read(struct p2z_zone_table *zt, uint64_t zidx, void *buf,
		      size_t len, uint64_t ofs);

/**
 * p2z_zone_write() - write to a zone
 * @zt: table
 * @zidx: zone index
 * @buf: source, aligned to P2Z_ZONE_BUF_MIN_ALIGN
 * @len: bytes, a multiple of the LBA size
 * @ofs: offset in the zone; for sequential zones it must equal the write
 *	 pointer unless @append
 * @append: write at the write pointer whatever @ofs says (O_APPEND); for
 *	    conventional zones this means at the capacity, hence -EFBIG
 * @flags: 0, or P2Z_IO_FUA: the data is on stable media when this returns
 *	   (O_DSYNC, O_SYNC, RWF_DSYNC); a failed FUA write or flush is a
 *	   device error like any other (-EIO, errors= policy applied)
 *
 * Sequential zones: written with zone append when the device has a zone
 * append limit (the LBA it reports is checked), else at the write pointer.
 * The data is on the device when this returns (in its write cache unless
 * @flags has P2Z_IO_FUA).
 *
 * Concurrent writes of one sequential zone are sequenced (zone_seq.c): one
 * at the device at a time, in offset order. A write ahead of the write
 * pointer plus the write in flight waits for its predecessors until the
 * zone made no progress (no write of it ended) for @zt->opts.hold_ms since
 * it arrived; one behind it fails at once.
 *
 * Return: bytes written (short if the write crosses the capacity), or
 * -EPERM (zone read-only or offline), -EROFS (table read-only), -EFBIG
 * (at or past the capacity), -EINVAL (unaligned, or behind the write
 * pointer, or still ahead of it after the hold bound, or unknown @flags),
 * -ETOOMANYREFS / -EOVERFLOW (device out of open / active zone resources:
 * nothing written, no error policy), -EIO (device error, the errors=
 * policy has been applied; or a predecessor waited for failed, or the
 * zone was reset or finished while the write waited).
 */
ssize_t p2z_zone_write(struct p2z_zone_table *zt, uint64_t zidx,
		       const void *buf, size_t len, uint64_t ofs, bool append,
		       unsigned int flags);

/**
 * struct p2z_zone_wr - an asynchronous write of a zone (p2z_zone_write_async())
 * @zidx: zone index
 * @buf: source, as p2z_zone_write()'s; valid until @done runs, or made so by
 *	 @hold
 * @len: bytes
 * @ofs: offset in the zone
 * @append: O_APPEND
 * @flags: 0 or P2Z_IO_FUA
 * @hold: NULL, or called at most once: if the write is parked behind a
 *	  predecessor (with the zone's lock held) or submitted on @q (with
 *	  no lock held): make @buf valid until @done (copy it);
 *	  0, or -errno to fail the write with it instead. It must not call
 *	  into the zone table.
 * @done: called exactly once with what p2z_zone_write() would return; it
 *	  may free @wr. See p2z_zone_write_async() for which thread.
 * @q: NULL, or the caller's device queue: a sequential zone's write that
 *     has its turn is submitted on it (@hold runs first: @buf must stay
 *     valid until the completion) and @done runs from its completion
 *     (p2z_dev_queue_reap() on the caller's thread) or, for a failed one,
 *     from p2z_zone_write_settle()
 * @io: private to the sequencer
 * @zt: private to the sequencer
 * @desync: private to the sequencer
 * @held: private to the sequencer (@hold ran); false to begin with
 * @next: private to the sequencer
 * @gen: private to the sequencer
 * @since_ms: private to the sequencer (when it was parked)
 * @ret: private to the sequencer
 */
struct p2z_zone_wr {
	uint64_t zidx;
	const void *buf;
	size_t len;
	uint64_t ofs;
	bool append;
	unsigned int flags;
	int (*hold)(struct p2z_zone_wr *wr);
	void (*done)(struct p2z_zone_wr *wr, ssize_t ret);
	struct p2z_dev_queue *q;
	struct p2z_io io;
	struct p2z_zone_table *zt;
	bool desync;
	bool held;
	struct p2z_zone_wr *next;
	uint64_t gen;
	uint64_t since_ms;
	ssize_t ret;
};

/**
 * p2z_zone_write_async() - write to a zone without waiting for a predecessor
 * @zt: table
 * @wr: the write; its @done runs exactly once
 *
 * The non-blocking form of p2z_zone_write(), same checks and results. A
 * sequential zone's write at its turn is written by the calling thread,
 * which runs @wr->done before this returns. A write ahead of the zone's
 * expected offset (or arriving while a write is in flight, or during a
 * reset or finish) is parked instead (@wr->hold runs) and this returns
 * at once: the thread that writes its predecessor then writes it and runs
 * its @done; a failed predecessor or a reset/finish runs it with -EIO; a
 * parked write still ahead once the zone made no progress for
 * @zt->opts.hold_ms gets -EINVAL from p2z_zone_seq_expire(). Conventional
 * zones are written synchronously.
 *
 * With @wr->q, nothing is written by the calling thread: the write whose
 * turn came is submitted on @wr->q and this returns; its completion ends
 * the turn and submits the next parked write on the same queue. A failed
 * one waits on the thread for p2z_zone_write_settle(). The caller must
 * reap @wr->q before it blocks on anything (a reset, a release or a
 * fsync of the zone waits for the write on the queue).
 */
void p2z_zone_write_async(struct p2z_zone_table *zt, struct p2z_zone_wr *wr);

/**
 * p2z_zone_is_sequential() - whether a zone is sequential-write-required
 * @zt: table
 * @zidx: zone index
 *
 * Return: true if so (false for a bad @zidx).
 */
bool p2z_zone_is_sequential(struct p2z_zone_table *zt, uint64_t zidx);

/**
 * p2z_zone_write_settle() - finish the failed submitted writes of this thread
 *
 * Their completion left them to this: applies the errors= policy, fails
 * the writes parked behind them with -EIO, runs their @done, ends their
 * turn (which may submit the next parked writes on the thread's queue).
 * Call it with the thread's queue drained: the policy waits for the
 * zone's reads in flight.
 *
 * Return: the writes finished.
 */
unsigned int p2z_zone_write_settle(void);

/**
 * p2z_zone_write_unsettled() - whether this thread has failed submitted
 *				writes for p2z_zone_write_settle()
 *
 * Return: true if so.
 */
bool p2z_zone_write_unsettled(void);

/**
 * p2z_zone_seq_expire() - fail the parked writes whose hold bound passed
 * @zt: table
 * @all: fail every parked write (-EIO), for the end of a session
 *
 * Cheap when nothing is parked (one atomic load); call it periodically.
 *
 * Return: the writes failed (their @done ran).
 */
unsigned int p2z_zone_seq_expire(struct p2z_zone_table *zt, bool all);

/**
 * p2z_zone_seq_parked() - writes parked in the whole table now
 * @zt: table
 *
 * Return: their number.
 */
unsigned int p2z_zone_seq_parked(struct p2z_zone_table *zt);

/**
 * p2z_zone_seq_waiting() - writes of a zone waiting for their turn
 * @zt: table
 * @zidx: zone index
 *
 * Return: the writes held or queued in the zone's sequencer now (0 for a
 * bad @zidx); for tests and statistics.
 */
unsigned int p2z_zone_seq_waiting(struct p2z_zone_table *zt, uint64_t zidx);

/**
 * p2z_zone_truncate() - truncate a sequential zone's file
 * @zt: table
 * @zidx: zone index
 * @size: 0 resets the zone, its capacity finishes it; the current size is
 *	  a no-op only if it is one of those two
 *
 * Waits for the zone's write in flight; the writes waiting for their turn
 * fail with -EIO (see p2z_zone_write()).
 *
 * Return: 0, -EROFS (table read-only), -EPERM (conventional zone, zone
 * read-only or offline, or any other size), -EIO (device error).
 */
int p2z_zone_truncate(struct p2z_zone_table *zt, uint64_t zidx, uint64_t size);

/**
 * p2z_zone_get_write() - take a writer reference (a file opened for write)
 * @zt: table
 * @zidx: zone index
 *
 * With the explicit-open option, the first reference to a sequential zone
 * explicitly opens it (unless full). Without it, or for conventional zones,
 * this only checks that writes are possible.
 *
 * Return: 0, -EROFS (table read-only), -EPERM (zone read-only or offline),
 * -EBUSY (as many zones as the device can keep open are already held
 * open), or the device's -errno for the open.
 */
int p2z_zone_get_write(struct p2z_zone_table *zt, uint64_t zidx);

/**
 * p2z_zone_put_write() - drop a reference taken by p2z_zone_get_write()
 * @zt: table
 * @zidx: zone index
 *
 * The last reference to an explicitly opened zone closes it (or resets it
 * if nothing was written, so that it does not stay active, as zonefs
 * does). A failed close makes the table read-only.
 */
void p2z_zone_put_write(struct p2z_zone_table *zt, uint64_t zidx);

/**
 * p2z_zone_flush() - make a zone's written data durable
 * @zt: table
 * @zidx: zone index
 *
 * Return: 0, -EPERM (zone read-only or offline, as zonefs' fsync), -EIO.
 */
int p2z_zone_flush(struct p2z_zone_table *zt, uint64_t zidx);

/* Buffers passed to p2z_zone_read() are aligned to this. */
#define P2Z_ZONE_BUF_ALIGN 4096
/*
 * Buffers passed to p2z_zone_write() need only this: NVMe passthrough takes
 * dword-aligned memory as it is, and backends whose hardware wants more
 * (O_DIRECT on a block device or image file, the hidden disk of an npo2
 * namespace) bounce through aligned memory of their own, a piece of at
 * most the transfer limit at a time. See p2z_zone_buf_align().
 */
#define P2Z_ZONE_BUF_MIN_ALIGN 8

/**
 * p2z_zone_buf_align() - the alignment write data needs to go to the
 * device as it is, without the backend's bounce
 * @zt: table
 *
 * A caller holding less aligned data can copy it once into an aligned
 * buffer of its own instead: the same bytes copied, but in one piece
 * rather than one per device command (glibc copies pieces below its
 * non-temporal threshold with "rep movsb", which a TCG guest runs about
 * six times slower than the one large copy).
 *
 * Return: a power of two, at least 1.
 */
static inline uint32_t p2z_zone_buf_align(const struct p2z_zone_table *zt)
{
	return zt->dev->info.buf_align;
}

#endif /* PO2ZFS_ZONE_H */
