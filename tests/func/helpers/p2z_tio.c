// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * p2z_tio: one system call (or a short loop of them) per invocation, for the
 * mount tests. Prints the outcome on stdout in a form a shell test can
 * compare exactly: a byte count, "OK", or the errno name (EINVAL, EFBIG...).
 * Exit status 0 whatever the outcome of the tested call; 2 on bad usage or
 * when the helper itself fails (allocation, stdout).
 *
 * FILE may be "fd:N" to use a descriptor inherited from the shell (exec 5<f),
 * so a test can keep a file open across several commands.
 *
 * Data written and checked is a pattern: byte x of stream SEED is a function
 * of (SEED, x), so any range can be produced or verified without keeping a
 * copy. By default the pattern index is the file offset; -P gives the index
 * of the first byte instead (the po2 view shows zone data at other offsets).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <unistd.h>

#define TIO_ALIGN 4096
#define TIO_DEF_CHUNK (1024 * 1024)

struct tio_opts {
	uint64_t seed;
	bool seed_set;
	bool zeros;
	bool pat_set;
	uint64_t pat_ofs;
	int oflags;
	uint64_t chunk;
	bool fsync;
	int rwf; /* pwritev2() flags, 0: pwrite() */
	const char *ref_path;
};

static const char *errname(int err)
{
	const char *n = strerrorname_np(err);

	return n ? n : "EUNKNOWN";
}

static void usage(void)
{
	fputs("usage: p2z_tio CMD ARGS\n"
	      "  write FILE OFS LEN [-s SEED|-z] [-P PATOFS] [-a] [-t] [-d]"
	      " [-b CHUNK] [-S]\n"
	      "        [-D (O_DSYNC)] [-Y (O_SYNC)] [-R (RWF_DSYNC)]\n"
	      "  read FILE OFS LEN [-s SEED|-z|-f REFFILE] [-P PATOFS] [-d]"
	      " [-b CHUNK]\n"
	      "  pattern SEED OFS LEN      (pattern bytes to stdout)\n"
	      "  open FILE r|w|rw[,creat,excl,trunc,append,direct]\n"
	      "  truncate FILE SIZE | fsync FILE\n"
	      "  setfl fd:N +append|-append   (fcntl F_SETFL on a shared fd)\n"
	      "  mmap FILE ro [SEED] | mmap FILE rw [SEED OFS LEN]\n"
	      "  unlink P | rmdir P | mkdir P | mknod P | rename A B\n"
	      "  link A B | symlink TARGET P\n"
	      "  getxattr F NAME | setxattr F NAME VAL | removexattr F NAME\n"
	      "  listxattr F | stat F | statfs PATH\n"
	      "  eofrace FILE COUNT CHUNK READERS SEED\n",
	      stderr);
	exit(2);
}

