/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVMe device paths: /dev/ngXnY, or /dev/nvmeXnY (whose node may be missing
 * when the kernel hides the disk of an npo2 ZNS namespace), to the opened
 * generic device of the same namespace. Used by the nvme backend only.
 */
#ifndef PO2ZFS_NVME_PATH_H
#define PO2ZFS_NVME_PATH_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/**
 * struct p2z_nvme_path - a namespace found from a user's path
 * @ng: the generic device, opened as @fd
 * @disk: the namespace's disk name in /sys/block (hidden or not), "" if
 *	  none was found
 * @fd: open file descriptor of @ng
 * @claim_fd: the disk's block device opened O_EXCL by
 *	      p2z_nvme_path_claim(), or -1 (not claimed, or no node)
 * @nsid: namespace id, from NVME_IOCTL_ID (or the disk's sysfs nsid)
 */
struct p2z_nvme_path {
	char ng[PATH_MAX];
	char disk[NAME_MAX + 1];
	int fd;
	int claim_fd;
	uint32_t nsid;
};

/* What p2z_nvme_path_classify() finds a path to be. */
enum p2z_nvme_node {
	P2Z_NVME_NODE_NG = 1, /* a namespace's generic char device */
	P2Z_NVME_NODE_DISK, /* a namespace's block device, or hidden disk */
};

/* nvme_path.c */

/**
 * p2z_nvme_path_classify() - what NVMe device a path names, if any
 * @sysfs: where sysfs is mounted ("/sys"; tests pass a tree of their own)
 * @path: the user's path
 * @name: gets the kernel name, ngXnY or nvmeXnY
 * @size: size of @name
 *
 * A path is what it names: a char or block device node is looked up by its
 * device number in @sysfs/dev/{char,block}, never by its file name, and
 * anything else (a regular file called nvme0n1) is no NVMe device. The
 * one name taken as a name is /dev/nvmeXnY without a node, the hidden
 * disk of an npo2 namespace, when @sysfs/block/nvmeXnY exists.
 *
 * Return: P2Z_NVME_NODE_NG or P2Z_NVME_NODE_DISK, -ENODEV (not an NVMe
 * namespace), -ENOENT (no such path), or another -errno.
 */
int p2z_nvme_path_classify(const char *sysfs, const char *path, char *name,
			   size_t size);

/**
 * p2z_nvme_path_probe() - is @path an NVMe namespace
 * @path: a char device node of a namespace's generic device (ngXnY), a
 *	  block device node of its disk (nvmeXnY), a symlink to one, or
 *	  /dev/nvmeXnY of a hidden disk (no node, /sys/block/nvmeXnY); see
 *	  p2z_nvme_path_classify()
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
 * Return: 0, or -errno (-ENODEV: not an NVMe namespace; -ENOENT: no such
 * namespace or no generic device).
 */
int p2z_nvme_path_open(const char *path, int oflags, struct p2z_nvme_path *np);

/**
 * p2z_nvme_path_claim() - own a namespace for as long as it is open
 * @np: an opened namespace
 *
 * Takes an exclusive flock(2) on the generic device, which another po2zfs
 * takes too, and opens the disk's block device, where it has a node, with
 * O_EXCL: the kernel then refuses to mount it (zonefs, f2fs, btrfs) and
 * po2zfs refuses a disk that is mounted or claimed. A hidden disk (npo2)
 * has no node: the lock is all there is. Prints a one-line reason on
 * failure.
 *
 * Return: 0, -EBUSY (in use), or another -errno.
 */
int p2z_nvme_path_claim(struct p2z_nvme_path *np);

/**
 * p2z_nvme_path_close() - close what p2z_nvme_path_open() and
 * p2z_nvme_path_claim() opened, giving up the claim
 * @np: an opened namespace
 */
void p2z_nvme_path_close(struct p2z_nvme_path *np);

/**
 * p2z_nvme_path_max_bytes() - largest passthrough transfer the kernel takes
 * @sysfs: where sysfs is mounted ("/sys"; tests pass a tree of their own)
 * @np: an opened namespace
 *
 * From the disk's queue: max_hw_sectors_kb, and max_segments - 1 pages
 * (a buffer that is not page aligned spans one page more). Without a disk
 * in sysfs (or a max_hw_sectors_kb of 0, or no number), the block layer's
 * default of 255 sectors.
 *
 * Return: bytes, not rounded to the LBA size, never 0.
 */
uint32_t p2z_nvme_path_max_bytes(const char *sysfs,
				 const struct p2z_nvme_path *np);

/**
 * p2z_nvme_path_dma_mask() - alignment the kernel wants of passthrough data
 * @sysfs: where sysfs is mounted ("/sys"; tests pass a tree of their own)
 * @np: open namespace
 *
 * From the disk's queue/dma_alignment: a buffer whose address has any of
 * these bits set is bounced by the block layer, page by page. NVMe queues
 * say 3 (dwords); the hidden disk of an npo2 namespace, whose limits are
 * never set, keeps the default 511.
 *
 * Return: the mask; 511 when sysfs does not say.
 */
uint32_t p2z_nvme_path_dma_mask(const char *sysfs,
				const struct p2z_nvme_path *np);

#endif /* PO2ZFS_NVME_PATH_H */
