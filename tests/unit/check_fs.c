// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The parts of the filesystem that need no FUSE request, on the emu
 * backend: the tree of names (dir.c), the po2 view (po2.c) and the values
 * and lists of the extended attributes (xattr.c), with their exact
 * results and errnos; and the buffer pools of fs_file.c and fs_loop.c.
 *
 * Each test builds its own sparse image under $TMPDIR (or /tmp). The main
 * geometry is npo2 with conventional zones: 512-byte LBAs, zones of 96 KiB
 * (po2 size 128 KiB) with a capacity of 80 KiB, zones 0 and 1
 * conventional, zones 2 to 5 sequential.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_priv.h"
#include "p2z_check.h"
#include "po2zfs/dev.h"
#include "po2zfs/emu.h"
#include "po2zfs/fs.h"
#include "po2zfs/po2.h"
#include "po2zfs/zone.h"

#define KiB (UINT64_C(1) << 10)

static const struct p2z_emu_params geom_cnv = {
	.lba_bytes = 512,
	.zone_bytes = 96 * KiB,
	.cap_bytes = 80 * KiB,
	.nr_zones = 6,
	.nr_cnv_zones = 2,
	.max_open = 3,
	.max_active = 4,
	.max_append_bytes = 32 * KiB,
};
/* No conventional zones. */
static const struct p2z_emu_params geom_seq = {
	.lba_bytes = 4096,
	.zone_bytes = 80 * KiB,
	.cap_bytes = 64 * KiB,
	.nr_zones = 4,
	.max_append_bytes = 16 * KiB,
};
/* Capacity = zone size = po2 size: no gaps in the po2 view. */
static const struct p2z_emu_params geom_po2 = {
	.lba_bytes = 4096,
	.zone_bytes = 64 * KiB,
	.cap_bytes = 64 * KiB,
	.nr_zones = 3,
	.max_append_bytes = 16 * KiB,
};

#define PO2 (128 * KiB) /* po2 zone size of geom_cnv */
#define INO(zidx) (P2Z_FS_INO_ZONE0 + (zidx))

static struct {
	char dir[256];
	char path[300];
	struct p2z_dev *dev;
	struct p2z_zone_table *zt;
} fx;

static void fx_setup(const struct p2z_emu_params *p)
{
	struct p2z_zone_opts o = { .errors = P2Z_ERRORS_REPAIR };
	p2z_check_mkdtemp(fx.dir, sizeof(fx.dir), "check_fs");
	snprintf(fx.path, sizeof(fx.path), "%s/img", fx.dir);
	ck_assert_int_eq(p2z_emu_create(fx.path, p, false), 0);
	ck_assert_int_eq(p2z_dev_open(fx.path, "emu", 0, &fx.dev), 0);
	ck_assert_int_eq(p2z_zone_table_open(fx.dev, &o, &fx.zt), 0);
}

static void fx_teardown(void)
{
	p2z_zone_table_close(fx.zt);
	p2z_dev_close(fx.dev);
	if (fx.path[0])
		unlink(fx.path);
	if (fx.dir[0])
		rmdir(fx.dir);
	memset(&fx, 0, sizeof(fx));
}

static void *buf_alloc(size_t len)
{
	void *buf = NULL;

	ck_assert_int_eq(posix_memalign(&buf, P2Z_ZONE_BUF_ALIGN, len), 0);
	return buf;
}

/* len bytes of value v (never 0), written at ofs of zone zidx. */
static void zone_put(uint64_t zidx, uint64_t ofs, size_t len, int v)
{
	void *buf = buf_alloc(len);

	memset(buf, v, len);
	ck_assert_int_eq(p2z_zone_write(fx.zt, zidx, buf, len, ofs, false, 0),
			 (ssize_t)len);
	free(buf);
}

static bool all_of(const char *p, size_t len, int v)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (char)v)
			return false;
	return true;
}

static uint64_t zone_size(uint64_t zidx)
{
	struct p2z_zone_state zs;

	ck_assert_int_eq(p2z_zone_get_state(fx.zt, zidx, false, &zs), 0);
	return zs.size_bytes;
}

/* ---- dir.c ---- */

