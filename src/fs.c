// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FUSE lowlevel handlers: a zonefs-like tree (seq/N, cnv/N) plus the po2
 * view of the device, over the zone table. This file owns the namespace
 * (zonefs' super.c): nodes and their attributes, lookup, getattr, setattr,
 * readdir, statfs, the xattr requests, the refusals of the fixed namespace,
 * the session setup (its first request, the mount's read-ahead) and the
 * ops table. The files themselves (open, read, write, flush, fsync,
 * release, the buffer pool) are fs_file.c's, which also explains how the
 * writes of one zone stay in order.
 *
 * Page cache and attributes. Sequential zone files opened for writing (and
 * O_DIRECT opens) are direct-io, and so is po2 (see p2z_fs_node_may_cache());
 * other opens of zone files use the page cache, kept across opens
 * (FOPEN_KEEP_CACHE). The writeback cache stays off: writes through the
 * page cache reach the daemon before write(2) returns. The daemon owns the
 * device, so nothing changes a zone behind its back, and the kernel may
 * keep attributes and pages for as long as it likes, provided the daemon
 * tells it about every change the kernel cannot see by itself:
 * - writes, truncates and O_TRUNC opens of a zone file: the kernel sees
 *   them (it updates i_size, drops the truncated pages and invalidates the
 *   attributes after a write);
 * - writes through po2 change a zone file the kernel did not write to;
 * - the errors= policy changes sizes and modes after a device error, met
 *   by any request on any file of the zone (p2z_fs_inval_changed()).
 * Each of these calls p2z_fs_inval() before the request is answered, or
 * right after it when the request may hold pages of that file locked. Without
 * a session to notify (unit tests), attributes are not cached at all.
 *
 * Every handler replies exactly once, through the p2z_fs_reply_*() helpers.
 */
#include "fs_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "po2zfs/cond.h"
#include "po2zfs/log.h"

/* Names never change: let the kernel keep them. */
#define P2Z_FS_ENTRY_TIMEOUT 86400.0
/* Directories and po2 change only through setattr, which refreshes them. */
#define P2Z_FS_STATIC_ATTR_TIMEOUT 86400.0
#define P2Z_FS_NAME_MAX 255

static const char *const p2z_fs_stat_names[P2Z_FS_STAT_NR] = {
	[P2Z_FS_STAT_LOOKUP] = "fs.lookup",
	[P2Z_FS_STAT_GETATTR] = "fs.getattr",
	[P2Z_FS_STAT_SETATTR] = "fs.setattr",
	[P2Z_FS_STAT_READDIR] = "fs.readdir",
	[P2Z_FS_STAT_OPEN] = "fs.open",
	[P2Z_FS_STAT_RELEASE] = "fs.release",
	[P2Z_FS_STAT_READ] = "fs.read",
	[P2Z_FS_STAT_WRITE] = "fs.write",
	[P2Z_FS_STAT_FLUSH] = "fs.flush",
	[P2Z_FS_STAT_FSYNC] = "fs.fsync",
	[P2Z_FS_STAT_STATFS] = "fs.statfs",
	[P2Z_FS_STAT_XATTR] = "fs.xattr",
	[P2Z_FS_STAT_INVAL] = "fs.inval",
	[P2Z_FS_STAT_WRITE_COPY] = "fs.write_copy",
};

/* ---- inodes and attributes ---- */

/* Count a request of kind @op that started at @t0 and returned @ret. */
void p2z_fs_count(struct p2z_fs *fs, enum p2z_fs_stat_op op, uint64_t t0,
		  ssize_t ret)
{
	bool sized = op == P2Z_FS_STAT_READ || op == P2Z_FS_STAT_WRITE ||
		     op == P2Z_FS_STAT_WRITE_COPY;

	p2z_stat_add(&fs->stats[op], t0, sized || ret < 0 ? ret : 0, sized);
}

/*
 * Drop what the kernel caches of inode @ino: its attributes, and its pages
 * from byte @off on (none if @off is negative). Waits for reads of those
 * pages still in flight, so it must not be called with a zone lock held.
 * An inode the kernel does not know (-ENOENT) has nothing cached.
 */
void p2z_fs_inval(struct p2z_fs *fs, fuse_ino_t ino, off_t off)
{
	uint64_t t0 = p2z_stat_now();
	int ret;

	if (!fs->se)
		return;
	if (off > 0)
		off -= off % (off_t)fs->page_bytes;
	/* Dropping pages waits for the reads of them, maybe not received. */
	if (off >= 0)
		p2z_cond_sleeping();
	ret = fuse_lowlevel_notify_inval_inode(fs->se, ino, off, 0);
	if (ret && ret != -ENOENT)
		p2z_log(LOG_WARNING, "cannot invalidate inode %llu: %s",
			(unsigned long long)ino, strerror(-ret));
	p2z_fs_count(fs, P2Z_FS_STAT_INVAL, t0, ret == -ENOENT ? 0 : ret);
}

int p2z_fs_node_of(const struct p2z_fs *fs, fuse_ino_t ino,
		   struct p2z_fs_node *n)
{
	n->ino = ino;
	n->zidx = 0;
	switch (ino) {
	case P2Z_FS_INO_ROOT:
		n->kind = P2Z_FS_ROOT;
		return 0;
	case P2Z_FS_INO_SEQ:
		n->kind = P2Z_FS_SEQ_DIR;
		return 0;
	case P2Z_FS_INO_CNV:
		n->kind = P2Z_FS_CNV_DIR;
		return fs->zt->nr_cnv ? 0 : -ENOENT;
	case P2Z_FS_INO_PO2:
		n->kind = P2Z_FS_PO2;
		return 0;
	}
	if (ino < P2Z_FS_INO_ZONE0 || ino >= fs->nr_inodes)
		return -ENOENT;
	n->kind = P2Z_FS_ZONE;
	n->zidx = ino - P2Z_FS_INO_ZONE0;
	return 0;
}

static void p2z_fs_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

/* The data of a file changed: new mtime and ctime. */
void p2z_fs_touch(struct p2z_fs *fs, fuse_ino_t ino)
{
	struct timespec now;

	p2z_fs_now(&now);
	pthread_mutex_lock(&fs->attr_lock);
	fs->attrs[ino].mtime = now;
	fs->attrs[ino].ctime = now;
	pthread_mutex_unlock(&fs->attr_lock);
}

/* Mode bits of a zone file: zonefs drops write (read-only zone) or all
 * (offline zone) permissions. */
static mode_t p2z_fs_zone_mode(mode_t mode, unsigned int zflags)
{
	if (zflags & P2Z_ZONE_F_OFFLINE)
		return mode & ~(mode_t)0777;
	if (zflags & P2Z_ZONE_F_RDONLY)
		return mode & ~(mode_t)0222;
	return mode;
}

static void p2z_fs_stat_dir(const struct p2z_fs *fs,
			    const struct p2z_fs_node *n, struct stat *st)
{
	st->st_mode |= S_IFDIR;
	st->st_nlink = 2;
	if (n->kind == P2Z_FS_ROOT)
		st->st_nlink = fs->zt->nr_cnv ? 4 : 3;
	/* As zonefs: a directory's size is its number of files. */
	st->st_size = (off_t)p2z_dir_nr_files(fs->zt, n->ino);
}

static int p2z_fs_stat(struct p2z_fs *fs, const struct p2z_fs_node *n,
		       struct stat *st)
{
	struct p2z_zone_state zs;
	struct p2z_fs_attr a;
	int ret;

	pthread_mutex_lock(&fs->attr_lock);
	a = fs->attrs[n->ino];
	pthread_mutex_unlock(&fs->attr_lock);

	memset(st, 0, sizeof(*st));
	st->st_ino = p2z_dir_st_ino(fs->zt, n->ino);
	st->st_mode = a.mode;
	st->st_uid = a.uid;
	st->st_gid = a.gid;
	st->st_atim = a.atime;
	st->st_mtim = a.mtime;
	st->st_ctim = a.ctime;
	st->st_blksize = fs->geom->lba_bytes;
	if (p2z_fs_node_is_dir(n)) {
		p2z_fs_stat_dir(fs, n, st);
		return 0;
	}
	st->st_mode |= S_IFREG;
	st->st_nlink = 1;
	if (n->kind == P2Z_FS_PO2) {
		st->st_size = (off_t)p2z_geom_po2_bytes(fs->geom);
		st->st_blocks = st->st_size / 512;
		return 0;
	}
	ret = p2z_zone_get_state(fs->zt, n->zidx, false, &zs);
	if (ret)
		return ret;
	st->st_mode = S_IFREG | p2z_fs_zone_mode(a.mode, zs.flags);
	st->st_size = (off_t)zs.size_bytes;
	/* As zonefs: st_blocks counts the capacity, not what is written. */
	st->st_blocks = (blkcnt_t)(zs.cap_bytes / 512);
	return 0;
}

/*
 * Zone files change, but the daemon tells the kernel when (p2z_fs_inval),
 * so an idle zone file's attributes may be kept. Not while the file (or
 * po2) is open for writing: the kernel then applies the replies of
 * concurrent GETATTR, READ and WRITE requests in an order of its own, and
 * stat(2) was seen to return a size smaller than the one it had returned
 * just before (a test appending while others read and stat: tests/func
 * 1003). With a timeout of 0 every stat(2) asks the daemon, whose write
 * pointer only grows. A reply computed before the first writer opened may
 * still carry a long timeout: stat(2) returns a reply the kernel did not
 * apply (an older one had been applied meanwhile) and then that older,
 * cached size. Opening a zone file for writing therefore invalidates its
 * attributes, which makes the kernel drop such replies.
 */
static double p2z_fs_attr_timeout(const struct p2z_fs *fs,
				  const struct p2z_fs_node *n)
{
	if (n->kind != P2Z_FS_ZONE)
		return P2Z_FS_STATIC_ATTR_TIMEOUT;
	if (!fs->se ||
	    __atomic_load_n(&fs->writers[n->zidx], __ATOMIC_RELAXED) ||
	    __atomic_load_n(&fs->po2_writers, __ATOMIC_RELAXED))
		return 0.0;
	return P2Z_FS_STATIC_ATTR_TIMEOUT;
}

/*
 * After a device error the errors= policy may have changed a zone's size,
 * mode or access (whichever request met the error, on whichever file):
 * drop what the kernel caches of the zone's file. Called after the reply
 * where the request may hold pages of that file locked (a read, a write
 * through the page cache), so that it never waits for its own pages.
 */
void p2z_fs_inval_changed(struct p2z_fs *fs, uint64_t zidx)
{
	if (p2z_zone_clear_changed(fs->zt, zidx))
		p2z_fs_inval(fs, P2Z_FS_INO_ZONE0 + zidx, 0);
}

void p2z_fs_after_io(struct p2z_fs *fs, const struct p2z_fs_node *n)
{
	if (n->kind == P2Z_FS_ZONE)
		p2z_fs_inval_changed(fs, n->zidx);
}

/*
 * A zone was reset or finished: drop every page and the attributes the
 * kernel keeps of its file before the request is answered. The kernel
 * truncates its page cache itself only when its own idea of the size
 * changes, and a read reply that crossed the reset may have set that size
 * already; the invalidation also makes replies of requests sent before the
 * reset too old to apply. Safe inside the request: sequential zone files
 * never have pages under writeback, and reads of the zone wait for no lock
 * the reset still holds.
 */
void p2z_fs_inval_reset(struct p2z_fs *fs, const struct p2z_fs_node *n)
{
	p2z_fs_inval(fs, n->ino, 0);
}

/* ---- names ---- */

static void p2z_fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	struct fuse_entry_param e;
	struct p2z_fs_node pn = { 0 }, n = { 0 };
	uint64_t t0 = p2z_stat_now();
	uint64_t ino = 0;
	int ret;

	memset(&e, 0, sizeof(e));
	ret = p2z_fs_node_of(fs, parent, &pn);
	if (!ret)
		ret = p2z_dir_lookup(fs->zt, parent, name, &ino);
	if (!ret)
		ret = p2z_fs_node_of(fs, ino, &n);
	if (!ret)
		ret = p2z_fs_stat(fs, &n, &e.attr);
	if (!ret) {
		e.ino = ino;
		e.attr_timeout = p2z_fs_attr_timeout(fs, &n);
		e.entry_timeout = P2Z_FS_ENTRY_TIMEOUT;
	}
	p2z_fs_count(fs, P2Z_FS_STAT_LOOKUP, t0, ret);
	p2z_fs_reply_entry(req, ret, &e);
}

static void p2z_fs_getattr(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	struct p2z_fs_node n = { 0 };
	struct stat st = { 0 };
	uint64_t t0 = p2z_stat_now();
	int ret;

	(void)fi;
	ret = p2z_fs_node_of(fs, ino, &n);
	if (!ret)
		ret = p2z_fs_stat(fs, &n, &st);
	p2z_fs_count(fs, P2Z_FS_STAT_GETATTR, t0, ret);
	p2z_fs_reply_attr(req, ret, &st, p2z_fs_attr_timeout(fs, &n));
}

/* ---- setattr ---- */

static void p2z_fs_set_time(struct timespec *t, const struct timespec *v,
			    bool now)
{
	if (now)
		p2z_fs_now(t);
	else
		*t = *v;
}

/* chmod, chown, utimes: kept in memory (as zonefs, nothing on disk). */
static int p2z_fs_setattr_meta(struct p2z_fs *fs, const struct p2z_fs_node *n,
			       const struct stat *attr, int to_set)
{
	struct p2z_fs_attr *a = &fs->attrs[n->ino];
	struct timespec now;

	/* Directories are fixed: no write permission may be granted. */
	if ((to_set & FUSE_SET_ATTR_MODE) && p2z_fs_node_is_dir(n) &&
	    (attr->st_mode & 0222))
		return -EPERM;
	p2z_fs_now(&now);
	pthread_mutex_lock(&fs->attr_lock);
	if (to_set & FUSE_SET_ATTR_MODE)
		a->mode = attr->st_mode & 07777;
	if (to_set & FUSE_SET_ATTR_UID)
		a->uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		a->gid = attr->st_gid;
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW))
		p2z_fs_set_time(&a->atime, &attr->st_atim,
				to_set & FUSE_SET_ATTR_ATIME_NOW);
	if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
		p2z_fs_set_time(&a->mtime, &attr->st_mtim,
				to_set & FUSE_SET_ATTR_MTIME_NOW);
	if (to_set & FUSE_SET_ATTR_CTIME)
		a->ctime = attr->st_ctim;
	else
		a->ctime = now;
	pthread_mutex_unlock(&fs->attr_lock);
	return 0;
}

