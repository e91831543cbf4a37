// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The per-zone write sequencer (src/zone_seq.c): writes of one sequential
 * zone arriving out of order are written in offset order; one whose
 * predecessor never comes fails with EINVAL after the hold bound; a failed
 * write fails the writes held behind it with EIO; a reset fails them too.
 * Each over both write paths (zone append, write at the write pointer).
 * Without the sequencer a write ahead of the write pointer fails at once.
 * Asynchronous reads (p2z_zone_read_submit()) and a reset of their zone.
 */
#include "zone_check.h"
#include "zone_priv.h"

/* Long enough never to expire in a test that waits for a predecessor. */
#define LONG_HOLD_MS 60000U

struct writer {
	pthread_t th;
	uint64_t zidx;
	uint64_t ofs;
	size_t len;
	ssize_t ret;
};

static void seq_setup(int i, unsigned int hold_ms)
{
	struct p2z_zone_opts o = { .errors = P2Z_ERRORS_REPAIR,
				   .no_append = i % 2,
				   .hold_ms = hold_ms };

	fx_create(&geoms[1]);
	fx_open(&o);
}

static void *writer_fn(void *arg)
{
	struct writer *w = arg;

	__atomic_store_n(&w->ret, put(w->zidx, w->ofs, w->len),
			 __ATOMIC_RELEASE);
	return NULL;
}

/* Start a writer and return once the zone holds `waiting` writes. */
static void writer_start(struct writer *w, uint64_t zidx, uint64_t ofs,
			 size_t len, unsigned int waiting)
{
	w->zidx = zidx;
	w->ofs = ofs;
	w->len = len;
	w->ret = 1;
	ck_assert_int_eq(pthread_create(&w->th, NULL, writer_fn, w), 0);
	/* Until it waits, or returned (then the check below fails). */
	while (p2z_zone_seq_waiting(fx.zt, zidx) < waiting &&
	       __atomic_load_n(&w->ret, __ATOMIC_ACQUIRE) == 1)
		sched_yield();
	ck_assert_uint_eq(p2z_zone_seq_waiting(fx.zt, zidx), waiting);
}

