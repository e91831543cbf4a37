// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The files of the filesystem (zonefs' file.c): the pool of I/O buffers,
 * open, release, flush, fsync, read and write of the zone files and of po2.
 * The names, attributes and the ops table are fs.c's (see fs_priv.h).
 *
 * Ordering of writes. A sequential zone accepts a write only at its write
 * pointer, but the writes of one zone may reach the daemon out of order.
 * The kernel (fs/fuse/file.c) sends the write(2)s of an FOPEN_DIRECT_IO
 * file one after the other, from fuse_direct_write_iter() under the
 * exclusive inode lock (we never set FOPEN_PARALLEL_DIRECT_WRITES). But
 * asynchronous direct I/O (libaio, io_uring) goes through fuse_direct_IO():
 * with FUSE_CAP_ASYNC_DIO, which the daemon turns on so that an
 * asynchronous submitter gets depth, one request is split into max_write
 * pieces sent concurrently as background requests, and a write that does
 * not extend the cached i_size returns -EIOCBQUEUED and drops the inode
 * lock before it is served (a size-extending one is waited for in
 * fuse_direct_IO()). The worker threads of the session loop then serve
 * these pieces, and several writers' appends, in any order. The zone
 * layer orders them (zone_seq.c, like the block layer's zone write
 * plugging): one write of a zone at the device at a time, the next one
 * being the one at the write pointer; a write ahead of it is held until
 * its predecessors were written (for at most the hold bound,
 * P2Z_ZONE_HOLD_MS, then EINVAL: a writer with a gap), one behind it is
 * EINVAL at once, as in zonefs. On a loop worker a zone file's write uses
 * the non-blocking form (p2z_zone_write_async(), struct p2z_fs_wr): a
 * write at its turn is written by the worker and answered; one that must
 * wait is parked, keeping the worker's request buffer that holds its data
 * (the worker receives into another one) or, where it cannot, a copy of
 * the data in a pool buffer (p2z_fs_wr_hold()), and the worker goes on;
 * the thread that writes its predecessor writes and answers it, a reset
 * or a failed predecessor answers it with EIO, and the loop's workers
 * expire it (EINVAL) past the hold bound. The device write itself is
 * synchronous in whichever thread has the zone's turn. po2 writes, and
 * writes outside a loop worker, still use the blocking form: a held write
 * keeps its thread, which the P2Z_FS_MAX_BACKGROUND < P2Z_FS_MAX_THREADS
 * bound keeps deadlock-free.
 *
 * Reads are asynchronous on a loop worker (p2z_fs_read_async()): the
 * zone reads of a READ go on the worker's own device queue
 * (p2z_zone_read_submit(), no zone lock held while in flight) and the
 * worker answers from their completion, so reads of one file and of many
 * files overlap without a thread per read. A struct p2z_fs_rd owns the
 * request and its pool buffer until the reply; nothing of the file
 * (fi->fh) is read after a reply, which may let a release free it. A
 * failed read is answered only once the worker's queue is drained, after
 * its errors= policy ran. Without a loop worker (the first request, unit
 * tests) a read is served synchronously.
 *
 * Every handler replies exactly once, through the p2z_fs_reply_*() helpers.
 */
#include "fs_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "po2zfs/cond.h"

/* Count the writers of zone files and po2 (see p2z_fs_attr_timeout()). */
static void p2z_fs_count_writer(struct p2z_fs *fs, const struct p2z_fs_node *n,
				int by)
{
	uint32_t *c = n->kind == P2Z_FS_ZONE ? &fs->writers[n->zidx] :
					       &fs->po2_writers;

	if (n->kind == P2Z_FS_ZONE || n->kind == P2Z_FS_PO2)
		__atomic_add_fetch(c, (uint32_t)by, __ATOMIC_RELAXED);
}

/* ---- buffers ---- */

int p2z_fs_pool_init(struct p2z_fs_pool *p, size_t bytes, size_t align,
		     unsigned int max)
{
	p->bytes = bytes;
	p->align = align;
	p->max = max < P2Z_FS_POOL_MAX ? max : P2Z_FS_POOL_MAX;
	p->nr = 0;
	return -pthread_mutex_init(&p->lock, NULL);
}

void p2z_fs_pool_destroy(struct p2z_fs_pool *p)
{
	while (p->nr)
		free(p->free[--p->nr]);
	pthread_mutex_destroy(&p->lock);
}

