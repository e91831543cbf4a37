// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * From the path a user gives to an NVMe namespace: its generic char device
 * /dev/ngXnY (opened), its namespace id and its disk in sysfs, whose queue
 * limits bound passthrough transfers. Only sysfs and NVME_IOCTL_ID tell
 * which is which: the disk of an npo2 ZNS namespace is hidden (no /dev
 * node), and since 6.x generic devices are named in scan order, not by
 * nsid.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <libnvme.h>

#include "po2zfs/log.h"
#include "po2zfs/nvme_path.h"
#include "po2zfs/sysfs.h"

/*
 * A queue whose limits the driver never set keeps the block layer default
 * BLK_SAFE_MAX_SECTORS (255 sectors): the fallback when sysfs says nothing.
 */
#define P2Z_NVME_SAFE_MAX_BYTES (255U * 512U)

/* @name is @prefix followed by <digits>n<digits>, e.g. ng0n1, nvme1n12. */
static bool p2z_nvme_name_is(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	const char *p;

	if (strncmp(name, prefix, n))
		return false;
	p = name + n;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p++ != 'n' || *p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	return !*p;
}

static int p2z_nvme_nsid(int fd, uint32_t *nsid)
{
	if (nvme_get_nsid(fd, nsid))
		return -errno;
	return *nsid ? 0 : -ENOTTY;
}

/*
 * The sysfs directory of the device that @sysdir (a namespace's disk or
 * generic device) hangs off: the controller, or the subsystem for a
 * multipath head. Disks and generic devices of one namespace share it.
 */
static int p2z_nvme_parent_dir(const char *sysdir, char *parent, size_t size)
{
	char *real = realpath(sysdir, NULL);
	char *dir;
	int ret = 0;

	if (!real)
		return -errno;
	dir = dirname(real);
	if (snprintf(parent, size, "%s", dir) >= (int)size)
		ret = -ENAMETOOLONG;
	free(real);
	return ret;
}

/*
 * The disk of namespace @nsid under @parent, hidden or not: only its queue
 * tells the largest passthrough transfer the kernel accepts.
 */
static int p2z_nvme_find_disk(const char *parent, uint32_t nsid, char *disk,
			      size_t size)
{
	char dir[PATH_MAX];
	struct dirent *de;
	uint64_t id;
	DIR *d;
	int ret = -ENOENT;

	d = opendir(parent);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "nvme", 4))
			continue;
		if (snprintf(dir, sizeof(dir), "%s/%s", parent, de->d_name) >=
		    (int)sizeof(dir))
			continue;
		if (p2z_sysfs_u64(dir, "nsid", &id) || id != nsid ||
		    p2z_sysfs_u64(dir, "queue/max_hw_sectors_kb", &id))
			continue;
		if (snprintf(disk, size, "%s", de->d_name) < (int)size)
			ret = 0;
		break;
	}
	closedir(d);
	return ret;
}

/*
 * Open the generic device under @parent whose namespace is @nsid. Names do
 * not tell: since 6.x the kernel names ngXnY by an instance number that
 * follows the scan order, not the nsid, so each candidate is asked.
 */
static int p2z_nvme_open_ng(const char *parent, uint32_t nsid, int oflags,
			    char *ng, size_t size, int *fdp)
{
	char dir[PATH_MAX], buf[32];
	unsigned int maj, min;
	struct dirent *de;
	struct stat st;
	uint32_t id;
	DIR *d;
	int ret = -ENOENT, fd;

	d = opendir(parent);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!p2z_nvme_name_is(de->d_name, "ng"))
			continue;
		if (snprintf(dir, sizeof(dir), "%s/%s/dev", parent,
			     de->d_name) >= (int)sizeof(dir) ||
		    p2z_sysfs_read(dir, buf, sizeof(buf)) ||
		    sscanf(buf, "%u:%u", &maj, &min) != 2)
			continue;
		if (snprintf(ng, size, "/dev/%s", de->d_name) >= (int)size)
			continue;
		if (stat(ng, &st) || !S_ISCHR(st.st_mode) ||
		    st.st_rdev != makedev(maj, min))
			continue;
		fd = open(ng, oflags | O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		if (!p2z_nvme_nsid(fd, &id) && id == nsid) {
			*fdp = fd;
			ret = 0;
			break;
		}
		close(fd);
	}
	closedir(d);
	return ret;
}

