#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# O_APPEND appends at the write pointer whatever the offset; dd
# oflag=append conv=notrunc twice = the concatenation; shell >> appends.
. "$(dirname "$0")/common.sh"

p2z_init "O_APPEND and dd oflag=append conv=notrunc"
need_prog dd
p2z_device
p2z_mount
p2z_reset_seq 0 1 2
f=$MNT/seq/0

append "$f" 0 $((LBA * 2)) 21
# pwrite at offset 0 with O_APPEND: lands at the write pointer
expect "$LBA" "O_APPEND pwrite at offset 0" write "$f" 0 "$LBA" -a -s 21 -P $((LBA * 2))
expect "$LBA" "O_APPEND pwrite at a bogus offset" \
	write "$f" $((LBA * 1000)) "$LBA" -a -s 21 -P $((LBA * 3))
assert_size "$f" $((LBA * 4)) "after O_APPEND writes"
verify "$f" 0 $((LBA * 4)) 21
still_serving "$f"

# dd twice on seq/1: A then B
a=$WORK/a b=$WORK/b
"$TIO" pattern 31 0 $((256 * 1024)) >"$a"
"$TIO" pattern 32 0 $((LBA * 3)) >"$b"
dd if="$a" of="$MNT/seq/1" bs=64K oflag=append conv=notrunc status=none ||
	fail "dd oflag=append conv=notrunc (first)"
dd if="$b" of="$MNT/seq/1" bs="$LBA" oflag=append conv=notrunc status=none ||
	fail "dd oflag=append conv=notrunc (second)"
assert_size "$MNT/seq/1" $((256 * 1024 + LBA * 3)) "after two dd"
cat "$a" "$b" | cmp - "$MNT/seq/1" || fail "seq/1 is not A followed by B"
# direct dd too
dd if="$b" of="$MNT/seq/1" bs="$LBA" oflag=append,direct conv=notrunc status=none ||
	fail "dd oflag=append,direct conv=notrunc"
cat "$a" "$b" "$b" | cmp - "$MNT/seq/1" || fail "seq/1 is not A B B"

# shell >> (O_APPEND|O_CREAT on an existing name)
cat "$b" >>"$MNT/seq/2" || fail "cat >> seq/2"
cat "$b" >>"$MNT/seq/2" || fail "cat >> seq/2 (second)"
cat "$b" "$b" | cmp - "$MNT/seq/2" || fail "seq/2 is not B B"
still_serving "$MNT/seq/2"
p2z_umount
exit 0
