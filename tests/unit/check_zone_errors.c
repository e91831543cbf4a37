// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Zone table on the emu backend after errors: the errors= policies after
 * injected faults (write, read, zone management, zone conditions, a
 * table out of step with the device) and failed flushes and FUA writes.
 *
 * Each test builds its own sparse image under $TMPDIR (or /tmp), over the
 * geometries of zone_check.h.
 */
#include "zone_check.h"
#include "zone_priv.h"

static const enum p2z_errors policies[] = {
	P2Z_ERRORS_REMOUNT_RO,
	P2Z_ERRORS_ZONE_RO,
	P2Z_ERRORS_ZONE_OFFLINE,
	P2Z_ERRORS_REPAIR,
};

#define NR_POLICIES ARRAY_SIZE(policies)

/*
 * The emu backend's ops, copied so that a test can replace one of them
 * (fx_fail_flush(), fx_hook_report()); the backend's state is reached from
 * struct p2z_dev as before.
 */
static struct p2z_dev_ops hook_ops;
static int hook_flush_ret;

static int hook_flush(struct p2z_dev *dev)
{
	(void)dev;
	return hook_flush_ret;
}

/* From now on the device's flushes (and FUA writes) fail with err. */
static void fx_fail_flush(int err)
{
	hook_ops = *fx.dev->ops;
	hook_ops.flush = hook_flush;
	/* emu takes FUA natively: make FUA the dispatcher's flush after it */
	hook_ops.fua = false;
	hook_flush_ret = err;
	fx.dev->ops = &hook_ops;
}

static uint64_t dev_stat_nr(enum p2z_dev_stat_op op)
{
	return fx.dev->stats[op].nr;
}
/* ---- errors= policies ---- */

static void check_policy_after_write_error(enum p2z_errors errors, uint64_t z,
					   uint64_t size)
{
	struct p2z_zone_state st;
	void *buf = buf_alloc(lba());
	uint64_t other = seq_zone(2);

	state(z, &st);
	switch (errors) {
	case P2Z_ERRORS_REMOUNT_RO:
		ck_assert(p2z_zone_table_is_rdonly(fx.zt));
		ck_assert_uint_eq(st.flags, 0);
		ck_assert_uint_eq(st.size_bytes, size);
		ck_assert_int_eq(put(z, size, lba()), -EROFS);
		ck_assert_int_eq(put(other, 0, lba()), -EROFS);
		ck_assert_int_eq(p2z_zone_truncate(fx.zt, z, 0), -EROFS);
		ck_assert_int_eq(p2z_zone_get_write(fx.zt, other), -EROFS);
		break;
	case P2Z_ERRORS_ZONE_RO:
		ck_assert(!p2z_zone_table_is_rdonly(fx.zt));
		ck_assert_uint_eq(st.flags, P2Z_ZONE_F_RDONLY);
		ck_assert_uint_eq(st.size_bytes, size);
		ck_assert_int_eq(put(z, size, lba()), -EPERM);
		ck_assert_int_eq(p2z_zone_truncate(fx.zt, z, 0), -EPERM);
		ck_assert_int_eq(put(other, 0, lba()), lba());
		break;
	case P2Z_ERRORS_ZONE_OFFLINE:
		ck_assert(!p2z_zone_table_is_rdonly(fx.zt));
		ck_assert_uint_eq(st.flags, P2Z_ZONE_F_OFFLINE);
		ck_assert_uint_eq(st.size_bytes, 0);
		ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, lba(), 0),
				 -EPERM);
		ck_assert_int_eq(put(z, size, lba()), -EPERM);
		ck_assert_int_eq(put(other, 0, lba()), lba());
		break;
	case P2Z_ERRORS_REPAIR:
		ck_assert(!p2z_zone_table_is_rdonly(fx.zt));
		ck_assert_uint_eq(st.flags, 0);
		ck_assert_uint_eq(st.size_bytes, size);
		ck_assert_int_eq(put(z, size, lba()), lba());
		size += lba();
		break;
	}
	if (errors != P2Z_ERRORS_ZONE_OFFLINE)
		check_zone_data(z, size);
	free(buf);
}

