// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the per-thread ring registry (uring.c) that the nvme and
 * zbd backends share: one ring per thread, its buffer, rings freed when
 * their thread exits, discard, destroy, and that a command in flight is
 * always reaped, even when waiting for it fails. Leaks show under valgrind.
 * Exits 77 when this kernel has no usable io_uring.
 *
 * Linked with -Wl,--wrap=__io_uring_get_cqe (tests/CMakeLists.txt): the
 * system call behind io_uring_wait_cqe() can be made to fail on demand;
 * and with -Wl,--wrap=pthread_mutex_lock: an exiting thread can be held
 * inside its ring's key destructor.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "p2z_check.h"
#include "po2zfs/dev.h"
#include "po2zfs/emu.h"
#include "po2zfs/log.h"
#include "po2zfs/zone.h"
#include "uring.h"
#include "zone_priv.h"

/*
 * Scripted failures of the wait: the next wait_fail calls of
 * __io_uring_get_cqe() fail with -EIO without entering the kernel; the
 * last of them first writes wake_len bytes to wake_fd, as a device
 * completing the command late would. Single-threaded use only.
 */
static int wait_fail;
static int wait_calls;
static int wake_fd = -1;
static size_t wake_len;
static const char wake_data[] = "completed after the wait failed";

int __real___io_uring_get_cqe(struct io_uring *ring,
			      struct io_uring_cqe **cqe_ptr,
			      unsigned int submit, unsigned int wait_nr,
			      sigset_t *sigmask);
int __wrap___io_uring_get_cqe(struct io_uring *ring,
			      struct io_uring_cqe **cqe_ptr,
			      unsigned int submit, unsigned int wait_nr,
			      sigset_t *sigmask);

int __wrap___io_uring_get_cqe(struct io_uring *ring,
			      struct io_uring_cqe **cqe_ptr,
			      unsigned int submit, unsigned int wait_nr,
			      sigset_t *sigmask)
{
	wait_calls++;
	if (wait_fail > 0) {
		if (!--wait_fail && wake_fd >= 0)
			ck_assert_int_eq(write(wake_fd, wake_data, wake_len),
					 (ssize_t)wake_len);
		return -EIO;
	}
	return __real___io_uring_get_cqe(ring, cqe_ptr, submit, wait_nr,
					 sigmask);
}

static unsigned int nr_rings(struct p2z_rings *rs)
{
	return p2z_rings_nr(rs);
}

/*
 * Holding an exiting thread inside its ring's key destructor: a thread
 * that sets exiting just before it returns stops at its next
 * pthread_mutex_lock() from uring.c (the destructor's first), counted in
 * nr_held, until let_go is set.
 */
static __thread bool exiting;
static atomic_int nr_held;
static atomic_bool let_go;

int __real_pthread_mutex_lock(pthread_mutex_t *m);
int __wrap_pthread_mutex_lock(pthread_mutex_t *m);

int __wrap_pthread_mutex_lock(pthread_mutex_t *m)
{
	if (exiting) {
		exiting = false;
		atomic_fetch_add(&nr_held, 1);
		while (!atomic_load(&let_go))
			sched_yield();
	}
	return __real_pthread_mutex_lock(m);
}

/* One NOP through the ring: submit, wait, the user data comes back. */
static void nop_round_trip(struct p2z_ring *r, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	struct io_uring_cqe *cqe;

	ck_assert_ptr_nonnull(sqe);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, tag);
	ck_assert_int_eq(p2z_ring_submit(r), 1);
	p2z_ring_reap(r, &cqe);
	ck_assert_int_eq(cqe->res, 0);
	ck_assert_uint_eq(io_uring_cqe_get_data64(cqe), tag);
	io_uring_cqe_seen(&r->ring, cqe);
}

START_TEST(test_same_thread_same_ring)
{
	struct p2z_rings rs;
	struct p2z_ring *a, *b;

	ck_assert_int_eq(p2z_rings_init(&rs, 4, 0, 0, "test"), 0);
	ck_assert_uint_eq(nr_rings(&rs), 0);
	ck_assert_int_eq(p2z_ring_get(&rs, &a), 0);
	ck_assert_int_eq(p2z_ring_get(&rs, &b), 0);
	ck_assert_ptr_eq(a, b);
	ck_assert_ptr_null(a->buf);
	ck_assert_uint_eq(nr_rings(&rs), 1);
	nop_round_trip(a, 7);
	p2z_rings_destroy(&rs);
}
END_TEST

