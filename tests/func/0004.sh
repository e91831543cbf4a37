#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Remount shows the same sizes and bytes, for every geometry.
. "$(dirname "$0")/common.sh"

p2z_init "remount keeps sizes, bytes and conditions"

for g in $(p2z_geoms); do
	p2z_device "$g" 4 0
	p2z_mount
	p2z_reset_seq 0 1 2 3
	# seq/0: a few LBAs, seq/1: 2 MiB + 1 LBA, seq/2: finished, seq/3: empty
	append "$MNT/seq/0" 0 $((LBA * 5)) 11
	append "$MNT/seq/1" 0 $((2 * 1024 * 1024 + LBA)) 12
	append "$MNT/seq/2" 0 "$LBA" 13
	expect OK "finish seq/2" truncate "$MNT/seq/2" "$CAP"
	sums=$(cd "$MNT/seq" && sha256sum 0 1 2 3)
	p2z_umount
	p2z_mount
	assert_size "$MNT/seq/0" $((LBA * 5)) "$g, remounted"
	assert_size "$MNT/seq/1" $((2 * 1024 * 1024 + LBA)) "$g, remounted"
	assert_size "$MNT/seq/2" "$CAP" "$g, remounted"
	assert_size "$MNT/seq/3" 0 "$g, remounted"
	verify "$MNT/seq/0" 0 $((LBA * 5)) 11
	verify "$MNT/seq/1" 0 $((2 * 1024 * 1024 + LBA)) 12
	verify "$MNT/seq/2" 0 "$LBA" 13
	assert_eq "$sums" "$(cd "$MNT/seq" && sha256sum 0 1 2 3)" "sha256 of seq/0..3 ($g)"
	assert_cond "$MNT/seq/2" full "$g, remounted"
	assert_cond "$MNT/seq/3" empty "$g, remounted"
	# appends continue where they stopped
	append "$MNT/seq/0" $((LBA * 5)) "$LBA" 11
	verify "$MNT/seq/0" 0 $((LBA * 6)) 11
	p2z_umount
	info "ok: $g"
done
exit 0
