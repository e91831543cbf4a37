// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * p2z_nullfs: the FUSE round trip alone, for the guest benchmark. A FUSE
 * filesystem with the request settings po2zfs uses (max_write 1 MiB, no
 * async direct I/O, no writeback cache, no splice, direct I/O for O_DIRECT
 * and writable opens, a multi-threaded loop) and no device: seq/0 ..
 * seq/15 take writes at any offset and drop the bytes, reads return zeros
 * up to the size, truncate sets the size; attributes are cached (60 s), as
 * po2zfs lets the kernel cache them for files without writers. What a job
 * costs here is what FUSE and the kernel cost before po2zfs does any work.
 *
 *   p2z_nullfs [--async-dio] [--device NG --zone-bytes N
 *              [--lba-bytes N] [--max-transfer N]] MOUNTPOINT
 *   (foreground; fusermount3 -u to stop)
 *
 * --async-dio keeps FUSE_CAP_ASYNC_DIO on: the kernel then sends an
 * asynchronous submitter's direct requests together (the bound of a
 * daemon that takes them, issue 22).
 *
 * --device: reads are served from an NVMe generic device (/dev/ngXnY):
 * seq/N at offset O reads zone N's bytes at O with one synchronous NVMe
 * Read passthrough command (NVME_IOCTL_IO_CMD) per --max-transfer bytes
 * (default 128 KiB), in the thread that received the request. That is the
 * least any FUSE filesystem on the device does per read: FUSE's round trip
 * and the device command, nothing else (the measured bound of a FUSE
 * daemon's psync readers, issue 22). Reads must be whole LBAs
 * (--lba-bytes, default 4096), else EINVAL; a failed command gives EIO.
 * Writes still drop their bytes.
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <linux/nvme_ioctl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define NR_FILES 16
#define INO_SEQ 2
#define INO_FILE0 16
#define MAX_IO (1U << 20)

static off_t sizes[NR_FILES];
static int async_dio;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char zeros[MAX_IO];

/* --device */
static int dev_fd = -1;
static unsigned int dev_nsid;
static unsigned long long zone_bytes, lba_bytes = 4096, max_xfer = 128 * 1024;

/* dev_read: len bytes of zone z at off into buf; 0 or an errno */
static int dev_read(void *buf, unsigned int z, off_t off, size_t len)
{
	unsigned long long pos = z * zone_bytes + off;
	size_t done, n;
	int ret;

	if (pos % lba_bytes || len % lba_bytes)
		return EINVAL;
	for (done = 0; done < len; done += n) {
		unsigned long long slba = (pos + done) / lba_bytes;
		struct nvme_passthru_cmd c = {
			.opcode = 0x02, /* Read */
			.nsid = dev_nsid,
			.addr = (uintptr_t)buf + done,
			.cdw10 = (uint32_t)slba,
			.cdw11 = (uint32_t)(slba >> 32),
		};

		n = len - done < max_xfer ? len - done : max_xfer;
		c.data_len = n;
		c.cdw12 = n / lba_bytes - 1;
		ret = ioctl(dev_fd, NVME_IOCTL_IO_CMD, &c);
		if (ret)
			return ret < 0 ? errno : EIO;
	}
	return 0;
}

static int null_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID || ino == INO_SEQ) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (ino < INO_FILE0 || ino >= INO_FILE0 + NR_FILES)
		return ENOENT;
	st->st_mode = S_IFREG | 0644;
	st->st_nlink = 1;
	pthread_mutex_lock(&lock);
	st->st_size = sizes[ino - INO_FILE0];
	pthread_mutex_unlock(&lock);
	return 0;
}

static void null_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = { .attr_timeout = 60, .entry_timeout = 60 };
	char *end;
	long i;

	if (parent == FUSE_ROOT_ID && !strcmp(name, "seq")) {
		e.ino = INO_SEQ;
	} else if (parent == INO_SEQ) {
		i = strtol(name, &end, 10);
		if (*end || i < 0 || i >= NR_FILES) {
			fuse_reply_err(req, ENOENT);
			return;
		}
		e.ino = INO_FILE0 + i;
	} else {
		fuse_reply_err(req, ENOENT);
		return;
	}
	null_stat(e.ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void null_getattr(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi)
{
	struct stat st;
	int err = null_stat(ino, &st);

	(void)fi;
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, 60);
}

static void null_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			 int to_set, struct fuse_file_info *fi)
{
	(void)fi;
	if (ino >= INO_FILE0 && ino < INO_FILE0 + NR_FILES &&
	    (to_set & FUSE_SET_ATTR_SIZE)) {
		pthread_mutex_lock(&lock);
		sizes[ino - INO_FILE0] = attr->st_size;
		pthread_mutex_unlock(&lock);
	}
	null_getattr(req, ino, NULL);
}

