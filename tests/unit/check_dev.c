// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the device dispatcher (dev.c) over a scripted fake backend:
 * how reads, writes and appends are cut at the device's limits (and when a
 * backend takes a whole read itself), what a failing piece makes of the
 * result, and backend selection by path and by name. With the nvme
 * backend: what an NVMe device path names (a path is what it names).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "p2z_check.h"
#include "po2zfs/dev.h"
#ifdef P2Z_HAVE_NVME
#include "po2zfs/dev_nvme.h"
#include "po2zfs/nvme_path.h"
#endif
#ifdef P2Z_HAVE_ZBD
#include "po2zfs/dev_zbd.h"
#endif

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
 * @flags: flags of each write or append call
 * @nr_flush: flushes
 * @flush_ret: what a flush returns
 * @next_lba: where the next append lands: right after the previous one
 * @stray_at: append call number that lands 50 LBAs further, or -1
 */
struct fake {
	struct p2z_dev dev;
	unsigned int nr;
	size_t len[MAX_CALLS];
	uint64_t ofs[MAX_CALLS];
	int fail_at;
	ssize_t fail_ret;
	unsigned int flags[MAX_CALLS];
	unsigned int nr_flush;
	int flush_ret;
	uint64_t next_lba;
	int stray_at;
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
			   uint64_t ofs, unsigned int flags)
{
	(void)dev;
	(void)buf;
	fk.flags[fk.nr] = flags;
	return fake_record(len, ofs);
}

static ssize_t fake_append(struct p2z_dev *dev, uint64_t zidx, const void *buf,
			   size_t len, uint64_t *lba, unsigned int flags)
{
	(void)dev;
	(void)buf;
	fk.flags[fk.nr] = flags;
	/* each piece lands right after the previous one, but @stray_at */
	*lba = fk.next_lba + ((int)fk.nr == fk.stray_at ? 50 : 0);
	fk.next_lba = *lba + len / LBA;
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
	fk.nr_flush++;
	return fk.flush_ret;
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

#define FAKE_OPS(splits, has_fua)                                           \
	{                                                                   \
		.name = "fake", .fua = (has_fua), .splits_reads = (splits), \
		.open = fake_open, .close = fake_close,                     \
		.report_zones = fake_report, .zone_mgmt = fake_mgmt,        \
		.pread = fake_pread, .pwrite = fake_pwrite,                 \
		.append = fake_append, .flush = fake_flush,                 \
	}

static const struct p2z_dev_ops fake_ops = FAKE_OPS(false, false);
static const struct p2z_dev_ops fake_split_ops = FAKE_OPS(true, false);
static const struct p2z_dev_ops fake_fua_ops = FAKE_OPS(false, true);

static struct p2z_dev *fake_dev(const struct p2z_dev_ops *ops)
{
	memset(&fk, 0, sizeof(fk));
	fk.fail_at = -1;
	fk.stray_at = -1;
	fk.next_lba = 1000;
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
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, 17 * LBA, 0, 0), 17 * LBA);
	ck_assert_uint_eq(fk.nr, 3);
	ck_assert_uint_eq(fk.len[2], LBA);
	ck_assert_uint_eq(fk.ofs[2], 16 * LBA);
	/* a failure after the first piece: the bytes that made it */
	dev = fake_dev(&fake_ops);
	fk.fail_at = 1;
	fk.fail_ret = -ENOSPC;
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, 17 * LBA, 0, 0), XFER);
	/* a failure of the first piece: its errno */
	dev = fake_dev(&fake_ops);
	fk.fail_at = 0;
	fk.fail_ret = -ENOSPC;
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, 17 * LBA, 0, 0), -ENOSPC);
	ck_assert_uint_eq(fk.nr, 1);
}
END_TEST

START_TEST(test_append_split_first_lba)
{
	struct p2z_dev *dev = fake_dev(&fake_ops);
	uint64_t lba = 0;

	/* pieces of at most max_append_bytes: 3 + 3 + 1 LBAs */
	ck_assert_int_eq(p2z_dev_append(dev, 2, buf, 7 * LBA, &lba, 0),
			 7 * LBA);
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
	ck_assert_int_eq(p2z_dev_append(dev, 0, buf, 16 * LBA, &lba, 0),
			 16 * LBA);
	ck_assert_uint_eq(fk.nr, 2);
	ck_assert_uint_eq(fk.len[0], XFER);
	/* errors */
	ck_assert_int_eq(p2z_dev_append(dev, 4, buf, LBA, &lba, 0), -EINVAL);
	ck_assert_int_eq(p2z_dev_append(dev, 0, buf, 100, &lba, 0), -EINVAL);
	fk.dev.info.max_append_bytes = 0;
	ck_assert_int_eq(p2z_dev_append(dev, 0, buf, LBA, &lba, 0),
			 -EOPNOTSUPP);
	dev = fake_dev(&fake_ops);
	fk.fail_at = 1;
	fk.fail_ret = -EILSEQ;
	ck_assert_int_eq(p2z_dev_append(dev, 0, buf, 7 * LBA, &lba, 0), APPEND);
}
END_TEST