/* Decimal (or 0x hex) with an optional K/M/G binary suffix. */
static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-') {
		fprintf(stderr, "p2z_tio: bad number '%s'\n", s);
		exit(2);
	}
	switch (*end) {
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end) {
		fprintf(stderr, "p2z_tio: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Fill @buf with @len bytes of stream @seed starting at index @idx. */
static void pattern_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t idx,
			 bool zeros)
{
	uint64_t word = 0, wi = UINT64_MAX;
	size_t i;

	if (zeros) {
		memset(buf, 0, len);
		return;
	}
	for (i = 0; i < len; i++) {
		uint64_t x = idx + i;

		if (x / 8 != wi) {
			wi = x / 8;
			word = splitmix64(seed * 0x2545f4914f6cdd1dULL ^ wi);
		}
		buf[i] = (uint8_t)(word >> (8 * (x % 8)));
	}
}

/* Fill @buf with @len bytes of file @path from offset @ofs (zeros past its
 * end, so a short reference shows as a mismatch on non-zero data).
 */
static void ref_fill(uint8_t *buf, size_t len, const char *path, uint64_t ofs)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0) {
		fprintf(stderr, "p2z_tio: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	memset(buf, 0, len);
	n = pread(fd, buf, len, (off_t)ofs);
	close(fd);
	if (n < 0) {
		fprintf(stderr, "p2z_tio: %s: %s\n", path, strerror(errno));
		exit(2);
	}
}

static int parse_opts(int argc, char **argv, struct tio_opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->chunk = 0;
	optind = 1;
	while ((c = getopt(argc, argv, "s:zP:atdb:Sf:DYR")) != -1) {
		switch (c) {
		case 'f':
			o->ref_path = optarg;
			break;
		case 's':
			o->seed = parse_size(optarg);
			o->seed_set = true;
			break;
		case 'z':
			o->zeros = true;
			break;
		case 'P':
			o->pat_ofs = parse_size(optarg);
			o->pat_set = true;
			break;
		case 'a':
			o->oflags |= O_APPEND;
			break;
		case 't':
			o->oflags |= O_TRUNC;
			break;
		case 'd':
			o->oflags |= O_DIRECT;
			break;
		case 'b':
			o->chunk = parse_size(optarg);
			break;
		case 'S':
			o->fsync = true;
			break;
		case 'D':
			o->oflags |= O_DSYNC;
			break;
		case 'Y':
			o->oflags |= O_SYNC;
			break;
		case 'R':
			o->rwf |= RWF_DSYNC;
			break;
		default:
			usage();
		}
	}
	return optind;
}

/* Open @path, or take the inherited descriptor "fd:N". */
static int tio_open(const char *path, int flags, bool *owned)
{
	int fd;

	if (!strncmp(path, "fd:", 3)) {
		*owned = false;
		return (int)parse_size(path + 3);
	}
	*owned = true;
	fd = open(path, flags, 0640);
	return fd < 0 ? -errno : fd;
}

static void *xalloc(size_t len)
{
	void *p;

	if (posix_memalign(&p, TIO_ALIGN, len ? len : TIO_ALIGN)) {
		fputs("p2z_tio: out of memory\n", stderr);
		exit(2);
	}
	return p;
}

/* "N", "ERR" when nothing was done, "N ERR" when it stopped after N bytes. */
static void print_result(uint64_t done, int err, const char *extra)
{
	if (err && !done)
		printf("%s\n", errname(err));
	else if (err)
		printf("%" PRIu64 " %s\n", done, errname(err));
	else
		printf("%" PRIu64 "%s\n", done, extra);
}

static int cmd_write(int argc, char **argv)
{
	struct tio_opts o;
	uint64_t ofs, len, done = 0, chunk;
	bool owned;
	uint8_t *buf;
	int fd, err = 0, i = parse_opts(argc, argv, &o);

	if (argc - i != 3)
		usage();
	ofs = parse_size(argv[i + 1]);
	len = parse_size(argv[i + 2]);
	if (!o.pat_set)
		o.pat_ofs = ofs;
	chunk = o.chunk ? o.chunk : len;
	buf = xalloc(chunk);
	fd = tio_open(argv[i], O_WRONLY | o.oflags, &owned);
	if (fd < 0) {
		print_result(0, -fd, "");
		free(buf);
		return 0;
	}
	while (done < len) {
		size_t n = len - done < chunk ? len - done : chunk;
		struct iovec iov = { .iov_base = buf, .iov_len = n };
		ssize_t ret;

		pattern_fill(buf, n, o.seed, o.pat_ofs + done, o.zeros);
		if (o.rwf)
			ret = pwritev2(fd, &iov, 1, (off_t)(ofs + done), o.rwf);
		else
			ret = pwrite(fd, buf, n, (off_t)(ofs + done));
		if (ret < 0) {
			err = errno;
			break;
		}
		done += (uint64_t)ret;
		if ((size_t)ret < n)
			break; /* short write: report how far it got */
	}
	if (!err && o.fsync && fsync(fd))
		err = errno;
	if (len == 0) {
		ssize_t ret = pwrite(fd, buf, 0, (off_t)ofs);

		err = ret < 0 ? errno : 0;
	}
	if (owned && close(fd) && !err)
		err = errno;
	print_result(done, err, "");
	free(buf);
	return 0;
}

static int cmd_read(int argc, char **argv)
{
	struct tio_opts o;
	uint64_t ofs, len, done = 0, chunk, bad = UINT64_MAX;
	uint8_t *buf, *ref;
	bool owned;
	int fd, err = 0, i = parse_opts(argc, argv, &o);
	char extra[64] = "";

	if (argc - i != 3)
		usage();
	ofs = parse_size(argv[i + 1]);
	len = parse_size(argv[i + 2]);
	if (!o.pat_set)
		o.pat_ofs = ofs;
	chunk = o.chunk ? o.chunk : (len < TIO_DEF_CHUNK ? len : TIO_DEF_CHUNK);
	buf = xalloc(chunk);
	ref = xalloc(chunk);
	fd = tio_open(argv[i], O_RDONLY | o.oflags, &owned);
	if (fd < 0) {
		print_result(0, -fd, "");
		free(buf);
		free(ref);
		return 0;
	}
	while (done < len) {
		size_t n = len - done < chunk ? len - done : chunk;
		ssize_t ret = pread(fd, buf, n, (off_t)(ofs + done));
		size_t k;

		if (ret < 0) {
			err = errno;
			break;
		}
		if (ret == 0)
			break; /* end of file */
		if ((o.seed_set || o.zeros || o.ref_path) &&
		    bad == UINT64_MAX) {
			if (o.ref_path)
				ref_fill(ref, (size_t)ret, o.ref_path, done);
			else
				pattern_fill(ref, (size_t)ret, o.seed,
					     o.pat_ofs + done, o.zeros);
			for (k = 0; k < (size_t)ret; k++) {
				if (buf[k] != ref[k]) {
					bad = ofs + done + k;
					break;
				}
			}
		}
		done += (uint64_t)ret;
	}
	if (len == 0 && pread(fd, buf, 0, (off_t)ofs) < 0)
		err = errno;
	if (owned)
		close(fd);
	if (bad != UINT64_MAX)
		snprintf(extra, sizeof(extra), " MISMATCH@%" PRIu64, bad);
	print_result(done, err, extra);
	free(buf);
	free(ref);
	return 0;
}

static int cmd_pattern(int argc, char **argv)
{
	uint64_t seed, idx, len;
	uint8_t *buf;

	if (argc != 4)
		usage();
	seed = parse_size(argv[1]);
	idx = parse_size(argv[2]);
	len = parse_size(argv[3]);
	buf = xalloc(TIO_DEF_CHUNK);
	while (len) {
		size_t n = len < TIO_DEF_CHUNK ? len : TIO_DEF_CHUNK;

		pattern_fill(buf, n, seed, idx, false);
		if (fwrite(buf, 1, n, stdout) != n) {
			fputs("p2z_tio: write error\n", stderr);
			exit(2);
		}
		idx += n;
		len -= n;
	}
	free(buf);
	return 0;
}

static int parse_oflags(const char *s)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int flags = 0;

	if (!dup)
		exit(2);
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "r"))
			flags |= O_RDONLY;
		else if (!strcmp(tok, "w"))
			flags |= O_WRONLY;
		else if (!strcmp(tok, "rw"))
			flags |= O_RDWR;
		else if (!strcmp(tok, "creat"))
			flags |= O_CREAT;
		else if (!strcmp(tok, "excl"))
			flags |= O_EXCL;
		else if (!strcmp(tok, "trunc"))
			flags |= O_TRUNC;
		else if (!strcmp(tok, "append"))
			flags |= O_APPEND;
		else if (!strcmp(tok, "direct"))
			flags |= O_DIRECT;
		else
			usage();
	}
	free(dup);
	return flags;
}