static int p2z_nvme_resolve_ng(const char *path, int oflags,
			       struct p2z_nvme_path *np)
{
	char sysdir[PATH_MAX], parent[PATH_MAX];
	struct stat st;
	int ret;

	np->fd = open(path, oflags | O_CLOEXEC);
	if (np->fd < 0) {
		ret = -errno;
		p2z_log(LOG_ERR, "%s: %s", path, strerror(-ret));
		return ret;
	}
	ret = -ENOTTY;
	if (fstat(np->fd, &st) || !S_ISCHR(st.st_mode) ||
	    p2z_nvme_nsid(np->fd, &np->nsid)) {
		p2z_log(LOG_ERR, "%s: not an NVMe namespace generic device",
			path);
		goto out_close;
	}
	snprintf(np->ng, sizeof(np->ng), "%s", path);
	snprintf(sysdir, sizeof(sysdir), "/sys/dev/char/%u:%u",
		 major(st.st_rdev), minor(st.st_rdev));
	np->disk[0] = '\0';
	if (!p2z_nvme_parent_dir(sysdir, parent, sizeof(parent)))
		p2z_nvme_find_disk(parent, np->nsid, np->disk,
				   sizeof(np->disk));
	return 0;

out_close:
	close(np->fd);
	return ret;
}

/*
 * /dev/nvmeXnY -> the generic device of the same namespace. The block
 * device node may be missing (npo2 zones: the disk is hidden), its sysfs
 * directory is not.
 */
static int p2z_nvme_resolve_blk(const char *path, const char *name, int oflags,
				struct p2z_nvme_path *np)
{
	char sysdir[PATH_MAX], parent[PATH_MAX];
	struct stat st;
	uint64_t id;
	int ret, fd;

	snprintf(sysdir, sizeof(sysdir), "/sys/block/%s", name);
	if (access(sysdir, F_OK)) {
		p2z_log(LOG_ERR, "%s: no such NVMe namespace", path);
		return -ENOENT;
	}
	if (!stat(path, &st) && S_ISBLK(st.st_mode)) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			p2z_log(LOG_ERR, "%s: %s", path, strerror(-ret));
			return ret;
		}
		ret = p2z_nvme_nsid(fd, &np->nsid);
		close(fd);
	} else {
		ret = p2z_sysfs_u64(sysdir, "nsid", &id);
		if (!ret && (!id || id > UINT32_MAX))
			ret = -EINVAL;
		if (!ret)
			np->nsid = (uint32_t)id;
	}
	if (ret) {
		p2z_log(LOG_ERR, "%s: cannot get the namespace id: %s", path,
			strerror(-ret));
		return ret;
	}
	ret = p2z_nvme_parent_dir(sysdir, parent, sizeof(parent));
	if (!ret)
		ret = p2z_nvme_open_ng(parent, np->nsid, oflags, np->ng,
				       sizeof(np->ng), &np->fd);
	if (ret) {
		p2z_log(LOG_ERR,
			"%s: no generic device (ngXnY) for namespace %u: %s",
			path, np->nsid, strerror(-ret));
		return ret;
	}
	snprintf(np->disk, sizeof(np->disk), "%s", name);
	return 0;
}

/*
 * The kernel name of the device whose number is @rdev: the last component
 * of its sysfs directory, /sys/dev/{char,block}/MAJ:MIN.
 */