START_TEST(test_dir_nr_files_cnv)
{
	fx_setup(&geom_cnv);
	ck_assert_uint_eq(p2z_dir_nr_files(fx.zt, P2Z_FS_INO_ROOT), 3);
	ck_assert_uint_eq(p2z_dir_nr_files(fx.zt, P2Z_FS_INO_SEQ), 4);
	ck_assert_uint_eq(p2z_dir_nr_files(fx.zt, P2Z_FS_INO_CNV), 2);
	ck_assert_uint_eq(p2z_dir_nr_files(fx.zt, P2Z_FS_INO_PO2), 0);
	ck_assert_uint_eq(p2z_dir_nr_files(fx.zt, INO(2)), 0);
	/* zonefs: 4 + 2 zone files, seq/ and cnv/ */
	ck_assert_uint_eq(p2z_dir_nr_inodes(fx.zt), 8);
}
END_TEST

START_TEST(test_dir_nr_files_seq)
{
	fx_setup(&geom_seq);
	ck_assert_uint_eq(p2z_dir_nr_files(fx.zt, P2Z_FS_INO_ROOT), 2);
	ck_assert_uint_eq(p2z_dir_nr_files(fx.zt, P2Z_FS_INO_SEQ), 4);
	ck_assert_uint_eq(p2z_dir_nr_files(fx.zt, P2Z_FS_INO_CNV), 0);
	ck_assert_uint_eq(p2z_dir_nr_inodes(fx.zt), 5);
}
END_TEST

/* zonefs' numbers: zidx for zone files, nr.. for the rest, zone 0 last. */
START_TEST(test_dir_st_ino)
{
	fx_setup(&geom_cnv);
	ck_assert_uint_eq(p2z_dir_st_ino(fx.zt, P2Z_FS_INO_ROOT), 6);
	ck_assert_uint_eq(p2z_dir_st_ino(fx.zt, P2Z_FS_INO_CNV), 7);
	ck_assert_uint_eq(p2z_dir_st_ino(fx.zt, P2Z_FS_INO_SEQ), 8);
	ck_assert_uint_eq(p2z_dir_st_ino(fx.zt, P2Z_FS_INO_PO2), 9);
	ck_assert_uint_eq(p2z_dir_st_ino(fx.zt, INO(0)), 10);
	ck_assert_uint_eq(p2z_dir_st_ino(fx.zt, INO(1)), 1);
	ck_assert_uint_eq(p2z_dir_st_ino(fx.zt, INO(5)), 5);
}
END_TEST

static const struct lookup_case {
	bool cnv; /* geom_cnv, else geom_seq */
	uint64_t dir;
	const char *name;
	int ret;
	uint64_t ino;
} lookup_cases[] = {
	{ true, P2Z_FS_INO_ROOT, "seq", 0, P2Z_FS_INO_SEQ },
	{ true, P2Z_FS_INO_ROOT, "cnv", 0, P2Z_FS_INO_CNV },
	{ true, P2Z_FS_INO_ROOT, "po2", 0, P2Z_FS_INO_PO2 },
	{ true, P2Z_FS_INO_ROOT, "0", -ENOENT, 0 },
	{ true, P2Z_FS_INO_ROOT, "seq/0", -ENOENT, 0 },
	{ true, P2Z_FS_INO_ROOT, "", -ENOENT, 0 },
	{ false, P2Z_FS_INO_ROOT, "cnv", -ENOENT, 0 },
	{ false, P2Z_FS_INO_ROOT, "seq", 0, P2Z_FS_INO_SEQ },
	{ true, P2Z_FS_INO_SEQ, "0", 0, INO(2) },
	{ true, P2Z_FS_INO_SEQ, "3", 0, INO(5) },
	{ true, P2Z_FS_INO_SEQ, "4", -ENOENT, 0 },
	{ true, P2Z_FS_INO_SEQ, "01", -ENOENT, 0 },
	{ true, P2Z_FS_INO_SEQ, "00", -ENOENT, 0 },
	{ true, P2Z_FS_INO_SEQ, "", -ENOENT, 0 },
	{ true, P2Z_FS_INO_SEQ, "-1", -ENOENT, 0 },
	{ true, P2Z_FS_INO_SEQ, "+1", -ENOENT, 0 },
	{ true, P2Z_FS_INO_SEQ, " 1", -ENOENT, 0 },
	{ true, P2Z_FS_INO_SEQ, "1 ", -ENOENT, 0 },
	{ true, P2Z_FS_INO_SEQ, "1a", -ENOENT, 0 },
	{ true, P2Z_FS_INO_SEQ, "18446744073709551617", -ENOENT, 0 },
	{ true, P2Z_FS_INO_SEQ, "99999999999999999999999", -ENOENT, 0 },
	{ true, P2Z_FS_INO_CNV, "0", 0, INO(0) },
	{ true, P2Z_FS_INO_CNV, "1", 0, INO(1) },
	{ true, P2Z_FS_INO_CNV, "2", -ENOENT, 0 },
	{ false, P2Z_FS_INO_SEQ, "0", 0, INO(0) },
	{ false, P2Z_FS_INO_SEQ, "3", 0, INO(3) },
	{ false, P2Z_FS_INO_CNV, "0", -ENOENT, 0 },
	{ true, P2Z_FS_INO_PO2, "0", -ENOTDIR, 0 },
	{ true, INO(2), "0", -ENOTDIR, 0 },
};

