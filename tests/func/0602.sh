#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# -o ro: reads work, every write, truncate and O_TRUNC is EROFS, statfs has
# the read-only flag, the device is not touched.
. "$(dirname "$0")/common.sh"

p2z_init "ro mount option"
p2z_device
p2z_mount
p2z_reset_seq 0 1
append "$MNT/seq/0" 0 $((LBA * 2)) 211
p2z_umount
sum=
[ -z "$P2Z_TEST_DEV" ] && command -v sha256sum >/dev/null &&
	sum=$(sha256sum <"$DEV")
p2z_mount ro
statfs_field "$MNT" ro
assert_eq 1 "$REPLY" "statfs read-only flag"
verify "$MNT/seq/0" 0 $((LBA * 2)) 211
expect EROFS "append on a ro mount" write "$MNT/seq/0" $((LBA * 2)) "$LBA"
expect EROFS "write to an empty zone on a ro mount" write "$MNT/seq/1" 0 "$LBA"
expect EROFS "po2 write on a ro mount" write "$MNT/po2" "$PO2" "$LBA"
expect EROFS "reset on a ro mount" truncate "$MNT/seq/0" 0
expect EROFS "finish on a ro mount" truncate "$MNT/seq/1" "$CAP"
expect EROFS "O_TRUNC open on a ro mount" open "$MNT/seq/0" w,trunc
expect EROFS "O_RDWR open on a ro mount" open "$MNT/seq/0" rw
assert_size "$MNT/seq/0" $((LBA * 2)) "ro mount"
verify "$MNT/seq/0" 0 $((LBA * 2)) 211
p2z_umount
[ -n "$sum" ] && assert_eq "$sum" "$(sha256sum <"$DEV")" "image after a ro mount"
p2z_mount
still_serving "$MNT/seq/0"
p2z_umount
exit 0
