// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the device dispatcher (dev.c) and of the emulated zoned
 * device (dev_emu.c): ZNS state machine, write pointer rules, limits,
 * faults, persistence, crash consistency, concurrent appends, image
 * validation. Images live in a fresh mkdtemp() directory per test.
 * P2Z_SHORT=1 shortens the heavy loops (valgrind).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "p2z_check.h"
#include "po2zfs/dev.h"
#include "po2zfs/emu.h"

#define LBA 4096ULL
#define ZONE_LBA 24ULL /* 96 KiB: not a power of two */
#define CAP_LBA 20ULL /* 80 KiB */
#define NR_ZONES 8ULL
#define XFER (1ULL << 20)

/* On-disk layout, as dev_emu.c documents it. */
#define HDR_VERSION 8
#define HDR_LBA 12
#define HDR_ZONE_LBA 16
#define HDR_CAP_LBA 24
#define HDR_NR_ZONES 32
#define HDR_NR_CNV 40
#define HDR_DATA_OFS 72
#define HDR_FLAGS 80
#define HDR_CRC 84
#define TABLE_OFS 4096ULL
#define ZENT_BYTES 16ULL
#define DATA_OFS (1ULL << 20) /* for images of few zones */

static char tmpdir[PATH_MAX];
static char img[PATH_MAX + 16];

static void setup(void)
{
	p2z_check_mkdtemp(tmpdir, sizeof(tmpdir), "check_emu");
	snprintf(img, sizeof(img), "%s/z.img", tmpdir);
}

static void teardown(void)
{
	p2z_check_rmdtemp(tmpdir);
}

static struct p2z_emu_params defparams(void)
{
	return (struct p2z_emu_params){
		.lba_bytes = LBA,
		.zone_bytes = ZONE_LBA * LBA,
		.cap_bytes = CAP_LBA * LBA,
		.nr_zones = NR_ZONES,
		.max_append_bytes = 4 * LBA,
	};
}

static struct p2z_dev *opendev(unsigned int flags)
{
	struct p2z_dev *dev = NULL;

	ck_assert_int_eq(p2z_dev_open(img, "emu", flags, &dev), 0);
	ck_assert_ptr_nonnull(dev);
	return dev;
}

static struct p2z_dev *mkdev_p(const struct p2z_emu_params *p)
{
	ck_assert_int_eq(p2z_emu_create(img, p, false), 0);
	return opendev(0);
}

static struct p2z_dev *mkdev(void)
{
	struct p2z_emu_params p = defparams();

	return mkdev_p(&p);
}

static struct p2z_zone_info zinfo(struct p2z_dev *dev, uint64_t zidx)
{
	struct p2z_zone_info zi;

	ck_assert_int_eq(p2z_dev_report_zones(dev, zidx, 1, &zi), 1);
	return zi;
}

static uint8_t zcond(struct p2z_dev *dev, uint64_t zidx)
{
	return zinfo(dev, zidx).cond;
}

/* Write pointer, in LBAs from the zone start. */
static uint64_t zwp(struct p2z_dev *dev, uint64_t zidx)
{
	struct p2z_zone_info zi = zinfo(dev, zidx);

	return zi.wp_lba - zi.start_lba;
}

/* Block contents: every 8-byte word derives from (seed, block, word). */
static void fill(void *buf, uint64_t nlb, uint64_t seed, uint64_t first)
{
	uint64_t *w = buf;
	uint64_t b, i;

	for (b = 0; b < nlb; b++)
		for (i = 0; i < LBA / 8; i++)
			w[b * (LBA / 8) + i] = (seed << 40) ^
					       ((first + b) << 12) ^ i ^
					       0x5a5a000000000000ULL;
}

static bool is_fill(const void *buf, uint64_t nlb, uint64_t seed,
		    uint64_t first)
{
	void *want = malloc(nlb * LBA);
	bool ok;

	ck_assert_ptr_nonnull(want);
	fill(want, nlb, seed, first);
	ok = !memcmp(buf, want, nlb * LBA);
	free(want);
	return ok;
}

static bool is_zero(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	return !len || (!p[0] && !memcmp(p, p + 1, len - 1));
}

static uint64_t zofs(uint64_t zidx, uint64_t rel)
{
	return (zidx * ZONE_LBA + rel) * LBA;
}

/* Write @nlb pattern blocks at LBA @rel of zone @zidx. */
static ssize_t wr(struct p2z_dev *dev, uint64_t zidx, uint64_t rel,
		  uint64_t nlb, uint64_t seed)
{
	void *buf = malloc(nlb * LBA + 1);
	ssize_t ret;

	ck_assert_ptr_nonnull(buf);
	fill(buf, nlb, seed, rel);
	ret = p2z_dev_pwrite(dev, buf, nlb * LBA, zofs(zidx, rel), 0);
	free(buf);
	return ret;
}

/* Read @nlb blocks at LBA @rel of zone @zidx into a new buffer. */
static void *rd(struct p2z_dev *dev, uint64_t zidx, uint64_t rel, uint64_t nlb,
		ssize_t *ret)
{
	void *buf = malloc(nlb * LBA + 1);

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0xee, nlb * LBA);
	*ret = p2z_dev_pread(dev, buf, nlb * LBA, zofs(zidx, rel));
	return buf;
}

static void expect_data(struct p2z_dev *dev, uint64_t zidx, uint64_t rel,
			uint64_t nlb, uint64_t seed)
{
	ssize_t ret;
	void *buf = rd(dev, zidx, rel, nlb, &ret);

	ck_assert_int_eq(ret, (ssize_t)(nlb * LBA));
	ck_assert_msg(is_fill(buf, nlb, seed, rel),
		      "zone %llu LBA %llu+%llu: wrong data",
		      (unsigned long long)zidx, (unsigned long long)rel,
		      (unsigned long long)nlb);
	free(buf);
}

static void expect_zeros(struct p2z_dev *dev, uint64_t zidx, uint64_t rel,
			 uint64_t nlb)
{
	ssize_t ret;
	void *buf = rd(dev, zidx, rel, nlb, &ret);

	ck_assert_int_eq(ret, (ssize_t)(nlb * LBA));
	ck_assert_msg(is_zero(buf, nlb * LBA),
		      "zone %llu LBA %llu+%llu: not zeros",
		      (unsigned long long)zidx, (unsigned long long)rel,
		      (unsigned long long)nlb);
	free(buf);
}

static int mgmt(struct p2z_dev *dev, uint64_t zidx, enum p2z_zone_op op)
{
	return p2z_dev_zone_mgmt(dev, zidx, op);
}

/* Apply a fault through the image file, as po2zfs-emu set-zone does, and
 * make the device notice it (report applies condition faults). */
static void inject(struct p2z_dev *dev, uint64_t zidx, enum p2z_emu_fault f)
{
	ck_assert_int_eq(p2z_emu_set_fault(img, zidx, f), 0);
	if (dev)
		zinfo(dev, zidx);
}

/* Raw access to the image file, bypassing the device. */
static void raw_pwrite(const void *buf, size_t len, uint64_t ofs)
{
	int fd = open(img, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, buf, len, (off_t)ofs), (ssize_t)len);
	close(fd);
}

static void raw_pread(void *buf, size_t len, uint64_t ofs)
{
	int fd = open(img, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, len, (off_t)ofs), (ssize_t)len);
	close(fd);
}

