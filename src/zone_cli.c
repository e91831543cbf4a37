// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * po2zfs-zone: report, map, reset and finish the zones of any device po2zfs
 * mounts (nvme, zbd, emu), through the same device layer. See
 * man/po2zfs-zone.8.
 *
 * report and map only look (the device is opened read-only without a
 * claim, as po2zfs-emu report does: they work on a mounted device); reset
 * and finish claim the device as a mount does, so a device that a po2zfs
 * daemon has (or any other claim) is refused with EBUSY.
 *
 * Exit status: 0 success, 1 failure, 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "po2zfs/cli.h"
#include "po2zfs/dev.h"
#include "po2zfs/geom.h"

#define PROG "po2zfs-zone"
#define P2Z_MAP_PER_ROW 16

static const char p2z_zcli_usage[] =
	"Usage:\n"
	"  " PROG " report [--json] DEVICE\n"
	"  " PROG " map DEVICE\n"
	"  " PROG " reset DEVICE ZONE|FIRST-LAST|--all [--yes]\n"
	"  " PROG " finish DEVICE ZONE|FIRST-LAST|--all [--yes]\n"
	"  " PROG " --help | --version\n"
	"\n"
	"DEVICE: /dev/ngXnY, /dev/nvmeXnY, a zoned block device or an emulated\n"
	"image (po2zfs-emu). ZONE: a device zone index, as report prints it.\n"
	"\n"
	"Options:\n"
	"  --backend nvme|zbd|emu  force the backend (default: from the path)\n"
	"  --json             report as JSON\n"
	"  --all              every sequential zone\n"
	"  --yes              do not ask (needed when stdin is not a terminal)\n"
	"  --help             this text\n"
	"  --version          the version\n";

enum {
	P2Z_ZCLI_OPT_BACKEND = 256,
	P2Z_ZCLI_OPT_JSON,
	P2Z_ZCLI_OPT_ALL,
	P2Z_ZCLI_OPT_YES,
	P2Z_ZCLI_OPT_HELP,
};

static const struct option p2z_zcli_opts[] = {
	{ "backend", required_argument, NULL, P2Z_ZCLI_OPT_BACKEND },
	{ "json", no_argument, NULL, P2Z_ZCLI_OPT_JSON },
	{ "all", no_argument, NULL, P2Z_ZCLI_OPT_ALL },
	{ "yes", no_argument, NULL, P2Z_ZCLI_OPT_YES },
	{ "help", no_argument, NULL, P2Z_ZCLI_OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/**
 * struct p2z_zcli - one command line
 * @cmd: "report", "map", "reset" or "finish"
 * @backend: --backend value, or NULL
 * @args: operands after the command (DEVICE, ZONE...)
 * @nr_args: number of @args
 */
struct p2z_zcli {
	const char *cmd;
	const char *backend;
	bool json, all, yes;
	char **args;
	int nr_args;
};

static int p2z_zcli_parse(int argc, char **argv, struct p2z_zcli *z)
{
	int c;

	memset(z, 0, sizeof(*z));
	z->cmd = argv[1];
	/* argv[1] (the command) plays argv[0]; GNU getopt permutes. */
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, ":", p2z_zcli_opts,
				NULL)) != -1) {
		switch (c) {
		case P2Z_ZCLI_OPT_BACKEND:
			z->backend = optarg;
			break;
		case P2Z_ZCLI_OPT_JSON:
			z->json = true;
			break;
		case P2Z_ZCLI_OPT_ALL:
			z->all = true;
			break;
		case P2Z_ZCLI_OPT_YES:
			z->yes = true;
			break;
		case P2Z_ZCLI_OPT_HELP:
			fputs(p2z_zcli_usage, stdout);
			return 1;
		default:
			return p2z_cli_bad_option(PROG, c, argv[optind]);
		}
	}
	z->args = argv + 1 + optind;
	z->nr_args = argc - 1 - optind;
	return 0;
}

/*
 * report and map: a look without a claim (works while mounted); reset and
 * finish: a claim, as a read-write mount takes.
 */
static int p2z_zcli_open(const struct p2z_zcli *z, bool claim,
			 struct p2z_dev **devp, struct p2z_geom *g)
{
	const char *path = z->args[0];
	int ret;

