#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# explicit-open: opening a zone file for writing opens the zone; beyond the
# device's open limit EBUSY; the last close closes it and frees the slot.
# Without the option, more zones than the limit can be written.
. "$(dirname "$0")/common.sh"

p2z_init "explicit-open limit"
if [ -n "$P2Z_TEST_DEV" ]; then
	p2z_device
	p2z_mount
	xattr "$MNT" user.dev.max_open
	max=$REPLY
	p2z_umount
	[ "$max" -gt 0 ] || skip "device has no open zone limit"
	[ "$NSEQ" -gt "$max" ] || skip "device has no more zones than its open limit"
	[ "$max" -le 3 ] || skip "test holds up to 3 zones open (limit $max)"
else
	max=2
	p2z_device "$P2Z_GEOM" 6 0 --max-open "$max" --max-active 4
fi
p2z_mount explicit-open
p2z_reset_seq 0 1 2 3
xattr "$MNT" user.dev.max_open
assert_eq "$max" "$REPLY" "user.dev.max_open"
# hold $max zones open for writing (fds 5..)
for ((i = 0; i < max; i++)); do
	eval "exec $((5 + i))>>\"\$MNT/seq/\$i\"" || fail "open seq/$i for writing"
	assert_cond "$MNT/seq/$i" explicit-open "held open for writing"
done
expect EBUSY "open seq/$max for writing past the limit" open "$MNT/seq/$max" w
expect EBUSY "O_RDWR open past the limit" open "$MNT/seq/$max" rw
assert_cond "$MNT/seq/$max" empty "refused open"
expect OK "read-only open past the limit" open "$MNT/seq/$max" r
expect OK "second write open of an already open file" open "$MNT/seq/0" w
assert_cond "$MNT/seq/0" explicit-open "after a second open and close"
# data through a held fd, then the last close closes the zone
expect "$LBA" "append through the held fd" write fd:5 0 "$LBA" -s 221
exec 5>&-
assert_cond "$MNT/seq/0" closed "written, then last close"
verify "$MNT/seq/0" 0 "$LBA" 221
expect OK "open seq/$max once a slot is free" open "$MNT/seq/$max" w
exec 5>>"$MNT/seq/$max" || fail "hold seq/$max"
assert_cond "$MNT/seq/$max" explicit-open "held"
expect EBUSY "open seq/0 again with all slots taken" open "$MNT/seq/0" w
# an empty zone closed after an explicit open is empty again
exec 5>&-
assert_cond_in "empty closed" "$MNT/seq/$max" "explicitly opened, closed unwritten"
for ((i = 1; i < max; i++)); do
	eval "exec $((5 + i))>&-"
done
still_serving "$MNT/seq/1"
p2z_umount

# without explicit-open more zones than the limit take writes
p2z_mount
for ((i = 0; i <= max; i++)); do
	exec 5>>"$MNT/seq/$((i + 1))" || fail "open seq/$((i + 1))"
	expect "$LBA" "write to seq/$((i + 1)) without explicit-open" \
		write fd:5 0 "$LBA" -s $((230 + i))
	exec 5>&-
done
for ((i = 0; i <= max; i++)); do
	stat_field "$MNT/seq/$((i + 1))" size
	expect "$LBA" "read back seq/$((i + 1))" \
		read "$MNT/seq/$((i + 1))" $((REPLY - LBA)) "$LBA" -s $((230 + i)) -P 0
done
p2z_umount
exit 0
