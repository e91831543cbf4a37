// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The condition variables of src/cond.c: deadlines on CLOCK_MONOTONIC
 * (p2z_cond_deadline()), timed waits on a variable made with
 * p2z_cond_init_monotonic() ending at such a deadline, and the hook a
 * thread runs before it sleeps (p2z_cond_on_sleep()), run by every wait.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "p2z_check.h"
#include "po2zfs/cond.h"

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

/* The deadline is @ms after a time between the calls, tv_nsec normal. */
START_TEST(test_cond_deadline)
{
	static const long ms[] = { 0, 1, 999, 1000, 1001, 2500 };
	struct timespec before, end, after;
	int64_t d;

	clock_gettime(CLOCK_MONOTONIC, &before);
	p2z_cond_deadline(ms[_i], &end);
	clock_gettime(CLOCK_MONOTONIC, &after);
	ck_assert_int_ge(end.tv_nsec, 0);
	ck_assert_int_lt(end.tv_nsec, 1000000000L);
	d = ms[_i] * 1000000LL;
	ck_assert_int_ge(ts_ns(&end), ts_ns(&before) + d);
	ck_assert_int_le(ts_ns(&end), ts_ns(&after) + d);
}
END_TEST

static int hook_calls;

static void count_hook(void *arg)
{
	ck_assert_ptr_eq(arg, &hook_calls);
	hook_calls++;
}

/*
 * A timed wait on a monotonic variable that nobody signals ends with
 * ETIMEDOUT at its deadline, not before; the hook ran once before it
 * slept, and the mutex is held again.
 */
START_TEST(test_cond_timedwait_monotonic)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct timespec end, now;
	pthread_cond_t cond;

	ck_assert_int_eq(p2z_cond_init_monotonic(&cond), 0);
	hook_calls = 0;
	p2z_cond_on_sleep(count_hook, &hook_calls);
	pthread_mutex_lock(&lock);
	p2z_cond_deadline(20, &end);
	ck_assert_int_eq(p2z_cond_timedwait(&cond, &lock, &end), ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &now);
	ck_assert_int_ge(ts_ns(&now), ts_ns(&end));
	ck_assert_int_eq(pthread_mutex_trylock(&lock), EBUSY);
	pthread_mutex_unlock(&lock);
	ck_assert_int_eq(hook_calls, 1);
	p2z_cond_on_sleep(NULL, NULL);
	pthread_cond_destroy(&cond);
}
END_TEST

struct waker {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
};

static void *wake(void *arg)
{
	struct waker *w = arg;

	pthread_mutex_lock(&w->lock);
	w->done = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/*
 * p2z_cond_wait() runs the hook before each sleep and returns when
 * signalled; p2z_cond_sleeping() runs it alone; a thread whose hook was
 * cleared, or another thread, runs none.
 */
START_TEST(test_cond_wait_hook)
{
	struct waker w = { .lock = PTHREAD_MUTEX_INITIALIZER };
	pthread_t th;

	ck_assert_int_eq(p2z_cond_init_monotonic(&w.cond), 0);
	hook_calls = 0;
	p2z_cond_on_sleep(count_hook, &hook_calls);
	p2z_cond_sleeping();
	ck_assert_int_eq(hook_calls, 1);
	pthread_mutex_lock(&w.lock);
	ck_assert_int_eq(pthread_create(&th, NULL, wake, &w), 0);
	while (!w.done)
		ck_assert_int_eq(p2z_cond_wait(&w.cond, &w.lock), 0);
	pthread_mutex_unlock(&w.lock);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_ge(hook_calls, 2);
	p2z_cond_on_sleep(NULL, NULL);
	hook_calls = 0;
	p2z_cond_sleeping();
	ck_assert_int_eq(hook_calls, 0);
	pthread_cond_destroy(&w.cond);
}
END_TEST

static Suite *cond_suite(void)
{
	Suite *s = suite_create("cond");
	TCase *tc = tcase_create("cond");

	tcase_add_loop_test(tc, test_cond_deadline, 0, 6);
	tcase_add_test(tc, test_cond_timedwait_monotonic);
	tcase_add_test(tc, test_cond_wait_hook);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return p2z_check_run(cond_suite());
}
