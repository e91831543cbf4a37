// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * p2z_vm_dev - drive one real zoned device through po2zfs' device layer
 * (p2z_dev_*) and check every answer exactly. Run in the device-test guest
 * on QEMU ZNS namespaces set up with max_open 3, max_active 4, ZASL 128 KiB.
 *
 *   p2z_vm_dev DEV BACKEND|auto ZONE_BYTES CAP_BYTES EXPECT_FILE [geometry]
 *
 * With "geometry", only the limits and one report of every zone (which
 * pages through as many Zone Management Receives as it takes) are checked;
 * no zone is touched.
 *
 * Also checks that writes and appends with P2Z_IO_FUA reach the backend
 * (which has FUA of its own: no flush from the dispatcher) and read back
 * exact, and the volatile write cache the backend reports: QEMU's NVMe
 * controller has one (VWC), a block device has what its queue's
 * write_cache says.
 *
 * Also drives the asynchronous interface (p2z_dev_queue_*): writes, reads
 * many in flight, a FUA append, exact bytes.
 *
 * Uses zones 0..3 (they are reset), leaves zone 2 holding known data and
 * writes the same bytes to EXPECT_FILE, then prints
 *   P2Z-RAW slba=<first LBA of zone 2> bytes=<n>
 * so that the caller can compare them with a raw read and the device's own
 * zone report. Prints one line per check; exit 0 only if all passed.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "po2zfs/dev.h"
#include "po2zfs/sysfs.h"

/**
 * struct vm_test - one run
 * @dev: device under test
 * @nvme: backend is nvme (errors carry the NVMe status), else zbd
 * @cap_lba: expected capacity of every zone
 * @fails: failed checks
 */
struct vm_test {
	struct p2z_dev *dev;
	bool nvme;
	uint64_t cap_lba;
	int fails;
};

#define CHECK(t, cond, ...)                            \
	do {                                           \
		if (cond) {                            \
			printf("  ok   " __VA_ARGS__); \
		} else {                               \
			(t)->fails++;                  \
			printf("  FAIL " __VA_ARGS__); \
		}                                      \
		printf("\n");                          \
	} while (0)

/* Bytes that tell zone, offset and pass apart. */
static void fill(uint8_t *buf, size_t len, uint64_t zidx, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t x = (zidx << 40) ^ i ^ ((uint64_t)seed << 56);

		x *= 0x9e3779b97f4a7c15ULL;
		buf[i] = (uint8_t)(x >> 56);
	}
}

/*
 * A buffer 16 bytes past a page boundary: FUSE hands write data right after
 * its request header, never page aligned.
 */
static uint8_t *buf_alloc(size_t len)
{
	/* C11: the size is a multiple of the alignment. */
	uint8_t *p = aligned_alloc(4096, (len + 2 * 4096 - 1) / 4096 * 4096);

	if (!p) {
		perror("aligned_alloc");
		exit(1);
	}
	return p + 16;
}

static void buf_free(uint8_t *p)
{
	free(p - 16);
}

static void check_zone(struct vm_test *t, uint64_t zidx, uint8_t cond,
		       uint64_t wp_ofs_lba)
{
	uint64_t start = zidx * t->dev->info.zone_lba;
	struct p2z_zone_info zi = { 0 };
	int ret;

	ret = p2z_dev_report_zones(t->dev, zidx, 1, &zi);
	CHECK(t, ret == 1 && zi.cond == cond && zi.wp_lba == start + wp_ofs_lba,
	      "zone %" PRIu64 " %s, wp +%" PRIu64 " (got %d: %s, wp +%" PRIu64
	      ")",
	      zidx, p2z_zone_cond_name(cond), wp_ofs_lba, ret,
	      p2z_zone_cond_name(zi.cond), zi.wp_lba - start);
}

static void check_mgmt(struct vm_test *t, uint64_t zidx, enum p2z_zone_op op,
		       int expect)
{
	static const char *const name[] = { "reset", "open", "close",
					    "finish" };
	int ret = p2z_dev_zone_mgmt(t->dev, zidx, op);

	CHECK(t, ret == expect, "%s zone %" PRIu64 ": %d (got %d)", name[op],
	      zidx, expect, ret);
}

