#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# truncate to any size other than 0 or capacity: EPERM, nothing changes.
. "$(dirname "$0")/common.sh"

p2z_init "truncate to other sizes: EPERM"
p2z_device
p2z_mount
p2z_reset_seq 0
f=$MNT/seq/0
append "$f" 0 $((LBA * 4)) 91
for s in 1 "$LBA" $((LBA * 2)) $((LBA * 5)) $((LBA * 4 + 1)) $((CAP - LBA)) \
	$((CAP - 1)) $((CAP + 1)) $((CAP + LBA)) $((ZSIZE)) $((PO2 * 2)); do
	[ "$s" = "$CAP" ] && continue
	expect EPERM "truncate to $s" truncate "$f" "$s"
done
exec 5>>"$f" || fail "open seq/0 for writing"
expect EPERM "ftruncate to 1 LBA" truncate fd:5 "$LBA"
exec 5>&-
assert_size "$f" $((LBA * 4)) "after refused truncates"
assert_cond_in "implicit-open closed" "$f" "after refused truncates"
verify "$f" 0 $((LBA * 4)) 91
still_serving "$f"
p2z_umount
exit 0
