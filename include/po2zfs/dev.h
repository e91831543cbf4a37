/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Device interface: one ops table per backend (nvme, zbd, emu), chosen from
 * the path or forced by name. Backends speak native units: LBAs, native
 * zone size. Every call returns 0 or a non-negative count, or -errno.
 * Every call is safe from many threads at once, but for those of one
 * asynchronous queue, which its owner thread makes (see p2z_dev_queue_open()).
 *
 * Zoned-device errors have one errno each (see p2z_dev_nvme_status_errno()):
 *   -EILSEQ        write not at the write pointer (ZNS Zone Invalid Write)
 *   -ERANGE        write or read crosses the zone capacity/boundary
 *   -ENOSPC        zone is full
 *   -EROFS         zone is read-only; also any write, append or zone
 *                  operation on a device opened with P2Z_DEV_RDONLY
 *   -ENXIO         zone is offline
 *   -ETOOMANYREFS  too many open zones (as the kernel's BLK_STS_ZONE_OPEN_RESOURCE)
 *   -EOVERFLOW     too many active zones (as BLK_STS_ZONE_ACTIVE_RESOURCE)
 *   -EBADRQC       invalid zone state transition
 *   -EINVAL        LBA out of range, invalid field, misaligned request
 *   -EIO           anything else, including injected faults
 *
 * Zero-length requests: p2z_dev_pread(), p2z_dev_pwrite() and
 * p2z_dev_append() check their arguments (alignment, zone index), then
 * answer a zero-length request with 0 themselves, so backends never see
 * @len == 0 through them. A backend called directly with @len == 0 says
 * -EINVAL, as an NVMe command (whose length is 0-based) would.
 */
#ifndef PO2ZFS_DEV_H
#define PO2ZFS_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "po2zfs/stats.h"

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))
#endif

/* Zone types and conditions use the NVMe ZNS encodings. */
enum p2z_zone_type {
	P2Z_ZONE_TYPE_CNV = 1, /* conventional: random writes, no wp */
	P2Z_ZONE_TYPE_SEQ = 2, /* sequential write required */
};

enum p2z_zone_cond {
	P2Z_ZONE_COND_NOT_WP = 0x0, /* conventional zones */
	P2Z_ZONE_COND_EMPTY = 0x1,
	P2Z_ZONE_COND_IMP_OPEN = 0x2,
	P2Z_ZONE_COND_EXP_OPEN = 0x3,
	P2Z_ZONE_COND_CLOSED = 0x4,
	P2Z_ZONE_COND_READONLY = 0xd,
	P2Z_ZONE_COND_FULL = 0xe,
	P2Z_ZONE_COND_OFFLINE = 0xf,
};

enum p2z_zone_op {
	P2Z_ZONE_OP_RESET,
	P2Z_ZONE_OP_OPEN,
	P2Z_ZONE_OP_CLOSE,
	P2Z_ZONE_OP_FINISH,
};

/**
 * struct p2z_zone_info - one zone as the device reports it
 * @start_lba: first LBA of the zone
 * @cap_lba: writable LBAs in the zone (<= zone size)
 * @wp_lba: absolute write pointer, by the rule below
 * @type: enum p2z_zone_type
 * @cond: enum p2z_zone_cond
 *
 * The write pointer rule. Every backend's report_zones normalises @wp_lba,
 * so that for every zone start_lba <= wp_lba <= start_lba + cap_lba, and
 * wp_lba - start_lba is the written part with no clamping by the caller:
 *   conventional		start_lba, whatever the condition
 *   empty, open, closed	the device's write pointer (start_lba when
 *				empty, as ZNS and ZBC say); nvme and zbd fail
 *				a report of one outside the zone with -EIO,
 *				emu checks its image at open
 *   full			start_lba + cap_lba, whatever the device said
 *				(QEMU: all ones; Linux: start + zone size)
 *   read-only, offline	not valid on ZNS: nvme and zbd report
 *				start_lba; emu reports where the zone stood
 *				when it failed (still inside the zone). Read
 *				no data size from it.
 */
struct p2z_zone_info {
	uint64_t start_lba;
	uint64_t cap_lba;
	uint64_t wp_lba;
	uint8_t type;
	uint8_t cond;
};

