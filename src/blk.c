// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The ublk server's pure decisions: requests of the po2 block device to
 * zones and native ranges, zone report entries, errnos. See
 * include/po2zfs/blk.h.
 */
#include <errno.h>
#include <pthread.h>
#include <linux/ublk_cmd.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "po2zfs/blk.h"

uint64_t p2z_blk_zone_sectors(const struct p2z_geom *g)
{
	/* lba_shift >= 9; the po2 view fits in 63 bits (p2z_geom_init()) */
	return g->po2_zone_lba << (g->lba_shift - P2Z_BLK_SECTOR_SHIFT);
}

int p2z_blk_zone_of(const struct p2z_geom *g, uint64_t sector, bool start,
		    uint64_t *zidx)
{
	uint64_t zone_sectors = p2z_blk_zone_sectors(g);

	if (sector >= p2z_geom_po2_bytes(g) >> P2Z_BLK_SECTOR_SHIFT)
		return -ERANGE;
	if (start && (sector & (zone_sectors - 1)))
		return -EINVAL;
	*zidx = sector >> (g->po2_shift + g->lba_shift - P2Z_BLK_SECTOR_SHIFT);
	return 0;
}

int p2z_blk_write_target(const struct p2z_geom *g, uint64_t sector,
			 uint32_t nr_sectors, uint64_t cap_lba,
			 struct p2z_blk_target *t)
{
	uint64_t ofs, len = (uint64_t)nr_sectors << P2Z_BLK_SECTOR_SHIFT;
	struct p2z_geom_piece pc;
	int ret;

	if (!nr_sectors)
		return -EINVAL;
	if (sector >= p2z_geom_po2_bytes(g) >> P2Z_BLK_SECTOR_SHIFT)
		return -ERANGE;
	ofs = sector << P2Z_BLK_SECTOR_SHIFT;
	if ((ofs | len) & (g->lba_bytes - 1))
		return -EINVAL;
	ret = p2z_geom_po2_piece(g, ofs, len, cap_lba, &pc);
	if (ret)
		return ret;
	/* A gap, or data cut short by the capacity, the zone or the view. */
	if (pc.gap || pc.len != len)
		return -EIO;
	t->zidx = pc.zidx;
	t->zone_ofs = pc.zone_ofs;
	t->len = len;
	return 0;
}

int p2z_blk_append_done(const struct p2z_geom *g, uint64_t zidx,
			uint64_t cap_lba, uint64_t lba, uint64_t nr_lba,
			uint64_t *sector, uint64_t *wp_ofs)
{
	uint64_t start, po2_lba;

	if (zidx >= g->nr_zones || cap_lba > g->zone_lba)
		return -EIO;
	start = p2z_geom_zone_start(g, zidx);
	if (lba < start || !nr_lba || nr_lba > cap_lba ||
	    lba - start > cap_lba - nr_lba ||
	    p2z_geom_native_to_po2(g, lba, &po2_lba))
		return -EIO;
	*sector = po2_lba << (g->lba_shift - P2Z_BLK_SECTOR_SHIFT);
	*wp_ofs = lba - start + nr_lba;
	return 0;
}

uint64_t p2z_blk_read_len(const struct p2z_geom_piece *pc, uint64_t readable)
{
	if (pc->gap || pc->zone_ofs >= readable)
		return 0;
	return readable - pc->zone_ofs < pc->len ? readable - pc->zone_ofs :
						   pc->len;
}

int p2z_blk_report(const struct p2z_geom *g, const struct p2z_zone_info *zi,
		   struct blk_zone *bz)
{
	unsigned int shift = g->lba_shift - P2Z_BLK_SECTOR_SHIFT;
	uint64_t po2_start, zidx;

	if (zi->cap_lba > g->zone_lba ||
	    p2z_geom_native_to_po2(g, zi->start_lba, &po2_start))
		return -ERANGE;
	zidx = po2_start >> g->po2_shift;
	if (p2z_geom_zone_start(g, zidx) != zi->start_lba)
		return -ERANGE;