static void print_ok(int ret)
{
	if (ret < 0)
		printf("%s\n", errname(errno));
	else
		puts("OK");
}

static int cmd_open(int argc, char **argv)
{
	int fd;

	if (argc != 3)
		usage();
	fd = open(argv[1], parse_oflags(argv[2]), 0640);
	print_ok(fd);
	if (fd >= 0 && close(fd))
		printf("close: %s\n", errname(errno));
	return 0;
}

/*
 * fcntl(F_SETFL) on an inherited descriptor: the change lands on the open
 * file description the shell shares, so later commands on fd:N see it.
 */
static int cmd_setfl(int argc, char **argv)
{
	int fd, fl;

	if (argc != 3 || strncmp(argv[1], "fd:", 3) ||
	    (strcmp(argv[2], "+append") && strcmp(argv[2], "-append")))
		usage();
	fd = (int)parse_size(argv[1] + 3);
	fl = fcntl(fd, F_GETFL);
	if (fl < 0) {
		print_ok(fl);
		return 0;
	}
	if (argv[2][0] == '+')
		fl |= O_APPEND;
	else
		fl &= ~O_APPEND;
	print_ok(fcntl(fd, F_SETFL, fl));
	return 0;
}

static int cmd_truncate(int argc, char **argv)
{
	uint64_t size;

	if (argc != 3)
		usage();
	size = parse_size(argv[2]);
	if (!strncmp(argv[1], "fd:", 3))
		print_ok(ftruncate((int)parse_size(argv[1] + 3), (off_t)size));
	else
		print_ok(truncate(argv[1], (off_t)size));
	return 0;
}

