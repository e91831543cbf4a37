// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * po2zfs-emu: create, inspect and inject faults into emulated zoned device
 * images (the "emu" backend). See man/po2zfs-emu.8.
 *
 * Exit status: 0 success, 1 failure (bad value, bad image, system error),
 * 2 usage error (unknown option, missing value or argument).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "po2zfs/cli.h"
#include "po2zfs/dev.h"
#include "po2zfs/emu.h"
#include "po2zfs/geom.h"

#define PROG "po2zfs-emu"
#define WHY_LEN 256

static const char p2z_ecli_usage[] =
	"Usage:\n"
	"  " PROG " create IMAGE --zone-size SIZE --zones N [options]\n"
	"  " PROG " report IMAGE\n"
	"  " PROG
	" set-zone IMAGE ZONE read-only|offline|online|fail-next-io|clear\n"
	"  " PROG " --help | --version\n"
	"\n"
	"create options (SIZE: bytes, or with a K, M, G or T suffix, powers of 1024):\n"
	"  --zone-size SIZE   zone size, any multiple of the LBA size (required)\n"
	"  --zones N          number of zones (required)\n"
	"  --zone-cap SIZE    zone capacity, <= zone size (default: zone size)\n"
	"  --conv N           conventional zones at the start (default 0)\n"
	"  --lba-size 512|4096  logical block size (default 4096)\n"
	"  --max-open N       open zone limit, 0 = none (default 0)\n"
	"  --max-active N     active zone limit, 0 = none (default 0)\n"
	"  --max-append SIZE  zone append limit (default 512K)\n"
	"  --volatile-cache   a volatile write cache: data not flushed is lost\n"
	"                     when the process using the device dies\n"
	"  --force            overwrite an existing image not in use (only an\n"
	"                     image, never through a symbolic link)\n"
	"\n"
	"ZONE is a device zone index, as report prints it.\n";

/* Decimal, optionally with a K/M/G/T (IEC) suffix when @suffix. */
static int p2z_ecli_parse_u64(const char *s, bool suffix, uint64_t *v)
{
	unsigned int shift = 0;
	unsigned long long x;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	if (suffix && *end) {
		static const char units[] = "KMGT";
		const char *u = strchr(units, toupper((unsigned char)*end));

		if (!u)
			return -EINVAL;
		shift = 10 * (unsigned int)(u - units + 1);
		end++;
	}
	if (*end)
		return -EINVAL;
	if (shift && x > (UINT64_MAX >> shift))
		return -ERANGE;
	*v = (uint64_t)x << shift;
	return 0;
}

static int p2z_ecli_parse_opt_u64(const char *opt, const char *s, bool suffix,
				  uint64_t max, uint64_t *v)
{
	int ret = p2z_ecli_parse_u64(s, suffix, v);

	if (ret == -EINVAL)
		return p2z_cli_fail(PROG, EXIT_FAILURE,
				    "--%s: '%s' is not a %s", opt, s,
				    suffix ? "size" : "number");
	if (ret || *v > max)
		return p2z_cli_fail(PROG, EXIT_FAILURE,
				    "--%s: '%s' is too large", opt, s);
	return 0;
}

enum {
	P2Z_ECLI_OPT_ZONE_SIZE = 256,
	P2Z_ECLI_OPT_ZONE_CAP,
	P2Z_ECLI_OPT_ZONES,
	P2Z_ECLI_OPT_CONV,
	P2Z_ECLI_OPT_LBA_SIZE,
	P2Z_ECLI_OPT_MAX_OPEN,
	P2Z_ECLI_OPT_MAX_ACTIVE,
	P2Z_ECLI_OPT_MAX_APPEND,
	P2Z_ECLI_OPT_FORCE,
	P2Z_ECLI_OPT_VOLATILE_CACHE,
	P2Z_ECLI_OPT_HELP,
};

