// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * po2zfs-blk add: open the backing device, ADD_DEV, SET_PARAMS, start the
 * queues (blk_queue.c), START_DEV, then serve until a del or a signal
 * stops the device; flush once at stop, DEL_DEV.
 *
 * The device announces a volatile write cache and FUA only when the
 * backing device has one (info.volatile_cache): then writes complete when
 * the backend has them, a FLUSH is p2z_dev_flush() and a write or append
 * with UBLK_IO_F_FUA goes down with P2Z_IO_FUA. When the server lets the
 * device go (a stop, a del), it flushes the device once, after the last
 * request and before it closes /dev/ublkcN.
 *
 * Signals: SIGHUP and SIGPIPE are ignored; SIGTERM or SIGINT stop and
 * delete an unused device. One in use (mounted, held or open) is handed
 * over if it is recoverable: the queues drain what they started, the
 * device is flushed once and the server exits, leaving it quiesced for
 * the next add or recover (an upgrade is a restart); without recovery the
 * first signal is refused (p2z_blk_stop_action()).
 *
 * Every function that can fail returns 0 or -errno (p2z_blk_fail()).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "po2zfs/log.h"
#include "blk_priv.h"

/*
 * The ublk device's parameters: the po2 zone size as chunk_sectors, the
 * native capacity per zone (reported), the device's limits; reads and
 * writes up to the tag buffer (P2Z_BLK_MAX_IO, the device queue splits
 * them), appends no larger than a single device append or transfer
 * (p2z_blk_io_limits()).
 */
static void p2z_blk_params(const struct p2z_blk *blk, struct p2z_ublk_params *p)
{
	const struct p2z_dev_info *info = &blk->dev->info;
	uint32_t io, append;

	/* p2z_blk_dev_open() refused a device where this fails. */
	if (p2z_blk_io_limits(info->max_xfer_bytes, info->max_append_bytes,
			      (uint32_t)sysconf(_SC_PAGESIZE), P2Z_BLK_MAX_IO,
			      &io, &append))
		append = 0;
	if (append > blk->buf_bytes)
		append = blk->buf_bytes;
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
	p->zoned.max_zone_append_sectors = append >> P2Z_BLK_SECTOR_SHIFT;
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
	info.dev_id = blk->dev_id;
	info.flags = need | UBLK_F_CMD_IOCTL_ENCODE;
	if (blk->want != P2Z_BLK_RECOVERY_OFF)
		info.flags |= UBLK_F_USER_RECOVERY |
			      UBLK_F_USER_RECOVERY_REISSUE;
	/* kept by the kernel: list and del know po2zfs-blk's devices by it */
	info.ublksrv_flags = P2Z_BLK_SRV_MAGIC;
	ret = p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd, UBLK_U_CMD_ADD_DEV,
			   blk->dev_id, &info, sizeof(info), 0);
	if (ret == -EPERM || ret == -EACCES)
		return p2z_blk_fail(ret, "ublk unavailable: %s (needs root)",
				    strerror(-ret));
	if (ret == -EEXIST && blk->dev_id != P2Z_BLK_ID_ANY)
		return p2z_blk_fail(ret,
				    "--id %" PRIu32 ": /dev/ublkb%" PRIu32
				    ": %s (another ublk device has the number)",
				    blk->dev_id, blk->dev_id, strerror(-ret));
	if (ret)
		return p2z_blk_fail(
			ret,
			"ublk unavailable: the kernel refuses a zoned ublk device with user copy: %s (Linux 6.6+ with CONFIG_BLK_DEV_ZONED needed)",
			strerror(-ret));
	blk->dev_id = info.dev_id;
	ret = p2z_blk_recovery_granted(blk->want, info.flags);
	if ((info.flags & need) != need || ret < 0) {
		p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd, UBLK_U_CMD_DEL_DEV,
			     blk->dev_id, NULL, 0, 0);
		return p2z_blk_fail(
			-EOPNOTSUPP,
			"ublk unavailable: the kernel lacks zoned ublk devices with user copy%s (Linux 6.6+)",
			ret < 0 ? " and user recovery" : "");
	}
	blk->recovery = ret;
	if (!ret && blk->want == P2Z_BLK_RECOVERY_AUTO)
		p2z_log(LOG_WARNING,
			"/dev/ublkb%" PRIu32
			": the kernel lacks ublk user recovery: a device without recovery",
			blk->dev_id);
	if (info.max_io_buf_bytes < blk->buf_bytes)
		blk->buf_bytes = info.max_io_buf_bytes;
	/* A record of an earlier device of this number is not this one's. */
	if (!p2z_blk_record_remove(blk->dev_id))
		p2z_log(LOG_INFO,
			"removed the stale record " P2Z_BLK_RUN_DIR "/%" PRIu32,
			blk->dev_id);
	return 0;
}