/**
 * struct p2z_dev_info - geometry and limits, filled by the backend's open
 * @lba_bytes: logical block size
 * @nr_zones: number of zones
 * @zone_lba: native zone size in LBAs (any value, not only powers of two)
 * @max_open: maximum open zones, 0 = no limit
 * @max_active: maximum active zones, 0 = no limit
 * @max_append_bytes: largest single zone append, a multiple of @lba_bytes
 * @max_xfer_bytes: largest single read/write, a multiple of @lba_bytes
 * @buf_align: buffer address alignment (a power of two) the device takes
 *	       as it is; a less aligned buffer still works, but the backend
 *	       copies it through aligned memory of its own, piece by piece.
 *	       0 from a backend means 1.
 * @volatile_cache: the device has a volatile write cache (NVMe VWC, a
 *		    block device's "write back" cache, an emu image made with
 *		    --volatile-cache): completed writes are durable only after
 *		    a flush or when written with P2Z_IO_FUA
 */
struct p2z_dev_info {
	uint32_t lba_bytes;
	uint64_t nr_zones;
	uint64_t zone_lba;
	uint32_t max_open;
	uint32_t max_active;
	uint32_t max_append_bytes;
	uint32_t max_xfer_bytes;
	uint32_t buf_align;
	bool volatile_cache;
};

/* p2z_dev_open() flags */
#define P2Z_DEV_RDONLY (1U << 0)
/*
 * With P2Z_DEV_RDONLY: a look at the device by a tool (po2zfs-emu report),
 * not a user of it: no claim, no lock, so it works while a daemon owns
 * the device. Every other open claims the device for as long as it is open.
 */
#define P2Z_DEV_PEEK (1U << 1)
/*
 * Bypass the host's page cache where the backend has one: the emu backend
 * opens its image's data with O_DIRECT. The other backends always do direct
 * I/O and ignore it.
 */
#define P2Z_DEV_DIRECT (1U << 2)

/*
 * p2z_dev_pwrite()/p2z_dev_append() flags: force unit access, the data is
 * on stable media when the call returns (O_DSYNC, REQ_FUA). A backend that
 * sets ops->fua honours it per command; for the others the dispatcher
 * flushes the device after the write.
 */
#define P2Z_IO_FUA (1U << 0)

struct p2z_dev;
struct p2z_dev_queue;
struct io_uring;
struct io_uring_cqe;

/* struct p2z_io operations */
enum p2z_io_op {
	P2Z_IO_READ,
	P2Z_IO_WRITE,
	P2Z_IO_APPEND,
	P2Z_IO_FLUSH,
};

struct p2z_io;

/**
 * struct p2z_io_state - the queue's bookkeeping of one io in flight; the
 *			 caller never touches it
 * @next: done list or pending list link
 * @t0: start, for the statistics
 * @issued: bytes handed to pieces so far
 * @done: bytes completed
 * @next_lba: where the next append piece must land
 * @pieces: pieces in flight
 * @err: first error, or 0
 * @flushing: the flush after the last piece (no native FUA) is in flight
 * @queued: on the pending list
 */
struct p2z_io_state {
	struct p2z_io *next;
	uint64_t t0;
	size_t issued;
	size_t done;
	uint64_t next_lba;
	unsigned int pieces;
	int err;
	bool flushing;
	bool queued;
};

/**
 * struct p2z_io - one asynchronous request (see p2z_dev_submit())
 * @op: enum p2z_io_op
 * @flags: P2Z_IO_FUA or 0 (writes and appends)
 * @buf: data (8-byte aligned at least, as for p2z_dev_pwrite())
 * @len: bytes, a multiple of the LBA size
 * @ofs: native byte offset (READ, WRITE)
 * @zidx: zone index (APPEND)
 * @ret: on completion: bytes done (== @len, or short only for a write or
 *	 append whose later piece failed) or -errno; 0 for a flush
 * @lba: on completion of an APPEND: the first LBA written
 * @end_io: called once on completion, from p2z_dev_queue_reap() on the
 *	    queue owner's thread; may submit again, and may free @io
 * @private: the caller's
 * @st: the queue's
 */
struct p2z_io {
	unsigned int op;
	unsigned int flags;
	void *buf;
	size_t len;
	uint64_t ofs;
	uint64_t zidx;
	ssize_t ret;
	uint64_t lba;
	void (*end_io)(struct p2z_io *io);
	void *private;
	struct p2z_io_state st;
};

