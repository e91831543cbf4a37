/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The ublk server's pure decisions (po2zfs-blk, src/blk_cli.c): which zone
 * and native range a request of the po2 block device touches, how a zone is
 * reported to the kernel, which errno the zoned block layer gets, where a
 * zone's cached write pointer moves, whose a ublk device is, whether a
 * stop signal is refused. No I/O,
 * no allocation, no locks; the po2 arithmetic itself stays in geom.
 *
 * Sectors are the block layer's 512-byte units, in the po2 view.
 */
#ifndef PO2ZFS_BLK_H
#define PO2ZFS_BLK_H

#include <linux/blkzoned.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "po2zfs/dev.h"
#include "po2zfs/geom.h"

#define P2Z_BLK_SECTOR_SHIFT 9

/*
 * po2zfs-blk's mark in a ublk device's ublksrv_flags (kept by the kernel
 * from ADD_DEV, returned by GET_DEV_INFO, used by no driver): the upper
 * 32 bits, "P2ZB". Another ublk server's device does not carry it.
 */
#define P2Z_BLK_SRV_MAGIC 0x50325a4200000000ULL
#define P2Z_BLK_SRV_MAGIC_MASK 0xffffffff00000000ULL

/**
 * enum p2z_blk_owner - whose a ublk device is, by its record
 * @P2Z_BLK_OWNER_OURS: po2zfs-blk made it and its record is this device's
 * @P2Z_BLK_OWNER_NONE: no record of po2zfs-blk's for its number
 * @P2Z_BLK_OWNER_STALE: a record that is not this device's (left over from
 *			 an earlier device of that number)
 */
enum p2z_blk_owner {
	P2Z_BLK_OWNER_OURS,
	P2Z_BLK_OWNER_NONE,
	P2Z_BLK_OWNER_STALE,
};

/**
 * struct p2z_blk_target - where a write lands on the device
 * @zidx: zone index
 * @zone_ofs: byte offset from the start of the zone
 * @len: bytes
 */
struct p2z_blk_target {
	uint64_t zidx;
	uint64_t zone_ofs;
	uint64_t len;
};

/* blk.c */

/**
 * p2z_blk_zone_sectors() - po2 zone size in 512-byte sectors
 * @g: geometry
 *
 * Return: po2 zone size in sectors (the block device's chunk_sectors).
 */
uint64_t p2z_blk_zone_sectors(const struct p2z_geom *g);

/**
 * p2z_blk_zone_of() - zone index of a sector
 * @g: geometry
 * @sector: sector of the po2 view
 * @start: the sector must be its zone's first (zone management, append)
 * @zidx: result
 *
 * Return: 0, -ERANGE past the end of the view, -EINVAL if @start and
 * @sector is not a zone start.
 */
int p2z_blk_zone_of(const struct p2z_geom *g, uint64_t sector, bool start,
		    uint64_t *zidx);

/**
 * p2z_blk_write_target() - check a write and find where it lands
 * @g: geometry
 * @sector: first sector
 * @nr_sectors: sectors, > 0
 * @cap_lba: capacity of the zone holding @sector
 * @t: result
 *
 * A write must stay inside [zone start, zone start + capacity) of one zone:
 * any sector in the gap between capacity and the po2 zone end, or a range
 * crossing into it, is refused whole, before anything is written.
 *
 * Return: 0, -ERANGE past the end of the view, -EINVAL for a zero length
 * or a range not aligned to the logical block size, -EIO for a range
 * touching the gap.
 */
int p2z_blk_write_target(const struct p2z_geom *g, uint64_t sector,
			 uint32_t nr_sectors, uint64_t cap_lba,
			 struct p2z_blk_target *t);

/**
 * p2z_blk_append_done() - check where a zone append landed
 * @g: geometry
 * @zidx: the zone appended to
 * @cap_lba: its capacity
 * @lba: first native LBA written, as the device says
 * @nr_lba: LBAs written
 * @sector: result: @lba as a sector of the po2 view (the request's
 *	    zone_append_lba)
 * @wp_ofs: result: the zone's write pointer after the append, in LBAs from
 *	    the zone start
 *
 * Return: 0, or -EIO if [@lba, @lba + @nr_lba) is not inside the capacity
 * of zone @zidx (a device answer that cannot be trusted).
 */
