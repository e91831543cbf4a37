// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * p2z_crash: writers and verifier of the crash consistency tests.
 *
 *   p2z_crash write DIR LOG CYCLE NZONES NWRITERS SEED
 *	NWRITERS threads append self-describing records to the zone files
 *	DIR/0 .. DIR/NZONES-1 (writer w to zone w % NZONES), with O_APPEND
 *	and O_DIRECT, until a write fails (the daemon was killed: ENOTCONN,
 *	EIO...) or the zone is full. Each acknowledged record is logged to
 *	LOG ("A zone writer cycle seq len", fdatasync'ed) before the next
 *	write; a write cut short at capacity is logged as "S ... bytes".
 *	Prints "acked=N" and exits 0 however the writes ended.
 *
 *   p2z_crash verify DIR LOG CYCLE NZONES [IMAGE]
 *	After a new mount: checks every zone file against LOG (see the rules
 *	below), prints one summary line, exits 1 on any violation. "R zone
 *	cycle" lines in LOG (written by the test when it resets a zone) drop
 *	the records of earlier cycles in that zone. With IMAGE (an emulated
 *	device image), also counts zones whose raw image holds data of
 *	CYCLE just past the write pointer (a record's header, or the rest
 *	of the torn record that ends the zone): a write that reached the
 *	medium but whose write pointer update was lost with the daemon.
 *
 * Record: a 64-byte header (magic, zone, writer, cycle, seq, length,
 * FNV-1a 64 of the payload, FNV-1a 64 of the header) and a payload that is
 * a pure function of (zone, writer, cycle, seq), so any prefix of a record
 * can be checked byte for byte. Lengths are multiples of 4 KiB from 4 KiB
 * to 256 KiB (a multiple of any LBA size).
 *
 * Rules checked by verify, per zone file of size S (zonefs: S is the write
 * pointer, bytes past it are invisible):
 *   - user.zone.wp equals S, a read at S returns 0 bytes;
 *   - [0, S) is a sequence of whole, intact records, except that the last
 *     record of a cycle may be torn: a prefix of the record, in whole
 *     512-byte blocks (a multi-command write the daemon died in, on a
 *     device whose write pointer advanced per command: the nvme backend
 *     splits writes at the transfer limits), followed by the end of the
 *     file or by the records of a later cycle, never acknowledged;
 *   - cycles never decrease along the file; the records of one (cycle,
 *     writer) have seq 0, 1, 2... in file order, no gap, no duplicate;
 *   - every acknowledged record is there, whole (lost = 0); at most one
 *     more per (cycle, writer), the one in flight at the kill (written but
 *     never acknowledged: allowed, zonefs exposes what the device holds);
 *     a write cut short at capacity is there for at least the bytes its
 *     write returned.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "p2z_helpers.h"

#define CR_MAGIC 0x48534152435a3250ULL /* "P2ZCRASH" little-endian */
#define CR_HDR 64
#define CR_ALIGN 4096
#define CR_MAX_REC (256 * 1024)
#define CR_MAX_ZONES 64
#define CR_MAX_WRITERS 64
#define CR_MAX_CYCLES 100000

struct cr_hdr {
	uint64_t magic;
	uint32_t zone;
	uint32_t writer;
	uint32_t cycle;
	uint32_t seq;
	uint32_t len;
	uint32_t pad;
	uint64_t pay_sum;
	uint64_t pad2[2];
	uint64_t hdr_sum; /* of the 56 bytes above */
};

_Static_assert(sizeof(struct cr_hdr) == CR_HDR, "record header size");

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--) {
		h ^= *c++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t rec_key(uint32_t zone, uint32_t writer, uint32_t cycle,
			uint32_t seq)
{
	return p2z_mix(((uint64_t)zone << 48) ^ ((uint64_t)writer << 32) ^
		       ((uint64_t)cycle << 20) ^ seq ^ 0x9e3779b97f4a7c15ULL);
}

/* The full record (header and payload) into @buf, @len bytes. */
static void rec_build(void *buf, uint32_t zone, uint32_t writer, uint32_t cycle,
		      uint32_t seq, uint32_t len)
{
	struct cr_hdr *h = buf;
	uint64_t s = rec_key(zone, writer, cycle, seq), *w;
	size_t i;

	w = (uint64_t *)((char *)buf + CR_HDR);
	for (i = 0; i < (len - CR_HDR) / 8; i++) {
		s += 0x9e3779b97f4a7c15ULL;
		w[i] = p2z_mix(s);
	}
	memset(h, 0, sizeof(*h));
	h->magic = CR_MAGIC;
	h->zone = zone;
	h->writer = writer;
	h->cycle = cycle;
	h->seq = seq;
	h->len = len;
	h->pay_sum = fnv1a((char *)buf + CR_HDR, len - CR_HDR);
	h->hdr_sum = fnv1a(h, offsetof(struct cr_hdr, hdr_sum));
}

static bool hdr_valid(const struct cr_hdr *h)
{
	return h->magic == CR_MAGIC &&
	       h->hdr_sum == fnv1a(h, offsetof(struct cr_hdr, hdr_sum)) &&
	       h->len >= CR_ALIGN && h->len <= CR_MAX_REC &&
	       !(h->len % CR_ALIGN);
}

/* ---------------------------------------------------------------- write */

struct cr_writer {
	pthread_t th;
	const char *dir;
	int log_fd;
	uint32_t zone, id, cycle;
	uint64_t seed;
	uint64_t acked;
	pthread_mutex_t *log_lock;
};

static void log_line(struct cr_writer *w, const char *line)
{
	size_t n = strlen(line);

	pthread_mutex_lock(w->log_lock);
	if (write(w->log_fd, line, n) != (ssize_t)n || fdatasync(w->log_fd)) {
		perror("p2z_crash: log");
		exit(2);
	}
	pthread_mutex_unlock(w->log_lock);
}

static void *writer_main(void *arg)
{
	struct cr_writer *w = arg;
	uint64_t rng = p2z_mix(w->seed ^ ((uint64_t)w->id << 40) ^ w->cycle);
	char path[4096], line[128];
	void *buf = p2z_xalloc(CR_ALIGN, CR_MAX_REC);
	uint32_t seq, len;
	ssize_t ret;
	int fd;

	snprintf(path, sizeof(path), "%s/%u", w->dir, w->zone);
	fd = open(path, O_WRONLY | O_APPEND | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "p2z_crash: writer %u: open %s: %s\n", w->id,
			path, strerrorname_np(errno));
		free(buf);
		return NULL;
	}
	for (seq = 0;; seq++) {
		rng = p2z_mix(rng + seq);
		len = (uint32_t)(1 + rng % (CR_MAX_REC / CR_ALIGN)) * CR_ALIGN;
		rec_build(buf, w->zone, w->id, w->cycle, seq, len);
		ret = write(fd, buf, len);
		if (ret == (ssize_t)len) {
			snprintf(line, sizeof(line), "A %u %u %u %u %u\n",
				 w->zone, w->id, w->cycle, seq, len);
			log_line(w, line);
			w->acked++;
			continue;
		}
		if (ret > 0) {
			snprintf(line, sizeof(line), "S %u %u %u %u %zd\n",
				 w->zone, w->id, w->cycle, seq, ret);
			log_line(w, line);
		}
		break;
	}
	close(fd);
	free(buf);
	return NULL;
}

