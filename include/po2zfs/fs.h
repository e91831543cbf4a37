/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The filesystem: FUSE lowlevel handlers over a zone table (fs.c for the
 * namespace, fs_file.c for the files, sharing src/fs_priv.h), the tree of
 * names (dir.c), the po2 view (po2.c) and the extended attributes
 * (xattr.c). Names, inode numbers and errno rules live here; zone state and
 * I/O rules live in the zone module.
 *
 * FUSE node ids (P2Z_FS_INO_*, the "ino" of the handlers) are stable across
 * mounts of the same device:
 *   1		the root directory (FUSE_ROOT_ID)
 *   2		seq/
 *   3		cnv/ (exists only if the device has conventional zones)
 *   4		po2
 *   16 + zidx	the file of zone zidx (its index on the device, whatever
 *		its type; seq/N and cnv/N name it by its rank in its type)
 * The inode numbers users see (st_ino, d_ino) are another thing, chosen by
 * the daemon for every node, root included (the kernel shows attr.ino):
 * zonefs's, with nr = the number of zones of the device,
 *   zidx	the file of zone zidx, zidx >= 1
 *   nr		the root directory
 *   nr + 1	cnv/
 *   nr + 2	seq/
 *   nr + 3	po2 (zonefs has none)
 *   nr + 4	the file of zone 0 (zonefs keeps its superblock in zone 0;
 *		0 is no inode number)
 * See p2z_dir_st_ino().
 */
#ifndef PO2ZFS_FS_H
#define PO2ZFS_FS_H

#include <limits.h>
#include <stdbool.h>
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

/*
 * Background requests (the pieces of asynchronous direct I/O, readahead)
 * the kernel keeps at the daemon at most: the depth an io_uring or libaio
 * submitter gets. Fewer than P2Z_FS_MAX_THREADS, so that writes held by
 * the zone write sequencer never take every worker thread: one is always
 * left to receive the write they wait for.
 */
#define P2Z_FS_MAX_BACKGROUND 24U
/* Worker threads of the session loop (src/fs_loop.c). */
#define P2Z_FS_MAX_THREADS 32U

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
 * Return: 0, -ENOMEM, or -EINVAL if the page size is not a power of two.
 */
int p2z_fs_alloc(struct p2z_zone_table *zt, const struct p2z_fs_opts *opts,
		 struct p2z_fs **fsp);

/**
 * p2z_fs_set_session() - the session the filesystem serves
 * @fs: filesystem
 * @se: its FUSE session, or NULL
 *
 * With a session the daemon notifies the kernel of every change it cannot
 * see (po2 writes, errors= policy), so the kernel may cache zone file
 * attributes and pages; without one, zone file attributes are not cached.
 * Set it before the session serves requests.
 */
struct fuse_session;
void p2z_fs_set_session(struct p2z_fs *fs, struct fuse_session *se);

/**
 * p2z_fs_serve_init() - serve the session's first request, set read-ahead
 * @fs: filesystem, its session set (p2z_fs_set_session()) and mounted
 * @mountpoint: the absolute mount point
 *
 * The first request of a session is INIT (the kernel sends nothing else
 * before the reply). Served here, before the worker threads start, so that
 * its reply has set the mount's limits when the mount's read-ahead is
 * raised to P2Z_FS_MAX_WRITE (bdi read_ahead_kb; needs root, else the
 * kernel's default stays, logged). A signal or an unmount before INIT
 * leaves the session exited, and the session loop then ends at once.
 */
void p2z_fs_serve_init(struct p2z_fs *fs, const char *mountpoint);

/**
 * p2z_fs_free() - free a filesystem set up by p2z_fs_alloc()
 * @fs: filesystem, may be NULL
 */
void p2z_fs_free(struct p2z_fs *fs);

/**
 * p2z_fs_loop() - serve the session until it exits
 * @fs: filesystem, its session set, mounted and its INIT served
 *	(p2z_fs_serve_init())
 *
 * P2Z_FS_MAX_THREADS worker threads, each with its own device queue; see
 * src/fs_loop.c. Returns once a signal (fuse_set_signal_handlers()) or the
 * unmount ended the session and every worker completed what it had in
 * flight.
 *
 * Return: 0, or -errno if the workers could not run.
 */
int p2z_fs_loop(struct p2z_fs *fs);

/* The handlers, for fuse_session_new() with a struct p2z_fs as userdata. */
extern const struct fuse_lowlevel_ops p2z_fs_ops;

/* dir.c: the fixed tree of names */

