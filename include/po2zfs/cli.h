/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the command line tools (po2zfs-zone, po2zfs-emu) share. Not for the
 * daemon: it reports through p2z_log(), which turns to syslog once detached.
 *
 * How a tool fails: one line on stderr, "PROG: reason" (p2z_cli_fail()),
 * exit status 1; a library call that failed has said why in one line
 * already (p2z_dev_open(), p2z_dev_zone_walk(), p2z_emu_create(), ...),
 * and the tool adds nothing. A usage error: one line on stderr too,
 * "PROG: reason (see PROG --help)", exit status 2 (p2z_cli_usage()).
 */
#ifndef PO2ZFS_CLI_H
#define PO2ZFS_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "po2zfs/dev.h"
#include "po2zfs/geom.h"

/* The exit status of a usage error. */
#define P2Z_CLI_EXIT_USAGE 2

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

/**
 * p2z_cli_usage() - a usage error, one line on stderr:
 *		     "PROG: reason (see PROG --help)"
 * @prog: program name
 * @fmt: printf format of the reason, without a trailing newline
 *
 * Return: P2Z_CLI_EXIT_USAGE.
 */
int p2z_cli_usage(const char *prog, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * p2z_cli_bad_option() - the usage error of a getopt_long() refusal
 * @prog: program name
 * @c: what getopt_long() returned: ':' (a value missing), else unknown
 * @arg: the option as given
 *
 * For getopt_long() run with opterr = 0 and a leading ':' in its optstring.
 *
 * Return: P2Z_CLI_EXIT_USAGE.
 */
int p2z_cli_bad_option(const char *prog, int c, const char *arg);

/**
 * p2z_cli_main() - what every tool answers the same way, before its command
 * @prog: program name
 * @usage: the usage text
 * @argc: main()'s argc
 * @argv: main()'s argv; argv[1] is the command
 *
 * No command: a usage error. "--help", "-h" or "help": @usage on stdout,
 * exit status 0. "--version" or "-V": one line "PROG VERSION" on stdout,
 * exit status 0.
 *
 * Return: the exit status if the command line is answered, or -1 when
 * argv[1] is for the tool to run.
 */
int p2z_cli_main(const char *prog, const char *usage, int argc, char **argv);

/* cli_report.c: the zone report of po2zfs-zone and po2zfs-emu */

/**
 * p2z_cli_print_limit() - a report's line of an open or active limit
 * @label: e.g. "max open:"
 * @v: the limit, 0 = none ("unlimited")
 */
void p2z_cli_print_limit(const char *label, uint32_t v);

/**
 * p2z_cli_fill_pct() - whole percent of a zone's capacity written
 * @zi: the zone, as reported
 *
 * Rounded down: 100 only for a zone written to its capacity (full ones
 * are: the write pointer rule of struct p2z_zone_info); 0 for an offline
 * zone or one without capacity.
 *
 * Return: 0 to 100.
 */
unsigned int p2z_cli_fill_pct(const struct p2z_zone_info *zi);

/**
 * struct p2z_cli_report_opts - how p2z_cli_report_zones() prints
 * @bytes: po2zfs-emu's columns: start, wp (from the zone start),
 *	   capacity, po2-start, in bytes; else po2zfs-zone's: start,
 *	   po2-start, wp, capacity in LBAs, and the fill percentage
 * @faults: the emulator's column of faults pending on the zone ("pending")
 */
struct p2z_cli_report_opts {
	bool bytes;
	bool faults;
};

/**
 * p2z_cli_report_zones() - print the zone table of a device on stdout
 * @dev: the device
 * @g: its po2 geometry
 * @o: the columns
 *
 * A blank line, a comment naming the units, the column header, then one
 * row per zone, through p2z_dev_zone_walk() (which logs a failed report).
 *
 * Return: 0, or 1 (EXIT_FAILURE) if the walk failed.
 */
int p2z_cli_report_zones(struct p2z_dev *dev, const struct p2z_geom *g,
			 const struct p2z_cli_report_opts *o);

#endif /* PO2ZFS_CLI_H */