static int cmd_write(char **av)
{
	static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
	struct cr_writer ws[CR_MAX_WRITERS];
	uint32_t nz = strtoul(av[3], NULL, 0), nw = strtoul(av[4], NULL, 0);
	uint64_t acked = 0;
	uint32_t i;
	int log_fd;

	if (!nz || nz > CR_MAX_ZONES || !nw || nw > CR_MAX_WRITERS) {
		fprintf(stderr, "p2z_crash: bad zone or writer count\n");
		return 2;
	}
	log_fd = open(av[1], O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (log_fd < 0) {
		perror(av[1]);
		return 2;
	}
	for (i = 0; i < nw; i++) {
		ws[i] = (struct cr_writer){
			.dir = av[0],
			.log_fd = log_fd,
			.zone = i % nz,
			.id = i,
			.cycle = strtoul(av[2], NULL, 0),
			.seed = strtoull(av[5], NULL, 0),
			.log_lock = &log_lock,
		};
		if (pthread_create(&ws[i].th, NULL, writer_main, &ws[i])) {
			fprintf(stderr, "p2z_crash: pthread_create failed\n");
			return 2;
		}
	}
	for (i = 0; i < nw; i++) {
		pthread_join(ws[i].th, NULL);
		acked += ws[i].acked;
	}
	close(log_fd);
	printf("acked=%" PRIu64 "\n", acked);
	return 0;
}

/* ---------------------------------------------------------------- verify */

/* What the log says about one (cycle, writer) of a zone. */
struct cr_stream {
	int64_t last_ack; /* highest acknowledged seq, -1 if none */
	int64_t short_seq; /* seq of a write cut short, -1 if none */
	uint32_t short_bytes;
	int64_t found; /* whole records found: seq 0 .. found-1 */
	bool torn; /* a prefix of record "found" ends the stream */
	uint32_t torn_bytes;
};

struct cr_zone {
	int64_t reset_cycle; /* records of cycles below it are gone */
	uint32_t max_cycle;
	/* a torn record ends the zone: its key, length and prefix bytes */
	bool tail_torn;
	uint32_t tail_writer, tail_cycle, tail_seq, tail_len;
	uint64_t tail_prefix;
	struct cr_stream *st; /* [cycle * CR_MAX_WRITERS + writer] */
};

struct cr_verify {
	const char *dir;
	uint32_t nz, cycle;
	struct cr_zone z[CR_MAX_ZONES];
	uint64_t acked, lost, found, inflight, torn, past_wp;
	int bad;
};

#define VFAIL(v, ...)                                                  \
	do {                                                           \
		fprintf(stderr, "p2z_crash: VIOLATION: " __VA_ARGS__); \
		fputc('\n', stderr);                                   \
		(v)->bad = 1;                                          \
	} while (0)

static struct cr_stream *stream(struct cr_verify *v, uint32_t zone,
				uint32_t cycle, uint32_t writer)
{
	return &v->z[zone].st[(size_t)cycle * CR_MAX_WRITERS + writer];
}

static int read_log(struct cr_verify *v, const char *path)
{
	char kind, line[256];
	unsigned int a, b, c, d, e;
	FILE *f = fopen(path, "r");
	struct cr_stream *s;
	uint32_t i;

	for (i = 0; i < v->nz; i++) {
		v->z[i].reset_cycle = -1;
		v->z[i].st = calloc((size_t)(v->cycle + 1) * CR_MAX_WRITERS,
				    sizeof(struct cr_stream));
		if (!v->z[i].st)
			return -ENOMEM;
		for (size_t k = 0; k < (size_t)(v->cycle + 1) * CR_MAX_WRITERS;
		     k++)
			v->z[i].st[k] = (struct cr_stream){ .last_ack = -1,
							    .short_seq = -1 };
	}
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		int n = sscanf(line, "%c %u %u %u %u %u", &kind, &a, &b, &c, &d,
			       &e);

		if (kind == 'R' && n >= 3 && a < v->nz) {
			v->z[a].reset_cycle = b;
			continue;
		}
		if (n != 6 || a >= v->nz || b >= CR_MAX_WRITERS ||
		    c > v->cycle) {
			fprintf(stderr, "p2z_crash: bad log line: %s", line);
			fclose(f);
			return -EINVAL;
		}
		s = stream(v, a, c, b);
		if (kind == 'A') {
			if ((int64_t)d != s->last_ack + 1)
				VFAIL(v,
				      "log: zone %u writer %u cycle %u: ack of seq %u after %" PRId64,
				      a, b, c, d, s->last_ack);
			s->last_ack = d;
		} else if (kind == 'S') {
			s->short_seq = d;
			s->short_bytes = e;
		}
	}
	fclose(f);
	return 0;
}