int p2z_blk_cdev_open(const char *path)
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

/*
 * The backing device's identity, as the record keeps it for recover: the
 * device number of a device node (else the file's filesystem and inode)
 * and the geometry the server computed from it.
 */
int p2z_blk_ident_node(const char *path, char *buf, size_t size)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (S_ISBLK(st.st_mode) || S_ISCHR(st.st_mode))
		snprintf(buf, size, "%s=%u:%u",
			 S_ISBLK(st.st_mode) ? "blk" : "chr", major(st.st_rdev),
			 minor(st.st_rdev));
	else
		snprintf(buf, size, "file=%u:%u:%" PRIu64, major(st.st_dev),
			 minor(st.st_dev), (uint64_t)st.st_ino);
	return 0;
}

/*
 * The backing device's identity: its node and geometry, and its append
 * limit as max= (the one limit taken from the device, and what max=
 * recorded when requests were no larger than it: a record from then still
 * matches).
 */
static int p2z_blk_ident(struct p2z_blk *blk, const char *path, uint32_t append)
{
	int ret = p2z_blk_ident_node(path, blk->ident, sizeof(blk->ident));

	if (ret)
		return p2z_blk_fail(ret, "%s: %s", path, strerror(-ret));
	snprintf(blk->ident + strlen(blk->ident),
		 sizeof(blk->ident) - strlen(blk->ident),
		 " lba=%" PRIu32 " zone=%" PRIu64 " zones=%" PRIu64
		 " max=%" PRIu32,
		 blk->g.lba_bytes, blk->g.zone_lba, blk->g.nr_zones, append);
	return 0;
}

static int p2z_blk_dev_open(struct p2z_blk *blk, const char *path,
			    const char *backend)
{
	const struct p2z_dev_info *info;
	unsigned long errs;
	uint32_t max, append;
	int ret;

	/* The device layer says why it refuses; one line, not two. */
	errs = p2z_log_errors();
	ret = p2z_dev_open(path, backend, 0, &blk->dev);
	if (ret && p2z_log_errors() != errs)
		return ret;
	if (ret)
		return p2z_blk_fail(ret, "%s: %s", path, strerror(-ret));
	info = &blk->dev->info;
	ret = p2z_geom_init(&blk->g, info->lba_bytes, info->zone_lba,
			    info->nr_zones);
	if (ret)
		return p2z_blk_fail(ret, "%s: geometry: %s", path,
				    p2z_geom_strerror(ret));
	if (blk->g.lba_bytes > (uint32_t)sysconf(_SC_PAGESIZE) ||
	    p2z_blk_zone_sectors(&blk->g) > UINT32_MAX ||
	    blk->g.nr_zones > INT32_MAX)
		return p2z_blk_fail(-EFBIG,
				    "%s: geometry too large for a ublk device",
				    path);
	if (p2z_blk_io_limits(info->max_xfer_bytes, info->max_append_bytes,
			      (uint32_t)sysconf(_SC_PAGESIZE), P2Z_BLK_MAX_IO,
			      &max, &append))
		return p2z_blk_fail(-EINVAL,
				    "%s: transfer limit below a page, unusable",
				    path);
	blk->buf_bytes = max;
	/* A failed report is logged by the walk: one line. */
	errs = p2z_log_errors();
	ret = p2z_blk_zones_init(blk);
	if (ret && p2z_log_errors() != errs)
		return ret;
	if (ret)
		return p2z_blk_fail(ret, "%s: zone report: %s", path,
				    strerror(-ret));
	return p2z_blk_ident(blk, path, append);
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
 * Return: 0 in the child (@notify_fd set), -errno if there is none.
 */
static int p2z_blk_fork(int *notify_fd)
{
	int fds[2], st;
	pid_t pid;
	char c;

	if (pipe2(fds, O_CLOEXEC))
		return p2z_blk_fail(-errno, "pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return p2z_blk_fail(-errno, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		*notify_fd = fds[1];
		return 0;
	}
	close(fds[1]);
	if (read(fds[0], &c, 1) == 1)
		_exit(EXIT_SUCCESS);
	if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		_exit(WEXITSTATUS(st) ? WEXITSTATUS(st) : EXIT_FAILURE);
	_exit(EXIT_FAILURE);
}

/*
 * A handover: the queues take no new request, drain and end (each wakes
 * from its ring by a message, MSG_RING, on the control ring).
 */
static void p2z_blk_handover(struct p2z_blk *blk, int sig)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	unsigned int i;

	p2z_log(LOG_INFO,
		"%s: /dev/ublkb%" PRIu32
		" is in use: handing it over (draining, then leaving it quiesced)",
		strsignal(sig), blk->dev_id);
	__atomic_store_n(&blk->handover, true, __ATOMIC_RELEASE);
	for (i = 0; i < blk->nr_queues; i++) {
		sqe = io_uring_get_sqe(&blk->ctrl);
		if (!sqe)
			break;
		memset(sqe, 0, 2 * sizeof(*sqe));
		io_uring_prep_msg_ring(sqe, blk->queues[i].ring.ring_fd, 0,
				       P2Z_BLK_UD_WAKE, 0);
		if (io_uring_submit_and_wait(&blk->ctrl, 1) < 0 ||
		    io_uring_wait_cqe(&blk->ctrl, &cqe))
			continue;
		if (cqe->res < 0)
			p2z_log(LOG_WARNING, "queue %u: wake-up: %s", i,
				strerror(-cqe->res));
		io_uring_cqe_seen(&blk->ctrl, cqe);
	}
}