static void test_geometry(struct vm_test *t, uint64_t zone_bytes)
{
	const struct p2z_dev_info *in = &t->dev->info;
	struct p2z_zone_info *zi;
	uint64_t i, bad = 0;
	int ret;

	printf("geometry: lba %u, %" PRIu64 " zones of %" PRIu64
	       " LBAs, max open %u, active %u, xfer %u, append %u\n",
	       in->lba_bytes, in->nr_zones, in->zone_lba, in->max_open,
	       in->max_active, in->max_xfer_bytes, in->max_append_bytes);
	CHECK(t, in->zone_lba * in->lba_bytes == zone_bytes,
	      "zone size %" PRIu64, zone_bytes);
	CHECK(t, in->max_open == 3 && in->max_active == 4,
	      "max open 3, max active 4");
	if (t->nvme)
		CHECK(t, in->max_append_bytes <= 128 * 1024,
		      "zone append limit within ZASL (128 KiB)");
	zi = calloc(in->nr_zones + 1, sizeof(*zi));
	ret = p2z_dev_report_zones(t->dev, 0, in->nr_zones + 1, zi);
	for (i = 0; ret > 0 && i < (uint64_t)ret; i++)
		if (zi[i].start_lba != i * in->zone_lba ||
		    zi[i].cap_lba != t->cap_lba ||
		    zi[i].type != P2Z_ZONE_TYPE_SEQ)
			bad++;
	CHECK(t, ret == (int)in->nr_zones && !bad,
	      "report all zones: %d, %" PRIu64 " with a bad start/cap/type",
	      ret, bad);
	ret = p2z_dev_report_zones(t->dev, 1, 2, zi);
	CHECK(t, ret == 2 && zi[0].start_lba == in->zone_lba,
	      "report 2 zones from zone 1 (got %d)", ret);
	ret = p2z_dev_report_zones(t->dev, in->nr_zones, 1, zi);
	CHECK(t, ret == 0, "report past the last zone: 0 (got %d)", ret);
	free(zi);
}

/* Appends of varied sizes into zone @zidx; returns bytes appended. */
static size_t append_all(struct vm_test *t, uint64_t zidx, const uint8_t *w,
			 size_t total)
{
	uint32_t lbs = t->dev->info.lba_bytes;
	uint64_t start = zidx * t->dev->info.zone_lba, lba = 0;
	size_t done = 0, n;
	ssize_t ret;
	int i;

	for (i = 0; done < total; i++) {
		n = (size_t)(i % 7 + 1) * 9 * lbs;
		if (n > total - done)
			n = total - done;
		ret = p2z_dev_append(t->dev, zidx, w + done, n, &lba, 0);
		if (ret != (ssize_t)n || lba != start + done / lbs) {
			printf("  append %d of %zu bytes: got %zd at LBA %" PRIu64
			       ", expected LBA %" PRIu64 "\n",
			       i, n, ret, lba, start + done / lbs);
			break;
		}
		done += n;
	}
	return done;
}

