// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the emulated zoned device (dev_emu.c) under crashes and
 * threads: kill -9 at any instant keeps every zone's state whole and the
 * write pointer never ahead of the data; old images' states; concurrent
 * appends (with a volatile cache and a flusher too).
 * Images live in a fresh mkdtemp() directory per test (emu_check.h).
 * P2Z_SHORT=1 shortens the heavy loops (valgrind).
 */

#include "emu_check.h"

/* ---- crash consistency */

struct ack {
	uint64_t seq;
	uint64_t lba;
};

/*
 * Records of CRASH_NLB blocks: big enough that SIGKILL often lands inside
 * the write itself (the kernel stops a long write between pages for a
 * fatal signal), leaving a partial record past the write pointer.
 */
#define CRASH_NLB 16ULL

/* Record @seq: a fixed pattern with (seq, block) stamped in each block,
 * so that the child spends its time writing, not filling. */
static void crash_stamp(void *buf, uint64_t seq)
{
	uint64_t *w = buf, b;

	for (b = 0; b < CRASH_NLB; b++) {
		w[b * (LBA / 8)] = seq + 1;
		w[b * (LBA / 8) + 1] = b;
	}
}

static bool crash_block_ok(const void *blk, uint64_t k)
{
	uint64_t want[LBA / 8];

	fill(want, 1, 0, 0);
	want[0] = k / CRASH_NLB + 1;
	want[1] = k % CRASH_NLB;
	return !memcmp(blk, want, LBA);
}

/*
 * Child: append records to zone 0 until SIGKILL, acknowledging each
 * completed append through the pipe. The SIGKILL comes from a CPU-time
 * timer, so that it lands wherever the child spends its time (mostly
 * inside the data write), not right after an acknowledgement, where a kill
 * from the reading parent would land. No Check calls in here.
 */
static void crash_child(int wfd)
{
	static char buf[CRASH_NLB * LBA];
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL,
				.sigev_signo = SIGKILL };
	struct itimerspec its = { 0 };
	struct p2z_dev *dev;
	timer_t timer;
	struct ack a;
	uint64_t b;

	if (p2z_dev_open(img, "emu", 0, &dev))
		_exit(2);
	for (b = 0; b < CRASH_NLB; b++)
		fill(buf + b * LBA, 1, 0, 0);
	its.it_value.tv_nsec = (5 + getpid() % 11) * 1000000L;
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer))
		_exit(5);
	for (a.seq = 0;; a.seq++) {
		crash_stamp(buf, a.seq);
		if (p2z_dev_append(dev, 0, buf, sizeof(buf), &a.lba, 0) !=
		    (ssize_t)sizeof(buf))
			_exit(3);
		if (write(wfd, &a, sizeof(a)) != (ssize_t)sizeof(a))
			_exit(4);
		/* Armed after the first acknowledgement, however slow the
		 * child runs (valgrind). */
		if (!a.seq && timer_settime(timer, 0, &its, NULL))
			_exit(5);
	}
}

/* Read acknowledgements until @want of them (0: until EOF). */
static size_t read_acks(int rfd, struct ack *acks, size_t n, size_t max,
			size_t want)
{
	size_t got = 0;
	ssize_t r;

	while (n < max && (!want || n < want)) {
		r = read(rfd, (char *)&acks[n] + got, sizeof(acks[0]) - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == sizeof(acks[0])) {
			n++;
			got = 0;
		}
	}
	return n;
}

