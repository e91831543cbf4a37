// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Extended attributes: the read-only user.zone.* values of zone files and
 * the user.dev.* geometry of the root directory, as ASCII decimals or
 * words. Names and values only; fs.c replies to the requests.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "po2zfs/fs.h"

enum p2z_xattr_id {
	P2Z_XA_ZONE_INDEX,
	P2Z_XA_ZONE_START,
	P2Z_XA_ZONE_PO2_START,
	P2Z_XA_ZONE_CAPACITY,
	P2Z_XA_ZONE_SIZE,
	P2Z_XA_ZONE_WP,
	P2Z_XA_ZONE_COND,
	P2Z_XA_ZONE_TYPE,
	P2Z_XA_DEV_BACKEND,
	P2Z_XA_DEV_PATH,
	P2Z_XA_DEV_LBA_SIZE,
	P2Z_XA_DEV_NR_ZONES,
	P2Z_XA_DEV_ZONE_SIZE,
	P2Z_XA_DEV_PO2_ZONE_SIZE,
	P2Z_XA_DEV_MAX_OPEN,
	P2Z_XA_DEV_MAX_ACTIVE,
	P2Z_XA_DEV_MAX_APPEND,
	P2Z_XA_DEV_STATS, /* value made by fs.c */
	P2Z_XA_NR,
};

static const char *const p2z_xattr_names[P2Z_XA_NR] = {
	[P2Z_XA_ZONE_INDEX] = "user.zone.index",
	[P2Z_XA_ZONE_START] = "user.zone.start",
	[P2Z_XA_ZONE_PO2_START] = "user.zone.po2_start",
	[P2Z_XA_ZONE_CAPACITY] = "user.zone.capacity",
	[P2Z_XA_ZONE_SIZE] = "user.zone.size",
	[P2Z_XA_ZONE_WP] = "user.zone.wp",
	[P2Z_XA_ZONE_COND] = "user.zone.cond",
	[P2Z_XA_ZONE_TYPE] = "user.zone.type",
	[P2Z_XA_DEV_BACKEND] = "user.dev.backend",
	[P2Z_XA_DEV_PATH] = "user.dev.path",
	[P2Z_XA_DEV_LBA_SIZE] = "user.dev.lba_size",
	[P2Z_XA_DEV_NR_ZONES] = "user.dev.nr_zones",
	[P2Z_XA_DEV_ZONE_SIZE] = "user.dev.zone_size",
	[P2Z_XA_DEV_PO2_ZONE_SIZE] = "user.dev.po2_zone_size",
	[P2Z_XA_DEV_MAX_OPEN] = "user.dev.max_open",
	[P2Z_XA_DEV_MAX_ACTIVE] = "user.dev.max_active",
	[P2Z_XA_DEV_MAX_APPEND] = "user.dev.max_append",
	[P2Z_XA_DEV_STATS] = P2Z_XATTR_STATS,
};

/* The xattrs of an owner: [*first, *last). */
static void p2z_xattr_range(enum p2z_xattr_owner owner, int *first, int *last)
{
	*first = 0;
	*last = 0;
	if (owner == P2Z_XATTR_ZONE) {
		*first = P2Z_XA_ZONE_INDEX;
		*last = P2Z_XA_DEV_BACKEND;
	} else if (owner == P2Z_XATTR_DEV) {
		*first = P2Z_XA_DEV_BACKEND;
		*last = P2Z_XA_NR;
	}
}

static ssize_t p2z_xattr_u64(char *val, uint64_t v)
{
	return snprintf(val, P2Z_XATTR_VALUE_MAX, "%" PRIu64, v);
}