int p2z_blk_append_done(const struct p2z_geom *g, uint64_t zidx,
			uint64_t cap_lba, uint64_t lba, uint64_t nr_lba,
			uint64_t *sector, uint64_t *wp_ofs);

/**
 * p2z_blk_read_len() - bytes of a data piece the device holds
 * @pc: a piece of a read (p2z_geom_po2_piece()), not a gap
 * @readable: bytes of the zone that can be read from the device: the
 *	      write pointer's offset (sequential), the capacity (conventional)
 *
 * The rest of the piece reads as zeros, as on a ZNS device: nothing is read
 * from the device past a write pointer.
 *
 * Return: bytes to read from the device at the start of @pc, <= @pc->len.
 */
uint64_t p2z_blk_read_len(const struct p2z_geom_piece *pc, uint64_t readable);

/**
 * p2z_blk_report() - a device zone as the block layer wants it reported
 * @g: geometry
 * @zi: the zone, from p2z_dev_report_zones()
 * @bz: result: start, len (po2 zone size), wp, capacity in sectors; a full
 *	zone's wp is the zone's end (start + len), as the nvme driver says;
 *	a conventional zone's capacity is its len, as the kernel requires
 *
 * Return: 0, or -ERANGE if @zi is not a zone of @g.
 */
int p2z_blk_report(const struct p2z_geom *g, const struct p2z_zone_info *zi,
		   struct blk_zone *bz);

/**
 * p2z_blk_wp_ofs() - how far a zone can be read, as the device reports it
 * @zi: the zone, from p2z_dev_report_zones()
 *
 * @zi follows the write pointer rule (struct p2z_zone_info): inside the
 * zone, a full zone's at the capacity.
 *
 * Return: the write pointer in LBAs from the zone start; 0 for an offline
 * zone (emu reports where it stood), a read-only zone's where it stands.
 */
uint64_t p2z_blk_wp_ofs(const struct p2z_zone_info *zi);

/**
 * p2z_blk_zone_is_reset_by_all() - whether a reset of all zones resets this one
 * @zi: the zone, from p2z_dev_report_zones()
 *
 * As NVMe's Zone Management Send with Select All: the sequential zones
 * that are open (implicitly or explicitly, written or not), closed or full.
 * Empty, read-only and offline zones are left alone.
 *
 * Return: true if the zone is to be reset.
 */
bool p2z_blk_zone_is_reset_by_all(const struct p2z_zone_info *zi);

/**
 * p2z_blk_zone_limit() - an open or active zone limit as ublk takes it
 * @limit: the device's limit, 0 = none
 * @nr_zones: zones of the device
 *
 * ublk refuses (SET_PARAMS, EINVAL) a limit above the number of zones,
 * (ublk_dev_param_zoned_validate()), which a small device or image may
 * well have; such a limit binds nothing and becomes none.
 *
 * Return: @limit, or 0 if @limit > @nr_zones.
 */
uint32_t p2z_blk_zone_limit(uint32_t limit, uint64_t nr_zones);

/**
 * p2z_blk_errno() - the errno a completed ublk request carries
 * @err: -errno from the device layer
 *
 * The zoned block layer knows two zone errors by errno (ublk turns them into
 * BLK_STS_ZONE_OPEN_RESOURCE and BLK_STS_ZONE_ACTIVE_RESOURCE, as the nvme
 * driver reports the ZNS statuses); every other failure is an I/O error,
 * as the nvme driver reports zone full, invalid write or boundary errors.
 *
 * Return: -ETOOMANYREFS, -EOVERFLOW or -EIO.
 */
int p2z_blk_errno(int err);

/**
 * p2z_blk_wp_advance() - a zone's cached write pointer after a completion
 * @cur: the cached write pointer, LBAs from the zone start
 * @end: where the completed write or append ends, LBAs from the zone start
 *
 * Writes and appends of one zone complete in any order (an append on one
 * queue, a write on another): the pointer only moves forward, else a
 * write finishing after an append that landed behind it would pull it back
 * over acknowledged data, which would then read as zeros.
 *
 * Return: max(@cur, @end).
 */