/* An I/O error on a healthy zone (fail-next-io), through each write path. */
START_TEST(test_errors_write_fault)
{
	enum p2z_errors errors = policies[_i / 2];
	uint64_t z;

	fx_setup(&geoms[0], errors, _i % 2);
	z = seq_zone(0);
	ck_assert_int_eq(put(z, 0, 2 * lba()), 2 * lba());
	ck_assert_int_eq(
		p2z_emu_set_fault(fx.path, z, P2Z_EMU_FAULT_FAIL_NEXT_IO), 0);
	ck_assert_int_eq(put(z, 2 * lba(), lba()), -EIO);
	ck_assert_uint_eq(dev_wp(z), 2 * lba());
	check_policy_after_write_error(errors, z, 2 * lba());
}
END_TEST

/*
 * Every run of the errors= policy is flagged once for the filesystem, which
 * then drops the kernel's cache of the zone's file; nothing else is.
 */
START_TEST(test_errors_changed)
{
	void *buf;
	uint64_t z;

	fx_setup(&geoms[0], P2Z_ERRORS_ZONE_OFFLINE, false);
	buf = buf_alloc(lba());
	z = seq_zone(0);
	ck_assert_int_eq(put(z, 0, lba()), lba());
	ck_assert_int_eq(zone_reset(z), 0);
	ck_assert(!p2z_zone_clear_changed(fx.zt, z));
	ck_assert_int_eq(
		p2z_emu_set_fault(fx.path, z, P2Z_EMU_FAULT_FAIL_NEXT_IO), 0);
	ck_assert_int_eq(put(z, 0, lba()), -EIO);
	ck_assert(!p2z_zone_clear_changed(fx.zt, seq_zone(1)));
	ck_assert(p2z_zone_clear_changed(fx.zt, z));
	ck_assert(!p2z_zone_clear_changed(fx.zt, z));
	/* a read error on a good zone too (the policy ran, changed nothing) */
	ck_assert_int_eq(put(seq_zone(1), 0, lba()), lba());
	ck_assert_int_eq(p2z_emu_set_fault(fx.path, seq_zone(1),
					   P2Z_EMU_FAULT_FAIL_NEXT_IO),
			 0);
	ck_assert_int_eq(p2z_zone_read(fx.zt, seq_zone(1), buf, lba(), 0),
			 -EIO);
	ck_assert(p2z_zone_clear_changed(fx.zt, seq_zone(1)));
	ck_assert(!p2z_zone_clear_changed(fx.zt, fx.p.nr_zones));
	free(buf);
}
END_TEST

/* A failed reset is a write error too. */
START_TEST(test_errors_mgmt_fault)
{
	enum p2z_errors errors = policies[_i];
	uint64_t z;

	fx_setup(&geoms[0], errors, false);
	z = seq_zone(0);
	ck_assert_int_eq(put(z, 0, lba()), lba());
	ck_assert_int_eq(
		p2z_emu_set_fault(fx.path, z, P2Z_EMU_FAULT_FAIL_NEXT_IO), 0);
	ck_assert_int_eq(zone_reset(z), -EIO);
	check_policy_after_write_error(errors, z, lba());
}
END_TEST