static int p2z_fs_setattr_node(struct p2z_fs *fs, const struct p2z_fs_node *n,
			       const struct stat *attr, int to_set)
{
	const int meta = FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
			 FUSE_SET_ATTR_GID | FUSE_SET_ATTR_ATIME |
			 FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
			 FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME;
	struct p2z_zone_state zs;
	int ret;

	if (n->kind == P2Z_FS_ZONE) {
		ret = p2z_zone_get_state(fs->zt, n->zidx, false, &zs);
		if (ret)
			return ret;
		/* zonefs: immutable (read-only or offline) zone files. */
		if (zs.flags & (P2Z_ZONE_F_RDONLY | P2Z_ZONE_F_OFFLINE))
			return -EPERM;
	}
	if ((to_set & meta) && p2z_zone_table_is_rdonly(fs->zt))
		return -EROFS;
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (p2z_fs_node_is_dir(n))
			return -EISDIR;
		if (n->kind != P2Z_FS_ZONE || attr->st_size < 0)
			return -EPERM;
		ret = p2z_zone_truncate(fs->zt, n->zidx,
					(uint64_t)attr->st_size);
		if (ret)
			return ret;
		p2z_fs_touch(fs, n->ino);
		p2z_fs_inval_reset(fs, n);
	}
	if (to_set & meta)
		return p2z_fs_setattr_meta(fs, n, attr, to_set);
	return 0;
}

