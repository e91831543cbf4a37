#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# O_APPEND follows the file's current flags: after fcntl(F_SETFL) clears it,
# a pwrite away from the write pointer is EINVAL (not appended), and after
# fcntl sets it on a descriptor opened without it, writes are appended.
. "$(dirname "$0")/common.sh"

p2z_init "O_APPEND as fcntl(F_SETFL) leaves it"
p2z_device
p2z_mount
p2z_reset_seq 0 1
f=$MNT/seq/0

# opened with O_APPEND (>>): the offset is ignored, the write is appended
exec 5>>"$f" || fail "open seq/0 O_APPEND"
expect "$LBA" "O_APPEND write at offset 0 of an empty zone" \
	write fd:5 0 "$LBA" -s 61
expect "$LBA" "O_APPEND write at offset 0, appended at $LBA" \
	write fd:5 0 "$LBA" -s 61 -P "$LBA"
assert_size "$f" $((2 * LBA)) "two O_APPEND writes"
expect OK "fcntl clears O_APPEND" setfl fd:5 -append
expect EINVAL "pwrite at 0 after O_APPEND was cleared" \
	write fd:5 0 "$LBA" -s 62
assert_size "$f" $((2 * LBA)) "after the refused pwrite"
verify "$f" 0 $((2 * LBA)) 61
# at the write pointer it is still an ordinary append
expect "$LBA" "pwrite at the write pointer without O_APPEND" \
	write fd:5 $((2 * LBA)) "$LBA" -s 61
assert_size "$f" $((3 * LBA)) "after a write at the write pointer"
exec 5>&-

# opened without O_APPEND, then set by fcntl: appended wherever aimed
g=$MNT/seq/1
append "$g" 0 "$LBA" 63
exec 6<>"$g" || fail "open seq/1 read-write"
expect EINVAL "pwrite at 0 without O_APPEND" write fd:6 0 "$LBA" -s 63
expect OK "fcntl sets O_APPEND" setfl fd:6 +append
expect "$LBA" "pwrite at 0 after fcntl set O_APPEND" \
	write fd:6 0 "$LBA" -s 63 -P "$LBA"
assert_size "$g" $((2 * LBA)) "appended after fcntl set O_APPEND"
verify "$g" 0 $((2 * LBA)) 63
exec 6>&-

still_serving "$f"
p2z_umount
exit 0