START_TEST(test_crash_consistency)
{
	struct p2z_emu_params p = defparams();
	size_t n, max = 8192, i;
	int fds[2], status;
	struct p2z_dev *dev;
	struct ack *acks;
	uint64_t wp, k;
	ssize_t ret;
	void *buf;
	pid_t pid;

	p.zone_bytes = p.cap_bytes = 256ULL << 20; /* 4096 appends */
	p.nr_zones = 2;
	p.max_append_bytes = CRASH_NLB * LBA;
	ck_assert_int_eq(p2z_emu_create(img, &p, false), 0);
	acks = calloc(max, sizeof(*acks));
	ck_assert_ptr_nonnull(acks);
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		close(fds[0]);
		crash_child(fds[1]);
	}
	close(fds[1]);
	n = read_acks(fds[0], acks, 0, max, 0);
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "child ended by itself (status 0x%x)", status);
	ck_assert_uint_gt(n, 0);

	dev = opendev(0);
	wp = zwp(dev, 0);
	/* Every acknowledged append is there; at most one more. */
	ck_assert_uint_ge(wp, CRASH_NLB * n);
	ck_assert_uint_le(wp, CRASH_NLB * (n + 1));
	ck_assert_uint_eq(wp % CRASH_NLB, 0);
	ck_assert_uint_eq(zcond(dev, 0), P2Z_ZONE_COND_CLOSED);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(acks[i].seq, i);
		ck_assert_uint_eq(acks[i].lba, CRASH_NLB * i);
	}
	/* Everything below the write pointer was really written. */
	buf = malloc(wp * LBA + LBA);
	ck_assert_ptr_nonnull(buf);
	ret = p2z_dev_pread(dev, buf, wp * LBA, 0);
	ck_assert_int_eq(ret, (ssize_t)(wp * LBA));
	for (k = 0; k < wp; k++)
		ck_assert_msg(
			crash_block_ok((char *)buf + k * LBA, k),
			"block %llu below the write pointer %llu is wrong",
			(unsigned long long)k, (unsigned long long)wp);
	free(buf);
	expect_zeros(dev, 0, wp, 8);
	/* And the zone goes on from there. */
	buf = malloc(LBA);
	ck_assert_ptr_nonnull(buf);
	fill(buf, 1, 1, 0);
	ck_assert_int_eq(p2z_dev_append(dev, 0, buf, LBA, &k, 0), (ssize_t)LBA);
	free(buf);
	ck_assert_uint_eq(k, wp);
	p2z_dev_close(dev);
	free(acks);
}
END_TEST

/*
 * A zone's state changes in one step. A child runs one zone operation
 * under ptrace, one instruction at a time; after each instruction the
 * parent reads the zone's table entry from the file (the page cache the
 * child's mapping shares), which is exactly what a SIGKILL at that
 * instant would leave. Every state seen must be the one before the
 * operation or the one after it (or, for a write, the zone opened): never
 * a reset zone still full (reading zeros), never a zone written to
 * capacity but not full.
 */
enum { A_FILL, A_RESET_FULL, A_RESET_OPEN, A_FINISH, A_NR };

static const char *const atomic_names[] = { "fill", "reset full", "reset open",
					    "finish" };

static void atomic_child(int op)
{
	static char buf[LBA];
	struct p2z_dev *dev;
	uint64_t lba;
	bool ok;

	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
		_exit(10);
	if (p2z_dev_open(img, "emu", 0, &dev))
		_exit(2);
	fill(buf, 1, 7, 0);
	raise(SIGSTOP); /* the parent steps from here */
	if (op == A_FILL)
		ok = p2z_dev_append(dev, 1, buf, LBA, &lba, 0) == (ssize_t)LBA;
	else
		ok = !p2z_dev_zone_mgmt(dev, 1,
					op == A_FINISH ? P2Z_ZONE_OP_FINISH :
							 P2Z_ZONE_OP_RESET);
	raise(SIGSTOP); /* to here */
	_exit(ok ? 0 : 3);
}

static bool zstate_eq(struct zstate a, struct zstate b)
{
	return a.wp == b.wp && a.cond == b.cond;
}

