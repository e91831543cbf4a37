// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the emu image format (emu_image.c): validation of damaged
 * images, creation parameters, refusing to overwrite, file mode.
 * Images live in a fresh mkdtemp() directory per test (emu_check.h).
 * P2Z_SHORT=1 shortens the heavy loops (valgrind).
 */

#include "emu_check.h"

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

/* ---- suite */

static Suite *emu_image_suite(void)
{
	Suite *s = suite_create("emu_image");
	TCase *tc;

	tc = tcase(s, "image");
	tcase_add_loop_test(tc, test_open_corrupt_table, 0,
			    ARRAY_SIZE(corruptions));
	tcase_add_loop_test(tc, test_create_bad_params, 0, 16);
	tcase_add_test(tc, test_create_good_params);
	tcase_add_test(tc, test_create_existing);
	tcase_add_test(tc, test_create_force_refuses);
	tcase_add_test(tc, test_create_mode);
	return s;
}

int main(void)
{
	return p2z_check_run(emu_image_suite());
}
