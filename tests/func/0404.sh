#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chmod/chown are kept until unmount and lost after a remount; uid=, gid=,
# perm= set the defaults; permissions are enforced for other users.
. "$(dirname "$0")/common.sh"

p2z_init "chmod/chown kept until unmount; uid= gid= perm="
p2z_device
p2z_mount
p2z_reset_seq 0 1
f=$MNT/seq/0
chmod 0600 "$f" || fail "chmod 0600 seq/0"
chown 1000:2000 "$f" || fail "chown 1000:2000 seq/0"
chmod 0444 "$MNT/seq/1" || fail "chmod 0444 seq/1"
chmod 0604 "$MNT/po2" || fail "chmod 0604 po2"
check_changed()
{
	stat_field "$f" mode
	assert_eq 0600 "$REPLY" "seq/0 mode after chmod ($1)"
	stat_field "$f" uid
	assert_eq 1000 "$REPLY" "seq/0 uid after chown ($1)"
	stat_field "$f" gid
	assert_eq 2000 "$REPLY" "seq/0 gid after chown ($1)"
	stat_field "$MNT/seq/1" mode
	assert_eq 0444 "$REPLY" "seq/1 mode after chmod ($1)"
	stat_field "$MNT/po2" mode
	assert_eq 0604 "$REPLY" "po2 mode after chmod ($1)"
}
check_changed "at once"
# data operations keep them
append "$f" 0 "$LBA" 161
expect OK "reset seq/0" truncate "$f" 0
append "$f" 0 "$LBA" 162
check_changed "after append, reset, append"
assert_size "$f" "$LBA" "after chmod/chown and I/O"
verify "$f" 0 "$LBA" 162
p2z_umount
p2z_mount
for x in seq/0 seq/1 po2; do
	stat_field "$MNT/$x" mode
	assert_eq 0640 "$REPLY" "$x mode after remount"
	stat_field "$MNT/$x" uid
	assert_eq 0 "$REPLY" "$x uid after remount"
	stat_field "$MNT/$x" gid
	assert_eq 0 "$REPLY" "$x gid after remount"
done
verify "$f" 0 "$LBA" 162
p2z_umount

# mount options set the defaults of every file
p2z_mount uid=1234,gid=5678,perm=0600,allow_other
for x in seq/0 seq/1 po2; do
	stat_field "$MNT/$x" mode
	assert_eq 0600 "$REPLY" "$x mode with perm=0600"
	stat_field "$MNT/$x" uid
	assert_eq 1234 "$REPLY" "$x uid with uid=1234"
	stat_field "$MNT/$x" gid
	assert_eq 5678 "$REPLY" "$x gid with gid=5678"
done
stat_field "$MNT/seq" mode
assert_eq 0555 "$REPLY" "seq/ mode with perm=0600"
# permissions are enforced for other users (allow_other lets them in)
if command -v setpriv >/dev/null; then
	as()
	{
		local u=$1

		shift
		setpriv --reuid "$u" --regid "$u" --clear-groups "$TIO" "$@"
	}
	# the mount point (and a helper built there) must be reachable
	chmod 0755 "$WORK" || fail "chmod $WORK"
	out=$(as 1234 write "$f" "$LBA" "$LBA" -s 162 -P "$LBA")
	assert_eq "$LBA" "$out" "owner 1234 appends to its 0600 file"
	out=$(as 1235 write "$f" $((LBA * 2)) "$LBA")
	assert_eq EACCES "$out" "user 1235 writes a 0600 file of user 1234"
	out=$(as 1235 read "$f" 0 "$LBA")
	assert_eq EACCES "$out" "user 1235 reads a 0600 file of user 1234"
	out=$(as 1235 truncate "$f" 0)
	assert_eq EACCES "$out" "user 1235 truncates a 0600 file of user 1234"
	out=$(as 1234 read "$f" 0 $((LBA * 2)) -s 162)
	assert_eq $((LBA * 2)) "$out" "owner 1234 reads back"
	assert_size "$f" $((LBA * 2)) "after the owner's append"
else
	info "setpriv missing: permission enforcement not checked"
fi
p2z_umount
exit 0