/**
 * struct p2z_dev_ops - one backend
 * @name: "nvme", "zbd" or "emu"
 * @fua: @pwrite and @append honour P2Z_IO_FUA in @flags themselves
 * @splits_reads: @pread takes any length and splits it at the device's
 *		  limits itself (issuing the pieces concurrently); otherwise
 *		  p2z_dev_pread() hands it pieces of at most info.max_xfer_bytes
 * @probe: 1 if this backend recognises @path (auto-selection), else 0
 * @open: allocate the backend state (which embeds struct p2z_dev), open
 *	  @path, fill dev->info; print a one-line reason on failure
 * @close: release everything @open took
 * @report_zones: fill up to @nr entries from zone @zidx on; return the
 *		  number filled (0 past the last zone)
 * @zone_mgmt: reset/open/close/finish one zone
 * @pread: read @len bytes at native byte offset @ofs (LBA aligned; never
 *	   past a zone's write pointer, callers take care); returns bytes read
 * @pwrite: write at native byte offset @ofs, which must be the zone's
 *	    write pointer for sequential zones; returns bytes written.
 *	    @len <= info.max_xfer_bytes; @flags: P2Z_IO_FUA or 0 (backends
 *	    without @fua never see P2Z_IO_FUA)
 * @append: zone append to zone @zidx; @lba gets the first LBA written;
 *	    returns bytes written. @len <= info.max_append_bytes; @flags
 *	    as for @pwrite
 * @flush: make completed writes durable
 *
 * The asynchronous group: all four set (nvme, zbd, emu), or all NULL (then a
 * queue runs the sync ops above on a small pool of worker threads, one per
 * device). They see
 * single pieces only: @len within the limits above, > 0; READ, WRITE,
 * APPEND or FLUSH; @flags as for @pwrite.
 * @queue_init: set up the backend's part of a queue of @depth pieces in
 *		flight at most (e.g. a ring), which makes @efd (an eventfd)
 *		readable when completions wait; *@bqp gets it
 * @queue_exit: free it; nothing in flight
 * @submit: start @io; 0 (its io->end_io() runs from a later @reap, never
 *	    from here), 1 (done already, synchronously: io->ret and io->lba
 *	    set, no end_io call) or -errno (not started). A piece's @st is
 *	    the backend's while it is in flight
 * @reap: complete what finished: set io->ret (bytes or -errno) and, for an
 *	  append, io->lba, then call io->end_io() (which may @submit again);
 *	  with @wait, block until at least one completed. Return the number
 *	  completed or -errno
 * @queue_hold_fd: optional: make the queue's own kernel object (its ring)
 *		   hold a reference to the open file @fd until that object is
 *		   gone, however the process ends (see p2z_dev_queue_hold_fd());
 *		   0 or -errno
 * @queue_init_on: optional: as @queue_init, but the commands go on @ring,
 *		   which the caller owns, submits and waits on, their
 *		   user_data carrying @tag; no eventfd (p2z_dev_queue_open_on())
 * @complete: with @queue_init_on: complete the piece of one of @ring's
 *	      completions carrying the tag, as @reap does; 1, or 0 for none
 * @queue_qring: optional: the queue's ring (uring.h), for plugging and
 *		 quieting it (p2z_dev_queue_plug(), p2z_dev_queue_edge())
 */
struct p2z_qring;

struct p2z_dev_ops {
	const char *name;
	bool fua;
	bool splits_reads;
	int (*probe)(const char *path);
	int (*open)(const char *path, unsigned int flags,
		    struct p2z_dev **devp);
	void (*close)(struct p2z_dev *dev);
	int (*report_zones)(struct p2z_dev *dev, uint64_t zidx, unsigned int nr,
			    struct p2z_zone_info *zi);
	int (*zone_mgmt)(struct p2z_dev *dev, uint64_t zidx,
			 enum p2z_zone_op op);
	ssize_t (*pread)(struct p2z_dev *dev, void *buf, size_t len,
			 uint64_t ofs);
	ssize_t (*pwrite)(struct p2z_dev *dev, const void *buf, size_t len,
			  uint64_t ofs, unsigned int flags);
	ssize_t (*append)(struct p2z_dev *dev, uint64_t zidx, const void *buf,
			  size_t len, uint64_t *lba, unsigned int flags);
	int (*flush)(struct p2z_dev *dev);
	int (*queue_init)(struct p2z_dev *dev, unsigned int depth, int efd,
			  void **bqp);
	void (*queue_exit)(struct p2z_dev *dev, void *bq);
	int (*submit)(struct p2z_dev *dev, void *bq, struct p2z_io *io);
	int (*reap)(struct p2z_dev *dev, void *bq, bool wait);
	int (*queue_hold_fd)(struct p2z_dev *dev, void *bq, int fd);
	int (*queue_init_on)(struct p2z_dev *dev, unsigned int depth,
			     struct io_uring *ring, uint64_t tag, void **bqp);
	int (*complete)(struct p2z_dev *dev, void *bq,
			const struct io_uring_cqe *cqe);
	struct p2z_qring *(*queue_qring)(void *bq);
};

