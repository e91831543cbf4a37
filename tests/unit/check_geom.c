// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Zone geometry against an independent reference.
 *
 * The reference never divides, shifts or masks: the po2 zone size comes from
 * doubling, zone starts from repeated addition (zone by zone in the
 * zone_start tests, add-and-double elsewhere), gaps and pieces from
 * comparisons of in-zone offsets, and addresses are unsigned __int128 so that
 * the reference itself cannot overflow. Every LBA of a few zones of each
 * geometry is checked (the first two, a middle one, the last one); zones too
 * large to walk are checked around every boundary instead (zone start, middle,
 * capacity, zone size, po2 size).
 *
 * P2Z_SHORT=1 (valgrind) shrinks the exhaustive walks to small zones.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "p2z_check.h"
#include "po2zfs/geom.h"

typedef unsigned __int128 u128;

#define U64(x) UINT64_C(x)
#define BIT(k) (U64(1) << (k))

/* Offsets checked on each side of every boundary when not walking all. */
#define WIN 5
/* Per-zone capacities: full, size - 1, about 80%, 1, 0. */
#define NR_CAPS 5
/* Pieces followed per range before giving up on huge views. */
#define MAX_PIECES 5000
#define SENTINEL U64(0xdeadbeefcafef00d)

/*
 * Native <-> po2 address maps that no caller in src/ needs (the po2 view
 * goes through p2z_geom_po2_piece(); p2z_geom_native_to_po2() is geom.c's,
 * for po2zfs-blk's zone append): kept here, checked against the reference
 * below, as a second oracle for the geometry's arithmetic.
 */
static uint64_t p2z_geom_zone_of(const struct p2z_geom *g, uint64_t lba)
{
	return lba / g->zone_lba;
}

static int p2z_geom_po2_to_native(const struct p2z_geom *g, uint64_t po2_lba,
				  uint64_t *lba)
{
	uint64_t zidx = po2_lba >> g->po2_shift;
	uint64_t ofs = po2_lba & (g->po2_zone_lba - 1);

	if (zidx >= g->nr_zones)
		return -ERANGE;
	if (ofs >= g->zone_lba)
		return -ENXIO;
	*lba = zidx * g->zone_lba + ofs;
	return 0;
}

static bool p2z_geom_po2_is_gap(const struct p2z_geom *g, uint64_t po2_lba,
				uint64_t cap_lba)
{
	uint64_t ofs = po2_lba & (g->po2_zone_lba - 1);

	/* [zone size, po2 size) has no native LBA, whatever @cap_lba says. */
	if (cap_lba > g->zone_lba)
		cap_lba = g->zone_lba;
	return ofs >= cap_lba;
}

struct geom_case {
	uint32_t lba_bytes;
	uint64_t zone_lba;
	uint64_t nr_zones;
};

static const struct geom_case geoms[] = {
	{ 512, 1, 64 },
	{ 4096, 1, 1000 },
	{ 4096, 2, 33 },
	{ 512, 3, 100 },
	{ 4096, 3, 7 },
	{ 512, 5, 17 },
	{ 4096, 5, 1000 },
	{ 65536, 3, 9 },
	{ 4096, 20480, 9 },
	{ 4096, 24576, 7 },
	{ 512, 24576, 4 },
	{ 512, BIT(7) - 1, 40 },
	{ 4096, BIT(7), 40 },
	{ 512, BIT(7) + 1, 33 },
	{ 4096, BIT(12) - 1, 10 },
	{ 512, BIT(12), 10 },
	{ 4096, BIT(12) + 1, 11 },
	{ 512, BIT(16) - 1, 6 },
	{ 4096, BIT(16), 5 },
	{ 4096, BIT(16) + 1, 5 },
	{ 512, BIT(19) - 1, 4 },
	{ 4096, BIT(19), 3 },
	{ 4096, BIT(19) + 1, 4 },
	{ 4096, BIT(40) - 3, 3 },
	{ 512, BIT(40), 2 },
	{ 4096, BIT(40) + 1, 5 },
	/* po2 view of exactly 2^62 bytes */
	{ 512, BIT(52) + 1, 1 },
	/* po2 view of 2^63 - 512 bytes, too many zones to walk */
	{ 512, 1, BIT(54) - 1 },
	/* po2 view of 2^63 - 2^18 bytes */
	{ 65536, 3, BIT(45) - 1 },
};

#define NR_GEOMS ARRAY_SIZE(geoms)

/* The reference view of one geometry. */
struct ref {
	uint64_t lba_bytes;
	uint64_t zone_lba;
	uint64_t nr_zones;
	uint64_t po2_lba;
	unsigned int lba_shift;
	unsigned int po2_shift;
	struct p2z_geom g;
};

struct ref_zone {
	uint64_t zidx;
	u128 start; /* native LBA */
	u128 po2_start; /* po2 LBA */
};

/*
 * Largest po2 zone size whose every LBA is checked; @cost is log2 of how
 * many calls a test makes per LBA compared with the cheapest tests.
 */
static uint64_t walk_all_limit(unsigned int cost)
{
	return (p2z_check_short_run() ? BIT(17) : BIT(20)) >> cost;
}

/* a * b by add-and-double. */
static u128 ref_mul(u128 a, uint64_t b)
{
	u128 r = 0;

	while (b) {
		if (b & 1)
			r += a;
		a += a;
		b >>= 1;
	}
	return r;
}

/* Smallest power of two >= @v, and its log2, by doubling. */
static u128 ref_po2(u128 v, unsigned int *order)
{
	u128 p = 1;
	unsigned int k = 0;

	while (p < v) {
		p += p;
		k++;
	}
	if (order)
		*order = k;
	return p;
}

