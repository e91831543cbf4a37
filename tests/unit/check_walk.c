// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The zone walk of the device layer (dev_walk.c) over the emu backend: the
 * exact zones visited, in order, in batches of P2Z_DEV_WALK_BATCH; a
 * callback that stops the walk; what a report that falls short makes of it
 * (a backend's report_zones hooked to fill fewer entries, none, more than
 * asked, or to fail); and the write pointer rule of struct p2z_zone_info as
 * the emu backend keeps it.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "p2z_check.h"
#include "po2zfs/dev.h"
#include "po2zfs/emu.h"
#include "po2zfs/log.h"

#define LBA 512U
#define ZONE_LBA 16U
#define CAP_LBA 12U
#define NR_CNV 3U
/* Two whole batches and a part of a third. */
#define NR_ZONES (2 * P2Z_DEV_WALK_BATCH + 88)
#define MAX_CALLS 64
#define NO_ZONE UINT64_MAX

/**
 * struct hook - the emu backend's report_zones, hooked and recorded
 * @ops: the emu ops with report_zones replaced
 * @real: the emu backend's report_zones
 * @most: fill at most this many entries per call (0: as asked)
 * @fail_from: from this zone on, return @fail_ret instead (NO_ZONE: never)
 * @fail_ret: 0, -errno, or 1 for "one entry more than asked"
 * @nr: calls recorded
 * @zidx: first zone of each call
 * @want: entries asked of each call
 * @got: what each call returned
 */
struct hook {
	struct p2z_dev_ops ops;
	int (*real)(struct p2z_dev *dev, uint64_t zidx, unsigned int nr,
		    struct p2z_zone_info *zi);
	unsigned int most;
	uint64_t fail_from;
	int fail_ret;
	unsigned int nr;
	uint64_t zidx[MAX_CALLS];
	unsigned int want[MAX_CALLS];
	int got[MAX_CALLS];
};

/**
 * struct visits - what the callback saw
 * @nr: calls
 * @zidx: zone index of each call
 * @zi: the report of each zone, by index
 * @stop_at: return @stop_ret at this zone (NO_ZONE: never)
 * @stop_ret: what the callback returns there
 */
struct visits {
	unsigned int nr;
	uint64_t zidx[NR_ZONES + 1];
	struct p2z_zone_info zi[NR_ZONES];
	uint64_t stop_at;
	int stop_ret;
};

static struct {
	char dir[256];
	char path[300];
	struct p2z_dev *dev;
	struct hook hk;
	struct visits v;
} fx;

static int hook_report(struct p2z_dev *dev, uint64_t zidx, unsigned int nr,
		       struct p2z_zone_info *zi)
{
	struct hook *hk = &fx.hk;
	unsigned int i = hk->nr++;
	int ret;

	ck_assert_uint_lt(i, MAX_CALLS);
	hk->zidx[i] = zidx;
	hk->want[i] = nr;
	if (zidx >= hk->fail_from && hk->fail_ret <= 0) {
		ret = hk->fail_ret;
	} else {
		ret = hk->real(dev, zidx,
			       hk->most && nr > hk->most ? hk->most : nr, zi);
		if (zidx >= hk->fail_from && ret > 0)
			ret = (int)nr + 1;
	}
	hk->got[i] = ret;
	return ret;
}

static void fx_open(void)
{
	ck_assert_int_eq(p2z_dev_open(fx.path, "emu", 0, &fx.dev), 0);
	fx.hk.ops = *fx.dev->ops;
	fx.hk.real = fx.hk.ops.report_zones;
	fx.hk.ops.report_zones = hook_report;
	fx.hk.fail_from = NO_ZONE;
	fx.dev->ops = &fx.hk.ops;
	fx.v.stop_at = NO_ZONE;
}

static void fx_close(void)
{
	p2z_dev_close(fx.dev);
	fx.dev = NULL;
}

