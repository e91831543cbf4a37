/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the two halves of the filesystem share, as zonefs.h does for
 * fs/zonefs/super.c and file.c: fs.c owns the namespace (nodes, stat,
 * lookup, getattr, setattr, readdir, statfs, xattrs, the refusals of the
 * fixed namespace, the ops table, setup), fs_file.c owns the files (the
 * buffer pool, open, release, flush, fsync, read, write). Private to those
 * two files; the rest of the program sees po2zfs/fs.h only.
 */
#ifndef PO2ZFS_FS_PRIV_H
#define PO2ZFS_FS_PRIV_H

#define FUSE_USE_VERSION 314

#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/statvfs.h>
#include <time.h>

#include "po2zfs/fs.h"
#include "po2zfs/po2.h"
#include "po2zfs/stats.h"

/* Kernel reads are at most max_pages (256) pages; room to align them. */
#define P2Z_FS_BUF_BYTES (P2Z_FS_MAX_WRITE + 2 * 65536)
#define P2Z_FS_BUF_CACHE 32 /* I/O buffers cached at most */
#define P2Z_FS_POOL_MAX 64

/*
 * A cache of free buffers of one size and alignment (fs_file.c): the I/O
 * buffers of fs_file.c and the request buffers of fs_loop.c. A get takes a
 * cached buffer or allocates one; a put caches it, up to @max, or frees it.
 */
struct p2z_fs_pool {
	pthread_mutex_t lock;
	size_t bytes; /* of each buffer */
	size_t align;
	unsigned int max; /* cached at most, up to P2Z_FS_POOL_MAX */
	unsigned int nr; /* guarded by lock */
	void *free[P2Z_FS_POOL_MAX]; /* guarded by lock */
};

enum p2z_fs_kind {
	P2Z_FS_ROOT,
	P2Z_FS_SEQ_DIR,
	P2Z_FS_CNV_DIR,
	P2Z_FS_PO2,
	P2Z_FS_ZONE,
};

/* An inode: what it is and, for zone files, which zone. */
struct p2z_fs_node {
	fuse_ino_t ino;
	enum p2z_fs_kind kind;
	uint64_t zidx;
};

/* Attributes kept in memory until unmount; guarded by p2z_fs.attr_lock. */
struct p2z_fs_attr {
	mode_t mode;
	uid_t uid;
	gid_t gid;
	struct timespec atime;
	struct timespec mtime;
	struct timespec ctime;
};

/* What open() saw, for the later calls on that file (fi->fh). */
struct p2z_fs_file {
	int flags;
	bool writer; /* holds a p2z_zone_get_write() reference */
	bool direct_io; /* opened FOPEN_DIRECT_IO: no page cache */
	bool closing; /* flushed, not released; guarded by closing_lock */
};

/* Requests counted for user.dev.stats. */
enum p2z_fs_stat_op {
	P2Z_FS_STAT_LOOKUP,
	P2Z_FS_STAT_GETATTR,
	P2Z_FS_STAT_SETATTR,
	P2Z_FS_STAT_READDIR,
	P2Z_FS_STAT_OPEN,
	P2Z_FS_STAT_RELEASE,
	P2Z_FS_STAT_READ,
	P2Z_FS_STAT_WRITE,
	P2Z_FS_STAT_FLUSH,
	P2Z_FS_STAT_FSYNC,
	P2Z_FS_STAT_STATFS,
	P2Z_FS_STAT_XATTR,
	P2Z_FS_STAT_INVAL,
	P2Z_FS_STAT_WRITE_COPY, /* writes whose data the daemon copied */
	P2Z_FS_STAT_NR,
};

struct p2z_fs {
	struct p2z_zone_table *zt;
	const struct p2z_geom *geom;
	struct p2z_fs_opts opts;
	uint64_t nr_inodes;
	pthread_mutex_t attr_lock;
	struct p2z_fs_attr *attrs; /* indexed by inode number */
	struct p2z_fs_pool pool; /* I/O buffers, P2Z_FS_BUF_BYTES */
	struct p2z_fs_pool rbufs; /* request buffers (fs_loop.c) */
	pthread_mutex_t closing_lock;
	pthread_cond_t closing_cond; /* signalled when nr_closing drops */
	uint64_t nr_closing; /* guarded by closing_lock */
	struct fuse_session *se; /* for invalidations; NULL: cache nothing */
	uint64_t page_bytes;
	uint32_t *writers; /* open writers per zone file, atomic */
	uint32_t po2_writers; /* open writers of po2, atomic */
	struct p2z_stat stats[P2Z_FS_STAT_NR];
};

struct p2z_fs_loop;
struct p2z_fs_rd;

/*
 * A worker of the session loop (fs_loop.c): its epoll set, its own device
 * queue, the buffer libfuse receives into, and the failed reads waiting
 * for the queue to drain before their errors= policy runs. Touched by its
 * own thread only.
 */
