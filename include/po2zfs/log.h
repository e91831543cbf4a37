/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef PO2ZFS_LOG_H
#define PO2ZFS_LOG_H

#include <syslog.h>

/* log.c */

/**
 * p2z_log_to_syslog() - send later messages to syslog instead of stderr
 * @ident: syslog identity, e.g. "po2zfs"
 *
 * Called once, by the daemon, right before it detaches from the terminal.
 */
void p2z_log_to_syslog(const char *ident);

/**
 * p2z_log() - print one line on stderr, prefixed with the program name
 * @prio: syslog priority (LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG)
 * @fmt: printf format, without a trailing newline
 */
void p2z_log(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * p2z_log_errors() - how many lines of priority LOG_ERR or higher p2z_log()
 * has printed so far
 *
 * A caller compares it before and after a call that reports its own
 * failures (p2z_dev_open()) to print a line of its own only when the call
 * printed none: one reason, one line.
 */
unsigned long p2z_log_errors(void);

#endif /* PO2ZFS_LOG_H */