static void fx_setup(void)
{
	const struct p2z_emu_params p = {
		.lba_bytes = LBA,
		.zone_bytes = ZONE_LBA * LBA,
		.cap_bytes = CAP_LBA * LBA,
		.nr_zones = NR_ZONES,
		.nr_cnv_zones = NR_CNV,
		.max_append_bytes = 4 * LBA,
	};

	memset(&fx, 0, sizeof(fx));
	p2z_check_mkdtemp(fx.dir, sizeof(fx.dir), "check_walk");
	snprintf(fx.path, sizeof(fx.path), "%s/img", fx.dir);
	ck_assert_int_eq(p2z_emu_create(fx.path, &p, false), 0);
	fx_open();
}

static void fx_teardown(void)
{
	fx_close();
	p2z_check_rmdtemp(fx.dir);
}

static int visit(const struct p2z_zone_info *zi, uint64_t zidx, void *arg)
{
	struct visits *v = arg;

	ck_assert_uint_le(v->nr, NR_ZONES);
	v->zidx[v->nr++] = zidx;
	ck_assert_uint_lt(zidx, NR_ZONES);
	v->zi[zidx] = *zi;
	return zidx == v->stop_at ? v->stop_ret : 0;
}

static int walk(uint64_t from, uint64_t nr)
{
	return p2z_dev_zone_walk(fx.dev, from, nr, visit, &fx.v);
}

/* The callback saw exactly zones [from, from + nr), in order. */
static void assert_visited(uint64_t from, uint64_t nr)
{
	unsigned int i;

	ck_assert_uint_eq(fx.v.nr, nr);
	for (i = 0; i < nr; i++)
		ck_assert_uint_eq(fx.v.zidx[i], from + i);
}

static void assert_call(unsigned int i, uint64_t zidx, unsigned int want,
			int got)
{
	ck_assert_uint_lt(i, fx.hk.nr);
	ck_assert_uint_eq(fx.hk.zidx[i], zidx);
	ck_assert_uint_eq(fx.hk.want[i], want);
	ck_assert_int_eq(fx.hk.got[i], got);
}

/* The whole device: three reports, every zone once, each its own report. */
START_TEST(test_walk_all)
{
	uint64_t zidx;

	ck_assert_uint_gt(NR_ZONES, 2 * P2Z_DEV_WALK_BATCH);
	ck_assert_int_eq(walk(0, NR_ZONES), 0);
	assert_visited(0, NR_ZONES);
	ck_assert_uint_eq(fx.hk.nr, 3);
	assert_call(0, 0, P2Z_DEV_WALK_BATCH, P2Z_DEV_WALK_BATCH);
	assert_call(1, P2Z_DEV_WALK_BATCH, P2Z_DEV_WALK_BATCH,
		    P2Z_DEV_WALK_BATCH);
	assert_call(2, 2 * P2Z_DEV_WALK_BATCH, 88, 88);
	for (zidx = 0; zidx < NR_ZONES; zidx++) {
		ck_assert_uint_eq(fx.v.zi[zidx].start_lba, zidx * ZONE_LBA);
		ck_assert_uint_eq(fx.v.zi[zidx].type,
				  zidx < NR_CNV ? P2Z_ZONE_TYPE_CNV :
						  P2Z_ZONE_TYPE_SEQ);
	}
}
END_TEST

/* A range: only its zones, batches counted from its first zone. */
START_TEST(test_walk_range)
{
	unsigned long errs = p2z_log_errors();

	ck_assert_int_eq(walk(250, 300), 0);
	assert_visited(250, 300);
	ck_assert_uint_eq(fx.hk.nr, 2);
	assert_call(0, 250, P2Z_DEV_WALK_BATCH, P2Z_DEV_WALK_BATCH);
	assert_call(1, 250 + P2Z_DEV_WALK_BATCH, 300 - P2Z_DEV_WALK_BATCH,
		    300 - P2Z_DEV_WALK_BATCH);

	/* The last zone alone; nothing at all. */
	memset(&fx.v, 0, sizeof(fx.v));
	fx.v.stop_at = NO_ZONE;
	ck_assert_int_eq(walk(NR_ZONES - 1, 1), 0);
	assert_visited(NR_ZONES - 1, 1);
	ck_assert_int_eq(walk(NR_ZONES - 1, 0), 0);
	ck_assert_int_eq(walk(NR_ZONES, 0), 0);
	ck_assert_uint_eq(fx.v.nr, 1);
	ck_assert_uint_eq(fx.hk.nr, 3);

	/* Past the last zone: refused before any report. */
	ck_assert_int_eq(walk(NR_ZONES - 1, 2), -EINVAL);
	ck_assert_int_eq(walk(NR_ZONES + 1, 0), -EINVAL);
	ck_assert_int_eq(walk(1, UINT64_MAX), -EINVAL);
	ck_assert_uint_eq(fx.v.nr, 1);
	ck_assert_uint_eq(fx.hk.nr, 3);
	ck_assert_uint_eq(p2z_log_errors(), errs);
}
END_TEST

