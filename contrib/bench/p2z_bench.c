// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * p2z_bench: throughput of the device interface (dev.h) called directly,
 * without the zone table or FUSE: the "backend called directly" side of the
 * side-by-side runs of contrib/bench/bench.sh.
 *
 * Each of N threads owns one sequential zone (zones Z .. Z+N-1) and moves
 * its bytes in calls of the given I/O size: zone appends (what the daemon
 * issues when the device can append), writes at the write pointer, or reads
 * from the zone start. The clock covers the I/O calls only: opening the
 * device, resetting the zones and allocating buffers happen before all
 * threads are released together, and the time ends when the last thread is
 * done (and, with --flush, after one device flush). One line of key=value
 * pairs goes to stdout.
 *
 * With --files the same threads, gate and clock drive files instead, one
 * per thread: appends with O_APPEND write(2)s, writes with pwrite(2) at the
 * file's size, reads with O_DIRECT pread(2)s. On the zone files of a po2zfs
 * mount this measures the mount with exactly the harness that measures the
 * device, which dd cannot do for several writers started together.
 *
 * Writing resets the zones (truncates the files) first unless --no-reset:
 * the data in them is lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "po2zfs/dev.h"
#include "po2zfs/log.h"

#define P2Z_BENCH_MAX_THREADS 64
#define P2Z_BENCH_BUF_ALIGN 4096
#define P2Z_BENCH_MAX_IO_BYTES (1ULL << 30)

enum p2z_bench_op {
	P2Z_BENCH_APPEND,
	P2Z_BENCH_WRITE,
	P2Z_BENCH_READ,
};

static const char *const p2z_bench_op_names[] = {
	[P2Z_BENCH_APPEND] = "append",
	[P2Z_BENCH_WRITE] = "write",
	[P2Z_BENCH_READ] = "read",
};

/**
 * struct p2z_bench_opts - the command line
 * @device: device or image path (NULL with --files)
 * @files: the files of --files, @nr_threads of them, or NULL
 * @backend: backend name, NULL = chosen from the path
 * @op: what each thread does
 * @zidx: zone of the first thread
 * @nr_threads: threads, one zone or file each
 * @io_bytes: bytes per device call
 * @bytes: bytes per zone or file, 0 = the zone's capacity (writes) or its
 *	   written bytes / the file's size (reads)
 * @reset: reset the zones (truncate the files) before writing
 * @flush: flush the device (fdatasync() the files) once all threads are
 *	   done, inside the clock
 * @direct: open the device with P2Z_DEV_DIRECT (an emu image's data with
 *	    O_DIRECT, as the mount option direct does)
 */
struct p2z_bench_opts {
	const char *device;
	char **files;
	const char *backend;
	enum p2z_bench_op op;
	uint64_t zidx;
	unsigned int nr_threads;
	size_t io_bytes;
	uint64_t bytes;
	bool reset;
	bool flush;
	bool direct;
};

/**
 * struct p2z_bench_gate - holds the threads until all are ready
 * @lock: guards the fields below
 * @cond: signalled when @nr_ready grows and when @go or @abort is set
 * @nr_ready: threads waiting at the gate
 * @go: start the I/O
 * @abort: leave without I/O (a thread could not be started)
 */
struct p2z_bench_gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int nr_ready;
	bool go;
	bool abort;
};

/**
 * struct p2z_bench_job - one thread and its zone or file
 * @dev: the device, NULL with --files
 * @path: the file, NULL without --files
 * @fd: the open file, -1 without --files
 * @op: what to do
 * @gate: where the thread waits for the start
 * @zidx: zone index
 * @zone_start_lba: the zone's first LBA
 * @ofs: zone or file offset in bytes of the first call (the write pointer
 *	 or file size for writes, 0 for reads)
 * @bytes: bytes to move
 * @io_bytes: bytes per call
 * @buf: @io_bytes aligned bytes
 * @err: 0 or the -errno of the failed call
 * @err_ofs: zone or file offset of the failed call
 * @tid: the thread
 */