/**
 * struct p2z_dev - an open device; embedded in each backend's state
 * @ops: the backend
 * @info: geometry and limits
 * @path: the path the user gave (owned, freed by p2z_dev_close())
 * @flags: P2Z_DEV_* flags given to p2z_dev_open()
 * @stats: requests counted by the dispatcher, per enum p2z_dev_stat_op:
 *	   the time spent in the backend (the device, seen from the daemon)
 */
struct p2z_dev {
	const struct p2z_dev_ops *ops;
	struct p2z_dev_info info;
	char *path;
	unsigned int flags;
	struct p2z_stat stats[P2Z_DEV_STAT_NR];
};

/* Backends, one const ops table each (dev_emu.c, dev_nvme.c, dev_zbd.c). */
extern const struct p2z_dev_ops p2z_dev_emu_ops;
extern const struct p2z_dev_ops p2z_dev_nvme_ops;
extern const struct p2z_dev_ops p2z_dev_zbd_ops;

/* dev.c */

/**
 * p2z_dev_open() - open a zoned device
 * @path: device or image path
 * @backend: "nvme", "zbd", "emu", or NULL to choose from the path
 * @flags: P2Z_DEV_* flags
 * @devp: result
 *
 * Return: 0, -EINVAL for an unknown or unbuilt backend name, -ENODEV when
 * no backend recognises @path, or the backend's -errno.
 */
int p2z_dev_open(const char *path, const char *backend, unsigned int flags,
		 struct p2z_dev **devp);

/**
 * p2z_dev_backend_is_known() - whether a name is a backend's
 * @name: as the backend= mount option or --backend gives it
 *
 * The one list of backend names (nvme, zbd, emu), built or not:
 * p2z_dev_open() refuses one this build lacks.
 *
 * Return: true for "nvme", "zbd" or "emu".
 */
bool p2z_dev_backend_is_known(const char *name);

/**
 * p2z_dev_close() - close a device opened by p2z_dev_open()
 * @dev: device, may be NULL
 */
void p2z_dev_close(struct p2z_dev *dev);

/**
 * p2z_dev_report_zones() - report zones
 * @dev: device
 * @zidx: first zone
 * @nr: capacity of @zi
 * @zi: result
 *
 * Return: number of entries filled, or -errno.
 */
int p2z_dev_report_zones(struct p2z_dev *dev, uint64_t zidx, unsigned int nr,
			 struct p2z_zone_info *zi);

/**
 * p2z_dev_zone_mgmt() - reset, open, close or finish a zone
 * @dev: device
 * @zidx: zone index
 * @op: operation
 *
 * Return: 0 or -errno.
 */
int p2z_dev_zone_mgmt(struct p2z_dev *dev, uint64_t zidx, enum p2z_zone_op op);

/**
 * p2z_dev_pread() - read, split at the transfer limit (by the backend when
 *		     it has splits_reads)
 * @dev: device
 * @buf: destination
 * @len: bytes, a multiple of the LBA size
 * @ofs: native byte offset, a multiple of the LBA size
 *
 * Return: bytes read (== @len) or -errno.
 */
ssize_t p2z_dev_pread(struct p2z_dev *dev, void *buf, size_t len, uint64_t ofs);

/**
 * p2z_dev_pwrite() - write, split at the transfer limit
 * @dev: device
 * @buf: source, 8-byte aligned at least (backends bounce what needs more)
 * @len: bytes, a multiple of the LBA size
 * @ofs: native byte offset (the write pointer for sequential zones)
 * @flags: P2Z_IO_FUA or 0
 *
 * With P2Z_IO_FUA the bytes returned are on stable media: every piece is
 * written with FUA, or the device is flushed after the last piece (a failed
 * flush fails the call with its errno, the data may then be written but is
 * not known to be durable).
 *
 * Return: bytes written (short only if a later piece failed) or -errno if
 * nothing was written.
 */
