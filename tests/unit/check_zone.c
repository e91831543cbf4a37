// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Zone table on the emu backend: the rules of reads, writes and zone
 * management with their exact errnos, explicit-open accounting, and
 * concurrent writers (ordering). The errors= policies and flushes are
 * check_zone_errors.c's.
 *
 * Each test builds its own sparse image under $TMPDIR (or /tmp). The loop
 * tests run over a table of npo2 and po2 geometries with 512 and 4096-byte
 * LBAs, through both write paths (zone append and write at the write
 * pointer). P2Z_SHORT=1 (valgrind) makes the concurrency tests smaller.
 */
#include "zone_check.h"

/*
 * The emu backend's ops, copied so that a test can replace one of them
 * (fx_hook_report()); the backend's state is reached from struct p2z_dev
 * as before.
 */
static struct p2z_dev_ops hook_ops;

/*
 * A zone report that stops, once armed, after reading the device and before
 * returning, until released: the window in which a report used to hold the
 * zone's lock.
 */
enum { HOOK_IDLE, HOOK_ARMED, HOOK_IN_REPORT, HOOK_RELEASED };
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hook_cond = PTHREAD_COND_INITIALIZER;
static int hook_state;
static int (*hook_real_report)(struct p2z_dev *dev, uint64_t zidx,
			       unsigned int nr, struct p2z_zone_info *zi);

static int hook_report(struct p2z_dev *dev, uint64_t zidx, unsigned int nr,
		       struct p2z_zone_info *zi)
{
	int ret = hook_real_report(dev, zidx, nr, zi);

	pthread_mutex_lock(&hook_lock);
	if (hook_state == HOOK_ARMED) {
		hook_state = HOOK_IN_REPORT;
		pthread_cond_broadcast(&hook_cond);
		while (hook_state != HOOK_RELEASED)
			pthread_cond_wait(&hook_cond, &hook_lock);
	}
	pthread_mutex_unlock(&hook_lock);
	return ret;
}

static void fx_hook_report(void)
{
	hook_ops = *fx.dev->ops;
	hook_real_report = hook_ops.report_zones;
	hook_ops.report_zones = hook_report;
	hook_state = HOOK_IDLE;
	fx.dev->ops = &hook_ops;
}

/* Wait until hook_state is @want, at most 5 s. Return: whether it is. */
static bool hook_wait(int want)
{
	struct timespec end;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 5;
	pthread_mutex_lock(&hook_lock);
	while (hook_state != want &&
	       !pthread_cond_timedwait(&hook_cond, &hook_lock, &end))
		;
	ok = hook_state == want;
	pthread_mutex_unlock(&hook_lock);
	return ok;
}

static void hook_set(int state)
{
	pthread_mutex_lock(&hook_lock);
	hook_state = state;
	pthread_cond_broadcast(&hook_cond);
	pthread_mutex_unlock(&hook_lock);
}

/* ---- open ---- */

START_TEST(test_table_open_layout)
{
	const struct p2z_emu_params *p = &geoms[_i];
	struct p2z_zone_usage u;
	struct p2z_zone_state st;
	uint64_t i;

	fx_setup(p, P2Z_ERRORS_REMOUNT_RO, false);
	ck_assert_uint_eq(fx.zt->nr_cnv, p->nr_cnv_zones);
	ck_assert_uint_eq(fx.zt->nr_seq, p->nr_zones - p->nr_cnv_zones);
	for (i = 0; i < fx.zt->nr_cnv; i++) {
		ck_assert_uint_eq(fx.zt->cnv_zidx[i], i);
		state(i, &st);
		ck_assert_uint_eq(st.type, P2Z_ZONE_TYPE_CNV);
		ck_assert_uint_eq(st.size_bytes, p->zone_bytes);
		ck_assert_uint_eq(st.cap_bytes, p->zone_bytes);
		ck_assert_uint_eq(st.wp_bytes, 0);
	}
	for (i = 0; i < fx.zt->nr_seq; i++) {
		uint64_t zidx = p->nr_cnv_zones + i;

		ck_assert_uint_eq(fx.zt->seq_zidx[i], zidx);
		state(zidx, &st);
		ck_assert_uint_eq(st.zidx, zidx);
		ck_assert_uint_eq(st.type, P2Z_ZONE_TYPE_SEQ);
		ck_assert_uint_eq(st.cond, P2Z_ZONE_COND_EMPTY);
		ck_assert_uint_eq(st.flags, 0);
		ck_assert_uint_eq(st.start_bytes, zidx * p->zone_bytes);
		ck_assert_uint_eq(st.cap_bytes, p->cap_bytes);
		ck_assert_uint_eq(st.size_bytes, 0);
		ck_assert_uint_eq(st.wp_bytes, 0);
	}
	ck_assert_int_eq(p2z_zone_get_state(fx.zt, p->nr_zones, false, &st),
			 -EINVAL);
	p2z_zone_table_usage(fx.zt, &u);
	ck_assert_uint_eq(u.cap_bytes, p->nr_cnv_zones * p->zone_bytes +
					       fx.zt->nr_seq * p->cap_bytes);
	ck_assert_uint_eq(u.used_bytes, p->nr_cnv_zones * p->zone_bytes);
	ck_assert_uint_eq(u.nr_active, 0);
	ck_assert_uint_eq(u.nr_exp_open, 0);
	ck_assert(!p2z_zone_table_is_rdonly(fx.zt));
}
END_TEST

