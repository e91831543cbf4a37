#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# mount.po2zfs -f (fake) opens the device read-only and writes nothing: a
# zone left explicitly open by a crashed daemon stays explicitly open (a
# real mount would close it) and the image's bytes do not change.
. "$(dirname "$0")/common.sh"

p2z_init "mount.po2zfs -f changes nothing, not even a stale open zone"
need_emu "reads the image's bytes and zone table"
need_prog sha256sum
[ -x "$MOUNT_P2Z" ] || fail "$MOUNT_P2Z missing (the build makes the symlink)"
p2z_device 3M/3M/4096 4 0 --max-open 2 --max-active 3

# A daemon killed while seq/1 is open for writing under explicit-open
# leaves zone 1 explicitly open in the image.
p2z_mount explicit-open
append "$MNT/seq/1" 0 "$LBA" 81
exec 5>>"$MNT/seq/1" || fail "open seq/1 for writing"
assert_cond "$MNT/seq/1" explicit-open "while open for writing"
p2z_kill_daemon
exec 5>&-

# report IMAGE ZONE: the zone's condition as po2zfs-emu report prints it
zone_cond()
{
	"$EMU" report "$DEV" | awk -v z="$1" '$1 == z && $2 == "seq" { print $3 }'
}

[ "$(zone_cond 1)" = explicit-open ] ||
	fail "setup: zone 1 is '$(zone_cond 1)', not explicit-open: $("$EMU" report "$DEV")"
before=$(sha256sum <"$DEV")
for opts in "" ",ro" ",explicit-open"; do
	out=$("$MOUNT_P2Z" "$DEV" "$MNT" -f -o "defaults$opts" 2>&1) ||
		fail "mount.po2zfs -f -o defaults$opts: exit $?: $out"
	is_mounted "$MNT" && fail "-f mounted"
	assert_eq "$before" "$(sha256sum <"$DEV")" "image bytes after -f -o defaults$opts"
	assert_eq explicit-open "$(zone_cond 1)" "zone 1 after -f -o defaults$opts"
done

# A real mount then closes the stale open zone, as zonefs does.
p2z_mount
assert_cond "$MNT/seq/1" closed "after a real mount"
verify "$MNT/seq/1" 0 "$LBA" 81
p2z_umount
exit 0