/*
 * Serve until a del stops the device (SIGUSR1 from the queues) or a stop
 * signal does (p2z_blk_stop_action()): an unused device is stopped; one in
 * use is handed over if recoverable, else the first signal is refused and
 * a second one forces the stop.
 */
static int p2z_blk_wait(struct p2z_blk *blk, const sigset_t *set)
{
	unsigned int nr_refused = 0;
	enum p2z_blk_stop act;
	int sig;

	for (;;) {
		if (sigwait(set, &sig))
			continue;
		if (sig == SIGUSR1) {
			p2z_log(LOG_INFO, "/dev/ublkb%" PRIu32 " stopped",
				blk->dev_id);
			return 0;
		}
		act = p2z_blk_stop_action(blk->recovery,
					  p2z_blk_bdev_is_busy(blk->dev_id),
					  nr_refused);
		if (act == P2Z_BLK_STOP_HANDOVER) {
			p2z_blk_handover(blk, sig);
			return 0;
		}
		if (act == P2Z_BLK_STOP_REFUSE) {
			nr_refused++;
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

/*
 * Under systemd (Type=notify, $NOTIFY_SOCKET set): tell it the device is
 * up, as sd_notify("READY=1") does; anywhere else nothing. A failure only
 * warns: the unit's start then times out.
 */
static void p2z_blk_notify_ready(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	static const char msg[] = "READY=1";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@'))
		return;
	len = strlen(path);
	if (len >= sizeof(sa.sun_path)) {
		p2z_log(LOG_WARNING, "NOTIFY_SOCKET: %s",
			strerror(ENAMETOOLONG));
		return;
	}
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract namespace */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    sendto(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL,
		   (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) <
		    0)
		p2z_log(LOG_WARNING, "NOTIFY_SOCKET %s: %s", path,
			strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* The device is up: record it, say it, serve it until it stops. */
static int p2z_blk_serve(struct p2z_blk *blk, const char *path, bool fg,
			 int notify_fd, const sigset_t *set)
{
	int ret;

	ret = p2z_blk_record_write(blk->dev_id, path, blk->ident);
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
	else
		p2z_blk_notify_ready();
	p2z_log(LOG_INFO, "serving %s as /dev/ublkb%" PRIu32, path,
		blk->dev_id);
	ret = p2z_blk_wait(blk, set);
	/* Handed over: the record and the append record are the next's. */
	if (!blk->handover)
		p2z_blk_record_remove(blk->dev_id);
	return ret;
}

/*
 * START_USER_RECOVERY: EBUSY while the dead server's /dev/ublkcN is still
 * being released (its io_uring torn down after the exit): retried for up
 * to 5 s. Return: 0 or -errno.
 */
static int p2z_blk_start_recovery(struct p2z_blk *blk)
{
	int i, ret;

	for (i = 0; i < 100; i++) {
		ret = p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd,
				   UBLK_U_CMD_START_USER_RECOVERY, blk->dev_id,
				   NULL, 0, 0);
		if (ret != -EBUSY)
			break;
		usleep(50000);
	}
	return ret;
}

static void p2z_blk_slots_path(uint32_t dev_id, char *path, size_t size)
{
	snprintf(path, size, P2Z_BLK_RUN_DIR "/%" PRIu32 ".slots", dev_id);
}

/* a version 1 record's slot (the slots alone, no header, no history) */
struct p2z_blk_slot_v1 {
	uint32_t state;
	uint32_t len;
	uint64_t zidx;
	uint32_t crc;
	uint32_t pad;
	uint64_t wp_submit;
	uint64_t landed;
};

/* recover: a version 1 record's @n slots at @buf into old_slots (seq 0) */
static void p2z_blk_rec_load_v1(struct p2z_blk *blk, const char *buf, size_t n)
{
	struct p2z_blk_slot_v1 v;
	size_t i;

	for (i = 0; i < n; i++) {
		memcpy(&v, buf + i * sizeof(v), sizeof(v));
		blk->old_slots[i] = (struct p2z_blk_slot){
			.state = v.state,
			.len = v.len,
			.zidx = v.zidx,
			.crc = v.crc,
			.wp_submit = v.wp_submit,
			.landed = v.landed,
		};
	}
	p2z_log(LOG_WARNING,
		"recover %" PRIu32
		": a version 1 append record (no history): an unresolved append found on the device fails (EIO)",
		blk->dev_id);
}

/*
 * recover: a version 3 record's carry area at @buf (@size bytes) after
 * its @n slots: its slots to old_slots after the record's own. Return: 0,
 * or -EINVAL if it is not one of @n slots.
 */
static int p2z_blk_rec_load_carry(struct p2z_blk *blk, const char *buf,
				  size_t size, size_t n)
{
	struct p2z_blk_carry c;

	if (size != p2z_blk_carry_bytes(n))
		return -EINVAL;
	memcpy(&c, buf, sizeof(c));
	if (c.nr != n * P2Z_BLK_CARRY_PER_SLOT)
		return -EINVAL;
	memcpy(blk->old_slots + n, buf + sizeof(c),
	       c.nr * sizeof(struct p2z_blk_slot));
	blk->old_overflow = c.flags & P2Z_BLK_CARRY_OVERFLOW;
	return 0;
}

/*
 * recover: the dead server's record (@size bytes of @fd) into old_slots
 * and old_rings: version 3 or 2 of these queues (2: no carry area), or
 * version 1 (its slots alone, 40 bytes each: old_rings stays NULL).
 * old_slots has room for the carried ones in any case. Return: 0 or
 * -errno (-EINVAL: not a record of these queues).
 */
static int p2z_blk_rec_load(struct p2z_blk *blk, int fd, size_t size)
{
	size_t n = (size_t)blk->nr_queues * blk->depth;
	size_t rb = blk->nr_queues * p2z_blk_ring_bytes(blk->depth);
	size_t ss = n * sizeof(struct p2z_blk_slot);
	size_t v2 = sizeof(struct p2z_blk_rec) + ss + rb;
	struct p2z_blk_rec h;
	char *buf = malloc(size + 1);
	int err = 0;

	blk->old_nr = n * (1 + P2Z_BLK_CARRY_PER_SLOT);
	blk->old_slots = calloc(blk->old_nr, sizeof(struct p2z_blk_slot));
	if (!buf || !blk->old_slots) {
		free(buf);
		return -ENOMEM;
	}
	if (pread(fd, buf, size, 0) != (ssize_t)size) {
		free(buf);
		return -EIO;
	}
	memcpy(&h, buf, size < sizeof(h) ? size : sizeof(h));
	if (size == n * sizeof(struct p2z_blk_slot_v1)) {
		p2z_blk_rec_load_v1(blk, buf, n);
	} else if (size >= v2 && h.magic == P2Z_BLK_REC_MAGIC &&
		   (h.version == P2Z_BLK_REC_VERSION ?
			    !p2z_blk_rec_load_carry(blk, buf + v2, size - v2,
						    n) :
			    h.version == P2Z_BLK_REC_VERSION_2 && size == v2) &&
		   h.nr_queues == blk->nr_queues && h.depth == blk->depth &&
		   h.ring == blk->depth * P2Z_BLK_HIST_PER_TAG) {
		memcpy(blk->old_slots, buf + sizeof(h), ss);
		blk->old_lost = h.lost;
		blk->old_rings = malloc(rb);
		if (blk->old_rings)
			memcpy(blk->old_rings, buf + sizeof(h) + ss, rb);
		else
			err = -ENOMEM;
	} else {
		err = -EINVAL;
	}
	free(buf);
	return err;
}

/*
 * recover: the write pointers again, now that the device is quiesced (the
 * dead server's last device requests done), into wp_rec. Return: 0 or
 * -errno after one line.
 */
static int p2z_blk_recover_wps(struct p2z_blk *blk)
{
	size_t i;
	int err;

	blk->old_taken = calloc(blk->old_nr, 1);
	blk->old_map = calloc(blk->old_nr, sizeof(*blk->old_map));
	blk->wp_rec = calloc(blk->g.nr_zones, sizeof(*blk->wp_rec));
	if (!blk->old_taken || !blk->old_map || !blk->wp_rec)
		return p2z_blk_fail(-ENOMEM, "recover: %s", strerror(ENOMEM));
	free(blk->zones);
	err = p2z_blk_zones_init(blk);
	if (err)
		return p2z_blk_fail(err, "recover: zone report: %s",
				    strerror(-err));
	for (i = 0; i < blk->g.nr_zones; i++)
		blk->wp_rec[i] = blk->zones[i].wp_ofs;
	return 0;
}

/*
 * The append record (blk_zoned.c): P2Z_BLK_RUN_DIR/N.slots, version 3: a
 * struct p2z_blk_rec, one struct p2z_blk_slot per queue and tag, each
 * queue's ring of completed appends, then the carry area, mapped shared.
 * add makes it; recover keeps the dead server's slots, carried slots and
 * rings (a copy, versions 2 and 1 read too) and each zone's write
 * pointer, then makes it new for its own, carrying the dead server's
 * unresolved slots into it. Return: 0 or -errno after one line.
 */
static int p2z_blk_slots_setup(struct p2z_blk *blk)
{
	size_t n = (size_t)blk->nr_queues * blk->depth, i;
	size_t ss = n * sizeof(struct p2z_blk_slot);
	size_t rb = blk->nr_queues * p2z_blk_ring_bytes(blk->depth);
	size_t bytes =
		sizeof(struct p2z_blk_rec) + ss + rb + p2z_blk_carry_bytes(n);
	char path[P2Z_BLK_PATH_MAX];
	struct stat st;
	int fd, err;
	void *p;

	p2z_blk_slots_path(blk->dev_id, path, sizeof(path));
	if (mkdir(P2Z_BLK_RUN_DIR, 0700) && errno != EEXIST)
		return p2z_blk_fail(-errno, "%s: %s", P2Z_BLK_RUN_DIR,
				    strerror(errno));
	fd = open(path,
		  O_RDWR | O_NOFOLLOW | O_CLOEXEC |
			  (blk->recover ? 0 : O_CREAT),
		  0600);
	err = fd < 0 || fstat(fd, &st) ? -errno : 0;
	if (!err && blk->recover)
		err = p2z_blk_rec_load(blk, fd, (size_t)st.st_size);
	if (!err && (ftruncate(fd, 0) || ftruncate(fd, (off_t)bytes)))
		err = -errno;
	if (err) {
		if (fd >= 0)
			close(fd);
		return p2z_blk_fail(
			err, "%s%" PRIu32 ": %s (the append record): %s",
			blk->recover ? "recover " : "/dev/ublkb", blk->dev_id,
			path,
			err == -EINVAL ?
				"not a record of these queues (size or version)" :
				strerror(-err));
	}
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return p2z_blk_fail(-errno, "%s: mmap: %s", path,
				    strerror(errno));
	blk->rec = p;
	blk->slots = (struct p2z_blk_slot *)(blk->rec + 1);
	blk->rings = (char *)blk->slots + ss;
	blk->carry = (struct p2z_blk_carry *)((char *)blk->rings + rb);
	blk->carry->nr = (uint32_t)(n * P2Z_BLK_CARRY_PER_SLOT);
	if (blk->recover) {
		err = p2z_blk_recover_wps(blk);
		if (err)
			return err;
		if (p2z_blk_carry_init(blk))
			return p2z_blk_fail(-ENOMEM, "recover: %s",
					    strerror(ENOMEM));
	}
	/*
	 * The header last: a record killed before it (the dead server's
	 * slots not carried yet) has no magic, and is refused.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*blk->rec = (struct p2z_blk_rec){
		.magic = P2Z_BLK_REC_MAGIC,
		.version = P2Z_BLK_REC_VERSION,
		.nr_queues = blk->nr_queues,
		.depth = blk->depth,
		.ring = blk->depth * P2Z_BLK_HIST_PER_TAG,
	};
	if (!blk->recover)
		return 0;
	for (i = 0, bytes = 0; i < blk->old_nr; i++)
		bytes += blk->old_slots[i].state != P2Z_BLK_SLOT_FREE;
	p2z_log(LOG_INFO,
		"recover %" PRIu32 ": %zu appends in the dead server's record",
		blk->dev_id, bytes);
	return 0;
}

/* Bring the device up and serve it until a signal or a del stops it. */
static int p2z_blk_run(struct p2z_blk *blk, const char *path, bool fg,
		       int notify_fd, const sigset_t *set)
{
	struct p2z_ublk_params params;
	unsigned int started = 0;
	int ret, err;
	char cdev[P2Z_BLK_PATH_MAX];

	snprintf(cdev, sizeof(cdev), "/dev/ublkc%" PRIu32, blk->dev_id);
	if (blk->recovery) {
		ret = p2z_blk_slots_setup(blk);
		if (ret)
			return ret;
	}
	/* Recover: the kernel resets the queues for the new server. */
	if (blk->recover) {
		ret = p2z_blk_start_recovery(blk);
		if (ret)
			return p2z_blk_fail(ret,
					    "recover %" PRIu32
					    ": START_USER_RECOVERY: %s",
					    blk->dev_id, strerror(-ret));
	}
	blk->cdev_fd = p2z_blk_cdev_open(cdev);
	if (blk->cdev_fd < 0)
		return p2z_blk_fail(blk->cdev_fd, "%s: %s", cdev,
				    strerror(-blk->cdev_fd));
	p2z_blk_params(blk, &params);
	ret = blk->recover ? 0 :
			     p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd,
					  UBLK_U_CMD_SET_PARAMS, blk->dev_id,
					  &params, sizeof(params), 0);
	if (ret) {
		err = p2z_blk_fail(ret, "SET_PARAMS: %s", strerror(-ret));
		goto out_close;
	}
	blk->queues = calloc(blk->nr_queues, sizeof(*blk->queues));
	if (!blk->queues) {
		err = p2z_blk_fail(-ENOMEM, "queues: %s", strerror(ENOMEM));
		goto out_close;
	}
	ret = p2z_blk_queues_start(blk, &started);
	if (ret) {
		err = p2z_blk_fail(ret, "queues: %s", strerror(-ret));
		goto out_stop;
	}
	/*
	 * The kernel reports the zones through the queues while starting;
	 * a recovery ends once every queue fetched its tags, and the held
	 * requests come.
	 */
	ret = p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd,
			   blk->recover ? UBLK_U_CMD_END_USER_RECOVERY :
					  UBLK_U_CMD_START_DEV,
			   blk->dev_id, NULL, 0, (uint64_t)getpid());
	if (ret) {
		err = p2z_blk_fail(ret, "%s: %s",
				   blk->recover ? "END_USER_RECOVERY" :
						  "START_DEV",
				   strerror(-ret));
		goto out_stop;
	}
	if (blk->recover)
		p2z_log(LOG_INFO, "recovered /dev/ublkb%" PRIu32 " from %s",
			blk->dev_id, path);
	blk->served = true;
	err = p2z_blk_serve(blk, path, fg, notify_fd, set);
out_stop:
	/* Stopping ends the queues' commands (a no-op if never started). */
	if (((err && !blk->recover) || started) && !blk->handover)
		p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd, UBLK_U_CMD_STOP_DEV,
			     blk->dev_id, NULL, 0, 0);
	/*
	 * A queue that failed while serving stopped the device like a del
	 * does (SIGUSR1): that is a failure, with its reason.
	 */
	ret = p2z_blk_queues_stop(blk, started);
	if (ret && !err)
		err = p2z_blk_fail(ret,
				   "/dev/ublkb%" PRIu32 ": queue failed: %s",
				   blk->dev_id, strerror(-ret));
	free(blk->queues);
	/* Served (with or without an error since): flush before letting go. */
	if (blk->served) {
		ret = p2z_blk_flush_at_stop(blk, path);
		if (ret)
			err = p2z_blk_fail(
				ret,
				"/dev/ublkb%" PRIu32
				": flush at stop: %s (acknowledged writes may not be durable)",
				blk->dev_id, strerror(-ret));
	}
out_close:
	close(blk->cdev_fd);
	return err;
}

/*
 * recover: the device N is po2zfs-blk's, recoverable, quiesced, with a
 * record of its own that no live process holds; its backing path (from
 * the record) into @path (NULL: add's path, checked by its identity), its
 * queues and limits into @blk.
 */
static int p2z_blk_recover_dev(struct p2z_blk *blk, const char **path)
{
	struct ublksrv_ctrl_dev_info info;
	uint32_t n = blk->dev_id;
	int ret, rec_pid = 0;
	bool have;

	ret = p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd, UBLK_U_CMD_GET_DEV_INFO, n,
			   &info, sizeof(info), 0);
	if (ret)
		return p2z_blk_fail(ret,
				    "recover %" PRIu32 ": /dev/ublkb%" PRIu32
				    ": %s",
				    n, n, strerror(-ret));
	have = !p2z_blk_record_read(n, blk->rec_path, sizeof(blk->rec_path),
				    &rec_pid, blk->rec_ident,
				    sizeof(blk->rec_ident));
	ret = p2z_blk_recover_check(info.state, info.flags, info.ublksrv_flags,
				    p2z_blk_owner_of(have, rec_pid, 0,
						     info.ublksrv_flags));
	if (ret == -EPERM)
		return p2z_blk_fail(ret,
				    "recover %" PRIu32 ": /dev/ublkb%" PRIu32
				    ": not served by " PROG " (%s): %s",
				    n, n,
				    have ? "no P2ZB mark" :
					   "no record in " P2Z_BLK_RUN_DIR,
				    strerror(-ret));
	if (ret == -EOPNOTSUPP)
		return p2z_blk_fail(
			ret,
			"recover %" PRIu32 ": /dev/ublkb%" PRIu32
			" was added without recovery: %s; del %" PRIu32
			" deletes it",
			n, n, strerror(-ret), n);
	if (ret)
		return p2z_blk_fail(
			ret,
			"recover %" PRIu32 ": /dev/ublkb%" PRIu32
			" is %s, not quiesced: nothing to recover",
			n, n,
			p2z_blk_state_name(info.state,
					   p2z_blk_pid_alive(info.ublksrv_pid),
					   false));
	if (rec_pid != getpid() && p2z_blk_pid_alive(rec_pid))
		return p2z_blk_fail(-EBUSY,
				    "recover %" PRIu32 ": /dev/ublkb%" PRIu32
				    " is being recovered by process %d: %s",
				    n, n, rec_pid, strerror(EBUSY));
	if (!blk->rec_ident[0] || !strcmp(blk->rec_ident, "-"))
		return p2z_blk_fail(
			-EPERM,
			"recover %" PRIu32 ": " P2Z_BLK_RUN_DIR "/%" PRIu32
			" holds no identity of the backing device: %s",
			n, n, strerror(EPERM));
	blk->nr_queues = info.nr_hw_queues;
	blk->depth = info.queue_depth;
	blk->rec_max_io = info.max_io_buf_bytes;
	if (!blk->nr_queues || blk->nr_queues > P2Z_BLK_MAX_QUEUES ||
	    !blk->depth || blk->depth > P2Z_BLK_DEPTH)
		return p2z_blk_fail(-EINVAL,
				    "recover %" PRIu32 ": /dev/ublkb%" PRIu32
				    ": %u queues of %u tags: not " PROG "'s",
				    n, n, blk->nr_queues, blk->depth);
	if (path)
		*path = blk->rec_path;
	return 0;
}

/* recover: the backing device is the one the record describes. */
static int p2z_blk_recover_same(struct p2z_blk *blk, const char *path)
{
	if (strcmp(blk->ident, blk->rec_ident))
		return p2z_blk_fail(-ENXIO,
				    "recover %" PRIu32
				    ": %s is not the device /dev/ublkb%" PRIu32
				    " served (now %s, recorded %s): %s",
				    blk->dev_id, path, blk->dev_id, blk->ident,
				    blk->rec_ident, strerror(ENXIO));
	if (blk->rec_max_io < blk->buf_bytes)
		blk->buf_bytes = blk->rec_max_io;
	return 0;
}

/*
 * Handed over: the queues ended and /dev/ublkcN is closed, the kernel
 * quiesces the device (its requests held) within moments; wait for that,
 * up to 10 s, so that a recover or add right after finds it quiesced.
 */
static int p2z_blk_left_quiesced(struct p2z_blk *blk)
{
	struct ublksrv_ctrl_dev_info info;
	int i, ret = 0;

	for (i = 0; i < 500; i++) {
		ret = p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd,
				   UBLK_U_CMD_GET_DEV_INFO, blk->dev_id, &info,
				   sizeof(info), 0);
		if (ret || info.state == UBLK_S_DEV_QUIESCED)
			break;
		usleep(20000);
	}
	if (ret)
		return p2z_blk_fail(ret, "/dev/ublkb%" PRIu32 ": %s",
				    blk->dev_id, strerror(-ret));
	if (info.state != UBLK_S_DEV_QUIESCED)
		return p2z_blk_fail(-ETIMEDOUT,
				    "/dev/ublkb%" PRIu32
				    " not quiesced 10 s after the handover: %s",
				    blk->dev_id, strerror(ETIMEDOUT));
	p2z_log(LOG_INFO, "left /dev/ublkb%" PRIu32 " quiesced for recover",
		blk->dev_id);
	return 0;
}