static ssize_t writer_join(struct writer *w)
{
	ck_assert_int_eq(pthread_join(w->th, NULL), 0);
	return __atomic_load_n(&w->ret, __ATOMIC_ACQUIRE);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Two writes ahead of the write pointer wait for the one at it. */
START_TEST(test_seq_out_of_order)
{
	struct writer b, c;
	uint64_t z, l;

	seq_setup(_i, LONG_HOLD_MS);
	z = seq_zone(0);
	l = lba();
	writer_start(&b, z, 2 * l, l, 1);
	writer_start(&c, z, l, l, 2);
	ck_assert_uint_eq(dev_wp(z), 0);
	ck_assert_int_eq(put(z, 0, l), l);
	ck_assert_int_eq(writer_join(&c), l);
	ck_assert_int_eq(writer_join(&b), l);
	ck_assert_uint_eq(p2z_zone_seq_waiting(fx.zt, z), 0);
	ck_assert_uint_eq(dev_wp(z), 3 * l);
	ck_assert_uint_eq(size_of(z), 3 * l);
	check_zone_data(z, 3 * l);
	/* behind the write pointer: EINVAL at once, as before */
	ck_assert_int_eq(put(z, l, l), -EINVAL);
	ck_assert_uint_eq(dev_wp(z), 3 * l);
	/* past the capacity: EFBIG, not held */
	ck_assert_int_eq(put(z, fx.p.cap_bytes, l), -EFBIG);
}
END_TEST

/* A predecessor that never comes: EINVAL after the hold bound. */
START_TEST(test_seq_missing_predecessor)
{
	uint64_t z, l, t0, ms;

	seq_setup(_i, 200);
	z = seq_zone(0);
	l = lba();
	t0 = now_ms();
	ck_assert_int_eq(put(z, l, l), -EINVAL);
	ms = now_ms() - t0;
	ck_assert_uint_ge(ms, 200);
	ck_assert_uint_lt(ms, 200 + 10000);
	ck_assert_uint_eq(p2z_zone_seq_waiting(fx.zt, z), 0);
	ck_assert_uint_eq(dev_wp(z), 0);
	ck_assert_uint_eq(size_of(z), 0);
	ck_assert_int_eq(put(z, 0, l), l);
	ck_assert_uint_eq(dev_wp(z), l);
	check_zone_data(z, l);
}
END_TEST

/* The write at the write pointer fails: the one held behind it gets EIO. */
START_TEST(test_seq_error_in_middle)
{
	struct writer b;
	uint64_t z, l;

	seq_setup(_i, LONG_HOLD_MS);
	z = seq_zone(0);
	l = lba();
	ck_assert_int_eq(put(z, 0, l), l);
	writer_start(&b, z, 2 * l, l, 1);
	ck_assert_int_eq(
		p2z_emu_set_fault(fx.path, z, P2Z_EMU_FAULT_FAIL_NEXT_IO), 0);
	ck_assert_int_eq(put(z, l, l), -EIO);
	ck_assert_int_eq(writer_join(&b), -EIO);
	ck_assert_uint_eq(dev_wp(z), l);
	ck_assert_uint_eq(size_of(z), l);
	check_zone_data(z, l);
	/* errors=repair: the zone goes on from the device's write pointer */
	ck_assert_int_eq(put(z, l, l), l);
	ck_assert_uint_eq(dev_wp(z), 2 * l);
	check_zone_data(z, 2 * l);
}
END_TEST

/* A reset with a write held: the write gets EIO, the zone is empty. */
START_TEST(test_seq_reset_held)
{
	struct writer b;
	uint64_t z, l;

	seq_setup(_i, LONG_HOLD_MS);
	z = seq_zone(0);
	l = lba();
	ck_assert_int_eq(put(z, 0, l), l);
	writer_start(&b, z, 2 * l, l, 1);
	ck_assert_int_eq(zone_reset(z), 0);
	ck_assert_int_eq(writer_join(&b), -EIO);
	ck_assert_uint_eq(p2z_zone_seq_waiting(fx.zt, z), 0);
	ck_assert_uint_eq(dev_wp(z), 0);
	ck_assert_uint_eq(size_of(z), 0);
	ck_assert_int_eq(put(z, 0, l), l);
	ck_assert_uint_eq(dev_wp(z), l);
	check_zone_data(z, l);
}
END_TEST

struct async_rd {
	struct p2z_zone_rd rd;
	ssize_t ret;
	unsigned int calls;
};

static void async_rd_end_io(struct p2z_zone_rd *rd, ssize_t ret)
{
	struct async_rd *a = (struct async_rd *)rd;

	a->ret = ret;
	a->calls++;
}

struct resetter {
	pthread_t th;
	uint64_t zidx;
	int ret;
};

static void *reset_fn(void *arg)
{
	struct resetter *r = arg;

	__atomic_store_n(&r->ret, zone_reset(r->zidx), __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A reset waits for the zone's reads in flight on a queue, and a read of
 * the zone submitted on that queue while the reset waits drains the queue
 * first (else the two would wait for each other): the read in flight
 * completes with the data before the reset, the new one after the reset
 * reads nothing.
 */
START_TEST(test_read_async_reset)
{
	struct async_rd a = { 0 }, b = { 0 };
	struct resetter r = { .ret = 1 };
	struct p2z_dev_queue *q;
	struct p2z_zone *zp;
	uint64_t z, l;
	void *ba, *bb;

	seq_setup(0, LONG_HOLD_MS);
	z = seq_zone(0);
	zp = &fx.zt->zones[z];
	l = lba();
	ba = buf_alloc(4 * l);
	bb = buf_alloc(l);
	/* valgrind cannot see io_uring fill them (emu reads on a ring) */
	memset(ba, 0, 4 * l);
	memset(bb, 0, l);
	ck_assert_int_eq(put(z, 0, 4 * l), 4 * l);
	ck_assert_int_eq(p2z_dev_queue_open(fx.dev, 4, &q), 0);
	a.rd.end_io = async_rd_end_io;
	b.rd.end_io = async_rd_end_io;
	ck_assert_int_eq(p2z_zone_read_submit(fx.zt, q, &a.rd, z, ba, 4 * l, 0),
			 -EINPROGRESS);
	r.zidx = z;
	ck_assert_int_eq(pthread_create(&r.th, NULL, reset_fn, &r), 0);
	/* Until the reset holds io_lock for write, waiting for read a. */
	while (!pthread_rwlock_tryrdlock(&zp->io_lock)) {
		pthread_rwlock_unlock(&zp->io_lock);
		sched_yield();
	}
	ck_assert_int_eq(__atomic_load_n(&r.ret, __ATOMIC_ACQUIRE), 1);
	ck_assert_int_eq(p2z_zone_read_submit(fx.zt, q, &b.rd, z, bb, l, 0), 0);
	ck_assert_uint_eq(a.calls, 1);
	ck_assert_int_eq(a.ret, 4 * l);
	ck_assert(check_pat(ba, 4 * l, z, 0));
	ck_assert_uint_eq(b.calls, 0);
	ck_assert_int_eq(pthread_join(r.th, NULL), 0);
	ck_assert_int_eq(r.ret, 0);
	ck_assert_uint_eq(size_of(z), 0);
	ck_assert_uint_eq(zp->rd_inflight, 0);
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 0);
	p2z_dev_queue_close(q);
	free(ba);
	free(bb);
}
END_TEST

#define NR_WRITERS 4
#define NR_PIECES 64

struct stripe {
	pthread_t th;
	uint64_t zidx;
	unsigned int first;
	int bad;
};

/* Writer `first` writes pieces first, first + NR_WRITERS, ... in order. */
static void *stripe_fn(void *arg)
{
	struct stripe *s = arg;
	unsigned int k;

	for (k = s->first; k < NR_PIECES; k += NR_WRITERS)
		if (put(s->zidx, (uint64_t)k * lba(), lba()) != (ssize_t)lba())
			s->bad++;
	return NULL;
}

/*
 * Four writers share a zone, each writing every fourth piece (the kernel's
 * split pieces of async direct writes, served by several threads): every
 * piece waits for its predecessor from another writer, none fails. Two
 * zones at once: their writes do not wait for each other.
 */
START_TEST(test_seq_interleaved)
{
	struct stripe s[2 * NR_WRITERS];
	unsigned int i;

	seq_setup(_i, LONG_HOLD_MS);
	for (i = 0; i < 2 * NR_WRITERS; i++) {
		s[i].zidx = seq_zone(i / NR_WRITERS);
		s[i].first = i % NR_WRITERS;
		s[i].bad = 0;
		ck_assert_int_eq(
			pthread_create(&s[i].th, NULL, stripe_fn, &s[i]), 0);
	}
	for (i = 0; i < 2 * NR_WRITERS; i++) {
		ck_assert_int_eq(pthread_join(s[i].th, NULL), 0);
		ck_assert_int_eq(s[i].bad, 0);
	}
	for (i = 0; i < 2; i++) {
		ck_assert_uint_eq(dev_wp(seq_zone(i)), NR_PIECES * lba());
		check_zone_data(seq_zone(i), NR_PIECES * lba());
	}
}
END_TEST

/* The non-blocking form (p2z_zone_write_async()). */
struct awr {
	struct p2z_zone_wr wr;
	void *own; /* the copy hold() made */
	ssize_t ret;
	unsigned int done; /* times done() ran */
	unsigned int order; /* 1 + its rank among the completions */
	bool held;
};

static unsigned int awr_seq;

static int awr_hold(struct p2z_zone_wr *wr)
{
	struct awr *a = (struct awr *)wr;

	a->held = true;
	a->own = buf_alloc(wr->len);
	memcpy(a->own, wr->buf, wr->len);
	wr->buf = a->own;
	return 0;
}

static void awr_done(struct p2z_zone_wr *wr, ssize_t ret)
{
	struct awr *a = (struct awr *)wr;

	a->ret = ret;
	a->done++;
	a->order = ++awr_seq;
	free(a->own);
	a->own = NULL;
}

/*
 * Submit the pattern at ofs from a buffer that is scribbled over and freed
 * once p2z_zone_write_async() returned: a parked write must use its copy.
 */
static void awr_submit_q(struct awr *a, uint64_t zidx, uint64_t ofs, size_t len,
			 bool append, struct p2z_dev_queue *q)
{
	void *buf = buf_alloc(len);

	memset(a, 0, sizeof(*a));
	fill(buf, len, zidx, ofs);
	a->wr.zidx = zidx;
	a->wr.buf = buf;
	a->wr.len = len;
	a->wr.ofs = ofs;
	a->wr.append = append;
	a->wr.hold = awr_hold;
	a->wr.done = awr_done;
	a->wr.q = q;
	p2z_zone_write_async(fx.zt, &a->wr);
	memset(buf, 0xee, len);
	free(buf);
}

static void awr_submit(struct awr *a, uint64_t zidx, uint64_t ofs, size_t len,
		       bool append)
{
	awr_submit_q(a, zidx, ofs, len, append, NULL);
}

static void reap_all(struct p2z_dev_queue *q)
{
	while (p2z_dev_queue_inflight(q))
		p2z_dev_queue_reap(q, 1);
}

/* Out of order: parked, then written in offset order by the third. */
START_TEST(test_aseq_out_of_order)
{
	struct awr a[4];
	uint64_t z, l;

	seq_setup(_i, LONG_HOLD_MS);
	awr_seq = 0;
	z = seq_zone(0);
	l = lba();
	awr_submit(&a[2], z, 2 * l, l, false);
	awr_submit(&a[1], z, l, l, false);
	ck_assert_uint_eq(a[2].done + a[1].done, 0);
	ck_assert(a[2].held && a[1].held);
	ck_assert_uint_eq(p2z_zone_seq_waiting(fx.zt, z), 2);
	ck_assert_uint_eq(p2z_zone_seq_parked(fx.zt), 2);
	ck_assert_uint_eq(dev_wp(z), 0);
	awr_submit(&a[0], z, 0, l, false);
	ck_assert(!a[0].held);
	ck_assert_uint_eq(a[0].done + a[1].done + a[2].done, 3);
	ck_assert_int_eq(a[0].ret, l);
	ck_assert_int_eq(a[1].ret, l);
	ck_assert_int_eq(a[2].ret, l);
	ck_assert_uint_eq(a[0].order, 1);
	ck_assert_uint_eq(a[1].order, 2);
	ck_assert_uint_eq(a[2].order, 3);
	ck_assert_uint_eq(p2z_zone_seq_parked(fx.zt), 0);
	ck_assert_uint_eq(dev_wp(z), 3 * l);
	check_zone_data(z, 3 * l);
	/* behind: EINVAL at once; an append goes at the write pointer */
	awr_submit(&a[3], z, l, l, false);
	ck_assert_uint_eq(a[3].done, 1);
	ck_assert_int_eq(a[3].ret, -EINVAL);
	awr_submit(&a[3], z, 3 * l, l, true);
	ck_assert_int_eq(a[3].ret, l);
	ck_assert_uint_eq(dev_wp(z), 4 * l);
	check_zone_data(z, 4 * l);
}
END_TEST

/*
 * The predecessor at l is written (blocking): the write parked at 2 * l
 * goes right after it, the zone holds both.
 */
static void put_releases(struct awr *a, uint64_t z, uint64_t l)
{
	ck_assert_int_eq(put(z, l, l), l);
	ck_assert_uint_eq(a->done, 1);
	ck_assert_int_eq(a->ret, l);
	ck_assert_uint_eq(dev_wp(z), 3 * l);
	check_zone_data(z, 3 * l);
}

/* A parked write whose predecessor never comes: EINVAL once expired. */
START_TEST(test_aseq_missing_predecessor)
{
	struct awr a;
	uint64_t z, l, t0;
	unsigned int n = 0;

	seq_setup(_i, 200);
	z = seq_zone(0);
	l = lba();
	t0 = now_ms();
	awr_submit(&a, z, l, l, false);
	ck_assert_uint_eq(a.done, 0);
	/* polled, bounded: the deadline is what is under test */
	while (!n && now_ms() - t0 < 10000) {
		n = p2z_zone_seq_expire(fx.zt, false);
		if (!n)
			sched_yield();
	}
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_ge(now_ms() - t0, 200);
	ck_assert_uint_eq(a.done, 1);
	ck_assert_int_eq(a.ret, -EINVAL);
	ck_assert_uint_eq(p2z_zone_seq_waiting(fx.zt, z), 0);
	ck_assert_uint_eq(dev_wp(z), 0);
	ck_assert_int_eq(put(z, 0, l), l);
	check_zone_data(z, l);
}
END_TEST

/*
 * The hold bound counts from the zone's last progress: a parked write
 * whose zone keeps ending writes is not failed however long it waited
 * (a deep queue of a slow zone, func/0120 on a loaded guest), and is once
 * the zone made no progress for the bound. Time is set, not waited for.
 */
START_TEST(test_aseq_hold_counts_progress)
{
	struct p2z_zone *zn;
	struct awr a, b;
	uint64_t z, l, t;

	seq_setup(_i, 1000);
	z = seq_zone(0);
	zn = &fx.zt->zones[z];
	l = lba();
	awr_submit(&a, z, 2 * l, l, false);
	ck_assert_uint_eq(a.done, 0);
	/* a write of the zone ends: the zone's progress is now */
	t = now_ms();
	ck_assert_int_eq(put(z, 0, l), l);
	pthread_mutex_lock(&zn->lock);
	ck_assert_uint_ge(zn->seq_progress_ms, t);
	ck_assert_uint_le(zn->seq_progress_ms, now_ms());
	/* parked 5 s ago, progress now: kept */
	a.wr.since_ms = now_ms() - 5000;
	pthread_mutex_unlock(&zn->lock);
	ck_assert_uint_eq(p2z_zone_seq_expire(fx.zt, false), 0);
	ck_assert_uint_eq(a.done, 0);
	/* its predecessor comes: written in order */
	put_releases(&a, z, l);
	/* a gap, and no progress for 5 s: failed */
	awr_submit(&b, z, 4 * l, l, false);
	ck_assert_uint_eq(b.done, 0);
	pthread_mutex_lock(&zn->lock);
	b.wr.since_ms = now_ms() - 5000;
	zn->seq_progress_ms = now_ms() - 5000;
	pthread_mutex_unlock(&zn->lock);
	ck_assert_uint_eq(p2z_zone_seq_expire(fx.zt, false), 1);
	ck_assert_uint_eq(b.done, 1);
	ck_assert_int_eq(b.ret, -EINVAL);
	ck_assert_uint_eq(dev_wp(z), 3 * l);
}
END_TEST

/*
 * The blocking form likewise: a writer held ahead for longer than the
 * bound (1 s) while the zone's other writes end every ~100 ms is written,
 * not failed.
 */
START_TEST(test_seq_hold_counts_progress)
{
	struct writer w;
	uint64_t z, l, i, t;

	seq_setup(_i, 1000);
	z = seq_zone(0);
	l = lba();
	writer_start(&w, z, 16 * l, l, 1);
	t = now_ms();
	for (i = 0; i < 16; i++) {
		/* polled, bounded: the spacing is what is under test */
		while (now_ms() - t < 100 * (i + 1))
			sched_yield();
		ck_assert_int_eq(put(z, i * l, l), l);
	}
	ck_assert_uint_ge(now_ms() - t, 1500);
	ck_assert_int_eq(writer_join(&w), l);
	ck_assert_uint_eq(dev_wp(z), 17 * l);
	check_zone_data(z, 17 * l);
}
END_TEST

/* The predecessor (a blocking write) fails: the parked one gets EIO. */
START_TEST(test_aseq_error_in_middle)
{
	struct awr a;
	uint64_t z, l;

	seq_setup(_i, LONG_HOLD_MS);
	z = seq_zone(0);
	l = lba();
	ck_assert_int_eq(put(z, 0, l), l);
	awr_submit(&a, z, 2 * l, l, false);
	ck_assert_uint_eq(a.done, 0);
	ck_assert_int_eq(
		p2z_emu_set_fault(fx.path, z, P2Z_EMU_FAULT_FAIL_NEXT_IO), 0);
	ck_assert_int_eq(put(z, l, l), -EIO);
	ck_assert_uint_eq(a.done, 1);
	ck_assert_int_eq(a.ret, -EIO);
	ck_assert_uint_eq(p2z_zone_seq_parked(fx.zt), 0);
	ck_assert_uint_eq(dev_wp(z), l);
	check_zone_data(z, l);
	/* errors=repair: it goes on, a parked write kicked by a blocking one */
	awr_submit(&a, z, 2 * l, l, false);
	ck_assert_uint_eq(a.done, 0);
	put_releases(&a, z, l);
}
END_TEST

/* A reset with parked writes: they get EIO, the zone is empty. */
START_TEST(test_aseq_reset_parked)
{
	struct awr a, b;
	uint64_t z, l;

	seq_setup(_i, LONG_HOLD_MS);
	z = seq_zone(0);
	l = lba();
	ck_assert_int_eq(put(z, 0, l), l);
	awr_submit(&a, z, 2 * l, l, false);
	awr_submit(&b, z, 3 * l, l, false);
	ck_assert_uint_eq(p2z_zone_seq_waiting(fx.zt, z), 2);
	ck_assert_int_eq(zone_reset(z), 0);
	ck_assert_uint_eq(a.done + b.done, 2);
	ck_assert_int_eq(a.ret, -EIO);
	ck_assert_int_eq(b.ret, -EIO);
	ck_assert_uint_eq(p2z_zone_seq_waiting(fx.zt, z), 0);
	ck_assert_uint_eq(p2z_zone_seq_parked(fx.zt), 0);
	ck_assert_uint_eq(dev_wp(z), 0);
	ck_assert_uint_eq(size_of(z), 0);
	awr_submit(&a, z, 0, l, false);
	ck_assert_int_eq(a.ret, l);
	check_zone_data(z, l);
}
END_TEST

/*
 * Submitted on a queue: the write with the turn is at the device when
 * p2z_zone_write_async() returns but answered from its completion, which
 * advances the zone and submits the parked successor on the same queue.
 */
START_TEST(test_aseq_submitted)
{
	struct p2z_dev_queue *q;
	struct awr a[3];
	uint64_t z, l;

	seq_setup(_i, LONG_HOLD_MS);
	awr_seq = 0;
	z = seq_zone(0);
	l = lba();
	ck_assert_int_eq(p2z_dev_queue_open(fx.dev, 4, &q), 0);
	awr_submit_q(&a[1], z, l, l, false, q);
	ck_assert(a[1].held);
	ck_assert_uint_eq(p2z_zone_seq_parked(fx.zt), 1);
	awr_submit_q(&a[0], z, 0, l, false, q);
	/* its data was copied: the caller's buffer is gone already */
	ck_assert(a[0].held);
	ck_assert_uint_eq(a[0].done + a[1].done, 0);
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 1);
	ck_assert_uint_eq(size_of(z), 0);
	/* behind the write in flight, ahead of the write pointer: EINVAL */
	awr_submit_q(&a[2], z, 0, l, false, q);
	ck_assert_uint_eq(a[2].done, 1);
	ck_assert_int_eq(a[2].ret, -EINVAL);
	reap_all(q);
	ck_assert_uint_eq(a[0].done + a[1].done, 2);
	ck_assert_int_eq(a[0].ret, l);
	ck_assert_int_eq(a[1].ret, l);
	ck_assert_uint_eq(a[0].order, 2);
	ck_assert_uint_eq(a[1].order, 3);
	ck_assert_uint_eq(p2z_zone_seq_parked(fx.zt), 0);
	ck_assert_uint_eq(size_of(z), 2 * l);
	ck_assert_uint_eq(dev_wp(z), 2 * l);
	check_zone_data(z, 2 * l);
	/* an append on the queue goes at the new write pointer */
	awr_submit_q(&a[2], z, 2 * l, l, true, q);
	ck_assert_uint_eq(a[2].done, 0);
	reap_all(q);
	ck_assert_int_eq(a[2].ret, l);
	ck_assert_uint_eq(size_of(z), 3 * l);
	check_zone_data(z, 3 * l);
	ck_assert(!p2z_zone_write_unsettled());
	p2z_dev_queue_close(q);
}
END_TEST

/*
 * A submitted write fails: its completion leaves it to
 * p2z_zone_write_settle() (errors= may wait for reads), which answers it
 * and the write parked behind it with EIO; the zone goes on.
 */
START_TEST(test_aseq_submitted_error)
{
	struct p2z_dev_queue *q;
	struct awr a, b;
	uint64_t z, l;

	seq_setup(_i, LONG_HOLD_MS);
	z = seq_zone(0);
	l = lba();
	ck_assert_int_eq(put(z, 0, l), l);
	ck_assert_int_eq(p2z_dev_queue_open(fx.dev, 4, &q), 0);
	awr_submit_q(&b, z, 2 * l, l, false, q);
	ck_assert_int_eq(
		p2z_emu_set_fault(fx.path, z, P2Z_EMU_FAULT_FAIL_NEXT_IO), 0);
	awr_submit_q(&a, z, l, l, false, q);
	reap_all(q);
	ck_assert(p2z_zone_write_unsettled());
	ck_assert_uint_eq(a.done + b.done, 0);
	ck_assert_uint_eq(p2z_zone_write_settle(), 1);
	ck_assert(!p2z_zone_write_unsettled());
	ck_assert_uint_eq(a.done, 1);
	ck_assert_int_eq(a.ret, -EIO);
	ck_assert_uint_eq(b.done, 1);
	ck_assert_int_eq(b.ret, -EIO);
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 0);
	ck_assert_uint_eq(p2z_zone_seq_parked(fx.zt), 0);
	ck_assert_uint_eq(dev_wp(z), l);
	ck_assert_uint_eq(size_of(z), l);
	/* errors=repair: the next write at the write pointer goes on */
	awr_submit_q(&a, z, l, l, false, q);
	reap_all(q);
	ck_assert_int_eq(a.ret, l);
	check_zone_data(z, 2 * l);
	p2z_dev_queue_close(q);
}
END_TEST

