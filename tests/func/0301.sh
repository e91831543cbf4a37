#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# po2 view: size = zones x po2 zone size; zone i at i x po2 size shows its
# data, then zeros up to the po2 boundary (unwritten part and the
# capacity-to-po2 gap), also in reads crossing zone boundaries.
. "$(dirname "$0")/common.sh"

p2z_init "po2 view: size and content"
MiB=$((1024 * 1024))

for g in $(p2z_geoms); do
	p2z_device "$g" 4 0
	p2z_mount
	p2z_reset_seq 0 1 2 3
	need_seq 4
	ZW=() ZSEED=()
	assert_size "$MNT/po2" $((NRZ * PO2)) "$g"
	# zones are seq/0..3 = device zones NCNV..NCNV+3
	z=$NCNV
	append "$MNT/seq/0" 0 $((MiB + LBA)) 111
	ZW[$z]=$((MiB + LBA)) ZSEED[$z]=111
	append "$MNT/seq/2" 0 "$LBA" 112
	expect OK "finish seq/2 ($g)" truncate "$MNT/seq/2" "$CAP"
	ZW[$((z + 2))]=$LBA ZSEED[$((z + 2))]=112
	expect "$CAP" "fill seq/3 ($g)" write "$MNT/seq/3" 0 "$CAP" -s 113 -b 4M
	ZW[$((z + 3))]=$CAP ZSEED[$((z + 3))]=113
	for i in 0 1 2 3; do
		b=$(((z + i) * PO2))
		w=${ZW[$((z + i))]:-0}
		xattr "$MNT/seq/$i" user.zone.po2_start
		assert_eq "$b" "$REPLY" "user.zone.po2_start of seq/$i ($g)"
		[ "$w" -gt 0 ] && expect "$w" "zone data of seq/$i in po2 ($g)" \
			read "$MNT/po2" "$b" "$w" -s "${ZSEED[$((z + i))]}" -P 0
		expect_po2 "$b" $((MiB < PO2 ? MiB : PO2)) "start of seq/$i, $g"
		# around the write pointer
		lo=$((w > MiB ? w - MiB : 0))
		expect_po2 $((b + lo)) $((2 * MiB < PO2 - lo ? 2 * MiB : PO2 - lo)) \
			"write pointer of seq/$i, $g"
		# capacity to gap
		if [ "$CAP" -lt "$PO2" ]; then
			lo=$((CAP > MiB ? CAP - MiB : 0))
			expect_po2 $((b + lo)) $((PO2 - lo < 2 * MiB ? PO2 - lo : 2 * MiB)) \
				"capacity/gap boundary of seq/$i, $g"
			expect_po2 $((b + PO2 - LBA)) "$LBA" "last LBA of the gap of seq/$i, $g"
		fi
		# across the boundary into the next zone
		# (on a real device only into zones this test reset)
		if [ $((z + i + 1)) -lt "$NRZ" ] &&
			{ [ "$EMU_GEOM" = 1 ] || [ "$i" -lt 3 ]; }; then
			expect_po2 $((b + PO2 - MiB)) $((2 * MiB)) \
				"boundary seq/$i -> next zone, $g"
			expect_po2 $((b + PO2 - LBA)) $((2 * LBA)) \
				"one LBA each side of the boundary after seq/$i, $g"
		fi
	done
	# small geometries: the whole view in one read
	if [ "$EMU_GEOM" = 1 ] && [ $((NRZ * PO2)) -le $((64 * MiB)) ]; then
		expect_po2 0 $((NRZ * PO2)) "whole view, $g"
		expect $((NRZ * PO2)) "whole view in one pread ($g)" \
			read "$MNT/po2" 0 $((NRZ * PO2)) -f "$WORK/po2.ref" -b $((NRZ * PO2))
	fi
	expect 0 "read at the end of the po2 view ($g)" read "$MNT/po2" $((NRZ * PO2)) "$LBA"
	expect "$LBA" "read straddling the end of the po2 view ($g)" \
		read "$MNT/po2" $((NRZ * PO2 - LBA)) $((LBA * 4))
	p2z_umount
	info "ok: $g"
done
exit 0