START_TEST(test_dir_lookup_table)
{
	const struct lookup_case *c = &lookup_cases[_i];
	uint64_t ino = UINT64_MAX;

	fx_setup(c->cnv ? &geom_cnv : &geom_seq);
	ck_assert_int_eq(p2z_dir_lookup(fx.zt, c->dir, c->name, &ino), c->ret);
	ck_assert_uint_eq(ino, c->ret ? UINT64_MAX : c->ino);
}
END_TEST

struct dir_ent {
	const char *name;
	uint64_t ino;
	bool is_dir;
};

/* Every entry of directory dir, then -ENOENT. */
static void check_entries(uint64_t dir, const struct dir_ent *want, int nr)
{
	char name[32];
	uint64_t ino;
	bool is_dir;
	int i;

	for (i = 0; i < nr; i++) {
		ck_assert_int_eq(p2z_dir_entry(fx.zt, dir, (uint64_t)i, name,
					       sizeof(name), &ino, &is_dir),
				 0);
		ck_assert_str_eq(name, want[i].name);
		ck_assert_uint_eq(ino, want[i].ino);
		ck_assert_int_eq(is_dir, want[i].is_dir);
	}
	ck_assert_int_eq(p2z_dir_entry(fx.zt, dir, (uint64_t)nr, name,
				       sizeof(name), &ino, &is_dir),
			 -ENOENT);
	ck_assert_int_eq(p2z_dir_entry(fx.zt, dir, UINT64_MAX, name,
				       sizeof(name), &ino, &is_dir),
			 -ENOENT);
}

START_TEST(test_dir_entry_cnv)
{
	static const struct dir_ent root[] = {
		{ ".", P2Z_FS_INO_ROOT, true },
		{ "..", P2Z_FS_INO_ROOT, true },
		{ "seq", P2Z_FS_INO_SEQ, true },
		{ "cnv", P2Z_FS_INO_CNV, true },
		{ "po2", P2Z_FS_INO_PO2, false },
	};
	static const struct dir_ent seq[] = {
		{ ".", P2Z_FS_INO_SEQ, true }, { "..", P2Z_FS_INO_ROOT, true },
		{ "0", INO(2), false },	       { "1", INO(3), false },
		{ "2", INO(4), false },	       { "3", INO(5), false },
	};
	static const struct dir_ent cnv[] = {
		{ ".", P2Z_FS_INO_CNV, true },
		{ "..", P2Z_FS_INO_ROOT, true },
		{ "0", INO(0), false },
		{ "1", INO(1), false },
	};

	fx_setup(&geom_cnv);
	check_entries(P2Z_FS_INO_ROOT, root, ARRAY_SIZE(root));
	check_entries(P2Z_FS_INO_SEQ, seq, ARRAY_SIZE(seq));
	check_entries(P2Z_FS_INO_CNV, cnv, ARRAY_SIZE(cnv));
}
END_TEST

START_TEST(test_dir_entry_seq)
{
	static const struct dir_ent root[] = {
		{ ".", P2Z_FS_INO_ROOT, true },
		{ "..", P2Z_FS_INO_ROOT, true },
		{ "seq", P2Z_FS_INO_SEQ, true },
		{ "po2", P2Z_FS_INO_PO2, false },
	};
	static const struct dir_ent cnv[] = {
		{ ".", P2Z_FS_INO_CNV, true },
		{ "..", P2Z_FS_INO_ROOT, true },
	};

	fx_setup(&geom_seq);
	check_entries(P2Z_FS_INO_ROOT, root, ARRAY_SIZE(root));
	check_entries(P2Z_FS_INO_CNV, cnv, ARRAY_SIZE(cnv));
}
END_TEST

/* Names are cut at name_len - 1 bytes, never overrun. */
START_TEST(test_dir_entry_short_name)
{
	char name[3] = { 'x', 'x', 'x' };
	uint64_t ino;
	bool is_dir;

	fx_setup(&geom_cnv);
	ck_assert_int_eq(p2z_dir_entry(fx.zt, P2Z_FS_INO_ROOT, 2, name, 2, &ino,
				       &is_dir),
			 0);
	ck_assert_str_eq(name, "s");
	ck_assert_int_eq(name[2], 'x');
	ck_assert_uint_eq(ino, P2Z_FS_INO_SEQ);
}
END_TEST

