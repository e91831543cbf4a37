#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Writes larger than the device's zone append limit (and than FUSE's 1 MiB
# max_write) are split and land complete and in order.
. "$(dirname "$0")/common.sh"

p2z_init "writes split at the zone append limit"
need_emu "sets a tiny zone append limit"
for g in 96M/80M/4096 3M/3M/512; do
	IFS=/ read -r _ _ lba <<<"$g"
	for lim in "$lba" $((lba * 3)) 64K; do
		p2z_device "$g" 2 0 --max-append "$lim"
		p2z_mount
		assert_xattr "$MNT" user.dev.max_append "$(to_bytes "$lim")" "$g"
		f=$MNT/seq/0
		[ $((2560 * 1024 + lba * 5)) -le "$CAP" ] || fail "geometry $g too small"
		append "$f" 0 $((512 * 1024 + lba * 5)) 281
		expect $((2 * 1024 * 1024)) "2 MiB O_DIRECT write, limit $lim ($g)" \
			write "$f" $((512 * 1024 + lba * 5)) $((2 * 1024 * 1024)) -s 281 -d
		size=$((2560 * 1024 + lba * 5))
		assert_size "$f" "$size" "limit $lim ($g)"
		verify "$f" 0 "$size" 281
		p2z_umount
		p2z_mount
		verify "$f" 0 "$size" 281
		p2z_umount
		info "ok: $g, append limit $lim"
	done
done
exit 0