void *p2z_fs_pool_get(struct p2z_fs_pool *p)
{
	void *buf = NULL;

	pthread_mutex_lock(&p->lock);
	if (p->nr)
		buf = p->free[--p->nr];
	pthread_mutex_unlock(&p->lock);
	if (!buf && posix_memalign(&buf, p->align, p->bytes))
		return NULL;
	return buf;
}

void p2z_fs_pool_put(struct p2z_fs_pool *p, void *buf)
{
	if (!buf)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->nr < p->max) {
		p->free[p->nr++] = buf;
		buf = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	free(buf);
}

/* ---- open, release ---- */

/*
 * The kernel sends RELEASE in the background: close(2) returns before the
 * daemon has dropped the file's explicitly open zone. So that "close, then
 * open another zone" does not fail with a spurious EBUSY, and the zone
 * condition read right after a close is the closed one, callers that care
 * wait, briefly, for the files already flushed (closed by their last
 * descriptor, in the common case) to be released. Bounded: a file kept by
 * a mapping or a dup()ed descriptor is flushed long before its release.
 */
#define P2Z_FS_RELEASE_WAIT_MS 500L

void p2z_fs_wait_releases(struct p2z_fs *fs)
{
	struct timespec end;

	if (!fs->zt->opts.explicit_open)
		return;
	p2z_cond_deadline(P2Z_FS_RELEASE_WAIT_MS, &end);
	pthread_mutex_lock(&fs->closing_lock);
	while (fs->nr_closing &&
	       p2z_cond_timedwait(&fs->closing_cond, &fs->closing_lock, &end) !=
		       ETIMEDOUT)
		;
	pthread_mutex_unlock(&fs->closing_lock);
}

static void p2z_fs_file_set_closing(struct p2z_fs *fs, struct p2z_fs_file *f,
				    bool closing)
{
	pthread_mutex_lock(&fs->closing_lock);
	if (f->closing != closing) {
		f->closing = closing;
		if (closing) {
			fs->nr_closing++;
		} else {
			fs->nr_closing--;
			pthread_cond_broadcast(&fs->closing_cond);
		}
	}
	pthread_mutex_unlock(&fs->closing_lock);
}

/*
 * Whether an open may use the page cache. Not for po2: any zone's writes
 * change it, and it has no size or mtime change the kernel could notice.
 * Not for an offline zone: its size is 0, so the kernel would answer reads
 * with end of file instead of sending them for the EPERM of zonefs. Writers
 * of sequential zone files are direct-io: every write reaches the daemon as
 * issued and a shared writable mapping fails (FUSE refuses it on direct-io
 * files). Writers of conventional zone files are not, so that they can
 * mmap(MAP_SHARED) the file, as on zonefs: without the writeback cache the
 * kernel still sends each write(2) through before it returns, and msync(2)
 * or fsync(2) send the dirty pages of a mapping.
 *
 * Not for sequential zones whose LBA is smaller than a page: their end of
 * file can fall inside a page, which a reader caches zero-filled past it.
 * An append through another file (direct-io) cannot update that page, and
 * dropping it is not enough: a reader that took the page before the drop
 * copies from it after the size has grown (filemap_read() reads i_size
 * after it has its pages), zeros where the append put data. With LBAs of a
 * page or more the end of file is always at a page boundary, and pages
 * past it are never cached.
 */
static bool p2z_fs_node_may_cache(struct p2z_fs *fs,
				  const struct p2z_fs_node *n, bool writer)
{
	struct p2z_zone_state zs;

	if (n->kind == P2Z_FS_PO2 ||
	    p2z_zone_get_state(fs->zt, n->zidx, false, &zs) ||
	    (zs.flags & P2Z_ZONE_F_OFFLINE))
		return false;
	if (zs.type == P2Z_ZONE_TYPE_SEQ &&
	    fs->geom->lba_bytes % fs->page_bytes)
		return false;
	return !writer || zs.type == P2Z_ZONE_TYPE_CNV;
}

static int p2z_fs_open_node(struct p2z_fs *fs, const struct p2z_fs_node *n,
			    struct fuse_file_info *fi, struct p2z_fs_file *f)
{
	bool trunc = fi->flags & O_TRUNC;
	int ret = 0;

