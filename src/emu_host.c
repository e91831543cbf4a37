// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The emu device's medium, the image file (dev_emu.c runs the device; the
 * state both share is in emu_priv.h): reads and writes of zone data,
 * syncs, zeroing, and the second, O_DIRECT descriptor.
 *
 * Direct I/O (P2Z_DEV_DIRECT): the zone data goes through a second
 * descriptor of the image opened with O_DIRECT, so that the device costs
 * what a disk costs instead of a memcpy to the page cache; the header and
 * the zone table stay mapped through the first one. Offsets and lengths
 * are whole LBAs, which the open checks the host accepts; a caller's
 * buffer that is not aligned for O_DIRECT goes through an aligned bounce
 * buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "po2zfs/log.h"
#include "emu_priv.h"

static int p2z_emu_pread_full(int fd, void *buf, size_t len, uint64_t ofs)
{
	while (len) {
		ssize_t ret = pread(fd, buf, len, (off_t)ofs);

		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -errno;
		if (!ret)
			return -ENODATA; /* the image shrank under us */
		buf = (char *)buf + ret;
		len -= (size_t)ret;
		ofs += (uint64_t)ret;
	}
	return 0;
}

/* Host I/O errors become -EIO: a host ENOSPC must not read as "zone full". */
int p2z_emu_host_error(struct p2z_emu_dev *e, const char *what, uint64_t ofs,
		       int err)
{
	p2z_log(LOG_ERR, "%s: %s of the image at byte %llu failed: %s",
		e->dev.path ? e->dev.path : "emu", what,
		(unsigned long long)ofs, strerror(-err));
	return -EIO;
}

static bool p2z_emu_buf_is_aligned(const struct p2z_emu_dev *e, const void *buf)
{
	return !e->direct || !((uintptr_t)buf % P2Z_EMU_DIO_ALIGN);
}

/*
 * Read or write zone data. With O_DIRECT, a buffer the host cannot DMA
 * from goes through an aligned copy: the daemon's buffers are aligned, so
 * this costs an allocation only for odd callers (a piece of a po2 view
 * read at an LBA that is not page aligned, a library user).
 */
int p2z_emu_data_read(struct p2z_emu_dev *e, void *buf, size_t len,
		      uint64_t ofs)
{
	void *bounce;
	int ret;

	if (p2z_emu_buf_is_aligned(e, buf))
		return p2z_emu_pread_full(e->data_fd, buf, len, ofs);
	if (posix_memalign(&bounce, P2Z_EMU_DIO_ALIGN, len))
		return -ENOMEM;
	ret = p2z_emu_pread_full(e->data_fd, bounce, len, ofs);
	if (!ret)
		memcpy(buf, bounce, len);
	free(bounce);
	return ret;
}

int p2z_emu_data_write(struct p2z_emu_dev *e, const void *buf, size_t len,
		       uint64_t ofs, int rwf)
{
	void *bounce;
	int ret;

	if (p2z_emu_buf_is_aligned(e, buf))
		return p2z_emu_pwrite_full(e->data_fd, buf, len, ofs, rwf);
	if (posix_memalign(&bounce, P2Z_EMU_DIO_ALIGN, len))
		return -ENOMEM;
	memcpy(bounce, buf, len);
	ret = p2z_emu_pwrite_full(e->data_fd, bounce, len, ofs, rwf);
	free(bounce);
	return ret;
}

/*
 * Make the zone table entry of @zidx durable (a FUA write on an image
 * without a volatile cache): msync() of its page of the mapping.
 */
int p2z_emu_sync_zent(struct p2z_emu_dev *e, uint64_t zidx)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t at = (uintptr_t)&e->zt[zidx] & ~(page - 1);

	if (msync((void *)at, page, MS_SYNC) < 0)
		return p2z_emu_host_error(
			e, "msync", (uint64_t)(at - (uintptr_t)e->map), -errno);
	return 0;
}

int p2z_emu_fdatasync(struct p2z_emu_dev *e)
{
	if (fdatasync(e->fd) < 0)
		return p2z_emu_host_error(e, "flush", 0, -errno);
	return 0;
}

