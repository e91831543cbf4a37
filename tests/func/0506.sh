#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Zones already read-only or offline at mount are shown as zonefs shows
# them: read-only = empty file (its write pointer is not valid), no write
# permission, writes EPERM; offline = empty, no permissions, reads and
# writes EPERM; the other zones work normally.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/errors.sh"

p2z_init "read-only and offline zones at mount"
need_emu "sets zone conditions with po2zfs-emu set-zone"
p2z_device "$P2Z_GEOM" 4 0
p2z_mount
append "$MNT/seq/1" 0 $((LBA * 2)) 191
append "$MNT/seq/2" 0 $((LBA * 2)) 192
p2z_umount
run_tio_emu set-zone "$DEV" 1 read-only
run_tio_emu set-zone "$DEV" 2 offline
p2z_mount
assert_cond "$MNT/seq/1" read-only "at mount"
assert_size "$MNT/seq/1" 0 "read-only zone at mount"
mode_bits_none "$MNT/seq/1" 0222 "read-only zone at mount"
expect EPERM "write to a read-only zone" write "$MNT/seq/1" 0 "$LBA"
expect EPERM "reset of a read-only zone" truncate "$MNT/seq/1" 0
assert_cond "$MNT/seq/2" offline "at mount"
assert_size "$MNT/seq/2" 0 "offline zone at mount"
mode_bits_none "$MNT/seq/2" 0777 "offline zone at mount"
expect EPERM "read of an offline zone" read "$MNT/seq/2" 0 "$LBA"
expect EPERM "write to an offline zone" write "$MNT/seq/2" 0 "$LBA"
expect EPERM "reset of an offline zone" truncate "$MNT/seq/2" 0
# the po2 view over these zones: whatever it answers, the daemon survives
run_tio read "$MNT/po2" $((2 * PO2)) "$LBA"
run_tio write "$MNT/po2" $((2 * PO2)) "$LBA"
assert_ne "$LBA" "$TIO_OUT" "po2 write into an offline zone"
# good zones are fine
append "$MNT/seq/0" 0 "$LBA" 193
verify "$MNT/seq/0" 0 "$LBA" 193
still_serving "$MNT/seq/3"
p2z_umount
exit 0
