/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The zbd backend's pure parts, apart for the tests and the fuzz targets:
 * checking a libzbd zone report, reading the queue's transfer limit and
 * its write cache mode.
 */
#ifndef PO2ZFS_DEV_ZBD_H
#define PO2ZFS_DEV_ZBD_H

#include <stdbool.h>
#include <stdint.h>

#include <libzbd/zbd.h>

#include "po2zfs/dev.h"

/* dev_zbd.c */

/**
 * p2z_zbd_report_parse() - check and convert a libzbd zone report
 * @info: the device's geometry (lba_bytes, zone_lba, nr_zones)
 * @name: device name, for messages
 * @zidx: index of the first zone asked for
 * @nr: number of zones asked for (the size of @zones and @zi)
 * @zones: the report
 * @got: number of zones reported
 * @zi: gets @got zones
 *
 * Nothing is taken on trust: a zone must start where zone @zidx + i does,
 * have the device's zone size (the last zone may be smaller), a capacity
 * within it, a known type and condition, and a write pointer within its
 * capacity.
 *
 * Return: @got (at least 1), or -EIO for a report that does not fit the
 * device (no zone at all included: @nr is never 0).
 */
int p2z_zbd_report_parse(const struct p2z_dev_info *info, const char *name,
			 uint64_t zidx, unsigned int nr,
			 const struct zbd_zone *zones, unsigned int got,
			 struct p2z_zone_info *zi);

/**
 * p2z_zbd_max_xfer() - largest read or write to issue to a block device
 * @sysfs: where sysfs is mounted ("/sys"; tests pass a tree of their own)
 * @name: the kernel's name of the device
 * @lba_bytes: logical block size, not 0
 *
 * The queue's max_sectors_kb, at most 4 MiB, rounded down to @lba_bytes;
 * 4 MiB if the attribute is missing or no number.
 *
 * Return: bytes, a non-zero multiple of @lba_bytes.
 */
uint32_t p2z_zbd_max_xfer(const char *sysfs, const char *name,
			  uint32_t lba_bytes);

/**
 * p2z_zbd_volatile_cache() - whether a block device has a volatile cache
 * @sysfs: where sysfs is mounted ("/sys"; tests pass a tree of their own)
 * @name: the kernel's name of the device
 *
 * From the queue's write_cache: "write back" (the kernel flushes it and
 * sends FUA writes) is volatile, "write through" is not. Anything else,
 * or a missing attribute, is taken as volatile (and logged): flushes then
 * go to the device, which is never wrong.
 *
 * Return: true for a volatile write cache.
 */
bool p2z_zbd_volatile_cache(const char *sysfs, const char *name);

#endif /* PO2ZFS_DEV_ZBD_H */
