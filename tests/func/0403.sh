#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# statfs like zonefs: blocks = sum of zone capacities, free = capacity not
# yet written in sequential zones (a finished zone has none), bavail =
# bfree; the numbers follow appends, finish and reset exactly.
. "$(dirname "$0")/common.sh"

p2z_init "statfs numbers"
geoms="$P2Z_GEOM 3M/3M/512 64M/48M/4096"
[ -n "$P2Z_TEST_DEV" ] && geoms=dev
MiB=$((1024 * 1024))

# sums over the zone files: TOTAL (capacities), FREE (seq capacity - size)
sum_zones()
{
	local f cap size

	TOTAL=0 FREE=0
	for f in "$MNT"/seq/* "$MNT"/cnv/*; do
		[ -e "$f" ] || continue
		xattr "$f" user.zone.capacity
		cap=$REPLY
		TOTAL=$((TOTAL + cap))
		case $f in
		*/seq/*)
			stat_field "$f" size
			size=$REPLY
			xattr "$f" user.zone.cond
			case $REPLY in
			full | read-only | offline) size=$cap ;;
			esac
			FREE=$((FREE + cap - size)) ;;
		esac
	done
}

# statfs_bytes: S_TOTAL S_FREE S_AVAIL in bytes
statfs_bytes()
{
	local fr

	statfs_field "$MNT" frsize
	fr=$REPLY
	[ "$fr" -gt 0 ] || fail "statfs frsize $fr"
	statfs_field "$MNT" blocks
	S_TOTAL=$((REPLY * fr))
	statfs_field "$MNT" bfree
	S_FREE=$((REPLY * fr))
	statfs_field "$MNT" bavail
	S_AVAIL=$((REPLY * fr))
}

# check FREE_DELTA WHAT: free space moved by FREE_DELTA since the last check
check()
{
	statfs_bytes
	assert_eq "$TOTAL" "$S_TOTAL" "statfs total = sum of capacities ($2)"
	assert_eq $((LAST_FREE + $1)) "$S_FREE" "statfs free bytes ($2)"
	assert_eq "$S_FREE" "$S_AVAIL" "statfs bavail = bfree ($2)"
	LAST_FREE=$S_FREE
}

for g in $geoms; do
	p2z_device "$g" 6 0
	p2z_mount
	p2z_reset_seq 0 1
	sum_zones
	if [ "${EMU_GEOM:-1}" = 1 ]; then
		assert_eq $((NSEQ * CAP)) "$TOTAL" "capacities of a fresh image ($g)"
		assert_eq "$TOTAL" "$FREE" "free space of a fresh image ($g)"
	fi
	statfs_bytes
	assert_eq "$TOTAL" "$S_TOTAL" "statfs total = sum of capacities ($g)"
	[ "$NCNV" = 0 ] && assert_eq "$FREE" "$S_FREE" "statfs free = unwritten capacity ($g)"
	LAST_FREE=$S_FREE
	statfs_field "$MNT" namemax
	[ "$REPLY" -ge 3 ] || fail "statfs namemax $REPLY ($g)"
	statfs_field "$MNT" ro
	assert_eq 0 "$REPLY" "read-only flag of a read-write mount ($g)"
	append "$MNT/seq/0" 0 "$MiB" 141
	check $((-MiB)) "1 MiB appended, $g"
	append "$MNT/seq/1" 0 $((LBA * 8)) 142
	check $((-LBA * 8)) "8 LBAs appended, $g"
	expect OK "finish seq/1 ($g)" truncate "$MNT/seq/1" "$CAP"
	check $((LBA * 8 - CAP)) "seq/1 finished, $g"
	expect OK "reset seq/0 ($g)" truncate "$MNT/seq/0" 0
	check "$MiB" "seq/0 reset, $g"
	expect EINVAL "refused write ($g)" write "$MNT/seq/1" 0 "$LBA"
	check 0 "after a refused write, $g"
	if command -v stat >/dev/null && stat -f -c %S "$MNT" >/dev/null 2>&1; then
		assert_eq "$S_TOTAL" $(($(stat -f -c '%b * %S' "$MNT"))) "stat -f total ($g)"
		assert_eq "$S_FREE" $(($(stat -f -c '%f * %S' "$MNT"))) "stat -f free ($g)"
	fi
	p2z_umount
	p2z_mount
	check 0 "remounted, $g"
	p2z_umount
	info "ok: $g"
done
# conventional zones count in the total
if [ -z "$P2Z_TEST_DEV" ]; then
	p2z_device "$P2Z_GEOM" 8 2
	p2z_mount
	statfs_bytes
	assert_eq $((6 * CAP + 2 * CNV_CAP)) "$S_TOTAL" \
		"statfs total with 2 conventional zones"
	p2z_umount
fi
exit 0
