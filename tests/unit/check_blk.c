// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The ublk server's pure decisions (blk.c) on npo2 geometries: zone of a
 * sector, write targets and their refusals in the gap, read lengths
 * against the write pointer, zone report entries, errnos.
 */
#include <check.h>
#include <errno.h>
#include <linux/ublk_cmd.h>
#include <stdint.h>
#include <string.h>

#include "p2z_check.h"
#include "po2zfs/blk.h"

/* The guest's namespace: 96 MiB zones of 4 KiB LBAs, po2 128 MiB. */
static void geom_96m(struct p2z_geom *g)
{
	ck_assert_int_eq(p2z_geom_init(g, 4096, 24576, 16), 0);
}

START_TEST(test_zone_sectors_npo2)
{
	struct p2z_geom g;

	geom_96m(&g);
	ck_assert_uint_eq(p2z_blk_zone_sectors(&g), 262144);
	ck_assert_int_eq(p2z_geom_init(&g, 512, 3, 5), 0);
	ck_assert_uint_eq(p2z_blk_zone_sectors(&g), 4);
}
END_TEST

START_TEST(test_zone_of_cases)
{
	struct p2z_geom g;
	uint64_t z = 99;

	geom_96m(&g);
	ck_assert_int_eq(p2z_blk_zone_of(&g, 0, true, &z), 0);
	ck_assert_uint_eq(z, 0);
	ck_assert_int_eq(p2z_blk_zone_of(&g, 262144 * 3, true, &z), 0);
	ck_assert_uint_eq(z, 3);
	ck_assert_int_eq(p2z_blk_zone_of(&g, 262144 * 3 + 8, true, &z),
			 -EINVAL);
	ck_assert_int_eq(p2z_blk_zone_of(&g, 262144 * 3 + 8, false, &z), 0);
	ck_assert_uint_eq(z, 3);
	/* in the gap of zone 15: still zone 15 */
	ck_assert_int_eq(p2z_blk_zone_of(&g, 262144 * 16 - 1, false, &z), 0);
	ck_assert_uint_eq(z, 15);
	ck_assert_int_eq(p2z_blk_zone_of(&g, 262144 * 16, false, &z), -ERANGE);
	ck_assert_int_eq(p2z_blk_zone_of(&g, UINT64_MAX, false, &z), -ERANGE);
}
END_TEST

/* capacity 80 MiB = 20480 LBAs = 163840 sectors */
START_TEST(test_write_target_cases)
{
	struct p2z_blk_target t;
	struct p2z_geom g;
	uint64_t zs = 262144;

	geom_96m(&g);
	ck_assert_int_eq(p2z_blk_write_target(&g, zs, 8, 20480, &t), 0);
	ck_assert_uint_eq(t.zidx, 1);
	ck_assert_uint_eq(t.zone_ofs, 0);
	ck_assert_uint_eq(t.len, 4096);
	/* the last 4 KiB before the capacity */
	ck_assert_int_eq(p2z_blk_write_target(&g, zs + 163832, 8, 20480, &t),
			 0);
	ck_assert_uint_eq(t.zone_ofs, 163832ULL * 512);
	/* crossing the capacity, inside the gap, at the gap's end */
	ck_assert_int_eq(p2z_blk_write_target(&g, zs + 163832, 16, 20480, &t),
			 -EIO);
	ck_assert_int_eq(p2z_blk_write_target(&g, zs + 163840, 8, 20480, &t),
			 -EIO);
	ck_assert_int_eq(p2z_blk_write_target(&g, 2 * zs - 8, 8, 20480, &t),
			 -EIO);
	/* a full-size zone: crossing into the next zone is refused too */
	ck_assert_int_eq(p2z_blk_write_target(&g, zs - 8, 16, 24576, &t), -EIO);
	/* misaligned for 4 KiB LBAs, empty, past the end */
	ck_assert_int_eq(p2z_blk_write_target(&g, zs + 1, 8, 20480, &t),
			 -EINVAL);
	ck_assert_int_eq(p2z_blk_write_target(&g, zs, 1, 20480, &t), -EINVAL);
	ck_assert_int_eq(p2z_blk_write_target(&g, zs, 0, 20480, &t), -EINVAL);
	ck_assert_int_eq(p2z_blk_write_target(&g, 16 * zs, 8, 20480, &t),
			 -ERANGE);
	/* a capacity larger than the zone is not a zone */
	ck_assert_int_eq(p2z_blk_write_target(&g, zs, 8, 24577, &t), -EINVAL);
	/*
	 * The device's last LBA (a full-size zone: its native end is 96 MiB
	 * into the 128 MiB po2 zone), across it, the view's last sector.
	 */
	ck_assert_int_eq(
		p2z_blk_write_target(&g, 15 * zs + 196600, 8, 24576, &t), 0);
	ck_assert_uint_eq(t.zidx, 15);
	ck_assert_uint_eq(t.zone_ofs, 196600ULL * 512);
	ck_assert_int_eq(p2z_blk_write_target(&g, 15 * zs + 196600, 16, 24576,
					      &t),
			 -EIO);
	ck_assert_int_eq(p2z_blk_write_target(&g, 15 * zs + 196600,
					      UINT32_MAX - 7, 24576, &t),
			 -EIO);
	ck_assert_int_eq(p2z_blk_write_target(&g, 16 * zs - 8, 8, 24576, &t),
			 -EIO);
}
END_TEST

START_TEST(test_read_len_cases)
{
	struct p2z_geom_piece pc = { .zidx = 1, .zone_ofs = 8192, .len = 8192 };

	ck_assert_uint_eq(p2z_blk_read_len(&pc, 0), 0);
	ck_assert_uint_eq(p2z_blk_read_len(&pc, 8192), 0);
	ck_assert_uint_eq(p2z_blk_read_len(&pc, 12288), 4096);
	ck_assert_uint_eq(p2z_blk_read_len(&pc, 16384), 8192);
	ck_assert_uint_eq(p2z_blk_read_len(&pc, 1 << 20), 8192);
	pc.gap = true;
	ck_assert_uint_eq(p2z_blk_read_len(&pc, 1 << 20), 0);
}
END_TEST

START_TEST(test_report_cases)
{
	struct p2z_zone_info zi = {
		.start_lba = 2 * 24576,
		.cap_lba = 20480,
		.wp_lba = 2 * 24576 + 10,
		.type = P2Z_ZONE_TYPE_SEQ,
		.cond = P2Z_ZONE_COND_IMP_OPEN,
	};
	struct p2z_geom g;
	struct blk_zone bz;

	geom_96m(&g);
	ck_assert_int_eq(p2z_blk_report(&g, &zi, &bz), 0);
	ck_assert_uint_eq(bz.start, 2 * 262144);
	ck_assert_uint_eq(bz.len, 262144);
	ck_assert_uint_eq(bz.capacity, 163840);
	ck_assert_uint_eq(bz.wp, 2 * 262144 + 80);
	ck_assert_uint_eq(bz.type, BLK_ZONE_TYPE_SEQWRITE_REQ);
	ck_assert_uint_eq(bz.cond, BLK_ZONE_COND_IMP_OPEN);

	zi.cond = P2Z_ZONE_COND_FULL;
	zi.wp_lba = zi.start_lba + zi.cap_lba;
	ck_assert_int_eq(p2z_blk_report(&g, &zi, &bz), 0);
	ck_assert_uint_eq(bz.wp, 3 * 262144);
	ck_assert_uint_eq(bz.cond, BLK_ZONE_COND_FULL);

	zi.cond = P2Z_ZONE_COND_EMPTY;
	zi.wp_lba = zi.start_lba;
	ck_assert_int_eq(p2z_blk_report(&g, &zi, &bz), 0);
	ck_assert_uint_eq(bz.wp, bz.start);

	zi.type = P2Z_ZONE_TYPE_CNV;
	zi.cond = P2Z_ZONE_COND_NOT_WP;
	ck_assert_int_eq(p2z_blk_report(&g, &zi, &bz), 0);
	ck_assert_uint_eq(bz.type, BLK_ZONE_TYPE_CONVENTIONAL);
	ck_assert_uint_eq(bz.wp, 3 * 262144);
	ck_assert_uint_eq(bz.capacity, 262144);

	/* not a zone start, past the end, capacity beyond the zone */
	zi.start_lba = 2 * 24576 + 1;
	ck_assert_int_eq(p2z_blk_report(&g, &zi, &bz), -ERANGE);
	zi.start_lba = 16 * 24576;
	ck_assert_int_eq(p2z_blk_report(&g, &zi, &bz), -ERANGE);
	zi.start_lba = 0;
	zi.cap_lba = 24577;
	ck_assert_int_eq(p2z_blk_report(&g, &zi, &bz), -ERANGE);
}
END_TEST

