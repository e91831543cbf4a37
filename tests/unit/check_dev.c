// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the device dispatcher (dev.c) over a scripted fake backend:
 * how reads, writes and appends are cut at the device's limits (and when a
 * backend takes a whole read itself), what a failing piece makes of the
 * result, and backend selection by path and by name.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "po2zfs/dev.h"

#define LBA 512U
#define XFER (8U * LBA)
#define APPEND (3U * LBA)
#define MAX_CALLS 64

/**
 * struct fake - a scripted backend
 * @dev: generic part
 * @nr: calls recorded
 * @len: length of each call
 * @ofs: offset of each call (zone index for appends)
 * @fail_at: call number that fails with @fail_ret, or -1
 * @fail_ret: what the failing call returns
 */
struct fake {
	struct p2z_dev dev;
	unsigned int nr;
	size_t len[MAX_CALLS];
	uint64_t ofs[MAX_CALLS];
	int fail_at;
	ssize_t fail_ret;
};

static struct fake fk;

static ssize_t fake_record(size_t len, uint64_t ofs)
{
	unsigned int n = fk.nr++;

	ck_assert_uint_lt(n, MAX_CALLS);
	fk.len[n] = len;
	fk.ofs[n] = ofs;
	if ((int)n == fk.fail_at)
		return fk.fail_ret;
	return (ssize_t)len;
}

static ssize_t fake_pread(struct p2z_dev *dev, void *buf, size_t len,
			  uint64_t ofs)
{
	(void)dev;
	memset(buf, 0x5a, len);
	return fake_record(len, ofs);
}

static ssize_t fake_pwrite(struct p2z_dev *dev, const void *buf, size_t len,
			   uint64_t ofs)
{
	(void)dev;
	(void)buf;
	return fake_record(len, ofs);
}

static ssize_t fake_append(struct p2z_dev *dev, uint64_t zidx, const void *buf,
			   size_t len, uint64_t *lba)
{
	(void)dev;
	(void)buf;
	/* each piece lands 100 LBAs after the previous call's number */
	*lba = 1000 + 100 * fk.nr;
	return fake_record(len, zidx);
}

static int fake_report(struct p2z_dev *dev, uint64_t zidx, unsigned int nr,
		       struct p2z_zone_info *zi)
{
	(void)dev;
	(void)zidx;
	(void)zi;
	return (int)nr;
}

static int fake_mgmt(struct p2z_dev *dev, uint64_t zidx, enum p2z_zone_op op)
{
	(void)dev;
	(void)zidx;
	(void)op;
	return 0;
}

static int fake_flush(struct p2z_dev *dev)
{
	(void)dev;
	return 0;
}

static void fake_close(struct p2z_dev *dev)
{
	(void)dev;
}

static int fake_open(const char *path, unsigned int flags,
		     struct p2z_dev **devp)
{
	(void)path;
	(void)flags;
	*devp = &fk.dev;
	return 0;
}

#define FAKE_OPS(splits)                                                     \
	{                                                                    \
		.name = "fake", .splits_reads = (splits), .open = fake_open, \
		.close = fake_close, .report_zones = fake_report,            \
		.zone_mgmt = fake_mgmt, .pread = fake_pread,                 \
		.pwrite = fake_pwrite, .append = fake_append,                \
		.flush = fake_flush,                                         \
	}

static const struct p2z_dev_ops fake_ops = FAKE_OPS(false);
static const struct p2z_dev_ops fake_split_ops = FAKE_OPS(true);

static struct p2z_dev *fake_dev(const struct p2z_dev_ops *ops)
{
	memset(&fk, 0, sizeof(fk));
	fk.fail_at = -1;
	fk.dev.ops = ops;
	fk.dev.info = (struct p2z_dev_info){
		.lba_bytes = LBA,
		.nr_zones = 4,
		.zone_lba = 100,
		.max_append_bytes = APPEND,
		.max_xfer_bytes = XFER,
	};
	return &fk.dev;
}

static char buf[64 * LBA];

START_TEST(test_pread_split_at_xfer)
{
	struct p2z_dev *dev = fake_dev(&fake_ops);

	/* 20 LBAs from LBA 3: 8 + 8 + 4, in order, contiguous */
	ck_assert_int_eq(p2z_dev_pread(dev, buf, 20 * LBA, 3 * LBA), 20 * LBA);
	ck_assert_uint_eq(fk.nr, 3);
	ck_assert_uint_eq(fk.len[0], XFER);
	ck_assert_uint_eq(fk.len[1], XFER);
	ck_assert_uint_eq(fk.len[2], 4 * LBA);
	ck_assert_uint_eq(fk.ofs[0], 3 * LBA);
	ck_assert_uint_eq(fk.ofs[1], 11 * LBA);
	ck_assert_uint_eq(fk.ofs[2], 19 * LBA);
}
END_TEST

START_TEST(test_pread_whole_when_backend_splits)
{
	struct p2z_dev *dev = fake_dev(&fake_split_ops);

	ck_assert_int_eq(p2z_dev_pread(dev, buf, 20 * LBA, 3 * LBA), 20 * LBA);
	ck_assert_uint_eq(fk.nr, 1);
	ck_assert_uint_eq(fk.len[0], 20 * LBA);
	ck_assert_uint_eq(fk.ofs[0], 3 * LBA);
}
END_TEST

