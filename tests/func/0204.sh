#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# O_TRUNC resets the zone; dd without conv=notrunc replaces the content.
. "$(dirname "$0")/common.sh"

p2z_init "O_TRUNC resets"
need_prog dd
p2z_device
p2z_mount
p2z_reset_seq 0 1
f=$MNT/seq/0
append "$f" 0 $((LBA * 8)) 101
expect OK "open O_WRONLY|O_TRUNC" open "$f" w,trunc
assert_size "$f" 0 "after O_TRUNC"
assert_cond "$f" empty "after O_TRUNC"
expect 0 "read after O_TRUNC" read "$f" 0 "$LBA"
# O_TRUNC and write in one go
expect "$LBA" "O_TRUNC write" write "$f" 0 "$LBA" -t -s 102
assert_size "$f" "$LBA" "O_TRUNC write"
verify "$f" 0 "$LBA" 102
# shell > (O_TRUNC|O_CREAT)
: >"$f" || fail ": > seq/0"
assert_size "$f" 0 "after : >"
# dd without notrunc twice: the second replaces the first
"$TIO" pattern 103 0 $((128 * 1024)) >"$WORK/a"
"$TIO" pattern 104 0 $((LBA * 2)) >"$WORK/b"
dd if="$WORK/a" of="$MNT/seq/1" bs=64K status=none || fail "dd (first)"
dd if="$WORK/b" of="$MNT/seq/1" bs="$LBA" status=none || fail "dd (second)"
cmp "$WORK/b" "$MNT/seq/1" || fail "seq/1 is not the second dd's data"
# O_TRUNC of a full zone resets it too
expect OK "finish seq/0" truncate "$f" "$CAP"
expect OK "O_RDWR|O_TRUNC of a full zone" open "$f" rw,trunc
assert_size "$f" 0 "O_TRUNC of a full zone"
assert_cond "$f" empty "O_TRUNC of a full zone"
still_serving "$f"
p2z_umount
exit 0
