#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# po2 view writes: at a zone's write pointer they append to that zone;
# elsewhere EINVAL; any write touching a capacity-to-po2 gap EIO (and
# writes nothing).
. "$(dirname "$0")/common.sh"

p2z_init "po2 view writes: at the write pointer only, EIO in gaps"

for g in $(p2z_geoms); do
	p2z_device "$g" 4 0
	p2z_mount
	p2z_reset_seq 0 1 2
	need_seq 3
	p=$MNT/po2
	b0=$((NCNV * PO2))
	b1=$(((NCNV + 1) * PO2))
	b2=$(((NCNV + 2) * PO2))
	# appends through po2 land in seq/0
	expect "$LBA" "po2 write at seq/0's write pointer 0 ($g)" \
		write "$p" "$b0" "$LBA" -s 121 -P 0
	expect $((1024 * 1024)) "po2 write at seq/0's write pointer ($g)" \
		write "$p" $((b0 + LBA)) $((1024 * 1024)) -s 121 -P "$LBA"
	w=$((LBA + 1024 * 1024))
	assert_size "$MNT/seq/0" "$w" "after po2 writes ($g)"
	verify "$MNT/seq/0" 0 "$w" 121
	expect "$w" "po2 read of seq/0's data ($g)" read "$p" "$b0" "$w" -s 121 -P 0
	# and a zone-file append is visible through po2 at once
	append "$MNT/seq/0" "$w" "$LBA" 121
	w=$((w + LBA))
	expect "$w" "po2 read after a zone-file append ($g)" read "$p" "$b0" "$w" -s 121 -P 0
	# not at the write pointer
	expect EINVAL "po2 write at seq/0's start ($g)" write "$p" "$b0" "$LBA"
	expect EINVAL "po2 write past seq/0's wp ($g)" write "$p" $((b0 + w + LBA)) "$LBA"
	expect EINVAL "po2 write into empty seq/1 past its start ($g)" \
		write "$p" $((b1 + LBA)) "$LBA"
	expect EINVAL "unaligned po2 write ($g)" write "$p" $((b0 + w + 1)) "$LBA"
	expect EINVAL "po2 write of a partial LBA ($g)" write "$p" $((b0 + w)) 100
	assert_size "$MNT/seq/0" "$w" "after refused po2 writes ($g)"
	if [ "$CAP" -lt "$PO2" ]; then
		expect EIO "po2 write at the start of seq/0's gap ($g)" \
			write "$p" $((b0 + CAP)) "$LBA"
		expect EIO "po2 write at the end of seq/0's gap ($g)" \
			write "$p" $((b0 + PO2 - LBA)) "$LBA"
		expect EIO "po2 write from seq/0's gap into seq/1 ($g)" \
			write "$p" $((b1 - LBA)) $((2 * LBA))
		# seq/1 filled to one LBA below capacity via its file
		expect $((CAP - LBA)) "fill seq/1 ($g)" \
			write "$MNT/seq/1" 0 $((CAP - LBA)) -s 122 -b 4M
		expect EIO "po2 write at seq/1's wp crossing into the gap ($g)" \
			write "$p" $((b1 + CAP - LBA)) $((2 * LBA)) -s 122 -P $((CAP - LBA))
		assert_size "$MNT/seq/1" $((CAP - LBA)) "nothing written by a gap write ($g)"
		expect "$LBA" "po2 write of seq/1's last LBA ($g)" \
			write "$p" $((b1 + CAP - LBA)) "$LBA" -s 122 -P $((CAP - LBA))
		assert_size "$MNT/seq/1" "$CAP" "seq/1 full via po2 ($g)"
		assert_cond "$MNT/seq/1" full "($g)"
		expect EIO "po2 write after a full zone's capacity ($g)" \
			write "$p" $((b1 + CAP)) "$LBA"
		verify "$MNT/seq/1" 0 "$CAP" 122
		expect $((PO2 - CAP)) "seq/1's gap still reads as zeros ($g)" \
			read "$p" $((b1 + CAP)) $((PO2 - CAP)) -z
	fi
	# an untouched zone stays empty
	assert_size "$MNT/seq/2" 0 "($g)"
	expect "$LBA" "po2 write at seq/2's start ($g)" write "$p" "$b2" "$LBA" -s 123 -P 0
	verify "$MNT/seq/2" 0 "$LBA" 123
	still_serving "$MNT/seq/0"
	p2z_umount
	info "ok: $g"
done
exit 0