uint64_t p2z_blk_wp_advance(uint64_t cur, uint64_t end);

/**
 * p2z_blk_io_flags() - device write flags of a ublk request
 * @op_flags: the request descriptor's op_flags
 *
 * Return: P2Z_IO_FUA for a request carrying UBLK_IO_F_FUA, else 0.
 */
unsigned int p2z_blk_io_flags(uint32_t op_flags);

/**
 * p2z_blk_cache_attrs() - the cache attributes the ublk device announces
 * @volatile_cache: the backing device has a volatile write cache
 *
 * Only a device with a volatile cache gets flushes and FUA writes from the
 * block layer (UBLK_ATTR_VOLATILE_CACHE, UBLK_ATTR_FUA); one without
 * has its writes durable when they complete.
 *
 * Return: UBLK_ATTR_VOLATILE_CACHE | UBLK_ATTR_FUA, or 0.
 */
uint32_t p2z_blk_cache_attrs(bool volatile_cache);

/**
 * p2z_blk_io_limits() - the request sizes the ublk device announces
 * @max_xfer: the device's largest single read or write, bytes
 * @max_append: the device's largest single zone append, bytes (0: none)
 * @page: the page size, a power of 2
 * @cap: the largest request the server takes (P2Z_BLK_MAX_IO), a multiple
 *	 of @page
 * @io: out: the largest read or write (max_sectors), each tag buffer's size
 * @append: out: the largest zone append (max_zone_append_sectors)
 *
 * A read or write longer than the device's transfer limit is one ublk
 * request all the same: the device queue splits it, a write into pieces in
 * order (each after the one before, the zone's gate held throughout), a
 * read concurrently. Announcing the transfer limit instead makes the block
 * layer split it into ublk requests (a 128 KiB write into 124 + 4 KiB on a
 * device taking 124 KiB) that zone write plugging runs one after the other.
 * An append stays one device command: no longer than the device's append
 * and transfer limits.
 *
 * Return: 0 with @io = @cap and @append its whole pages of the least of
 * @max_xfer, @max_append and @cap; -EINVAL if that is below a page.
 */
int p2z_blk_io_limits(uint32_t max_xfer, uint32_t max_append, uint32_t page,
		      uint32_t cap, uint32_t *io, uint32_t *append);

/**
 * p2z_blk_owner_of() - whether a ublk device is the one a record describes
 * @have_record: /run/po2zfs-blk/N exists
 * @rec_pid: the server pid the record holds (0 if none)
 * @kern_pid: the kernel's ublksrv_pid of the device (GET_DEV_INFO): the
 *	      server that started it, -1 once the device stopped (the server
 *	      died or was deleted), 0 before it started
 * @srv_flags: the device's ublksrv_flags
 *
 * The record is the device's when the device carries P2Z_BLK_SRV_MAGIC and
 * the kernel's server is the record's; a device whose server the kernel
 * forgot (@kern_pid <= 0) is matched by the mark alone.
 *
 * Return: the owner.
 */
enum p2z_blk_owner p2z_blk_owner_of(bool have_record, int rec_pid, int kern_pid,
				    uint64_t srv_flags);

/**
 * p2z_blk_state_name() - the state list shows of a ublk device
 * @state: the kernel's UBLK_S_DEV_* (GET_DEV_INFO)
 * @alive: its server process is alive
 * @recovering: a po2zfs-blk recover of it runs (its record names a live
 *		process the kernel does not know yet)
 *
 * Return: "quiesced" (its server died, requests held, recover serves it
 * again), "recovering", else "alive" or "dead" by @alive.
 */
const char *p2z_blk_state_name(uint16_t state, bool alive, bool recovering);

/**
 * p2z_blk_recover_check() - whether recover may take a device over
 * @state: the kernel's UBLK_S_DEV_*
 * @flags: the device's UBLK_F_* flags
 * @srv_flags: its ublksrv_flags (P2Z_BLK_SRV_MAGIC: po2zfs-blk's)
 * @owner: p2z_blk_owner_of() of its record
 *
 * Return: 0, -EPERM (another program's device, or a record not its own),
 * -EOPNOTSUPP (added without recovery), -EBUSY (not quiesced).
 */