/* A nonzero return of the callback ends the walk with that value. */
START_TEST(test_walk_stop)
{
	fx.v.stop_at = P2Z_DEV_WALK_BATCH + 44;
	fx.v.stop_ret = 7;
	ck_assert_int_eq(walk(0, NR_ZONES), 7);
	assert_visited(0, P2Z_DEV_WALK_BATCH + 45);
	/* No report past the batch of the zone that stopped it. */
	ck_assert_uint_eq(fx.hk.nr, 2);

	memset(&fx.v, 0, sizeof(fx.v));
	memset(fx.hk.zidx, 0, sizeof(fx.hk.zidx));
	fx.hk.nr = 0;
	fx.v.stop_at = 5;
	fx.v.stop_ret = -ENOSPC;
	ck_assert_int_eq(walk(5, 10), -ENOSPC);
	assert_visited(5, 1);
	ck_assert_uint_eq(fx.hk.nr, 1);
	assert_call(0, 5, 10, 10);
}
END_TEST

/* A backend filling fewer entries than asked: the walk goes on after them. */
START_TEST(test_walk_backend_short)
{
	unsigned int i;

	fx.hk.most = 100;
	ck_assert_int_eq(walk(0, NR_ZONES), 0);
	assert_visited(0, NR_ZONES);
	ck_assert_uint_eq(fx.hk.nr, 6);
	for (i = 0; i < 4; i++)
		assert_call(i, 100 * i, P2Z_DEV_WALK_BATCH, 100);
	/* Never past the end of the range, however short the reports. */
	assert_call(4, 400, NR_ZONES - 400, 100);
	assert_call(5, 500, NR_ZONES - 500, 100);
}
END_TEST

/*
 * A report of no zone before the end: -EIO and one error line, after the
 * zones reported before it, whatever the callback says of them.
 */
START_TEST(test_walk_short_report)
{
	unsigned long errs = p2z_log_errors();

	fx.hk.most = 100;
	fx.hk.fail_from = 300;
	fx.hk.fail_ret = 0;
	ck_assert_int_eq(walk(0, NR_ZONES), -EIO);
	assert_visited(0, 300);
	ck_assert_uint_eq(fx.hk.nr, 4);
	assert_call(3, 300, P2Z_DEV_WALK_BATCH, 0);
	ck_assert_uint_eq(p2z_log_errors(), errs + 1);
}
END_TEST

/* A failed report: its errno and one error line. */
START_TEST(test_walk_report_error)
{
	unsigned long errs = p2z_log_errors();

	fx.hk.fail_from = P2Z_DEV_WALK_BATCH;
	fx.hk.fail_ret = -ENXIO;
	ck_assert_int_eq(walk(0, NR_ZONES), -ENXIO);
	assert_visited(0, P2Z_DEV_WALK_BATCH);
	ck_assert_uint_eq(fx.hk.nr, 2);
	assert_call(1, P2Z_DEV_WALK_BATCH, P2Z_DEV_WALK_BATCH, -ENXIO);
	ck_assert_uint_eq(p2z_log_errors(), errs + 1);
}
END_TEST

/* More entries than asked: -EIO, none of that batch handed on. */
START_TEST(test_walk_report_too_many)
{
	unsigned long errs = p2z_log_errors();

	fx.hk.fail_from = 10;
	fx.hk.fail_ret = 1;
	ck_assert_int_eq(walk(10, 20), -EIO);
	assert_visited(10, 0);
	ck_assert_uint_eq(fx.hk.nr, 1);
	assert_call(0, 10, 20, 21);
	ck_assert_uint_eq(p2z_log_errors(), errs + 1);
}
END_TEST