ssize_t p2z_dev_pwrite(struct p2z_dev *dev, const void *buf, size_t len,
		       uint64_t ofs, unsigned int flags);

/**
 * p2z_dev_append() - zone append, split at the zone append limit
 * @dev: device
 * @zidx: zone index
 * @buf: source, 8-byte aligned at least (backends bounce what needs more)
 * @len: bytes, a multiple of the LBA size
 * @lba: result: first LBA written by the first piece
 * @flags: P2Z_IO_FUA or 0, as for p2z_dev_pwrite()
 *
 * Pieces are issued in order; each lands right after the previous one only
 * if nobody else writes the zone meanwhile (callers hold the zone lock).
 * A later piece landing anywhere else fails the append with -EIO (logged).
 *
 * Return: bytes written (short only if a later piece failed) or -errno.
 */
ssize_t p2z_dev_append(struct p2z_dev *dev, uint64_t zidx, const void *buf,
		       size_t len, uint64_t *lba, unsigned int flags);

/**
 * p2z_dev_flush() - make completed writes durable
 * @dev: device
 *
 * Return: 0 or -errno.
 */
int p2z_dev_flush(struct p2z_dev *dev);

/*
 * Asynchronous I/O (dev_queue.c). A queue belongs to one thread at a time,
 * its owner: p2z_dev_submit(), p2z_dev_queue_reap() and
 * p2z_dev_queue_close() are never called on one queue concurrently. Each
 * thread opens its own; any number of queues may share one device, and
 * the synchronous calls stay usable meanwhile.
 */

/**
 * p2z_dev_queue_open() - open a submission queue on a device
 * @dev: device, outlives the queue
 * @depth: pieces in flight at most (1..4096); more ios wait in the queue
 * @qp: result
 *
 * Return: 0, -EINVAL for a bad @depth, or -errno (no ring, no thread).
 */
int p2z_dev_queue_open(struct p2z_dev *dev, unsigned int depth,
		       struct p2z_dev_queue **qp);

/**
 * p2z_dev_queue_close() - drain and free a queue
 * @q: queue, may be NULL
 *
 * Waits for every io in flight and runs its end_io (exactly once each).
 */
void p2z_dev_queue_close(struct p2z_dev_queue *q);

/**
 * p2z_dev_queue_hold_fd() - keep a file open as long as the queue's
 *			     commands can run
 * @q: queue
 * @fd: an open file; the caller may close its own descriptor afterwards
 *
 * The queue takes its own reference to @fd's open file and drops it only
 * when its commands are over: a queue on an io_uring ring registers @fd
 * as a fixed file of that ring, so the kernel drops the reference when it
 * frees the ring, which it does only after every command submitted on it
 * completed, also when the process was killed (the ring's exit work runs
 * after the process is gone). A queue served by threads (the worker pool,
 * or a backend without a ring) holds a duplicate of @fd, closed by
 * p2z_dev_queue_close() or with the process's files, which the kernel
 * closes only after every thread of the process left its system call.
 * One file per queue.
 *
 * Return: 0, -EBUSY (the queue holds one already), or -errno.
 */
int p2z_dev_queue_hold_fd(struct p2z_dev_queue *q, int fd);

/**
 * p2z_dev_submit() - start an asynchronous read, write, append or flush
 * @q: queue
 * @io: request; @io->op, @io->buf, @io->len, @io->ofs or @io->zidx,
 *	@io->flags and @io->end_io set by the caller, untouched until
 *	end_io runs
 *
 * Split as the synchronous calls are: a read into pieces of at most
 * info.max_xfer_bytes issued concurrently, completing once with the total;
 * a write into such pieces issued one after the other; an append into
 * pieces of at most the append limit, each issued when the previous one
 * landed, each landing right after the previous (else -EIO, logged). With
 * P2Z_IO_FUA every piece is written with FUA where the backend has it,
 * else the device is flushed after the last piece. Counted in dev->stats
 * as the synchronous calls are.
 *
 * Return: 0 (end_io will run exactly once, from p2z_dev_queue_reap(),
 * never from here) or -errno: -EINVAL (bad op, alignment or zone index),
 * -EOPNOTSUPP (no append); then end_io never runs.
 */
int p2z_dev_submit(struct p2z_dev_queue *q, struct p2z_io *io);

