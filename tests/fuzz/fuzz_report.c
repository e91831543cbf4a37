// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Zone report parsers of the nvme and zbd backends, fed the report of a
 * fake device. Input: a 12-byte geometry, then the report.
 *   [0]     parser: even nvme, odd zbd
 *   [1]     LBA size: 512 << ([1] & 3)
 *   [2..5]  zone size in LBAs (le32, not 0)
 *   [6..7]  number of zones (le16, not 0)
 *   [8..9]  first zone asked (le16, modulo the number of zones)
 *   [10]    zones asked (not 0; cut to the zones left, as the backends do)
 *   [11]    zbd: zones reported (libzbd's count, not trusted)
 *   [12..]  nvme: the Zone Management Receive buffer, its length as given;
 *           zbd: struct zbd_zone entries, 64 bytes each (the array holds
 *           as many as asked, at most those given)
 * A report that is accepted must describe exactly the zones asked for.
 */
#include <errno.h>
#include <string.h>

#include "po2zfs/dev.h"
#ifdef P2Z_HAVE_NVME
#include "po2zfs/dev_nvme.h"
#endif
#ifdef P2Z_HAVE_ZBD
#include "po2zfs/dev_zbd.h"
#endif

#include "fuzz_common.h"

#define FUZZ_HDR 12

static uint32_t fuzz_le(const uint8_t *p, int n)
{
	uint32_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static void fuzz_check_zones(const struct p2z_dev_info *info, uint64_t zidx,
			     unsigned int nr, int ret,
			     const struct p2z_zone_info *zi)
{
	int i;

	P2Z_FUZZ_ASSERT(ret == -EIO || (ret > 0 && (unsigned int)ret <= nr));
	for (i = 0; i < ret; i++) {
		const struct p2z_zone_info *z = &zi[i];

		P2Z_FUZZ_ASSERT(z->start_lba == (zidx + i) * info->zone_lba);
		P2Z_FUZZ_ASSERT(z->cap_lba <= info->zone_lba);
		P2Z_FUZZ_ASSERT(z->wp_lba >= z->start_lba &&
				z->wp_lba - z->start_lba <= z->cap_lba);
		P2Z_FUZZ_ASSERT(z->type == P2Z_ZONE_TYPE_CNV ||
				z->type == P2Z_ZONE_TYPE_SEQ);
		P2Z_FUZZ_ASSERT(z->type == P2Z_ZONE_TYPE_SEQ ||
				z->wp_lba == z->start_lba);
		switch (z->cond) {
		case P2Z_ZONE_COND_NOT_WP:
			P2Z_FUZZ_ASSERT(z->type == P2Z_ZONE_TYPE_CNV);
			break;
		case P2Z_ZONE_COND_EMPTY:
		case P2Z_ZONE_COND_IMP_OPEN:
		case P2Z_ZONE_COND_EXP_OPEN:
		case P2Z_ZONE_COND_CLOSED:
		case P2Z_ZONE_COND_FULL:
			P2Z_FUZZ_ASSERT(z->type == P2Z_ZONE_TYPE_SEQ);
			break;
		case P2Z_ZONE_COND_READONLY:
		case P2Z_ZONE_COND_OFFLINE:
			break;
		default:
			P2Z_FUZZ_ASSERT(!"unknown condition");
		}
	}
}

#ifdef P2Z_HAVE_NVME
static void fuzz_nvme(const struct p2z_dev_info *info, uint64_t zidx,
		      unsigned int nr, const uint8_t *buf, size_t len)
{
	struct p2z_zone_info zi[256];
	void *rep = malloc(len ? len : 1);
	int ret;

	if (!rep)
		return;
	memcpy(rep, buf, len);
	ret = p2z_nvme_report_parse(info, "fuzz", zidx, nr, rep, len, zi);
	fuzz_check_zones(info, zidx, nr, ret, zi);
	free(rep);
}
#endif

#ifdef P2Z_HAVE_ZBD
static void fuzz_zbd(const struct p2z_dev_info *info, uint64_t zidx,
		     unsigned int nr, unsigned int got, const uint8_t *buf,
		     size_t len)
{
	struct p2z_zone_info zi[256];
	struct zbd_zone *zones;
	int ret;

	if (nr > len / sizeof(*zones))
		nr = len / sizeof(*zones);
	if (!nr)
		return;
	zones = malloc(nr * sizeof(*zones));
	if (!zones)
		return;
	memcpy(zones, buf, nr * sizeof(*zones));
	ret = p2z_zbd_report_parse(info, "fuzz", zidx, nr, zones, got, zi);
	fuzz_check_zones(info, zidx, nr, ret, zi);
	free(zones);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct p2z_dev_info info;
	unsigned int nr;
	uint64_t zidx;

	if (size < FUZZ_HDR)
		return 0;
	memset(&info, 0, sizeof(info));
	info.lba_bytes = 512U << (data[1] & 3);
	info.zone_lba = fuzz_le(data + 2, 4);
	info.nr_zones = fuzz_le(data + 6, 2);
	if (!info.zone_lba || !info.nr_zones || !data[10])
		return 0;
	zidx = fuzz_le(data + 8, 2) % info.nr_zones;
	nr = data[10];
	if (nr > info.nr_zones - zidx)
		nr = info.nr_zones - zidx;
	if (!(data[0] & 1)) {
#ifdef P2Z_HAVE_NVME
		fuzz_nvme(&info, zidx, nr, data + FUZZ_HDR, size - FUZZ_HDR);
#endif
	} else {
#ifdef P2Z_HAVE_ZBD
		fuzz_zbd(&info, zidx, nr, data[11], data + FUZZ_HDR,
			 size - FUZZ_HDR);
#endif
	}
	return 0;
}