/* ---- po2.c ---- */

/* Data up to the file size, zeros after it and in the gap; never 0xee. */
START_TEST(test_po2_read_layout)
{
	char *buf = buf_alloc(PO2);
	uint64_t err = UINT64_MAX;

	fx_setup(&geom_cnv);
	zone_put(0, 4 * KiB, 4 * KiB, 0x11); /* cnv/0 */
	zone_put(2, 0, 8 * KiB, 0x22); /* seq/0 */

	memset(buf, 0xee, PO2);
	ck_assert_int_eq(p2z_po2_read(fx.zt, buf, PO2, 0, &err), PO2);
	ck_assert(all_of(buf, 4 * KiB, 0));
	ck_assert(all_of(buf + 4 * KiB, 4 * KiB, 0x11));
	ck_assert(all_of(buf + 8 * KiB, PO2 - 8 * KiB, 0));

	memset(buf, 0xee, PO2);
	ck_assert_int_eq(p2z_po2_read(fx.zt, buf, PO2, 2 * PO2, &err), PO2);
	ck_assert(all_of(buf, 8 * KiB, 0x22));
	ck_assert(all_of(buf + 8 * KiB, PO2 - 8 * KiB, 0));
	ck_assert_uint_eq(err, UINT64_MAX);
	free(buf);
}
END_TEST

/* A read crossing a po2 boundary: the gap of zone 1, then zone 2's data. */
START_TEST(test_po2_read_crossing)
{
	char *buf = buf_alloc(16 * KiB);
	uint64_t err = UINT64_MAX;

	fx_setup(&geom_cnv);
	zone_put(2, 0, 8 * KiB, 0x22);
	memset(buf, 0xee, 16 * KiB);
	ck_assert_int_eq(p2z_po2_read(fx.zt, buf, 12 * KiB, 2 * PO2 - 4 * KiB,
				      &err),
			 12 * KiB);
	ck_assert(all_of(buf, 4 * KiB, 0));
	ck_assert(all_of(buf + 4 * KiB, 8 * KiB, 0x22));
	ck_assert(all_of(buf + 12 * KiB, 4 * KiB, (char)0xee));
	free(buf);
}
END_TEST

/* Cut at the end of the view; nothing at or past it. */
START_TEST(test_po2_read_end)
{
	char *buf = buf_alloc(16 * KiB);
	uint64_t err = UINT64_MAX;

	fx_setup(&geom_cnv);
	ck_assert_int_eq(p2z_po2_read(fx.zt, buf, 16 * KiB, 6 * PO2 - 4 * KiB,
				      &err),
			 4 * KiB);
	ck_assert_int_eq(p2z_po2_read(fx.zt, buf, 16 * KiB, 6 * PO2, &err), 0);
	ck_assert_int_eq(p2z_po2_read(fx.zt, buf, 16 * KiB, UINT64_MAX, &err),
			 0);
	ck_assert_uint_eq(err, UINT64_MAX);
	free(buf);
}
END_TEST

/* An offline zone fails the read with EIO and names itself. */
START_TEST(test_po2_read_offline)
{
	char *buf = buf_alloc(8 * KiB);
	uint64_t err = UINT64_MAX;

	fx_setup(&geom_cnv);
	zone_put(3, 0, 8 * KiB, 0x33);
	ck_assert_int_eq(p2z_emu_set_fault(fx.path, 3, P2Z_EMU_FAULT_OFFLINE),
			 0);
	ck_assert_int_eq(p2z_po2_read(fx.zt, buf, 8 * KiB, 3 * PO2, &err),
			 -EIO);
	ck_assert_uint_eq(err, 3);
	/* Now known offline: refused without asking the device. */
	err = UINT64_MAX;
	ck_assert_int_eq(p2z_po2_read(fx.zt, buf, 8 * KiB, 3 * PO2, &err),
			 -EIO);
	ck_assert_uint_eq(err, 3);
	/* The neighbours still read. */
	err = UINT64_MAX;
	ck_assert_int_eq(p2z_po2_read(fx.zt, buf, 8 * KiB, 2 * PO2, &err),
			 8 * KiB);
	ck_assert_uint_eq(err, UINT64_MAX);
	free(buf);
}
END_TEST