static uint64_t ref_cap(uint64_t zone_lba, uint64_t kind)
{
	switch (kind % NR_CAPS) {
	case 0:
		return zone_lba;
	case 1:
		return zone_lba - 1;
	case 2:
		return zone_lba - zone_lba / 5;
	case 3:
		return 1;
	default:
		return 0;
	}
}

static void ref_setup(struct ref *r, const struct geom_case *gc)
{
	unsigned int k = 0;
	u128 b;
	int ret;

	r->lba_bytes = gc->lba_bytes;
	r->zone_lba = gc->zone_lba;
	r->nr_zones = gc->nr_zones;
	r->po2_lba = (uint64_t)ref_po2(gc->zone_lba, &r->po2_shift);
	for (b = 1; b < gc->lba_bytes; b += b)
		k++;
	r->lba_shift = k;
	ret = p2z_geom_init(&r->g, gc->lba_bytes, gc->zone_lba, gc->nr_zones);
	ck_assert_msg(ret == 0,
		      "init(%" PRIu32 ", %" PRIu64 ", %" PRIu64 ") = %d",
		      gc->lba_bytes, gc->zone_lba, gc->nr_zones, ret);
}

static void ref_zone_at(const struct ref *r, uint64_t zidx, struct ref_zone *rz)
{
	rz->zidx = zidx;
	rz->start = ref_mul(r->zone_lba, zidx);
	rz->po2_start = ref_mul(r->po2_lba, zidx);
}

static u128 ref_bytes(const struct ref *r, u128 lba)
{
	return ref_mul(lba, r->lba_bytes);
}

static u128 ref_view_bytes(const struct ref *r)
{
	return ref_bytes(r, ref_mul(r->po2_lba, r->nr_zones));
}

/* First two zones, a middle one and the last, in order, once each. */
static unsigned int pick_zones(const struct ref *r, uint64_t *z)
{
	uint64_t cand[4] = { 0, 1, r->nr_zones / 2, r->nr_zones - 1 };
	unsigned int i, n = 0;

	for (i = 0; i < 4; i++) {
		if (cand[i] >= r->nr_zones || (n && cand[i] <= z[n - 1]))
			continue;
		z[n++] = cand[i];
	}
	return n;
}

/*
 * Offsets [0, end) to check in one zone: all of them when the zone is small
 * enough, otherwise those within WIN of 0, of each mark and of @end.
 */
struct walk {
	uint64_t end;
	bool all;
	uint64_t marks[4];
	unsigned int nr_marks;
};

static void walk_init(struct walk *w, const struct ref *r, uint64_t end,
		      uint64_t cap, unsigned int cost)
{
	w->end = end;
	w->all = r->po2_lba <= walk_all_limit(cost);
	w->nr_marks = 0;
	w->marks[w->nr_marks++] = cap;
	w->marks[w->nr_marks++] = r->zone_lba / 2;
	w->marks[w->nr_marks++] = r->zone_lba;
	w->marks[w->nr_marks++] = end;
}

static uint64_t walk_next(const struct walk *w, uint64_t ofs)
{
	uint64_t next = ofs + 1, best = w->end, lo;
	unsigned int i;

	if (w->all || next < WIN)
		return next;
	for (i = 0; i < w->nr_marks; i++) {
		lo = w->marks[i] > WIN ? w->marks[i] - WIN : 0;
		if (next >= lo && next - lo <= 2 * WIN)
			return next;
		if (lo > next && lo < best)
			best = lo;
	}
	return best;
}

/* ------------------------------------------------------------------ init */

START_TEST(test_init_fields)
{
	struct ref r;

	ref_setup(&r, &geoms[_i]);
	ck_assert_uint_eq(r.g.lba_bytes, r.lba_bytes);
	ck_assert_uint_eq(r.g.lba_shift, r.lba_shift);
	ck_assert_uint_eq(r.g.zone_lba, r.zone_lba);
	ck_assert_uint_eq(r.g.nr_zones, r.nr_zones);
	ck_assert_uint_eq(r.g.po2_zone_lba, r.po2_lba);
	ck_assert_uint_eq(r.g.po2_shift, r.po2_shift);
}
END_TEST

struct init_case {
	uint32_t lba_bytes;
	uint64_t zone_lba;
	uint64_t nr_zones;
	int ret;
};

