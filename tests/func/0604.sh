#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# backend=emu is accepted for an image and chosen from the path without it;
# the root xattrs name the backend and the path.
. "$(dirname "$0")/common.sh"

p2z_init "backend= option and backend choice from the path"
need_emu "image files"
p2z_device 3M/3M/512 4 0
for o in "" backend=emu; do
	p2z_mount "$o"
	assert_xattr "$MNT" user.dev.backend emu "${o:-no option}"
	xattr "$MNT" user.dev.path
	[ "$REPLY" = "$DEV" ] || [ "$REPLY" = "$(realpath "$DEV")" ] ||
		fail "user.dev.path: expected $DEV, got $REPLY"
	append "$MNT/seq/0" 0 "$LBA" 241
	verify "$MNT/seq/0" 0 "$LBA" 241
	expect OK "reset" truncate "$MNT/seq/0" 0
	p2z_umount
done
# a relative image path works too
(cd "$WORK" && "$PO2ZFS" dev.img mnt -f >>"$WORK/daemon.log" 2>&1) &
DAEMON_PID=$!
wait_mounted
assert_xattr "$MNT" user.dev.nr_zones 4 "relative path"
p2z_umount
exit 0
