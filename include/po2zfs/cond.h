/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef PO2ZFS_COND_H
#define PO2ZFS_COND_H

#include <pthread.h>

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

#endif /* PO2ZFS_COND_H */
