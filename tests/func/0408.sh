#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Large asynchronous direct writes: io_uring O_DIRECT writes of 4 MiB, four
# times the mount's max_write (1 MiB), so that the kernel splits each into
# several WRITE requests (with FUSE_CAP_ASYNC_DIO they are in flight
# together and the daemon must put them in zone order), at the size of
# seq/0 .. seq/3 (an unaligned size: 3 LBAs written first), four rounds,
# the four zones' writes submitted together on one ring. Each completes with
# res == 4 MiB, the size and user.zone.wp are the old size + 4 MiB, and
# the whole file reads back as written (p2z_uring write). Then a write past
# the size (a gap) and one behind it (at size - 1 LBA, at 0) fail EINVAL
# and change nothing: size, user.zone.wp and bytes as before; a write at
# the size succeeds again. After the unmount the image's stored write
# pointers (po2zfs-emu report) are the sizes. And 4 threads append 6
# records of 1.5 MiB each to seq/4 together (O_APPEND, O_DIRECT): each
# completes whole, the size and user.zone.wp grow by all 24, which are
# whole records, none torn or interleaved, each thread's in order
# (p2z_uring appenders). A npo2 geometry with 4 KiB LBAs and a po2 one with
# 512-byte LBAs.
. "$(dirname "$0")/common.sh"

p2z_init "io_uring O_DIRECT writes of 4 MiB (split by the kernel) at the size, 4 zones in parallel"
URING=$P2Z_BUILD/tests/p2z_uring
[ -x "$URING" ] || skip "p2z_uring helper not built (needs liburing)"

BIG=$((4 << 20))
for geom in 96M/80M/4096 64M/48M/512; do
	p2z_device "$geom" 5 0
	p2z_mount
	need_seq 4
	lba=$LBA
	files=()
	for z in 0 1 2 3; do
		out=$("$URING" pwrite "$MNT/seq/$z" 0 $((3 * lba)) 2>&1)
		assert_eq "$((3 * lba))" "$out" "$geom: seq/$z: a write of 3 LBAs at 0"
		files+=("$MNT/seq/$z")
	done
	out=$("$URING" write "$BIG" 4 "${files[@]}" 2>&1) ||
		fail "$geom: 4 rounds of 4 MiB writes on 4 zones: $out"
	info "$geom: $out"
	size=$((3 * lba + 4 * BIG))
	for z in 0 1 2 3; do
		out=$("$URING" verify "$MNT/seq/$z" "$size" 2>&1) ||
			fail "$geom: seq/$z after the writes: $out"
	done
	f=$MNT/seq/0
	for ofs in $((size + lba)) $((size + BIG)) $((size - lba)) 0; do
		out=$("$URING" pwrite "$f" "$ofs" "$BIG" 2>&1)
		assert_eq EINVAL "$out" "$geom: 4 MiB write at $ofs, size $size"
		out=$("$URING" verify "$f" "$size" 2>&1) ||
			fail "$geom: seq/0 after the failed write at $ofs: $out"
	done
	out=$("$URING" pwrite "$f" "$size" "$BIG" 2>&1)
	assert_eq "$BIG" "$out" "$geom: 4 MiB write at the size $size"
	out=$("$URING" verify "$f" "$((size + BIG))" 2>&1) ||
		fail "$geom: seq/0 after the write at the size: $out"
	# writers' appends in flight together on one zone: 4 threads, records
	# of 1.5 MiB (two WRITE requests each)
	out=$("$URING" appenders "$MNT/seq/4" 4 $((3 << 19)) 6 2>&1) ||
		fail "$geom: 4 threads appending 1.5 MiB records to seq/4: $out"
	info "$geom: seq/4, 4 threads: $out"
	still_serving "$MNT/seq/4"
	p2z_umount
	out=$("$EMU" report "$DEV" 2>&1) || fail "po2zfs-emu report: $out"
	for z in 0 1 2 3; do
		want=$size
		[ "$z" = 0 ] && want=$((size + BIG))
		wp=$(awk -v z="$z" '$1 == z && $2 == "seq" { print $5 }' <<<"$out")
		assert_eq "$want" "$wp" "$geom: stored write pointer of zone $z"
	done
done
exit 0