/* Written and full zones keep their sizes across a close and reopen. */
START_TEST(test_table_open_reopen)
{
	struct p2z_zone_opts o = { .errors = P2Z_ERRORS_REMOUNT_RO };
	uint64_t a, b;

	fx_setup(&geoms[0], P2Z_ERRORS_REMOUNT_RO, false);
	a = seq_zone(0);
	b = seq_zone(1);
	ck_assert_int_eq(put(a, 0, 3 * lba()), 3 * lba());
	ck_assert_int_eq(zone_finish(b), 0);
	fx_close();
	fx_open(&o);
	ck_assert_uint_eq(size_of(a), 3 * lba());
	ck_assert_uint_eq(size_of(b), fx.p.cap_bytes);
	check_zone_data(a, 3 * lba());
	/* The device closed the open zone at power up. */
	ck_assert_uint_eq(dev_cond(a), P2Z_ZONE_COND_CLOSED);
	ck_assert_int_eq(put(a, 3 * lba(), lba()), lba());
}
END_TEST

/* Zones found read-only or offline at mount (zonefs_check_zone_condition). */
START_TEST(test_table_open_bad_zones)
{
	struct p2z_zone_opts o = { .errors = P2Z_ERRORS_REMOUNT_RO };
	struct p2z_zone_state st;
	void *buf = buf_alloc(4 * KiB);
	uint64_t ro, off;

	fx_setup(&geoms[0], P2Z_ERRORS_REMOUNT_RO, false);
	ro = seq_zone(0);
	off = seq_zone(1);
	ck_assert_int_eq(put(ro, 0, 2 * lba()), 2 * lba());
	ck_assert_int_eq(put(off, 0, 2 * lba()), 2 * lba());
	fx_close();
	ck_assert_int_eq(p2z_emu_set_fault(fx.path, ro, P2Z_EMU_FAULT_READONLY),
			 0);
	ck_assert_int_eq(p2z_emu_set_fault(fx.path, off, P2Z_EMU_FAULT_OFFLINE),
			 0);
	fx_open(&o);

	/* Its write pointer is not trusted: no data, as zonefs. */
	state(ro, &st);
	ck_assert_uint_eq(st.cond, P2Z_ZONE_COND_READONLY);
	ck_assert_uint_eq(st.flags, P2Z_ZONE_F_RDONLY);
	ck_assert_uint_eq(st.size_bytes, 0);
	ck_assert_uint_eq(st.wp_bytes, 2 * lba());
	ck_assert_int_eq(p2z_zone_read(fx.zt, ro, buf, lba(), 0), 0);
	ck_assert_int_eq(put(ro, 0, lba()), -EPERM);
	ck_assert_int_eq(put(ro, 2 * lba(), lba()), -EPERM);
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, ro, 0), -EPERM);
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, ro), -EPERM);
	ck_assert_int_eq(p2z_zone_flush(fx.zt, ro), -EPERM);

	state(off, &st);
	ck_assert_uint_eq(st.cond, P2Z_ZONE_COND_OFFLINE);
	ck_assert_uint_eq(st.flags, P2Z_ZONE_F_OFFLINE);
	ck_assert_uint_eq(st.size_bytes, 0);
	ck_assert_int_eq(p2z_zone_read(fx.zt, off, buf, lba(), 0), -EPERM);
	ck_assert_int_eq(put(off, 0, lba()), -EPERM);
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, off, 0), -EPERM);
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, off), -EPERM);

	/* Neither is an error: the filesystem stays writable. */
	ck_assert(!p2z_zone_table_is_rdonly(fx.zt));
	ck_assert_int_eq(put(seq_zone(2), 0, lba()), lba());
	free(buf);
}
END_TEST

START_TEST(test_table_open_rdonly)
{
	struct p2z_zone_opts o = { .rdonly = true };
	void *buf = buf_alloc(4 * KiB);
	uint64_t z;

	fx_setup(&geoms[0], P2Z_ERRORS_REMOUNT_RO, false);
	z = seq_zone(0);
	ck_assert_int_eq(put(z, 0, lba()), lba());
	fx_close();
	fx_open(&o);
	ck_assert(p2z_zone_table_is_rdonly(fx.zt));
	ck_assert_int_eq(put(z, lba(), lba()), -EROFS);
	ck_assert_int_eq(p2z_zone_write(fx.zt, 0, buf, lba(), 0, false, 0),
			 -EROFS);
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, z, 0), -EROFS);
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, z), -EROFS);
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, lba(), 0), lba());
	ck_assert(check_pat(buf, lba(), z, 0));
	free(buf);
}
END_TEST

/* ---- read ---- */

START_TEST(test_read_clamped)
{
	void *buf;
	uint64_t z;

	fx_setup_loop(_i);
	buf = buf_alloc(8 * lba());
	z = seq_zone(0);
	ck_assert_int_eq(put(z, 0, 3 * lba()), 3 * lba());
	memset(buf, 0xff, 8 * lba());
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, 8 * lba(), 0), 3 * lba());
	ck_assert(check_pat(buf, 3 * lba(), z, 0));
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, 8 * lba(), lba()),
			 2 * lba());
	ck_assert(check_pat(buf, 2 * lba(), z, lba()));
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, lba(), 3 * lba()), 0);
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, lba(), fx.p.cap_bytes),
			 0);
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, 0, 0), 0);
	/* An empty zone reads nothing. */
	ck_assert_int_eq(p2z_zone_read(fx.zt, seq_zone(1), buf, lba(), 0), 0);
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, lba(), 1), -EINVAL);
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, lba() - 1, 0), -EINVAL);
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, lba() + 8, 0), -EINVAL);
	ck_assert_int_eq(p2z_zone_read(fx.zt, fx.p.nr_zones, buf, lba(), 0),
			 -EINVAL);
	free(buf);
}
END_TEST

