// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The errors= policy (zonefs' zonefs_io_error()): after an I/O error the
 * zone is re-read from the device, its size, write pointer and condition
 * are taken from what the device reports, and remount-ro, zone-ro,
 * zone-offline or repair decide what stays allowed. Also which errors say
 * nothing about a zone (they skip the policy) and the switch of the whole
 * table to read-only. The zone operations that meet the errors are
 * zone.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>

#include "zone_priv.h"

#include "po2zfs/log.h"

/*
 * Errors that say nothing about the zone's health: resources of the device
 * (open and active zone limits) or of this host, and interruptions. They
 * are returned as they are, without the errors= policy.
 *
 * Host errors come from the io_uring backends: a worker thread whose ring
 * cannot be set up (uring.c p2z_ring_get(), logged there once) fails its
 * request with the errno of io_uring_setup(): EMFILE or ENFILE (no file
 * descriptor), ENOMEM, EPERM or ENOSYS (io_uring disabled or filtered).
 * EACCES is a permission of this host too (passthrough refused). No device
 * answer maps to one of these: NVMe statuses map to EIO, EINVAL, ERANGE,
 * ENOSPC, EROFS, ENXIO, EILSEQ, EBADRQC and the two zone limits
 * (p2z_dev_nvme_status_errno()); the block layer's to EIO, ENOSPC, ENODATA,
 * ETIMEDOUT, ENOLINK and the like. A block device made read-only under the
 * mount (EPERM) is a setting of this host, not a failing zone, either.
 */
static bool p2z_err_is_host(int err)
{
	switch (err) {
	case -EMFILE:
	case -ENFILE:
	case -ENOMEM:
	case -EPERM:
	case -EACCES:
	case -ENOSYS:
		return true;
	}
	return false;
}

bool p2z_zone_err_is_io(int err)
{
	return !p2z_err_is_host(err) && err != -ETOOMANYREFS &&
	       err != -EOVERFLOW && err != -EINTR && err != -EAGAIN;
}

void p2z_zone_set_rdonly(struct p2z_zone_table *zt, const char *why)
{
	if (atomic_exchange(&zt->priv->rdonly, true))
		return;
	p2z_log(LOG_WARNING, "%s: filesystem switched to read-only", why);
	if (zt->opts.on_rdonly)
		zt->opts.on_rdonly(zt->opts.on_rdonly_arg);
}

/*
 * Apply the errors= policy to a zone whose state was just re-read from the
 * device (zonefs_io_error_cb()). z->lock held.
 */
static const char *p2z_errors_name(enum p2z_errors errors)
{
	switch (errors) {
	case P2Z_ERRORS_REMOUNT_RO:
		return "remount-ro";
	case P2Z_ERRORS_ZONE_RO:
		return "zone-ro";
	case P2Z_ERRORS_ZONE_OFFLINE:
		return "zone-offline";
	case P2Z_ERRORS_REPAIR:
		return "repair";
	}
	return "?";
}

/* What the errors= policy did to a zone, for the log; z->lock held. */
static const char *p2z_zone_error_action(const struct p2z_zone *z,
					 enum p2z_errors errors)
{
	if (z->flags & P2Z_ZONE_F_OFFLINE)
		return "zone offline";
	if (z->flags & P2Z_ZONE_F_RDONLY)
		return errors == P2Z_ERRORS_REMOUNT_RO ?
			       "zone and filesystem read-only" :
			       "zone read-only";
	if (errors == P2Z_ERRORS_REMOUNT_RO)
		return "filesystem read-only";
	return "file size repaired from the device";
}

