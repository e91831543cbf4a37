// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the device dispatcher (dev.c) and of the emulated zoned
 * device (dev_emu.c, emu_host.c): ZNS state machine, write pointer rules,
 * limits, opening, persistence, faults, direct I/O.
 * Images live in a fresh mkdtemp() directory per test (emu_check.h).
 * P2Z_SHORT=1 shortens the heavy loops (valgrind).
 */

#include "emu_check.h"

/* ---- dev.c: status map, condition names, backend selection, splitting */

static const struct {
	uint16_t status;
	int err;
} status_cases[] = {
	{ 0x000, 0 },
	{ 0x002, -EINVAL }, /* invalid field */
	{ 0x006, -EIO }, /* internal error */
	{ 0x080, -EINVAL }, /* LBA out of range */
	{ 0x1b8, -ERANGE }, /* zone boundary error */
	{ 0x1b9, -ENOSPC }, /* zone is full */
	{ 0x1ba, -EROFS }, /* zone is read only */
	{ 0x1bb, -ENXIO }, /* zone is offline */
	{ 0x1bc, -EILSEQ }, /* zone invalid write */
	{ 0x1bd, -EOVERFLOW }, /* too many active zones */
	{ 0x1be, -ETOOMANYREFS }, /* too many open zones */
	{ 0x1bf, -EBADRQC }, /* invalid zone state transition */
	{ 0x287, -EIO }, /* deallocated or unwritten block */
	{ 0x1c0, -EIO }, /* unknown */
	{ 0x7ff, -EIO }, /* unknown */
	{ 0x4000 | 0x1b9, -ENOSPC }, /* DNR */
	{ 0x2000 | 0x1bc, -EILSEQ }, /* More */
	{ 0x6000 | 0x1bf, -EBADRQC },
	{ 0x1800 | 0x1be, -ETOOMANYREFS }, /* CRD */
	{ 0x8000 | 0x1ba, -EROFS },
	{ 0x4000, 0 },
};

START_TEST(test_nvme_status_errno_table)
{
	ck_assert_int_eq(p2z_dev_nvme_status_errno(status_cases[_i].status),
			 status_cases[_i].err);
	/* Unknown statuses are logged once and keep mapping to -EIO. */
	ck_assert_int_eq(p2z_dev_nvme_status_errno(status_cases[_i].status),
			 status_cases[_i].err);
}
END_TEST

static const struct {
	uint8_t cond;
	const char *name;
} cond_cases[] = {
	{ P2Z_ZONE_COND_NOT_WP, "not-wp" },
	{ P2Z_ZONE_COND_EMPTY, "empty" },
	{ P2Z_ZONE_COND_IMP_OPEN, "implicit-open" },
	{ P2Z_ZONE_COND_EXP_OPEN, "explicit-open" },
	{ P2Z_ZONE_COND_CLOSED, "closed" },
	{ P2Z_ZONE_COND_READONLY, "read-only" },
	{ P2Z_ZONE_COND_FULL, "full" },
	{ P2Z_ZONE_COND_OFFLINE, "offline" },
	{ 0x5, "unknown" },
	{ 0xff, "unknown" },
};

START_TEST(test_zone_cond_name_table)
{
	ck_assert_str_eq(p2z_zone_cond_name(cond_cases[_i].cond),
			 cond_cases[_i].name);
}
END_TEST

START_TEST(test_dev_open_backend)
{
	struct p2z_emu_params p = defparams();
	char other[PATH_MAX + 32];
	struct p2z_dev *dev = NULL;
	int fd;

	ck_assert_int_eq(p2z_emu_create(img, &p, false), 0);
	/* By probe, by name; the path is the dispatcher's own copy. */
	ck_assert_int_eq(p2z_dev_open(img, NULL, 0, &dev), 0);
	ck_assert_str_eq(dev->ops->name, "emu");
	ck_assert_str_eq(dev->path, img);
	ck_assert_ptr_ne(dev->path, img);
	ck_assert_uint_eq(dev->info.lba_bytes, LBA);
	ck_assert_uint_eq(dev->info.zone_lba, ZONE_LBA);
	ck_assert_uint_eq(dev->info.nr_zones, NR_ZONES);
	ck_assert_uint_eq(dev->info.max_append_bytes, 4 * LBA);
	ck_assert_uint_eq(dev->info.max_xfer_bytes, XFER);
	p2z_dev_close(dev);
	p2z_dev_close(NULL);

	ck_assert_int_eq(p2z_dev_open(img, "bogus", 0, &dev), -EINVAL);
	ck_assert_int_eq(p2z_dev_open(img, "", 0, &dev), -EINVAL);
	snprintf(other, sizeof(other), "%s/none", tmpdir);
	ck_assert_int_eq(p2z_dev_open(other, NULL, 0, &dev), -ENOENT);
	ck_assert_int_eq(p2z_dev_emu_ops.probe(other), 0);
	snprintf(other, sizeof(other), "%s/text", tmpdir);
	fd = open(other, O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "hello, world\n", 13), 13);
	close(fd);
	ck_assert_int_eq(p2z_dev_emu_ops.probe(other), 0);
	ck_assert_int_eq(p2z_dev_open(other, NULL, 0, &dev), -ENODEV);
	ck_assert_int_eq(p2z_dev_open(other, "emu", 0, &dev), -EINVAL);
	ck_assert_int_eq(p2z_dev_emu_ops.probe(tmpdir), 0);
	ck_assert_int_eq(p2z_dev_emu_ops.probe(img), 1);
}
END_TEST

/* Reads and writes above the transfer limit are split by the dispatcher;
 * the backend itself refuses them, as a device refuses more than MDTS. */
START_TEST(test_dev_pread_pwrite_split)
{
	struct p2z_emu_params p = defparams();
	uint64_t nlb = 3 * XFER / LBA + 2; /* 3 MiB + 2 blocks */
	struct p2z_dev *dev;
	ssize_t ret;
	void *buf;

	p.zone_bytes = 6 * XFER;
	p.cap_bytes = 5 * XFER;
	p.nr_zones = 2;
	dev = mkdev_p(&p);
	buf = malloc(nlb * LBA);
	ck_assert_ptr_nonnull(buf);
	fill(buf, nlb, 7, 0);
	ck_assert_int_eq(dev->ops->pwrite(dev, buf, XFER + LBA, 0, 0), -EINVAL);
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, nlb * LBA, 0, 0),
			 (ssize_t)(nlb * LBA));
	memset(buf, 0, nlb * LBA);
	ck_assert_int_eq(dev->ops->pread(dev, buf, XFER + LBA, 0), -EINVAL);
	ck_assert_int_eq(p2z_dev_pread(dev, buf, nlb * LBA, 0),
			 (ssize_t)(nlb * LBA));
	ck_assert(is_fill(buf, nlb, 7, 0));

	/* 3 MiB more crosses the 5 MiB capacity in its 2nd piece: short. */
	ret = p2z_dev_pwrite(dev, buf, 3 * XFER, nlb * LBA, 0);
	ck_assert_int_eq(ret, (ssize_t)(XFER));
	ck_assert_uint_eq(zinfo(dev, 0).wp_lba, nlb + XFER / LBA);
	/* Nothing written at all: the error itself. */
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, LBA, 0, 0), -EILSEQ);
	/* Alignment is checked before anything reaches the backend. */
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, 100, 0, 0), -EINVAL);
	ck_assert_int_eq(p2z_dev_pread(dev, buf, LBA, 512), -EINVAL);
	ck_assert_int_eq(p2z_dev_pread(dev, buf, 0, 0), 0);
	/* Called directly, the backend refuses zero length, as nvme and zbd. */
	ck_assert_int_eq(dev->ops->pread(dev, buf, 0, 0), -EINVAL);
	ck_assert_int_eq(dev->ops->pwrite(dev, buf, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(dev->ops->append(dev, 1, buf, 0, NULL, 0), -EINVAL);
	free(buf);
	p2z_dev_close(dev);
}
END_TEST

START_TEST(test_dev_append_split)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;
	uint64_t lba = 99;
	void *buf;

	p.max_append_bytes = 2 * LBA;
	dev = mkdev_p(&p);
	buf = malloc(CAP_LBA * LBA);
	ck_assert_ptr_nonnull(buf);
	fill(buf, 11, 3, 0);
	ck_assert_int_eq(dev->ops->append(dev, 1, buf, 3 * LBA, &lba, 0),
			 -EINVAL);
	/* 11 blocks in 2-block appends: 6 pieces, in order. */
	ck_assert_int_eq(p2z_dev_append(dev, 1, buf, 11 * LBA, &lba, 0),
			 (ssize_t)(11 * LBA));
	ck_assert_uint_eq(lba, ZONE_LBA);
	ck_assert_uint_eq(zwp(dev, 1), 11);
	expect_data(dev, 1, 0, 11, 3);
	/* 10 more than the 9 left: the last piece fails, short count. */
	fill(buf, 10, 4, 11);
	lba = 99;
	ck_assert_int_eq(p2z_dev_append(dev, 1, buf, 10 * LBA, &lba, 0),
			 (ssize_t)(8 * LBA));
	ck_assert_uint_eq(lba, ZONE_LBA + 11);
	ck_assert_uint_eq(zwp(dev, 1), 19);
	ck_assert_int_eq(p2z_dev_append(dev, 1, buf, 2 * LBA, &lba, 0),
			 -ERANGE);
	ck_assert_int_eq(p2z_dev_append(dev, 1, buf, 100, &lba, 0), -EINVAL);
	ck_assert_int_eq(p2z_dev_append(dev, NR_ZONES, buf, LBA, &lba, 0),
			 -EINVAL);
	free(buf);
	p2z_dev_close(dev);
}
END_TEST