struct p2z_fs_worker {
	struct p2z_fs_loop *loop;
	pthread_t tid;
	int epfd;
	struct p2z_dev_queue *q;
	struct fuse_buf fbuf;
	void *rbuf; /* fbuf.mem's request buffer (fs_loop.c), or NULL */
	struct p2z_fs_rd *deferred;
	struct p2z_fs_rd *defer_tail;
	unsigned int counted; /* its part of the loop's reads in flight */
	bool receiver; /* /dev/fuse is in its epoll set (atomic) */
	bool spare; /* on the loop's spare list (the list's lock) */
	struct p2z_fs_worker *next_spare;
};

/*
 * An asynchronous READ (fs_file.c): the request, the buffer, and the zone
 * reads in flight for it (one for a zone file, one per zone for po2).
 * @pending counts them plus the submitter's reference; the last one to
 * drop it answers, or hands it to p2z_fs_worker_defer() after an error.
 */
struct p2z_fs_rd {
	struct p2z_fs *fs;
	fuse_req_t req;
	struct p2z_fs_node n;
	char *buf;
	size_t size; /* requested */
	size_t skip; /* offset of the requested data in buf */
	size_t len; /* bytes read into buf (LBA aligned range) */
	uint64_t t0;
	unsigned int pending;
	ssize_t err; /* first raw error, 0 */
	uint64_t err_zidx;
	uint64_t err_ofs;
	struct p2z_fs_rd *next; /* on the worker's deferred list */
};

/* Replies: the only place that calls fuse_reply_*(). */

static inline void p2z_fs_reply_err(fuse_req_t req, int ret)
{
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

static inline void p2z_fs_reply_entry(fuse_req_t req, int ret,
				      const struct fuse_entry_param *e)
{
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_entry(req, e);
}

static inline void p2z_fs_reply_attr(fuse_req_t req, int ret,
				     const struct stat *st, double timeout)
{
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, st, timeout);
}

/* Return: 0, or -errno if the reply could not be sent (no release then). */
static inline int p2z_fs_reply_open(fuse_req_t req, int ret,
				    const struct fuse_file_info *fi)
{
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return 0;
	}
	return fuse_reply_open(req, fi);
}

static inline void p2z_fs_reply_data(fuse_req_t req, ssize_t ret,
				     const void *buf)
{
	if (ret < 0)
		fuse_reply_err(req, (int)-ret);
	else
		fuse_reply_buf(req, buf, (size_t)ret);
}

static inline void p2z_fs_reply_write(fuse_req_t req, ssize_t ret)
{
	if (ret < 0)
		fuse_reply_err(req, (int)-ret);
	else
		fuse_reply_write(req, (size_t)ret);
}

static inline void p2z_fs_reply_statfs(fuse_req_t req, const struct statvfs *sv)
{
	fuse_reply_statfs(req, sv);
}

/*
 * xattr values and lists: size 0 asks for the length, a smaller buffer is
 * ERANGE (fuse_lowlevel.h, getxattr/listxattr).
 */
static inline void p2z_fs_reply_xattr(fuse_req_t req, ssize_t len,
				      const char *val, size_t size)
{
	if (len < 0)
		fuse_reply_err(req, (int)-len);
	else if (!size)
		fuse_reply_xattr(req, (size_t)len);
	else if ((size_t)len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, val, (size_t)len);
}

static inline struct p2z_fs *p2z_fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static inline bool p2z_fs_node_is_dir(const struct p2z_fs_node *n)
{
	return n->kind == P2Z_FS_ROOT || n->kind == P2Z_FS_SEQ_DIR ||
	       n->kind == P2Z_FS_CNV_DIR;
}

/* fs.c */

/**
 * p2z_fs_count() - count a request for user.dev.stats
 * @fs: filesystem
 * @op: kind of request
 * @t0: p2z_stat_now() when it started
 * @ret: what it returned (a byte count for reads and writes)
 */
void p2z_fs_count(struct p2z_fs *fs, enum p2z_fs_stat_op op, uint64_t t0,
		  ssize_t ret);

/**
 * p2z_fs_inval() - drop what the kernel caches of an inode
 * @fs: filesystem
 * @ino: node id
 * @off: first byte of the pages to drop (rounded down to a page), or
 *	 negative for the attributes only
 *
 * Waits for reads of those pages still in flight: never call it with a zone
 * lock held.
 */
void p2z_fs_inval(struct p2z_fs *fs, fuse_ino_t ino, off_t off);

/**
 * p2z_fs_node_of() - the node of a FUSE node id
 * @fs: filesystem
 * @ino: node id
 * @n: result
 *
 * Return: 0, or -ENOENT (no such node).
 */
int p2z_fs_node_of(const struct p2z_fs *fs, fuse_ino_t ino,
		   struct p2z_fs_node *n);

/**
 * p2z_fs_touch() - the data of a file changed: new mtime and ctime
 * @fs: filesystem
 * @ino: node id
 */