/*
 * The device's server: ADD_DEV (add) or the checks of recover, then run
 * it until it stops and DEL_DEV. @blk->dev_id, ->recovery and ->recover
 * are set; @path is the backing device.
 */
static int p2z_blk_main(struct p2z_blk *blk, const char *path,
			const char *backend, bool fg)
{
	int notify_fd = -1, ret, del;
	sigset_t set;

	if (!fg) {
		ret = p2z_blk_fork(&notify_fd);
		if (ret)
			return ret;
	}
	pthread_mutex_init(&blk->lock, NULL);
	pthread_cond_init(&blk->ready, NULL);
	blk->nr_queues = p2z_blk_nr_queues();
	blk->depth = P2Z_BLK_DEPTH;
	ret = p2z_blk_ctrl_open(&blk->ctrl_fd, &blk->ctrl);
	if (ret)
		return ret;
	/* recover: the device's own checks first, then the backing one */
	ret = blk->recover ? p2z_blk_recover_dev(blk, path ? NULL : &path) : 0;
	if (!ret)
		ret = p2z_blk_dev_open(blk, path, backend);
	if (!ret && blk->recover)
		ret = p2z_blk_recover_same(blk, path);
	if (ret)
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
	ret = blk->recover ? 0 : p2z_blk_add_dev(blk);
	if (ret)
		goto out_dev;
	ret = p2z_blk_run(blk, path, fg, notify_fd, &set);
	/*
	 * A recover that failed before it served leaves the device quiesced,
	 * for another recover or a del.
	 */
	if (blk->recover && ret && !blk->served)
		goto out_dev;
	if (blk->handover) {
		if (!ret)
			ret = p2z_blk_left_quiesced(blk);
		goto out_dev;
	}
	/* The cdev closed: DEL_DEV waits for the device's last reference. */
	del = p2z_blk_ctrl(&blk->ctrl, blk->ctrl_fd, UBLK_U_CMD_DEL_DEV,
			   blk->dev_id, NULL, 0, 0);
	if (del && del != -ENODEV)
		p2z_log(LOG_WARNING, "DEL_DEV /dev/ublkb%" PRIu32 ": %s",
			blk->dev_id, strerror(-del));
	if (blk->recovery) {
		char slots[P2Z_BLK_PATH_MAX];

		p2z_blk_slots_path(blk->dev_id, slots, sizeof(slots));
		unlink(slots);
	}
	if (blk->recover)
		p2z_log(LOG_INFO,
			"recovery: reissued requests resolved: already-written %" PRIu64
			", rest %" PRIu64 ", append-landed %" PRIu64
			", append-sent %" PRIu64 ", failed %" PRIu64,
			blk->nr_reissue[P2Z_BLK_RC_WRITTEN],
			blk->nr_reissue[P2Z_BLK_RC_REST],
			blk->nr_reissue[P2Z_BLK_RC_APPEND_LANDED],
			blk->nr_reissue[P2Z_BLK_RC_APPEND_SENT],
			blk->nr_reissue[P2Z_BLK_RC_FAILED]);
out_dev:
	p2z_dev_close(blk->dev);
	free(blk->zones);
	free(blk->old_slots);
	free(blk->old_rings);
	free(blk->old_taken);
	free(blk->old_map);
	free(blk->wp_rec);
	p2z_blk_ctrl_close(blk->ctrl_fd, &blk->ctrl);
	return ret;
}