struct worker {
	struct p2z_rings *rs;
	struct p2z_ring *ring;
	pthread_barrier_t *ready;
	pthread_barrier_t *go;
};

static void *worker(void *arg)
{
	struct worker *w = arg;

	ck_assert_int_eq(p2z_ring_get(w->rs, &w->ring), 0);
	nop_round_trip(w->ring, (uintptr_t)w);
	/* stay alive until the main thread has counted the rings */
	pthread_barrier_wait(w->ready);
	pthread_barrier_wait(w->go);
	return NULL;
}

START_TEST(test_ring_per_thread_freed_at_exit)
{
	struct p2z_rings rs;
	struct worker w[3];
	pthread_t t[3];
	pthread_barrier_t ready, go;
	struct p2z_ring *mine;
	int i;

	ck_assert_int_eq(p2z_rings_init(&rs, 8, 0, 12288, "test"), 0);
	ck_assert_int_eq(p2z_ring_get(&rs, &mine), 0);
	pthread_barrier_init(&ready, NULL, 4);
	pthread_barrier_init(&go, NULL, 4);
	for (i = 0; i < 3; i++) {
		w[i] = (struct worker){ .rs = &rs, .ready = &ready, .go = &go };
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker, &w[i]), 0);
	}
	pthread_barrier_wait(&ready);
	/* all four alive: four distinct rings, each with its aligned buffer */
	ck_assert_uint_eq(nr_rings(&rs), 4);
	for (i = 0; i < 3; i++) {
		ck_assert_ptr_ne(w[i].ring, mine);
		ck_assert_ptr_nonnull(w[i].ring->buf);
		ck_assert_uint_eq((uintptr_t)w[i].ring->buf % 4096, 0);
	}
	ck_assert_ptr_ne(w[0].ring, w[1].ring);
	ck_assert_ptr_ne(w[1].ring, w[2].ring);
	ck_assert_ptr_ne(w[0].ring, w[2].ring);
	pthread_barrier_wait(&go);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	/* the exited threads' rings are gone, this thread's stays */
	ck_assert_uint_eq(nr_rings(&rs), 1);
	ck_assert_int_eq(p2z_ring_get(&rs, &w[0].ring), 0);
	ck_assert_ptr_eq(w[0].ring, mine);
	memset(mine->buf, 0xa5, 12288);
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&go);
	p2z_rings_destroy(&rs);
}
END_TEST

START_TEST(test_discard_makes_a_new_ring)
{
	struct p2z_rings rs;
	struct p2z_ring *a, *b;

	ck_assert_int_eq(p2z_rings_init(&rs, 4, 0, 0, "test"), 0);
	ck_assert_int_eq(p2z_ring_get(&rs, &a), 0);
	p2z_ring_discard(a);
	ck_assert_uint_eq(nr_rings(&rs), 0);
	ck_assert_int_eq(p2z_ring_get(&rs, &b), 0);
	ck_assert_uint_eq(nr_rings(&rs), 1);
	nop_round_trip(b, 9);
	p2z_rings_destroy(&rs);
}
END_TEST

/* The nvme backend's rings: 128-byte SQEs, 32-byte CQEs. */
START_TEST(test_big_sqe_cqe_rings)
{
	struct p2z_rings rs;
	struct p2z_ring *r;

	ck_assert_int_eq(p2z_rings_init(&rs, 16,
					IORING_SETUP_SQE128 |
						IORING_SETUP_CQE32,
					0, "test"),
			 0);
	ck_assert_int_eq(p2z_ring_get(&rs, &r), 0);
	ck_assert_uint_eq(r->ring.flags &
				  (IORING_SETUP_SQE128 | IORING_SETUP_CQE32),
			  IORING_SETUP_SQE128 | IORING_SETUP_CQE32);
	nop_round_trip(r, 11);
	p2z_rings_destroy(&rs);
}
END_TEST

START_TEST(test_setup_failure_is_reported)
{
	struct p2z_rings rs;
	struct p2z_ring *r = NULL;

	/* an unknown setup flag: the kernel refuses, nothing is kept */
	ck_assert_int_eq(p2z_rings_init(&rs, 4, 1U << 31, 0, "test"), 0);
	ck_assert_int_eq(p2z_ring_get(&rs, &r), -EINVAL);
	ck_assert_ptr_null(r);
	ck_assert_uint_eq(nr_rings(&rs), 0);
	p2z_rings_destroy(&rs);
}
END_TEST

