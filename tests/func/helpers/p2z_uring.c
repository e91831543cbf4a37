// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * p2z_uring: O_DIRECT writes and reads of zone files through io_uring, for
 * the mount tests of requests in flight (0408, 0409).
 *
 * Data is derived from the zone file's number (its name, seq/N) and the
 * byte offset: 8-byte word at offset o of zone N is mix(mix(N + 1) ^ o), so
 * any range can be checked without knowing how it was written.
 *
 *   p2z_uring write LEN ROUNDS FILE...
 *	ROUNDS times: one O_DIRECT write of LEN bytes per FILE at its size,
 *	all FILEs' writes submitted together; each must complete with LEN,
 *	then the size and user.zone.wp must be the old size + LEN and the
 *	whole file must read back as the pattern. Prints "writes=N bytes=N".
 *   p2z_uring pwrite FILE OFS LEN
 *	one O_DIRECT io_uring write of the pattern at OFS; prints the
 *	completion: a byte count or an errno name (EINVAL).
 *   p2z_uring verify FILE SIZE
 *	the size and user.zone.wp are SIZE, [0, SIZE) is the pattern, a read
 *	at SIZE returns 0 bytes. Prints OK.
 *   p2z_uring load DIR LOG SECONDS
 *	until the daemon dies (a request fails) or SECONDS pass: appenders on
 *	DIR/0 (RWF_DSYNC writes), DIR/1 (each write linked to an fsync),
 *	DIR/2 and DIR/3 (plain), each with 4 O_DIRECT writes in flight at
 *	explicit offsets, and an io_uring reader with 16 O_DIRECT reads in
 *	flight below what was appended, checking the bytes. An appender logs
 *	"Z END" to LOG (O_APPEND) once every write below END has completed
 *	(for 0 and 1: and is durable). Exits 1 on a wrong byte or a short
 *	completion, else 0; prints "acked=N reads=N".
 *   p2z_uring appenders FILE NTHREADS RECLEN COUNT
 *	NTHREADS threads append COUNT records of RECLEN bytes each to FILE
 *	together (write(2), O_APPEND, O_DIRECT): each completes whole; then
 *	the size and user.zone.wp grew by all of them and what they added
 *	is whole records (none torn or interleaved), each thread's in order.
 *	Prints "records=N bytes=N".
 *   p2z_uring check DIR LOG
 *	after a crash and a mount again: for zones 0 to 3, the size equals
 *	user.zone.wp, is whole LBAs, [0, size) is the pattern, a read at the
 *	size returns 0 bytes; for 0 and 1 the size is at least the largest
 *	END logged. Prints "Z size=N acked=N lost=N" a zone a line.
 *
 * Exit status: 0 pass, 1 an invariant broken, 2 usage or setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "p2z_helpers.h"

#define UR_ALIGN 4096
#define UR_NZ 4 /* zones of the load */
#define UR_WQD 4 /* writes in flight per appender */
#define UR_RQD 16 /* reads in flight of the reader */
#define UR_MAX_REC (128 * 1024)

static const char *en(int err)
{
	const char *n = strerrorname_np(err);

	return n ? n : "E?";
}

static uint64_t zkey(const char *path)
{
	char tmp[4096];

	snprintf(tmp, sizeof(tmp), "%s", path);
	return p2z_mix(strtoull(basename(tmp), NULL, 10) + 1);
}

/* Fill @len bytes (multiple of 8, @ofs too) with the pattern of @key. */
static void pat_fill(char *p, uint64_t key, uint64_t ofs, size_t len)
{
	uint64_t *w = (uint64_t *)p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = p2z_mix(key ^ (ofs + 8 * i));
}

/* The first byte offset in [ofs, ofs + len) not the pattern, or -1. */
static int64_t pat_check(const char *p, uint64_t key, uint64_t ofs, size_t len)
{
	const uint64_t *w = (const uint64_t *)p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] != p2z_mix(key ^ (ofs + 8 * i)))
			return (int64_t)(ofs + 8 * i);
	return -1;
}

