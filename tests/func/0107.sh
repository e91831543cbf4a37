#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# fsync/fdatasync succeed; a read-only shared mapping reads the zone data;
# a writable shared mapping of a sequential file fails.
. "$(dirname "$0")/common.sh"

p2z_init "fsync, mmap read, no writable shared mapping"
p2z_device
p2z_mount
p2z_reset_seq 0
f=$MNT/seq/0
append "$f" 0 $((LBA * 8)) 51
expect OK "fsync after appends" fsync "$f"
expect $((LBA * 8)) "append with fsync" write "$f" $((LBA * 8)) $((LBA * 8)) -s 51 -S
expect OK "read-only shared mapping shows the data" mmap "$f" ro 51
run_tio mmap "$f" rw
assert_ne OK "$TIO_OUT" "writable shared mapping of a sequential file"
verify "$f" 0 $((LBA * 16)) 51
still_serving "$f"
p2z_umount
exit 0
