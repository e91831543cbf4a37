#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Offset or length not a multiple of the LBA size: EINVAL (512 and 4096-byte
# LBAs), buffered or direct; nothing is written.
. "$(dirname "$0")/common.sh"

p2z_init "unaligned offset or length: EINVAL"

for g in $(p2z_geoms 96M/80M/512 96M/80M/4096); do
	p2z_device "$g" 2 0
	p2z_mount
	p2z_reset_seq 0
	f=$MNT/seq/0
	append "$f" 0 "$LBA" 4
	for len in 1 100 $((LBA - 1)) $((LBA + 1)) $((LBA + 512 / 2)); do
		expect EINVAL "write of $len bytes at the write pointer ($g)" \
			write "$f" "$LBA" "$len"
	done
	if [ "$LBA" -gt 512 ]; then
		# 512-byte multiples are not enough on 4K-LBA devices
		expect EINVAL "write of 512 bytes, LBA $LBA ($g)" write "$f" "$LBA" 512
		expect EINVAL "write of 3 x 512 bytes, LBA $LBA ($g)" write "$f" "$LBA" 1536
	fi
	for ofs in $((LBA + 1)) $((LBA + 256)) $((LBA - 1)); do
		expect EINVAL "write of $LBA bytes at unaligned $ofs ($g)" \
			write "$f" "$ofs" "$LBA"
	done
	assert_size "$f" "$LBA" "after unaligned writes ($g)"
	verify "$f" 0 "$LBA" 4
	still_serving "$f"
	p2z_umount
	info "ok: $g"
done
exit 0
