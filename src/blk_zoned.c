// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * po2zfs-blk's zoned target (as ublksrv's targets/): the requests of the
 * po2 zoned block device served through p2z_dev_*(), and the write pointer
 * cache they keep.
 *
 * Reads return the device's data up to the write pointer and zeros after
 * it, up to the po2 zone end: the server keeps each zone's write pointer
 * (from the report at start, then from its own completed writes, appends,
 * resets and finishes; from a new report of the zone after a failure), so
 * the device is never asked for anything past a write pointer (dev.h).
 * Writes touching the gap between capacity and the po2 zone end fail with
 * EIO, as dm-po2zoned's do.
 *
 * Each request commits its tag once, with what COMMIT carries: bytes, 0 or
 * -errno (now, or from its device request's end_io).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blk_priv.h"
#include "po2zfs/log.h"

/* Zones: the server's write pointers. */

static uint64_t p2z_blk_readable(const struct p2z_blk_zone *z)
{
	if (z->type == P2Z_ZONE_TYPE_CNV)
		return z->cap_lba;
	return __atomic_load_n(&z->wp_ofs, __ATOMIC_ACQUIRE);
}

static void p2z_blk_set_wp(struct p2z_blk_zone *z, uint64_t wp_ofs)
{
	__atomic_store_n(&z->wp_ofs, wp_ofs, __ATOMIC_RELEASE);
}

/*
 * After a completed write or append: writes and appends to one zone run on
 * several queues and finish in any order, so the write pointer only moves
 * forward (p2z_blk_wp_advance(): one that finished later but landed
 * earlier must not pull it back over data another one acknowledged).
 */
static void p2z_blk_advance_wp(struct p2z_blk_zone *z, uint64_t wp_ofs)
{
	uint64_t cur = __atomic_load_n(&z->wp_ofs, __ATOMIC_RELAXED), next;

	do {
		next = p2z_blk_wp_advance(cur, wp_ofs);
		if (next == cur)
			return;
	} while (!__atomic_compare_exchange_n(&z->wp_ofs, &cur, next, true,
					      __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

static void p2z_blk_zone_load(struct p2z_blk_zone *z,
			      const struct p2z_zone_info *zi)
{
	z->cap_lba = zi->cap_lba;
	z->type = zi->type;
	p2z_blk_set_wp(z, p2z_blk_wp_ofs(zi));
}

/*
 * After a failed write or zone operation: the device says where it is.
 * Only forward (but to 0 for a zone gone offline): an append on another
 * queue may have completed, and moved the cached pointer past what this
 * report saw, between the report and now.
 */
static void p2z_blk_zone_refresh(struct p2z_blk *blk, uint64_t zidx)
{
	struct p2z_blk_zone *z = &blk->zones[zidx];
	struct p2z_zone_info zi;

	if (p2z_dev_report_zones(blk->dev, zidx, 1, &zi) != 1 ||
	    zi.start_lba != p2z_geom_zone_start(&blk->g, zidx))
		return;
	if (zi.cond == P2Z_ZONE_COND_OFFLINE)
		p2z_blk_set_wp(z, 0);
	else
		p2z_blk_advance_wp(z, p2z_blk_wp_ofs(&zi));
}

static int p2z_blk_zone_load_fn(const struct p2z_zone_info *zi, uint64_t zidx,
				void *arg)
{
	struct p2z_blk *blk = arg;

	p2z_blk_zone_load(&blk->zones[zidx], zi);
	return 0;
}

/* Load every zone's write pointer (a failed report is logged by the walk). */
int p2z_blk_zones_init(struct p2z_blk *blk)
{
	blk->zones = calloc(blk->g.nr_zones, sizeof(*blk->zones));
	if (!blk->zones)
		return -ENOMEM;
	return p2z_dev_zone_walk(blk->dev, 0, blk->g.nr_zones,
				 p2z_blk_zone_load_fn, blk);
}

/* Zone gates: who writes to a zone now (blk.h p2z_blk_gate_enter()). */

static void p2z_blk_gate_in(struct p2z_blk_tag *t, struct p2z_blk_zone *z,
			    enum p2z_blk_gate_kind kind)
{
	uint32_t cur = __atomic_load_n(&z->gate, __ATOMIC_ACQUIRE), next;

	for (;;) {
		if (p2z_blk_gate_enter(cur, kind, &next)) {
			/* Its predecessor completes on some queue: wait. */
			p2z_blk_queue_wait(t->q);
			cur = __atomic_load_n(&z->gate, __ATOMIC_ACQUIRE);
			continue;
		}
		if (__atomic_compare_exchange_n(&z->gate, &cur, next, false,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			break;
	}
	t->gate = (int)kind;
}

static void p2z_blk_gate_out(struct p2z_blk_tag *t, struct p2z_blk_zone *z)
{
	uint32_t cur = __atomic_load_n(&z->gate, __ATOMIC_ACQUIRE);

	if (t->gate == P2Z_BLK_GATE_NONE)
		return;
	while (!__atomic_compare_exchange_n(
		&z->gate, &cur,
		p2z_blk_gate_leave(cur, (enum p2z_blk_gate_kind)t->gate), false,
		__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	t->gate = P2Z_BLK_GATE_NONE;
}

/* Wait until no write or append of zones @zidx..@zidx+@nr-1 is in flight. */
static void p2z_blk_zones_drain(struct p2z_blk_queue *q, uint64_t zidx,
				uint64_t nr)
{
	struct p2z_blk_zone *zones = q->blk->zones;
	uint64_t i;

	for (i = zidx; i < zidx + nr; i++)
		while (!p2z_blk_gate_idle(
			__atomic_load_n(&zones[i].gate, __ATOMIC_ACQUIRE)))
			p2z_blk_queue_wait(q);
}

/*
 * Requests. Each commits its tag once: now, or from its device request's
 * end_io, with bytes, 0 or -errno.
 */

static uint64_t p2z_blk_buf_ofs(unsigned int qid, unsigned int tag)
{
	return UBLKSRV_IO_BUF_OFFSET + ((uint64_t)qid << UBLK_QID_OFF) +
	       ((uint64_t)tag << UBLK_TAG_OFF);
}

static char *p2z_blk_tag_buf(const struct p2z_blk_tag *t)
{
	return t->q->bufs + (size_t)t->tag * t->q->blk->buf_bytes;
}

static void p2z_blk_done(struct p2z_blk_tag *t, int res, uint64_t sector)
{
	p2z_blk_queue_commit(t->q, t->tag, res, sector);
}

/* Start @t->io on the device queue; on refusal, complete the tag. */
static void p2z_blk_submit(struct p2z_blk_tag *t, struct p2z_blk_zone *z)
{
	int ret = p2z_dev_submit(t->q->dq, &t->io);

	if (ret) {
		if (z)
			p2z_blk_gate_out(t, z);
		p2z_blk_done(t, p2z_blk_errno(ret), 0);
	}
}

static void p2z_blk_read_next(struct p2z_blk_tag *t);

static void p2z_blk_read_end_io(struct p2z_io *io)
{
	struct p2z_blk_tag *t = (struct p2z_blk_tag *)io;
	char *buf = p2z_blk_tag_buf(t);

	if (io->ret != (ssize_t)io->len) {
		p2z_blk_done(
			t, p2z_blk_errno(io->ret < 0 ? (int)io->ret : -EIO), 0);
		return;
	}
	memset(buf + t->done + io->len, 0, t->piece - io->len);
	t->done += t->piece;
	p2z_blk_read_next(t);
}

/*
 * The read's next piece (one zone's part, up to its write pointer) goes to
 * the device; zeros past the write pointer; once all is there, the data
 * goes to /dev/ublkcN and the tag completes.
 */
static void p2z_blk_read_next(struct p2z_blk_tag *t)
{
	struct p2z_blk *blk = t->q->blk;
	char *buf = p2z_blk_tag_buf(t);
	struct p2z_geom_piece pc;
	struct p2z_blk_zone *z;
	uint64_t zidx, n;
	ssize_t ret;

	while (t->done < t->len) {
		if (p2z_geom_po2_zone_of_byte(&blk->g, t->ofs + t->done, &zidx))
			return p2z_blk_done(t, -EIO, 0);
		z = &blk->zones[zidx];
		if (p2z_geom_po2_piece(&blk->g, t->ofs + t->done,
				       t->len - t->done, z->cap_lba, &pc))
			return p2z_blk_done(t, -EIO, 0);
		n = p2z_blk_read_len(&pc, p2z_blk_readable(z)
						  << blk->g.lba_shift);
		if (n) {
			memset(&t->io, 0, sizeof(t->io));
			t->io.op = P2Z_IO_READ;
			t->io.buf = buf + t->done;
			t->io.len = n;
			t->io.ofs = (p2z_geom_zone_start(&blk->g, zidx)
				     << blk->g.lba_shift) +
				    pc.zone_ofs;
			t->io.end_io = p2z_blk_read_end_io;
			t->piece = pc.len;
			return p2z_blk_submit(t, NULL);
		}
		memset(buf + t->done, 0, pc.len);
		t->done += pc.len;
	}
	ret = pwrite(blk->cdev_fd, buf, t->len,
		     p2z_blk_buf_ofs(t->q->qid, t->tag));
	if (ret < 0)
		return p2z_blk_done(t, -errno, 0);
	p2z_blk_done(t, ret == (ssize_t)t->len ? (int)t->len : -EIO, 0);
}

static void p2z_blk_read(struct p2z_blk_tag *t,
			 const struct ublksrv_io_desc *iod)
{
	t->ofs = iod->start_sector << P2Z_BLK_SECTOR_SHIFT;
	t->len = (uint64_t)iod->nr_sectors << P2Z_BLK_SECTOR_SHIFT;
	t->done = 0;
	if (t->len > t->q->blk->buf_bytes)
		return p2z_blk_done(t, -EIO, 0);
	p2z_blk_read_next(t);
}

/* The request's data from /dev/ublkcN into the tag's buffer. */
static int p2z_blk_fetch_data(struct p2z_blk_tag *t, uint64_t len)
{
	ssize_t ret = pread(t->q->blk->cdev_fd, p2z_blk_tag_buf(t), len,
			    p2z_blk_buf_ofs(t->q->qid, t->tag));

	if (ret != (ssize_t)len)
		return ret < 0 ? -errno : -EIO;
	return 0;
}

/*
 * Recovery: the append record (blk.h struct p2z_blk_slot), one slot per
 * queue and tag in a shared mapping of P2Z_BLK_RUN_DIR/N.slots: filled
 * before the device sees the append, LANDED (with where) after it
 * completed and before the commit, freed once the kernel has the commit.
 * Plain stores to a MAP_SHARED page survive a SIGKILL.
 */
static struct p2z_blk_slot *p2z_blk_slot_of(const struct p2z_blk_tag *t)
{
	const struct p2z_blk *blk = t->q->blk;

	return &blk->slots[(size_t)t->q->qid * blk->depth + t->tag];
}

static void p2z_blk_slot_submitted(const struct p2z_blk_tag *t, uint64_t len,
				   uint32_t crc)
{
	struct p2z_blk *blk = t->q->blk;
	struct p2z_blk_slot *s = p2z_blk_slot_of(t);

	s->zidx = t->zidx;
	s->len = (uint32_t)(len >> blk->g.lba_shift);
	s->crc = crc;
	/*
	 * The counter before the write pointer: what completes later is
	 * newer. After the gate, with a fence paired with the zone op's
	 * (p2z_blk_zop_begin()): a seq before the op's begin means the op's
	 * drain saw this append in the gate and waited for it.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	s->seq = __atomic_load_n(&blk->rec->seq, __ATOMIC_ACQUIRE);
	s->wp_submit =
		__atomic_load_n(&blk->zones[t->zidx].wp_ofs, __ATOMIC_ACQUIRE);
	s->landed = 0;
	__atomic_store_n(&s->state, P2Z_BLK_SLOT_SUBMITTED, __ATOMIC_RELEASE);
}

/* @landed: LBA from the zone start, or UINT64_MAX: failed (freed) */
static void p2z_blk_slot_landed(const struct p2z_blk_tag *t, uint64_t landed)
{
	struct p2z_blk_slot *s;

	if (!t->q->blk->slots)
		return;
	s = p2z_blk_slot_of(t);
	if (landed == UINT64_MAX) {
		__atomic_store_n(&s->state, P2Z_BLK_SLOT_FREE,
				 __ATOMIC_RELEASE);
		return;
	}
	s->landed = landed;
	__atomic_store_n(&s->state, P2Z_BLK_SLOT_LANDED, __ATOMIC_RELEASE);
}

/* @lost = max(@lost, @seq) in the record's header */
static void p2z_blk_rec_lost(struct p2z_blk_rec *rec, uint64_t seq)
{
	uint64_t cur = __atomic_load_n(&rec->lost, __ATOMIC_ACQUIRE);

	while (cur < seq &&
	       !__atomic_compare_exchange_n(&rec->lost, &cur, seq, true,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
}

/*
 * The next entry of @q's ring, numbered @seq (taken from the record's
 * counter by the caller). An overwritten entry's seq goes to the ring's
 * dropped, a marker's to the record's lost (an OPEN one: UINT64_MAX).
 */
static struct p2z_blk_hist *p2z_blk_hist_put(struct p2z_blk_queue *q,
					     uint64_t zidx, uint64_t landed,
					     uint32_t len, uint32_t pad,
					     uint64_t seq)
{
	struct p2z_blk *blk = q->blk;
	struct p2z_blk_ring *r =
		p2z_blk_ring_of(blk->rings, blk->depth, q->qid);
	struct p2z_blk_hist *h = (struct p2z_blk_hist *)(r + 1);
	uint64_t nr = (uint64_t)blk->depth * P2Z_BLK_HIST_PER_TAG;
	struct p2z_blk_hist *e = &h[r->head % nr];

	if (e->seq) {
		__atomic_store_n(&r->dropped, e->seq, __ATOMIC_RELEASE);
		if (!e->len)
			p2z_blk_rec_lost(blk->rec, e->pad == P2Z_BLK_ZOP_OPEN ?
							   UINT64_MAX :
							   e->seq);
	}
	/* a kill while rewriting it leaves seq 0 (no entry): in order */
	__atomic_store_n(&e->seq, 0, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	e->zidx = zidx;
	e->landed = landed;
	e->len = len;
	e->pad = pad;
	__atomic_store_n(&e->seq, seq, __ATOMIC_RELEASE);
	__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELEASE);
	return e;
}

/*
 * A landed append's slot is about to be freed: its landing goes into its
 * queue's ring first (numbered by the record's counter, with how far the
 * counter moved since it was sent), so a later recovery still knows the
 * range holds another append's data, and whether a zone op came between.
 */
static void p2z_blk_hist_add(struct p2z_blk_queue *q,
			     const struct p2z_blk_slot *s)
{
	uint64_t seq =
		__atomic_add_fetch(&q->blk->rec->seq, 1, __ATOMIC_ACQ_REL);
	uint64_t adv = seq - s->seq;

	p2z_blk_hist_put(q, s->zidx, s->landed, s->len,
			 adv > UINT32_MAX ? UINT32_MAX : (uint32_t)adv, seq);
}

/*
 * A zone reset or finish (or reset-all: @zidx P2Z_BLK_HIST_ALL) begins:
 * its marker goes into @q's ring, OPEN, numbered by the counter taken now,
 * before the drain. The fence pairs with p2z_blk_slot_submitted()'s: an
 * append whose slot seq is older entered its gate before the drain looked,
 * so it completed (its landing recorded) before the device op. Return:
 * the marker (p2z_blk_zop_end()), or NULL without a record.
 */
static struct p2z_blk_hist *p2z_blk_zop_begin(struct p2z_blk_queue *q,
					      uint64_t zidx)
{
	uint64_t seq;
	struct p2z_blk_hist *e;

	if (!q->blk->slots)
		return NULL;
	seq = __atomic_add_fetch(&q->blk->rec->seq, 1, __ATOMIC_SEQ_CST);
	e = p2z_blk_hist_put(q, zidx, seq, 0, P2Z_BLK_ZOP_OPEN, seq);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return e;
}

/*
 * The device op of marker @e ended (@ret its result), before the request's
 * commit: the marker gets the counter now (an append the kernel sends
 * after the commit takes a seq at least this), then its state. Its ring
 * cannot have wrapped since p2z_blk_zop_begin(): only this queue writes
 * it, and it frees fewer than depth slots while its own request waits.
 */
static void p2z_blk_zop_end(struct p2z_blk_queue *q, struct p2z_blk_hist *e,
			    int ret)
{
	if (!e)
		return;
	__atomic_store_n(&e->seq,
			 __atomic_add_fetch(&q->blk->rec->seq, 1,
					    __ATOMIC_ACQ_REL),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&e->pad, ret ? P2Z_BLK_ZOP_FAILED : P2Z_BLK_ZOP_DONE,
			 __ATOMIC_RELEASE);
}

/*
 * recover: the carried slot of the dead server's append @t resolved is
 * freed (its own slot, or the kernel's commit, records it now)
 */
static void p2z_blk_carry_free(struct p2z_blk_tag *t)
{
	struct p2z_blk_slot *c;

	if (!t->carry)
		return;
	c = (struct p2z_blk_slot *)(t->q->blk->carry + 1) + (t->carry - 1);
	__atomic_store_n(&c->state, P2Z_BLK_SLOT_FREE, __ATOMIC_RELEASE);
	t->carry = 0;
}

void p2z_blk_slots_free(struct p2z_blk_queue *q)
{
	struct p2z_blk_slot *s;
	unsigned int i;

	for (i = 0; i < q->nr_committed; i++) {
		p2z_blk_carry_free(&q->tags[q->committed[i]]);
		s = p2z_blk_slot_of(&q->tags[q->committed[i]]);
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) ==
		    P2Z_BLK_SLOT_LANDED)
			p2z_blk_hist_add(q, s);
		__atomic_store_n(&s->state, P2Z_BLK_SLOT_FREE,
				 __ATOMIC_RELEASE);
	}
	q->nr_committed = 0;
}

/*
 * Whether the @len bytes at LBA @lba of zone @zidx (from its start) equal
 * @buf: 0 equal, 1 not, -errno.
 */
static int p2z_blk_compare(struct p2z_blk *blk, uint64_t zidx, uint64_t lba,
			   const char *buf, uint64_t len)
{
	char *tmp = malloc(len);
	ssize_t n;
	int ret;

	if (!tmp)
		return -ENOMEM;
	/* bytes read, or -errno */
	n = p2z_dev_pread(blk->dev, tmp, len,
			  (p2z_geom_zone_start(&blk->g, zidx) + lba)
				  << blk->g.lba_shift);
	if (n < 0)
		ret = (int)n;
	else if ((size_t)n != len)
		ret = -EIO;
	else
		ret = memcmp(tmp, buf, len) ? 1 : 0;
	free(tmp);
	return ret;
}

static const char *const p2z_blk_rc_names[] = {
	[P2Z_BLK_RC_WRITTEN] = "already-written",
	[P2Z_BLK_RC_REST] = "rest",
	[P2Z_BLK_RC_APPEND_LANDED] = "append-landed",
	[P2Z_BLK_RC_APPEND_SENT] = "append-sent",
	[P2Z_BLK_RC_FAILED] = "failed",
};

/* Count and log (one line each) how a reissued request was resolved. */
static void p2z_blk_count(struct p2z_blk *blk, enum p2z_blk_reissue_class c,
			  uint64_t zidx)
{
	__atomic_add_fetch(&blk->nr_reissue[c], 1, __ATOMIC_RELAXED);
	p2z_log(LOG_INFO, "recovery: reissued request of zone %" PRIu64 ": %s",
		zidx, p2z_blk_rc_names[c]);
}

/*
 * A write below the recovered write pointer: one the dead server had
 * (p2z_blk_reissue_write()). Done: @tg->len 0, @t->done its bytes; the
 * rest: @tg moved past what is there, @t->done the bytes skipped.
 * Return: 0, or -EIO (different bytes there, or a failed compare).
 */
static int p2z_blk_write_reissue(struct p2z_blk_tag *t,
				 struct p2z_blk_target *tg)
{
	struct p2z_blk *blk = t->q->blk;
	unsigned int sh = blk->g.lba_shift;
	uint64_t start = tg->zone_ofs >> sh, len = tg->len >> sh;
	uint64_t wp =
		__atomic_load_n(&blk->zones[t->zidx].wp_ofs, __ATOMIC_ACQUIRE);
	uint64_t have;
	int cmp;

	if (p2z_blk_reissue_write(start, len, wp, -1) == P2Z_BLK_REISSUE_SEND)
		return 0;
	have = (wp < start + len ? wp : start + len) - start;
	cmp = p2z_blk_compare(blk, t->zidx, start, p2z_blk_tag_buf(t),
			      have << sh);
	switch (cmp < 0 ? P2Z_BLK_REISSUE_FAIL :
			  p2z_blk_reissue_write(start, len, wp, cmp)) {
	case P2Z_BLK_REISSUE_DONE:
		p2z_blk_count(blk, P2Z_BLK_RC_WRITTEN, t->zidx);
		t->done = tg->len;
		tg->len = 0;
		return 0;
	case P2Z_BLK_REISSUE_REST:
		p2z_blk_count(blk, P2Z_BLK_RC_REST, t->zidx);
		t->done = have << sh;
		tg->zone_ofs += t->done;
		tg->len -= t->done;
		return 0;
	default:
		p2z_blk_count(blk, P2Z_BLK_RC_FAILED, t->zidx);
		p2z_log(LOG_WARNING,
			"recovery: a write of zone %" PRIu64 " at %" PRIu64
			" below its write pointer %" PRIu64
			" does not match the device: EIO",
			t->zidx, start, wp);
		return -EIO;
	}
}

/*
 * The dead server's slot of a reissued append: same zone, length and
 * checksum, not matched before (taken now). Counts the other slots of the
 * zone into @moved and @unknown. Return: its index, or -1.
 */
static long p2z_blk_old_slot(struct p2z_blk *blk, uint64_t zidx, uint32_t len,
			     uint32_t crc, uint64_t *moved,
			     unsigned int *unknown)
{
	size_t i, n = blk->old_nr;
	const struct p2z_blk_slot *s, *m = NULL;
	long found = -1, k;
	uint8_t no = 0;

	/* its own slots first, then carried ones */
	for (i = 0; found < 0 && (k = p2z_blk_slot_find(blk->old_slots, n, i,
							zidx, len, crc)) >= 0;
	     i = (size_t)k + 1) {
		no = 0;
		if (__atomic_compare_exchange_n(&blk->old_taken[k], &no, 1,
						false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			found = k;
	}
	if (found < 0)
		return -1;
	m = &blk->old_slots[found];
	*moved = 0;
	*unknown = 0;
	for (i = 0; i < n; i++) {
		s = &blk->old_slots[i];
		if ((long)i == found || s->zidx != zidx)
			continue;
		if (s->state == P2Z_BLK_SLOT_SUBMITTED)
			(*unknown)++;
		else if (s->state == P2Z_BLK_SLOT_LANDED &&
			 s->landed >= m->wp_submit)
			*moved += s->len;
	}
	return found;
}

/* Serialises the placing of the dead server's appends (their landings) */
static pthread_mutex_t p2z_blk_place_lock = PTHREAD_MUTEX_INITIALIZER;

/* p2z_blk_reissue_place()'s compare: the zone's bytes read at @base */
struct p2z_blk_place_ctx {
	const char *zone;
	uint64_t base;
	const char *data;
	uint64_t bytes;
	unsigned int sh;
	uint32_t crc;
};

static int p2z_blk_place_match(void *ctx, uint64_t lba)
{
	const struct p2z_blk_place_ctx *c = ctx;

	/* without the data (p2z_blk_carry_place()): its checksum */
	if (!c->data)
		return p2z_blk_crc32c(0, c->zone + ((lba - c->base) << c->sh),
				      c->bytes) == c->crc;
	return !memcmp(c->zone + ((lba - c->base) << c->sh), c->data, c->bytes);
}

/*
 * The zone ops of zone @zidx in the dead server's rings (its markers) into
 * @z (@z->op allocated, room for every ring entry; none for a record
 * without rings). Return: 0 or -ENOMEM.
 */
static int p2z_blk_old_zops(const struct p2z_blk *blk, uint64_t zidx,
			    struct p2z_blk_zops *z)
{
	size_t nr = (size_t)blk->depth * P2Z_BLK_HIST_PER_TAG;
	const struct p2z_blk_ring *r;
	unsigned int q;

	*z = (struct p2z_blk_zops){ .lost = blk->old_lost };
	if (!blk->old_rings)
		return 0;
	z->op = calloc(nr * blk->nr_queues, sizeof(*z->op));
	if (!z->op)
		return -ENOMEM;
	for (q = 0; q < blk->nr_queues; q++) {
		r = p2z_blk_ring_of(blk->old_rings, blk->depth, q);
		p2z_blk_hist_zops((const struct p2z_blk_hist *)(r + 1), nr,
				  zidx, z);
	}
	return 0;
}

/*
 * The busy ranges of the dead server's history (its rings) for an append
 * of zone @m->zidx sent at seq @m->seq, appended to @busy (room for every
 * ring entry), classed by the zone's ops @z. Return: true if no ring lost
 * an entry newer than that.
 */
static bool p2z_blk_old_hist(const struct p2z_blk *blk,
			     const struct p2z_blk_slot *m,
			     const struct p2z_blk_zops *z,
			     struct p2z_blk_range *busy, size_t *nb)
{
	size_t nr = (size_t)blk->depth * P2Z_BLK_HIST_PER_TAG;
	const struct p2z_blk_ring *r;
	bool complete = true;
	unsigned int q;

	if (!blk->old_rings)
		return false; /* a version 1 record: no history */
	for (q = 0; q < blk->nr_queues; q++) {
		r = p2z_blk_ring_of(blk->old_rings, blk->depth, q);
		if (!p2z_blk_hist_busy((const struct p2z_blk_hist *)(r + 1), nr,
				       r->dropped, m->zidx, m->seq, z, busy,
				       nb))
			complete = false;
	}
	return complete;
}

/*
 * The other LANDED slots of @m's zone as busy ranges (not those a zone op
 * erased before @m was sent, MAYBE ones marked, as are all where @m or it
 * is a carried slot), appended to @busy.
 */
static void p2z_blk_old_landed(const struct p2z_blk *blk, long i,
			       const struct p2z_blk_zops *z,
			       struct p2z_blk_range *busy, size_t *nb)
{
	size_t k, n = (size_t)blk->nr_queues * blk->depth;
	const struct p2z_blk_slot *m = &blk->old_slots[i], *s;
	enum p2z_blk_landing c;

	for (k = 0; k < blk->old_nr; k++) {
		s = &blk->old_slots[k];
		if ((long)k == i || s->zidx != m->zidx ||
		    __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) !=
			    P2Z_BLK_SLOT_LANDED)
			continue;
		/* seqs of two generations compare to nothing: may be */
		if (k >= n || (size_t)i >= n)
			c = P2Z_BLK_LANDING_MAYBE;
		else
			c = p2z_blk_landing_of(z, s->seq, s->seq, m->seq);
		if (c != P2Z_BLK_LANDING_GONE)
			busy[(*nb)++] = (struct p2z_blk_range){
				s->landed, s->len, c == P2Z_BLK_LANDING_MAYBE
			};
	}
}

/*
 * A reissued append the dead server sent without a recorded landing
 * (slot @i): its zone's bytes from where it was sent up to the recovered
 * write pointer @wp are read once and p2z_blk_reissue_place() looks for
 * its data there, outside the other landings known (recorded, placed
 * before: a placed slot becomes LANDED, or completed and freed: the
 * dead server's rings), leaving out those a reset or finish of the zone
 * erased before it was sent (@z, p2z_blk_landing_of()). A match while a
 * ring lost entries newer than the append (or the record had no rings) is
 * not trusted. Return: DONE (*@at), SEND, FAIL.
 */
static enum p2z_blk_reissue p2z_blk_append_place(struct p2z_blk *blk, long i,
						 const struct p2z_blk_zops *z,
						 uint64_t wp, const char *data,
						 uint64_t len, uint64_t *at)
{
	struct p2z_blk_slot *m = &blk->old_slots[i];
	size_t n = blk->old_nr, nb = 0;
	struct p2z_blk_place_ctx c = { .base = m->wp_submit,
				       .data = data,
				       .bytes = len,
				       .sh = blk->g.lba_shift,
				       .crc = m->crc };
	enum p2z_blk_reissue r = P2Z_BLK_REISSUE_FAIL;
	size_t nh = (size_t)blk->nr_queues * blk->depth * P2Z_BLK_HIST_PER_TAG;
	struct p2z_blk_range *busy = calloc(n + nh, sizeof(*busy));
	char *zone = NULL;
	bool complete;
	ssize_t got;

	if (!busy)
		return P2Z_BLK_REISSUE_FAIL;
	pthread_mutex_lock(&p2z_blk_place_lock);
	p2z_blk_old_landed(blk, i, z, busy, &nb);
	/* a carried slot's history is another generation's: incomplete */
	complete = (size_t)i < (size_t)blk->nr_queues * blk->depth &&
		   p2z_blk_old_hist(blk, m, z, busy, &nb);
	if (wp >= m->wp_submit + m->len) {
		c.zone = zone = malloc((wp - m->wp_submit) << c.sh);
		if (!zone)
			goto out;
		got = p2z_dev_pread(
			blk->dev, zone, (wp - m->wp_submit) << c.sh,
			(p2z_geom_zone_start(&blk->g, m->zidx) + m->wp_submit)
				<< c.sh);
		if (got != (ssize_t)((wp - m->wp_submit) << c.sh))
			goto out;
	}
	r = p2z_blk_reissue_place(m, wp, busy, nb, complete,
				  p2z_blk_place_match, &c, at);
	if (r == P2Z_BLK_REISSUE_DONE) {
		__atomic_store_n(&m->landed, *at, __ATOMIC_RELAXED);
		__atomic_store_n(&m->state, P2Z_BLK_SLOT_LANDED,
				 __ATOMIC_RELEASE);
	}
out:
	pthread_mutex_unlock(&p2z_blk_place_lock);
	free(zone);
	free(busy);
	return r;
}

/*
 * recover: the dead server's own SUBMITTED slot @i, carried as @cs, placed
 * now with its full history (p2z_blk_append_place() comparing crc32c, the
 * request's bytes not here yet): found at exactly one place -> carried as
 * LANDED there (a later server compares there); else left SUBMITTED. The
 * slot itself stays as it was: this server places it with the bytes.
 */
static void p2z_blk_carry_place(struct p2z_blk *blk, size_t i,
				const struct p2z_blk_zops *z,
				struct p2z_blk_slot *cs)
{
	struct p2z_blk_slot *m = &blk->old_slots[i];
	uint64_t at = 0;

	if (m->zidx >= blk->g.nr_zones ||
	    p2z_blk_append_place(blk, (long)i, z, blk->wp_rec[m->zidx], NULL,
				 (uint64_t)m->len << blk->g.lba_shift,
				 &at) != P2Z_BLK_REISSUE_DONE)
		return;
	m->state = P2Z_BLK_SLOT_SUBMITTED;
	m->landed = 0;
	cs->landed = at;
	cs->state = P2Z_BLK_SLOT_LANDED;
}

int p2z_blk_carry_init(struct p2z_blk *blk)
{
	size_t n = (size_t)blk->nr_queues * blk->depth, i;
	struct p2z_blk_slot *c = (struct p2z_blk_slot *)(blk->carry + 1);
	bool overflow = blk->old_overflow;
	struct p2z_blk_zops z;
	size_t nr;

	nr = p2z_blk_carry_select(blk->old_slots, blk->old_nr, c,
				  blk->carry->nr, blk->old_map, &overflow);
	for (i = 0; i < blk->old_nr; i++) {
		if (!blk->old_map[i])
			continue;
		if (p2z_blk_old_zops(blk, blk->old_slots[i].zidx, &z))
			return -ENOMEM;
		if (p2z_blk_zop_unsure(&z, i < n ? blk->old_slots[i].seq : 0))
			c[blk->old_map[i] - 1].pad |= P2Z_BLK_CARRY_ZOP;
		else if (i < n &&
			 blk->old_slots[i].state == P2Z_BLK_SLOT_SUBMITTED)
			p2z_blk_carry_place(blk, i, &z,
					    &c[blk->old_map[i] - 1]);
		free(z.op);
	}
	if (overflow) {
		blk->carry->flags |= P2Z_BLK_CARRY_OVERFLOW;
		p2z_log(LOG_WARNING,
			"recover %" PRIu32
			": the dead server's record has more unresolved appends than a record carries (%zu kept): if this server dies too, an append matching no slot fails (EIO)",
			blk->dev_id, nr);
	}
	return 0;
}

/*
 * The dead server's slot @i of a reissued append: a reset or finish of its
 * zone not ended when it was sent -> FAIL (p2z_blk_zop_unsure()); sent
 * without a recorded landing -> p2z_blk_append_place(); else
 * p2z_blk_reissue_append() (COMPARE: *@at).
 */
static enum p2z_blk_reissue p2z_blk_append_decide(struct p2z_blk_tag *t, long i,
						  uint64_t len, uint64_t moved,
						  unsigned int unknown,
						  uint64_t *at)
{
	struct p2z_blk *blk = t->q->blk;
	const struct p2z_blk_slot *m = &blk->old_slots[i];
	enum p2z_blk_reissue r = P2Z_BLK_REISSUE_FAIL;
	uint64_t wp = blk->wp_rec[t->zidx];
	struct p2z_blk_zops z;

	if (p2z_blk_old_zops(blk, t->zidx, &z))
		return P2Z_BLK_REISSUE_FAIL;
	/*
	 * A carried slot was sent before every marker of the dead server's
	 * (seq 0), and fails if an older one's showed a zone op (its pad).
	 */
	if ((size_t)i >= (size_t)blk->nr_queues * blk->depth ?
		    (m->pad & P2Z_BLK_CARRY_ZOP) || p2z_blk_zop_unsure(&z, 0) :
		    p2z_blk_zop_unsure(&z, m->seq))
		p2z_log(LOG_WARNING,
			"recovery: an append of zone %" PRIu64
			" was in flight across a reset or finish of it",
			t->zidx);
	else if (m->state == P2Z_BLK_SLOT_SUBMITTED)
		r = p2z_blk_append_place(blk, i, &z, wp, p2z_blk_tag_buf(t),
					 len, at);
	else
		r = p2z_blk_reissue_append(m, wp, moved, unknown, -1, at);
	free(z.op);
	return r;
}

/*
 * A reissued append of the dead server's slot @m found landed at @at: its
 * own slot, LANDED, before the commit (then freed into its history like
 * any other), so a server after it still finds and compares it there.
 */
static void p2z_blk_slot_resolved(const struct p2z_blk_tag *t,
				  const struct p2z_blk_slot *m, uint64_t at)
{
	struct p2z_blk *blk = t->q->blk;
	struct p2z_blk_slot *s = p2z_blk_slot_of(t);

	s->zidx = m->zidx;
	s->len = m->len;
	s->crc = m->crc;
	s->pad = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	s->seq = __atomic_load_n(&blk->rec->seq, __ATOMIC_ACQUIRE);
	s->wp_submit = m->wp_submit;
	s->landed = at;
	__atomic_store_n(&s->state, P2Z_BLK_SLOT_LANDED, __ATOMIC_RELEASE);
}

/*
 * An append matching no slot of the dead server's record: sent, unless
 * the record's carry area overflowed (a slot may be lost) -> EIO, logged
 * once. Return: 0 (send it), 1 (committed).
 */
static int p2z_blk_append_noslot(struct p2z_blk_tag *t)
{
	static bool logged;

	if (p2z_blk_reissue_noslot(t->q->blk->old_overflow) ==
	    P2Z_BLK_REISSUE_SEND)
		return 0;
	if (!__atomic_exchange_n(&logged, true, __ATOMIC_RELAXED))
		p2z_log(LOG_WARNING,
			"recovery: the dead server's record lost slots (its carry area overflowed): an append matching none fails (EIO)");
	p2z_blk_count(t->q->blk, P2Z_BLK_RC_FAILED, t->zidx);
	p2z_blk_done(t, -EIO, 0);
	return 1;
}

/*
 * A zone append after a recovery: if the dead server had it (its slot),
 * p2z_blk_reissue_append() decides; landed -> recorded as its own LANDED
 * slot and committed here with its sector. The carried slot it had
 * (@t->carry) is freed once resolved. Return: 0 (send it), 1 (committed).
 */
static int p2z_blk_append_reissue(struct p2z_blk_tag *t, uint64_t len,
				  uint32_t crc)
{
	struct p2z_blk *blk = t->q->blk;
	unsigned int sh = blk->g.lba_shift, unknown = 0;
	uint64_t moved = 0, at = 0, wp = blk->wp_rec[t->zidx];
	enum p2z_blk_reissue r;
	long i;
	int cmp = -1;

	i = p2z_blk_old_slot(blk, t->zidx, (uint32_t)(len >> sh), crc, &moved,
			     &unknown);
	if (i < 0)
		return p2z_blk_append_noslot(t);
	t->carry = blk->old_map[i];
	r = p2z_blk_append_decide(t, i, len, moved, unknown, &at);
	if (r == P2Z_BLK_REISSUE_COMPARE) {
		cmp = p2z_blk_compare(blk, t->zidx, at, p2z_blk_tag_buf(t),
				      len);
		r = cmp < 0 ? P2Z_BLK_REISSUE_FAIL :
			      p2z_blk_reissue_append(&blk->old_slots[i], wp,
						     moved, unknown, cmp, &at);
	}
	if (r == P2Z_BLK_REISSUE_SEND) {
		p2z_blk_count(blk, P2Z_BLK_RC_APPEND_SENT, t->zidx);
		return 0;
	}
	if (r == P2Z_BLK_REISSUE_DONE) {
		p2z_blk_count(blk, P2Z_BLK_RC_APPEND_LANDED, t->zidx);
		p2z_blk_slot_resolved(t, &blk->old_slots[i], at);
		p2z_blk_carry_free(t);
		p2z_blk_done(
			t, (int)len,
			((uint64_t)t->zidx * p2z_blk_zone_sectors(&blk->g)) +
				((at << sh) >> P2Z_BLK_SECTOR_SHIFT));
		return 1;
	}
	p2z_blk_count(blk, P2Z_BLK_RC_FAILED, t->zidx);
	p2z_log(LOG_WARNING,
		"recovery: an append of zone %" PRIu64
		" the dead server had cannot be placed (write pointer %" PRIu64
		"): EIO",
		t->zidx, wp);
	p2z_blk_done(t, -EIO, 0);
	return 1;
}

/*
 * A write or append the device failed (or an append that landed outside
 * its zone), logged with what the server knew: the kernel's own "I/O
 * error" line has no reason, and an append's sector there is 0.
 */
static void p2z_blk_io_failed(const struct p2z_blk_tag *t, const char *what,
			      uint64_t lba)
{
	const struct p2z_blk *blk = t->q->blk;

	p2z_log(LOG_WARNING,
		"zone %" PRIu64 ": %s of %zu bytes failed (%s, LBA %" PRIu64
		", cached write pointer %" PRIu64 ", capacity %" PRIu64 ")",
		t->zidx, what, t->io.len,
		t->io.ret < 0			? strerror((int)-t->io.ret) :
		t->io.ret != (ssize_t)t->io.len ? "short" :
						  "landed outside its zone",
		lba,
		__atomic_load_n(&blk->zones[t->zidx].wp_ofs, __ATOMIC_RELAXED),
		blk->zones[t->zidx].cap_lba);
}

static void p2z_blk_write_end_io(struct p2z_io *io)
{
	struct p2z_blk_tag *t = (struct p2z_blk_tag *)io;
	struct p2z_blk *blk = t->q->blk;
	struct p2z_blk_zone *z = &blk->zones[t->zidx];

	if (io->ret != (ssize_t)io->len) {
		p2z_blk_io_failed(t, "write", t->zone_ofs >> blk->g.lba_shift);
		p2z_blk_zone_refresh(blk, t->zidx);
		p2z_blk_gate_out(t, z);
		return p2z_blk_done(
			t, p2z_blk_errno(io->ret < 0 ? (int)io->ret : -EIO), 0);
	}
	if (z->type != P2Z_ZONE_TYPE_CNV)
		p2z_blk_advance_wp(z,
				   (t->zone_ofs + io->len) >> blk->g.lba_shift);
	p2z_blk_gate_out(t, z);
	p2z_blk_done(t, (int)(io->len + t->done), 0);
}

/*
 * A write of a sequential zone enters the zone's gate first: one write per
 * zone in flight, in the order they arrive (the block layer's zone write
 * plugging sends them so; one arriving early waits here, before anything
 * after it on this queue).
 */
static void p2z_blk_write(struct p2z_blk_tag *t,
			  const struct ublksrv_io_desc *iod)
{
	struct p2z_blk *blk = t->q->blk;
	struct p2z_blk_target tg;
	struct p2z_blk_zone *z;
	int ret;

	if (p2z_blk_zone_of(&blk->g, iod->start_sector, false, &t->zidx))
		return p2z_blk_done(t, -EIO, 0);
	z = &blk->zones[t->zidx];
	ret = p2z_blk_write_target(&blk->g, iod->start_sector, iod->nr_sectors,
				   z->cap_lba, &tg);
	if (ret || tg.len > blk->buf_bytes)
		return p2z_blk_done(t, -EIO, 0);
	ret = p2z_blk_fetch_data(t, tg.len);
	if (ret)
		return p2z_blk_done(t, ret, 0);
	t->done = 0;
	if (blk->wp_rec && z->type != P2Z_ZONE_TYPE_CNV) {
		ret = p2z_blk_write_reissue(t, &tg);
		if (ret)
			return p2z_blk_done(t, ret, 0);
		if (!tg.len)
			return p2z_blk_done(t, (int)t->done, 0);
	}
	if (z->type != P2Z_ZONE_TYPE_CNV)
		p2z_blk_gate_in(t, z, P2Z_BLK_GATE_WRITE);
	t->zone_ofs = tg.zone_ofs;
	memset(&t->io, 0, sizeof(t->io));
	t->io.op = P2Z_IO_WRITE;
	t->io.flags = p2z_blk_io_flags(iod->op_flags);
	t->io.buf = p2z_blk_tag_buf(t) + t->done;
	t->io.len = tg.len;
	t->io.ofs =
		(p2z_geom_zone_start(&blk->g, t->zidx) << blk->g.lba_shift) +
		tg.zone_ofs;
	t->io.end_io = p2z_blk_write_end_io;
	p2z_blk_submit(t, z);
}

static void p2z_blk_append_end_io(struct p2z_io *io)
{
	struct p2z_blk_tag *t = (struct p2z_blk_tag *)io;
	struct p2z_blk *blk = t->q->blk;
	struct p2z_blk_zone *z = &blk->zones[t->zidx];
	uint64_t sector = 0, wp_ofs;

	if (io->ret != (ssize_t)io->len ||
	    p2z_blk_append_done(&blk->g, t->zidx, z->cap_lba, io->lba,
				io->len >> blk->g.lba_shift, &sector,
				&wp_ofs)) {
		p2z_blk_io_failed(t, "append", io->lba);
		p2z_blk_zone_refresh(blk, t->zidx);
		p2z_blk_gate_out(t, z);
		p2z_blk_slot_landed(t, UINT64_MAX);
		return p2z_blk_done(
			t, p2z_blk_errno(io->ret < 0 ? (int)io->ret : -EIO), 0);
	}
	p2z_blk_slot_landed(t, wp_ofs - (io->len >> blk->g.lba_shift));
	p2z_blk_advance_wp(z, wp_ofs);
	p2z_blk_gate_out(t, z);
	p2z_blk_done(t, (int)io->len, sector);
}

/*
 * Appends of a zone run concurrently; one longer than the device's single
 * append (the device queue splits it, and each piece must land right after
 * the one before) has the zone's appends to itself.
 */
static void p2z_blk_append(struct p2z_blk_tag *t,
			   const struct ublksrv_io_desc *iod)
{
	struct p2z_blk *blk = t->q->blk;
	uint64_t len = (uint64_t)iod->nr_sectors << P2Z_BLK_SECTOR_SHIFT;
	uint32_t crc;
	int ret;

	if (p2z_blk_zone_of(&blk->g, iod->start_sector, true, &t->zidx) ||
	    !len || len > blk->buf_bytes || len & (blk->g.lba_bytes - 1))
		return p2z_blk_done(t, -EIO, 0);
	ret = p2z_blk_fetch_data(t, len);
	if (ret)
		return p2z_blk_done(t, ret, 0);
	crc = blk->slots ? p2z_blk_crc32c(0, p2z_blk_tag_buf(t), len) : 0;
	if (blk->old_slots) {
		ret = p2z_blk_append_reissue(t, len, crc);
		if (ret)
			return;
	}
	p2z_blk_gate_in(t, &blk->zones[t->zidx],
			len > blk->dev->info.max_append_bytes ?
				P2Z_BLK_GATE_APPEND_SPLIT :
				P2Z_BLK_GATE_APPEND);
	memset(&t->io, 0, sizeof(t->io));
	t->io.op = P2Z_IO_APPEND;
	t->io.flags = p2z_blk_io_flags(iod->op_flags);
	t->io.buf = p2z_blk_tag_buf(t);
	t->io.len = len;
	t->io.zidx = t->zidx;
	t->io.end_io = p2z_blk_append_end_io;
	if (blk->slots)
		p2z_blk_slot_submitted(t, len, crc);
	p2z_blk_carry_free(t);
	p2z_blk_submit(t, &blk->zones[t->zidx]);
}

static void p2z_blk_flush_end_io(struct p2z_io *io)
{
	p2z_blk_done((struct p2z_blk_tag *)io, io->ret ? -EIO : 0, 0);
}

/*
 * An emu image's volatile write cache is the server's memory (emu_cache.c):
 * it died with the dead server, and what that server acknowledged since
 * its last flush may be gone while the kernel and a filesystem above
 * believe it written. A recovered server cannot make those writes
 * durable, so every flush fails (EIO), as after a power cut of the cache:
 * no fsync returns for data the device lost (a filesystem's commit fails
 * and it stops writing). Logged once.
 */
static bool p2z_blk_cache_died(struct p2z_blk *blk)
{
	static bool logged;

	if (!blk->wp_rec || !blk->dev->info.volatile_cache ||
	    strcmp(blk->dev->ops->name, "emu"))
		return false;
	if (!__atomic_exchange_n(&logged, true, __ATOMIC_RELAXED))
		p2z_log(LOG_WARNING,
			"recovery: %s: its volatile write cache died with the"
			" server: every flush fails (EIO); del and add it"
			" again",
			blk->dev->path);
	return true;
}

/*
 * A flush makes the writes acknowledged before it durable: those completed
 * on the device already (a tag commits after its write completes); writes
 * still in flight are not acknowledged, so the flush need not wait for them.
 */
static void p2z_blk_flush(struct p2z_blk_tag *t)
{
	if (p2z_blk_cache_died(t->q->blk))
		return p2z_blk_done(t, -EIO, 0);
	memset(&t->io, 0, sizeof(t->io));
	t->io.op = P2Z_IO_FLUSH;
	t->io.end_io = p2z_blk_flush_end_io;
	p2z_blk_submit(t, NULL);
}

static int p2z_blk_zone_op(struct p2z_blk *blk, uint64_t zidx,
			   enum p2z_zone_op op)
{
	struct p2z_blk_zone *z = &blk->zones[zidx];
	int ret;

	/*
	 * The cached write pointer never runs ahead of the device's: reads
	 * stop at it before the reset starts (a read racing the reset gets
	 * zeros), and after a finish only once the device is done.
	 */
	if (op == P2Z_ZONE_OP_RESET && z->type != P2Z_ZONE_TYPE_CNV)
		p2z_blk_set_wp(z, 0);
	ret = p2z_dev_zone_mgmt(blk->dev, zidx, op);
	if (ret) {
		p2z_blk_zone_refresh(blk, zidx);
		return p2z_blk_errno(ret);
	}
	if (op == P2Z_ZONE_OP_FINISH)
		p2z_blk_set_wp(z, z->cap_lba);
	return 0;
}

/*
 * After the zone's writes and appends in flight completed (never lost). A
 * reset or finish is marked in the record around its drain and device op
 * (p2z_blk_zop_begin()).
 */
static int p2z_blk_zone_mgmt(struct p2z_blk_queue *q,
			     const struct ublksrv_io_desc *iod,
			     enum p2z_zone_op op)
{
	struct p2z_blk_hist *mark = NULL;
	uint64_t zidx;
	int ret;

	if (p2z_blk_zone_of(&q->blk->g, iod->start_sector, true, &zidx))
		return -EIO;
	if (op == P2Z_ZONE_OP_RESET || op == P2Z_ZONE_OP_FINISH)
		mark = p2z_blk_zop_begin(q, zidx);
	p2z_blk_zones_drain(q, zidx, 1);
	ret = p2z_blk_zone_op(q->blk, zidx, op);
	p2z_blk_zop_end(q, mark, ret);
	return ret;
}

/**
 * struct p2z_blk_walk - a request's zone walk
 * @blk: the server
 * @bz: report: the entries filled
 * @done: report: entries filled so far
 * @ret: the zone operation's or the entry's error that stopped the walk
 *	 (the walk then returns 1): a failed report is told apart by it
 */
struct p2z_blk_walk {
	struct p2z_blk *blk;
	struct blk_zone *bz;
	unsigned int done;
	int ret;
};

/* A stopped walk's result: @w->ret if a callback stopped it. */
static int p2z_blk_walk_ret(const struct p2z_blk_walk *w, int ret)
{
	if (ret > 0)
		return w->ret;
	return ret < 0 ? p2z_blk_errno(ret) : 0;
}

static int p2z_blk_reset_fn(const struct p2z_zone_info *zi, uint64_t zidx,
			    void *arg)
{
	struct p2z_blk_walk *w = arg;

	if (!p2z_blk_zone_is_reset_by_all(zi))
		return 0;
	w->ret = p2z_blk_zone_op(w->blk, zidx, P2Z_ZONE_OP_RESET);
	return w->ret ? 1 : 0;
}

/*
 * Reset every zone the device has open, closed or full, as it reports them
 * now: the cached write pointers miss zones opened but not written (which
 * would keep holding open and active resources), and would try read-only
 * or offline ones.
 */
static int p2z_blk_reset_all(struct p2z_blk_queue *q)
{
	struct p2z_blk *blk = q->blk;
	struct p2z_blk_walk w = { .blk = blk };
	struct p2z_blk_hist *mark = p2z_blk_zop_begin(q, P2Z_BLK_HIST_ALL);
	int ret;

	p2z_blk_zones_drain(q, 0, blk->g.nr_zones);
	ret = p2z_blk_walk_ret(&w,
			       p2z_dev_zone_walk(blk->dev, 0, blk->g.nr_zones,
						 p2z_blk_reset_fn, &w));
	p2z_blk_zop_end(q, mark, ret);
	return ret;
}

static int p2z_blk_report_fn(const struct p2z_zone_info *zi, uint64_t zidx,
			     void *arg)
{
	struct p2z_blk_walk *w = arg;

	(void)zidx;
	if (p2z_blk_report(&w->blk->g, zi, &w->bz[w->done])) {
		w->ret = -EIO;
		return 1;
	}
	w->done++;
	return 0;
}

/*
 * Fill the request's buffer with struct blk_zone entries from the zone
 * holding start_sector on; the kernel zeroed the buffer, so a shorter
 * report ends at the first zero-length entry by itself.
 */
static int p2z_blk_report_zones(struct p2z_blk *blk,
				const struct ublksrv_io_desc *iod, char *buf,
				uint64_t buf_ofs)
{
	struct p2z_blk_walk w = { .blk = blk, .bz = (struct blk_zone *)buf };
	uint64_t zidx, want = iod->nr_sectors, max;
	int ret;

	/*
	 * Any sector of the first zone: ublk passes BLKREPORTZONE's start
	 * sector through unaligned (and adds the zone size for each further
	 * request), as the block layer allows.
	 */
	if (p2z_blk_zone_of(&blk->g, iod->start_sector, false, &zidx))
		return -EIO;
	max = blk->buf_bytes / sizeof(*w.bz);
	if (want > max)
		want = max;
	if (want > blk->g.nr_zones - zidx)
		want = blk->g.nr_zones - zidx;
	ret = p2z_blk_walk_ret(&w, p2z_dev_zone_walk(blk->dev, zidx, want,
						     p2z_blk_report_fn, &w));
	if (ret)
		return ret;
	if (w.done && pwrite(blk->cdev_fd, buf, w.done * sizeof(*w.bz),
			     buf_ofs) != (ssize_t)(w.done * sizeof(*w.bz)))
		return -EIO;
	/*
	 * The request's length is the kernel's buffer, which may be longer
	 * than the entries; ublk cuts a result to the request's length, and a
	 * shorter one would make the block layer requeue the rest.
	 */
	return (int)blk->buf_bytes;
}

static int p2z_blk_handle_sync(struct p2z_blk_queue *q, unsigned int tag,
			       const struct ublksrv_io_desc *iod)
{
	struct p2z_blk *blk = q->blk;

	switch (ublksrv_get_op(iod)) {
	case UBLK_IO_OP_ZONE_OPEN:
		return p2z_blk_zone_mgmt(q, iod, P2Z_ZONE_OP_OPEN);
	case UBLK_IO_OP_ZONE_CLOSE:
		return p2z_blk_zone_mgmt(q, iod, P2Z_ZONE_OP_CLOSE);
	case UBLK_IO_OP_ZONE_FINISH:
		return p2z_blk_zone_mgmt(q, iod, P2Z_ZONE_OP_FINISH);
	case UBLK_IO_OP_ZONE_RESET:
		return p2z_blk_zone_mgmt(q, iod, P2Z_ZONE_OP_RESET);
	case UBLK_IO_OP_ZONE_RESET_ALL:
		return p2z_blk_reset_all(q);
	case UBLK_IO_OP_REPORT_ZONES:
		return p2z_blk_report_zones(
			blk, iod, q->bufs + (size_t)tag * blk->buf_bytes,
			p2z_blk_buf_ofs(q->qid, tag));
	default:
		return -EOPNOTSUPP;
	}
}

void p2z_blk_handle(struct p2z_blk_queue *q, unsigned int tag)
{
	const struct ublksrv_io_desc *iod = &q->iods[tag];
	struct p2z_blk_tag *t = &q->tags[tag];

	t->gate = P2Z_BLK_GATE_NONE;
	switch (ublksrv_get_op(iod)) {
	case UBLK_IO_OP_READ:
		return p2z_blk_read(t, iod);
	case UBLK_IO_OP_WRITE:
		return p2z_blk_write(t, iod);
	case UBLK_IO_OP_ZONE_APPEND:
		return p2z_blk_append(t, iod);
	case UBLK_IO_OP_FLUSH:
		return p2z_blk_flush(t);
	default:
		p2z_blk_done(t, p2z_blk_handle_sync(q, tag, iod), 0);
	}
}
