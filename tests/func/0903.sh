#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck disable=SC2012
# zonefs's inode numbers and statfs f_files. With N zones: the file of zone
# i (i >= 1) is inode i, the root N, cnv/ N + 1, seq/ N + 2, po2 N + 3, and
# the file of zone 0 (zonefs's superblock zone, and 0 is no inode number)
# N + 4. f_files = zone files + one per zone-type directory. readdir shows
# the same numbers (d_ino) and hides no entry; all survive a remount.
. "$(dirname "$0")/common.sh"

p2z_init "zonefs inode numbers and f_files"

# ino PATH EXPECTED
ino()
{
	assert_eq "$2" "$(stat -c %i "$1")" "stat -c %i ${1#"$MNT"/}"
}

# dino DIR NAME EXPECTED: the inode number readdir gives NAME in DIR
# (from LS[DIR], one listing per directory and tree check)
declare -A LS
dino()
{
	local got

	[ -n "${LS[$1]+set}" ] || LS[$1]=$(ls -ai1 "$1")
	got=$(awk -v n="$2" '$2 == n { print $1 }' <<<"${LS[$1]}")
	assert_eq "$3" "$got" "d_ino of $2 in ${1#"$MNT"}/"
}

# sample N: 1 .. N-1, all of them on small devices, else the first 16 and
# the last (a device may have thousands of zones)
sample()
{
	if [ "$1" -le 18 ]; then
		seq 1 $(($1 - 1))
	else
		seq 1 16
		echo $(($1 - 1))
	fi
}

check_tree()
{
	local n=$NRZ i what=$1

	LS=()
	ino "$MNT" "$n"
	ino "$MNT/seq" $((n + 2))
	ino "$MNT/po2" $((n + 3))
	dino "$MNT" seq $((n + 2))
	dino "$MNT" po2 $((n + 3))
	dino "$MNT/seq" . $((n + 2))
	if [ "$NCNV" -gt 0 ]; then
		ino "$MNT/cnv" $((n + 1))
		dino "$MNT" cnv $((n + 1))
		# cnv/0 is zone 0
		ino "$MNT/cnv/0" $((n + 4))
		dino "$MNT/cnv" 0 $((n + 4))
		for i in $(sample "$NCNV"); do
			ino "$MNT/cnv/$i" "$i"
			dino "$MNT/cnv" "$i" "$i"
		done
		ino "$MNT/seq/0" "$NCNV"
	else
		ino "$MNT/seq/0" $((n + 4))
		dino "$MNT/seq" 0 $((n + 4))
	fi
	for i in $(sample "$NSEQ"); do
		ino "$MNT/seq/$i" $((NCNV + i))
		dino "$MNT/seq" "$i" $((NCNV + i))
	done
	# no entry hidden (a d_ino of 0 would be, by glibc before 2.37)
	assert_eq "$NSEQ" "$(ls "$MNT/seq" | wc -l)" "entries of seq/ ($what)"
	assert_eq "$((NSEQ + NCNV + 3 + (NCNV > 0)))" \
		"$(find "$MNT" | wc -l)" "names found under the mount ($what)"
	# all distinct
	assert_eq "$(find "$MNT" | wc -l)" \
		"$(find "$MNT" -printf '%i\n' | sort -u | wc -l)" \
		"distinct inode numbers ($what)"
	assert_eq $((NSEQ + 1 + (NCNV > 0 ? NCNV + 1 : 0))) \
		"$(stat -f -c %c "$MNT")" "statfs f_files ($what)"
	statfs_field "$MNT" ffree
	assert_eq 0 "$REPLY" "statfs f_ffree ($what)"
}

if [ -n "$P2Z_TEST_DEV" ]; then
	# the device's own zones (seq/i is zone NCNV + i: conventional
	# zones come first on the devices tested)
	p2z_device
	p2z_mount
	check_tree "the device"
	p2z_umount
	p2z_mount
	check_tree "the device, remounted"
	p2z_umount
	exit 0
fi
for nc in 0 2; do
	p2z_device 96M/80M/4096 6 "$nc"
	p2z_mount
	check_tree "$nc conventional zones"
	p2z_umount
	p2z_mount
	check_tree "$nc conventional zones, remounted"
	p2z_umount
	info "ok: 6 zones, $nc conventional"
done
# one zone only: seq/0 is zone 0
p2z_device 3M/3M/512 1 0
p2z_mount
check_tree "a single zone"
p2z_umount
exit 0
