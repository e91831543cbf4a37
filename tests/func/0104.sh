#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Capacity: a write crossing it is cut short at the exact byte; at or past
# it: EFBIG; the zone is then full.
. "$(dirname "$0")/common.sh"

p2z_init "capacity: short write, then EFBIG"
MiB=$((1024 * 1024))

for g in $(p2z_geoms); do
	p2z_device "$g" 2 0
	p2z_mount
	p2z_reset_seq 0 1
	f=$MNT/seq/0
	# fill up to 1 MiB + 1 LBA below capacity
	fill=$((CAP - MiB - LBA))
	expect "$fill" "fill seq/0 to capacity - 1 MiB - 1 LBA ($g)" \
		write "$f" 0 "$fill" -s 5 -b 1M
	# 2 MiB at the write pointer: exactly 1 MiB + 1 LBA gets written
	expect $((MiB + LBA)) "write crossing capacity ($g)" \
		write "$f" "$fill" $((2 * MiB)) -s 5
	assert_size "$f" "$CAP" "after the short write ($g)"
	assert_cond "$f" full "written to capacity ($g)"
	expect EFBIG "write at capacity ($g)" write "$f" "$CAP" "$LBA"
	expect EFBIG "write past capacity ($g)" write "$f" $((CAP + LBA)) "$LBA"
	expect EFBIG "O_APPEND write to a full zone ($g)" write "$f" 0 "$LBA" -a
	verify "$f" 0 "$CAP" 5
	expect 0 "read at capacity ($g)" read "$f" "$CAP" "$LBA"
	# exactly to capacity in one write on the other zone: no error, full
	f=$MNT/seq/1
	append "$f" 0 "$LBA" 6
	expect $((CAP - LBA)) "write ending exactly at capacity ($g)" \
		write "$f" "$LBA" $((CAP - LBA)) -s 6 -b 4M
	assert_size "$f" "$CAP" "seq/1 ($g)"
	expect EFBIG "write at capacity of seq/1 ($g)" write "$f" "$CAP" "$LBA"
	verify "$f" 0 "$CAP" 6
	# still serving: reset and append
	expect OK "reset seq/1 ($g)" truncate "$f" 0
	still_serving "$f"
	p2z_umount
	info "ok: $g"
done
exit 0