START_TEST(test_dev_report_range)
{
	struct p2z_zone_info zi[NR_ZONES + 4];
	struct p2z_dev *dev = mkdev();
	uint64_t i;

	ck_assert_int_eq(p2z_dev_report_zones(dev, 0, NR_ZONES + 4, zi),
			 (int)NR_ZONES);
	for (i = 0; i < NR_ZONES; i++) {
		ck_assert_uint_eq(zi[i].start_lba, i * ZONE_LBA);
		ck_assert_uint_eq(zi[i].wp_lba, i * ZONE_LBA);
		ck_assert_uint_eq(zi[i].cap_lba, CAP_LBA);
		ck_assert_uint_eq(zi[i].type, P2Z_ZONE_TYPE_SEQ);
		ck_assert_uint_eq(zi[i].cond, P2Z_ZONE_COND_EMPTY);
	}
	ck_assert_int_eq(p2z_dev_report_zones(dev, NR_ZONES - 1, 4, zi), 1);
	ck_assert_int_eq(p2z_dev_report_zones(dev, NR_ZONES, 4, zi), 0);
	ck_assert_int_eq(p2z_dev_report_zones(dev, 0, 0, zi), 0);
	ck_assert_int_eq(mgmt(dev, NR_ZONES, P2Z_ZONE_OP_RESET), -EINVAL);
	ck_assert_int_eq(p2z_dev_flush(dev), 0);
	p2z_dev_close(dev);
}
END_TEST

/* ---- ZNS zone state machine */

enum init_state {
	S_EMPTY,
	S_IMP_OPEN, /* written, implicitly open */
	S_EXP_OPEN, /* explicitly opened, then written */
	S_EXP_OPEN_NODATA, /* explicitly opened, nothing written */
	S_CLOSED, /* written, closed */
	S_CLOSED_NODATA, /* opened and closed without data */
	S_FULL, /* written to capacity */
	S_FINISHED, /* written, then finished */
	S_READONLY,
	S_OFFLINE,
};

/* Bring zone 2 of a fresh device into @s; return its data length. */
static uint64_t make_state(struct p2z_dev *dev, enum init_state s)
{
	const uint64_t z = 2;

	switch (s) {
	case S_EMPTY:
		return 0;
	case S_EXP_OPEN_NODATA:
		ck_assert_int_eq(mgmt(dev, z, P2Z_ZONE_OP_OPEN), 0);
		return 0;
	case S_CLOSED_NODATA:
		ck_assert_int_eq(mgmt(dev, z, P2Z_ZONE_OP_OPEN), 0);
		ck_assert_int_eq(mgmt(dev, z, P2Z_ZONE_OP_CLOSE), 0);
		return 0;
	case S_EXP_OPEN:
		ck_assert_int_eq(mgmt(dev, z, P2Z_ZONE_OP_OPEN), 0);
		break;
	case S_FULL:
		ck_assert_int_eq(wr(dev, z, 0, CAP_LBA, 1),
				 (ssize_t)(CAP_LBA * LBA));
		return CAP_LBA;
	default:
		break;
	}
	ck_assert_int_eq(wr(dev, z, 0, 3, 1), (ssize_t)(3 * LBA));
	if (s == S_CLOSED)
		ck_assert_int_eq(mgmt(dev, z, P2Z_ZONE_OP_CLOSE), 0);
	if (s == S_FINISHED)
		ck_assert_int_eq(mgmt(dev, z, P2Z_ZONE_OP_FINISH), 0);
	if (s == S_READONLY)
		inject(dev, z, P2Z_EMU_FAULT_READONLY);
	if (s == S_OFFLINE)
		inject(dev, z, P2Z_EMU_FAULT_OFFLINE);
	return 3;
}

#define C(x) P2Z_ZONE_COND_##x
#define WP_KEEP UINT64_MAX /* write pointer unchanged */

static const struct {
	enum init_state from;
	uint8_t from_cond;
	enum p2z_zone_op op;
	int ret;
	uint8_t to;
	uint64_t wp; /* LBAs from the zone start, or WP_KEEP */
} transitions[] = {
	{ S_EMPTY, C(EMPTY), P2Z_ZONE_OP_RESET, 0, C(EMPTY), 0 },
	{ S_EMPTY, C(EMPTY), P2Z_ZONE_OP_OPEN, 0, C(EXP_OPEN), 0 },
	{ S_EMPTY, C(EMPTY), P2Z_ZONE_OP_CLOSE, -EBADRQC, C(EMPTY), 0 },
	{ S_EMPTY, C(EMPTY), P2Z_ZONE_OP_FINISH, 0, C(FULL), CAP_LBA },

	{ S_IMP_OPEN, C(IMP_OPEN), P2Z_ZONE_OP_RESET, 0, C(EMPTY), 0 },
	{ S_IMP_OPEN, C(IMP_OPEN), P2Z_ZONE_OP_OPEN, 0, C(EXP_OPEN), 3 },
	{ S_IMP_OPEN, C(IMP_OPEN), P2Z_ZONE_OP_CLOSE, 0, C(CLOSED), 3 },
	{ S_IMP_OPEN, C(IMP_OPEN), P2Z_ZONE_OP_FINISH, 0, C(FULL), CAP_LBA },

	{ S_EXP_OPEN, C(EXP_OPEN), P2Z_ZONE_OP_RESET, 0, C(EMPTY), 0 },
	{ S_EXP_OPEN, C(EXP_OPEN), P2Z_ZONE_OP_OPEN, 0, C(EXP_OPEN), 3 },
	{ S_EXP_OPEN, C(EXP_OPEN), P2Z_ZONE_OP_CLOSE, 0, C(CLOSED), 3 },
	{ S_EXP_OPEN, C(EXP_OPEN), P2Z_ZONE_OP_FINISH, 0, C(FULL), CAP_LBA },

	/* ZNS: closing an unwritten open zone leaves it closed (active). */
	{ S_EXP_OPEN_NODATA, C(EXP_OPEN), P2Z_ZONE_OP_RESET, 0, C(EMPTY), 0 },
	{ S_EXP_OPEN_NODATA, C(EXP_OPEN), P2Z_ZONE_OP_OPEN, 0, C(EXP_OPEN), 0 },
	{ S_EXP_OPEN_NODATA, C(EXP_OPEN), P2Z_ZONE_OP_CLOSE, 0, C(CLOSED), 0 },
	{ S_EXP_OPEN_NODATA, C(EXP_OPEN), P2Z_ZONE_OP_FINISH, 0, C(FULL),
	  CAP_LBA },

	{ S_CLOSED, C(CLOSED), P2Z_ZONE_OP_RESET, 0, C(EMPTY), 0 },
	{ S_CLOSED, C(CLOSED), P2Z_ZONE_OP_OPEN, 0, C(EXP_OPEN), 3 },
	{ S_CLOSED, C(CLOSED), P2Z_ZONE_OP_CLOSE, 0, C(CLOSED), 3 },
	{ S_CLOSED, C(CLOSED), P2Z_ZONE_OP_FINISH, 0, C(FULL), CAP_LBA },

	{ S_CLOSED_NODATA, C(CLOSED), P2Z_ZONE_OP_RESET, 0, C(EMPTY), 0 },
	{ S_CLOSED_NODATA, C(CLOSED), P2Z_ZONE_OP_OPEN, 0, C(EXP_OPEN), 0 },
	{ S_CLOSED_NODATA, C(CLOSED), P2Z_ZONE_OP_CLOSE, 0, C(CLOSED), 0 },
	{ S_CLOSED_NODATA, C(CLOSED), P2Z_ZONE_OP_FINISH, 0, C(FULL), CAP_LBA },

	{ S_FULL, C(FULL), P2Z_ZONE_OP_RESET, 0, C(EMPTY), 0 },
	{ S_FULL, C(FULL), P2Z_ZONE_OP_OPEN, -EBADRQC, C(FULL), CAP_LBA },
	{ S_FULL, C(FULL), P2Z_ZONE_OP_CLOSE, -EBADRQC, C(FULL), CAP_LBA },
	{ S_FULL, C(FULL), P2Z_ZONE_OP_FINISH, 0, C(FULL), CAP_LBA },

	{ S_FINISHED, C(FULL), P2Z_ZONE_OP_RESET, 0, C(EMPTY), 0 },
	{ S_FINISHED, C(FULL), P2Z_ZONE_OP_OPEN, -EBADRQC, C(FULL), CAP_LBA },
	{ S_FINISHED, C(FULL), P2Z_ZONE_OP_CLOSE, -EBADRQC, C(FULL), CAP_LBA },
	{ S_FINISHED, C(FULL), P2Z_ZONE_OP_FINISH, 0, C(FULL), CAP_LBA },

	{ S_READONLY, C(READONLY), P2Z_ZONE_OP_RESET, -EBADRQC, C(READONLY),
	  WP_KEEP },
	{ S_READONLY, C(READONLY), P2Z_ZONE_OP_OPEN, -EBADRQC, C(READONLY),
	  WP_KEEP },
	{ S_READONLY, C(READONLY), P2Z_ZONE_OP_CLOSE, -EBADRQC, C(READONLY),
	  WP_KEEP },
	{ S_READONLY, C(READONLY), P2Z_ZONE_OP_FINISH, -EBADRQC, C(READONLY),
	  WP_KEEP },

	{ S_OFFLINE, C(OFFLINE), P2Z_ZONE_OP_RESET, -EBADRQC, C(OFFLINE),
	  WP_KEEP },
	{ S_OFFLINE, C(OFFLINE), P2Z_ZONE_OP_OPEN, -EBADRQC, C(OFFLINE),
	  WP_KEEP },
	{ S_OFFLINE, C(OFFLINE), P2Z_ZONE_OP_CLOSE, -EBADRQC, C(OFFLINE),
	  WP_KEEP },
	{ S_OFFLINE, C(OFFLINE), P2Z_ZONE_OP_FINISH, -EBADRQC, C(OFFLINE),
	  WP_KEEP },
};