/* zone 5 of the 96 MiB geometry starts at native LBA 122880, po2 163840 */
START_TEST(test_append_done_npo2)
{
	uint64_t sector = 0, wp = 0;
	struct p2z_geom g;

	geom_96m(&g);
	/* the zone start: its po2 start, never a shift by the native size */
	ck_assert_int_eq(
		p2z_blk_append_done(&g, 5, 20480, 122880, 2, &sector, &wp), 0);
	ck_assert_uint_eq(sector, 163840ULL * 8);
	ck_assert_uint_eq(wp, 2);
	/* mid-zone: offset kept, in 512-byte sectors */
	ck_assert_int_eq(p2z_blk_append_done(&g, 5, 20480, 122880 + 100, 4,
					     &sector, &wp),
			 0);
	ck_assert_uint_eq(sector, (163840ULL + 100) * 8);
	ck_assert_uint_eq(wp, 104);
	/* ends exactly at the capacity */
	ck_assert_int_eq(p2z_blk_append_done(&g, 5, 20480, 122880 + 20476, 4,
					     &sector, &wp),
			 0);
	ck_assert_uint_eq(wp, 20480);
	/* crosses the capacity, lands in another zone, before the zone */
	ck_assert_int_eq(p2z_blk_append_done(&g, 5, 20480, 122880 + 20477, 4,
					     &sector, &wp),
			 -EIO);
	ck_assert_int_eq(p2z_blk_append_done(&g, 5, 20480, 122880 + 24576, 1,
					     &sector, &wp),
			 -EIO);
	ck_assert_int_eq(p2z_blk_append_done(&g, 5, 20480, 122879, 1, &sector,
					     &wp),
			 -EIO);
	ck_assert_int_eq(p2z_blk_append_done(&g, 16, 20480, 16 * 24576, 1,
					     &sector, &wp),
			 -EIO);
	ck_assert_int_eq(p2z_blk_append_done(&g, 5, 20480, 122880, 0, &sector,
					     &wp),
			 -EIO);
	/* last zone of the view */
	ck_assert_int_eq(p2z_blk_append_done(&g, 15, 24576, 15 * 24576 + 24575,
					     1, &sector, &wp),
			 0);
	ck_assert_uint_eq(sector, (15ULL * 32768 + 24575) * 8);
	ck_assert_uint_eq(wp, 24576);
}
END_TEST

START_TEST(test_wp_ofs_cases)
{
	struct p2z_zone_info zi = {
		.start_lba = 122880,
		.cap_lba = 20480,
		.wp_lba = 122880 + 100,
		.type = P2Z_ZONE_TYPE_SEQ,
		.cond = P2Z_ZONE_COND_CLOSED,
	};

	ck_assert_uint_eq(p2z_blk_wp_ofs(&zi), 100);
	/* inputs by the write pointer rule (dev.h): never outside the zone */
	zi.wp_lba = 122880 + 20480;
	ck_assert_uint_eq(p2z_blk_wp_ofs(&zi), 20480);
	zi.cond = P2Z_ZONE_COND_EMPTY;
	zi.wp_lba = 122880;
	ck_assert_uint_eq(p2z_blk_wp_ofs(&zi), 0);
	zi.cond = P2Z_ZONE_COND_FULL;
	zi.wp_lba = 122880 + 20480;
	ck_assert_uint_eq(p2z_blk_wp_ofs(&zi), 20480);
	/* emu: a failed zone's pointer where it stood */
	zi.cond = P2Z_ZONE_COND_READONLY;
	zi.wp_lba = 122880 + 100;
	ck_assert_uint_eq(p2z_blk_wp_ofs(&zi), 100);
	zi.cond = P2Z_ZONE_COND_OFFLINE;
	ck_assert_uint_eq(p2z_blk_wp_ofs(&zi), 0);
}
END_TEST

START_TEST(test_zone_is_reset_by_all_cases)
{
	struct p2z_zone_info zi = { .type = P2Z_ZONE_TYPE_SEQ };
	static const struct {
		uint8_t cond;
		bool want;
	} cases[] = {
		{ P2Z_ZONE_COND_EMPTY, false },
		{ P2Z_ZONE_COND_IMP_OPEN, true },
		/* opened, nothing written: the wp is the zone start */
		{ P2Z_ZONE_COND_EXP_OPEN, true },
		{ P2Z_ZONE_COND_CLOSED, true },
		{ P2Z_ZONE_COND_FULL, true },
		{ P2Z_ZONE_COND_READONLY, false },
		{ P2Z_ZONE_COND_OFFLINE, false },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		zi.cond = cases[i].cond;
		ck_assert_int_eq(p2z_blk_zone_is_reset_by_all(&zi),
				 cases[i].want);
	}
	zi.type = P2Z_ZONE_TYPE_CNV;
	zi.cond = P2Z_ZONE_COND_NOT_WP;
	ck_assert(!p2z_blk_zone_is_reset_by_all(&zi));
}
END_TEST

START_TEST(test_zone_limit_cases)
{
	ck_assert_uint_eq(p2z_blk_zone_limit(0, 16), 0);
	ck_assert_uint_eq(p2z_blk_zone_limit(14, 16), 14);
	ck_assert_uint_eq(p2z_blk_zone_limit(16, 16), 16);
	ck_assert_uint_eq(p2z_blk_zone_limit(17, 16), 0);
	ck_assert_uint_eq(p2z_blk_zone_limit(UINT32_MAX, 4), 0);
}
END_TEST

/*
 * Reads and writes get the whole cap whatever the device's transfer limit
 * (a device taking 124 KiB no longer has a 128 KiB write cut in two ublk
 * requests); appends stay within one device command, in whole pages.
 */