static const struct init_case init_bad[] = {
	{ 0, 1, 1, -EINVAL },
	{ 1, 1, 1, -EINVAL },
	{ 256, 1, 1, -EINVAL },
	{ 511, 1, 1, -EINVAL },
	{ 513, 1, 1, -EINVAL },
	{ 1000, 1, 1, -EINVAL },
	{ 4095, 1, 1, -EINVAL },
	{ 131072, 1, 1, -EINVAL },
	{ 0x80000000u, 1, 1, -EINVAL },
	{ UINT32_MAX, 1, 1, -EINVAL },
	{ 4096, 0, 1, -EINVAL },
	{ 4096, 1, 0, -EINVAL },
	{ 4096, 0, 0, -EINVAL },
	{ 0, 0, 0, -EINVAL },
	/* invalid beats overflow */
	{ 512, 0, UINT64_MAX, -EINVAL },
	{ 512, UINT64_MAX, 0, -EINVAL },
	{ 1000, UINT64_MAX, UINT64_MAX, -EINVAL },
	/* po2 zone size itself does not fit */
	{ 512, UINT64_MAX, 1, -EOVERFLOW },
	{ 512, BIT(63) + 1, 1, -EOVERFLOW },
	{ 512, BIT(63), 1, -EOVERFLOW },
	{ 512, BIT(55), 1, -EOVERFLOW },
	/* zones x LBAs overflows before the LBA size enters */
	{ 4096, 3, UINT64_MAX, -EOVERFLOW },
	{ 512, BIT(32), BIT(32), -EOVERFLOW },
	/* native fits (2^63 + 2^23 bytes), po2 is 2^64 bytes */
	{ 4096, BIT(40) + 1, BIT(11), -EOVERFLOW },
	/* native fits (2^63 + 512), po2 is 2^64 */
	{ 512, BIT(54) + 1, 1, -EOVERFLOW },
	{ 512, BIT(54), 2, -EOVERFLOW },
	{ 512, 1, BIT(55), -EOVERFLOW },
	{ 65536, 3, BIT(46), -EOVERFLOW },
	{ 65536, BIT(48), 1, -EOVERFLOW },
	{ 65536, BIT(47) + 1, 1, -EOVERFLOW },
	/* fits in 64 bits, but a po2 view of 2^63 bytes or more (EFBIG) */
	{ 512, BIT(53) + 1, 1, -EFBIG },
	{ 512, BIT(54), 1, -EFBIG },
	{ 512, BIT(54) - 1, 1, -EFBIG },
	{ 512, 1, BIT(54), -EFBIG },
	{ 512, 1, BIT(55) - 1, -EFBIG },
	{ 512, 3, BIT(53) - 1, -EFBIG },
	{ 65536, 3, BIT(45), -EFBIG },
	{ 65536, 3, BIT(46) - 1, -EFBIG },
	{ 65536, BIT(47), 1, -EFBIG },
	{ 4096, BIT(40) + 1, BIT(10), -EFBIG },
	{ 4096, BIT(40) + 1, BIT(11) - 1, -EFBIG },
	{ 4096, 24576, BIT(36), -EFBIG },
	/* native of 2^62 + 2^12 bytes fits; its po2 view is 2^63 */
	{ 4096, BIT(50) + 1, 1, -EFBIG },
};

START_TEST(test_init_rejects)
{
	const struct init_case *c = &init_bad[_i];
	struct p2z_geom g, before;
	int ret;

	memset(&g, 0xa5, sizeof(g));
	before = g;
	ret = p2z_geom_init(&g, c->lba_bytes, c->zone_lba, c->nr_zones);
	ck_assert_msg(ret == c->ret,
		      "init(%" PRIu32 ", %" PRIu64 ", %" PRIu64
		      ") = %d, want %d",
		      c->lba_bytes, c->zone_lba, c->nr_zones, ret, c->ret);
	ck_assert_msg(!memcmp(&g, &before, sizeof(g)),
		      "failed init wrote the geometry");
}
END_TEST

static const struct init_case init_edge[] = {
	{ 512, 1, 1, 0 },
	{ 65536, 1, 1, 0 },
	/* po2 views of 2^62 bytes, or just below 2^63 */
	{ 512, BIT(53), 1, 0 },
	{ 512, BIT(53) - 1, 1, 0 },
	{ 512, BIT(52) + 1, 1, 0 },
	{ 512, 1, BIT(54) - 1, 0 },
	{ 512, 3, BIT(52) - 1, 0 },
	{ 65536, 3, BIT(45) - 1, 0 },
	{ 65536, BIT(46), 1, 0 },
	{ 4096, BIT(40) + 1, BIT(10) - 1, 0 },
	{ 4096, 24576, BIT(36) - 1, 0 },
	{ 4096, BIT(49) + 1, 1, 0 },
};

START_TEST(test_init_largest)
{
	const struct init_case *c = &init_edge[_i];
	struct p2z_geom g;
	int ret;

	ret = p2z_geom_init(&g, c->lba_bytes, c->zone_lba, c->nr_zones);
	ck_assert_msg(ret == 0,
		      "init(%" PRIu32 ", %" PRIu64 ", %" PRIu64 ") = %d",
		      c->lba_bytes, c->zone_lba, c->nr_zones, ret);
	ck_assert_uint_eq(g.po2_zone_lba, (uint64_t)ref_po2(c->zone_lba, NULL));
	ck_assert_uint_eq(g.nr_zones, c->nr_zones);
}
END_TEST

/* What init must return, from 128-bit arithmetic. */
static int ref_init(uint32_t lba_bytes, uint64_t zone_lba, uint64_t nr_zones)
{
	uint64_t v;
	u128 po2, lim = UINT64_MAX;

	for (v = 512; v <= 65536; v += v)
		if (v == lba_bytes)
			break;
	if (v > 65536 || !zone_lba || !nr_zones)
		return -EINVAL;
	po2 = ref_po2(zone_lba, NULL);
	if (po2 > lim || ref_mul(po2, nr_zones) > lim ||
	    ref_mul(ref_mul(po2, nr_zones), lba_bytes) > lim)
		return -EOVERFLOW;
	if (ref_mul(ref_mul(po2, nr_zones), lba_bytes) > (u128)INT64_MAX)
		return -EFBIG;
	return 0;
}