/*
 * A reset while a submitted write is in flight (on a queue another
 * thread reaps) waits for its completion: the write succeeds, then the
 * zone is reset.
 */
START_TEST(test_aseq_submitted_reset)
{
	struct resetter r = { .ret = 1 };
	struct p2z_dev_queue *q;
	struct awr a;
	uint64_t z, l;

	seq_setup(_i, LONG_HOLD_MS);
	z = seq_zone(0);
	l = lba();
	ck_assert_int_eq(put(z, 0, l), l);
	ck_assert_int_eq(p2z_dev_queue_open(fx.dev, 4, &q), 0);
	awr_submit_q(&a, z, l, l, false, q);
	ck_assert_uint_eq(a.done, 0);
	r.zidx = z;
	ck_assert_int_eq(pthread_create(&r.th, NULL, reset_fn, &r), 0);
	/* Until the reset waits in the sequencer for the write in flight. */
	while (p2z_zone_seq_waiting(fx.zt, z) < 1)
		sched_yield();
	ck_assert_int_eq(__atomic_load_n(&r.ret, __ATOMIC_ACQUIRE), 1);
	reap_all(q);
	ck_assert_uint_eq(a.done, 1);
	ck_assert_int_eq(a.ret, l);
	ck_assert_int_eq(pthread_join(r.th, NULL), 0);
	ck_assert_int_eq(r.ret, 0);
	ck_assert_uint_eq(size_of(z), 0);
	ck_assert_uint_eq(dev_wp(z), 0);
	p2z_dev_queue_close(q);
}
END_TEST

