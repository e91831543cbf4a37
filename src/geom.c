// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Zone geometry: native (any zone size) <-> power-of-2 view addressing.
 *
 * The native zone size may be any number of LBAs, so native addresses are
 * split with division and rebuilt with multiplication. Only the po2 zone size
 * and the LBA size are powers of two: those alone are shifted and masked.
 * p2z_geom_init() proves that both address spaces fit in 63 bits in bytes
 * (a signed loff_t), so every in-range computation below stays in range; out-of-contract zone
 * indexes saturate at UINT64_MAX instead of wrapping into a valid address.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "po2zfs/geom.h"

#define P2Z_GEOM_MIN_LBA_BYTES 512U
#define P2Z_GEOM_MAX_LBA_BYTES 65536U

static bool p2z_is_po2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* log2 of the smallest power of two >= @v, for 1 <= @v <= 2^63. */
static unsigned int p2z_order(uint64_t v)
{
	if (v <= 1)
		return 0;
	return 64 - (unsigned int)__builtin_clzll(v - 1);
}

/* Whether @nr_zones zones of @zone_lba LBAs of @lba_bytes fit in 64 bits. */
static bool p2z_geom_fits(uint64_t zone_lba, uint64_t nr_zones,
			  uint32_t lba_bytes)
{
	uint64_t lba, bytes;

	if (__builtin_mul_overflow(zone_lba, nr_zones, &lba))
		return false;
	return !__builtin_mul_overflow(lba, (uint64_t)lba_bytes, &bytes);
}

int p2z_geom_init(struct p2z_geom *g, uint32_t lba_bytes, uint64_t zone_lba,
		  uint64_t nr_zones)
{
	unsigned int po2_shift;

	if (!p2z_is_po2(lba_bytes) || lba_bytes < P2Z_GEOM_MIN_LBA_BYTES ||
	    lba_bytes > P2Z_GEOM_MAX_LBA_BYTES)
		return -EINVAL;
	if (!zone_lba || !nr_zones)
		return -EINVAL;
	/* Above 2^63 the next power of two is 2^64: not a uint64_t. */
	if (zone_lba > UINT64_C(1) << 63)
		return -EOVERFLOW;
	po2_shift = p2z_order(zone_lba);
	if (!p2z_geom_fits(zone_lba, nr_zones, lba_bytes) ||
	    !p2z_geom_fits(UINT64_C(1) << po2_shift, nr_zones, lba_bytes))
		return -EOVERFLOW;
	/*
	 * Files and block devices are sized by a signed 64-bit loff_t: a po2
	 * view of 2^63 bytes or more would show a negative size. Both views
	 * fit then, the native one being the smaller.
	 */
	if ((nr_zones << po2_shift) * lba_bytes > (uint64_t)INT64_MAX)
		return -EFBIG;

	g->lba_bytes = lba_bytes;
	g->lba_shift = (unsigned int)__builtin_ctz(lba_bytes);
	g->zone_lba = zone_lba;
	g->nr_zones = nr_zones;
	g->po2_zone_lba = UINT64_C(1) << po2_shift;
	g->po2_shift = po2_shift;
	return 0;
}

const char *p2z_geom_strerror(int err)
{
	switch (err) {
	case -EINVAL:
		return "invalid LBA size, zone size or number of zones";
	case -EOVERFLOW:
		return "the device's size in bytes does not fit in 64 bits";
	case -EFBIG:
		return "the po2 view (zones x po2 zone size) is 2^63 bytes or more, more than a file can hold";
	default:
		return "unknown error";
	}
}

uint64_t p2z_geom_zone_start(const struct p2z_geom *g, uint64_t zidx)
{
	uint64_t lba;

	if (__builtin_mul_overflow(zidx, g->zone_lba, &lba))
		return UINT64_MAX;
	return lba;
}

uint64_t p2z_geom_po2_zone_start(const struct p2z_geom *g, uint64_t zidx)
{
	if (zidx > UINT64_MAX >> g->po2_shift)
		return UINT64_MAX;
	return zidx << g->po2_shift;
}

int p2z_geom_native_to_po2(const struct p2z_geom *g, uint64_t lba,
			   uint64_t *po2_lba)
{
	uint64_t zidx = lba / g->zone_lba;

	if (zidx >= g->nr_zones)
		return -ERANGE;
	/* In range: init checked that the po2 view fits in 64 bits. */
	*po2_lba = (zidx << g->po2_shift) + (lba - zidx * g->zone_lba);
	return 0;
}

uint64_t p2z_geom_po2_bytes(const struct p2z_geom *g)
{
	return g->nr_zones << (g->po2_shift + g->lba_shift);
}

int p2z_geom_po2_zone_of_byte(const struct p2z_geom *g, uint64_t po2_ofs,
			      uint64_t *zidx)
{
	if (po2_ofs >= p2z_geom_po2_bytes(g))
		return -ERANGE;
	*zidx = po2_ofs >> (g->po2_shift + g->lba_shift);
	return 0;
}

int p2z_geom_po2_piece(const struct p2z_geom *g, uint64_t po2_ofs, uint64_t len,
		       uint64_t cap_lba, struct p2z_geom_piece *pc)
{
	unsigned int zone_shift = g->po2_shift + g->lba_shift;
	uint64_t zone_bytes = UINT64_C(1) << zone_shift;
	uint64_t cap_bytes, zone_ofs, end;

	if (!len || cap_lba > g->zone_lba)
		return -EINVAL;
	if (po2_ofs >= p2z_geom_po2_bytes(g))
		return -ERANGE;

	/* cap_lba <= zone_lba: fits, like the whole zone does. */
	cap_bytes = cap_lba << g->lba_shift;
	zone_ofs = po2_ofs & (zone_bytes - 1);
	/*
	 * A piece ends at the capacity (data) or at the po2 zone end (gap);
	 * the last zone's end is the end of the view, which cuts the range.
	 */
	end = zone_ofs < cap_bytes ? cap_bytes : zone_bytes;

	pc->zidx = po2_ofs >> zone_shift;
	pc->zone_ofs = zone_ofs;
	pc->len = len < end - zone_ofs ? len : end - zone_ofs;
	pc->gap = zone_ofs >= cap_bytes;
	return 0;
}