/* After a finish, what was never written reads as zeros, from the table. */
START_TEST(test_read_finished_zeros)
{
	size_t len;
	void *buf;
	uint64_t z;

	fx_setup_loop(_i);
	len = 4 * lba();
	buf = buf_alloc(len);
	z = seq_zone(0);
	ck_assert_int_eq(put(z, 0, 2 * lba()), 2 * lba());
	ck_assert_int_eq(zone_finish(z), 0);
	ck_assert_uint_eq(size_of(z), fx.p.cap_bytes);
	memset(buf, 0xff, len);
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, len, 0), len);
	ck_assert(check_pat(buf, 2 * lba(), z, 0));
	ck_assert(is_zero((char *)buf + 2 * lba(), 2 * lba()));
	memset(buf, 0xff, len);
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, len,
				       fx.p.cap_bytes - lba()),
			 lba());
	ck_assert(is_zero(buf, lba()));
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, len, fx.p.cap_bytes), 0);
	free(buf);
}
END_TEST

/* ---- write ---- */

START_TEST(test_write_rules)
{
	struct p2z_zone_state st;
	void *buf;
	uint64_t z, cap;

	fx_setup_loop(_i);
	buf = buf_alloc(4 * lba());
	z = seq_zone(0);
	cap = fx.p.cap_bytes;
	fill(buf, 4 * lba(), z, 0);
	/* Not at the write pointer. */
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, lba(), lba(), false, 0),
			 -EINVAL);
	/* Unaligned offset or length. */
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, lba(), 1, false, 0),
			 -EINVAL);
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, lba() - 8, 0, false, 0),
			 -EINVAL);
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, 100, 0, true, 0),
			 -EINVAL);
	/* At or past the capacity, whatever else is wrong. */
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, lba(), cap, false, 0),
			 -EFBIG);
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, 7, cap + 1, false, 0),
			 -EFBIG);
	ck_assert_int_eq(p2z_zone_write(fx.zt, fx.p.nr_zones, buf, lba(), 0,
					false, 0),
			 -EINVAL);
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, 0, 0, false, 0), 0);
	ck_assert_uint_eq(size_of(z), 0);

	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, 2 * lba(), 0, false, 0),
			 2 * lba());
	fill(buf, 4 * lba(), z, 2 * lba());
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, lba(), 0, false, 0),
			 -EINVAL);
	/* O_APPEND: the offset given does not matter. */
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, lba(), 12345, true, 0),
			 lba());
	fill(buf, 4 * lba(), z, 3 * lba());
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, 2 * lba(), 0, true, 0),
			 2 * lba());
	state(z, &st);
	ck_assert_uint_eq(st.size_bytes, 5 * lba());
	ck_assert_uint_eq(st.wp_bytes, 5 * lba());
	ck_assert_uint_eq(st.cond, P2Z_ZONE_COND_IMP_OPEN);
	ck_assert_uint_eq(dev_wp(z), 5 * lba());
	ck_assert_uint_eq(dev_cond(z), P2Z_ZONE_COND_IMP_OPEN);
	check_zone_data(z, 5 * lba());
	free(buf);
}
END_TEST

/* Capacity: EFBIG at it, short writes across it, full zones. */
START_TEST(test_write_capacity)
{
	struct p2z_zone_state st;
	uint64_t z, cap;
	size_t len;
	void *buf;

	fx_setup_loop(_i);
	z = seq_zone(0);
	cap = fx.p.cap_bytes;
	len = 4 * lba();
	buf = buf_alloc(len);
	if (cap <= SMALL_CAP) {
		uint64_t ofs;

		for (ofs = 0; ofs + 256 * KiB <= cap - 2 * lba();
		     ofs += 256 * KiB)
			ck_assert_int_eq(put(z, ofs, 256 * KiB), 256 * KiB);
		while (ofs < cap - 2 * lba()) {
			ck_assert_int_eq(put(z, ofs, lba()), lba());
			ofs += lba();
		}
		/* Crossing the capacity: cut short. */
		ck_assert_int_eq(put(z, ofs, len), 2 * lba());
		state(z, &st);
		ck_assert_uint_eq(st.size_bytes, cap);
		ck_assert_uint_eq(st.wp_bytes, cap);
		ck_assert_uint_eq(st.cond, P2Z_ZONE_COND_FULL);
		ck_assert_uint_eq(dev_cond(z), P2Z_ZONE_COND_FULL);
		check_zone_data(z, cap);
	} else {
		ck_assert_int_eq(zone_finish(z), 0);
	}
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, len, cap, false, 0),
			 -EFBIG);
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, len, 0, true, 0),
			 -EFBIG);
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, buf, len, cap - lba(), false,
					0),
			 -EINVAL);
	free(buf);
}
END_TEST

/*
 * The daemon hands the device the data where FUSE put it, right after the
 * request header: buffers aligned to P2Z_ZONE_BUF_MIN_ALIGN only. Every
 * path (append, write at the write pointer, conventional) takes them.
 */
START_TEST(test_write_min_align)
{
	size_t len;
	uint64_t z;
	char *buf, *src;

	fx_setup_loop(_i);
	len = 8 * lba();
	buf = buf_alloc(len + P2Z_ZONE_BUF_ALIGN);
	src = buf + P2Z_ZONE_BUF_MIN_ALIGN;
	z = seq_zone(0);
	fill(src, len, z, 0);
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, src, len, 0, false, 0), len);
	fill(src, len, z, len);
	ck_assert_int_eq(p2z_zone_write(fx.zt, z, src, len, 0, true, 0), len);
	ck_assert_uint_eq(size_of(z), 2 * len);
	memset(buf, 0, len);
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, len, len), len);
	ck_assert(check_pat(buf, len, z, len));
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, len, 0), len);
	ck_assert(check_pat(buf, len, z, 0));
	free(buf);
}
END_TEST