void p2z_fs_touch(struct p2z_fs *fs, fuse_ino_t ino);

/**
 * p2z_fs_inval_changed() - drop the kernel's cache of a zone's file if the
 *			    errors= policy changed the zone
 * @fs: filesystem
 * @zidx: zone index
 *
 * Call it after every request that may have met a device error in that
 * zone, after the reply if the request may hold pages of the file locked.
 */
void p2z_fs_inval_changed(struct p2z_fs *fs, uint64_t zidx);

/**
 * p2z_fs_after_io() - p2z_fs_inval_changed() for the zone of a node
 * @fs: filesystem
 * @n: the node a request was for (nothing happens unless a zone file)
 */
void p2z_fs_after_io(struct p2z_fs *fs, const struct p2z_fs_node *n);

/**
 * p2z_fs_inval_reset() - a zone was reset or finished: drop its file's
 *			  pages and attributes
 * @fs: filesystem
 * @n: the zone file's node
 */
void p2z_fs_inval_reset(struct p2z_fs *fs, const struct p2z_fs_node *n);

/* fs_file.c */

/**
 * p2z_fs_pool_init() - set up an empty pool
 * @p: the pool
 * @bytes: size of each buffer
 * @align: their alignment, a power of two and a multiple of sizeof(void *)
 * @max: buffers cached at most (up to P2Z_FS_POOL_MAX)
 *
 * Return: 0 or -errno.
 */
int p2z_fs_pool_init(struct p2z_fs_pool *p, size_t bytes, size_t align,
		     unsigned int max);

/**
 * p2z_fs_pool_destroy() - free the cached buffers and the pool's lock
 * @p: the pool; every buffer of it put back or freed
 */
void p2z_fs_pool_destroy(struct p2z_fs_pool *p);

/**
 * p2z_fs_pool_get() - a buffer of the pool
 * @p: the pool
 *
 * Return: a cached buffer or a new one, NULL if none could be allocated.
 */
void *p2z_fs_pool_get(struct p2z_fs_pool *p);

/**
 * p2z_fs_pool_put() - give a buffer back to its pool
 * @p: the pool
 * @buf: the buffer, or NULL
 */
void p2z_fs_pool_put(struct p2z_fs_pool *p, void *buf);

/**
 * p2z_fs_wait_releases() - wait briefly for flushed files to be released
 * @fs: filesystem
 *
 * Only with explicit-open, bounded (see fs_file.c).
 */
void p2z_fs_wait_releases(struct p2z_fs *fs);

/**
 * p2z_fs_read_finish() - answer an asynchronous read that failed
 * @rd: the read, nothing of it in flight; freed
 *
 * Runs the errors= policy: call it only with the worker's queue drained.
 */
void p2z_fs_read_finish(struct p2z_fs_rd *rd);

/* fs_loop.c */

/**
 * p2z_fs_worker_self() - the session loop's worker running this thread
 *
 * Return: it, or NULL (not a worker: unit tests, the first request).
 */
struct p2z_fs_worker *p2z_fs_worker_self(void);

/**
 * p2z_fs_worker_take_buf() - keep the request buffer that holds a WRITE's data
 * @w: the worker that received the request (the calling thread's)
 * @data: the data
 * @len: its length
 *
 * Hands @w's request buffer to the caller, @w receiving into another one
 * from then on, so that a write submitted to the device keeps its data
 * where the kernel put it instead of copying it out.
 *
 * Return: the buffer, to put back into fs->rbufs once the data
 * is no longer needed; NULL if @data is not in a request buffer of the
 * loop's own or no other buffer could be had (then copy).
 */
void *p2z_fs_worker_take_buf(struct p2z_fs_worker *w, const void *data,
			     size_t len);

/**
 * p2z_fs_rbufs_init() - set up the cache of the loop's request buffers
 * @fs: the filesystem, whose rbufs it is
 *
 * Return: 0 or -errno; p2z_fs_pool_destroy() undoes it.
 */
int p2z_fs_rbufs_init(struct p2z_fs *fs);

/**
 * p2z_fs_worker_defer() - finish a failed read once the queue is drained
 * @w: the calling thread's worker
 * @rd: the read, nothing of it in flight
 */
void p2z_fs_worker_defer(struct p2z_fs_worker *w, struct p2z_fs_rd *rd);

/**
 * p2z_fs_worker_drain() - complete everything in flight on a worker's queue
 * @w: the calling thread's worker
 */
void p2z_fs_worker_drain(struct p2z_fs_worker *w);

/* The file handlers, for p2z_fs_ops (fuse_lowlevel.h documents them). */
void p2z_fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void p2z_fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void p2z_fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi);
void p2z_fs_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in,
		      off_t off, struct fuse_file_info *fi);
void p2z_fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void p2z_fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		  struct fuse_file_info *fi);

#endif /* PO2ZFS_FS_PRIV_H */
