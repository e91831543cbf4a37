// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * po2zfs-blk: a ublk server that shows any device po2zfs mounts (nvme,
 * zbd, emu) as a host-managed zoned block device with the po2 zone size,
 * for zonefs, f2fs, btrfs and fio. Uses geom and dev only. See
 * man/po2zfs-blk.8.
 *
 * Queues: one per online CPU, at most P2Z_BLK_MAX_QUEUES, each a thread
 * with its own io_uring (SQE128) on /dev/ublkcN. A queue thread serves its
 * requests one after the other, synchronously, through p2z_dev_*() (the
 * nvme and zbd backends keep a ring per calling thread), then commits the
 * result with COMMIT_AND_FETCH. Order within a zone is the block layer's:
 * zone write plugging (Linux 6.10+) sends one write per zone at a time.
 *
 * Data moves with UBLK_F_USER_COPY (which zoned ublk requires): one buffer
 * per tag, pread()/pwrite() on /dev/ublkcN at the tag's offset, and
 * nothing else is copied.
 *
 * Reads return the device's data up to the write pointer and zeros after
 * it, up to the po2 zone end: the server keeps each zone's write pointer
 * (from the report at start, then from its own completed writes, appends,
 * resets and finishes; from a new report of the zone after a failure), so
 * the device is never asked for anything past a write pointer (dev.h).
 * Writes touching the gap between capacity and the po2 zone end fail with
 * EIO, as dm-po2zoned's do.
 *
 * The device announces a volatile write cache and FUA only when the
 * backing device has one (info.volatile_cache): then writes complete when
 * the backend has them, a FLUSH is p2z_dev_flush() and a write or append
 * with UBLK_IO_F_FUA goes down with P2Z_IO_FUA. When the server lets the
 * device go (a stop, a del), it flushes the device once, after the last
 * request and before it closes /dev/ublkcN.
 *
 * Signals: SIGHUP and SIGPIPE are ignored; SIGTERM or SIGINT stop the
 * device, but the first is refused while the block device is mounted,
 * held or open (p2z_blk_stop_is_refused()).
 *
 * list: GET_DEV_INFO of every /dev/ublkcN, its server's pid (alive if the
 * process exists) and the record P2Z_BLK_RUN_DIR/N that add writes (the
 * backing device's path and the server's pid), matched against the device
 * (p2z_blk_owner_of()): del leaves devices without a matching record alone
 * unless forced.
 *
 * Exit status: 0 success, 1 failure (one line on stderr), 2 usage error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "po2zfs/blk.h"
#include "po2zfs/dev.h"
#include "po2zfs/geom.h"
#include "po2zfs/log.h"
#include "ublk_uapi.h"

#define PROG "po2zfs-blk"
#define EXIT_USAGE 2
#define P2Z_BLK_CTRL "/dev/ublk-control"
#define P2Z_BLK_RUN_DIR "/run/po2zfs-blk"
#define P2Z_BLK_MAX_QUEUES 4
#define P2Z_BLK_DEPTH 32
#define P2Z_BLK_MAX_IO (512U << 10)
#define P2Z_BLK_PATH_MAX 64

static const char usage_text[] =
	"Usage:\n"
	"  " PROG " add [-f] [--backend nvme|zbd|emu] DEVICE\n"
	"  " PROG " list\n"
	"  " PROG " del [--force] N\n"
	"  " PROG " --help\n"
	"\n"
	"add serves DEVICE (/dev/ngXnY, /dev/nvmeXnY, a zoned block device or\n"
	"an emulated image) as /dev/ublkbN, a zoned block device with power-of-2\n"
	"zones, prints that path and runs in the background (-f: foreground).\n";

/**
 * struct p2z_blk_zone - what the server knows of one zone
 * @wp_ofs: written LBAs from the zone start (atomic: read by every queue,
 *	    written by the one serving the zone's write)
 * @cap_lba: capacity
 * @type: enum p2z_zone_type
 */
struct p2z_blk_zone {
	uint64_t wp_ofs;
	uint64_t cap_lba;
	uint8_t type;
};

struct p2z_blk;

/**
 * struct p2z_blk_queue - one hardware queue of the ublk device
 * @blk: the server
 * @qid: queue index
 * @ring: this queue's io_uring on /dev/ublkcN (SQE128)
 * @iods: the kernel's request descriptors (mmap of /dev/ublkcN)
 * @iods_len: bytes mapped
 * @bufs: one buffer of blk->buf_bytes per tag
 * @thread: the thread serving the queue
 * @ret: why the thread ended (0: the device stopped)
 */
struct p2z_blk_queue {
	struct p2z_blk *blk;
	unsigned int qid;
	struct io_uring ring;
	const struct ublksrv_io_desc *iods;
	size_t iods_len;
	char *bufs;
	pthread_t thread;
	int ret;
};

/**
 * struct p2z_blk - a running server
 * @dev: the backing device
 * @g: its geometry
 * @zones: one entry per zone
 * @ctrl_fd: /dev/ublk-control
 * @ctrl: ring for control commands (main thread only)
 * @cdev_fd: /dev/ublkcN
 * @dev_id: N
 * @nr_queues: queues
 * @depth: tags per queue
 * @buf_bytes: largest request (max_sectors), the size of each tag buffer
 * @queues: the queues
 * @lock: guards @nr_ready, @nr_failed
 * @ready: signalled when a queue fetched all its tags, or failed to
 */
struct p2z_blk {
	struct p2z_dev *dev;
	struct p2z_geom g;
	struct p2z_blk_zone *zones;
	int ctrl_fd;
	struct io_uring ctrl;
	int cdev_fd;
	uint32_t dev_id;
	unsigned int nr_queues;
	unsigned int depth;
	uint32_t buf_bytes;
	struct p2z_blk_queue *queues;
	pthread_mutex_t lock;
	pthread_cond_t ready;
	unsigned int nr_ready, nr_failed;
};