struct policy {
	pthread_t th;
	uint64_t zidx;
	ssize_t ret;
};

static void *read_error_fn(void *arg)
{
	struct policy *p = arg;

	p->ret = p2z_zone_read_error(fx.zt, p->zidx, 0, -EIO);
	return NULL;
}

/*
 * The errors= policy of a read error is a barrier against the zone's
 * writes: one submitted on a queue while the policy runs (held here
 * between its wr_lock and the re-read of the zone) is held, not written,
 * and written from the write pointer the policy re-read once it ended.
 * The zone's size is then the device's write pointer: counted once.
 */
START_TEST(test_aseq_read_error_barrier)
{
	struct policy p = { .ret = 1 };
	struct p2z_dev_queue *q;
	struct p2z_zone *zp;
	struct awr a;
	uint64_t z, l;

	seq_setup(_i, LONG_HOLD_MS);
	z = seq_zone(0);
	zp = &fx.zt->zones[z];
	l = lba();
	ck_assert_int_eq(put(z, 0, l), l);
	ck_assert_int_eq(p2z_dev_queue_open(fx.dev, 4, &q), 0);
	/* The policy stops at io_lock, wr_lock held. */
	ck_assert_int_eq(pthread_rwlock_rdlock(&zp->io_lock), 0);
	p.zidx = z;
	ck_assert_int_eq(pthread_create(&p.th, NULL, read_error_fn, &p), 0);
	while (!pthread_mutex_trylock(&zp->wr_lock)) {
		pthread_mutex_unlock(&zp->wr_lock);
		sched_yield();
	}
	awr_submit_q(&a, z, l, l, false, q);
	ck_assert_uint_eq(a.done, 0);
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 0);
	ck_assert_uint_eq(p2z_zone_seq_parked(fx.zt), 1);
	ck_assert_uint_eq(dev_wp(z), l);
	ck_assert_int_eq(pthread_rwlock_unlock(&zp->io_lock), 0);
	ck_assert_int_eq(pthread_join(p.th, NULL), 0);
	ck_assert_int_eq(p.ret, -EIO);
	reap_all(q);
	ck_assert(!p2z_zone_write_unsettled());
	ck_assert_uint_eq(a.done, 1);
	ck_assert_int_eq(a.ret, l);
	ck_assert_uint_eq(p2z_zone_seq_parked(fx.zt), 0);
	ck_assert_uint_eq(dev_wp(z), 2 * l);
	ck_assert_uint_eq(size_of(z), 2 * l);
	check_zone_data(z, 2 * l);
	ck_assert(p2z_zone_clear_changed(fx.zt, z));
	p2z_dev_queue_close(q);
}
END_TEST