START_TEST(test_io_limits_cases)
{
	static const struct {
		uint32_t xfer, append, page, cap;
		int ret;
		uint32_t io, app;
	} cases[] = {
		{ 126976, 126976, 4096, 524288, 0, 524288, 126976 },
		{ 126976, 524288, 4096, 524288, 0, 524288, 126976 },
		{ 1048576, 262144, 4096, 524288, 0, 524288, 262144 },
		{ 1048576, 1048576, 4096, 524288, 0, 524288, 524288 },
		{ 131072, 126976 + 512, 4096, 524288, 0, 524288, 126976 },
		{ 126976, 126976, 65536, 524288, 0, 524288, 65536 },
		{ 2048, 131072, 4096, 524288, -EINVAL, 1, 1 },
		{ 131072, 0, 4096, 524288, -EINVAL, 1, 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t io = 1, app = 1;

		ck_assert_int_eq(p2z_blk_io_limits(cases[i].xfer,
						   cases[i].append,
						   cases[i].page, cases[i].cap,
						   &io, &app),
				 cases[i].ret);
		ck_assert_uint_eq(io, cases[i].io);
		ck_assert_uint_eq(app, cases[i].app);
	}
}
END_TEST

START_TEST(test_errno_cases)
{
	ck_assert_int_eq(p2z_blk_errno(-ETOOMANYREFS), -ETOOMANYREFS);
	ck_assert_int_eq(p2z_blk_errno(-EOVERFLOW), -EOVERFLOW);
	ck_assert_int_eq(p2z_blk_errno(-EILSEQ), -EIO);
	ck_assert_int_eq(p2z_blk_errno(-ENOSPC), -EIO);
	ck_assert_int_eq(p2z_blk_errno(-EROFS), -EIO);
	ck_assert_int_eq(p2z_blk_errno(-EINVAL), -EIO);
}
END_TEST

/*
 * One zone, two queues: a write of LBAs [0, 8) and an append that lands
 * behind it, [8, 16), complete in either order; the cached pointer ends at
 * 16 both ways (the write completing last used to store 8, and the
 * acknowledged append read as zeros).
 */
START_TEST(test_wp_advance_interleaving)
{
	uint64_t wp;

	wp = p2z_blk_wp_advance(0, 16); /* append first */
	wp = p2z_blk_wp_advance(wp, 8); /* then the write */
	ck_assert_uint_eq(wp, 16);
	wp = p2z_blk_wp_advance(0, 8);
	wp = p2z_blk_wp_advance(wp, 16);
	ck_assert_uint_eq(wp, 16);
	/* two appends, the one landing first completing last */
	wp = p2z_blk_wp_advance(0, 24);
	ck_assert_uint_eq(p2z_blk_wp_advance(wp, 16), 24);
	ck_assert_uint_eq(p2z_blk_wp_advance(24, 24), 24);
	ck_assert_uint_eq(p2z_blk_wp_advance(UINT64_MAX, 0), UINT64_MAX);
}
END_TEST

START_TEST(test_io_flags_fua)
{
	ck_assert_uint_eq(p2z_blk_io_flags(UBLK_IO_OP_WRITE), 0);
	ck_assert_uint_eq(p2z_blk_io_flags(UBLK_IO_OP_WRITE | UBLK_IO_F_FUA),
			  P2Z_IO_FUA);
	ck_assert_uint_eq(p2z_blk_io_flags(13 | UBLK_IO_F_FUA), P2Z_IO_FUA);
	ck_assert_uint_eq(p2z_blk_io_flags(UBLK_IO_OP_WRITE |
					   UBLK_IO_F_FAILFAST_DEV |
					   UBLK_IO_F_META),
			  0);
}
END_TEST

START_TEST(test_cache_attrs)
{
	ck_assert_uint_eq(p2z_blk_cache_attrs(false), 0);
	ck_assert_uint_eq(p2z_blk_cache_attrs(true),
			  UBLK_ATTR_VOLATILE_CACHE | UBLK_ATTR_FUA);
}
END_TEST

START_TEST(test_owner_cases)
{
	const uint64_t m = P2Z_BLK_SRV_MAGIC;

	/* served by the record's server */
	ck_assert_int_eq(p2z_blk_owner_of(true, 100, 100, m),
			 P2Z_BLK_OWNER_OURS);
	/* its server died or was deleted: the kernel says -1 */
	ck_assert_int_eq(p2z_blk_owner_of(true, 100, -1, m),
			 P2Z_BLK_OWNER_OURS);
	ck_assert_int_eq(p2z_blk_owner_of(true, 100, 0, m | 0x3),
			 P2Z_BLK_OWNER_OURS);
	/* a record of an earlier server of this number */
	ck_assert_int_eq(p2z_blk_owner_of(true, 100, 200, m),
			 P2Z_BLK_OWNER_STALE);
	ck_assert_int_eq(p2z_blk_owner_of(true, 0, 200, m),
			 P2Z_BLK_OWNER_STALE);
	/* another program's device beside a left-over record */
	ck_assert_int_eq(p2z_blk_owner_of(true, 100, 100, 0),
			 P2Z_BLK_OWNER_STALE);
	ck_assert_int_eq(p2z_blk_owner_of(true, 100, -1, 0x2),
			 P2Z_BLK_OWNER_STALE);
	ck_assert_int_eq(p2z_blk_owner_of(true, 100, 100, m ^ (1ULL << 40)),
			 P2Z_BLK_OWNER_STALE);
	/* no record at all */
	ck_assert_int_eq(p2z_blk_owner_of(false, 0, 100, m),
			 P2Z_BLK_OWNER_NONE);
	ck_assert_int_eq(p2z_blk_owner_of(false, 0, -1, 0), P2Z_BLK_OWNER_NONE);
}
END_TEST

START_TEST(test_stop_refused_cases)
{
	ck_assert(!p2z_blk_stop_is_refused(false, 0));
	ck_assert(p2z_blk_stop_is_refused(true, 0));
	/* the second signal forces it */
	ck_assert(!p2z_blk_stop_is_refused(true, 1));
	ck_assert(!p2z_blk_stop_is_refused(true, 5));
	ck_assert(!p2z_blk_stop_is_refused(false, 1));
}
END_TEST

/*
 * A stop signal: a recoverable device in use is handed over (left
 * quiesced), never refused nor deleted under its filesystem; an unused one
 * is deleted; without recovery, today's refusal once.
 */
START_TEST(test_stop_action_cases)
{
	ck_assert_int_eq(p2z_blk_stop_action(true, true, 0),
			 P2Z_BLK_STOP_HANDOVER);
	ck_assert_int_eq(p2z_blk_stop_action(true, true, 1),
			 P2Z_BLK_STOP_HANDOVER);
	ck_assert_int_eq(p2z_blk_stop_action(true, false, 0),
			 P2Z_BLK_STOP_DELETE);
	ck_assert_int_eq(p2z_blk_stop_action(false, true, 0),
			 P2Z_BLK_STOP_REFUSE);
	ck_assert_int_eq(p2z_blk_stop_action(false, true, 1),
			 P2Z_BLK_STOP_DELETE);
	ck_assert_int_eq(p2z_blk_stop_action(false, false, 0),
			 P2Z_BLK_STOP_DELETE);
}
END_TEST

/* add's default takes recovery where the kernel has it, --recovery needs it */
START_TEST(test_recovery_granted_cases)
{
	const uint64_t both = UBLK_F_USER_RECOVERY |
			      UBLK_F_USER_RECOVERY_REISSUE;
	const uint64_t other = UBLK_F_URING_CMD_COMP_IN_TASK; /* any other */

	ck_assert_int_eq(p2z_blk_recovery_granted(P2Z_BLK_RECOVERY_AUTO,
						  other | both),
			 1);
	ck_assert_int_eq(
		p2z_blk_recovery_granted(P2Z_BLK_RECOVERY_ON, other | both), 1);
	ck_assert_int_eq(p2z_blk_recovery_granted(P2Z_BLK_RECOVERY_OFF,
						  other | both),
			 0);
	/* a kernel without it (or without the reissue half) */
	ck_assert_int_eq(p2z_blk_recovery_granted(P2Z_BLK_RECOVERY_AUTO, other),
			 0);
	ck_assert_int_eq(p2z_blk_recovery_granted(P2Z_BLK_RECOVERY_AUTO,
						  other | UBLK_F_USER_RECOVERY),
			 0);
	ck_assert_int_eq(p2z_blk_recovery_granted(P2Z_BLK_RECOVERY_ON, other),
			 -EOPNOTSUPP);
	ck_assert_int_eq(p2z_blk_recovery_granted(P2Z_BLK_RECOVERY_OFF, other),
			 0);
}
END_TEST

START_TEST(test_ident_same_node_cases)
{
	const char *rec = "chr=242:1 lba=4096 zone=24576 zones=16 max=131072";

	ck_assert(p2z_blk_ident_same_node("chr=242:1", rec));
	ck_assert(p2z_blk_ident_same_node("chr=242:1", "chr=242:1"));
	/* another minor whose digits start the same, another kind */
	ck_assert(!p2z_blk_ident_same_node("chr=242:10", rec));
	ck_assert(!p2z_blk_ident_same_node("chr=242:", rec));
	ck_assert(!p2z_blk_ident_same_node("blk=242:1", rec));
	ck_assert(!p2z_blk_ident_same_node("", rec));
	ck_assert(!p2z_blk_ident_same_node("file=8:1:12", "-"));
	ck_assert(!p2z_blk_ident_same_node("file=8:1:12", ""));
}
END_TEST

/* add recovers only a quiesced, recoverable P2ZB device nobody serves */
START_TEST(test_add_recovers_cases)
{
	const uint64_t m = P2Z_BLK_SRV_MAGIC, f = UBLK_F_USER_RECOVERY;

	ck_assert(p2z_blk_add_recovers(true, false, UBLK_S_DEV_QUIESCED, f, m));
	ck_assert(
		!p2z_blk_add_recovers(false, false, UBLK_S_DEV_QUIESCED, f, m));
	/* a live server, or a recover under way */
	ck_assert(!p2z_blk_add_recovers(true, true, UBLK_S_DEV_QUIESCED, f, m));
	ck_assert(!p2z_blk_add_recovers(true, false, UBLK_S_DEV_LIVE, f, m));
	ck_assert(!p2z_blk_add_recovers(true, false, UBLK_S_DEV_DEAD, f, m));
	ck_assert(
		!p2z_blk_add_recovers(true, false, UBLK_S_DEV_QUIESCED, 0, m));
	ck_assert(!p2z_blk_add_recovers(true, false, UBLK_S_DEV_QUIESCED, f,
					0x2));
}
END_TEST

#ifdef P2Z_HAVE_BLK_SRV
#include "blk_priv.h"

/*
 * Defect: p2z_blk_cdev_open() returned 1 on failure while its caller tested
 * < 0, so a failed open of /dev/ublkcN was taken for fd 1 (stdout).
 */
START_TEST(test_cdev_open_errno)
{
	ck_assert_int_eq(p2z_blk_cdev_open("/"), -EISDIR);
	ck_assert_int_eq(p2z_blk_cdev_open("/dev/null/ublkc0"), -ENOTDIR);
}
END_TEST

static void blk_add_server_tests(Suite *s)
{
	TCase *tc = tcase_create("cdev_open");

	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_cdev_open_errno);
}
#else
static void blk_add_server_tests(Suite *s)
{
	(void)s;
}
#endif