static void null_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino < INO_FILE0 || ino >= INO_FILE0 + NR_FILES) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* As po2zfs: direct I/O for O_DIRECT and for writers. */
	fi->direct_io = (fi->flags & O_DIRECT) || (fi->flags & O_ACCMODE);
	fi->keep_cache = !fi->direct_io;
	fuse_reply_open(req, fi);
}

static void null_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	off_t end;
	void *buf;
	int err;

	(void)fi;
	pthread_mutex_lock(&lock);
	end = sizes[ino - INO_FILE0];
	pthread_mutex_unlock(&lock);
	if (off >= end)
		size = 0;
	else if ((off_t)size > end - off)
		size = end - off;
	if (size > MAX_IO)
		size = MAX_IO;
	if (dev_fd < 0 || !size) {
		fuse_reply_buf(req, zeros, size);
		return;
	}
	if (posix_memalign(&buf, 4096, size)) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	err = dev_read(buf, ino - INO_FILE0, off, size);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, size);
	free(buf);
}

static void null_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		       size_t size, off_t off, struct fuse_file_info *fi)
{
	off_t *s = &sizes[ino - INO_FILE0];

	(void)buf;
	(void)fi;
	pthread_mutex_lock(&lock);
	if (off + (off_t)size > *s)
		*s = off + (off_t)size;
	pthread_mutex_unlock(&lock);
	fuse_reply_write(req, size);
}

static void null_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = MAX_IO;
	conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_SPLICE_READ);
	if (async_dio && (conn->capable & FUSE_CAP_ASYNC_DIO))
		conn->want |= FUSE_CAP_ASYNC_DIO;
	else
		conn->want &= ~FUSE_CAP_ASYNC_DIO;
}

static const struct fuse_lowlevel_ops null_ops = {
	.init = null_init,
	.lookup = null_lookup,
	.getattr = null_getattr,
	.setattr = null_setattr,
	.open = null_open,
	.read = null_read,
	.write = null_write,
};

int main(int argc, char **argv)
{
	char *fargv[] = { argv[0], "-o", "fsname=p2z_nullfs,subtype=nullfs",
			  NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	static const struct option lopts[] = {
		{ "async-dio", no_argument, NULL, 'a' },
		{ "device", required_argument, NULL, 'd' },
		{ "zone-bytes", required_argument, NULL, 'z' },
		{ "lba-bytes", required_argument, NULL, 'l' },
		{ "max-transfer", required_argument, NULL, 'm' },
		{ 0 }
	};
	const char *dev = NULL;
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	unsigned long long *v;
	int ret = 1, c, id;
	char *end;

	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			async_dio = 1;
			continue;
		case 'd':
			dev = optarg;
			continue;
		case 'z':
			v = &zone_bytes;
			break;
		case 'l':
			v = &lba_bytes;
			break;
		case 'm':
			v = &max_xfer;
			break;
		default:
			goto usage;
		}
		errno = 0;
		*v = strtoull(optarg, &end, 0);
		if (errno || *end || !*v) {
			fprintf(stderr, "%s: bad number: %s\n", argv[0],
				optarg);
			return 2;
		}
	}
	if (optind != argc - 1 || !dev != !zone_bytes || max_xfer % lba_bytes ||
	    zone_bytes % lba_bytes)
		goto usage;
	if (dev) {
		dev_fd = open(dev, O_RDONLY);
		id = dev_fd < 0 ? -1 : ioctl(dev_fd, NVME_IOCTL_ID);
		if (id <= 0) {
			fprintf(stderr, "%s: %s: %s\n", argv[0], dev,
				strerror(errno));
			return 1;
		}
		dev_nsid = id;
	}
	se = fuse_session_new(&args, &null_ops, sizeof(null_ops), NULL);
	if (!se || fuse_set_signal_handlers(se) ||
	    fuse_session_mount(se, argv[optind]))
		return 1;
	cfg = fuse_loop_cfg_create();
	if (cfg) {
		fuse_loop_cfg_set_max_threads(cfg, 16);
		fuse_loop_cfg_set_idle_threads(cfg, 4);
		ret = fuse_session_loop_mt(se, cfg) ? 1 : 0;
		fuse_loop_cfg_destroy(cfg);
	}
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	if (dev_fd >= 0)
		close(dev_fd);
	return ret;
usage:
	fprintf(stderr,
		"usage: %s [--async-dio] [--device NG --zone-bytes N "
		"[--lba-bytes N] [--max-transfer N]] MOUNTPOINT\n",
		argv[0]);
	return 2;
}
