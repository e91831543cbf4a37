/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internal interface between the files of the emu backend, for them alone
 * (and their tests): emu_image.c knows the image format (create, validate,
 * faults set from another process); dev_emu.c runs the device (zone state
 * machine, I/O, applying faults) with emu_cache.c (its volatile write
 * cache) and emu_host.c (the image file as its medium: data I/O, syncs,
 * O_DIRECT). The image layout is described in emu_image.c.
 */
#ifndef PO2ZFS_EMU_PRIV_H
#define PO2ZFS_EMU_PRIV_H

#include <endian.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "po2zfs/dev.h"
#include "po2zfs/emu.h"

#define P2Z_EMU_MAGIC "PO2ZEMU\n"
#define P2Z_EMU_MAGIC_LEN 8
#define P2Z_EMU_HDR_BYTES 4096ULL /* the zone table starts here */
#define P2Z_EMU_WHY_LEN 256 /* room for a one-line reason */

/* Pending fault bits that change a zone's condition, and all of them. */
#define P2Z_EMU_PENDING_COND                                  \
	(P2Z_EMU_PENDING_READONLY | P2Z_EMU_PENDING_OFFLINE | \
	 P2Z_EMU_PENDING_ONLINE)
#define P2Z_EMU_PENDING_ALL (P2Z_EMU_PENDING_COND | P2Z_EMU_PENDING_FAIL_IO)

/*
 * On-disk zone table entry, little-endian, 16 bytes.
 *
 * @state holds a zone's write pointer and condition together, so that one
 * aligned 8-byte store changes both (see p2z_emu_state_pack()): a process
 * killed at any instant leaves the old state or the new one, never the
 * pointer of one with the condition of the other. With bit 63 clear (as
 * po2zfs-emu create writes it, and as older versions kept every entry)
 * @state is the write pointer alone and @cond the condition; once a zone's
 * state changes, @cond is no longer read.
 */
struct p2z_emu_zent {
	uint64_t state; /* written under res_lock (and the zone lock) */
	uint8_t cond; /* enum p2z_zone_cond, if @state is not packed */
	uint8_t fault; /* P2Z_EMU_PENDING_* bits, set by other processes */
	uint8_t saved_cond; /* cond before read-only/offline; res_lock */
	uint8_t reserved[5];
};
_Static_assert(sizeof(struct p2z_emu_zent) == 16, "emu zone entry layout");

/*
 * A packed state word: bit 63 set, the condition in bits 56-62, the write
 * pointer (LBAs from the zone start) in bits 0-55. A zone has fewer than
 * 2^54 LBAs: an image is a file, smaller than 2^63 bytes.
 */
#define P2Z_EMU_STATE_PACKED (UINT64_C(1) << 63)
#define P2Z_EMU_STATE_COND_SHIFT 56
#define P2Z_EMU_STATE_WP_MASK ((UINT64_C(1) << P2Z_EMU_STATE_COND_SHIFT) - 1)

/**
 * p2z_emu_state_pack() - the state word of a write pointer and condition
 * @wp: write pointer, LBAs from the zone start
 * @cond: enum p2z_zone_cond
 *
 * Return: the packed word, in host order.
 */
static inline uint64_t p2z_emu_state_pack(uint64_t wp, uint8_t cond)
{
	return P2Z_EMU_STATE_PACKED |
	       (uint64_t)(cond & 0x7f) << P2Z_EMU_STATE_COND_SHIFT |
	       (wp & P2Z_EMU_STATE_WP_MASK);
}

/**
 * p2z_emu_zent_load() - read a zone's write pointer and condition
 * @z: zone table entry, possibly changing under the caller
 * @wp: gets the write pointer, LBAs from the zone start
 * @cond: gets the condition
 *
 * One load of the state word; an entry not packed yet takes its condition
 * from the cond byte, which nothing writes any more.
 */