static uint32_t crc32c(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = ~0U;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78U & -(crc & 1));
	}
	return ~crc;
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
	int i;

	for (i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Change one header field and, if @fix_crc, keep the checksum right. */
static void patch_hdr(int ofs, uint64_t v, int bytes, bool fix_crc)
{
	uint8_t h[88];

	raw_pread(h, sizeof(h), 0);
	put_le(h + ofs, v, bytes);
	if (fix_crc)
		put_le(h + HDR_CRC, crc32c(h, HDR_CRC), 4);
	raw_pwrite(h, sizeof(h), 0);
}

static void patch_zent(uint64_t zidx, int ofs, uint64_t v, int bytes)
{
	uint8_t b[8];

	put_le(b, v, bytes);
	raw_pwrite(b, (size_t)bytes, TABLE_OFS + zidx * ZENT_BYTES + ofs);
}

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

/* ---- crash consistency */

struct ack {
	uint64_t seq;
	uint64_t lba;
};

/*
 * Records of CRASH_NLB blocks: big enough that SIGKILL often lands inside
 * the write itself (the kernel stops a long write between pages for a
 * fatal signal), leaving a partial record past the write pointer.
 */
#define CRASH_NLB 16ULL

/* Record @seq: a fixed pattern with (seq, block) stamped in each block,
 * so that the child spends its time writing, not filling. */
static void crash_stamp(void *buf, uint64_t seq)
{
	uint64_t *w = buf, b;

	for (b = 0; b < CRASH_NLB; b++) {
		w[b * (LBA / 8)] = seq + 1;
		w[b * (LBA / 8) + 1] = b;
	}
}

static bool crash_block_ok(const void *blk, uint64_t k)
{
	uint64_t want[LBA / 8];

	fill(want, 1, 0, 0);
	want[0] = k / CRASH_NLB + 1;
	want[1] = k % CRASH_NLB;
	return !memcmp(blk, want, LBA);
}

/*
 * Child: append records to zone 0 until SIGKILL, acknowledging each
 * completed append through the pipe. The SIGKILL comes from a CPU-time
 * timer, so that it lands wherever the child spends its time (mostly
 * inside the data write), not right after an acknowledgement, where a kill
 * from the reading parent would land. No Check calls in here.
 */
static void crash_child(int wfd)
{
	static char buf[CRASH_NLB * LBA];
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL,
				.sigev_signo = SIGKILL };
	struct itimerspec its = { 0 };
	struct p2z_dev *dev;
	timer_t timer;
	struct ack a;
	uint64_t b;

	if (p2z_dev_open(img, "emu", 0, &dev))
		_exit(2);
	for (b = 0; b < CRASH_NLB; b++)
		fill(buf + b * LBA, 1, 0, 0);
	its.it_value.tv_nsec = (5 + getpid() % 11) * 1000000L;
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer))
		_exit(5);
	for (a.seq = 0;; a.seq++) {
		crash_stamp(buf, a.seq);
		if (p2z_dev_append(dev, 0, buf, sizeof(buf), &a.lba, 0) !=
		    (ssize_t)sizeof(buf))
			_exit(3);
		if (write(wfd, &a, sizeof(a)) != (ssize_t)sizeof(a))
			_exit(4);
		/* Armed after the first acknowledgement, however slow the
		 * child runs (valgrind). */
		if (!a.seq && timer_settime(timer, 0, &its, NULL))
			_exit(5);
	}
}

/* Read acknowledgements until @want of them (0: until EOF). */
static size_t read_acks(int rfd, struct ack *acks, size_t n, size_t max,
			size_t want)
{
	size_t got = 0;
	ssize_t r;

	while (n < max && (!want || n < want)) {
		r = read(rfd, (char *)&acks[n] + got, sizeof(acks[0]) - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == sizeof(acks[0])) {
			n++;
			got = 0;
		}
	}
	return n;
}

START_TEST(test_crash_consistency)
{
	struct p2z_emu_params p = defparams();
	size_t n, max = 8192, i;
	int fds[2], status;
	struct p2z_dev *dev;
	struct ack *acks;
	uint64_t wp, k;
	ssize_t ret;
	void *buf;
	pid_t pid;

	p.zone_bytes = p.cap_bytes = 256ULL << 20; /* 4096 appends */
	p.nr_zones = 2;
	p.max_append_bytes = CRASH_NLB * LBA;
	ck_assert_int_eq(p2z_emu_create(img, &p, false), 0);
	acks = calloc(max, sizeof(*acks));
	ck_assert_ptr_nonnull(acks);
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		close(fds[0]);
		crash_child(fds[1]);
	}
	close(fds[1]);
	n = read_acks(fds[0], acks, 0, max, 0);
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "child ended by itself (status 0x%x)", status);
	ck_assert_uint_gt(n, 0);

	dev = opendev(0);
	wp = zwp(dev, 0);
	/* Every acknowledged append is there; at most one more. */
	ck_assert_uint_ge(wp, CRASH_NLB * n);
	ck_assert_uint_le(wp, CRASH_NLB * (n + 1));
	ck_assert_uint_eq(wp % CRASH_NLB, 0);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_CLOSED);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(acks[i].seq, i);
		ck_assert_uint_eq(acks[i].lba, CRASH_NLB * i);
	}
	/* Everything below the write pointer was really written. */
	buf = malloc(wp * LBA + LBA);
	ck_assert_ptr_nonnull(buf);
	ret = p2z_dev_pread(dev, buf, wp * LBA, 0);
	ck_assert_int_eq(ret, (ssize_t)(wp * LBA));
	for (k = 0; k < wp; k++)
		ck_assert_msg(
			crash_block_ok((char *)buf + k * LBA, k),
			"block %llu below the write pointer %llu is wrong",
			(unsigned long long)k, (unsigned long long)wp);
	free(buf);
	expect_zeros(dev, 0, wp, 8);
	/* And the zone goes on from there. */
	buf = malloc(LBA);
	ck_assert_ptr_nonnull(buf);
	fill(buf, 1, 1, 0);
	ck_assert_int_eq(p2z_dev_append(dev, 0, buf, LBA, &k, 0), (ssize_t)LBA);
	free(buf);
	ck_assert_uint_eq(k, wp);
	p2z_dev_close(dev);
	free(acks);
}
END_TEST

/*
 * A zone's state changes in one step. A child runs one zone operation
 * under ptrace, one instruction at a time; after each instruction the
 * parent reads the zone's table entry from the file (the page cache the
 * child's mapping shares), which is exactly what a SIGKILL at that
 * instant would leave. Every state seen must be the one before the
 * operation or the one after it (or, for a write, the zone opened): never
 * a reset zone still full (reading zeros), never a zone written to
 * capacity but not full.
 */
enum { A_FILL, A_RESET_FULL, A_RESET_OPEN, A_FINISH, A_NR };

static const char *const atomic_names[] = { "fill", "reset full", "reset open",
					    "finish" };

struct zstate {
	uint64_t wp;
	uint8_t cond;
};

/* The raw state of zone @zidx in the image, as a crash would leave it. */
static struct zstate raw_state(uint64_t zidx)
{
	uint8_t e[ZENT_BYTES];
	struct zstate z;
	uint64_t w = 0;
	int i;

	raw_pread(e, sizeof(e), TABLE_OFS + zidx * ZENT_BYTES);
	for (i = 7; i >= 0; i--)
		w = w << 8 | e[i];
	/* Bit 63: packed (condition in bits 56-62); else the cond byte. */
	if (w >> 63) {
		z.wp = w & ((1ULL << 56) - 1);
		z.cond = (uint8_t)(w >> 56 & 0x7f);
	} else {
		z.wp = w;
		z.cond = e[8];
	}
	return z;
}

static void atomic_child(int op)
{
	static char buf[LBA];
	struct p2z_dev *dev;
	uint64_t lba;
	bool ok;

	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
		_exit(10);
	if (p2z_dev_open(img, "emu", 0, &dev))
		_exit(2);
	fill(buf, 1, 7, 0);
	raise(SIGSTOP); /* the parent steps from here */
	if (op == A_FILL)
		ok = p2z_dev_append(dev, 1, buf, LBA, &lba, 0) == (ssize_t)LBA;
	else
		ok = !p2z_dev_zone_mgmt(dev, 1,
					op == A_FINISH ? P2Z_ZONE_OP_FINISH :
							 P2Z_ZONE_OP_RESET);
	raise(SIGSTOP); /* to here */
	_exit(ok ? 0 : 3);
}

static bool zstate_eq(struct zstate a, struct zstate b)
{
	return a.wp == b.wp && a.cond == b.cond;
}

