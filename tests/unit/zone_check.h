/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the zone table's Check suites (check_zone*.c) share: the table of
 * geometries the loop tests run over, the fixture (an emu image and the
 * zone table over it, per test) and helpers writing and checking pattern
 * data. Header-only, as p2z_check.h.
 */
#ifndef P2Z_ZONE_CHECK_H
#define P2Z_ZONE_CHECK_H

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "p2z_check.h"
#include "po2zfs/dev.h"
#include "po2zfs/emu.h"
#include "po2zfs/zone.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)

/* lba, zone size, capacity, zones, conventional, open, active, append */
static const struct p2z_emu_params geoms[] = {
	{ 512, 96 * KiB, 80 * KiB, 8, 2, 0, 0, 32 * KiB },
	{ 4096, 3 * MiB, 3 * MiB, 6, 0, 0, 0, 128 * KiB },
	{ 512, 64 * KiB, 48 * KiB, 8, 1, 0, 0, 16 * KiB },
	{ 4096, 96 * KiB, 80 * KiB, 5, 1, 4, 4, 8 * KiB },
	{ 4096, 64 * MiB, 48 * MiB, 3, 0, 0, 0, 1 * MiB },
	{ 512, 96 * MiB, 80 * MiB, 4, 1, 0, 0, 1 * MiB },
};

#define NR_GEOMS ARRAY_SIZE(geoms)
/* Loop index: geometry and write path (even: zone append, odd: write). */
#define NR_GEOM_PATHS (2 * NR_GEOMS)

/* Zones up to this capacity are written to the end by the tests. */
#define SMALL_CAP (4 * MiB)

/* The image of the running test; removed by the checked teardown. */
static struct {
	char dir[256];
	char path[300];
	struct p2z_emu_params p;
	struct p2z_dev *dev;
	struct p2z_zone_table *zt;
} fx;

static inline void fx_create(const struct p2z_emu_params *p)
{
	p2z_check_mkdtemp(fx.dir, sizeof(fx.dir), "check_zone");
	snprintf(fx.path, sizeof(fx.path), "%s/img", fx.dir);
	fx.p = *p;
	ck_assert_int_eq(p2z_emu_create(fx.path, p, false), 0);
}

static inline void fx_open(const struct p2z_zone_opts *o)
{
	ck_assert_int_eq(p2z_dev_open(fx.path, "emu",
				      o->rdonly ? P2Z_DEV_RDONLY : 0, &fx.dev),
			 0);
	ck_assert_int_eq(p2z_zone_table_open(fx.dev, o, &fx.zt), 0);
}

static inline void fx_close(void)
{
	p2z_zone_table_close(fx.zt);
	fx.zt = NULL;
	p2z_dev_close(fx.dev);
	fx.dev = NULL;
}

/* Image with geometry p, table with errors= policy and write path. */
static inline void fx_setup(const struct p2z_emu_params *p,
			    enum p2z_errors errors, bool no_append)
{
	struct p2z_zone_opts o = { .errors = errors, .no_append = no_append };

	fx_create(p);
	fx_open(&o);
}

static inline void fx_setup_loop(int i)
{
	fx_setup(&geoms[i / 2], P2Z_ERRORS_REPAIR, i % 2);
}

static inline void fx_teardown(void)
{
	fx_close();
	if (fx.path[0])
		unlink(fx.path);
	if (fx.dir[0])
		rmdir(fx.dir);
	memset(&fx, 0, sizeof(fx));
}

static inline uint32_t lba(void)
{
	return fx.p.lba_bytes;
}

static inline uint64_t seq_zone(uint64_t i)
{
	ck_assert_uint_lt(i, fx.zt->nr_seq);
	return fx.zt->seq_zidx[i];
}

static inline void *buf_alloc(size_t len)
{
	void *buf = NULL;

	ck_assert_int_eq(
		posix_memalign(&buf, P2Z_ZONE_BUF_ALIGN, len ? len : 1), 0);
	return buf;
}

