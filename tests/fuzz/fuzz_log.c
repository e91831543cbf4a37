// SPDX-License-Identifier: GPL-2.0-or-later
/* p2z_log() of the fuzz targets: silent unless P2Z_FUZZ_VERBOSE is set. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "po2zfs/log.h"

void __wrap_p2z_log(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void __wrap_p2z_log(int prio, const char *fmt, ...)
{
	static int verbose = -1;
	va_list ap;

	if (verbose < 0)
		verbose = getenv("P2Z_FUZZ_VERBOSE") != NULL;
	if (!verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "<%d> ", prio);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