START_TEST(test_state_change_atomic)
{
	static const struct zstate want[] = {
		[A_FILL] = { CAP_LBA, P2Z_ZONE_COND_FULL },
		[A_RESET_FULL] = { 0, P2Z_ZONE_COND_EMPTY },
		[A_RESET_OPEN] = { 0, P2Z_ZONE_COND_EMPTY },
		[A_FINISH] = { 3, P2Z_ZONE_COND_FULL },
	};
	/* A write first opens the closed zone, as a drive does. */
	const struct zstate opened = { CAP_LBA - 1, P2Z_ZONE_COND_IMP_OPEN };
	struct zstate before, after, seen[8];
	unsigned int nseen = 0, k;
	uint64_t steps = 0;
	struct p2z_dev *dev;
	int status, sig = 0;
	pid_t pid;

	if (p2z_check_short_run()) {
		/* Single-stepping valgrind's translation takes hours. */
		fprintf(stderr,
			"test_state_change_atomic: SKIPPED under P2Z_SHORT\n");
		return;
	}
	dev = mkdev();
	/* Zone 1 one block short of full, full, or holding 3 blocks. */
	if (_i == A_FILL || _i == A_RESET_FULL)
		ck_assert_int_eq(wr(dev, 1, 0, CAP_LBA - 1, 1),
				 (ssize_t)((CAP_LBA - 1) * LBA));
	else
		ck_assert_int_eq(wr(dev, 1, 0, 3, 1), (ssize_t)(3 * LBA));
	if (_i == A_RESET_FULL)
		ck_assert_int_eq(wr(dev, 1, CAP_LBA - 1, 1, 2), (ssize_t)LBA);
	p2z_dev_close(dev);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		atomic_child(_i);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 10) {
		fprintf(stderr, "test_state_change_atomic: SKIPPED: ptrace "
				"not permitted here\n");
		return;
	}
	ck_assert_msg(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP,
		      "child did not stop (status 0x%x)", status);
	before = raw_state(1);
	for (;;) {
		ck_assert_int_eq(ptrace(PTRACE_SINGLESTEP, pid, NULL,
					(void *)(long)sig),
				 0);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFSTOPPED(status), "child ended (status 0x%x)",
			      status);
		if (WSTOPSIG(status) == SIGSTOP)
			break;
		sig = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);
		ck_assert_uint_lt(++steps, 20000000);
		seen[nseen] = raw_state(1);
		for (k = 0; k < nseen; k++)
			if (zstate_eq(seen[k], seen[nseen]))
				break;
		if (k == nseen && nseen < 7)
			nseen++;
	}
	after = raw_state(1);
	ck_assert_int_eq(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "%s: operation failed (status 0x%x)", atomic_names[_i],
		      status);
	ck_assert_msg(zstate_eq(after, want[_i]),
		      "%s: ends at wp %llu cond 0x%x", atomic_names[_i],
		      (unsigned long long)after.wp, after.cond);
	for (k = 0; k < nseen; k++)
		ck_assert_msg(zstate_eq(seen[k], before) ||
				      zstate_eq(seen[k], after) ||
				      (_i == A_FILL &&
				       zstate_eq(seen[k], opened)),
			      "%s: a kill after one of %llu instructions "
			      "leaves wp %llu cond 0x%x (before: %llu 0x%x, "
			      "after: %llu 0x%x)",
			      atomic_names[_i], (unsigned long long)steps,
			      (unsigned long long)seen[k].wp, seen[k].cond,
			      (unsigned long long)before.wp, before.cond,
			      (unsigned long long)after.wp, after.cond);
}
END_TEST

/*
 * An image from a version that stored the write pointer and the condition
 * apart, killed between the two while filling zone 1: closed at capacity.
 * Such a zone is full (it held an active slot forever before), and opening
 * the image for writing stores the repair.
 */
START_TEST(test_old_image_full_at_capacity)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;
	struct zstate z;

	p.max_active = 1;
	p.max_open = 1;
	dev = mkdev_p(&p);
	ck_assert_int_eq(wr(dev, 1, 0, CAP_LBA - 1, 1),
			 (ssize_t)((CAP_LBA - 1) * LBA));
	p2z_dev_close(dev);
	/* The old layout: pointer word alone, condition in its own byte. */
	patch_zent(1, 0, CAP_LBA, 8);
	patch_zent(1, 8, P2Z_ZONE_COND_CLOSED, 1);

	dev = opendev(P2Z_DEV_RDONLY);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(zwp(dev, 1), CAP_LBA);
	p2z_dev_close(dev);
	z = raw_state(1);
	ck_assert_uint_eq(z.cond, P2Z_ZONE_COND_CLOSED); /* ro wrote nothing */

	dev = opendev(0);
	z = raw_state(1);
	ck_assert_uint_eq(z.cond, P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(z.wp, CAP_LBA);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_FULL);
	/* Finish (truncate to capacity) is a full zone's no-op, and the
	 * zone holds no active slot: another zone opens. */
	ck_assert_int_eq(mgmt(dev, 1, P2Z_ZONE_OP_FINISH), 0);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_FULL);
	ck_assert_int_eq(wr(dev, 2, 0, 1, 3), (ssize_t)LBA);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_IMP_OPEN);
	expect_data(dev, 1, 0, CAP_LBA - 1, 1);
	ck_assert_int_eq(mgmt(dev, 1, P2Z_ZONE_OP_RESET), 0);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_EMPTY);
	p2z_dev_close(dev);
}
END_TEST

/*
 * The same invariant seen live: another handle on the image (its own
 * mapping of the zone table, as another process has) never finds the
 * write pointer ahead of the data, at any instant of a stream of appends.
 * Observing at an instant is what a kill -9 at that instant leaves.
 */
struct wp_observer {
	struct p2z_dev *dev;
	bool done;
	uint64_t bad; /* record found missing + 1; UINT64_MAX: I/O failed */
	uint64_t checks;
};

static void *wp_observe(void *p)
{
	struct wp_observer *o = p;
	static char blk[LBA];
	struct p2z_zone_info zi;
	uint64_t wp;

	while (!__atomic_load_n(&o->done, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&o->bad, __ATOMIC_RELAXED)) {
		if (p2z_dev_report_zones(o->dev, 0, 1, &zi) != 1)
			goto fail;
		wp = zi.wp_lba - zi.start_lba;
		if (wp < CRASH_NLB)
			continue;
		/* The last block of the last record: the latest to land. */
		if (p2z_dev_pread(o->dev, blk, LBA, (wp - 1) * LBA) != LBA)
			goto fail;
		if (!crash_block_ok(blk, wp - 1))
			__atomic_store_n(&o->bad, wp / CRASH_NLB,
					 __ATOMIC_RELAXED);
		__atomic_fetch_add(&o->checks, 1, __ATOMIC_RELEASE);
	}
	return NULL;
fail:
	__atomic_store_n(&o->bad, UINT64_MAX, __ATOMIC_RELAXED);
	return NULL;
}

START_TEST(test_wp_never_ahead_of_data)
{
	struct p2z_emu_params p = defparams();
	static char buf[CRASH_NLB * LBA];
	struct wp_observer o = { 0 };
	struct p2z_dev *dev;
	pthread_t th;
	uint64_t seq, lba, b;

	p.zone_bytes = p.cap_bytes = 64ULL << 20;
	p.nr_zones = 1;
	p.max_append_bytes = CRASH_NLB * LBA;
	dev = mkdev_p(&p);
	o.dev = opendev(P2Z_DEV_RDONLY | P2Z_DEV_PEEK);
	for (b = 0; b < CRASH_NLB; b++)
		fill(buf + b * LBA, 1, 0, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, wp_observe, &o), 0);
	/* One record, then wait for the observer to look at it, so that it
	 * is running while the others are appended. */
	for (seq = 0; seq < (p2z_check_short_run() ? 64 : 1024) &&
		      !__atomic_load_n(&o.bad, __ATOMIC_RELAXED);
	     seq++) {
		crash_stamp(buf, seq);
		ck_assert_int_eq(p2z_dev_append(dev, 0, buf, sizeof(buf), &lba,
						0),
				 (ssize_t)sizeof(buf));
		while (!seq && !__atomic_load_n(&o.checks, __ATOMIC_ACQUIRE) &&
		       !__atomic_load_n(&o.bad, __ATOMIC_RELAXED))
			sched_yield();
	}
	__atomic_store_n(&o.done, true, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_msg(o.bad != UINT64_MAX, "the observer's I/O failed");
	ck_assert_msg(
		!o.bad,
		"record %llu seen below the write pointer before its data",
		(unsigned long long)o.bad - 1);
	ck_assert_uint_gt(o.checks, 0);
	p2z_dev_close(o.dev);
	p2z_dev_close(dev);
}
END_TEST