static inline void p2z_emu_zent_load(const struct p2z_emu_zent *z, uint64_t *wp,
				     uint8_t *cond)
{
	uint64_t st = le64toh(__atomic_load_n(&z->state, __ATOMIC_ACQUIRE));

	if (st & P2Z_EMU_STATE_PACKED) {
		*wp = st & P2Z_EMU_STATE_WP_MASK;
		*cond = (uint8_t)((st >> P2Z_EMU_STATE_COND_SHIFT) & 0x7f);
	} else {
		*wp = st;
		*cond = __atomic_load_n(&z->cond, __ATOMIC_ACQUIRE);
	}
}

/* Geometry and layout of an image, in host order. */
struct p2z_emu_geom {
	uint32_t lba_bytes;
	uint64_t zone_lba;
	uint64_t cap_lba;
	uint64_t nr_zones;
	uint64_t nr_cnv;
	uint32_t max_open;
	uint32_t max_active;
	uint32_t max_append_bytes;
	bool volatile_cache; /* header flag: create --volatile-cache */
	uint64_t zone_bytes;
	uint64_t data_ofs;
	uint64_t map_bytes; /* header and table */
	uint64_t file_bytes;
};

/**
 * p2z_emu_table() - the zone table in a mapping of an image
 * @map: header and table, as p2z_emu_image_load() maps them
 *
 * Return: the first zone table entry.
 */
static inline struct p2z_emu_zent *p2z_emu_table(void *map)
{
	return (struct p2z_emu_zent *)((char *)map + P2Z_EMU_HDR_BYTES);
}

/* emu_image.c */

/**
 * p2z_emu_why() - give a one-line reason for an error
 * @why: if not NULL, receives the reason formatted from @fmt
 * @len: size of @why
 * @err: the error to return
 * @fmt: printf format of the reason
 *
 * Return: @err.
 */
