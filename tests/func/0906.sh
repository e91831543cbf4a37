#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# An unprivileged user (nobody) against a 0640 root-owned zone file, with
# and without allow_other: no read, write, truncate or setxattr, and the
# file's bytes and size unchanged. Without allow_other the kernel refuses
# other users anything on the mount (EACCES), even a file made 0666; with
# it, the permission bits decide (EACCES for 0640; a chmod 0644 by root
# then lets nobody read, the control that the refusals are the mode's).
# The device is opened by root only: nobody's own daemon cannot open it.
. "$(dirname "$0")/common.sh"

p2z_init "unprivileged user against 0640 root-owned zone files"
need_prog setpriv
need_emu "the image's owner and mode are known"
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
$NOBODY true 2>/dev/null || skip "setpriv cannot switch to uid 65534"
# nobody must reach the mount point: the work directory is 0700
chmod 0755 "$WORK" || fail "chmod $WORK"

# as_nobody EXPECTED WHAT ARGS...: p2z_tio ARGS run by nobody
as_nobody()
{
	local exp=$1 what=$2 out

	shift 2
	out=$($NOBODY "$TIO" "$@")
	assert_eq "$exp" "$out" "$what, as nobody (p2z_tio $*)"
}

# refused_all ERR WHAT: nobody can do nothing to seq/0's data
refused_all()
{
	local f=$MNT/seq/0 what=$2 cond

	xattr "$f" user.zone.cond
	cond=$REPLY
	as_nobody "$1" "read ($what)" read "$f" 0 "$LBA"
	as_nobody "$1" "open read-only ($what)" open "$f" r
	as_nobody "$1" "append ($what)" write "$f" $((2 * LBA)) "$LBA"
	as_nobody "$1" "open for writing ($what)" open "$f" w
	as_nobody "$1" "truncate to 0 ($what)" truncate "$f" 0
	as_nobody "$1" "setxattr ($what)" setxattr "$f" user.x 1
	as_nobody "$1" "read of po2 ($what)" read "$MNT/po2" 0 "$LBA"
	assert_size "$f" $((2 * LBA)) "$what"
	verify "$f" 0 $((2 * LBA)) 51
	assert_cond "$f" "$cond" "$what"
}

p2z_device "$P2Z_GEOM" 4 0
p2z_mount
p2z_reset_seq 0
append "$MNT/seq/0" 0 $((2 * LBA)) 51
stat_field "$MNT/seq/0" mode
assert_eq 0640 "$REPLY" "mode of seq/0"
stat_field "$MNT/seq/0" uid
assert_eq 0 "$REPLY" "owner of seq/0"

# without allow_other: the kernel keeps other users out of the mount
as_nobody EACCES "stat of the mount point (no allow_other)" stat "$MNT"
as_nobody EACCES "stat of seq/0 (no allow_other)" stat "$MNT/seq/0"
refused_all EACCES "no allow_other"
chmod 0666 "$MNT/seq/0" || fail "chmod 0666 seq/0"
refused_all EACCES "no allow_other, file 0666"
p2z_umount

# with allow_other: the 0640 mode refuses nobody
p2z_mount allow_other
stat_all "$MNT/seq/0"
assert_eq 0640 "${ST[mode]}" "mode of seq/0 (allow_other, remounted)"
out=$($NOBODY "$TIO" stat "$MNT/seq/0")
case $out in
*mode=0640*uid=0*) ;;
*) fail "stat of seq/0 as nobody (allow_other): $out" ;;
esac
refused_all EACCES "allow_other"
# control: once the mode lets others read, nobody reads, and still
# cannot write, truncate or set attributes
chmod 0644 "$MNT/seq/0" || fail "chmod 0644 seq/0"
as_nobody $((2 * LBA)) "read of a 0644 file (allow_other)" \
	read "$MNT/seq/0" 0 $((2 * LBA)) -s 51
as_nobody EACCES "append to a 0644 file (allow_other)" \
	write "$MNT/seq/0" $((2 * LBA)) "$LBA"
as_nobody EACCES "truncate of a 0644 file (allow_other)" \
	truncate "$MNT/seq/0" 0
as_nobody EACCES "setxattr on a 0644 file (allow_other)" \
	setxattr "$MNT/seq/0" user.x 1
assert_size "$MNT/seq/0" $((2 * LBA)) "after nobody's attempts"
p2z_umount

# the device: nobody cannot open the image for writing, nor serve it
as_nobody EACCES "open of the image for writing" open "$DEV" w
mkdir "$WORK/m2" || fail "mkdir m2"
out=$($NOBODY "$PO2ZFS" "$DEV" "$WORK/m2" -f 2>&1)
rc=$?
is_mounted "$WORK/m2" && { umount "$WORK/m2"; fail "nobody mounted the image"; }
assert_eq 32 "$rc" "exit status of po2zfs run by nobody ($out)"
assert_eq 1 "$(printf '%s\n' "$out" | wc -l)" "lines printed by nobody's po2zfs"
p2z_mount
assert_size "$MNT/seq/0" $((2 * LBA)) "after nobody's daemon"
verify "$MNT/seq/0" 0 $((2 * LBA)) 51
still_serving "$MNT/seq/0"
p2z_umount
exit 0