/* ---- concurrent appends */

#define CC_THREADS 8

struct cc_arg {
	struct p2z_dev *dev;
	uint64_t zidx;
	unsigned int tid;
	unsigned int n;
	uint64_t *lba;
	ssize_t err;
};

static uint64_t cc_nlb(unsigned int tid, unsigned int seq)
{
	return 1 + (tid + seq) % 4;
}

static uint64_t cc_seed(unsigned int tid, unsigned int seq)
{
	return ((uint64_t)tid << 20 | seq) + 1;
}

static void *cc_thread(void *p)
{
	struct cc_arg *a = p;
	char buf[4 * LBA];
	unsigned int seq;
	ssize_t ret;

	for (seq = 0; seq < a->n; seq++) {
		uint64_t nlb = cc_nlb(a->tid, seq);

		fill(buf, nlb, cc_seed(a->tid, seq), 0);
		ret = p2z_dev_append(a->dev, a->zidx, buf, nlb * LBA,
				     &a->lba[seq], 0);
		if (ret != (ssize_t)(nlb * LBA)) {
			a->err = ret < 0 ? ret : -EIO;
			break;
		}
	}
	return NULL;
}

/* Check every append of the threads on zone @zidx: its blocks are
 * contiguous, where the device said, and the zone holds nothing else. */
static void cc_verify(struct p2z_dev *dev, struct cc_arg *args, uint64_t zidx)
{
	uint64_t wp = zwp(dev, zidx), start = zidx * (16ULL << 20) / LBA;
	uint64_t total = 0, rel, b, nlb;
	unsigned int t, seq;
	uint8_t *owned;
	char *buf;

	buf = malloc(wp * LBA + LBA);
	owned = calloc(wp + 1, 1);
	ck_assert(buf && owned);
	ck_assert_int_eq(p2z_dev_pread(dev, buf, wp * LBA, start * LBA),
			 (ssize_t)(wp * LBA));
	for (t = 0; t < CC_THREADS; t++) {
		if (args[t].zidx != zidx)
			continue;
		for (seq = 0; seq < args[t].n; seq++) {
			nlb = cc_nlb(t, seq);
			rel = args[t].lba[seq] - start;
			ck_assert_uint_le(rel + nlb, wp);
			ck_assert_msg(is_fill(buf + rel * LBA, nlb,
					      cc_seed(t, seq), 0),
				      "thread %u append %u interleaved", t,
				      seq);
			for (b = rel; b < rel + nlb; b++)
				ck_assert_uint_eq(owned[b]++, 0);
			total += nlb;
		}
	}
	ck_assert_uint_eq(total, wp);
	free(owned);
	free(buf);
}

/* _i = 0: all threads append to zone 0; 1: each to a zone of its own. */
struct cc_flusher {
	struct p2z_dev *dev;
	bool stop; /* atomic */
	int err;
	unsigned int nr;
};

/* Flush in a loop until told to stop (volatile cache: races the writes). */
static void *cc_flush_thread(void *p)
{
	struct cc_flusher *f = p;

	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
		if (p2z_dev_flush(f->dev) && !f->err)
			f->err = -EIO;
		f->nr++;
		sched_yield();
	}
	return NULL;
}

/*
 * _i bit 0: every thread on its own zone, else all on zone 0; bit 1: a
 * volatile-cache image of 1 MiB of cache (destaging), flushed by another
 * thread all along, then closed (written back) and checked again.
 */
START_TEST(test_append_concurrent)
{
	struct p2z_emu_params p = defparams();
	struct cc_arg args[CC_THREADS];
	pthread_t th[CC_THREADS], fth;
	unsigned int t, n = p2z_check_short_run() ? 20 : 200;
	struct cc_flusher fl = { 0 };
	bool vwc = _i & 2, per_zone = _i & 1;
	struct p2z_dev *dev;

	p.zone_bytes = p.cap_bytes = 16ULL << 20;
	p.nr_zones = CC_THREADS;
	if (vwc) {
		ck_assert_int_eq(setenv("P2Z_EMU_CACHE_BYTES", "1048576", 1),
				 0);
		ck_assert_int_eq(p2z_emu_create(img, &p,
						P2Z_EMU_CREATE_VOLATILE_CACHE),
				 0);
		dev = opendev(0);
		unsetenv("P2Z_EMU_CACHE_BYTES");
	} else {
		dev = mkdev_p(&p);
	}
	for (t = 0; t < CC_THREADS; t++) {
		args[t] = (struct cc_arg){
			.dev = dev, .zidx = per_zone ? t : 0, .tid = t, .n = n
		};
		args[t].lba = calloc(n, sizeof(uint64_t));
		ck_assert_ptr_nonnull(args[t].lba);
	}
	fl.dev = dev;
	if (vwc)
		ck_assert_int_eq(
			pthread_create(&fth, NULL, cc_flush_thread, &fl), 0);
	for (t = 0; t < CC_THREADS; t++)
		ck_assert_int_eq(
			pthread_create(&th[t], NULL, cc_thread, &args[t]), 0);
	for (t = 0; t < CC_THREADS; t++)
		ck_assert_int_eq(pthread_join(th[t], NULL), 0);
	if (vwc) {
		__atomic_store_n(&fl.stop, true, __ATOMIC_RELEASE);
		ck_assert_int_eq(pthread_join(fth, NULL), 0);
		ck_assert_int_eq(fl.err, 0);
	}
	for (t = 0; t < CC_THREADS; t++)
		ck_assert_int_eq(args[t].err, 0);
	for (t = 0; t < (per_zone ? CC_THREADS : 1); t++)
		cc_verify(dev, args, t);
	if (vwc) {
		p2z_dev_close(dev);
		dev = opendev(0);
		for (t = 0; t < (per_zone ? CC_THREADS : 1); t++)
			cc_verify(dev, args, t);
	}
	for (t = 0; t < CC_THREADS; t++)
		free(args[t].lba);
	p2z_dev_close(dev);
}
END_TEST

/* ---- image validation */

enum corruption {
	X_TEXT,
	X_EMPTY,
	X_MAGIC,
	X_DIR,
	X_VERSION,
	X_CHECKSUM,
	X_HDR_TRUNCATED,
	X_DATA_TRUNCATED,
	X_CAP_GT_SIZE,
	X_ZERO_ZONES,
	X_LBA_1000,
	X_CNV_GT_ZONES,
	X_ZONE_OVERFLOW,
	X_TOO_MANY_ZONES,
	X_DATA_OFS,
	X_WP_PAST_CAP,
	X_WP_PAST_ZONE,
	X_BAD_COND,
	X_EMPTY_WITH_WP,
	X_SEQ_NOT_WP,
	X_CNV_WITH_WP,
	X_CNV_EMPTY,
	X_FAULT_BITS,
};