/**
 * p2z_dev_queue_reap() - run the end_io of completed ios
 * @q: queue
 * @min_wait: block until at least this many ios completed (fewer if fewer
 *	      are in flight); 0 never blocks
 *
 * Return: number of end_io calls made, or -errno.
 */
int p2z_dev_queue_reap(struct p2z_dev_queue *q, unsigned int min_wait);

/**
 * p2z_dev_queue_plug() - hold submissions back, to send many at once
 * @q: queue
 * @plug: true: the ios submitted from now on stay in the queue's ring
 *	  until p2z_dev_queue_plug(@q, false), which sends them all with
 *	  one system call, or a p2z_dev_queue_reap() that waits, which sends
 *	  them with its wait
 *
 * As the block layer's plug: a caller that receives a batch of requests
 * plugs, submits each, and unplugs before it sleeps. Nothing changes for
 * a queue without a ring of its own (the worker pool, a given ring).
 *
 * Return: 0, or -errno when unplugging could not send them (they stay;
 * a reap that waits sends them).
 */
int p2z_dev_queue_plug(struct p2z_dev_queue *q, bool plug);

/**
 * p2z_dev_queue_edge() - make the queue's fd edge-triggered
 * @q: queue opened by p2z_dev_queue_open(), by the thread that owns it
 *
 * For an owner sleeping in epoll (EPOLLET on p2z_dev_queue_fd()):
 * afterwards no call on the queue reads or writes its eventfd, so that a
 * reap costs no system call. The eventfd is written by completions
 * arriving from outside the owner's calls (the kernel's, the worker
 * pool's), except while a p2z_dev_queue_reap() waits for every io in
 * flight (the ring's signals are off then), and never cleared. An io
 * completed inside the owner's own calls (in a submit) signals nothing:
 * before it sleeps, the owner reaps while p2z_dev_queue_ready().
 */
void p2z_dev_queue_edge(struct p2z_dev_queue *q);

/**
 * p2z_dev_queue_ready() - whether completed ios wait for their end_io
 * @q: queue
 *
 * Return: true if ios completed inside the owner's calls wait for a reap.
 */
bool p2z_dev_queue_ready(struct p2z_dev_queue *q);

/**
 * p2z_dev_queue_open_on() - open a submission queue whose commands go on a
 *			     ring the caller owns
 * @dev: device, outlives the queue
 * @depth: as for p2z_dev_queue_open()
 * @ring: an io_uring of the calling thread, which outlives the queue, set
 *	  up with IORING_SETUP_SQE128 | IORING_SETUP_CQE32 (what NVMe
 *	  passthrough needs; enough for every backend), with room for
 *	  @depth more SQEs and their completions
 * @tag: the user_data bits of this queue's commands, one bit above every
 *	 pointer (1ULL << 62, say), which the caller's own commands never
 *	 carry
 * @qp: result
 *
 * The queue leaves its SQEs on @ring: the caller submits them with its own
 * (one io_uring_enter() for both), and hands each completion carrying @tag
 * to p2z_dev_queue_complete(); the others are its own. The queue has no
 * eventfd (p2z_dev_queue_fd() gives -1) and never waits: an io completed
 * without the ring (refused by the backend, or done in its submit) has its
 * end_io run by p2z_dev_queue_reap() with @min_wait 0, which the caller
 * calls before it waits on @ring (a larger @min_wait is -EINVAL).
 * p2z_dev_queue_close() wants nothing in flight (the caller drains by
 * serving @ring); p2z_dev_queue_hold_fd() registers the file on @ring,
 * which then holds it until its own last command completed.
 *
 * Return: 0, -EOPNOTSUPP (the backend cannot share a ring, e.g. the worker
 * pool: use p2z_dev_queue_open()), -EINVAL (bad @depth, no @tag, or @ring
 * lacks a flag the backend needs), or -errno.
 */
int p2z_dev_queue_open_on(struct p2z_dev *dev, unsigned int depth,
			  struct io_uring *ring, uint64_t tag,
			  struct p2z_dev_queue **qp);

/**
 * p2z_dev_queue_complete() - complete one of a queue's completions on the
 *			      ring it was given
 * @q: queue opened by p2z_dev_queue_open_on()
 * @cqe: a completion of that ring carrying the queue's tag; the caller
 *	 marks it seen afterwards
 *
 * Runs the end_io of every io that completed with it (which may submit
 * again), as p2z_dev_queue_reap() does.
 *
 * Return: number of end_io calls made, or -EINVAL (not a queue on a given
 * ring, or called from one of its end_io; then @cqe is not consumed).
 */