static void p2z_fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			   int to_set, struct fuse_file_info *fi)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	struct p2z_fs_node n = { 0 };
	struct stat st = { 0 };
	uint64_t t0 = p2z_stat_now();
	int ret;

	(void)fi;
	ret = p2z_fs_node_of(fs, ino, &n);
	if (!ret)
		ret = p2z_fs_setattr_node(fs, &n, attr, to_set);
	if (!ret)
		ret = p2z_fs_stat(fs, &n, &st);
	p2z_fs_count(fs, P2Z_FS_STAT_SETATTR, t0, ret);
	p2z_fs_reply_attr(req, ret, &st, p2z_fs_attr_timeout(fs, &n));
	p2z_fs_after_io(fs, &n);
}

/* ---- directories ---- */

/*
 * Add one entry; with @plus, with its attributes (readdirplus, so that
 * `ls -l` needs no lookup and no getattr per file). Return: its length,
 * larger than @size if it did not fit, or -errno.
 */
static ssize_t p2z_fs_add_entry(fuse_req_t req, struct p2z_fs *fs, char *buf,
				size_t size, const char *name, uint64_t ino,
				bool dir, off_t next, bool plus)
{
	struct fuse_entry_param e;
	struct p2z_fs_node n = { 0 };
	int ret;

	memset(&e, 0, sizeof(e));
	e.attr.st_ino = p2z_dir_st_ino(fs->zt, ino);
	e.attr.st_mode = dir ? S_IFDIR : S_IFREG;
	if (!plus)
		return (ssize_t)fuse_add_direntry(req, buf, size, name, &e.attr,
						  next);
	/* "." and "..": the kernel looks nothing up for these. */
	if (strcmp(name, ".") && strcmp(name, "..")) {
		ret = p2z_fs_node_of(fs, ino, &n);
		if (!ret)
			ret = p2z_fs_stat(fs, &n, &e.attr);
		if (ret)
			return ret;
		e.ino = ino;
		e.attr_timeout = p2z_fs_attr_timeout(fs, &n);
		e.entry_timeout = P2Z_FS_ENTRY_TIMEOUT;
	}
	return (ssize_t)fuse_add_direntry_plus(req, buf, size, name, &e, next);
}

