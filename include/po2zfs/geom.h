/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Zone geometry: pure math between native (possibly non-power-of-2) zone
 * addressing and the power-of-2 (po2) view of the device. No I/O, no
 * allocation, no locks. Native zone sizes are never shifted or masked: only
 * the po2 zone size is.
 */
#ifndef PO2ZFS_GEOM_H
#define PO2ZFS_GEOM_H

#include <stdbool.h>
#include <stdint.h>

/**
 * struct p2z_geom - geometry of a zoned device, set by p2z_geom_init()
 * @lba_bytes: logical block size in bytes, a power of two
 * @lba_shift: log2(@lba_bytes)
 * @zone_lba: native zone size in LBAs, any value >= 1
 * @nr_zones: number of zones
 * @po2_zone_lba: smallest power of two >= @zone_lba
 * @po2_shift: log2(@po2_zone_lba)
 */
struct p2z_geom {
	uint32_t lba_bytes;
	unsigned int lba_shift;
	uint64_t zone_lba;
	uint64_t nr_zones;
	uint64_t po2_zone_lba;
	unsigned int po2_shift;
};

/**
 * struct p2z_geom_piece - one piece of a po2 byte range inside one zone
 * @zidx: zone index
 * @zone_ofs: byte offset of the piece from the start of the zone
 * @len: length of the piece in bytes (> 0)
 * @gap: true if the piece lies in [capacity, po2 zone size) of the zone,
 *	 which reads as zeros and refuses writes
 */
struct p2z_geom_piece {
	uint64_t zidx;
	uint64_t zone_ofs;
	uint64_t len;
	bool gap;
};

/* geom.c */

/**
 * p2z_geom_init() - validate a geometry and compute its po2 view
 * @g: geometry to fill
 * @lba_bytes: logical block size, a power of two from 512 to 65536
 * @zone_lba: native zone size in LBAs, >= 1
 * @nr_zones: number of zones, >= 1
 *
 * Return: 0, -EINVAL for a zero or invalid value, -EOVERFLOW if the native
 * or the po2 address space in bytes does not fit in 64 bits, -EFBIG if the
 * po2 view is 2^63 bytes or more (its size would be a negative loff_t).
 */
int p2z_geom_init(struct p2z_geom *g, uint32_t lba_bytes, uint64_t zone_lba,
		  uint64_t nr_zones);

/**
 * p2z_geom_strerror() - why p2z_geom_init() refused a geometry
 * @err: its negative return value
 *
 * Return: a static one-line reason.
 */
const char *p2z_geom_strerror(int err);

/**
 * p2z_geom_zone_start() - first native LBA of a zone
 * @g: geometry
 * @zidx: zone index, < nr_zones
 *
 * Return: @zidx * zone size in LBAs.
 */
uint64_t p2z_geom_zone_start(const struct p2z_geom *g, uint64_t zidx);

/**
 * p2z_geom_po2_zone_start() - first LBA of a zone in the po2 view
 * @g: geometry
 * @zidx: zone index, < nr_zones
 *
 * Return: @zidx << po2_shift.
 */
uint64_t p2z_geom_po2_zone_start(const struct p2z_geom *g, uint64_t zidx);

/**
 * p2z_geom_native_to_po2() - po2 view LBA of a native LBA
 * @g: geometry
 * @lba: native LBA
 * @po2_lba: result: the zone's po2 start plus @lba's offset in its zone
 *
 * Return: 0, or -ERANGE if @lba is past the last zone.
 */
int p2z_geom_native_to_po2(const struct p2z_geom *g, uint64_t lba,
			   uint64_t *po2_lba);

/**
 * p2z_geom_po2_bytes() - size of the po2 view in bytes
 * @g: geometry
 *
 * Return: nr_zones * po2 zone size * LBA size, at most INT64_MAX (checked
 * by p2z_geom_init()).
 */
uint64_t p2z_geom_po2_bytes(const struct p2z_geom *g);

/**
 * p2z_geom_po2_zone_of_byte() - zone index holding a po2 byte offset
 * @g: geometry
 * @po2_ofs: byte offset in the po2 view
 * @zidx: result
 *
 * Return: 0, or -ERANGE if @po2_ofs is at or past the end of the view.
 */
int p2z_geom_po2_zone_of_byte(const struct p2z_geom *g, uint64_t po2_ofs,
			      uint64_t *zidx);

/**
 * p2z_geom_po2_piece() - first per-zone piece of a po2 byte range
 * @g: geometry
 * @po2_ofs: byte offset in the po2 view, < p2z_geom_po2_bytes()
 * @len: length in bytes, > 0
 * @cap_lba: capacity in LBAs of the zone holding @po2_ofs (get the zone
 *	     with p2z_geom_po2_zone_of_byte())
 * @pc: result: the longest prefix of the range that stays in one zone and
 *	is either all data ([0, capacity)) or all gap ([capacity, po2 size))
 *
 * Callers loop: advance @po2_ofs by @pc->len until @len is consumed. The
 * range is cut at the end of the view.
 *
 * Return: 0, -ERANGE if @po2_ofs is outside the view, -EINVAL if @len is 0
 * or @cap_lba exceeds the zone size.
 */
int p2z_geom_po2_piece(const struct p2z_geom *g, uint64_t po2_ofs, uint64_t len,
		       uint64_t cap_lba, struct p2z_geom_piece *pc);

#endif /* PO2ZFS_GEOM_H */
