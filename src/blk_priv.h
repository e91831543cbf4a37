/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * po2zfs-blk's seam: what its files share. blk_cli.c is the command line,
 * blk_add.c the add command (the device's life), blk_ctrl.c the control
 * commands, records, list and del, blk_queue.c the queue threads,
 * blk_zoned.c the zoned target (requests, write pointer cache); blk.c
 * (include/po2zfs/blk.h) their pure decisions. Every function here that
 * can fail returns 0 (or a value >= 0) or -errno.
 */
#ifndef PO2ZFS_BLK_PRIV_H
#define PO2ZFS_BLK_PRIV_H

#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "po2zfs/blk.h"
#include "po2zfs/dev.h"
#include "po2zfs/geom.h"
#include "ublk_uapi.h"

#define PROG "po2zfs-blk"
#define P2Z_BLK_CTRL "/dev/ublk-control"
#define P2Z_BLK_RUN_DIR "/run/po2zfs-blk"
#define P2Z_BLK_MAX_QUEUES 4
#define P2Z_BLK_DEPTH 32
#define P2Z_BLK_MAX_IO (512U << 10)
#define P2Z_BLK_PATH_MAX 64
/* ADD_DEV's dev_id for "any free number" */
#define P2Z_BLK_ID_ANY UINT32_MAX

/**
 * struct p2z_blk_zone - what the server knows of one zone
 * @wp_ofs: written LBAs from the zone start (atomic: read by every queue,
 *	    written by the one serving the zone's write)
 * @cap_lba: capacity
 * @gate: writes and appends of the zone in flight, on every queue (atomic;
 *	  p2z_blk_gate_enter())
 * @type: enum p2z_zone_type
 */
struct p2z_blk_zone {
	uint64_t wp_ofs;
	uint64_t cap_lba;
	uint32_t gate;
	uint8_t type;
};

struct p2z_blk;
struct p2z_blk_queue;

/* How a recovered server resolved the requests sent again (logged) */
enum p2z_blk_reissue_class {
	P2Z_BLK_RC_WRITTEN, /* a write already on the device: completed */
	P2Z_BLK_RC_REST, /* a write partly there: the rest sent */
	P2Z_BLK_RC_APPEND_LANDED, /* an append found landed: completed */
	P2Z_BLK_RC_APPEND_SENT, /* an append that had not landed: sent */
	P2Z_BLK_RC_FAILED, /* could not tell: EIO */
	P2Z_BLK_RC_NR,
};

/* The ring's user_data: a tag (ublk commands), or this: the eventfd poll */
#define P2Z_BLK_UD_EVENT (1ULL << 63)
/* ... or this: the main thread's wake-up at a handover (MSG_RING) */
#define P2Z_BLK_UD_WAKE (P2Z_BLK_UD_EVENT | 1)
/* p2z_blk_tag.gate of a request outside any zone gate */
#define P2Z_BLK_GATE_NONE (-1)

/**
 * struct p2z_blk_tag - one tag's request while the device serves it
 * @io: its device request (first: end_io finds the tag from it)
 * @q: its queue
 * @tag: its tag
 * @gate: the enum p2z_blk_gate_kind it holds of its zone, or
 *	  P2Z_BLK_GATE_NONE
 * @zidx: its zone (writes, appends)
 * @ofs: a read's first byte, po2 address
 * @len: a read's bytes
 * @done: bytes of the read done
 * @piece: bytes of the po2 piece the read's @io covers (the rest zeros)
 * @zone_ofs: a write's byte offset in its zone
 * @carry: recover: the carried slot (index in the record's carry area
 *	   plus 1) of the dead server's append this tag resolves, freed once
 *	   resolved (sent: its own slot; landed: its own LANDED slot; failed:
 *	   the commit reached the kernel), or 0
 */
struct p2z_blk_tag {
	struct p2z_io io;
	struct p2z_blk_queue *q;
	unsigned int tag;
	int gate;
	uint64_t zidx;
	uint64_t ofs;
	uint64_t len;
	uint64_t done;
	uint64_t piece;
	uint64_t zone_ofs;
	uint32_t carry;
};

/**
 * struct p2z_blk_queue - one hardware queue of the ublk device
 * @blk: the server
 * @qid: queue index
 * @ring: this queue's io_uring on /dev/ublkcN (SQE128)
 * @iods: the kernel's request descriptors (mmap of /dev/ublkcN)
 * @iods_len: bytes mapped
 * @bufs: one buffer of blk->buf_bytes per tag
 * @tags: one per tag
 * @dq: the device queue the requests go through (owned by @thread)
 * @busy: requests taken from the kernel and not committed yet
 * @committed: tags committed since the last submit (their append slots
 *	       are freed once the kernel has the commit)
 * @nr_committed: how many
 * @thread: the thread serving the queue
 * @ret: why the thread ended (0: the device stopped)
 */
struct p2z_blk_queue {
	struct p2z_blk *blk;
	unsigned int qid;
	struct io_uring ring;
	const struct ublksrv_io_desc *iods;
	size_t iods_len;
	char *bufs;
	struct p2z_blk_tag *tags;
	struct p2z_dev_queue *dq;
	unsigned int busy;
	unsigned int *committed;
	unsigned int nr_committed;
	pthread_t thread;
	int ret;
};

/*
 * The append record's file: header, slots, each queue's ring, then the
 * carry area (version 3: struct p2z_blk_carry and its slots)
 */
#define P2Z_BLK_REC_MAGIC 0x63657273325a3250ULL /* "P2Z2srec" */
#define P2Z_BLK_REC_VERSION 3
/* the version before the carry area (read too) */
#define P2Z_BLK_REC_VERSION_2 2
/* completed appends each queue's ring keeps, per tag */
#define P2Z_BLK_HIST_PER_TAG 8

/**
 * struct p2z_blk_rec - the append record's header (version 2; version 1
 * was the slots alone, 40 bytes each)
 * @magic: P2Z_BLK_REC_MAGIC
 * @version: P2Z_BLK_REC_VERSION
 * @nr_queues: queues
 * @depth: tags per queue
 * @ring: entries in each queue's ring
 * @lost: the newest seq of a zone op marker a ring overwrote (UINT64_MAX:
 *	  one still OPEN), or 0 (atomic; zero in records of binaries before
 *	  markers, which ignore it)
 * @seq: the record's counter: the newest completed append's or zone op
 *	 marker's seq (atomic)
 */
struct p2z_blk_rec {
	uint64_t magic;
	uint32_t version;
	uint32_t nr_queues;
	uint32_t depth;
	uint32_t ring;
	uint64_t lost;
	uint64_t seq;
};
/* version 2's layout: @lost is where two zero pads were */
_Static_assert(sizeof(struct p2z_blk_rec) == 40, "append record header");

/**
 * struct p2z_blk_carry - the record's carry area (version 3): the slots of
 * the dead servers' appends (their own and those they carried) not FREE
 * when this server recovered, each freed once this server resolved it;
 * @nr struct p2z_blk_slot follow it. Their seqs are another generation's
 * (no rings of theirs): compared with nothing.
 * @nr: slots in the area (P2Z_BLK_CARRY_PER_SLOT per queue and tag)
 * @flags: P2Z_BLK_CARRY_OVERFLOW
 */
struct p2z_blk_carry {
	uint32_t nr;
	uint32_t flags;
};
/* carried slots per queue and tag */
#define P2Z_BLK_CARRY_PER_SLOT 2
/* some slot did not fit: an append matching no slot fails */
#define P2Z_BLK_CARRY_OVERFLOW 1U

/**
 * struct p2z_blk_ring - a queue's ring of completed appends, @ring
 * struct p2z_blk_hist entries follow it
 * @head: entries ever written (entry head % ring is the next)
 * @dropped: the seq of the newest entry overwritten, or 0
 */
struct p2z_blk_ring {
	uint64_t head;
	uint64_t dropped;
};

/* bytes of one queue's ring with its entries */
static inline size_t p2z_blk_ring_bytes(unsigned int depth)
{
	return sizeof(struct p2z_blk_ring) +
	       (size_t)depth * P2Z_BLK_HIST_PER_TAG *
		       sizeof(struct p2z_blk_hist);
}

/* bytes of the carry area of @n slots (queues x depth) */
static inline size_t p2z_blk_carry_bytes(size_t n)
{
	return sizeof(struct p2z_blk_carry) +
	       n * P2Z_BLK_CARRY_PER_SLOT * sizeof(struct p2z_blk_slot);
}

/* queue @qid's ring in the rings at @rings */
static inline struct p2z_blk_ring *
p2z_blk_ring_of(void *rings, unsigned int depth, unsigned int qid)
{
	return (struct p2z_blk_ring *)((char *)rings +
				       qid * p2z_blk_ring_bytes(depth));
}

/**
 * struct p2z_blk - a running server
 * @dev: the backing device
 * @g: its geometry
 * @zones: one entry per zone
 * @ctrl_fd: /dev/ublk-control
 * @ctrl: ring for control commands (main thread only)
 * @cdev_fd: /dev/ublkcN
 * @dev_id: N (before ADD_DEV: the number asked for, or P2Z_BLK_ID_ANY)
 * @nr_queues: queues
 * @depth: tags per queue
 * @buf_bytes: largest request (max_sectors), the size of each tag buffer
 * @queues: the queues
 * @lock: guards @nr_ready, @nr_failed
 * @ready: signalled when a queue fetched all its tags, or failed to
 * @inflight: requests taken from the kernel and not committed, all queues
 *	      (atomic)
 * @max_inflight: the most @inflight has been (atomic; logged at stop)
 * @nr_served: requests committed (atomic)
 * @want: add's switch (enum p2z_blk_recovery)
 * @recovery: the device is recoverable (UBLK_F_USER_RECOVERY)
 * @handover: a stop signal hands the device over (atomic): the queues
 *	      take no new request, drain what they started and end, the
 *	      device stays quiesced for the next server
 * @recover: this server takes over a quiesced device (recover)
 * @served: the device was served (started, or recovered)
 * @ident: the backing device's identity (p2z_blk_ident()), in the record
 * @rec_ident: recover: the identity its record holds
 * @rec_path: recover: the backing path its record holds
 * @rec_max_io: recover: the device's max_io_buf_bytes
 * @slots: the append record, one slot per queue and tag (MAP_SHARED of
 *	   P2Z_BLK_RUN_DIR/N.slots: survives the server), or NULL
 * @rec: the record's header (its counter), slots and rings follow it
 * @rings: the record's per-queue rings of completed appends
 * @carry: the record's carry area (its header; the slots follow it)
 * @old_slots: recover: the dead server's slots then its carried ones (a
 *	       copy, @old_nr in all: an index >= nr_queues * depth is a
 *	       carried slot, of an older generation), or NULL
 * @old_nr: entries in @old_slots
 * @old_map: recover: per @old_slots entry, its slot in @carry plus 1, or 0
 * @old_overflow: recover: the dead server's carry area overflowed
 * @old_rings: recover: the dead server's rings (a copy), or NULL (its
 *	       record had none: version 1)
 * @old_lost: recover: the dead server's record's @lost
 * @old_taken: recover: which of them a reissued append matched (atomic)
 * @wp_rec: recover: each zone's write pointer when recovered
 * @nr_reissue: recover: reissued requests by enum p2z_blk_reissue_class
 *		(atomic)
 */
struct p2z_blk {
	struct p2z_dev *dev;
	struct p2z_geom g;
	struct p2z_blk_zone *zones;
	int ctrl_fd;
	struct io_uring ctrl;
	int cdev_fd;
	uint32_t dev_id;
	unsigned int nr_queues;
	unsigned int depth;
	uint32_t buf_bytes;
	struct p2z_blk_queue *queues;
	pthread_mutex_t lock;
	pthread_cond_t ready;
	unsigned int nr_ready, nr_failed;
	unsigned int inflight;
	unsigned int max_inflight;
	uint64_t nr_served;
	enum p2z_blk_recovery want;
	bool recovery;
	bool handover;
	bool recover;
	bool served;
	char ident[128];
	char rec_ident[128];
	char rec_path[4096];
	uint32_t rec_max_io;
	struct p2z_blk_rec *rec;
	struct p2z_blk_slot *slots;
	void *rings;
	struct p2z_blk_carry *carry;
	struct p2z_blk_slot *old_slots;
	size_t old_nr;
	uint32_t *old_map;
	bool old_overflow;
	void *old_rings;
	uint64_t old_lost;
	uint8_t *old_taken;
	uint64_t *wp_rec;
	uint64_t nr_reissue[P2Z_BLK_RC_NR];
};

/* blk_ctrl.c */

/**
 * p2z_blk_fail() - say why in one line (p2z_log(): "po2zfs-blk: reason")
 * @err: -errno to return
 * @fmt: the reason
 *
 * Return: @err.
 */
int p2z_blk_fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * p2z_blk_ctrl() - one command on /dev/ublk-control, waited for
 * @ring: the control ring (p2z_blk_ctrl_open())
 * @fd: /dev/ublk-control
 * @op: UBLK_U_CMD_*
 * @dev_id: the device
 * @buf: the command's buffer, or NULL
 * @len: its bytes
 * @data: data[0]
 *
 * Return: the command's result: 0 or -errno.
 */
int p2z_blk_ctrl(struct io_uring *ring, int fd, uint32_t op, uint32_t dev_id,
		 void *buf, uint16_t len, uint64_t data);

/**
 * p2z_blk_ctrl_open() - open /dev/ublk-control (loading ublk_drv if needed)
 * and a ring for it
 * @fdp: result: the fd
 * @ring: result: the ring
 *
 * Return: 0, or -errno after one line saying why ublk is unavailable.
 */
int p2z_blk_ctrl_open(int *fdp, struct io_uring *ring);

/** p2z_blk_ctrl_close() - close what p2z_blk_ctrl_open() opened */
void p2z_blk_ctrl_close(int fd, struct io_uring *ring);

/**
 * p2z_blk_record_write() - write P2Z_BLK_RUN_DIR/@dev_id: @dev_path, this
 * process's pid and @ident (p2z_blk_ident(); NULL: none)
 * Return: 0 or -errno.
 */
int p2z_blk_record_write(uint32_t dev_id, const char *dev_path,
			 const char *ident);

/**
 * p2z_blk_record_read() - read P2Z_BLK_RUN_DIR/@dev_id
 * @dev_id: the device number
 * @backing: result: the backing path (left alone if the record has none)
 * @size: its bytes
 * @pid: result: the server's pid (0 if none)
 * @ident: result: the backing device's identity (left alone if none), or
 *	   NULL
 * @isize: its bytes
 *
 * Return: 0, -ENOENT without a record, or -errno.
 */
int p2z_blk_record_read(uint32_t dev_id, char *backing, size_t size, int *pid,
			char *ident, size_t isize);

/**
 * p2z_blk_record_remove() - remove P2Z_BLK_RUN_DIR/@dev_id
 * Return: 0 if a record was removed, else -errno (-ENOENT: none).
 */
int p2z_blk_record_remove(uint32_t dev_id);

/**
 * p2z_blk_bdev_is_busy() - whether /dev/ublkb@dev_id is mounted, held or
 * open by another process
 */
bool p2z_blk_bdev_is_busy(uint32_t dev_id);

/** p2z_blk_pid_alive() - whether process @pid exists */
bool p2z_blk_pid_alive(int pid);

/**
 * p2z_blk_record_find() - the device add recovers instead of adding one:
 * a record in P2Z_BLK_RUN_DIR naming the backing device @node of a
 * quiesced device (p2z_blk_add_recovers())
 * @node: the backing device's node identity (p2z_blk_ident_node())
 * @n: result: the device number
 *
 * Return: 0, or -ENOENT if there is none.
 */
int p2z_blk_record_find(const char *node, uint32_t *n);

/** p2z_blk_cmd_list() - list: print every ublk device. Return: 0 or -errno. */
int p2z_blk_cmd_list(void);

/**
 * p2z_blk_cmd_del() - del: stop and delete /dev/ublkb@n
 * @n: the device number
 * @force: also one po2zfs-blk did not make, or one in use
 *
 * Return: 0, or -errno after one line.
 */
int p2z_blk_cmd_del(uint32_t n, bool force);

/* blk_add.c */

/**
 * p2z_blk_cdev_open() - open /dev/ublkcN, waiting a little for its node
 * @path: the character device's path
 *
 * devtmpfs or udev makes the node after ADD_DEV: ENOENT is retried for up
 * to 2 s, any other failure is final.
 *
 * Return: the fd, or -errno (never a positive number on failure: a caller
 * testing < 0 must see every failure).
 */
int p2z_blk_cdev_open(const char *path);

/**
 * p2z_blk_cmd_add() - add: serve @path as /dev/ublkbN until it stops
 * @path: the backing device
 * @backend: nvme, zbd, emu or NULL (by the path)
 * @fg: stay in the foreground (else detach once the device is up)
 * @id: the ublk device number N wanted, or P2Z_BLK_ID_ANY
 * @want: enum p2z_blk_recovery: a recoverable device (UBLK_F_USER_RECOVERY:
 *	  if the server dies, or hands it over at a stop signal while it is
 *	  in use, the kernel holds its requests until a recover) unless
 *	  P2Z_BLK_RECOVERY_OFF
 *
 * With recovery, a quiesced device of po2zfs-blk's whose record names the
 * same backing device (@id, or without @id the record found by
 * p2z_blk_record_find()) is recovered instead of a new one added.
 *
 * Return: 0, or -errno after one line.
 */
int p2z_blk_cmd_add(const char *path, const char *backend, bool fg, uint32_t id,
		    enum p2z_blk_recovery want);

/**
 * p2z_blk_ident_node() - the node part of a backing path's identity
 * ("blk=MAJ:MIN", "chr=MAJ:MIN" or "file=MAJ:MIN:INO") into @buf
 * Return: 0, or -errno if @path cannot be stat()ed.
 */
int p2z_blk_ident_node(const char *path, char *buf, size_t size);

/**
 * p2z_blk_cmd_recover() - recover: serve the quiesced device /dev/ublkb@n
 * again (its server died), from the backing device its record names
 * @n: the device number
 * @backend: nvme, zbd, emu or NULL (by the path)
 * @fg: stay in the foreground
 *
 * Refuses (one line, nothing changed) a device that is not quiesced, one
 * without recovery, one po2zfs-blk did not make or whose record is not its
 * own, and a backing device that is not the one the record describes.
 *
 * Return: 0, or -errno after one line.
 */
int p2z_blk_cmd_recover(uint32_t n, const char *backend, bool fg);

/* blk_queue.c */

/**
 * p2z_blk_queues_start() - start every queue thread
 * @blk: the server, its device added and /dev/ublkcN open
 * @started: result: threads started (to hand to p2z_blk_queues_stop())
 *
 * Waits until each started thread fetched its tags, also when a later one
 * could not start.
 *
 * Return: 0 or -errno.
 */
int p2z_blk_queues_start(struct p2z_blk *blk, unsigned int *started);

/**
 * p2z_blk_queues_stop() - join the @started queue threads
 *
 * Each thread ends once the kernel aborted all its tags, which it does only
 * after every request was committed, and closes its device queue (which
 * waits for anything still there) before it ends.
 *
 * Return: why the first that failed ended (-errno), or 0.
 */
int p2z_blk_queues_stop(struct p2z_blk *blk, unsigned int started);

/**
 * p2z_blk_queue_commit() - complete a tag: COMMIT_AND_FETCH on the queue's
 * ring (submitted with the next batch)
 * @q: the queue, on its own thread
 * @tag: the tag
 * @res: bytes, 0 or -errno
 * @zone_lba: where a zone append landed (sectors), else 0
 */
void p2z_blk_queue_commit(struct p2z_blk_queue *q, unsigned int tag, int res,
			  uint64_t zone_lba);

/**
 * p2z_blk_queue_wait() - let completions happen while a request waits for
 * its zone: submit the commits made so far, reap this queue's device
 * completions (other queues reap theirs), waiting 1 ms at most
 * @q: the queue, on its own thread
 */
void p2z_blk_queue_wait(struct p2z_blk_queue *q);

/**
 * p2z_blk_slots_free() - the commits of @q's tags went to the kernel: free
 * their append slots (a request the kernel completed is never sent again)
 */
void p2z_blk_slots_free(struct p2z_blk_queue *q);

/**
 * p2z_blk_carry_init() - recover: carry the dead server's slots not FREE
 * (its own and its carried ones) into this server's carry area, each with
 * P2Z_BLK_CARRY_ZOP if the dead server's markers show a zone op of its
 * zone it was in flight across (p2z_blk_zop_unsure()), logged if some did
 * not fit (P2Z_BLK_CARRY_OVERFLOW, also set if the dead server's was)
 * Return: 0 or -ENOMEM.
 */
int p2z_blk_carry_init(struct p2z_blk *blk);

/* blk_zoned.c */

/**
 * p2z_blk_zones_init() - load every zone's write pointer into @blk->zones
 * Return: 0, or -errno (a failed report is logged by the zone walk).
 */
int p2z_blk_zones_init(struct p2z_blk *blk);

/**
 * p2z_blk_handle() - start serving one request
 * @q: its queue, on its own thread
 * @tag: its tag
 *
 * Reads, writes, appends and flushes go to @q->dq and commit from their
 * end_io; zone operations and reports are served here, synchronously, after
 * the zone's writes and appends in flight completed. Every request is
 * committed exactly once (p2z_blk_queue_commit()), with bytes, 0 or -errno.
 */
void p2z_blk_handle(struct p2z_blk_queue *q, unsigned int tag);

#endif /* PO2ZFS_BLK_PRIV_H */