static void __p2z_zone_apply_error(struct p2z_zone_table *zt,
				   struct p2z_zone *z, uint64_t zidx,
				   const struct p2z_zone_info *zi, bool write)
{
	enum p2z_errors errors = zt->opts.errors;
	uint64_t wp = p2z_zone_info_wp(zt, z, zi);
	uint64_t data_size;

	switch (zi->cond) {
	case P2Z_ZONE_COND_OFFLINE:
		data_size = 0;
		break;
	case P2Z_ZONE_COND_READONLY:
		/* The write pointer of a read-only zone is not valid. */
		data_size = z->size_bytes;
		wp = z->wp_bytes;
		break;
	default:
		data_size = p2z_zone_is_seq(z) ? wp : z->cap_bytes;
		break;
	}

	/* A read error on a healthy, consistent zone changes nothing. */
	if (zi->cond != P2Z_ZONE_COND_OFFLINE &&
	    zi->cond != P2Z_ZONE_COND_READONLY && !write &&
	    z->size_bytes == data_size) {
		z->cond = zi->cond;
		return;
	}

	if (p2z_zone_is_seq(z) && z->size_bytes != data_size)
		p2z_log(LOG_WARNING,
			"zone %" PRIu64 ": size %" PRIu64
			", the device has %" PRIu64,
			zidx, z->size_bytes, data_size);

	if (zi->cond == P2Z_ZONE_COND_READONLY)
		z->flags |= P2Z_ZONE_F_RDONLY;
	if (zi->cond == P2Z_ZONE_COND_OFFLINE ||
	    errors == P2Z_ERRORS_ZONE_OFFLINE) {
		p2z_log(LOG_WARNING,
			"zone %" PRIu64 ": read/write access disabled", zidx);
		z->flags |= P2Z_ZONE_F_OFFLINE;
		data_size = 0;
	} else if (zi->cond == P2Z_ZONE_COND_READONLY ||
		   errors == P2Z_ERRORS_ZONE_RO) {
		p2z_log(LOG_WARNING, "zone %" PRIu64 ": write access disabled",
			zidx);
		z->flags |= P2Z_ZONE_F_RDONLY;
	}
	/* A bad zone is no longer open: do not close it on the last close. */
	if (z->flags & (P2Z_ZONE_F_RDONLY | P2Z_ZONE_F_OFFLINE))
		z->flags &= ~P2Z_ZONE_F_OPEN;
	if (errors == P2Z_ERRORS_REMOUNT_RO)
		p2z_zone_set_rdonly(zt, "I/O error");
	p2z_log(LOG_WARNING,
		"zone %" PRIu64 ": %s error, zone %s, errors=%s: %s", zidx,
		write ? "write" : "read", p2z_zone_cond_name(zi->cond),
		p2z_errors_name(errors), p2z_zone_error_action(z, errors));

	if (data_size <= z->data_bytes)
		z->data_bytes = data_size;
	else if (!(zi->cond == P2Z_ZONE_COND_FULL &&
		   z->size_bytes == z->cap_bytes))
		z->data_bytes = data_size;
	__p2z_zone_set_size(zt, z, data_size);
	z->wp_bytes = wp;
	z->cond = zi->cond;
	__p2z_zone_account(zt, z);
}

/*
 * Re-read a zone after an I/O error and apply the errors= policy
 * (__zonefs_io_error()). The caller holds z->wr_lock; readers are drained
 * first since the write pointer may move back.
 */
void __p2z_zone_io_error(struct p2z_zone_table *zt, struct p2z_zone *z,
			 uint64_t zidx, bool write)
{
	struct p2z_zone_info zi;
	int ret;

	pthread_rwlock_wrlock(&z->io_lock);
	__p2z_zone_drain_reads(z);
	ret = p2z_dev_report_zones(zt->dev, zidx, 1, &zi);
	pthread_mutex_lock(&z->lock);
	if (ret == 1 && zi.start_lba * zt->geom.lba_bytes == z->start_bytes) {
		__p2z_zone_apply_error(zt, z, zidx, &zi, write);
	} else {
		p2z_log(LOG_ERR,
			"zone %" PRIu64
			": cannot read its state after an I/O error (%d)",
			zidx, ret < 0 ? ret : -EIO);
		if (zt->opts.errors == P2Z_ERRORS_REMOUNT_RO)
			p2z_zone_set_rdonly(zt, "I/O error");
	}
	pthread_mutex_unlock(&z->lock);
	pthread_rwlock_unlock(&z->io_lock);
}

void p2z_zone_io_error(struct p2z_zone_table *zt, struct p2z_zone *z,
		       uint64_t zidx, bool write)
{
	pthread_mutex_lock(&z->wr_lock);
	__p2z_zone_io_error(zt, z, zidx, write);
	pthread_mutex_unlock(&z->wr_lock);
}
