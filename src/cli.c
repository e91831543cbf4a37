// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Shared code of the command line tools; see po2zfs/cli.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "po2zfs/cli.h"

static void p2z_cli_vline(const char *prog, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int p2z_cli_fail(const char *prog, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	p2z_cli_vline(prog, fmt, ap);
	va_end(ap);
	return code;
}

int p2z_cli_usage(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see %s --help)\n", prog);
	return P2Z_CLI_EXIT_USAGE;
}

int p2z_cli_bad_option(const char *prog, int c, const char *arg)
{
	if (c == ':')
		return p2z_cli_usage(prog, "option '%s' needs a value", arg);
	return p2z_cli_usage(prog, "unknown option '%s'", arg);
}

int p2z_cli_main(const char *prog, const char *usage, int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd)
		return p2z_cli_usage(prog, "missing command");
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") ||
	    !strcmp(cmd, "help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		printf("%s %s\n", prog, P2Z_VERSION);
		return 0;
	}
	return -1;
}
