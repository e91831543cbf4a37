/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Mount option parsing, apart from main.c: a pure function of the option
 * string (user and group names aside, which are looked up), for the tests
 * and the fuzz targets.
 */
#ifndef PO2ZFS_OPTS_H
#define PO2ZFS_OPTS_H

#include <stdbool.h>

#include "po2zfs/fs.h"
#include "po2zfs/zone.h"

/**
 * struct p2z_opts - what the mount options set
 * @debug: -o debug (or -d): libfuse's debug output, foreground
 * @direct: -o direct: P2Z_DEV_DIRECT
 * @backend: -o backend=nvme|zbd|emu, "" to probe
 * @zone: ro/rw, explicit-open, errors=
 * @fs: uid=, gid=, perm=
 * @fuse_opts: options handed to libfuse, comma separated
 */
struct p2z_opts {
	bool debug;
	bool direct;
	char backend[8];
	struct p2z_zone_opts zone;
	struct p2z_fs_opts fs;
	char fuse_opts[4096];
};

/* opts.c */

/**
 * p2z_opts_parse() - parse a comma separated mount option list
 * @o: options, with their defaults set; updated option by option
 * @list: the list, as given to -o; empty options are skipped
 *
 * Stops at the first bad option and logs one line naming it.
 *
 * Return: 0, -EINVAL for an unknown option, a bad value or too many
 * options for libfuse, or -ENOMEM.
 */
int p2z_opts_parse(struct p2z_opts *o, const char *list);

#endif /* PO2ZFS_OPTS_H */