/*
 * The zone gate: one write per zone at a time (a second waits, and starts
 * once the first left), appends concurrent, a split append alone.
 */
START_TEST(test_gate_write_order)
{
	uint32_t g = 0, n = 0;

	ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_WRITE, &n), 0);
	g = n;
	ck_assert(!p2z_blk_gate_idle(g));
	/* the zone's next write arrives early: it waits */
	n = 0xdead;
	ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_WRITE, &n), -EBUSY);
	ck_assert_uint_eq(n, 0xdead);
	g = p2z_blk_gate_leave(g, P2Z_BLK_GATE_WRITE);
	ck_assert_uint_eq(g, 0);
	ck_assert(p2z_blk_gate_idle(g));
	ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_WRITE, &n), 0);
	ck_assert_uint_eq(n, 1U << P2Z_BLK_GATE_WRITE_SHIFT);
}
END_TEST

START_TEST(test_gate_appends)
{
	uint32_t g = 0, n;
	unsigned int i;

	/* 16 plain appends in flight at once */
	for (i = 0; i < 16; i++) {
		ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_APPEND, &n),
				 0);
		g = n;
	}
	ck_assert_uint_eq(g, 16);
	ck_assert(!p2z_blk_gate_idle(g));
	/* a split append waits for all of them */
	ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_APPEND_SPLIT, &n),
			 -EBUSY);
	/* a write beside appends is the writer's business: not held */
	ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_WRITE, &n), 0);
	for (i = 0; i < 16; i++)
		g = p2z_blk_gate_leave(g, P2Z_BLK_GATE_APPEND);
	ck_assert_uint_eq(g, 0);
	ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_APPEND_SPLIT, &n),
			 0);
	g = n;
	ck_assert_uint_eq(g, P2Z_BLK_GATE_SPLIT | 1);
	/* nothing appends beside a split append, split or not */
	ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_APPEND, &n),
			 -EBUSY);
	ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_APPEND_SPLIT, &n),
			 -EBUSY);
	ck_assert(!p2z_blk_gate_idle(g));
	g = p2z_blk_gate_leave(g, P2Z_BLK_GATE_APPEND_SPLIT);
	ck_assert_uint_eq(g, 0);
	ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_APPEND, &n), 0);
	ck_assert_uint_eq(n, 1);
}
END_TEST

/* Drain: a zone operation waits until both writes and appends left. */
START_TEST(test_gate_drain)
{
	uint32_t g = 0, n;

	ck_assert(p2z_blk_gate_idle(g));
	ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_APPEND, &n), 0);
	g = n;
	ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_WRITE, &n), 0);
	g = n;
	ck_assert(!p2z_blk_gate_idle(g));
	g = p2z_blk_gate_leave(g, P2Z_BLK_GATE_APPEND);
	ck_assert(!p2z_blk_gate_idle(g));
	g = p2z_blk_gate_leave(g, P2Z_BLK_GATE_WRITE);
	ck_assert(p2z_blk_gate_idle(g));
	/* the append count saturates into -EBUSY, never into the writes */
	g = P2Z_BLK_GATE_APPENDS;
	ck_assert_int_eq(p2z_blk_gate_enter(g, P2Z_BLK_GATE_APPEND, &n),
			 -EBUSY);
}
END_TEST

/* A reissued write: send, compare, done, the rest, or fail (EIO). */
START_TEST(test_reissue_write_cases)
{
	/* not started: the wp at or before its start */
	ck_assert_int_eq(p2z_blk_reissue_write(8, 8, 0, -1),
			 P2Z_BLK_REISSUE_SEND);
	ck_assert_int_eq(p2z_blk_reissue_write(8, 8, 8, -1),
			 P2Z_BLK_REISSUE_SEND);
	/* something there: compare before deciding */
	ck_assert_int_eq(p2z_blk_reissue_write(8, 8, 9, -1),
			 P2Z_BLK_REISSUE_COMPARE);
	ck_assert_int_eq(p2z_blk_reissue_write(8, 8, 16, -1),
			 P2Z_BLK_REISSUE_COMPARE);
	/* all there and equal: done; also with the wp past its end */
	ck_assert_int_eq(p2z_blk_reissue_write(8, 8, 16, 0),
			 P2Z_BLK_REISSUE_DONE);
	ck_assert_int_eq(p2z_blk_reissue_write(8, 8, 40, 0),
			 P2Z_BLK_REISSUE_DONE);
	/* partly there and equal: the rest */
	ck_assert_int_eq(p2z_blk_reissue_write(8, 8, 15, 0),
			 P2Z_BLK_REISSUE_REST);
	/* different bytes: never overwritten, never acknowledged */
	ck_assert_int_eq(p2z_blk_reissue_write(8, 8, 15, 1),
			 P2Z_BLK_REISSUE_FAIL);
	ck_assert_int_eq(p2z_blk_reissue_write(8, 8, 16, 1),
			 P2Z_BLK_REISSUE_FAIL);
}
END_TEST

/*
 * A recovering server carries the dead server's slots not FREE (its own,
 * then its carried ones) into its record, compacted, and says which went
 * where; one more than fits sets the overflow, which a fit leaves alone.
 */
