#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Mounting writes nothing: the image is byte-identical after a mount, reads
# of every file, and an unmount.
. "$(dirname "$0")/common.sh"

p2z_init "mount and reads leave the device untouched"
need_emu "compares the image file before and after"
need_prog sha256sum

p2z_device 3M/3M/4096 8 1
# give the device some state first: data in two zones, one full
p2z_mount
append "$MNT/seq/0" 0 $((64 * 1024)) 1
expect OK "finish seq/1" truncate "$MNT/seq/1" "$CAP"
p2z_umount
# opening the emulated device is a controller reset: open zones become
# closed, as on a ZNS drive; one idle mount lets that happen first
p2z_mount
p2z_umount

before=$(sha256sum <"$DEV")
p2z_mount
cat "$MNT"/seq/* "$MNT"/cnv/* "$MNT/po2" >/dev/null || fail "reading every file"
ls -lR "$MNT" >/dev/null || fail "ls -lR"
run_tio listxattr "$MNT/seq/0"
p2z_umount
after=$(sha256sum <"$DEV")
assert_eq "$before" "$after" "image sha256 after mount, reads, unmount"
exit 0