START_TEST(test_write_cnv)
{
	const struct p2z_emu_params *p = &geoms[0];
	uint64_t cap = p->zone_bytes;
	size_t len;
	void *buf;

	fx_setup(p, P2Z_ERRORS_REPAIR, _i);
	len = 4 * lba();
	buf = buf_alloc(len);
	/* Random order, overwrites. */
	fill(buf, len, 1, 8 * lba());
	ck_assert_int_eq(
		p2z_zone_write(fx.zt, 1, buf, len, 8 * lba(), false, 0), len);
	fill(buf, len, 1, 0);
	ck_assert_int_eq(p2z_zone_write(fx.zt, 1, buf, len, 0, false, 0), len);
	fill(buf, len, 1, 2 * lba());
	ck_assert_int_eq(
		p2z_zone_write(fx.zt, 1, buf, len, 2 * lba(), false, 0), len);
	ck_assert_uint_eq(size_of(1), cap);
	memset(buf, 0, len);
	ck_assert_int_eq(p2z_zone_read(fx.zt, 1, buf, len, 0), len);
	ck_assert(check_pat(buf, len, 1, 0));
	ck_assert_int_eq(p2z_zone_read(fx.zt, 1, buf, len, 4 * lba()), len);
	ck_assert(check_pat(buf, 2 * lba(), 1, 4 * lba()));
	ck_assert_int_eq(p2z_zone_read(fx.zt, 1, buf, len, 8 * lba()), len);
	ck_assert(check_pat(buf, len, 1, 8 * lba()));
	/* Never written: zeros. */
	ck_assert_int_eq(p2z_zone_read(fx.zt, 0, buf, len, 0), len);
	ck_assert(is_zero(buf, len));
	/* Capacity rules as for sequential zones. */
	ck_assert_int_eq(p2z_zone_write(fx.zt, 1, buf, len, cap - lba(), false,
					0),
			 lba());
	ck_assert_int_eq(p2z_zone_write(fx.zt, 1, buf, len, cap, false, 0),
			 -EFBIG);
	ck_assert_int_eq(p2z_zone_write(fx.zt, 1, buf, len, 0, true, 0),
			 -EFBIG);
	ck_assert_int_eq(p2z_zone_write(fx.zt, 1, buf, len, 1, false, 0),
			 -EINVAL);
	ck_assert_int_eq(p2z_zone_read(fx.zt, 1, buf, len, cap), 0);
	/* No truncation of conventional zones. */
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, 1, 0), -EPERM);
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, 1, cap), -EPERM);
	free(buf);
}
END_TEST

/* ---- truncate ---- */

START_TEST(test_truncate_reset_finish)
{
	struct p2z_zone_state st;
	struct p2z_zone_usage u0, u;
	uint64_t z, cap;
	void *buf;

	fx_setup_loop(_i);
	z = seq_zone(0);
	cap = fx.p.cap_bytes;
	buf = buf_alloc(lba());
	p2z_zone_table_usage(fx.zt, &u0);
	/* Only 0 and the capacity. */
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, z, lba()), -EPERM);
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, z, cap - lba()), -EPERM);
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, z, cap + lba()), -EPERM);
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, fx.p.nr_zones, 0), -EINVAL);
	/* 0 on an empty zone: nothing to do. */
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, z, 0), 0);

	ck_assert_int_eq(put(z, 0, 2 * lba()), 2 * lba());
	p2z_zone_table_usage(fx.zt, &u);
	ck_assert_uint_eq(u.used_bytes, u0.used_bytes + 2 * lba());
	ck_assert_uint_eq(u.nr_active, 1);
	/* The current size is not special unless it is 0 or the capacity. */
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, z, 2 * lba()), -EPERM);
	ck_assert_int_eq(zone_reset(z), 0);
	state(z, &st);
	ck_assert_uint_eq(st.size_bytes, 0);
	ck_assert_uint_eq(st.wp_bytes, 0);
	ck_assert_uint_eq(st.cond, P2Z_ZONE_COND_EMPTY);
	ck_assert_uint_eq(dev_cond(z), P2Z_ZONE_COND_EMPTY);
	ck_assert_uint_eq(dev_wp(z), 0);
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, lba(), 0), 0);
	p2z_zone_table_usage(fx.zt, &u);
	ck_assert_uint_eq(u.used_bytes, u0.used_bytes);
	ck_assert_uint_eq(u.nr_active, 0);

	/* Written again from the start after a reset. */
	ck_assert_int_eq(put(z, 0, lba()), lba());
	ck_assert_int_eq(zone_finish(z), 0);
	state(z, &st);
	ck_assert_uint_eq(st.size_bytes, cap);
	ck_assert_uint_eq(st.wp_bytes, cap);
	ck_assert_uint_eq(st.cond, P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(dev_cond(z), P2Z_ZONE_COND_FULL);
	p2z_zone_table_usage(fx.zt, &u);
	ck_assert_uint_eq(u.used_bytes, u0.used_bytes + cap);
	ck_assert_uint_eq(u.nr_active, 0);
	/* Finishing a full zone: nothing to do. */
	ck_assert_int_eq(zone_finish(z), 0);
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, z, lba()), -EPERM);
	ck_assert_int_eq(zone_reset(z), 0);
	ck_assert_uint_eq(size_of(z), 0);
	/* Finishing an empty zone. */
	ck_assert_int_eq(zone_finish(seq_zone(1)), 0);
	ck_assert_uint_eq(size_of(seq_zone(1)), cap);
	free(buf);
}
END_TEST

