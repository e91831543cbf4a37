#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# mount.po2zfs DEVICE DIR -o OPTS (the mount(8) helper convention)
# daemonizes, returns 0 once mounted, and the daemon exits on unmount.
. "$(dirname "$0")/common.sh"

p2z_init "mount.po2zfs helper: daemonizes, serves, exits on unmount"
[ -x "$MOUNT_P2Z" ] || fail "$MOUNT_P2Z missing (the build makes the symlink)"

p2z_device
o=errors=remount-ro
[ -n "$P2Z_TEST_BACKEND" ] && o=$o,backend=$P2Z_TEST_BACKEND
out=$("$MOUNT_P2Z" "$DEV" "$MNT" -o "$o" 2>&1) ||
	fail "mount.po2zfs exited $?: $out"
wait_mounted
p2z_mounted "$o"
p2z_reset_seq 0
append "$MNT/seq/0" 0 $((LBA * 2)) 5
verify "$MNT/seq/0" 0 $((LBA * 2)) 5
# the daemon is the one process holding /dev/fuse for this mount; find it
# by its unique mount point to check it goes away after the unmount
pid=$(pgrep -f -- " $MNT") || fail "no daemon process found for $MNT"
[ "$(echo "$pid" | wc -l)" = 1 ] || fail "several processes for $MNT: $pid"
umount "$MNT" || fail "umount"
for ((i = 0; i < 400; i++)); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.025
done
if kill -0 "$pid" 2>/dev/null; then
	kill -KILL "$pid"
	fail "daemon $pid still running 10 s after unmount"
fi
is_mounted "$MNT" && fail "still mounted"
exit 0
