#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A po2 write that fails changes the zone's own file when the errors=
# policy acts: zone-offline empties it and takes all its permissions,
# zone-ro takes its write permissions. The kernel caches an idle zone
# file's attributes (and pages) for long: the daemon must drop them, as it
# does after a successful po2 write, before the failing write returns.
. "$(dirname "$0")/common.sh"

need_emu "injects faults"
p2z_init "po2 write failures drop the zone file's cached size and mode"

run_tio_emu()
{
	local out

	out=$("$EMU" "$@" 2>&1) || fail "po2zfs-emu $* failed: $out"
}

for mode in zone-offline zone-ro; do
	p2z_device "$P2Z_GEOM" 4 0
	p2z_mount "errors=$mode,perm=0640"
	f=$MNT/seq/1
	append "$f" 0 $((LBA * 2)) 81
	# Remounted, so that no file is (still) counted open for writing: the
	# attributes are then cached with a long timeout (fs.c,
	# p2z_fs_attr_timeout()), as are the pages of a buffered reader.
	p2z_umount
	p2z_mount "errors=$mode,perm=0640"
	# (a read marks the atime stale: the stat comes after it)
	verify "$f" 0 $((LBA * 2)) 81
	assert_size "$f" $((LBA * 2)) "$mode, before the fault"
	stat_field "$f" mode
	assert_eq 0640 "$REPLY" "mode of seq/1 ($mode, before the fault)"
	run_tio_emu set-zone "$DEV" 1 fail-next-io
	expect EIO "po2 write hitting the fault ($mode)" write "$MNT/po2" \
		$((PO2 + LBA * 2)) "$LBA" -s 81 -P $((LBA * 2))
	case $mode in
	zone-offline)
		assert_size "$f" 0 "$mode, right after the failed po2 write"
		stat_field "$f" mode
		assert_eq 0000 "$REPLY" "mode of seq/1 ($mode, after the failed po2 write)"
		expect EPERM "read of the offline file ($mode)" read "$f" 0 "$LBA"
		;;
	zone-ro)
		assert_size "$f" $((LBA * 2)) "$mode, right after the failed po2 write"
		stat_field "$f" mode
		assert_eq 0440 "$REPLY" "mode of seq/1 ($mode, after the failed po2 write)"
		verify "$f" 0 $((LBA * 2)) 81
		;;
	esac
	p2z_umount
	info "ok: $mode"
done
exit 0
