#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# po2 view of conventional zones: the whole capacity (random writes show up
# at once), then zeros up to the po2 boundary; the gap refuses writes.
. "$(dirname "$0")/common.sh"

p2z_init "conventional zones in the po2 view"
need_emu "uses an image with conventional zones"
for g in 3M/3M/4096 96M/80M/512; do
	p2z_device "$g" 4 2
	p2z_mount
	p=$MNT/po2
	expect $((LBA * 2)) "write cnv/0" write "$MNT/cnv/0" $((LBA * 4)) $((LBA * 2)) -s 131
	expect $((LBA * 2)) "cnv/0 data in po2 ($g)" read "$p" $((LBA * 4)) $((LBA * 2)) -s 131
	verify_zeros "$p" 0 $((LBA * 4))
	verify_zeros "$p" $((LBA * 6)) $((1024 * 1024))
	expect $((PO2 - CNV_CAP)) "cnv/0's gap in po2 ($g)" \
		read "$p" "$CNV_CAP" $((PO2 - CNV_CAP)) -z
	# random writes through po2 into a conventional zone
	expect "$LBA" "po2 overwrite inside cnv/1 ($g)" \
		write "$p" $((PO2 + LBA * 7)) "$LBA" -s 135 -P 0
	expect "$LBA" "po2 write lands in cnv/1 ($g)" \
		read "$MNT/cnv/1" $((LBA * 7)) "$LBA" -s 135 -P 0
	expect "$LBA" "po2 write at cnv/1's start ($g)" write "$p" "$PO2" "$LBA" -s 136 -P 0
	verify "$MNT/cnv/1" 0 "$LBA" 136
	if [ "$CNV_CAP" -lt "$PO2" ]; then
		expect EIO "po2 write into cnv/1's gap ($g)" \
			write "$p" $((PO2 + CNV_CAP)) "$LBA"
		expect EIO "po2 write crossing into cnv/1's gap ($g)" \
			write "$p" $((PO2 + CNV_CAP - LBA)) $((LBA * 2))
	fi
	still_serving "$MNT/seq/0"
	p2z_umount
	info "ok: $g"
done
exit 0
