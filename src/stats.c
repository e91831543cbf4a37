// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Request statistics (see stats.h): lock-free counters, formatted as text.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "po2zfs/stats.h"

#define P2Z_STAT_MIN_SIZE 4096

uint64_t p2z_stat_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static unsigned int p2z_stat_bucket(uint64_t bytes)
{
	unsigned int b = 0;
	uint64_t lim = P2Z_STAT_MIN_SIZE;

	while (b < P2Z_STAT_NR_SIZES - 1 && bytes > lim) {
		lim <<= 1;
		b++;
	}
	return b;
}

static void p2z_stat_inc(uint64_t *v, uint64_t by)
{
	__atomic_fetch_add(v, by, __ATOMIC_RELAXED);
}

void p2z_stat_add(struct p2z_stat *s, uint64_t t0, ssize_t ret, int sized)
{
	uint64_t ns = p2z_stat_now() - t0;
	uint64_t max = __atomic_load_n(&s->max_ns, __ATOMIC_RELAXED);

	p2z_stat_inc(&s->nr, 1);
	p2z_stat_inc(&s->ns, ns);
	while (ns > max &&
	       !__atomic_compare_exchange_n(&s->max_ns, &max, ns, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	if (ret < 0) {
		p2z_stat_inc(&s->nr_err, 1);
		return;
	}
	p2z_stat_inc(&s->bytes, (uint64_t)ret);
	if (sized)
		p2z_stat_inc(&s->sizes[p2z_stat_bucket((uint64_t)ret)], 1);
}

void p2z_stat_reset(struct p2z_stat *s, size_t nr)
{
	size_t i, j;

	for (i = 0; i < nr; i++) {
		__atomic_store_n(&s[i].nr, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s[i].nr_err, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s[i].bytes, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s[i].ns, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s[i].max_ns, 0, __ATOMIC_RELAXED);
		for (j = 0; j < P2Z_STAT_NR_SIZES; j++)
			__atomic_store_n(&s[i].sizes[j], 0, __ATOMIC_RELAXED);
	}
}

/* "4K", "8K", ..., "1M", ">1M" */
static void p2z_stat_bucket_name(unsigned int b, char *buf, size_t size)
{
	uint64_t kib = (uint64_t)(P2Z_STAT_MIN_SIZE >> 10) << b;

	if (b == P2Z_STAT_NR_SIZES - 1)
		snprintf(buf, size, ">%lluM", (unsigned long long)(kib >> 11));
	else if (kib >= 1024)
		snprintf(buf, size, "%lluM", (unsigned long long)(kib >> 10));
	else
		snprintf(buf, size, "%lluK", (unsigned long long)kib);
}

size_t p2z_stat_format(char *buf, size_t size, const char *name,
		       const struct p2z_stat *s)
{
	uint64_t nr = __atomic_load_n(&s->nr, __ATOMIC_RELAXED);
	uint64_t ns = __atomic_load_n(&s->ns, __ATOMIC_RELAXED);
	size_t pos = 0;
	char bn[8];
	int sep = '=';
	unsigned int b;

#define P2Z_STAT_PUT(...)                                                 \
	do {                                                              \
		int n_ = snprintf(buf + pos, pos < size ? size - pos : 0, \
				  __VA_ARGS__);                           \
		pos += n_ > 0 ? (size_t)n_ : 0;                           \
	} while (0)

	if (!nr)
		return 0;
	P2Z_STAT_PUT("%s nr=%llu err=%llu bytes=%llu avg_us=%llu max_us=%llu",
		     name, (unsigned long long)nr,
		     (unsigned long long)s->nr_err,
		     (unsigned long long)s->bytes,
		     (unsigned long long)(ns / nr / 1000),
		     (unsigned long long)(s->max_ns / 1000));
	for (b = 0; b < P2Z_STAT_NR_SIZES; b++) {
		uint64_t v = __atomic_load_n(&s->sizes[b], __ATOMIC_RELAXED);

		if (!v)
			continue;
		p2z_stat_bucket_name(b, bn, sizeof(bn));
		P2Z_STAT_PUT("%s%c%s:%llu", sep == '=' ? " sizes" : "", sep, bn,
			     (unsigned long long)v);
		sep = ',';
	}
	P2Z_STAT_PUT("\n");
#undef P2Z_STAT_PUT
	return pos;
}

const char *p2z_dev_stat_name(unsigned int op)
{
	static const char *const names[P2Z_DEV_STAT_NR] = {
		[P2Z_DEV_STAT_READ] = "read",
		[P2Z_DEV_STAT_WRITE] = "write",
		[P2Z_DEV_STAT_APPEND] = "append",
		[P2Z_DEV_STAT_MGMT] = "mgmt",
		[P2Z_DEV_STAT_REPORT] = "report",
		[P2Z_DEV_STAT_FLUSH] = "flush",
		[P2Z_DEV_STAT_FUA] = "fua",
	};

	return op < P2Z_DEV_STAT_NR ? names[op] : "?";
}