START_TEST(test_carry_select_cases)
{
	struct p2z_blk_slot old[6] = {
		[0] = { .state = P2Z_BLK_SLOT_SUBMITTED, .zidx = 1, .seq = 7 },
		[2] = { .state = P2Z_BLK_SLOT_LANDED, .zidx = 2, .landed = 9 },
		[4] = { .state = P2Z_BLK_SLOT_SUBMITTED, .zidx = 3, .pad = 1 },
		[5] = { .state = P2Z_BLK_SLOT_SUBMITTED, .zidx = 4 },
	};
	struct p2z_blk_slot carry[4];
	uint32_t map[6];
	bool overflow = false;

	memset(carry, 0xa5, sizeof(carry));
	ck_assert_uint_eq(
		p2z_blk_carry_select(old, 6, carry, 4, map, &overflow), 4);
	ck_assert(!overflow);
	ck_assert_uint_eq(map[0], 1);
	ck_assert_uint_eq(map[1], 0);
	ck_assert_uint_eq(map[2], 2);
	ck_assert_uint_eq(map[3], 0);
	ck_assert_uint_eq(map[4], 3);
	ck_assert_uint_eq(map[5], 4);
	ck_assert_uint_eq(carry[0].zidx, 1);
	ck_assert_uint_eq(carry[0].seq, 7);
	ck_assert_uint_eq(carry[1].state, P2Z_BLK_SLOT_LANDED);
	ck_assert_uint_eq(carry[1].landed, 9);
	/* a flag an older server set travels on */
	ck_assert_uint_eq(carry[2].pad, P2Z_BLK_CARRY_ZOP);
	ck_assert_uint_eq(carry[3].zidx, 4);
	/* no room for the last: not mapped, overflow */
	ck_assert_uint_eq(
		p2z_blk_carry_select(old, 6, carry, 3, map, &overflow), 3);
	ck_assert(overflow);
	ck_assert_uint_eq(map[4], 3);
	ck_assert_uint_eq(map[5], 0);
	/* nothing to carry */
	overflow = false;
	ck_assert_uint_eq(
		p2z_blk_carry_select(old + 1, 1, carry, 0, map, &overflow), 0);
	ck_assert(!overflow);
	ck_assert_uint_eq(map[0], 0);
}
END_TEST

/*
 * The lookup of a reissued append runs over the dead server's own slots,
 * then its carried ones: the own one first, a carried one found after it
 * (or alone), FREE ones and other zones, lengths, checksums never.
 */
START_TEST(test_slot_find_own_then_carried)
{
	struct p2z_blk_slot s[6] = {
		[0] = { .state = P2Z_BLK_SLOT_FREE,
			.zidx = 5,
			.len = 8,
			.crc = 0xabc },
		[1] = { .state = P2Z_BLK_SLOT_SUBMITTED,
			.zidx = 5,
			.len = 16,
			.crc = 0xabc },
		[2] = { .state = P2Z_BLK_SLOT_LANDED,
			.zidx = 5,
			.len = 8,
			.crc = 0xabc },
		[3] = { .state = P2Z_BLK_SLOT_SUBMITTED,
			.zidx = 6,
			.len = 8,
			.crc = 0xabc },
		/* carried (index >= 4 with 4 own slots) */
		[4] = { .state = P2Z_BLK_SLOT_SUBMITTED,
			.zidx = 5,
			.len = 8,
			.crc = 0xabd },
		[5] = { .state = P2Z_BLK_SLOT_SUBMITTED,
			.zidx = 5,
			.len = 8,
			.crc = 0xabc },
	};

	ck_assert_int_eq(p2z_blk_slot_find(s, 6, 0, 5, 8, 0xabc), 2);
	ck_assert_int_eq(p2z_blk_slot_find(s, 6, 3, 5, 8, 0xabc), 5);
	ck_assert_int_eq(p2z_blk_slot_find(s, 6, 6, 5, 8, 0xabc), -1);
	ck_assert_int_eq(p2z_blk_slot_find(s, 6, 0, 5, 8, 0xabd), 4);
	ck_assert_int_eq(p2z_blk_slot_find(s, 6, 0, 5, 16, 0xabc), 1);
	ck_assert_int_eq(p2z_blk_slot_find(s, 6, 0, 6, 8, 0xabc), 3);
	ck_assert_int_eq(p2z_blk_slot_find(s, 6, 0, 7, 8, 0xabc), -1);
	/* only the own slots: the carried one is not there */
	ck_assert_int_eq(p2z_blk_slot_find(s, 4, 3, 5, 8, 0xabc), -1);
}
END_TEST

/* No slot: sent, unless the record lost slots (carry overflow): EIO */
START_TEST(test_reissue_noslot_overflow)
{
	ck_assert_int_eq(p2z_blk_reissue_noslot(false), P2Z_BLK_REISSUE_SEND);
	ck_assert_int_eq(p2z_blk_reissue_noslot(true), P2Z_BLK_REISSUE_FAIL);
}
END_TEST

/*
 * A carried slot's history is incomplete (its seqs another generation's):
 * placed with complete false, a match fails, no match sends; a LANDED
 * one compares at its landing.
 */
static int carry_match_at(void *ctx, uint64_t lba)
{
	return lba == *(const uint64_t *)ctx;
}

START_TEST(test_reissue_carried_incomplete)
{
	struct p2z_blk_slot m = { .state = P2Z_BLK_SLOT_SUBMITTED,
				  .len = 8,
				  .zidx = 3,
				  .wp_submit = 100 };
	uint64_t where = 108, at = 0;

	ck_assert_int_eq(p2z_blk_reissue_place(&m, 124, NULL, 0, false,
					       carry_match_at, &where, &at),
			 P2Z_BLK_REISSUE_FAIL);
	where = 500;
	ck_assert_int_eq(p2z_blk_reissue_place(&m, 124, NULL, 0, false,
					       carry_match_at, &where, &at),
			 P2Z_BLK_REISSUE_SEND);
	m.state = P2Z_BLK_SLOT_LANDED;
	m.landed = 108;
	ck_assert_int_eq(p2z_blk_reissue_append(&m, 124, 0, 0, -1, &at),
			 P2Z_BLK_REISSUE_COMPARE);
	ck_assert_uint_eq(at, 108);
}
END_TEST

/* A reissued append: written at most once, from the record and the wp. */
START_TEST(test_reissue_append_cases)
{
	struct p2z_blk_slot s = { .state = P2Z_BLK_SLOT_SUBMITTED,
				  .len = 8,
				  .zidx = 3,
				  .wp_submit = 100 };
	uint64_t at = 12345;

	/* no slot: it never reached the device */
	ck_assert_int_eq(p2z_blk_reissue_append(NULL, 100, 0, 0, -1, &at),
			 P2Z_BLK_REISSUE_SEND);
	/* submitted, the wp did not move: it did not land */
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 100, 0, 0, -1, &at),
			 P2Z_BLK_REISSUE_SEND);
	/* ... also when others moved it by what they recorded */
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 116, 16, 2, -1, &at),
			 P2Z_BLK_REISSUE_SEND);
	/* moved by exactly its length, nothing else could: compare there */
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 108, 0, 0, -1, &at),
			 P2Z_BLK_REISSUE_COMPARE);
	ck_assert_uint_eq(at, 100);
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 108, 0, 0, 0, &at),
			 P2Z_BLK_REISSUE_DONE);
	ck_assert_uint_eq(at, 100);
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 108, 0, 0, 1, &at),
			 P2Z_BLK_REISSUE_FAIL);
	/* moved by its length, but another unknown append could have */
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 108, 0, 1, -1, &at),
			 P2Z_BLK_REISSUE_FAIL);
	/* moved by its length after others landed: where is unknown */
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 116, 8, 0, -1, &at),
			 P2Z_BLK_REISSUE_FAIL);
	/* moved by something else, or back (the zone lost data) */
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 104, 0, 0, -1, &at),
			 P2Z_BLK_REISSUE_FAIL);
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 99, 0, 0, -1, &at),
			 P2Z_BLK_REISSUE_FAIL);
	/* landed: compare at the landing, whatever else moved */
	s.state = P2Z_BLK_SLOT_LANDED;
	s.landed = 140;
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 200, 0, 3, -1, &at),
			 P2Z_BLK_REISSUE_COMPARE);
	ck_assert_uint_eq(at, 140);
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 200, 0, 3, 0, &at),
			 P2Z_BLK_REISSUE_DONE);
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 200, 0, 3, 1, &at),
			 P2Z_BLK_REISSUE_FAIL);
	/* landed, but the wp is before its end now: lost, fail */
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 147, 0, 0, -1, &at),
			 P2Z_BLK_REISSUE_FAIL);
	/* a free slot is no record */
	s.state = P2Z_BLK_SLOT_FREE;
	ck_assert_int_eq(p2z_blk_reissue_append(&s, 300, 0, 0, -1, &at),
			 P2Z_BLK_REISSUE_SEND);
}
END_TEST

