#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Layout: seq/0..N-1, cnv/ only with conventional zones, po2; names, counts,
# modes, owners, directory sizes, st_blocks, stable inode numbers.
. "$(dirname "$0")/common.sh"

p2z_init "layout: names, counts, modes, st_blocks, inode numbers"

# check_layout: the tree of the current mount against NSEQ, NCNV, CAP
check_layout()
{
	local want got i f files

	want=po2$'\n'seq
	[ "$NCNV" -gt 0 ] && want=cnv$'\n'$want
	got=$(ls "$MNT" | sort)
	assert_eq "$want" "$got" "root entries"
	want=$(seq 0 $((NSEQ - 1)))
	got=$(ls "$MNT/seq" | sort -n)
	assert_eq "$want" "$got" "seq/ names"
	stat_field "$MNT" mode
	assert_eq 0555 "$REPLY" "root mode"
	stat_field "$MNT/seq" mode
	assert_eq 0555 "$REPLY" "seq/ mode"
	stat_field "$MNT/seq" size
	assert_eq "$NSEQ" "$REPLY" "seq/ st_size (number of files)"
	if [ "$NCNV" -gt 0 ]; then
		want=$(seq 0 $((NCNV - 1)))
		got=$(ls "$MNT/cnv" | sort -n)
		assert_eq "$want" "$got" "cnv/ names"
		stat_field "$MNT/cnv" size
		assert_eq "$NCNV" "$REPLY" "cnv/ st_size (number of files)"
		stat_field "$MNT/cnv" mode
		assert_eq 0555 "$REPLY" "cnv/ mode"
	fi
	assert_eq "$NRZ" $((NSEQ + NCNV)) "seq + cnv files = zones"
	assert_size "$MNT/po2" $((NRZ * PO2)) "po2 view: zones x po2 zone size"
	files=po2
	for ((i = 0; i < NSEQ; i++)); do
		files="$files seq/$i"
	done
	for ((i = 0; i < NCNV; i++)); do
		files="$files cnv/$i"
	done
	INOS=
	# one stat per file: forks are slow in an emulated guest
	for f in $files; do
		stat_all "$MNT/$f"
		assert_eq reg "${ST[type]}" "$f type"
		assert_eq 0 "${ST[uid]}" "$f uid"
		assert_eq 0 "${ST[gid]}" "$f gid"
		assert_eq 0640 "${ST[mode]}" "$f mode"
		INOS="$INOS $f:${ST[ino]}"
		case $f in
		seq/*)
			assert_eq $((CAP / 512)) "${ST[blocks]}" "$f st_blocks x 512 = capacity"
			assert_eq 0 "${ST[size]}" "size of $f (fresh zone)"
			;;
		cnv/*)
			assert_eq "$CNV_CAP" "${ST[size]}" "size of $f (conventional file size = capacity)"
			assert_eq $((CNV_CAP / 512)) "${ST[blocks]}" "$f st_blocks x 512 = capacity"
			;;
		esac
	done
	# inode numbers are distinct
	got=$(echo "$INOS" | tr ' ' '\n' | grep . | cut -d: -f2 | sort | uniq -d)
	assert_eq "" "$got" "duplicate inode numbers"
}

if [ -n "$P2Z_TEST_DEV" ]; then
	cases=dev
else
	cases=
	for g in $P2Z_GEOMS; do
		cases="$cases $g:0"
	done
	cases="$cases $P2Z_GEOM:2 3M/3M/512:1"
fi
for c in $cases; do
	p2z_device "${c%:*}" "$P2Z_NR_ZONES" "${c##*:}"
	p2z_mount
	check_layout
	first=$INOS
	p2z_umount
	p2z_mount
	check_layout
	assert_eq "$first" "$INOS" "inode numbers after remount ($c)"
	p2z_umount
	info "ok: $c ($NSEQ seq, $NCNV cnv)"
done
exit 0