static const struct option p2z_ecli_create_opts[] = {
	{ "zone-size", required_argument, NULL, P2Z_ECLI_OPT_ZONE_SIZE },
	{ "zone-cap", required_argument, NULL, P2Z_ECLI_OPT_ZONE_CAP },
	{ "zones", required_argument, NULL, P2Z_ECLI_OPT_ZONES },
	{ "conv", required_argument, NULL, P2Z_ECLI_OPT_CONV },
	{ "lba-size", required_argument, NULL, P2Z_ECLI_OPT_LBA_SIZE },
	{ "max-open", required_argument, NULL, P2Z_ECLI_OPT_MAX_OPEN },
	{ "max-active", required_argument, NULL, P2Z_ECLI_OPT_MAX_ACTIVE },
	{ "max-append", required_argument, NULL, P2Z_ECLI_OPT_MAX_APPEND },
	{ "force", no_argument, NULL, P2Z_ECLI_OPT_FORCE },
	{ "volatile-cache", no_argument, NULL, P2Z_ECLI_OPT_VOLATILE_CACHE },
	{ "help", no_argument, NULL, P2Z_ECLI_OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static const struct option p2z_ecli_plain_opts[] = {
	{ "help", no_argument, NULL, P2Z_ECLI_OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

struct p2z_ecli_create_args {
	struct p2z_emu_params p;
	bool have_size, have_cap, have_zones;
	unsigned int flags; /* P2Z_EMU_CREATE_* */
};

/* One create option into @a; returns 0 or an exit code. */
static int p2z_ecli_create_opt(int c, const char *arg,
			       struct p2z_ecli_create_args *a)
{
	const char *name = "?";
	uint64_t v;
	int ret;
	size_t i;

	for (i = 0; p2z_ecli_create_opts[i].name; i++)
		if (p2z_ecli_create_opts[i].val == c)
			name = p2z_ecli_create_opts[i].name;
	switch (c) {
	case P2Z_ECLI_OPT_ZONE_SIZE:
	case P2Z_ECLI_OPT_ZONE_CAP:
	case P2Z_ECLI_OPT_MAX_APPEND:
		ret = p2z_ecli_parse_opt_u64(
			name, arg, true,
			c == P2Z_ECLI_OPT_MAX_APPEND ? UINT32_MAX : UINT64_MAX,
			&v);
		break;
	default:
		ret = p2z_ecli_parse_opt_u64(
			name, arg, false,
			c == P2Z_ECLI_OPT_ZONES || c == P2Z_ECLI_OPT_CONV ?
				UINT64_MAX :
				UINT32_MAX,
			&v);
		break;
	}
	if (ret)
		return ret;
	switch (c) {
	case P2Z_ECLI_OPT_ZONE_SIZE:
		a->p.zone_bytes = v;
		a->have_size = true;
		break;
	case P2Z_ECLI_OPT_ZONE_CAP:
		a->p.cap_bytes = v;
		a->have_cap = true;
		break;
	case P2Z_ECLI_OPT_ZONES:
		a->p.nr_zones = v;
		a->have_zones = true;
		break;
	case P2Z_ECLI_OPT_CONV:
		a->p.nr_cnv_zones = v;
		break;
	case P2Z_ECLI_OPT_LBA_SIZE:
		a->p.lba_bytes = (uint32_t)v;
		break;
	case P2Z_ECLI_OPT_MAX_OPEN:
		a->p.max_open = (uint32_t)v;
		break;
	case P2Z_ECLI_OPT_MAX_ACTIVE:
		a->p.max_active = (uint32_t)v;
		break;
	case P2Z_ECLI_OPT_MAX_APPEND:
		a->p.max_append_bytes = (uint32_t)v;
		break;
	}
	return 0;
}

static int p2z_ecli_create(int argc, char **argv)
{
	struct p2z_ecli_create_args a = {
		.p = { .lba_bytes = 4096, .max_append_bytes = 512 * 1024 },
	};
	char why[WHY_LEN];
	const char *path;
	struct stat st;
	int c, ret;

	while ((c = getopt_long(argc, argv, ":", p2z_ecli_create_opts, NULL)) !=
	       -1) {
		if (c == '?' || c == ':')
			return p2z_cli_bad_option(PROG, c, argv[optind - 1]);
		if (c == P2Z_ECLI_OPT_HELP) {
			fputs(p2z_ecli_usage, stdout);
			return 0;
		}
		if (c == P2Z_ECLI_OPT_FORCE ||
		    c == P2Z_ECLI_OPT_VOLATILE_CACHE) {
			a.flags |= c == P2Z_ECLI_OPT_FORCE ?
					   P2Z_EMU_CREATE_FORCE :
					   P2Z_EMU_CREATE_VOLATILE_CACHE;
			continue;
		}
		ret = p2z_ecli_create_opt(c, optarg, &a);
		if (ret)
			return ret;
	}
	if (optind != argc - 1)
		return p2z_cli_usage(PROG, "create needs exactly one IMAGE");
	path = argv[optind];
	if (!a.have_size || !a.have_zones)
		return p2z_cli_usage(PROG,
				     "create needs --zone-size and --zones");
	if (!a.have_cap)
		a.p.cap_bytes = a.p.zone_bytes;
	if (p2z_emu_check_params(&a.p, why, sizeof(why)))
		return p2z_cli_fail(PROG, EXIT_FAILURE, "%s", why);
	if (!(a.flags & P2Z_EMU_CREATE_FORCE) && !lstat(path, &st))
		return p2z_cli_fail(PROG, EXIT_FAILURE,
				    "%s: already exists (use --force)", path);
	/* p2z_emu_create() says why on failure (and what --force refuses). */
	return p2z_emu_create(path, &a.p, a.flags) ? EXIT_FAILURE : 0;
}

static void p2z_ecli_print_size(const char *label, uint64_t bytes, uint32_t lba)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	uint64_t v = bytes;
	int u = -1;

	while (u < 3 && v >= 1024 && !(v % 1024)) {
		v /= 1024;
		u++;
	}
	printf("%-16s%llu bytes (%llu LBAs", label, (unsigned long long)bytes,
	       (unsigned long long)(bytes / lba));
	if (u >= 0)
		printf(", %llu %s", (unsigned long long)v, units[u]);
	printf(")\n");
}

static void p2z_ecli_print_geometry(const struct p2z_dev *dev,
				    const struct p2z_geom *g,
				    const struct p2z_emu_params *p)
{
	const struct p2z_dev_info *in = &dev->info;

	printf("%-16s%s (emu)\n", "image:", dev->path);
	printf("%-16s%u\n", "lba size:", in->lba_bytes);
	p2z_ecli_print_size("zone size:", in->zone_lba * in->lba_bytes,
			    in->lba_bytes);
	p2z_ecli_print_size("po2 zone size:", g->po2_zone_lba * in->lba_bytes,
			    in->lba_bytes);
	p2z_ecli_print_size("zone capacity:", p->cap_bytes, in->lba_bytes);
	printf("%-16s%llu (%llu conventional, %llu sequential)\n",
	       "zones:", (unsigned long long)in->nr_zones,
	       (unsigned long long)p->nr_cnv_zones,
	       (unsigned long long)(in->nr_zones - p->nr_cnv_zones));
	p2z_cli_print_limit("max open:", in->max_open);
	p2z_cli_print_limit("max active:", in->max_active);
	printf("%-16s%u bytes\n", "max append:", in->max_append_bytes);
	printf("%-16s%u bytes\n", "max transfer:", in->max_xfer_bytes);
	printf("%-16s%s\n", "write cache:",
	       in->volatile_cache ? "volatile (flush or FUA to persist)" :
				    "none (writes persist as they complete)");
}

/*
 * The options of report and set-zone: --help only.
 *
 * Return: the exit status if the command line is answered (--help, a
 * usage error), or -1 to go on with the operands at argv[optind].
 */
static int p2z_ecli_plain_args(int argc, char **argv)
{
	int c = getopt_long(argc, argv, ":", p2z_ecli_plain_opts, NULL);

	if (c == -1)
		return -1;
	if (c != P2Z_ECLI_OPT_HELP)
		return p2z_cli_bad_option(PROG, c, argv[optind - 1]);
	fputs(p2z_ecli_usage, stdout);
	return 0;
}

static int p2z_ecli_report(int argc, char **argv)
{
	static const struct p2z_cli_report_opts p2z_ecli_report_opts = {
		.bytes = true,
		.faults = true,
	};
	struct p2z_emu_params p;
	char why[WHY_LEN];
	struct p2z_dev *dev;
	struct p2z_geom g;
	int ret;

	ret = p2z_ecli_plain_args(argc, argv);
	if (ret >= 0)
		return ret;
	if (optind != argc - 1)
		return p2z_cli_usage(PROG, "report needs exactly one IMAGE");
	if (p2z_emu_check_image(argv[optind], &p, why, sizeof(why)))
		return p2z_cli_fail(PROG, EXIT_FAILURE, "%s: %s", argv[optind],
				    why);
	/* A look, not a use: works while a daemon has the image. */
	if (p2z_dev_open(argv[optind], "emu", P2Z_DEV_RDONLY | P2Z_DEV_PEEK,
			 &dev))
		return EXIT_FAILURE;
	ret = p2z_geom_init(&g, dev->info.lba_bytes, dev->info.zone_lba,
			    dev->info.nr_zones);
	if (ret) {
		ret = p2z_cli_fail(PROG, EXIT_FAILURE, "%s: geometry: %s",
				   dev->path, strerror(-ret));
	} else {
		p2z_ecli_print_geometry(dev, &g, &p);
		ret = p2z_cli_report_zones(dev, &g, &p2z_ecli_report_opts);
	}
	p2z_dev_close(dev);
	if (!ret && fflush(stdout))
		ret = p2z_cli_fail(PROG, EXIT_FAILURE, "writing the report: %s",
				   strerror(errno));
	return ret;
}

static int p2z_ecli_set_zone(int argc, char **argv)
{
	struct p2z_emu_params p;
	enum p2z_emu_fault fault;
	char why[WHY_LEN];
	const char *path;
	uint64_t zidx;
	int ret;

	ret = p2z_ecli_plain_args(argc, argv);
	if (ret >= 0)
		return ret;
	if (optind != argc - 3)
		return p2z_cli_usage(PROG, "set-zone needs IMAGE ZONE FAULT");
	path = argv[optind];
	if (p2z_ecli_parse_u64(argv[optind + 1], false, &zidx))
		return p2z_cli_fail(PROG, EXIT_FAILURE,
				    "'%s' is not a zone number",
				    argv[optind + 1]);
	if (p2z_emu_fault_parse(argv[optind + 2], &fault))
		return p2z_cli_fail(
			PROG, EXIT_FAILURE,
			"unknown fault '%s' (read-only, offline, online, fail-next-io, clear)",
			argv[optind + 2]);
	if (p2z_emu_check_image(path, &p, why, sizeof(why)))
		return p2z_cli_fail(PROG, EXIT_FAILURE, "%s: %s", path, why);
	if (zidx >= p.nr_zones)
		return p2z_cli_fail(PROG, EXIT_FAILURE,
				    "%s: zone %llu out of range (%llu zones)",
				    path, (unsigned long long)zidx,
				    (unsigned long long)p.nr_zones);
	/* p2z_emu_set_fault() says why on failure. */
	return p2z_emu_set_fault(path, zidx, fault) ? EXIT_FAILURE : 0;
}

int main(int argc, char **argv)
{
	int ret = p2z_cli_main(PROG, p2z_ecli_usage, argc, argv);

	if (ret >= 0)
		return ret;
	opterr = 0;
	/* Each command parses its own options; argv[1] plays argv[0]. */
	if (!strcmp(argv[1], "create"))
		return p2z_ecli_create(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return p2z_ecli_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "set-zone"))
		return p2z_ecli_set_zone(argc - 1, argv + 1);
	return p2z_cli_usage(PROG, "unknown command '%s'", argv[1]);
}
