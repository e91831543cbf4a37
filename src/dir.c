// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The fixed tree of names: the root holds seq/, cnv/ (only if the device
 * has conventional zones) and po2; seq/N and cnv/N name the zones of each
 * type by their rank, in decimal without padding. Inode numbers derive from
 * the zone index (see fs.h); the numbers shown (st_ino, d_ino) are
 * zonefs's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "po2zfs/fs.h"

/* A decimal file name without sign, spaces or leading zeros. */
static int p2z_dir_parse_index(const char *name, uint64_t nr, uint64_t *idx)
{
	uint64_t v = 0;
	const char *p;

	if (!*name || (name[0] == '0' && name[1]))
		return -ENOENT;
	for (p = name; *p; p++) {
		if (*p < '0' || *p > '9')
			return -ENOENT;
		if (v > (UINT64_MAX - 9) / 10)
			return -ENOENT;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v >= nr)
		return -ENOENT;
	*idx = v;
	return 0;
}

uint64_t p2z_dir_nr_files(const struct p2z_zone_table *zt, uint64_t dir_ino)
{
	switch (dir_ino) {
	case P2Z_FS_INO_ROOT:
		return zt->nr_cnv ? 3 : 2;
	case P2Z_FS_INO_SEQ:
		return zt->nr_seq;
	case P2Z_FS_INO_CNV:
		return zt->nr_cnv;
	default:
		return 0;
	}
}

uint64_t p2z_dir_nr_inodes(const struct p2z_zone_table *zt)
{
	/* zonefs: the zone files, plus one per zone-type directory. */
	return zt->nr_seq + 1 + (zt->nr_cnv ? zt->nr_cnv + 1 : 0);
}

uint64_t p2z_dir_st_ino(const struct p2z_zone_table *zt, uint64_t ino)
{
	uint64_t nr = zt->geom.nr_zones;

	switch (ino) {
	case P2Z_FS_INO_ROOT:
		return nr;
	case P2Z_FS_INO_CNV:
		return nr + 1;
	case P2Z_FS_INO_SEQ:
		return nr + 2;
	case P2Z_FS_INO_PO2:
		return nr + 3;
	default:
		/*
		 * Zone 0 is a file here (zonefs keeps its superblock there),
		 * and 0 is no inode number: glibc before 2.37 drops directory
		 * entries whose d_ino is 0, which hid the file from ls.
		 */
		return ino > P2Z_FS_INO_ZONE0 ? ino - P2Z_FS_INO_ZONE0 : nr + 4;
	}
}

int p2z_dir_lookup(const struct p2z_zone_table *zt, uint64_t dir_ino,
		   const char *name, uint64_t *ino)
{
	uint64_t idx;
	int ret;

	switch (dir_ino) {
	case P2Z_FS_INO_ROOT:
		if (!strcmp(name, "seq"))
			*ino = P2Z_FS_INO_SEQ;
		else if (!strcmp(name, "cnv") && zt->nr_cnv)
			*ino = P2Z_FS_INO_CNV;
		else if (!strcmp(name, "po2"))
			*ino = P2Z_FS_INO_PO2;
		else
			return -ENOENT;
		return 0;
	case P2Z_FS_INO_SEQ:
		ret = p2z_dir_parse_index(name, zt->nr_seq, &idx);
		if (!ret)
			*ino = P2Z_FS_INO_ZONE0 + zt->seq_zidx[idx];
		return ret;
	case P2Z_FS_INO_CNV:
		ret = p2z_dir_parse_index(name, zt->nr_cnv, &idx);
		if (!ret)
			*ino = P2Z_FS_INO_ZONE0 + zt->cnv_zidx[idx];
		return ret;
	default:
		return -ENOTDIR;
	}
}

int p2z_dir_entry(const struct p2z_zone_table *zt, uint64_t dir_ino, uint64_t i,
		  char *name, size_t name_len, uint64_t *ino, bool *is_dir)
{
	static const char *const root_names[] = { "seq", "cnv", "po2" };
	static const uint64_t root_inos[] = { P2Z_FS_INO_SEQ, P2Z_FS_INO_CNV,
					      P2Z_FS_INO_PO2 };

	*is_dir = true;
	if (i < 2) {
		snprintf(name, name_len, "%s", i ? ".." : ".");
		*ino = i ? P2Z_FS_INO_ROOT : dir_ino;
		return 0;
	}
	i -= 2;
	if (i >= p2z_dir_nr_files(zt, dir_ino))
		return -ENOENT;
	switch (dir_ino) {
	case P2Z_FS_INO_ROOT:
		if (!zt->nr_cnv && i)
			i++; /* skip cnv */
		snprintf(name, name_len, "%s", root_names[i]);
		*ino = root_inos[i];
		*is_dir = root_inos[i] != P2Z_FS_INO_PO2;
		return 0;
	case P2Z_FS_INO_SEQ:
		*ino = P2Z_FS_INO_ZONE0 + zt->seq_zidx[i];
		break;
	default:
		*ino = P2Z_FS_INO_ZONE0 + zt->cnv_zidx[i];
		break;
	}
	snprintf(name, name_len, "%" PRIu64, i);
	*is_dir = false;
	return 0;
}