static const struct po2_write_case {
	uint64_t ofs;
	size_t len;
	ssize_t ret;
	uint64_t zidx; /* UINT64_MAX: not set */
	uint64_t size2; /* size of zone 2 after (8 KiB before) */
} po2_write_cases[] = {
	/* at zone 2's write pointer */
	{ 2 * PO2 + 8 * KiB, 4 * KiB, 4 * KiB, 2, 12 * KiB },
	/* not at it */
	{ 2 * PO2 + 12 * KiB, 4 * KiB, -EINVAL, 2, 8 * KiB },
	{ 2 * PO2, 4 * KiB, -EINVAL, 2, 8 * KiB },
	/* in the gap past the capacity, or partly */
	{ 2 * PO2 + 80 * KiB, 4 * KiB, -EIO, UINT64_MAX, 8 * KiB },
	{ 2 * PO2 + 76 * KiB, 8 * KiB, -EIO, UINT64_MAX, 8 * KiB },
	{ 2 * PO2 - 4 * KiB, 8 * KiB, -EIO, UINT64_MAX, 8 * KiB },
	/* a conventional zone: anywhere below its capacity (96 KiB) */
	{ 1 * PO2 + 64 * KiB, 4 * KiB, 4 * KiB, 1, 8 * KiB },
	{ 1 * PO2 + 96 * KiB, 4 * KiB, -EIO, UINT64_MAX, 8 * KiB },
	/* at or past the end of the view */
	{ 6 * PO2, 4 * KiB, -EFBIG, UINT64_MAX, 8 * KiB },
	{ UINT64_MAX - 4095, 4 * KiB, -EFBIG, UINT64_MAX, 8 * KiB },
	/* nothing */
	{ 2 * PO2 + 8 * KiB, 0, 0, UINT64_MAX, 8 * KiB },
};

START_TEST(test_po2_write_table)
{
	const struct po2_write_case *c = &po2_write_cases[_i];
	char *buf = buf_alloc(8 * KiB);
	uint64_t zidx = UINT64_MAX;

	fx_setup(&geom_cnv);
	zone_put(2, 0, 8 * KiB, 0x22);
	memset(buf, 0x44, 8 * KiB);
	ck_assert_int_eq(p2z_po2_write(fx.zt, buf, c->len, c->ofs, 0, &zidx),
			 c->ret);
	ck_assert_uint_eq(zidx, c->zidx);
	ck_assert_uint_eq(zone_size(2), c->size2);
	free(buf);
}
END_TEST

/* What the write put there reads back, in both views. */
START_TEST(test_po2_write_read_back)
{
	char *buf = buf_alloc(8 * KiB);
	uint64_t zidx = UINT64_MAX, err = UINT64_MAX;

	fx_setup(&geom_cnv);
	memset(buf, 0x55, 8 * KiB);
	ck_assert_int_eq(p2z_po2_write(fx.zt, buf, 8 * KiB, 4 * PO2, 0, &zidx),
			 8 * KiB);
	ck_assert_uint_eq(zidx, 4);
	memset(buf, 0, 8 * KiB);
	ck_assert_int_eq(p2z_zone_read(fx.zt, 4, buf, 8 * KiB, 0), 8 * KiB);
	ck_assert(all_of(buf, 8 * KiB, 0x55));
	memset(buf, 0, 8 * KiB);
	ck_assert_int_eq(p2z_po2_read(fx.zt, buf, 8 * KiB, 4 * PO2, &err),
			 8 * KiB);
	ck_assert(all_of(buf, 8 * KiB, 0x55));
	free(buf);
}
END_TEST

/* Without gaps, a write crossing into the next zone is cut at its end. */
START_TEST(test_po2_write_cut_at_zone_end)
{
	char *buf = buf_alloc(8 * KiB);
	uint64_t zidx = UINT64_MAX;

	fx_setup(&geom_po2);
	zone_put(0, 0, 60 * KiB, 0x66);
	memset(buf, 0x77, 8 * KiB);
	ck_assert_int_eq(p2z_po2_write(fx.zt, buf, 8 * KiB, 60 * KiB, 0, &zidx),
			 4 * KiB);
	ck_assert_uint_eq(zidx, 0);
	ck_assert_uint_eq(zone_size(0), 64 * KiB);
	ck_assert_uint_eq(zone_size(1), 0);
	/* The zone's rules: 60 KiB is no longer its write pointer. */
	ck_assert_int_eq(p2z_po2_write(fx.zt, buf, 4 * KiB, 64 * KiB - 4 * KiB,
				       0, &zidx),
			 -EINVAL);
	free(buf);
}
END_TEST