/* a fake zone for p2z_blk_reissue_place: one byte per LBA */
struct place_dev {
	const char *zone; /* the device's LBAs */
	const char *data; /* the append's, slot.len of them */
	size_t len;
	unsigned int calls;
	int err_at; /* -1, or the LBA whose read fails */
};

static int place_match(void *ctx, uint64_t lba)
{
	struct place_dev *d = ctx;

	d->calls++;
	if (d->err_at >= 0 && lba == (uint64_t)d->err_at)
		return -EIO;
	return !memcmp(d->zone + lba, d->data, d->len);
}

static enum p2z_blk_reissue place(const char *zone, const char *data,
				  uint64_t wp_submit, uint64_t wp,
				  const struct p2z_blk_range *busy,
				  size_t nr_busy, struct place_dev *d,
				  uint64_t *at)
{
	struct p2z_blk_slot s = {
		.state = P2Z_BLK_SLOT_SUBMITTED,
		.len = (uint32_t)strlen(data),
		.zidx = 2,
		.wp_submit = wp_submit,
	};

	d->zone = zone;
	d->data = data;
	d->len = strlen(data);
	d->calls = 0;
	*at = 999;
	return p2z_blk_reissue_place(&s, wp, busy, nr_busy, true, place_match,
				     d, at);
}

/*
 * Appends of one zone in flight at a kill (btrfs sends several): each
 * found where its bytes are, a missing one sent, identical ones and a
 * zone that went back failed. The old rule failed every one of these
 * (another append of the zone was in flight).
 */
START_TEST(test_reissue_place_cases)
{
	struct place_dev d = { .err_at = -1 };
	/* zone: xx written before, then appends B (3), A (2), C (1) landed */
	const char *z = "xxBBBAAC";
	struct p2z_blk_range busy[2] = { { 2, 3, false } };
	uint64_t at;

	/* A, sent at wp 2, landed after B: found at 5 */
	ck_assert_int_eq(place(z, "AA", 2, 8, NULL, 0, &d, &at),
			 P2Z_BLK_REISSUE_DONE);
	ck_assert_uint_eq(at, 5);
	/* B and C too, each at its place */
	ck_assert_int_eq(place(z, "BBB", 2, 8, NULL, 0, &d, &at),
			 P2Z_BLK_REISSUE_DONE);
	ck_assert_uint_eq(at, 2);
	ck_assert_int_eq(place(z, "C", 2, 8, NULL, 0, &d, &at),
			 P2Z_BLK_REISSUE_DONE);
	ck_assert_uint_eq(at, 7);
	/* D, sent at wp 2 too, is nowhere: it did not land, send it */
	ck_assert_int_eq(place(z, "DD", 2, 8, NULL, 0, &d, &at),
			 P2Z_BLK_REISSUE_SEND);
	ck_assert_uint_eq(at, 999);
	/* every position from its wp_submit up to wp - len compared */
	ck_assert_uint_eq(d.calls, 5);
	/* a busy range (B recorded) is not compared */
	ck_assert_int_eq(place(z, "DD", 2, 8, busy, 1, &d, &at),
			 P2Z_BLK_REISSUE_SEND);
	ck_assert_uint_eq(d.calls, 2);
	/* ... and is not a candidate even where the bytes are equal */
	ck_assert_int_eq(place(z, "BBB", 2, 8, busy, 1, &d, &at),
			 P2Z_BLK_REISSUE_SEND);
	/* nothing before its wp_submit is a candidate */
	ck_assert_int_eq(place(z, "BBB", 3, 8, NULL, 0, &d, &at),
			 P2Z_BLK_REISSUE_SEND);
	/* the write pointer did not move past it: no room, send */
	ck_assert_int_eq(place(z, "AA", 2, 3, NULL, 0, &d, &at),
			 P2Z_BLK_REISSUE_SEND);
	ck_assert_uint_eq(d.calls, 0);
	/* only part of it there (the wp ends inside it): send */
	ck_assert_int_eq(place(z, "AA", 2, 6, NULL, 0, &d, &at),
			 P2Z_BLK_REISSUE_SEND);
	/* identical data at two places: ambiguous, fail */
	ck_assert_int_eq(place("xxAAAA", "AA", 2, 6, NULL, 0, &d, &at),
			 P2Z_BLK_REISSUE_FAIL);
	/* ... unless one of them is another append's (busy) */
	busy[0] = (struct p2z_blk_range){ 2, 2, false };
	ck_assert_int_eq(place("xxAAAA", "AA", 2, 6, busy, 1, &d, &at),
			 P2Z_BLK_REISSUE_DONE);
	ck_assert_uint_eq(at, 4);
	/* the zone went back before where it was sent: fail */
	ck_assert_int_eq(place(z, "AA", 4, 3, NULL, 0, &d, &at),
			 P2Z_BLK_REISSUE_FAIL);
	/* a compare that cannot read: fail, never guess */
	d.err_at = 3;
	ck_assert_int_eq(place(z, "AA", 2, 8, NULL, 0, &d, &at),
			 P2Z_BLK_REISSUE_FAIL);
}
END_TEST

/*
 * The hole the history closes (issue #24): an append of "AA" sent at 2
 * completed at 2 and its slot was freed (the kernel took the commit);
 * another "AA", sent after it, never landed. Without the freed one's
 * landing the second was placed at 2 (a guess: DONE with another's
 * sector); the ring's entry makes 2 busy: SEND. A ring that overwrote an
 * entry newer than the unresolved append's seq: its match is not
 * trusted: FAIL; with no match it is still sent.
 */
START_TEST(test_reissue_place_history)
{
	struct p2z_blk_hist ring[4] = {
		{ .zidx = 2, .landed = 2, .len = 2, .seq = 7 },
		{ .zidx = 3, .landed = 4, .len = 2, .seq = 8 }, /* other zone */
		{ .zidx = 2, .landed = 0, .len = 2, .seq = 5 }, /* before */
	};
	struct p2z_blk_slot s = { .state = P2Z_BLK_SLOT_SUBMITTED,
				  .len = 2,
				  .zidx = 2,
				  .wp_submit = 2,
				  .seq = 6 };
	struct place_dev d = {
		.zone = "xxAAyy", .data = "AA", .len = 2, .err_at = -1
	};
	struct p2z_blk_range busy[4];
	size_t nb = 0;
	uint64_t at = 999;

	/* what main did: no history, the freed landing looks like its own */
	ck_assert_int_eq(p2z_blk_reissue_place(&s, 4, NULL, 0, true,
					       place_match, &d, &at),
			 P2Z_BLK_REISSUE_DONE);
	ck_assert_uint_eq(at, 2);
	ck_assert(p2z_blk_hist_busy(ring, 4, 0, 2, s.seq, NULL, busy, &nb));
	ck_assert_uint_eq(nb, 1);
	ck_assert_uint_eq(busy[0].lba, 2);
	ck_assert_uint_eq(busy[0].len, 2);
	at = 999;
	ck_assert_int_eq(p2z_blk_reissue_place(&s, 4, busy, nb, true,
					       place_match, &d, &at),
			 P2Z_BLK_REISSUE_SEND);
	ck_assert_uint_eq(at, 999);
	/* the freed one landed later, its own bytes at 4: placed there */
	d.zone = "xxAAAA";
	ck_assert_int_eq(p2z_blk_reissue_place(&s, 6, busy, nb, true,
					       place_match, &d, &at),
			 P2Z_BLK_REISSUE_DONE);
	ck_assert_uint_eq(at, 4);

	/* the ring overwrote seq 9 > 6: history incomplete */
	nb = 0;
	ck_assert(!p2z_blk_hist_busy(ring, 4, 9, 2, s.seq, NULL, busy, &nb));
	at = 999;
	ck_assert_int_eq(p2z_blk_reissue_place(&s, 6, busy, nb, false,
					       place_match, &d, &at),
			 P2Z_BLK_REISSUE_FAIL);
	/* no match anywhere: it did not land, send it */
	d.zone = "xxAAyy";
	ck_assert_int_eq(p2z_blk_reissue_place(&s, 6, busy, nb, false,
					       place_match, &d, &at),
			 P2Z_BLK_REISSUE_SEND);
	/* overwritten entries all older than the append: complete */
	nb = 0;
	ck_assert(p2z_blk_hist_busy(ring, 4, 6, 2, s.seq, NULL, busy, &nb));
	/* unused entries (seq 0) and entries before seq 6 are no range */
	nb = 0;
	ck_assert(p2z_blk_hist_busy(ring, 4, 0, 2, 7, NULL, busy, &nb));
	ck_assert_uint_eq(nb, 0);
}
END_TEST