static void test_write_read(struct vm_test *t)
{
	const struct p2z_dev_info *in = &t->dev->info;
	uint32_t lbs = in->lba_bytes;
	size_t total = 1024 * 1024 + 5 * lbs, wlen = 300 * 1024;
	uint64_t zofs = in->zone_lba * lbs, lba;
	uint8_t *w = buf_alloc(total + wlen), *r = buf_alloc(total + wlen);
	ssize_t ret;

	fill(w, total + wlen, 1, 1);
	check_mgmt(t, 1, P2Z_ZONE_OP_RESET, 0);
	check_zone(t, 1, P2Z_ZONE_COND_EMPTY, 0);
	CHECK(t, append_all(t, 1, w, total) == total,
	      "appends of %zu bytes in all, each landed at the write pointer",
	      total);
	check_zone(t, 1, P2Z_ZONE_COND_IMP_OPEN, total / lbs);
	ret = p2z_dev_pwrite(t->dev, w + total, wlen, zofs + total, 0);
	CHECK(t, ret == (ssize_t)wlen, "write %zu bytes at the wp (got %zd)",
	      wlen, ret);
	check_zone(t, 1, P2Z_ZONE_COND_IMP_OPEN, (total + wlen) / lbs);
	/* The block layer turns Zone Invalid Write into a plain EIO. */
	ret = p2z_dev_pwrite(t->dev, w, lbs, zofs + total + wlen + lbs, 0);
	CHECK(t, ret == (t->nvme ? -EILSEQ : -EIO),
	      "write past the wp: %s (got %zd)", t->nvme ? "EILSEQ" : "EIO",
	      ret);

	memset(r, 0, total + wlen);
	ret = p2z_dev_pread(t->dev, r, total + wlen, zofs);
	CHECK(t, ret == (ssize_t)(total + wlen) && !memcmp(r, w, total + wlen),
	      "read back %zu bytes in one call (got %zd)", total + wlen, ret);
	memset(r, 0, total + wlen);
	ret = t->dev->ops->pread(t->dev, r, total + wlen, zofs);
	CHECK(t, ret == (ssize_t)(total + wlen) && !memcmp(r, w, total + wlen),
	      "one backend read of %zu bytes (got %zd)", total + wlen, ret);
	ret = t->dev->ops->pread(t->dev, r, in->max_xfer_bytes, zofs);
	CHECK(t, ret == in->max_xfer_bytes && !memcmp(r, w, in->max_xfer_bytes),
	      "one backend read of max_xfer_bytes (got %zd)", ret);
	ret = p2z_dev_pread(t->dev, r, 3 * lbs, zofs + 77 * lbs);
	CHECK(t, ret == 3 * (ssize_t)lbs && !memcmp(r, w + 77 * lbs, 3 * lbs),
	      "read 3 LBAs at LBA 77 of the zone (got %zd)", ret);
	ret = p2z_dev_pread(t->dev, r, lbs, in->nr_zones * in->zone_lba * lbs);
	CHECK(t, ret == -EINVAL, "read past the end: EINVAL (got %zd)", ret);
	ret = t->dev->ops->append(t->dev, 1, w, in->max_append_bytes + lbs,
				  &lba, 0);
	CHECK(t, ret == -EINVAL,
	      "backend append above its limit: EINVAL (got %zd)", ret);
	ret = t->dev->ops->append(t->dev, in->nr_zones, w, lbs, &lba, 0);
	CHECK(t, ret == -EINVAL,
	      "backend append to zone nr_zones: EINVAL "
	      "(got %zd)",
	      ret);
	CHECK(t, p2z_dev_flush(t->dev) == 0, "flush");

	check_mgmt(t, 1, P2Z_ZONE_OP_FINISH, 0);
	check_zone(t, 1, P2Z_ZONE_COND_FULL, t->cap_lba);
	ret = p2z_dev_append(t->dev, 1, w, lbs, &lba, 0);
	CHECK(t, ret == (t->nvme ? -ENOSPC : -EIO),
	      "append to a full zone: %s (got %zd)", t->nvme ? "ENOSPC" : "EIO",
	      ret);
	check_mgmt(t, 1, P2Z_ZONE_OP_RESET, 0);
	check_zone(t, 1, P2Z_ZONE_COND_EMPTY, 0);
	buf_free(w);
	buf_free(r);
}

/*
 * The volatile write cache the backend found: QEMU's NVMe controller sets
 * VWC; for a block device, the queue's write_cache ("write back").
 */
static void test_volatile_cache(struct vm_test *t, const char *path)
{
	char attr[96], mode[32] = "";
	bool expect = true;
	struct stat st;

	if (!t->nvme && !stat(path, &st) && S_ISBLK(st.st_mode)) {
		snprintf(attr, sizeof(attr),
			 "/sys/dev/block/%u:%u/queue/write_cache",
			 major(st.st_rdev), minor(st.st_rdev));
		if (!p2z_sysfs_read(attr, mode, sizeof(mode)))
			expect = strcmp(mode, "write through") != 0;
	}
	printf("volatile_cache: %d (%s)\n", t->dev->info.volatile_cache,
	       t->nvme ? "NVMe VWC" : mode);
	CHECK(t, t->dev->info.volatile_cache == expect,
	      "volatile write cache: %d (got %d)", expect,
	      t->dev->info.volatile_cache);
}