	if (p2z_fs_node_is_dir(n))
		return -EISDIR;
	f->flags = fi->flags;
	f->writer = (fi->flags & O_ACCMODE) != O_RDONLY;
	if (f->writer && p2z_zone_table_is_rdonly(fs->zt))
		return -EROFS;
	if (f->writer && n->kind == P2Z_FS_ZONE) {
		ret = p2z_zone_get_write(fs->zt, n->zidx);
		if (ret == -EBUSY) {
			p2z_fs_wait_releases(fs);
			ret = p2z_zone_get_write(fs->zt, n->zidx);
		}
		if (ret)
			return ret;
	}
	/*
	 * From here on, attribute replies of the zone file are not cached;
	 * the invalidation below (or the reset's) then makes the kernel drop
	 * the replies computed before, which may still carry a long timeout
	 * (see p2z_fs_attr_timeout()).
	 */
	if (f->writer)
		p2z_fs_count_writer(fs, n, 1);
	/* FUSE_CAP_ATOMIC_O_TRUNC: O_TRUNC comes here, not as a setattr. */
	if (trunc) {
		ret = n->kind == P2Z_FS_ZONE ?
			      p2z_zone_truncate(fs->zt, n->zidx, 0) :
			      -EPERM;
		if (!ret) {
			p2z_fs_touch(fs, n->ino);
			p2z_fs_inval_reset(fs, n);
		}
	} else if (f->writer && n->kind == P2Z_FS_ZONE) {
		p2z_fs_inval(fs, n->ino, -1);
	}
	if (ret && f->writer) {
		if (n->kind == P2Z_FS_ZONE)
			p2z_zone_put_write(fs->zt, n->zidx);
		p2z_fs_count_writer(fs, n, -1);
	}
	fi->direct_io = (fi->flags & O_DIRECT) ||
			!p2z_fs_node_may_cache(fs, n, f->writer);
	f->direct_io = fi->direct_io;
	/* The daemon drops what changes behind the kernel (p2z_fs_inval). */
	fi->keep_cache = !fi->direct_io && fs->se;
	return ret;
}

static void p2z_fs_release_file(struct p2z_fs *fs, const struct p2z_fs_node *n,
				struct p2z_fs_file *f)
{
	if (f->writer && n->kind == P2Z_FS_ZONE)
		p2z_zone_put_write(fs->zt, n->zidx);
	if (f->writer)
		p2z_fs_count_writer(fs, n, -1);
	p2z_fs_file_set_closing(fs, f, false);
	free(f);
}

void p2z_fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	struct p2z_fs_file *f;
	struct p2z_fs_node n = { 0 };
	uint64_t t0 = p2z_stat_now();
	int ret;

	f = calloc(1, sizeof(*f));
	ret = f ? p2z_fs_node_of(fs, ino, &n) : -ENOMEM;
	if (!ret)
		ret = p2z_fs_open_node(fs, &n, fi, f);
	p2z_fs_count(fs, P2Z_FS_STAT_OPEN, t0, ret);
	if (ret) {
		free(f);
		p2z_fs_reply_open(req, ret, fi);
		p2z_fs_after_io(fs, &n);
		return;
	}
	fi->fh = (uintptr_t)f;
	/* Interrupted open: the kernel will send no release for it. */
	if (p2z_fs_reply_open(req, 0, fi))
		p2z_fs_release_file(fs, &n, f);
	p2z_fs_after_io(fs, &n);
}

void p2z_fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	struct p2z_fs_file *f = (struct p2z_fs_file *)(uintptr_t)fi->fh;
	struct p2z_fs_node n = { 0 };
	uint64_t t0 = p2z_stat_now();

	if (f && !p2z_fs_node_of(fs, ino, &n))
		p2z_fs_release_file(fs, &n, f);
	p2z_fs_count(fs, P2Z_FS_STAT_RELEASE, t0, 0);
	p2z_fs_reply_err(req, 0);
	/* Closing an explicitly open zone may have failed. */
	p2z_fs_after_io(fs, &n);
}

/* ---- read ---- */

/*
 * Read [a, e), the LBA-aligned range around the request, into buf; *skip
 * gets the offset of the requested data in buf.
 */