/*
 * Zero a byte range of the image: punch a hole (sparse), else write zeros
 * where the filesystem cannot punch.
 */
int p2z_emu_zero_range(int fd, uint64_t ofs, uint64_t len)
{
	static const char zeros[65536];
	int ret;

	if (!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		       (off_t)ofs, (off_t)len))
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS)
		return -errno;
	while (len) {
		size_t n = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);

		ret = p2z_emu_pwrite_full(fd, zeros, n, ofs, 0);
		if (ret)
			return ret;
		ofs += n;
		len -= n;
	}
	return 0;
}

#ifdef STATX_DIOALIGN
/* The file offset alignment of direct I/O on @fd, or 0 if not known. */
static uint32_t p2z_emu_dio_offset_align(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) < 0 ||
	    !(stx.stx_mask & STATX_DIOALIGN))
		return 0;
	/* 0 with the bit set: no direct I/O on this file at all. */
	return stx.stx_dio_offset_align ? stx.stx_dio_offset_align : UINT32_MAX;
}
#else
static uint32_t p2z_emu_dio_offset_align(int fd)
{
	(void)fd;
	return 0;
}
#endif

/*
 * Check that the host takes direct I/O of one LBA. statx() says what the
 * filesystem needs (Linux 6.1 and later); without it, a test read must do,
 * and it proves less: reading a hole needs no alignment on some
 * filesystems.
 */
static int p2z_emu_probe_direct(int dfd, const struct p2z_emu_geom *g,
				char *why, size_t len)
{
	uint32_t align = p2z_emu_dio_offset_align(dfd);
	void *buf;
	ssize_t n;
	int err;

	if (align == UINT32_MAX)
		return p2z_emu_why(
			why, len, -EINVAL,
			"direct: the filesystem of the image does not support O_DIRECT");
	if (align > g->lba_bytes)
		return p2z_emu_why(
			why, len, -EINVAL,
			"direct: the image's %u-byte LBAs are smaller than the %u-byte blocks direct I/O needs here: use an image with %u-byte LBAs, or no direct",
			g->lba_bytes, align, align);

	if (posix_memalign(&buf, P2Z_EMU_DIO_ALIGN, g->lba_bytes))
		return p2z_emu_why(why, len, -ENOMEM, "out of memory");
	do
		n = pread(dfd, buf, g->lba_bytes, (off_t)g->data_ofs);
	while (n < 0 && errno == EINTR);
	err = n < 0 ? errno : 0;
	free(buf);
	if (err == EINVAL)
		return p2z_emu_why(
			why, len, -EINVAL,
			"direct: the host refuses direct I/O of %u-byte blocks here (its disk's block is larger): use an image with 4096-byte LBAs, or no direct",
			g->lba_bytes);
	if (err)
		return p2z_emu_why(why, len, -err, "direct: test read: %s",
				   strerror(err));
	return 0;
}

/*
 * Open the image a second time, with O_DIRECT, for the zone data. The
 * descriptor must reach the file the first one holds (and locks): a path
 * renamed over meanwhile is refused.
 */
int p2z_emu_open_direct(const char *path, int fd, const struct p2z_emu_geom *g,
			bool rdonly, int *dfdp, char *why, size_t len)
{
	struct stat a, b;
	int dfd, ret;

	dfd = open(path, (rdonly ? O_RDONLY : O_RDWR) | O_DIRECT | O_CLOEXEC);
	if (dfd < 0 && errno == EINVAL)
		return p2z_emu_why(
			why, len, -EINVAL,
			"direct: the filesystem of the image does not support O_DIRECT");
	if (dfd < 0)
		return p2z_emu_why(why, len, -errno,
				   "direct: opening the image again: %s",
				   strerror(errno));
	if (fstat(fd, &a) < 0 || fstat(dfd, &b) < 0)
		ret = p2z_emu_why(why, len, -errno, "direct: %s",
				  strerror(errno));
	else if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		ret = p2z_emu_why(
			why, len, -ESTALE,
			"direct: the image was replaced while opened");
	else
		ret = p2z_emu_probe_direct(dfd, g, why, len);
	if (ret) {
		close(dfd);
		return ret;
	}
	*dfdp = dfd;
	return 0;
}