/*
 * A FUA append and a FUA write into zone 1: both land where they should,
 * read back exact, the backend took FUA itself (no flush was sent) and
 * both count as FUA writes.
 */
static void test_fua(struct vm_test *t)
{
	const struct p2z_dev_info *in = &t->dev->info;
	uint32_t lbs = in->lba_bytes;
	size_t alen = 9 * lbs, wlen = 300 * 1024;
	uint64_t start = in->zone_lba, lba = 0;
	uint8_t *w = buf_alloc(alen + wlen), *r = buf_alloc(alen + wlen);
	uint64_t flushes, fuas;
	ssize_t ret;

	CHECK(t, t->dev->ops->fua, "backend %s has FUA", t->dev->ops->name);
	fill(w, alen + wlen, 1, 3);
	check_mgmt(t, 1, P2Z_ZONE_OP_RESET, 0);
	flushes = t->dev->stats[P2Z_DEV_STAT_FLUSH].nr;
	fuas = t->dev->stats[P2Z_DEV_STAT_FUA].nr;
	ret = p2z_dev_append(t->dev, 1, w, alen, &lba, P2Z_IO_FUA);
	CHECK(t, ret == (ssize_t)alen && lba == start,
	      "FUA append of %zu bytes at LBA %" PRIu64 " (got %zd at %" PRIu64
	      ")",
	      alen, start, ret, lba);
	ret = p2z_dev_pwrite(t->dev, w + alen, wlen, (start * lbs) + alen,
			     P2Z_IO_FUA);
	CHECK(t, ret == (ssize_t)wlen, "FUA write of %zu bytes (got %zd)", wlen,
	      ret);
	check_zone(t, 1, P2Z_ZONE_COND_IMP_OPEN, (alen + wlen) / lbs);
	CHECK(t,
	      t->dev->stats[P2Z_DEV_STAT_FUA].nr == fuas + 2 &&
		      t->dev->stats[P2Z_DEV_STAT_FLUSH].nr == flushes,
	      "2 FUA writes counted, no flush sent (fua +%" PRIu64
	      ", flush +%" PRIu64 ")",
	      t->dev->stats[P2Z_DEV_STAT_FUA].nr - fuas,
	      t->dev->stats[P2Z_DEV_STAT_FLUSH].nr - flushes);
	memset(r, 0, alen + wlen);
	ret = p2z_dev_pread(t->dev, r, alen + wlen, start * lbs);
	CHECK(t, ret == (ssize_t)(alen + wlen) && !memcmp(r, w, alen + wlen),
	      "FUA data read back exact (got %zd)", ret);
	check_mgmt(t, 1, P2Z_ZONE_OP_RESET, 0);
	buf_free(w);
	buf_free(r);
}

/* end_io of test_async: counts completions */
static void async_end_io(struct p2z_io *io)
{
	(*(unsigned int *)io->private)++;
}

/* Submit @io and wait for it alone; return its result. */
static ssize_t async_one(struct p2z_dev_queue *q, struct p2z_io *io,
			 unsigned int *calls)
{
	io->end_io = async_end_io;
	io->private = calls;
	if (p2z_dev_submit(q, io))
		return -EBADE;
	while (p2z_dev_queue_inflight(q))
		p2z_dev_queue_reap(q, 1);
	return io->ret;
}

/*
 * The asynchronous interface on the real backend, zone 1: 4 writes of
 * 128 KiB one after the other (the last with FUA), then 32 reads of
 * 16 KiB all submitted at once on a queue of depth 16 and one read of the
 * whole 512 KiB (split into pieces in flight together), exact bytes; then
 * a FUA append from an unaligned buffer that lands at the write pointer.
 */