int p2z_blk_recover_check(uint16_t state, uint64_t flags, uint64_t srv_flags,
			  enum p2z_blk_owner owner);

/**
 * p2z_blk_stop_is_refused() - whether a stop signal is refused
 * @busy: the block device is mounted, held (holders) or open
 * @nr_refused: stop signals refused before
 *
 * A block device driver does not go away under a mounted filesystem: the
 * first stop signal is refused while the device is in use, a second one
 * forces the stop.
 *
 * Return: true to refuse (log and keep serving).
 */
bool p2z_blk_stop_is_refused(bool busy, unsigned int nr_refused);

/* What a stop signal (SIGTERM, SIGINT) does to a served device */
enum p2z_blk_stop {
	P2Z_BLK_STOP_DELETE, /* stop the device and delete it */
	P2Z_BLK_STOP_REFUSE, /* log the refusal, keep serving */
	P2Z_BLK_STOP_HANDOVER, /* drain, flush, exit; leave it quiesced */
};

/**
 * p2z_blk_stop_action() - what a stop signal does
 * @recovery: the device is recoverable (UBLK_F_USER_RECOVERY)
 * @busy: the block device is mounted, held (holders) or open
 * @nr_refused: stop signals refused before
 *
 * A recoverable device still in use is handed over: the server drains
 * what it started, flushes once and exits, leaving the device quiesced
 * for the next server (an upgrade is a restart, add recovers it). An
 * unused device is stopped and deleted. A device without recovery keeps
 * p2z_blk_stop_is_refused(): refused once while in use, a second signal
 * deletes it.
 *
 * Return: enum p2z_blk_stop.
 */
enum p2z_blk_stop p2z_blk_stop_action(bool recovery, bool busy,
				      unsigned int nr_refused);

/* add's recovery switch */
enum p2z_blk_recovery {
	P2Z_BLK_RECOVERY_AUTO, /* the default: recoverable if the kernel can */
	P2Z_BLK_RECOVERY_ON, /* --recovery: recoverable, or refuse */
	P2Z_BLK_RECOVERY_OFF, /* --no-recovery: a plain device */
};

/**
 * p2z_blk_recovery_granted() - whether a new device is recoverable
 * @want: enum p2z_blk_recovery (add's switch)
 * @flags: the UBLK_F_* flags ADD_DEV returned (the kernel clears those it
 *	   does not know)
 *
 * Return: 1 recoverable, 0 a plain device (--no-recovery, or the default
 * on a kernel without user recovery: logged), -EOPNOTSUPP (--recovery on
 * such a kernel: refused).
 */
int p2z_blk_recovery_granted(enum p2z_blk_recovery want, uint64_t flags);

/**
 * p2z_blk_ident_same_node() - whether a record's identity is of the same
 * device node (or image file)
 * @node: the backing path's node part ("blk=MAJ:MIN", "chr=MAJ:MIN",
 *	  "file=MAJ:MIN:INO")
 * @rec_ident: the identity a record holds (node, then the geometry)
 *
 * Return: true if @rec_ident's first word is @node.
 */
bool p2z_blk_ident_same_node(const char *node, const char *rec_ident);

/**
 * p2z_blk_add_recovers() - whether add (recovery on, no --id) recovers a
 * device it found a record of instead of adding a new one
 * @same_node: the record names the backing device add was given
 *	       (p2z_blk_ident_same_node())
 * @rec_alive: the process the record names is alive (a server, or a
 *	       recover under way)
 * @state: the device's UBLK_S_DEV_*
 * @flags: its UBLK_F_* flags
 * @srv_flags: its ublksrv_flags
 *
 * Only a quiesced recoverable device of po2zfs-blk's (P2ZB mark) whose
 * server is gone; recover's own checks then run on it.
 *
 * Return: true to recover it.
 */
bool p2z_blk_add_recovers(bool same_node, bool rec_alive, uint16_t state,
			  uint64_t flags, uint64_t srv_flags);