static int ring_init(struct io_uring *r, unsigned int qd)
{
	int ret = io_uring_queue_init(qd, r, 0);

	if (ret)
		fprintf(stderr, "p2z_uring: io_uring_queue_init: %s\n",
			en(-ret));
	return ret;
}

/* Submit what is queued, reap @n completions into @res by user_data. */
static int ring_run(struct io_uring *r, int n, int *res)
{
	struct io_uring_cqe *cqe;
	int ret, i;

	ret = io_uring_submit(r);
	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++) {
		ret = io_uring_wait_cqe(r, &cqe);
		if (ret)
			return ret;
		res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(r, cqe);
	}
	return 0;
}

/* 0 and the size and user.zone.wp of @path, or -errno */
static int sizes(const char *path, uint64_t *size, uint64_t *wp)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	*size = st.st_size;
	return p2z_xattr_u64(path, "user.zone.wp", wp);
}

/* [0, @size) of @path is the pattern and a read at @size gives 0 bytes */
static int verify_file(const char *path, uint64_t size)
{
	uint64_t key = zkey(path), ofs, n;
	char *buf = p2z_xalloc(UR_ALIGN, 1 << 20);
	int64_t bad;
	ssize_t got;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0) {
		printf("%s: open: %s\n", path, en(errno));
		free(buf);
		return 1;
	}
	for (ofs = 0; ofs < size && !ret; ofs += n) {
		n = size - ofs < (1 << 20) ? size - ofs : (1 << 20);
		got = pread(fd, buf, n, ofs);
		if (got != (ssize_t)n) {
			printf("%s: read of %" PRIu64 " at %" PRIu64
			       ": %zd (%s)\n",
			       path, n, ofs, got,
			       got < 0 ? en(errno) : "short");
			ret = 1;
		} else if ((bad = pat_check(buf, key, ofs, n)) >= 0) {
			printf("%s: wrong bytes at %" PRId64 "\n", path, bad);
			ret = 1;
		}
	}
	got = ret ? 0 : pread(fd, buf, 1 << 16, size);
	if (got) {
		printf("%s: a read at the size %" PRIu64 " returned %zd (%s)\n",
		       path, size, got, got < 0 ? en(errno) : "bytes past it");
		ret = 1;
	}
	close(fd);
	free(buf);
	return ret;
}

/* ---------------------------------------------------------------- write */

static int cmd_write(uint64_t len, int rounds, char **files, int nf)
{
	struct io_uring r;
	uint64_t size[64], s2, wp, total = 0;
	int fd[64], res[64], i, k, ret = 0;
	char *buf;

	if (nf > 64 || !len || len % UR_ALIGN)
		return 2;
	if (ring_init(&r, nf))
		return 2;
	buf = p2z_xalloc(UR_ALIGN, len * nf);
	for (i = 0; i < nf; i++) {
		fd[i] = open(files[i], O_WRONLY | O_DIRECT);
		if (fd[i] < 0) {
			printf("%s: open: %s\n", files[i], en(errno));
			return 1;
		}
	}
	for (k = 0; k < rounds && !ret; k++) {
		for (i = 0; i < nf; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&r);

			if (sizes(files[i], &size[i], &wp))
				return 2;
			pat_fill(buf + i * len, zkey(files[i]), size[i], len);
			io_uring_prep_write(sqe, fd[i], buf + i * len, len,
					    size[i]);
			io_uring_sqe_set_data64(sqe, i);
		}
		if (ring_run(&r, nf, res))
			return 2;
		for (i = 0; i < nf; i++) {
			if (res[i] != (int)len) {
				printf("%s: round %d: write of %" PRIu64
				       " at %" PRIu64
				       " completed with %d%s%s\n",
				       files[i], k, len, size[i], res[i],
				       res[i] < 0 ? " " : "",
				       res[i] < 0 ? en(-res[i]) : "");
				ret = 1;
				continue;
			}
			total += len;
			if (sizes(files[i], &s2, &wp))
				return 2;
			if (s2 != size[i] + len || wp != s2) {
				printf("%s: round %d: size %" PRIu64
				       " user.zone.wp %" PRIu64
				       " after a write of %" PRIu64
				       " at %" PRIu64 "\n",
				       files[i], k, s2, wp, len, size[i]);
				ret = 1;
			} else {
				ret |= verify_file(files[i], s2);
			}
		}
	}
	for (i = 0; i < nf; i++)
		close(fd[i]);
	io_uring_queue_exit(&r);
	free(buf);
	printf("writes=%d bytes=%" PRIu64 "\n", (int)(total / len), total);
	return ret;
}