/*
 * Every piece of a split append must land right after the one before: a
 * piece that lands elsewhere (the zone moved under it) leaves the data
 * somewhere else than the one LBA returned says, and fails the append.
 */
START_TEST(test_append_split_pieces_contiguous)
{
	struct p2z_dev *dev = fake_dev(&fake_ops);
	uint64_t lba = 0;

	ck_assert_int_eq(p2z_dev_append(dev, 1, buf, 7 * LBA, &lba, 0),
			 7 * LBA);
	ck_assert_uint_eq(lba, 1000);
	ck_assert_uint_eq(fk.next_lba, 1007);
	/* the third piece lands 50 LBAs away */
	dev = fake_dev(&fake_ops);
	fk.stray_at = 2;
	lba = 0;
	ck_assert_int_eq(p2z_dev_append(dev, 1, buf, 7 * LBA, &lba, 0), -EIO);
	ck_assert_uint_eq(fk.nr, 3);
	ck_assert_uint_eq(dev->stats[P2Z_DEV_STAT_APPEND].nr_err, 1);
	/* the second */
	dev = fake_dev(&fake_ops);
	fk.stray_at = 1;
	ck_assert_int_eq(p2z_dev_append(dev, 1, buf, 7 * LBA, &lba, 0), -EIO);
	/* the first piece may land anywhere the backend accepts */
	dev = fake_dev(&fake_ops);
	fk.stray_at = 0;
	ck_assert_int_eq(p2z_dev_append(dev, 1, buf, 7 * LBA, &lba, 0),
			 7 * LBA);
	ck_assert_uint_eq(lba, 1050);
}
END_TEST

/*
 * P2Z_IO_FUA: a backend with FUA gets the flag on every piece and no flush;
 * one without gets no flag and one flush after the last piece, whose error
 * fails the write.
 */
START_TEST(test_fua_native_or_flush)
{
	struct p2z_dev *dev = fake_dev(&fake_fua_ops);
	uint64_t lba = 0;

	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, 17 * LBA, 0, P2Z_IO_FUA),
			 17 * LBA);
	ck_assert_uint_eq(fk.nr, 3);
	ck_assert_uint_eq(fk.flags[0], P2Z_IO_FUA);
	ck_assert_uint_eq(fk.flags[2], P2Z_IO_FUA);
	ck_assert_uint_eq(fk.nr_flush, 0);
	ck_assert_int_eq(p2z_dev_append(dev, 1, buf, 7 * LBA, &lba, P2Z_IO_FUA),
			 7 * LBA);
	ck_assert_uint_eq(fk.flags[5], P2Z_IO_FUA);
	ck_assert_uint_eq(fk.nr_flush, 0);

	dev = fake_dev(&fake_ops);
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, 17 * LBA, 0, P2Z_IO_FUA),
			 17 * LBA);
	ck_assert_uint_eq(fk.nr, 3);
	ck_assert_uint_eq(fk.flags[0], 0);
	ck_assert_uint_eq(fk.flags[2], 0);
	ck_assert_uint_eq(fk.nr_flush, 1);
	ck_assert_uint_eq(dev->stats[P2Z_DEV_STAT_FLUSH].nr, 1);
	ck_assert_uint_eq(dev->stats[P2Z_DEV_STAT_FUA].nr, 1);
	ck_assert_uint_eq(dev->stats[P2Z_DEV_STAT_FUA].bytes, 17 * LBA);
	ck_assert_int_eq(p2z_dev_append(dev, 1, buf, 7 * LBA, &lba, P2Z_IO_FUA),
			 7 * LBA);
	ck_assert_uint_eq(fk.nr_flush, 2);
	/* without the flag: no flush */
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, LBA, 0, 0), LBA);
	ck_assert_uint_eq(fk.nr_flush, 2);
	/* a failed flush fails the write with its errno */
	fk.flush_ret = -EIO;
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, LBA, 0, P2Z_IO_FUA), -EIO);
	ck_assert_uint_eq(fk.nr_flush, 3);
	/* a failed write is not flushed */
	fk.fail_at = (int)fk.nr;
	fk.fail_ret = -ENOSPC;
	ck_assert_int_eq(p2z_dev_pwrite(dev, buf, LBA, 0, P2Z_IO_FUA), -ENOSPC);
	ck_assert_uint_eq(fk.nr_flush, 3);
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

#ifdef P2Z_HAVE_NVME
/* ---- nvme_path.c: a path is what it names */

static char tdir[PATH_MAX];
static char tsys[PATH_MAX + 8];