	memset(bz, 0, sizeof(*bz));
	bz->start = po2_start << shift;
	bz->len = p2z_blk_zone_sectors(g);
	/*
	 * The kernel wants a conventional zone's capacity to be its length
	 * (blk_revalidate_disk_zones()): its gap reads as zeros and refuses
	 * writes (EIO) like a sequential zone's, but is not reported.
	 */
	bz->capacity = zi->type == P2Z_ZONE_TYPE_CNV ? bz->len :
						       zi->cap_lba << shift;
	bz->type = zi->type;
	bz->cond = zi->cond;
	switch (zi->cond) {
	case P2Z_ZONE_COND_FULL:
	case P2Z_ZONE_COND_NOT_WP:
		bz->wp = bz->start + bz->len;
		break;
	default:
		/* inside the zone by the write pointer rule (dev.h) */
		bz->wp = bz->start + ((zi->wp_lba - zi->start_lba) << shift);
		break;
	}
	return 0;
}

uint64_t p2z_blk_wp_ofs(const struct p2z_zone_info *zi)
{
	/*
	 * The write pointer rule (dev.h) puts it inside the zone, and a full
	 * zone's at the capacity; an offline zone has no data, wherever emu
	 * says it stood.
	 */
	if (zi->cond == P2Z_ZONE_COND_OFFLINE)
		return 0;
	return zi->wp_lba - zi->start_lba;
}

bool p2z_blk_zone_is_reset_by_all(const struct p2z_zone_info *zi)
{
	if (zi->type != P2Z_ZONE_TYPE_SEQ)
		return false;
	switch (zi->cond) {
	case P2Z_ZONE_COND_IMP_OPEN:
	case P2Z_ZONE_COND_EXP_OPEN:
	case P2Z_ZONE_COND_CLOSED:
	case P2Z_ZONE_COND_FULL:
		return true;
	default:
		return false;
	}
}

uint32_t p2z_blk_zone_limit(uint32_t limit, uint64_t nr_zones)
{
	return limit > nr_zones ? 0 : limit;
}

int p2z_blk_errno(int err)
{
	switch (err) {
	case -ETOOMANYREFS:
	case -EOVERFLOW:
		return err;
	default:
		return -EIO;
	}
}

uint64_t p2z_blk_wp_advance(uint64_t cur, uint64_t end)
{
	return end > cur ? end : cur;
}

unsigned int p2z_blk_io_flags(uint32_t op_flags)
{
	return op_flags & UBLK_IO_F_FUA ? P2Z_IO_FUA : 0;
}

uint32_t p2z_blk_cache_attrs(bool volatile_cache)
{
	return volatile_cache ? UBLK_ATTR_VOLATILE_CACHE | UBLK_ATTR_FUA : 0;
}

int p2z_blk_io_limits(uint32_t max_xfer, uint32_t max_append, uint32_t page,
		      uint32_t cap, uint32_t *io, uint32_t *append)
{
	uint32_t a = max_xfer < max_append ? max_xfer : max_append;

	if (a > cap)
		a = cap;
	a &= ~(page - 1);
	if (!a)
		return -EINVAL;
	*io = cap;
	*append = a;
	return 0;
}

enum p2z_blk_owner p2z_blk_owner_of(bool have_record, int rec_pid, int kern_pid,
				    uint64_t srv_flags)
{
	if (!have_record)
		return P2Z_BLK_OWNER_NONE;
	if ((srv_flags & P2Z_BLK_SRV_MAGIC_MASK) != P2Z_BLK_SRV_MAGIC)
		return P2Z_BLK_OWNER_STALE;
	if (kern_pid > 0 && rec_pid != kern_pid)
		return P2Z_BLK_OWNER_STALE;
	return P2Z_BLK_OWNER_OURS;
}

bool p2z_blk_stop_is_refused(bool busy, unsigned int nr_refused)
{
	return busy && !nr_refused;
}

enum p2z_blk_stop p2z_blk_stop_action(bool recovery, bool busy,
				      unsigned int nr_refused)
{
	if (recovery)
		return busy ? P2Z_BLK_STOP_HANDOVER : P2Z_BLK_STOP_DELETE;
	return p2z_blk_stop_is_refused(busy, nr_refused) ? P2Z_BLK_STOP_REFUSE :
							   P2Z_BLK_STOP_DELETE;
}

