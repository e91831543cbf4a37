/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The nvme backend's pure part, apart for the tests and the fuzz targets:
 * checking a Zone Management Receive report.
 */
#ifndef PO2ZFS_DEV_NVME_H
#define PO2ZFS_DEV_NVME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libnvme.h>

#include "po2zfs/dev.h"

/* dev_nvme.c */

/**
 * p2z_nvme_report_parse() - check and convert an NVMe zone report
 * @info: the namespace's geometry (zone_lba, nr_zones)
 * @name: device name, for messages
 * @zidx: index of the first zone asked for
 * @nr: number of zones asked for (the size of @zi)
 * @rep: the report, as the device returned it (little endian)
 * @len: bytes of @rep that the device filled
 * @zi: gets the zones reported
 *
 * Nothing is taken on trust: the count must fit both @nr and @len, and
 * each descriptor must be a sequential-write-required zone starting where
 * zone @zidx + i does, with a capacity within the zone size, a known state
 * and a write pointer within its capacity.
 *
 * Return: the number of zones reported (at least 1), or -EIO.
 */
int p2z_nvme_report_parse(const struct p2z_dev_info *info, const char *name,
			  uint64_t zidx, unsigned int nr,
			  const struct nvme_zone_report *rep, size_t len,
			  struct p2z_zone_info *zi);

/**
 * p2z_nvme_append_fits() - whether an append landed within its zone
 * @start: the zone's first LBA
 * @cap: the zone's capacity in LBAs
 * @lba: where the device says the append went
 * @nlb: LBAs appended
 *
 * Return: true if all @nlb LBAs from @lba lie within @start + @cap.
 */
bool p2z_nvme_append_fits(uint64_t start, uint64_t cap, uint64_t lba,
			  uint64_t nlb);

#endif /* PO2ZFS_DEV_NVME_H */