/* zonefs: a read error on a consistent healthy zone changes nothing. */
START_TEST(test_errors_read_fault)
{
	enum p2z_errors errors = policies[_i];
	struct p2z_zone_state st;
	void *buf;
	uint64_t z;

	fx_setup(&geoms[0], errors, false);
	buf = buf_alloc(lba());
	z = seq_zone(0);
	ck_assert_int_eq(put(z, 0, lba()), lba());
	ck_assert_int_eq(
		p2z_emu_set_fault(fx.path, z, P2Z_EMU_FAULT_FAIL_NEXT_IO), 0);
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, lba(), 0), -EIO);
	state(z, &st);
	ck_assert_uint_eq(st.flags, 0);
	ck_assert_uint_eq(st.size_bytes, lba());
	ck_assert(!p2z_zone_table_is_rdonly(fx.zt));
	ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, lba(), 0), lba());
	ck_assert(check_pat(buf, lba(), z, 0));
	ck_assert_int_eq(put(z, lba(), lba()), lba());
	free(buf);
}
END_TEST

/* The device turns a zone read-only or offline while it is in use. */
START_TEST(test_errors_zone_condition)
{
	enum p2z_errors errors = policies[_i / 2];
	bool offline = _i % 2;
	struct p2z_zone_state st;
	void *buf;
	uint64_t z;

	fx_setup(&geoms[0], errors, false);
	buf = buf_alloc(lba());
	z = seq_zone(0);
	ck_assert_int_eq(put(z, 0, 3 * lba()), 3 * lba());
	ck_assert_int_eq(p2z_emu_set_fault(fx.path, z,
					   offline ? P2Z_EMU_FAULT_OFFLINE :
						     P2Z_EMU_FAULT_READONLY),
			 0);
	ck_assert_int_eq(put(z, 3 * lba(), lba()), -EIO);
	state(z, &st);
	ck_assert_uint_eq(st.cond, offline ? P2Z_ZONE_COND_OFFLINE :
					     P2Z_ZONE_COND_READONLY);
	ck_assert_int_eq(p2z_zone_table_is_rdonly(fx.zt),
			 errors == P2Z_ERRORS_REMOUNT_RO);
	if (offline || errors == P2Z_ERRORS_ZONE_OFFLINE) {
		ck_assert(st.flags & P2Z_ZONE_F_OFFLINE);
		ck_assert_uint_eq(st.size_bytes, 0);
		ck_assert_int_eq(p2z_zone_read(fx.zt, z, buf, lba(), 0),
				 -EPERM);
	} else {
		/* zonefs: a read-only zone keeps its size and its data. */
		ck_assert_uint_eq(st.flags, P2Z_ZONE_F_RDONLY);
		ck_assert_uint_eq(st.size_bytes, 3 * lba());
		check_zone_data(z, 3 * lba());
	}
	ck_assert_int_eq(put(z, 3 * lba(), lba()), -EPERM);
	ck_assert_int_eq(p2z_zone_flush(fx.zt, z), -EPERM);
	if (errors != P2Z_ERRORS_REMOUNT_RO)
		ck_assert_int_eq(put(seq_zone(1), 0, lba()), lba());
	free(buf);
}
END_TEST

/*
 * Someone wrote the zone behind the table's back: the write at the cached
 * write pointer fails (or the append lands elsewhere), the zone is re-read
 * and, with errors=repair, writing goes on at the device's write pointer.
 */
START_TEST(test_errors_desync)
{
	void *buf;
	uint64_t z;

	fx_setup(&geoms[0], P2Z_ERRORS_REPAIR, _i);
	buf = buf_alloc(2 * lba());
	z = seq_zone(0);
	ck_assert_int_eq(put(z, 0, lba()), lba());
	fill(buf, 2 * lba(), z, lba());
	ck_assert_int_eq(p2z_dev_pwrite(fx.dev, buf, 2 * lba(),
					fx.p.zone_bytes * z + lba(), 0),
			 2 * lba());
	ck_assert_int_eq(put(z, lba(), lba()), -EIO);
	ck_assert_uint_eq(size_of(z), dev_wp(z));
	ck_assert_uint_eq(size_of(z), _i ? 3 * lba() : 4 * lba());
	ck_assert_int_eq(put(z, size_of(z), lba()), lba());
	check_zone_data(z, 3 * lba());
	free(buf);
}
END_TEST