int p2z_emu_why(char *why, size_t len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/**
 * p2z_emu_crc32c() - CRC32C (Castagnoli), as the image header stores it
 * @buf: data
 * @len: bytes of @buf
 *
 * Bitwise, reflected polynomial 0x82f63b78, initial and final inversion:
 * small and slow, for the 88-byte header only.
 *
 * Return: the checksum, in host order.
 */
uint32_t p2z_emu_crc32c(const void *buf, size_t len);

/*
 * How an image is locked (flock(2), without waiting): every user of the
 * device holds a lock for as long as it has the image open, read-only
 * users a shared one, so that nothing reformats or rewrites an image under
 * a running daemon; tools that only look take none.
 */
enum p2z_emu_lock {
	P2Z_EMU_LOCK_NONE, /* read-only look (report, check) */
	P2Z_EMU_LOCK_SHARED, /* read-only user */
	P2Z_EMU_LOCK_EXCL, /* the one writer */
};

/**
 * p2z_emu_image_load() - open, check and map an image
 * @path: image path
 * @rdonly: open and map read-only; else read-write
 * @lock: the lock to take (P2Z_EMU_LOCK_EXCL if !@rdonly)
 * @fdp: receives the open file
 * @g: receives the image's geometry
 * @mapp: receives the header and zone table, mapped MAP_SHARED
 *	  (@g->map_bytes long; writable unless @rdonly)
 * @why: if not NULL, receives a one-line reason on failure
 * @why_len: size of @why
 *
 * Checks the header and every zone table entry. Does not log. On success
 * the caller owns *@fdp and *@mapp.
 *
 * Return: 0, -EINVAL (not an image), -EUCLEAN (damaged image), -EBUSY if
 * the lock conflicts with another user's (a writer, or any user for
 * P2Z_EMU_LOCK_EXCL), or a system call's -errno.
 */
int p2z_emu_image_load(const char *path, bool rdonly, enum p2z_emu_lock lock,
		       int *fdp, struct p2z_emu_geom *g, void **mapp, char *why,
		       size_t why_len);

/**
 * p2z_emu_pwrite_full() - write all of a buffer to a file
 * @fd: file
 * @buf: data
 * @len: bytes to write
 * @ofs: file offset
 * @rwf: pwritev2(2) flags (RWF_DSYNC for a FUA write), or 0
 *
 * Return: 0 or a system call's -errno.
 */
int p2z_emu_pwrite_full(int fd, const void *buf, size_t len, uint64_t ofs,
			int rwf);

/**
 * p2z_emu_image_record_fault() - record a fault in a zone's table entry
 * @path: image path
 * @zidx: zone index
 * @fault: what to inject
 * @why: if not NULL, receives a one-line reason on failure
 * @len: size of @why
 *
 * Only records it, in the shared zone table: applying it is the device's
 * job (p2z_emu_set_fault() in dev_emu.c). Does not log.
 *
 * Return: 0, -EINVAL (bad @zidx or @fault, or not an image), -EUCLEAN
 * (damaged image) or a system call's -errno.
 */
int p2z_emu_image_record_fault(const char *path, uint64_t zidx,
			       enum p2z_emu_fault fault, char *why, size_t len);

/* ---- the running device: dev_emu.c, emu_cache.c, emu_host.c */

/*
 * A zone, and its part of the volatile write cache (images created with
 * --volatile-cache; see emu_cache.c).
 */
struct p2z_emu_zone {
	pthread_mutex_t lock;
	uint64_t open_seq; /* when it was opened; guarded by e->res_lock */
	/* The device's state word (host order, packed as the table's): the
	 * table holds the persisted one. Written under res_lock. */
	uint64_t vstate;
	bool dirty; /* vstate may differ from the table; res_lock, atomic */
	bool has_snap; /* flush: store @snap after the data sync; res_lock */
	uint64_t snap;
	/* Cached data, zone lock: of a sequential zone, LBAs [cstart,
	 * cstart + cnlb); of a conventional one, a log of cused bytes of
	 * writes (struct p2z_emu_cnv_ext and its data), cnlb LBAs in all. */
	void *cbuf;
	size_t ccap; /* bytes allocated at cbuf */
	size_t cused;
	uint64_t cstart, cnlb;
};

/* A write cached in a conventional zone's log, its data after it. */
struct p2z_emu_cnv_ext {
	uint64_t rel; /* LBA in the zone */
	uint64_t nlb;
};

/* Buffer alignment used for O_DIRECT: enough for every Linux filesystem. */
#define P2Z_EMU_DIO_ALIGN 4096

struct p2z_emu_dev {
	struct p2z_dev dev;
	int fd;
	int data_fd; /* zone data: fd, or an O_DIRECT descriptor of the image */
	bool rdonly;
	bool direct; /* data_fd is O_DIRECT */
	struct p2z_emu_geom g;
	void *map;
	struct p2z_emu_zent *zt; /* in map, shared with other processes */
	struct p2z_emu_zone *zones;
	pthread_mutex_t res_lock;
	uint32_t nr_open; /* guarded by res_lock */
	uint32_t nr_active; /* guarded by res_lock */
	/* P2Z_EMU_WRITE_DELAY_US, tests only: see __p2z_emu_seq_write() */
	unsigned int write_delay_us;
	bool vwc; /* volatile write cache (never on read-only devices) */
	uint64_t cache_max; /* destage beyond this many cached bytes */
	uint64_t cache_bytes; /* cached in all zones; atomic */
	uint64_t open_seq; /* guarded by res_lock */
	/* tests: most reads on one queue's ring at once (emu_async.c); atomic */
	unsigned int ring_peak;
};

static inline struct p2z_emu_dev *p2z_emu_of(struct p2z_dev *dev)
{
	return container_of(dev, struct p2z_emu_dev, dev);
}
/* Default bound of the volatile cache: 64 MiB over all zones. */
#define P2Z_EMU_CACHE_MAX_BYTES (64ULL << 20)

static inline bool p2z_emu_zone_is_cnv(const struct p2z_emu_dev *e,
				       uint64_t zidx)
{
	return zidx < e->g.nr_cnv;
}

/* File offset of LBA @rel of zone @zidx. */
static inline uint64_t p2z_emu_file_ofs(const struct p2z_emu_dev *e,
					uint64_t zidx, uint64_t rel)
{
	return e->g.data_ofs + zidx * e->g.zone_bytes + rel * e->g.lba_bytes;
}

/* emu_host.c: the image file as the medium */

/**
 * p2z_emu_host_error() - log a failed I/O on the image, in one line
 * @e: device
 * @what: the operation ("read", "write", "flush", ...)
 * @ofs: byte offset in the image
 * @err: the -errno the host returned
 *
 * Return: -EIO (a host ENOSPC must not read as "zone full").
 */
int p2z_emu_host_error(struct p2z_emu_dev *e, const char *what, uint64_t ofs,
		       int err);

/**
 * p2z_emu_data_read() - read zone data from the image
 * @e: device
 * @buf: destination (any alignment: O_DIRECT goes through a bounce buffer)
 * @len: bytes
 * @ofs: byte offset in the image
 *
 * Return: 0 or a system call's -errno (-ENODATA if the image shrank).
 */
int p2z_emu_data_read(struct p2z_emu_dev *e, void *buf, size_t len,
		      uint64_t ofs);

/**
 * p2z_emu_data_write() - write zone data to the image
 * @e: device
 * @buf: data (any alignment)
 * @len: bytes
 * @ofs: byte offset in the image
 * @rwf: RWF_DSYNC for a FUA write, or 0
 *
 * Return: 0 or a system call's -errno.
 */
int p2z_emu_data_write(struct p2z_emu_dev *e, const void *buf, size_t len,
		       uint64_t ofs, int rwf);

/**
 * p2z_emu_sync_zent() - make a zone's table entry durable (msync())
 * @e: device
 * @zidx: zone index
 *
 * Return: 0 or -EIO, logged.
 */
int p2z_emu_sync_zent(struct p2z_emu_dev *e, uint64_t zidx);

/**
 * p2z_emu_fdatasync() - fdatasync() the image
 * @e: device
 *
 * Return: 0 or -EIO, logged.
 */
int p2z_emu_fdatasync(struct p2z_emu_dev *e);

/**
 * p2z_emu_zero_range() - zero a byte range of the image (a hole if it can)
 * @fd: the image
 * @ofs: byte offset
 * @len: bytes
 *
 * Return: 0 or a system call's -errno.
 */
int p2z_emu_zero_range(int fd, uint64_t ofs, uint64_t len);

/**
 * p2z_emu_open_direct() - open the image again, O_DIRECT, for zone data
 * @path: image path
 * @fd: the descriptor holding (and locking) the image
 * @g: its geometry
 * @rdonly: open read-only
 * @dfdp: receives the O_DIRECT descriptor
 * @why: receives a one-line reason on failure
 * @len: size of @why
 *
 * Refuses a path renamed over since @fd was opened, and a host that does
 * not take direct I/O of one LBA.
 *
 * Return: 0, -EINVAL, -ESTALE, -ENOMEM or a system call's -errno.
 */
int p2z_emu_open_direct(const char *path, int fd, const struct p2z_emu_geom *g,
			bool rdonly, int *dfdp, char *why, size_t len);

/* emu_cache.c: the volatile write cache; __ functions: the caller holds
 * the zone's lock */

/**
 * __p2z_emu_cache_drop() - forget a zone's cached data
 * @e: device
 * @z: the zone
 */
void __p2z_emu_cache_drop(struct p2z_emu_dev *e, struct p2z_emu_zone *z);

/**
 * __p2z_emu_cache_add() - cache a sequential write
 * @e: device
 * @z: the zone, whose cache ends at @wp if it holds anything
 * @wp: zone offset written at (LBAs)
 * @buf: data
 * @nlb: LBAs
 *
 * Return: 0 or -ENOMEM.
 */
int __p2z_emu_cache_add(struct p2z_emu_dev *e, struct p2z_emu_zone *z,
			uint64_t wp, const void *buf, uint64_t nlb);

/**
 * __p2z_emu_cache_writeback() - a zone's cached data to the image
 * @e: device
 * @zidx: zone index
 *
 * The table is not touched: data past the stored write pointer is never
 * read.
 *
 * Return: 1 if data was written, 0 if there was none, or -EIO.
 */
int __p2z_emu_cache_writeback(struct p2z_emu_dev *e, uint64_t zidx);

/**
 * __p2z_emu_store_state() - store a state word in the zone table
 * @e: device
 * @zidx: zone index
 * @st: packed state, host order
 *
 * Caller holds res_lock (not the zone lock).
 */
void __p2z_emu_store_state(struct p2z_emu_dev *e, uint64_t zidx, uint64_t st);

/**
 * __p2z_emu_zone_persist() - persist one zone: data, fdatasync(), state
 * @e: device
 * @zidx: zone index
 * @sync: a second fdatasync() (FUA); else a destage
 *
 * Return: 0 or -EIO.
 */
int __p2z_emu_zone_persist(struct p2z_emu_dev *e, uint64_t zidx, bool sync);

/**
 * p2z_emu_cache_flush() - flush the volatile cache (every zone)
 * @e: device
 *
 * Return: 0 or -EIO.
 */
int p2z_emu_cache_flush(struct p2z_emu_dev *e);

/**
 * __p2z_emu_cache_read() - read a sequential zone below its write pointer
 * @e: device
 * @zidx: zone index
 * @buf: destination
 * @rel: first LBA in the zone
 * @nlb: LBAs
 *
 * Return: 0 or -EIO.
 */
int __p2z_emu_cache_read(struct p2z_emu_dev *e, uint64_t zidx, void *buf,
			 uint64_t rel, uint64_t nlb);

/**
 * __p2z_emu_cnv_cache_read() - read a conventional zone through its log
 * @e: device
 * @zidx: zone index
 * @buf: destination
 * @rel: first LBA in the zone
 * @nlb: LBAs
 *
 * Return: 0 or -EIO.
 */
int __p2z_emu_cnv_cache_read(struct p2z_emu_dev *e, uint64_t zidx, void *buf,
			     uint64_t rel, uint64_t nlb);

/**
 * p2z_emu_cnv_cache_write() - a write to a conventional zone, cached
 * @e: device
 * @zidx: zone index
 * @rel: first LBA in the zone
 * @nlb: LBAs
 * @buf: data
 * @fua: persist the zone before returning
 *
 * Takes the zone lock.
 *
 * Return: 0 or -EIO.
 */
int p2z_emu_cnv_cache_write(struct p2z_emu_dev *e, uint64_t zidx, uint64_t rel,
			    uint64_t nlb, const void *buf, bool fua);

/* dev_emu.c: the read both the synchronous and the asynchronous ops run */

/**
 * p2z_emu_read_plan() - everything of a read but its image file part
 * @e: device
 * @buf: destination, @len bytes
 * @len: bytes
 * @ofs: device byte offset
 * @fofs: gets the image offset of the data to read from the file
 * @fbytes: gets how many bytes to read there into @buf (0: none)
 *
 * Checks the range, faults and an offline zone; fills the zeros past the
 * write pointer; copies what the volatile cache holds. What is left is
 * the image file read of @fbytes bytes at @fofs into the start of @buf
 * (p2z_emu_data_read(), then p2z_emu_host_error() if it fails).
 *
 * Return: 0 or -errno (the status map of the device error).
 */
int p2z_emu_read_plan(struct p2z_emu_dev *e, void *buf, size_t len,
		      uint64_t ofs, uint64_t *fofs, size_t *fbytes);

/* emu_async.c: the asynchronous ops (see struct p2z_dev_ops) */

int p2z_emu_queue_init(struct p2z_dev *dev, unsigned int depth, int efd,
		       void **bqp);
void p2z_emu_queue_exit(struct p2z_dev *dev, void *bq);
int p2z_emu_submit(struct p2z_dev *dev, void *bq, struct p2z_io *io);
int p2z_emu_reap(struct p2z_dev *dev, void *bq, bool wait);
int p2z_emu_queue_hold_fd(struct p2z_dev *dev, void *bq, int fd);
int p2z_emu_queue_init_on(struct p2z_dev *dev, unsigned int depth,
			  struct io_uring *ring, uint64_t tag, void **bqp);
struct p2z_qring *p2z_emu_queue_qring(void *bq);
int p2z_emu_complete(struct p2z_dev *dev, void *bq,
		     const struct io_uring_cqe *cqe);

#endif /* PO2ZFS_EMU_PRIV_H */