START_TEST(test_zone_mgmt_transitions)
{
	struct p2z_dev *dev = mkdev();
	uint64_t data, wp_before;

	data = make_state(dev, transitions[_i].from);
	ck_assert_uint_eq(zcond(dev, 2), transitions[_i].from_cond);
	wp_before = zwp(dev, 2);
	ck_assert_int_eq(mgmt(dev, 2, transitions[_i].op), transitions[_i].ret);
	ck_assert_uint_eq(zcond(dev, 2), transitions[_i].to);
	ck_assert_uint_eq(zwp(dev, 2), transitions[_i].wp == WP_KEEP ?
					       wp_before :
					       transitions[_i].wp);
	/* Neighbours untouched. */
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_EMPTY);
	ck_assert_uint_eq(zcond(dev, 3), P2Z_ZONE_COND_EMPTY);

	/* Data: kept unless reset; zeros from the data end on. */
	if (transitions[_i].to == C(OFFLINE))
		goto out;
	if (transitions[_i].to == C(EMPTY)) {
		expect_zeros(dev, 2, 0, ZONE_LBA);
		goto out;
	}
	if (data)
		expect_data(dev, 2, 0, data, 1);
	expect_zeros(dev, 2, data, ZONE_LBA - data);
	/* The same state is still the same after a reopen. */
	if (transitions[_i].to != C(FULL) && transitions[_i].to != C(READONLY))
		goto out;
	p2z_dev_close(dev);
	dev = opendev(0);
	ck_assert_uint_eq(zcond(dev, 2), transitions[_i].to);
	if (data)
		expect_data(dev, 2, 0, data, 1);
	expect_zeros(dev, 2, data, ZONE_LBA - data);
out:
	p2z_dev_close(dev);
}
END_TEST

/* A write or append implicitly opens an empty or closed zone. */
START_TEST(test_zone_implicit_open)
{
	struct p2z_dev *dev = mkdev();
	uint64_t lba;
	char buf[LBA];

	ck_assert_int_eq(wr(dev, 0, 0, 1, 1), (ssize_t)LBA);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_IMP_OPEN);
	ck_assert_int_eq(mgmt(dev, 0, P2Z_ZONE_OP_CLOSE), 0);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_CLOSED);
	ck_assert_int_eq(wr(dev, 0, 1, 1, 1), (ssize_t)LBA);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_IMP_OPEN);
	/* Explicitly open stays explicitly open when written. */
	ck_assert_int_eq(mgmt(dev, 1, P2Z_ZONE_OP_OPEN), 0);
	ck_assert_int_eq(wr(dev, 1, 0, 1, 1), (ssize_t)LBA);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_EXP_OPEN);
	fill(buf, 1, 2, 0);
	ck_assert_int_eq(p2z_dev_append(dev, 3, buf, LBA, &lba, 0),
			 (ssize_t)LBA);
	ck_assert_uint_eq(zcond(dev, 3), P2Z_ZONE_COND_IMP_OPEN);
	/* Writing the last block makes it full, from any open state. */
	ck_assert_int_eq(wr(dev, 1, 1, CAP_LBA - 1, 1),
			 (ssize_t)((CAP_LBA - 1) * LBA));
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(zwp(dev, 1), CAP_LBA);
	p2z_dev_close(dev);
}
END_TEST

/* ---- writes, reads, appends */

/* Zone 2 holds 3 blocks (implicitly open) before each case. */
static const struct {
	const char *what;
	int64_t zone_ofs_bytes; /* offset from the start of zone 2 */
	int64_t len;
	enum init_state state;
	int ret;
} write_cases[] = {
	{ "at wp", 3 * LBA, LBA, S_IMP_OPEN, (int)LBA },
	{ "at wp to capacity", 3 * LBA, (CAP_LBA - 3) * LBA, S_IMP_OPEN,
	  (int)((CAP_LBA - 3) * LBA) },
	{ "before wp", 2 * LBA, LBA, S_IMP_OPEN, -EILSEQ },
	{ "after wp", 4 * LBA, LBA, S_IMP_OPEN, -EILSEQ },
	{ "zone start", 0, LBA, S_IMP_OPEN, -EILSEQ },
	{ "crossing capacity", 3 * LBA, (CAP_LBA - 2) * LBA, S_IMP_OPEN,
	  -ERANGE },
	{ "crossing the zone end", 3 * LBA, ZONE_LBA *LBA, S_IMP_OPEN,
	  -ERANGE },
	{ "in the gap", CAP_LBA *LBA, LBA, S_IMP_OPEN, -EILSEQ },
	{ "misaligned offset", 3 * LBA + 512, LBA, S_IMP_OPEN, -EINVAL },
	{ "misaligned length", 3 * LBA, 512, S_IMP_OPEN, -EINVAL },
	{ "zero length", 3 * LBA, 0, S_IMP_OPEN, 0 },
	{ "closed, at wp", 3 * LBA, LBA, S_CLOSED, (int)LBA },
	{ "closed, not at wp", 0, LBA, S_CLOSED, -EILSEQ },
	{ "full", CAP_LBA *LBA, LBA, S_FULL, -ENOSPC },
	{ "full, not at wp", 0, LBA, S_FULL, -ENOSPC },
	{ "finished, at old wp", 3 * LBA, LBA, S_FINISHED, -ENOSPC },
	{ "read-only, at wp", 3 * LBA, LBA, S_READONLY, -EROFS },
	{ "read-only, not at wp", 0, LBA, S_READONLY, -EROFS },
	{ "offline", 3 * LBA, LBA, S_OFFLINE, -ENXIO },
	{ "past the device", (int64_t)((NR_ZONES - 2) * ZONE_LBA * LBA), LBA,
	  S_IMP_OPEN, -EINVAL },
	{ "crossing the device end",
	  (int64_t)((NR_ZONES - 3) * ZONE_LBA * LBA + (ZONE_LBA - 1) * LBA),
	  2 * LBA, S_IMP_OPEN, -EINVAL },
};