int p2z_blk_recovery_granted(enum p2z_blk_recovery want, uint64_t flags)
{
	const uint64_t need = UBLK_F_USER_RECOVERY |
			      UBLK_F_USER_RECOVERY_REISSUE;

	if (want == P2Z_BLK_RECOVERY_OFF)
		return 0;
	if ((flags & need) == need)
		return 1;
	return want == P2Z_BLK_RECOVERY_ON ? -EOPNOTSUPP : 0;
}

bool p2z_blk_ident_same_node(const char *node, const char *rec_ident)
{
	size_t n = strlen(node);

	return n && !strncmp(node, rec_ident, n) &&
	       (rec_ident[n] == ' ' || rec_ident[n] == '\0');
}

bool p2z_blk_add_recovers(bool same_node, bool rec_alive, uint16_t state,
			  uint64_t flags, uint64_t srv_flags)
{
	return same_node && !rec_alive && state == UBLK_S_DEV_QUIESCED &&
	       (flags & UBLK_F_USER_RECOVERY) &&
	       (srv_flags & P2Z_BLK_SRV_MAGIC_MASK) == P2Z_BLK_SRV_MAGIC;
}

int p2z_blk_gate_enter(uint32_t cur, enum p2z_blk_gate_kind kind,
		       uint32_t *next)
{
	switch (kind) {
	case P2Z_BLK_GATE_WRITE:
		if (cur & P2Z_BLK_GATE_WRITES)
			return -EBUSY;
		*next = cur + (1U << P2Z_BLK_GATE_WRITE_SHIFT);
		return 0;
	case P2Z_BLK_GATE_APPEND:
		if (cur & P2Z_BLK_GATE_SPLIT ||
		    (cur & P2Z_BLK_GATE_APPENDS) == P2Z_BLK_GATE_APPENDS)
			return -EBUSY;
		*next = cur + 1;
		return 0;
	case P2Z_BLK_GATE_APPEND_SPLIT:
		if (cur & (P2Z_BLK_GATE_SPLIT | P2Z_BLK_GATE_APPENDS))
			return -EBUSY;
		*next = cur | P2Z_BLK_GATE_SPLIT | 1;
		return 0;
	}
	return -EINVAL;
}

uint32_t p2z_blk_gate_leave(uint32_t cur, enum p2z_blk_gate_kind kind)
{
	switch (kind) {
	case P2Z_BLK_GATE_WRITE:
		return cur - (1U << P2Z_BLK_GATE_WRITE_SHIFT);
	case P2Z_BLK_GATE_APPEND:
		return cur - 1;
	case P2Z_BLK_GATE_APPEND_SPLIT:
		return (cur & ~P2Z_BLK_GATE_SPLIT) - 1;
	}
	return cur;
}

bool p2z_blk_gate_idle(uint32_t cur)
{
	return !(cur & (P2Z_BLK_GATE_WRITES | P2Z_BLK_GATE_APPENDS));
}

enum p2z_blk_reissue p2z_blk_reissue_write(uint64_t start, uint64_t len,
					   uint64_t wp, int cmp)
{
	if (wp <= start)
		return P2Z_BLK_REISSUE_SEND;
	if (cmp < 0)
		return P2Z_BLK_REISSUE_COMPARE;
	if (cmp > 0)
		return P2Z_BLK_REISSUE_FAIL;
	return wp >= start + len ? P2Z_BLK_REISSUE_DONE : P2Z_BLK_REISSUE_REST;
}

static enum p2z_blk_reissue p2z_blk_reissue_at(uint64_t lba, int cmp,
					       uint64_t *at)
{
	*at = lba;
	if (cmp < 0)
		return P2Z_BLK_REISSUE_COMPARE;
	return cmp ? P2Z_BLK_REISSUE_FAIL : P2Z_BLK_REISSUE_DONE;
}