static ssize_t p2z_fs_fill_dir(fuse_req_t req, struct p2z_fs *fs,
			       const struct p2z_fs_node *n, char *buf,
			       size_t size, off_t off, bool plus)
{
	char name[32];
	size_t pos = 0;
	uint64_t i;

	if (!p2z_fs_node_is_dir(n))
		return -ENOTDIR;
	for (i = off < 0 ? 0 : (uint64_t)off;; i++) {
		ssize_t len;
		uint64_t ino;
		bool dir;

		if (p2z_dir_entry(fs->zt, n->ino, i, name, sizeof(name), &ino,
				  &dir))
			break;
		len = p2z_fs_add_entry(req, fs, buf + pos, size - pos, name,
				       ino, dir, (off_t)(i + 1), plus);
		if (len < 0)
			return pos ? (ssize_t)pos : len;
		if ((size_t)len > size - pos)
			break;
		pos += (size_t)len;
	}
	return (ssize_t)pos;
}

static void p2z_fs_readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size,
				  off_t off, bool plus)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	struct p2z_fs_node n = { 0 };
	uint64_t t0 = p2z_stat_now();
	ssize_t ret;
	char *buf;

	buf = malloc(size ? size : 1);
	ret = buf ? p2z_fs_node_of(fs, ino, &n) : -ENOMEM;
	if (!ret)
		ret = p2z_fs_fill_dir(req, fs, &n, buf, size, off, plus);
	p2z_fs_count(fs, P2Z_FS_STAT_READDIR, t0, ret < 0 ? ret : 0);
	p2z_fs_reply_data(req, ret, buf);
	free(buf);
}