START_TEST(test_pwrite_rules)
{
	struct p2z_dev *dev = mkdev();
	uint64_t before, len = (uint64_t)write_cases[_i].len;
	uint8_t cond;
	char *buf = calloc(1, ZONE_LBA * LBA);

	ck_assert_ptr_nonnull(buf);
	make_state(dev, write_cases[_i].state);
	before = zwp(dev, 2);
	cond = zcond(dev, 2);
	fill(buf, len / LBA, 9, 3);
	ck_assert_msg(
		p2z_dev_pwrite(dev, buf, len,
			       zofs(2, 0) +
				       (uint64_t)write_cases[_i].zone_ofs_bytes,
			       0) == write_cases[_i].ret,
		"%s", write_cases[_i].what);
	if (write_cases[_i].ret > 0) {
		ck_assert_uint_eq(zwp(dev, 2), before + len / LBA);
		expect_data(dev, 2, 3, len / LBA, 9);
	} else {
		ck_assert_uint_eq(zwp(dev, 2), before);
		ck_assert_uint_eq(zcond(dev, 2), cond);
	}
	free(buf);
	p2z_dev_close(dev);
}
END_TEST

START_TEST(test_pread_zeros)
{
	struct p2z_dev *dev = mkdev();
	char junk[LBA];
	ssize_t ret;
	void *buf;

	/* Empty zone, unwritten tail, capacity-to-zone-size gap: zeros. */
	expect_zeros(dev, 0, 0, ZONE_LBA);
	ck_assert_int_eq(wr(dev, 0, 0, 5, 4), (ssize_t)(5 * LBA));
	expect_data(dev, 0, 0, 5, 4);
	expect_zeros(dev, 0, 5, ZONE_LBA - 5);
	expect_zeros(dev, 0, CAP_LBA, ZONE_LBA - CAP_LBA);
	buf = rd(dev, 0, 3, 4, &ret);
	ck_assert_int_eq(ret, (ssize_t)(4 * LBA));
	ck_assert(is_fill(buf, 2, 4, 3));
	ck_assert(is_zero((char *)buf + 2 * LBA, 2 * LBA));
	free(buf);

	/* What an interrupted write left past the pointer is never read. */
	memset(junk, 0xab, sizeof(junk));
	raw_pwrite(junk, sizeof(junk), DATA_OFS + zofs(0, 5));
	raw_pwrite(junk, sizeof(junk), DATA_OFS + zofs(0, CAP_LBA - 1));
	raw_pwrite(junk, sizeof(junk), DATA_OFS + zofs(0, CAP_LBA + 1));
	expect_zeros(dev, 0, 5, ZONE_LBA - 5);
	ck_assert_int_eq(mgmt(dev, 0, P2Z_ZONE_OP_FINISH), 0);
	expect_data(dev, 0, 0, 5, 4);
	expect_zeros(dev, 0, 5, ZONE_LBA - 5);

	/* Reads may not cross a zone boundary; offline zones refuse. */
	buf = rd(dev, 0, ZONE_LBA - 1, 2, &ret);
	ck_assert_int_eq(ret, -ERANGE);
	free(buf);
	buf = rd(dev, NR_ZONES - 1, ZONE_LBA - 1, 2, &ret);
	ck_assert_int_eq(ret, -EINVAL);
	free(buf);
	inject(dev, 0, P2Z_EMU_FAULT_OFFLINE);
	buf = rd(dev, 0, 0, 1, &ret);
	ck_assert_int_eq(ret, -ENXIO);
	free(buf);
	p2z_dev_close(dev);
}
END_TEST

static blkcnt_t img_blocks(void)
{
	struct stat st;

	ck_assert_int_eq(stat(img, &st), 0);
	return st.st_blocks;
}

/* Reset zeroes the zone in the image itself and gives the space back. */
START_TEST(test_reset_punches)
{
	struct p2z_dev *dev = mkdev();
	blkcnt_t before = img_blocks();
	char raw[LBA];

	ck_assert_int_eq(wr(dev, 1, 0, CAP_LBA, 6), (ssize_t)(CAP_LBA * LBA));
	ck_assert_int_eq(p2z_dev_flush(dev), 0);
	ck_assert_int_ge(img_blocks(),
			 before + (blkcnt_t)(CAP_LBA * LBA / 512));
	raw_pread(raw, sizeof(raw), DATA_OFS + zofs(1, 7));
	ck_assert(is_fill(raw, 1, 6, 7));
	ck_assert_int_eq(mgmt(dev, 1, P2Z_ZONE_OP_RESET), 0);
	ck_assert_int_le(img_blocks(), before);
	raw_pread(raw, sizeof(raw), DATA_OFS + zofs(1, 7));
	ck_assert(is_zero(raw, sizeof(raw)));
	expect_zeros(dev, 1, 0, ZONE_LBA);
	/* Writable again from the start. */
	ck_assert_int_eq(wr(dev, 1, 0, 2, 8), (ssize_t)(2 * LBA));
	expect_data(dev, 1, 0, 2, 8);
	p2z_dev_close(dev);
}
END_TEST

START_TEST(test_append_lba)
{
	struct p2z_dev *dev = mkdev();
	char buf[4 * LBA];
	uint64_t lba, i;

	for (i = 0; i < 5; i++) {
		fill(buf, 4, 10 + i, 0);
		ck_assert_int_eq(p2z_dev_append(dev, 5, buf, 4 * LBA, &lba, 0),
				 (ssize_t)(4 * LBA));
		ck_assert_uint_eq(lba, 5 * ZONE_LBA + 4 * i);
	}
	ck_assert_uint_eq(zcond(dev, 5), P2Z_ZONE_COND_FULL);
	for (i = 0; i < 5; i++) {
		ssize_t ret;
		void *b = rd(dev, 5, 4 * i, 4, &ret);

		ck_assert_int_eq(ret, (ssize_t)(4 * LBA));
		ck_assert(is_fill(b, 4, 10 + i, 0));
		free(b);
	}
	ck_assert_int_eq(p2z_dev_append(dev, 5, buf, LBA, &lba, 0), -ENOSPC);
	fill(buf, 3, 1, 0);
	ck_assert_int_eq(wr(dev, 6, 0, CAP_LBA - 2, 1),
			 (ssize_t)((CAP_LBA - 2) * LBA));
	ck_assert_int_eq(p2z_dev_append(dev, 6, buf, 3 * LBA, &lba, 0),
			 -ERANGE);
	ck_assert_int_eq(p2z_dev_append(dev, 6, buf, 2 * LBA, &lba, 0),
			 (ssize_t)(2 * LBA));
	ck_assert_uint_eq(lba, 6 * ZONE_LBA + CAP_LBA - 2);
	inject(dev, 7, P2Z_EMU_FAULT_READONLY);
	ck_assert_int_eq(p2z_dev_append(dev, 7, buf, LBA, &lba, 0), -EROFS);
	inject(dev, 7, P2Z_EMU_FAULT_OFFLINE);
	ck_assert_int_eq(p2z_dev_append(dev, 7, buf, LBA, &lba, 0), -ENXIO);
	p2z_dev_close(dev);
}
END_TEST