static int cmd_pwrite(const char *path, uint64_t ofs, uint64_t len)
{
	struct io_uring r;
	struct io_uring_sqe *sqe;
	int fd, res = 0;
	char *buf;

	if (!len || len % 512 || ring_init(&r, 1))
		return 2;
	fd = open(path, O_WRONLY | O_DIRECT);
	if (fd < 0) {
		printf("%s\n", en(errno));
		return 0;
	}
	buf = p2z_xalloc(UR_ALIGN, len);
	pat_fill(buf, zkey(path), ofs, len);
	sqe = io_uring_get_sqe(&r);
	io_uring_prep_write(sqe, fd, buf, len, ofs);
	io_uring_sqe_set_data64(sqe, 0);
	if (ring_run(&r, 1, &res))
		return 2;
	if (res < 0)
		printf("%s\n", en(-res));
	else
		printf("%d\n", res);
	close(fd);
	io_uring_queue_exit(&r);
	free(buf);
	return 0;
}

static int cmd_verify(const char *path, uint64_t want)
{
	uint64_t size, wp;
	int ret = sizes(path, &size, &wp);

	if (ret) {
		printf("%s: stat or user.zone.wp: %s\n", path, en(-ret));
		return 1;
	}
	if (size != want || wp != want) {
		printf("%s: size %" PRIu64 ", user.zone.wp %" PRIu64
		       ", expected %" PRIu64 "\n",
		       path, size, wp, want);
		return 1;
	}
	ret = verify_file(path, size);
	if (!ret)
		printf("OK\n");
	return ret;
}

/* ---------------------------------------------------------------- load */

struct ld {
	char path[UR_NZ][4096];
	int logfd;
	struct timespec end;
	_Atomic uint64_t done[UR_NZ]; /* appended and completed below this */
	_Atomic bool stop;
	_Atomic int bad;
	_Atomic uint64_t acked, reads;
	_Atomic int writers; /* appenders still running */
	pthread_mutex_t out;
};

struct ld_th {
	struct ld *l;
	int z;
	pthread_t th;
};

static bool ld_running(struct ld *l)
{
	struct timespec now;

	if (atomic_load(&l->stop))
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec < l->end.tv_sec;
}

static void ld_bad(struct ld *l, const char *what, const char *path,
		   uint64_t ofs, int res)
{
	pthread_mutex_lock(&l->out);
	printf("%s: %s at %" PRIu64 ": %d%s%s\n", path, what, ofs, res,
	       res < 0 ? " " : "", res < 0 ? en(-res) : "");
	fflush(stdout);
	pthread_mutex_unlock(&l->out);
	atomic_fetch_add(&l->bad, 1);
	atomic_store(&l->stop, true);
}

/*
 * An appender: batches of UR_WQD writes at explicit offsets, each of 4 KiB
 * to 128 KiB; zone 0 with RWF_DSYNC, zone 1 each linked to an fsync. A
 * failed request ends it (the daemon died); a short one is a violation.
 */
