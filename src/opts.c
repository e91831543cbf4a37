// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Mount options: "-o uid=1000,ro,allow_other" into struct p2z_opts. Ours
 * are set, the ones libfuse passes on to the kernel are collected, the ones
 * mount(8) and fstab keep for themselves are ignored, anything else is
 * refused with one line naming the option.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "po2zfs/dev.h"
#include "po2zfs/log.h"
#include "po2zfs/opts.h"

/* Mount options libfuse passes on to mount(2) or the kernel. */
static const char *const p2z_fuse_opts[] = {
	"allow_other", "allow_root", "auto_unmount", "dev",	"nodev",
	"suid",	       "nosuid",     "exec",	     "noexec",	"atime",
	"noatime",     "sync",	     "async",	     "dirsync",
};

/*
 * Options mount(8) and fstab use for themselves, or that libfuse 3.14 does
 * not take (the atime variants: FUSE keeps its own atime); ignored.
 * default_permissions is always on.
 */
static const char *const p2z_ignored_opts[] = {
	"auto",
	"noauto",
	"nofail",
	"_netdev",
	"user",
	"nouser",
	"users",
	"owner",
	"group",
	"defaults",
	"default_permissions",
	"diratime",
	"nodiratime",
	"relatime",
	"norelatime",
	"strictatime",
	"nostrictatime",
	"lazytime",
	"nolazytime",
};

static bool p2z_in_list(const char *opt, const char *const *list, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (!strcmp(opt, list[i]))
			return true;
	return false;
}

static int p2z_add_fuse_opt(struct p2z_opts *o, const char *opt)
{
	size_t len = strlen(o->fuse_opts);
	int n;

	n = snprintf(o->fuse_opts + len, sizeof(o->fuse_opts) - len, "%s%s",
		     len ? "," : "", opt);
	if (n < 0 || (size_t)n >= sizeof(o->fuse_opts) - len) {
		p2z_log(LOG_ERR, "too many mount options");
		return -EINVAL;
	}
	return 0;
}

/* A decimal id, or a user/group name. */
static int p2z_parse_id(const char *val, bool group, unsigned int *id)
{
	unsigned long v;
	char *end;

	if (!*val)
		return -EINVAL;
	errno = 0;
	v = strtoul(val, &end, 10);
	if (!*end && val[0] != '-' && !errno && v < UINT_MAX) {
		*id = (unsigned int)v;
		return 0;
	}
	if (group) {
		struct group *gr = getgrnam(val);

		if (!gr)
			return -EINVAL;
		*id = gr->gr_gid;
	} else {
		struct passwd *pw = getpwnam(val);

		if (!pw)
			return -EINVAL;
		*id = pw->pw_uid;
	}
	return 0;
}

static int p2z_parse_perm(const char *val, mode_t *perm)
{
	unsigned long v;
	char *end;

	if (!*val || val[0] == '-' || val[0] == '+')
		return -EINVAL;
	errno = 0;
	v = strtoul(val, &end, 8);
	if (*end || errno || v > 0777)
		return -EINVAL;
	*perm = (mode_t)v;
	return 0;
}

static int p2z_parse_errors(const char *val, enum p2z_errors *errors)
{
	static const char *const names[] = {
		[P2Z_ERRORS_REMOUNT_RO] = "remount-ro",
		[P2Z_ERRORS_ZONE_RO] = "zone-ro",
		[P2Z_ERRORS_ZONE_OFFLINE] = "zone-offline",
		[P2Z_ERRORS_REPAIR] = "repair",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(val, names[i])) {
			*errors = (enum p2z_errors)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* One option of ours with a value; -ENOENT if it is not one of ours. */
static int p2z_parse_value_opt(struct p2z_opts *o, const char *opt)
{
	const char *val = strchr(opt, '=');
	size_t klen;

	if (!val)
		return -ENOENT;
	klen = (size_t)(val++ - opt);
	if (klen == 3 && !strncmp(opt, "uid", 3))
		return p2z_parse_id(val, false, &o->fs.uid);
	if (klen == 3 && !strncmp(opt, "gid", 3))
		return p2z_parse_id(val, true, &o->fs.gid);
	if (klen == 4 && !strncmp(opt, "perm", 4))
		return p2z_parse_perm(val, &o->fs.perm);
	if (klen == 6 && !strncmp(opt, "errors", 6))
		return p2z_parse_errors(val, &o->zone.errors);
	if (klen == 7 && !strncmp(opt, "backend", 7)) {
		if (!p2z_dev_backend_is_known(val))
			return -EINVAL;
		snprintf(o->backend, sizeof(o->backend), "%s", val);
		return 0;
	}
	/* Ours to set; mount(8) and fstab may carry these through. */
	if ((klen == 6 && !strncmp(opt, "fsname", 6)) ||
	    (klen == 7 && !strncmp(opt, "subtype", 7)) ||
	    (klen == 7 && !strncmp(opt, "comment", 7)))
		return 0;
	return -ENOENT;
}

static int p2z_parse_opt(struct p2z_opts *o, const char *opt)
{
	int ret;

	if (!*opt)
		return 0;
	if (!strcmp(opt, "ro") || !strcmp(opt, "rw")) {
		o->zone.rdonly = opt[1] == 'o';
		return 0;
	}
	if (!strcmp(opt, "explicit-open")) {
		o->zone.explicit_open = true;
		return 0;
	}
	if (!strcmp(opt, "direct")) {
		o->direct = true;
		return 0;
	}
	if (!strcmp(opt, "debug")) {
		o->debug = true;
		return 0;
	}
	if (p2z_in_list(opt, p2z_ignored_opts,
			sizeof(p2z_ignored_opts) /
				sizeof(p2z_ignored_opts[0])) ||
	    !strncmp(opt, "x-", 2))
		return 0;
	if (p2z_in_list(opt, p2z_fuse_opts,
			sizeof(p2z_fuse_opts) / sizeof(p2z_fuse_opts[0])))
		return p2z_add_fuse_opt(o, opt);
	ret = p2z_parse_value_opt(o, opt);
	if (ret == -ENOENT) {
		/* -ENOENT is this file's "not ours", never the caller's. */
		p2z_log(LOG_ERR, "unknown mount option \"%s\"", opt);
		return -EINVAL;
	}
	if (ret)
		p2z_log(LOG_ERR, "bad value in mount option \"%s\"", opt);
	return ret;
}

int p2z_opts_parse(struct p2z_opts *o, const char *list)
{
	char *dup, *p, *opt;
	int ret = 0;

	dup = strdup(list);
	if (!dup)
		return -ENOMEM;
	for (p = dup; (opt = strsep(&p, ",")) != NULL && !ret;)
		ret = p2z_parse_opt(o, opt);
	free(dup);
	return ret;
}