START_TEST(test_flush)
{
	fx_setup(&geoms[0], P2Z_ERRORS_REMOUNT_RO, false);
	ck_assert_int_eq(put(seq_zone(0), 0, lba()), lba());
	ck_assert_int_eq(p2z_zone_flush(fx.zt, seq_zone(0)), 0);
	ck_assert_int_eq(p2z_zone_flush(fx.zt, 0), 0);
	ck_assert_int_eq(p2z_zone_table_flush(fx.zt), 0);
	ck_assert_int_eq(p2z_zone_flush(fx.zt, fx.p.nr_zones), -EINVAL);
}
END_TEST

/*
 * O_DSYNC writes: P2Z_IO_FUA reaches the device (counted in dev.fua) on
 * sequential and conventional zones, through both write paths; a failed
 * FUA (here: the flush after it) is a device error: -EIO, errors= applied,
 * the size taken from the device.
 */
START_TEST(test_write_fua)
{
	uint64_t z;

	fx_setup(&geoms[0], P2Z_ERRORS_REMOUNT_RO, _i);
	z = seq_zone(0);
	ck_assert_int_eq(put_flags(z, 0, 2 * lba(), P2Z_IO_FUA), 2 * lba());
	ck_assert_uint_eq(dev_stat_nr(P2Z_DEV_STAT_FUA), 1);
	ck_assert_uint_eq(fx.dev->stats[P2Z_DEV_STAT_FUA].bytes, 2 * lba());
	ck_assert_int_eq(put(z, 2 * lba(), lba()), lba());
	ck_assert_uint_eq(dev_stat_nr(P2Z_DEV_STAT_FUA), 1);
	ck_assert_int_eq(put_flags(0, lba(), lba(), P2Z_IO_FUA), lba());
	ck_assert_uint_eq(dev_stat_nr(P2Z_DEV_STAT_FUA), 2);
	ck_assert_int_eq(put_flags(z, 3 * lba(), lba(), 1U << 7), -EINVAL);
	ck_assert_uint_eq(size_of(z), 3 * lba());

	fx_fail_flush(-EIO);
	ck_assert_int_eq(put_flags(z, 3 * lba(), lba(), P2Z_IO_FUA), -EIO);
	ck_assert_uint_eq(dev_stat_nr(P2Z_DEV_STAT_FUA), 3);
	ck_assert(p2z_zone_table_is_rdonly(fx.zt));
	/* the data reached the device: the size follows its write pointer */
	ck_assert_uint_eq(size_of(z), 4 * lba());
	check_zone_data(z, 4 * lba());
	ck_assert_int_eq(put(z, 4 * lba(), lba()), -EROFS);
}
END_TEST

/* The same on a conventional zone, with errors=zone-ro. */
START_TEST(test_write_fua_cnv_error)
{
	struct p2z_zone_state st;

	fx_setup(&geoms[0], P2Z_ERRORS_ZONE_RO, false);
	fx_fail_flush(-EIO);
	ck_assert_int_eq(put_flags(0, 0, lba(), P2Z_IO_FUA), -EIO);
	state(0, &st);
	ck_assert_uint_eq(st.flags, P2Z_ZONE_F_RDONLY);
	ck_assert(!p2z_zone_table_is_rdonly(fx.zt));
	ck_assert_int_eq(put(1, 0, lba()), lba());
}
END_TEST

struct flusher {
	pthread_t th;
	uint64_t zidx;
	int ret;
};

static void *flush_fn(void *arg)
{
	struct flusher *f = arg;

	f->ret = p2z_zone_flush(fx.zt, f->zidx);
	return NULL;
}

struct bwr {
	struct p2z_zone_wr wr;
	ssize_t ret;
	unsigned int done;
};

static void bwr_done(struct p2z_zone_wr *wr, ssize_t ret)
{
	struct bwr *b = (struct bwr *)wr;

	b->ret = ret;
	b->done++;
}

