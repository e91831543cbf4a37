/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The ublk server's pure decisions (po2zfs-blk, src/blk_cli.c): which zone
 * and native range a request of the po2 block device touches, how a zone is
 * reported to the kernel, which errno the zoned block layer gets. No I/O,
 * no allocation, no locks; the po2 arithmetic itself stays in geom.
 *
 * Sectors are the block layer's 512-byte units, in the po2 view.
 */
#ifndef PO2ZFS_BLK_H
#define PO2ZFS_BLK_H

#include <linux/blkzoned.h>
#include <stdint.h>

#include "po2zfs/dev.h"
#include "po2zfs/geom.h"

#define P2Z_BLK_SECTOR_SHIFT 9

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
 * Return: the write pointer in LBAs from the zone start, at most the
 * capacity; the capacity for a full zone, 0 for an offline one.
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

#endif /* PO2ZFS_BLK_H */