/* Names never change: the kernel may keep a directory's entries for good. */
static void p2z_fs_opendir(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	struct p2z_fs_node n = { 0 };
	int ret;

	ret = p2z_fs_node_of(fs, ino, &n);
	if (!ret && !p2z_fs_node_is_dir(&n))
		ret = -ENOTDIR;
	if (!ret) {
		fi->cache_readdir = 1;
		fi->keep_cache = 1;
	}
	p2z_fs_reply_open(req, ret, fi);
}

static void p2z_fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	p2z_fs_readdir_common(req, ino, size, off, false);
}

static void p2z_fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			       off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	p2z_fs_readdir_common(req, ino, size, off, true);
}

/* ---- statfs ---- */

static void p2z_fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	uint64_t lba = fs->geom->lba_bytes;
	struct p2z_zone_usage u;
	uint64_t t0 = p2z_stat_now();
	struct statvfs sv;

	(void)ino;
	p2z_zone_table_usage(fs->zt, &u);
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = lba;
	sv.f_frsize = lba;
	sv.f_blocks = u.cap_bytes / lba;
	sv.f_bfree = (u.cap_bytes - u.used_bytes) / lba;
	sv.f_bavail = sv.f_bfree;
	sv.f_files = p2z_dir_nr_inodes(fs->zt);
	sv.f_ffree = 0;
	sv.f_favail = 0;
	sv.f_namemax = P2Z_FS_NAME_MAX;
	if (p2z_zone_table_is_rdonly(fs->zt))
		sv.f_flag |= ST_RDONLY;
	p2z_fs_count(fs, P2Z_FS_STAT_STATFS, t0, 0);
	p2z_fs_reply_statfs(req, &sv);
}

/* ---- xattrs ---- */

/* Whose xattrs a node carries. */
static enum p2z_xattr_owner p2z_fs_xattr_owner(const struct p2z_fs_node *n)
{
	if (n->kind == P2Z_FS_ZONE)
		return P2Z_XATTR_ZONE;
	return n->kind == P2Z_FS_ROOT ? P2Z_XATTR_DEV : P2Z_XATTR_NONE;
}

/* user.dev.stats: this layer's requests, then the device's. */
static ssize_t p2z_fs_stats_get(struct p2z_fs *fs, char *val, size_t size)
{
	const struct p2z_stat *ds = p2z_zone_table_dev_stats(fs->zt);
	char name[32];
	size_t pos = 0;
	unsigned int i;

	for (i = 0; i < P2Z_FS_STAT_NR && pos < size; i++)
		pos += p2z_stat_format(val + pos, size - pos,
				       p2z_fs_stat_names[i], &fs->stats[i]);
	for (i = 0; i < P2Z_DEV_STAT_NR && pos < size; i++) {
		snprintf(name, sizeof(name), "dev.%s", p2z_dev_stat_name(i));
		pos += p2z_stat_format(val + pos, size - pos, name, &ds[i]);
	}
	return pos < size ? (ssize_t)pos : -ERANGE;
}