static int cmd_fsync(int argc, char **argv)
{
	bool owned;
	int fd;

	if (argc != 2)
		usage();
	fd = tio_open(argv[1], O_RDONLY, &owned);
	if (fd < 0) {
		printf("%s\n", errname(-fd));
		return 0;
	}
	print_ok(fsync(fd));
	if (owned)
		close(fd);
	return 0;
}

/*
 * Store pattern SEED at [ofs, ofs + len) of a shared writable mapping, then
 * msync(MS_SYNC): OK, or the errno name of msync.
 */
static void mmap_store(uint8_t *p, size_t map_len, const char *seed,
		       const char *ofs_s, const char *len_s)
{
	uint64_t ofs = parse_size(ofs_s), len = parse_size(len_s);

	if (ofs > map_len || len > map_len - ofs) {
		fprintf(stderr, "p2z_tio: mmap range past the file size\n");
		exit(2);
	}
	pattern_fill(p + ofs, (size_t)len, parse_size(seed), ofs, false);
	if (msync(p, map_len, MS_SYNC))
		printf("%s\n", errname(errno));
	else
		puts("OK");
}

/* Compare a read-only mapping with pattern SEED: OK or MISMATCH@OFS. */
static void mmap_check(const uint8_t *p, size_t len, const char *seed)
{
	uint8_t *ref = xalloc(len);
	size_t k;

	pattern_fill(ref, len, parse_size(seed), 0, false);
	for (k = 0; k < len; k++)
		if (p[k] != ref[k])
			break;
	free(ref);
	if (k < len)
		printf("MISMATCH@%zu\n", k);
	else
		puts("OK");
}

/*
 * "ro [SEED]": a shared read mapping (checked against pattern SEED when
 * given); "rw": a shared mapping with PROT_WRITE; "rw SEED OFS LEN" also
 * stores pattern bytes through it and msyncs them.
 */
static int cmd_mmap(int argc, char **argv)
{
	struct stat st;
	uint8_t *p;
	size_t len;
	bool rw;
	int fd;

	rw = argc >= 3 && !strcmp(argv[2], "rw");
	if (argc < 3 || (rw && argc != 3 && argc != 6) ||
	    (!rw && argc != 3 && argc != 4))
		usage();
	fd = open(argv[1], rw ? O_RDWR : O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		printf("%s\n", errname(errno));
		return 0;
	}
	len = st.st_size ? (size_t)st.st_size : TIO_ALIGN;
	p = mmap(NULL, len, rw ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED,
		 fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		printf("%s\n", errname(errno));
		return 0;
	}
	if (rw && argc == 6)
		mmap_store(p, (size_t)st.st_size, argv[3], argv[4], argv[5]);
	else if (argc == 4)
		mmap_check(p, (size_t)st.st_size, argv[3]);
	else
		puts("OK");
	munmap(p, len);
	return 0;
}

