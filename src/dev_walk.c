// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The one walk over the zones of a device: reports them a batch at a time
 * and hands each to a callback, deciding once what a report that falls
 * short means. See p2z_dev_zone_walk() in po2zfs/dev.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "po2zfs/dev.h"
#include "po2zfs/log.h"

/*
 * One batch: the entries the backend filled (at least one, at most @nr), or
 * -errno, logged. A report of none before the end of the range would leave
 * the walk where it is for ever: -EIO.
 */
static int p2z_dev_walk_report(struct p2z_dev *dev, uint64_t zidx,
			       unsigned int nr, struct p2z_zone_info *zi)
{
	int n = p2z_dev_report_zones(dev, zidx, nr, zi);

	if (n < 0) {
		p2z_log(LOG_ERR, "%s: reporting zones from %" PRIu64 ": %s",
			dev->path, zidx, strerror(-n));
		return n;
	}
	if (!n || (unsigned int)n > nr) {
		p2z_log(LOG_ERR,
			"%s: reporting zones from %" PRIu64
			": the device reported %d of %u zones",
			dev->path, zidx, n, nr);
		return -EIO;
	}
	return n;
}

int p2z_dev_zone_walk(struct p2z_dev *dev, uint64_t from, uint64_t nr,
		      p2z_dev_zone_fn fn, void *arg)
{
	struct p2z_zone_info zi[P2Z_DEV_WALK_BATCH];
	uint64_t zidx = from, end;
	int n, i, ret;

	if (from > dev->info.nr_zones || nr > dev->info.nr_zones - from)
		return -EINVAL;
	end = from + nr;
	while (zidx < end) {
		n = p2z_dev_walk_report(dev, zidx,
					end - zidx < P2Z_DEV_WALK_BATCH ?
						(unsigned int)(end - zidx) :
						P2Z_DEV_WALK_BATCH,
					zi);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++, zidx++) {
			ret = fn(&zi[i], zidx, arg);
			if (ret)
				return ret;
		}
	}
	return 0;
}