static int fail(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* One line through p2z_log() ("po2zfs-blk: reason"); returns the exit code. */
static int fail(int code, const char *fmt, ...)
{
	char line[480];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	p2z_log(LOG_ERR, "%s", line);
	return code;
}

/* Control: one command on /dev/ublk-control, waited for. */

static int p2z_blk_ctrl_cmd(struct io_uring *ring, int fd, uint32_t op,
			    const struct ublksrv_ctrl_cmd *cmd)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int ret;

	sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	/* An SQE128 entry is two normal ones; the command lives in the rest. */
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	memcpy(sqe->cmd, cmd, sizeof(*cmd));
	ret = io_uring_submit_and_wait(ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret < 0)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

static int p2z_blk_ctrl(struct io_uring *ring, int fd, uint32_t op,
			uint32_t dev_id, void *buf, uint16_t len, uint64_t data)
{
	struct ublksrv_ctrl_cmd cmd;

	memset(&cmd, 0, sizeof(cmd));
	cmd.dev_id = dev_id;
	cmd.queue_id = (__u16)-1;
	cmd.addr = (uintptr_t)buf;
	cmd.len = len;
	cmd.data[0] = data;
	return p2z_blk_ctrl_cmd(ring, fd, op, &cmd);
}

/*
 * Run /sbin/modprobe (or /usr/sbin/modprobe) ublk_drv quietly; its outcome
 * shows in the next open.
 */
static void p2z_blk_modprobe(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		/* Not through PATH: root runs this. */
		execl("/sbin/modprobe", "modprobe", "-q", "ublk_drv",
		      (char *)NULL);
		execl("/usr/sbin/modprobe", "modprobe", "-q", "ublk_drv",
		      (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, &st, 0);
}

/* Open /dev/ublk-control (loading ublk_drv if needed) and its ring. */
static int p2z_blk_ctrl_open(int *fdp, struct io_uring *ring)
{
	int fd, ret;

	fd = open(P2Z_BLK_CTRL, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		p2z_blk_modprobe();
		fd = open(P2Z_BLK_CTRL, O_RDWR | O_CLOEXEC);
	}
	if (fd < 0) {
		ret = errno;
		if (ret == ENOENT)
			return fail(
				EXIT_FAILURE,
				"ublk unavailable: " P2Z_BLK_CTRL
				" missing (ublk_drv not loadable; Linux 6.6+ with CONFIG_BLK_DEV_UBLK needed)");
		return fail(EXIT_FAILURE,
			    "ublk unavailable: " P2Z_BLK_CTRL ": %s",
			    strerror(ret));
	}
	ret = io_uring_queue_init(4, ring, IORING_SETUP_SQE128);
	if (ret) {
		close(fd);
		return fail(EXIT_FAILURE, "ublk unavailable: io_uring: %s",
			    strerror(-ret));
	}
	*fdp = fd;
	return 0;
}

static void p2z_blk_ctrl_close(int fd, struct io_uring *ring)
{
	io_uring_queue_exit(ring);
	close(fd);
}

/* Zones: the server's write pointers. */

static uint64_t p2z_blk_readable(const struct p2z_blk_zone *z)
{
	if (z->type == P2Z_ZONE_TYPE_CNV)
		return z->cap_lba;
	return __atomic_load_n(&z->wp_ofs, __ATOMIC_ACQUIRE);
}

static void p2z_blk_set_wp(struct p2z_blk_zone *z, uint64_t wp_ofs)
{
	__atomic_store_n(&z->wp_ofs, wp_ofs, __ATOMIC_RELEASE);
}

/*
 * After a completed write or append: writes and appends to one zone run on
 * several queues and finish in any order, so the write pointer only moves
 * forward (p2z_blk_wp_advance(): one that finished later but landed
 * earlier must not pull it back over data another one acknowledged).
 */
static void p2z_blk_advance_wp(struct p2z_blk_zone *z, uint64_t wp_ofs)
{
	uint64_t cur = __atomic_load_n(&z->wp_ofs, __ATOMIC_RELAXED), next;

	do {
		next = p2z_blk_wp_advance(cur, wp_ofs);
		if (next == cur)
			return;
	} while (!__atomic_compare_exchange_n(&z->wp_ofs, &cur, next, true,
					      __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

static void p2z_blk_zone_load(struct p2z_blk_zone *z,
			      const struct p2z_zone_info *zi)
{
	z->cap_lba = zi->cap_lba;
	z->type = zi->type;
	p2z_blk_set_wp(z, p2z_blk_wp_ofs(zi));
}

/*
 * After a failed write or zone operation: the device says where it is.
 * Only forward (but to 0 for a zone gone offline): an append on another
 * queue may have completed, and moved the cached pointer past what this
 * report saw, between the report and now.
 */
static void p2z_blk_zone_refresh(struct p2z_blk *blk, uint64_t zidx)
{
	struct p2z_blk_zone *z = &blk->zones[zidx];
	struct p2z_zone_info zi;

	if (p2z_dev_report_zones(blk->dev, zidx, 1, &zi) != 1 ||
	    zi.start_lba != p2z_geom_zone_start(&blk->g, zidx))
		return;
	if (zi.cond == P2Z_ZONE_COND_OFFLINE)
		p2z_blk_set_wp(z, 0);
	else
		p2z_blk_advance_wp(z, p2z_blk_wp_ofs(&zi));
}

static int p2z_blk_zone_load_fn(const struct p2z_zone_info *zi, uint64_t zidx,
				void *arg)
{
	struct p2z_blk *blk = arg;

	p2z_blk_zone_load(&blk->zones[zidx], zi);
	return 0;
}

/* Load every zone's write pointer (a failed report is logged by the walk). */
static int p2z_blk_zones_init(struct p2z_blk *blk)
{
	blk->zones = calloc(blk->g.nr_zones, sizeof(*blk->zones));
	if (!blk->zones)
		return -ENOMEM;
	return p2z_dev_zone_walk(blk->dev, 0, blk->g.nr_zones,
				 p2z_blk_zone_load_fn, blk);
}

/* Requests. Each returns the result COMMIT carries: bytes or -errno. */

static uint64_t p2z_blk_buf_ofs(unsigned int qid, unsigned int tag)
{
	return UBLKSRV_IO_BUF_OFFSET + ((uint64_t)qid << UBLK_QID_OFF) +
	       ((uint64_t)tag << UBLK_TAG_OFF);
}

static int p2z_blk_read(struct p2z_blk *blk, const struct ublksrv_io_desc *iod,
			char *buf, uint64_t buf_ofs)
{
	uint64_t ofs = iod->start_sector << P2Z_BLK_SECTOR_SHIFT;
	uint64_t len = (uint64_t)iod->nr_sectors << P2Z_BLK_SECTOR_SHIFT;
	uint64_t done = 0, zidx, n, native;
	struct p2z_geom_piece pc;
	struct p2z_blk_zone *z;
	ssize_t ret;

	if (len > blk->buf_bytes)
		return -EIO;
	while (done < len) {
		if (p2z_geom_po2_zone_of_byte(&blk->g, ofs + done, &zidx))
			return -EIO;
		z = &blk->zones[zidx];
		if (p2z_geom_po2_piece(&blk->g, ofs + done, len - done,
				       z->cap_lba, &pc))
			return -EIO;
		n = p2z_blk_read_len(&pc, p2z_blk_readable(z)
						  << blk->g.lba_shift);
		if (n) {
			native = (p2z_geom_zone_start(&blk->g, zidx)
				  << blk->g.lba_shift) +
				 pc.zone_ofs;
			ret = p2z_dev_pread(blk->dev, buf + done, n, native);
			if (ret < 0)
				return p2z_blk_errno((int)ret);
		}
		memset(buf + done + n, 0, pc.len - n);
		done += pc.len;
	}
	ret = pwrite(blk->cdev_fd, buf, len, buf_ofs);
	if (ret < 0)
		return -errno;
	return ret == (ssize_t)len ? (int)len : -EIO;
}

static int p2z_blk_write(struct p2z_blk *blk, const struct ublksrv_io_desc *iod,
			 char *buf, uint64_t buf_ofs)
{
	struct p2z_blk_target t;
	struct p2z_blk_zone *z;
	uint64_t zidx, native;
	ssize_t ret;

	if (p2z_blk_zone_of(&blk->g, iod->start_sector, false, &zidx))
		return -EIO;
	z = &blk->zones[zidx];
	ret = p2z_blk_write_target(&blk->g, iod->start_sector, iod->nr_sectors,
				   z->cap_lba, &t);
	if (ret || t.len > blk->buf_bytes)
		return -EIO;
	ret = pread(blk->cdev_fd, buf, t.len, buf_ofs);
	if (ret != (ssize_t)t.len)
		return ret < 0 ? -errno : -EIO;
	native = (p2z_geom_zone_start(&blk->g, zidx) << blk->g.lba_shift) +
		 t.zone_ofs;
	ret = p2z_dev_pwrite(blk->dev, buf, t.len, native,
			     p2z_blk_io_flags(iod->op_flags));
	if (ret != (ssize_t)t.len) {
		p2z_blk_zone_refresh(blk, zidx);
		return p2z_blk_errno(ret < 0 ? (int)ret : -EIO);
	}
	if (z->type != P2Z_ZONE_TYPE_CNV)
		p2z_blk_advance_wp(z, (t.zone_ofs + t.len) >> blk->g.lba_shift);
	return (int)t.len;
}

static int p2z_blk_append(struct p2z_blk *blk,
			  const struct ublksrv_io_desc *iod, char *buf,
			  uint64_t buf_ofs, uint64_t *sector)
{
	uint64_t len = (uint64_t)iod->nr_sectors << P2Z_BLK_SECTOR_SHIFT;
	uint64_t zidx, lba, wp_ofs;
	ssize_t ret;

	if (p2z_blk_zone_of(&blk->g, iod->start_sector, true, &zidx) || !len ||
	    len > blk->buf_bytes || len & (blk->g.lba_bytes - 1))
		return -EIO;
	ret = pread(blk->cdev_fd, buf, len, buf_ofs);
	if (ret != (ssize_t)len)
		return ret < 0 ? -errno : -EIO;
	ret = p2z_dev_append(blk->dev, zidx, buf, len, &lba,
			     p2z_blk_io_flags(iod->op_flags));
	if (ret != (ssize_t)len ||
	    p2z_blk_append_done(&blk->g, zidx, blk->zones[zidx].cap_lba, lba,
				len >> blk->g.lba_shift, sector, &wp_ofs)) {
		p2z_blk_zone_refresh(blk, zidx);
		return p2z_blk_errno(ret < 0 ? (int)ret : -EIO);
	}
	p2z_blk_advance_wp(&blk->zones[zidx], wp_ofs);
	return (int)len;
}

static int p2z_blk_zone_op(struct p2z_blk *blk, uint64_t zidx,
			   enum p2z_zone_op op)
{
	struct p2z_blk_zone *z = &blk->zones[zidx];
	int ret;

	/*
	 * The cached write pointer never runs ahead of the device's: reads
	 * stop at it before the reset starts (a read racing the reset gets
	 * zeros), and after a finish only once the device is done.
	 */
	if (op == P2Z_ZONE_OP_RESET && z->type != P2Z_ZONE_TYPE_CNV)
		p2z_blk_set_wp(z, 0);
	ret = p2z_dev_zone_mgmt(blk->dev, zidx, op);
	if (ret) {
		p2z_blk_zone_refresh(blk, zidx);
		return p2z_blk_errno(ret);
	}
	if (op == P2Z_ZONE_OP_FINISH)
		p2z_blk_set_wp(z, z->cap_lba);
	return 0;
}

static int p2z_blk_zone_mgmt(struct p2z_blk *blk,
			     const struct ublksrv_io_desc *iod,
			     enum p2z_zone_op op)
{
	uint64_t zidx;

	if (p2z_blk_zone_of(&blk->g, iod->start_sector, true, &zidx))
		return -EIO;
	return p2z_blk_zone_op(blk, zidx, op);
}

/**
 * struct p2z_blk_walk - a request's zone walk
 * @blk: the server
 * @bz: report: the entries filled
 * @done: report: entries filled so far
 * @ret: the zone operation's or the entry's error that stopped the walk
 *	 (the walk then returns 1): a failed report is told apart by it
 */
struct p2z_blk_walk {
	struct p2z_blk *blk;
	struct blk_zone *bz;
	unsigned int done;
	int ret;
};

/* A stopped walk's result: @w->ret if a callback stopped it. */
static int p2z_blk_walk_ret(const struct p2z_blk_walk *w, int ret)
{
	if (ret > 0)
		return w->ret;
	return ret < 0 ? p2z_blk_errno(ret) : 0;
}

static int p2z_blk_reset_fn(const struct p2z_zone_info *zi, uint64_t zidx,
			    void *arg)
{
	struct p2z_blk_walk *w = arg;

	if (!p2z_blk_zone_is_reset_by_all(zi))
		return 0;
	w->ret = p2z_blk_zone_op(w->blk, zidx, P2Z_ZONE_OP_RESET);
	return w->ret ? 1 : 0;
}

/*
 * Reset every zone the device has open, closed or full, as it reports them
 * now: the cached write pointers miss zones opened but not written (which
 * would keep holding open and active resources), and would try read-only
 * or offline ones.
 */
static int p2z_blk_reset_all(struct p2z_blk *blk)
{
	struct p2z_blk_walk w = { .blk = blk };

	return p2z_blk_walk_ret(&w,
				p2z_dev_zone_walk(blk->dev, 0, blk->g.nr_zones,
						  p2z_blk_reset_fn, &w));
}

static int p2z_blk_report_fn(const struct p2z_zone_info *zi, uint64_t zidx,
			     void *arg)
{
	struct p2z_blk_walk *w = arg;

	(void)zidx;
	if (p2z_blk_report(&w->blk->g, zi, &w->bz[w->done])) {
		w->ret = -EIO;
		return 1;
	}
	w->done++;
	return 0;
}

/*
 * Fill the request's buffer with struct blk_zone entries from the zone
 * holding start_sector on; the kernel zeroed the buffer, so a shorter
 * report ends at the first zero-length entry by itself.
 */
static int p2z_blk_report_zones(struct p2z_blk *blk,
				const struct ublksrv_io_desc *iod, char *buf,
				uint64_t buf_ofs)
{
	struct p2z_blk_walk w = { .blk = blk, .bz = (struct blk_zone *)buf };
	uint64_t zidx, want = iod->nr_sectors, max;
	int ret;

	/*
	 * Any sector of the first zone: ublk passes BLKREPORTZONE's start
	 * sector through unaligned (and adds the zone size for each further
	 * request), as the block layer allows.
	 */
	if (p2z_blk_zone_of(&blk->g, iod->start_sector, false, &zidx))
		return -EIO;
	max = blk->buf_bytes / sizeof(*w.bz);
	if (want > max)
		want = max;
	if (want > blk->g.nr_zones - zidx)
		want = blk->g.nr_zones - zidx;
	ret = p2z_blk_walk_ret(&w, p2z_dev_zone_walk(blk->dev, zidx, want,
						     p2z_blk_report_fn, &w));
	if (ret)
		return ret;
	if (w.done && pwrite(blk->cdev_fd, buf, w.done * sizeof(*w.bz),
			     buf_ofs) != (ssize_t)(w.done * sizeof(*w.bz)))
		return -EIO;
	/*
	 * The request's length is the kernel's buffer, which may be longer
	 * than the entries; ublk cuts a result to the request's length, and a
	 * shorter one would make the block layer requeue the rest.
	 */
	return (int)blk->buf_bytes;
}

static int p2z_blk_handle(struct p2z_blk_queue *q, unsigned int tag,
			  uint64_t *append_sector)
{
	const struct ublksrv_io_desc *iod = &q->iods[tag];
	struct p2z_blk *blk = q->blk;
	char *buf = q->bufs + (size_t)tag * blk->buf_bytes;
	uint64_t buf_ofs = p2z_blk_buf_ofs(q->qid, tag);

	switch (ublksrv_get_op(iod)) {
	case UBLK_IO_OP_READ:
		return p2z_blk_read(blk, iod, buf, buf_ofs);
	case UBLK_IO_OP_WRITE:
		return p2z_blk_write(blk, iod, buf, buf_ofs);
	case UBLK_IO_OP_ZONE_APPEND:
		return p2z_blk_append(blk, iod, buf, buf_ofs, append_sector);
	case UBLK_IO_OP_FLUSH:
		return p2z_dev_flush(blk->dev) ? -EIO : 0;
	case UBLK_IO_OP_ZONE_OPEN:
		return p2z_blk_zone_mgmt(blk, iod, P2Z_ZONE_OP_OPEN);
	case UBLK_IO_OP_ZONE_CLOSE:
		return p2z_blk_zone_mgmt(blk, iod, P2Z_ZONE_OP_CLOSE);
	case UBLK_IO_OP_ZONE_FINISH:
		return p2z_blk_zone_mgmt(blk, iod, P2Z_ZONE_OP_FINISH);
	case UBLK_IO_OP_ZONE_RESET:
		return p2z_blk_zone_mgmt(blk, iod, P2Z_ZONE_OP_RESET);
	case UBLK_IO_OP_ZONE_RESET_ALL:
		return p2z_blk_reset_all(blk);
	case UBLK_IO_OP_REPORT_ZONES:
		return p2z_blk_report_zones(blk, iod, buf, buf_ofs);
	default:
		return -EOPNOTSUPP;
	}
}

/* Queue threads. */

static void p2z_blk_queue_sqe(struct p2z_blk_queue *q, unsigned int tag,
			      uint32_t op, int result, uint64_t zone_lba)
{
	struct p2z_ublksrv_io_cmd *cmd;
	struct io_uring_sqe *sqe;

	/* The ring holds one entry per tag: never full. */
	sqe = io_uring_get_sqe(&q->ring);
	if (!sqe) {
		p2z_log(LOG_ERR, "queue %u: no SQE for tag %u", q->qid, tag);
		return;
	}
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->blk->cdev_fd;
	sqe->cmd_op = op;
	sqe->user_data = tag;
	cmd = (struct p2z_ublksrv_io_cmd *)sqe->cmd;
	cmd->q_id = (__u16)q->qid;
	cmd->tag = (__u16)tag;
	cmd->result = result;
	cmd->zone_append_lba = zone_lba;
}

static void p2z_blk_queue_ready(struct p2z_blk *blk, bool ok)
{
	pthread_mutex_lock(&blk->lock);
	if (ok)
		blk->nr_ready++;
	else
		blk->nr_failed++;
	pthread_cond_signal(&blk->ready);
	pthread_mutex_unlock(&blk->lock);
}

/* Serve completions until every tag is aborted (the device stopped). */
static int p2z_blk_queue_serve(struct p2z_blk_queue *q)
{
	unsigned int live = q->blk->depth, seen, tag;
	struct io_uring_cqe *cqe;
	uint64_t sector;
	unsigned int head;
	int ret, res;

	while (live) {
		ret = io_uring_submit_and_wait(&q->ring, 1);
		if (ret < 0 && ret != -EINTR)
			return ret;
		seen = 0;
		io_uring_for_each_cqe(&q->ring, head, cqe)
		{
			seen++;
			tag = (unsigned int)cqe->user_data;
			if (cqe->res != UBLK_IO_RES_OK) {
				/* UBLK_IO_RES_ABORT: the device is going */
				if (cqe->res != UBLK_IO_RES_ABORT)
					p2z_log(LOG_ERR, "queue %u tag %u: %s",
						q->qid, tag,
						strerror(-cqe->res));
				live--;
				continue;
			}
			sector = 0;
			res = p2z_blk_handle(q, tag, &sector);
			p2z_blk_queue_sqe(q, tag,
					  UBLK_U_IO_COMMIT_AND_FETCH_REQ, res,
					  sector);
		}
		io_uring_cq_advance(&q->ring, seen);
	}
	return 0;
}

static void *p2z_blk_queue_thread(void *arg)
{
	struct p2z_blk_queue *q = arg;
	struct p2z_blk *blk = q->blk;
	unsigned int tag;
	int ret;

	for (tag = 0; tag < blk->depth; tag++)
		p2z_blk_queue_sqe(q, tag, UBLK_U_IO_FETCH_REQ, 0, 0);
	ret = io_uring_submit(&q->ring);
	p2z_blk_queue_ready(blk, ret == (int)blk->depth);
	if (ret != (int)blk->depth) {
		q->ret = ret < 0 ? ret : -EIO;
		return NULL;
	}
	q->ret = p2z_blk_queue_serve(q);
	/* The main thread waits in sigwait() for this. */
	kill(getpid(), SIGUSR1);
	return NULL;
}

static int p2z_blk_queue_init(struct p2z_blk *blk, struct p2z_blk_queue *q)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t max_iods =
		(UBLK_MAX_QUEUE_DEPTH * sizeof(struct ublksrv_io_desc) + page -
		 1) /
		page * page;
	void *p;
	int ret;

	q->blk = blk;
	q->iods_len = (blk->depth * sizeof(struct ublksrv_io_desc) + page - 1) /
		      page * page;
	p = mmap(NULL, q->iods_len, PROT_READ, MAP_SHARED | MAP_POPULATE,
		 blk->cdev_fd, UBLKSRV_CMD_BUF_OFFSET + q->qid * max_iods);
	if (p == MAP_FAILED)
		return -errno;
	q->iods = p;
	ret = posix_memalign(&p, page, (size_t)blk->depth * blk->buf_bytes);
	if (ret) {
		munmap((void *)q->iods, q->iods_len);
		return -ret;
	}
	q->bufs = p;
	ret = io_uring_queue_init(blk->depth, &q->ring, IORING_SETUP_SQE128);
	if (ret) {
		free(q->bufs);
		munmap((void *)q->iods, q->iods_len);
		return ret;
	}
	return 0;
}

static void p2z_blk_queue_exit(struct p2z_blk_queue *q)
{
	io_uring_queue_exit(&q->ring);
	free(q->bufs);
	munmap((void *)q->iods, q->iods_len);
}

/*
 * Start every queue thread; wait until each started one fetched its tags,
 * also when a later one could not start: STOP_DEV only aborts the fetches
 * the kernel already holds, and a thread fetching after it would wait
 * forever (and its join with it).
 */
static int p2z_blk_queues_start(struct p2z_blk *blk, unsigned int *started)
{
	unsigned int i;
	int ret = 0;

	*started = 0;
	for (i = 0; i < blk->nr_queues; i++) {
		blk->queues[i].qid = i;
		ret = p2z_blk_queue_init(blk, &blk->queues[i]);
		if (ret)
			break;
		ret = -pthread_create(&blk->queues[i].thread, NULL,
				      p2z_blk_queue_thread, &blk->queues[i]);
		if (ret) {
			p2z_blk_queue_exit(&blk->queues[i]);
			break;
		}
		(*started)++;
	}
	pthread_mutex_lock(&blk->lock);
	while (blk->nr_ready + blk->nr_failed < *started)
		pthread_cond_wait(&blk->ready, &blk->lock);
	if (!ret && blk->nr_failed)
		ret = -EIO;
	pthread_mutex_unlock(&blk->lock);
	return ret;
}

/* Join the queue threads; return why the first that failed ended, or 0. */
static int p2z_blk_queues_stop(struct p2z_blk *blk, unsigned int started)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < started; i++) {
		pthread_join(blk->queues[i].thread, NULL);
		if (!ret)
			ret = blk->queues[i].ret;
		p2z_blk_queue_exit(&blk->queues[i]);
	}
	return ret;
}

/*
 * The records list and del read: P2Z_BLK_RUN_DIR/N holds the backing
 * path and the server's pid, one a line. The directory is root's, 0700,
 * and never a symlink; a record is written to a temporary file and renamed,
 * and nothing in the directory is opened through a symlink.
 */

/* Open the records' directory (made if @create): its fd or -errno. */
static int p2z_blk_run_dir_open(bool create)
{
	struct stat st;
	int fd;

	if (create && mkdir(P2Z_BLK_RUN_DIR, 0700) && errno != EEXIST)
		return -errno;
	fd = open(P2Z_BLK_RUN_DIR,
		  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -ENOTDIR : -errno;
	if (fstat(fd, &st) || st.st_uid != geteuid() || st.st_mode & 022) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int p2z_blk_record_write(uint32_t dev_id, const char *dev_path)
{
	char name[16], tmp[48], real[PATH_MAX];
	int dfd, fd, ret = 0;

	dfd = p2z_blk_run_dir_open(true);
	if (dfd < 0)
		return dfd;
	snprintf(name, sizeof(name), "%" PRIu32, dev_id);
	snprintf(tmp, sizeof(tmp), ".%" PRIu32 ".%d", dev_id, (int)getpid());
	unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out_close;
	}
	if (dprintf(fd, "%s\n%d\n", realpath(dev_path, real) ? real : dev_path,
		    (int)getpid()) < 0)
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && renameat(dfd, tmp, dfd, name))
		ret = -errno;
	if (ret)
		unlinkat(dfd, tmp, 0);
out_close:
	close(dfd);
	return ret;
}

/*
 * Read record @dev_id: the backing path into @backing (left alone if the
 * record has none) and the server's pid (0 if none).
 * Return: 0, -ENOENT without a record, or -errno.
 */
static int p2z_blk_record_read(uint32_t dev_id, char *backing, size_t size,
			       int *pid)
{
	char name[16], line[PATH_MAX];
	int dfd, fd;
	FILE *f;

	*pid = 0;
	dfd = p2z_blk_run_dir_open(false);
	if (dfd < 0)
		return dfd;
	snprintf(name, sizeof(name), "%" PRIu32, dev_id);
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	if (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		snprintf(backing, size, "%s", line);
		if (fgets(line, sizeof(line), f))
			*pid = atoi(line);
	}
	fclose(f);
	return 0;
}

/* Return: 0 if a record was removed, else -errno (-ENOENT: none). */
static int p2z_blk_record_remove(uint32_t dev_id)
{
	char name[16];
	int dfd, ret;

	dfd = p2z_blk_run_dir_open(false);
	if (dfd < 0)
		return dfd;
	snprintf(name, sizeof(name), "%" PRIu32, dev_id);
	ret = unlinkat(dfd, name, 0) ? -errno : 0;
	close(dfd);
	return ret;
}

/* Whose device @dev_id is, by its record and the kernel's @info. */
static enum p2z_blk_owner
p2z_blk_owner(uint32_t dev_id, const struct ublksrv_ctrl_dev_info *info,
	      char *backing, size_t size, int *rec_pid)
{
	bool have = !p2z_blk_record_read(dev_id, backing, size, rec_pid);

	return p2z_blk_owner_of(have, *rec_pid, info->ublksrv_pid,
				info->ublksrv_flags);
}

/* In use: claimed, held, open. */

/*
 * Whether a process other than this one has @bdev open. Only readlink()
 * on /proc/PID/fd/N, which names the file without touching it: a stat()
 * through the link would hang on a hung mount. A device opened through
 * another node than @bdev is not seen.
 */
static bool p2z_blk_bdev_is_open(const char *bdev)
{
	char fdir[64], path[320], target[PATH_MAX];
	struct dirent *pe, *fe;
	bool open = false;
	DIR *pd, *fd;
	ssize_t n;

	pd = opendir("/proc");
	if (!pd)
		return false;
	while (!open && (pe = readdir(pd))) {
		if (pe->d_name[0] < '1' || pe->d_name[0] > '9' ||
		    atoi(pe->d_name) == getpid())
			continue;
		snprintf(fdir, sizeof(fdir), "/proc/%.20s/fd", pe->d_name);
		fd = opendir(fdir);
		if (!fd)
			continue;
		while ((fe = readdir(fd))) {
			snprintf(path, sizeof(path), "%s/%.255s", fdir,
				 fe->d_name);
			n = readlink(path, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			if (!strcmp(target, bdev)) {
				open = true;
				break;
			}
		}
		closedir(fd);
	}
	closedir(pd);
	return open;
}

/* Whether /sys/block/ublkbN/holders lists a device stacked on it. */
static bool p2z_blk_has_holders(uint32_t dev_id)
{
	char path[P2Z_BLK_PATH_MAX];
	struct dirent *de;
	bool held = false;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/block/ublkb%" PRIu32 "/holders",
		 dev_id);
	d = opendir(path);
	if (!d)
		return false;
	while (!held && (de = readdir(d)))
		held = de->d_name[0] != '.';
	closedir(d);
	return held;
}

/*
 * Whether /dev/ublkbN is mounted, held or open: a holder, an exclusive
 * claim (a mount: an O_EXCL open fails with EBUSY), or an open file of
 * another process.
 */
static bool p2z_blk_bdev_is_busy(uint32_t dev_id)
{
	char bdev[P2Z_BLK_PATH_MAX];
	bool busy;
	int fd;

	if (p2z_blk_has_holders(dev_id))
		return true;
	snprintf(bdev, sizeof(bdev), "/dev/ublkb%" PRIu32, dev_id);
	fd = open(bdev, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd < 0)
		return errno == EBUSY;
	busy = p2z_blk_bdev_is_open(bdev);
	close(fd);
	return busy;
}

/* add */

/*
 * The ublk device's parameters: the po2 zone size as chunk_sectors, the
 * native capacity per zone (reported), the device's limits; requests no
 * larger than a single zone append or transfer (P2Z_BLK_MAX_IO at most).
 */
static void p2z_blk_params(const struct p2z_blk *blk, struct p2z_ublk_params *p)
{
	const struct p2z_dev_info *info = &blk->dev->info;

	memset(p, 0, sizeof(*p));
	p->len = sizeof(*p);
	p->types = UBLK_PARAM_TYPE_BASIC | UBLK_PARAM_TYPE_ZONED;
	p->basic.attrs = p2z_blk_cache_attrs(info->volatile_cache);
	p->basic.logical_bs_shift = (__u8)blk->g.lba_shift;
	p->basic.physical_bs_shift = (__u8)blk->g.lba_shift;
	p->basic.max_sectors = blk->buf_bytes >> P2Z_BLK_SECTOR_SHIFT;
	p->basic.chunk_sectors = (__u32)p2z_blk_zone_sectors(&blk->g);
	p->basic.dev_sectors = p2z_geom_po2_bytes(&blk->g) >>
			       P2Z_BLK_SECTOR_SHIFT;
	p->zoned.max_open_zones =
		p2z_blk_zone_limit(info->max_open, blk->g.nr_zones);
	p->zoned.max_active_zones =
		p2z_blk_zone_limit(info->max_active, blk->g.nr_zones);
	p->zoned.max_zone_append_sectors = blk->buf_bytes >>
					   P2Z_BLK_SECTOR_SHIFT;
}

/* ADD_DEV with zoned user copy; anything less means no usable ublk. */
static int p2z_blk_add_dev(struct p2z_blk *blk)
{
	struct ublksrv_ctrl_dev_info info;
	__u64 need = UBLK_F_USER_COPY | UBLK_F_ZONED;
	int ret;

	memset(&info, 0, sizeof(info));
	info.nr_hw_queues = (__u16)blk->nr_queues;
	info.queue_depth = (__u16)blk->depth;
	info.max_io_buf_bytes = blk->buf_bytes;
	info.dev_id = UINT32_MAX;
	info.flags = need | UBLK_F_CMD_IOCTL_ENCODE;
	/* kept by the kernel: list and del know po2zfs-blk's devices by it */
	info.ublksrv_flags = P2Z_BLK_SRV_MAGIC;
	ret = p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd, UBLK_U_CMD_ADD_DEV,
			   UINT32_MAX, &info, sizeof(info), 0);
	if (ret == -EPERM || ret == -EACCES)
		return fail(EXIT_FAILURE, "ublk unavailable: %s (needs root)",
			    strerror(-ret));
	if (ret)
		return fail(
			EXIT_FAILURE,
			"ublk unavailable: the kernel refuses a zoned ublk device with user copy: %s (Linux 6.6+ with CONFIG_BLK_DEV_ZONED needed)",
			strerror(-ret));
	blk->dev_id = info.dev_id;
	if ((info.flags & need) != need) {
		p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd, UBLK_U_CMD_DEL_DEV,
			     blk->dev_id, NULL, 0, 0);
		return fail(
			EXIT_FAILURE,
			"ublk unavailable: the kernel lacks zoned ublk devices with user copy (Linux 6.6+)");
	}
	if (info.max_io_buf_bytes < blk->buf_bytes)
		blk->buf_bytes = info.max_io_buf_bytes;
	/* A record of an earlier device of this number is not this one's. */
	if (!p2z_blk_record_remove(blk->dev_id))
		p2z_log(LOG_INFO,
			"removed the stale record " P2Z_BLK_RUN_DIR "/%" PRIu32,
			blk->dev_id);
	return 0;
}