START_TEST(test_conventional_zones)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;
	struct p2z_zone_info zi;
	uint64_t lba;
	char buf[LBA];

	p.nr_cnv_zones = 2;
	dev = mkdev_p(&p);
	/* The first two zones are conventional, the rest sequential. */
	ck_assert_uint_eq(zinfo(dev, 1).type, P2Z_ZONE_TYPE_CNV);
	ck_assert_uint_eq(zinfo(dev, 2).type, P2Z_ZONE_TYPE_SEQ);
	zi = zinfo(dev, 1);
	ck_assert_uint_eq(zi.type, P2Z_ZONE_TYPE_CNV);
	ck_assert_uint_eq(zi.cond, P2Z_ZONE_COND_NOT_WP);
	ck_assert_uint_eq(zi.cap_lba, ZONE_LBA);
	ck_assert_uint_eq(zi.wp_lba, ZONE_LBA);
	ck_assert_uint_eq(zinfo(dev, 2).type, P2Z_ZONE_TYPE_SEQ);

	/* Random writes anywhere in the zone, overwrites, the whole size. */
	ck_assert_int_eq(wr(dev, 1, 20, 4, 1), (ssize_t)(4 * LBA));
	ck_assert_int_eq(wr(dev, 1, 5, 2, 2), (ssize_t)(2 * LBA));
	ck_assert_int_eq(wr(dev, 1, 5, 1, 3), (ssize_t)LBA);
	expect_data(dev, 1, 20, 4, 1);
	expect_data(dev, 1, 5, 1, 3);
	expect_data(dev, 1, 6, 1, 2);
	expect_zeros(dev, 1, 0, 5);
	ck_assert_uint_eq(zinfo(dev, 1).cond, P2Z_ZONE_COND_NOT_WP);
	ck_assert_int_eq(wr(dev, 1, ZONE_LBA - 1, 2, 1), -ERANGE);
	ck_assert_int_eq(wr(dev, 0, 0, ZONE_LBA, 5), (ssize_t)(ZONE_LBA * LBA));
	expect_data(dev, 0, 0, ZONE_LBA, 5);
	/* No zone operations, no appends. */
	ck_assert_int_eq(mgmt(dev, 0, P2Z_ZONE_OP_RESET), -EINVAL);
	ck_assert_int_eq(mgmt(dev, 0, P2Z_ZONE_OP_OPEN), -EINVAL);
	ck_assert_int_eq(mgmt(dev, 0, P2Z_ZONE_OP_CLOSE), -EINVAL);
	ck_assert_int_eq(mgmt(dev, 0, P2Z_ZONE_OP_FINISH), -EINVAL);
	fill(buf, 1, 1, 0);
	ck_assert_int_eq(p2z_dev_append(dev, 0, buf, LBA, &lba, 0), -EINVAL);
	/* Faults apply to them too. */
	inject(dev, 1, P2Z_EMU_FAULT_READONLY);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_READONLY);
	ck_assert_int_eq(wr(dev, 1, 0, 1, 1), -EROFS);
	expect_data(dev, 1, 20, 4, 1);
	inject(dev, 1, P2Z_EMU_FAULT_ONLINE);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_NOT_WP);
	ck_assert_int_eq(wr(dev, 1, 0, 1, 1), (ssize_t)LBA);
	p2z_dev_close(dev);
	/* Persisted. */
	dev = opendev(0);
	expect_data(dev, 1, 20, 4, 1);
	expect_data(dev, 0, 1, ZONE_LBA - 1, 5);
	p2z_dev_close(dev);
}
END_TEST

/* ---- open and active limits */

START_TEST(test_limits_implicit_close)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;

	p.max_open = 2;
	p.max_active = 3;
	dev = mkdev_p(&p);
	ck_assert_int_eq(wr(dev, 0, 0, 1, 1), (ssize_t)LBA);
	ck_assert_int_eq(wr(dev, 1, 0, 1, 1), (ssize_t)LBA);
	/* Open limit reached: the oldest implicitly open zone is closed. */
	ck_assert_int_eq(wr(dev, 2, 0, 1, 1), (ssize_t)LBA);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_CLOSED);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_IMP_OPEN);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_IMP_OPEN);
	/* Active limit (closed zones count): nothing can be closed for it. */
	ck_assert_int_eq(wr(dev, 3, 0, 1, 1), -EOVERFLOW);
	ck_assert_int_eq(mgmt(dev, 3, P2Z_ZONE_OP_OPEN), -EOVERFLOW);
	ck_assert_uint_eq(zcond(dev, 3), P2Z_ZONE_COND_EMPTY);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_IMP_OPEN);
	/* Writing the closed zone reopens it, closing zone 1 for room. */
	ck_assert_int_eq(wr(dev, 0, 1, 1, 1), (ssize_t)LBA);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_IMP_OPEN);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_CLOSED);
	/* Finishing frees an active zone. */
	ck_assert_int_eq(mgmt(dev, 1, P2Z_ZONE_OP_FINISH), 0);
	ck_assert_int_eq(wr(dev, 3, 0, 1, 1), (ssize_t)LBA);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_CLOSED);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_IMP_OPEN);
	ck_assert_uint_eq(zcond(dev, 3), P2Z_ZONE_COND_IMP_OPEN);
	/* Filling a zone frees both its open and active resources. */
	ck_assert_int_eq(wr(dev, 3, 1, CAP_LBA - 1, 1),
			 (ssize_t)((CAP_LBA - 1) * LBA));
	ck_assert_int_eq(mgmt(dev, 4, P2Z_ZONE_OP_OPEN), 0);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_IMP_OPEN);
	ck_assert_uint_eq(zcond(dev, 4), P2Z_ZONE_COND_EXP_OPEN);
	/* Resetting frees an active zone. */
	ck_assert_int_eq(wr(dev, 5, 0, 1, 1), -EOVERFLOW);
	ck_assert_int_eq(mgmt(dev, 2, P2Z_ZONE_OP_RESET), 0);
	ck_assert_int_eq(wr(dev, 5, 0, 1, 1), (ssize_t)LBA);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_CLOSED);
	ck_assert_uint_eq(zcond(dev, 5), P2Z_ZONE_COND_IMP_OPEN);
	p2z_dev_close(dev);
}
END_TEST

START_TEST(test_limits_explicit_open)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;

	p.max_open = 2;
	dev = mkdev_p(&p);
	ck_assert_int_eq(mgmt(dev, 0, P2Z_ZONE_OP_OPEN), 0);
	ck_assert_int_eq(mgmt(dev, 1, P2Z_ZONE_OP_OPEN), 0);
	/* Explicitly open zones are never closed behind the host's back. */
	ck_assert_int_eq(wr(dev, 2, 0, 1, 1), -ETOOMANYREFS);
	ck_assert_int_eq(mgmt(dev, 2, P2Z_ZONE_OP_OPEN), -ETOOMANYREFS);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_EMPTY);
	ck_assert_int_eq(mgmt(dev, 0, P2Z_ZONE_OP_CLOSE), 0);
	ck_assert_int_eq(wr(dev, 2, 0, 1, 1), (ssize_t)LBA);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_IMP_OPEN);
	/* An explicit open closes an implicitly open zone for room. */
	ck_assert_int_eq(mgmt(dev, 3, P2Z_ZONE_OP_OPEN), 0);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_CLOSED);
	ck_assert_uint_eq(zcond(dev, 3), P2Z_ZONE_COND_EXP_OPEN);
	/* Implicit to explicit takes no new resource. */
	ck_assert_int_eq(mgmt(dev, 3, P2Z_ZONE_OP_CLOSE), 0);
	ck_assert_int_eq(wr(dev, 2, 1, 1, 1), (ssize_t)LBA);
	ck_assert_int_eq(mgmt(dev, 2, P2Z_ZONE_OP_OPEN), 0);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_EXP_OPEN);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_EXP_OPEN);
	ck_assert_int_eq(mgmt(dev, 0, P2Z_ZONE_OP_OPEN), -ETOOMANYREFS);
	p2z_dev_close(dev);
}
END_TEST

/* Reopening is a power cycle: open zones become closed, or empty when
 * they hold no data; the limits count from there. */
START_TEST(test_open_power_cycle)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;

	p.max_active = 3;
	dev = mkdev_p(&p);
	ck_assert_int_eq(wr(dev, 0, 0, 2, 1), (ssize_t)(2 * LBA));
	ck_assert_int_eq(mgmt(dev, 1, P2Z_ZONE_OP_OPEN), 0);
	ck_assert_int_eq(wr(dev, 1, 0, 1, 1), (ssize_t)LBA);
	ck_assert_int_eq(mgmt(dev, 2, P2Z_ZONE_OP_OPEN), 0);
	ck_assert_int_eq(mgmt(dev, 3, P2Z_ZONE_OP_FINISH), 0);
	p2z_dev_close(dev);

	/* A read-only open changes nothing. */
	dev = opendev(P2Z_DEV_RDONLY);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_IMP_OPEN);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_EXP_OPEN);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_EXP_OPEN);
	p2z_dev_close(dev);

	dev = opendev(0);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_CLOSED);
	ck_assert_uint_eq(zwp(dev, 0), 2);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_CLOSED);
	ck_assert_uint_eq(zwp(dev, 1), 1);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_EMPTY);
	ck_assert_uint_eq(zcond(dev, 3), P2Z_ZONE_COND_FULL);
	expect_data(dev, 0, 0, 2, 1);
	/* Two active zones counted: one more fits, then none. */
	ck_assert_int_eq(wr(dev, 4, 0, 1, 1), (ssize_t)LBA);
	ck_assert_int_eq(wr(dev, 5, 0, 1, 1), -EOVERFLOW);
	ck_assert_int_eq(wr(dev, 0, 2, 1, 1), (ssize_t)LBA);
	p2z_dev_close(dev);
}
END_TEST