START_TEST(test_pread_errors)
{
	struct p2z_dev *dev = fake_dev(&fake_ops);

	ck_assert_int_eq(p2z_dev_pread(dev, buf, LBA + 1, 0), -EINVAL);
	ck_assert_int_eq(p2z_dev_pread(dev, buf, LBA, 7), -EINVAL);
	ck_assert_uint_eq(fk.nr, 0);
	/* a failing second piece fails the whole read */
	fk.fail_at = 1;
	fk.fail_ret = -EIO;
	ck_assert_int_eq(p2z_dev_pread(dev, buf, 20 * LBA, 0), -EIO);
	ck_assert_uint_eq(fk.nr, 2);
	/* a backend returning 0 must not loop forever */
	dev = fake_dev(&fake_ops);
	fk.fail_at = 0;
	fk.fail_ret = 0;
	ck_assert_int_eq(p2z_dev_pread(dev, buf, LBA, 0), -EIO);
}
END_TEST

START_TEST(test_pwrite_split_and_partial)
{
	struct p2z_dev *dev = fake_dev(&fake_split_ops);

	/* writes are always cut by the dispatcher, splits_reads or not */
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, 17 * LBA, 0), 17 * LBA);
	ck_assert_uint_eq(fk.nr, 3);
	ck_assert_uint_eq(fk.len[2], LBA);
	ck_assert_uint_eq(fk.ofs[2], 16 * LBA);
	/* a failure after the first piece: the bytes that made it */
	dev = fake_dev(&fake_ops);
	fk.fail_at = 1;
	fk.fail_ret = -ENOSPC;
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, 17 * LBA, 0), XFER);
	/* a failure of the first piece: its errno */
	dev = fake_dev(&fake_ops);
	fk.fail_at = 0;
	fk.fail_ret = -ENOSPC;
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, 17 * LBA, 0), -ENOSPC);
	ck_assert_uint_eq(fk.nr, 1);
}
END_TEST

START_TEST(test_append_split_first_lba)
{
	struct p2z_dev *dev = fake_dev(&fake_ops);
	uint64_t lba = 0;

	/* pieces of at most max_append_bytes: 3 + 3 + 1 LBAs */
	ck_assert_int_eq(p2z_dev_append(dev, 2, buf, 7 * LBA, &lba), 7 * LBA);
	ck_assert_uint_eq(fk.nr, 3);
	ck_assert_uint_eq(fk.len[0], APPEND);
	ck_assert_uint_eq(fk.len[1], APPEND);
	ck_assert_uint_eq(fk.len[2], LBA);
	ck_assert_uint_eq(fk.ofs[0], 2);
	ck_assert_uint_eq(fk.ofs[2], 2);
	/* the first piece's landing LBA */
	ck_assert_uint_eq(lba, 1000);
	/* the smaller of the append and transfer limits */
	dev = fake_dev(&fake_ops);
	fk.dev.info.max_append_bytes = 16 * LBA;
	ck_assert_int_eq(p2z_dev_append(dev, 0, buf, 16 * LBA, &lba), 16 * LBA);
	ck_assert_uint_eq(fk.nr, 2);
	ck_assert_uint_eq(fk.len[0], XFER);
	/* errors */
	ck_assert_int_eq(p2z_dev_append(dev, 4, buf, LBA, &lba), -EINVAL);
	ck_assert_int_eq(p2z_dev_append(dev, 0, buf, 100, &lba), -EINVAL);
	fk.dev.info.max_append_bytes = 0;
	ck_assert_int_eq(p2z_dev_append(dev, 0, buf, LBA, &lba), -EOPNOTSUPP);
	dev = fake_dev(&fake_ops);
	fk.fail_at = 1;
	fk.fail_ret = -EILSEQ;
	ck_assert_int_eq(p2z_dev_append(dev, 0, buf, 7 * LBA, &lba), APPEND);
}
END_TEST

START_TEST(test_zone_range_checks)
{
	struct p2z_dev *dev = fake_dev(&fake_ops);
	struct p2z_zone_info zi[8];

	ck_assert_int_eq(p2z_dev_report_zones(dev, 2, 8, zi), 2);
	ck_assert_int_eq(p2z_dev_report_zones(dev, 4, 8, zi), 0);
	ck_assert_int_eq(p2z_dev_zone_mgmt(dev, 4, P2Z_ZONE_OP_RESET), -EINVAL);
	ck_assert_int_eq(p2z_dev_zone_mgmt(dev, 3, P2Z_ZONE_OP_RESET), 0);
}
END_TEST

START_TEST(test_open_selection_errors)
{
	struct p2z_dev *dev = NULL;
	char dir[] = "/tmp/p2z-check-dev-XXXXXX";

	/* no such path: ENOENT after every backend declined it */
	ck_assert_int_eq(p2z_dev_open("/nonexistent/p2z", NULL, 0, &dev),
			 -ENOENT);
	ck_assert_int_eq(p2z_dev_open("/dev/nvme99n99", NULL, 0, &dev),
			 -ENOENT);
	/* something that exists but no backend takes */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(p2z_dev_open(dir, NULL, 0, &dev), -ENODEV);
	rmdir(dir);
	ck_assert_int_eq(p2z_dev_open("/dev/null", NULL, 0, &dev), -ENODEV);
	/* a backend by a name that does not exist */
	ck_assert_int_eq(p2z_dev_open("/dev/null", "floppy", 0, &dev), -EINVAL);
	ck_assert_ptr_null(dev);
}
END_TEST

static Suite *dev_suite(void)
{
	Suite *s = suite_create("dev");
	TCase *tc = tcase_create("dispatch");

	tcase_add_test(tc, test_pread_split_at_xfer);
	tcase_add_test(tc, test_pread_whole_when_backend_splits);
	tcase_add_test(tc, test_pread_errors);
	tcase_add_test(tc, test_pwrite_split_and_partial);
	tcase_add_test(tc, test_append_split_first_lba);
	tcase_add_test(tc, test_zone_range_checks);
	tcase_add_test(tc, test_open_selection_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dev_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
