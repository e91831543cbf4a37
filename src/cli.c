// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Shared code of the command line tools; see po2zfs/cli.h.
 */
#include <stdarg.h>
#include <stdio.h>

#include "po2zfs/cli.h"

int p2z_cli_fail(const char *prog, int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}
