// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * NVMe device path resolution and the queue limits read from sysfs, on a
 * fake sysfs tree built from the input in a temporary directory. Input:
 * lines (fields apart by '\n'); a missing field leaves its file out.
 *   0 name of the char device 1:3 (/dev/null's number), e.g. ng0n1
 *   1 name of a disk in block/, e.g. nvme0n1 (it has no /dev node)
 *   2 nsid                        6 queue/max_sectors_kb (zbd)
 *   3 queue/max_hw_sectors_kb     7 queue/logical_block_size
 *   4 queue/max_segments          8 queue/zoned
 *   5 queue/dma_alignment         9 queue/chunk_sectors
 * The limits are checked against a model of what the kernel's attributes
 * mean: decimal digits only, products that clamp instead of wrapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "po2zfs/nvme_path.h"
#ifdef P2Z_HAVE_ZBD
#include "po2zfs/dev_zbd.h"
#endif

#include "fuzz_common.h"

#define FUZZ_NR_FIELDS 10
#define FUZZ_SAFE_MAX (255U * 512U)

struct fuzz_field {
	const char *val; /* NULL: missing */
	size_t len;
};

static char fuzz_top[64];

static int fuzz_rm_one(const char *path, const struct stat *st, int type,
		       struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void fuzz_write(const char *path, const struct fuzz_field *f)
{
	int fd;

	if (!f->val)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, f->val, f->len) < 0 || write(fd, "\n", 1) < 0)
		fprintf(stderr, "fuzz: cannot write %s\n", path);
	close(fd);
}

/* A name that makes one directory entry, else NULL. */
static char *fuzz_name(const struct fuzz_field *f, char *buf, size_t size)
{
	if (!f->val || !f->len || f->len >= size ||
	    memchr(f->val, '/', f->len) || memchr(f->val, '\0', f->len))
		return NULL;
	memcpy(buf, f->val, f->len);
	buf[f->len] = '\0';
	if (!strcmp(buf, ".") || !strcmp(buf, ".."))
		return NULL;
	return buf;
}

/* What the kernel's attribute says: the value if all digits, else -1. */
static int fuzz_model_u64(const struct fuzz_field *f, uint64_t *v)
{
	char buf[64]; /* as p2z_sysfs_u64() reads it: 63 bytes at most */
	size_t n = f->len < sizeof(buf) - 1 ? f->len : sizeof(buf) - 1;
	unsigned __int128 val = 0;
	const char *p;

	if (!f->val)
		return -1;
	memcpy(buf, f->val, n);
	if (n < sizeof(buf) - 1)
		buf[n++] = '\n';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	if (!buf[0])
		return -1;
	for (p = buf; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		val = val * 10 + (unsigned int)(*p - '0');
		if (val > UINT64_MAX)
			return -1;
	}
	*v = (uint64_t)val;
	return 0;
}

static uint32_t fuzz_model_max_bytes(const struct fuzz_field *fl)
{
	uint64_t kb, segs, page = (uint64_t)sysconf(_SC_PAGESIZE);
	unsigned __int128 max, seg_max;

	if (fuzz_model_u64(&fl[3], &kb) || !kb)
		return FUZZ_SAFE_MAX;
	max = (unsigned __int128)kb * 1024;
	if (max > UINT32_MAX)
		max = UINT32_MAX;
	if (!fuzz_model_u64(&fl[4], &segs) && segs > 1) {
		seg_max = (unsigned __int128)(segs - 1) * page;
		if (seg_max < max)
			max = seg_max;
	}
	return (uint32_t)max;
}

static void fuzz_build(const char *sys, const struct fuzz_field *fl,
		       const char *ng, const char *disk)
{
	static const char *const attrs[] = {
		[3] = "max_hw_sectors_kb",  [4] = "max_segments",
		[5] = "dma_alignment",	    [6] = "max_sectors_kb",
		[7] = "logical_block_size", [8] = "zoned",
		[9] = "chunk_sectors",
	};
	char path[PATH_MAX], link[PATH_MAX];
	int i;

	snprintf(path, sizeof(path), "%s/devices/nvme0", sys);
	mkdir(sys, 0755);
	snprintf(link, sizeof(link), "%s/devices", sys);
	mkdir(link, 0755);
	mkdir(path, 0755);
	snprintf(link, sizeof(link), "%s/dev", sys);
	mkdir(link, 0755);
	snprintf(link, sizeof(link), "%s/dev/char", sys);
	mkdir(link, 0755);
	snprintf(link, sizeof(link), "%s/block", sys);
	mkdir(link, 0755);
	if (ng) {
		snprintf(path, sizeof(path), "%s/devices/nvme0/%s", sys, ng);
		mkdir(path, 0755);
		snprintf(link, sizeof(link), "%s/dev/char/1:3", sys);
		snprintf(path, sizeof(path), "../../devices/nvme0/%s", ng);
		if (symlink(path, link))
			return;
	}
	if (!disk)
		return;
	snprintf(path, sizeof(path), "%s/devices/nvme0/%s", sys, disk);
	mkdir(path, 0755);
	snprintf(link, sizeof(link), "%s/block/%s", sys, disk);
	snprintf(path, sizeof(path), "../devices/nvme0/%s", disk);
	if (symlink(path, link))
		return;
	snprintf(path, sizeof(path), "%s/block/%s/nsid", sys, disk);
	fuzz_write(path, &fl[2]);
	snprintf(path, sizeof(path), "%s/block/%s/queue", sys, disk);
	mkdir(path, 0755);
	for (i = 3; i < FUZZ_NR_FIELDS; i++) {
		snprintf(path, sizeof(path), "%s/block/%s/queue/%s", sys, disk,
			 attrs[i]);
		fuzz_write(path, &fl[i]);
	}
}

