// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * po2zfs / mount.po2zfs: parse the command line and the mount options, open
 * the device, read its zone table, mount, detach, and serve FUSE requests
 * until unmounted. Everything that can fail is checked before the process
 * detaches, so that a failed mount prints one line and exits non-zero.
 *
 * mount(8) runs helpers as "mount.po2zfs SPEC DIR [-sfnv] [-o OPTS]", where
 * -f means "fake": everything but the mount. Run as po2zfs, -f means
 * foreground instead, as for other FUSE daemons.
 */
#define FUSE_USE_VERSION 314

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "po2zfs/cond.h"
#include "po2zfs/dev.h"
#include "po2zfs/fs.h"
#include "po2zfs/log.h"
#include "po2zfs/opts.h"
#include "po2zfs/zone.h"

/* Exit codes, as mount(8) documents them for helpers. */
#define P2Z_EXIT_USAGE 1
#define P2Z_EXIT_FAIL 32

#define P2Z_MAX_THREADS 16
/*
 * Workers kept waiting once a burst is over: libfuse 3.14 keeps every
 * thread it ever started by default, and 17 idle workers made single
 * stream writes 10-25% slower after a 4-writer burst (contrib/bench).
 */
#define P2Z_IDLE_THREADS 4

struct p2z_main_opts {
	const char *device;
	const char *mountpoint;
	char mountpoint_abs[PATH_MAX];
	bool helper; /* run as mount.po2zfs */
	bool fake; /* mount.po2zfs -f: check everything, do not mount */
	bool foreground;
	struct p2z_opts opts; /* -o and -d */
};

static void p2z_usage(FILE *out, const char *prog, bool helper)
{
	fprintf(out,
		"usage: %s DEVICE MOUNTPOINT [-%s] [-d] [-o OPTION[,OPTION...]]\n"
		"       -f: %s\n"
		"options: uid=N gid=N perm=OCTAL ro rw explicit-open direct\n"
		"         errors=remount-ro|zone-ro|zone-offline|repair\n"
		"         backend=nvme|zbd|emu allow_other (see mount.po2zfs(8))\n",
		prog, helper ? "sfnv" : "f",
		helper ?
			"fake: check the options and the device, do not mount" :
			"stay in the foreground");
}

/* Single-letter flags, possibly grouped ("-sfnv"). */
static int p2z_parse_flags(struct p2z_main_opts *o, const char *arg)
{
	for (; *arg; arg++) {
		switch (*arg) {
		case 'f':
			/* mount(8)'s helper convention: -f is "fake". */
			if (o->helper)
				o->fake = true;
			else
				o->foreground = true;
			break;
		case 'd':
			o->opts.debug = true;
			break;
		case 's': /* sloppy */
		case 'n': /* no mtab */
		case 'v': /* verbose */
			break;
		default:
			p2z_log(LOG_ERR, "unknown flag -%c", *arg);
			return -EINVAL;
		}
	}
	return 0;
}

static int p2z_parse_arg(struct p2z_main_opts *o, int argc, char **argv, int *i)
{
	const char *arg = argv[*i];

	if (!strcmp(arg, "-o")) {
		if (*i + 1 >= argc) {
			p2z_log(LOG_ERR, "-o needs an option list");
			return -EINVAL;
		}
		return p2z_opts_parse(&o->opts, argv[++*i]);
	}
	if (!strncmp(arg, "-o", 2))
		return p2z_opts_parse(&o->opts, arg + 2);
	if (arg[0] == '-' && arg[1])
		return p2z_parse_flags(o, arg + 1);
	if (!o->device) {
		o->device = arg;
	} else if (!o->mountpoint) {
		o->mountpoint = arg;
	} else {
		p2z_log(LOG_ERR, "unexpected argument \"%s\"", arg);
		return -EINVAL;
	}
	return 0;
}

/* Return: 0, 1 if the program is done (help, version), or -errno. */
static int p2z_parse_args(struct p2z_main_opts *o, int argc, char **argv)
{
	int i, ret;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			p2z_usage(stdout, argv[0], o->helper);
			return 1;
		}
		if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			printf("po2zfs %s, libfuse %s\n", P2Z_VERSION,
			       fuse_pkgversion());
			return 1;
		}
		ret = p2z_parse_arg(o, argc, argv, &i);
		if (ret)
			return ret;
	}
	if (!o->device || !o->mountpoint) {
		p2z_usage(stderr, argv[0], o->helper);
		return -EINVAL;
	}
	if (o->opts.debug)
		o->foreground = true;
	return 0;
}

/*
 * The daemon leaves its working directory when it detaches (and libfuse
 * unmounts by path), so the mount point is made absolute here.
 */