static const struct {
	enum corruption what;
	const char *name;
	int err;
} corruptions[] = {
	{ X_TEXT, "text file", -EINVAL },
	{ X_EMPTY, "empty file", -EINVAL },
	{ X_MAGIC, "bad magic", -EINVAL },
	{ X_DIR, "directory", -EINVAL },
	{ X_VERSION, "version 2", -EUCLEAN },
	{ X_CHECKSUM, "checksum", -EUCLEAN },
	{ X_HDR_TRUNCATED, "truncated header", -EUCLEAN },
	{ X_DATA_TRUNCATED, "truncated data", -EUCLEAN },
	{ X_CAP_GT_SIZE, "capacity > zone size", -EUCLEAN },
	{ X_ZERO_ZONES, "zero zones", -EUCLEAN },
	{ X_LBA_1000, "LBA size 1000", -EUCLEAN },
	{ X_CNV_GT_ZONES, "conventional > zones", -EUCLEAN },
	{ X_ZONE_OVERFLOW, "zone size overflow", -EUCLEAN },
	{ X_TOO_MANY_ZONES, "too many zones", -EUCLEAN },
	{ X_DATA_OFS, "data offset", -EUCLEAN },
	{ X_WP_PAST_CAP, "wp past capacity", -EUCLEAN },
	{ X_WP_PAST_ZONE, "wp past the zone", -EUCLEAN },
	{ X_BAD_COND, "invalid condition", -EUCLEAN },
	{ X_EMPTY_WITH_WP, "empty zone with wp", -EUCLEAN },
	{ X_SEQ_NOT_WP, "sequential zone not-wp", -EUCLEAN },
	{ X_CNV_WITH_WP, "conventional zone with wp", -EUCLEAN },
	{ X_CNV_EMPTY, "conventional zone empty", -EUCLEAN },
	{ X_FAULT_BITS, "unknown fault bits", -EUCLEAN },
};

static void corrupt(enum corruption what)
{
	uint64_t size = DATA_OFS + NR_ZONES * ZONE_LBA * LBA;
	int fd;

	switch (what) {
	case X_TEXT:
		ck_assert_int_eq(truncate(img, 0), 0);
		raw_pwrite("hello, world\n", 13, 0);
		break;
	case X_EMPTY:
		ck_assert_int_eq(truncate(img, 0), 0);
		break;
	case X_MAGIC:
		patch_hdr(0, 'X', 1, true);
		break;
	case X_DIR:
		ck_assert_int_eq(unlink(img), 0);
		ck_assert_int_eq(mkdir(img, 0755), 0);
		break;
	case X_VERSION:
		patch_hdr(HDR_VERSION, 2, 4, true);
		break;
	case X_CHECKSUM:
		patch_hdr(HDR_CAP_LBA, CAP_LBA - 1, 8, false);
		break;
	case X_HDR_TRUNCATED:
		ck_assert_int_eq(truncate(img, 40), 0);
		break;
	case X_DATA_TRUNCATED:
		fd = open(img, O_RDWR);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ftruncate(fd, (off_t)(size - LBA)), 0);
		close(fd);
		break;
	case X_CAP_GT_SIZE:
		patch_hdr(HDR_CAP_LBA, ZONE_LBA + 1, 8, true);
		break;
	case X_ZERO_ZONES:
		patch_hdr(HDR_NR_ZONES, 0, 8, true);
		break;
	case X_LBA_1000:
		patch_hdr(HDR_LBA, 1000, 4, true);
		break;
	case X_CNV_GT_ZONES:
		patch_hdr(HDR_NR_CNV, NR_ZONES + 1, 8, true);
		break;
	case X_ZONE_OVERFLOW:
		patch_hdr(HDR_ZONE_LBA, 1ULL << 62, 8, true);
		break;
	case X_TOO_MANY_ZONES:
		patch_hdr(HDR_NR_ZONES, 1ULL << 40, 8, true);
		break;
	case X_DATA_OFS:
		patch_hdr(HDR_DATA_OFS, DATA_OFS * 2, 8, true);
		break;
	case X_WP_PAST_CAP:
		patch_zent(3, 0, CAP_LBA + 1, 8);
		patch_zent(3, 8, P2Z_ZONE_COND_CLOSED, 1);
		break;
	case X_WP_PAST_ZONE:
		patch_zent(3, 0, 1ULL << 60, 8);
		patch_zent(3, 8, P2Z_ZONE_COND_FULL, 1);
		break;
	case X_BAD_COND:
		patch_zent(3, 8, 0x7, 1);
		break;
	case X_EMPTY_WITH_WP:
		patch_zent(3, 0, 3, 8);
		break;
	case X_SEQ_NOT_WP:
		patch_zent(3, 8, P2Z_ZONE_COND_NOT_WP, 1);
		break;
	case X_CNV_WITH_WP:
		patch_zent(0, 0, 1, 8);
		break;
	case X_CNV_EMPTY:
		patch_zent(0, 8, P2Z_ZONE_COND_EMPTY, 1);
		break;
	case X_FAULT_BITS:
		patch_zent(2, 9, 0x80, 1);
		break;
	}
}

START_TEST(test_open_corrupt_table)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev = NULL;
	int err = corruptions[_i].err;
	char why[256] = "";

	p.nr_cnv_zones = 1;
	ck_assert_int_eq(p2z_emu_create(img, &p, false), 0);
	/* Untouched, all is well: the corruption alone is refused. */
	ck_assert_int_eq(p2z_emu_check_image(img, NULL, why, sizeof(why)), 0);
	corrupt(corruptions[_i].what);
	ck_assert_msg(p2z_dev_open(img, "emu", 0, &dev) == err, "%s",
		      corruptions[_i].name);
	ck_assert_int_eq(p2z_dev_open(img, "emu", P2Z_DEV_RDONLY, &dev), err);
	ck_assert_int_eq(p2z_emu_check_image(img, &p, why, sizeof(why)), err);
	ck_assert_msg(strlen(why) > 5 && !strchr(why, '\n'), "why: '%s'", why);
	ck_assert_int_eq(p2z_emu_set_fault(img, 1, P2Z_EMU_FAULT_OFFLINE), err);
	if (err == -EINVAL)
		ck_assert_int_eq(p2z_dev_open(img, NULL, 0, &dev), -ENODEV);
}
END_TEST

/* ---- image creation */

static void bad_params(int i, struct p2z_emu_params *p, int *err)
{
	*p = defparams();
	*err = -EINVAL;
	switch (i) {
	case 0:
		p->lba_bytes = 1000;
		break;
	case 1:
		p->lba_bytes = 0;
		break;
	case 2:
		p->lba_bytes = 8192;
		break;
	case 3:
		p->zone_bytes = 0;
		break;
	case 4:
		p->zone_bytes = ZONE_LBA * LBA + 512;
		break;
	case 5:
		p->cap_bytes = 0;
		break;
	case 6:
		p->cap_bytes = p->zone_bytes + LBA;
		break;
	case 7:
		p->cap_bytes = CAP_LBA * LBA - 512;
		break;
	case 8:
		p->nr_zones = 0;
		break;
	case 9:
		p->nr_zones = P2Z_EMU_MAX_ZONES + 1;
		break;
	case 10:
		p->nr_cnv_zones = NR_ZONES + 1;
		break;
	case 11:
		p->max_open = 3;
		p->max_active = 2;
		break;
	case 12:
		p->max_append_bytes = 0;
		break;
	case 13:
		p->max_append_bytes = 100;
		break;
	case 14:
		p->max_append_bytes = P2Z_EMU_MAX_XFER_BYTES + LBA;
		break;
	case 15:
		p->zone_bytes = p->cap_bytes = 1ULL << 62;
		p->nr_zones = 4;
		*err = -EOVERFLOW;
		break;
	}
}