static ssize_t p2z_xattr_zone(struct p2z_zone_table *zt, uint64_t zidx, int id,
			      char *val)
{
	const struct p2z_geom *g = &zt->geom;
	struct p2z_zone_state zs;
	int ret;

	/* Only the condition needs the device: it changes on its own. */
	ret = p2z_zone_get_state(zt, zidx, id == P2Z_XA_ZONE_COND, &zs);
	if (ret)
		return ret;
	switch (id) {
	case P2Z_XA_ZONE_INDEX:
		return p2z_xattr_u64(val, zidx);
	case P2Z_XA_ZONE_START:
		return p2z_xattr_u64(val, zs.start_bytes);
	case P2Z_XA_ZONE_PO2_START:
		return p2z_xattr_u64(val, p2z_geom_po2_zone_start(g, zidx) *
						  g->lba_bytes);
	case P2Z_XA_ZONE_CAPACITY:
		return p2z_xattr_u64(val, zs.cap_bytes);
	case P2Z_XA_ZONE_SIZE:
		return p2z_xattr_u64(val, g->zone_lba * g->lba_bytes);
	case P2Z_XA_ZONE_WP:
		return p2z_xattr_u64(val, zs.wp_bytes);
	case P2Z_XA_ZONE_COND:
		return snprintf(val, P2Z_XATTR_VALUE_MAX, "%s",
				p2z_zone_state_cond_name(&zs));
	default:
		return snprintf(val, P2Z_XATTR_VALUE_MAX, "%s",
				zs.type == P2Z_ZONE_TYPE_SEQ ? "seq" : "cnv");
	}
}

static ssize_t p2z_xattr_dev(struct p2z_zone_table *zt, int id, char *val)
{
	const struct p2z_geom *g = &zt->geom;
	struct p2z_zone_dev_facts f;

	p2z_zone_table_dev_facts(zt, &f);
	switch (id) {
	case P2Z_XA_DEV_BACKEND:
		return snprintf(val, P2Z_XATTR_VALUE_MAX, "%s", f.backend);
	case P2Z_XA_DEV_PATH:
		return snprintf(val, P2Z_XATTR_VALUE_MAX, "%s", f.path);
	case P2Z_XA_DEV_LBA_SIZE:
		return p2z_xattr_u64(val, g->lba_bytes);
	case P2Z_XA_DEV_NR_ZONES:
		return p2z_xattr_u64(val, g->nr_zones);
	case P2Z_XA_DEV_ZONE_SIZE:
		return p2z_xattr_u64(val, g->zone_lba * g->lba_bytes);
	case P2Z_XA_DEV_PO2_ZONE_SIZE:
		return p2z_xattr_u64(val, g->po2_zone_lba * g->lba_bytes);
	case P2Z_XA_DEV_MAX_OPEN:
		return p2z_xattr_u64(val, f.max_open);
	case P2Z_XA_DEV_MAX_ACTIVE:
		return p2z_xattr_u64(val, f.max_active);
	default:
		return p2z_xattr_u64(val, f.max_append_bytes);
	}
}

bool p2z_xattr_is_live(enum p2z_xattr_owner owner, const char *name)
{
	return owner == P2Z_XATTR_ZONE &&
	       !strcmp(name, p2z_xattr_names[P2Z_XA_ZONE_COND]);
}

ssize_t p2z_xattr_get(struct p2z_zone_table *zt, enum p2z_xattr_owner owner,
		      uint64_t zidx, const char *name, char *val)
{
	int first, last, id;
	ssize_t len;

	p2z_xattr_range(owner, &first, &last);
	for (id = first; id < last; id++)
		if (!strcmp(name, p2z_xattr_names[id]))
			break;
	if (id == last || id == P2Z_XA_DEV_STATS)
		return -ENODATA;
	if (owner == P2Z_XATTR_ZONE)
		len = p2z_xattr_zone(zt, zidx, id, val);
	else
		len = p2z_xattr_dev(zt, id, val);
	if (len >= P2Z_XATTR_VALUE_MAX)
		return -ERANGE;
	return len;
}

ssize_t p2z_xattr_list(enum p2z_xattr_owner owner, char *list)
{
	int first, last, id;
	size_t pos = 0;

	p2z_xattr_range(owner, &first, &last);
	for (id = first; id < last; id++) {
		size_t len = strlen(p2z_xattr_names[id]) + 1;

		if (pos + len > P2Z_XATTR_LIST_MAX)
			return -ERANGE;
		memcpy(list + pos, p2z_xattr_names[id], len);
		pos += len;
	}
	return (ssize_t)pos;
}
