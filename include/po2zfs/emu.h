/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Emulated zoned device in a regular file (the "emu" backend): image
 * creation, validation and fault injection. I/O goes through the device
 * interface (dev.h) with backend "emu".
 *
 * Image errors: -EINVAL when the file is not an emulated zoned device image
 * at all (not a regular file, too short, wrong magic); -EUCLEAN when it is
 * one but is damaged or unusable (unsupported version, bad header checksum,
 * inconsistent geometry, truncated, invalid zone table entry).
 */
#ifndef PO2ZFS_EMU_H
#define PO2ZFS_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "po2zfs/dev.h"

/* Largest number of zones an image may have (zone table of 16 MiB). */
#define P2Z_EMU_MAX_ZONES (UINT64_C(1) << 20)
/* Largest single read or write the emulated device accepts (its "MDTS"). */
#define P2Z_EMU_MAX_XFER_BYTES (1U << 20)

/**
 * struct p2z_emu_params - geometry and limits of a new image
 * @lba_bytes: logical block size: 512 or 4096
 * @zone_bytes: zone size, a multiple of @lba_bytes (any number of LBAs)
 * @cap_bytes: zone capacity of sequential zones, a multiple of @lba_bytes,
 *	       0 < @cap_bytes <= @zone_bytes (conventional zones have a
 *	       capacity of @zone_bytes)
 * @nr_zones: number of zones, 1 .. P2Z_EMU_MAX_ZONES
 * @nr_cnv_zones: conventional zones at the start of the device, <= @nr_zones
 * @max_open: open zone limit, 0 = none
 * @max_active: active zone limit, 0 = none; if both are set,
 *		@max_open <= @max_active
 * @max_append_bytes: zone append size limit, a multiple of @lba_bytes,
 *		      from @lba_bytes to P2Z_EMU_MAX_XFER_BYTES
 */
struct p2z_emu_params {
	uint32_t lba_bytes;
	uint64_t zone_bytes;
	uint64_t cap_bytes;
	uint64_t nr_zones;
	uint64_t nr_cnv_zones;
	uint32_t max_open;
	uint32_t max_active;
	uint32_t max_append_bytes;
};

/* p2z_emu_create() flags. */
#define P2Z_EMU_CREATE_FORCE (1U << 0) /* replace an existing image */
/*
 * The device has a volatile write cache (NVMe VWC): completed writes live
 * in the memory of the process using the device until a flush or a FUA
 * write stores them in the image (see dev_emu.c). Recorded in the image.
 */
#define P2Z_EMU_CREATE_VOLATILE_CACHE (1U << 1)

/*
 * Faults injected into a zone with p2z_emu_set_fault(). The process using
 * the image applies a pending fault at its next operation on that zone.
 */
enum p2z_emu_fault {
	P2Z_EMU_FAULT_CLEAR, /* drop faults not applied yet */
	P2Z_EMU_FAULT_READONLY, /* zone becomes read-only */
	P2Z_EMU_FAULT_OFFLINE, /* zone becomes offline */
	P2Z_EMU_FAULT_ONLINE, /* undo read-only/offline */
	P2Z_EMU_FAULT_FAIL_NEXT_IO, /* next I/O or zone op on the zone: -EIO */
};

/* Pending fault bits, as p2z_emu_pending_faults() returns them. */
#define P2Z_EMU_PENDING_READONLY (1U << 0)
#define P2Z_EMU_PENDING_OFFLINE (1U << 1)
#define P2Z_EMU_PENDING_FAIL_IO (1U << 2)
#define P2Z_EMU_PENDING_ONLINE (1U << 3)

/* emu_image.c */

/**
 * p2z_emu_check_params() - validate the geometry of a new image
 * @p: parameters
 * @why: if not NULL, receives a one-line reason on failure
 * @why_len: size of @why
 *
 * Does not log.
 *
 * Return: 0, -EINVAL for an invalid value, -EOVERFLOW if the image would
 * not fit in a file.
 */
int p2z_emu_check_params(const struct p2z_emu_params *p, char *why,
			 size_t why_len);

/**
 * p2z_emu_create() - create a sparse image holding an empty device
 * @path: image path
 * @p: geometry and limits (see struct p2z_emu_params)
 * @flags: P2Z_EMU_CREATE_*; with P2Z_EMU_CREATE_FORCE (1, so that true
 *	   works as before) overwrite an existing image (a regular file
 *	   starting with the image magic, not a symbolic link) that no
 *	   process is using
 *
 * A new file gets mode 0600, less the umask. The header is written last,
 * so a failed creation never leaves a file that opens as an image. A file
 * this call created is removed on failure. Logs a one-line reason on
 * failure.
 *
 * Return: 0, -EINVAL/-EOVERFLOW for bad @p, -EEXIST if @path exists
 * without P2Z_EMU_CREATE_FORCE, -EINVAL if @path is not a regular file or not an image (left
 * untouched), -ELOOP if it is a symbolic link (left untouched), -EBUSY if
 * the image is open for writing by another process, or a system call's
 * -errno.
 */
int p2z_emu_create(const char *path, const struct p2z_emu_params *p,
		   unsigned int flags);

/**
 * p2z_emu_check_image() - validate an image without opening it as a device
 * @path: image path
 * @p: if not NULL, receives the image's geometry
 * @why: if not NULL, receives a one-line reason on failure
 * @why_len: size of @why
 *
 * Checks what p2z_dev_open() checks (header and zone table). Does not log.
 *
 * Return: 0, -EINVAL (not an image), -EUCLEAN (damaged image) or a system
 * call's -errno.
 */
int p2z_emu_check_image(const char *path, struct p2z_emu_params *p, char *why,
			size_t why_len);

/* dev_emu.c */

/**
 * p2z_emu_set_fault() - inject a fault into a zone of an image
 * @path: image path
 * @zidx: zone index
 * @fault: what to inject
 *
 * Works on an image in use: the fault is set in the shared zone table and
 * the process using the image applies it at its next operation on the
 * zone. If no process has the image open for writing, read-only, offline
 * and online take effect in the image before this returns; fail-next-io
 * stays pending for the next user. Logs a one-line reason on failure.
 *
 * Return: 0, -EINVAL (bad @zidx or @fault, or not an image), -EUCLEAN
 * (damaged image) or a system call's -errno.
 */
int p2z_emu_set_fault(const char *path, uint64_t zidx,
		      enum p2z_emu_fault fault);

/**
 * p2z_emu_pending_faults() - faults set on a zone and not applied yet
 * @dev: a device of the emu backend
 * @zidx: zone index
 *
 * Return: P2Z_EMU_PENDING_* bits, or -EINVAL if @dev is not an emu device
 * or @zidx is out of range.
 */
int p2z_emu_pending_faults(struct p2z_dev *dev, uint64_t zidx);

/* emu_image.c */

/**
 * p2z_emu_fault_parse() - parse a fault word
 * @word: "read-only", "offline", "online", "fail-next-io" or "clear"
 * @fault: result
 *
 * Return: 0 or -EINVAL.
 */
int p2z_emu_fault_parse(const char *word, enum p2z_emu_fault *fault);

/**
 * p2z_emu_fault_name() - the word for a fault
 * @fault: fault
 *
 * Return: the word p2z_emu_fault_parse() accepts, or "unknown".
 */
const char *p2z_emu_fault_name(enum p2z_emu_fault fault);

#endif /* PO2ZFS_EMU_H */
