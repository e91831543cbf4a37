#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# xattrs against `po2zfs-emu report`: user.zone.* of every zone file (index,
# type, cond, start, wp, capacity, po2_start, size) in several conditions,
# and user.dev.* of the root.
. "$(dirname "$0")/common.sh"

p2z_init "xattrs match po2zfs-emu report"
need_emu "compares with po2zfs-emu report"

# report_geom KEY: REPLY = the number (or word) after "KEY:" in the header
report_geom()
{
	REPLY=$(awk -v k="$1" -F': *' '$1 == k { split($2, a, " "); print a[1]; exit }' "$WORK/report")
	[ -n "$REPLY" ] || fail "no '$1' in po2zfs-emu report"
	[ "$REPLY" = unlimited ] && REPLY=0
}

# check_files: every zone file's xattrs against the report rows
check_files()
{
	local f idx type cond start wp cap po2s rest n=0

	while read -r idx type cond start wp cap po2s rest; do
		if [ "$type" = cnv ]; then
			f=$MNT/cnv/$idx
		else
			f=$MNT/seq/$((idx - NCNV))
		fi
		assert_xattr "$f" user.zone.index "$idx"
		assert_xattr "$f" user.zone.type "$type"
		assert_xattr "$f" user.zone.cond "$cond"
		assert_xattr "$f" user.zone.start "$start"
		assert_xattr "$f" user.zone.capacity "$cap"
		assert_xattr "$f" user.zone.po2_start "$po2s"
		assert_xattr "$f" user.zone.size "$ZSIZE"
		assert_eq $((idx * PO2)) "$po2s" "report po2 start of zone $idx"
		assert_eq $((idx * ZSIZE)) "$start" "report start of zone $idx"
		if [ "$type" = seq ] && [ "$cond" != read-only ] &&
			[ "$cond" != offline ]; then
			assert_xattr "$f" user.zone.wp "$wp" "report wp"
			assert_size "$f" "$wp" "report wp"
		fi
		[ "$type" = cnv ] && assert_size "$f" "$cap" "conventional"
		n=$((n + 1))
	done < <(awk '$1 ~ /^[0-9]+$/ && NF >= 7' "$WORK/report")
	assert_eq "$NRZ" "$n" "zone rows in the report"
}

check_root()
{
	local k

	assert_xattr "$MNT" user.dev.backend emu
	for k in "lba size:lba_size" "zone size:zone_size" \
		"po2 zone size:po2_zone_size" "zones:nr_zones" "max open:max_open" \
		"max active:max_active" "max append:max_append"; do
		report_geom "${k%%:*}"
		assert_xattr "$MNT" "user.dev.${k#*:}" "$REPLY" "report '${k%%:*}'"
	done
}

for g in "$P2Z_GEOM" 3M/3M/512 64M/48M/4096; do
	p2z_device "$g" 7 1 --max-open 3 --max-active 5 --max-append 256K
	"$EMU" set-zone "$DEV" 5 read-only >/dev/null || fail "set-zone 5 read-only"
	"$EMU" set-zone "$DEV" 6 offline >/dev/null || fail "set-zone 6 offline"
	p2z_mount explicit-open
	append "$MNT/seq/0" 0 $((LBA * 3)) 261
	expect OK "finish seq/1" truncate "$MNT/seq/1" "$CAP"
	append "$MNT/seq/2" 0 "$LBA" 262
	exec 5>>"$MNT/seq/3" || fail "hold seq/3 open"
	expect "$LBA" "append to the held seq/3" write fd:5 0 "$LBA" -s 263
	expect "$LBA" "append to cnv/0" write "$MNT/cnv/0" "$LBA" "$LBA" -s 264
	"$EMU" report "$DEV" >"$WORK/report" 2>&1 || fail "po2zfs-emu report: $(cat "$WORK/report")"
	check_files
	check_root
	assert_cond "$MNT/seq/1" full
	assert_cond "$MNT/seq/3" explicit-open "held for writing"
	assert_cond "$MNT/seq/4" read-only "set before the mount"
	assert_cond "$MNT/seq/5" offline "set before the mount"
	assert_xattr "$MNT" user.dev.max_open 3
	assert_xattr "$MNT" user.dev.max_active 5
	assert_xattr "$MNT" user.dev.max_append $((256 * 1024))
	exec 5>&-
	# after the last close and a reset the report and the xattrs agree again
	expect OK "reset seq/0" truncate "$MNT/seq/0" 0
	"$EMU" report "$DEV" >"$WORK/report" 2>&1 || fail "po2zfs-emu report"
	check_files
	assert_cond "$MNT/seq/0" empty "after reset"
	assert_cond "$MNT/seq/3" closed "after the last close"
	p2z_umount
	info "ok: $g"
done
# no limits: 0
p2z_device 3M/3M/4096 2 0
p2z_mount
assert_xattr "$MNT" user.dev.max_open 0 "no open limit"
assert_xattr "$MNT" user.dev.max_active 0 "no active limit"
"$EMU" report "$DEV" >"$WORK/report" 2>&1 || fail "po2zfs-emu report"
check_root
p2z_umount
exit 0
