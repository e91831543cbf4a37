// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * po2zfs-blk: a ublk server that shows any device po2zfs mounts (nvme,
 * zbd, emu) as a host-managed zoned block device with the po2 zone size,
 * for zonefs, f2fs, btrfs and fio. Uses geom and dev only. See
 * man/po2zfs-blk.8 and blk_priv.h for its files.
 *
 * This file is the command line: usage, options, the command's dispatch.
 *
 * Exit status: 0 success, 1 failure (one line on stderr), 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blk_priv.h"
#include "po2zfs/cli.h"

#define EXIT_USAGE 2
#define P2Z_BLK_GO_ON (-1)
/* ublk's device numbers (the kernel's UBLK_MAX_UBLKS): 0 to 2^20 - 1 */
#define P2Z_BLK_ID_LIMIT (1U << 20)

static const char usage_text[] =
	"Usage:\n"
	"  " PROG
	" add [-f] [--id N] [--no-recovery] [--backend nvme|zbd|emu] DEVICE\n"
	"  " PROG " recover [-f] [--backend nvme|zbd|emu] N\n"
	"  " PROG " list\n"
	"  " PROG " del [--force] N\n"
	"  " PROG " --help | --version\n"
	"\n"
	"add serves DEVICE (/dev/ngXnY, /dev/nvmeXnY, a zoned block device or\n"
	"an emulated image) as /dev/ublkbN, a zoned block device with power-of-2\n"
	"zones, prints that path and runs in the background (-f: foreground;\n"
	"--id N: that N, or fail). The device is recoverable: a server that dies,\n"
	"or is stopped (SIGTERM) while the device is in use, leaves it quiesced,\n"
	"its requests held, and the next add of the same DEVICE (or recover N)\n"
	"serves it again; --no-recovery: a plain device (--recovery: refuse a\n"
	"kernel without user recovery).\n";

/* A usage error: one line on stderr, exit 2. */
#define usage_fail(...) p2z_cli_fail(PROG, EXIT_USAGE, __VA_ARGS__)

/* A device number below @limit: 0, or -EINVAL. */
static int p2z_blk_parse_id(const char *arg, uint32_t limit, uint32_t *id)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (!*arg || *arg == '-' || *end || errno || n >= limit)
		return -EINVAL;
	*id = (uint32_t)n;
	return 0;
}

/**
 * struct p2z_blk_args - the command line
 * @cmd: add, list or del
 * @backend: --backend
 * @id: --id, or P2Z_BLK_ID_ANY
 * @fg: -f
 * @force: --force
 * @want: enum p2z_blk_recovery: --recovery, --no-recovery, or neither
 * @args: the operands
 * @nr: how many
 */
struct p2z_blk_args {
	const char *cmd, *backend;
	uint32_t id;
	bool fg, force;
	enum p2z_blk_recovery want;
	char **args;
	int nr;
};

/* Parse options. Return: P2Z_BLK_GO_ON, else the exit code (help, errors). */
static int p2z_blk_parse(int argc, char **argv, struct p2z_blk_args *a)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "backend", required_argument, NULL, 'b' },
		{ "force", no_argument, NULL, 'F' },
		{ "id", required_argument, NULL, 'i' },
		{ "recovery", no_argument, NULL, 'R' },
		{ "no-recovery", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_id = false, have_rec = false;
	int c;

	/* argv[1] (the command) plays argv[0]; GNU getopt permutes. */
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, ":fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			a->fg = true;
			break;
		case 'b':
			a->backend = optarg;
			break;
		case 'F':
			a->force = true;
			break;
		case 'R':
		case 'N':
			if (have_rec &&
			    a->want != (c == 'R' ? P2Z_BLK_RECOVERY_ON :
						   P2Z_BLK_RECOVERY_OFF))
				return usage_fail(
					"--recovery and --no-recovery exclude each other");
			a->want = c == 'R' ? P2Z_BLK_RECOVERY_ON :
					     P2Z_BLK_RECOVERY_OFF;
			have_rec = true;
			break;
		case 'i':
			if (p2z_blk_parse_id(optarg, P2Z_BLK_ID_LIMIT, &a->id))
				return usage_fail(
					"--id: '%s' is not a device number (0 to %u)",
					optarg, P2Z_BLK_ID_LIMIT - 1);
			have_id = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return EXIT_SUCCESS;
		case ':':
			return usage_fail("option '%s' needs a value",
					  argv[optind]);
		default:
			return usage_fail("unknown option '%s' (see " PROG
					  " --help)",
					  argv[optind]);
		}
	}
	/* Before anything opens: dev.c would say it in two lines, later. */
	if (a->backend && !p2z_dev_backend_is_known(a->backend))
		return usage_fail("unknown backend '%s' (nvme, zbd or emu)",
				  a->backend);
	if (a->force && strcmp(a->cmd, "del"))
		return usage_fail("--force is an option of del only");
	if (have_rec && strcmp(a->cmd, "add"))
		return usage_fail("%s is an option of add only",
				  a->want == P2Z_BLK_RECOVERY_ON ?
					  "--recovery" :
					  "--no-recovery");
	if (have_id && strcmp(a->cmd, "add"))
		return usage_fail("--id is an option of add only");
	a->args = argv + 1 + optind;
	a->nr = argc - 1 - optind;
	return P2Z_BLK_GO_ON;
}

int main(int argc, char **argv)
{
	struct p2z_blk_args a = { .id = P2Z_BLK_ID_ANY };
	uint32_t n;
	int ret;

	if (argc < 2)
		return usage_fail("a command is needed (see " PROG " --help)");
	a.cmd = argv[1];
	if (!strcmp(a.cmd, "--help") || !strcmp(a.cmd, "-h")) {
		fputs(usage_text, stdout);
		return EXIT_SUCCESS;
	}
	if (!strcmp(a.cmd, "--version") || !strcmp(a.cmd, "-V")) {
		printf(PROG " %s\n", P2Z_VERSION);
		return EXIT_SUCCESS;
	}
	ret = p2z_blk_parse(argc, argv, &a);
	if (ret != P2Z_BLK_GO_ON)
		return ret;
	if (!strcmp(a.cmd, "add") && a.nr == 1)
		ret = p2z_blk_cmd_add(a.args[0], a.backend, a.fg, a.id, a.want);
	else if (!strcmp(a.cmd, "list") && a.nr == 0)
		ret = p2z_blk_cmd_list();
	else if (!strcmp(a.cmd, "recover") && a.nr == 1) {
		if (p2z_blk_parse_id(a.args[0], P2Z_BLK_ID_LIMIT, &n))
			return usage_fail(
				"recover: '%s' is not a device number",
				a.args[0]);
		ret = p2z_blk_cmd_recover(n, a.backend, a.fg);
	} else if (!strcmp(a.cmd, "del") && a.nr == 1) {
		if (p2z_blk_parse_id(a.args[0], UINT32_MAX, &n))
			return usage_fail("del: '%s' is not a device number",
					  a.args[0]);
		ret = p2z_blk_cmd_del(n, a.force);
	} else
		return usage_fail(
			"usage: " PROG
			" add [-f] [--id N] [--no-recovery] DEVICE | recover [-f] N | list | del [--force] N (see " PROG
			" --help)");
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}