/*
 * /dev/ublkcN appears when devtmpfs or udev makes it: wait a little.
 * Return: the fd, or -errno.
 */
static int p2z_blk_cdev_open(const char *path)
{
	int fd, i;

	for (i = 0; i < 100; i++) {
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0 || errno != ENOENT)
			break;
		usleep(20000);
	}
	return fd < 0 ? -errno : fd;
}

/* Queues: one per online CPU, at most P2Z_BLK_MAX_QUEUES. */
static unsigned int p2z_blk_nr_queues(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		return 1;
	return n > P2Z_BLK_MAX_QUEUES ? P2Z_BLK_MAX_QUEUES : (unsigned int)n;
}

static int p2z_blk_dev_open(struct p2z_blk *blk, const char *path,
			    const char *backend)
{
	const struct p2z_dev_info *info;
	unsigned long errs;
	uint32_t max;
	int ret;

	/* The device layer says why it refuses; one line, not two. */
	errs = p2z_log_errors();
	ret = p2z_dev_open(path, backend, 0, &blk->dev);
	if (ret && p2z_log_errors() != errs)
		return EXIT_FAILURE;
	if (ret)
		return fail(EXIT_FAILURE, "%s: %s", path, strerror(-ret));
	info = &blk->dev->info;
	ret = p2z_geom_init(&blk->g, info->lba_bytes, info->zone_lba,
			    info->nr_zones);
	if (ret)
		return fail(EXIT_FAILURE, "%s: geometry: %s", path,
			    p2z_geom_strerror(ret));
	if (blk->g.lba_bytes > (uint32_t)sysconf(_SC_PAGESIZE) ||
	    p2z_blk_zone_sectors(&blk->g) > UINT32_MAX ||
	    blk->g.nr_zones > INT32_MAX)
		return fail(EXIT_FAILURE,
			    "%s: geometry too large for a ublk device", path);
	max = info->max_xfer_bytes < info->max_append_bytes ?
		      info->max_xfer_bytes :
		      info->max_append_bytes;
	if (max > P2Z_BLK_MAX_IO)
		max = P2Z_BLK_MAX_IO;
	max &= ~((uint32_t)sysconf(_SC_PAGESIZE) - 1);
	if (!max)
		return fail(EXIT_FAILURE,
			    "%s: transfer limit below a page, unusable", path);
	blk->buf_bytes = max;
	/* A failed report is logged by the walk: one line. */
	errs = p2z_log_errors();
	ret = p2z_blk_zones_init(blk);
	if (ret && p2z_log_errors() != errs)
		return EXIT_FAILURE;
	if (ret)
		return fail(EXIT_FAILURE, "%s: zone report: %s", path,
			    strerror(-ret));
	return 0;
}