static ssize_t p2z_fs_read_node(struct p2z_fs *fs, const struct p2z_fs_node *n,
				char *buf, size_t size, off_t off, size_t *skip,
				uint64_t *err_zidx)
{
	uint64_t lba = fs->geom->lba_bytes;
	uint64_t a, e;
	ssize_t ret;

	if (off < 0)
		return -EINVAL;
	if (!size)
		return 0;
	if (size > P2Z_FS_MAX_WRITE)
		size = P2Z_FS_MAX_WRITE;
	a = (uint64_t)off / lba * lba;
	if ((uint64_t)off > UINT64_MAX - size - lba)
		return 0;
	e = ((uint64_t)off + size + lba - 1) / lba * lba;
	*skip = (uint64_t)off - a;
	if (n->kind == P2Z_FS_PO2)
		ret = p2z_po2_read(fs->zt, buf, e - a, a, err_zidx);
	else if (n->kind == P2Z_FS_ZONE)
		ret = p2z_zone_read(fs->zt, n->zidx, buf, e - a, a);
	else
		return -EISDIR;
	if (ret < 0)
		return ret;
	if ((size_t)ret <= *skip)
		return 0;
	return (size_t)ret - *skip < size ? (ssize_t)((size_t)ret - *skip) :
					    (ssize_t)size;
}

/* The answer of a read done: p2z_fs_read_node()'s length rule. */
static ssize_t p2z_fs_read_len(size_t got, size_t skip, size_t size)
{
	if (got <= skip)
		return 0;
	return got - skip < size ? (ssize_t)(got - skip) : (ssize_t)size;
}

/* Reply, count, free; then the zone's changes (after the reply). */
static void p2z_fs_read_reply(struct p2z_fs_rd *rd, ssize_t ret)
{
	struct p2z_fs *fs = rd->fs;
	struct p2z_fs_node n = rd->n;
	uint64_t err_zidx = rd->err ? rd->err_zidx : UINT64_MAX;
	bool after = ret < 0;

	if (ret >= 0)
		ret = p2z_fs_read_len((size_t)ret, rd->skip, rd->size);
	p2z_fs_count(fs, P2Z_FS_STAT_READ, rd->t0, ret);
	p2z_fs_reply_data(rd->req, ret, rd->buf + rd->skip);
	p2z_fs_pool_put(&fs->pool, rd->buf);
	free(rd);
	if (!after)
		return;
	/* A po2 read failed in the zone err_zidx: its own file may change. */
	if (n.kind == P2Z_FS_PO2 && err_zidx != UINT64_MAX)
		p2z_fs_inval_changed(fs, err_zidx);
	else
		p2z_fs_after_io(fs, &n);
}

void p2z_fs_read_finish(struct p2z_fs_rd *rd)
{
	ssize_t ret = p2z_zone_read_error(rd->fs->zt, rd->err_zidx, rd->err_ofs,
					  rd->err);

	/* An offline zone cannot be read, in any view. */
	if (rd->n.kind == P2Z_FS_PO2 && ret == -EPERM)
		ret = -EIO;
	p2z_fs_read_reply(rd, ret);
}

/*
 * Drop a reference of a read: the last one answers it, or, after an
 * error, leaves it to the worker once its queue is drained.
 */
static void p2z_fs_rd_put(struct p2z_fs_rd *rd)
{
	if (--rd->pending)
		return;
	if (rd->err)
		p2z_fs_worker_defer(p2z_fs_worker_self(), rd);
	else
		p2z_fs_read_reply(rd, (ssize_t)rd->len);
}

static void p2z_fs_rd_piece_done(struct p2z_fs_rd *rd, struct p2z_zone_rd *zr,
				 ssize_t ret)
{
	char *end = (char *)zr->io.buf + zr->n;

	if (ret < 0 && !rd->err) {
		rd->err = ret;
		rd->err_zidx = zr->zidx;
		rd->err_ofs = zr->ofs;
	}
	/* A zone file's read ends at its size; po2 has zeros after it. */
	if (ret >= 0 && rd->n.kind == P2Z_FS_ZONE)
		rd->len = (size_t)ret;
	else if (ret >= 0)
		memset(end, 0, (size_t)((char *)zr->private - end));
}

static void p2z_fs_rd_end_io(struct p2z_zone_rd *zr, ssize_t ret)
{
	struct p2z_fs_rd *rd = zr->io.private;

	p2z_fs_rd_piece_done(rd, zr, ret);
	free(zr);
	p2z_fs_rd_put(rd);
}

