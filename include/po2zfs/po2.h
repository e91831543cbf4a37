/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The po2 view of the whole device (po2.c): every zone at its po2 boundary,
 * the gap between a zone's capacity and that boundary reading as zeros.
 * Built on the zone table and the geometry only; the filesystem serves it
 * as /po2.
 */
#ifndef PO2ZFS_PO2_H
#define PO2ZFS_PO2_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "po2zfs/zone.h"

/**
 * p2z_po2_piece() - the piece of a po2 view range in its first zone
 * @zt: zone table
 * @ofs: byte offset in the view
 * @len: bytes from @ofs
 * @zidx: result: the zone holding @ofs
 * @pc: result: the piece of [@ofs, @ofs + @len) in that zone (geometry's
 *	p2z_geom_po2_piece() with the zone's capacity)
 *
 * Return: 0, or -EIO (@ofs past the view, or the zone's state unreadable).
 */
int p2z_po2_piece(struct p2z_zone_table *zt, uint64_t ofs, size_t len,
		  uint64_t *zidx, struct p2z_geom_piece *pc);

/**
 * p2z_po2_read() - read the po2 view
 * @zt: zone table
 * @buf: destination, aligned to P2Z_ZONE_BUF_ALIGN
 * @len: bytes, a multiple of the LBA size
 * @ofs: byte offset in the view, a multiple of the LBA size
 * @err_zidx: result on failure: the zone that could not be read (left
 *	      alone when no zone was at fault)
 *
 * Each zone's data up to its file size, then zeros up to the next po2
 * boundary, supplied here and never read from the device. The range is cut
 * at the end of the view.
 *
 * Return: bytes read (0 at or past the end of the view), or -EIO (a zone
 * could not be read, offline zones included).
 */
ssize_t p2z_po2_read(struct p2z_zone_table *zt, void *buf, size_t len,
		     uint64_t ofs, uint64_t *err_zidx);

/**
 * p2z_po2_write() - write to the po2 view
 * @zt: zone table
 * @buf: source, aligned to P2Z_ZONE_BUF_MIN_ALIGN
 * @len: bytes, a multiple of the LBA size
 * @ofs: byte offset in the view
 * @flags: 0 or P2Z_IO_FUA, as for p2z_zone_write()
 * @zidx: result, the zone written to (set when something was attempted)
 *
 * The write goes to the zone holding its first byte, under that zone's
 * rules (p2z_zone_write()), and is cut short at the end of the zone's
 * capacity.
 *
 * Return: bytes written, -EFBIG at or past the end of the view, -EIO if any
 * byte falls in a gap between a zone's capacity and its po2 boundary (as
 * dm-po2zoned does), or the -errno of p2z_zone_write().
 */
ssize_t p2z_po2_write(struct p2z_zone_table *zt, const void *buf, size_t len,
		      uint64_t ofs, unsigned int flags, uint64_t *zidx);

#endif /* PO2ZFS_PO2_H */
