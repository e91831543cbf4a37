/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The filesystem: FUSE lowlevel handlers over a zone table. Names, inode
 * numbers, errno rules, xattrs and the po2 view live here; zone state and
 * I/O rules live in the zone module.
 *
 * Inode numbers are stable across mounts of the same device:
 *   1		the root directory
 *   2		seq/
 *   3		cnv/ (exists only if the device has conventional zones)
 *   4		po2
 *   16 + zidx	the file of zone zidx (its index on the device, whatever
 *		its type; seq/N and cnv/N name it by its rank in its type)
 */
#ifndef PO2ZFS_FS_H
#define PO2ZFS_FS_H

#include <stdint.h>
#include <sys/types.h>

#include "po2zfs/zone.h"

#define P2Z_FS_INO_ROOT 1
#define P2Z_FS_INO_SEQ 2
#define P2Z_FS_INO_CNV 3
#define P2Z_FS_INO_PO2 4
#define P2Z_FS_INO_ZONE0 16

/* Largest FUSE write the daemon asks the kernel for. */
#define P2Z_FS_MAX_WRITE (1U << 20)

/**
 * struct p2z_fs_opts - ownership and modes
 * @uid: owner of the zone files and of po2
 * @gid: group of the zone files and of po2
 * @perm: permission bits of the zone files and of po2 (<= 0777)
 * @dir_uid: owner of the directories
 * @dir_gid: group of the directories
 */
struct p2z_fs_opts {
	uid_t uid;
	gid_t gid;
	mode_t perm;
	uid_t dir_uid;
	gid_t dir_gid;
};

struct p2z_fs;
struct fuse_lowlevel_ops;

/* fs.c */

/**
 * p2z_fs_alloc() - set up the filesystem over a zone table
 * @zt: zone table; must outlive the filesystem
 * @opts: ownership and modes
 * @fsp: result, the userdata to give fuse_session_new()
 *
 * Return: 0 or -ENOMEM.
 */
int p2z_fs_alloc(struct p2z_zone_table *zt, const struct p2z_fs_opts *opts,
		 struct p2z_fs **fsp);

/**
 * p2z_fs_free() - free a filesystem set up by p2z_fs_alloc()
 * @fs: filesystem, may be NULL
 */
void p2z_fs_free(struct p2z_fs *fs);

/* The handlers, for fuse_session_new() with a struct p2z_fs as userdata. */
extern const struct fuse_lowlevel_ops p2z_fs_ops;

#endif /* PO2ZFS_FS_H */
