// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Zone table: cached write pointer, condition and capacity of every zone,
 * and the operations the filesystem performs on zones. The errors= policy
 * applied after an I/O error is zone_errors.c's. Modelled on Linux zonefs
 * (fs/zonefs/super.c and file.c); the lock order is documented in
 * po2zfs/zone.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zone_priv.h"

#include "po2zfs/cond.h"
#include "po2zfs/log.h"

static struct p2z_zone *p2z_zone_of(struct p2z_zone_table *zt, uint64_t zidx)
{
	if (zidx >= zt->geom.nr_zones)
		return NULL;
	return &zt->zones[zidx];
}

/*
 * The errors= policy after a device error (zone_errors.c), with z->wr_lock
 * held or not. It may change the zone's size, mode or access behind its
 * file, whatever request met the error: flagged for
 * p2z_zone_clear_changed().
 */
static void __p2z_zone_error(struct p2z_zone_table *zt, struct p2z_zone *z,
			     uint64_t zidx, bool write)
{
	__p2z_zone_io_error(zt, z, zidx, write);
	atomic_store(&z->changed, true);
}

/*
 * A barrier against the zone's writes (zone_seq.c): the write in flight,
 * submitted on a queue without wr_lock, ends first, and none starts or is
 * accounted until the policy took the write pointer from the device; the
 * writes held meanwhile go on from there. The caller holds no turn of the
 * zone and has no failed write of it unsettled (the drain rule).
 */
static void p2z_zone_error(struct p2z_zone_table *zt, struct p2z_zone *z,
			   uint64_t zidx, bool write)
{
	bool seq = p2z_zone_is_seq(z);

	if (seq)
		p2z_zone_seq_hold(z);
	p2z_zone_io_error(zt, z, zidx, write);
	atomic_store(&z->changed, true);
	if (seq) {
		p2z_zone_seq_unbarrier(z);
		p2z_zone_seq_kick(zt, z);
	}
}

static bool p2z_zone_is_aligned(const struct p2z_zone_table *zt, uint64_t v)
{
	return (v & (zt->geom.lba_bytes - 1)) == 0;
}

/*
 * Keep nr_active in step with the zone; z->lock held. Every change of the
 * cached state ends here: it also bumps the zone's state_seq.
 */
void __p2z_zone_account(struct p2z_zone_table *zt, struct p2z_zone *z)
{
	bool active = p2z_zone_is_seq(z) &&
		      !(z->flags & (P2Z_ZONE_F_RDONLY | P2Z_ZONE_F_OFFLINE)) &&
		      ((z->flags & P2Z_ZONE_F_OPEN) ||
		       (z->wp_bytes > 0 && z->wp_bytes < z->cap_bytes));

	z->state_seq++;
	if (active == z->active)
		return;
	if (active)
		atomic_fetch_add(&zt->priv->nr_active, 1);
	else
		atomic_fetch_sub(&zt->priv->nr_active, 1);
	z->active = active;
}

/* Change the file size and the usage counter; z->lock held. */
void __p2z_zone_set_size(struct p2z_zone_table *zt, struct p2z_zone *z,
			 uint64_t size)
{
	/* Unsigned wrap-around makes this a subtraction when shrinking. */
	atomic_fetch_add(&zt->priv->used_bytes, size - z->size_bytes);
	z->size_bytes = size;
}

/*
 * The device's write pointer as an offset in the zone: within [0, cap], the
 * capacity when full, by the write pointer rule of the device layer
 * (struct p2z_zone_info). Not valid for read-only and offline zones on ZNS:
 * shown, never used as a size.
 */
uint64_t p2z_zone_info_wp(const struct p2z_zone_table *zt,
			  const struct p2z_zone *z,
			  const struct p2z_zone_info *zi)
{
	uint64_t start = z->start_bytes / zt->geom.lba_bytes;

	if (!p2z_zone_is_seq(z))
		return 0;
	return (zi->wp_lba - start) * zt->geom.lba_bytes;
}