static void *ld_appender(void *arg)
{
	struct ld_th *t = arg;
	struct ld *l = t->l;
	const char *path = l->path[t->z];
	uint64_t key = zkey(path), ofs, len[UR_WQD], rng = p2z_mix(t->z + 9);
	uint64_t cap = 0;
	int res[2 * UR_WQD], fd, i, n, nsqe;
	char *buf = p2z_xalloc(UR_ALIGN, UR_WQD * UR_MAX_REC), line[64];
	struct io_uring r;
	struct stat st;

	if (ring_init(&r, 2 * UR_WQD))
		goto out_free;
	/* a daemon killed before the open: nothing to do */
	fd = open(path, O_WRONLY | O_DIRECT);
	if (fd < 0)
		goto out_ring;
	if (fstat(fd, &st) || p2z_xattr_u64(path, "user.zone.capacity", &cap)) {
		close(fd);
		goto out_ring;
	}
	ofs = st.st_size;
	atomic_store(&l->done[t->z], ofs);
	while (ld_running(l)) {
		uint64_t o = ofs;
		int nw = UR_WQD;

		for (i = 0, nsqe = 0; i < UR_WQD; i++) {
			struct io_uring_sqe *sqe;

			rng = p2z_mix(rng + i);
			len[i] = (1 + rng % (UR_MAX_REC / 4096)) * 4096;
			/* the zone is full: stop before its capacity */
			if (o + len[i] > cap) {
				nw = i;
				break;
			}
			sqe = io_uring_get_sqe(&r);
			pat_fill(buf + i * UR_MAX_REC, key, o, len[i]);
			io_uring_prep_write(sqe, fd, buf + i * UR_MAX_REC,
					    len[i], o);
			if (t->z == 0)
				sqe->rw_flags = RWF_DSYNC;
			io_uring_sqe_set_data64(sqe, nsqe++);
			if (t->z == 1) {
				sqe->flags |= IOSQE_IO_LINK;
				sqe = io_uring_get_sqe(&r);
				io_uring_prep_fsync(sqe, fd, 0);
				io_uring_sqe_set_data64(sqe, nsqe++);
			}
			o += len[i];
		}
		if (!nw || ring_run(&r, nsqe, res))
			break;
		for (i = 0, n = 0; i < nw; i++, n += t->z == 1 ? 2 : 1) {
			if (res[n] < 0)
				break;
			if (res[n] != (int)len[i]) {
				ld_bad(l, "short write", path, ofs, res[n]);
				break;
			}
			if (t->z == 1 && res[n + 1] < 0)
				break;
			ofs += len[i];
			atomic_store(&l->done[t->z], ofs);
			snprintf(line, sizeof(line), "%d %" PRIu64 "\n", t->z,
				 ofs);
			if (write(l->logfd, line, strlen(line)) < 0)
				ld_bad(l, "log write", path, ofs, -errno);
			atomic_fetch_add(&l->acked, 1);
		}
		if (i < nw)
			break; /* the daemon died: done */
	}
	close(fd);
out_ring:
	io_uring_queue_exit(&r);
out_free:
	free(buf);
	atomic_fetch_sub(&l->writers, 1);
	return NULL;
}