/* ---- explicit open ---- */

/* geoms[3] has an open limit of 4: fill it, refuse one more. */
START_TEST(test_explicit_open_limit)
{
	struct p2z_zone_opts o = { .errors = P2Z_ERRORS_REMOUNT_RO,
				   .explicit_open = true };
	struct p2z_zone_usage u;
	uint64_t i;

	fx_create(&geoms[3]);
	fx_open(&o);
	ck_assert_uint_eq(fx.zt->nr_seq, 4);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(p2z_zone_get_write(fx.zt, seq_zone(i)), 0);
		ck_assert_uint_eq(dev_cond(seq_zone(i)),
				  P2Z_ZONE_COND_EXP_OPEN);
	}
	/* A second writer on an open zone takes no new resource. */
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, seq_zone(0)), 0);
	p2z_zone_table_usage(fx.zt, &u);
	ck_assert_uint_eq(u.nr_exp_open, 4);
	ck_assert_uint_eq(u.nr_active, 4);

	/* Conventional zones are never opened. */
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, 0), 0);
	p2z_zone_put_write(fx.zt, 0);

	ck_assert_int_eq(put(seq_zone(1), 0, lba()), lba());
	ck_assert_uint_eq(dev_cond(seq_zone(1)), P2Z_ZONE_COND_EXP_OPEN);
	p2z_zone_put_write(fx.zt, seq_zone(0));
	ck_assert_uint_eq(dev_cond(seq_zone(0)), P2Z_ZONE_COND_EXP_OPEN);
	p2z_zone_put_write(fx.zt, seq_zone(0));
	/* Never written: reset, so that it does not stay active. */
	ck_assert_uint_eq(dev_cond(seq_zone(0)), P2Z_ZONE_COND_EMPTY);
	p2z_zone_put_write(fx.zt, seq_zone(1));
	ck_assert_uint_eq(dev_cond(seq_zone(1)), P2Z_ZONE_COND_CLOSED);
	p2z_zone_table_usage(fx.zt, &u);
	ck_assert_uint_eq(u.nr_exp_open, 2);
	ck_assert_uint_eq(u.nr_active, 3);
	/* Unbalanced puts change nothing. */
	p2z_zone_put_write(fx.zt, seq_zone(1));
	p2z_zone_table_usage(fx.zt, &u);
	ck_assert_uint_eq(u.nr_exp_open, 2);
	for (i = 2; i < 4; i++)
		p2z_zone_put_write(fx.zt, seq_zone(i));
	p2z_zone_table_usage(fx.zt, &u);
	ck_assert_uint_eq(u.nr_exp_open, 0);
}
END_TEST

START_TEST(test_explicit_open_busy)
{
	struct p2z_emu_params p = geoms[0];
	struct p2z_zone_opts o = { .errors = P2Z_ERRORS_REMOUNT_RO,
				   .explicit_open = true };

	p.max_open = 2;
	p.max_active = 3;
	fx_create(&p);
	fx_open(&o);
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, seq_zone(0)), 0);
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, seq_zone(1)), 0);
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, seq_zone(2)), -EBUSY);
	ck_assert_uint_eq(dev_cond(seq_zone(2)), P2Z_ZONE_COND_EMPTY);
	p2z_zone_put_write(fx.zt, seq_zone(0));
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, seq_zone(2)), 0);
	ck_assert_uint_eq(dev_cond(seq_zone(2)), P2Z_ZONE_COND_EXP_OPEN);
	/* A full zone counts as held open but is not opened. */
	ck_assert_int_eq(zone_finish(seq_zone(3)), 0);
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, seq_zone(3)), -EBUSY);
	p2z_zone_put_write(fx.zt, seq_zone(1));
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, seq_zone(3)), 0);
	ck_assert_uint_eq(dev_cond(seq_zone(3)), P2Z_ZONE_COND_FULL);
	p2z_zone_put_write(fx.zt, seq_zone(3));
	p2z_zone_put_write(fx.zt, seq_zone(2));
}
END_TEST

/* Without an open limit on the device, explicit-open is ignored. */
START_TEST(test_explicit_open_no_limit)
{
	struct p2z_zone_opts o = { .errors = P2Z_ERRORS_REMOUNT_RO,
				   .explicit_open = true };
	struct p2z_zone_usage u;
	uint64_t i;

	fx_create(&geoms[0]);
	fx_open(&o);
	for (i = 0; i < fx.zt->nr_seq; i++)
		ck_assert_int_eq(p2z_zone_get_write(fx.zt, seq_zone(i)), 0);
	ck_assert_uint_eq(dev_cond(seq_zone(0)), P2Z_ZONE_COND_EMPTY);
	p2z_zone_table_usage(fx.zt, &u);
	ck_assert_uint_eq(u.nr_exp_open, 0);
	for (i = 0; i < fx.zt->nr_seq; i++)
		p2z_zone_put_write(fx.zt, seq_zone(i));
}
END_TEST