static void tpath(char *buf, size_t size, const char *rel)
{
	ck_assert_int_lt(snprintf(buf, size, "%s/%s", tdir, rel), (int)size);
}

static void tmkdir(const char *rel)
{
	char p[PATH_MAX + 64];

	tpath(p, sizeof(p), rel);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void tsymlink(const char *target, const char *rel)
{
	char p[PATH_MAX + 64];

	tpath(p, sizeof(p), rel);
	ck_assert_int_eq(symlink(target, p), 0);
}

static void tcreate(const char *rel)
{
	char p[PATH_MAX + 64];
	int fd;

	tpath(p, sizeof(p), rel);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

/*
 * A sysfs tree of our own: a hidden disk nvme99n7 and nvme0n1 in
 * block/, and the device numbers of /dev/null (1:3) and /dev/zero (1:5)
 * leading to an NVMe generic device ng0n1 and to "zero".
 */
static void path_setup(void)
{
	p2z_check_mkdtemp(tdir, sizeof(tdir), "check_dev");
	snprintf(tsys, sizeof(tsys), "%s/sys", tdir);
	tmkdir("sys");
	tmkdir("sys/block");
	tmkdir("sys/block/nvme0n1");
	tmkdir("sys/block/nvme99n7");
	tmkdir("sys/devices");
	tmkdir("sys/devices/nvme0");
	tmkdir("sys/devices/nvme0/ng0n1");
	tmkdir("sys/devices/mem");
	tmkdir("sys/devices/mem/zero");
	tmkdir("sys/dev");
	tmkdir("sys/dev/char");
	tsymlink("../../devices/nvme0/ng0n1", "sys/dev/char/1:3");
	tsymlink("../../devices/mem/zero", "sys/dev/char/1:5");
	/* Files named like the host's NVMe devices, and links to them. */
	tmkdir("imgs");
	tmkdir("links");
	tmkdir("imgs/nvme1n1");
	tcreate("imgs/nvme0n1");
	tcreate("imgs/ng0n1");
	tsymlink("../imgs/nvme0n1", "links/nvme0n1");
	tsymlink("/dev/null", "links/ng9n9");
}

static void path_teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tdir);
	ck_assert_int_eq(system(cmd), 0);
}

static const struct {
	const char *path; /* relative to the test directory, or absolute */
	int ret;
	const char *name;
} classify_cases[] = {
	/* Regular files, a directory, links to them: never a namespace,
	 * whatever their names and whatever sysfs has under those names. */
	{ "imgs/nvme0n1", -ENODEV, NULL },
	{ "imgs/ng0n1", -ENODEV, NULL },
	{ "imgs/nvme1n1", -ENODEV, NULL },
	{ "links/nvme0n1", -ENODEV, NULL },
	/* A missing file elsewhere is missing, not the hidden nvme0n1. */
	{ "imgs/nvme99n7", -ENOENT, NULL },
	{ "nosuchdir/nvme0n1", -ENOENT, NULL },
	/* /dev/nvmeXnY without a node: the hidden disk, if sysfs has it. */
	{ "/dev/nvme99n7", P2Z_NVME_NODE_DISK, "nvme99n7" },
	{ "/dev/../dev/nvme99n7", P2Z_NVME_NODE_DISK, "nvme99n7" },
	{ "/dev/nvme98n7", -ENOENT, NULL },
	/* Device nodes: their number decides, not their name. */
	{ "/dev/null", P2Z_NVME_NODE_NG, "ng0n1" },
	{ "links/ng9n9", P2Z_NVME_NODE_NG, "ng0n1" },
	{ "/dev/zero", -ENODEV, NULL },
};

START_TEST(test_nvme_path_classify)
{
	char path[PATH_MAX + 64], name[NAME_MAX + 1] = "";
	const char *p = classify_cases[_i].path;
	struct stat st;
	int ret;

	if (!strcmp(p, "/dev/nvme99n7") && !stat(p, &st)) {
		fprintf(stderr,
			"check_dev: /dev/nvme99n7 exists: case skipped\n");
		return;
	}
	if (p[0] == '/')
		snprintf(path, sizeof(path), "%s", p);
	else
		tpath(path, sizeof(path), p);
	ret = p2z_nvme_path_classify(tsys, path, name, sizeof(name));
	ck_assert_msg(ret == classify_cases[_i].ret, "%s: %d, expected %d", p,
		      ret, classify_cases[_i].ret);
	if (classify_cases[_i].name)
		ck_assert_str_eq(name, classify_cases[_i].name);
}
END_TEST

