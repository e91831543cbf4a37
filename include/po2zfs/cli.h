/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the command line tools (po2zfs-zone, po2zfs-emu) share. Not for the
 * daemon: it reports through p2z_log(), which turns to syslog once detached.
 */
#ifndef PO2ZFS_CLI_H
#define PO2ZFS_CLI_H

/* cli.c */

/**
 * p2z_cli_fail() - print one line on stderr, "PROG: reason"
 * @prog: program name, e.g. "po2zfs-zone"
 * @code: the exit code to return
 * @fmt: printf format of the reason, without a trailing newline
 *
 * Return: @code, for "return p2z_cli_fail(PROG, 1, ...);".
 */
int p2z_cli_fail(const char *prog, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* PO2ZFS_CLI_H */