static int p2z_check_mountpoint(struct p2z_main_opts *o)
{
	struct stat st;

	if (stat(o->mountpoint, &st) < 0 ||
	    !realpath(o->mountpoint, o->mountpoint_abs)) {
		int ret = -errno;

		p2z_log(LOG_ERR, "%s: %s", o->mountpoint, strerror(-ret));
		return ret;
	}
	if (!S_ISDIR(st.st_mode)) {
		p2z_log(LOG_ERR, "%s: not a directory", o->mountpoint);
		return -ENOTDIR;
	}
	return 0;
}

/* "fsname=DEV", with the commas and backslashes of DEV escaped. */
static char *p2z_fsname_opt(const char *device)
{
	size_t len = strlen("fsname=") + 2 * strlen(device) + 1;
	char *opt = malloc(len);
	char *p;

	if (!opt)
		return NULL;
	p = opt + sprintf(opt, "fsname=");
	for (; *device; device++) {
		if (*device == ',' || *device == '\\')
			*p++ = '\\';
		*p++ = *device;
	}
	*p = '\0';
	return opt;
}

/* argv for fuse_session_new(): name, [-d], -o fsname=DEV,subtype,... */
static int p2z_fuse_args(struct p2z_main_opts *o, const char *prog,
			 struct fuse_args *args)
{
	char *fsname = p2z_fsname_opt(o->device);
	char *opts = NULL;
	int ret = -1;