START_TEST(test_state_change_atomic)
{
	static const struct zstate want[] = {
		[A_FILL] = { CAP_LBA, P2Z_ZONE_COND_FULL },
		[A_RESET_FULL] = { 0, P2Z_ZONE_COND_EMPTY },
		[A_RESET_OPEN] = { 0, P2Z_ZONE_COND_EMPTY },
		[A_FINISH] = { 3, P2Z_ZONE_COND_FULL },
	};
	/* A write first opens the closed zone, as a drive does. */
	const struct zstate opened = { CAP_LBA - 1, P2Z_ZONE_COND_IMP_OPEN };
	struct zstate before, after, seen[8];
	unsigned int nseen = 0, k;
	uint64_t steps = 0;
	struct p2z_dev *dev;
	int status, sig = 0;
	pid_t pid;

	if (p2z_check_short_run()) {
		/* Single-stepping valgrind's translation takes hours. */
		fprintf(stderr,
			"test_state_change_atomic: SKIPPED under P2Z_SHORT\n");
		return;
	}
	dev = mkdev();
	/* Zone 1 one block short of full, full, or holding 3 blocks. */
	if (_i == A_FILL || _i == A_RESET_FULL)
		ck_assert_int_eq(wr(dev, 1, 0, CAP_LBA - 1, 1),
				 (ssize_t)((CAP_LBA - 1) * LBA));
	else
		ck_assert_int_eq(wr(dev, 1, 0, 3, 1), (ssize_t)(3 * LBA));
	if (_i == A_RESET_FULL)
		ck_assert_int_eq(wr(dev, 1, CAP_LBA - 1, 1, 2), (ssize_t)LBA);
	p2z_dev_close(dev);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		atomic_child(_i);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 10) {
		fprintf(stderr, "test_state_change_atomic: SKIPPED: ptrace "
				"not permitted here\n");
		return;
	}
	ck_assert_msg(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP,
		      "child did not stop (status 0x%x)", status);
	before = raw_state(1);
	for (;;) {
		ck_assert_int_eq(ptrace(PTRACE_SINGLESTEP, pid, NULL,
					(void *)(long)sig),
				 0);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFSTOPPED(status), "child ended (status 0x%x)",
			      status);
		if (WSTOPSIG(status) == SIGSTOP)
			break;
		sig = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);
		ck_assert_uint_lt(++steps, 20000000);
		seen[nseen] = raw_state(1);
		for (k = 0; k < nseen; k++)
			if (zstate_eq(seen[k], seen[nseen]))
				break;
		if (k == nseen && nseen < 7)
			nseen++;
	}
	after = raw_state(1);
	ck_assert_int_eq(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "%s: operation failed (status 0x%x)", atomic_names[_i],
		      status);
	ck_assert_msg(zstate_eq(after, want[_i]),
		      "%s: ends at wp %llu cond 0x%x", atomic_names[_i],
		      (unsigned long long)after.wp, after.cond);
	for (k = 0; k < nseen; k++)
		ck_assert_msg(zstate_eq(seen[k], before) ||
				      zstate_eq(seen[k], after) ||
				      (_i == A_FILL &&
				       zstate_eq(seen[k], opened)),
			      "%s: a kill after one of %llu instructions "
			      "leaves wp %llu cond 0x%x (before: %llu 0x%x, "
			      "after: %llu 0x%x)",
			      atomic_names[_i], (unsigned long long)steps,
			      (unsigned long long)seen[k].wp, seen[k].cond,
			      (unsigned long long)before.wp, before.cond,
			      (unsigned long long)after.wp, after.cond);
}
END_TEST

/*
 * An image from a version that stored the write pointer and the condition
 * apart, killed between the two while filling zone 1: closed at capacity.
 * Such a zone is full (it held an active slot forever before), and opening
 * the image for writing stores the repair.
 */