START_TEST(test_init_grid)
{
	static const unsigned int ks[] = { 1,  2,  3,  7,  12, 16, 19, 32, 40,
					   46, 47, 48, 53, 54, 55, 62, 63 };
	uint64_t vals[3 * sizeof(ks) / sizeof(ks[0]) + 4], lba;
	unsigned int i, n = 0, a, b;
	struct p2z_geom g;
	int ret, want;

	for (i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		vals[n++] = BIT(ks[i]) - 1;
		vals[n++] = BIT(ks[i]);
		vals[n++] = BIT(ks[i]) + 1;
	}
	vals[n++] = 5;
	vals[n++] = 24576;
	vals[n++] = UINT64_MAX / 3;
	vals[n++] = UINT64_MAX;
	for (lba = 256; lba <= 131072; lba += lba) {
		for (a = 0; a < n; a++) {
			for (b = 0; b < n; b++) {
				want = ref_init(lba, vals[a], vals[b]);
				ret = p2z_geom_init(&g, lba, vals[a], vals[b]);
				if (ret == want)
					continue;
				ck_abort_msg("init(%" PRIu64 ", %" PRIu64
					     ", %" PRIu64 ") = %d, want %d",
					     lba, vals[a], vals[b], ret, want);
			}
		}
	}
}
END_TEST

START_TEST(test_init_lba_bytes_sweep)
{
	struct p2z_geom g;
	uint64_t v;
	int ret, want;
	unsigned int k;

	for (v = 0; v <= 140000; v++) {
		want = ref_init(v, 7, 3);
		ret = p2z_geom_init(&g, v, 7, 3);
		if (ret != want)
			ck_abort_msg("init(%" PRIu64 ", 7, 3) = %d, want %d", v,
				     ret, want);
	}
	for (k = 17; k < 32; k++) {
		ck_assert_int_eq(p2z_geom_init(&g, BIT(k), 7, 3), -EINVAL);
		ck_assert_int_eq(p2z_geom_init(&g, BIT(k) + 1, 7, 3), -EINVAL);
		ck_assert_int_eq(p2z_geom_init(&g, BIT(k) - 1, 7, 3), -EINVAL);
	}
}
END_TEST

/* --------------------------------------------------------------- zone_of */

START_TEST(test_zone_of_every_lba)
{
	uint64_t z[4], ofs, lba, got, end;
	unsigned int i, n;
	struct ref_zone rz;
	struct walk w;
	struct ref r;

	ref_setup(&r, &geoms[_i]);
	n = pick_zones(&r, z);
	for (i = 0; i < n; i++) {
		ref_zone_at(&r, z[i], &rz);
		walk_init(&w, &r, r.zone_lba, r.zone_lba, 0);
		for (ofs = 0; ofs < w.end; ofs = walk_next(&w, ofs)) {
			lba = (uint64_t)rz.start + ofs;
			got = p2z_geom_zone_of(&r.g, lba);
			if (got != rz.zidx)
				ck_abort_msg("zone_of(%" PRIu64 ") = %" PRIu64
					     ", want %" PRIu64,
					     lba, got, rz.zidx);
		}
	}
	/* Past the device: the next zone index, then further ones. */
	end = (uint64_t)ref_mul(r.zone_lba, r.nr_zones);
	for (ofs = 0; ofs < WIN && ofs < r.zone_lba; ofs++)
		ck_assert_uint_eq(p2z_geom_zone_of(&r.g, end + ofs),
				  r.nr_zones);
	ck_assert_uint_eq(p2z_geom_zone_of(&r.g, end + r.zone_lba),
			  r.nr_zones + 1);
	ck_assert_uint_ge(p2z_geom_zone_of(&r.g, UINT64_MAX), r.nr_zones);
}
END_TEST

/* ------------------------------------------------------------ zone_start */

START_TEST(test_zone_start_every_zone)
{
	uint64_t zidx, start = 0, got, z[4], lim;
	unsigned int i, n;
	struct ref_zone rz;
	struct ref r;

	ref_setup(&r, &geoms[_i]);
	lim = r.nr_zones < BIT(16) ? r.nr_zones : BIT(16);
	for (zidx = 0; zidx <= lim; zidx++) {
		got = p2z_geom_zone_start(&r.g, zidx);
		if (got != start)
			ck_abort_msg("zone_start(%" PRIu64 ") = %" PRIu64
				     ", want %" PRIu64,
				     zidx, got, start);
		start += r.zone_lba;
	}
	n = pick_zones(&r, z);
	for (i = 0; i < n; i++) {
		ref_zone_at(&r, z[i], &rz);
		ck_assert_uint_eq(p2z_geom_zone_start(&r.g, z[i]),
				  (uint64_t)rz.start);
	}
	/* The end of the device, for callers computing zone ends. */
	ck_assert_uint_eq(p2z_geom_zone_start(&r.g, r.nr_zones),
			  (uint64_t)ref_mul(r.zone_lba, r.nr_zones));
}
END_TEST

START_TEST(test_zone_start_saturates)
{
	struct p2z_geom g;

	ck_assert_int_eq(p2z_geom_init(&g, 4096, 24576, 100), 0);
	ck_assert_uint_eq(p2z_geom_zone_start(&g, UINT64_MAX), UINT64_MAX);
	ck_assert_uint_eq(p2z_geom_zone_start(&g, UINT64_MAX / 24576 + 1),
			  UINT64_MAX);
	ck_assert_uint_eq(p2z_geom_zone_start(&g, UINT64_MAX / 24576),
			  UINT64_MAX / 24576 * 24576);
}
END_TEST

/* -------------------------------------------------------- po2_zone_start */