struct p2z_bench_job {
	struct p2z_dev *dev;
	const char *path;
	int fd;
	enum p2z_bench_op op;
	struct p2z_bench_gate *gate;
	uint64_t zidx;
	uint64_t zone_start_lba;
	uint64_t ofs;
	uint64_t bytes;
	size_t io_bytes;
	void *buf;
	int err;
	uint64_t err_ofs;
	pthread_t tid;
};

static void p2z_bench_usage(FILE *out)
{
	fprintf(out,
		"usage: %s [OPTIONS] DEVICE\n"
		"       %s [OPTIONS] --files FILE...\n"
		"  -o, --op append|write|read  device call (default append)\n"
		"  -z, --zone Z                first zone (default 0)\n"
		"  -t, --threads N             threads, zones Z..Z+N-1 (default 1, max %d)\n"
		"  -s, --io-size SIZE          bytes per call (default 1M, max 1G)\n"
		"  -n, --bytes SIZE            bytes per zone (default: capacity for\n"
		"                              writes, written bytes for reads)\n"
		"  -b, --backend NAME          nvme|zbd|emu (default: from the path)\n"
		"  -N, --no-reset              write from the write pointer, no reset\n"
		"  -f, --flush                 flush the device, inside the timing\n"
		"  -D, --direct                emu: image data with O_DIRECT (mount -o direct)\n"
		"  -F, --files                 one thread per FILE (e.g. zone files of a\n"
		"                              mount) instead of zones; writes need -n\n"
		"SIZE: bytes, or with a K, M or G suffix (binary).\n"
		"Writing resets the zones (truncates the files) first: their data is lost.\n"
		"Output: op= zone=|files= threads= io_size= bytes= secs= mib_s=\n",
		program_invocation_short_name, program_invocation_short_name,
		P2Z_BENCH_MAX_THREADS);
}

