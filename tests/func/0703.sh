#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Concurrent writers: two (then four) processes appending to separate zones
# at once; every zone gets exactly its own bytes in order.
. "$(dirname "$0")/common.sh"

p2z_init "concurrent appends to separate zones"
p2z_device "$P2Z_GEOM" 4 0
p2z_mount
p2z_reset_seq 0 1 2 3
len=$((16 * 1024 * 1024))
# below capacity: seq/0 takes the final append (still_serving)
[ "$len" -lt "$CAP" ] || len=$(((CAP - LBA) / LBA * LBA))

# writers N BS: N processes, zone i gets pattern 250+i in BS writes
writers()
{
	local n=$1 bs=$2 i pids=() out

	for ((i = 0; i < n; i++)); do
		"$TIO" write "$MNT/seq/$i" "$3" "$len" -s $((250 + i)) -b "$bs" \
			>"$WORK/w$i.out" &
		pids+=($!)
		BG_PIDS+=($!)
	done
	for ((i = 0; i < n; i++)); do
		wait "${pids[$i]}" || fail "writer $i exited with an error"
		out=$(cat "$WORK/w$i.out")
		assert_eq "$len" "$out" "bytes written by writer $i ($n writers, bs $bs)"
	done
	BG_PIDS=()
}

writers 2 128K 0
for i in 0 1; do
	assert_size "$MNT/seq/$i" "$len" "2 writers"
	verify "$MNT/seq/$i" 0 "$len" $((250 + i))
done
# four writers, the first two continuing where they were
expect OK "reset seq/2" truncate "$MNT/seq/2" 0
expect OK "reset seq/3" truncate "$MNT/seq/3" 0
if [ $((2 * len)) -lt "$CAP" ]; then
	"$TIO" write "$MNT/seq/0" "$len" "$len" -s 250 -b 1M >"$WORK/a.out" &
	p0=$!
	"$TIO" write "$MNT/seq/1" "$len" "$len" -s 251 -b 64K -d >"$WORK/b.out" &
	p1=$!
	"$TIO" write "$MNT/seq/2" 0 "$len" -s 252 -b "$LBA" >"$WORK/c.out" &
	p2=$!
	"$TIO" write "$MNT/seq/3" 0 "$len" -s 253 -b 1M -a >"$WORK/d.out" &
	p3=$!
	BG_PIDS=("$p0" "$p1" "$p2" "$p3")
	for p in $p0 $p1 $p2 $p3; do
		wait "$p" || fail "writer $p failed"
	done
	BG_PIDS=()
	for x in a b c d; do
		assert_eq "$len" "$(cat "$WORK/$x.out")" "bytes written by writer $x"
	done
	assert_size "$MNT/seq/0" $((2 * len)) "4 writers"
	assert_size "$MNT/seq/1" $((2 * len)) "4 writers"
	verify "$MNT/seq/0" 0 $((2 * len)) 250
	verify "$MNT/seq/1" 0 $((2 * len)) 251
	verify "$MNT/seq/2" 0 "$len" 252
	verify "$MNT/seq/3" 0 "$len" 253
fi
still_serving "$MNT/seq/0"
p2z_umount
exit 0