static int p2z_nvme_rdev_name(const char *sysfs, bool blk, dev_t rdev,
			      char *name, size_t size)
{
	char link[PATH_MAX], *real;
	const char *base;
	int ret = 0;

	if (snprintf(link, sizeof(link), "%s/dev/%s/%u:%u", sysfs,
		     blk ? "block" : "char", major(rdev),
		     minor(rdev)) >= (int)sizeof(link))
		return -ENAMETOOLONG;
	real = realpath(link, NULL);
	if (!real)
		return errno == ENOENT ? -ENODEV : -errno;
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	if (snprintf(name, size, "%s", base) >= (int)size)
		ret = -ENAMETOOLONG;
	free(real);
	return ret;
}

/*
 * /dev/nvmeXnY with no node: the hidden disk of an npo2 namespace. Only a
 * name in /dev itself is taken for one, never a path elsewhere.
 */
static int p2z_nvme_hidden_disk(const char *sysfs, const char *path, char *name,
				size_t size)
{
	char dir[PATH_MAX], sysdir[PATH_MAX], *real;
	const char *base = strrchr(path, '/');
	bool in_dev;

	if (!base || !p2z_nvme_name_is(base + 1, "nvme"))
		return -ENOENT;
	if (snprintf(dir, sizeof(dir), "%.*s", (int)(base - path), path) >=
	    (int)sizeof(dir))
		return -ENAMETOOLONG;
	real = realpath(dir[0] ? dir : "/", NULL);
	in_dev = real && !strcmp(real, "/dev");
	free(real);
	if (!in_dev)
		return -ENOENT;
	if (snprintf(sysdir, sizeof(sysdir), "%s/block/%s", sysfs, base + 1) >=
		    (int)sizeof(sysdir) ||
	    access(sysdir, F_OK))
		return -ENOENT;
	if (snprintf(name, size, "%s", base + 1) >= (int)size)
		return -ENAMETOOLONG;
	return P2Z_NVME_NODE_DISK;
}

int p2z_nvme_path_classify(const char *sysfs, const char *path, char *name,
			   size_t size)
{
	struct stat st;
	bool blk;
	int ret;

	if (stat(path, &st))
		return errno == ENOENT ?
			       p2z_nvme_hidden_disk(sysfs, path, name, size) :
			       -errno;
	if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
		return -ENODEV;
	/* The device number tells what it is, whatever the node's name. */
	blk = S_ISBLK(st.st_mode);
	ret = p2z_nvme_rdev_name(sysfs, blk, st.st_rdev, name, size);
	if (ret)
		return ret;
	if (!p2z_nvme_name_is(name, blk ? "nvme" : "ng"))
		return -ENODEV;
	return blk ? P2Z_NVME_NODE_DISK : P2Z_NVME_NODE_NG;
}

int p2z_nvme_path_probe(const char *path)
{
	char name[NAME_MAX + 1];

	return p2z_nvme_path_classify("/sys", path, name, sizeof(name)) > 0;
}