enum p2z_blk_reissue p2z_blk_reissue_append(const struct p2z_blk_slot *slot,
					    uint64_t wp,
					    uint64_t moved_by_others,
					    unsigned int nr_unknown, int cmp,
					    uint64_t *at)
{
	uint64_t base;

	if (!slot || slot->state == P2Z_BLK_SLOT_FREE)
		return P2Z_BLK_REISSUE_SEND;
	if (slot->state == P2Z_BLK_SLOT_LANDED) {
		if (slot->landed + slot->len > wp)
			return P2Z_BLK_REISSUE_FAIL; /* the zone lost it */
		return p2z_blk_reissue_at(slot->landed, cmp, at);
	}
	if (slot->state != P2Z_BLK_SLOT_SUBMITTED || wp < slot->wp_submit)
		return P2Z_BLK_REISSUE_FAIL;
	base = slot->wp_submit + moved_by_others;
	if (wp == base)
		return P2Z_BLK_REISSUE_SEND;
	if (wp == base + slot->len && !nr_unknown && !moved_by_others)
		return p2z_blk_reissue_at(slot->wp_submit, cmp, at);
	return P2Z_BLK_REISSUE_FAIL;
}

/* whether [@lba, @lba + @len) overlaps a range of @busy with @maybe */
static bool p2z_blk_range_busy(uint64_t lba, uint64_t len,
			       const struct p2z_blk_range *busy, size_t nr_busy,
			       bool maybe)
{
	size_t i;

	for (i = 0; i < nr_busy; i++)
		if (busy[i].maybe == maybe && lba < busy[i].lba + busy[i].len &&
		    busy[i].lba < lba + len)
			return true;
	return false;
}

enum p2z_blk_reissue
p2z_blk_reissue_place(const struct p2z_blk_slot *slot, uint64_t wp,
		      const struct p2z_blk_range *busy, size_t nr_busy,
		      bool complete, int (*match)(void *ctx, uint64_t lba),
		      void *ctx, uint64_t *at)
{
	unsigned int found = 0;
	uint64_t p;
	int r;

	if (wp < slot->wp_submit || !slot->len)
		return P2Z_BLK_REISSUE_FAIL;
	for (p = slot->wp_submit; p + slot->len <= wp; p++) {
		if (p2z_blk_range_busy(p, slot->len, busy, nr_busy, false))
			continue;
		r = match(ctx, p);
		if (r < 0)
			return P2Z_BLK_REISSUE_FAIL;
		if (!r)
			continue;
		/* maybe another's bytes, maybe erased by a reset: unsure */
		if (p2z_blk_range_busy(p, slot->len, busy, nr_busy, true))
			return P2Z_BLK_REISSUE_FAIL;
		if (found++)
			return P2Z_BLK_REISSUE_FAIL; /* ambiguous */
		*at = p;
	}
	if (found && !complete)
		return P2Z_BLK_REISSUE_FAIL; /* maybe another's landing */
	return found ? P2Z_BLK_REISSUE_DONE : P2Z_BLK_REISSUE_SEND;
}

void p2z_blk_hist_zops(const struct p2z_blk_hist *ring, size_t nr,
		       uint64_t zidx, struct p2z_blk_zops *zops)
{
	const struct p2z_blk_hist *e;
	struct p2z_blk_zop *op;
	size_t i;

	for (i = 0; i < nr; i++) {
		e = &ring[i];
		if (e->len || !e->seq ||
		    (e->zidx != zidx && e->zidx != P2Z_BLK_HIST_ALL))
			continue;
		op = &zops->op[zops->nr++];
		op->begin = e->landed;
		op->state = e->pad;
		if (e->pad != P2Z_BLK_ZOP_DONE && e->pad != P2Z_BLK_ZOP_FAILED)
			op->state = P2Z_BLK_ZOP_OPEN;
		op->end = op->state == P2Z_BLK_ZOP_OPEN ? UINT64_MAX : e->seq;
	}
}

bool p2z_blk_zop_unsure(const struct p2z_blk_zops *zops, uint64_t sent)
{
	size_t i;

	if (zops->lost > sent)
		return true;
	for (i = 0; i < zops->nr; i++)
		if (zops->op[i].end > sent)
			return true;
	return false;
}

