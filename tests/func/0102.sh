#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Writes anywhere but at the write pointer: EINVAL, nothing changes.
. "$(dirname "$0")/common.sh"

p2z_init "write at a wrong offset: EINVAL"
p2z_device
p2z_mount
p2z_reset_seq 0 1
f=$MNT/seq/0

expect EINVAL "write at LBA 1 of an empty zone" write "$f" "$LBA" "$LBA"
expect EINVAL "write 1 MiB into an empty zone" write "$f" $((1024 * 1024)) "$LBA"
assert_size "$f" 0 "after refused writes"
append "$f" 0 $((LBA * 4)) 3
for ofs in 0 "$LBA" $((LBA * 3)) $((LBA * 5)) $((LBA * 100)) $((CAP - LBA)); do
	expect EINVAL "write at $ofs with the write pointer at $((LBA * 4))" \
		write "$f" "$ofs" "$LBA" -s 99
done
assert_size "$f" $((LBA * 4)) "after refused writes"
verify "$f" 0 $((LBA * 4)) 3
assert_xattr "$f" user.zone.wp $((LBA * 4)) "after refused writes"
expect EINVAL "wrong offset through O_DIRECT" write "$f" 0 "$LBA" -d
assert_size "$MNT/seq/1" 0 "neighbour zone"
still_serving "$f"
p2z_umount
exit 0