static void test_async(struct vm_test *t)
{
	const struct p2z_dev_info *in = &t->dev->info;
	uint32_t lbs = in->lba_bytes;
	size_t wlen = 512 * 1024, piece = 16 * 1024, alen = 9 * lbs, i;
	uint64_t start = in->zone_lba, fuas, flushes;
	uint8_t *w = aligned_alloc(4096, wlen), *r = aligned_alloc(4096, wlen);
	uint8_t *a = buf_alloc(alen);
	struct p2z_dev_queue *q = NULL;
	struct pollfd pfd = { .events = POLLIN };
	struct p2z_io io[32];
	unsigned int calls = 0;
	int ret, ok = 1;

	ret = p2z_dev_queue_open(t->dev, 16, &q);
	CHECK(t, !ret, "async queue of depth 16 (got %d)", ret);
	if (ret || !w || !r)
		goto out;
	fill(w, wlen, 1, 5);
	fill(a, alen, 1, 6);
	check_mgmt(t, 1, P2Z_ZONE_OP_RESET, 0);
	fuas = t->dev->stats[P2Z_DEV_STAT_FUA].nr;
	flushes = t->dev->stats[P2Z_DEV_STAT_FLUSH].nr;
	for (i = 0; i < 4; i++) {
		io[0] = (struct p2z_io){ .op = P2Z_IO_WRITE,
					 .buf = w + i * wlen / 4,
					 .len = wlen / 4,
					 .ofs = start * lbs + i * wlen / 4,
					 .flags = i == 3 ? P2Z_IO_FUA : 0 };
		if (async_one(q, &io[0], &calls) != (ssize_t)wlen / 4)
			ok = 0;
	}
	CHECK(t, ok && calls == 4, "4 async writes of %zu bytes (calls %u)",
	      wlen / 4, calls);
	check_zone(t, 1, P2Z_ZONE_COND_IMP_OPEN, wlen / lbs);

	memset(r, 0, wlen);
	calls = 0;
	for (i = 0; i < 32; i++) {
		io[i] = (struct p2z_io){ .op = P2Z_IO_READ,
					 .buf = r + i * piece,
					 .len = piece,
					 .ofs = start * lbs + i * piece,
					 .end_io = async_end_io,
					 .private = &calls };
		if (p2z_dev_submit(q, &io[i]))
			ok = 0;
	}
	pfd.fd = p2z_dev_queue_fd(q);
	ret = poll(&pfd, 1, 10000);
	CHECK(t, ret == 1, "queue's eventfd readable (got %d)", ret);
	while (p2z_dev_queue_inflight(q))
		p2z_dev_queue_reap(q, 1);
	for (i = 0; i < 32; i++)
		if (io[i].ret != (ssize_t)piece)
			ok = 0;
	CHECK(t, ok && calls == 32 && !memcmp(r, w, wlen),
	      "32 async reads of %zu bytes at QD16, exact (calls %u)", piece,
	      calls);
	memset(r, 0, wlen);
	io[0] = (struct p2z_io){
		.op = P2Z_IO_READ, .buf = r, .len = wlen, .ofs = start * lbs
	};
	calls = 0;
	CHECK(t,
	      async_one(q, &io[0], &calls) == (ssize_t)wlen && calls == 1 &&
		      !memcmp(r, w, wlen),
	      "async read of %zu bytes, split, exact (got %zd)", wlen,
	      io[0].ret);

	io[0] = (struct p2z_io){ .op = P2Z_IO_APPEND,
				 .buf = a,
				 .len = alen,
				 .zidx = 1,
				 .flags = P2Z_IO_FUA };
	calls = 0;
	CHECK(t,
	      async_one(q, &io[0], &calls) == (ssize_t)alen &&
		      io[0].lba == start + wlen / lbs,
	      "async FUA append of %zu bytes at LBA %" PRIu64
	      " (got %zd at %" PRIu64 ")",
	      alen, start + wlen / lbs, io[0].ret, io[0].lba);
	CHECK(t,
	      p2z_dev_pread(t->dev, r, alen, (start * lbs) + wlen) ==
			      (ssize_t)alen &&
		      !memcmp(r, a, alen),
	      "async append read back exact");
	CHECK(t,
	      t->dev->stats[P2Z_DEV_STAT_FUA].nr == fuas + 2 &&
		      t->dev->stats[P2Z_DEV_STAT_FLUSH].nr == flushes,
	      "2 async FUA writes counted, no flush sent (fua +%" PRIu64
	      ", flush +%" PRIu64 ")",
	      t->dev->stats[P2Z_DEV_STAT_FUA].nr - fuas,
	      t->dev->stats[P2Z_DEV_STAT_FLUSH].nr - flushes);
	check_zone(t, 1, P2Z_ZONE_COND_IMP_OPEN, (wlen + alen) / lbs);
	/* off the write pointer: the device's errno (EIO through the block
	 * layer, as for the synchronous write) */
	io[0] = (struct p2z_io){
		.op = P2Z_IO_WRITE, .buf = w, .len = lbs, .ofs = start * lbs
	};
	CHECK(t, async_one(q, &io[0], &calls) == (t->nvme ? -EILSEQ : -EIO),
	      "async write off the write pointer: %s (got %zd)",
	      t->nvme ? "EILSEQ" : "EIO", io[0].ret);
	check_mgmt(t, 1, P2Z_ZONE_OP_RESET, 0);
out:
	p2z_dev_queue_close(q);
	free(w);
	free(r);
	buf_free(a);
}

