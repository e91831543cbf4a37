/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the crash (p2z_crash.c) and stress (p2z_stress.c) helpers share.
 */
#ifndef P2Z_HELPERS_H
#define P2Z_HELPERS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/xattr.h>

/* A 64-bit finaliser (MurmurHash3's fmix64): every input bit moves many. */
static inline uint64_t p2z_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* @n bytes aligned to @align, or exit(2): a helper cannot go on without. */
static inline void *p2z_xalloc(size_t align, size_t n)
{
	void *p;

	if (posix_memalign(&p, align, n)) {
		fprintf(stderr, "%s: out of memory\n",
			program_invocation_short_name);
		exit(2);
	}
	return p;
}

/* The decimal value of extended attribute @name of @path: 0 or -errno. */
static inline int p2z_xattr_u64(const char *path, const char *name,
				uint64_t *val)
{
	char buf[64];
	ssize_t n = getxattr(path, name, buf, sizeof(buf) - 1);

	if (n < 0)
		return -errno;
	buf[n] = 0;
	*val = strtoull(buf, NULL, 10);
	return 0;
}

#endif /* P2Z_HELPERS_H */