START_TEST(test_po2_zone_start_every_zone)
{
	uint64_t zidx, start = 0, got, z[4], lim;
	unsigned int i, n;
	struct ref_zone rz;
	struct ref r;

	ref_setup(&r, &geoms[_i]);
	lim = r.nr_zones < BIT(16) ? r.nr_zones : BIT(16);
	for (zidx = 0; zidx <= lim; zidx++) {
		got = p2z_geom_po2_zone_start(&r.g, zidx);
		if (got != start)
			ck_abort_msg("po2_zone_start(%" PRIu64 ") = %" PRIu64
				     ", want %" PRIu64,
				     zidx, got, start);
		start += r.po2_lba;
	}
	n = pick_zones(&r, z);
	for (i = 0; i < n; i++) {
		ref_zone_at(&r, z[i], &rz);
		ck_assert_uint_eq(p2z_geom_po2_zone_start(&r.g, z[i]),
				  (uint64_t)rz.po2_start);
	}
}
END_TEST

START_TEST(test_po2_zone_start_saturates)
{
	struct p2z_geom g;

	ck_assert_int_eq(p2z_geom_init(&g, 4096, 24576, 100), 0);
	ck_assert_uint_eq(p2z_geom_po2_zone_start(&g, UINT64_MAX), UINT64_MAX);
	ck_assert_uint_eq(p2z_geom_po2_zone_start(&g, BIT(49)), UINT64_MAX);
	ck_assert_uint_eq(p2z_geom_po2_zone_start(&g, BIT(49) - 1),
			  UINT64_MAX - (BIT(15) - 1));
}
END_TEST

/* --------------------------------------------------------- native_to_po2 */

START_TEST(test_native_to_po2_every_lba)
{
	uint64_t z[4], ofs, lba, got, want;
	unsigned int i, n;
	struct ref_zone rz;
	struct walk w;
	struct ref r;
	int ret;

	ref_setup(&r, &geoms[_i]);
	n = pick_zones(&r, z);
	for (i = 0; i < n; i++) {
		ref_zone_at(&r, z[i], &rz);
		walk_init(&w, &r, r.zone_lba, r.zone_lba, 0);
		for (ofs = 0; ofs < w.end; ofs = walk_next(&w, ofs)) {
			lba = (uint64_t)rz.start + ofs;
			want = (uint64_t)rz.po2_start + ofs;
			got = SENTINEL;
			ret = p2z_geom_native_to_po2(&r.g, lba, &got);
			if (ret || got != want)
				ck_abort_msg("native_to_po2(%" PRIu64
					     ") = %d, %" PRIu64
					     ", want %" PRIu64,
					     lba, ret, got, want);
		}
	}
}
END_TEST

START_TEST(test_native_to_po2_past_end)
{
	uint64_t end, d, got;
	struct ref r;

	ref_setup(&r, &geoms[_i]);
	end = (uint64_t)ref_mul(r.zone_lba, r.nr_zones);
	for (d = 0; d < 2 * WIN; d++) {
		got = SENTINEL;
		ck_assert_int_eq(p2z_geom_native_to_po2(&r.g, end + d, &got),
				 -ERANGE);
		ck_assert_uint_eq(got, SENTINEL);
	}
	got = SENTINEL;
	ck_assert_int_eq(p2z_geom_native_to_po2(&r.g, UINT64_MAX, &got),
			 -ERANGE);
	ck_assert_uint_eq(got, SENTINEL);
	ck_assert_int_eq(p2z_geom_native_to_po2(&r.g, end - 1, &got), 0);
	ck_assert_uint_eq(got, (uint64_t)ref_mul(r.po2_lba, r.nr_zones - 1) +
				       r.zone_lba - 1);
}
END_TEST

/* --------------------------------------------------------- po2_to_native */

START_TEST(test_po2_to_native_every_lba)
{
	uint64_t z[4], ofs, po2, got, want;
	unsigned int i, n;
	struct ref_zone rz;
	struct walk w;
	struct ref r;
	int ret, want_ret;

	ref_setup(&r, &geoms[_i]);
	n = pick_zones(&r, z);
	for (i = 0; i < n; i++) {
		ref_zone_at(&r, z[i], &rz);
		walk_init(&w, &r, r.po2_lba, r.zone_lba, 0);
		for (ofs = 0; ofs < w.end; ofs = walk_next(&w, ofs)) {
			po2 = (uint64_t)rz.po2_start + ofs;
			want_ret = ofs < r.zone_lba ? 0 : -ENXIO;
			want = want_ret ? SENTINEL : (uint64_t)rz.start + ofs;
			got = SENTINEL;
			ret = p2z_geom_po2_to_native(&r.g, po2, &got);
			if (ret != want_ret || got != want)
				ck_abort_msg("po2_to_native(%" PRIu64
					     ") = %d, %" PRIu64
					     ", want %d, %" PRIu64,
					     po2, ret, got, want_ret, want);
		}
	}
}
END_TEST

START_TEST(test_po2_to_native_past_end)
{
	uint64_t end, d, got;
	struct ref r;

	ref_setup(&r, &geoms[_i]);
	end = (uint64_t)ref_mul(r.po2_lba, r.nr_zones);
	for (d = 0; d < 2 * WIN; d++) {
		got = SENTINEL;
		ck_assert_int_eq(p2z_geom_po2_to_native(&r.g, end + d, &got),
				 -ERANGE);
		ck_assert_uint_eq(got, SENTINEL);
	}
	got = SENTINEL;
	ck_assert_int_eq(p2z_geom_po2_to_native(&r.g, UINT64_MAX, &got),
			 -ERANGE);
	ck_assert_uint_eq(got, SENTINEL);
	/* The last po2 LBA is a gap LBA unless the zone size is po2. */
	if (r.po2_lba == r.zone_lba) {
		ck_assert_int_eq(p2z_geom_po2_to_native(&r.g, end - 1, &got),
				 0);
		ck_assert_uint_eq(
			got, (uint64_t)ref_mul(r.zone_lba, r.nr_zones) - 1);
	} else {
		ck_assert_int_eq(p2z_geom_po2_to_native(&r.g, end - 1, &got),
				 -ENXIO);
	}
}
END_TEST

