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
#define EXIT_USAGE 2
#define WHY_LEN 256

static const char usage_text[] =
	"Usage:\n"
	"  " PROG " create IMAGE --zone-size SIZE --zones N [options]\n"
	"  " PROG " report IMAGE\n"
	"  " PROG
	" set-zone IMAGE ZONE read-only|offline|online|fail-next-io|clear\n"
	"  " PROG " --help\n"
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
static int parse_u64(const char *s, bool suffix, uint64_t *v)
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

static int parse_opt_u64(const char *opt, const char *s, bool suffix,
			 uint64_t max, uint64_t *v)
{
	int ret = parse_u64(s, suffix, v);

	if (ret == -EINVAL)
		return p2z_cli_fail(PROG, EXIT_FAILURE,
				    "--%s: '%s' is not a %s", opt, s,
				    suffix ? "size" : "number");
	if (ret || *v > max)
		return p2z_cli_fail(PROG, EXIT_FAILURE,
				    "--%s: '%s' is too large", opt, s);
	return 0;
}

/* getopt_long reports errors itself unless opterr = 0: say it our way. */
static int usage_error(int c, char **argv)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		return p2z_cli_fail(PROG, EXIT_USAGE,
				    "option '%s' needs a value", arg);
	return p2z_cli_fail(PROG, EXIT_USAGE,
			    "unknown option '%s' (see " PROG " --help)", arg);
}

enum {
	OPT_ZONE_SIZE = 256,
	OPT_ZONE_CAP,
	OPT_ZONES,
	OPT_CONV,
	OPT_LBA_SIZE,
	OPT_MAX_OPEN,
	OPT_MAX_ACTIVE,
	OPT_MAX_APPEND,
	OPT_FORCE,
	OPT_VOLATILE_CACHE,
	OPT_HELP,
};

