// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * errors=remount-ro: the thread that remounts the daemon's own mount
 * read-only once the zone table turned read-only. See po2zfs/remount.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "po2zfs/cond.h"
#include "po2zfs/log.h"
#include "po2zfs/remount.h"

#define P2Z_REMOUNT_RETRY_MIN_MS 10
#define P2Z_REMOUNT_RETRY_MAX_MS 1000

/*
 * The mount root at @path: its mount id and device. AT_STATX_DONT_SYNC
 * takes the kernel's cached attributes: right after mounting, before the
 * session loop runs, a GETATTR would never be answered.
 */
static int p2z_remount_stat(const char *path, int *fdp, struct statx *stx)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID,
		    stx);
	if (ret < 0 || !(stx->stx_mask & STATX_MNT_ID)) {
		ret = ret < 0 ? -errno : -EOPNOTSUPP;
		close(fd);
		return ret;
	}
	if (!(stx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
	    !(stx->stx_attributes & STATX_ATTR_MOUNT_ROOT)) {
		close(fd);
		return -ESTALE;
	}
	*fdp = fd;
	return 0;
}

void p2z_remount_identify(struct p2z_remount *rm)
{
	struct statx stx;
	int fd, ret;

	ret = p2z_remount_stat(rm->mountpoint, &fd, &stx);
	if (ret) {
		p2z_log(LOG_WARNING,
			"%s: cannot identify the mount (%s), errors=remount-ro will not remount it",
			rm->mountpoint, strerror(-ret));
		return;
	}
	close(fd);
	rm->mnt_id = stx.stx_mnt_id;
	rm->dev_major = stx.stx_dev_major;
	rm->dev_minor = stx.stx_dev_minor;
	rm->have_id = true;
}

/* Return: a descriptor of our mount's root, or -ESTALE if it is gone. */
static int p2z_remount_open(struct p2z_remount *rm)
{
	struct statx stx;
	int fd, ret;

	if (!rm->have_id)
		return -ESTALE;
	ret = p2z_remount_stat(rm->mountpoint, &fd, &stx);
	if (ret)
		return ret == -ENOENT || ret == -ENOTDIR || ret == -ELOOP ?
			       -ESTALE :
			       ret;
	if (stx.stx_mnt_id != rm->mnt_id ||
	    stx.stx_dev_major != rm->dev_major ||
	    stx.stx_dev_minor != rm->dev_minor) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/*
 * mount(2) fallback for kernels without mount_setattr(2) (before 5.12):
 * MS_REMOUNT | MS_BIND sets the per-mount flags to exactly those given (the
 * atime ones aside): keep nosuid, nodev, noexec of the mount, or, if they
 * cannot be read, add the safe nosuid and nodev.
 */
static int p2z_remount_legacy(int fd)
{
	unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY;
	char path[32];
	struct statvfs sv;

	if (fstatvfs(fd, &sv) < 0) {
		flags |= MS_NOSUID | MS_NODEV;
	} else {
		if (sv.f_flag & ST_NOSUID)
			flags |= MS_NOSUID;
		if (sv.f_flag & ST_NODEV)
			flags |= MS_NODEV;
		if (sv.f_flag & ST_NOEXEC)
			flags |= MS_NOEXEC;
	}
	/* The magic link leads to the descriptor's mount, whatever the path. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return mount(NULL, path, NULL, flags, NULL) < 0 ? -errno : 0;
}

/* Return: 0, -ESTALE if our mount is gone, or -errno. */
static int p2z_remount_once(struct p2z_remount *rm)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
	int fd, ret;

	fd = p2z_remount_open(rm);
	if (fd < 0)
		return fd;
	ret = mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof(attr));
	ret = ret < 0 ? -errno : 0;
	if (ret == -ENOSYS)
		ret = p2z_remount_legacy(fd);
	close(fd);
	return ret;
}

/* Sleep @ms, or less if disarmed. Return: whether still armed. */
static bool p2z_remount_wait(struct p2z_remount *rm, long ms)
{
	struct timespec end;
	bool armed;

	p2z_cond_deadline(ms, &end);
	pthread_mutex_lock(&rm->lock);
	while (rm->armed &&
	       pthread_cond_timedwait(&rm->cond, &rm->lock, &end) != ETIMEDOUT)
		;
	armed = rm->armed;
	pthread_mutex_unlock(&rm->lock);
	return armed;
}

static void *p2z_remount_thread(void *arg)
{
	struct p2z_remount *rm = arg;
	long ms = P2Z_REMOUNT_RETRY_MIN_MS;
	int ret;

	for (;;) {
		ret = p2z_remount_once(rm);
		if (!ret) {
			p2z_log(LOG_NOTICE, "%s: remounted read-only",
				rm->mountpoint);
			return NULL;
		}
		if (ret != -EBUSY)
			break;
		/* Unmounted while a file was still open for writing. */
		if (!p2z_remount_wait(rm, ms))
			return NULL;
		ms = ms * 2 < P2Z_REMOUNT_RETRY_MAX_MS ?
			     ms * 2 :
			     P2Z_REMOUNT_RETRY_MAX_MS;
	}
	if (ret == -ESTALE)
		p2z_log(LOG_WARNING,
			"%s: no longer this filesystem's mount (unmounted or covered), not remounted; writes still fail with EROFS",
			rm->mountpoint);
	else
		p2z_log(LOG_WARNING,
			"%s: cannot remount read-only (%s), writes still fail with EROFS",
			rm->mountpoint, strerror(-ret));
	return NULL;
}

void p2z_remount_ro(void *arg)
{
	struct p2z_remount *rm = arg;
	int err;

	pthread_mutex_lock(&rm->lock);
	if (rm->armed && !rm->started) {
		err = pthread_create(&rm->thread, NULL, p2z_remount_thread, rm);
		if (err)
			p2z_log(LOG_WARNING,
				"%s: cannot remount read-only (%s), writes still fail with EROFS",
				rm->mountpoint, strerror(err));
		rm->started = !err;
	}
	pthread_mutex_unlock(&rm->lock);
}

void p2z_remount_arm(struct p2z_remount *rm, bool armed)
{
	pthread_mutex_lock(&rm->lock);
	rm->armed = armed;
	pthread_cond_broadcast(&rm->cond);
	pthread_mutex_unlock(&rm->lock);
}

int p2z_remount_init(struct p2z_remount *rm, const char *mountpoint)
{
	int ret;

	memset(rm, 0, sizeof(*rm));
	rm->mountpoint = mountpoint;
	ret = -pthread_mutex_init(&rm->lock, NULL);
	if (ret)
		return ret;
	ret = p2z_cond_init_monotonic(&rm->cond);
	if (ret)
		pthread_mutex_destroy(&rm->lock);
	return ret;
}

void p2z_remount_join(struct p2z_remount *rm)
{
	bool started;

	p2z_remount_arm(rm, false);
	pthread_mutex_lock(&rm->lock);
	started = rm->started;
	rm->started = false;
	pthread_mutex_unlock(&rm->lock);
	if (started)
		pthread_join(rm->thread, NULL);
}

void p2z_remount_exit(struct p2z_remount *rm)
{
	pthread_cond_destroy(&rm->cond);
	pthread_mutex_destroy(&rm->lock);
}