/* ----------------------------------------------------------- po2_is_gap */

START_TEST(test_po2_is_gap_every_lba)
{
	const struct geom_case *gc = &geoms[_i / NR_CAPS];
	uint64_t z[4], ofs, po2, cap;
	unsigned int i, n;
	struct ref_zone rz;
	struct walk w;
	struct ref r;
	bool got;

	ref_setup(&r, gc);
	cap = ref_cap(r.zone_lba, _i % NR_CAPS);
	n = pick_zones(&r, z);
	for (i = 0; i < n; i++) {
		ref_zone_at(&r, z[i], &rz);
		walk_init(&w, &r, r.po2_lba, cap, 0);
		for (ofs = 0; ofs < w.end; ofs = walk_next(&w, ofs)) {
			po2 = (uint64_t)rz.po2_start + ofs;
			got = p2z_geom_po2_is_gap(&r.g, po2, cap);
			if (got != (ofs >= cap))
				ck_abort_msg("po2_is_gap(%" PRIu64
					     ", cap %" PRIu64 ") = %d",
					     po2, cap, got);
		}
	}
}
END_TEST

START_TEST(test_po2_is_gap_cap_too_big)
{
	struct p2z_geom g;

	/* [zone size, po2 size) is a gap even if a caller overstates cap. */
	ck_assert_int_eq(p2z_geom_init(&g, 4096, 24576, 3), 0);
	ck_assert(!p2z_geom_po2_is_gap(&g, 24575, 32768));
	ck_assert(p2z_geom_po2_is_gap(&g, 24576, 24577));
	ck_assert(p2z_geom_po2_is_gap(&g, 32767, UINT64_MAX));
	ck_assert(!p2z_geom_po2_is_gap(&g, 32768, UINT64_MAX));
}
END_TEST

/* ------------------------------------------------------------ po2_bytes */

START_TEST(test_po2_bytes_sum)
{
	u128 sum = 0, zone_bytes;
	uint64_t zidx;
	struct ref r;

	ref_setup(&r, &geoms[_i]);
	if (r.nr_zones <= BIT(16)) {
		zone_bytes = ref_bytes(&r, r.po2_lba);
		for (zidx = 0; zidx < r.nr_zones; zidx++)
			sum += zone_bytes;
	} else {
		sum = ref_view_bytes(&r);
	}
	ck_assert(sum <= UINT64_MAX);
	ck_assert_uint_eq(p2z_geom_po2_bytes(&r.g), (uint64_t)sum);
}
END_TEST

/* ---------------------------------------------------- po2_zone_of_byte */

START_TEST(test_po2_zone_of_byte_every_lba)
{
	uint64_t z[4], ofs, byte, got;
	unsigned int i, n, k;
	struct ref_zone rz;
	struct walk w;
	struct ref r;
	int ret;

	ref_setup(&r, &geoms[_i]);
	n = pick_zones(&r, z);
	for (i = 0; i < n; i++) {
		ref_zone_at(&r, z[i], &rz);
		walk_init(&w, &r, r.po2_lba, r.zone_lba, 0);
		for (ofs = 0; ofs < w.end; ofs = walk_next(&w, ofs)) {
			for (k = 0; k < 2; k++) {
				byte = (uint64_t)ref_bytes(&r,
							   rz.po2_start + ofs) +
				       (k ? r.lba_bytes - 1 : 0);
				got = SENTINEL;
				ret = p2z_geom_po2_zone_of_byte(&r.g, byte,
								&got);
				if (ret || got != rz.zidx)
					ck_abort_msg("po2_zone_of_byte(%" PRIu64
						     ") = %d, %" PRIu64
						     ", want %" PRIu64,
						     byte, ret, got, rz.zidx);
			}
		}
	}
}
END_TEST

START_TEST(test_po2_zone_of_byte_past_end)
{
	static const uint64_t deltas[] = { 0, 1, 511, 512, 4095, 4096, 65536 };
	uint64_t end, got;
	unsigned int i;
	struct ref r;

	ref_setup(&r, &geoms[_i]);
	end = (uint64_t)ref_view_bytes(&r);
	for (i = 0; i < sizeof(deltas) / sizeof(deltas[0]); i++) {
		if (end + deltas[i] < end)
			break;
		got = SENTINEL;
		ck_assert_int_eq(
			p2z_geom_po2_zone_of_byte(&r.g, end + deltas[i], &got),
			-ERANGE);
		ck_assert_uint_eq(got, SENTINEL);
	}
	got = SENTINEL;
	ck_assert_int_eq(p2z_geom_po2_zone_of_byte(&r.g, UINT64_MAX, &got),
			 -ERANGE);
	ck_assert_uint_eq(got, SENTINEL);
	ck_assert_int_eq(p2z_geom_po2_zone_of_byte(&r.g, end - 1, &got), 0);
	ck_assert_uint_eq(got, r.nr_zones - 1);
}
END_TEST

/* ------------------------------------------------------------ po2_piece */

/*
 * Expected piece at byte @zone_ofs of zone @zidx, for at most @len bytes, in
 * a zone of @zone_bytes in the view whose capacity is @cap_bytes.
 */
static void ref_piece(uint64_t zidx, u128 zone_ofs, uint64_t len,
		      u128 cap_bytes, u128 zone_bytes,
		      struct p2z_geom_piece *pc)
{
	u128 seg = zone_ofs < cap_bytes ? cap_bytes - zone_ofs :
					  zone_bytes - zone_ofs;