	/* p2z_dev_open() says why in one line (EBUSY: who may hold it). */
	ret = p2z_dev_open(path, z->backend,
			   claim ? 0 : P2Z_DEV_RDONLY | P2Z_DEV_PEEK, devp);
	if (ret)
		return EXIT_FAILURE;
	ret = p2z_geom_init(g, (*devp)->info.lba_bytes, (*devp)->info.zone_lba,
			    (*devp)->info.nr_zones);
	if (ret) {
		p2z_dev_close(*devp);
		return p2z_cli_fail(PROG, EXIT_FAILURE, "%s: geometry: %s",
				    path, strerror(-ret));
	}
	return 0;
}

typedef void (*p2z_zcli_zone_fn)(struct p2z_dev *dev, const struct p2z_geom *g,
				 uint64_t zidx, const struct p2z_zone_info *zi,
				 void *arg);

/* What p2z_zcli_for_each_zone() passes its printers. */
struct p2z_zcli_each {
	struct p2z_dev *dev;
	const struct p2z_geom *g;
	p2z_zcli_zone_fn fn;
	void *arg;
};

static int p2z_zcli_each_zone(const struct p2z_zone_info *zi, uint64_t zidx,
			      void *arg)
{
	struct p2z_zcli_each *e = arg;

	e->fn(e->dev, e->g, zidx, zi, e->arg);
	return 0;
}

/*
 * The exit status of a zone walk: @fn's own (positive, said already), or
 * a failed report (logged by the walk).
 */
static int p2z_zcli_walk_status(int ret)
{
	return ret < 0 ? EXIT_FAILURE : ret;
}

/* Call @fn for every zone, in order. */
static int p2z_zcli_for_each_zone(struct p2z_dev *dev, const struct p2z_geom *g,
				  p2z_zcli_zone_fn fn, void *arg)
{
	struct p2z_zcli_each e = { .dev = dev, .g = g, .fn = fn, .arg = arg };

	return p2z_zcli_walk_status(p2z_dev_zone_walk(
		dev, 0, dev->info.nr_zones, p2z_zcli_each_zone, &e));
}

static void p2z_zcli_print_lbas(const char *what, uint64_t lbas,
				uint32_t lba_bytes)
{
	uint64_t bytes = lbas * lba_bytes;

	if (bytes % (1024 * 1024) == 0)
		printf("%-16s%" PRIu64 " LBAs (%" PRIu64 " MiB)\n", what, lbas,
		       bytes / (1024 * 1024));
	else
		printf("%-16s%" PRIu64 " LBAs (%" PRIu64 " KiB)\n", what, lbas,
		       bytes / 1024);
}

