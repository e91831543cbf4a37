/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * errors=remount-ro (remount.c, po2zfs only). When the zone table turns
 * read-only while mounted, the mount turns read-only too, as zonefs
 * remounts itself: statvfs(3) then shows ST_RDONLY and the VFS refuses
 * writes with EROFS. The table's hook (p2z_remount_ro()) runs inside a FUSE
 * handler with zone locks held, and resolving the mount point may send
 * requests to this very daemon: the hook only starts a thread, whose
 * requests the worker threads serve. The kernel refuses (EBUSY) while a
 * file of the mount is open for writing, the one whose write failed first
 * of all: the thread retries until the last one is closed or the
 * filesystem is unmounted. Without the privilege to remount, the daemon
 * keeps refusing writes with EROFS itself.
 *
 * Only the mount this daemon made is ever remounted. The path may name
 * something else by then (umount -l and another mount there, a parent
 * renamed and a symlink put in its place), so the mount is identified right
 * after mounting by its mount id and device number (p2z_remount_identify()),
 * and the path is opened and checked against both before the remount,
 * which goes through that descriptor. No descriptor is kept meanwhile: it
 * would pin a lazily unmounted mount, and the daemon would never see its
 * end.
 *
 * Life of one mount: p2z_remount_init(), p2z_remount_identify() once
 * mounted, p2z_remount_arm(true) while serving, p2z_remount_arm(false)
 * when the session loop ends, p2z_remount_join() once the session is gone,
 * p2z_remount_exit().
 */
#ifndef PO2ZFS_REMOUNT_H
#define PO2ZFS_REMOUNT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/**
 * struct p2z_remount - the remount of one mount
 * @mountpoint: the absolute mount point; outlives the structure
 * @lock: guards @armed and @started
 * @cond: signalled when @armed drops
 * @armed: mounted and serving
 * @started: @thread created
 * @thread: the thread that remounts
 * @have_id: @mnt_id and the device are known; set before @armed
 * @mnt_id: mount id of the mount made (statx STATX_MNT_ID)
 * @dev_major: major of the mount's anonymous device
 * @dev_minor: minor of the mount's anonymous device
 */
struct p2z_remount {
	const char *mountpoint;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool armed;
	bool started;
	pthread_t thread;
	bool have_id;
	uint64_t mnt_id;
	uint32_t dev_major;
	uint32_t dev_minor;
};

/**
 * p2z_remount_init() - set up a remount, disarmed and unidentified
 * @rm: the remount
 * @mountpoint: the absolute mount point; must outlive @rm
 *
 * Return: 0 or -errno (nothing to undo then).
 */
int p2z_remount_init(struct p2z_remount *rm, const char *mountpoint);

/**
 * p2z_remount_exit() - free what p2z_remount_init() took
 * @rm: the remount, joined (p2z_remount_join()) or never armed
 */
void p2z_remount_exit(struct p2z_remount *rm);

/**
 * p2z_remount_identify() - remember which mount is ours
 * @rm: the remount
 *
 * Right after mounting, before the session serves requests (the kernel's
 * cached attributes are read: a GETATTR would never be answered). On
 * failure, logs that errors=remount-ro will not remount, and the remount
 * thread then does nothing but say so.
 */
void p2z_remount_identify(struct p2z_remount *rm);

/**
 * p2z_remount_arm() - allow or stop remounting
 * @rm: the remount
 * @armed: true while the session serves requests
 *
 * Disarming wakes a thread waiting to retry, which then gives up.
 */
void p2z_remount_arm(struct p2z_remount *rm, bool armed);

/**
 * p2z_remount_ro() - the zone table's on_rdonly hook
 * @arg: the struct p2z_remount
 *
 * Starts the remount thread once, if armed; never blocks.
 */
void p2z_remount_ro(void *arg);

/**
 * p2z_remount_join() - disarm and wait for the remount thread
 * @rm: the remount
 *
 * After the session is gone: a mount(2) still waiting for this daemon has
 * been answered with an error when /dev/fuse was closed.
 */
void p2z_remount_join(struct p2z_remount *rm);

#endif /* PO2ZFS_REMOUNT_H */