/* zonefs_file_truncate(): a reset zone is opened again for its writer. */
START_TEST(test_explicit_open_truncate)
{
	struct p2z_zone_opts o = { .errors = P2Z_ERRORS_REMOUNT_RO,
				   .explicit_open = true };
	struct p2z_zone_state st;
	struct p2z_zone_usage u;
	uint64_t z;

	fx_create(&geoms[3]);
	fx_open(&o);
	z = seq_zone(0);
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, z), 0);
	ck_assert_int_eq(put(z, 0, lba()), lba());
	ck_assert_int_eq(zone_reset(z), 0);
	ck_assert_uint_eq(dev_cond(z), P2Z_ZONE_COND_EXP_OPEN);
	state(z, &st);
	ck_assert_uint_eq(st.flags, P2Z_ZONE_F_OPEN);
	ck_assert_uint_eq(st.cond, P2Z_ZONE_COND_EXP_OPEN);
	ck_assert_int_eq(zone_finish(z), 0);
	state(z, &st);
	ck_assert_uint_eq(st.flags, 0);
	ck_assert_uint_eq(dev_cond(z), P2Z_ZONE_COND_FULL);
	p2z_zone_put_write(fx.zt, z);
	ck_assert_uint_eq(dev_cond(z), P2Z_ZONE_COND_FULL);
	p2z_zone_table_usage(fx.zt, &u);
	ck_assert_uint_eq(u.nr_exp_open, 0);
	ck_assert_uint_eq(u.nr_active, 0);
}
END_TEST

/* A zone written full is no longer open: the last close leaves it alone. */
START_TEST(test_explicit_open_write_full)
{
	struct p2z_zone_opts o = { .errors = P2Z_ERRORS_REMOUNT_RO,
				   .explicit_open = true };
	struct p2z_zone_state st;
	struct p2z_zone_usage u;
	uint64_t z, ofs;

	fx_create(&geoms[3]);
	fx_open(&o);
	z = seq_zone(0);
	ck_assert_int_eq(p2z_zone_get_write(fx.zt, z), 0);
	for (ofs = 0; ofs < fx.p.cap_bytes; ofs += 4 * lba())
		ck_assert_int_eq(put(z, ofs, 4 * lba()), 4 * lba());
	state(z, &st);
	ck_assert_uint_eq(st.flags, 0);
	ck_assert_uint_eq(st.cond, P2Z_ZONE_COND_FULL);
	p2z_zone_table_usage(fx.zt, &u);
	ck_assert_uint_eq(u.nr_exp_open, 1);
	ck_assert_uint_eq(u.nr_active, 0);
	p2z_zone_put_write(fx.zt, z);
	ck_assert(!p2z_zone_table_is_rdonly(fx.zt));
	ck_assert_uint_eq(dev_cond(z), P2Z_ZONE_COND_FULL);
	p2z_zone_table_usage(fx.zt, &u);
	ck_assert_uint_eq(u.nr_exp_open, 0);
}
END_TEST

/* ---- concurrency ---- */

struct refresher {
	pthread_t thread;
	uint64_t zidx;
	struct p2z_zone_state st;
	int ret;
};

static void *refresher_run(void *arg)
{
	struct refresher *r = arg;

	r->ret = p2z_zone_get_state(fx.zt, r->zidx, true, &r->st);
	return NULL;
}

/* What the zone's users do while a report of the zone is at the device. */
static void *zone_user_run(void *arg)
{
	uint64_t z = *(uint64_t *)arg;
	void *buf = buf_alloc(2 * lba());

	ck_assert_int_eq(put(z, lba(), lba()), lba());
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, 2 * lba(), 0), 2 * lba());
	ck_assert(check_pat(buf, 2 * lba(), z, 0));
	ck_assert_int_eq(zone_finish(z), 0);
	free(buf);
	hook_set(HOOK_RELEASED);
	return NULL;
}

/*
 * getfattr user.zone.cond reports the zone from the device: meanwhile its
 * reads, writes and a finish go on (they used to wait behind the report,
 * which held the zone's lock), and the finish, newer than the report, is
 * what the snapshot shows.
 */