/*
 * A read in flight when waiting for it fails: the buffer is the kernel's
 * until the completion, so the wait goes on and returns that completion,
 * with the data in the buffer, never an error that would let the caller
 * reuse (or a backend discard the ring under) a buffer still being written.
 */
START_TEST(test_reap_survives_wait_failures)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct p2z_rings rs;
	struct p2z_ring *r;
	char buf[64];
	int fds[2];

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(p2z_rings_init(&rs, 4, 0, 0, "test"), 0);
	ck_assert_int_eq(p2z_ring_get(&rs, &r), 0);
	memset(buf, 0, sizeof(buf));
	sqe = io_uring_get_sqe(&r->ring);
	ck_assert_ptr_nonnull(sqe);
	/* Nothing to read yet: the read stays in flight. */
	io_uring_prep_read(sqe, fds[0], buf, sizeof(buf), 0);
	io_uring_sqe_set_data64(sqe, 42);
	ck_assert_int_eq(p2z_ring_submit(r), 1);
	wake_len = sizeof(wake_data);
	wake_fd = fds[1];
	wait_calls = 0;
	wait_fail = 3;
	cqe = NULL;
	p2z_ring_reap(r, &cqe);
	wake_fd = -1;
	ck_assert_msg(cqe, "gave up on a read in flight");
	ck_assert_int_eq(wait_fail, 0);
	ck_assert_int_ge(wait_calls, 3);
	ck_assert_uint_eq(io_uring_cqe_get_data64(cqe), 42);
	ck_assert_int_eq(cqe->res, (int)sizeof(wake_data));
	io_uring_cqe_seen(&r->ring, cqe);
	ck_assert_str_eq(buf, wake_data);
	/* The ring goes on working. */
	nop_round_trip(r, 43);
	p2z_rings_destroy(&rs);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

struct quitter {
	struct p2z_rings *rs;
	pthread_barrier_t *ready;
};

/* Gets a ring, then exits, its ring's destructor racing the teardown. */
static void *quitter(void *arg)
{
	struct quitter *q = arg;
	struct p2z_ring *r;

	ck_assert_int_eq(p2z_ring_get(q->rs, &r), 0);
	pthread_barrier_wait(q->ready);
	return NULL;
}

/* The same, held in its ring's destructor (see exiting). */
static void *held_quitter(void *arg)
{
	struct quitter *q = arg;
	struct p2z_ring *r;

	ck_assert_int_eq(p2z_ring_get(q->rs, &r), 0);
	pthread_barrier_wait(q->ready);
	exiting = true;
	return NULL;
}

/*
 * The race made certain: two threads are inside their rings' destructors
 * (called, not yet past the lock) while the registry is torn down; they go
 * on once it is. Each ring was freed once (a double free aborts, a use of a
 * freed ring shows under ASan), and the destructors do not touch the torn
 * down registry's lock.
 */
START_TEST(test_destructor_in_flight_at_teardown)
{
	struct quitter q[2];
	pthread_t t[2];
	pthread_barrier_t ready;
	struct p2z_rings *rs;
	struct p2z_ring *mine;
	int i;

	rs = malloc(sizeof(*rs));
	ck_assert_ptr_nonnull(rs);
	ck_assert_int_eq(p2z_rings_init(rs, 4, 0, 4096, "test"), 0);
	ck_assert_int_eq(p2z_ring_get(rs, &mine), 0);
	pthread_barrier_init(&ready, NULL, 3);
	atomic_store(&nr_held, 0);
	atomic_store(&let_go, false);
	for (i = 0; i < 2; i++) {
		q[i] = (struct quitter){ .rs = rs, .ready = &ready };
		ck_assert_int_eq(
			pthread_create(&t[i], NULL, held_quitter, &q[i]), 0);
	}
	pthread_barrier_wait(&ready);
	while (atomic_load(&nr_held) < 2)
		sched_yield();
	ck_assert_uint_eq(nr_rings(rs), 3);
	p2z_rings_destroy(rs);
	atomic_store(&let_go, true);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&ready);
	free(rs);
}
END_TEST

/* Busy for about @ns nanoseconds (no sleep: the scheduler would round it). */
static void spin_ns(long ns)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec <
	       ns);
}