START_TEST(test_old_image_full_at_capacity)
{
	struct p2z_emu_params p = defparams();
	struct p2z_dev *dev;
	struct zstate z;

	p.max_active = 1;
	p.max_open = 1;
	dev = mkdev_p(&p);
	ck_assert_int_eq(wr(dev, 1, 0, CAP_LBA - 1, 1),
			 (ssize_t)((CAP_LBA - 1) * LBA));
	p2z_dev_close(dev);
	/* The old layout: pointer word alone, condition in its own byte. */
	patch_zent(1, 0, CAP_LBA, 8);
	patch_zent(1, 8, P2Z_ZONE_COND_CLOSED, 1);

	dev = opendev(P2Z_DEV_RDONLY);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(zwp(dev, 1), CAP_LBA);
	p2z_dev_close(dev);
	z = raw_state(1);
	ck_assert_uint_eq(z.cond, P2Z_ZONE_COND_CLOSED); /* ro wrote nothing */

	dev = opendev(0);
	z = raw_state(1);
	ck_assert_uint_eq(z.cond, P2Z_ZONE_COND_FULL);
	ck_assert_uint_eq(z.wp, CAP_LBA);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_FULL);
	/* Finish (truncate to capacity) is a full zone's no-op, and the
	 * zone holds no active slot: another zone opens. */
	ck_assert_int_eq(mgmt(dev, 1, P2Z_ZONE_OP_FINISH), 0);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_FULL);
	ck_assert_int_eq(wr(dev, 2, 0, 1, 3), (ssize_t)LBA);
	ck_assert_uint_eq(zcond(dev, 2), P2Z_ZONE_COND_IMP_OPEN);
	expect_data(dev, 1, 0, CAP_LBA - 1, 1);
	ck_assert_int_eq(mgmt(dev, 1, P2Z_ZONE_OP_RESET), 0);
	ck_assert_uint_eq(zcond(dev, 1), P2Z_ZONE_COND_EMPTY);
	p2z_dev_close(dev);
}
END_TEST

/*
 * The same invariant seen live: another handle on the image (its own
 * mapping of the zone table, as another process has) never finds the
 * write pointer ahead of the data, at any instant of a stream of appends.
 * Observing at an instant is what a kill -9 at that instant leaves.
 */
struct wp_observer {
	struct p2z_dev *dev;
	bool done;
	uint64_t bad; /* record found missing + 1; UINT64_MAX: I/O failed */
	uint64_t checks;
};

static void *wp_observe(void *p)
{
	struct wp_observer *o = p;
	static char blk[LBA];
	struct p2z_zone_info zi;
	uint64_t wp;

	while (!__atomic_load_n(&o->done, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&o->bad, __ATOMIC_RELAXED)) {
		if (p2z_dev_report_zones(o->dev, 0, 1, &zi) != 1)
			goto fail;
		wp = zi.wp_lba - zi.start_lba;
		if (wp < CRASH_NLB)
			continue;
		/* The last block of the last record: the latest to land. */
		if (p2z_dev_pread(o->dev, blk, LBA, (wp - 1) * LBA) != LBA)
			goto fail;
		if (!crash_block_ok(blk, wp - 1))
			__atomic_store_n(&o->bad, wp / CRASH_NLB,
					 __ATOMIC_RELAXED);
		__atomic_fetch_add(&o->checks, 1, __ATOMIC_RELEASE);
	}
	return NULL;
fail:
	__atomic_store_n(&o->bad, UINT64_MAX, __ATOMIC_RELAXED);
	return NULL;
}