/* Read [0, size) of a zone file; also checks a read at size gives 0. */
static char *read_zone(struct cr_verify *v, const char *path, uint64_t size)
{
	char *buf = p2z_xalloc(CR_ALIGN, size + CR_ALIGN);
	uint64_t ofs = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_DIRECT);

	if (fd < 0) {
		VFAIL(v, "open %s: %s", path, strerrorname_np(errno));
		free(buf);
		return NULL;
	}
	while (ofs < size) {
		size_t chunk = size - ofs < (1 << 20) ? size - ofs : (1 << 20);

		n = pread(fd, buf + ofs, chunk, ofs);
		if (n <= 0) {
			VFAIL(v, "read %s at %" PRIu64 ": %s", path, ofs,
			      n ? strerrorname_np(errno) : "end of file");
			break;
		}
		ofs += n;
	}
	n = pread(fd, buf + size, CR_ALIGN, size);
	if (n != 0)
		VFAIL(v,
		      "%s: a read at the size %" PRIu64 " returned %zd, not 0",
		      path, size, n);
	close(fd);
	return buf;
}

/* Bytes of @a equal to @b from the start, in whole 512-byte blocks. */
static uint64_t match_len(const char *a, const char *b, uint64_t n)
{
	uint64_t i = 0;

	while (i + 512 <= n && !memcmp(a + i, b + i, 512))
		i += 512;
	return i;
}

