// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * p2z_stress: concurrent operations on a few zone files of a mount, with
 * invariants checked as they run (mount test 1003, run under ASan+UBSan
 * and TSan builds of the daemon).
 *
 *   p2z_stress MNT NZONES SECONDS
 *
 * Threads, on seq/0 .. seq/NZONES-1:
 *   - one mutator per zone, the only one changing it: appends of 1 to 64
 *     LBAs (O_APPEND, O_DIRECT or not, a new open now and then), resets
 *     (truncate 0 or O_TRUNC), finishes (truncate to capacity). After each
 *     it checks the exact size and user.zone.wp (it knows them). One
 *     operation in ten is a burst: 2 to 8 O_DIRECT appends in flight on
 *     one io_uring (explicit offsets or O_APPEND): each completes whole,
 *     none succeeds after one failed, the read-back finds them in order.
 *   - two readers: cached and O_DIRECT reads of any range below the size
 *     (half of them at the end of the file), several per open file;
 *   - a checker: stat, user.zone.wp and user.zone.cond of every zone
 *     (against the completed appends: one may be in flight), and
 *     the open and active zone counts against user.dev.max_open and
 *     user.dev.max_active;
 *   - an opener: explicit opens (read-only and for writing) and closes.
 *   - an io_uring reader: batches of 16 O_DIRECT reads in flight at random
 *     offsets below the size seen before submitting (stat, and the
 *     completed appends); as each completes, it returned all it asked and
 *     nothing past user.zone.wp read after it completed (no read past the
 *     write pointer), and its blocks are checked as any reader's, unless
 *     a reset or finish overlapped it.
 *
 * Data is self-describing: every LBA carries a header (zone, generation,
 * file offset) and a pattern derived from them, so a reader checks any
 * block it gets without knowing what was written. A zone's generation
 * counts resets and finishes like a seqlock (odd while one is under way).
 * Invariants: a block read is a valid block of that zone and offset; when
 * no reset or finish ran during the read, its generation is the current
 * one, and zeros appear only past the data of a finished zone; the size
 * never shrinks within a generation; user.zone.wp equals the size when no
 * append is in flight (the mutator checks it after each operation); the
 * open and active counts stay within the limits (a sample above them is
 * only a violation when three in a row are, as conditions are read one
 * zone at a time).
 *
 * Prints "ops=N appends=N resets=N finishes=N reads=N checks=N opens=N
 *  reopen_fails=N bursts=N uring_reads=N violations=N"
 * and exits 0, or prints the violations (the first 20) and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "p2z_helpers.h"

#define ST_ALIGN 4096
#define ST_MAGIC 0x5354525a /* "ZRTS" */
#define ST_MAX_ZONES 16
#define ST_MAX_APPEND_LBA 64
#define ST_READ_MAX (1024 * 1024)
#define ST_URING_QD 16 /* reads in flight of the io_uring reader */
#define ST_URING_READ_MAX (64 * 1024)
#define ST_BURST_MAX 8 /* appends in flight of a mutator's burst */

struct st_zone {
	char path[4096];
	uint64_t cap;
	_Atomic uint64_t gen; /* odd: a reset or finish is under way */
	_Atomic uint64_t label; /* resets so far: the blocks' generation */
	_Atomic uint64_t data_end; /* data before a finish, else UINT64_MAX */
	_Atomic uint64_t acked; /* size after the last completed operation */
};

struct st_ctx {
	const char *mnt;
	uint32_t nz;
	uint64_t lba;
	uint64_t max_open, max_active;
	struct st_zone z[ST_MAX_ZONES];
	struct timespec end;
	_Atomic bool stop;
	_Atomic uint64_t appends, resets, finishes, reads, checks, opens;
	_Atomic uint64_t bursts, uring_reads; /* io_uring bursts and reads */
	_Atomic uint64_t reopen_fails; /* resets whose re-open failed */
	_Atomic int violations;
	pthread_mutex_t out_lock;
	/* Zone conditions change only under the read side (mutators,
	 * opener); the checker counts open and active zones under the write
	 * side, a consistent sample. */
	pthread_rwlock_t freeze;
};

struct st_thread {
	pthread_t th;
	struct st_ctx *c;
	uint32_t id;
	uint64_t rng;
};

static void violation(struct st_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void violation(struct st_ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&c->violations, 1) >= 20) {
		atomic_store(&c->stop, true);
		return;
	}
	pthread_mutex_lock(&c->out_lock);
	fputs("p2z_stress: VIOLATION: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	pthread_mutex_unlock(&c->out_lock);
	atomic_store(&c->stop, true);
}

static uint64_t rnd(struct st_thread *t)
{
	t->rng += 0x9e3779b97f4a7c15ULL;
	return p2z_mix(t->rng);
}