/*
 * A read error's policy waits for the write submitted before it (its
 * queue reaped by another thread), then re-reads the zone: the size is
 * the device's write pointer, the write succeeded.
 */
START_TEST(test_aseq_read_error_inflight)
{
	struct policy p = { .ret = 1 };
	struct p2z_dev_queue *q;
	struct awr a;
	uint64_t z, l;

	seq_setup(_i, LONG_HOLD_MS);
	z = seq_zone(0);
	l = lba();
	ck_assert_int_eq(put(z, 0, l), l);
	ck_assert_int_eq(p2z_dev_queue_open(fx.dev, 4, &q), 0);
	awr_submit_q(&a, z, l, l, false, q);
	ck_assert_uint_eq(p2z_dev_queue_inflight(q), 1);
	p.zidx = z;
	ck_assert_int_eq(pthread_create(&p.th, NULL, read_error_fn, &p), 0);
	/* The policy waits for the write in flight, whenever it starts. */
	reap_all(q);
	ck_assert_int_eq(pthread_join(p.th, NULL), 0);
	ck_assert_int_eq(p.ret, -EIO);
	ck_assert_uint_eq(a.done, 1);
	ck_assert_int_eq(a.ret, l);
	ck_assert_uint_eq(dev_wp(z), 2 * l);
	ck_assert_uint_eq(size_of(z), 2 * l);
	check_zone_data(z, 2 * l);
	p2z_dev_queue_close(q);
}
END_TEST