static int cmd_path_ops(int argc, char **argv)
{
	const char *c = argv[0];

	if (!strcmp(c, "unlink") && argc == 2)
		print_ok(unlink(argv[1]));
	else if (!strcmp(c, "rmdir") && argc == 2)
		print_ok(rmdir(argv[1]));
	else if (!strcmp(c, "mkdir") && argc == 2)
		print_ok(mkdir(argv[1], 0755));
	else if (!strcmp(c, "mknod") && argc == 2)
		print_ok(mknod(argv[1], S_IFIFO | 0640, 0));
	else if (!strcmp(c, "rename") && argc == 3)
		print_ok(rename(argv[1], argv[2]));
	else if (!strcmp(c, "link") && argc == 3)
		print_ok(link(argv[1], argv[2]));
	else if (!strcmp(c, "symlink") && argc == 3)
		print_ok(symlink(argv[1], argv[2]));
	else
		usage();
	return 0;
}

static int cmd_xattr(int argc, char **argv)
{
	const char *c = argv[0];
	char buf[4096];
	ssize_t n, i;

	if (!strcmp(c, "getxattr") && argc == 3) {
		n = getxattr(argv[1], argv[2], buf, sizeof(buf) - 1);
		if (n < 0) {
			printf("%s\n", errname(errno));
			return 0;
		}
		buf[n] = '\0';
		printf("%s\n", buf);
	} else if (!strcmp(c, "setxattr") && argc == 4) {
		print_ok(setxattr(argv[1], argv[2], argv[3], strlen(argv[3]),
				  0));
	} else if (!strcmp(c, "removexattr") && argc == 3) {
		print_ok(removexattr(argv[1], argv[2]));
	} else if (!strcmp(c, "listxattr") && argc == 2) {
		n = listxattr(argv[1], buf, sizeof(buf));
		if (n < 0) {
			printf("%s\n", errname(errno));
			return 0;
		}
		for (i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
			printf("%s\n", buf + i);
	} else {
		usage();
	}
	return 0;
}

static int cmd_stat(int argc, char **argv)
{
	struct stat st;

	if (argc != 2)
		usage();
	if (stat(argv[1], &st)) {
		printf("%s\n", errname(errno));
		return 0;
	}
	printf("size=%lld blocks=%lld blksize=%ld mode=%04o type=%s uid=%u "
	       "gid=%u ino=%llu nlink=%lu\n",
	       (long long)st.st_size, (long long)st.st_blocks,
	       (long)st.st_blksize, st.st_mode & 07777,
	       S_ISDIR(st.st_mode) ? "dir" :
	       S_ISREG(st.st_mode) ? "reg" :
				     "other",
	       st.st_uid, st.st_gid, (unsigned long long)st.st_ino,
	       (unsigned long)st.st_nlink);
	return 0;
}

static int cmd_statfs(int argc, char **argv)
{
	struct statvfs sv;

	if (argc != 2)
		usage();
	if (statvfs(argv[1], &sv)) {
		printf("%s\n", errname(errno));
		return 0;
	}
	printf("bsize=%lu frsize=%lu blocks=%llu bfree=%llu bavail=%llu "
	       "files=%llu ffree=%llu namemax=%lu ro=%d\n",
	       sv.f_bsize, sv.f_frsize, (unsigned long long)sv.f_blocks,
	       (unsigned long long)sv.f_bfree, (unsigned long long)sv.f_bavail,
	       (unsigned long long)sv.f_files, (unsigned long long)sv.f_ffree,
	       sv.f_namemax, (sv.f_flag & ST_RDONLY) ? 1 : 0);
	return 0;
}

/* Shared by the appender and the readers of cmd_eofrace(). */
struct tio_race {
	volatile int stop;
	uint64_t reads[16];
	uint64_t bad[16];
};

/*
 * A cached reader: read the last 8 KiB before the size it last saw, again
 * and again, and check every byte returned against the pattern.
 */
static void race_reader(const char *path, uint64_t seed, struct tio_race *r,
			unsigned int id)
{
	uint8_t buf[8192], ref[8192];
	int fd = open(path, O_RDONLY);
	struct stat st;

	if (fd < 0)
		_exit(2);
	while (!r->stop) {
		off_t ofs;
		ssize_t n;

		if (fstat(fd, &st))
			_exit(2);
		ofs = st.st_size > 4096 ? (st.st_size - 4096) & ~(off_t)511 : 0;
		n = pread(fd, buf, sizeof(buf), ofs);
		if (n < 0)
			_exit(2);
		pattern_fill(ref, (size_t)n, seed, (uint64_t)ofs, false);
		if (memcmp(buf, ref, (size_t)n))
			r->bad[id]++;
		r->reads[id]++;
	}
	_exit(0);
}

/*
 * eofrace FILE COUNT CHUNK READERS SEED: append COUNT chunks to FILE
 * (O_APPEND, pattern SEED at the file offset) while READERS processes read
 * its end through the page cache. Prints "reads=N bad=N": a bad read
 * returned bytes that are not what was written (zeros of a page cached
 * while the append was under way).
 */
static int cmd_eofrace(int argc, char **argv)
{
	uint64_t count, chunk, seed, i, reads = 0, bad = 0;
	unsigned int nr, k;
	struct tio_race *r;
	pid_t pids[16];
	uint8_t *buf;
	int fd, st;

	if (argc != 6)
		usage();
	count = parse_size(argv[2]);
	chunk = parse_size(argv[3]);
	nr = (unsigned int)parse_size(argv[4]);
	seed = parse_size(argv[5]);
	if (!nr || nr > 16 || !chunk || chunk > 1048576)
		usage();
	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	buf = malloc(chunk);
	fd = open(argv[1], O_WRONLY | O_APPEND);
	if (r == MAP_FAILED || !buf || fd < 0) {
		printf("%s\n", errname(errno));
		return 0;
	}
	memset(r, 0, sizeof(*r));
	for (k = 0; k < nr; k++) {
		pids[k] = fork();
		if (pids[k] < 0)
			return 2;
		if (!pids[k])
			race_reader(argv[1], seed, r, k);
	}
	for (i = 0; i < count; i++) {
		struct stat sb;

		if (fstat(fd, &sb))
			break;
		pattern_fill(buf, chunk, seed, (uint64_t)sb.st_size, false);
		if (write(fd, buf, chunk) != (ssize_t)chunk) {
			printf("write %s\n", errname(errno));
			r->stop = 1;
			break;
		}
	}
	r->stop = 1;
	for (k = 0; k < nr; k++) {
		if (waitpid(pids[k], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			return 2;
		reads += r->reads[k];
		bad += r->bad[k];
	}
	printf("reads=%llu bad=%llu\n", (unsigned long long)reads,
	       (unsigned long long)bad);
	close(fd);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	const char *c;
	int ret;

	if (argc < 2)
		usage();
	c = argv[1];
	argc--;
	argv++;
	if (!strcmp(c, "write"))
		ret = cmd_write(argc, argv);
	else if (!strcmp(c, "read"))
		ret = cmd_read(argc, argv);
	else if (!strcmp(c, "pattern"))
		ret = cmd_pattern(argc, argv);
	else if (!strcmp(c, "open"))
		ret = cmd_open(argc, argv);
	else if (!strcmp(c, "setfl"))
		ret = cmd_setfl(argc, argv);
	else if (!strcmp(c, "truncate"))
		ret = cmd_truncate(argc, argv);
	else if (!strcmp(c, "fsync"))
		ret = cmd_fsync(argc, argv);
	else if (!strcmp(c, "mmap"))
		ret = cmd_mmap(argc, argv);
	else if (strstr(c, "xattr"))
		ret = cmd_xattr(argc, argv);
	else if (!strcmp(c, "stat"))
		ret = cmd_stat(argc, argv);
	else if (!strcmp(c, "statfs"))
		ret = cmd_statfs(argc, argv);
	else if (!strcmp(c, "eofrace"))
		ret = cmd_eofrace(argc, argv);
	else
		ret = cmd_path_ops(argc, argv);
	if (fflush(stdout) || ferror(stdout))
		return 2;
	return ret;
}
