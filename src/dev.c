// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Device dispatcher: the backend table, backend selection, transfer
 * splitting and the one NVMe status -> errno map.
 *
 * Backends are listed in one flat const table, in probe order: nvme first
 * (an NVMe generic char device is also what a zoned block device resolves
 * to when its namespace is npo2), then zbd, then emu, whose probe only
 * accepts regular files carrying the emulator's magic.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "po2zfs/dev.h"
#include "po2zfs/log.h"
#include "dev_priv.h"

static const struct p2z_dev_ops *const p2z_backends[] = {
#ifdef P2Z_HAVE_NVME
	&p2z_dev_nvme_ops,
#endif
#ifdef P2Z_HAVE_ZBD
	&p2z_dev_zbd_ops,
#endif
	&p2z_dev_emu_ops,
};

#define P2Z_NR_BACKENDS (sizeof(p2z_backends) / sizeof(p2z_backends[0]))

/*
 * Required ops. probe may be NULL (the backend is then only used by name)
 * and append may be NULL (p2z_dev_append() then fails with -EOPNOTSUPP).
 */
static bool p2z_dev_ops_are_valid(const struct p2z_dev_ops *ops)
{
	/* The asynchronous group is all there or not at all. */
	int nr_async = !!ops->queue_init + !!ops->queue_exit + !!ops->submit +
		       !!ops->reap;

	return ops->name && ops->open && ops->close && ops->report_zones &&
	       ops->zone_mgmt && ops->pread && ops->pwrite && ops->flush &&
	       (!nr_async || nr_async == 4);
}