	if (fsname)
		ret = fuse_opt_add_arg(args, prog);
	if (!ret && o->opts.debug)
		ret = fuse_opt_add_arg(args, "-d");
	if (!ret)
		ret = fuse_opt_add_opt(&opts, fsname);
	if (!ret)
		ret = fuse_opt_add_opt(&opts,
				       "subtype=po2zfs,default_permissions");
	if (!ret && o->opts.zone.rdonly)
		ret = fuse_opt_add_opt(&opts, "ro");
	if (!ret && o->opts.fuse_opts[0])
		ret = fuse_opt_add_opt(&opts, o->opts.fuse_opts);
	if (!ret)
		ret = fuse_opt_add_arg(args, "-o");
	if (!ret)
		ret = fuse_opt_add_arg(args, opts);
	free(opts);
	free(fsname);
	if (ret) {
		p2z_log(LOG_ERR, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/*
 * errors=remount-ro. When the zone table turns read-only while mounted, the
 * mount turns read-only too, as zonefs remounts itself: statvfs(3) then
 * shows ST_RDONLY and the VFS refuses writes with EROFS. The table's hook
 * runs inside a FUSE handler with zone locks held, and resolving the mount
 * point may send requests to this very daemon: the hook only starts a
 * thread, whose requests the worker threads serve. The kernel refuses
 * (EBUSY) while a file of the mount is open for writing, the one whose
 * write failed first of all: the thread retries until the last one is
 * closed or the filesystem is unmounted. Without the privilege to remount,
 * the daemon keeps refusing writes with EROFS itself.
 *
 * Only the mount this daemon made is ever remounted. The path may name
 * something else by then (umount -l and another mount there, a parent
 * renamed and a symlink put in its place), so the mount is identified right
 * after mounting by its mount id and device number, and the path is opened
 * and checked against both before the remount, which goes through that
 * descriptor. No descriptor is kept meanwhile: it would pin a lazily
 * unmounted mount, and the daemon would never see its end.
 */
struct p2z_remount {
	const char *mountpoint;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* signalled when armed drops */
	bool armed; /* mounted and serving; guarded by lock */
	bool started; /* thread created; guarded by lock */
	pthread_t thread;
	bool have_id; /* mnt_id and dev are known; set before armed */
	uint64_t mnt_id;
	uint32_t dev_major;
	uint32_t dev_minor;
};

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

/* Right after mounting: which mount is ours. */
static void p2z_remount_identify(struct p2z_remount *rm)
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

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
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

/* The zone table's on_rdonly hook: must not block. */
static void p2z_remount_ro(void *arg)
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

static void p2z_remount_arm(struct p2z_remount *rm, bool armed)
{
	pthread_mutex_lock(&rm->lock);
	rm->armed = armed;
	pthread_cond_broadcast(&rm->cond);
	pthread_mutex_unlock(&rm->lock);
}

static int p2z_remount_init(struct p2z_remount *rm)
{
	int ret;

	ret = -pthread_mutex_init(&rm->lock, NULL);
	if (ret)
		return ret;
	ret = p2z_cond_init_monotonic(&rm->cond);
	if (ret)
		pthread_mutex_destroy(&rm->lock);
	return ret;
}

/*
 * After the session is gone: a mount(2) still waiting for this daemon has
 * been answered with an error when /dev/fuse was closed.
 */
static void p2z_remount_join(struct p2z_remount *rm)
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

/*
 * Read-ahead of the mount, in KiB: FUSE's largest request (max_pages, 256
 * pages since Linux 4.20, what libfuse asks for with a 1 MiB max_write).
 * The kernel starts a FUSE mount at its default of 128 KiB and lowers it
 * to the daemon's max_readahead in the INIT reply, never raises it: only
 * the bdi's read_ahead_kb in sysfs does. With 128 KiB, a sequential
 * buffered reader costs a round trip through the daemon per 256 KiB; with
 * 1 MiB, per 1 MiB (guest, 1 MiB reads: 144-206 -> 210-221 MiB/s).
 */
#define P2Z_READAHEAD_KB (P2Z_FS_MAX_WRITE / 1024)

/*
 * Raise the mount's read-ahead, once the INIT reply has set it: the bdi is
 * the mount's anonymous device, /sys/class/bdi/MAJ:MIN. Root only, like
 * the knob; a daemon that cannot keeps the kernel's default and says so.
 */
static void p2z_raise_readahead(const char *mountpoint)
{
	char path[64];
	struct statx stx;
	int fd, ret, n;

	ret = p2z_remount_stat(mountpoint, &fd, &stx);
	if (ret) {
		p2z_log(LOG_INFO, "%s: read-ahead stays at the default: %s",
			mountpoint, strerror(-ret));
		return;
	}
	close(fd);
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
		 stx.stx_dev_major, stx.stx_dev_minor);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : dprintf(fd, "%u\n", P2Z_READAHEAD_KB);
	if (n < 0)
		p2z_log(LOG_INFO, "%s: read-ahead stays at the default: %s: %s",
			mountpoint, path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/*
 * The first request of a session is INIT (the kernel sends nothing else
 * before the reply). Served here, before the workers start, so that its
 * reply has set the mount's limits when the read-ahead is raised. A signal
 * or an unmount before it leaves the session exited, and the loop ends.
 */
static void p2z_serve_init(struct fuse_session *se, const char *mountpoint)
{
	struct fuse_buf fbuf = { .mem = NULL };
	int ret;

	do {
		ret = fuse_session_receive_buf(se, &fbuf);
	} while (ret == -EINTR && !fuse_session_exited(se));
	if (ret > 0)
		fuse_session_process_buf(se, &fbuf);
	free(fbuf.mem);
	if (ret > 0 && !fuse_session_exited(se))
		p2z_raise_readahead(mountpoint);
}

static int p2z_serve(struct fuse_session *se, const struct p2z_main_opts *o)
{
	struct fuse_loop_config *cfg;
	int ret;

	if (!o->foreground)
		p2z_log_to_syslog("po2zfs");
	if (fuse_daemonize(o->foreground))
		return -EIO;
	/* After the fork: syslog's pid is the daemon's. */
	p2z_log(LOG_INFO, "%s: mounted %s%s", o->mountpoint_abs, o->device,
		o->opts.zone.rdonly ? " read-only" : "");
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_max_threads(cfg, P2Z_MAX_THREADS);
	fuse_loop_cfg_set_idle_threads(cfg, P2Z_IDLE_THREADS);
	p2z_serve_init(se, o->mountpoint_abs);
	/* A signal (SIGTERM, SIGINT) ends the loop with its positive number. */
	ret = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return ret < 0 ? -EIO : 0;
}

static int p2z_mount_and_serve(struct p2z_main_opts *o, struct p2z_fs *fs,
			       struct p2z_remount *rm, const char *prog)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se;
	int ret;

	ret = p2z_fuse_args(o, prog, &args);
	if (ret)
		goto out_free_args;
	se = fuse_session_new(&args, &p2z_fs_ops, sizeof(p2z_fs_ops), fs);
	if (!se) {
		ret = -EINVAL;
		goto out_free_args;
	}
	p2z_fs_set_session(fs, se);
	ret = -EIO;
	if (fuse_set_signal_handlers(se))
		goto out_destroy;
	if (fuse_session_mount(se, o->mountpoint_abs))
		goto out_remove_handlers;
	if (o->opts.zone.errors == P2Z_ERRORS_REMOUNT_RO &&
	    !o->opts.zone.rdonly)
		p2z_remount_identify(rm);
	p2z_remount_arm(rm, true);
	ret = p2z_serve(se, o);
	p2z_remount_arm(rm, false);
	fuse_session_unmount(se);
	p2z_log(LOG_INFO, "%s: unmounted %s", o->mountpoint_abs, o->device);
out_remove_handlers:
	fuse_remove_signal_handlers(se);
out_destroy:
	fuse_session_destroy(se);
	p2z_remount_join(rm);
out_free_args:
	fuse_opt_free_args(&args);
	return ret;
}

/*
 * mount.po2zfs -f: everything a mount checks, nothing written (the zone
 * table is read as for a read-only mount), nothing mounted.
 */
static int p2z_fake(struct p2z_main_opts *o, struct p2z_dev *dev,
		    const char *prog)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct p2z_zone_opts zopts = o->opts.zone;
	struct p2z_zone_table *zt;
	int ret;

	zopts.rdonly = true;
	ret = p2z_zone_table_open(dev, &zopts, &zt);
	if (ret)
		return ret;
	p2z_zone_table_close(zt);
	ret = p2z_fuse_args(o, prog, &args);
	fuse_opt_free_args(&args);
	return ret;
}

/*
 * The daemon lets the device go: flush its write cache once, so that what
 * was written without fsync(2) or O_DSYNC is on stable media too. Nothing
 * else would do it: the kernel sends FUSE no SYNCFS (only virtiofs gets
 * one), so sync(1) and syncfs(2) never reach the daemon. A read-only mount
 * wrote nothing. Failure can only be logged: the mount is gone.
 */
static void p2z_flush_at_exit(const struct p2z_main_opts *o,
			      struct p2z_dev *dev)
{
	int ret;

	if (o->opts.zone.rdonly)
		return;
	ret = p2z_dev_flush(dev);
	if (ret)
		p2z_log(LOG_ERR,
			"%s: flushing the write cache of %s failed: %s",
			o->mountpoint_abs, o->device, strerror(-ret));
	else
		p2z_log(LOG_INFO, "%s: flushed the write cache of %s",
			o->mountpoint_abs, o->device);
}

static int p2z_run(struct p2z_main_opts *o, const char *prog)
{
	struct p2z_remount rm = { .mountpoint = o->mountpoint_abs };
	struct p2z_zone_table *zt;
	struct p2z_dev *dev;
	struct p2z_fs *fs;
	int ret;

	ret = p2z_check_mountpoint(o);
	if (ret)
		return ret;
	/* -f (fake) writes nothing: the device is opened read-only. */
	ret = p2z_dev_open(
		o->device, o->opts.backend[0] ? o->opts.backend : NULL,
		(o->opts.zone.rdonly || o->fake ? P2Z_DEV_RDONLY : 0) |
			(o->opts.direct ? P2Z_DEV_DIRECT : 0),
		&dev);
	if (ret)
		return ret;
	if (o->fake) {
		ret = p2z_fake(o, dev, prog);
		goto out_close_dev;
	}
	ret = p2z_remount_init(&rm);
	if (ret)
		goto out_close_dev;
	o->opts.zone.on_rdonly = p2z_remount_ro;
	o->opts.zone.on_rdonly_arg = &rm;
	ret = p2z_zone_table_open(dev, &o->opts.zone, &zt);
	if (ret)
		goto out_destroy_lock;
	ret = p2z_fs_alloc(zt, &o->opts.fs, &fs);
	if (ret)
		goto out_close_table;
	ret = p2z_mount_and_serve(o, fs, &rm, prog);
	p2z_fs_free(fs);
out_close_table:
	/* After the table has closed the zones it held open. */
	p2z_zone_table_close(zt);
	p2z_flush_at_exit(o, dev);
out_destroy_lock:
	pthread_cond_destroy(&rm.cond);
	pthread_mutex_destroy(&rm.lock);
out_close_dev:
	p2z_dev_close(dev);
	return ret;
}

/* Whether the program runs as the mount(8) helper (by its name). */
static bool p2z_is_helper(const char *argv0)
{
	const char *name;

	if (!argv0)
		return false;
	name = strrchr(argv0, '/');
	return !strcmp(name ? name + 1 : argv0, "mount.po2zfs");
}

int main(int argc, char **argv)
{
	struct p2z_main_opts o;
	int ret;

	memset(&o, 0, sizeof(o));
	o.helper = p2z_is_helper(argc ? argv[0] : NULL);
	o.opts.zone.errors = P2Z_ERRORS_REMOUNT_RO;
	o.opts.fs.perm = 0640;
	o.opts.fs.dir_uid = getuid();
	o.opts.fs.dir_gid = getgid();

	ret = p2z_parse_args(&o, argc, argv);
	if (ret)
		return ret > 0 ? 0 : P2Z_EXIT_USAGE;
	ret = p2z_run(&o, argv[0]);
	return ret ? P2Z_EXIT_FAIL : 0;
}