/*
 * Whether ublk device @id exists and is quiesced (its server died): then
 * add --recovery --id N recovers it instead (a restarted systemd unit).
 */
static bool p2z_blk_is_quiesced(uint32_t id)
{
	struct ublksrv_ctrl_dev_info info;
	struct io_uring ring;
	bool quiesced;
	int fd;

	if (p2z_blk_ctrl_open(&fd, &ring))
		return false;
	quiesced = !p2z_blk_ctrl(&ring, fd, UBLK_U_CMD_GET_DEV_INFO, id, &info,
				 sizeof(info), 0) &&
		   info.state == UBLK_S_DEV_QUIESCED;
	p2z_blk_ctrl_close(fd, &ring);
	return quiesced;
}

int p2z_blk_cmd_add(const char *path, const char *backend, bool fg, uint32_t id,
		    enum p2z_blk_recovery want)
{
	struct p2z_blk blk = {
		.ctrl_fd = -1, .cdev_fd = -1, .dev_id = id, .want = want
	};
	char node[64];
	uint32_t n;

	if (want == P2Z_BLK_RECOVERY_OFF)
		return p2z_blk_main(&blk, path, backend, fg);
	if (id != P2Z_BLK_ID_ANY && p2z_blk_is_quiesced(id)) {
		p2z_log(LOG_INFO,
			"/dev/ublkb%" PRIu32 " is quiesced: recovering it", id);
		blk.recover = true;
	} else if (id == P2Z_BLK_ID_ANY &&
		   !p2z_blk_ident_node(path, node, sizeof(node)) &&
		   !p2z_blk_record_find(node, &n)) {
		p2z_log(LOG_INFO,
			"/dev/ublkb%" PRIu32
			" is quiesced, served from %s: recovering it",
			n, path);
		blk.dev_id = n;
		blk.recover = true;
	}
	blk.recovery = blk.recover;
	return p2z_blk_main(&blk, path, backend, fg);
}

int p2z_blk_cmd_recover(uint32_t n, const char *backend, bool fg)
{
	struct p2z_blk blk = { .ctrl_fd = -1,
			       .cdev_fd = -1,
			       .dev_id = n,
			       .recovery = true,
			       .recover = true };

	return p2z_blk_main(&blk, NULL, backend, fg);
}
