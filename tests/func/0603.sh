#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# explicit-open: opening a zone file for writing opens the zone; beyond the
# device's open limit EBUSY; the last close closes it and frees the slot.
# Without the option, more zones than the open limit can be written, up to
# the active limit; past it the device refuses the write with EOVERFLOW.
. "$(dirname "$0")/common.sh"

p2z_init "explicit-open limit"
if [ -n "$P2Z_TEST_DEV" ]; then
	p2z_device
	p2z_mount
	xattr "$MNT" user.dev.max_open
	max=$REPLY
	xattr "$MNT" user.dev.max_active
	act=$REPLY
	p2z_umount
	[ "$max" -gt 0 ] || skip "device has no open zone limit"
	[ "$NSEQ" -gt "$max" ] || skip "device has no more zones than its open limit"
	[ "$max" -le 3 ] || skip "test holds up to 3 zones open (limit $max)"
else
	max=2
	act=4
	p2z_device "$P2Z_GEOM" 6 0 --max-open "$max" --max-active "$act"
fi
p2z_mount explicit-open
p2z_reset_seq $(seq 0 "$max")
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
if [ "$act" -ne 0 ] && [ "$act" -le "$max" ]; then
	# closed seq/0 is still active: opening one more zone needs it reset
	info "max_active $act <= max_open $max: seq/0 reset to free its active slot"
	expect OK "reset seq/0" truncate "$MNT/seq/0" 0
fi
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

# without explicit-open more zones than the open limit take writes: the
# device closes an implicitly open zone to open the next. Zones written and
# closed stay active, so this needs max_active > max_open (0: no limit);
# past max_active the device refuses the write (EOVERFLOW), as a drive does.
p2z_mount
assert_xattr "$MNT" user.dev.max_active "$act"
nw=$((max + 1))
# the part above left data in seq/0 and seq/1
p2z_reset_seq $(seq 0 "$max")
if [ "$act" -ne 0 ] && [ "$act" -le "$max" ]; then
	info "skipped: writes to $nw zones need max_active > max_open ($act <= $max)"
	nw=0
fi
for ((i = 0; i < nw; i++)); do
	exec 5>>"$MNT/seq/$i" || fail "open seq/$i"
	expect "$LBA" "write to seq/$i without explicit-open" \
		write fd:5 0 "$LBA" -s $((230 + i))
	exec 5>&-
done
for ((i = 0; i < nw; i++)); do
	assert_size "$MNT/seq/$i" "$LBA" "one LBA written without explicit-open"
	verify "$MNT/seq/$i" 0 "$LBA" $((230 + i))
	assert_cond_in "implicit-open closed" "$MNT/seq/$i" "written"
done
used=$nw
if [ "$nw" -gt 0 ] && [ "$act" -ne 0 ]; then
	if [ "$NSEQ" -gt "$act" ]; then
		# fill the active limit, then one zone more
		for ((i = nw; i < act; i++)); do
			append "$MNT/seq/$i" 0 "$LBA" $((230 + i))
		done
		expect EOVERFLOW "write to seq/$act past max_active $act" \
			write "$MNT/seq/$act" 0 "$LBA" -s 240
		assert_size "$MNT/seq/$act" 0 "refused past max_active"
		assert_cond "$MNT/seq/$act" empty "refused past max_active"
		assert_mount_rw "after EOVERFLOW"
		# a reset frees an active zone
		expect OK "reset seq/0" truncate "$MNT/seq/0" 0
		append "$MNT/seq/$act" 0 "$LBA" 240
		verify "$MNT/seq/$act" 0 "$LBA" 240
		used=$((act + 1))
	else
		info "skipped: EOVERFLOW past max_active $act needs more than $act zones ($NSEQ)"
	fi
fi
# leave every zone this test used empty
p2z_reset_seq $(seq 0 $((used > max ? used - 1 : max)))
p2z_umount
exit 0