START_TEST(test_create_bad_params)
{
	struct p2z_emu_params p;
	char why[256] = "";
	struct stat st;
	char keep[64];
	int err, fd;

	bad_params(_i, &p, &err);
	ck_assert_int_eq(p2z_emu_check_params(&p, why, sizeof(why)), err);
	ck_assert(strlen(why) > 5);
	ck_assert_int_eq(p2z_emu_create(img, &p, false), err);
	ck_assert_int_eq(stat(img, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* An existing file is not clobbered either. */
	fd = open(img, O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "keep", 4), 4);
	close(fd);
	ck_assert_int_eq(p2z_emu_create(img, &p, true), err);
	memset(keep, 0, sizeof(keep));
	raw_pread(keep, 4, 0);
	ck_assert_str_eq(keep, "keep");
}
END_TEST

static void expect_params(const struct p2z_emu_params *got,
			  const struct p2z_emu_params *p)
{
	ck_assert_uint_eq(got->lba_bytes, p->lba_bytes);
	ck_assert_uint_eq(got->zone_bytes, p->zone_bytes);
	ck_assert_uint_eq(got->cap_bytes, p->cap_bytes);
	ck_assert_uint_eq(got->nr_zones, p->nr_zones);
	ck_assert_uint_eq(got->nr_cnv_zones, p->nr_cnv_zones);
	ck_assert_uint_eq(got->max_open, p->max_open);
	ck_assert_uint_eq(got->max_active, p->max_active);
	ck_assert_uint_eq(got->max_append_bytes, p->max_append_bytes);
}

START_TEST(test_create_good_params)
{
	struct p2z_emu_params p = defparams(), got;
	char why[256];
	struct stat st;

	ck_assert_int_eq(p2z_emu_check_params(&p, why, sizeof(why)), 0);
	p.nr_zones = P2Z_EMU_MAX_ZONES;
	p.zone_bytes = p.cap_bytes = 4096;
	p.nr_cnv_zones = P2Z_EMU_MAX_ZONES;
	p.max_append_bytes = P2Z_EMU_MAX_XFER_BYTES;
	ck_assert_int_eq(p2z_emu_check_params(&p, why, sizeof(why)), 0);

	/* A 1-LBA-zone, 512-byte LBA, equal limits device round-trips. */
	p = defparams();
	p.lba_bytes = 512;
	p.zone_bytes = 3 * 512;
	p.cap_bytes = 512;
	p.nr_zones = 5;
	p.nr_cnv_zones = 5;
	p.max_open = p.max_active = 4;
	p.max_append_bytes = 512;
	ck_assert_int_eq(p2z_emu_create(img, &p, false), 0);
	ck_assert_int_eq(p2z_emu_check_image(img, &got, why, sizeof(why)), 0);
	expect_params(&got, &p);
	ck_assert_int_eq(stat(img, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)(DATA_OFS + 5 * 3 * 512));

	/* Sparse: 64 zones of 96 MiB take almost no space. */
	p = defparams();
	p.zone_bytes = 96ULL << 20;
	p.cap_bytes = 80ULL << 20;
	p.nr_zones = 64;
	ck_assert_int_eq(p2z_emu_create(img, &p, true), 0);
	ck_assert_int_eq(stat(img, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)(DATA_OFS + 64 * (96ULL << 20)));
	ck_assert_int_lt(st.st_blocks, 1024);
	ck_assert_int_eq(p2z_emu_check_image(img, &got, why, sizeof(why)), 0);
	expect_params(&got, &p);
}
END_TEST

START_TEST(test_create_existing)
{
	struct p2z_emu_params p = defparams();
	char other[PATH_MAX + 32];
	struct p2z_dev *dev = mkdev();

	ck_assert_int_eq(wr(dev, 0, 0, 2, 1), (ssize_t)(2 * LBA));
	p2z_dev_close(dev);
	ck_assert_int_eq(p2z_emu_create(img, &p, false), -EEXIST);
	dev = opendev(0);
	expect_data(dev, 0, 0, 2, 1);
	p2z_dev_close(dev);
	ck_assert_int_eq(p2z_emu_create(img, &p, true), 0);
	dev = opendev(0);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_EMPTY);
	expect_zeros(dev, 0, 0, 2);
	p2z_dev_close(dev);

	snprintf(other, sizeof(other), "%s/fifo", tmpdir);
	ck_assert_int_eq(mkfifo(other, 0600), 0);
	ck_assert_int_eq(p2z_emu_create(other, &p, false), -EEXIST);
	ck_assert_int_eq(p2z_emu_create(other, &p, true), -EINVAL);
	snprintf(other, sizeof(other), "%s/dir", tmpdir);
	ck_assert_int_eq(mkdir(other, 0755), 0);
	ck_assert_int_eq(p2z_emu_create(other, &p, true), -EINVAL);
	snprintf(other, sizeof(other), "%s/no/such", tmpdir);
	ck_assert_int_eq(p2z_emu_create(other, &p, true), -ENOENT);
}
END_TEST

/* ---- volatile write cache (create --volatile-cache), FUA, reset order */

static void mkimg_vwc(void)
{
	struct p2z_emu_params p = defparams();

	ck_assert_int_eq(p2z_emu_create(img, &p, P2Z_EMU_CREATE_VOLATILE_CACHE),
			 0);
}

/* In a child: @nlb pattern blocks at @rel of @zidx read back, or _exit(). */
static void child_expect(struct p2z_dev *dev, uint64_t zidx, uint64_t rel,
			 uint64_t nlb, uint64_t seed, int code)
{
	ssize_t ret;
	void *buf = rd(dev, zidx, rel, nlb, &ret);
	bool ok =
		ret == (ssize_t)(nlb * LBA) &&
		(seed ? is_fill(buf, nlb, seed, rel) : is_zero(buf, nlb * LBA));

	free(buf);
	if (!ok)
		_exit(code);
}

/* In a child: write, or _exit(@code). */
static void child_wr(struct p2z_dev *dev, uint64_t zidx, uint64_t rel,
		     uint64_t nlb, uint64_t seed, unsigned int flags, int code)
{
	void *buf = malloc(nlb * LBA);

	if (!buf)
		_exit(code);
	fill(buf, nlb, seed, rel);
	if (p2z_dev_pwrite(dev, buf, nlb * LBA, zofs(zidx, rel), flags) !=
	    (ssize_t)(nlb * LBA))
		_exit(code);
	free(buf);
}

/* Run @fn in a child that ends with SIGKILL (a power cut, for the cache);
 * an _exit() code from @fn is a failed step. */
static void power_cut(void (*fn)(struct p2z_dev *dev))
{
	struct p2z_dev *dev;
	int status;
	pid_t pid;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		if (p2z_dev_open(img, "emu", 0, &dev))
			_exit(2);
		fn(dev);
		raise(SIGKILL);
		_exit(99);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "child failed at step %d (status 0x%x)",
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1, status);
}

/* Zone 1: 4 blocks flushed, 3 more cached; zone 2: 2 cached blocks; zone
 * 3: 2 blocks, flushed, then finished (cached state). */
static void vwc_cut_child(struct p2z_dev *dev)
{
	if (!dev->info.volatile_cache)
		_exit(3);
	child_wr(dev, 1, 0, 4, 11, 0, 4);
	child_wr(dev, 3, 0, 2, 13, 0, 5);
	if (p2z_dev_flush(dev))
		_exit(6);
	child_wr(dev, 1, 4, 3, 11, 0, 7);
	child_wr(dev, 2, 0, 2, 12, 0, 8);
	if (p2z_dev_zone_mgmt(dev, 3, P2Z_ZONE_OP_FINISH))
		_exit(9);
	/* Reads see the cache; the report the device's state. */
	child_expect(dev, 1, 0, 7, 11, 10);
	child_expect(dev, 1, 7, 2, 0, 11);
	child_expect(dev, 2, 0, 2, 12, 12);
	if (zwp(dev, 1) != 7 || zcond(dev, 3) != P2Z_ZONE_COND_FULL)
		_exit(13);
}

/*
 * SIGKILL of the process using a volatile-cache image is a power cut:
 * what was flushed is there, exactly, what was not is gone, write pointer
 * included; nothing past the write pointer is visible.
 */
START_TEST(test_vwc_power_cut)
{
	struct p2z_dev *dev;

	mkimg_vwc();
	power_cut(vwc_cut_child);
	dev = opendev(0);
	ck_assert(dev->info.volatile_cache);
	ck_assert_uint_eq(zwp(dev, 1), 4);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_CLOSED);
	expect_data(dev, 1, 0, 4, 11);
	expect_zeros(dev, 1, 4, ZONE_LBA - 4);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_EMPTY);
	expect_zeros(dev, 2, 0, ZONE_LBA);
	/* The finish was cached too: the zone is as flushed. */
	ck_assert_uint_eq(zcond(dev, 3), P2Z_ZONE_COND_CLOSED);
	ck_assert_uint_eq(zwp(dev, 3), 2);
	expect_data(dev, 3, 0, 2, 13);
	/* Writable at the persisted pointer, over what the cut dropped. */
	ck_assert_int_eq(wr(dev, 1, 4, 2, 21), (ssize_t)(2 * LBA));
	expect_data(dev, 1, 4, 2, 21);
	expect_zeros(dev, 1, 6, 1);
	p2z_dev_close(dev);
	/* An orderly close writes the cache back. */
	dev = opendev(0);
	ck_assert_uint_eq(zwp(dev, 1), 6);
	expect_data(dev, 1, 0, 4, 11);
	expect_data(dev, 1, 4, 2, 21);
	p2z_dev_close(dev);
}
END_TEST