/*
 * A zone's gate: what of it is in flight, shared by every queue. One
 * 32-bit word: bits 0..14 appends, bits 15..29 writes, bit 30 a split
 * append (longer than the device's largest single append) in flight.
 */
#define P2Z_BLK_GATE_APPENDS 0x7fffU
#define P2Z_BLK_GATE_WRITE_SHIFT 15
#define P2Z_BLK_GATE_WRITES (0x7fffU << P2Z_BLK_GATE_WRITE_SHIFT)
#define P2Z_BLK_GATE_SPLIT (1U << 30)

/* What enters a zone's gate */
enum p2z_blk_gate_kind {
	P2Z_BLK_GATE_WRITE, /* a write: one per zone at a time, in order */
	P2Z_BLK_GATE_APPEND, /* an append issued as one device command */
	P2Z_BLK_GATE_APPEND_SPLIT, /* an append the device queue splits */
};

/**
 * p2z_blk_gate_enter() - whether a request may start on its zone now
 * @cur: the zone's gate word
 * @kind: enum p2z_blk_gate_kind
 * @next: result: the gate word with the request in
 *
 * A write starts when no other write of the zone is in flight (the block
 * layer's zone write plugging sends one at a time; one arriving early waits
 * and so keeps its place). Appends run concurrently, but a split append's
 * pieces must land back to back: it starts only on a zone without appends
 * in flight, and no append starts beside it.
 *
 * Return: 0 (start; store @next), or -EBUSY (wait for a completion of the
 * zone and ask again).
 */
int p2z_blk_gate_enter(uint32_t cur, enum p2z_blk_gate_kind kind,
		       uint32_t *next);

/**
 * p2z_blk_gate_leave() - the gate word after a request of @kind completed
 * @cur: the zone's gate word, @kind in
 * @kind: enum p2z_blk_gate_kind
 *
 * Return: @cur without it.
 */
uint32_t p2z_blk_gate_leave(uint32_t cur, enum p2z_blk_gate_kind kind);

/**
 * p2z_blk_gate_idle() - whether nothing writes to the zone: a zone
 * operation (reset, finish, open, close) may start
 * @cur: the zone's gate word
 *
 * Return: true when no write or append of the zone is in flight.
 */
bool p2z_blk_gate_idle(uint32_t cur);

/* What becomes of a request the kernel sends again after a recovery */
enum p2z_blk_reissue {
	P2Z_BLK_REISSUE_SEND, /* not started: send it as it is */
	P2Z_BLK_REISSUE_COMPARE, /* compare the bytes already there first */
	P2Z_BLK_REISSUE_DONE, /* all there: complete it (an append: landed) */
	P2Z_BLK_REISSUE_REST, /* partly there: send the rest */
	P2Z_BLK_REISSUE_FAIL, /* cannot tell: fail it (EIO), never guess */
};

/**
 * p2z_blk_reissue_write() - a regular write sent again after a recovery
 * @start: its first LBA, from the zone start
 * @len: its LBAs
 * @wp: the zone's write pointer on the device, from the zone start
 * @cmp: -1 not compared yet; 0 the bytes in [@start, min(@wp, end)) equal
 *	 the request's; > 0 they differ
 *
 * Not started (@wp at or before @start): send. Otherwise the written part
 * is compared first; equal and whole: done; equal and partial: the rest;
 * different: fail.
 *
 * Return: enum p2z_blk_reissue.
 */
enum p2z_blk_reissue p2z_blk_reissue_write(uint64_t start, uint64_t len,
					   uint64_t wp, int cmp);

/* A record slot's state (the append record, P2Z_BLK_RUN_DIR/N.rec) */
enum p2z_blk_slot_state {
	P2Z_BLK_SLOT_FREE, /* nothing in flight */
	P2Z_BLK_SLOT_SUBMITTED, /* sent to the device, landing unknown */
	P2Z_BLK_SLOT_LANDED, /* completed by the device at @landed */
};

/**
 * struct p2z_blk_slot - one append in flight, kept outside the server's
 * memory (one per queue and tag)
 * @state: enum p2z_blk_slot_state (written last)
 * @len: LBAs
 * @zidx: its zone
 * @crc: crc32c of its data
 * @wp_submit: the zone's write pointer (from the zone start) when sent
 * @landed: where it landed (LBA from the zone start), when LANDED
 */