static void fuzz_classify(const char *sys, const char *ng, const char *disk)
{
	char name[NAME_MAX + 1], dev[PATH_MAX];
	struct stat st;
	int ret;

	ret = p2z_nvme_path_classify(sys, "/dev/null", name, sizeof(name));
	P2Z_FUZZ_ASSERT(ret < 0 || ret == P2Z_NVME_NODE_NG);
	if (ret > 0)
		P2Z_FUZZ_ASSERT(ng && !strcmp(name, ng));
	if (!disk)
		return;
	snprintf(dev, sizeof(dev), "/dev/%s", disk);
	if (!lstat(dev, &st))
		return;
	ret = p2z_nvme_path_classify(sys, dev, name, sizeof(name));
	P2Z_FUZZ_ASSERT(ret < 0 || ret == P2Z_NVME_NODE_DISK);
	if (ret > 0)
		P2Z_FUZZ_ASSERT(!strcmp(name, disk));
}

static void fuzz_limits(const char *sys, const struct fuzz_field *fl,
			const char *disk)
{
	struct p2z_nvme_path np;
	uint32_t got, want;
	uint64_t mask;

	memset(&np, 0, sizeof(np));
	np.fd = -1;
	np.claim_fd = -1;
	if (disk)
		snprintf(np.disk, sizeof(np.disk), "%s", disk);
	got = p2z_nvme_path_max_bytes(sys, &np);
	want = disk ? fuzz_model_max_bytes(fl) : FUZZ_SAFE_MAX;
	P2Z_FUZZ_ASSERT(got);
	P2Z_FUZZ_ASSERT(got == want);
	got = p2z_nvme_path_dma_mask(sys, &np);
	want = !disk || fuzz_model_u64(&fl[5], &mask) || mask > 4095 ?
		       511 :
		       (uint32_t)mask;
	P2Z_FUZZ_ASSERT(got == want);
}

#ifdef P2Z_HAVE_ZBD
static void fuzz_zbd_limits(const char *sys, const struct fuzz_field *fl,
			    const char *disk)
{
	uint64_t kb, lbs;
	uint32_t got, want = 4U << 20;

	if (fuzz_model_u64(&fl[7], &lbs) || (lbs != 512 && lbs != 4096))
		lbs = 512;
	if (!fuzz_model_u64(&fl[6], &kb) && kb && kb < (4U << 20) / 1024)
		want = (uint32_t)kb * 1024;
	want -= want % lbs;
	if (!want)
		want = (uint32_t)lbs;
	got = p2z_zbd_max_xfer(sys, disk ? disk : "none", (uint32_t)lbs);
	P2Z_FUZZ_ASSERT(got && got % lbs == 0);
	if (disk)
		P2Z_FUZZ_ASSERT(got == want);
}
#else
static void fuzz_zbd_limits(const char *sys, const struct fuzz_field *fl,
			    const char *disk)
{
	(void)sys;
	(void)fl;
	(void)disk;
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_field fl[FUZZ_NR_FIELDS] = { { NULL, 0 } };
	char sys[PATH_MAX], ngbuf[NAME_MAX], diskbuf[NAME_MAX];
	const char *p = (const char *)data, *end = p + size, *nl;
	char *ng, *disk;
	int i;

	if (size > 4096)
		return 0;
	if (!fuzz_top[0]) {
		const char *tmp = getenv("TMPDIR");

		snprintf(fuzz_top, sizeof(fuzz_top), "%.40s/p2zfuzzXXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		P2Z_FUZZ_ASSERT(mkdtemp(fuzz_top));
	}
	for (i = 0; i < FUZZ_NR_FIELDS && p <= end && size; i++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		fl[i].val = p;
		fl[i].len = (size_t)((nl ? nl : end) - p);
		if (!nl)
			break;
		p = nl + 1;
	}
	ng = fuzz_name(&fl[0], ngbuf, sizeof(ngbuf));
	disk = fuzz_name(&fl[1], diskbuf, sizeof(diskbuf));
	snprintf(sys, sizeof(sys), "%s/sys", fuzz_top);
	nftw(sys, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	fuzz_build(sys, fl, ng, disk);
	fuzz_classify(sys, ng, disk);
	fuzz_limits(sys, fl, disk);
	fuzz_zbd_limits(sys, fl, disk);
	return 0;
}