/* Start the read of [ofs, ofs + len) of a zone into buf. */
static void p2z_fs_rd_piece(struct p2z_fs_rd *rd, struct p2z_fs_worker *w,
			    uint64_t zidx, char *buf, size_t len, uint64_t ofs)
{
	struct p2z_zone_rd *zr = calloc(1, sizeof(*zr));
	ssize_t ret;

	if (!zr) {
		rd->err = rd->err ? rd->err : -ENOMEM;
		return;
	}
	zr->end_io = p2z_fs_rd_end_io;
	zr->private = buf + len; /* the end of the piece, for po2's zeros */
	rd->pending++;
	ret = p2z_zone_read_submit(rd->fs->zt, w->q, zr, zidx, buf, len, ofs);
	if (ret == -EINPROGRESS) {
		zr->io.private = rd;
		return;
	}
	zr->zidx = zidx;
	zr->ofs = ofs;
	zr->io.buf = buf;
	p2z_fs_rd_piece_done(rd, zr, ret);
	free(zr);
	rd->pending--;
}

/* p2z_po2_read(), its zone pieces on the worker's queue. */
static void p2z_fs_rd_po2(struct p2z_fs_rd *rd, struct p2z_fs_worker *w,
			  uint64_t a, uint64_t len)
{
	uint64_t end = p2z_geom_po2_bytes(&rd->fs->zt->geom);
	size_t done = 0;

	if (a >= end)
		return;
	if (len > end - a)
		len = end - a;
	while (done < len && !rd->err) {
		struct p2z_geom_piece pc;
		uint64_t zidx;

		if (p2z_po2_piece(rd->fs->zt, a + done, len - done, &zidx,
				  &pc)) {
			rd->err = -EIO;
			rd->err_zidx = UINT64_MAX;
			break;
		}
		if (pc.gap)
			memset(rd->buf + done, 0, pc.len);
		else
			p2z_fs_rd_piece(rd, w, zidx, rd->buf + done, pc.len,
					pc.zone_ofs);
		done += pc.len;
	}
	rd->len = done;
}

/*
 * A READ on a worker of the session loop: the device reads go on the
 * worker's queue and the reply comes from their completion. fi is not
 * used: the file may be released once the reply is out.
 */
static void p2z_fs_read_async(fuse_req_t req, struct p2z_fs_worker *w,
			      struct p2z_fs_node *n, size_t size, off_t off)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	uint64_t lba = fs->geom->lba_bytes;
	struct p2z_fs_rd *rd = calloc(1, sizeof(*rd));
	uint64_t a, e;

	if (rd)
		rd->buf = p2z_fs_pool_get(&fs->pool);
	if (!rd || !rd->buf) {
		free(rd);
		p2z_fs_reply_data(req, -ENOMEM, NULL);
		return;
	}
	rd->fs = fs;
	rd->req = req;
	rd->n = *n;
	rd->t0 = p2z_stat_now();
	rd->pending = 1;
	rd->err_zidx = n->zidx;
	if (size > P2Z_FS_MAX_WRITE)
		size = P2Z_FS_MAX_WRITE;
	rd->size = size;
	if (!size || (uint64_t)off > UINT64_MAX - size - lba) {
		p2z_fs_rd_put(rd);
		return;
	}
	a = (uint64_t)off / lba * lba;
	e = ((uint64_t)off + size + lba - 1) / lba * lba;
	rd->skip = (uint64_t)off - a;
	if (n->kind == P2Z_FS_ZONE)
		p2z_fs_rd_piece(rd, w, n->zidx, rd->buf, e - a, a);
	else
		p2z_fs_rd_po2(rd, w, a, e - a);
	p2z_fs_rd_put(rd);
}

void p2z_fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	struct p2z_fs_worker *w = p2z_fs_worker_self();
	struct p2z_fs_node n = { 0 };
	uint64_t t0 = p2z_stat_now();
	uint64_t err_zidx = UINT64_MAX;
	size_t skip = 0;
	ssize_t ret;
	char *buf;

	(void)fi;
	ret = p2z_fs_node_of(fs, ino, &n);
	if (!ret && w && off >= 0 &&
	    (n.kind == P2Z_FS_ZONE || n.kind == P2Z_FS_PO2)) {
		p2z_fs_read_async(req, w, &n, size, off);
		return;
	}
	buf = p2z_fs_pool_get(&fs->pool);
	if (!buf && !ret)
		ret = -ENOMEM;
	if (!ret)
		ret = p2z_fs_read_node(fs, &n, buf, size, off, &skip,
				       &err_zidx);
	p2z_fs_count(fs, P2Z_FS_STAT_READ, t0, ret);
	p2z_fs_reply_data(req, ret, buf ? buf + skip : NULL);
	p2z_fs_pool_put(&fs->pool, buf);
	/* A po2 read failed in the zone err_zidx: its own file may change. */
	if (n.kind == P2Z_FS_PO2 && err_zidx != UINT64_MAX)
		p2z_fs_inval_changed(fs, err_zidx);
	else
		p2z_fs_after_io(fs, &n);
}