/* Open and active limits: max_open 3, max_active 4 on every namespace. */
static void test_open_limits(struct vm_test *t)
{
	uint64_t z;

	for (z = 0; z < 4; z++)
		check_mgmt(t, z, P2Z_ZONE_OP_RESET, 0);
	for (z = 0; z < 3; z++)
		check_mgmt(t, z, P2Z_ZONE_OP_OPEN, 0);
	check_zone(t, 0, P2Z_ZONE_COND_EXP_OPEN, 0);
	check_mgmt(t, 3, P2Z_ZONE_OP_OPEN, -ETOOMANYREFS);
	/*
	 * QEMU closes an explicitly opened zone that was never written
	 * (ZNS allows it to go empty instead): it stays active.
	 */
	for (z = 0; z < 3; z++)
		check_mgmt(t, z, P2Z_ZONE_OP_CLOSE, 0);
	check_zone(t, 0, P2Z_ZONE_COND_CLOSED, 0);
	check_mgmt(t, 3, P2Z_ZONE_OP_OPEN, 0);
	check_zone(t, 3, P2Z_ZONE_COND_EXP_OPEN, 0);
	/* Four active zones: opening a fifth needs a fifth active one. */
	for (z = 0; z < 4; z++)
		check_mgmt(t, z, P2Z_ZONE_OP_RESET, 0);
}

/**
 * struct vm_writer - one thread appending to its own zone
 * @t: the run
 * @zidx: its zone
 * @buf: its data
 * @len: bytes to append
 * @done: bytes appended
 */
struct vm_writer {
	struct vm_test *t;
	uint64_t zidx;
	uint8_t *buf;
	size_t len;
	size_t done;
};

static void *writer(void *arg)
{
	struct vm_writer *wr = arg;

	wr->done = append_all(wr->t, wr->zidx, wr->buf, wr->len);
	return NULL;
}

/*
 * Three threads append to zones 0, 2 and 3 at once, each through its own
 * ring. Zone 2 keeps its data for the raw check.
 */
