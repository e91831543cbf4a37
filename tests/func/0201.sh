#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# truncate to 0 = zone reset: size 0, reads return EOF, condition empty,
# write pointer at the zone start, appends restart at offset 0.
. "$(dirname "$0")/common.sh"

p2z_init "truncate 0 resets the zone"

for g in $(p2z_geoms "$P2Z_GEOM" 3M/3M/512); do
	p2z_device "$g" 2 0
	p2z_mount
	p2z_reset_seq 0 1
	f=$MNT/seq/0
	xattr "$f" user.zone.start
	start=$REPLY
	append "$f" 0 $((1024 * 1024)) 71
	assert_cond_in "implicit-open closed" "$f" "after an append ($g)"
	truncate -s 0 "$f" || fail "truncate -s 0 ($g)"
	assert_size "$f" 0 "after reset ($g)"
	assert_cond "$f" empty "after reset ($g)"
	assert_xattr "$f" user.zone.wp 0 "after reset ($g)"
	assert_xattr "$f" user.zone.start "$start" "after reset ($g)"
	assert_xattr "$f" user.zone.size "$ZSIZE" "after reset ($g)"
	expect 0 "read after reset ($g)" read "$f" 0 "$LBA"
	expect 0 "read of old data range after reset ($g)" read "$f" $((512 * 1024)) "$LBA"
	expect EINVAL "write at the old write pointer after reset ($g)" \
		write "$f" $((1024 * 1024)) "$LBA"
	# new data from 0, different bytes
	append "$f" 0 $((LBA * 2)) 72
	assert_size "$f" $((LBA * 2)) "after reset + append ($g)"
	verify "$f" 0 $((LBA * 2)) 72
	expect 0 "read past the new data ($g)" read "$f" $((LBA * 2)) "$LBA"
	# reset of an empty zone is fine; so is reset of a full zone
	expect OK "reset an empty zone ($g)" truncate "$MNT/seq/1" 0
	assert_cond "$MNT/seq/1" empty "($g)"
	expect OK "finish seq/1 ($g)" truncate "$MNT/seq/1" "$CAP"
	expect OK "reset a full zone ($g)" truncate "$MNT/seq/1" 0
	assert_size "$MNT/seq/1" 0 "reset after finish ($g)"
	assert_cond "$MNT/seq/1" empty "reset after finish ($g)"
	# a reset persists
	p2z_umount
	p2z_mount
	assert_size "$MNT/seq/1" 0 "after remount ($g)"
	assert_size "$f" $((LBA * 2)) "after remount ($g)"
	verify "$f" 0 $((LBA * 2)) 72
	still_serving "$MNT/seq/1"
	p2z_umount
	info "ok: $g"
done
exit 0