/* ---- write ---- */

/*
 * A write through po2 changes a zone file behind the kernel's back: its
 * size when it wrote something, its size, mode or access when the errors=
 * policy ran on a failure (a short write included). Dropped before the
 * reply: po2 is direct-io and holds no page of the zone file.
 */
static ssize_t p2z_fs_write_po2(struct p2z_fs *fs, const char *buf, size_t len,
				off_t off, unsigned int flags)
{
	uint64_t zidx = UINT64_MAX;
	bool changed;
	ssize_t ret;

	ret = p2z_po2_write(fs->zt, buf, len, (uint64_t)off, flags, &zidx);
	if (zidx == UINT64_MAX)
		return ret;
	changed = p2z_zone_clear_changed(fs->zt, zidx);
	if (ret > 0)
		p2z_fs_touch(fs, P2Z_FS_INO_ZONE0 + zidx);
	if (ret > 0 || changed)
		p2z_fs_inval(fs, P2Z_FS_INO_ZONE0 + zidx, 0);
	return ret;
}

static ssize_t p2z_fs_write_node(struct p2z_fs *fs, const struct p2z_fs_node *n,
				 const char *buf, size_t len, off_t off,
				 bool append, unsigned int flags)
{
	if (off < 0)
		return -EINVAL;
	switch (n->kind) {
	case P2Z_FS_ZONE:
		return p2z_zone_write(fs->zt, n->zidx, buf, len, (uint64_t)off,
				      append, flags);
	case P2Z_FS_PO2:
		return p2z_fs_write_po2(fs, buf, len, off, flags);
	default:
		return -EISDIR;
	}
}

/*
 * O_DSYNC, O_SYNC (which includes it) and RWF_DSYNC: the kernel passes them
 * in the WRITE request's flags (fuse_write_flags() in fs/fuse/file.c), and
 * for a direct-io file that is all it does: fuse_direct_write_iter() never
 * calls fsync, so the data must be on stable media before the reply. A
 * file using the page cache needs nothing here: its writes end in
 * generic_write_sync(), which sends an FSYNC (a device flush) once the
 * write is answered. Mapped pages written back (fi->writepage) carry no
 * such flag.
 */
static unsigned int p2z_fs_write_flags(const struct p2z_fs_file *f,
				       const struct fuse_file_info *fi)
{
	if (!f->direct_io || fi->writepage || !(fi->flags & O_DSYNC))
		return 0;
	return P2Z_IO_FUA;
}

/* Copy the request's data into a pool buffer. */
static ssize_t p2z_fs_copy_in(void *buf, struct fuse_bufvec *in)
{
	size_t len = fuse_buf_size(in);
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(len);
	ssize_t ret;

	if (len > P2Z_FS_BUF_BYTES)
		return -EINVAL;
	out.buf[0].mem = buf;
	ret = fuse_buf_copy(&out, in, 0);
	if (ret >= 0 && (size_t)ret != len)
		return -EIO;
	return ret;
}

/*
 * The one copy of a write's data the daemon makes, into a pool buffer,
 * *@buf (left to the caller to put back, failed or not), counted as
 * fs.write_copy. Return: the length, or -errno.
 */
static ssize_t p2z_fs_copy_to_pool(struct p2z_fs *fs, struct fuse_bufvec *in,
				   void **buf)
{
	uint64_t t0 = p2z_stat_now();
	ssize_t ret;

	*buf = p2z_fs_pool_get(&fs->pool);
	if (!*buf)
		return -ENOMEM;
	ret = p2z_fs_copy_in(*buf, in);
	p2z_fs_count(fs, P2Z_FS_STAT_WRITE_COPY, t0, ret);
	return ret;
}

