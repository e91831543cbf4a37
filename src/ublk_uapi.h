/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The ublk UAPI that po2zfs-blk needs beyond Debian 12's linux-libc-dev
 * (Linux 6.1 headers): the additions of Linux 6.5 to 6.6 (USER_COPY, zoned
 * ublk, ioctl-encoded commands), written from the kernel's
 * include/uapi/linux/ublk_cmd.h as of Linux 6.12 (same values, ABI).
 * Each #define is guarded, so a newer <linux/ublk_cmd.h> wins; the two
 * structures whose 6.1 layout lacks a member get a p2z_ twin of the 6.12
 * layout instead (same size and offsets as the kernel's).
 *
 * Only src/blk_cli.c includes this header.
 */
#ifndef P2Z_UBLK_UAPI_H
#define P2Z_UBLK_UAPI_H

#include <linux/blkzoned.h>
#include <linux/types.h>
#include <linux/ublk_cmd.h>
#include <stddef.h>
#include <sys/ioctl.h>

/* Feature flags (6.5: USER_COPY, CMD_IOCTL_ENCODE; 6.6: ZONED). */
#ifndef UBLK_F_CMD_IOCTL_ENCODE
#define UBLK_F_CMD_IOCTL_ENCODE (1UL << 6)
#endif
#ifndef UBLK_F_USER_COPY
#define UBLK_F_USER_COPY (1UL << 7)
#endif
#ifndef UBLK_F_ZONED
#define UBLK_F_ZONED (1ULL << 8)
#endif

/* Ioctl-encoded control and I/O commands (6.5). */
#ifndef UBLK_U_CMD_ADD_DEV
#define UBLK_U_CMD_GET_DEV_INFO \
	_IOR('u', UBLK_CMD_GET_DEV_INFO, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_ADD_DEV _IOWR('u', UBLK_CMD_ADD_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_DEL_DEV _IOWR('u', UBLK_CMD_DEL_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_START_DEV \
	_IOWR('u', UBLK_CMD_START_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_STOP_DEV \
	_IOWR('u', UBLK_CMD_STOP_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_SET_PARAMS \
	_IOWR('u', UBLK_CMD_SET_PARAMS, struct ublksrv_ctrl_cmd)
#endif
/*
 * DEL_DEV without waiting for the device's last user (6.9): a del --force
 * of a device still mounted or open.
 */
#ifndef UBLK_U_CMD_DEL_DEV_ASYNC
#define UBLK_U_CMD_DEL_DEV_ASYNC _IOR('u', 0x14, struct ublksrv_ctrl_cmd)
#endif
/*
 * User recovery (6.0; ioctl-encoded 6.5): a device whose server died is
 * quiesced (UBLK_S_DEV_QUIESCED), its requests held until a new server
 * ends the recovery; with REISSUE the requests the dead server had are
 * sent again, without it they fail.
 */
#ifndef UBLK_U_CMD_START_USER_RECOVERY
#define UBLK_U_CMD_START_USER_RECOVERY \
	_IOWR('u', UBLK_CMD_START_USER_RECOVERY, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_END_USER_RECOVERY \
	_IOWR('u', UBLK_CMD_END_USER_RECOVERY, struct ublksrv_ctrl_cmd)
#endif
#ifndef UBLK_U_IO_FETCH_REQ
#define UBLK_U_IO_FETCH_REQ _IOWR('u', UBLK_IO_FETCH_REQ, struct ublksrv_io_cmd)
#define UBLK_U_IO_COMMIT_AND_FETCH_REQ \
	_IOWR('u', UBLK_IO_COMMIT_AND_FETCH_REQ, struct ublksrv_io_cmd)
#endif

/*
 * USER_COPY (6.5): the request's data is read and written with
 * pread()/pwrite() on /dev/ublkcN at UBLKSRV_IO_BUF_OFFSET plus the queue
 * and tag shifted to these offsets.
 */
#ifndef UBLK_TAG_OFF
#define UBLK_IO_BUF_BITS 25
#define UBLK_TAG_OFF UBLK_IO_BUF_BITS
#define UBLK_TAG_BITS 16
#define UBLK_QID_OFF (UBLK_TAG_OFF + UBLK_TAG_BITS)
#endif

/* Zoned operations (6.6). */
#ifndef UBLK_IO_OP_ZONE_OPEN
#define UBLK_IO_OP_ZONE_OPEN 10
#define UBLK_IO_OP_ZONE_CLOSE 11
#define UBLK_IO_OP_ZONE_FINISH 12
#define UBLK_IO_OP_ZONE_APPEND 13
#define UBLK_IO_OP_ZONE_RESET_ALL 14
#define UBLK_IO_OP_ZONE_RESET 15
/*
 * start_sector: a sector of the first zone (not always its start: ublk
 * passes BLKREPORTZONE's sector through); nr_sectors holds the number of
 * zones wanted. The server writes struct blk_zone entries into the
 * request's buffer; a zero-length entry ends a shorter report.
 */
#define UBLK_IO_OP_REPORT_ZONES 18
#endif

#ifndef UBLK_PARAM_TYPE_ZONED
#define UBLK_PARAM_TYPE_DEVT (1 << 2)
#define UBLK_PARAM_TYPE_ZONED (1 << 3)
#endif

/* 6.6's struct ublksrv_io_cmd: addr doubles as zone_append_lba. */
struct p2z_ublksrv_io_cmd {
	__u16 q_id;
	__u16 tag;
	__s32 result;
	union {
		__u64 addr;
		/* COMMIT of a ZONE_APPEND: where it landed, in sectors */
		__u64 zone_append_lba;
	};
};

struct p2z_ublk_param_devt {
	__u32 char_major;
	__u32 char_minor;
	__u32 disk_major;
	__u32 disk_minor;
};

struct p2z_ublk_param_zoned {
	__u32 max_open_zones;
	__u32 max_active_zones;
	__u32 max_zone_append_sectors;
	__u8 reserved[20];
};

/* 6.6's struct ublk_params, with the devt (6.2) and zoned (6.6) members. */
struct p2z_ublk_params {
	__u32 len;
	__u32 types;
	struct ublk_param_basic basic;
	struct ublk_param_discard discard;
	struct p2z_ublk_param_devt devt;
	struct p2z_ublk_param_zoned zoned;
};

/*
 * The ABI, as the 6.12 header gives it (sizes, offsets, command numbers):
 * a layout drifting from it would make the kernel read the wrong fields.
 */
_Static_assert(sizeof(struct ublksrv_ctrl_cmd) == 32, "ublksrv_ctrl_cmd");
_Static_assert(sizeof(struct ublksrv_ctrl_dev_info) == 64,
	       "ublksrv_ctrl_dev_info");
_Static_assert(sizeof(struct ublksrv_io_desc) == 24, "ublksrv_io_desc");
_Static_assert(sizeof(struct p2z_ublksrv_io_cmd) == 16, "ublksrv_io_cmd");
_Static_assert(offsetof(struct p2z_ublksrv_io_cmd, zone_append_lba) == 8,
	       "ublksrv_io_cmd.zone_append_lba");
_Static_assert(sizeof(struct ublk_param_basic) == 32, "ublk_param_basic");
_Static_assert(sizeof(struct ublk_param_discard) == 20, "ublk_param_discard");
_Static_assert(sizeof(struct p2z_ublk_param_devt) == 16, "ublk_param_devt");
_Static_assert(sizeof(struct p2z_ublk_param_zoned) == 32, "ublk_param_zoned");
_Static_assert(sizeof(struct p2z_ublk_params) == 112, "ublk_params");
_Static_assert(offsetof(struct p2z_ublk_params, discard) == 40,
	       "ublk_params.discard");
_Static_assert(offsetof(struct p2z_ublk_params, devt) == 60,
	       "ublk_params.devt");
_Static_assert(offsetof(struct p2z_ublk_params, zoned) == 76,
	       "ublk_params.zoned");
_Static_assert(UBLK_U_CMD_GET_DEV_INFO == 0x80207502, "GET_DEV_INFO");
_Static_assert(UBLK_U_CMD_ADD_DEV == 0xc0207504, "ADD_DEV");
_Static_assert(UBLK_U_CMD_DEL_DEV == 0xc0207505, "DEL_DEV");
_Static_assert(UBLK_U_CMD_START_DEV == 0xc0207506, "START_DEV");
_Static_assert(UBLK_U_CMD_STOP_DEV == 0xc0207507, "STOP_DEV");
_Static_assert(UBLK_U_CMD_SET_PARAMS == 0xc0207508, "SET_PARAMS");
_Static_assert(UBLK_U_CMD_DEL_DEV_ASYNC == 0x80207514, "DEL_DEV_ASYNC");
_Static_assert(UBLK_U_CMD_START_USER_RECOVERY == 0xc0207510,
	       "START_USER_RECOVERY");
_Static_assert(UBLK_U_CMD_END_USER_RECOVERY == 0xc0207511, "END_USER_RECOVERY");
_Static_assert(UBLK_F_USER_RECOVERY == 8 && UBLK_F_USER_RECOVERY_REISSUE == 16,
	       "USER_RECOVERY flags");
_Static_assert(UBLK_S_DEV_QUIESCED == 2, "UBLK_S_DEV_QUIESCED");
_Static_assert(UBLK_IO_F_FUA == (1U << 13), "UBLK_IO_F_FUA");
_Static_assert(UBLK_ATTR_VOLATILE_CACHE == 4 && UBLK_ATTR_FUA == 8,
	       "UBLK_ATTR_VOLATILE_CACHE, UBLK_ATTR_FUA");
_Static_assert(UBLK_U_IO_FETCH_REQ == 0xc0107520, "FETCH_REQ");
_Static_assert(UBLK_U_IO_COMMIT_AND_FETCH_REQ == 0xc0107521,
	       "COMMIT_AND_FETCH_REQ");
_Static_assert(UBLKSRV_IO_BUF_OFFSET == 0x80000000, "UBLKSRV_IO_BUF_OFFSET");
_Static_assert(UBLK_TAG_OFF == 25 && UBLK_QID_OFF == 41, "user copy offsets");
/* REPORT_ZONES fills the request's buffer with these. */
_Static_assert(sizeof(struct blk_zone) == 64, "blk_zone");

#endif /* P2Z_UBLK_UAPI_H */
