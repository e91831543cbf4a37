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

#endif /* PO2ZFS_LOG_H */