/*
 * Where the request's data is for the device: in place, where libfuse read
 * it into memory (right after the request header), if the device takes it
 * at that address as it is (NVMe passthrough on a normal namespace: dwords),
 * so that no copy is made that the hardware does not need; otherwise (a
 * pipe, several pieces, a device that wants more alignment, which the
 * request header's 80 bytes break) copied once into a pool buffer, *@buf.
 * Return: the length, or -errno.
 */
static ssize_t p2z_fs_write_data(struct p2z_fs *fs, struct fuse_bufvec *in,
				 void **buf, const void **data)
{
	const struct fuse_buf *b = &in->buf[in->idx];
	const char *mem = (const char *)b->mem + in->off;
	uintptr_t align = p2z_zone_buf_align(fs->zt);
	ssize_t ret;

	if (align < P2Z_ZONE_BUF_MIN_ALIGN)
		align = P2Z_ZONE_BUF_MIN_ALIGN;
	if (in->count == 1 && !(b->flags & FUSE_BUF_IS_FD) &&
	    !((uintptr_t)mem & (align - 1))) {
		*data = mem;
		return (ssize_t)(b->size - in->off);
	}
	ret = p2z_fs_copy_to_pool(fs, in, buf);
	*data = *buf;
	return ret;
}

/*
 * An asynchronous write of a zone file (p2z_zone_write_async()): owns the
 * request and the data until the reply, from whichever thread ends it.
 */
struct p2z_fs_wr {
	struct p2z_zone_wr wr; /* first: done() gets it */
	struct p2z_fs *fs;
	fuse_req_t req;
	fuse_ino_t ino;
	struct p2z_fs_node n;
	uint64_t t0;
	void *buf; /* pool buffer holding the data, or NULL: in the request */
	void *rbuf; /* the request buffer, kept (p2z_fs_worker_take_buf()) */
	bool direct_io;
};

/*
 * Parked behind a predecessor, or submitted to the device: the worker goes
 * on with its next request. The data stays where it is if it is in a pool
 * buffer, or in a request buffer the worker can hand over; else a copy.
 */
static int p2z_fs_wr_hold(struct p2z_zone_wr *wr)
{
	struct p2z_fs_wr *w = (struct p2z_fs_wr *)wr;
	struct p2z_fs_worker *self = p2z_fs_worker_self();
	struct fuse_bufvec src = FUSE_BUFVEC_INIT(wr->len);
	ssize_t ret;

	if (w->buf || w->rbuf)
		return 0;
	if (self)
		w->rbuf = p2z_fs_worker_take_buf(self, wr->buf, wr->len);
	if (w->rbuf)
		return 0;
	src.buf[0].mem = (void *)wr->buf;
	ret = p2z_fs_copy_to_pool(w->fs, &src, &w->buf);
	if (ret < 0)
		return (int)ret;
	wr->buf = w->buf;
	return 0;
}

/* The tail of p2z_fs_write_buf(), for either form. */
static void p2z_fs_write_end(struct p2z_fs *fs, fuse_req_t req, fuse_ino_t ino,
			     const struct p2z_fs_node *n, bool direct_io,
			     uint64_t t0, void *buf, ssize_t ret)
{
	if (ret > 0)
		p2z_fs_touch(fs, ino);
	/* A direct-io writer holds no page: the reply can wait for that. */
	if (direct_io)
		p2z_fs_after_io(fs, n);
	p2z_fs_count(fs, P2Z_FS_STAT_WRITE, t0, ret);
	p2z_fs_reply_write(req, ret);
	p2z_fs_pool_put(&fs->pool, buf);
	p2z_fs_after_io(fs, n);
}

static void p2z_fs_wr_done(struct p2z_zone_wr *wr, ssize_t ret)
{
	struct p2z_fs_wr *w = (struct p2z_fs_wr *)wr;

	p2z_fs_write_end(w->fs, w->req, w->ino, &w->n, w->direct_io, w->t0,
			 w->buf, ret);
	p2z_fs_pool_put(&w->fs->rbufs, w->rbuf);
	free(w);
}

/*
 * A zone file's write on a loop worker: never waits for a predecessor
 * (see the top of this file). Return: 0 (answered or parked), or -ENOMEM
 * before anything happened.
 */
static int p2z_fs_write_async(struct p2z_fs *fs, fuse_req_t req, fuse_ino_t ino,
			      const struct p2z_fs_node *n,
			      const struct p2z_fs_file *f, uint64_t t0,
			      void *buf, const void *data, size_t len,
			      off_t off, bool append, unsigned int flags,
			      struct p2z_dev_queue *q)
{
	struct p2z_fs_wr *w = malloc(sizeof(*w));