struct p2z_blk_slot {
	uint32_t state;
	uint32_t len;
	uint64_t zidx;
	uint32_t crc;
	uint32_t pad;
	uint64_t wp_submit;
	uint64_t landed;
	uint64_t seq;
};

/**
 * struct p2z_blk_hist - a completed zone append in the record's history
 * (a per-queue ring, written before its slot is freed), or a zone reset or
 * finish (a marker: @len 0, which binaries before markers skip)
 * @zidx: zone index (a marker: P2Z_BLK_HIST_ALL for a reset-all)
 * @landed: where it landed, LBA from the zone start (a marker: the
 *	    record's counter when the zone op began, before its drain)
 * @len: LBAs (a marker: 0)
 * @pad: the counter's advance from the append's send to @seq (@seq - its
 *	 slot's seq, at most UINT32_MAX; 0 unknown: an older binary's); a
 *	 marker: enum p2z_blk_zop_state
 * @seq: its number (the record's counter, from 1, increasing); a marker:
 *	 @landed while OPEN, the counter after the zone op once DONE/FAILED
 */
struct p2z_blk_hist {
	uint64_t zidx;
	uint64_t landed;
	uint32_t len;
	uint32_t pad;
	uint64_t seq;
};

/* a marker's @zidx: every zone (a reset-all) */
#define P2Z_BLK_HIST_ALL UINT64_MAX

/* A zone op marker's state (struct p2z_blk_hist @pad) */
enum p2z_blk_zop_state {
	P2Z_BLK_ZOP_OPEN = 1, /* begun, not done: anything may have happened */
	P2Z_BLK_ZOP_DONE, /* done: the zone's data before it is gone (reset) */
	P2Z_BLK_ZOP_FAILED, /* the device failed it: the zone unknown */
};

/**
 * struct p2z_blk_zop - a reset or finish of a zone (or a reset-all) in the
 * dead server's record
 * @begin: the record's counter when it began (before its drain: an append
 *	   sent before it had completed before the device op)
 * @end: the counter once the device op ended (UINT64_MAX: OPEN; an append
 *	 sent with a slot seq >= @end was sent after it)
 * @state: enum p2z_blk_zop_state
 */
struct p2z_blk_zop {
	uint64_t begin;
	uint64_t end;
	uint32_t state;
};

/**
 * struct p2z_blk_zops - the zone ops of one zone in the dead server's rings
 * @op: @nr of them
 * @nr: entries in @op
 * @lost: the newest @end of a marker of any zone a ring overwrote (an OPEN
 *	  one: UINT64_MAX), or 0
 */
struct p2z_blk_zops {
	struct p2z_blk_zop *op;
	size_t nr;
	uint64_t lost;
};

/**
 * p2z_blk_reissue_append() - a zone append sent again after a recovery
 * @slot: the dead server's slot with this append's zone, length and
 *	  checksum, or NULL if there is none (it was never sent: its slot is
 *	  written before the device sees it)
 * @wp: the zone's write pointer on the device, from the zone start
 * @moved_by_others: LBAs other appends of the zone landed (recorded) at or
 *		     after @slot->wp_submit
 * @nr_unknown: other slots of the zone sent without a known landing
 * @cmp: -1 not compared yet; 0 the bytes at @at equal the data; > 0 differ
 * @at: result: the LBA (from the zone start) to compare, then the landing
 *
 * An append is never written twice: landed (recorded) -> compare there,
 * done; sent and the write pointer moved by nothing unaccounted -> it did
 * not land: send; moved by exactly its length and nothing else could have
 * -> compare at the write pointer it was sent at, done; anything else
 * fails. The server decides a SUBMITTED slot with p2z_blk_reissue_place()
 * instead, which also places appends sent while others of the zone were in
 * flight.
 *
 * Return: enum p2z_blk_reissue (never REST).
 */
enum p2z_blk_reissue p2z_blk_reissue_append(const struct p2z_blk_slot *slot,
					    uint64_t wp,
					    uint64_t moved_by_others,
					    unsigned int nr_unknown, int cmp,
					    uint64_t *at);