/*
 * Detach as a daemon does, after the device is up: the parent waiting in
 * p2z_blk_fork() learns it through the pipe and exits 0.
 */
static void p2z_blk_detach(int notify_fd)
{
	int null;

	p2z_log_to_syslog(PROG);
	setsid();
	if (chdir("/"))
		p2z_log(LOG_WARNING, "chdir /: %s", strerror(errno));
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	if (write(notify_fd, "", 1) != 1)
		p2z_log(LOG_WARNING, "telling the parent: %s", strerror(errno));
	close(notify_fd);
}

/*
 * Fork before anything opens: the child sets the device up and serves it
 * (threads, rings and the ublk mappings all belong to the child); the
 * parent exits 0 when the child detached, else with the child's status
 * (whose reason the child printed on the shared stderr).
 */
static int p2z_blk_fork(int *notify_fd)
{
	int fds[2], st;
	pid_t pid;
	char c;

	if (pipe2(fds, O_CLOEXEC))
		return fail(EXIT_FAILURE, "pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return fail(EXIT_FAILURE, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		*notify_fd = fds[1];
		return -1;
	}
	close(fds[1]);
	if (read(fds[0], &c, 1) == 1)
		_exit(EXIT_SUCCESS);
	if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		_exit(WEXITSTATUS(st) ? WEXITSTATUS(st) : EXIT_FAILURE);
	_exit(EXIT_FAILURE);
}