START_TEST(test_wp_never_ahead_of_data)
{
	struct p2z_emu_params p = defparams();
	static char buf[CRASH_NLB * LBA];
	struct wp_observer o = { 0 };
	struct p2z_dev *dev;
	pthread_t th;
	uint64_t seq, lba, b;

	p.zone_bytes = p.cap_bytes = 64ULL << 20;
	p.nr_zones = 1;
	p.max_append_bytes = CRASH_NLB * LBA;
	dev = mkdev_p(&p);
	o.dev = opendev(P2Z_DEV_RDONLY | P2Z_DEV_PEEK);
	for (b = 0; b < CRASH_NLB; b++)
		fill(buf + b * LBA, 1, 0, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, wp_observe, &o), 0);
	/* One record, then wait for the observer to look at it, so that it
	 * is running while the others are appended. */
	for (seq = 0; seq < (p2z_check_short_run() ? 64 : 1024) &&
		      !__atomic_load_n(&o.bad, __ATOMIC_RELAXED);
	     seq++) {
		crash_stamp(buf, seq);
		ck_assert_int_eq(p2z_dev_append(dev, 0, buf, sizeof(buf), &lba,
						0),
				 (ssize_t)sizeof(buf));
		while (!seq && !__atomic_load_n(&o.checks, __ATOMIC_ACQUIRE) &&
		       !__atomic_load_n(&o.bad, __ATOMIC_RELAXED))
			sched_yield();
	}
	__atomic_store_n(&o.done, true, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_msg(o.bad != UINT64_MAX, "the observer's I/O failed");
	ck_assert_msg(
		!o.bad,
		"record %llu seen below the write pointer before its data",
		(unsigned long long)o.bad - 1);
	ck_assert_uint_gt(o.checks, 0);
	p2z_dev_close(o.dev);
	p2z_dev_close(dev);
}
END_TEST

/* ---- concurrent appends */

#define CC_THREADS 8

struct cc_arg {
	struct p2z_dev *dev;
	uint64_t zidx;
	unsigned int tid;
	unsigned int n;
	uint64_t *lba;
	ssize_t err;
};

static uint64_t cc_nlb(unsigned int tid, unsigned int seq)
{
	return 1 + (tid + seq) % 4;
}

static uint64_t cc_seed(unsigned int tid, unsigned int seq)
{
	return ((uint64_t)tid << 20 | seq) + 1;
}

static void *cc_thread(void *p)
{
	struct cc_arg *a = p;
	char buf[4 * LBA];
	unsigned int seq;
	ssize_t ret;

	for (seq = 0; seq < a->n; seq++) {
		uint64_t nlb = cc_nlb(a->tid, seq);

		fill(buf, nlb, cc_seed(a->tid, seq), 0);
		ret = p2z_dev_append(a->dev, a->zidx, buf, nlb * LBA,
				     &a->lba[seq], 0);
		if (ret != (ssize_t)(nlb * LBA)) {
			a->err = ret < 0 ? ret : -EIO;
			break;
		}
	}
	return NULL;
}

/* Check every append of the threads on zone @zidx: its blocks are
 * contiguous, where the device said, and the zone holds nothing else. */
static void cc_verify(struct p2z_dev *dev, struct cc_arg *args, uint64_t zidx)
{
	uint64_t wp = zwp(dev, zidx), start = zidx * (16ULL << 20) / LBA;
	uint64_t total = 0, rel, b, nlb;
	unsigned int t, seq;
	uint8_t *owned;
	char *buf;

	buf = malloc(wp * LBA + LBA);
	owned = calloc(wp + 1, 1);
	ck_assert(buf && owned);
	ck_assert_int_eq(p2z_dev_pread(dev, buf, wp * LBA, start * LBA),
			 (ssize_t)(wp * LBA));
	for (t = 0; t < CC_THREADS; t++) {
		if (args[t].zidx != zidx)
			continue;
		for (seq = 0; seq < args[t].n; seq++) {
			nlb = cc_nlb(t, seq);
			rel = args[t].lba[seq] - start;
			ck_assert_uint_le(rel + nlb, wp);
			ck_assert_msg(is_fill(buf + rel * LBA, nlb,
					      cc_seed(t, seq), 0),
				      "thread %u append %u interleaved", t,
				      seq);
			for (b = rel; b < rel + nlb; b++)
				ck_assert_uint_eq(owned[b]++, 0);
			total += nlb;
		}
	}
	ck_assert_uint_eq(total, wp);
	free(owned);
	free(buf);
}

/* _i = 0: all threads append to zone 0; 1: each to a zone of its own. */
struct cc_flusher {
	struct p2z_dev *dev;
	bool stop; /* atomic */
	int err;
	unsigned int nr;
};