/**
 * struct p2z_blk_range - LBAs [@lba, @lba + @len) of a zone
 * @lba: first LBA, from the zone start
 * @len: LBAs
 * @maybe: another append's landing that a zone op of the zone may have
 *	   erased (p2z_blk_landing_of() MAYBE)
 */
struct p2z_blk_range {
	uint64_t lba;
	uint64_t len;
	bool maybe;
};

/**
 * p2z_blk_reissue_place() - where a sent zone append of the dead server
 * landed, when its zone's write pointer moved past where it was sent
 * @slot: its slot, SUBMITTED (sent, no landing recorded)
 * @wp: the zone's write pointer on the device at the recovery
 * @busy: ranges of the zone known to hold other appends (their recorded
 *	  or already placed landings, none from before a reset or finish the
 *	  append was sent after), and ranges that may (@maybe)
 * @nr_busy: entries in @busy
 * @match: 1 if the device's bytes at [lba, lba + @slot->len) equal the
 *	   append's data, 0 if not, -errno if they could not be read
 * @ctx: @match's first argument
 * @at: result: the landing (DONE)
 *
 * The append landed, if at all, at some LBA p >= @slot->wp_submit with
 * p + len <= @wp, outside @busy, and its bytes are there. Every such p
 * is compared (@match; a @maybe range is compared too, and a match
 * overlapping one fails: the bytes may be that other append's): exactly
 * one matches -> DONE at it; none -> it did
 * not land (or only part of it did, and the kernel never had a completion
 * for it): SEND; more than one (identical data), the write pointer before
 * @slot->wp_submit (the zone went back) or a failed compare -> FAIL.
 * Exactly one match while @complete is false (appends that completed
 * since @slot was sent may be missing from @busy) -> FAIL as well.
 *
 * Return: P2Z_BLK_REISSUE_DONE, _SEND or _FAIL.
 */
enum p2z_blk_reissue
p2z_blk_reissue_place(const struct p2z_blk_slot *slot, uint64_t wp,
		      const struct p2z_blk_range *busy, size_t nr_busy,
		      bool complete, int (*match)(void *ctx, uint64_t lba),
		      void *ctx, uint64_t *at);

/**
 * p2z_blk_hist_zops() - the zone op markers of zone @zidx (and reset-alls)
 * in one queue's ring
 * @ring: the queue's ring, @nr entries (unused ones have seq 0)
 * @nr: entries in @ring
 * @zidx: the zone
 * @zops: result: its markers appended to @zops->op (room for @nr more);
 *	  an unknown state counts as OPEN
 */
void p2z_blk_hist_zops(const struct p2z_blk_hist *ring, size_t nr,
		       uint64_t zidx, struct p2z_blk_zops *zops);

/**
 * p2z_blk_zop_unsure() - whether a zone op of its zone keeps an append
 * the dead server sent at @sent (its slot's seq) from being resolved
 * @zops: its zone's ops (p2z_blk_hist_zops())
 * @sent: its slot's seq
 *
 * An op not ended before it was sent (OPEN, or @end > @sent: it ran while
 * the append was in flight, or began after it), or a lost marker newer
 * than @sent: it may have landed before the op (erased) or after (in the
 * data after it): the append fails (EIO), never placed or sent again.
 *
 * Return: true: fail it.
 */
bool p2z_blk_zop_unsure(const struct p2z_blk_zops *zops, uint64_t sent);

/* What a recorded landing is to an append sent after it was (below) */
enum p2z_blk_landing {
	P2Z_BLK_LANDING_BUSY, /* its data is there: not the append's place */
	P2Z_BLK_LANDING_GONE, /* erased by a reset before the append was sent */
	P2Z_BLK_LANDING_MAYBE, /* cannot tell: a match on it fails */
};