/* Parse one zone's bytes as records; fills the streams' found counts. */
static void parse_zone(struct cr_verify *v, uint32_t zone, const char *data,
		       uint64_t size)
{
	char *ref = p2z_xalloc(CR_ALIGN, CR_MAX_REC);
	const struct cr_hdr *next;
	uint32_t last_cycle = 0;
	uint64_t ofs = 0, p;

	while (ofs < size) {
		const struct cr_hdr *h = (const void *)(data + ofs);
		uint64_t rem = size - ofs;
		struct cr_stream *s;

		if (rem < CR_HDR || !hdr_valid(h)) {
			VFAIL(v,
			      "zone %u: no valid record header at %" PRIu64
			      " (size %" PRIu64 ")",
			      zone, ofs, size);
			break;
		}
		if (h->zone != zone || h->writer >= CR_MAX_WRITERS ||
		    h->cycle > v->cycle ||
		    (int64_t)h->cycle < v->z[zone].reset_cycle ||
		    h->cycle < last_cycle) {
			VFAIL(v,
			      "zone %u at %" PRIu64
			      ": record of zone %u writer %u cycle %u out of place",
			      zone, ofs, h->zone, h->writer, h->cycle);
			break;
		}
		last_cycle = h->cycle;
		s = stream(v, zone, h->cycle, h->writer);
		if ((int64_t)h->seq != s->found) {
			VFAIL(v,
			      "zone %u at %" PRIu64
			      ": writer %u cycle %u seq %u, expected seq %" PRId64,
			      zone, ofs, h->writer, h->cycle, h->seq, s->found);
			break;
		}
		rec_build(ref, zone, h->writer, h->cycle, h->seq, h->len);
		if (h->len <= rem && !memcmp(ref, data + ofs, h->len) &&
		    fnv1a(data + ofs + CR_HDR, h->len - CR_HDR) == h->pay_sum) {
			s->found++;
			v->found++;
			ofs += h->len;
			continue;
		}
		/* A torn record: a prefix of the real one in whole LBAs (the
		 * device advanced its write pointer per command), ending the
		 * file or followed by the records of a later cycle. */
		p = match_len(ref, data + ofs, h->len < rem ? h->len : rem);
		next = (const void *)(data + ofs + p);
		if (p < h->len &&
		    (ofs + p == size ||
		     (size - ofs - p >= CR_HDR && hdr_valid(next) &&
		      next->cycle > h->cycle))) {
			s->torn = true;
			s->torn_bytes = p;
			v->torn++;
			if (ofs + p == size) {
				struct cr_zone *z = &v->z[zone];

				z->tail_torn = true;
				z->tail_writer = h->writer;
				z->tail_cycle = h->cycle;
				z->tail_seq = h->seq;
				z->tail_len = h->len;
				z->tail_prefix = p;
			}
			ofs += p;
			continue;
		}
		VFAIL(v,
		      "zone %u at %" PRIu64
		      ": record writer %u cycle %u seq %u corrupt at +%" PRIu64,
		      zone, ofs, h->writer, h->cycle, h->seq, p);
		break;
	}
	free(ref);
}

/* Every acknowledged record found, nothing beyond the one in flight. */
static void check_streams(struct cr_verify *v, uint32_t zone)
{
	uint32_t c, w;

	for (c = 0; c <= v->cycle; c++) {
		if ((int64_t)c < v->z[zone].reset_cycle)
			continue;
		for (w = 0; w < CR_MAX_WRITERS; w++) {
			struct cr_stream *s = stream(v, zone, c, w);

			v->acked += s->last_ack + 1;
			if (s->found < s->last_ack + 1) {
				v->lost += s->last_ack + 1 - s->found;
				VFAIL(v,
				      "zone %u writer %u cycle %u: %" PRId64
				      " acknowledged records, %" PRId64
				      " found",
				      zone, w, c, s->last_ack + 1, s->found);
			}
			if (s->found > s->last_ack + 2 ||
			    (s->found == s->last_ack + 2 && s->torn))
				VFAIL(v,
				      "zone %u writer %u cycle %u: %" PRId64
				      " records found, only %" PRId64
				      " written",
				      zone, w, c, s->found, s->last_ack + 2);
			if (s->found > s->last_ack + 1)
				v->inflight++;
			if (s->short_seq >= 0 && s->found <= s->short_seq &&
			    !(s->torn && s->found == s->short_seq &&
			      s->torn_bytes >= s->short_bytes)) {
				v->lost++;
				VFAIL(v,
				      "zone %u writer %u cycle %u: short write of %u bytes (seq %" PRId64
				      ") lost",
				      zone, w, c, s->short_bytes, s->short_seq);
			}
		}
	}
}

