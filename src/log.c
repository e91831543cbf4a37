// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Logging: stderr until the daemon detaches, syslog after. The one piece of
 * process-wide state, set once before any worker thread starts.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "po2zfs/log.h"

static bool p2z_use_syslog;

void p2z_log_to_syslog(const char *ident)
{
	openlog(ident, LOG_PID, LOG_DAEMON);
	p2z_use_syslog = true;
}

/* Lines of LOG_ERR or higher so far (p2z_log_errors()). */
static unsigned long p2z_log_nr_errors;

unsigned long p2z_log_errors(void)
{
	return __atomic_load_n(&p2z_log_nr_errors, __ATOMIC_RELAXED);
}

void p2z_log(int prio, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (prio <= LOG_ERR)
		__atomic_add_fetch(&p2z_log_nr_errors, 1, __ATOMIC_RELAXED);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (p2z_use_syslog)
		syslog(prio, "%s", line);
	else
		fprintf(stderr, "%s: %s\n", program_invocation_short_name,
			line);
}
