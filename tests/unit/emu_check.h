/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the emu Check suites (check_emu_*.c) share: the test geometry, the
 * image layout offsets, the per-test image in a fresh mkdtemp() directory,
 * and helpers to write, read and check pattern data and to patch an image
 * behind the device's back. Header-only, as p2z_check.h.
 */
#ifndef P2Z_EMU_CHECK_H
#define P2Z_EMU_CHECK_H

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

static inline void setup(void)
{
	p2z_check_mkdtemp(tmpdir, sizeof(tmpdir), "check_emu");
	snprintf(img, sizeof(img), "%s/z.img", tmpdir);
}

static inline void teardown(void)
{
	p2z_check_rmdtemp(tmpdir);
}

static inline struct p2z_emu_params defparams(void)
{
	return (struct p2z_emu_params){
		.lba_bytes = LBA,
		.zone_bytes = ZONE_LBA * LBA,
		.cap_bytes = CAP_LBA * LBA,
		.nr_zones = NR_ZONES,
		.max_append_bytes = 4 * LBA,
	};
}

static inline struct p2z_dev *opendev(unsigned int flags)
{
	struct p2z_dev *dev = NULL;

	ck_assert_int_eq(p2z_dev_open(img, "emu", flags, &dev), 0);
	ck_assert_ptr_nonnull(dev);
	return dev;
}

static inline struct p2z_dev *mkdev_p(const struct p2z_emu_params *p)
{
	ck_assert_int_eq(p2z_emu_create(img, p, false), 0);
	return opendev(0);
}

static inline struct p2z_dev *mkdev(void)
{
	struct p2z_emu_params p = defparams();

	return mkdev_p(&p);
}

static inline struct p2z_zone_info zinfo(struct p2z_dev *dev, uint64_t zidx)
{
	struct p2z_zone_info zi;

	ck_assert_int_eq(p2z_dev_report_zones(dev, zidx, 1, &zi), 1);
	return zi;
}

static inline uint8_t zcond(struct p2z_dev *dev, uint64_t zidx)
{
	return zinfo(dev, zidx).cond;
}

/* Write pointer, in LBAs from the zone start. */
static inline uint64_t zwp(struct p2z_dev *dev, uint64_t zidx)
{
	struct p2z_zone_info zi = zinfo(dev, zidx);

	return zi.wp_lba - zi.start_lba;
}

/* Block contents: every 8-byte word derives from (seed, block, word). */
static inline void fill(void *buf, uint64_t nlb, uint64_t seed, uint64_t first)
{
	uint64_t *w = buf;
	uint64_t b, i;

	for (b = 0; b < nlb; b++)
		for (i = 0; i < LBA / 8; i++)
			w[b * (LBA / 8) + i] = (seed << 40) ^
					       ((first + b) << 12) ^ i ^
					       0x5a5a000000000000ULL;
}

static inline bool is_fill(const void *buf, uint64_t nlb, uint64_t seed,
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

static inline bool is_zero(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	return !len || (!p[0] && !memcmp(p, p + 1, len - 1));
}

static inline uint64_t zofs(uint64_t zidx, uint64_t rel)
{
	return (zidx * ZONE_LBA + rel) * LBA;
}

/* Write @nlb pattern blocks at LBA @rel of zone @zidx. */
static inline ssize_t wr(struct p2z_dev *dev, uint64_t zidx, uint64_t rel,
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
static inline void *rd(struct p2z_dev *dev, uint64_t zidx, uint64_t rel,
		       uint64_t nlb, ssize_t *ret)
{
	void *buf = malloc(nlb * LBA + 1);

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0xee, nlb * LBA);
	*ret = p2z_dev_pread(dev, buf, nlb * LBA, zofs(zidx, rel));
	return buf;
}

static inline void expect_data(struct p2z_dev *dev, uint64_t zidx, uint64_t rel,
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

static inline void expect_zeros(struct p2z_dev *dev, uint64_t zidx,
				uint64_t rel, uint64_t nlb)
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

static inline int mgmt(struct p2z_dev *dev, uint64_t zidx, enum p2z_zone_op op)
{
	return p2z_dev_zone_mgmt(dev, zidx, op);
}

/* Apply a fault through the image file, as po2zfs-emu set-zone does, and
 * make the device notice it (report applies condition faults). */
static inline void inject(struct p2z_dev *dev, uint64_t zidx,
			  enum p2z_emu_fault f)
{
	ck_assert_int_eq(p2z_emu_set_fault(img, zidx, f), 0);
	if (dev)
		zinfo(dev, zidx);
}

/* Raw access to the image file, bypassing the device. */
static inline void raw_pwrite(const void *buf, size_t len, uint64_t ofs)
{
	int fd = open(img, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, buf, len, (off_t)ofs), (ssize_t)len);
	close(fd);
}

static inline void raw_pread(void *buf, size_t len, uint64_t ofs)
{
	int fd = open(img, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, len, (off_t)ofs), (ssize_t)len);
	close(fd);
}

static inline uint32_t crc32c(const void *buf, size_t len)
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

static inline void put_le(uint8_t *p, uint64_t v, int bytes)
{
	int i;

	for (i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Change one header field and, if @fix_crc, keep the checksum right. */
static inline void patch_hdr(int ofs, uint64_t v, int bytes, bool fix_crc)
{
	uint8_t h[88];

	raw_pread(h, sizeof(h), 0);
	put_le(h + ofs, v, bytes);
	if (fix_crc)
		put_le(h + HDR_CRC, crc32c(h, HDR_CRC), 4);
	raw_pwrite(h, sizeof(h), 0);
}

static inline void patch_zent(uint64_t zidx, int ofs, uint64_t v, int bytes)
{
	uint8_t b[8];

	put_le(b, v, bytes);
	raw_pwrite(b, (size_t)bytes, TABLE_OFS + zidx * ZENT_BYTES + ofs);
}

struct zstate {
	uint64_t wp;
	uint8_t cond;
};

/* The raw state of zone @zidx in the image, as a crash would leave it. */
static inline struct zstate raw_state(uint64_t zidx)
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

/* A test case of @s, each test with a fresh image directory. */
static inline TCase *tcase(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	suite_add_tcase(s, tc);
	return tc;
}

#endif /* P2Z_EMU_CHECK_H */