/* The reader: UR_RQD reads in flight below what the appenders completed. */
static void *ld_reader(void *arg)
{
	struct ld_th *t = arg;
	struct ld *l = t->l;
	uint64_t rng = 12345, ofs[UR_RQD], len[UR_RQD], done;
	int fd[UR_NZ], res[UR_RQD], zi[UR_RQD], i, z;
	char *buf = p2z_xalloc(UR_ALIGN, UR_RQD * 65536);
	struct io_uring r;
	int64_t bad;

	if (ring_init(&r, UR_RQD)) {
		free(buf);
		return NULL;
	}
	for (z = 0; z < UR_NZ; z++)
		fd[z] = open(l->path[z], O_RDONLY | O_DIRECT);
	while (ld_running(l)) {
		int n = 0;

		for (i = 0; i < UR_RQD; i++) {
			struct io_uring_sqe *sqe;

			rng = p2z_mix(rng + i);
			z = rng % UR_NZ;
			done = atomic_load(&l->done[z]) / 4096;
			if (!done || fd[z] < 0)
				continue;
			zi[n] = z;
			ofs[n] = (rng >> 8) % done;
			len[n] = 1 + (rng >> 40) % 16;
			if (len[n] > done - ofs[n])
				len[n] = done - ofs[n];
			ofs[n] *= 4096;
			len[n] *= 4096;
			sqe = io_uring_get_sqe(&r);
			io_uring_prep_read(sqe, fd[z], buf + n * 65536, len[n],
					   ofs[n]);
			io_uring_sqe_set_data64(sqe, n);
			n++;
		}
		if (!n) {
			/* nothing appended yet: wait, unless none will be */
			if (!atomic_load(&l->writers))
				break;
			usleep(1000);
			continue;
		}
		if (ring_run(&r, n, res))
			break;
		for (i = 0; i < n; i++) {
			if (res[i] < 0) {
				atomic_store(&l->stop, true); /* died */
				continue;
			}
			if ((uint64_t)res[i] != len[i]) {
				ld_bad(l, "short read", l->path[zi[i]], ofs[i],
				       res[i]);
				continue;
			}
			bad = pat_check(buf + i * 65536, zkey(l->path[zi[i]]),
					ofs[i], len[i]);
			if (bad >= 0)
				ld_bad(l, "wrong bytes read", l->path[zi[i]],
				       (uint64_t)bad, res[i]);
			atomic_fetch_add(&l->reads, 1);
		}
	}
	for (z = 0; z < UR_NZ; z++)
		if (fd[z] >= 0)
			close(fd[z]);
	io_uring_queue_exit(&r);
	free(buf);
	return NULL;
}

static int cmd_load(const char *dir, const char *log, int secs)
{
	static struct ld l;
	struct ld_th th[UR_NZ + 1];
	int z;

	for (z = 0; z < UR_NZ; z++) {
		snprintf(l.path[z], sizeof(l.path[z]), "%s/%d", dir, z);
		atomic_store(&l.done[z], 0);
	}
	l.logfd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (l.logfd < 0)
		return 2;
	pthread_mutex_init(&l.out, NULL);
	atomic_store(&l.writers, UR_NZ);
	clock_gettime(CLOCK_MONOTONIC, &l.end);
	l.end.tv_sec += secs;
	for (z = 0; z <= UR_NZ; z++) {
		th[z] = (struct ld_th){ .l = &l, .z = z };
		if (pthread_create(&th[z].th, NULL,
				   z < UR_NZ ? ld_appender : ld_reader, &th[z]))
			return 2;
	}
	for (z = 0; z <= UR_NZ; z++)
		pthread_join(th[z].th, NULL);
	close(l.logfd);
	printf("acked=%" PRIu64 " reads=%" PRIu64 " bad=%d\n",
	       (uint64_t)l.acked, (uint64_t)l.reads, (int)l.bad);
	return l.bad ? 1 : 0;
}

static int cmd_check(const char *dir, const char *log)
{
	uint64_t acked[UR_NZ] = { 0 }, end, size, wp, lba = 512;
	char path[4096], line[128];
	int z, ret = 0, r;
	FILE *f = fopen(log, "r");

	if (!f)
		return 2;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%d %" SCNu64, &z, &end) == 2 && z >= 0 &&
		    z < UR_NZ && end > acked[z])
			acked[z] = end;
	fclose(f);
	snprintf(path, sizeof(path), "%s/..", dir);
	p2z_xattr_u64(path, "user.dev.lba_size", &lba);
	for (z = 0; z < UR_NZ; z++) {
		snprintf(path, sizeof(path), "%s/%d", dir, z);
		r = sizes(path, &size, &wp);
		if (r) {
			printf("%d: stat or user.zone.wp: %s\n", z, en(-r));
			ret = 1;
			continue;
		}
		if (size != wp || size % lba) {
			printf("%d: size %" PRIu64 ", user.zone.wp %" PRIu64
			       " (LBA %" PRIu64 ")\n",
			       z, size, wp, lba);
			ret = 1;
		}
		ret |= verify_file(path, size);
		printf("%d size=%" PRIu64 " acked=%" PRIu64 " lost=%" PRIu64
		       "\n",
		       z, size, acked[z],
		       acked[z] > size ? acked[z] - size : 0);
		if (z < 2 && acked[z] > size)
			ret = 1;
	}
	return ret;
}