/* ---- xattr.c ---- */

static const char zone_list[] =
	"user.zone.index\0user.zone.start\0user.zone.po2_start\0"
	"user.zone.capacity\0user.zone.size\0user.zone.wp\0user.zone.cond\0"
	"user.zone.type";
static const char dev_list[] =
	"user.dev.backend\0user.dev.path\0user.dev.lba_size\0"
	"user.dev.nr_zones\0user.dev.zone_size\0user.dev.po2_zone_size\0"
	"user.dev.max_open\0user.dev.max_active\0user.dev.max_append\0"
	"user.dev.stats";

START_TEST(test_xattr_list)
{
	char list[P2Z_XATTR_LIST_MAX];

	ck_assert_int_eq(p2z_xattr_list(P2Z_XATTR_ZONE, list),
			 sizeof(zone_list));
	ck_assert_mem_eq(list, zone_list, sizeof(zone_list));
	ck_assert_int_eq(p2z_xattr_list(P2Z_XATTR_DEV, list), sizeof(dev_list));
	ck_assert_mem_eq(list, dev_list, sizeof(dev_list));
	ck_assert_int_eq(p2z_xattr_list(P2Z_XATTR_NONE, list), 0);
}
END_TEST

static const struct xattr_case {
	enum p2z_xattr_owner owner;
	uint64_t zidx;
	const char *name;
	const char *val; /* NULL: fails with ret */
	int ret;
} xattr_cases[] = {
	/* seq/0, 8 KiB written */
	{ P2Z_XATTR_ZONE, 2, "user.zone.index", "2", 0 },
	{ P2Z_XATTR_ZONE, 2, "user.zone.start", "196608", 0 },
	{ P2Z_XATTR_ZONE, 2, "user.zone.po2_start", "262144", 0 },
	{ P2Z_XATTR_ZONE, 2, "user.zone.capacity", "81920", 0 },
	{ P2Z_XATTR_ZONE, 2, "user.zone.size", "98304", 0 },
	{ P2Z_XATTR_ZONE, 2, "user.zone.wp", "8192", 0 },
	{ P2Z_XATTR_ZONE, 2, "user.zone.cond", "implicit-open", 0 },
	{ P2Z_XATTR_ZONE, 2, "user.zone.type", "seq", 0 },
	/* seq/1, empty */
	{ P2Z_XATTR_ZONE, 3, "user.zone.wp", "0", 0 },
	{ P2Z_XATTR_ZONE, 3, "user.zone.cond", "empty", 0 },
	/* seq/2, finished */
	{ P2Z_XATTR_ZONE, 4, "user.zone.wp", "81920", 0 },
	{ P2Z_XATTR_ZONE, 4, "user.zone.cond", "full", 0 },
	/* cnv/1 */
	{ P2Z_XATTR_ZONE, 1, "user.zone.index", "1", 0 },
	{ P2Z_XATTR_ZONE, 1, "user.zone.start", "98304", 0 },
	{ P2Z_XATTR_ZONE, 1, "user.zone.po2_start", "131072", 0 },
	{ P2Z_XATTR_ZONE, 1, "user.zone.capacity", "98304", 0 },
	{ P2Z_XATTR_ZONE, 1, "user.zone.wp", "0", 0 },
	{ P2Z_XATTR_ZONE, 1, "user.zone.cond", "not-wp", 0 },
	{ P2Z_XATTR_ZONE, 1, "user.zone.type", "cnv", 0 },
	/* the device */
	{ P2Z_XATTR_DEV, 0, "user.dev.backend", "emu", 0 },
	{ P2Z_XATTR_DEV, 0, "user.dev.lba_size", "512", 0 },
	{ P2Z_XATTR_DEV, 0, "user.dev.nr_zones", "6", 0 },
	{ P2Z_XATTR_DEV, 0, "user.dev.zone_size", "98304", 0 },
	{ P2Z_XATTR_DEV, 0, "user.dev.po2_zone_size", "131072", 0 },
	{ P2Z_XATTR_DEV, 0, "user.dev.max_open", "3", 0 },
	{ P2Z_XATTR_DEV, 0, "user.dev.max_active", "4", 0 },
	{ P2Z_XATTR_DEV, 0, "user.dev.max_append", "32768", 0 },
	/* none of these */
	{ P2Z_XATTR_DEV, 0, P2Z_XATTR_STATS, NULL, -ENODATA },
	{ P2Z_XATTR_DEV, 0, "user.zone.index", NULL, -ENODATA },
	{ P2Z_XATTR_ZONE, 2, "user.dev.backend", NULL, -ENODATA },
	{ P2Z_XATTR_ZONE, 2, "user.zone.indexx", NULL, -ENODATA },
	{ P2Z_XATTR_ZONE, 2, "user.zone", NULL, -ENODATA },
	{ P2Z_XATTR_ZONE, 2, "", NULL, -ENODATA },
	{ P2Z_XATTR_NONE, 0, "user.zone.index", NULL, -ENODATA },
	{ P2Z_XATTR_NONE, 0, "user.dev.backend", NULL, -ENODATA },
	{ P2Z_XATTR_ZONE, 6, "user.zone.index", NULL, -EINVAL },
	{ P2Z_XATTR_ZONE, UINT64_MAX, "user.zone.wp", NULL, -EINVAL },
};