static bool running(struct st_ctx *c)
{
	struct timespec now;

	if (atomic_load(&c->stop))
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec < c->end.tv_sec ||
	       (now.tv_sec == c->end.tv_sec && now.tv_nsec < c->end.tv_nsec);
}

/* Block header: 32 bytes, then the pattern. */
struct st_blk {
	uint32_t magic;
	uint32_t zone;
	uint64_t gen;
	uint64_t ofs;
	uint64_t key;
};

static uint64_t blk_key(uint32_t zone, uint64_t gen, uint64_t ofs)
{
	return p2z_mix(p2z_mix(zone + 1) ^ p2z_mix(gen + 0x1234) ^ ofs);
}

static void blk_fill(char *p, uint64_t lba, uint32_t zone, uint64_t gen,
		     uint64_t ofs)
{
	struct st_blk *h = (struct st_blk *)p;
	uint64_t *w = (uint64_t *)p, k = blk_key(zone, gen, ofs);
	size_t i;

	for (i = sizeof(*h) / 8; i < lba / 8; i++)
		w[i] = p2z_mix(k + i);
	h->magic = ST_MAGIC;
	h->zone = zone;
	h->gen = gen;
	h->ofs = ofs;
	h->key = k;
}

/* 0: valid block of @zone at @ofs (its gen in *gen); 1: all zeros; -1 bad */
static int blk_check(const char *p, uint64_t lba, uint32_t zone, uint64_t ofs,
		     uint64_t *gen)
{
	const struct st_blk *h = (const struct st_blk *)p;
	const uint64_t *w = (const uint64_t *)p;
	size_t i;

	if (h->magic != ST_MAGIC) {
		for (i = 0; i < lba / 8; i++)
			if (w[i])
				return -1;
		return 1;
	}
	if (h->zone != zone || h->ofs != ofs ||
	    h->key != blk_key(zone, h->gen, ofs))
		return -1;
	for (i = sizeof(*h) / 8; i < lba / 8; i++)
		if (w[i] != p2z_mix(h->key + i))
			return -1;
	*gen = h->gen;
	return 0;
}

