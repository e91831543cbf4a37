// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Condition variables whose timed waits run on the monotonic clock.
 */
#include <pthread.h>
#include <time.h>

#include "po2zfs/cond.h"

int p2z_cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t cattr;
	int ret;

	ret = pthread_condattr_init(&cattr);
	if (ret)
		return -ret;
	ret = pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	if (!ret)
		ret = pthread_cond_init(cond, &cattr);
	pthread_condattr_destroy(&cattr);
	return -ret;
}