START_TEST(test_xattr_get_table)
{
	const struct xattr_case *c = &xattr_cases[_i];
	struct p2z_zone_state zs;
	char val[P2Z_XATTR_VALUE_MAX];
	ssize_t ret;

	fx_setup(&geom_cnv);
	zone_put(2, 0, 8 * KiB, 0x22);
	ck_assert_int_eq(p2z_zone_get_state(fx.zt, 4, false, &zs), 0);
	ck_assert_int_eq(p2z_zone_truncate(fx.zt, 4, zs.cap_bytes), 0);
	ret = p2z_xattr_get(fx.zt, c->owner, c->zidx, c->name, val);
	if (!c->val) {
		ck_assert_int_eq(ret, c->ret);
		return;
	}
	ck_assert_int_eq(ret, strlen(c->val));
	val[ret] = '\0';
	ck_assert_str_eq(val, c->val);
}
END_TEST

START_TEST(test_xattr_dev_path)
{
	char val[P2Z_XATTR_VALUE_MAX];
	ssize_t ret;

	fx_setup(&geom_cnv);
	ret = p2z_xattr_get(fx.zt, P2Z_XATTR_DEV, 0, "user.dev.path", val);
	ck_assert_int_eq(ret, strlen(fx.path));
	ck_assert_mem_eq(val, fx.path, (size_t)ret);
}
END_TEST

/*
 * user.zone.cond asks the device: with 3 open zones at most, the device
 * closes the oldest implicitly open zone by itself when a fourth is
 * written, which the zone table does not see.
 */
START_TEST(test_xattr_cond_from_device)
{
	char val[P2Z_XATTR_VALUE_MAX];
	struct p2z_zone_state zs;
	uint64_t zidx;

	fx_setup(&geom_cnv);
	for (zidx = 2; zidx <= 5; zidx++)
		zone_put(zidx, 0, 4 * KiB, 0x22);
	ck_assert_int_eq(p2z_zone_get_state(fx.zt, 2, false, &zs), 0);
	ck_assert_str_eq(p2z_zone_state_cond_name(&zs), "implicit-open");
	ck_assert_int_eq(p2z_xattr_get(fx.zt, P2Z_XATTR_ZONE, 2,
				       "user.zone.cond", val),
			 6);
	ck_assert_mem_eq(val, "closed", 6);
	ck_assert_int_eq(p2z_xattr_get(fx.zt, P2Z_XATTR_ZONE, 5,
				       "user.zone.cond", val),
			 13);
	ck_assert_mem_eq(val, "implicit-open", 13);
}
END_TEST

/* The condition is re-read from the device; every other value is cached. */
START_TEST(test_xattr_is_live)
{
	ck_assert(p2z_xattr_is_live(P2Z_XATTR_ZONE, "user.zone.cond"));
	ck_assert(!p2z_xattr_is_live(P2Z_XATTR_ZONE, "user.zone.wp"));
	ck_assert(!p2z_xattr_is_live(P2Z_XATTR_ZONE, "user.zone.condx"));
	ck_assert(!p2z_xattr_is_live(P2Z_XATTR_DEV, "user.zone.cond"));
	ck_assert(!p2z_xattr_is_live(P2Z_XATTR_NONE, "user.zone.cond"));
}
END_TEST

/* ---- buffer pools (fs_file.c, fs_loop.c) ---- */