/*
 * The errors= policy of a failed flush is a barrier against the zone's
 * writes: one submitted on a queue during it (held here between its
 * wr_lock and the re-read of the zone) waits, then meets the policy's
 * verdict, errors=zone-ro: EPERM, nothing written or counted.
 */
START_TEST(test_flush_error_barrier)
{
	struct flusher f = { .ret = 1 };
	struct p2z_dev_queue *q;
	struct p2z_zone_state st;
	struct p2z_zone *zp;
	struct bwr b = { 0 };
	uint64_t z, l;
	void *buf;

	fx_setup(&geoms[0], P2Z_ERRORS_ZONE_RO, _i);
	z = seq_zone(0);
	zp = &fx.zt->zones[z];
	l = lba();
	buf = buf_alloc(l);
	ck_assert_int_eq(put(z, 0, l), l);
	ck_assert_int_eq(p2z_dev_queue_open(fx.dev, 4, &q), 0);
	fx_fail_flush(-EIO);
	/* The policy stops at io_lock, wr_lock held. */
	ck_assert_int_eq(pthread_rwlock_rdlock(&zp->io_lock), 0);
	f.zidx = z;
	ck_assert_int_eq(pthread_create(&f.th, NULL, flush_fn, &f), 0);
	while (!pthread_mutex_trylock(&zp->wr_lock)) {
		pthread_mutex_unlock(&zp->wr_lock);
		sched_yield();
	}
	fill(buf, l, z, l);
	b.wr.zidx = z;
	b.wr.buf = buf;
	b.wr.len = l;
	b.wr.ofs = l;
	b.wr.done = bwr_done;
	b.wr.q = q;
	p2z_zone_write_async(fx.zt, &b.wr);
	ck_assert_uint_eq(b.done, 0);
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 0);
	ck_assert_uint_eq(p2z_zone_seq_parked(fx.zt), 1);
	ck_assert_int_eq(pthread_rwlock_unlock(&zp->io_lock), 0);
	ck_assert_int_eq(pthread_join(f.th, NULL), 0);
	ck_assert_int_eq(f.ret, -EIO);
	while (p2z_dev_queue_inflight(q))
		p2z_dev_queue_reap(q, 1);
	ck_assert(!p2z_zone_write_unsettled());
	ck_assert_uint_eq(b.done, 1);
	ck_assert_int_eq(b.ret, -EPERM);
	state(z, &st);
	ck_assert_uint_eq(st.flags, P2Z_ZONE_F_RDONLY);
	ck_assert_uint_eq(st.size_bytes, l);
	ck_assert_uint_eq(dev_wp(z), l);
	p2z_dev_queue_close(q);
	free(buf);
}
END_TEST

static Suite *zone_errors_suite(void)
{
	Suite *s = suite_create("zone_errors");
	TCase *tc;

	tc = tcase(s, "errors");
	tcase_add_loop_test(tc, test_errors_write_fault, 0, 2 * NR_POLICIES);
	tcase_add_loop_test(tc, test_errors_mgmt_fault, 0, NR_POLICIES);
	tcase_add_loop_test(tc, test_errors_read_fault, 0, NR_POLICIES);
	tcase_add_loop_test(tc, test_errors_zone_condition, 0, 2 * NR_POLICIES);
	tcase_add_loop_test(tc, test_errors_desync, 0, 2);
	tcase_add_test(tc, test_errors_changed);

	tc = tcase(s, "flush");
	tcase_add_test(tc, test_flush);
	tcase_add_loop_test(tc, test_write_fua, 0, 2);
	tcase_add_test(tc, test_write_fua_cnv_error);
	tcase_add_loop_test(tc, test_flush_error_barrier, 0, 2);
	return s;
}

int main(void)
{
	return p2z_check_run(zone_errors_suite());
}