START_TEST(test_open_exclusive)
{
	struct p2z_dev *dev = mkdev(), *other = NULL;
	struct p2z_emu_params p = defparams();

	ck_assert_int_eq(p2z_dev_open(img, "emu", 0, &other), -EBUSY);
	ck_assert_int_eq(p2z_emu_create(img, &p, true), -EBUSY);
	/* A read-only user is a user too: not beside the writer. */
	ck_assert_int_eq(p2z_dev_open(img, "emu", P2Z_DEV_RDONLY, &other),
			 -EBUSY);
	/* Lookers (report) see the live state. */
	ck_assert_int_eq(wr(dev, 0, 0, 1, 1), (ssize_t)LBA);
	other = opendev(P2Z_DEV_RDONLY | P2Z_DEV_PEEK);
	ck_assert_uint_eq(zcond(other, 0), P2Z_ZONE_COND_IMP_OPEN);
	ck_assert_uint_eq(zwp(other, 0), 1);
	expect_data(other, 0, 0, 1, 1);
	ck_assert_int_eq(wr(dev, 0, 1, 1, 2), (ssize_t)LBA);
	ck_assert_uint_eq(zwp(other, 0), 2);
	expect_data(other, 0, 1, 1, 2);
	/* A read-only device refuses changes. */
	ck_assert_int_eq(wr(other, 0, 2, 1, 1), -EROFS);
	ck_assert_int_eq(mgmt(other, 0, P2Z_ZONE_OP_RESET), -EROFS);
	ck_assert_int_eq(other->ops->append(other, 0, img, LBA, NULL, 0),
			 -EROFS);
	ck_assert_int_eq(p2z_dev_flush(other), 0);
	p2z_dev_close(other);
	p2z_dev_close(dev);
	/*
	 * Read-only users share the image with each other, never with a
	 * writer, and nothing reformats it under them (a daemon would die
	 * of SIGBUS on its zone table).
	 */
	dev = opendev(P2Z_DEV_RDONLY);
	other = opendev(P2Z_DEV_RDONLY);
	ck_assert_int_eq(p2z_emu_create(img, &p, true), -EBUSY);
	p2z_dev_close(other);
	ck_assert_int_eq(p2z_dev_open(img, "emu", 0, &other), -EBUSY);
	ck_assert_int_eq(p2z_emu_create(img, &p, true), -EBUSY);
	expect_data(dev, 0, 1, 1, 2);
	p2z_dev_close(dev);
	dev = opendev(0);
	p2z_dev_close(dev);
}
END_TEST

START_TEST(test_persistence)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;
	uint64_t z;

	p.lba_bytes = 512;
	p.zone_bytes = ZONE_LBA * LBA;
	p.cap_bytes = CAP_LBA * LBA;
	p.max_append_bytes = LBA;
	dev = mkdev_p(&p);
	ck_assert_uint_eq(dev->info.lba_bytes, 512);
	ck_assert_uint_eq(dev->info.zone_lba, ZONE_LBA * 8);
	p2z_dev_close(dev);

	p = defparams();
	ck_assert_int_eq(p2z_emu_create(img, &p, true), 0);
	dev = opendev(0);
	for (z = 0; z < 6; z++)
		ck_assert_int_eq(wr(dev, z, 0, z + 1, 100 + z),
				 (ssize_t)((z + 1) * LBA));
	ck_assert_int_eq(mgmt(dev, 1, P2Z_ZONE_OP_FINISH), 0);
	ck_assert_int_eq(mgmt(dev, 2, P2Z_ZONE_OP_CLOSE), 0);
	ck_assert_int_eq(wr(dev, 3, 4, CAP_LBA - 4, 103),
			 (ssize_t)((CAP_LBA - 4) * LBA));
	inject(dev, 4, P2Z_EMU_FAULT_READONLY);
	inject(dev, 5, P2Z_EMU_FAULT_OFFLINE);
	ck_assert_int_eq(p2z_dev_flush(dev), 0);
	p2z_dev_close(dev);

	dev = opendev(0);
	ck_assert_uint_eq(dev->info.lba_bytes, LBA);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_CLOSED);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_CLOSED);
	ck_assert_uint_eq(zcond(dev, 3), P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(zcond(dev, 4), P2Z_ZONE_COND_READONLY);
	ck_assert_uint_eq(zcond(dev, 5), P2Z_ZONE_COND_OFFLINE);
	ck_assert_uint_eq(zcond(dev, 6), P2Z_ZONE_COND_EMPTY);
	for (z = 0; z < 5; z++) {
		if (z != 1)
			ck_assert_uint_eq(zwp(dev, z),
					  z == 3 ? CAP_LBA : z + 1);
		expect_data(dev, z, 0, z + 1, 100 + z);
	}
	expect_data(dev, 3, 4, CAP_LBA - 4, 103);
	expect_zeros(dev, 1, 2, ZONE_LBA - 2);
	ck_assert_int_eq(wr(dev, 0, 1, 1, 100), (ssize_t)LBA);
	expect_data(dev, 0, 0, 2, 100);
	p2z_dev_close(dev);
}
END_TEST

/* ---- fault injection */

/* set-zone from another process reaches a device in use. */
START_TEST(test_set_fault_other_process)
{
	struct p2z_dev *dev = mkdev();
	int status;
	pid_t pid;

	ck_assert_int_eq(wr(dev, 1, 0, 2, 1), (ssize_t)(2 * LBA));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		_exit(p2z_emu_set_fault(img, 1, P2Z_EMU_FAULT_READONLY) ? 1 :
									  0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && !WEXITSTATUS(status));
	/* Pending until the next operation on the zone. */
	ck_assert_int_eq(p2z_emu_pending_faults(dev, 1),
			 P2Z_EMU_PENDING_READONLY);
	ck_assert_int_eq(wr(dev, 1, 2, 1, 1), -EROFS);
	ck_assert_int_eq(p2z_emu_pending_faults(dev, 1), 0);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_READONLY);
	expect_data(dev, 1, 0, 2, 1);
	p2z_dev_close(dev);
}
END_TEST

enum fault_op { F_READ, F_WRITE, F_APPEND, F_RESET, F_FINISH, F_REPORT };

static int fault_op(struct p2z_dev *dev, enum fault_op op, uint64_t z)
{
	struct p2z_zone_info zi;
	char buf[LBA];
	uint64_t lba;
	ssize_t ret;

	fill(buf, 1, 1, zwp(dev, z));
	switch (op) {
	case F_READ:
		ret = p2z_dev_pread(dev, buf, LBA, zofs(z, 0));
		break;
	case F_WRITE:
		ret = p2z_dev_pwrite(dev, buf, LBA, zofs(z, zwp(dev, z)), 0);
		break;
	case F_APPEND:
		ret = p2z_dev_append(dev, z, buf, LBA, &lba, 0);
		break;
	case F_RESET:
		ret = mgmt(dev, z, P2Z_ZONE_OP_RESET);
		break;
	case F_FINISH:
		ret = mgmt(dev, z, P2Z_ZONE_OP_FINISH);
		break;
	default:
		ret = p2z_dev_report_zones(dev, z, 1, &zi) == 1 ? 0 : -EIO;
		break;
	}
	return ret < 0 ? (int)ret : 0;
}

/* fail-next-io fails exactly the next I/O or zone operation on its zone,
 * once; report zones does not consume it. */