static void p2z_fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			    size_t size)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	char val[P2Z_XATTR_VALUE_MAX];
	struct p2z_fs_node n = { 0 };
	uint64_t t0 = p2z_stat_now();
	enum p2z_xattr_owner owner;
	ssize_t ret;

	ret = p2z_fs_node_of(fs, ino, &n);
	/*
	 * Only the user namespace exists, as in a filesystem with no
	 * handler for the others (zonefs has none at all). EOPNOTSUPP, not
	 * ENODATA, tells ls(1) and friends to stop asking for
	 * security.selinux and ACLs file after file on this filesystem.
	 */
	if (!ret && strncmp(name, "user.", 5))
		ret = -EOPNOTSUPP;
	else if (!ret) {
		owner = p2z_fs_xattr_owner(&n);
		if (p2z_xattr_is_live(owner, name))
			p2z_fs_wait_releases(fs);
		if (owner == P2Z_XATTR_DEV && !strcmp(name, P2Z_XATTR_STATS))
			ret = p2z_fs_stats_get(fs, val, sizeof(val));
		else
			ret = p2z_xattr_get(fs->zt, owner, n.zidx, name, val);
	}
	p2z_fs_count(fs, P2Z_FS_STAT_XATTR, t0, ret < 0 ? ret : 0);
	p2z_fs_reply_xattr(req, ret, val, size);
}

static void p2z_fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	char list[P2Z_XATTR_LIST_MAX];
	struct p2z_fs_node n = { 0 };
	ssize_t ret;

	ret = p2z_fs_node_of(fs, ino, &n);
	if (!ret)
		ret = p2z_xattr_list(p2z_fs_xattr_owner(&n), list);
	p2z_fs_reply_xattr(req, ret, list, size);
}

/* Only writable attribute: user.dev.stats, set to "0" to zero the counters. */
static void p2z_fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			    const char *value, size_t size, int flags)
{
	struct p2z_fs *fs = p2z_fs_of(req);
	int ret = -EPERM;

	(void)flags;
	if (ino == P2Z_FS_INO_ROOT && !strcmp(name, P2Z_XATTR_STATS)) {
		ret = -EINVAL;
		if (size == 1 && value[0] == '0') {
			p2z_stat_reset(fs->stats, P2Z_FS_STAT_NR);
			p2z_stat_reset(p2z_zone_table_dev_stats(fs->zt),
				       P2Z_DEV_STAT_NR);
			ret = 0;
		}
	}
	p2z_fs_reply_err(req, ret);
}

/* ---- the namespace is fixed ---- */

/* The requests that would change the namespace, refused by p2z_fs_refuse(). */
enum p2z_fs_refused {
	P2Z_FS_REFUSE_MKNOD,
	P2Z_FS_REFUSE_MKDIR,
	P2Z_FS_REFUSE_UNLINK,
	P2Z_FS_REFUSE_RMDIR,
	P2Z_FS_REFUSE_SYMLINK,
	P2Z_FS_REFUSE_RENAME,
	P2Z_FS_REFUSE_LINK,
	P2Z_FS_REFUSE_CREATE,
	P2Z_FS_REFUSE_REMOVEXATTR,
	P2Z_FS_REFUSE_NR,
};

/*
 * What each gets: EPERM, as zonefs' fixed tree answers, except a new name,
 * for which zonefs has no ->create and the VFS answers EACCES. No xattr can
 * be removed: they are all computed.
 */
static const int p2z_fs_refused_errno[P2Z_FS_REFUSE_NR] = {
	[P2Z_FS_REFUSE_MKNOD] = EPERM,	     [P2Z_FS_REFUSE_MKDIR] = EPERM,
	[P2Z_FS_REFUSE_UNLINK] = EPERM,	     [P2Z_FS_REFUSE_RMDIR] = EPERM,
	[P2Z_FS_REFUSE_SYMLINK] = EPERM,     [P2Z_FS_REFUSE_RENAME] = EPERM,
	[P2Z_FS_REFUSE_LINK] = EPERM,	     [P2Z_FS_REFUSE_CREATE] = EACCES,
	[P2Z_FS_REFUSE_REMOVEXATTR] = EPERM,
};

static void p2z_fs_refuse(fuse_req_t req, enum p2z_fs_refused op)
{
	p2z_fs_reply_err(req, -p2z_fs_refused_errno[op]);
}