int p2z_nvme_path_open(const char *path, int oflags, struct p2z_nvme_path *np)
{
	char name[NAME_MAX + 1];
	int ret;

	np->claim_fd = -1;

	ret = p2z_nvme_path_classify("/sys", path, name, sizeof(name));
	if (ret == -ENODEV || ret == -ENOENT) {
		p2z_log(LOG_ERR, "%s: %s", path,
			ret == -ENOENT ?
				"no such device" :
				"not an NVMe namespace (a /dev/ngXnY or /dev/nvmeXnY device)");
		return ret;
	}
	if (ret < 0) {
		p2z_log(LOG_ERR, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (ret == P2Z_NVME_NODE_DISK)
		return p2z_nvme_resolve_blk(path, name, oflags, np);
	return p2z_nvme_resolve_ng(path, oflags, np);
}

/* The disk's node in /dev, if it has one that is that disk: -1 if not. */
static int p2z_nvme_open_disk_excl(const struct p2z_nvme_path *np, int *fdp)
{
	char node[PATH_MAX], sysdir[PATH_MAX], buf[32];
	unsigned int maj, min;
	struct stat st;

	*fdp = -1;
	snprintf(node, sizeof(node), "/dev/%s", np->disk);
	snprintf(sysdir, sizeof(sysdir), "/sys/block/%s/dev", np->disk);
	if (!np->disk[0] || stat(node, &st) || !S_ISBLK(st.st_mode) ||
	    p2z_sysfs_read(sysdir, buf, sizeof(buf)) ||
	    sscanf(buf, "%u:%u", &maj, &min) != 2 ||
	    st.st_rdev != makedev(maj, min))
		return 0;
	*fdp = open(node, O_RDONLY | O_EXCL | O_CLOEXEC);
	return *fdp < 0 ? -errno : 0;
}

int p2z_nvme_path_claim(struct p2z_nvme_path *np)
{
	int ret;

	if (flock(np->fd, LOCK_EX | LOCK_NB)) {
		ret = -errno;
		p2z_log(LOG_ERR, "%s: %s", np->ng,
			ret == -EWOULDBLOCK ?
				"Device or resource busy (in use by another po2zfs)" :
				strerror(-ret));
		return ret == -EWOULDBLOCK ? -EBUSY : ret;
	}
	ret = p2z_nvme_open_disk_excl(np, &np->claim_fd);
	if (ret) {
		p2z_log(LOG_ERR, "/dev/%s: %s", np->disk,
			ret == -EBUSY ?
				"Device or resource busy (mounted, or claimed by another program)" :
				strerror(-ret));
		flock(np->fd, LOCK_UN);
	}
	return ret;
}

void p2z_nvme_path_close(struct p2z_nvme_path *np)
{
	if (np->claim_fd >= 0)
		close(np->claim_fd);
	np->claim_fd = -1;
	close(np->fd);
	np->fd = -1;
}

/*
 * An npo2 namespace's hidden disk may never get its limits set (6.12) and
 * keeps max_hw_sectors_kb = 127: passthrough commands above 124 KiB (4 KiB
 * LBAs) fail with EINVAL there. Buffers that are not page aligned need one
 * segment more than their pages.
 */
uint32_t p2z_nvme_path_dma_mask(const char *sysfs,
				const struct p2z_nvme_path *np)
{
	char dir[PATH_MAX];
	uint64_t mask;

	if (!np->disk[0] ||
	    snprintf(dir, sizeof(dir), "%s/block/%s/queue", sysfs, np->disk) >=
		    (int)sizeof(dir) ||
	    p2z_sysfs_u64(dir, "dma_alignment", &mask) || mask > 4095)
		return 511;
	return (uint32_t)mask;
}

/*
 * max_hw_sectors_kb of 0 says nothing (a queue that never got limits):
 * the block layer's default then. Products are checked before they are
 * made: a huge max_hw_sectors_kb or max_segments must clamp, not wrap.
 */
uint32_t p2z_nvme_path_max_bytes(const char *sysfs,
				 const struct p2z_nvme_path *np)
{
	uint64_t kb, segs, max;
	char dir[PATH_MAX];
	long page = sysconf(_SC_PAGESIZE);

	if (!np->disk[0] ||
	    snprintf(dir, sizeof(dir), "%s/block/%s/queue", sysfs, np->disk) >=
		    (int)sizeof(dir) ||
	    p2z_sysfs_u64(dir, "max_hw_sectors_kb", &kb) || !kb) {
		p2z_log(LOG_WARNING,
			"%s: namespace %u has no disk in sysfs (or no "
			"max_hw_sectors_kb): assuming the block layer's "
			"default transfer limit",
			np->ng, np->nsid);
		return P2Z_NVME_SAFE_MAX_BYTES;
	}
	max = kb > UINT32_MAX / 1024 ? UINT32_MAX : kb * 1024;
	if (!p2z_sysfs_u64(dir, "max_segments", &segs) && segs > 1 &&
	    page > 0 && segs - 1 <= (max - 1) / (uint64_t)page)
		max = (segs - 1) * (uint64_t)page;
	return (uint32_t)max;
}