enum p2z_blk_landing p2z_blk_landing_of(const struct p2z_blk_zops *zops,
					uint64_t lo, uint64_t hi, uint64_t sent)
{
	enum p2z_blk_landing c = lo < zops->lost ? P2Z_BLK_LANDING_MAYBE :
						   P2Z_BLK_LANDING_BUSY;
	const struct p2z_blk_zop *op;
	size_t i;

	for (i = 0; i < zops->nr; i++) {
		op = &zops->op[i];
		if (op->end > sent)
			continue; /* not ended when it was sent */
		if (op->state == P2Z_BLK_ZOP_DONE && hi < op->begin)
			return P2Z_BLK_LANDING_GONE;
		if (lo < op->end)
			c = P2Z_BLK_LANDING_MAYBE;
	}
	return c;
}

bool p2z_blk_hist_busy(const struct p2z_blk_hist *ring, size_t nr,
		       uint64_t dropped, uint64_t zidx, uint64_t since,
		       const struct p2z_blk_zops *zops,
		       struct p2z_blk_range *busy, size_t *nr_busy)
{
	const struct p2z_blk_hist *e;
	enum p2z_blk_landing c;
	uint64_t lo, hi;
	size_t i;

	for (i = 0; i < nr; i++) {
		e = &ring[i];
		if (e->seq <= since || e->zidx != zidx || !e->len)
			continue;
		/* when it was sent: @pad back from @seq, or before @seq */
		if (e->pad && e->pad < e->seq) {
			hi = e->seq - e->pad;
			lo = e->pad == UINT32_MAX ? 0 : hi;
		} else {
			lo = 0;
			hi = e->seq - 1;
		}
		c = zops ? p2z_blk_landing_of(zops, lo, hi, since) :
			   P2Z_BLK_LANDING_BUSY;
		if (c != P2Z_BLK_LANDING_GONE)
			busy[(*nr_busy)++] = (struct p2z_blk_range){
				e->landed, e->len, c == P2Z_BLK_LANDING_MAYBE
			};
	}
	return dropped <= since;
}

static uint32_t p2z_blk_crc_table[256];

static void p2z_blk_crc_init(void)
{
	uint32_t c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = (uint32_t)i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78U : c >> 1;
		p2z_blk_crc_table[i] = c;
	}
}

uint32_t p2z_blk_crc32c(uint32_t crc, const void *buf, size_t len)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const unsigned char *p = buf;

	pthread_once(&once, p2z_blk_crc_init);
	crc = ~crc;
	while (len--)
		crc = p2z_blk_crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

const char *p2z_blk_state_name(uint16_t state, bool alive, bool recovering)
{
	if (state == UBLK_S_DEV_QUIESCED)
		return recovering ? "recovering" : "quiesced";
	return alive ? "alive" : "dead";
}

int p2z_blk_recover_check(uint16_t state, uint64_t flags, uint64_t srv_flags,
			  enum p2z_blk_owner owner)
{
	if ((srv_flags & P2Z_BLK_SRV_MAGIC_MASK) != P2Z_BLK_SRV_MAGIC)
		return -EPERM;
	if (!(flags & UBLK_F_USER_RECOVERY))
		return -EOPNOTSUPP;
	if (owner != P2Z_BLK_OWNER_OURS)
		return -EPERM;
	return state == UBLK_S_DEV_QUIESCED ? 0 : -EBUSY;
}

size_t p2z_blk_carry_select(const struct p2z_blk_slot *old, size_t nr,
			    struct p2z_blk_slot *carry, size_t cap,
			    uint32_t *map, bool *overflow)
{
	size_t i, k = 0;

	for (i = 0; i < nr; i++) {
		map[i] = 0;
		if (old[i].state == P2Z_BLK_SLOT_FREE)
			continue;
		if (k == cap) {
			*overflow = true;
			continue;
		}
		carry[k] = old[i];
		map[i] = (uint32_t)++k;
	}
	return k;
}

long p2z_blk_slot_find(const struct p2z_blk_slot *s, size_t nr, size_t from,
		       uint64_t zidx, uint32_t len, uint32_t crc)
{
	size_t i;

	for (i = from; i < nr; i++)
		if (s[i].state != P2Z_BLK_SLOT_FREE && s[i].zidx == zidx &&
		    s[i].len == len && s[i].crc == crc)
			return (long)i;
	return -1;
}

enum p2z_blk_reissue p2z_blk_reissue_noslot(bool overflow)
{
	return overflow ? P2Z_BLK_REISSUE_FAIL : P2Z_BLK_REISSUE_SEND;
}