/*
 * Serve until a del stops the device (SIGUSR1 from the queues) or a stop
 * signal does; the first stop signal while the device is mounted, held or
 * open is refused, a second one forces the stop.
 */
static int p2z_blk_wait(struct p2z_blk *blk, const sigset_t *set)
{
	unsigned int nr_refused = 0;
	int sig;

	for (;;) {
		if (sigwait(set, &sig))
			continue;
		if (sig == SIGUSR1) {
			p2z_log(LOG_INFO, "/dev/ublkb%" PRIu32 " stopped",
				blk->dev_id);
			return 0;
		}
		if (p2z_blk_stop_is_refused(p2z_blk_bdev_is_busy(blk->dev_id),
					    nr_refused++)) {
			p2z_log(LOG_WARNING,
				"%s: /dev/ublkb%" PRIu32
				" is mounted, held or open: not stopping (a second signal, or del --force %" PRIu32
				", stops it)",
				strsignal(sig), blk->dev_id, blk->dev_id);
			continue;
		}
		p2z_log(LOG_INFO, "%s: stopping /dev/ublkb%" PRIu32,
			strsignal(sig), blk->dev_id);
		/* The queues end with UBLK_IO_RES_ABORT, then SIGUSR1. */
		return p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd,
				    UBLK_U_CMD_STOP_DEV, blk->dev_id, NULL, 0,
				    0);
	}
}