/* With the real sysfs: /dev/null is no NVMe device, nor a file. */
START_TEST(test_nvme_path_real_sysfs)
{
	char path[PATH_MAX + 64], name[NAME_MAX + 1];

	ck_assert_int_eq(p2z_nvme_path_classify("/sys", "/dev/null", name,
						sizeof(name)),
			 -ENODEV);
	ck_assert_int_eq(p2z_nvme_path_probe("/dev/null"), 0);
	tpath(path, sizeof(path), "imgs/nvme0n1");
	ck_assert_int_eq(p2z_nvme_path_probe(path), 0);
	tpath(path, sizeof(path), "imgs/ng0n1");
	ck_assert_int_eq(p2z_nvme_path_probe(path), 0);
}
END_TEST
#endif

#ifdef P2Z_HAVE_ZBD
static void write_cache_file(const char *sys, const char *disk,
			     const char *mode)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/block/%s", sys, disk);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/block/%s/queue", sys, disk);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/block/%s/queue/write_cache", sys, disk);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", mode);
	ck_assert_int_eq(fclose(f), 0);
}

static void rm_write_cache_file(const char *sys, const char *disk)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/block/%s/queue/write_cache", sys, disk);
	unlink(p);
	snprintf(p, sizeof(p), "%s/block/%s/queue", sys, disk);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/block/%s", sys, disk);
	rmdir(p);
}

/* The zbd backend's volatile_cache: the queue's write_cache mode. */
START_TEST(test_zbd_volatile_cache)
{
	char dir[PATH_MAX], sys[PATH_MAX + 8], p[PATH_MAX + 64];

	p2z_check_mkdtemp(dir, sizeof(dir), "check_dev_wc");
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	ck_assert_int_eq(mkdir(sys, 0755), 0);
	snprintf(p, sizeof(p), "%s/block", sys);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	write_cache_file(sys, "sdb", "write back");
	write_cache_file(sys, "sdc", "write through");
	write_cache_file(sys, "sdd", "write-through?");
	ck_assert(p2z_zbd_volatile_cache(sys, "sdb"));
	ck_assert(!p2z_zbd_volatile_cache(sys, "sdc"));
	/* unknown or missing: volatile, flushes are never wrong */
	ck_assert(p2z_zbd_volatile_cache(sys, "sdd"));
	ck_assert(p2z_zbd_volatile_cache(sys, "sde"));
	rm_write_cache_file(sys, "sdb");
	rm_write_cache_file(sys, "sdc");
	rm_write_cache_file(sys, "sdd");
	rmdir(p);
	rmdir(sys);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST
#endif

#ifdef P2Z_HAVE_NVME
/*
 * An nvme append must land with all its LBAs within the zone's capacity,
 * not merely start inside the zone's size: zone at 1000, size 100, capacity
 * 80.
 */
START_TEST(test_nvme_append_fits_capacity)
{
	ck_assert(p2z_nvme_append_fits(1000, 80, 1000, 80));
	ck_assert(p2z_nvme_append_fits(1000, 80, 1072, 8));
	ck_assert(!p2z_nvme_append_fits(1000, 80, 1073, 8));
	ck_assert(!p2z_nvme_append_fits(1000, 80, 1080, 1));
	ck_assert(!p2z_nvme_append_fits(1000, 80, 1090, 4));
	ck_assert(!p2z_nvme_append_fits(1000, 80, 999, 1));
	ck_assert(!p2z_nvme_append_fits(1000, 80, 1000, 81));
	ck_assert(!p2z_nvme_append_fits(1000, 80, UINT64_MAX, 2));
}
END_TEST
#endif

static Suite *dev_suite(void)
{
	Suite *s = suite_create("dev");
	TCase *tc = tcase_create("dispatch");

	tcase_add_test(tc, test_pread_split_at_xfer);
	tcase_add_test(tc, test_pread_whole_when_backend_splits);
	tcase_add_test(tc, test_pread_errors);
	tcase_add_test(tc, test_pwrite_split_and_partial);
	tcase_add_test(tc, test_append_split_first_lba);
	tcase_add_test(tc, test_append_split_pieces_contiguous);
	tcase_add_test(tc, test_fua_native_or_flush);
	tcase_add_test(tc, test_zone_range_checks);
	tcase_add_test(tc, test_open_selection_errors);
#ifdef P2Z_HAVE_ZBD
	tcase_add_test(tc, test_zbd_volatile_cache);
#endif
	suite_add_tcase(s, tc);
#ifdef P2Z_HAVE_NVME
	tc = tcase_create("nvme_path");
	tcase_add_checked_fixture(tc, path_setup, path_teardown);
	tcase_add_loop_test(tc, test_nvme_path_classify, 0,
			    sizeof(classify_cases) / sizeof(classify_cases[0]));
	tcase_add_test(tc, test_nvme_path_real_sysfs);
	tcase_add_test(tc, test_nvme_append_fits_capacity);
	suite_add_tcase(s, tc);
#endif
	return s;
}

int main(void)
{
	return p2z_check_run(dev_suite());
}