START_TEST(test_concurrent_refresh)
{
	struct refresher r = { 0 };
	struct p2z_zone_state st;
	pthread_t user;
	bool done;
	uint64_t z;

	fx_setup(&geoms[0], P2Z_ERRORS_REPAIR, false);
	z = seq_zone(0);
	r.zidx = z;
	ck_assert_int_eq(put(z, 0, lba()), lba());
	fx_hook_report();
	hook_set(HOOK_ARMED);
	ck_assert_int_eq(pthread_create(&r.thread, NULL, refresher_run, &r), 0);
	ck_assert(hook_wait(HOOK_IN_REPORT));
	ck_assert_int_eq(pthread_create(&user, NULL, zone_user_run, &z), 0);
	/* The user releases the report when done; else it is stuck. */
	done = hook_wait(HOOK_RELEASED);
	hook_set(HOOK_RELEASED);
	pthread_join(user, NULL);
	pthread_join(r.thread, NULL);
	ck_assert_msg(done,
		      "a write, read and finish waited for a zone report");
	ck_assert_int_eq(r.ret, 0);
	ck_assert_uint_eq(r.st.cond, P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(r.st.wp_bytes, r.st.cap_bytes);
	state(z, &st);
	ck_assert_uint_eq(st.cond, P2Z_ZONE_COND_FULL);
	/* Nothing changed meanwhile: the report is taken. */
	ck_assert_int_eq(p2z_zone_get_state(fx.zt, z, true, &st), 0);
	ck_assert_uint_eq(st.cond, dev_cond(z));
}
END_TEST

/*
 * Every LBA written by the concurrency tests carries who wrote it and in
 * which write, so that the zone can be parsed back.
 */
struct tag {
	uint64_t magic;
	uint64_t writer;
	uint64_t seq;
	uint64_t lba_in_write;
	uint64_t nr_lbas;
};

#define TAG_MAGIC UINT64_C(0x7a6f6e6574616721)

struct writer {
	pthread_t thread;
	uint64_t id;
	uint64_t zidx;
	unsigned int nr_writes;
	unsigned int seed;
	uint64_t bytes;
	int err;
};

static void tag_fill(void *buf, const struct writer *w, uint64_t seq,
		     uint64_t nr_lbas)
{
	uint64_t i;

	memset(buf, 0, nr_lbas * lba());
	for (i = 0; i < nr_lbas; i++) {
		struct tag t = { TAG_MAGIC, w->id, seq, i, nr_lbas };

		memcpy((char *)buf + i * lba(), &t, sizeof(t));
	}
}

static void *writer_run(void *arg)
{
	struct writer *w = arg;
	void *buf = NULL;
	unsigned int i;

	if (posix_memalign(&buf, P2Z_ZONE_BUF_ALIGN, 8 * lba())) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (i = 0; i < w->nr_writes; i++) {
		uint64_t nr = 1 + rand_r(&w->seed) % 8;
		ssize_t n;

		tag_fill(buf, w, i, nr);
		n = p2z_zone_write(fx.zt, w->zidx, buf, nr * lba(), 0, true, 0);
		if (n != (ssize_t)(nr * lba())) {
			w->err = n < 0 ? (int)n : -EIO;
			break;
		}
		w->bytes += (uint64_t)n;
	}
	free(buf);
	return NULL;
}

/*
 * Parse a zone written by tagged writers: every write is whole and
 * contiguous, and each writer's writes appear in the order it made them.
 */
static void check_tags(uint64_t zidx, uint64_t size, struct writer *ws,
		       unsigned int nr_ws)
{
	uint64_t *next = calloc(nr_ws, sizeof(*next));
	void *buf = buf_alloc(lba());
	uint64_t ofs = 0;
	unsigned int i;

	ck_assert_ptr_nonnull(next);
	while (ofs < size) {
		struct tag t, u;
		uint64_t k;

		ck_assert_int_eq(p2z_zone_read(fx.zt, zidx, buf, lba(), ofs),
				 lba());
		memcpy(&t, buf, sizeof(t));
		ck_assert_uint_eq(t.magic, TAG_MAGIC);
		ck_assert_uint_lt(t.writer, nr_ws);
		ck_assert_uint_eq(t.lba_in_write, 0);
		ck_assert_uint_eq(t.seq, next[t.writer]);
		next[t.writer]++;
		for (k = 1; k < t.nr_lbas; k++) {
			ck_assert_int_eq(p2z_zone_read(fx.zt, zidx, buf, lba(),
						       ofs + k * lba()),
					 lba());
			memcpy(&u, buf, sizeof(u));
			ck_assert_uint_eq(u.writer, t.writer);
			ck_assert_uint_eq(u.seq, t.seq);
			ck_assert_uint_eq(u.lba_in_write, k);
		}
		ofs += t.nr_lbas * lba();
	}
	ck_assert_uint_eq(ofs, size);
	for (i = 0; i < nr_ws; i++)
		ck_assert_uint_eq(next[i], ws[i].nr_writes);
	free(buf);
	free(next);
}

static void run_writers(struct writer *ws, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		ck_assert_int_eq(pthread_create(&ws[i].thread, NULL, writer_run,
						&ws[i]),
				 0);
	for (i = 0; i < nr; i++) {
		pthread_join(ws[i].thread, NULL);
		ck_assert_int_eq(ws[i].err, 0);
	}
}

/* Writers on separate zones, and all of them on one zone (_i). */
START_TEST(test_concurrent_writers)
{
	/* Room for 4 x 200 writes of up to 8 x 512 bytes in one zone. */
	static const struct p2z_emu_params p = { 512, 96 * MiB, 80 * MiB, 5, 0,
						 0,   0,	2 * KiB };
	unsigned int nr = 4, writes = p2z_check_short_run() ? 16 : 200;
	struct writer ws[4];
	uint64_t total = 0;
	unsigned int i;

	fx_setup(&p, P2Z_ERRORS_REMOUNT_RO, _i % 2);
	memset(ws, 0, sizeof(ws));
	for (i = 0; i < nr; i++) {
		/* One zone each: each zone has a single writer, 0. */
		ws[i].id = _i < 2 ? 0 : i;
		ws[i].zidx = _i < 2 ? seq_zone(i) : seq_zone(0);
		ws[i].nr_writes = writes;
		ws[i].seed = 1000 + i;
	}
	run_writers(ws, nr);
	if (_i < 2) {
		for (i = 0; i < nr; i++) {
			ck_assert_uint_eq(size_of(ws[i].zidx), ws[i].bytes);
			ck_assert_uint_eq(dev_wp(ws[i].zidx), ws[i].bytes);
			check_tags(ws[i].zidx, ws[i].bytes, &ws[i], 1);
		}
		return;
	}
	for (i = 0; i < nr; i++)
		total += ws[i].bytes;
	ck_assert_uint_eq(size_of(seq_zone(0)), total);
	ck_assert_uint_eq(dev_wp(seq_zone(0)), total);
	check_tags(seq_zone(0), total, ws, nr);
}
END_TEST

struct racer {
	pthread_t thread;
	pthread_barrier_t *barrier;
	uint64_t zidx;
	uint64_t ofs;
	ssize_t ret;
};

static void *racer_run(void *arg)
{
	struct racer *r = arg;
	void *buf = NULL;

	if (posix_memalign(&buf, P2Z_ZONE_BUF_ALIGN, lba())) {
		r->ret = -ENOMEM;
		return NULL;
	}
	fill(buf, lba(), r->zidx, r->ofs);
	pthread_barrier_wait(r->barrier);
	r->ret = p2z_zone_write(fx.zt, r->zidx, buf, lba(), r->ofs, false, 0);
	free(buf);
	return NULL;
}

/* Writers racing for the same offset: one wins, the others get EINVAL. */
START_TEST(test_concurrent_same_offset)
{
	unsigned int rounds = p2z_check_short_run() ? 4 : 50, nr = 4, r, i;
	pthread_barrier_t barrier;
	struct racer rs[4];
	uint64_t z;

	fx_setup(&geoms[1], P2Z_ERRORS_REMOUNT_RO, _i);
	z = seq_zone(0);
	ck_assert_int_eq(pthread_barrier_init(&barrier, NULL, nr), 0);
	for (r = 0; r < rounds; r++) {
		unsigned int won = 0;

		for (i = 0; i < nr; i++) {
			rs[i] = (struct racer){ .barrier = &barrier,
						.zidx = z,
						.ofs = r * lba() };
			ck_assert_int_eq(pthread_create(&rs[i].thread, NULL,
							racer_run, &rs[i]),
					 0);
		}
		for (i = 0; i < nr; i++) {
			pthread_join(rs[i].thread, NULL);
			if (rs[i].ret == (ssize_t)lba())
				won++;
			else
				ck_assert_int_eq(rs[i].ret, -EINVAL);
		}
		ck_assert_uint_eq(won, 1);
	}
	pthread_barrier_destroy(&barrier);
	ck_assert_uint_eq(size_of(z), rounds * lba());
	check_zone_data(z, rounds * lba());
}
END_TEST

struct reader {
	pthread_t thread;
	uint64_t zidx;
	pthread_mutex_t *lock;
	bool *stop; /* guarded by *lock */
	unsigned long reads;
	int err;
};

static bool reader_stopped(struct reader *rd)
{
	bool stop;

	pthread_mutex_lock(rd->lock);
	stop = *rd->stop;
	pthread_mutex_unlock(rd->lock);
	return stop;
}

static void *reader_run(void *arg)
{
	struct reader *rd = arg;
	size_t len = 16 * lba();
	void *buf = NULL;

	if (posix_memalign(&buf, P2Z_ZONE_BUF_ALIGN, len)) {
		rd->err = -ENOMEM;
		return NULL;
	}
	while (!reader_stopped(rd)) {
		ssize_t n = p2z_zone_read(fx.zt, rd->zidx, buf, len, 0);

		if (n < 0 || n % lba()) {
			rd->err = n < 0 ? (int)n : -EIO;
			break;
		}
		rd->reads++;
	}
	free(buf);
	return NULL;
}

/* Readers never fail while the zone is reset and rewritten under them. */
START_TEST(test_concurrent_read_reset)
{
	unsigned int rounds = p2z_check_short_run() ? 10 : 300, i;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct reader rds[2];
	bool stop = false;
	uint64_t z;

	fx_setup(&geoms[0], P2Z_ERRORS_REMOUNT_RO, false);
	z = seq_zone(0);
	for (i = 0; i < 2; i++) {
		rds[i] = (struct reader){ .zidx = z,
					  .lock = &lock,
					  .stop = &stop };
		ck_assert_int_eq(pthread_create(&rds[i].thread, NULL,
						reader_run, &rds[i]),
				 0);
	}
	for (i = 0; i < rounds; i++) {
		ck_assert_int_eq(put(z, 0, 8 * lba()), 8 * lba());
		ck_assert_int_eq(put(z, 8 * lba(), 8 * lba()), 8 * lba());
		ck_assert_int_eq(i % 2 ? zone_finish(z) : zone_reset(z), 0);
		if (i % 2)
			ck_assert_int_eq(zone_reset(z), 0);
	}
	pthread_mutex_lock(&lock);
	stop = true;
	pthread_mutex_unlock(&lock);
	for (i = 0; i < 2; i++) {
		pthread_join(rds[i].thread, NULL);
		ck_assert_int_eq(rds[i].err, 0);
	}
	ck_assert(!p2z_zone_table_is_rdonly(fx.zt));
}
END_TEST

static Suite *zone_suite(void)
{
	Suite *s = suite_create("zone");
	TCase *tc;

	tc = tcase(s, "table_open");
	tcase_add_loop_test(tc, test_table_open_layout, 0, NR_GEOMS);
	tcase_add_test(tc, test_table_open_reopen);
	tcase_add_test(tc, test_table_open_bad_zones);
	tcase_add_test(tc, test_table_open_rdonly);

	tc = tcase(s, "read");
	tcase_add_loop_test(tc, test_read_clamped, 0, NR_GEOM_PATHS);
	tcase_add_loop_test(tc, test_read_finished_zeros, 0, NR_GEOM_PATHS);

	tc = tcase(s, "write");
	tcase_add_loop_test(tc, test_write_rules, 0, NR_GEOM_PATHS);
	tcase_add_loop_test(tc, test_write_capacity, 0, NR_GEOM_PATHS);
	tcase_add_loop_test(tc, test_write_cnv, 0, 2);
	tcase_add_loop_test(tc, test_write_min_align, 0, NR_GEOM_PATHS);

	tc = tcase(s, "truncate");
	tcase_add_loop_test(tc, test_truncate_reset_finish, 0, NR_GEOM_PATHS);

	tc = tcase(s, "explicit_open");
	tcase_add_test(tc, test_explicit_open_limit);
	tcase_add_test(tc, test_explicit_open_busy);
	tcase_add_test(tc, test_explicit_open_no_limit);
	tcase_add_test(tc, test_explicit_open_truncate);
	tcase_add_test(tc, test_explicit_open_write_full);

	tc = tcase(s, "concurrency");
	tcase_add_loop_test(tc, test_concurrent_writers, 0, 4);
	tcase_add_loop_test(tc, test_concurrent_same_offset, 0, 2);
	tcase_add_test(tc, test_concurrent_read_reset);
	tcase_add_test(tc, test_concurrent_refresh);
	return s;
	return s;
}

int main(void)
{
	return p2z_check_run(zone_suite());
}
