// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The po2 view: the whole device with every zone's address space rounded
 * up to the next power of two, as dm-po2zoned showed it. Zone i starts at
 * i x po2_zone_size; its data reads back up to its file size, followed by
 * zeros up to the next po2 boundary. The zeros never come from the device
 * (real drives may fail reads past a write pointer).
 */
#include <errno.h>
#include <string.h>

#include "po2zfs/po2.h"

int p2z_po2_piece(struct p2z_zone_table *zt, uint64_t ofs, size_t len,
		  uint64_t *zidx, struct p2z_geom_piece *pc)
{
	const struct p2z_geom *g = &zt->geom;
	struct p2z_zone_state zs;
	int ret;

	ret = p2z_geom_po2_zone_of_byte(g, ofs, zidx);
	if (!ret)
		ret = p2z_zone_get_state(zt, *zidx, false, &zs);
	if (!ret)
		ret = p2z_geom_po2_piece(g, ofs, len,
					 zs.cap_bytes / g->lba_bytes, pc);
	return ret ? -EIO : 0;
}

ssize_t p2z_po2_read(struct p2z_zone_table *zt, void *buf, size_t len,
		     uint64_t ofs, uint64_t *err_zidx)
{
	uint64_t end = p2z_geom_po2_bytes(&zt->geom);
	char *p = buf;
	size_t done = 0;

	if (ofs >= end)
		return 0;
	if (len > end - ofs)
		len = end - ofs;
	while (done < len) {
		struct p2z_geom_piece pc;
		uint64_t zidx;
		ssize_t n = 0;

		if (p2z_po2_piece(zt, ofs + done, len - done, &zidx, &pc))
			return -EIO;
		if (!pc.gap) {
			n = p2z_zone_read(zt, zidx, p + done, pc.len,
					  pc.zone_ofs);
			/* An offline zone cannot be read, in any view. */
			if (n < 0) {
				*err_zidx = zidx;
				return n == -EPERM ? -EIO : n;
			}
		}
		memset(p + done + n, 0, pc.len - (uint64_t)n);
		done += pc.len;
	}
	return (ssize_t)len;
}

ssize_t p2z_po2_write(struct p2z_zone_table *zt, const void *buf, size_t len,
		      uint64_t ofs, unsigned int flags, uint64_t *zidxp)
{
	uint64_t end = p2z_geom_po2_bytes(&zt->geom);
	struct p2z_geom_piece first = { 0 };
	uint64_t first_zidx = 0;
	size_t done = 0;

	if (ofs >= end)
		return -EFBIG;
	if (len > end - ofs)
		len = end - ofs;
	/* Any byte in a gap fails the whole write, as dm-po2zoned does. */
	while (done < len) {
		struct p2z_geom_piece pc;
		uint64_t zidx;

		if (p2z_po2_piece(zt, ofs + done, len - done, &zidx, &pc) ||
		    pc.gap)
			return -EIO;
		if (!done) {
			first = pc;
			first_zidx = zidx;
		}
		done += pc.len;
	}
	if (!len)
		return 0;
	*zidxp = first_zidx;
	/* A write crossing into the next zone is cut short, as at capacity. */
	return p2z_zone_write(zt, first_zidx, buf, first.len, first.zone_ofs,
			      false, flags);
}