	pc->zidx = zidx;
	pc->zone_ofs = (uint64_t)zone_ofs;
	pc->len = seg < len ? (uint64_t)seg : len;
	pc->gap = zone_ofs >= cap_bytes;
}

static bool piece_eq(const struct p2z_geom_piece *a,
		     const struct p2z_geom_piece *b)
{
	return a->zidx == b->zidx && a->zone_ofs == b->zone_ofs &&
	       a->len == b->len && a->gap == b->gap;
}

static void piece_fail(uint64_t ofs, uint64_t len, uint64_t cap, int ret,
		       const struct p2z_geom_piece *got,
		       const struct p2z_geom_piece *want)
{
	ck_abort_msg("po2_piece(%" PRIu64 ", %" PRIu64 ", cap %" PRIu64
		     ") = %d {zidx %" PRIu64 ", ofs %" PRIu64 ", len %" PRIu64
		     ", gap %d}, want {%" PRIu64 ", %" PRIu64 ", %" PRIu64
		     ", %d}",
		     ofs, len, cap, ret, got->zidx, got->zone_ofs, got->len,
		     got->gap, want->zidx, want->zone_ofs, want->len,
		     want->gap);
}

START_TEST(test_po2_piece_every_lba)
{
	const struct geom_case *gc = &geoms[_i / NR_CAPS];
	const uint64_t lens[] = { 1, gc->lba_bytes + 1, UINT64_MAX };
	struct p2z_geom_piece got, want;
	uint64_t z[4], ofs, cap;
	unsigned int i, n, k;
	u128 zofs, zone_start, cap_b, zone_b;
	struct ref_zone rz;
	struct walk w;
	struct ref r;
	int ret;

	ref_setup(&r, gc);
	cap = ref_cap(r.zone_lba, _i % NR_CAPS);
	cap_b = ref_bytes(&r, cap);
	zone_b = ref_bytes(&r, r.po2_lba);
	n = pick_zones(&r, z);
	for (i = 0; i < n; i++) {
		ref_zone_at(&r, z[i], &rz);
		zone_start = ref_bytes(&r, rz.po2_start);
		walk_init(&w, &r, r.po2_lba, cap, 3);
		for (ofs = 0; ofs < w.end; ofs = walk_next(&w, ofs)) {
			for (k = 0; k < 2 * 3; k++) {
				zofs = (u128)ofs * r.lba_bytes;
				if (k / 3)
					zofs += r.lba_bytes - 1;
				ref_piece(z[i], zofs, lens[k % 3], cap_b,
					  zone_b, &want);
				got = (struct p2z_geom_piece){ 0 };
				ret = p2z_geom_po2_piece(
					&r.g, (uint64_t)(zone_start + zofs),
					lens[k % 3], cap, &got);
				if (ret || !piece_eq(&got, &want))
					piece_fail(
						(uint64_t)(zone_start + zofs),
						lens[k % 3], cap, ret, &got,
						&want);
			}
		}
	}
}
END_TEST

/*
 * Follow one range piece by piece, the way the po2 file's read and write
 * paths do, with a capacity that changes from zone to zone.
 */
static void check_range(const struct ref *r, unsigned int kind, uint64_t zidx,
			uint64_t zone_ofs, uint64_t len)
{
	u128 zone_bytes = ref_bytes(r, r->po2_lba);
	uint64_t ofs, cap, done = 0, nr = 0;
	struct p2z_geom_piece got, want;
	int ret;

	ofs = (uint64_t)(ref_mul(zone_bytes, zidx) + zone_ofs);
	while (len && nr++ < MAX_PIECES) {
		cap = ref_cap(r->zone_lba, kind + zidx);
		memset(&got, 0, sizeof(got));
		ret = p2z_geom_po2_piece(&r->g, ofs, len, cap, &got);
		if (zidx == r->nr_zones) {
			/* The range was cut at the end of the view. */
			ck_assert_msg(ret == -ERANGE,
				      "po2_piece(%" PRIu64 ") at end = %d", ofs,
				      ret);
			ck_assert((u128)ofs == ref_view_bytes(r));
			return;
		}
		ref_piece(zidx, zone_ofs, len, ref_bytes(r, cap), zone_bytes,
			  &want);
		if (ret || !piece_eq(&got, &want))
			piece_fail(ofs, len, cap, ret, &got, &want);
		ofs += got.len;
		len -= got.len;
		done += got.len;
		zone_ofs += got.len;
		if (zone_ofs == zone_bytes) {
			zidx++;
			zone_ofs = 0;
		}
	}
	ck_assert(done > 0);
}

START_TEST(test_po2_piece_ranges)
{
	const struct geom_case *gc = &geoms[_i / NR_CAPS];
	unsigned int kind = _i % NR_CAPS, i, j, n;
	uint64_t z[4], zb, cap_b, lens[6];
	struct ref r;

	ref_setup(&r, gc);
	zb = (uint64_t)ref_bytes(&r, r.po2_lba);
	lens[0] = 1;
	lens[1] = r.lba_bytes;
	lens[2] = zb;
	lens[3] = zb > UINT64_MAX / 4 ? UINT64_MAX : 3 * zb + r.lba_bytes + 1;
	lens[4] = zb - 1;
	lens[5] = UINT64_MAX;
	n = pick_zones(&r, z);
	for (i = 0; i < n; i++) {
		cap_b = (uint64_t)ref_bytes(&r,
					    ref_cap(r.zone_lba, kind + z[i]));
		for (j = 0; j < 6; j++) {
			check_range(&r, kind, z[i], 0, lens[j]);
			check_range(&r, kind, z[i], zb - 1, lens[j]);
			check_range(&r, kind, z[i], zb - r.lba_bytes, lens[j]);
			check_range(&r, kind, z[i], cap_b ? cap_b - 1 : 0,
				    lens[j]);
			if (cap_b < zb)
				check_range(&r, kind, z[i], cap_b, lens[j]);
		}
	}
}
END_TEST

