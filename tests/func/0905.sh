#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon killed (SIGKILL): the mount point and its files answer ENOTCONN,
# umount -l detaches the dead mount, a fresh mount at the same path works,
# and every acknowledged byte is there.
. "$(dirname "$0")/common.sh"

p2z_init "killed daemon: ENOTCONN, umount -l, remount, data intact"
p2z_device
p2z_mount
p2z_reset_seq 0 1
append "$MNT/seq/0" 0 $((3 * LBA)) 81
append "$MNT/seq/1" 0 "$LBA" 82
exec 5<"$MNT/seq/0" || fail "open seq/0"

kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
is_mounted "$MNT" || fail "the dead mount vanished by itself"
# (the root's attributes may come from the kernel's cache: no stat of it)
expect ENOTCONN "statfs of the mount point of a dead daemon" statfs "$MNT"
out=$(ls "$MNT" 2>&1) && fail "ls of the dead mount succeeded: $out"
case $out in
*"Transport endpoint is not connected"*) ;;
*) fail "ls of the dead mount: '$out', not ENOTCONN" ;;
esac
# A name the kernel has not cached: zone files it has seen listed (device
# mode lists seq/ at the first mount; readdirplus then caches them all)
# are answered from its caches, as on any FUSE filesystem.
expect ENOTCONN "lookup the kernel cannot answer from its cache" stat "$MNT/seq/nozone"
expect ENOTCONN "read through a descriptor opened before the kill" \
	read fd:5 0 "$LBA"
expect ENOTCONN "write to a zone file" write "$MNT/seq/0" $((3 * LBA)) "$LBA"
exec 5<&-
umount -l "$MNT" || fail "umount -l of the dead mount"
is_mounted "$MNT" && fail "$MNT still mounted after umount -l"

p2z_mount
assert_size "$MNT/seq/0" $((3 * LBA)) "after the kill"
assert_size "$MNT/seq/1" "$LBA" "after the kill"
verify "$MNT/seq/0" 0 $((3 * LBA)) 81
verify "$MNT/seq/1" 0 "$LBA" 82
still_serving "$MNT/seq/0"
p2z_umount
exit 0