/*
 * Issue #24, a reset between two appends: P ("AA", sent at seq 3) landed
 * at 0, the zone was reset (marker: begun at 5 before its drain, ended at
 * 8), P's slot was freed after that (entry seq 10, 7 after its send), Q
 * (sent at 10) landed at 2, and M ("AA", sent at 9 at wp 0) landed at 0
 * again, its landing unrecorded. Before markers P's range was busy like
 * Q's: no candidate left, SEND, M written twice. Now P is GONE (sent
 * before the reset began: the drain made it complete before the reset
 * erased it), Q still busy: DONE at 0.
 */
START_TEST(test_reissue_place_reset)
{
	struct p2z_blk_hist ring[6] = {
		{ .zidx = 2, .landed = 0, .len = 2, .pad = 7, .seq = 10 },
		{ .zidx = 2,
		  .landed = 5,
		  .len = 0,
		  .pad = P2Z_BLK_ZOP_DONE,
		  .seq = 8 },
		{ .zidx = 2, .landed = 2, .len = 2, .pad = 1, .seq = 11 },
		{ .zidx = 3, /* another zone's reset: not M's */
		  .landed = 9,
		  .len = 0,
		  .pad = P2Z_BLK_ZOP_OPEN,
		  .seq = 9 },
	};
	struct p2z_blk_slot s = { .state = P2Z_BLK_SLOT_SUBMITTED,
				  .len = 2,
				  .zidx = 2,
				  .wp_submit = 0,
				  .seq = 9 };
	struct place_dev d = {
		.zone = "AAAA", .data = "AA", .len = 2, .err_at = -1
	};
	struct p2z_blk_zop op[6];
	struct p2z_blk_zops z = { .op = op };
	struct p2z_blk_range busy[6];
	size_t nb = 0;
	uint64_t at = 999;

	/* before markers (no zops): P and Q busy, M sent again */
	ck_assert(p2z_blk_hist_busy(ring, 6, 0, 2, s.seq, NULL, busy, &nb));
	ck_assert_uint_eq(nb, 2);
	ck_assert_int_eq(p2z_blk_reissue_place(&s, 4, busy, nb, true,
					       place_match, &d, &at),
			 P2Z_BLK_REISSUE_SEND);

	p2z_blk_hist_zops(ring, 6, 2, &z);
	ck_assert_uint_eq(z.nr, 1);
	ck_assert_uint_eq(op[0].begin, 5);
	ck_assert_uint_eq(op[0].end, 8);
	ck_assert_uint_eq(op[0].state, P2Z_BLK_ZOP_DONE);
	ck_assert(!p2z_blk_zop_unsure(&z, s.seq));
	nb = 0;
	ck_assert(p2z_blk_hist_busy(ring, 6, 0, 2, s.seq, &z, busy, &nb));
	ck_assert_uint_eq(nb, 1);
	ck_assert_uint_eq(busy[0].lba, 2);
	ck_assert_uint_eq(busy[0].len, 2);
	ck_assert(!busy[0].maybe);
	ck_assert_int_eq(p2z_blk_reissue_place(&s, 4, busy, nb, true,
					       place_match, &d, &at),
			 P2Z_BLK_REISSUE_DONE);
	ck_assert_uint_eq(at, 0);
	/* P still a LANDED slot (its queue never freed it): GONE too */
	ck_assert_int_eq(p2z_blk_landing_of(&z, 3, 3, s.seq),
			 P2Z_BLK_LANDING_GONE);
	/* after the reset ended (Q), or sent during it: kept */
	ck_assert_int_eq(p2z_blk_landing_of(&z, 8, 8, s.seq),
			 P2Z_BLK_LANDING_BUSY);
	ck_assert_int_eq(p2z_blk_landing_of(&z, 5, 5, s.seq),
			 P2Z_BLK_LANDING_MAYBE);
	ck_assert_int_eq(p2z_blk_landing_of(&z, 7, 7, s.seq),
			 P2Z_BLK_LANDING_MAYBE);
	/* a send only known before its free (no advance): maybe */
	ck_assert_int_eq(p2z_blk_landing_of(&z, 0, 9, s.seq),
			 P2Z_BLK_LANDING_MAYBE);
	/* a landing sent during the reset at 0: a match there fails */
	ring[4] = (struct p2z_blk_hist){
		.zidx = 2, .landed = 0, .len = 2, .pad = 6, .seq = 12
	};
	nb = 0;
	ck_assert(p2z_blk_hist_busy(ring, 6, 0, 2, s.seq, &z, busy, &nb));
	ck_assert_uint_eq(nb, 2);
	ck_assert(busy[1].maybe);
	ck_assert_int_eq(p2z_blk_reissue_place(&s, 4, busy, nb, true,
					       place_match, &d, &at),
			 P2Z_BLK_REISSUE_FAIL);
	/* ... and one not matching M's bytes is only compared */
	d.zone = "BBAA";
	d.calls = 0;
	ck_assert_int_eq(p2z_blk_reissue_place(&s, 4, busy, nb, true,
					       place_match, &d, &at),
			 P2Z_BLK_REISSUE_SEND);
	ck_assert_uint_eq(d.calls, 1);
	d.zone = "AAAA";

	/* a failed reset erased nothing for sure: P maybe */
	op[0].state = P2Z_BLK_ZOP_FAILED;
	ck_assert_int_eq(p2z_blk_landing_of(&z, 3, 3, s.seq),
			 P2Z_BLK_LANDING_MAYBE);
	op[0].state = P2Z_BLK_ZOP_DONE;
	/* a reset ended after M was sent is no reason for anything else */
	ck_assert_int_eq(p2z_blk_landing_of(&z, 3, 3, 7), P2Z_BLK_LANDING_BUSY);
	/* a lost marker newer than the landing's send: maybe */
	z.lost = 4;
	ck_assert_int_eq(p2z_blk_landing_of(&z, 3, 3, s.seq),
			 P2Z_BLK_LANDING_GONE);
	ck_assert_int_eq(p2z_blk_landing_of(&z, 8, 8, s.seq),
			 P2Z_BLK_LANDING_BUSY);
	z.lost = 9;
	ck_assert_int_eq(p2z_blk_landing_of(&z, 8, 8, s.seq),
			 P2Z_BLK_LANDING_MAYBE);
	ck_assert(!p2z_blk_zop_unsure(&z, s.seq));
	z.lost = 0;
}
END_TEST

/*
 * An append sent before a reset ended is never placed (it may have landed
 * before the reset, erased, or after it, in the new data) nor sent again:
 * FAIL. The same for an OPEN marker (the server died during the op), a
 * reset-all's, and a lost marker newer than the append.
 */