static const struct option create_opts[] = {
	{ "zone-size", required_argument, NULL, OPT_ZONE_SIZE },
	{ "zone-cap", required_argument, NULL, OPT_ZONE_CAP },
	{ "zones", required_argument, NULL, OPT_ZONES },
	{ "conv", required_argument, NULL, OPT_CONV },
	{ "lba-size", required_argument, NULL, OPT_LBA_SIZE },
	{ "max-open", required_argument, NULL, OPT_MAX_OPEN },
	{ "max-active", required_argument, NULL, OPT_MAX_ACTIVE },
	{ "max-append", required_argument, NULL, OPT_MAX_APPEND },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "volatile-cache", no_argument, NULL, OPT_VOLATILE_CACHE },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static const struct option plain_opts[] = {
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

struct create_args {
	struct p2z_emu_params p;
	bool have_size, have_cap, have_zones;
	unsigned int flags; /* P2Z_EMU_CREATE_* */
};

/* One create option into @a; returns 0 or an exit code. */
static int create_opt(int c, const char *arg, struct create_args *a)
{
	const char *name = "?";
	uint64_t v;
	int ret;
	size_t i;

	for (i = 0; create_opts[i].name; i++)
		if (create_opts[i].val == c)
			name = create_opts[i].name;
	switch (c) {
	case OPT_ZONE_SIZE:
	case OPT_ZONE_CAP:
	case OPT_MAX_APPEND:
		ret = parse_opt_u64(
			name, arg, true,
			c == OPT_MAX_APPEND ? UINT32_MAX : UINT64_MAX, &v);
		break;
	default:
		ret = parse_opt_u64(name, arg, false,
				    c == OPT_ZONES || c == OPT_CONV ?
					    UINT64_MAX :
					    UINT32_MAX,
				    &v);
		break;
	}
	if (ret)
		return ret;
	switch (c) {
	case OPT_ZONE_SIZE:
		a->p.zone_bytes = v;
		a->have_size = true;
		break;
	case OPT_ZONE_CAP:
		a->p.cap_bytes = v;
		a->have_cap = true;
		break;
	case OPT_ZONES:
		a->p.nr_zones = v;
		a->have_zones = true;
		break;
	case OPT_CONV:
		a->p.nr_cnv_zones = v;
		break;
	case OPT_LBA_SIZE:
		a->p.lba_bytes = (uint32_t)v;
		break;
	case OPT_MAX_OPEN:
		a->p.max_open = (uint32_t)v;
		break;
	case OPT_MAX_ACTIVE:
		a->p.max_active = (uint32_t)v;
		break;
	case OPT_MAX_APPEND:
		a->p.max_append_bytes = (uint32_t)v;
		break;
	}
	return 0;
}

static int cmd_create(int argc, char **argv)
{
	struct create_args a = {
		.p = { .lba_bytes = 4096, .max_append_bytes = 512 * 1024 },
	};
	char why[WHY_LEN];
	const char *path;
	struct stat st;
	int c, ret;

	while ((c = getopt_long(argc, argv, ":", create_opts, NULL)) != -1) {
		if (c == '?' || c == ':')
			return usage_error(c, argv);
		if (c == OPT_HELP) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (c == OPT_FORCE || c == OPT_VOLATILE_CACHE) {
			a.flags |= c == OPT_FORCE ?
					   P2Z_EMU_CREATE_FORCE :
					   P2Z_EMU_CREATE_VOLATILE_CACHE;
			continue;
		}
		ret = create_opt(c, optarg, &a);
		if (ret)
			return ret;
	}
	if (optind != argc - 1)
		return p2z_cli_fail(PROG, EXIT_USAGE,
				    "create needs exactly one IMAGE");
	path = argv[optind];
	if (!a.have_size || !a.have_zones)
		return p2z_cli_fail(PROG, EXIT_USAGE,
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

static void print_size(const char *label, uint64_t bytes, uint32_t lba)
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

static void print_limit(const char *label, uint32_t v)
{
	if (v)
		printf("%-16s%u\n", label, v);
	else
		printf("%-16sunlimited\n", label);
}

static void print_geometry(const struct p2z_dev *dev, const struct p2z_geom *g,
			   const struct p2z_emu_params *p)
{
	const struct p2z_dev_info *in = &dev->info;

	printf("%-16s%s (emu)\n", "image:", dev->path);
	printf("%-16s%u\n", "lba size:", in->lba_bytes);
	print_size("zone size:", in->zone_lba * in->lba_bytes, in->lba_bytes);
	print_size("po2 zone size:", g->po2_zone_lba * in->lba_bytes,
		   in->lba_bytes);
	print_size("zone capacity:", p->cap_bytes, in->lba_bytes);
	printf("%-16s%llu (%llu conventional, %llu sequential)\n",
	       "zones:", (unsigned long long)in->nr_zones,
	       (unsigned long long)p->nr_cnv_zones,
	       (unsigned long long)(in->nr_zones - p->nr_cnv_zones));
	print_limit("max open:", in->max_open);
	print_limit("max active:", in->max_active);
	printf("%-16s%u bytes\n", "max append:", in->max_append_bytes);
	printf("%-16s%u bytes\n", "max transfer:", in->max_xfer_bytes);
	printf("%-16s%s\n", "write cache:",
	       in->volatile_cache ? "volatile (flush or FUA to persist)" :
				    "none (writes persist as they complete)");
}

static void format_faults(int bits, char *buf, size_t len)
{
	static const struct {
		int bit;
		const char *word;
	} names[] = {
		{ P2Z_EMU_PENDING_READONLY, "read-only" },
		{ P2Z_EMU_PENDING_OFFLINE, "offline" },
		{ P2Z_EMU_PENDING_ONLINE, "online" },
		{ P2Z_EMU_PENDING_FAIL_IO, "fail-next-io" },
	};
	size_t i, n = 0;

	snprintf(buf, len, "-");
	for (i = 0; bits > 0 && i < sizeof(names) / sizeof(names[0]); i++)
		if (bits & names[i].bit)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0,
					      "%s%s", n ? "," : "",
					      names[i].word);
}

static void print_zone(struct p2z_dev *dev, const struct p2z_geom *g,
		       uint64_t zidx, const struct p2z_zone_info *zi)
{
	uint64_t lba = dev->info.lba_bytes;
	char wp[24], faults[64];

	if (zi->type == P2Z_ZONE_TYPE_CNV)
		snprintf(wp, sizeof(wp), "-");
	else
		snprintf(wp, sizeof(wp), "%llu",
			 (unsigned long long)((zi->wp_lba - zi->start_lba) *
					      lba));
	format_faults(p2z_emu_pending_faults(dev, zidx), faults,
		      sizeof(faults));
	printf("%6llu %-4s %-14s %15llu %15s %15llu %15llu %s\n",
	       (unsigned long long)zidx,
	       zi->type == P2Z_ZONE_TYPE_CNV ? "cnv" : "seq",
	       p2z_zone_cond_name(zi->cond),
	       (unsigned long long)(zi->start_lba * lba), wp,
	       (unsigned long long)(zi->cap_lba * lba),
	       (unsigned long long)(p2z_geom_po2_zone_start(g, zidx) * lba),
	       faults);
}

static int report_zones(struct p2z_dev *dev, const struct p2z_geom *g)
{
	struct p2z_zone_info zi[256];
	uint64_t zidx = 0;
	int n, i;

	printf("\n# start, capacity, po2-start: bytes; wp: write pointer - zone start, bytes\n");
	printf("%6s %-4s %-14s %15s %15s %15s %15s %s\n", "zone", "type",
	       "cond", "start", "wp", "capacity", "po2-start", "pending");
	while (zidx < dev->info.nr_zones) {
		n = p2z_dev_report_zones(dev, zidx, 256, zi);
		if (n <= 0)
			return p2z_cli_fail(PROG, EXIT_FAILURE,
					    "%s: report zones: %s", dev->path,
					    strerror(n ? -n : EIO));
		for (i = 0; i < n; i++)
			print_zone(dev, g, zidx + (uint64_t)i, &zi[i]);
		zidx += (uint64_t)n;
	}
	return 0;
}

static int cmd_report(int argc, char **argv)
{
	struct p2z_emu_params p;
	char why[WHY_LEN];
	struct p2z_dev *dev;
	struct p2z_geom g;
	int c, ret;

	while ((c = getopt_long(argc, argv, ":", plain_opts, NULL)) != -1) {
		if (c != OPT_HELP)
			return usage_error(c, argv);
		fputs(usage_text, stdout);
		return 0;
	}
	if (optind != argc - 1)
		return p2z_cli_fail(PROG, EXIT_USAGE,
				    "report needs exactly one IMAGE");
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
		print_geometry(dev, &g, &p);
		ret = report_zones(dev, &g);
	}
	p2z_dev_close(dev);
	if (!ret && fflush(stdout))
		ret = p2z_cli_fail(PROG, EXIT_FAILURE, "writing the report: %s",
				   strerror(errno));
	return ret;
}

static int cmd_set_zone(int argc, char **argv)
{
	struct p2z_emu_params p;
	enum p2z_emu_fault fault;
	char why[WHY_LEN];
	const char *path;
	uint64_t zidx;
	int c;

	while ((c = getopt_long(argc, argv, ":", plain_opts, NULL)) != -1) {
		if (c != OPT_HELP)
			return usage_error(c, argv);
		fputs(usage_text, stdout);
		return 0;
	}
	if (optind != argc - 3)
		return p2z_cli_fail(PROG, EXIT_USAGE,
				    "set-zone needs IMAGE ZONE FAULT");
	path = argv[optind];
	if (parse_u64(argv[optind + 1], false, &zidx))
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
	const char *cmd = argc > 1 ? argv[1] : NULL;

	opterr = 0;
	if (!cmd)
		return p2z_cli_fail(PROG, EXIT_USAGE,
				    "missing command (see " PROG " --help)");
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") ||
	    !strcmp(cmd, "help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	/* Each command parses its own options; argv[1] plays argv[0]. */
	if (!strcmp(cmd, "create"))
		return cmd_create(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "set-zone"))
		return cmd_set_zone(argc - 1, argv + 1);
	return p2z_cli_fail(PROG, EXIT_USAGE,
			    "unknown command '%s' (see " PROG " --help)", cmd);
}