/* ---------------------------------------------------------------- appenders */

/*
 * Records of the threaded appenders: every LBA-sized unit starts with
 * (UR_RMAGIC, thread, record number, unit index, units per record), then a
 * pattern of them.
 */
#define UR_RMAGIC 0x5a524543 /* "CERZ" */
#define UR_UNIT 512

struct ap {
	const char *path;
	uint64_t reclen;
	int count;
	_Atomic int acked, bad;
};

struct ap_th {
	struct ap *a;
	int id;
	pthread_t th;
};

static void rec_fill(char *p, uint64_t reclen, uint64_t id, uint64_t n)
{
	uint64_t u, i, *w;

	for (u = 0; u < reclen / UR_UNIT; u++) {
		w = (uint64_t *)(p + u * UR_UNIT);
		w[0] = UR_RMAGIC;
		w[1] = id;
		w[2] = n;
		w[3] = u;
		w[4] = reclen / UR_UNIT;
		for (i = 5; i < UR_UNIT / 8; i++)
			w[i] = p2z_mix(id << 48 ^ n << 24 ^ u << 8 ^ i);
	}
}

/* 0: unit @u of record @n of thread @id; -1 not */
static int rec_unit_check(const char *p, uint64_t reclen, uint64_t *id,
			  uint64_t *n, uint64_t *u)
{
	const uint64_t *w = (const uint64_t *)p;
	uint64_t i;

	if (w[0] != UR_RMAGIC || w[4] != reclen / UR_UNIT)
		return -1;
	*id = w[1];
	*n = w[2];
	*u = w[3];
	for (i = 5; i < UR_UNIT / 8; i++)
		if (w[i] != p2z_mix(*id << 48 ^ *n << 24 ^ *u << 8 ^ i))
			return -1;
	return 0;
}

static void *ap_main(void *arg)
{
	struct ap_th *t = arg;
	struct ap *a = t->a;
	char *buf = p2z_xalloc(UR_ALIGN, a->reclen);
	ssize_t ret;
	int fd, n;

	fd = open(a->path, O_WRONLY | O_APPEND | O_DIRECT);
	if (fd < 0) {
		printf("%s: open: %s\n", a->path, en(errno));
		atomic_fetch_add(&a->bad, 1);
		free(buf);
		return NULL;
	}
	for (n = 0; n < a->count; n++) {
		rec_fill(buf, a->reclen, t->id, n);
		ret = write(fd, buf, a->reclen);
		if (ret != (ssize_t)a->reclen) {
			printf("%s: thread %d: append of record %d: %zd (%s)\n",
			       a->path, t->id, n, ret,
			       ret < 0 ? en(errno) : "short");
			atomic_fetch_add(&a->bad, 1);
			break;
		}
		atomic_fetch_add(&a->acked, 1);
	}
	close(fd);
	free(buf);
	return NULL;
}

/*
 * NTHREADS threads append COUNT records of RECLEN bytes each to FILE (O_APPEND,
 * O_DIRECT, write(2)), together. Then the file, from its size before, must
 * be whole records only, each thread's numbered 0, 1, 2... in order, all of
 * them, and the size and user.zone.wp the old size + all records.
 */