static Suite *zone_seq_suite(void)
{
	Suite *s = suite_create("zone_seq");
	TCase *tc;

	tc = tcase(s, "seq");
	tcase_add_loop_test(tc, test_seq_out_of_order, 0, 2);
	tcase_add_loop_test(tc, test_seq_missing_predecessor, 0, 2);
	tcase_add_loop_test(tc, test_seq_error_in_middle, 0, 2);
	tcase_add_loop_test(tc, test_seq_reset_held, 0, 2);
	tcase_add_loop_test(tc, test_seq_interleaved, 0, 2);
	tcase_add_loop_test(tc, test_aseq_out_of_order, 0, 2);
	tcase_add_loop_test(tc, test_aseq_missing_predecessor, 0, 2);
	tcase_add_loop_test(tc, test_aseq_hold_counts_progress, 0, 2);
	tcase_add_loop_test(tc, test_seq_hold_counts_progress, 0, 2);
	tcase_add_loop_test(tc, test_aseq_error_in_middle, 0, 2);
	tcase_add_loop_test(tc, test_aseq_reset_parked, 0, 2);
	tcase_add_loop_test(tc, test_aseq_submitted, 0, 2);
	tcase_add_loop_test(tc, test_aseq_submitted_error, 0, 2);
	tcase_add_loop_test(tc, test_aseq_submitted_reset, 0, 2);
	tcase_add_loop_test(tc, test_aseq_read_error_barrier, 0, 2);
	tcase_add_loop_test(tc, test_aseq_read_error_inflight, 0, 2);
	tcase_add_test(tc, test_read_async_reset);
	return s;
}

int main(void)
{
	return p2z_check_run(zone_seq_suite());
}
