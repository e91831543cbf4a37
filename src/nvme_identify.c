// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The nvme backend's Identify: LBA format, zone size and capacity, zone
 * append and transfer limits, open and active zone limits, the volatile
 * write cache, through libnvme's admin commands on the generic device.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libnvme.h>

#include "po2zfs/log.h"
#include "nvme_priv.h"

/* ---- identify ---- */

/* libnvme returns -1 and errno, or a positive NVMe status. */
static int p2z_nvme_admin_errno(const char *ng, const char *what, int ret)
{
	uint16_t status;

	if (ret < 0) {
		ret = errno ? -errno : -EIO;
		p2z_log(LOG_ERR, "%s: %s: %s", ng, what, strerror(-ret));
		return ret;
	}
	if (!ret)
		return 0;
	status = ret & P2Z_NVME_STATUS_MASK;
	p2z_log(LOG_ERR, "%s: %s: NVMe status 0x%03x", ng, what, status);
	ret = p2z_dev_nvme_status_errno(status);
	return ret ? ret : -EIO;
}

/* 2^@shift units of @unit bytes, saturating at UINT32_MAX. */
static uint32_t p2z_nvme_pow2_units(unsigned int shift, uint32_t unit)
{
	uint64_t v;

	if (shift >= 32)
		return UINT32_MAX;
	v = (uint64_t)unit << shift;
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static uint32_t p2z_nvme_min(uint32_t a, uint64_t b)
{
	return b < a ? (uint32_t)b : a;
}

/* Identify data, one structure at a time. */
union p2z_nvme_id {
	struct nvme_id_ctrl ctrl;
	struct nvme_id_ns ns;
	struct nvme_zns_id_ns zns;
	struct nvme_zns_id_ctrl zctrl;
};

/* LBA size and the index of the LBA format in use; no metadata allowed. */
static int p2z_nvme_id_ns(struct p2z_nvme *nv, const struct p2z_nvme_path *w,
			  union p2z_nvme_id *id, uint64_t *nsze, uint8_t *lbaf)
{
	uint16_t ms;
	uint8_t ds;
	int ret;

	memset(id, 0, sizeof(*id));
	ret = p2z_nvme_admin_errno(w->ng, "identify namespace",
				   nvme_identify_ns(w->fd, w->nsid, &id->ns));
	if (ret)
		return ret;
	*nsze = le64toh(id->ns.nsze);
	nvme_id_ns_flbas_to_lbaf_inuse(id->ns.flbas, lbaf);
	ds = id->ns.lbaf[*lbaf].ds;
	ms = le16toh(id->ns.lbaf[*lbaf].ms);
	if (ms) {
		p2z_log(LOG_ERR,
			"%s: LBA format %u carries %u bytes of metadata: "
			"not supported",
			w->ng, *lbaf, ms);
		return -EOPNOTSUPP;
	}
	if (ds < 9 || ds > 16) {
		p2z_log(LOG_ERR, "%s: unsupported LBA data size 2^%u", w->ng,
			ds);
		return -EOPNOTSUPP;
	}
	nv->dev.info.lba_bytes = 1U << ds;
	return 0;
}

/* Zone size (for the LBA format in use) and the open/active limits. */
static int p2z_nvme_id_zns(struct p2z_nvme *nv, const struct p2z_nvme_path *w,
			   union p2z_nvme_id *id, uint64_t nsze, uint8_t lbaf)
{
	struct p2z_dev_info *info = &nv->dev.info;
	uint64_t zsze;
	uint32_t mor, mar;
	int ret;

	memset(id, 0, sizeof(*id));
	ret = nvme_zns_identify_ns(w->fd, w->nsid, &id->zns);
	if (ret < 0)
		return p2z_nvme_admin_errno(w->ng, "identify ZNS namespace",
					    ret);
	/* An NVM namespace answers Invalid Field (no ZNS data for it). */
	zsze = ret ? 0 : le64toh(id->zns.lbafe[lbaf].zsze);
	if (!zsze) {
		p2z_log(LOG_ERR, "%s: namespace %u is not zoned (ZNS)", w->ng,
			w->nsid);
		return -EMEDIUMTYPE;
	}
	/* MOR and MAR are 0-based; all ones means no limit. */
	mor = le32toh(id->zns.mor);
	mar = le32toh(id->zns.mar);
	info->max_open = mor == UINT32_MAX ? 0 : mor + 1;
	info->max_active = mar == UINT32_MAX ? 0 : mar + 1;
	info->zone_lba = zsze;
	info->nr_zones = nsze / zsze;
	if (!info->nr_zones) {
		p2z_log(LOG_ERR, "%s: namespace smaller than one zone", w->ng);
		return -EINVAL;
	}
	if (nsze % zsze)
		p2z_log(LOG_WARNING,
			"%s: %" PRIu64 " LBAs past the last whole zone ignored",
			w->ng, nsze % zsze);
	nv->nr_lba = info->nr_zones * zsze;
	return 0;
}

/* Transfer and zone append limits: MDTS, ZASL, the kernel's queue. */
static int p2z_nvme_id_limits(struct p2z_nvme *nv,
			      const struct p2z_nvme_path *w,
			      union p2z_nvme_id *id)
{
	struct p2z_dev_info *info = &nv->dev.info;
	uint32_t mdts_bytes, zasl_bytes, max;
	int ret;

	memset(id, 0, sizeof(*id));
	ret = p2z_nvme_admin_errno(w->ng, "identify controller",
				   nvme_identify_ctrl(w->fd, &id->ctrl));
	if (ret)
		return ret;
	/* VWC bit 0: a volatile write cache is present. */
	nv->dev.info.volatile_cache = id->ctrl.vwc & 1;
	/* MDTS 0: no limit beyond the kernel's. */
	mdts_bytes = id->ctrl.mdts ? p2z_nvme_pow2_units(id->ctrl.mdts,
							 P2Z_NVME_MPSMIN) :
				     UINT32_MAX;
	memset(id, 0, sizeof(*id));
	ret = p2z_nvme_admin_errno(w->ng, "identify ZNS controller",
				   nvme_zns_identify_ctrl(w->fd, &id->zctrl));
	if (ret)
		return ret;
	/* ZASL 0: appends as large as MDTS. */
	zasl_bytes = id->zctrl.zasl ? p2z_nvme_pow2_units(id->zctrl.zasl,
							  P2Z_NVME_MPSMIN) :
				      mdts_bytes;

	/*
	 * What the kernel's queue of the namespace takes: an npo2 namespace's
	 * hidden disk never gets its limits set, see p2z_nvme_path_max_bytes().
	 */
	max = p2z_nvme_min(mdts_bytes, p2z_nvme_path_max_bytes("/sys", w));
	max = p2z_nvme_min(max, (uint64_t)P2Z_NVME_MAX_NLB * info->lba_bytes);
	info->max_xfer_bytes = max - max % info->lba_bytes;
	max = p2z_nvme_min(zasl_bytes, info->max_xfer_bytes);
	info->max_append_bytes = max - max % info->lba_bytes;
	if (!info->max_append_bytes) {
		p2z_log(LOG_ERR, "%s: transfer limit below one LBA", w->ng);
		return -EINVAL;
	}
	return 0;
}

int p2z_nvme_identify(struct p2z_nvme *nv, const struct p2z_nvme_path *w)
{
	union p2z_nvme_id *id;
	uint64_t nsze;
	uint8_t lbaf;
	int ret;

	id = aligned_alloc(4096, sizeof(*id));
	if (!id)
		return -ENOMEM;
	ret = p2z_nvme_id_ns(nv, w, id, &nsze, &lbaf);
	if (!ret)
		ret = p2z_nvme_id_zns(nv, w, id, nsze, lbaf);
	if (!ret)
		ret = p2z_nvme_id_limits(nv, w, id);
	free(id);
	return ret;
}