/* A decimal number, digits only. */
static int p2z_bench_parse_u64(const char *s, const char **end, uint64_t *v)
{
	uint64_t n = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (n > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	*end = s;
	*v = n;
	return 0;
}

/* The shift of a binary size suffix, or -EINVAL. */
static int p2z_bench_suffix_shift(char c)
{
	switch (c) {
	case 'k':
	case 'K':
		return 10;
	case 'm':
	case 'M':
		return 20;
	case 'g':
	case 'G':
		return 30;
	}
	return -EINVAL;
}

/* A positive byte count with an optional binary K/M/G suffix. */
static int p2z_bench_parse_size(const char *s, uint64_t *v)
{
	const char *end;
	int shift = 0;
	uint64_t n;

	if (p2z_bench_parse_u64(s, &end, &n) || !n)
		return -EINVAL;
	if (*end) {
		shift = p2z_bench_suffix_shift(*end);
		if (shift < 0 || end[1])
			return -EINVAL;
	}
	if (n > (UINT64_MAX >> shift))
		return -EINVAL;
	*v = n << shift;
	return 0;
}

/* A count with no suffix, from @min to @max. */
static int p2z_bench_parse_count(const char *s, uint64_t min, uint64_t max,
				 uint64_t *v)
{
	const char *end;

	if (p2z_bench_parse_u64(s, &end, v) || *end || *v < min || *v > max)
		return -EINVAL;
	return 0;
}

static int p2z_bench_parse_op(const char *s, enum p2z_bench_op *op)
{
	size_t i;

	for (i = 0; i < sizeof(p2z_bench_op_names) / sizeof(char *); i++) {
		if (!strcmp(s, p2z_bench_op_names[i])) {
			*op = (enum p2z_bench_op)i;
			return 0;
		}
	}
	return -EINVAL;
}

static int p2z_bench_parse_opt(struct p2z_bench_opts *o, int c, const char *arg)
{
	uint64_t v;

	switch (c) {
	case 'o':
		return p2z_bench_parse_op(arg, &o->op);
	case 'z':
		return p2z_bench_parse_count(arg, 0, UINT64_MAX, &o->zidx);
	case 't':
		if (p2z_bench_parse_count(arg, 1, P2Z_BENCH_MAX_THREADS, &v))
			return -EINVAL;
		o->nr_threads = (unsigned int)v;
		return 0;
	case 's':
		if (p2z_bench_parse_size(arg, &v) || v > P2Z_BENCH_MAX_IO_BYTES)
			return -EINVAL;
		o->io_bytes = (size_t)v;
		return 0;
	case 'n':
		return p2z_bench_parse_size(arg, &o->bytes);
	case 'b':
		o->backend = arg;
		return 0;
	case 'N':
		o->reset = false;
		return 0;
	case 'f':
		o->flush = true;
		return 0;
	case 'D':
		o->direct = true;
		return 0;
	}
	return -EINVAL;
}

/* The operands: one DEVICE, or 1..P2Z_BENCH_MAX_THREADS files. */
static int p2z_bench_parse_operands(int nr, char **args, bool files,
				    struct p2z_bench_opts *o)
{
	if (!files) {
		if (nr != 1) {
			p2z_log(LOG_ERR, "expected one DEVICE (see --help)");
			return -EINVAL;
		}
		o->device = args[0];
		return 0;
	}
	if (o->backend || o->zidx || o->nr_threads != 1 || o->direct) {
		p2z_log(LOG_ERR,
			"-b, -z, -t and -D are for devices, not --files");
		return -EINVAL;
	}
	if (nr < 1 || nr > P2Z_BENCH_MAX_THREADS) {
		p2z_log(LOG_ERR, "expected 1 to %d FILEs",
			P2Z_BENCH_MAX_THREADS);
		return -EINVAL;
	}
	if (!o->bytes && o->op != P2Z_BENCH_READ) {
		p2z_log(LOG_ERR, "writing --files needs --bytes");
		return -EINVAL;
	}
	o->files = args;
	o->nr_threads = (unsigned int)nr;
	return 0;
}

/* Return: 0, 1 when --help was asked, -EINVAL after printing why. */
static int p2z_bench_parse_args(int argc, char **argv, struct p2z_bench_opts *o)
{
	static const struct option longopts[] = {
		{ "op", required_argument, NULL, 'o' },
		{ "zone", required_argument, NULL, 'z' },
		{ "threads", required_argument, NULL, 't' },
		{ "io-size", required_argument, NULL, 's' },
		{ "bytes", required_argument, NULL, 'n' },
		{ "backend", required_argument, NULL, 'b' },
		{ "no-reset", no_argument, NULL, 'N' },
		{ "flush", no_argument, NULL, 'f' },
		{ "direct", no_argument, NULL, 'D' },
		{ "files", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool files = false;
	int c;

	*o = (struct p2z_bench_opts){ .op = P2Z_BENCH_APPEND,
				      .nr_threads = 1,
				      .io_bytes = 1 << 20,
				      .reset = true };
	while ((c = getopt_long(argc, argv, "o:z:t:s:n:b:NfDFh", longopts,
				NULL)) != -1) {
		if (c == 'h')
			return 1;
		if (c == '?')
			return -EINVAL;
		if (c == 'F') {
			files = true;
			continue;
		}
		if (p2z_bench_parse_opt(o, c, optarg)) {
			p2z_log(LOG_ERR, "invalid value '%s' for -%c", optarg,
				c);
			return -EINVAL;
		}
	}
	return p2z_bench_parse_operands(argc - optind, argv + optind, files, o);
}

/* Check the I/O size and the zone range against the device. */
static int p2z_bench_check_geometry(const struct p2z_bench_opts *o,
				    const struct p2z_dev_info *in)
{
	if (o->io_bytes % in->lba_bytes || (o->bytes % in->lba_bytes)) {
		p2z_log(LOG_ERR,
			"I/O size %zu and byte count %" PRIu64
			" must be multiples of the LBA size %u",
			o->io_bytes, o->bytes, in->lba_bytes);
		return -EINVAL;
	}
	if (o->zidx >= in->nr_zones || o->nr_threads > in->nr_zones - o->zidx) {
		p2z_log(LOG_ERR,
			"zones %" PRIu64 "..%" PRIu64
			": the device has %" PRIu64 " zones",
			o->zidx, o->zidx + o->nr_threads - 1, in->nr_zones);
		return -EINVAL;
	}
	return 0;
}

/* One line about a job's failed step: "zone 3: reset: ..." or "FILE: ...". */
static void p2z_bench_log_job(const struct p2z_bench_job *j, const char *what,
			      int err)
{
	if (j->path)
		p2z_log(LOG_ERR, "%s: %s: %s", j->path, what, strerror(-err));
	else
		p2z_log(LOG_ERR, "zone %" PRIu64 ": %s: %s", j->zidx, what,
			strerror(-err));
}

/*
 * Set the job's starting offset and byte count from its zone as the device
 * reports it, or as it will be after the reset for writes.
 */
static int p2z_bench_size_job(const struct p2z_bench_opts *o,
			      const struct p2z_dev_info *in,
			      const struct p2z_zone_info *zi,
			      struct p2z_bench_job *j)
{
	bool rd = o->op == P2Z_BENCH_READ;
	uint64_t written = 0, avail;

	if (zi->type != P2Z_ZONE_TYPE_SEQ) {
		p2z_log(LOG_ERR, "zone %" PRIu64 " is not sequential", j->zidx);
		return -EINVAL;
	}
	if (rd || !o->reset)
		written = (zi->wp_lba - zi->start_lba) * in->lba_bytes;
	avail = rd ? written : zi->cap_lba * in->lba_bytes - written;
	j->zone_start_lba = zi->start_lba;
	j->ofs = rd ? 0 : written;
	j->bytes = o->bytes ? o->bytes : avail;
	if (!j->bytes || j->bytes > avail) {
		const char *what = rd	    ? "written" :
				   o->reset ? "of capacity" :
					      "of room";

		p2z_log(LOG_ERR,
			"zone %" PRIu64 " (%s) has %" PRIu64 " bytes %s%s",
			j->zidx, p2z_zone_cond_name(zi->cond), avail, what,
			o->bytes ? ", fewer than --bytes" : "");
		return -ERANGE;
	}
	return 0;
}

static int p2z_bench_alloc_buf(struct p2z_bench_job *j)
{
	int ret;

	ret = posix_memalign(&j->buf, P2Z_BENCH_BUF_ALIGN, j->io_bytes);
	if (ret) {
		j->buf = NULL;
		p2z_log(LOG_ERR, "cannot allocate %zu bytes", j->io_bytes);
		return -ret;
	}
	/* Not zeros: no layer below may take a shortcut on them. */
	memset(j->buf, 0xa5 ^ (int)(j->zidx & 0xff), j->io_bytes);
	return 0;
}

static int p2z_bench_prepare_zone(struct p2z_dev *dev,
				  const struct p2z_bench_opts *o,
				  struct p2z_bench_job *j)
{
	struct p2z_zone_info zi;
	int ret;

	ret = p2z_dev_report_zones(dev, j->zidx, 1, &zi);
	if (ret != 1) {
		ret = ret < 0 ? ret : -EIO;
		p2z_bench_log_job(j, "report", ret);
		return ret;
	}
	ret = p2z_bench_size_job(o, &dev->info, &zi, j);
	if (ret)
		return ret;
	return p2z_bench_alloc_buf(j);
}

/* Open the job's file; reads need O_DIRECT to get past the page cache. */
static int p2z_bench_prepare_file(const struct p2z_bench_opts *o,
				  struct p2z_bench_job *j)
{
	static const int flags[] = {
		[P2Z_BENCH_APPEND] = O_WRONLY | O_APPEND,
		[P2Z_BENCH_WRITE] = O_WRONLY,
		[P2Z_BENCH_READ] = O_RDONLY | O_DIRECT,
	};
	struct stat st;
	int ret;

	j->fd = open(j->path, flags[o->op] | O_CLOEXEC);
	if (j->fd < 0 || fstat(j->fd, &st) < 0) {
		ret = -errno;
		p2z_log(LOG_ERR, "%s: %s", j->path, strerror(-ret));
		return ret;
	}
	j->ofs = o->op == P2Z_BENCH_READ || o->reset ? 0 : (uint64_t)st.st_size;
	j->bytes = o->bytes ? o->bytes : (uint64_t)st.st_size;
	if (o->op == P2Z_BENCH_READ &&
	    (!j->bytes || j->bytes > (uint64_t)st.st_size)) {
		p2z_log(LOG_ERR, "%s has %jd bytes%s", j->path,
			(intmax_t)st.st_size,
			o->bytes ? ", fewer than --bytes" : "");
		return -ERANGE;
	}
	return p2z_bench_alloc_buf(j);
}

/* Reset the zones (truncate the files) to write, once all jobs are checked. */
static int p2z_bench_reset(const struct p2z_bench_opts *o,
			   const struct p2z_bench_job *jobs)
{
	const struct p2z_bench_job *j;
	unsigned int i;
	int ret;

	if (o->op == P2Z_BENCH_READ || !o->reset)
		return 0;
	for (i = 0; i < o->nr_threads; i++) {
		j = &jobs[i];
		if (j->path)
			ret = ftruncate(j->fd, 0) < 0 ? -errno : 0;
		else
			ret = p2z_dev_zone_mgmt(j->dev, j->zidx,
						P2Z_ZONE_OP_RESET);
		if (ret) {
			p2z_bench_log_job(j, "reset", ret);
			return ret;
		}
	}
	return 0;
}

/* One system call of @len bytes at file offset @ofs. */
static ssize_t p2z_bench_file_io(struct p2z_bench_job *j, size_t len,
				 uint64_t ofs)
{
	ssize_t n = -1;

	switch (j->op) {
	case P2Z_BENCH_APPEND:
		n = write(j->fd, j->buf, len);
		break;
	case P2Z_BENCH_WRITE:
		n = pwrite(j->fd, j->buf, len, (off_t)ofs);
		break;
	case P2Z_BENCH_READ:
		n = pread(j->fd, j->buf, len, (off_t)ofs);
		break;
	}
	return n < 0 ? -errno : n;
}

/* One device call of @len bytes at zone offset @ofs. */
static ssize_t p2z_bench_zone_io(struct p2z_bench_job *j, size_t len,
				 uint64_t ofs)
{
	uint32_t lba_bytes = j->dev->info.lba_bytes;
	uint64_t byte_ofs = j->zone_start_lba * lba_bytes + ofs;
	uint64_t want = j->zone_start_lba + ofs / lba_bytes, lba = 0;
	ssize_t n;

	switch (j->op) {
	case P2Z_BENCH_APPEND:
		n = p2z_dev_append(j->dev, j->zidx, j->buf, len, &lba, 0);
		/* As the daemon does: the device chose the LBA. */
		if (n > 0 && lba != want)
			return -EILSEQ;
		return n;
	case P2Z_BENCH_WRITE:
		return p2z_dev_pwrite(j->dev, j->buf, len, byte_ofs, 0);
	case P2Z_BENCH_READ:
		return p2z_dev_pread(j->dev, j->buf, len, byte_ofs);
	}
	return -EINVAL;
}

static ssize_t p2z_bench_io(struct p2z_bench_job *j, size_t len, uint64_t ofs)
{
	if (j->path)
		return p2z_bench_file_io(j, len, ofs);
	return p2z_bench_zone_io(j, len, ofs);
}

static double p2z_bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Say this thread is ready, then wait for the start. Return: false = abort. */
static bool p2z_bench_gate_wait(struct p2z_bench_gate *g)
{
	bool go;

	pthread_mutex_lock(&g->lock);
	g->nr_ready++;
	pthread_cond_broadcast(&g->cond);
	while (!g->go && !g->abort)
		pthread_cond_wait(&g->cond, &g->lock);
	go = g->go;
	pthread_mutex_unlock(&g->lock);
	return go;
}

/*
 * Wait until @nr threads are ready, then start them (or abort them).
 * Return: the start time, read before any thread can run: a main thread
 * preempted right after the wake-up must not start the clock late.
 */
static double p2z_bench_gate_open(struct p2z_bench_gate *g, unsigned int nr,
				  bool abort)
{
	double t0;

	pthread_mutex_lock(&g->lock);
	while (!abort && g->nr_ready < nr)
		pthread_cond_wait(&g->cond, &g->lock);
	t0 = p2z_bench_now();
	g->go = !abort;
	g->abort = abort;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	return t0;
}

static void *p2z_bench_thread(void *arg)
{
	struct p2z_bench_job *j = arg;
	uint64_t done = 0;

	if (!p2z_bench_gate_wait(j->gate))
		return NULL;
	while (done < j->bytes) {
		uint64_t left = j->bytes - done;
		size_t len = left < j->io_bytes ? (size_t)left : j->io_bytes;
		ssize_t n = p2z_bench_io(j, len, j->ofs + done);

		if (n != (ssize_t)len) {
			j->err = n < 0 ? (int)n : -EIO;
			j->err_ofs = j->ofs + done;
			break;
		}
		done += len;
	}
	return NULL;
}

/* Report the failed jobs. Return: the first job's -errno, or 0. */
static int p2z_bench_job_errors(const struct p2z_bench_opts *o,
				const struct p2z_bench_job *jobs)
{
	const struct p2z_bench_job *j;
	char what[64];
	unsigned int i;
	int ret = 0;

	for (i = 0; i < o->nr_threads; i++) {
		j = &jobs[i];
		if (!j->err)
			continue;
		snprintf(what, sizeof(what), "%s at offset %" PRIu64,
			 p2z_bench_op_names[o->op], j->err_ofs);
		p2z_bench_log_job(j, what, j->err);
		if (!ret)
			ret = j->err;
	}
	return ret;
}

/* Flush once (device) or every file; inside the clock. */
static int p2z_bench_flush(const struct p2z_bench_opts *o,
			   const struct p2z_bench_job *jobs)
{
	unsigned int i;
	int ret;

	if (!o->flush)
		return 0;
	for (i = 0; i < o->nr_threads; i++) {
		if (jobs[i].path)
			ret = fdatasync(jobs[i].fd) < 0 ? -errno : 0;
		else if (!i)
			ret = p2z_dev_flush(jobs[i].dev);
		else
			continue;
		if (ret) {
			p2z_bench_log_job(&jobs[i], "flush", ret);
			return ret;
		}
	}
	return 0;
}

/*
 * Start the prepared jobs, wait for all of them, flush if asked; *secs gets
 * the time from the open gate to the end.
 */
static int p2z_bench_run_jobs(const struct p2z_bench_opts *o,
			      struct p2z_bench_job *jobs, double *secs)
{
	struct p2z_bench_gate *g = jobs[0].gate;
	unsigned int i, nr;
	int ret = 0, err;
	double t0;

	for (nr = 0; nr < o->nr_threads; nr++) {
		ret = -pthread_create(&jobs[nr].tid, NULL, p2z_bench_thread,
				      &jobs[nr]);
		if (ret) {
			p2z_log(LOG_ERR, "cannot start a thread: %s",
				strerror(-ret));
			break;
		}
	}
	t0 = p2z_bench_gate_open(g, nr, ret != 0);
	for (i = 0; i < nr; i++)
		pthread_join(jobs[i].tid, NULL);
	if (ret)
		return ret;
	ret = p2z_bench_flush(o, jobs);
	*secs = p2z_bench_now() - t0;
	err = p2z_bench_job_errors(o, jobs);
	return err ? err : ret;
}

static void p2z_bench_report(const struct p2z_bench_opts *o,
			     const struct p2z_bench_job *jobs, double secs)
{
	uint64_t total = 0;
	unsigned int i;

	for (i = 0; i < o->nr_threads; i++)
		total += jobs[i].bytes;
	if (secs <= 0)
		secs = 1e-9;
	printf("op=%s", p2z_bench_op_names[o->op]);
	if (o->files)
		printf(" files=%u", o->nr_threads);
	else
		printf(" zone=%" PRIu64, o->zidx);
	printf(" threads=%u io_size=%zu bytes=%" PRIu64
	       " secs=%.6f mib_s=%.1f\n",
	       o->nr_threads, o->io_bytes, total, secs,
	       (double)total / secs / (1024.0 * 1024.0));
}

static int p2z_bench_prepare(struct p2z_dev *dev,
			     const struct p2z_bench_opts *o,
			     struct p2z_bench_job *j, unsigned int i)
{
	if (o->files) {
		j->path = o->files[i];
		return p2z_bench_prepare_file(o, j);
	}
	j->dev = dev;
	j->zidx = o->zidx + i;
	return p2z_bench_prepare_zone(dev, o, j);
}

static int p2z_bench_run(struct p2z_dev *dev, const struct p2z_bench_opts *o)
{
	struct p2z_bench_gate gate = { .lock = PTHREAD_MUTEX_INITIALIZER,
				       .cond = PTHREAD_COND_INITIALIZER };
	struct p2z_bench_job *jobs;
	unsigned int i;
	double secs = 0;
	int ret = 0;

	if (dev) {
		ret = p2z_bench_check_geometry(o, &dev->info);
		if (ret)
			return ret;
	}
	jobs = calloc(o->nr_threads, sizeof(*jobs));
	if (!jobs)
		return -ENOMEM;
	for (i = 0; i < o->nr_threads; i++)
		jobs[i] = (struct p2z_bench_job){ .fd = -1,
						  .op = o->op,
						  .gate = &gate,
						  .io_bytes = o->io_bytes };
	for (i = 0; i < o->nr_threads && !ret; i++)
		ret = p2z_bench_prepare(dev, o, &jobs[i], i);
	if (!ret)
		ret = p2z_bench_reset(o, jobs);
	if (!ret)
		ret = p2z_bench_run_jobs(o, jobs, &secs);
	if (!ret)
		p2z_bench_report(o, jobs, secs);
	for (i = 0; i < o->nr_threads; i++) {
		if (jobs[i].fd >= 0)
			close(jobs[i].fd);
		free(jobs[i].buf);
	}
	free(jobs);
	return ret;
}

int main(int argc, char **argv)
{
	struct p2z_bench_opts o;
	struct p2z_dev *dev = NULL;
	int ret;

	ret = p2z_bench_parse_args(argc, argv, &o);
	if (ret) {
		p2z_bench_usage(ret > 0 ? stdout : stderr);
		return ret > 0 ? 0 : 1;
	}
	if (o.device) {
		ret = p2z_dev_open(o.device, o.backend,
				   (o.op == P2Z_BENCH_READ ? P2Z_DEV_RDONLY :
							     0) |
					   (o.direct ? P2Z_DEV_DIRECT : 0),
				   &dev);
		if (ret)
			return 1;
	}
	ret = p2z_bench_run(dev, &o);
	p2z_dev_close(dev);
	return ret ? 1 : 0;
}