	if (!w)
		return -ENOMEM;
	*w = (struct p2z_fs_wr){
		.wr = { .zidx = n->zidx,
			.buf = data,
			.len = len,
			.ofs = (uint64_t)off,
			.append = append,
			.flags = flags,
			.hold = p2z_fs_wr_hold,
			.done = p2z_fs_wr_done,
			.q = q },
		.fs = fs,
		.req = req,
		.ino = ino,
		.n = *n,
		.t0 = t0,
		.buf = buf,
		.direct_io = f->direct_io,
	};
	p2z_zone_write_async(fs->zt, &w->wr);
	return 0;
}

/*
 * Whether a WRITE of n goes to the device asynchronously on the worker's
 * queue (a sequential zone's file): it never blocks on another thread.
 * Any other write may (po2 waits in the sequencer, a conventional zone's
 * failure runs the errors= policy): the worker drains its queue first.
 */
static bool p2z_fs_write_submits(struct p2z_fs *fs, const struct p2z_fs_node *n,
				 off_t off)
{
	return n->kind == P2Z_FS_ZONE && off >= 0 &&
	       p2z_zone_is_sequential(fs->zt, n->zidx);
}

void p2z_fs_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in,
		      off_t off, struct fuse_file_info *fi)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	struct p2z_fs_file *f = (struct p2z_fs_file *)(uintptr_t)fi->fh;
	struct p2z_fs_worker *w = p2z_fs_worker_self();
	struct p2z_fs_node n = { 0 };
	uint64_t t0 = p2z_stat_now();
	const void *data = NULL;
	void *buf = NULL;
	bool append;
	ssize_t ret;

	ret = p2z_fs_node_of(fs, ino, &n);
	if (!ret && !f)
		ret = -EBADF;
	if (w && (ret || !p2z_fs_write_submits(fs, &n, off)))
		p2z_fs_worker_drain(w);
	if (!ret)
		ret = p2z_fs_write_data(fs, in, &buf, &data);
	if (ret >= 0) {
		/*
		 * fi->flags is the file's current f_flags (fuse_write_flags()
		 * in fs/fuse/file.c), fcntl(F_SETFL) included: the open flags
		 * are not, or a cleared O_APPEND would still append. The
		 * write-back of a mapped page is never an append.
		 */
		append = !fi->writepage && (fi->flags & O_APPEND);
		if (n.kind == P2Z_FS_ZONE && off >= 0 && w &&
		    !p2z_fs_write_async(
			    fs, req, ino, &n, f, t0, buf, data, (size_t)ret,
			    off, append, p2z_fs_write_flags(f, fi),
			    p2z_fs_write_submits(fs, &n, off) ? w->q : NULL))
			return;
		ret = p2z_fs_write_node(fs, &n, data, (size_t)ret, off, append,
					p2z_fs_write_flags(f, fi));
	}
	p2z_fs_write_end(fs, req, ino, &n, f && f->direct_io, t0, buf, ret);
}

/* ---- flush, fsync ---- */

/* A descriptor was closed. Nothing is buffered: writes are done when acked. */
void p2z_fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	struct p2z_fs_file *f = (struct p2z_fs_file *)(uintptr_t)fi->fh;
	uint64_t t0 = p2z_stat_now();

	(void)ino;
	if (f && f->writer && fs->zt->opts.explicit_open)
		p2z_fs_file_set_closing(fs, f, true);
	p2z_fs_count(fs, P2Z_FS_STAT_FLUSH, t0, 0);
	p2z_fs_reply_err(req, 0);
}

void p2z_fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		  struct fuse_file_info *fi)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	struct p2z_fs_node n = { 0 };
	uint64_t t0 = p2z_stat_now();
	int ret;

	(void)datasync;
	(void)fi;
	ret = p2z_fs_node_of(fs, ino, &n);
	if (!ret && n.kind == P2Z_FS_ZONE)
		ret = p2z_zone_flush(fs->zt, n.zidx);
	else if (!ret && n.kind == P2Z_FS_PO2)
		ret = p2z_zone_table_flush(fs->zt);
	p2z_fs_count(fs, P2Z_FS_STAT_FSYNC, t0, ret);
	p2z_fs_reply_err(req, ret);
	p2z_fs_after_io(fs, &n);
}