/*
 * Unmount: idle workers exit (the key destructor frees their ring) while
 * the main thread tears the registry down and the device that holds it is
 * freed. Each ring must be freed once, and nothing of the registry used
 * after p2z_rings_destroy() returns. The teardown starts from 0 to 100 us
 * after the workers were let go, so that some round meets their exit in
 * the middle whatever the machine's speed. A double free aborts; ASan and
 * TSan builds see any use after free or unlocked access.
 */
START_TEST(test_thread_exit_races_teardown)
{
	enum { NR_THREADS = 8, NR_ROUNDS = 400 };
	struct quitter q[NR_THREADS];
	pthread_t t[NR_THREADS];
	pthread_barrier_t ready;
	struct p2z_rings *rs;
	struct p2z_ring *mine;
	/* valgrind: every 10th delay */
	int step = p2z_check_short_run() ? 10 : 1;
	int round, i;

	for (round = 0; round < NR_ROUNDS; round += step) {
		rs = malloc(sizeof(*rs));
		ck_assert_ptr_nonnull(rs);
		ck_assert_int_eq(p2z_rings_init(rs, 4, 0, 0, "test"), 0);
		ck_assert_int_eq(p2z_ring_get(rs, &mine), 0);
		pthread_barrier_init(&ready, NULL, NR_THREADS + 1);
		for (i = 0; i < NR_THREADS; i++) {
			q[i] = (struct quitter){ .rs = rs, .ready = &ready };
			ck_assert_int_eq(
				pthread_create(&t[i], NULL, quitter, &q[i]), 0);
		}
		pthread_barrier_wait(&ready);
		/* the workers are exiting now */
		spin_ns(round * 250L);
		p2z_rings_destroy(rs);
		memset(rs, 0x6b, sizeof(*rs));
		free(rs);
		for (i = 0; i < NR_THREADS; i++)
			ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		pthread_barrier_destroy(&ready);
	}
}
END_TEST

/*
 * A backend driving io_uring as nvme and zbd do: each write or append first
 * gets the calling thread's ring, then goes to an emulated device.
 */
static struct p2z_rings host_rings;
static const struct p2z_dev_ops *emu_ops;

static ssize_t ring_pwrite(struct p2z_dev *dev, const void *buf, size_t len,
			   uint64_t ofs, unsigned int flags)
{
	struct p2z_ring *r;
	int ret = p2z_ring_get(&host_rings, &r);

	return ret ? ret : emu_ops->pwrite(dev, buf, len, ofs, flags);
}

static ssize_t ring_append(struct p2z_dev *dev, uint64_t zidx, const void *buf,
			   size_t len, uint64_t *lba, unsigned int flags)
{
	struct p2z_ring *r;
	int ret = p2z_ring_get(&host_rings, &r);

	return ret ? ret : emu_ops->append(dev, zidx, buf, len, lba, flags);
}

/* Lower the open file limit to the descriptors in use: no new one. */
static void no_more_fds(struct rlimit *old)
{
	struct rlimit rl;
	int fd = dup(0);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, old), 0);
	rl = *old;
	rl.rlim_cur = (rlim_t)fd;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

/*
 * A worker whose ring cannot be set up (here: no file descriptor left) is
 * no failing zone: its write and append fail with EMFILE, logged once, and
 * with errors=remount-ro the filesystem and the zone stay writable; once
 * descriptors are back, the same writes go through.
 */