static int p2z_zone_init_locks(struct p2z_zone *z)
{
	pthread_rwlockattr_t attr;
	int ret;

	ret = pthread_rwlockattr_init(&attr);
	if (ret)
		return -ret;
	/* A reset waiting for readers must not be starved by new ones. */
	pthread_rwlockattr_setkind_np(
		&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	ret = pthread_rwlock_init(&z->io_lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	if (ret)
		return -ret;
	ret = pthread_mutex_init(&z->wr_lock, NULL);
	if (ret)
		goto out_destroy_io_lock;
	ret = pthread_mutex_init(&z->lock, NULL);
	if (ret)
		goto out_destroy_wr_lock;
	ret = pthread_cond_init(&z->rd_cond, NULL);
	if (ret)
		goto out_destroy_lock;
	ret = -p2z_zone_seq_init(z);
	if (ret)
		goto out_destroy_rd_cond;
	return 0;

out_destroy_rd_cond:
	pthread_cond_destroy(&z->rd_cond);
out_destroy_lock:
	pthread_mutex_destroy(&z->lock);
out_destroy_wr_lock:
	pthread_mutex_destroy(&z->wr_lock);
out_destroy_io_lock:
	pthread_rwlock_destroy(&z->io_lock);
	return -ret;
}

static void p2z_zone_exit_locks(struct p2z_zone *z)
{
	p2z_zone_seq_destroy(z);
	pthread_cond_destroy(&z->rd_cond);
	pthread_mutex_destroy(&z->lock);
	pthread_mutex_destroy(&z->wr_lock);
	pthread_rwlock_destroy(&z->io_lock);
}

/* Set up one zone from its report at mount (zonefs_check_zone_condition()). */
static int p2z_zone_init_one(struct p2z_zone_table *zt, struct p2z_zone *z,
			     uint64_t zidx, const struct p2z_zone_info *zi)
{
	const struct p2z_geom *g = &zt->geom;
	uint64_t start = p2z_geom_zone_start(g, zidx);

	if (zi->start_lba != start || !zi->cap_lba ||
	    zi->cap_lba > g->zone_lba ||
	    (zi->type != P2Z_ZONE_TYPE_SEQ && zi->type != P2Z_ZONE_TYPE_CNV)) {
		p2z_log(LOG_ERR,
			"zone %" PRIu64 ": inconsistent report (start %" PRIu64
			", capacity %" PRIu64 ", type %u)",
			zidx, zi->start_lba, zi->cap_lba, zi->type);
		return -EIO;
	}
	z->type = zi->type;
	z->cond = zi->cond;
	z->start_bytes = start * g->lba_bytes;
	z->cap_bytes = zi->cap_lba * g->lba_bytes;
	/* The backend checked the write pointer (struct p2z_zone_info). */
	z->wp_bytes = p2z_zone_info_wp(zt, z, zi);
	z->size_bytes = p2z_zone_is_seq(z) ? z->wp_bytes : z->cap_bytes;
	if (zi->cond == P2Z_ZONE_COND_READONLY) {
		/*
		 * The write pointer of a read-only zone is not valid (ZNS), so
		 * the amount of data is unknown: size 0, as zonefs does. The
		 * file stays, read-only.
		 */
		p2z_log(LOG_WARNING, "zone %" PRIu64 ": read-only zone", zidx);
		z->flags |= P2Z_ZONE_F_RDONLY;
		if (p2z_zone_is_seq(z))
			z->size_bytes = 0;
	} else if (zi->cond == P2Z_ZONE_COND_OFFLINE) {
		p2z_log(LOG_WARNING, "zone %" PRIu64 ": offline zone", zidx);
		z->flags |= P2Z_ZONE_F_OFFLINE;
		z->size_bytes = 0;
	}
	z->data_bytes = z->size_bytes;
	atomic_fetch_add(&zt->priv->used_bytes, z->size_bytes);
	zt->priv->cap_bytes += z->cap_bytes;
	__p2z_zone_account(zt, z);
	return 0;
}

/*
 * A zone left explicitly open by an earlier run: close it so that explicit
 * open accounting starts at zero (zonefs does the same at mount). Closing
 * an unwritten zone would leave it active on ZNS, so reset it instead.
 */
static int p2z_zone_close_stale(struct p2z_zone_table *zt, struct p2z_zone *z,
				uint64_t zidx)
{
	enum p2z_zone_op op = z->wp_bytes ? P2Z_ZONE_OP_CLOSE :
					    P2Z_ZONE_OP_RESET;
	int ret;

	ret = p2z_dev_zone_mgmt(zt->dev, zidx, op);
	if (ret) {
		p2z_log(LOG_ERR, "zone %" PRIu64 ": closing failed (%d)", zidx,
			ret);
		return ret;
	}
	z->cond = z->wp_bytes ? P2Z_ZONE_COND_CLOSED : P2Z_ZONE_COND_EMPTY;
	__p2z_zone_account(zt, z);
	return 0;
}

static int p2z_zone_table_load_one(const struct p2z_zone_info *zi,
				   uint64_t zidx, void *arg)
{
	struct p2z_zone_table *zt = arg;

	return p2z_zone_init_one(zt, &zt->zones[zidx], zidx, zi);
}

static int p2z_zone_table_report(struct p2z_zone_table *zt)
{
	return p2z_dev_zone_walk(zt->dev, 0, zt->geom.nr_zones,
				 p2z_zone_table_load_one, zt);
}

/* Index the zones by type and close stale explicitly open zones. */
static int p2z_zone_table_index(struct p2z_zone_table *zt)
{
	uint64_t zidx;
	int ret;

	for (zidx = 0; zidx < zt->geom.nr_zones; zidx++)
		if (p2z_zone_is_seq(&zt->zones[zidx]))
			zt->nr_seq++;
	zt->nr_cnv = zt->geom.nr_zones - zt->nr_seq;
	zt->seq_zidx = calloc(zt->nr_seq ? zt->nr_seq : 1, sizeof(uint64_t));
	zt->cnv_zidx = calloc(zt->nr_cnv ? zt->nr_cnv : 1, sizeof(uint64_t));
	if (!zt->seq_zidx || !zt->cnv_zidx)
		return -ENOMEM;
	zt->nr_seq = 0;
	zt->nr_cnv = 0;
	for (zidx = 0; zidx < zt->geom.nr_zones; zidx++) {
		struct p2z_zone *z = &zt->zones[zidx];

		if (!p2z_zone_is_seq(z)) {
			zt->cnv_zidx[zt->nr_cnv++] = zidx;
			continue;
		}
		zt->seq_zidx[zt->nr_seq++] = zidx;
		if (z->cond == P2Z_ZONE_COND_EXP_OPEN && !zt->opts.rdonly) {
			ret = p2z_zone_close_stale(zt, z, zidx);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static void p2z_zone_table_setup(struct p2z_zone_table *zt)
{
	const struct p2z_dev_info *info = &zt->dev->info;

	atomic_init(&zt->priv->rdonly, zt->opts.rdonly);
	atomic_init(&zt->priv->used_bytes, 0);
	atomic_init(&zt->priv->nr_active, 0);
	atomic_init(&zt->priv->nr_exp_open, 0);
	zt->priv->use_append = !zt->opts.no_append && info->max_append_bytes &&
			       zt->dev->ops->append;
	if (zt->opts.explicit_open && !info->max_open)
		p2z_log(LOG_NOTICE,
			"the device has no open zone limit: explicit-open ignored");
	zt->priv->max_exp_open = zt->opts.explicit_open ? info->max_open : 0;
}

int p2z_zone_table_open(struct p2z_dev *dev, const struct p2z_zone_opts *opts,
			struct p2z_zone_table **ztp)
{
	struct p2z_zone_table *zt;
	uint64_t zidx;
	int ret;

	zt = calloc(1, sizeof(*zt));
	if (!zt)
		return -ENOMEM;
	zt->dev = dev;
	zt->opts = *opts;
	ret = p2z_geom_init(&zt->geom, dev->info.lba_bytes, dev->info.zone_lba,
			    dev->info.nr_zones);
	if (ret) {
		p2z_log(LOG_ERR, "%s: unusable geometry: %s", dev->path,
			p2z_geom_strerror(ret));
		free(zt);
		return ret;
	}
	zt->priv = calloc(1, sizeof(*zt->priv));
	zt->zones = calloc(zt->geom.nr_zones, sizeof(*zt->zones));
	if (!zt->priv || !zt->zones) {
		free(zt->zones);
		free(zt->priv);
		free(zt);
		return -ENOMEM;
	}
	p2z_zone_table_setup(zt);
	for (zidx = 0; zidx < zt->geom.nr_zones; zidx++) {
		ret = p2z_zone_init_locks(&zt->zones[zidx]);
		if (ret)
			goto out_exit_locks;
	}
	ret = p2z_zone_table_report(zt);
	if (!ret)
		ret = p2z_zone_table_index(zt);
	if (ret)
		goto out_exit_locks;
	*ztp = zt;
	return 0;

out_exit_locks:
	while (zidx--)
		p2z_zone_exit_locks(&zt->zones[zidx]);
	free(zt->seq_zidx);
	free(zt->cnv_zidx);
	free(zt->zones);
	free(zt->priv);
	free(zt);
	return ret;
}

void p2z_zone_table_close(struct p2z_zone_table *zt)
{
	uint64_t zidx;

	if (!zt)
		return;
	p2z_zone_seq_expire(zt, true);
	for (zidx = 0; zidx < zt->geom.nr_zones; zidx++) {
		struct p2z_zone *z = &zt->zones[zidx];

		/* Files still open for write at unmount: close their zones. */
		while (z->wr_refs)
			p2z_zone_put_write(zt, zidx);
		p2z_zone_exit_locks(z);
	}
	free(zt->seq_zidx);
	free(zt->cnv_zidx);
	free(zt->zones);
	free(zt->priv);
	free(zt);
}

bool p2z_zone_table_is_rdonly(struct p2z_zone_table *zt)
{
	return atomic_load(&zt->priv->rdonly);
}

void p2z_zone_table_usage(struct p2z_zone_table *zt, struct p2z_zone_usage *u)
{
	u->cap_bytes = zt->priv->cap_bytes;
	u->used_bytes = atomic_load(&zt->priv->used_bytes);
	u->nr_active = atomic_load(&zt->priv->nr_active);
	u->nr_exp_open = atomic_load(&zt->priv->nr_exp_open);
}

int p2z_zone_table_flush(struct p2z_zone_table *zt)
{
	int ret = p2z_dev_flush(zt->dev);

	if (ret) {
		p2z_log(LOG_ERR, "device flush failed (%d)", ret);
		return -EIO;
	}
	return 0;
}

struct p2z_stat *p2z_zone_table_dev_stats(struct p2z_zone_table *zt)
{
	return zt->dev->stats;
}

void p2z_zone_table_dev_facts(const struct p2z_zone_table *zt,
			      struct p2z_zone_dev_facts *f)
{
	const struct p2z_dev *dev = zt->dev;

	f->backend = dev->ops->name;
	f->path = dev->path;
	f->max_open = dev->info.max_open;
	f->max_active = dev->info.max_active;
	f->max_append_bytes = dev->info.max_append_bytes;
}

bool p2z_zone_clear_changed(struct p2z_zone_table *zt, uint64_t zidx)
{
	struct p2z_zone *z = p2z_zone_of(zt, zidx);

	return z && atomic_exchange(&z->changed, false);
}

const char *p2z_zone_state_cond_name(const struct p2z_zone_state *st)
{
	return p2z_zone_cond_name(st->cond);
}

/*
 * The device's condition of a zone, reported without any zone lock: the
 * reads and writes of the zone would otherwise wait for the report. Taken
 * only if the cached state did not change meanwhile (a write, reset,
 * finish, open or close known to the table is newer than the report).
 * Returns with z->lock held.
 */
static void p2z_zone_refresh_lock(struct p2z_zone_table *zt, struct p2z_zone *z,
				  uint64_t zidx)
{
	struct p2z_zone_info zi;
	uint64_t seq;
	bool ok;

	pthread_mutex_lock(&z->lock);
	seq = z->state_seq;
	pthread_mutex_unlock(&z->lock);
	ok = p2z_dev_report_zones(zt->dev, zidx, 1, &zi) == 1;
	pthread_mutex_lock(&z->lock);
	if (ok && z->state_seq == seq)
		z->cond = zi.cond;
}

int p2z_zone_get_state(struct p2z_zone_table *zt, uint64_t zidx, bool refresh,
		       struct p2z_zone_state *st)
{
	struct p2z_zone *z = p2z_zone_of(zt, zidx);

	if (!z)
		return -EINVAL;
	if (refresh)
		p2z_zone_refresh_lock(zt, z, zidx);
	else
		pthread_mutex_lock(&z->lock);
	st->zidx = zidx;
	st->type = z->type;
	st->cond = z->cond;
	st->flags = z->flags;
	st->start_bytes = z->start_bytes;
	st->cap_bytes = z->cap_bytes;
	st->wp_bytes = z->wp_bytes;
	st->size_bytes = z->size_bytes;
	pthread_mutex_unlock(&z->lock);
	/* Racy by nature: a hint for xattrs, exact when nobody opens. */
	st->wr_refs = __atomic_load_n(&z->wr_refs, __ATOMIC_RELAXED);
	return 0;
}

ssize_t p2z_zone_read(struct p2z_zone_table *zt, uint64_t zidx, void *buf,
		      size_t len, uint64_t ofs)
{
	struct p2z_zone *z = p2z_zone_of(zt, zidx);
	uint64_t size, data, n, dn;
	ssize_t ret = 0;

	if (!z || !p2z_zone_is_aligned(zt, ofs) ||
	    !p2z_zone_is_aligned(zt, len))
		return -EINVAL;
	pthread_rwlock_rdlock(&z->io_lock);
	pthread_mutex_lock(&z->lock);
	size = z->size_bytes;
	data = z->data_bytes;
	if (z->flags & P2Z_ZONE_F_OFFLINE)
		ret = -EPERM;
	pthread_mutex_unlock(&z->lock);
	if (ret || ofs >= size || !len)
		goto out_unlock;
	n = size - ofs < len ? size - ofs : len;
	dn = ofs >= data ? 0 : (data - ofs < n ? data - ofs : n);
	if (dn) {
		ret = p2z_dev_pread(zt->dev, buf, dn, z->start_bytes + ofs);
		if (ret >= 0 && (uint64_t)ret != dn)
			ret = -EIO;
		if (ret < 0)
			goto out_unlock;
	}
	memset((char *)buf + dn, 0, n - dn);
	ret = n;
out_unlock:
	pthread_rwlock_unlock(&z->io_lock);
	if (ret < 0 && ret != -EPERM && p2z_zone_err_is_io(ret)) {
		p2z_log(LOG_ERR,
			"zone %" PRIu64 ": read at %" PRIu64 " failed (%zd)",
			zidx, ofs, ret);
		p2z_zone_error(zt, z, zidx, false);
		ret = -EIO;
	}
	return ret;
}

void __p2z_zone_drain_reads(struct p2z_zone *z)
{
	pthread_mutex_lock(&z->lock);
	while (z->rd_inflight)
		p2z_cond_wait(&z->rd_cond, &z->lock);
	pthread_mutex_unlock(&z->lock);
}

ssize_t p2z_zone_read_error(struct p2z_zone_table *zt, uint64_t zidx,
			    uint64_t ofs, ssize_t err)
{
	struct p2z_zone *z = p2z_zone_of(zt, zidx);

	if (!z || err >= 0 || err == -EPERM || !p2z_zone_err_is_io((int)err))
		return err;
	p2z_log(LOG_ERR, "zone %" PRIu64 ": read at %" PRIu64 " failed (%zd)",
		zidx, ofs, err);
	p2z_zone_error(zt, z, zidx, false);
	return -EIO;
}

static void p2z_zone_read_end_io(struct p2z_io *io)
{
	struct p2z_zone_rd *rd = (struct p2z_zone_rd *)io;
	struct p2z_zone *z = &rd->zt->zones[rd->zidx];
	ssize_t ret = io->ret;

	pthread_mutex_lock(&z->lock);
	if (!--z->rd_inflight)
		pthread_cond_broadcast(&z->rd_cond);
	pthread_mutex_unlock(&z->lock);
	if (ret >= 0 && (size_t)ret != rd->dn)
		ret = -EIO;
	if (ret >= 0) {
		memset((char *)io->buf + rd->dn, 0, rd->n - rd->dn);
		ret = (ssize_t)rd->n;
	}
	rd->end_io(rd, ret);
}

/* Reap @q until nothing of it is in flight (its end_io calls never block). */
static void p2z_zone_drain_queue(struct p2z_dev_queue *q)
{
	while (p2z_dev_queue_inflight(q))
		p2z_dev_queue_reap(q, 1);
}

ssize_t p2z_zone_read_submit(struct p2z_zone_table *zt, struct p2z_dev_queue *q,
			     struct p2z_zone_rd *rd, uint64_t zidx, void *buf,
			     size_t len, uint64_t ofs)
{
	struct p2z_zone *z = p2z_zone_of(zt, zidx);
	uint64_t size, data;
	ssize_t ret = 0;

	if (!z || !p2z_zone_is_aligned(zt, ofs) ||
	    !p2z_zone_is_aligned(zt, len))
		return -EINVAL;
	/* A reset or errors= drain waits: let it see our reads end first. */
	if (pthread_rwlock_tryrdlock(&z->io_lock)) {
		p2z_zone_drain_queue(q);
		p2z_cond_sleeping();
		pthread_rwlock_rdlock(&z->io_lock);
	}
	pthread_mutex_lock(&z->lock);
	size = z->size_bytes;
	data = z->data_bytes;
	if (z->flags & P2Z_ZONE_F_OFFLINE)
		ret = -EPERM;
	rd->zt = zt;
	rd->zidx = zidx;
	rd->ofs = ofs;
	rd->n = 0;
	rd->dn = 0;
	if (!ret && ofs < size && len) {
		rd->n = size - ofs < len ? size - ofs : len;
		rd->dn = ofs >= data ?
				 0 :
				 (data - ofs < rd->n ? data - ofs : rd->n);
	}
	if (rd->dn)
		z->rd_inflight++;
	pthread_mutex_unlock(&z->lock);
	pthread_rwlock_unlock(&z->io_lock);
	if (ret)
		return ret;
	if (!rd->dn) {
		memset(buf, 0, rd->n);
		return (ssize_t)rd->n;
	}
	memset(&rd->io, 0, sizeof(rd->io));
	rd->io.op = P2Z_IO_READ;
	rd->io.buf = buf;
	rd->io.len = rd->dn;
	rd->io.ofs = z->start_bytes + ofs;
	rd->io.end_io = p2z_zone_read_end_io;
	ret = p2z_dev_submit(q, &rd->io);
	if (!ret)
		return -EINPROGRESS;
	pthread_mutex_lock(&z->lock);
	if (!--z->rd_inflight)
		pthread_cond_broadcast(&z->rd_cond);
	pthread_mutex_unlock(&z->lock);
	return ret;
}

/*
 * Checks of a write, in zonefs' order (zonefs_file_write_iter() then
 * zonefs_file_dio_write()). Sets *ofs for appends and cuts *len at the
 * capacity. z->lock held.
 */
int __p2z_zone_write_check(struct p2z_zone_table *zt, struct p2z_zone *z,
			   uint64_t *ofs, size_t *len, bool append)
{
	if (z->flags & (P2Z_ZONE_F_RDONLY | P2Z_ZONE_F_OFFLINE))
		return -EPERM;
	if (p2z_zone_table_is_rdonly(zt))
		return -EROFS;
	if (append)
		*ofs = z->size_bytes;
	if (*ofs >= z->cap_bytes)
		return -EFBIG;
	if (!p2z_zone_is_aligned(zt, *ofs) || !p2z_zone_is_aligned(zt, *len))
		return -EINVAL;
	if (p2z_zone_is_seq(z) && *ofs != z->wp_bytes)
		return -EINVAL;
	if (*len > z->cap_bytes - *ofs)
		*len = z->cap_bytes - *ofs;
	return 0;
}

/* The write pointer moved by n bytes; z->lock held. */
static void __p2z_zone_advance(struct p2z_zone_table *zt, struct p2z_zone *z,
			       uint64_t n)
{
	z->wp_bytes += n;
	z->data_bytes = z->wp_bytes;
	__p2z_zone_set_size(zt, z, z->wp_bytes);
	if (z->wp_bytes == z->cap_bytes) {
		/* A full zone is neither open nor active any more. */
		z->cond = P2Z_ZONE_COND_FULL;
		z->flags &= ~P2Z_ZONE_F_OPEN;
	} else if (z->cond != P2Z_ZONE_COND_EXP_OPEN) {
		z->cond = P2Z_ZONE_COND_IMP_OPEN;
	}
	__p2z_zone_account(zt, z);
}

/*
 * Write len bytes at the write pointer wp. With zone append the device
 * chooses the LBA: it must be the one the table expects, else the cached
 * write pointer was wrong (someone else wrote the zone) and *desync is set.
 */
static ssize_t p2z_zone_dev_write(struct p2z_zone_table *zt, struct p2z_zone *z,
				  uint64_t zidx, const void *buf, size_t len,
				  uint64_t wp, unsigned int flags, bool *desync)
{
	uint64_t want = (z->start_bytes + wp) / zt->geom.lba_bytes;
	uint64_t lba = want;
	ssize_t n;

	if (!zt->priv->use_append)
		return p2z_dev_pwrite(zt->dev, buf, len, z->start_bytes + wp,
				      flags);
	n = p2z_dev_append(zt->dev, zidx, buf, len, &lba, flags);
	if (n > 0 && lba != want) {
		p2z_log(LOG_ERR,
			"zone %" PRIu64 ": append landed at LBA %" PRIu64
			", expected %" PRIu64,
			zidx, lba, want);
		*desync = true;
	}
	return n;
}

/* A sequential zone's write, in its turn (zone_seq.c). */
static ssize_t p2z_zone_write_seq(struct p2z_zone_table *zt, struct p2z_zone *z,
				  uint64_t zidx, const void *buf, size_t len,
				  uint64_t ofs, bool append, unsigned int flags)
{
	ssize_t n;
	int ret;

	ret = __p2z_zone_seq_enter(zt, z, &ofs, &len, append);
	if (ret || !len)
		return ret;
	n = __p2z_zone_write_turn(zt, z, zidx, buf, len, ofs, flags);
	p2z_zone_seq_kick(zt, z);
	return n;
}

ssize_t __p2z_zone_write_end(struct p2z_zone_table *zt, struct p2z_zone *z,
			     uint64_t zidx, size_t len, uint64_t ofs, ssize_t n,
			     bool desync)
{
	if (n > 0 && !desync) {
		pthread_mutex_lock(&z->lock);
		__p2z_zone_advance(zt, z, n);
		pthread_mutex_unlock(&z->lock);
	}
	if (n == (ssize_t)len && !desync)
		return n;
	if (n < 0 && !p2z_zone_err_is_io(n))
		return n;
	p2z_log(LOG_ERR,
		"zone %" PRIu64 ": write of %zu bytes at %" PRIu64
		" failed (%zd)",
		zidx, len, ofs, n < 0 ? n : (ssize_t)-EIO);
	__p2z_zone_error(zt, z, zidx, true);
	if (n <= 0 || desync)
		n = -EIO;
	return n;
}

ssize_t __p2z_zone_write_turn(struct p2z_zone_table *zt, struct p2z_zone *z,
			      uint64_t zidx, const void *buf, size_t len,
			      uint64_t ofs, unsigned int flags)
{
	bool desync = false;
	ssize_t n;

	pthread_mutex_lock(&z->wr_lock);
	n = p2z_zone_dev_write(zt, z, zidx, buf, len, ofs, flags, &desync);
	n = __p2z_zone_write_end(zt, z, zidx, len, ofs, n, desync);
	pthread_mutex_unlock(&z->wr_lock);
	p2z_zone_seq_leave(z, n != (ssize_t)len || desync);
	return n;
}

static void p2z_zone_write_end_io(struct p2z_io *io);

int __p2z_zone_write_submit(struct p2z_zone_table *zt, struct p2z_zone *z,
			    struct p2z_zone_wr *wr)
{
	int ret;

	memset(&wr->io, 0, sizeof(wr->io));
	wr->io.flags = wr->flags;
	wr->io.buf = (void *)wr->buf;
	wr->io.len = wr->len;
	if (zt->priv->use_append) {
		wr->io.op = P2Z_IO_APPEND;
		wr->io.zidx = wr->zidx;
	} else {
		wr->io.op = P2Z_IO_WRITE;
		wr->io.ofs = z->start_bytes + wr->ofs;
	}
	wr->io.end_io = p2z_zone_write_end_io;
	wr->io.private = zt;
	pthread_mutex_lock(&z->lock);
	z->seq_inflight++;
	pthread_mutex_unlock(&z->lock);
	ret = p2z_dev_submit(wr->q, &wr->io);
	if (ret) {
		pthread_mutex_lock(&z->lock);
		z->seq_inflight--;
		pthread_mutex_unlock(&z->lock);
	}
	return ret;
}

/*
 * A submitted write completed (on its queue's thread): its result, with
 * an append that landed elsewhere as a failure; zone_seq.c ends the turn.
 */
static void p2z_zone_write_end_io(struct p2z_io *io)
{
	struct p2z_zone_wr *wr =
		(struct p2z_zone_wr *)((char *)io -
				       offsetof(struct p2z_zone_wr, io));
	struct p2z_zone_table *zt = io->private;
	struct p2z_zone *z = &zt->zones[wr->zidx];
	uint64_t want = (z->start_bytes + wr->ofs) / zt->geom.lba_bytes;
	bool desync = false;

	if (io->op == P2Z_IO_APPEND && io->ret > 0 && io->lba != want) {
		p2z_log(LOG_ERR,
			"zone %" PRIu64 ": append landed at LBA %" PRIu64
			", expected %" PRIu64,
			wr->zidx, io->lba, want);
		desync = true;
	}
	pthread_mutex_lock(&z->lock);
	z->seq_inflight--;
	pthread_mutex_unlock(&z->lock);
	__p2z_zone_seq_complete(zt, z, wr, io->ret, desync);
}

bool p2z_zone_is_sequential(struct p2z_zone_table *zt, uint64_t zidx)
{
	struct p2z_zone *z = p2z_zone_of(zt, zidx);

	return z && p2z_zone_is_seq(z);
}

void __p2z_zone_seq_idle(struct p2z_zone *z)
{
	pthread_mutex_lock(&z->lock);
	while (z->seq_inflight)
		p2z_cond_wait(&z->seq_cond, &z->lock);
	pthread_mutex_unlock(&z->lock);
}

static ssize_t p2z_zone_write_cnv(struct p2z_zone_table *zt, struct p2z_zone *z,
				  uint64_t zidx, const void *buf, size_t len,
				  uint64_t ofs, bool append, unsigned int flags)
{
	ssize_t n;
	int ret;

	pthread_mutex_lock(&z->lock);
	ret = __p2z_zone_write_check(zt, z, &ofs, &len, append);
	pthread_mutex_unlock(&z->lock);
	if (ret || !len)
		return ret;
	n = p2z_dev_pwrite(zt->dev, buf, len, z->start_bytes + ofs, flags);
	if (n == (ssize_t)len || (n < 0 && !p2z_zone_err_is_io(n)))
		return n;
	p2z_log(LOG_ERR,
		"zone %" PRIu64 ": write of %zu bytes at %" PRIu64
		" failed (%zd)",
		zidx, len, ofs, n < 0 ? n : (ssize_t)-EIO);
	p2z_zone_error(zt, z, zidx, true);
	return n > 0 ? n : -EIO;
}

ssize_t p2z_zone_write(struct p2z_zone_table *zt, uint64_t zidx,
		       const void *buf, size_t len, uint64_t ofs, bool append,
		       unsigned int flags)
{
	struct p2z_zone *z = p2z_zone_of(zt, zidx);

	if (!z || (flags & ~P2Z_IO_FUA))
		return -EINVAL;
	if (p2z_zone_is_seq(z))
		return p2z_zone_write_seq(zt, z, zidx, buf, len, ofs, append,
					  flags);
	return p2z_zone_write_cnv(zt, z, zidx, buf, len, ofs, append, flags);
}

/* Zone management on behalf of a file; z->wr_lock held. */
static int __p2z_zone_mgmt(struct p2z_zone_table *zt, struct p2z_zone *z,
			   uint64_t zidx, enum p2z_zone_op op)
{
	static const char *const names[] = {
		[P2Z_ZONE_OP_RESET] = "reset",
		[P2Z_ZONE_OP_OPEN] = "open",
		[P2Z_ZONE_OP_CLOSE] = "close",
		[P2Z_ZONE_OP_FINISH] = "finish",
	};
	int ret = p2z_dev_zone_mgmt(zt->dev, zidx, op);

	if (ret && p2z_zone_err_is_io(ret)) {
		p2z_log(LOG_ERR, "zone %" PRIu64 ": %s failed (%d)", zidx,
			names[op], ret);
		__p2z_zone_error(zt, z, zidx, op != P2Z_ZONE_OP_CLOSE);
		return -EIO;
	}
	return ret;
}

/* Reset or finish, with z->wr_lock and z->io_lock (write) held. */
static int __p2z_zone_truncate(struct p2z_zone_table *zt, struct p2z_zone *z,
			       uint64_t zidx, enum p2z_zone_op op)
{
	int ret = p2z_dev_zone_mgmt(zt->dev, zidx, op);

	if (ret)
		return ret;
	pthread_mutex_lock(&z->lock);
	if (op == P2Z_ZONE_OP_RESET) {
		z->wp_bytes = 0;
		z->data_bytes = 0;
		z->cond = P2Z_ZONE_COND_EMPTY;
		__p2z_zone_set_size(zt, z, 0);
	} else {
		/* Data stays where it ends: the rest reads as zeros. */
		z->wp_bytes = z->cap_bytes;
		z->cond = P2Z_ZONE_COND_FULL;
		z->flags &= ~P2Z_ZONE_F_OPEN;
		__p2z_zone_set_size(zt, z, z->cap_bytes);
	}
	__p2z_zone_account(zt, z);
	pthread_mutex_unlock(&z->lock);
	return 0;
}

/* zonefs_file_truncate() */
int p2z_zone_truncate(struct p2z_zone_table *zt, uint64_t zidx, uint64_t size)
{
	struct p2z_zone *z = p2z_zone_of(zt, zidx);
	enum p2z_zone_op op;
	bool reopen;
	int ret = 0;

	if (!z)
		return -EINVAL;
	if (p2z_zone_table_is_rdonly(zt))
		return -EROFS;
	/* Drain the write in flight, fail the waiting ones (zone_seq.c). */
	p2z_zone_seq_barrier(z);
	p2z_zone_seq_kick(zt, z);
	pthread_mutex_lock(&z->wr_lock);
	pthread_mutex_lock(&z->lock);
	if (!p2z_zone_is_seq(z) ||
	    (z->flags & (P2Z_ZONE_F_RDONLY | P2Z_ZONE_F_OFFLINE)) ||
	    (size && size != z->cap_bytes))
		ret = -EPERM;
	op = size ? P2Z_ZONE_OP_FINISH : P2Z_ZONE_OP_RESET;
	/* Files still open for write keep an explicitly open zone. */
	reopen = !size && z->wr_refs && zt->priv->max_exp_open;
	if (size == z->size_bytes)
		size = UINT64_MAX; /* nothing to do */
	pthread_mutex_unlock(&z->lock);
	if (ret || size == UINT64_MAX)
		goto out_unlock;

	pthread_rwlock_wrlock(&z->io_lock);
	__p2z_zone_drain_reads(z);
	ret = __p2z_zone_truncate(zt, z, zidx, op);
	pthread_rwlock_unlock(&z->io_lock);
	if (ret) {
		if (p2z_zone_err_is_io(ret)) {
			p2z_log(LOG_ERR, "zone %" PRIu64 ": %s failed (%d)",
				zidx, size ? "finish" : "reset", ret);
			__p2z_zone_error(zt, z, zidx, true);
			ret = -EIO;
		}
		goto out_unlock;
	}
	/* A reset zone is no longer open (zonefs_file_truncate()). */
	if (reopen) {
		ret = __p2z_zone_mgmt(zt, z, zidx, P2Z_ZONE_OP_OPEN);
		pthread_mutex_lock(&z->lock);
		if (ret) {
			z->flags &= ~P2Z_ZONE_F_OPEN;
		} else {
			z->flags |= P2Z_ZONE_F_OPEN;
			z->cond = P2Z_ZONE_COND_EXP_OPEN;
		}
		__p2z_zone_account(zt, z);
		pthread_mutex_unlock(&z->lock);
	}
out_unlock:
	pthread_mutex_unlock(&z->wr_lock);
	p2z_zone_seq_unbarrier(z);
	p2z_zone_seq_kick(zt, z);
	return ret;
}

/* First explicit-open reference (zonefs_open_zone()); z->wr_lock held. */
static int __p2z_zone_exp_open(struct p2z_zone_table *zt, struct p2z_zone *z,
			       uint64_t zidx)
{
	bool full;
	int ret;

	if (atomic_fetch_add(&zt->priv->nr_exp_open, 1) >=
	    zt->priv->max_exp_open) {
		atomic_fetch_sub(&zt->priv->nr_exp_open, 1);
		return -EBUSY;
	}
	pthread_mutex_lock(&z->lock);
	full = z->size_bytes >= z->cap_bytes;
	pthread_mutex_unlock(&z->lock);
	if (full)
		return 0;
	ret = __p2z_zone_mgmt(zt, z, zidx, P2Z_ZONE_OP_OPEN);
	if (ret) {
		atomic_fetch_sub(&zt->priv->nr_exp_open, 1);
		/* Out of device resources is "busy" for open(2). */
		return ret == -ETOOMANYREFS || ret == -EOVERFLOW ? -EBUSY : ret;
	}
	pthread_mutex_lock(&z->lock);
	z->flags |= P2Z_ZONE_F_OPEN;
	z->cond = P2Z_ZONE_COND_EXP_OPEN;
	__p2z_zone_account(zt, z);
	pthread_mutex_unlock(&z->lock);
	return 0;
}

int p2z_zone_get_write(struct p2z_zone_table *zt, uint64_t zidx)
{
	struct p2z_zone *z = p2z_zone_of(zt, zidx);
	int ret = 0;

	if (!z)
		return -EINVAL;
	if (p2z_zone_table_is_rdonly(zt))
		return -EROFS;
	pthread_mutex_lock(&z->wr_lock);
	pthread_mutex_lock(&z->lock);
	if (z->flags & (P2Z_ZONE_F_RDONLY | P2Z_ZONE_F_OFFLINE))
		ret = -EPERM;
	pthread_mutex_unlock(&z->lock);
	if (ret || !p2z_zone_is_seq(z) || !zt->priv->max_exp_open)
		goto out_unlock;
	if (!z->wr_refs)
		ret = __p2z_zone_exp_open(zt, z, zidx);
	if (!ret)
		__atomic_add_fetch(&z->wr_refs, 1, __ATOMIC_RELAXED);
out_unlock:
	pthread_mutex_unlock(&z->wr_lock);
	return ret;
}

/* Last explicit-open reference gone (zonefs_close_zone()); wr_lock held. */
static void __p2z_zone_exp_close(struct p2z_zone_table *zt, struct p2z_zone *z,
				 uint64_t zidx)
{
	bool open;
	uint64_t wp;
	int ret;

	pthread_mutex_lock(&z->lock);
	open = z->flags & P2Z_ZONE_F_OPEN;
	wp = z->wp_bytes;
	pthread_mutex_unlock(&z->lock);
	if (open) {
		/*
		 * On ZNS, closing an explicitly open zone that was never
		 * written leaves it closed, hence active, which can exhaust
		 * the active zone limit: reset it instead (as zonefs does).
		 */
		ret = __p2z_zone_mgmt(zt, z, zidx,
				      wp ? P2Z_ZONE_OP_CLOSE :
					   P2Z_ZONE_OP_RESET);
		pthread_mutex_lock(&z->lock);
		if (ret && (z->flags & P2Z_ZONE_F_OPEN))
			p2z_zone_set_rdonly(zt, "closing a zone failed");
		else if (!ret)
			z->cond = wp ? P2Z_ZONE_COND_CLOSED :
				       P2Z_ZONE_COND_EMPTY;
		z->flags &= ~P2Z_ZONE_F_OPEN;
		__p2z_zone_account(zt, z);
		pthread_mutex_unlock(&z->lock);
	}
	atomic_fetch_sub(&zt->priv->nr_exp_open, 1);
}

void p2z_zone_put_write(struct p2z_zone_table *zt, uint64_t zidx)
{
	struct p2z_zone *z = p2z_zone_of(zt, zidx);

	if (!z)
		return;
	/* A write submitted on a queue holds no lock: let it end first. */
	__p2z_zone_seq_idle(z);
	pthread_mutex_lock(&z->wr_lock);
	if (z->wr_refs && !__atomic_sub_fetch(&z->wr_refs, 1, __ATOMIC_RELAXED))
		__p2z_zone_exp_close(zt, z, zidx);
	pthread_mutex_unlock(&z->wr_lock);
}

int p2z_zone_flush(struct p2z_zone_table *zt, uint64_t zidx)
{
	struct p2z_zone *z = p2z_zone_of(zt, zidx);
	int ret = 0;

	if (!z)
		return -EINVAL;
	pthread_mutex_lock(&z->lock);
	if (z->flags & (P2Z_ZONE_F_RDONLY | P2Z_ZONE_F_OFFLINE))
		ret = -EPERM;
	pthread_mutex_unlock(&z->lock);
	if (ret)
		return ret;
	__p2z_zone_seq_idle(z);
	ret = p2z_dev_flush(zt->dev);
	if (ret) {
		p2z_log(LOG_ERR, "zone %" PRIu64 ": flush failed (%d)", zidx,
			ret);
		p2z_zone_error(zt, z, zidx, true);
		return -EIO;
	}
	return 0;
}