/* A put caches up to max buffers, frees the rest; a get takes the last. */
START_TEST(test_pool_cache)
{
	struct p2z_fs_pool p;
	void *a, *b, *c;

	ck_assert_int_eq(p2z_fs_pool_init(&p, 8192, 4096, 2), 0);
	a = p2z_fs_pool_get(&p);
	b = p2z_fs_pool_get(&p);
	c = p2z_fs_pool_get(&p);
	ck_assert(a && b && c && a != b && b != c && a != c);
	ck_assert_uint_eq((uintptr_t)a % 4096, 0);
	ck_assert_uint_eq((uintptr_t)c % 4096, 0);
	memset(c, 0x5a, 8192); /* the whole size is there (ASan, valgrind) */
	p2z_fs_pool_put(&p, a);
	p2z_fs_pool_put(&p, b);
	p2z_fs_pool_put(&p, c); /* past max: freed */
	p2z_fs_pool_put(&p, NULL);
	ck_assert_uint_eq(p.nr, 2);
	ck_assert_ptr_eq(p2z_fs_pool_get(&p), b);
	ck_assert_ptr_eq(p2z_fs_pool_get(&p), a);
	ck_assert_uint_eq(p.nr, 0);
	p2z_fs_pool_put(&p, a);
	p2z_fs_pool_put(&p, b);
	p2z_fs_pool_destroy(&p); /* frees the cached ones */
}
END_TEST

START_TEST(test_pool_max_clamped)
{
	struct p2z_fs_pool p;

	ck_assert_int_eq(p2z_fs_pool_init(&p, 64, 64, 1000), 0);
	ck_assert_uint_eq(p.max, P2Z_FS_POOL_MAX);
	p2z_fs_pool_destroy(&p);
}
END_TEST

/*
 * The request buffers: a page for the headers, then what libfuse 3.14-3.16
 * reads at most (256 pages and 4 KiB), page-aligned.
 */
START_TEST(test_pool_rbufs)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct p2z_fs fs;
	void *b;

	memset(&fs, 0, sizeof(fs));
	fs.page_bytes = page; /* what p2z_fs_alloc() sets */
	ck_assert_int_eq(p2z_fs_rbufs_init(&fs), 0);
	ck_assert_uint_eq(fs.rbufs.align, page);
	ck_assert_uint_eq(fs.rbufs.bytes, page + 256 * page + 4096);
	b = p2z_fs_pool_get(&fs.rbufs);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq((uintptr_t)b % page, 0);
	p2z_fs_pool_put(&fs.rbufs, b);
	ck_assert_uint_eq(fs.rbufs.nr, 1);
	p2z_fs_pool_destroy(&fs.rbufs);
}
END_TEST

/* ---- suite ---- */

static TCase *tcase(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, NULL, fx_teardown);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *fs_suite(void)
{
	Suite *s = suite_create("fs");
	TCase *tc;

	tc = tcase(s, "dir_counts");
	tcase_add_test(tc, test_dir_nr_files_cnv);
	tcase_add_test(tc, test_dir_nr_files_seq);
	tcase_add_test(tc, test_dir_st_ino);

	tc = tcase(s, "dir_lookup");
	tcase_add_loop_test(tc, test_dir_lookup_table, 0,
			    ARRAY_SIZE(lookup_cases));

	tc = tcase(s, "dir_entry");
	tcase_add_test(tc, test_dir_entry_cnv);
	tcase_add_test(tc, test_dir_entry_seq);
	tcase_add_test(tc, test_dir_entry_short_name);

	tc = tcase(s, "po2_read");
	tcase_add_test(tc, test_po2_read_layout);
	tcase_add_test(tc, test_po2_read_crossing);
	tcase_add_test(tc, test_po2_read_end);
	tcase_add_test(tc, test_po2_read_offline);

	tc = tcase(s, "po2_write");
	tcase_add_loop_test(tc, test_po2_write_table, 0,
			    ARRAY_SIZE(po2_write_cases));
	tcase_add_test(tc, test_po2_write_read_back);
	tcase_add_test(tc, test_po2_write_cut_at_zone_end);

	tc = tcase(s, "xattr");
	tcase_add_test(tc, test_xattr_list);
	tcase_add_loop_test(tc, test_xattr_get_table, 0,
			    ARRAY_SIZE(xattr_cases));
	tcase_add_test(tc, test_xattr_dev_path);
	tcase_add_test(tc, test_xattr_cond_from_device);
	tcase_add_test(tc, test_xattr_is_live);

	tc = tcase(s, "pool");
	tcase_add_test(tc, test_pool_cache);
	tcase_add_test(tc, test_pool_max_clamped);
	tcase_add_test(tc, test_pool_rbufs);
	return s;
}

int main(void)
{
	return p2z_check_run(fs_suite());
}
