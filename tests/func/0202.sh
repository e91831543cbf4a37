#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# truncate to capacity = zone finish: size = capacity, condition full,
# further writes EFBIG, the written bytes stay.
. "$(dirname "$0")/common.sh"

p2z_init "truncate to capacity finishes the zone"

for g in $(p2z_geoms "$P2Z_GEOM" 3M/3M/4096 64M/48M/512); do
	p2z_device "$g" 2 0
	p2z_mount
	p2z_reset_seq 0 1
	f=$MNT/seq/0
	append "$f" 0 $((LBA * 3)) 81
	truncate -s "$CAP" "$f" || fail "truncate -s capacity ($g)"
	assert_size "$f" "$CAP" "after finish ($g)"
	assert_cond "$f" full "after finish ($g)"
	assert_xattr "$f" user.zone.wp "$CAP" "after finish ($g)"
	expect EFBIG "write at capacity after finish ($g)" write "$f" "$CAP" "$LBA"
	expect EFBIG "O_APPEND write after finish ($g)" write "$f" 0 "$LBA" -a
	expect EINVAL "write at the old write pointer after finish ($g)" \
		write "$f" $((LBA * 3)) "$LBA"
	verify "$f" 0 $((LBA * 3)) 81
	expect "$CAP" "read the whole finished zone ($g)" read "$f" 0 "$CAP"
	# the unwritten part reads as zeros on the emulator
	[ "${EMU_GEOM:-1}" = 1 ] &&
		verify_zeros "$f" $((LBA * 3)) $((CAP - LBA * 3))
	# finish of an empty zone
	expect OK "finish an empty zone ($g)" truncate "$MNT/seq/1" "$CAP"
	assert_size "$MNT/seq/1" "$CAP" "empty zone finished ($g)"
	assert_cond "$MNT/seq/1" full "empty zone finished ($g)"
	# finish of a full zone again: nothing changes
	expect OK "finish a full zone ($g)" truncate "$f" "$CAP"
	p2z_umount
	p2z_mount
	assert_size "$f" "$CAP" "finished, remounted ($g)"
	assert_cond "$f" full "finished, remounted ($g)"
	verify "$f" 0 $((LBA * 3)) 81
	expect OK "reset after finish ($g)" truncate "$f" 0
	still_serving "$f"
	p2z_umount
	info "ok: $g"
done
exit 0