/* Zone 1: 2 blocks, 3 with FUA, 1 more; zone 2: an append with FUA. */
static void vwc_fua_child(struct p2z_dev *dev)
{
	char buf[LBA];
	uint64_t lba;

	child_wr(dev, 1, 0, 2, 31, 0, 3);
	child_wr(dev, 1, 2, 3, 31, P2Z_IO_FUA, 4);
	child_wr(dev, 1, 5, 1, 31, 0, 5);
	fill(buf, 1, 32, 0);
	if (p2z_dev_append(dev, 2, buf, LBA, &lba, P2Z_IO_FUA) != LBA ||
	    lba != 2 * ZONE_LBA)
		_exit(6);
	/* Native FUA: no flush from the dispatcher. */
	if (dev->stats[P2Z_DEV_STAT_FUA].nr != 2 ||
	    dev->stats[P2Z_DEV_STAT_FLUSH].nr != 0)
		_exit(7);
}

/* A FUA write is durable with everything written before it in the zone. */
START_TEST(test_vwc_fua)
{
	struct p2z_dev *dev;

	mkimg_vwc();
	power_cut(vwc_fua_child);
	dev = opendev(0);
	ck_assert_uint_eq(zwp(dev, 1), 5);
	expect_data(dev, 1, 0, 5, 31);
	expect_zeros(dev, 1, 5, ZONE_LBA - 5);
	ck_assert_uint_eq(zwp(dev, 2), 1);
	expect_data(dev, 2, 0, 1, 32);
	p2z_dev_close(dev);
}
END_TEST

/* Zone 1 written full and flushed, reset, 2 blocks written, no flush. */
static void vwc_reset_child(struct p2z_dev *dev)
{
	child_wr(dev, 1, 0, CAP_LBA, 41, 0, 3);
	if (p2z_dev_flush(dev))
		_exit(4);
	if (p2z_dev_zone_mgmt(dev, 1, P2Z_ZONE_OP_RESET))
		_exit(5);
	child_expect(dev, 1, 0, ZONE_LBA, 0, 6);
	child_wr(dev, 1, 0, 2, 42, 0, 7);
	child_expect(dev, 1, 0, 2, 42, 8);
}

/* A reset is durable when it completes: after the cut the zone is empty,
 * the old data does not come back, the unflushed new data is gone. */
START_TEST(test_vwc_reset_after_cut)
{
	struct p2z_dev *dev;

	mkimg_vwc();
	power_cut(vwc_reset_child);
	dev = opendev(0);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_EMPTY);
	ck_assert_uint_eq(zwp(dev, 1), 0);
	expect_zeros(dev, 1, 0, ZONE_LBA);
	ck_assert_int_eq(wr(dev, 1, 0, 1, 43), (ssize_t)LBA);
	ck_assert_int_eq(p2z_dev_flush(dev), 0);
	ck_assert_int_eq(mgmt(dev, 1, P2Z_ZONE_OP_RESET), 0);
	expect_zeros(dev, 1, 0, ZONE_LBA);
	p2z_dev_close(dev);
}
END_TEST

/* 5 + 5 blocks with a cache of 8 (destaged at the second write), 2 more. */
static void vwc_destage_child(struct p2z_dev *dev)
{
	child_wr(dev, 1, 0, 5, 51, 0, 3);
	child_wr(dev, 1, 5, 5, 51, 0, 4);
	child_wr(dev, 1, 10, 2, 51, 0, 5);
	child_expect(dev, 1, 0, 12, 51, 6);
}

/* The cache is bounded: past its size it destages by itself, data then
 * write pointer, without a flush from the host. */
START_TEST(test_vwc_destage)
{
	char v[32];
	struct p2z_dev *dev;

	snprintf(v, sizeof(v), "%llu", 8 * LBA);
	ck_assert_int_eq(setenv("P2Z_EMU_CACHE_BYTES", v, 1), 0);
	mkimg_vwc();
	power_cut(vwc_destage_child);
	unsetenv("P2Z_EMU_CACHE_BYTES");
	dev = opendev(0);
	ck_assert_uint_eq(zwp(dev, 1), 10);
	expect_data(dev, 1, 0, 10, 51);
	expect_zeros(dev, 1, 10, ZONE_LBA - 10);
	p2z_dev_close(dev);
}
END_TEST

/* Without a cache, FUA is native too (RWF_DSYNC), and a kill loses
 * nothing written. */
static void fua_plain_child(struct p2z_dev *dev)
{
	if (dev->info.volatile_cache)
		_exit(3);
	child_wr(dev, 1, 0, 2, 61, P2Z_IO_FUA, 4);
	child_wr(dev, 1, 2, 1, 61, 0, 5);
	child_wr(dev, 0, 0, 1, 62, P2Z_IO_FUA, 6);
	if (dev->stats[P2Z_DEV_STAT_FUA].nr != 2 ||
	    dev->stats[P2Z_DEV_STAT_FLUSH].nr != 0)
		_exit(7);
}

START_TEST(test_fua_no_cache)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;

	p.nr_cnv_zones = 1;
	ck_assert_int_eq(p2z_emu_create(img, &p, 0), 0);
	power_cut(fua_plain_child);
	dev = opendev(0);
	ck_assert_uint_eq(zwp(dev, 1), 3);
	expect_data(dev, 1, 0, 3, 61);
	expect_data(dev, 0, 0, 1, 62);
	p2z_dev_close(dev);
}
END_TEST

/* Conventional zone 0: 4 blocks flushed, 4 cached over 2 of them, one
 * FUA write (persisting them), 2 more cached. */
static void vwc_cnv_child(struct p2z_dev *dev)
{
	child_wr(dev, 0, 0, 4, 81, 0, 3);
	if (p2z_dev_flush(dev))
		_exit(4);
	child_wr(dev, 0, 2, 4, 82, 0, 5);
	child_expect(dev, 0, 0, 2, 81, 6);
	child_expect(dev, 0, 2, 4, 82, 7);
	child_wr(dev, 0, 10, 1, 83, P2Z_IO_FUA, 8);
	child_wr(dev, 0, 20, 2, 84, 0, 9);
	child_wr(dev, 0, 21, 1, 85, 0, 10);
	child_expect(dev, 0, 20, 1, 84, 11);
	child_expect(dev, 0, 21, 1, 85, 12);
	child_expect(dev, 0, 6, 4, 0, 13);
}

/* Conventional zones are cached too: later writes win in reads, a FUA
 * write persists the zone's earlier ones, a power cut loses the rest. */
START_TEST(test_vwc_cnv)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;

	p.nr_cnv_zones = 1;
	ck_assert_int_eq(p2z_emu_create(img, &p, P2Z_EMU_CREATE_VOLATILE_CACHE),
			 0);
	power_cut(vwc_cnv_child);
	dev = opendev(0);
	expect_data(dev, 0, 0, 2, 81);
	expect_data(dev, 0, 2, 4, 82);
	expect_zeros(dev, 0, 6, 4);
	expect_data(dev, 0, 10, 1, 83);
	expect_zeros(dev, 0, 11, ZONE_LBA - 11);
	p2z_dev_close(dev);
}
END_TEST