static int xattr_str(const char *path, const char *name, char *buf, size_t len)
{
	ssize_t n = getxattr(path, name, buf, len - 1);

	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static const char *en(int err)
{
	const char *n = strerrorname_np(err);

	return n ? n : "E?";
}

/* ---------------------------------------------------------------- mutator */

/* The mutator knows the size: stat and user.zone.wp must agree. */
static void check_known(struct st_ctx *c, uint32_t zi, uint64_t size,
			const char *after)
{
	struct stat st;
	uint64_t wp = 0;
	int ret;

	if (stat(c->z[zi].path, &st)) {
		violation(c, "seq/%u: stat after %s: %s", zi, after, en(errno));
		return;
	}
	if ((uint64_t)st.st_size != size)
		violation(c, "seq/%u: size %jd after %s, expected %" PRIu64, zi,
			  (intmax_t)st.st_size, after, size);
	ret = p2z_xattr_u64(c->z[zi].path, "user.zone.wp", &wp);
	if (ret || wp != size)
		violation(c,
			  "seq/%u: user.zone.wp %s%" PRIu64
			  " after %s, expected %" PRIu64,
			  zi, ret ? en(-ret) : "", ret ? 0 : wp, after, size);
}

/* Reset (or finish, to capacity): the generation is odd meanwhile. */
static void mut_truncate(struct st_thread *t, uint32_t zi, uint64_t *size,
			 bool finish)
{
	struct st_ctx *c = t->c;
	struct st_zone *z = &c->z[zi];
	int ret = 0, fd;

	atomic_fetch_add(&z->gen, 1);
	atomic_store(&z->data_end, finish ? *size : UINT64_MAX);
	if (!finish)
		atomic_fetch_add(&z->label, 1);
	fd = -1;
	/* explicit-open: opening for writing may find no open slot */
	if (!finish && rnd(t) % 4 == 0)
		fd = open(z->path, O_WRONLY | O_TRUNC);
	if (fd >= 0)
		close(fd);
	else if (truncate(z->path, finish ? z->cap : 0))
		ret = -errno;
	/*
	 * explicit-open: a reset while this thread still has the file open
	 * for writing opens the zone again, which may find no active slot
	 * left. As in zonefs_file_truncate(), the reset stands and the
	 * error is the re-open's.
	 */
	if (!finish && (ret == -EOVERFLOW || ret == -ETOOMANYREFS)) {
		atomic_fetch_add(&c->reopen_fails, 1);
		ret = 0;
	}
	if (ret)
		violation(c, "seq/%u: %s: %s", zi, finish ? "finish" : "reset",
			  en(-ret));
	else
		*size = finish ? z->cap : 0;
	atomic_store(&z->acked, *size);
	atomic_fetch_add(&z->gen, 1);
	atomic_fetch_add(finish ? &c->finishes : &c->resets, 1);
	check_known(c, zi, *size, finish ? "finish" : "reset");
}

/*
 * Read back [@from, @to) of seq/@zi: every block must be the one appended
 * there since the last reset (@gen), in order.
 */
static void check_landed(struct st_ctx *c, uint32_t zi, uint64_t from,
			 uint64_t to, uint64_t gen, char *buf)
{
	uint64_t ofs, g = 0;
	int fd, r;

	if (to <= from)
		return;
	fd = open(c->z[zi].path, O_RDONLY | O_DIRECT);
	if (fd < 0 || pread(fd, buf, to - from, from) != (ssize_t)(to - from)) {
		violation(c,
			  "seq/%u: read back of %" PRIu64 "..%" PRIu64 ": %s",
			  zi, from, to, en(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	for (ofs = from; ofs < to; ofs += c->lba) {
		r = blk_check(buf + (ofs - from), c->lba, zi, ofs, &g);
		if (r || g != gen) {
			violation(c,
				  "seq/%u: appends in flight landed out of "
				  "order: block at %" PRIu64 " is %s",
				  zi, ofs,
				  r < 0	 ? "another offset's" :
				  r == 1 ? "zeros" :
					   "of an older generation");
			return;
		}
	}
}

/*
 * A burst: 2 to ST_BURST_MAX O_DIRECT appends of 1 to 8 LBAs submitted at
 * once on one io_uring, at explicit offsets (size, size + len0, ...) or
 * with O_APPEND (not on an empty zone, where a zone limit may fail the
 * first one only). The kernel sends a size-extending direct write of a
 * FUSE file only after the previous one completed (fuse_direct_IO makes
 * it blocking, the inode lock orders them): every append must complete
 * with its full length, in submission order, and land where it was
 * meant to (the content says its offset). A limit error may fail the
 * first ones (and then every later one); nothing succeeds after a failure.
 */
static void mut_burst(struct st_thread *t, struct io_uring *ring,
		      uint64_t *size, char *buf)
{
	struct st_ctx *c = t->c;
	uint32_t zi = t->id;
	struct st_zone *z = &c->z[zi];
	uint64_t len[ST_BURST_MAX], off, gen = atomic_load(&z->label);
	int res[ST_BURST_MAX], k, i, nsub, fd, ret, err = 0;
	bool app = *size && (rnd(t) & 1);
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;

	fd = open(z->path, O_WRONLY | O_DIRECT | (app ? O_APPEND : 0));
	if (fd < 0) {
		if (errno != EBUSY)
			violation(c, "seq/%u: open for a burst: %s", zi,
				  en(errno));
		return;
	}
	atomic_fetch_add(&c->opens, 1);
	k = 2 + rnd(t) % (ST_BURST_MAX - 1);
	off = *size;
	for (nsub = 0; nsub < k; nsub++) {
		len[nsub] = (1 + rnd(t) % (ST_MAX_APPEND_LBA / ST_BURST_MAX)) *
			    c->lba;
		if (off + len[nsub] > z->cap)
			break;
		for (i = 0; (uint64_t)i < len[nsub]; i += c->lba)
			blk_fill(buf + (off - *size) + i, c->lba, zi, gen,
				 off + i);
		sqe = io_uring_get_sqe(ring);
		io_uring_prep_write(sqe, fd, buf + (off - *size), len[nsub],
				    app ? 0 : off);
		io_uring_sqe_set_data64(sqe, nsub);
		res[nsub] = 1;
		off += len[nsub];
	}
	ret = nsub ? io_uring_submit(ring) : 0;
	if (ret != nsub) {
		violation(c, "seq/%u: io_uring_submit of %d appends: %d", zi,
			  nsub, ret);
		nsub = ret > 0 ? ret : 0;
	}
	for (i = 0; i < nsub; i++) {
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret) {
			violation(c, "seq/%u: io_uring_wait_cqe: %s", zi,
				  en(-ret));
			break;
		}
		res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	close(fd);
	off = *size;
	for (i = 0; i < nsub; i++) {
		if (res[i] < 0 && !err) {
			err = -res[i];
			if (err != EOVERFLOW && err != EBUSY &&
			    err != ETOOMANYREFS)
				violation(c,
					  "seq/%u: burst append %d of %" PRIu64
					  " at %" PRIu64 ": %s",
					  zi, i, len[i], off, en(err));
		} else if (res[i] >= 0 && (err || (uint64_t)res[i] != len[i])) {
			violation(c,
				  "seq/%u: burst append %d of %" PRIu64
				  " at %" PRIu64 " returned %d%s%s",
				  zi, i, len[i], off, res[i],
				  err ? " after a failed one: " : "",
				  err ? en(err) : "");
			err = err ? err : EIO;
		} else if (!err) {
			off += len[i];
			atomic_fetch_add(&c->appends, 1);
		}
	}
	check_landed(c, zi, *size, off, gen, buf);
	*size = off;
	atomic_store(&z->acked, *size);
	atomic_fetch_add(&c->bursts, 1);
	check_known(c, zi, *size, "a burst of appends");
	if (err)
		mut_truncate(t, zi, size, false);
}

/* One random operation of a mutator on its zone. */
static void mutate(struct st_thread *t, struct io_uring *ring, int *fd,
		   uint64_t *size, char *buf)
{
	struct st_ctx *c = t->c;
	uint32_t zi = t->id;
	struct st_zone *z = &c->z[zi];
	uint64_t r = rnd(t) % 100, n, i, gen;
	bool direct;
	ssize_t ret;

	if (r < 3 || (*size == z->cap && r < 50)) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		mut_truncate(t, zi, size, false);
		return;
	}
	if (r < 4) {
		mut_truncate(t, zi, size, true);
		return;
	}
	if (r >= 90 && *size < z->cap) {
		mut_burst(t, ring, size, buf);
		return;
	}
	if (*fd < 0 || r < 8) {
		if (*fd >= 0)
			close(*fd);
		direct = rnd(t) & 1;
		*fd = open(z->path,
			   O_WRONLY | O_APPEND | (direct ? O_DIRECT : 0));
		if (*fd < 0) {
			/* explicit-open: another thread may hold the
				 * open slots */
			if (errno != EBUSY)
				violation(c, "seq/%u: open for append: %s", zi,
					  en(errno));
			return;
		}
		atomic_fetch_add(&c->opens, 1);
	}
	n = 1 + rnd(t) % ST_MAX_APPEND_LBA;
	gen = atomic_load(&z->label);
	for (i = 0; i < n; i++)
		blk_fill(buf + i * c->lba, c->lba, zi, gen, *size + i * c->lba);
	ret = write(*fd, buf, n * c->lba);
	if (ret < 0) {
		if (errno == EFBIG && *size == z->cap)
			return;
		/* the active limit, held by the other zones */
		if (errno == EOVERFLOW || errno == EBUSY ||
		    errno == ETOOMANYREFS) {
			mut_truncate(t, zi, size, false);
			return;
		}
		violation(c,
			  "seq/%u: append of %" PRIu64 " bytes at %" PRIu64
			  ": %s",
			  zi, n * c->lba, *size, en(errno));
		return;
	}
	if ((uint64_t)ret != n * c->lba && *size + ret != z->cap)
		violation(c,
			  "seq/%u: append of %" PRIu64 " at %" PRIu64
			  " returned %zd",
			  zi, n * c->lba, *size, ret);
	*size += ret;
	atomic_store(&z->acked, *size);
	atomic_fetch_add(&c->appends, 1);
	check_known(c, zi, *size, "append");
}

static void *mutator_main(void *arg)
{
	struct st_thread *t = arg;
	struct st_ctx *c = t->c;
	char *buf = p2z_xalloc(ST_ALIGN, ST_MAX_APPEND_LBA * c->lba);
	struct io_uring ring;
	uint64_t size = 0;
	int fd = -1, ret;

	ret = io_uring_queue_init(ST_BURST_MAX, &ring, 0);
	if (ret) {
		violation(c, "io_uring_queue_init: %s", en(-ret));
		free(buf);
		return NULL;
	}
	mut_truncate(t, t->id, &size, false);
	while (running(c)) {
		pthread_rwlock_rdlock(&c->freeze);
		mutate(t, &ring, &fd, &size, buf);
		pthread_rwlock_unlock(&c->freeze);
	}
	if (fd >= 0)
		close(fd);
	io_uring_queue_exit(&ring);
	free(buf);
	return NULL;
}

/* ---------------------------------------------------------------- readers */

/*
 * After a bad read: what the block at @ofs holds now, read directly and
 * through the page cache (new opens), for the report.
 */
static void reread(struct st_thread *t, uint32_t zi, uint64_t ofs,
		   char again[2][64])
{
	struct st_ctx *c = t->c;
	uint64_t gen = 0;
	char *b = p2z_xalloc(ST_ALIGN, c->lba);
	int k, fd, r;

	for (k = 0; k < 2; k++) {
		fd = open(c->z[zi].path, O_RDONLY | (k ? 0 : O_DIRECT));
		if (fd < 0 || pread(fd, b, c->lba, ofs) != (ssize_t)c->lba) {
			snprintf(again[k], 64, "fails: %s", en(errno));
		} else {
			r = blk_check(b, c->lba, zi, ofs, &gen);
			if (r == 0)
				snprintf(again[k], 64, "generation %" PRIu64,
					 gen);
			else
				snprintf(again[k], 64, "%s",
					 r == 1 ? "zeros" : "bad block");
		}
		if (fd >= 0)
			close(fd);
	}
	free(b);
}

/*
 * @label and @end were loaded after @g1 and before the read: with g1 == g2
 * (even), no reset or finish started in between, so they are the zone's
 * while the read ran. (Loaded after g2, a reset starting just then would
 * show its new label against a block read before it.)
 */
static void check_read(struct st_thread *t, uint32_t zi, const char *buf,
		       uint64_t ofs, uint64_t n, uint64_t g1, uint64_t g2,
		       uint64_t label, uint64_t end, const char *how)
{
	struct st_ctx *c = t->c;
	uint64_t i, gen;
	bool stable = g1 == g2 && !(g1 & 1);
	int r;

	for (i = 0; i < n; i += c->lba) {
		r = blk_check(buf + i, c->lba, zi, ofs + i, &gen);
		if (r < 0) {
			violation(c,
				  "seq/%u: %s read at %" PRIu64
				  ": bad block at %" PRIu64,
				  zi, how, ofs, ofs + i);
			return;
		}
		if (!stable)
			continue;
		/* zeros only past the data of a finished zone */
		if (r == 1 && ofs + i < end) {
			violation(c,
				  "seq/%u: %s read at %" PRIu64
				  ": zeros at %" PRIu64 " (data end %" PRId64
				  ")",
				  zi, how, ofs, ofs + i, (int64_t)end);
			return;
		}
		if (r == 0 && gen != label) {
			char again[2][64];

			reread(t, zi, ofs + i, again);
			violation(c,
				  "seq/%u: %s read at %" PRIu64
				  ": block at %" PRIu64
				  " written before reset %" PRIu64
				  ", now %" PRIu64 " (read again: direct %s, "
				  "cached %s)",
				  zi, how, ofs, ofs + i, gen, label, again[0],
				  again[1]);
			return;
		}
	}
}

/* One read on an open file, the range random or at the file's end. */
static void read_once(struct st_thread *t, uint32_t zi, int fd, bool direct,
		      char *buf)
{
	struct st_ctx *c = t->c;
	uint64_t g1, g2, ofs, len, nlba, label, end;
	struct stat st;
	ssize_t n;

	g1 = atomic_load(&c->z[zi].gen);
	label = atomic_load(&c->z[zi].label);
	end = atomic_load(&c->z[zi].data_end);
	if (fstat(fd, &st)) {
		violation(c, "seq/%u: fstat: %s", zi, en(errno));
		return;
	}
	nlba = (uint64_t)st.st_size / c->lba;
	ofs = nlba ? rnd(t) % nlba : 0;
	/* half the reads cover the last LBAs, where appends land */
	if (rnd(t) & 1)
		ofs = nlba > 8 ? nlba - 1 - rnd(t) % 8 : 0;
	ofs *= c->lba;
	len = (1 + rnd(t) % (ST_READ_MAX / c->lba)) * c->lba;
	n = pread(fd, buf, len, ofs);
	g2 = atomic_load(&c->z[zi].gen);
	if (n < 0)
		violation(c,
			  "seq/%u: %s read of %" PRIu64 " at %" PRIu64 ": %s",
			  zi, direct ? "direct" : "cached", len, ofs,
			  en(errno));
	else if (n % c->lba)
		violation(c, "seq/%u: read returned %zd, not whole LBAs", zi,
			  n);
	else
		check_read(t, zi, buf, ofs, n, g1, g2, label, end,
			   direct ? "direct" : "cached");
	atomic_fetch_add(&c->reads, 1);
}

static void *reader_main(void *arg)
{
	struct st_thread *t = arg;
	struct st_ctx *c = t->c;
	char *buf = p2z_xalloc(ST_ALIGN, ST_READ_MAX);
	unsigned int i, nr;
	bool direct;
	int fd;

	while (running(c)) {
		uint32_t zi = rnd(t) % c->nz;

		direct = rnd(t) & 1;
		fd = open(c->z[zi].path, O_RDONLY | (direct ? O_DIRECT : 0));
		if (fd < 0) {
			violation(c, "seq/%u: open for reading: %s", zi,
				  en(errno));
			continue;
		}
		atomic_fetch_add(&c->opens, 1);
		/* several reads on one open file: its page cache lives on
		 * while the zone grows */
		nr = 1 + rnd(t) % 16;
		for (i = 0; i < nr && running(c); i++)
			read_once(t, zi, fd, direct, buf);
		close(fd);
	}
	free(buf);
	return NULL;
}

/*
 * One batch of the io_uring reader: ST_URING_QD O_DIRECT reads in flight
 * at random offsets below the size seen before the submission (stat and
 * completed appends; half of them on the last LBAs). As each completes: its bytes are valid blocks
 * (check_read), and, when no reset or finish ran meanwhile, a read wholly
 * below that size returned all of it, and what it returned ends at or
 * below user.zone.wp read after it completed: no read returns bytes past
 * the write pointer.
 */
static void uring_batch(struct st_thread *t, struct io_uring *ring, uint32_t zi,
			int fd, char *buf)
{
	struct st_ctx *c = t->c;
	struct st_zone *z = &c->z[zi];
	uint64_t g1, g2, label, end, acked, nlba, wp = 0, ofs[ST_URING_QD],
						  len[ST_URING_QD];
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct stat st;
	int i, n, ret, res;
	bool stable;

	g1 = atomic_load(&z->gen);
	label = atomic_load(&z->label);
	end = atomic_load(&z->data_end);
	acked = atomic_load(&z->acked);
	if (fstat(fd, &st)) {
		violation(c, "seq/%u: fstat: %s", zi, en(errno));
		return;
	}
	/*
	 * Below what completed appends made the size: the kernel's size of
	 * the file is at least that (fstat may show more than it applied),
	 * so no read here may come back short. A short O_DIRECT read of a
	 * FUSE file through io_uring is retried by io_uring at the same
	 * offset (fuse_direct_IO() does not advance ki_pos; seen on 6.18):
	 * the bytes before the size again, in place of what lies past it.
	 * Reads crossing the size are the psync readers'; the bytes of a
	 * read that a reset or finish overlapped (it may come back short,
	 * then so filled) are not checked.
	 */
	nlba = ((uint64_t)st.st_size < acked ? (uint64_t)st.st_size : acked) /
	       c->lba;
	if (!nlba)
		return;
	for (i = 0; i < ST_URING_QD; i++) {
		ofs[i] = rnd(t) % nlba;
		if (rnd(t) & 1)
			ofs[i] = nlba > 8 ? nlba - 1 - rnd(t) % 8 : 0;
		ofs[i] *= c->lba;
		len[i] = (1 + rnd(t) % (ST_URING_READ_MAX / c->lba)) * c->lba;
		if (len[i] > nlba * c->lba - ofs[i])
			len[i] = nlba * c->lba - ofs[i];
		sqe = io_uring_get_sqe(ring);
		io_uring_prep_read(sqe, fd, buf + i * ST_URING_READ_MAX, len[i],
				   ofs[i]);
		io_uring_sqe_set_data64(sqe, i);
	}
	n = io_uring_submit(ring);
	if (n != ST_URING_QD) {
		violation(c, "seq/%u: io_uring_submit of %d reads: %d", zi,
			  ST_URING_QD, n);
		if (n < 0)
			return;
	}
	while (n-- > 0) {
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret) {
			violation(c, "seq/%u: io_uring_wait_cqe: %s", zi,
				  en(-ret));
			return;
		}
		i = (int)cqe->user_data;
		res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		ret = p2z_xattr_u64(z->path, "user.zone.wp", &wp);
		g2 = atomic_load(&z->gen);
		stable = g1 == g2 && !(g1 & 1);
		atomic_fetch_add(&c->uring_reads, 1);
		if (res < 0 || res % c->lba) {
			violation(c,
				  "seq/%u: io_uring read of %" PRIu64
				  " at %" PRIu64 ": %d (%s)",
				  zi, len[i], ofs[i], res,
				  res < 0 ? en(-res) : "not whole LBAs");
			continue;
		}
		if (ret) {
			violation(c, "seq/%u: user.zone.wp: %s", zi, en(-ret));
			continue;
		}
		if (stable && ofs[i] + res > wp)
			violation(c,
				  "seq/%u: io_uring read of %" PRIu64
				  " at %" PRIu64 " returned %d bytes, past "
				  "user.zone.wp %" PRIu64 " read after it",
				  zi, len[i], ofs[i], res, wp);
		else if (stable && ofs[i] + len[i] <= acked &&
			 (uint64_t)res != len[i])
			violation(c,
				  "seq/%u: io_uring read of %" PRIu64
				  " at %" PRIu64 " returned %d, below the "
				  "size %" PRIu64 " appended before it "
				  "(user.zone.wp %" PRIu64 " after it)",
				  zi, len[i], ofs[i], res, acked, wp);
		else if (stable)
			check_read(t, zi, buf + i * ST_URING_READ_MAX, ofs[i],
				   res, g1, g2, label, end, "io_uring");
	}
}

/* The io_uring reader: batches of ST_URING_QD reads on one open file. */
static void *uring_reader_main(void *arg)
{
	struct st_thread *t = arg;
	struct st_ctx *c = t->c;
	char *buf = p2z_xalloc(ST_ALIGN, ST_URING_QD * ST_URING_READ_MAX);
	struct io_uring ring;
	unsigned int i, nr;
	int fd, ret;

	ret = io_uring_queue_init(ST_URING_QD, &ring, 0);
	if (ret) {
		violation(c, "io_uring_queue_init: %s", en(-ret));
		free(buf);
		return NULL;
	}
	while (running(c)) {
		uint32_t zi = rnd(t) % c->nz;

		fd = open(c->z[zi].path, O_RDONLY | O_DIRECT);
		if (fd < 0) {
			violation(c, "seq/%u: open for reading: %s", zi,
				  en(errno));
			continue;
		}
		atomic_fetch_add(&c->opens, 1);
		nr = 1 + rnd(t) % 8;
		for (i = 0; i < nr && running(c); i++)
			uring_batch(t, &ring, zi, fd, buf);
		close(fd);
	}
	io_uring_queue_exit(&ring);
	free(buf);
	return NULL;
}

/* ---------------------------------------------------------------- checker */

/* Open and active zones by user.zone.cond; conditions are frozen. */
static void count_active(struct st_ctx *c, uint64_t *nopen, uint64_t *nactive)
{
	char cond[64];
	uint32_t zi;

	for (zi = 0; zi < c->nz; zi++) {
		if (xattr_str(c->z[zi].path, "user.zone.cond", cond,
			      sizeof(cond))) {
			violation(c, "seq/%u: user.zone.cond: %s", zi,
				  en(errno));
			continue;
		}
		if (!strcmp(cond, "implicit-open") ||
		    !strcmp(cond, "explicit-open"))
			(*nopen)++, (*nactive)++;
		else if (!strcmp(cond, "closed"))
			(*nactive)++;
		else if (strcmp(cond, "empty") && strcmp(cond, "full"))
			violation(c, "seq/%u: user.zone.cond '%s'", zi, cond);
	}
}

static void *checker_main(void *arg)
{
	struct st_thread *t = arg;
	struct st_ctx *c = t->c;
	uint64_t last_gen[ST_MAX_ZONES], last_size[ST_MAX_ZONES];
	char cond[64];
	uint32_t zi;

	memset(last_gen, 0xff, sizeof(last_gen));
	while (running(c)) {
		uint64_t nopen = 0, nactive = 0;

		for (zi = 0; zi < c->nz; zi++) {
			struct st_zone *z = &c->z[zi];
			uint64_t g1 = atomic_load(&z->gen), g2, wp = 0, a1, a2;
			struct stat s1, s2;
			int ret;

			a1 = atomic_load(&z->acked);
			if (stat(z->path, &s1) ||
			    (ret = p2z_xattr_u64(z->path, "user.zone.wp",
						 &wp)) ||
			    xattr_str(z->path, "user.zone.cond", cond,
				      sizeof(cond)) ||
			    stat(z->path, &s2)) {
				violation(c, "seq/%u: stat or getxattr: %s", zi,
					  en(errno));
				continue;
			}
			a2 = atomic_load(&z->acked);
			g2 = atomic_load(&z->gen);
			if (g1 != g2 || (g1 & 1))
				continue;
			/*
			 * The kernel may show the size before an append in
			 * flight (its write has not returned), the device the
			 * size after it: a completed append is in the size,
			 * the size never runs ahead of the write pointer,
			 * which runs ahead by one append at most.
			 */
			if ((uint64_t)s1.st_size < a1 ||
			    (uint64_t)s1.st_size > (uint64_t)s2.st_size ||
			    (uint64_t)s1.st_size > wp ||
			    wp > a2 + ST_MAX_APPEND_LBA * c->lba)
				violation(
					c,
					"seq/%u: sizes %jd, %jd around user.zone.wp %" PRIu64
					", appended %" PRIu64 " then %" PRIu64,
					zi, (intmax_t)s1.st_size,
					(intmax_t)s2.st_size, wp, a1, a2);
			if (last_gen[zi] == g1 &&
			    (uint64_t)s1.st_size < last_size[zi])
				violation(c,
					  "seq/%u: size went from %" PRIu64
					  " to %jd without a reset",
					  zi, last_size[zi],
					  (intmax_t)s1.st_size);
			last_gen[zi] = g1;
			last_size[zi] = s2.st_size;
		}
		pthread_rwlock_wrlock(&c->freeze);
		count_active(c, &nopen, &nactive);
		pthread_rwlock_unlock(&c->freeze);
		if ((c->max_open && nopen > c->max_open) ||
		    (c->max_active && nactive > c->max_active))
			violation(c,
				  "%" PRIu64 " open, %" PRIu64
				  " active zones (limits %" PRIu64 ", %" PRIu64
				  ")",
				  nopen, nactive, c->max_open, c->max_active);
		atomic_fetch_add(&c->checks, 1);
	}
	return NULL;
}

/* ---------------------------------------------------------------- opener */

static void *opener_main(void *arg)
{
	struct st_thread *t = arg;
	struct st_ctx *c = t->c;
	int held[2] = { -1, -1 }, fd, i;

	while (running(c)) {
		uint32_t zi = rnd(t) % c->nz;
		bool wr = rnd(t) % 3 == 0;

		pthread_rwlock_rdlock(&c->freeze);
		fd = open(c->z[zi].path, wr ? O_WRONLY | O_APPEND : O_RDONLY);
		pthread_rwlock_unlock(&c->freeze);
		if (fd < 0) {
			if (!(wr && errno == EBUSY))
				violation(c, "seq/%u: open (%s): %s", zi,
					  wr ? "write" : "read", en(errno));
			continue;
		}
		atomic_fetch_add(&c->opens, 1);
		i = rnd(t) % 2;
		pthread_rwlock_rdlock(&c->freeze);
		if (held[i] >= 0)
			close(held[i]);
		pthread_rwlock_unlock(&c->freeze);
		held[i] = fd;
		usleep(rnd(t) % 2000);
	}
	for (i = 0; i < 2; i++)
		if (held[i] >= 0)
			close(held[i]);
	return NULL;
}

/* ---------------------------------------------------------------- main */

static int setup(struct st_ctx *c, char **av)
{
	pthread_rwlockattr_t ra;
	char root[4096];
	uint32_t zi;
	int ret;

	c->mnt = av[0];
	c->nz = strtoul(av[1], NULL, 10);
	if (!c->nz || c->nz > ST_MAX_ZONES)
		return -EINVAL;
	snprintf(root, sizeof(root), "%s", c->mnt);
	ret = p2z_xattr_u64(root, "user.dev.lba_size", &c->lba);
	if (!ret)
		ret = p2z_xattr_u64(root, "user.dev.max_open", &c->max_open);
	if (!ret)
		ret = p2z_xattr_u64(root, "user.dev.max_active",
				    &c->max_active);
	for (zi = 0; !ret && zi < c->nz; zi++) {
		snprintf(c->z[zi].path, sizeof(c->z[zi].path), "%s/seq/%u",
			 c->mnt, zi);
		c->z[zi].data_end = UINT64_MAX;
		ret = p2z_xattr_u64(c->z[zi].path, "user.zone.capacity",
				    &c->z[zi].cap);
	}
	if (ret)
		return ret;
	clock_gettime(CLOCK_MONOTONIC, &c->end);
	c->end.tv_sec += strtoul(av[2], NULL, 10);
	pthread_mutex_init(&c->out_lock, NULL);
	pthread_rwlockattr_init(&ra);
	/* the checker must not starve behind the mutators */
	pthread_rwlockattr_setkind_np(
		&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&c->freeze, &ra);
	pthread_rwlockattr_destroy(&ra);
	return 0;
}

int main(int argc, char **argv)
{
	static struct st_ctx c;
	struct st_thread th[ST_MAX_ZONES + 5];
	void *(*fn)(void *);
	uint32_t i, n;
	int ret;

	if (argc != 4) {
		fputs("usage: p2z_stress MNT NZONES SECONDS\n", stderr);
		return 2;
	}
	ret = setup(&c, argv + 1);
	if (ret) {
		fprintf(stderr, "p2z_stress: setup: %s\n", en(-ret));
		return 2;
	}
	n = c.nz + 5;
	for (i = 0; i < n; i++) {
		th[i] = (struct st_thread){ .c = &c,
					    .id = i,
					    .rng = p2z_mix(i + 77) };
		if (i < c.nz)
			fn = mutator_main;
		else if (i < c.nz + 2)
			fn = reader_main;
		else if (i == c.nz + 2)
			fn = checker_main;
		else if (i == c.nz + 3)
			fn = opener_main;
		else
			fn = uring_reader_main;
		if (pthread_create(&th[i].th, NULL, fn, &th[i])) {
			fprintf(stderr, "p2z_stress: pthread_create failed\n");
			return 2;
		}
	}
	for (i = 0; i < n; i++)
		pthread_join(th[i].th, NULL);
	printf("ops=%" PRIu64 " appends=%" PRIu64 " resets=%" PRIu64
	       " finishes=%" PRIu64 " reads=%" PRIu64 " checks=%" PRIu64
	       " opens=%" PRIu64 " reopen_fails=%" PRIu64 " bursts=%" PRIu64
	       " uring_reads=%" PRIu64 " violations=%d\n",
	       c.appends + c.resets + c.finishes + c.reads + c.checks +
		       c.opens + c.uring_reads,
	       (uint64_t)c.appends, (uint64_t)c.resets, (uint64_t)c.finishes,
	       (uint64_t)c.reads, (uint64_t)c.checks, (uint64_t)c.opens,
	       (uint64_t)c.reopen_fails, (uint64_t)c.bursts,
	       (uint64_t)c.uring_reads, (int)c.violations);
	return c.violations ? 1 : 0;
}
