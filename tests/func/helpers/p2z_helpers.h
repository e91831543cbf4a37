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

#endif /* P2Z_HELPERS_H */
