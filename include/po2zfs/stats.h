/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Request statistics: how many requests of each kind a layer served, how
 * many bytes, how long they took, and how large they were. The counters
 * are updated with relaxed atomics and never take a lock, so that counting
 * costs a clock read and a few adds per request. They are read, formatted
 * and reset through the root's user.dev.stats attribute (fs/xattr).
 */
#ifndef PO2ZFS_STATS_H
#define PO2ZFS_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Request size buckets: <= 4 KiB, <= 8 KiB, ... <= 1 MiB, larger. */
#define P2Z_STAT_NR_SIZES 10

/**
 * struct p2z_stat - counters of one kind of request
 * @nr: requests served
 * @nr_err: of which failed
 * @bytes: bytes transferred
 * @ns: total time spent serving them
 * @max_ns: the longest one
 * @sizes: requests per size bucket (only counted for data requests)
 */
struct p2z_stat {
	uint64_t nr;
	uint64_t nr_err;
	uint64_t bytes;
	uint64_t ns;
	uint64_t max_ns;
	uint64_t sizes[P2Z_STAT_NR_SIZES];
};

/* Kinds of device requests, counted by the dispatcher (dev.c). */
enum p2z_dev_stat_op {
	P2Z_DEV_STAT_READ,
	P2Z_DEV_STAT_WRITE,
	P2Z_DEV_STAT_APPEND,
	P2Z_DEV_STAT_MGMT,
	P2Z_DEV_STAT_REPORT,
	P2Z_DEV_STAT_FLUSH,
	P2Z_DEV_STAT_FUA, /* writes and appends asked for with P2Z_IO_FUA */
	P2Z_DEV_STAT_NR,
};

/* stats.c */

/**
 * p2z_stat_now() - a monotonic timestamp for p2z_stat_add()
 *
 * Return: nanoseconds.
 */
uint64_t p2z_stat_now(void);

/**
 * p2z_stat_add() - count one request
 * @s: its counters
 * @t0: p2z_stat_now() when it started
 * @ret: its result: bytes transferred (>= 0) or -errno
 * @sized: count @ret in the size buckets
 */
void p2z_stat_add(struct p2z_stat *s, uint64_t t0, ssize_t ret, int sized);

/**
 * p2z_stat_reset() - zero counters
 * @s: first counters
 * @nr: how many
 */
void p2z_stat_reset(struct p2z_stat *s, size_t nr);

/**
 * p2z_stat_format() - one line of text for one kind of request
 * @buf: destination
 * @size: its size
 * @name: the kind, e.g. "fs.write"
 * @s: its counters
 *
 * Prints "NAME nr=N err=N bytes=N avg_us=N max_us=N" and, for sized
 * requests, " sizes=4K:N,8K:N,..." (non-zero buckets only), then a newline.
 * Nothing at all when @s counted no request.
 *
 * Return: the length printed (truncated to @size like snprintf()).
 */
size_t p2z_stat_format(char *buf, size_t size, const char *name,
		       const struct p2z_stat *s);

/**
 * p2z_dev_stat_name() - name of a kind of device request
 * @op: enum p2z_dev_stat_op
 *
 * Return: "read", "write", ... or "?".
 */
const char *p2z_dev_stat_name(unsigned int op);

#endif /* PO2ZFS_STATS_H */
