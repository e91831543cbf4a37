#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Cached readers and an appender (issue 9, defect 7): with LBAs smaller than
# a page, a reader could cache the page holding the end of file, zeros past
# it, while an append was under way, and then see those zeros as data once
# the size grew. The daemon drops that page before it acknowledges the
# append (waiting for a read of it still in flight). One appender of
# LBA-sized records, three readers re-reading the end of the file through
# the page cache: every byte any reader gets is what was written. Also a
# reader keeping the file open across appends (no race needed): the page it
# cached at the old end of file is gone once the append returns.
. "$(dirname "$0")/common.sh"

p2z_init "cached readers never see zeros of an append in flight"
p2z_device 3M/3M/512
p2z_mount
p2z_reset_seq 0
f=$MNT/seq/0

# Deterministic: a descriptor open across the append, the page cached.
append "$f" 0 "$LBA" 51
exec 5<"$f"
expect "$LBA" "cached read of the first LBA" read fd:5 0 "$LBA" -s 51
append "$f" "$LBA" "$LBA" 51
expect $((2 * LBA)) "cached read after the append" read fd:5 0 $((2 * LBA)) -s 51
exec 5<&-

# The race: 4000 appends against three readers (before the fix, about
# one run in three saw zeros).
count=4000
# With LBAs of a page or more there is no partial page to race on: fewer
# appends keep the check without its cost (the QEMU guest, TCG).
[ "$LBA" -ge 4096 ] && count=500
run_tio eofrace "$f" "$count" "$LBA" 3 51
case $TIO_OUT in
reads=*" bad=0") info "$TIO_OUT" ;;
*) fail "cached readers during appends: $TIO_OUT (expected bad=0)" ;;
esac
assert_size "$f" $(((count + 2) * LBA)) "after the race"
verify "$f" 0 $(((count + 2) * LBA)) 51
still_serving "$f"
p2z_umount
exit 0