/* The header flag: shown by a look at the image, unknown flags refused. */
START_TEST(test_vwc_header_flag)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;

	ck_assert_int_eq(p2z_emu_create(img, &p, 0), 0);
	dev = opendev(P2Z_DEV_RDONLY | P2Z_DEV_PEEK);
	ck_assert(!dev->info.volatile_cache);
	p2z_dev_close(dev);
	ck_assert_int_eq(p2z_emu_create(img, &p,
					P2Z_EMU_CREATE_FORCE |
						P2Z_EMU_CREATE_VOLATILE_CACHE),
			 0);
	dev = opendev(P2Z_DEV_RDONLY | P2Z_DEV_PEEK);
	ck_assert(dev->info.volatile_cache);
	p2z_dev_close(dev);
	patch_hdr(HDR_FLAGS, 3, 4, true);
	ck_assert_int_eq(p2z_emu_check_image(img, NULL, NULL, 0), -EUCLEAN);
}
END_TEST

/*
 * Reset order (the kill instants of a reset, single-stepped as in
 * test_state_change_atomic): from the instruction the zone reads empty in
 * the table on, its old data is gone from the image, so that no crash
 * leaves old data under a new write pointer.
 */
static void reset_child(void)
{
	struct p2z_dev *dev;

	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
		_exit(10);
	if (p2z_dev_open(img, "emu", 0, &dev))
		_exit(2);
	raise(SIGSTOP);
	if (p2z_dev_zone_mgmt(dev, 1, P2Z_ZONE_OP_RESET))
		_exit(3);
	raise(SIGSTOP);
	_exit(0);
}

START_TEST(test_reset_order)
{
	struct p2z_emu_params p = defparams();
	uint64_t steps = 0, empty_steps = 0;
	char raw[LBA];
	struct p2z_dev *dev;
	int status, sig = 0;
	pid_t pid;

	if (p2z_check_short_run()) {
		fprintf(stderr, "test_reset_order: SKIPPED under P2Z_SHORT\n");
		return;
	}
	ck_assert_int_eq(p2z_emu_create(img, &p,
					_i ? P2Z_EMU_CREATE_VOLATILE_CACHE : 0),
			 0);
	dev = opendev(0);
	ck_assert_int_eq(wr(dev, 1, 0, CAP_LBA, 71), (ssize_t)(CAP_LBA * LBA));
	p2z_dev_close(dev);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		reset_child();
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 10) {
		fprintf(stderr, "test_reset_order: SKIPPED: no ptrace here\n");
		return;
	}
	ck_assert_msg(WIFSTOPPED(status), "child did not stop (0x%x)", status);
	ck_assert_uint_eq(raw_state(1).cond, P2Z_ZONE_COND_FULL);
	for (;;) {
		ck_assert_int_eq(ptrace(PTRACE_SINGLESTEP, pid, NULL,
					(void *)(long)sig),
				 0);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFSTOPPED(status), "child ended (0x%x)", status);
		if (WSTOPSIG(status) == SIGSTOP)
			break;
		sig = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);
		ck_assert_uint_lt(++steps, 20000000);
		if (raw_state(1).cond != P2Z_ZONE_COND_EMPTY)
			continue;
		empty_steps++;
		raw_pread(raw, sizeof(raw), DATA_OFS + zofs(1, CAP_LBA - 1));
		ck_assert_msg(is_zero(raw, sizeof(raw)),
			      "a kill after %llu instructions leaves the zone "
			      "empty over its old data",
			      (unsigned long long)steps);
	}
	ck_assert_int_eq(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "reset failed (0x%x)", status);
	ck_assert_uint_gt(empty_steps, 0);
	ck_assert_uint_eq(raw_state(1).cond, P2Z_ZONE_COND_EMPTY);
}
END_TEST

/* ---- creation safety */

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* The first @len bytes of @path are @want; @size: the file's size. */
static void expect_file(const char *path, const void *want, size_t len,
			off_t size)
{
	char got[8192];
	struct stat st;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, size);
	ck_assert_uint_le(len, sizeof(got));
	ck_assert_int_eq(read(fd, got, len), (ssize_t)len);
	ck_assert(!memcmp(got, want, len));
	close(fd);
}

/* --force replaces an image only: never another file, never through a
 * symbolic link (both left byte for byte). */
START_TEST(test_create_force_refuses)
{
	static const char disk[] = "QFI\xfb not an image, a VM disk\n";
	struct p2z_emu_params p = defparams();
	char other[PATH_MAX + 32], link[PATH_MAX + 32], hdr[4096];
	struct stat st;

	snprintf(other, sizeof(other), "%s/vm.qcow2", tmpdir);
	write_file(other, disk);
	ck_assert_int_eq(p2z_emu_create(other, &p, P2Z_EMU_CREATE_FORCE),
			 -EINVAL);
	expect_file(other, disk, strlen(disk), (off_t)strlen(disk));

	ck_assert_int_eq(p2z_emu_create(img, &p, 0), 0);
	raw_pread(hdr, sizeof(hdr), 0);
	ck_assert_int_eq(stat(img, &st), 0);
	snprintf(link, sizeof(link), "%s/link.img", tmpdir);
	ck_assert_int_eq(symlink(img, link), 0);
	ck_assert_int_eq(p2z_emu_create(link, &p,
					P2Z_EMU_CREATE_FORCE |
						P2Z_EMU_CREATE_VOLATILE_CACHE),
			 -ELOOP);
	expect_file(img, hdr, sizeof(hdr), st.st_size);
	/* An image itself is replaced. */
	ck_assert_int_eq(p2z_emu_create(img, &p, P2Z_EMU_CREATE_FORCE), 0);
}
END_TEST

/* New images are 0600, less the umask: not readable by others. */
START_TEST(test_create_mode)
{
	struct p2z_emu_params p = defparams();
	mode_t old = umask(0);
	struct stat st;

	ck_assert_int_eq(p2z_emu_create(img, &p, 0), 0);
	ck_assert_int_eq(stat(img, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(unlink(img), 0);
	umask(0277);
	ck_assert_int_eq(p2z_emu_create(img, &p, 0), 0);
	umask(old);
	ck_assert_int_eq(stat(img, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0400);
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

static TCase *tcase(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *emu_suite(void)
{
	Suite *s = suite_create("emu");
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
	tcase_add_test(tc, test_crash_consistency);
	tcase_add_test(tc, test_wp_never_ahead_of_data);
	tcase_add_loop_test(tc, test_state_change_atomic, 0, A_NR);
	tcase_add_test(tc, test_old_image_full_at_capacity);

	tc = tcase(s, "fault");
	tcase_add_test(tc, test_set_fault_other_process);
	tcase_add_loop_test(tc, test_fail_next_io_once, F_READ, F_REPORT + 1);
	tcase_add_test(tc, test_fault_online_clear);
	tcase_add_test(tc, test_fault_online_finished);
	tcase_add_test(tc, test_fault_idle_image);
	tcase_add_loop_test(tc, test_fault_parse_table, 0,
			    ARRAY_SIZE(fault_words));

	tc = tcase(s, "concurrent");
	tcase_add_loop_test(tc, test_append_concurrent, 0, 4);

	tc = tcase(s, "direct");
	tcase_add_loop_test(tc, test_open_direct_fd, 0,
			    ARRAY_SIZE(direct_flags));
	tcase_add_loop_test(tc, test_direct_unaligned_buffers, 0, 2);

	tc = tcase(s, "image");
	tcase_add_loop_test(tc, test_open_corrupt_table, 0,
			    ARRAY_SIZE(corruptions));
	tcase_add_loop_test(tc, test_create_bad_params, 0, 16);
	tcase_add_test(tc, test_create_good_params);
	tcase_add_test(tc, test_create_existing);
	tcase_add_test(tc, test_create_force_refuses);
	tcase_add_test(tc, test_create_mode);

	tc = tcase(s, "volatile_cache");
	tcase_add_test(tc, test_vwc_power_cut);
	tcase_add_test(tc, test_vwc_fua);
	tcase_add_test(tc, test_vwc_reset_after_cut);
	tcase_add_test(tc, test_vwc_destage);
	tcase_add_test(tc, test_fua_no_cache);
	tcase_add_test(tc, test_vwc_cnv);
	tcase_add_test(tc, test_vwc_header_flag);
	tcase_add_loop_test(tc, test_reset_order, 0, 2);
	return s;
}

int main(void)
{
	return p2z_check_run(emu_suite());
}
