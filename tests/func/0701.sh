#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# fio sequential writes, ioengine=libaio, direct=1, iodepth 8, bs 128k and 1M,
# on zone files: data lands byte-exact and in order (crc32c verify with
# offset headers), sizes are exact, and the data survives a remount.
. "$(dirname "$0")/common.sh"

p2z_init "fio libaio iodepth 8 sequential writes"
need_fio_engine libaio
geoms="$P2Z_GEOM 64M/48M/512"
[ -n "$P2Z_TEST_DEV" ] && geoms=dev

for g in $geoms; do
	p2z_device "$g" 4 0
	p2z_mount
	p2z_reset_seq 0 1
	size=$((CAP < 32 * 1024 * 1024 ? CAP : 32 * 1024 * 1024))
	s0=$((size / (128 * 1024) * 128 * 1024))
	# seq/0 takes the final append (still_serving): keep it below capacity
	[ "$s0" -lt "$CAP" ] || s0=$((s0 - 128 * 1024))
	s1=$((size / (1024 * 1024) * 1024 * 1024))
	fio_seq_write "$MNT/seq/0" libaio 128k "$s0"
	assert_size "$MNT/seq/0" "$s0" "after fio bs=128k ($g)"
	fio_seq_write "$MNT/seq/1" libaio 1M "$s1"
	assert_size "$MNT/seq/1" "$s1" "after fio bs=1M ($g)"
	p2z_umount
	p2z_mount
	assert_size "$MNT/seq/0" "$s0" "remounted ($g)"
	assert_size "$MNT/seq/1" "$s1" "remounted ($g)"
	fio_verify_only "$MNT/seq/0" libaio 128k "$s0"
	fio_verify_only "$MNT/seq/1" libaio 1M "$s1"
	# a full zone by fio: writing exactly the capacity
	if [ "$CAP" -le $((48 * 1024 * 1024)) ]; then
		expect OK "reset seq/1 ($g)" truncate "$MNT/seq/1" 0
		fio_seq_write "$MNT/seq/1" libaio 1M "$CAP"
		assert_size "$MNT/seq/1" "$CAP" "fio to capacity ($g)"
		assert_cond "$MNT/seq/1" full "fio to capacity ($g)"
	fi
	still_serving "$MNT/seq/0"
	p2z_umount
	info "ok: $g"
done
exit 0
