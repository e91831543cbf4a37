/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef PO2ZFS_COND_H
#define PO2ZFS_COND_H

#include <pthread.h>
#include <time.h>

/* cond.c */

/**
 * p2z_cond_init_monotonic() - init a condition variable on CLOCK_MONOTONIC
 * @cond: the condition variable
 *
 * pthread_cond_timedwait() on @cond then takes its deadline from
 * clock_gettime(CLOCK_MONOTONIC): a wall clock set back or forward while
 * waiting neither stretches nor cuts the wait.
 *
 * Return: 0 or -errno (the caller destroys @cond on success only).
 */
int p2z_cond_init_monotonic(pthread_cond_t *cond);

/**
 * p2z_cond_deadline() - the deadline of a timed wait on such a variable
 * @ms: milliseconds from now (>= 0)
 * @ts: set to the CLOCK_MONOTONIC time @ms from now
 */
void p2z_cond_deadline(long ms, struct timespec *ts);

/**
 * p2z_cond_on_sleep() - what the calling thread runs before it sleeps
 *			 waiting for another thread
 * @fn: called (with @arg) by p2z_cond_sleeping(), p2z_cond_wait() and
 *	p2z_cond_timedwait() in this thread; NULL: nothing
 * @arg: its argument
 *
 * A thread that others count on to keep doing something (the FUSE loop's
 * workers receive requests, src/fs_loop.c) hands that over to a spare
 * thread before it sleeps on a wait that may last, as io_uring's io-wq
 * wakes another worker when one blocks. @fn may be called many times per
 * wait and with any lock held: it takes no lock but its own.
 */
void p2z_cond_on_sleep(void (*fn)(void *), void *arg);

/**
 * p2z_cond_sleeping() - the calling thread is about to sleep on another
 *
 * Runs the hook of p2z_cond_on_sleep(), if any. For sleeps that are not a
 * condition variable's (a kernel call that may wait for a request).
 */
void p2z_cond_sleeping(void);

/**
 * p2z_cond_wait() - pthread_cond_wait() after p2z_cond_sleeping()
 * @cond: the condition variable
 * @lock: its mutex, held
 *
 * Return: as pthread_cond_wait().
 */
int p2z_cond_wait(pthread_cond_t *cond, pthread_mutex_t *lock);

/**
 * p2z_cond_timedwait() - pthread_cond_timedwait() after p2z_cond_sleeping()
 * @cond: the condition variable
 * @lock: its mutex, held
 * @ts: the deadline
 *
 * Return: as pthread_cond_timedwait() (0, ETIMEDOUT, ...).
 */
int p2z_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *lock,
		       const struct timespec *ts);

#endif /* PO2ZFS_COND_H */