/*
 * The server lets the device go: every request is done, flush once so
 * that what it acknowledged is durable. Return: 0 or -errno.
 */
static int p2z_blk_flush_at_stop(struct p2z_blk *blk, const char *path)
{
	int ret = p2z_dev_flush(blk->dev);

	if (ret)
		return ret;
	p2z_log(LOG_INFO,
		"/dev/ublkb%" PRIu32 ": %s flushed at stop (%" PRIu64
		" flushes, %" PRIu64 " FUA writes in all)",
		blk->dev_id, path, blk->dev->stats[P2Z_DEV_STAT_FLUSH].nr,
		blk->dev->stats[P2Z_DEV_STAT_FUA].nr);
	return 0;
}

/* The device is up: record it, say it, serve it until it stops. */
static int p2z_blk_serve(struct p2z_blk *blk, const char *path, bool fg,
			 int notify_fd, const sigset_t *set)
{
	int ret, code;

	ret = p2z_blk_record_write(blk->dev_id, path);
	if (ret)
		p2z_log(LOG_WARNING,
			P2Z_BLK_RUN_DIR
			"/%" PRIu32
			": %s (list will not show the device's path; del needs --force)",
			blk->dev_id, strerror(-ret));
	printf("/dev/ublkb%" PRIu32 "\n", blk->dev_id);
	fflush(stdout);
	if (!fg)
		p2z_blk_detach(notify_fd);
	p2z_log(LOG_INFO, "serving %s as /dev/ublkb%" PRIu32, path,
		blk->dev_id);
	code = p2z_blk_wait(blk, set) ? EXIT_FAILURE : EXIT_SUCCESS;
	p2z_blk_record_remove(blk->dev_id);
	return code;
}

