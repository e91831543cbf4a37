/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared by the fuzz targets: the entry points libFuzzer calls, and the
 * quiet logger. Each target is linked with -Wl,--wrap=p2z_log: refused
 * inputs are the common case, and a line on stderr for each would slow
 * the run tenfold. P2Z_FUZZ_VERBOSE=1 prints them.
 */
#ifndef P2Z_FUZZ_COMMON_H
#define P2Z_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant: abort, which libFuzzer reports as a crash. */
#define P2Z_FUZZ_ASSERT(cond)                                            \
	do {                                                             \
		if (!(cond)) {                                           \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", \
				__FILE__, __LINE__, #cond);              \
			abort();                                         \
		}                                                        \
	} while (0)

#endif /* P2Z_FUZZ_COMMON_H */