START_TEST(test_fail_next_io_once)
{
	struct p2z_dev *dev = mkdev();
	enum fault_op op = (enum fault_op)_i;

	ck_assert_int_eq(wr(dev, 3, 0, 2, 1), (ssize_t)(2 * LBA));
	ck_assert_int_eq(p2z_emu_set_fault(img, 3, P2Z_EMU_FAULT_FAIL_NEXT_IO),
			 0);
	ck_assert_int_eq(fault_op(dev, F_REPORT, 3), 0);
	ck_assert_int_eq(fault_op(dev, op, 2), 0); /* another zone */
	ck_assert_int_eq(p2z_emu_pending_faults(dev, 3),
			 P2Z_EMU_PENDING_FAIL_IO);
	ck_assert_int_eq(fault_op(dev, op, 3), op == F_REPORT ? 0 : -EIO);
	if (op == F_REPORT)
		goto out;
	ck_assert_uint_eq(zwp(dev, 3), 2); /* the failed op did nothing */
	ck_assert_int_eq(p2z_emu_pending_faults(dev, 3), 0);
	ck_assert_int_eq(fault_op(dev, op, 3), 0);
	ck_assert_int_eq(fault_op(dev, op, 3), 0);
out:
	p2z_dev_close(dev);
}
END_TEST

START_TEST(test_fault_online_clear)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;
	uint64_t z;

	p.max_active = 2;
	dev = mkdev_p(&p);
	ck_assert_int_eq(wr(dev, 2, 0, CAP_LBA, 1), (ssize_t)(CAP_LBA * LBA));
	ck_assert_int_eq(wr(dev, 0, 0, 2, 1), (ssize_t)(2 * LBA));
	ck_assert_int_eq(wr(dev, 1, 0, 2, 1), (ssize_t)(2 * LBA));
	/* Read-only or offline zones are no longer active. */
	inject(dev, 0, P2Z_EMU_FAULT_OFFLINE);
	inject(dev, 1, P2Z_EMU_FAULT_READONLY);
	inject(dev, 2, P2Z_EMU_FAULT_READONLY);
	inject(dev, 3, P2Z_EMU_FAULT_OFFLINE);
	ck_assert_int_eq(wr(dev, 4, 0, 1, 1), (ssize_t)LBA);
	ck_assert_int_eq(wr(dev, 5, 0, 1, 1), (ssize_t)LBA);
	/* Back online: closed if an active zone is left, else full; empty
	 * or full by their data. */
	inject(dev, 1, P2Z_EMU_FAULT_ONLINE);
	inject(dev, 2, P2Z_EMU_FAULT_ONLINE);
	inject(dev, 3, P2Z_EMU_FAULT_ONLINE);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(zcond(dev, 3), P2Z_ZONE_COND_EMPTY);
	expect_data(dev, 1, 0, 2, 1);
	expect_zeros(dev, 1, 2, ZONE_LBA - 2);
	ck_assert_int_eq(mgmt(dev, 4, P2Z_ZONE_OP_FINISH), 0);
	inject(dev, 0, P2Z_EMU_FAULT_ONLINE);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_CLOSED);
	ck_assert_uint_eq(zwp(dev, 0), 2);
	ck_assert_int_eq(wr(dev, 0, 2, 1, 1), (ssize_t)LBA);
	/* The last condition fault wins; clear drops what is pending. */
	ck_assert_int_eq(p2z_emu_set_fault(img, 6, P2Z_EMU_FAULT_OFFLINE), 0);
	ck_assert_int_eq(p2z_emu_set_fault(img, 6, P2Z_EMU_FAULT_READONLY), 0);
	ck_assert_int_eq(p2z_emu_set_fault(img, 6, P2Z_EMU_FAULT_FAIL_NEXT_IO),
			 0);
	ck_assert_int_eq(p2z_emu_pending_faults(dev, 6),
			 P2Z_EMU_PENDING_READONLY | P2Z_EMU_PENDING_FAIL_IO);
	ck_assert_int_eq(p2z_emu_set_fault(img, 6, P2Z_EMU_FAULT_CLEAR), 0);
	ck_assert_int_eq(p2z_emu_pending_faults(dev, 6), 0);
	expect_zeros(dev, 6, 0, 1);
	ck_assert_uint_eq(zcond(dev, 6), P2Z_ZONE_COND_EMPTY);
	for (z = 0; z < NR_ZONES; z++)
		ck_assert_int_eq(p2z_emu_pending_faults(dev, z), 0);
	ck_assert_int_eq(p2z_emu_pending_faults(dev, NR_ZONES), -EINVAL);
	p2z_dev_close(dev);
}
END_TEST

/* Online brings a zone back where it was: a finished zone stays full. */
START_TEST(test_fault_online_finished)
{
	struct p2z_dev *dev = mkdev();

	ck_assert_int_eq(wr(dev, 1, 0, 2, 1), (ssize_t)(2 * LBA));
	ck_assert_int_eq(mgmt(dev, 1, P2Z_ZONE_OP_FINISH), 0);
	ck_assert_int_eq(wr(dev, 2, 0, 2, 1), (ssize_t)(2 * LBA));
	ck_assert_int_eq(mgmt(dev, 3, P2Z_ZONE_OP_FINISH), 0);
	inject(dev, 1, P2Z_EMU_FAULT_READONLY);
	inject(dev, 2, P2Z_EMU_FAULT_READONLY);
	inject(dev, 3, P2Z_EMU_FAULT_OFFLINE);
	inject(dev, 1, P2Z_EMU_FAULT_OFFLINE);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_OFFLINE);
	inject(dev, 1, P2Z_EMU_FAULT_ONLINE);
	inject(dev, 2, P2Z_EMU_FAULT_ONLINE);
	inject(dev, 3, P2Z_EMU_FAULT_ONLINE);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_CLOSED);
	ck_assert_uint_eq(zcond(dev, 3), P2Z_ZONE_COND_FULL);
	expect_data(dev, 1, 0, 2, 1);
	expect_zeros(dev, 1, 2, ZONE_LBA - 2);
	ck_assert_int_eq(wr(dev, 2, 2, 1, 1), (ssize_t)LBA);
	ck_assert_int_eq(wr(dev, 1, 2, 1, 1), -ENOSPC);
	p2z_dev_close(dev);
}
END_TEST

/* With nobody using the image, condition faults apply at once and
 * fail-next-io waits for the next user. */
START_TEST(test_fault_idle_image)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;
	ssize_t ret;
	void *buf;

	ck_assert_int_eq(p2z_emu_create(img, &p, false), 0);
	ck_assert_int_eq(p2z_emu_set_fault(img, 2, P2Z_EMU_FAULT_READONLY), 0);
	ck_assert_int_eq(p2z_emu_set_fault(img, 3, P2Z_EMU_FAULT_FAIL_NEXT_IO),
			 0);
	dev = opendev(P2Z_DEV_RDONLY);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_READONLY);
	ck_assert_int_eq(p2z_emu_pending_faults(dev, 2), 0);
	ck_assert_int_eq(p2z_emu_pending_faults(dev, 3),
			 P2Z_EMU_PENDING_FAIL_IO);
	/* A read-only user does not consume faults. */
	expect_zeros(dev, 3, 0, 1);
	p2z_dev_close(dev);
	dev = opendev(0);
	buf = rd(dev, 3, 0, 1, &ret);
	ck_assert_int_eq(ret, -EIO);
	free(buf);
	expect_zeros(dev, 3, 0, 1);
	p2z_dev_close(dev);

	ck_assert_int_eq(p2z_emu_set_fault(img, NR_ZONES,
					   P2Z_EMU_FAULT_OFFLINE),
			 -EINVAL);
	ck_assert_int_eq(p2z_emu_set_fault(img, 0, (enum p2z_emu_fault)99),
			 -EINVAL);
	snprintf(img, sizeof(img), "%s/none", tmpdir);
	ck_assert_int_eq(p2z_emu_set_fault(img, 0, P2Z_EMU_FAULT_OFFLINE),
			 -ENOENT);
}
END_TEST

static const struct {
	const char *word;
	enum p2z_emu_fault fault;
} fault_words[] = {
	{ "clear", P2Z_EMU_FAULT_CLEAR },
	{ "read-only", P2Z_EMU_FAULT_READONLY },
	{ "offline", P2Z_EMU_FAULT_OFFLINE },
	{ "online", P2Z_EMU_FAULT_ONLINE },
	{ "fail-next-io", P2Z_EMU_FAULT_FAIL_NEXT_IO },
};