/*
 * Raw image: data of this cycle just past the write pointer? Either the
 * header of a record whose first command was cut, or the rest of the torn
 * record that ends the zone (a later command of it was cut). Either is on
 * the medium only if the kill fell between a command's data and its write
 * pointer.
 */
static void check_past_wp(struct cr_verify *v, const char *image,
			  const char *path, uint32_t zone, uint64_t size)
{
	uint64_t zidx = 0, zsize = 0, nzones = 0, data_ofs;
	const struct cr_zone *z = &v->z[zone];
	char root[4096], *ref, got[512];
	struct cr_hdr h;
	struct stat st;
	int fd;

	snprintf(root, sizeof(root), "%s/..", v->dir);
	if (p2z_xattr_u64(path, "user.zone.index", &zidx) ||
	    p2z_xattr_u64(root, "user.dev.zone_size", &zsize) ||
	    p2z_xattr_u64(root, "user.dev.nr_zones", &nzones)) {
		VFAIL(v, "zone %u: cannot read the geometry xattrs", zone);
		return;
	}
	fd = open(image, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_size < nzones * zsize) {
		VFAIL(v, "cannot use image %s", image);
		if (fd >= 0)
			close(fd);
		return;
	}
	data_ofs = st.st_size - nzones * zsize + zidx * zsize + size;
	if (pread(fd, &h, sizeof(h), data_ofs) == sizeof(h) && hdr_valid(&h) &&
	    h.zone == zone && h.cycle == v->cycle) {
		v->past_wp++;
	} else if (z->tail_torn && z->tail_cycle == v->cycle &&
		   pread(fd, got, sizeof(got), data_ofs) == sizeof(got)) {
		ref = p2z_xalloc(CR_ALIGN, CR_MAX_REC);
		rec_build(ref, zone, z->tail_writer, z->tail_cycle, z->tail_seq,
			  z->tail_len);
		if (!memcmp(ref + z->tail_prefix, got, sizeof(got)))
			v->past_wp++;
		free(ref);
	}
	close(fd);
}

static int cmd_verify(int ac, char **av)
{
	static struct cr_verify v;
	char path[4096];
	uint64_t size, wp = 0;
	uint32_t i;
	struct stat st;
	char *data;
	int ret;

	v.dir = av[0];
	v.cycle = strtoul(av[2], NULL, 0);
	v.nz = strtoul(av[3], NULL, 0);
	if (!v.nz || v.nz > CR_MAX_ZONES || v.cycle > CR_MAX_CYCLES) {
		fprintf(stderr, "p2z_crash: bad zone count or cycle\n");
		return 2;
	}
	ret = read_log(&v, av[1]);
	if (ret) {
		fprintf(stderr, "p2z_crash: log %s: %s\n", av[1],
			strerrorname_np(-ret));
		return 2;
	}
	for (i = 0; i < v.nz; i++) {
		snprintf(path, sizeof(path), "%s/%u", v.dir, i);
		if (stat(path, &st)) {
			VFAIL(&v, "stat %s: %s", path, strerrorname_np(errno));
			continue;
		}
		size = st.st_size;
		ret = p2z_xattr_u64(path, "user.zone.wp", &wp);
		if (ret || wp != size)
			VFAIL(&v,
			      "%s: user.zone.wp %" PRIu64
			      " (%s), size %" PRIu64,
			      path, wp, ret ? strerrorname_np(-ret) : "read",
			      size);
		data = read_zone(&v, path, size);
		if (data)
			parse_zone(&v, i, data, size);
		free(data);
		check_streams(&v, i);
		if (ac > 4)
			check_past_wp(&v, av[4], path, i, size);
		free(v.z[i].st);
	}
	printf("cycle=%u acked=%" PRIu64 " found=%" PRIu64 " lost=%" PRIu64
	       " inflight=%" PRIu64 " torn=%" PRIu64 " past_wp=%" PRIu64 "\n",
	       v.cycle, v.acked, v.found, v.lost, v.inflight, v.torn,
	       v.past_wp);
	return v.bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 8 && !strcmp(argv[1], "write"))
		return cmd_write(argv + 2);
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "verify"))
		return cmd_verify(argc - 2, argv + 2);
	fputs("usage: p2z_crash write DIR LOG CYCLE NZONES NWRITERS SEED\n"
	      "       p2z_crash verify DIR LOG CYCLE NZONES [IMAGE]\n",
	      stderr);
	return 2;
}