/* Bring the device up and serve it until a signal or a del stops it. */
static int p2z_blk_run(struct p2z_blk *blk, const char *path, bool fg,
		       int notify_fd, const sigset_t *set)
{
	struct p2z_ublk_params params;
	unsigned int started = 0;
	int ret, code = EXIT_FAILURE;
	char cdev[P2Z_BLK_PATH_MAX];
	bool served = false;

	snprintf(cdev, sizeof(cdev), "/dev/ublkc%" PRIu32, blk->dev_id);
	blk->cdev_fd = p2z_blk_cdev_open(cdev);
	if (blk->cdev_fd < 0)
		return fail(EXIT_FAILURE, "%s: %s", cdev,
			    strerror(-blk->cdev_fd));
	p2z_blk_params(blk, &params);
	ret = p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd, UBLK_U_CMD_SET_PARAMS,
			   blk->dev_id, &params, sizeof(params), 0);
	if (ret) {
		fail(EXIT_FAILURE, "SET_PARAMS: %s", strerror(-ret));
		goto out_close;
	}
	blk->queues = calloc(blk->nr_queues, sizeof(*blk->queues));
	if (!blk->queues) {
		fail(EXIT_FAILURE, "queues: %s", strerror(ENOMEM));
		goto out_close;
	}
	ret = p2z_blk_queues_start(blk, &started);
	if (ret) {
		fail(EXIT_FAILURE, "queues: %s", strerror(-ret));
		goto out_stop;
	}
	/* The kernel reports the zones through the queues while starting. */
	ret = p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd, UBLK_U_CMD_START_DEV,
			   blk->dev_id, NULL, 0, (uint64_t)getpid());
	if (ret) {
		fail(EXIT_FAILURE, "START_DEV: %s", strerror(-ret));
		goto out_stop;
	}
	served = true;
	code = p2z_blk_serve(blk, path, fg, notify_fd, set);
out_stop:
	/* Stopping ends the queues' commands (a no-op if never started). */
	if (code == EXIT_FAILURE || started)
		p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd, UBLK_U_CMD_STOP_DEV,
			     blk->dev_id, NULL, 0, 0);
	/*
	 * A queue that failed while serving stopped the device like a del
	 * does (SIGUSR1): that is a failure, with its reason.
	 */
	ret = p2z_blk_queues_stop(blk, started);
	if (ret && code == EXIT_SUCCESS)
		code = fail(EXIT_FAILURE,
			    "/dev/ublkb%" PRIu32 ": queue failed: %s",
			    blk->dev_id, strerror(-ret));
	free(blk->queues);
	/* Served (with or without an error since): flush before letting go. */
	if (served) {
		ret = p2z_blk_flush_at_stop(blk, path);
		if (ret)
			code = fail(
				EXIT_FAILURE,
				"/dev/ublkb%" PRIu32
				": flush at stop: %s (acknowledged writes may not be durable)",
				blk->dev_id, strerror(-ret));
	}
out_close:
	close(blk->cdev_fd);
	return code;
}

static int p2z_blk_cmd_add(const char *path, const char *backend, bool fg)
{
	struct p2z_blk blk = { .ctrl_fd = -1, .cdev_fd = -1 };
	int notify_fd = -1, code, ret;
	sigset_t set;

	if (!fg) {
		code = p2z_blk_fork(&notify_fd);
		if (code >= 0)
			return code;
	}
	pthread_mutex_init(&blk.lock, NULL);
	pthread_cond_init(&blk.ready, NULL);
	blk.nr_queues = p2z_blk_nr_queues();
	blk.depth = P2Z_BLK_DEPTH;
	code = p2z_blk_ctrl_open(&blk.ctrl_fd, &blk.ctrl);
	if (code)
		return code;
	code = p2z_blk_dev_open(&blk, path, backend);
	if (code)
		goto out_dev;
	/*
	 * From ADD_DEV on, a signal must not end the process before DEL_DEV
	 * (the kernel would keep a device nobody serves): every thread
	 * inherits the mask, and only sigwait() sees them. A hang-up (the
	 * ssh session of an add -f dropped) or a closed log pipe stops
	 * nothing: a device under a mounted filesystem stays.
	 */
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	code = p2z_blk_add_dev(&blk);
	if (code)
		goto out_dev;
	code = p2z_blk_run(&blk, path, fg, notify_fd, &set);
	/* The cdev closed: DEL_DEV waits for the device's last reference. */
	ret = p2z_blk_ctrl(&blk.ctrl, blk.ctrl_fd, UBLK_U_CMD_DEL_DEV,
			   blk.dev_id, NULL, 0, 0);
	if (ret && ret != -ENODEV)
		p2z_log(LOG_WARNING, "DEL_DEV /dev/ublkb%" PRIu32 ": %s",
			blk.dev_id, strerror(-ret));
out_dev:
	p2z_dev_close(blk.dev);
	free(blk.zones);
	p2z_blk_ctrl_close(blk.ctrl_fd, &blk.ctrl);
	return code;
}

/* list */