/**
 * p2z_blk_landing_of() - a recorded landing of another append of the zone,
 * for an append sent at @sent that p2z_blk_zop_unsure() let through
 * @zops: the zone's ops
 * @lo: the other append's slot seq (when it was sent), at least...
 * @hi: ... and at most (equal when known)
 * @sent: the unresolved append's slot seq
 *
 * Only ops ended when @sent was taken count (@end <= @sent). The other
 * sent before a DONE op began (@hi < @begin): the drain made it complete
 * before the op, which erased it (a finish leaves it, but then nothing
 * lands in the zone until a reset: GONE either way) -> GONE; sent before
 * an op ended but not known before it began (racing it, or a FAILED op),
 * or before a lost marker -> MAYBE; else BUSY.
 *
 * Return: enum p2z_blk_landing.
 */
enum p2z_blk_landing p2z_blk_landing_of(const struct p2z_blk_zops *zops,
					uint64_t lo, uint64_t hi,
					uint64_t sent);

/**
 * p2z_blk_hist_busy() - one queue's history of completed appends, as busy
 * ranges for p2z_blk_reissue_place()
 * @ring: the queue's ring, @nr entries (unused ones have seq 0)
 * @nr: entries in @ring
 * @dropped: the seq of the newest entry the ring overwrote, or 0
 * @zidx: the zone of the unresolved append
 * @since: the record's counter when it was sent (its slot's seq)
 * @zops: the zone's ops (p2z_blk_landing_of()), or NULL (none known)
 * @busy: result: the ranges of @zidx's entries with seq > @since appended,
 *	  GONE ones left out, MAYBE ones with @maybe set (markers are no
 *	  range)
 * @nr_busy: in: entries in @busy; out: plus those appended (room for @nr
 *	     more is needed)
 *
 * Return: true if the ring holds every append of the queue completed
 * after @since (@dropped <= @since), false if some were overwritten.
 */
bool p2z_blk_hist_busy(const struct p2z_blk_hist *ring, size_t nr,
		       uint64_t dropped, uint64_t zidx, uint64_t since,
		       const struct p2z_blk_zops *zops,
		       struct p2z_blk_range *busy, size_t *nr_busy);

/* A carried slot's @pad bits (the record's carry area, version 3) */
#define P2Z_BLK_CARRY_ZOP 1U /* a zone op of its zone while unresolved */

/**
 * p2z_blk_carry_select() - the slots a recovering server carries forward
 * in its own record: the dead server's slots and carried slots not FREE
 * @old: the dead server's slots, then its carried ones, @nr in all
 * @nr: entries in @old
 * @carry: result: the carried slots, compacted (room for @cap)
 * @cap: entries in @carry
 * @map: result: per @old entry, its index in @carry plus 1, or 0 (FREE,
 *	 or no room)
 * @overflow: result: set if some did not fit (left alone otherwise)
 *
 * Return: entries written to @carry.
 */
size_t p2z_blk_carry_select(const struct p2z_blk_slot *old, size_t nr,
			    struct p2z_blk_slot *carry, size_t cap,
			    uint32_t *map, bool *overflow);

/**
 * p2z_blk_slot_find() - the first slot from @from on with a reissued
 * append's zone, length and checksum, not FREE
 * @s: the dead server's slots, then its carried ones (own first: a request
 *     the dead server took from a carried slot and recorded in its own is
 *     found there)
 * @nr: entries in @s
 * @from: first index looked at
 * @zidx: the append's zone
 * @len: its LBAs
 * @crc: its crc32c
 *
 * Return: the index, or -1.
 */
long p2z_blk_slot_find(const struct p2z_blk_slot *s, size_t nr, size_t from,
		       uint64_t zidx, uint32_t len, uint32_t crc);

/**
 * p2z_blk_reissue_noslot() - an append after a recovery that no slot of
 * the dead server's record (own or carried) matches
 * @overflow: the record's carry area overflowed (a slot may be missing)
 *
 * Return: P2Z_BLK_REISSUE_SEND (never sent before), or _FAIL if a slot
 * may have been lost (it may have landed already).
 */
enum p2z_blk_reissue p2z_blk_reissue_noslot(bool overflow);

/**
 * p2z_blk_crc32c() - crc32c (Castagnoli) of @len bytes, continuing @crc
 * (start with 0)
 */
uint32_t p2z_blk_crc32c(uint32_t crc, const void *buf, size_t len);

#endif /* PO2ZFS_BLK_H */