/* Flush in a loop until told to stop (volatile cache: races the writes). */
static void *cc_flush_thread(void *p)
{
	struct cc_flusher *f = p;

	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
		if (p2z_dev_flush(f->dev) && !f->err)
			f->err = -EIO;
		f->nr++;
		sched_yield();
	}
	return NULL;
}

/*
 * _i bit 0: every thread on its own zone, else all on zone 0; bit 1: a
 * volatile-cache image of 1 MiB of cache (destaging), flushed by another
 * thread all along, then closed (written back) and checked again.
 */
START_TEST(test_append_concurrent)
{
	struct p2z_emu_params p = defparams();
	struct cc_arg args[CC_THREADS];
	pthread_t th[CC_THREADS], fth;
	unsigned int t, n = p2z_check_short_run() ? 20 : 200;
	struct cc_flusher fl = { 0 };
	bool vwc = _i & 2, per_zone = _i & 1;
	struct p2z_dev *dev;

	p.zone_bytes = p.cap_bytes = 16ULL << 20;
	p.nr_zones = CC_THREADS;
	if (vwc) {
		ck_assert_int_eq(setenv("P2Z_EMU_CACHE_BYTES", "1048576", 1),
				 0);
		ck_assert_int_eq(p2z_emu_create(img, &p,
						P2Z_EMU_CREATE_VOLATILE_CACHE),
				 0);
		dev = opendev(0);
		unsetenv("P2Z_EMU_CACHE_BYTES");
	} else {
		dev = mkdev_p(&p);
	}
	for (t = 0; t < CC_THREADS; t++) {
		args[t] = (struct cc_arg){
			.dev = dev, .zidx = per_zone ? t : 0, .tid = t, .n = n
		};
		args[t].lba = calloc(n, sizeof(uint64_t));
		ck_assert_ptr_nonnull(args[t].lba);
	}
	fl.dev = dev;
	if (vwc)
		ck_assert_int_eq(
			pthread_create(&fth, NULL, cc_flush_thread, &fl), 0);
	for (t = 0; t < CC_THREADS; t++)
		ck_assert_int_eq(
			pthread_create(&th[t], NULL, cc_thread, &args[t]), 0);
	for (t = 0; t < CC_THREADS; t++)
		ck_assert_int_eq(pthread_join(th[t], NULL), 0);
	if (vwc) {
		__atomic_store_n(&fl.stop, true, __ATOMIC_RELEASE);
		ck_assert_int_eq(pthread_join(fth, NULL), 0);
		ck_assert_int_eq(fl.err, 0);
	}
	for (t = 0; t < CC_THREADS; t++)
		ck_assert_int_eq(args[t].err, 0);
	for (t = 0; t < (per_zone ? CC_THREADS : 1); t++)
		cc_verify(dev, args, t);
	if (vwc) {
		p2z_dev_close(dev);
		dev = opendev(0);
		for (t = 0; t < (per_zone ? CC_THREADS : 1); t++)
			cc_verify(dev, args, t);
	}
	for (t = 0; t < CC_THREADS; t++)
		free(args[t].lba);
	p2z_dev_close(dev);
}
END_TEST

/* ---- suite */

static Suite *emu_crash_suite(void)
{
	Suite *s = suite_create("emu_crash");
	TCase *tc;

	tc = tcase(s, "persist");
	tcase_add_test(tc, test_crash_consistency);
	tcase_add_test(tc, test_wp_never_ahead_of_data);
	tcase_add_loop_test(tc, test_state_change_atomic, 0, A_NR);
	tcase_add_test(tc, test_old_image_full_at_capacity);

	tc = tcase(s, "concurrent");
	tcase_add_loop_test(tc, test_append_concurrent, 0, 4);
	return s;
}

int main(void)
{
	return p2z_check_run(emu_crash_suite());
}
