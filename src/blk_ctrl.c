// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * po2zfs-blk's control side (as ublksrv's lib/ublksrv_cmd.c): commands on
 * /dev/ublk-control, the records in P2Z_BLK_RUN_DIR, whether a device is
 * in use, and the list and del commands.
 *
 * list: GET_DEV_INFO of every /dev/ublkcN, its server's pid (alive if the
 * process exists) and the record P2Z_BLK_RUN_DIR/N that add writes (the
 * backing device's path and the server's pid), matched against the device
 * (p2z_blk_owner_of()): del leaves devices without a matching record alone
 * unless forced.
 *
 * Every function that can fail returns 0 (or a count, an fd) or -errno,
 * and says why in one line where the user needs to know (p2z_blk_fail()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "po2zfs/log.h"
#include "blk_priv.h"

int p2z_blk_fail(int err, const char *fmt, ...)
{
	char line[480];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	p2z_log(LOG_ERR, "%s", line);
	return err;
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

int p2z_blk_ctrl(struct io_uring *ring, int fd, uint32_t op, uint32_t dev_id,
		 void *buf, uint16_t len, uint64_t data)
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
int p2z_blk_ctrl_open(int *fdp, struct io_uring *ring)
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
			return p2z_blk_fail(
				-ENOENT,
				"ublk unavailable: " P2Z_BLK_CTRL
				" missing (ublk_drv not loadable; Linux 6.6+ with CONFIG_BLK_DEV_UBLK needed)");
		return p2z_blk_fail(-ret,
				    "ublk unavailable: " P2Z_BLK_CTRL ": %s",
				    strerror(ret));
	}
	ret = io_uring_queue_init(4, ring, IORING_SETUP_SQE128);
	if (ret) {
		close(fd);
		return p2z_blk_fail(ret, "ublk unavailable: io_uring: %s",
				    strerror(-ret));
	}
	*fdp = fd;
	return 0;
}

void p2z_blk_ctrl_close(int fd, struct io_uring *ring)
{
	io_uring_queue_exit(ring);
	close(fd);
}

/*
 * The records list, del and recover read: P2Z_BLK_RUN_DIR/N holds the
 * backing path, the server's pid and the backing device's identity
 * (p2z_blk_ident(); recover compares it), one a line. The directory is root's, 0700,
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

int p2z_blk_record_write(uint32_t dev_id, const char *dev_path,
			 const char *ident)
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
	if (dprintf(fd, "%s\n%d\n%s\n",
		    realpath(dev_path, real) ? real : dev_path, (int)getpid(),
		    ident ? ident : "-") < 0)
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

int p2z_blk_record_read(uint32_t dev_id, char *backing, size_t size, int *pid,
			char *ident, size_t isize)
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
		if (ident && fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(ident, isize, "%s", line);
		}
	}
	fclose(f);
	return 0;
}

/* Return: 0 if a record was removed, else -errno (-ENOENT: none). */
int p2z_blk_record_remove(uint32_t dev_id)
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

/*
 * Whether the record @name (a device number) is one add recovers; the
 * control ring is opened (*@fd) at the first record of the same node.
 */
static bool p2z_blk_record_recovers(struct io_uring *ring, int *fd,
				    const char *name, const char *node,
				    uint32_t *n)
{
	struct ublksrv_ctrl_dev_info info;
	char backing[PATH_MAX], ident[128] = "";
	unsigned long id;
	int rec_pid;
	char *end;

	errno = 0;
	id = strtoul(name, &end, 10);
	if (name[0] < '0' || name[0] > '9' || *end || errno || id >= UINT32_MAX)
		return false;
	if (p2z_blk_record_read((uint32_t)id, backing, sizeof(backing),
				&rec_pid, ident, sizeof(ident)) ||
	    !p2z_blk_ident_same_node(node, ident))
		return false;
	if (*fd < 0 && p2z_blk_ctrl_open(fd, ring))
		return false;
	if (p2z_blk_ctrl(ring, *fd, UBLK_U_CMD_GET_DEV_INFO, (uint32_t)id,
			 &info, sizeof(info), 0))
		return false;
	*n = (uint32_t)id;
	return p2z_blk_add_recovers(true, p2z_blk_pid_alive(rec_pid),
				    info.state, info.flags, info.ublksrv_flags);
}