START_TEST(test_fault_parse_table)
{
	enum p2z_emu_fault f = (enum p2z_emu_fault)77;

	ck_assert_int_eq(p2z_emu_fault_parse(fault_words[_i].word, &f), 0);
	ck_assert_int_eq(f, fault_words[_i].fault);
	ck_assert_str_eq(p2z_emu_fault_name(f), fault_words[_i].word);
	ck_assert_int_eq(p2z_emu_fault_parse("readonly", &f), -EINVAL);
	ck_assert_int_eq(p2z_emu_fault_parse("", &f), -EINVAL);
	ck_assert_str_eq(p2z_emu_fault_name((enum p2z_emu_fault)42), "unknown");
}
END_TEST

/* ---- direct I/O (P2Z_DEV_DIRECT) */

/*
 * Descriptors of this process open on the image, and how many of them
 * have O_DIRECT, from /proc/self/fdinfo (what the kernel really holds).
 */
static void count_image_fds(int *nr, int *nr_direct)
{
	char want[PATH_MAX], link[PATH_MAX], path[64 + 256];
	struct dirent *de;
	unsigned int flags;
	DIR *d;
	FILE *f;
	ssize_t n;

	*nr = *nr_direct = 0;
	ck_assert_ptr_nonnull(realpath(img, want));
	d = opendir("/proc/self/fd");
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = 0;
		if (strcmp(link, want))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s",
			 de->d_name);
		f = fopen(path, "r");
		ck_assert_ptr_nonnull(f);
		while (fgets(link, sizeof(link), f))
			if (sscanf(link, "flags: %o", &flags) == 1)
				break;
		fclose(f);
		(*nr)++;
		*nr_direct += !!(flags & O_DIRECT);
	}
	closedir(d);
}

/* Whether TMPDIR's filesystem has O_DIRECT at all (tmpfs before 6.6 not). */
static bool image_takes_odirect(void)
{
	int fd = open(img, O_RDONLY | O_DIRECT);

	if (fd < 0 && errno == EINVAL) {
		fprintf(stderr,
			"SKIP: %s: no O_DIRECT on this filesystem: direct I/O not tested (set TMPDIR to a disk)\n",
			img);
		return false;
	}
	ck_assert_int_ge(fd, 0);
	close(fd);
	return true;
}

static const unsigned int direct_flags[] = {
	0,
	P2Z_DEV_DIRECT,
	P2Z_DEV_DIRECT | P2Z_DEV_RDONLY,
	P2Z_DEV_RDONLY,
};

/* With P2Z_DEV_DIRECT the data goes through one more descriptor of the
 * image, with O_DIRECT; the table's stays buffered (it is mapped). */
START_TEST(test_open_direct_fd)
{
	unsigned int flags = direct_flags[_i];
	bool direct = flags & P2Z_DEV_DIRECT;
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;
	int nr, nr_direct;

	ck_assert_int_eq(p2z_emu_create(img, &p, false), 0);
	if (!image_takes_odirect())
		return;
	dev = opendev(flags);
	count_image_fds(&nr, &nr_direct);
	ck_assert_int_eq(nr, direct ? 2 : 1);
	ck_assert_int_eq(nr_direct, direct ? 1 : 0);
	/* What the fs layer copies write data into alignment for. */
	ck_assert_uint_eq(dev->info.buf_align, direct ? 4096 : 1);
	p2z_dev_close(dev);
	count_image_fds(&nr, &nr_direct);
	ck_assert_int_eq(nr, 0);
}
END_TEST

/*
 * Buffers that O_DIRECT cannot take (not page aligned) go through a
 * bounce buffer: the data lands where it belongs, reads return it, on
 * sequential and conventional zones, with write, append and read.
 */
START_TEST(test_direct_unaligned_buffers)
{
	struct p2z_emu_params p = defparams();
	const uint64_t nlb = 6, skew = _i ? 8 : 0; /* _i: misaligned */
	uint64_t zidx = 1, lba = 0;
	struct p2z_dev *dev;
	char *mem, *buf;

	p.nr_cnv_zones = 1;
	ck_assert_int_eq(p2z_emu_create(img, &p, false), 0);
	if (!image_takes_odirect())
		return;
	ck_assert_int_eq(posix_memalign((void **)&mem, 4096, nlb * LBA + 4096),
			 0);
	buf = mem + skew;
	dev = opendev(P2Z_DEV_DIRECT);

	fill(buf, 2, 11, 0);
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, 2 * LBA, zofs(zidx, 0), 0),
			 (ssize_t)(2 * LBA));
	fill(buf, 4, 11, 2);
	ck_assert_int_eq(p2z_dev_append(dev, zidx, buf, 4 * LBA, &lba, 0),
			 (ssize_t)(4 * LBA));
	ck_assert_uint_eq(lba, zidx * ZONE_LBA + 2);
	fill(buf, 3, 12, 5);
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, 3 * LBA, zofs(0, 5), 0),
			 (ssize_t)(3 * LBA));

	/* Through the device, into the same (mis)aligned buffer... */
	memset(buf, 0xee, nlb * LBA);
	ck_assert_int_eq(p2z_dev_pread(dev, buf, nlb * LBA, zofs(zidx, 0)),
			 (ssize_t)(nlb * LBA));
	ck_assert(is_fill(buf, nlb, 11, 0));
	memset(buf, 0xee, nlb * LBA);
	ck_assert_int_eq(p2z_dev_pread(dev, buf, 3 * LBA, zofs(0, 5)),
			 (ssize_t)(3 * LBA));
	ck_assert(is_fill(buf, 3, 12, 5));
	p2z_dev_close(dev);

	/* ... and in the file, where the layout puts it. */
	raw_pread(buf, nlb * LBA, DATA_OFS + zofs(zidx, 0));
	ck_assert(is_fill(buf, nlb, 11, 0));
	raw_pread(buf, 3 * LBA, DATA_OFS + zofs(0, 5));
	ck_assert(is_fill(buf, 3, 12, 5));
	free(mem);
}
END_TEST

/* ---- suite */

static Suite *emu_dev_suite(void)
{
	Suite *s = suite_create("emu_dev");
	TCase *tc;

	tc = tcase(s, "dev");
	tcase_add_loop_test(tc, test_nvme_status_errno_table, 0,
			    ARRAY_SIZE(status_cases));
	tcase_add_loop_test(tc, test_zone_cond_name_table, 0,
			    ARRAY_SIZE(cond_cases));
	tcase_add_test(tc, test_dev_open_backend);
	tcase_add_test(tc, test_dev_pread_pwrite_split);
	tcase_add_test(tc, test_dev_append_split);
	tcase_add_test(tc, test_dev_report_range);

	tc = tcase(s, "state");
	tcase_add_loop_test(tc, test_zone_mgmt_transitions, 0,
			    ARRAY_SIZE(transitions));
	tcase_add_test(tc, test_zone_implicit_open);

	tc = tcase(s, "io");
	tcase_add_loop_test(tc, test_pwrite_rules, 0, ARRAY_SIZE(write_cases));
	tcase_add_test(tc, test_pread_zeros);
	tcase_add_test(tc, test_reset_punches);
	tcase_add_test(tc, test_append_lba);
	tcase_add_test(tc, test_conventional_zones);

	tc = tcase(s, "limits");
	tcase_add_test(tc, test_limits_implicit_close);
	tcase_add_test(tc, test_limits_explicit_open);
	tcase_add_test(tc, test_open_power_cycle);

	tc = tcase(s, "persist");
	tcase_add_test(tc, test_open_exclusive);
	tcase_add_test(tc, test_persistence);

	tc = tcase(s, "fault");
	tcase_add_test(tc, test_set_fault_other_process);
	tcase_add_loop_test(tc, test_fail_next_io_once, F_READ, F_REPORT + 1);
	tcase_add_test(tc, test_fault_online_clear);
	tcase_add_test(tc, test_fault_online_finished);
	tcase_add_test(tc, test_fault_idle_image);
	tcase_add_loop_test(tc, test_fault_parse_table, 0,
			    ARRAY_SIZE(fault_words));

	tc = tcase(s, "direct");
	tcase_add_loop_test(tc, test_open_direct_fd, 0,
			    ARRAY_SIZE(direct_flags));
	tcase_add_loop_test(tc, test_direct_unaligned_buffers, 0, 2);
	return s;
}

int main(void)
{
	return p2z_check_run(emu_dev_suite());
}
