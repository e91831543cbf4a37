// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The zone report of the command line tools, one printer for both:
 * po2zfs-zone report (LBAs, the fill percentage) and po2zfs-emu report
 * (bytes, the faults pending on each zone). See po2zfs/cli.h.
 */
#include <inttypes.h>
#include <stdio.h>

#include "po2zfs/cli.h"
#include "po2zfs/emu.h"

void p2z_cli_print_limit(const char *label, uint32_t v)
{
	if (v)
		printf("%-16s%u\n", label, v);
	else
		printf("%-16sunlimited\n", label);
}

unsigned int p2z_cli_fill_pct(const struct p2z_zone_info *zi)
{
	uint64_t used = zi->wp_lba - zi->start_lba;

	if (!zi->cap_lba || zi->cond == P2Z_ZONE_COND_OFFLINE)
		return 0;
	if (used == zi->cap_lba)
		return 100;
	/* used < cap: no overflow for any cap below 2^57 LBAs */
	return (unsigned int)(used * 100 / zi->cap_lba);
}

/* The cells of one line of the table (or its column header). */
struct p2z_cli_row {
	char zone[24], start[24], po2[24], wp[24], cap[24], fill[8];
	char faults[64];
	const char *type, *cond;
};

static void p2z_cli_print_row(const struct p2z_cli_report_opts *o,
			      const struct p2z_cli_row *r)
{
	printf("%6s %-4s %-14s ", r->zone, r->type, r->cond);
	if (o->bytes)
		printf("%15s %15s %15s %15s", r->start, r->wp, r->cap, r->po2);
	else
		printf("%12s %12s %12s %12s %5s", r->start, r->po2, r->wp,
		       r->cap, r->fill);
	if (o->faults)
		printf(" %s", r->faults);
	putchar('\n');
}

/* "-", or the names of the pending fault bits, comma separated. */
static void p2z_cli_format_faults(int bits, char *buf, size_t len)
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

/* What p2z_cli_report_zone() prints with. */
struct p2z_cli_report {
	struct p2z_dev *dev;
	const struct p2z_geom *g;
	const struct p2z_cli_report_opts *o;
};

#define P2Z_CLI_CELL(cell, v) \
	snprintf(cell, sizeof(cell), "%" PRIu64, (uint64_t)(v))

static int p2z_cli_report_zone(const struct p2z_zone_info *zi, uint64_t zidx,
			       void *arg)
{
	const struct p2z_cli_report *rp = arg;
	uint64_t unit = rp->o->bytes ? rp->dev->info.lba_bytes : 1;
	bool cnv = zi->type == P2Z_ZONE_TYPE_CNV;
	struct p2z_cli_row r = {
		.type = cnv ? "cnv" : "seq",
		.cond = p2z_zone_cond_name(zi->cond),
	};

	P2Z_CLI_CELL(r.zone, zidx);
	P2Z_CLI_CELL(r.start, zi->start_lba * unit);
	P2Z_CLI_CELL(r.po2, p2z_geom_po2_zone_start(rp->g, zidx) * unit);
	P2Z_CLI_CELL(r.cap, zi->cap_lba * unit);
	if (cnv)
		snprintf(r.wp, sizeof(r.wp), "-");
	else if (rp->o->bytes) /* from the zone start */
		P2Z_CLI_CELL(r.wp, (zi->wp_lba - zi->start_lba) * unit);
	else
		P2Z_CLI_CELL(r.wp, zi->wp_lba);
	if (cnv)
		snprintf(r.fill, sizeof(r.fill), "-");
	else
		snprintf(r.fill, sizeof(r.fill), "%u%%", p2z_cli_fill_pct(zi));
	if (rp->o->faults)
		p2z_cli_format_faults(p2z_emu_pending_faults(rp->dev, zidx),
				      r.faults, sizeof(r.faults));
	p2z_cli_print_row(rp->o, &r);
	return 0;
}

int p2z_cli_report_zones(struct p2z_dev *dev, const struct p2z_geom *g,
			 const struct p2z_cli_report_opts *o)
{
	struct p2z_cli_report rp = { .dev = dev, .g = g, .o = o };
	struct p2z_cli_row head = {
		.zone = "zone",
		.type = "type",
		.cond = "cond",
		.start = "start",
		.po2 = "po2-start",
		.wp = "wp",
		.cap = "capacity",
		.fill = "fill",
		.faults = "pending",
	};

	if (o->bytes)
		printf("\n# start, capacity, po2-start: bytes; wp: write pointer - zone start, bytes\n");
	else
		printf("\n# start, po2-start, wp, capacity: LBAs of %u bytes\n",
		       dev->info.lba_bytes);
	p2z_cli_print_row(o, &head);
	return p2z_dev_zone_walk(dev, 0, dev->info.nr_zones,
				 p2z_cli_report_zone, &rp) ?
		       1 :
		       0;
}