static bool p2z_blk_pid_alive(int pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

static const char *const p2z_blk_owner_names[] = {
	[P2Z_BLK_OWNER_OURS] = "po2zfs-blk",
	[P2Z_BLK_OWNER_NONE] = "other",
	[P2Z_BLK_OWNER_STALE] = "stale-record",
};

static void p2z_blk_list_one(struct io_uring *ring, int fd, uint32_t dev_id)
{
	struct ublksrv_ctrl_dev_info info;
	char backing[PATH_MAX] = "-", pid[16] = "-";
	enum p2z_blk_owner owner;
	int ret, rec_pid;

	ret = p2z_blk_ctrl(ring, fd, UBLK_U_CMD_GET_DEV_INFO, dev_id, &info,
			   sizeof(info), 0);
	if (ret)
		return;
	owner = p2z_blk_owner(dev_id, &info, backing, sizeof(backing),
			      &rec_pid);
	/* A record that is not this device's says nothing about it. */
	if (owner != P2Z_BLK_OWNER_OURS)
		strcpy(backing, "-");
	/* The kernel forgets the pid (-1) once it saw the server die. */
	if (info.ublksrv_pid > 0)
		snprintf(pid, sizeof(pid), "%d", info.ublksrv_pid);
	printf("/dev/ublkb%" PRIu32 "\t%s\t%s\t%s\t%s\n", dev_id, backing,
	       p2z_blk_pid_alive(info.ublksrv_pid) ? "alive" : "dead", pid,
	       p2z_blk_owner_names[owner]);
}

static int p2z_blk_cmd_list(void)
{
	struct io_uring ring;
	struct dirent *de;
	uint32_t dev_id;
	int fd, code;
	char *end;
	DIR *d;

	code = p2z_blk_ctrl_open(&fd, &ring);
	if (code)
		return code;
	d = opendir("/dev");
	if (!d) {
		p2z_blk_ctrl_close(fd, &ring);
		return fail(EXIT_FAILURE, "/dev: %s", strerror(errno));
	}
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "ublkc", 5) || !de->d_name[5])
			continue;
		errno = 0;
		dev_id = (uint32_t)strtoul(de->d_name + 5, &end, 10);
		if (*end || errno)
			continue;
		p2z_blk_list_one(&ring, fd, dev_id);
	}
	closedir(d);
	p2z_blk_ctrl_close(fd, &ring);
	return EXIT_SUCCESS;
}

/* del */

/* Refuse (exit 1) a device po2zfs-blk did not make, unless forced. */
static int p2z_blk_del_owned(unsigned long n,
			     const struct ublksrv_ctrl_dev_info *info,
			     bool force)
{
	char backing[PATH_MAX], why[96];
	enum p2z_blk_owner owner;
	int rec_pid;

	owner = p2z_blk_owner((uint32_t)n, info, backing, sizeof(backing),
			      &rec_pid);
	if (owner == P2Z_BLK_OWNER_OURS || force)
		return 0;
	if (owner == P2Z_BLK_OWNER_NONE)
		snprintf(why, sizeof(why), "no record in " P2Z_BLK_RUN_DIR);
	else
		snprintf(why, sizeof(why),
			 "its record names server %d, the kernel %d", rec_pid,
			 info->ublksrv_pid);
	return fail(EXIT_FAILURE,
		    "del %lu: /dev/ublkb%lu: not made by " PROG
		    " (%s): %s; --force deletes it",
		    n, n, why, strerror(EPERM));
}

/*
 * Stop and delete device @n. Held exclusively from the check through
 * STOP_DEV: nobody mounts it in between (an O_EXCL open fails while it is
 * mounted). A plain open elsewhere does not stop O_EXCL but would keep the
 * disk, and DEL_DEV would wait for it: look for one too. No disk (never
 * started, stopped): nothing to hold. Forced, a device in use is stopped
 * all the same and deleted when its last user lets go (DEL_DEV_ASYNC).
 */
static int p2z_blk_del_stop(struct io_uring *ring, int fd, unsigned long n,
			    bool force)
{
	char bdev[P2Z_BLK_PATH_MAX];
	bool busy = false;
	int excl, ret;

	snprintf(bdev, sizeof(bdev), "/dev/ublkb%lu", n);
	excl = open(bdev, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (excl < 0 && errno != ENOENT && errno != ENXIO) {
		if (!force)
			return fail(EXIT_FAILURE,
				    "del %lu: %s: %s (mounted or open)", n,
				    bdev, strerror(errno));
		busy = true;
	}
	if (excl >= 0 && p2z_blk_bdev_is_open(bdev)) {
		if (!force) {
			close(excl);
			return fail(EXIT_FAILURE,
				    "del %lu: %s: %s (open by a process)", n,
				    bdev, strerror(EBUSY));
		}
		busy = true;
	}
	ret = p2z_blk_ctrl(ring, fd, UBLK_U_CMD_STOP_DEV, (uint32_t)n, NULL, 0,
			   0);
	if (excl >= 0)
		close(excl);
	if (ret)
		return fail(EXIT_FAILURE, "del %lu: STOP_DEV: %s", n,
			    strerror(-ret));
	/* Waits until the server (if alive) let go of /dev/ublkcN. */
	ret = p2z_blk_ctrl(ring, fd,
			   busy ? UBLK_U_CMD_DEL_DEV_ASYNC : UBLK_U_CMD_DEL_DEV,
			   (uint32_t)n, NULL, 0, 0);
	if (ret && ret != -ENODEV)
		return fail(EXIT_FAILURE, "del %lu: DEL_DEV: %s", n,
			    strerror(-ret));
	return 0;
}

static int p2z_blk_cmd_del(const char *arg, bool force)
{
	struct ublksrv_ctrl_dev_info info;
	struct io_uring ring;
	unsigned long n;
	int fd, code, ret;
	char *end;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (!*arg || *end || errno || n >= UINT32_MAX)
		return fail(EXIT_USAGE, "del: '%s' is not a device number",
			    arg);
	code = p2z_blk_ctrl_open(&fd, &ring);
	if (code)
		return code;
	ret = p2z_blk_ctrl(&ring, fd, UBLK_U_CMD_GET_DEV_INFO, (uint32_t)n,
			   &info, sizeof(info), 0);
	if (ret)
		code = fail(EXIT_FAILURE, "del %lu: %s", n, strerror(-ret));
	else
		code = p2z_blk_del_owned(n, &info, force);
	if (!code)
		code = p2z_blk_del_stop(&ring, fd, n, force);
	if (!code)
		p2z_blk_record_remove((uint32_t)n);
	p2z_blk_ctrl_close(fd, &ring);
	return code;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "backend", required_argument, NULL, 'b' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd, *backend = NULL;
	bool fg = false, force = false;
	int c, nr;

	if (argc < 2)
		return fail(EXIT_USAGE,
			    "a command is needed (see " PROG " --help)");
	cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		fputs(usage_text, stdout);
		return EXIT_SUCCESS;
	}
	/* argv[1] (the command) plays argv[0]; GNU getopt permutes. */
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, ":fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			fg = true;
			break;
		case 'b':
			backend = optarg;
			break;
		case 'F':
			force = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return EXIT_SUCCESS;
		case ':':
			return fail(EXIT_USAGE, "option '%s' needs a value",
				    argv[optind]);
		default:
			return fail(EXIT_USAGE,
				    "unknown option '%s' (see " PROG " --help)",
				    argv[optind]);
		}
	}
	/* Before anything opens: dev.c would say it in two lines, later. */
	if (backend && strcmp(backend, "nvme") && strcmp(backend, "zbd") &&
	    strcmp(backend, "emu"))
		return fail(EXIT_USAGE,
			    "unknown backend '%s' (nvme, zbd or emu)", backend);
	if (force && strcmp(cmd, "del"))
		return fail(EXIT_USAGE, "--force is an option of del only");
	argv += 1 + optind;
	nr = argc - 1 - optind;
	if (!strcmp(cmd, "add") && nr == 1)
		return p2z_blk_cmd_add(argv[0], backend, fg);
	if (!strcmp(cmd, "list") && nr == 0)
		return p2z_blk_cmd_list();
	if (!strcmp(cmd, "del") && nr == 1)
		return p2z_blk_cmd_del(argv[0], force);
	return fail(EXIT_USAGE,
		    "usage: " PROG
		    " add [-f] DEVICE | list | del [--force] N (see " PROG
		    " --help)");
}
