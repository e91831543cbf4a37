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

void p2z_cond_deadline(long ms, struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* What a thread runs before it sleeps on another (p2z_cond_on_sleep()). */
static __thread void (*p2z_cond_hook)(void *);
static __thread void *p2z_cond_hook_arg;

void p2z_cond_on_sleep(void (*fn)(void *), void *arg)
{
	p2z_cond_hook = fn;
	p2z_cond_hook_arg = arg;
}

void p2z_cond_sleeping(void)
{
	if (p2z_cond_hook)
		p2z_cond_hook(p2z_cond_hook_arg);
}

int p2z_cond_wait(pthread_cond_t *cond, pthread_mutex_t *lock)
{
	p2z_cond_sleeping();
	return pthread_cond_wait(cond, lock);
}

int p2z_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *lock,
		       const struct timespec *ts)
{
	p2z_cond_sleeping();
	return pthread_cond_timedwait(cond, lock, ts);
}