/**
 * p2z_dir_nr_files() - number of files in a directory, "." and ".." aside
 * @zt: zone table
 * @dir_ino: P2Z_FS_INO_ROOT, P2Z_FS_INO_SEQ or P2Z_FS_INO_CNV
 *
 * Return: the count (0 for anything else).
 */
uint64_t p2z_dir_nr_files(const struct p2z_zone_table *zt, uint64_t dir_ino);

/**
 * p2z_dir_nr_inodes() - statfs f_files, counted as zonefs counts it
 * @zt: zone table
 *
 * Return: the zone files plus one per zone-type directory (seq/, and cnv/
 * when the device has conventional zones); the root and po2 are not counted.
 */
uint64_t p2z_dir_nr_inodes(const struct p2z_zone_table *zt);

/**
 * p2z_dir_st_ino() - the inode number shown for a FUSE node id (st_ino)
 * @zt: zone table
 * @ino: node id, P2Z_FS_INO_*, or P2Z_FS_INO_ZONE0 + zidx
 *
 * Return: the number zonefs gives the same file.
 */
uint64_t p2z_dir_st_ino(const struct p2z_zone_table *zt, uint64_t ino);

/**
 * p2z_dir_lookup() - inode number of a name in a directory
 * @zt: zone table
 * @dir_ino: the directory's inode number
 * @name: the name
 * @ino: result
 *
 * Return: 0, -ENOENT (no such name), -ENOTDIR (@dir_ino is no directory).
 */
int p2z_dir_lookup(const struct p2z_zone_table *zt, uint64_t dir_ino,
		   const char *name, uint64_t *ino);

/**
 * p2z_dir_entry() - entry @i of a directory: ".", "..", then its files
 * @zt: zone table
 * @dir_ino: the directory's inode number
 * @i: entry index
 * @name: result, the name (cut at @name_len - 1 bytes)
 * @name_len: size of @name
 * @ino: result, the entry's inode number
 * @is_dir: result, whether the entry is a directory
 *
 * Return: 0, or -ENOENT past the last entry.
 */
int p2z_dir_entry(const struct p2z_zone_table *zt, uint64_t dir_ino, uint64_t i,
		  char *name, size_t name_len, uint64_t *ino, bool *is_dir);

/* xattr.c: extended attributes */

/* Whose attributes: none, the device's (root directory), a zone's. */
enum p2z_xattr_owner {
	P2Z_XATTR_NONE,
	P2Z_XATTR_DEV,
	P2Z_XATTR_ZONE,
};

/* Room for any value (user.dev.path is the longest). */
#define P2Z_XATTR_VALUE_MAX (PATH_MAX + 32)
/*
 * The root's request statistics (see stats.h): read for the counters,
 * set to "0" to zero them. Made by fs.c, which owns the filesystem's
 * counters, and listed with the device's other attributes.
 */
#define P2Z_XATTR_STATS "user.dev.stats"

/* Room for the list of names of any owner. */
#define P2Z_XATTR_LIST_MAX 512

/**
 * p2z_xattr_is_live() - whether reading an attribute asks the device
 * @owner: whose attribute
 * @name: its name
 *
 * user.zone.cond is re-read from the device (the device may close
 * implicitly open zones on its own); the others come from the zone table.
 *
 * Return: true for an attribute read from the device.
 */
bool p2z_xattr_is_live(enum p2z_xattr_owner owner, const char *name);

/**
 * p2z_xattr_get() - value of an extended attribute
 * @zt: zone table
 * @owner: whose attribute
 * @zidx: the zone, for P2Z_XATTR_ZONE
 * @name: attribute name
 * @val: result, P2Z_XATTR_VALUE_MAX bytes; not NUL-terminated in the count
 *
 * Return: the value's length, -ENODATA (no such attribute on @owner),
 * -ERANGE (value too long), or -EINVAL (bad @zidx).
 */
ssize_t p2z_xattr_get(struct p2z_zone_table *zt, enum p2z_xattr_owner owner,
		      uint64_t zidx, const char *name, char *val);

/**
 * p2z_xattr_list() - names of the extended attributes of an owner
 * @owner: whose attributes
 * @list: result, P2Z_XATTR_LIST_MAX bytes: NUL-terminated names, one after
 *	  the other
 *
 * Return: the length of the list (0 for P2Z_XATTR_NONE).
 */
ssize_t p2z_xattr_list(enum p2z_xattr_owner owner, char *list);

#endif /* PO2ZFS_FS_H */