int p2z_blk_record_find(const char *node, uint32_t *n)
{
	struct io_uring ring;
	struct dirent *de;
	int dfd, fd = -1, ret = -ENOENT;
	DIR *d;

	dfd = p2z_blk_run_dir_open(false);
	if (dfd < 0)
		return dfd;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOENT;
	}
	while (ret && (de = readdir(d)))
		if (p2z_blk_record_recovers(&ring, &fd, de->d_name, node, n))
			ret = 0;
	if (fd >= 0)
		p2z_blk_ctrl_close(fd, &ring);
	closedir(d);
	return ret;
}

/* Whose device @dev_id is, by its record and the kernel's @info. */
static enum p2z_blk_owner
p2z_blk_owner(uint32_t dev_id, const struct ublksrv_ctrl_dev_info *info,
	      char *backing, size_t size, int *rec_pid)
{
	bool have =
		!p2z_blk_record_read(dev_id, backing, size, rec_pid, NULL, 0);

	/* Quiesced: its server is dead, a recover's record names the next. */
	return p2z_blk_owner_of(
		have, *rec_pid,
		info->state == UBLK_S_DEV_QUIESCED ? 0 : info->ublksrv_pid,
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
bool p2z_blk_bdev_is_busy(uint32_t dev_id)
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

/* list */

bool p2z_blk_pid_alive(int pid)
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
	       p2z_blk_state_name(info.state,
				  p2z_blk_pid_alive(info.ublksrv_pid),
				  owner == P2Z_BLK_OWNER_OURS &&
					  p2z_blk_pid_alive(rec_pid)),
	       pid, p2z_blk_owner_names[owner]);
}

int p2z_blk_cmd_list(void)
{
	struct io_uring ring;
	struct dirent *de;
	uint32_t dev_id;
	int fd, ret;
	char *end;
	DIR *d;

	ret = p2z_blk_ctrl_open(&fd, &ring);
	if (ret)
		return ret;
	d = opendir("/dev");
	if (!d) {
		ret = -errno;
		p2z_blk_ctrl_close(fd, &ring);
		return p2z_blk_fail(ret, "/dev: %s", strerror(-ret));
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
	return 0;
}

/* del */

/* Refuse (-EPERM) a device po2zfs-blk did not make, unless forced. */
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
	return p2z_blk_fail(-EPERM,
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
			return p2z_blk_fail(-errno,
					    "del %lu: %s: %s (mounted or open)",
					    n, bdev, strerror(errno));
		busy = true;
	}
	if (excl >= 0 && p2z_blk_bdev_is_open(bdev)) {
		if (!force) {
			close(excl);
			return p2z_blk_fail(
				-EBUSY, "del %lu: %s: %s (open by a process)",
				n, bdev, strerror(EBUSY));
		}
		busy = true;
	}
	ret = p2z_blk_ctrl(ring, fd, UBLK_U_CMD_STOP_DEV, (uint32_t)n, NULL, 0,
			   0);
	if (excl >= 0)
		close(excl);
	if (ret)
		return p2z_blk_fail(ret, "del %lu: STOP_DEV: %s", n,
				    strerror(-ret));
	/* Waits until the server (if alive) let go of /dev/ublkcN. */
	ret = p2z_blk_ctrl(ring, fd,
			   busy ? UBLK_U_CMD_DEL_DEV_ASYNC : UBLK_U_CMD_DEL_DEV,
			   (uint32_t)n, NULL, 0, 0);
	if (ret && ret != -ENODEV)
		return p2z_blk_fail(ret, "del %lu: DEL_DEV: %s", n,
				    strerror(-ret));
	return 0;
}

int p2z_blk_cmd_del(uint32_t n, bool force)
{
	struct ublksrv_ctrl_dev_info info;
	struct io_uring ring;
	int fd, ret;

	ret = p2z_blk_ctrl_open(&fd, &ring);
	if (ret)
		return ret;
	ret = p2z_blk_ctrl(&ring, fd, UBLK_U_CMD_GET_DEV_INFO, n, &info,
			   sizeof(info), 0);
	if (ret)
		p2z_blk_fail(ret, "del %" PRIu32 ": %s", n, strerror(-ret));
	else
		ret = p2z_blk_del_owned(n, &info, force);
	if (!ret)
		ret = p2z_blk_del_stop(&ring, fd, n, force);
	if (!ret) {
		char slots[P2Z_BLK_PATH_MAX];

		p2z_blk_record_remove(n);
		/* a quiesced device's append record, left for a recover */
		snprintf(slots, sizeof(slots),
			 P2Z_BLK_RUN_DIR "/%" PRIu32 ".slots", n);
		unlink(slots);
	}
	p2z_blk_ctrl_close(fd, &ring);
	return ret;
}