/* The pattern stored at byte offset ofs of zone zidx. */
static inline uint64_t pat(uint64_t zidx, uint64_t ofs)
{
	return (zidx << 48) ^ ofs ^ UINT64_C(0x5a5a00000000a5a5);
}

static inline void fill(void *buf, size_t len, uint64_t zidx, uint64_t ofs)
{
	uint64_t *w = buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = pat(zidx, ofs + 8 * i);
}

static inline bool check_pat(const void *buf, size_t len, uint64_t zidx,
			     uint64_t ofs)
{
	const uint64_t *w = buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] != pat(zidx, ofs + 8 * i))
			return false;
	return true;
}

static inline bool is_zero(const void *buf, size_t len)
{
	const unsigned char *c = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (c[i])
			return false;
	return true;
}

/* Write len bytes of the pattern at ofs with P2Z_IO_* flags. */
static inline ssize_t put_flags(uint64_t zidx, uint64_t ofs, size_t len,
				unsigned int flags)
{
	void *buf = buf_alloc(len);
	ssize_t n;

	fill(buf, len, zidx, ofs);
	n = p2z_zone_write(fx.zt, zidx, buf, len, ofs, false, flags);
	free(buf);
	return n;
}

/* Write len bytes of the pattern at the write pointer ofs. */
static inline ssize_t put(uint64_t zidx, uint64_t ofs, size_t len)
{
	return put_flags(zidx, ofs, len, 0);
}

static inline void state(uint64_t zidx, struct p2z_zone_state *st)
{
	ck_assert_int_eq(p2z_zone_get_state(fx.zt, zidx, false, st), 0);
}

static inline uint64_t size_of(uint64_t zidx)
{
	struct p2z_zone_state st;

	state(zidx, &st);
	return st.size_bytes;
}

/* Truncate to 0 and to capacity: the resets and finishes of the mount. */
static inline int zone_reset(uint64_t zidx)
{
	return p2z_zone_truncate(fx.zt, zidx, 0);
}

static inline int zone_finish(uint64_t zidx)
{
	struct p2z_zone_state st;
	int ret;

	ret = p2z_zone_get_state(fx.zt, zidx, false, &st);
	if (ret)
		return ret;
	return p2z_zone_truncate(fx.zt, zidx, st.cap_bytes);
}

static inline void dev_zone(uint64_t zidx, struct p2z_zone_info *zi)
{
	ck_assert_int_eq(p2z_dev_report_zones(fx.dev, zidx, 1, zi), 1);
}

static inline uint8_t dev_cond(uint64_t zidx)
{
	struct p2z_zone_info zi;

	dev_zone(zidx, &zi);
	return zi.cond;
}

/* The device's write pointer in bytes from the zone start. */
static inline uint64_t dev_wp(uint64_t zidx)
{
	struct p2z_zone_info zi;

	dev_zone(zidx, &zi);
	return (zi.wp_lba - zi.start_lba) * lba();
}

/* Read the zone through the table and check it holds the pattern. */
static inline void check_zone_data(uint64_t zidx, uint64_t len)
{
	size_t chunk = 256 * KiB;
	void *buf = buf_alloc(chunk);
	uint64_t ofs;

	for (ofs = 0; ofs < len; ofs += chunk) {
		size_t n = len - ofs < chunk ? len - ofs : chunk;

		ck_assert_int_eq(p2z_zone_read(fx.zt, zidx, buf, n, ofs),
				 (ssize_t)n);
		ck_assert_msg(check_pat(buf, n, zidx, ofs),
			      "zone %" PRIu64 ": bad data at %" PRIu64, zidx,
			      ofs);
	}
	free(buf);
}

/* A test case of @s, each test with the fixture torn down after it. */
static inline TCase *tcase(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, NULL, fx_teardown);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return tc;
}

#endif /* P2Z_ZONE_CHECK_H */