static void test_threads(struct vm_test *t, FILE *expect)
{
	uint32_t lbs = t->dev->info.lba_bytes;
	struct vm_writer wr[3];
	pthread_t tid[3];
	uint8_t *r;
	int i, ok = 1;

	for (i = 0; i < 3; i++) {
		wr[i].t = t;
		wr[i].zidx = i ? i + 1 : 0;
		wr[i].len = 700 * 1024 + (size_t)i * lbs;
		wr[i].buf = buf_alloc(wr[i].len);
		fill(wr[i].buf, wr[i].len, wr[i].zidx, 2);
		check_mgmt(t, wr[i].zidx, P2Z_ZONE_OP_RESET, 0);
	}
	for (i = 0; i < 3; i++)
		pthread_create(&tid[i], NULL, writer, &wr[i]);
	for (i = 0; i < 3; i++)
		pthread_join(tid[i], NULL);
	for (i = 0; i < 3; i++) {
		r = buf_alloc(wr[i].len);
		if (wr[i].done != wr[i].len ||
		    p2z_dev_pread(t->dev, r, wr[i].len,
				  wr[i].zidx * t->dev->info.zone_lba * lbs) !=
			    (ssize_t)wr[i].len ||
		    memcmp(r, wr[i].buf, wr[i].len))
			ok = 0;
		buf_free(r);
		check_zone(t, wr[i].zidx, P2Z_ZONE_COND_IMP_OPEN,
			   wr[i].len / lbs);
	}
	CHECK(t, ok, "3 threads appending to 3 zones at once, read back");
	CHECK(t, fwrite(wr[1].buf, 1, wr[1].len, expect) == wr[1].len,
	      "expected bytes of zone 2 saved");
	printf("P2Z-RAW slba=%" PRIu64 " bytes=%zu\n",
	       2 * t->dev->info.zone_lba, wr[1].len);
	check_mgmt(t, 0, P2Z_ZONE_OP_RESET, 0);
	check_mgmt(t, 3, P2Z_ZONE_OP_RESET, 0);
	/* Leave zone 2 closed: the mount must find it so. */
	check_mgmt(t, 2, P2Z_ZONE_OP_CLOSE, 0);
	for (i = 0; i < 3; i++)
		buf_free(wr[i].buf);
}

static void test_rdonly(struct vm_test *t, const char *path,
			const char *backend)
{
	struct p2z_dev *dev;
	uint8_t buf[4096] = { 0 };
	uint64_t lba;
	int ret;

	/* The device is owned by the open of main(): a user is refused. */
	ret = p2z_dev_open(path, backend, P2Z_DEV_RDONLY, &dev);
	CHECK(t, ret == -EBUSY, "second open, read-only: EBUSY (got %d)", ret);
	if (!ret)
		p2z_dev_close(dev);
	/* A look (no claim) beside it: still no writes. */
	ret = p2z_dev_open(path, backend, P2Z_DEV_RDONLY | P2Z_DEV_PEEK, &dev);
	CHECK(t, !ret, "open read-only (got %d)", ret);
	if (ret)
		return;
	ret = p2z_dev_append(dev, 3, buf, dev->info.lba_bytes, &lba, 0);
	CHECK(t, ret == -EROFS, "append when read-only: EROFS (got %d)", ret);
	ret = p2z_dev_zone_mgmt(dev, 3, P2Z_ZONE_OP_RESET);
	CHECK(t, ret == -EROFS, "reset when read-only: EROFS (got %d)", ret);
	p2z_dev_close(dev);
}

int main(int argc, char **argv)
{
	struct vm_test t = { 0 };
	uint64_t zone_bytes;
	FILE *expect;
	int ret;

	if (argc != 6 && (argc != 7 || strcmp(argv[6], "geometry"))) {
		fprintf(stderr,
			"usage: %s DEV BACKEND ZONE_BYTES CAP_BYTES EXPECT_FILE [geometry]\n",
			argv[0]);
		return 2;
	}
	/* "auto": let the device layer choose from the path */
	if (!strcmp(argv[2], "auto"))
		argv[2] = NULL;
	ret = p2z_dev_open(argv[1], argv[2], 0, &t.dev);
	if (ret) {
		printf("  FAIL open %s (backend %s): %s\n", argv[1],
		       argv[2] ? argv[2] : "auto", strerror(-ret));
		return 1;
	}
	t.nvme = !strcmp(t.dev->ops->name, "nvme");
	zone_bytes = strtoull(argv[3], NULL, 0);
	t.cap_lba = strtoull(argv[4], NULL, 0) / t.dev->info.lba_bytes;
	expect = fopen(argv[5], "w");
	if (!expect) {
		perror(argv[5]);
		return 1;
	}
	test_geometry(&t, zone_bytes);
	if (argc == 7)
		goto out;
	test_write_read(&t);
	test_volatile_cache(&t, argv[1]);
	test_fua(&t);
	test_async(&t);
	test_open_limits(&t);
	test_threads(&t, expect);
	fclose(expect);
	test_rdonly(&t, argv[1], argv[2]);
out:
	p2z_dev_close(t.dev);
	printf("%s: %d checks failed\n", argv[1], t.fails);
	return t.fails ? 1 : 0;
}