START_TEST(test_reissue_reset_unsure)
{
	struct p2z_blk_hist ring[4] = {
		{ .zidx = 2,
		  .landed = 5,
		  .len = 0,
		  .pad = P2Z_BLK_ZOP_DONE,
		  .seq = 8 },
	};
	struct p2z_blk_zop op[4];
	struct p2z_blk_zops z = { .op = op };

	p2z_blk_hist_zops(ring, 4, 2, &z);
	ck_assert_uint_eq(z.nr, 1);
	ck_assert(p2z_blk_zop_unsure(&z, 4)); /* before it began */
	ck_assert(p2z_blk_zop_unsure(&z, 5)); /* during it */
	ck_assert(p2z_blk_zop_unsure(&z, 7));
	ck_assert(!p2z_blk_zop_unsure(&z, 8)); /* after it ended */
	/* died during it: OPEN (end unknown), and an unknown state too */
	ring[1] = (struct p2z_blk_hist){
		.zidx = 2, .landed = 20, .pad = P2Z_BLK_ZOP_OPEN, .seq = 20
	};
	ring[2] = (struct p2z_blk_hist){
		.zidx = 2, .landed = 30, .pad = 77, .seq = 31
	};
	z.nr = 0;
	p2z_blk_hist_zops(ring, 4, 2, &z);
	ck_assert_uint_eq(z.nr, 3);
	ck_assert_uint_eq(op[1].end, UINT64_MAX);
	ck_assert_uint_eq(op[2].end, UINT64_MAX);
	ck_assert_uint_eq(op[2].state, P2Z_BLK_ZOP_OPEN);
	ck_assert(p2z_blk_zop_unsure(&z, 100));
	/* a reset-all's marker counts for every zone; seq 0 is no entry */
	ring[1] = (struct p2z_blk_hist){ .zidx = P2Z_BLK_HIST_ALL,
					 .landed = 40,
					 .pad = P2Z_BLK_ZOP_DONE,
					 .seq = 42 };
	ring[2] = (struct p2z_blk_hist){ .zidx = 2, .pad = P2Z_BLK_ZOP_OPEN };
	z.nr = 0;
	p2z_blk_hist_zops(ring, 4, 7, &z);
	ck_assert_uint_eq(z.nr, 1);
	ck_assert_uint_eq(op[0].begin, 40);
	ck_assert_uint_eq(op[0].end, 42);
	ck_assert(p2z_blk_zop_unsure(&z, 41));
	ck_assert(!p2z_blk_zop_unsure(&z, 42));
	ck_assert_int_eq(p2z_blk_landing_of(&z, 39, 39, 42),
			 P2Z_BLK_LANDING_GONE);
	/* a lost marker newer than the append */
	z.lost = 43;
	ck_assert(p2z_blk_zop_unsure(&z, 42));
	z.lost = UINT64_MAX; /* an OPEN one lost */
	ck_assert(p2z_blk_zop_unsure(&z, 1000));
}
END_TEST

/* crc32c: the standard check value and continuation */
START_TEST(test_crc32c_check_value)
{
	ck_assert_uint_eq(p2z_blk_crc32c(0, "123456789", 9), 0xe3069283U);
	ck_assert_uint_eq(p2z_blk_crc32c(p2z_blk_crc32c(0, "1234", 4), "56789",
					 5),
			  0xe3069283U);
	ck_assert_uint_eq(p2z_blk_crc32c(0, "", 0), 0);
}
END_TEST

/* list's state of a device, recoverable or not */
START_TEST(test_state_name_cases)
{
	ck_assert_str_eq(p2z_blk_state_name(UBLK_S_DEV_LIVE, true, false),
			 "alive");
	ck_assert_str_eq(p2z_blk_state_name(UBLK_S_DEV_LIVE, false, false),
			 "dead");
	ck_assert_str_eq(p2z_blk_state_name(UBLK_S_DEV_DEAD, false, true),
			 "dead");
	ck_assert_str_eq(p2z_blk_state_name(UBLK_S_DEV_QUIESCED, false, false),
			 "quiesced");
	ck_assert_str_eq(p2z_blk_state_name(UBLK_S_DEV_QUIESCED, false, true),
			 "recovering");
}
END_TEST

/* recover's refusals, in their order */
START_TEST(test_recover_check_cases)
{
	uint64_t rec = UBLK_F_USER_RECOVERY | UBLK_F_ZONED;

	ck_assert_int_eq(p2z_blk_recover_check(UBLK_S_DEV_QUIESCED, rec,
					       P2Z_BLK_SRV_MAGIC,
					       P2Z_BLK_OWNER_OURS),
			 0);
	/* another program's device: no mark, whatever else */
	ck_assert_int_eq(p2z_blk_recover_check(UBLK_S_DEV_QUIESCED, rec, 0,
					       P2Z_BLK_OWNER_OURS),
			 -EPERM);
	/* made without recovery */
	ck_assert_int_eq(p2z_blk_recover_check(UBLK_S_DEV_LIVE, UBLK_F_ZONED,
					       P2Z_BLK_SRV_MAGIC,
					       P2Z_BLK_OWNER_OURS),
			 -EOPNOTSUPP);
	/* no record, or one not its own */
	ck_assert_int_eq(p2z_blk_recover_check(UBLK_S_DEV_QUIESCED, rec,
					       P2Z_BLK_SRV_MAGIC,
					       P2Z_BLK_OWNER_NONE),
			 -EPERM);
	ck_assert_int_eq(p2z_blk_recover_check(UBLK_S_DEV_QUIESCED, rec,
					       P2Z_BLK_SRV_MAGIC,
					       P2Z_BLK_OWNER_STALE),
			 -EPERM);
	/* not quiesced: live, or dead (stopped) */
	ck_assert_int_eq(p2z_blk_recover_check(UBLK_S_DEV_LIVE, rec,
					       P2Z_BLK_SRV_MAGIC,
					       P2Z_BLK_OWNER_OURS),
			 -EBUSY);
	ck_assert_int_eq(p2z_blk_recover_check(UBLK_S_DEV_DEAD, rec,
					       P2Z_BLK_SRV_MAGIC,
					       P2Z_BLK_OWNER_OURS),
			 -EBUSY);
}
END_TEST

static Suite *blk_suite(void)
{
	Suite *s = suite_create("blk");
	TCase *tc;

	tc = tcase_create("zone_sectors");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_zone_sectors_npo2);
	tc = tcase_create("zone_of");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_zone_of_cases);
	tc = tcase_create("write_target");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_write_target_cases);
	tc = tcase_create("read_len");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_read_len_cases);
	tc = tcase_create("report");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_report_cases);
	tc = tcase_create("append_done");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_append_done_npo2);
	tc = tcase_create("wp_ofs");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_wp_ofs_cases);
	tc = tcase_create("zone_is_reset_by_all");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_zone_is_reset_by_all_cases);
	tc = tcase_create("zone_limit");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_zone_limit_cases);
	tc = tcase_create("errno");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_errno_cases);
	tc = tcase_create("wp_advance");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_wp_advance_interleaving);
	tc = tcase_create("io_flags");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_io_flags_fua);
	tcase_add_test(tc, test_cache_attrs);
	tcase_add_test(tc, test_io_limits_cases);
	tc = tcase_create("owner");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_owner_cases);
	tc = tcase_create("stop_refused");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_stop_refused_cases);
	tcase_add_test(tc, test_stop_action_cases);
	tcase_add_test(tc, test_recovery_granted_cases);
	tcase_add_test(tc, test_ident_same_node_cases);
	tcase_add_test(tc, test_add_recovers_cases);
	tc = tcase_create("gate");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_gate_write_order);
	tcase_add_test(tc, test_gate_appends);
	tcase_add_test(tc, test_gate_drain);
	tc = tcase_create("reissue");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_reissue_write_cases);
	tcase_add_test(tc, test_reissue_append_cases);
	tcase_add_test(tc, test_reissue_place_cases);
	tcase_add_test(tc, test_reissue_place_history);
	tcase_add_test(tc, test_reissue_place_reset);
	tcase_add_test(tc, test_reissue_reset_unsure);
	tcase_add_test(tc, test_crc32c_check_value);
	tc = tcase_create("carry");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_carry_select_cases);
	tcase_add_test(tc, test_slot_find_own_then_carried);
	tcase_add_test(tc, test_reissue_noslot_overflow);
	tcase_add_test(tc, test_reissue_carried_incomplete);
	tc = tcase_create("recover");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_state_name_cases);
	tcase_add_test(tc, test_recover_check_cases);
	blk_add_server_tests(s);
	return s;
}

int main(void)
{
	return p2z_check_run(blk_suite());
}
