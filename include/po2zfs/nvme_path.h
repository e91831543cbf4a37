/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVMe device paths: /dev/ngXnY, or /dev/nvmeXnY (whose node may be missing
 * when the kernel hides the disk of an npo2 ZNS namespace), to the opened
 * generic device of the same namespace. Used by the nvme backend only.
 */
#ifndef PO2ZFS_NVME_PATH_H
#define PO2ZFS_NVME_PATH_H

#include <limits.h>
#include <stdint.h>

/**
 * struct p2z_nvme_path - a namespace found from a user's path
 * @ng: the generic device, opened as @fd
 * @disk: the namespace's disk name in /sys/block (hidden or not), "" if
 *	  none was found
 * @fd: open file descriptor of @ng
 * @nsid: namespace id, from NVME_IOCTL_ID (or the disk's sysfs nsid)
 */
struct p2z_nvme_path {
	char ng[PATH_MAX];
	char disk[NAME_MAX + 1];
	int fd;
	uint32_t nsid;
};

/* nvme_path.c */

/**
 * p2z_nvme_path_probe() - is @path an NVMe namespace
 * @path: /dev/ngXnY (a char device), /dev/nvmeXnY (a block device, or a
 *	  hidden disk: no node but /sys/block/nvmeXnY), or a symlink to one
 *
 * Return: 1 if so, else 0.
 */
int p2z_nvme_path_probe(const char *path);

/**
 * p2z_nvme_path_open() - open the generic device of a namespace
 * @path: as for p2z_nvme_path_probe()
 * @oflags: open(2) flags for the generic device (O_RDONLY or O_RDWR)
 * @np: result; the caller closes np->fd
 *
 * A block name is matched to the generic device under the same controller
 * (or multipath subsystem) whose NVME_IOCTL_ID is the disk's nsid. Prints
 * a one-line reason on failure.
 *
 * Return: 0, or -errno (-ENOENT: no such namespace or no generic device).
 */
int p2z_nvme_path_open(const char *path, int oflags, struct p2z_nvme_path *np);

/**
 * p2z_nvme_path_max_bytes() - largest passthrough transfer the kernel takes
 * @np: an opened namespace
 *
 * From the disk's queue: max_hw_sectors_kb, and max_segments - 1 pages
 * (a buffer that is not page aligned spans one page more). Without a disk
 * in sysfs, the block layer's default of 255 sectors.
 *
 * Return: bytes, not rounded to the LBA size.
 */
uint32_t p2z_nvme_path_max_bytes(const struct p2z_nvme_path *np);

#endif /* PO2ZFS_NVME_PATH_H */