/*
 * The handlers only name their request: the arguments do not matter, and
 * P2Z_FS_REFUSER() spares each its (void) casts.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define P2Z_FS_REFUSER(name, op, ...)                          \
	static void p2z_fs_##name(fuse_req_t req, __VA_ARGS__) \
	{                                                      \
		p2z_fs_refuse(req, op);                        \
	}

P2Z_FS_REFUSER(mknod, P2Z_FS_REFUSE_MKNOD, fuse_ino_t parent, const char *name,
	       mode_t mode, dev_t rdev)
P2Z_FS_REFUSER(mkdir, P2Z_FS_REFUSE_MKDIR, fuse_ino_t parent, const char *name,
	       mode_t mode)
P2Z_FS_REFUSER(unlink, P2Z_FS_REFUSE_UNLINK, fuse_ino_t parent,
	       const char *name)
P2Z_FS_REFUSER(rmdir, P2Z_FS_REFUSE_RMDIR, fuse_ino_t parent, const char *name)
P2Z_FS_REFUSER(symlink, P2Z_FS_REFUSE_SYMLINK, const char *link,
	       fuse_ino_t parent, const char *name)
P2Z_FS_REFUSER(rename, P2Z_FS_REFUSE_RENAME, fuse_ino_t parent,
	       const char *name, fuse_ino_t newparent, const char *newname,
	       unsigned int flags)
P2Z_FS_REFUSER(link, P2Z_FS_REFUSE_LINK, fuse_ino_t ino, fuse_ino_t newparent,
	       const char *newname)
P2Z_FS_REFUSER(create, P2Z_FS_REFUSE_CREATE, fuse_ino_t parent,
	       const char *name, mode_t mode, struct fuse_file_info *fi)
P2Z_FS_REFUSER(removexattr, P2Z_FS_REFUSE_REMOVEXATTR, fuse_ino_t ino,
	       const char *name)

#undef P2Z_FS_REFUSER
#pragma GCC diagnostic pop

/* ---- session ---- */

static void p2z_fs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = P2Z_FS_MAX_WRITE;
	/*
	 * Asynchronous direct I/O reaches the daemon concurrently; the zone
	 * write sequencer keeps the writes of a zone in order (see the top
	 * of fs_file.c and zone_seq.c).
	 */
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	_Static_assert(
		P2Z_FS_MAX_BACKGROUND < P2Z_FS_MAX_THREADS,
		"a worker must stay free for a held write's predecessor");
	conn->max_background = P2Z_FS_MAX_BACKGROUND;
	conn->congestion_threshold = P2Z_FS_MAX_BACKGROUND * 3 / 4;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/*
	 * No splice: libfuse would leave a WRITE's data in a pipe, to be
	 * copied out of it once more. Read into memory, the data goes to the
	 * device from where it landed (p2z_fs_write_data()).
	 */
	conn->want &= ~FUSE_CAP_SPLICE_READ;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	conn->time_gran = 1;
}

const struct fuse_lowlevel_ops p2z_fs_ops = {
	.init = p2z_fs_init,
	.lookup = p2z_fs_lookup,
	.getattr = p2z_fs_getattr,
	.setattr = p2z_fs_setattr,
	.mknod = p2z_fs_mknod,
	.mkdir = p2z_fs_mkdir,
	.unlink = p2z_fs_unlink,
	.rmdir = p2z_fs_rmdir,
	.symlink = p2z_fs_symlink,
	.rename = p2z_fs_rename,
	.link = p2z_fs_link,
	.open = p2z_fs_open,
	.read = p2z_fs_read,
	.flush = p2z_fs_flush,
	.release = p2z_fs_release,
	.fsync = p2z_fs_fsync,
	.opendir = p2z_fs_opendir,
	.readdir = p2z_fs_readdir,
	.readdirplus = p2z_fs_readdirplus,
	.statfs = p2z_fs_statfs,
	.setxattr = p2z_fs_setxattr,
	.getxattr = p2z_fs_getxattr,
	.listxattr = p2z_fs_listxattr,
	.removexattr = p2z_fs_removexattr,
	.create = p2z_fs_create,
	.write_buf = p2z_fs_write_buf,
};

/* The locks and the condition variable of p2z_fs_alloc(). */
static int p2z_fs_init_locks(struct p2z_fs *fs)
{
	int ret;

	ret = -pthread_mutex_init(&fs->attr_lock, NULL);
	if (ret)
		return ret;
	ret = p2z_fs_pool_init(&fs->pool, P2Z_FS_BUF_BYTES, P2Z_ZONE_BUF_ALIGN,
			       P2Z_FS_BUF_CACHE);
	if (ret)
		goto out_destroy_attr_lock;
	ret = p2z_fs_rbufs_init(fs);
	if (ret)
		goto out_destroy_pool;
	ret = -pthread_mutex_init(&fs->closing_lock, NULL);
	if (ret)
		goto out_destroy_rbufs;
	ret = p2z_cond_init_monotonic(&fs->closing_cond);
	if (!ret)
		return 0;
	pthread_mutex_destroy(&fs->closing_lock);
out_destroy_rbufs:
	p2z_fs_pool_destroy(&fs->rbufs);
out_destroy_pool:
	p2z_fs_pool_destroy(&fs->pool);
out_destroy_attr_lock:
	pthread_mutex_destroy(&fs->attr_lock);
	return ret;
}

int p2z_fs_alloc(struct p2z_zone_table *zt, const struct p2z_fs_opts *opts,
		 struct p2z_fs **fsp)
{
	long page = sysconf(_SC_PAGESIZE);
	struct timespec now;
	struct p2z_fs *fs;
	uint64_t ino;
	int ret;

