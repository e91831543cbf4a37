#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Conventional zone files: size = capacity, random reads and writes and
# overwrites, truncate EPERM, EFBIG at capacity.
. "$(dirname "$0")/common.sh"

p2z_init "conventional zone files"
for g in $(cnv_geoms); do
	p2z_cnv_mount "$g"
	f=$MNT/cnv/0
	assert_size "$f" "$CAP" "conventional file ($g)"
	assert_xattr "$f" user.zone.type cnv "$g"
	[ "${EMU_GEOM:-1}" = 1 ] && verify_zeros "$f" 0 "$((1024 * 1024))"
	# random order writes, then an overwrite
	mid=$(((CAP / 2) / LBA * LBA))
	expect $((LBA * 4)) "write in the middle ($g)" write "$f" "$mid" $((LBA * 4)) -s 61
	expect $((LBA * 2)) "write at the start ($g)" write "$f" 0 $((LBA * 2)) -s 62
	expect "$LBA" "write of the last LBA ($g)" write "$f" $((CAP - LBA)) "$LBA" -s 63
	expect "$LBA" "overwrite in the middle ($g)" write "$f" $((mid + LBA)) "$LBA" -s 64
	verify "$f" "$mid" "$LBA" 61
	verify "$f" $((mid + LBA)) "$LBA" 64
	verify "$f" $((mid + 2 * LBA)) $((2 * LBA)) 61
	verify "$f" 0 $((LBA * 2)) 62
	verify "$f" $((CAP - LBA)) "$LBA" 63
	expect 0 "read at capacity ($g)" read "$f" "$CAP" "$LBA"
	expect "$LBA" "write crossing capacity is cut short ($g)" \
		write "$f" $((CAP - LBA)) $((LBA * 2)) -s 63
	expect EFBIG "write at capacity ($g)" write "$f" "$CAP" "$LBA"
	for s in 0 "$LBA" $((CAP / 2)) $((CAP + LBA)); do
		expect EPERM "truncate cnv/0 to $s ($g)" truncate "$f" "$s"
	done
	expect EPERM "O_TRUNC open of cnv/0 ($g)" open "$f" w,trunc
	assert_size "$f" "$CAP" "after refused truncates ($g)"
	verify "$f" 0 $((LBA * 2)) 62
	# the second conventional zone is independent
	[ "${EMU_GEOM:-1}" = 1 ] && verify_zeros "$MNT/cnv/1" 0 $((LBA * 4))
	# seq/0 is the first sequential zone
	xattr "$MNT/seq/0" user.zone.index
	assert_eq "$NCNV" "$REPLY" "user.zone.index of seq/0 ($g)"
	p2z_umount
	p2z_mount
	verify "$f" "$mid" "$LBA" 61
	verify "$f" $((mid + LBA)) "$LBA" 64
	p2z_umount
	info "ok: $g"
done
exit 0