static void write_lbas(uint64_t zidx, unsigned int nr)
{
	size_t len = (size_t)nr * LBA;
	void *buf = NULL;

	ck_assert_int_eq(posix_memalign(&buf, 4096, len), 0);
	memset(buf, 0xa5, len);
	ck_assert_int_eq(p2z_dev_pwrite(fx.dev, buf, len, zidx * ZONE_LBA * LBA,
					0),
			 (ssize_t)len);
	free(buf);
}

/*
 * The write pointer rule (struct p2z_zone_info) as the emu backend keeps
 * it: start for conventional and empty zones, the device's for written
 * ones, start + capacity when full, where it stood for read-only and
 * offline zones; inside the zone everywhere.
 */
START_TEST(test_walk_wp_rule)
{
	const uint64_t e = NR_CNV, w = NR_CNV + 1, f = NR_CNV + 2;
	const uint64_t ro = NR_CNV + 3, off = NR_CNV + 4;
	const struct p2z_zone_info *zi = fx.v.zi;
	uint64_t zidx;

	write_lbas(0, 4);
	write_lbas(w, 8);
	write_lbas(f, 2);
	ck_assert_int_eq(p2z_dev_zone_mgmt(fx.dev, f, P2Z_ZONE_OP_FINISH), 0);
	write_lbas(ro, 4);
	write_lbas(off, 2);
	fx_close();
	ck_assert_int_eq(p2z_emu_set_fault(fx.path, ro, P2Z_EMU_FAULT_READONLY),
			 0);
	ck_assert_int_eq(p2z_emu_set_fault(fx.path, off, P2Z_EMU_FAULT_OFFLINE),
			 0);
	fx_open();

	ck_assert_int_eq(walk(0, NR_ZONES), 0);
	ck_assert_uint_eq(zi[0].cond, P2Z_ZONE_COND_NOT_WP);
	ck_assert_uint_eq(zi[0].wp_lba, 0);
	ck_assert_uint_eq(zi[e].cond, P2Z_ZONE_COND_EMPTY);
	ck_assert_uint_eq(zi[e].wp_lba, e * ZONE_LBA);
	ck_assert_uint_eq(zi[w].cond, P2Z_ZONE_COND_CLOSED);
	ck_assert_uint_eq(zi[w].wp_lba, w * ZONE_LBA + 8);
	ck_assert_uint_eq(zi[f].cond, P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(zi[f].wp_lba, f * ZONE_LBA + CAP_LBA);
	ck_assert_uint_eq(zi[ro].cond, P2Z_ZONE_COND_READONLY);
	ck_assert_uint_eq(zi[ro].wp_lba, ro * ZONE_LBA + 4);
	ck_assert_uint_eq(zi[off].cond, P2Z_ZONE_COND_OFFLINE);
	ck_assert_uint_eq(zi[off].wp_lba, off * ZONE_LBA + 2);
	for (zidx = 0; zidx < NR_ZONES; zidx++) {
		ck_assert_uint_ge(zi[zidx].wp_lba, zi[zidx].start_lba);
		ck_assert_uint_le(zi[zidx].wp_lba,
				  zi[zidx].start_lba + zi[zidx].cap_lba);
	}
}
END_TEST

static Suite *walk_suite(void)
{
	Suite *s = suite_create("walk");
	TCase *tc = tcase_create("walk");

	tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
	tcase_add_test(tc, test_walk_all);
	tcase_add_test(tc, test_walk_range);
	tcase_add_test(tc, test_walk_stop);
	tcase_add_test(tc, test_walk_backend_short);
	tcase_add_test(tc, test_walk_short_report);
	tcase_add_test(tc, test_walk_report_error);
	tcase_add_test(tc, test_walk_report_too_many);
	tcase_add_test(tc, test_walk_wp_rule);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return p2z_check_run(walk_suite());
}
