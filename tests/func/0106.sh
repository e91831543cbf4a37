#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Read-only opens may use the page cache: reads after appends and after a
# reset must return the current data, never stale pages.
. "$(dirname "$0")/common.sh"

p2z_init "no stale page cache after appends and resets"
p2z_device
p2z_mount
p2z_reset_seq 0
f=$MNT/seq/0
len=$((256 * 1024))

append "$f" 0 "$len" 41
# a long-lived reader: its pages stay cached between the steps
exec 5<"$f" || fail "open seq/0 read-only"
expect "$len" "cached read through fd 5" read fd:5 0 "$len" -s 41
cat "$f" >/dev/null
# append: the reader sees the new size and the new bytes
append "$f" "$len" "$len" 41
expect $((2 * len)) "read through fd 5 after an append" read fd:5 0 $((2 * len)) -s 41
expect $((2 * len)) "fresh read after an append" read "$f" 0 $((2 * len)) -s 41
cmp "$f" <("$TIO" pattern 41 0 $((2 * len))) || fail "cat after an append"
# reset, then the same range rewritten with other bytes
expect OK "reset seq/0" truncate "$f" 0
expect 0 "read through fd 5 after reset" read fd:5 0 "$len"
expect 0 "fresh read after reset" read "$f" 0 "$len"
assert_eq 0 "$(wc -c <"$f")" "cat after a reset"
append "$f" 0 "$len" 42
expect "$len" "read through fd 5 after reset + rewrite" read fd:5 0 "$len" -s 42
expect "$len" "fresh read after reset + rewrite" read "$f" 0 "$len" -s 42
cmp "$f" <("$TIO" pattern 42 0 "$len") || fail "cat after reset + rewrite"
# the same through mmap-free readers of other processes
dd if="$f" bs=4096 status=none | cmp - <("$TIO" pattern 42 0 "$len") ||
	fail "dd read after reset + rewrite"
# and O_TRUNC through another fd while fd 5 stays open
exec 6>"$f" || fail "O_TRUNC open"
exec 6>&-
expect 0 "read through fd 5 after O_TRUNC" read fd:5 0 "$len"
append "$f" 0 $((len / 2)) 43
expect $((len / 2)) "read through fd 5 after O_TRUNC + rewrite" \
	read fd:5 0 "$len" -s 43
exec 5<&-
still_serving "$f"
p2z_umount
exit 0