START_TEST(test_ring_setup_failure_is_no_zone_error)
{
	static const struct p2z_emu_params p = { 4096, 64 * 1024, 64 * 1024,
						 4,    0,	  0,
						 0,    16 * 1024 };
	struct p2z_zone_opts o = { .errors = P2Z_ERRORS_REMOUNT_RO };
	struct p2z_dev_ops ops;
	struct p2z_zone_table *zt;
	struct p2z_zone_state st;
	struct p2z_dev *dev;
	char dir[256], path[300];
	static char data[8192];
	struct rlimit old;
	unsigned long errs;
	ssize_t n1, n2;

	p2z_check_mkdtemp(dir, sizeof(dir), "check_uring");
	snprintf(path, sizeof(path), "%s/img", dir);
	ck_assert_int_eq(p2z_emu_create(path, &p, false), 0);
	ck_assert_int_eq(p2z_dev_open(path, "emu", 0, &dev), 0);
	emu_ops = dev->ops;
	ops = *dev->ops;
	ops.pwrite = ring_pwrite;
	ops.append = ring_append;
	dev->ops = &ops;
	ck_assert_int_eq(p2z_rings_init(&host_rings, 4, 0, 0, "ringdev"), 0);
	ck_assert_int_eq(p2z_zone_table_open(dev, &o, &zt), 0);
	memset(data, 0x3c, sizeof(data));

	errs = p2z_log_errors();
	no_more_fds(&old);
	n1 = p2z_zone_write(zt, 1, data, 4096, 0, false, 0);
	n2 = p2z_zone_write(zt, 2, data, 4096, 0, true, 0);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	ck_assert_int_eq(n1, -EMFILE);
	ck_assert_int_eq(n2, -EMFILE);
	ck_assert_uint_eq(p2z_log_errors() - errs, 1);
	ck_assert(!p2z_zone_table_is_rdonly(zt));
	ck_assert_int_eq(p2z_zone_get_state(zt, 1, false, &st), 0);
	ck_assert_uint_eq(st.flags & (P2Z_ZONE_F_RDONLY | P2Z_ZONE_F_OFFLINE),
			  0);
	ck_assert_uint_eq(st.size_bytes, 0);

	/* descriptors back: the same thread gets its ring, writes go */
	ck_assert_int_eq(p2z_zone_write(zt, 1, data, 8192, 0, false, 0), 8192);
	ck_assert_int_eq(p2z_zone_write(zt, 2, data, 4096, 0, true, 0), 4096);
	ck_assert_uint_eq(p2z_rings_nr(&host_rings), 1);
	ck_assert_int_eq(p2z_zone_get_state(zt, 1, true, &st), 0);
	ck_assert_uint_eq(st.size_bytes, 8192);
	ck_assert(!p2z_zone_table_is_rdonly(zt));

	p2z_zone_table_close(zt);
	p2z_rings_destroy(&host_rings);
	p2z_dev_close(dev);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Which errors drive the errors= policy: the device's, never the host's. */
START_TEST(test_host_errors_are_not_io)
{
	static const int host[] = { EMFILE, ENFILE, ENOMEM,
				    EPERM,  EACCES, ENOSYS };
	static const int device[] = { EIO,	 EILSEQ,  ENOSPC,   ERANGE,
				      EROFS,	 ENXIO,	  EBADRQC,  ENODATA,
				      ETIMEDOUT, ENOLINK, EREMOTEIO };
	size_t i;

	for (i = 0; i < sizeof(host) / sizeof(host[0]); i++)
		ck_assert_msg(!p2z_zone_err_is_io(-host[i]), "%s",
			      strerror(host[i]));
	for (i = 0; i < sizeof(device) / sizeof(device[0]); i++)
		ck_assert_msg(p2z_zone_err_is_io(-device[i]), "%s",
			      strerror(device[i]));
}
END_TEST

static Suite *uring_suite(void)
{
	Suite *s = suite_create("uring");
	TCase *tc = tcase_create("rings");

	tcase_add_test(tc, test_same_thread_same_ring);
	tcase_add_test(tc, test_ring_per_thread_freed_at_exit);
	tcase_add_test(tc, test_discard_makes_a_new_ring);
	tcase_add_test(tc, test_big_sqe_cqe_rings);
	tcase_add_test(tc, test_setup_failure_is_reported);
	tcase_add_test(tc, test_reap_survives_wait_failures);
	tcase_add_test(tc, test_destructor_in_flight_at_teardown);
	tcase_add_test(tc, test_thread_exit_races_teardown);
	suite_add_tcase(s, tc);
	tc = tcase_create("host_errors");
	tcase_add_test(tc, test_ring_setup_failure_is_no_zone_error);
	tcase_add_test(tc, test_host_errors_are_not_io);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	struct io_uring probe;
	int ret;

	ret = io_uring_queue_init_params(
		4, &probe,
		&(struct io_uring_params){ .flags = IORING_SETUP_SQE128 |
						    IORING_SETUP_CQE32 });
	if (ret < 0) {
		printf("SKIP: check_uring: io_uring with big SQEs/CQEs unavailable here: %s\n",
		       strerror(-ret));
		return 77;
	}
	io_uring_queue_exit(&probe);
	return p2z_check_run(uring_suite());
}
