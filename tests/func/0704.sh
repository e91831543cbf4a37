#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Two processes appending to the same zone with O_APPEND at once: every
# write lands whole (no interleaving inside a write), none is lost or
# duplicated, and each writer's writes stay in its own order.
. "$(dirname "$0")/common.sh"

p2z_init "concurrent O_APPEND writers on one zone"
p2z_device
p2z_mount
p2z_reset_seq 0
f=$MNT/seq/0
ch=$((64 * 1024))
n=48
# below capacity: the zone takes the final append (still_serving)
[ $((2 * n * ch)) -lt "$CAP" ] || n=$(((CAP - 1) / ch / 2))
# writer A: pattern 271 index c*ch in chunk c; writer B: pattern 272
"$TIO" write "$f" 0 $((n * ch)) -a -s 271 -b "$ch" >"$WORK/a.out" &
pa=$!
"$TIO" write "$f" 0 $((n * ch)) -a -s 272 -b "$ch" >"$WORK/b.out" &
pb=$!
BG_PIDS=("$pa" "$pb")
wait "$pa" || fail "writer A failed"
wait "$pb" || fail "writer B failed"
BG_PIDS=()
assert_eq $((n * ch)) "$(cat "$WORK/a.out")" "bytes written by A"
assert_eq $((n * ch)) "$(cat "$WORK/b.out")" "bytes written by B"
assert_size "$f" $((2 * n * ch)) "after both writers"
# walk the zone chunk by chunk: each is A's or B's next chunk
a=0 b=0
for ((x = 0; x < 2 * n * ch; x += ch)); do
	if [ "$a" -lt "$n" ]; then
		run_tio read "$f" "$x" "$ch" -s 271 -P $((a * ch))
		if [ "$TIO_OUT" = "$ch" ]; then
			a=$((a + 1))
			continue
		fi
	fi
	[ "$b" -lt "$n" ] || fail "chunk at $x is not A's chunk $a (B is done)"
	run_tio read "$f" "$x" "$ch" -s 272 -P $((b * ch))
	[ "$TIO_OUT" = "$ch" ] ||
		fail "chunk at $x is neither A's chunk $a nor B's chunk $b"
	b=$((b + 1))
done
assert_eq "$n $n" "$a $b" "chunks of A and B found in the zone"
still_serving "$f"
p2z_umount
exit 0