static bool p2z_is_po2_u32(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* Catch a backend that filled dev->info inconsistently before anyone divides
 * by it. */
static int p2z_dev_check_info(const struct p2z_dev *dev)
{
	const struct p2z_dev_info *in = &dev->info;

	if (!p2z_is_po2_u32(in->lba_bytes) || in->lba_bytes < 512 ||
	    !in->nr_zones || !in->zone_lba ||
	    in->max_xfer_bytes < in->lba_bytes ||
	    in->max_xfer_bytes % in->lba_bytes ||
	    in->max_append_bytes % in->lba_bytes ||
	    (in->buf_align && !p2z_is_po2_u32(in->buf_align))) {
		p2z_log(LOG_ERR,
			"%s: backend %s reported an invalid geometry (lba %u, zones %llu, zone %llu LBAs, xfer %u, append %u, alignment %u)",
			dev->path, dev->ops->name, in->lba_bytes,
			(unsigned long long)in->nr_zones,
			(unsigned long long)in->zone_lba, in->max_xfer_bytes,
			in->max_append_bytes, in->buf_align);
		return -EIO;
	}
	return 0;
}

static int p2z_dev_find_backend(const char *path, const char *backend,
				const struct p2z_dev_ops **opsp)
{
	const struct p2z_dev_ops *ops;
	struct stat st;
	size_t i;

	for (i = 0; backend && i < P2Z_NR_BACKENDS; i++) {
		ops = p2z_backends[i];
		if (!ops->name || strcmp(ops->name, backend))
			continue;
		if (!p2z_dev_ops_are_valid(ops)) {
			p2z_log(LOG_ERR, "backend %s is incomplete", backend);
			return -ENOSYS;
		}
		*opsp = ops;
		return 0;
	}
	if (backend) {
		p2z_log(LOG_ERR, "unknown or unbuilt backend \"%s\"", backend);
		return -EINVAL;
	}

	/*
	 * Probes first: the block name of an npo2 namespace has no node in
	 * /dev (the kernel hides the disk), yet the nvme backend takes it.
	 */
	for (i = 0; i < P2Z_NR_BACKENDS; i++) {
		ops = p2z_backends[i];
		if (!ops->probe || !p2z_dev_ops_are_valid(ops))
			continue;
		if (ops->probe(path) == 1) {
			*opsp = ops;
			return 0;
		}
	}
	/* Say "no such file" rather than "no backend" for a typo. */
	if (stat(path, &st) < 0) {
		int ret = -errno;

		p2z_log(LOG_ERR, "%s: %s", path, strerror(-ret));
		return ret;
	}
	p2z_log(LOG_ERR, "%s: not a zoned device nor an emulated zoned image",
		path);
	return -ENODEV;
}

int p2z_dev_open(const char *path, const char *backend, unsigned int flags,
		 struct p2z_dev **devp)
{
	const struct p2z_dev_ops *ops = NULL;
	struct p2z_dev *dev;
	char *dup;
	int ret;

	if (!path || !devp)
		return -EINVAL;
	ret = p2z_dev_find_backend(path, backend, &ops);
	if (ret)
		return ret;
	dup = strdup(path);
	if (!dup)
		return -ENOMEM;
	ret = ops->open(path, flags, &dev);
	if (ret) {
		free(dup);
		return ret;
	}
	dev->ops = ops;
	dev->path = dup;
	dev->flags = flags;
	ret = p2z_dev_check_info(dev);
	if (ret) {
		p2z_dev_close(dev);
		return ret;
	}
	if (!dev->info.buf_align)
		dev->info.buf_align = 1;
	*devp = dev;
	return 0;
}

void p2z_dev_close(struct p2z_dev *dev)
{
	char *path;

	if (!dev)
		return;
	path = dev->path;
	dev->ops->close(dev);
	free(path);
}

/* Count one request of kind @op that started at @t0 and returned @ret. */
ssize_t p2z_dev_count(struct p2z_dev *dev, unsigned int op, uint64_t t0,
		      ssize_t ret)
{
	bool sized = op == P2Z_DEV_STAT_READ || op == P2Z_DEV_STAT_WRITE ||
		     op == P2Z_DEV_STAT_APPEND || op == P2Z_DEV_STAT_FUA;

	p2z_stat_add(&dev->stats[op], t0, sized || ret < 0 ? ret : 0, sized);
	return ret;
}

int p2z_dev_report_zones(struct p2z_dev *dev, uint64_t zidx, unsigned int nr,
			 struct p2z_zone_info *zi)
{
	uint64_t t0;

	if (zidx >= dev->info.nr_zones || !nr)
		return 0;
	if (nr > dev->info.nr_zones - zidx)
		nr = dev->info.nr_zones - zidx;
	t0 = p2z_stat_now();
	return (int)p2z_dev_count(dev, P2Z_DEV_STAT_REPORT, t0,
				  dev->ops->report_zones(dev, zidx, nr, zi));
}

int p2z_dev_zone_mgmt(struct p2z_dev *dev, uint64_t zidx, enum p2z_zone_op op)
{
	uint64_t t0;

	if (zidx >= dev->info.nr_zones)
		return -EINVAL;
	t0 = p2z_stat_now();
	return (int)p2z_dev_count(dev, P2Z_DEV_STAT_MGMT, t0,
				  dev->ops->zone_mgmt(dev, zidx, op));
}

static bool p2z_dev_is_aligned(const struct p2z_dev *dev, size_t len,
			       uint64_t ofs)
{
	return !(len % dev->info.lba_bytes) && !(ofs % dev->info.lba_bytes);
}

static ssize_t p2z_dev_do_pread(struct p2z_dev *dev, void *buf, size_t len,
				uint64_t ofs)
{
	size_t done = 0;

	if (!p2z_dev_is_aligned(dev, len, ofs))
		return -EINVAL;
	while (done < len) {
		size_t n = len - done;
		ssize_t ret;

		/* Such a backend issues the pieces of one read concurrently. */
		if (!dev->ops->splits_reads && n > dev->info.max_xfer_bytes)
			n = dev->info.max_xfer_bytes;
		ret = dev->ops->pread(dev, (char *)buf + done, n, ofs + done);
		if (ret < 0)
			return ret;
		/* A backend returning 0 would loop forever. */
		if (!ret)
			return -EIO;
		done += (size_t)ret;
	}
	return (ssize_t)done;
}

ssize_t p2z_dev_pread(struct p2z_dev *dev, void *buf, size_t len, uint64_t ofs)
{
	uint64_t t0 = p2z_stat_now();

	return p2z_dev_count(dev, P2Z_DEV_STAT_READ, t0,
			     p2z_dev_do_pread(dev, buf, len, ofs));
}

/*
 * The flags a backend gets: P2Z_IO_FUA only if it sets ops->fua; the
 * dispatcher flushes after the write for the others.
 */
static unsigned int p2z_dev_op_flags(const struct p2z_dev *dev,
				     unsigned int flags)
{
	return dev->ops->fua ? flags : flags & ~P2Z_IO_FUA;
}

/*
 * A write asked for with P2Z_IO_FUA: on a backend without FUA the written
 * bytes are durable once the device is flushed (counted as a flush, since
 * it is one on the device). Every such write is also counted as "fua",
 * whatever the backend does, with the time until it was durable.
 */
static ssize_t p2z_dev_fua_flush(struct p2z_dev *dev, unsigned int flags,
				 uint64_t t0, ssize_t written)
{
	ssize_t ret = written;

	if (!(flags & P2Z_IO_FUA))
		return written;
	if (written > 0 && !dev->ops->fua)
		ret = p2z_dev_flush(dev);
	if (ret >= 0)
		ret = written;
	return p2z_dev_count(dev, P2Z_DEV_STAT_FUA, t0, ret);
}

static ssize_t p2z_dev_do_pwrite(struct p2z_dev *dev, const void *buf,
				 size_t len, uint64_t ofs, unsigned int flags)
{
	size_t done = 0;

	if (!p2z_dev_is_aligned(dev, len, ofs))
		return -EINVAL;
	while (done < len) {
		size_t n = len - done;
		ssize_t ret;

		if (n > dev->info.max_xfer_bytes)
			n = dev->info.max_xfer_bytes;
		ret = dev->ops->pwrite(dev, (const char *)buf + done, n,
				       ofs + done,
				       p2z_dev_op_flags(dev, flags));
		if (ret <= 0) {
			if (done)
				break;
			return ret < 0 ? ret : -EIO;
		}
		done += (size_t)ret;
	}
	return (ssize_t)done;
}

ssize_t p2z_dev_pwrite(struct p2z_dev *dev, const void *buf, size_t len,
		       uint64_t ofs, unsigned int flags)
{
	uint64_t t0 = p2z_stat_now();
	ssize_t ret;

	ret = p2z_dev_count(dev, P2Z_DEV_STAT_WRITE, t0,
			    p2z_dev_do_pwrite(dev, buf, len, ofs, flags));
	return p2z_dev_fua_flush(dev, flags, t0, ret);
}

/*
 * A piece of a split append that did not land right after the one before:
 * the request's data is not where its one landing LBA says. The zone layer
 * re-reads the zone on the error.
 */
ssize_t p2z_dev_append_strayed(struct p2z_dev *dev, uint64_t zidx,
			       uint64_t expect_lba, uint64_t got_lba)
{
	p2z_log(LOG_ERR,
		"%s: zone %llu: a piece of a split append landed at LBA %llu, "
		"not right after the previous one (LBA %llu)",
		dev->path ? dev->path : dev->ops->name,
		(unsigned long long)zidx, (unsigned long long)got_lba,
		(unsigned long long)expect_lba);
	return -EIO;
}

/*
 * Appends above the append limit go in pieces, one after the other; each
 * after the first must land right where the previous one ended.
 */
static ssize_t p2z_dev_do_append(struct p2z_dev *dev, uint64_t zidx,
				 const void *buf, size_t len, uint64_t *lba,
				 unsigned int flags)
{
	size_t max = dev->info.max_append_bytes;
	uint64_t next_lba = 0;
	size_t done = 0;

	if (!dev->ops->append || !max)
		return -EOPNOTSUPP;
	if (zidx >= dev->info.nr_zones || !p2z_dev_is_aligned(dev, len, 0))
		return -EINVAL;
	if (max > dev->info.max_xfer_bytes)
		max = dev->info.max_xfer_bytes;
	while (done < len) {
		size_t n = len - done;
		uint64_t piece_lba;
		ssize_t ret;

		if (n > max)
			n = max;
		ret = dev->ops->append(dev, zidx, (const char *)buf + done, n,
				       &piece_lba,
				       p2z_dev_op_flags(dev, flags));
		if (ret <= 0) {
			if (done)
				break;
			return ret < 0 ? ret : -EIO;
		}
		if (!done)
			*lba = piece_lba;
		else if (piece_lba != next_lba)
			return p2z_dev_append_strayed(dev, zidx, next_lba,
						      piece_lba);
		done += (size_t)ret;
		next_lba = piece_lba + (uint64_t)ret / dev->info.lba_bytes;
	}
	return (ssize_t)done;
}

ssize_t p2z_dev_append(struct p2z_dev *dev, uint64_t zidx, const void *buf,
		       size_t len, uint64_t *lba, unsigned int flags)
{
	uint64_t t0 = p2z_stat_now();
	ssize_t ret;

	ret = p2z_dev_count(dev, P2Z_DEV_STAT_APPEND, t0,
			    p2z_dev_do_append(dev, zidx, buf, len, lba, flags));
	return p2z_dev_fua_flush(dev, flags, t0, ret);
}

int p2z_dev_flush(struct p2z_dev *dev)
{
	uint64_t t0 = p2z_stat_now();

	return (int)p2z_dev_count(dev, P2Z_DEV_STAT_FLUSH, t0,
				  dev->ops->flush(dev));
}

/*
 * Status code type << 8 | status code, as the table at the top of dev.h
 * states it. Only statuses with a meaning of their own are listed; the rest
 * is -EIO.
 */
static const struct {
	uint16_t status;
	int err;
} p2z_nvme_status_map[] = {
	{ P2Z_NVME_SC_SUCCESS, 0 },
	{ P2Z_NVME_SC_INVALID_FIELD, -EINVAL },
	{ P2Z_NVME_SC_INTERNAL, -EIO },
	{ P2Z_NVME_SC_LBA_RANGE, -EINVAL },
	{ P2Z_NVME_SC_ZONE_BOUNDARY, -ERANGE },
	{ P2Z_NVME_SC_ZONE_FULL, -ENOSPC },
	{ P2Z_NVME_SC_ZONE_READ_ONLY, -EROFS },
	{ P2Z_NVME_SC_ZONE_OFFLINE, -ENXIO },
	{ P2Z_NVME_SC_ZONE_INVALID_WRITE, -EILSEQ },
	{ P2Z_NVME_SC_ZONE_TOO_MANY_ACTIVE, -EOVERFLOW },
	{ P2Z_NVME_SC_ZONE_TOO_MANY_OPEN, -ETOOMANYREFS },
	{ P2Z_NVME_SC_ZONE_INVALID_TRANSITION, -EBADRQC },
	{ P2Z_NVME_SC_UNWRITTEN, -EIO },
};

/*
 * SCT (3 bits) << 8 | SC (8 bits): everything above (CRD, More, DNR) is
 * dropped.
 */
#define P2Z_NVME_STATUS_MASK 0x7ff

/*
 * One bit per possible masked status: an unknown status is logged the first
 * time it is seen, as printk_once() would, so that a failing device does not
 * flood the log. Written with atomics only; it holds no setting.
 */
static uint64_t p2z_nvme_status_seen[(P2Z_NVME_STATUS_MASK + 1) / 64];

int p2z_dev_nvme_status_errno(uint16_t status)
{
	uint64_t bit, old;
	size_t i;

	status &= P2Z_NVME_STATUS_MASK;
	for (i = 0;
	     i < sizeof(p2z_nvme_status_map) / sizeof(p2z_nvme_status_map[0]);
	     i++)
		if (p2z_nvme_status_map[i].status == status)
			return p2z_nvme_status_map[i].err;

	bit = UINT64_C(1) << (status % 64);
	old = __atomic_fetch_or(&p2z_nvme_status_seen[status / 64], bit,
				__ATOMIC_RELAXED);
	if (!(old & bit))
		p2z_log(LOG_WARNING,
			"NVMe status 0x%03x (type %u, code 0x%02x) mapped to EIO",
			status, status >> 8, status & 0xff);
	return -EIO;
}

const char *p2z_zone_cond_name(uint8_t cond)
{
	switch (cond) {
	case P2Z_ZONE_COND_NOT_WP:
		return "not-wp";
	case P2Z_ZONE_COND_EMPTY:
		return "empty";
	case P2Z_ZONE_COND_IMP_OPEN:
		return "implicit-open";
	case P2Z_ZONE_COND_EXP_OPEN:
		return "explicit-open";
	case P2Z_ZONE_COND_CLOSED:
		return "closed";
	case P2Z_ZONE_COND_READONLY:
		return "read-only";
	case P2Z_ZONE_COND_FULL:
		return "full";
	case P2Z_ZONE_COND_OFFLINE:
		return "offline";
	}
	return "unknown";
}

/* Every backend po2zfs has, built or not, in probe order. */
static const char *const p2z_backend_names[] = { "nvme", "zbd", "emu" };

bool p2z_dev_backend_is_known(const char *name)
{
	size_t nr = sizeof(p2z_backend_names) / sizeof(p2z_backend_names[0]);
	size_t i;

	for (i = 0; name && i < nr; i++)
		if (!strcmp(name, p2z_backend_names[i]))
			return true;
	return false;
}