	/* Pools align to it, offsets round down to it: a power of two. */
	if (page <= 0 || page & (page - 1))
		return -EINVAL;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->zt = zt;
	fs->geom = &zt->geom;
	fs->opts = *opts;
	fs->nr_inodes = P2Z_FS_INO_ZONE0 + zt->geom.nr_zones;
	fs->page_bytes = (uint64_t)page;
	fs->attrs = calloc(fs->nr_inodes, sizeof(*fs->attrs));
	fs->writers = calloc(zt->geom.nr_zones, sizeof(*fs->writers));
	ret = fs->attrs && fs->writers ? p2z_fs_init_locks(fs) : -ENOMEM;
	if (ret) {
		free(fs->attrs);
		free(fs->writers);
		free(fs);
		return ret;
	}
	p2z_fs_now(&now);
	for (ino = 0; ino < fs->nr_inodes; ino++) {
		struct p2z_fs_attr *a = &fs->attrs[ino];
		bool dir = ino >= P2Z_FS_INO_ROOT && ino <= P2Z_FS_INO_CNV;

		a->mode = dir ? 0555 : opts->perm & 0777;
		a->uid = dir ? opts->dir_uid : opts->uid;
		a->gid = dir ? opts->dir_gid : opts->gid;
		a->atime = now;
		a->mtime = now;
		a->ctime = now;
	}
	*fsp = fs;
	return 0;
}

void p2z_fs_set_session(struct p2z_fs *fs, struct fuse_session *se)
{
	fs->se = se;
}

/*
 * Read-ahead of the mount, in KiB: FUSE's largest request (max_pages, 256
 * pages since Linux 4.20, what libfuse asks for with a 1 MiB max_write).
 * The kernel starts a FUSE mount at its default of 128 KiB and lowers it
 * to the daemon's max_readahead in the INIT reply, never raises it: only
 * the bdi's read_ahead_kb in sysfs does. With 128 KiB, a sequential
 * buffered reader costs a round trip through the daemon per 256 KiB; with
 * 1 MiB, per 1 MiB (guest, 1 MiB reads: 144-206 -> 210-221 MiB/s).
 */
#define P2Z_FS_READAHEAD_KB (P2Z_FS_MAX_WRITE / 1024)

/*
 * The mount's anonymous device: the root of the mount at @mountpoint, from
 * the kernel's cached attributes (AT_STATX_DONT_SYNC: before the workers
 * start, a GETATTR would never be answered).
 */
static int p2z_fs_mount_dev(const char *mountpoint, struct statx *stx)
{
	if (statx(AT_FDCWD, mountpoint,
		  AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE,
		  stx) < 0)
		return -errno;
	if (!S_ISDIR(stx->stx_mode))
		return -ENOTDIR;
	if (!(stx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
	    !(stx->stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return -ESTALE;
	return 0;
}

/*
 * Raise the mount's read-ahead, once the INIT reply has set it: the bdi is
 * the mount's anonymous device, /sys/class/bdi/MAJ:MIN. Root only, like
 * the knob; a daemon that cannot keeps the kernel's default and says so.
 */
static void p2z_fs_raise_readahead(const char *mountpoint)
{
	char path[64];
	struct statx stx;
	int fd, ret, n;

	ret = p2z_fs_mount_dev(mountpoint, &stx);
	if (ret) {
		p2z_log(LOG_INFO, "%s: read-ahead stays at the default: %s",
			mountpoint, strerror(-ret));
		return;
	}
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
		 stx.stx_dev_major, stx.stx_dev_minor);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : dprintf(fd, "%u\n", P2Z_FS_READAHEAD_KB);
	if (n < 0)
		p2z_log(LOG_INFO, "%s: read-ahead stays at the default: %s: %s",
			mountpoint, path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

void p2z_fs_serve_init(struct p2z_fs *fs, const char *mountpoint)
{
	struct fuse_session *se = fs->se;
	struct fuse_buf fbuf = { .mem = NULL };
	int ret;

	do {
		ret = fuse_session_receive_buf(se, &fbuf);
	} while (ret == -EINTR && !fuse_session_exited(se));
	if (ret > 0)
		fuse_session_process_buf(se, &fbuf);
	free(fbuf.mem);
	if (ret > 0 && !fuse_session_exited(se))
		p2z_fs_raise_readahead(mountpoint);
}

void p2z_fs_free(struct p2z_fs *fs)
{
	if (!fs)
		return;
	pthread_cond_destroy(&fs->closing_cond);
	pthread_mutex_destroy(&fs->closing_lock);
	p2z_fs_pool_destroy(&fs->rbufs);
	p2z_fs_pool_destroy(&fs->pool);
	pthread_mutex_destroy(&fs->attr_lock);
	free(fs->attrs);
	free(fs->writers);
	free(fs);
}