static int cmd_appenders(const char *path, int nth, uint64_t reclen, int count)
{
	struct ap a = { .path = path, .reclen = reclen, .count = count };
	uint64_t size0, size, wp, ofs, id = 0, n = 0, u, next[64] = { 0 };
	struct ap_th th[64];
	char *buf;
	int i, fd, ret = 0;

	if (nth < 1 || nth > 64 || !reclen || reclen % UR_ALIGN || count < 1)
		return 2;
	if (sizes(path, &size0, &wp))
		return 2;
	for (i = 0; i < nth; i++) {
		th[i] = (struct ap_th){ .a = &a, .id = i };
		if (pthread_create(&th[i].th, NULL, ap_main, &th[i]))
			return 2;
	}
	for (i = 0; i < nth; i++)
		pthread_join(th[i].th, NULL);
	if (a.bad)
		return 1;
	if (sizes(path, &size, &wp))
		return 2;
	if (size != size0 + (uint64_t)nth * count * reclen || wp != size) {
		printf("%s: size %" PRIu64 ", user.zone.wp %" PRIu64
		       " after %d records of %" PRIu64 " from %" PRIu64 "\n",
		       path, size, wp, nth * count, reclen, size0);
		return 1;
	}
	buf = p2z_xalloc(UR_ALIGN, reclen);
	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		return 2;
	for (ofs = size0; ofs < size && !ret; ofs += reclen) {
		if (pread(fd, buf, reclen, ofs) != (ssize_t)reclen) {
			printf("%s: read at %" PRIu64 ": %s\n", path, ofs,
			       en(errno));
			ret = 1;
			break;
		}
		for (u = 0; u < reclen / UR_UNIT && !ret; u++) {
			uint64_t i2 = 0, n2 = 0, u2 = 0;

			if (rec_unit_check(buf + u * UR_UNIT, reclen, &i2, &n2,
					   &u2) ||
			    (u && (i2 != id || n2 != n)) || u2 != u ||
			    i2 >= (uint64_t)nth) {
				printf("%s: at %" PRIu64 ": not unit %" PRIu64
				       " of the record started at %" PRIu64
				       " (torn or misplaced)\n",
				       path, ofs + u * UR_UNIT, u, ofs);
				ret = 1;
			}
			id = i2;
			n = n2;
		}
		if (!ret && n != next[id]) {
			printf("%s: at %" PRIu64 ": record %" PRIu64
			       " of thread %" PRIu64 ", expected %" PRIu64
			       " (out of order)\n",
			       path, ofs, n, id, next[id]);
			ret = 1;
		}
		next[id]++;
	}
	close(fd);
	free(buf);
	if (!ret)
		printf("records=%d bytes=%" PRIu64 "\n", nth * count,
		       size - size0);
	return ret;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "write"))
		return cmd_write(strtoull(argv[2], NULL, 0), atoi(argv[3]),
				 argv + 4, argc - 4);
	if (argc == 5 && !strcmp(argv[1], "pwrite"))
		return cmd_pwrite(argv[2], strtoull(argv[3], NULL, 0),
				  strtoull(argv[4], NULL, 0));
	if (argc == 4 && !strcmp(argv[1], "verify"))
		return cmd_verify(argv[2], strtoull(argv[3], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "load"))
		return cmd_load(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "check"))
		return cmd_check(argv[2], argv[3]);
	if (argc == 6 && !strcmp(argv[1], "appenders"))
		return cmd_appenders(argv[2], atoi(argv[3]),
				     strtoull(argv[4], NULL, 0), atoi(argv[5]));
	fputs("usage: p2z_uring write LEN ROUNDS FILE... | pwrite FILE OFS LEN"
	      " | verify FILE SIZE | load DIR LOG SECONDS | check DIR LOG"
	      " | appenders FILE NTHREADS RECLEN COUNT\n",
	      stderr);
	return 2;
}