static void p2z_zcli_print_geometry(struct p2z_dev *dev,
				    const struct p2z_geom *g, uint64_t nr_cnv)
{
	const struct p2z_dev_info *in = &dev->info;

	printf("%-16s%s (%s)\n", "device:", dev->path, dev->ops->name);
	printf("%-16s%u bytes\n", "lba size:", in->lba_bytes);
	p2z_zcli_print_lbas("zone size:", in->zone_lba, in->lba_bytes);
	p2z_zcli_print_lbas("po2 zone size:", g->po2_zone_lba, in->lba_bytes);
	printf("%-16s%" PRIu64 " (%" PRIu64 " conventional, %" PRIu64
	       " sequential)\n",
	       "zones:", in->nr_zones, nr_cnv, in->nr_zones - nr_cnv);
	p2z_cli_print_limit("max open:", in->max_open);
	p2z_cli_print_limit("max active:", in->max_active);
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void p2z_zcli_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void p2z_zcli_json_zone(struct p2z_dev *dev, const struct p2z_geom *g,
			       uint64_t zidx, const struct p2z_zone_info *zi,
			       void *arg)
{
	bool cnv = zi->type == P2Z_ZONE_TYPE_CNV;

	printf("%s\n    {\"zone\": %" PRIu64 ", \"type\": \"%s\", "
	       "\"cond\": \"%s\", \"start_lba\": %" PRIu64
	       ", \"po2_start_lba\": %" PRIu64 ", ",
	       zidx ? "," : "", zidx, cnv ? "cnv" : "seq",
	       p2z_zone_cond_name(zi->cond), zi->start_lba,
	       p2z_geom_po2_zone_start(g, zidx));
	if (cnv)
		printf("\"wp_lba\": null, ");
	else
		printf("\"wp_lba\": %" PRIu64 ", ", zi->wp_lba);
	printf("\"cap_lba\": %" PRIu64 ", ", zi->cap_lba);
	if (cnv)
		printf("\"fill_pct\": null}");
	else
		printf("\"fill_pct\": %u}", p2z_cli_fill_pct(zi));
	(void)dev;
	(void)arg;
}

static int p2z_zcli_report_json(struct p2z_dev *dev, const struct p2z_geom *g,
				uint64_t nr_cnv)
{
	const struct p2z_dev_info *in = &dev->info;
	int ret;

	printf("{\n  \"device\": ");
	p2z_zcli_json_str(dev->path);
	printf(",\n  \"backend\": \"%s\",\n", dev->ops->name);
	printf("  \"lba_bytes\": %u,\n  \"zone_lba\": %" PRIu64
	       ",\n  \"po2_zone_lba\": %" PRIu64 ",\n",
	       in->lba_bytes, in->zone_lba, g->po2_zone_lba);
	printf("  \"nr_zones\": %" PRIu64 ",\n  \"nr_cnv_zones\": %" PRIu64
	       ",\n",
	       in->nr_zones, nr_cnv);
	printf("  \"max_open\": %u,\n  \"max_active\": %u,\n  \"zones\": [",
	       in->max_open, in->max_active);
	ret = p2z_zcli_for_each_zone(dev, g, p2z_zcli_json_zone, NULL);
	printf("\n  ]\n}\n");
	return ret;
}

/* The device layer does not count zones by type: the report does. */
static void p2z_zcli_count_cnv(struct p2z_dev *dev, const struct p2z_geom *g,
			       uint64_t zidx, const struct p2z_zone_info *zi,
			       void *arg)
{
	uint64_t *nr_cnv = arg;

	if (zi->type == P2Z_ZONE_TYPE_CNV)
		(*nr_cnv)++;
	(void)dev;
	(void)g;
	(void)zidx;
}

static int p2z_zcli_report(const struct p2z_zcli *z)
{
	static const struct p2z_cli_report_opts opts = { .bytes = false };
	uint64_t nr_cnv = 0;
	struct p2z_dev *dev;
	struct p2z_geom g;
	int ret;

	if (z->nr_args != 1)
		return p2z_cli_usage(PROG, "report needs exactly one DEVICE");
	ret = p2z_zcli_open(z, false, &dev, &g);
	if (ret)
		return ret;
	ret = p2z_zcli_for_each_zone(dev, &g, p2z_zcli_count_cnv, &nr_cnv);
	if (!ret && z->json) {
		ret = p2z_zcli_report_json(dev, &g, nr_cnv);
	} else if (!ret) {
		p2z_zcli_print_geometry(dev, &g, nr_cnv);
		ret = p2z_cli_report_zones(dev, &g, &opts);
	}
	p2z_dev_close(dev);
	if (!ret && fflush(stdout))
		ret = p2z_cli_fail(PROG, EXIT_FAILURE, "writing the report: %s",
				   strerror(errno));
	return ret;
}

/**
 * struct p2z_zcli_map - state of the map printer
 * @color: ANSI colours (stdout is a terminal)
 * @nr_zones: zones of the device
 */
struct p2z_zcli_map {
	bool color;
	uint64_t nr_zones;
};

/* Letter and colour of a condition in the map. */
static void p2z_zcli_map_cond(uint8_t cond, char *letter, const char **color)
{
	static const struct {
		uint8_t cond;
		char letter;
		const char *color;
	} conds[] = {
		{ P2Z_ZONE_COND_NOT_WP, 'N', "\033[2m" },
		{ P2Z_ZONE_COND_EMPTY, 'E', "\033[2m" },
		{ P2Z_ZONE_COND_IMP_OPEN, 'I', "\033[32m" },
		{ P2Z_ZONE_COND_EXP_OPEN, 'O', "\033[1;32m" },
		{ P2Z_ZONE_COND_CLOSED, 'C', "\033[33m" },
		{ P2Z_ZONE_COND_FULL, 'F', "\033[34m" },
		{ P2Z_ZONE_COND_READONLY, 'R', "\033[35m" },
		{ P2Z_ZONE_COND_OFFLINE, 'X', "\033[1;31m" },
	};
	size_t i;

	*letter = '?';
	*color = "";
	for (i = 0; i < sizeof(conds) / sizeof(conds[0]); i++) {
		if (conds[i].cond == cond) {
			*letter = conds[i].letter;
			*color = conds[i].color;
		}
	}
}

/*
 * One cell: the condition's letter, then the fill level in tenths (0-9,
 * rounded down, "*" = full to capacity, "-" = conventional or offline).
 */
static void p2z_zcli_map_zone(struct p2z_dev *dev, const struct p2z_geom *g,
			      uint64_t zidx, const struct p2z_zone_info *zi,
			      void *arg)
{
	const struct p2z_zcli_map *m = arg;
	unsigned int pct = p2z_cli_fill_pct(zi);
	const char *color;
	char letter, level;

	(void)dev;
	(void)g;
	p2z_zcli_map_cond(zi->cond, &letter, &color);
	if (zi->type == P2Z_ZONE_TYPE_CNV || zi->cond == P2Z_ZONE_COND_OFFLINE)
		level = '-';
	else if (pct == 100)
		level = '*';
	else
		level = (char)('0' + pct / 10);
	if (zidx % P2Z_MAP_PER_ROW == 0)
		printf("%8" PRIu64 ":", zidx);
	if (m->color)
		printf(" %s%c%c\033[0m", color, letter, level);
	else
		printf(" %c%c", letter, level);
	if (zidx % P2Z_MAP_PER_ROW == P2Z_MAP_PER_ROW - 1 ||
	    zidx + 1 == m->nr_zones)
		putchar('\n');
}

static int p2z_zcli_map(const struct p2z_zcli *z)
{
	struct p2z_zcli_map m;
	struct p2z_dev *dev;
	struct p2z_geom g;
	int ret;

	if (z->nr_args != 1)
		return p2z_cli_usage(PROG, "map needs exactly one DEVICE");
	ret = p2z_zcli_open(z, false, &dev, &g);
	if (ret)
		return ret;
	m.color = isatty(STDOUT_FILENO);
	m.nr_zones = dev->info.nr_zones;
	printf("%s: %" PRIu64 " zones, %d per row\n", dev->path,
	       dev->info.nr_zones, P2Z_MAP_PER_ROW);
	ret = p2z_zcli_for_each_zone(dev, &g, p2z_zcli_map_zone, &m);
	printf("E empty, I implicit-open, O explicit-open, C closed, F full, "
	       "R read-only, X offline, N conventional;\n"
	       "then the written part in tenths of the capacity: 0-9, * full\n");
	p2z_dev_close(dev);
	if (!ret && fflush(stdout))
		ret = p2z_cli_fail(PROG, EXIT_FAILURE, "writing the map: %s",
				   strerror(errno));
	return ret;
}

/* ZONE or FIRST-LAST, decimal. */
static int p2z_zcli_parse_range(const char *s, uint64_t *first, uint64_t *last)
{
	unsigned long long a, b;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	a = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	b = a;
	if (*end == '-') {
		s = end + 1;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		b = strtoull(s, &end, 10);
		if (errno)
			return -ERANGE;
	}
	if (*end || b < a)
		return -EINVAL;
	*first = a;
	*last = b;
	return 0;
}

/* Ask on the terminal; true for "y" or "yes". */
static bool p2z_zcli_confirm(const char *verb, const char *path, uint64_t first,
			     uint64_t last)
{
	char line[16];

	fprintf(stderr, "%s zone%s %" PRIu64, verb, first == last ? "" : "s",
		first);
	if (first != last)
		fprintf(stderr, "-%" PRIu64, last);
	fprintf(stderr, " of %s%s? [y/N] ", path,
		strcmp(verb, "reset") ? "" :
		first == last	      ? " (its data is lost)" :
					" (their data is lost)");
	if (!fgets(line, sizeof(line), stdin))
		return false;
	line[strcspn(line, "\n")] = '\0';
	return !strcasecmp(line, "y") || !strcasecmp(line, "yes");
}

/* The zones to act on: checked against the device, conventional refused. */
static int p2z_zcli_zones_of(const struct p2z_zcli *z, struct p2z_dev *dev,
			     uint64_t *first, uint64_t *last)
{
	const struct p2z_dev_info *in = &dev->info;

	/* Conventional zones need not come first (zbd): all, then narrowed. */
	if (z->all) {
		*first = 0;
		*last = in->nr_zones - 1;
		return 0;
	}
	if (p2z_zcli_parse_range(z->args[1], first, last))
		return p2z_cli_usage(PROG,
				     "'%s' is not a zone or a FIRST-LAST range",
				     z->args[1]);
	if (*last >= in->nr_zones)
		return p2z_cli_fail(PROG, EXIT_FAILURE,
				    "%s: zone %" PRIu64
				    " out of range (%" PRIu64 " zones)",
				    dev->path, *last, in->nr_zones);
	return 0;
}

/* What p2z_zcli_check_types() learns of the range. */
struct p2z_zcli_types {
	const struct p2z_zcli *z;
	const char *path;
	uint64_t nr_seq, seq_first, seq_last;
};

static int p2z_zcli_type_of(const struct p2z_zone_info *zi, uint64_t zidx,
			    void *arg)
{
	struct p2z_zcli_types *t = arg;

	if (zi->type != P2Z_ZONE_TYPE_CNV) {
		if (!t->nr_seq++)
			t->seq_first = zidx;
		t->seq_last = zidx;
		return 0;
	}
	if (!t->z->all)
		return p2z_cli_fail(PROG, EXIT_FAILURE,
				    "%s: zone %" PRIu64
				    " is conventional: nothing to %s",
				    t->path, zidx, t->z->cmd);
	return 0;
}

/*
 * Zone types of [*first, *last]: explicit ranges holding a conventional
 * zone are refused (nothing to reset or finish there); --all skips them and
 * narrows the range to its first and last sequential zones. Sets @nr_seq to
 * the number of sequential zones of the range.
 */
static int p2z_zcli_check_types(const struct p2z_zcli *z, struct p2z_dev *dev,
				uint64_t *first, uint64_t *last,
				uint64_t *nr_seq)
{
	struct p2z_zcli_types t = { .z = z, .path = dev->path };
	int ret;

	ret = p2z_dev_zone_walk(dev, *first, *last - *first + 1,
				p2z_zcli_type_of, &t);
	*nr_seq = t.nr_seq;
	if (ret)
		return p2z_zcli_walk_status(ret);
	if (!t.nr_seq)
		return p2z_cli_fail(PROG, EXIT_FAILURE,
				    "%s: no sequential zones", dev->path);
	*first = t.seq_first;
	*last = t.seq_last;
	return 0;
}

/*
 * Progress of a long reset or finish, on a terminal only: once the command
 * has run for P2Z_ZONE_PROGRESS_MS (default 500 ms; the tests set 0), one
 * line rewritten in place at most every 100 ms, cleared at the end.
 */
struct p2z_zcli_progress {
	bool on;
	bool shown;
	uint64_t after_ms, start_ms, last_ms;
};

static uint64_t p2z_zcli_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void p2z_zcli_progress_init(struct p2z_zcli_progress *p)
{
	const char *env = getenv("P2Z_ZONE_PROGRESS_MS");

	p->on = isatty(STDERR_FILENO);
	p->shown = false;
	p->after_ms = env && *env ? strtoull(env, NULL, 10) : 500;
	p->start_ms = p2z_zcli_ms();
	p->last_ms = 0;
}

static void p2z_zcli_progress(struct p2z_zcli_progress *p, const char *path,
			      const char *cmd, uint64_t done, uint64_t total)
{
	uint64_t now;

	if (!p->on)
		return;
	now = p2z_zcli_ms();
	if (now - p->start_ms < p->after_ms ||
	    (p->shown && done < total && now - p->last_ms < 100))
		return;
	fprintf(stderr, "\r%s: %s: %" PRIu64 "/%" PRIu64 " zones", path, cmd,
		done, total);
	p->shown = true;
	p->last_ms = now;
}

static void p2z_zcli_progress_end(struct p2z_zcli_progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
}

/* The state of p2z_zcli_apply(): where a zone operation failed, and how. */
struct p2z_zcli_apply {
	const struct p2z_zcli *z;
	struct p2z_dev *dev;
	enum p2z_zone_op op;
	struct p2z_zcli_progress pr;
	uint64_t done, nr_seq;
	uint64_t err_zidx;
	int err;
};

static int p2z_zcli_apply_one(const struct p2z_zone_info *zi, uint64_t zidx,
			      void *arg)
{
	struct p2z_zcli_apply *a = arg;

	if (zi->type == P2Z_ZONE_TYPE_CNV)
		return 0;
	a->err = p2z_dev_zone_mgmt(a->dev, zidx, a->op);
	if (a->err) {
		a->err_zidx = zidx;
		return EXIT_FAILURE;
	}
	p2z_zcli_progress(&a->pr, a->dev->path, a->z->cmd, ++a->done,
			  a->nr_seq);
	return 0;
}

/* Reset or finish every sequential zone of [first, last]. */
static int p2z_zcli_apply(const struct p2z_zcli *z, struct p2z_dev *dev,
			  enum p2z_zone_op op, uint64_t first, uint64_t last,
			  uint64_t nr_seq)
{
	struct p2z_zcli_apply a = {
		.z = z, .dev = dev, .op = op, .nr_seq = nr_seq
	};
	int ret;

	p2z_zcli_progress_init(&a.pr);
	ret = p2z_dev_zone_walk(dev, first, last - first + 1,
				p2z_zcli_apply_one, &a);
	p2z_zcli_progress_end(&a.pr);
	if (a.err)
		return p2z_cli_fail(PROG, EXIT_FAILURE,
				    "%s: zone %" PRIu64 ": %s: %s", dev->path,
				    a.err_zidx, z->cmd, strerror(-a.err));
	return p2z_zcli_walk_status(ret);
}

static int p2z_zcli_mgmt(const struct p2z_zcli *z, enum p2z_zone_op op)
{
	uint64_t first = 0, last = 0, nr_seq = 0;
	struct p2z_dev *dev;
	struct p2z_geom g;
	int ret;

	if (z->nr_args != (z->all ? 1 : 2))
		return p2z_cli_usage(
			PROG, "%s needs DEVICE and ZONE, FIRST-LAST or --all",
			z->cmd);
	/* Refuse before touching the device: nobody can say yes. */
	if (!z->yes && !isatty(STDIN_FILENO))
		return p2z_cli_fail(
			PROG, EXIT_FAILURE,
			"%s: not a terminal to ask on: %s needs --yes",
			z->args[0], z->cmd);
	ret = p2z_zcli_open(z, true, &dev, &g);
	if (ret)
		return ret;
	ret = p2z_zcli_zones_of(z, dev, &first, &last);
	if (!ret)
		ret = p2z_zcli_check_types(z, dev, &first, &last, &nr_seq);
	if (ret)
		goto out_close;
	if (!z->yes && !p2z_zcli_confirm(z->cmd, dev->path, first, last)) {
		ret = p2z_cli_fail(PROG, EXIT_FAILURE, "%s: nothing done",
				   dev->path);
		goto out_close;
	}
	ret = p2z_zcli_apply(z, dev, op, first, last, nr_seq);
	if (!ret)
		printf("%s: %s %" PRIu64 " zone%s (%" PRIu64 "-%" PRIu64 ")\n",
		       dev->path,
		       op == P2Z_ZONE_OP_RESET ? "reset" : "finished", nr_seq,
		       nr_seq == 1 ? "" : "s", first, last);
out_close:
	p2z_dev_close(dev);
	return ret;
}

int main(int argc, char **argv)
{
	const char *cmd = argv[argc > 1];
	struct p2z_zcli z;
	int ret;

	ret = p2z_cli_main(PROG, p2z_zcli_usage, argc, argv);
	if (ret >= 0)
		return ret;
	opterr = 0;
	if (strcmp(cmd, "report") && strcmp(cmd, "map") &&
	    strcmp(cmd, "reset") && strcmp(cmd, "finish"))
		return p2z_cli_usage(PROG, "unknown command '%s'", cmd);
	ret = p2z_zcli_parse(argc, argv, &z);
	if (ret)
		return ret > 1 ? ret : 0;
	if (z.json && strcmp(cmd, "report"))
		return p2z_cli_usage(PROG, "--json is for report");
	if ((z.all || z.yes) && (!strcmp(cmd, "report") || !strcmp(cmd, "map")))
		return p2z_cli_usage(
			PROG, "--all and --yes are for reset and finish");
	if (!z.nr_args)
		return p2z_cli_usage(PROG, "%s needs a DEVICE", cmd);
	if (!strcmp(cmd, "report"))
		return p2z_zcli_report(&z);
	if (!strcmp(cmd, "map"))
		return p2z_zcli_map(&z);
	return p2z_zcli_mgmt(&z, !strcmp(cmd, "reset") ? P2Z_ZONE_OP_RESET :
							 P2Z_ZONE_OP_FINISH);
}