int p2z_dev_queue_complete(struct p2z_dev_queue *q,
			   const struct io_uring_cqe *cqe);

/**
 * p2z_dev_queue_fd() - an eventfd readable when completions wait
 * @q: queue
 *
 * For an event loop (epoll, or io_uring_register_eventfd() of another
 * ring): when it is readable, call p2z_dev_queue_reap(@q, 0), which also
 * clears it. It may be readable with nothing to reap.
 *
 * Return: the file descriptor, owned by @q; -1 for a queue on a given ring
 * (p2z_dev_queue_open_on()).
 */
int p2z_dev_queue_fd(struct p2z_dev_queue *q);

/**
 * p2z_dev_queue_inflight() - ios submitted whose end_io has not run yet
 * @q: queue
 *
 * Return: that number.
 */
unsigned int p2z_dev_queue_inflight(struct p2z_dev_queue *q);

/**
 * p2z_dev_nvme_status_errno() - map an NVMe status to a negative errno
 * @status: status code type << 8 | status code (DNR and More bits masked
 *	    by the caller or here)
 *
 * The one place NVMe (and emulated ZNS) statuses become errnos; see the
 * table at the top of this header.
 *
 * Return: 0 for success, else -errno.
 */
int p2z_dev_nvme_status_errno(uint16_t status);

/**
 * p2z_zone_cond_name() - the word for a zone condition
 * @cond: enum p2z_zone_cond
 *
 * Return: "not-wp", "empty", "implicit-open", "explicit-open", "closed",
 * "read-only", "full", "offline", or "unknown".
 */
const char *p2z_zone_cond_name(uint8_t cond);

/* dev_walk.c */

/* Zones per report of p2z_dev_zone_walk(). */
#define P2Z_DEV_WALK_BATCH 256U

/*
 * p2z_dev_zone_walk()'s callback: one zone @zi (valid during the call
 * only) of index @zidx. Return: 0 to go on, anything else to stop the walk
 * with that value.
 */
typedef int (*p2z_dev_zone_fn)(const struct p2z_zone_info *zi, uint64_t zidx,
			       void *arg);

/**
 * p2z_dev_zone_walk() - call @fn for each zone of a range, in order
 * @dev: device
 * @from: first zone
 * @nr: number of zones; 0 walks none
 * @fn: called once per zone, zone @from first
 * @arg: passed to @fn
 *
 * Reports P2Z_DEV_WALK_BATCH zones at a time (fewer at the end of the
 * range). A backend may fill fewer entries than asked: the walk goes on
 * from the first zone not reported. A report of no zone before the end of
 * the range, or of more than asked, fails the walk with -EIO; a failed
 * report with its errno. Either is logged in one line naming the device
 * and the zone; @fn's own failures are not (a caller that reports them
 * itself can tell them apart by returning a positive value from @fn).
 * @fn may call the device (p2z_dev_zone_mgmt()) for the zone it is given.
 *
 * Return: 0 after the last zone, the first nonzero value @fn returned,
 * -EINVAL for a range past the last zone, or the report's -errno.
 */
int p2z_dev_zone_walk(struct p2z_dev *dev, uint64_t from, uint64_t nr,
		      p2z_dev_zone_fn fn, void *arg);

/* NVMe status values (status code type << 8 | status code). */
#define P2Z_NVME_SC_SUCCESS 0x000
#define P2Z_NVME_SC_INVALID_FIELD 0x002
#define P2Z_NVME_SC_INTERNAL 0x006
#define P2Z_NVME_SC_LBA_RANGE 0x080
#define P2Z_NVME_SC_ZONE_BOUNDARY 0x1b8
#define P2Z_NVME_SC_ZONE_FULL 0x1b9
#define P2Z_NVME_SC_ZONE_READ_ONLY 0x1ba
#define P2Z_NVME_SC_ZONE_OFFLINE 0x1bb
#define P2Z_NVME_SC_ZONE_INVALID_WRITE 0x1bc
#define P2Z_NVME_SC_ZONE_TOO_MANY_ACTIVE 0x1bd
#define P2Z_NVME_SC_ZONE_TOO_MANY_OPEN 0x1be
#define P2Z_NVME_SC_ZONE_INVALID_TRANSITION 0x1bf
#define P2Z_NVME_SC_UNWRITTEN 0x287

#endif /* PO2ZFS_DEV_H */