START_TEST(test_po2_piece_errors)
{
	struct p2z_geom_piece pc, before;
	uint64_t end;
	struct ref r;

	ref_setup(&r, &geoms[_i]);
	end = (uint64_t)ref_view_bytes(&r);
	memset(&pc, 0x5a, sizeof(pc));
	before = pc;
	ck_assert_int_eq(p2z_geom_po2_piece(&r.g, 0, 0, r.zone_lba, &pc),
			 -EINVAL);
	ck_assert_int_eq(p2z_geom_po2_piece(&r.g, end - 1, 0, 0, &pc), -EINVAL);
	ck_assert_int_eq(p2z_geom_po2_piece(&r.g, 0, 1, r.zone_lba + 1, &pc),
			 -EINVAL);
	ck_assert_int_eq(p2z_geom_po2_piece(&r.g, 0, 1, UINT64_MAX, &pc),
			 -EINVAL);
	ck_assert_int_eq(p2z_geom_po2_piece(&r.g, end, 1, r.zone_lba, &pc),
			 -ERANGE);
	ck_assert_int_eq(p2z_geom_po2_piece(&r.g, UINT64_MAX, UINT64_MAX, 0,
					    &pc),
			 -ERANGE);
	/* A bad argument is reported before the range. */
	ck_assert_int_eq(p2z_geom_po2_piece(&r.g, end, 0, 0, &pc), -EINVAL);
	ck_assert(!memcmp(&pc, &before, sizeof(pc)));
	/* Last byte of the view: one byte left, whatever the length. */
	ck_assert_int_eq(p2z_geom_po2_piece(&r.g, end - 1, UINT64_MAX,
					    r.zone_lba, &pc),
			 0);
	ck_assert_uint_eq(pc.zidx, r.nr_zones - 1);
	ck_assert_uint_eq(pc.len, 1);
	ck_assert_uint_eq(pc.zone_ofs, (uint64_t)ref_bytes(&r, r.po2_lba) - 1);
	ck_assert_int_eq(pc.gap, r.po2_lba != r.zone_lba);
}
END_TEST

/* ---------------------------------------------------------------- suite */

static TCase *tcase(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	/* Fork mode only; valgrind runs with CK_FORK=no. */
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *geom_suite(void)
{
	Suite *s = suite_create("geom");
	int nr_init_bad = sizeof(init_bad) / sizeof(init_bad[0]);
	int nr_init_edge = sizeof(init_edge) / sizeof(init_edge[0]);
	TCase *tc;

	tc = tcase(s, "init");
	tcase_add_loop_test(tc, test_init_fields, 0, NR_GEOMS);
	tcase_add_loop_test(tc, test_init_rejects, 0, nr_init_bad);
	tcase_add_loop_test(tc, test_init_largest, 0, nr_init_edge);
	tcase_add_test(tc, test_init_grid);
	tcase_add_test(tc, test_init_lba_bytes_sweep);

	tc = tcase(s, "zone_of");
	tcase_add_loop_test(tc, test_zone_of_every_lba, 0, NR_GEOMS);

	tc = tcase(s, "zone_start");
	tcase_add_loop_test(tc, test_zone_start_every_zone, 0, NR_GEOMS);
	tcase_add_test(tc, test_zone_start_saturates);

	tc = tcase(s, "po2_zone_start");
	tcase_add_loop_test(tc, test_po2_zone_start_every_zone, 0, NR_GEOMS);
	tcase_add_test(tc, test_po2_zone_start_saturates);

	tc = tcase(s, "native_to_po2");
	tcase_add_loop_test(tc, test_native_to_po2_every_lba, 0, NR_GEOMS);
	tcase_add_loop_test(tc, test_native_to_po2_past_end, 0, NR_GEOMS);

	tc = tcase(s, "po2_to_native");
	tcase_add_loop_test(tc, test_po2_to_native_every_lba, 0, NR_GEOMS);
	tcase_add_loop_test(tc, test_po2_to_native_past_end, 0, NR_GEOMS);

	tc = tcase(s, "po2_is_gap");
	tcase_add_loop_test(tc, test_po2_is_gap_every_lba, 0,
			    NR_GEOMS * NR_CAPS);
	tcase_add_test(tc, test_po2_is_gap_cap_too_big);

	tc = tcase(s, "po2_bytes");
	tcase_add_loop_test(tc, test_po2_bytes_sum, 0, NR_GEOMS);

	tc = tcase(s, "po2_zone_of_byte");
	tcase_add_loop_test(tc, test_po2_zone_of_byte_every_lba, 0, NR_GEOMS);
	tcase_add_loop_test(tc, test_po2_zone_of_byte_past_end, 0, NR_GEOMS);

	tc = tcase(s, "po2_piece");
	tcase_add_loop_test(tc, test_po2_piece_every_lba, 0,
			    NR_GEOMS * NR_CAPS);
	tcase_add_loop_test(tc, test_po2_piece_ranges, 0, NR_GEOMS * NR_CAPS);
	tcase_add_loop_test(tc, test_po2_piece_errors, 0, NR_GEOMS);
	return s;
}

int main(void)
{
	return p2z_check_run(geom_suite());
}
