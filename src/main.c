// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * po2zfs / mount.po2zfs: parse the command line and the mount options, open
 * the device, read its zone table, mount, detach, and serve FUSE requests
 * until unmounted. Everything that can fail is checked before the process
 * detaches, so that a failed mount prints one line and exits non-zero.
 * The errors=remount-ro thread is remount.c's; the session's first request
 * and the mount's read-ahead are fs.c's (p2z_fs_serve_init()).
 *
 * mount(8) runs helpers as "mount.po2zfs SPEC DIR [-sfnv] [-o OPTS]", where
 * -f means "fake": everything but the mount. Run as po2zfs, -f means
 * foreground instead, as for other FUSE daemons.
 */
#define FUSE_USE_VERSION 314

#include <errno.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "po2zfs/dev.h"
#include "po2zfs/fs.h"
#include "po2zfs/log.h"
#include "po2zfs/opts.h"
#include "po2zfs/remount.h"
#include "po2zfs/zone.h"

/* Exit codes, as mount(8) documents them for helpers. */
#define P2Z_EXIT_USAGE 1
#define P2Z_EXIT_FAIL 32

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

static int p2z_serve(struct p2z_fs *fs, const struct p2z_main_opts *o)
{
	int ret;

	if (!o->foreground)
		p2z_log_to_syslog("po2zfs");
	if (fuse_daemonize(o->foreground))
		return -EIO;
	/* After the fork: syslog's pid is the daemon's. */
	p2z_log(LOG_INFO, "%s: mounted %s%s", o->mountpoint_abs, o->device,
		o->opts.zone.rdonly ? " read-only" : "");
	p2z_fs_serve_init(fs, o->mountpoint_abs);
	/* A signal (SIGTERM, SIGINT) or the unmount ends the loop. */
	ret = p2z_fs_loop(fs);
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
	ret = p2z_serve(fs, o);
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
	struct p2z_remount rm;
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
	ret = p2z_remount_init(&rm, o->mountpoint_abs);
	if (ret)
		goto out_close_dev;
	o->opts.zone.on_rdonly = p2z_remount_ro;
	o->opts.zone.on_rdonly_arg = &rm;
	ret = p2z_zone_table_open(dev, &o->opts.zone, &zt);
	if (ret)
		goto out_exit_remount;
	ret = p2z_fs_alloc(zt, &o->opts.fs, &fs);
	if (ret)
		goto out_close_table;
	ret = p2z_mount_and_serve(o, fs, &rm, prog);
	p2z_fs_free(fs);
out_close_table:
	/* After the table has closed the zones it held open. */
	p2z_zone_table_close(zt);
	p2z_flush_at_exit(o, dev);
out_exit_remount:
	p2z_remount_exit(&rm);
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
