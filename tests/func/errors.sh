# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# errors= policies after injected faults, shared by 0501-0504. The expected
# states follow the "IO error handling" table of Linux
# Documentation/filesystems/zonefs.rst:
#
#  errors=      zone after    file size  file read  file write
#  remount-ro   good          fixed      yes        no (whole fs read-only)
#               read-only     fixed      yes        no
#               offline       0          no         no
#  zone-ro      good          fixed      yes        no
#               read-only     fixed      yes        no
#               offline       0          no         no
#  zone-offline good          0          no         no
#               read-only     0          no         no
#               offline       0          no         no
#  repair       good          fixed      yes        yes
#               read-only     fixed      yes        no
#               offline       0          no         no
#
# errnos as zonefs returns them: a write to a file made read-only (zone
# read-only, zone-ro) or inaccessible (offline, zone-offline) EPERM (the
# inode is immutable), any write on a file system remounted read-only EROFS,
# a read of an inaccessible file EPERM. Read-only files lose their write
# permission bits, inaccessible ones all permission bits. Policy effects on
# good zones end with the mount; read-only and offline zones stay so, shown
# at mount as zonefs shows them (a read-only zone's write pointer is not
# valid: empty file, no write bits; offline: empty, no permissions).
#
# One case = a fresh image: seq/1 (zone k) and seq/2 (zone j) hold data,
# po2zfs-emu set-zone injects the fault into zone k of the running daemon,
# a write to seq/1 triggers the error, then the states are checked, and
# again after a remount. remount-ro also turns the mount itself read-only
# (statfs ST_RDONLY, "ro" in mountinfo); the other policies leave it rw.
# In every case the daemon keeps running and serving the other zones.
#
# The matrix: errors= mode x fault x when, and the test of each cell.
# "I/O error" is po2zfs-emu's fail-next-io (one-shot EIO); "at mount"
# means the fault is in the image before the daemon opens it (read-only
# and offline zones are then shown as found, whatever the mode, and the
# mount stays read-write; a pending I/O error hits the first write after
# the mount and takes the policy's action as while mounted).
#
#  fault \ mode       remount-ro    zone-ro  zone-offline  repair
#  I/O error, mounted   0501 (also    0502     0503          0504
#                       default)
#  read-only, mounted   0501          0502     0503          0504
#  offline, mounted     0501          0502     0503          0504
#  I/O error, at mount  1004          1004     1004          1004
#  read-only, at mount  0506 (default), 1004 for all four modes
#  offline, at mount    0506 (default), 1004 for all four modes
#  read error, mounted  0505: EIO, no policy action, in all four modes

# mode_bits_none FILE MASK WHAT: (st_mode & MASK) == 0
mode_bits_none()
{
	stat_field "$1" mode
	[ $((8#$REPLY & $2)) -eq 0 ] ||
		fail "$3: mode $REPLY of ${1#"$MNT"/} has bits of $(printf %04o "$2")"
}

# daemon_alive WHAT: the daemon has not exited
daemon_alive()
{
	kill -0 "$DAEMON_PID" 2>/dev/null ||
		fail "$1: the daemon exited: $(tail -n 3 "$WORK/daemon.log")"
}

# fault_case MODE FAULT [at-mount]: with at-mount, FAULT (fail-next-io) is
# set in the image between two mounts instead of in the running daemon
fault_case()
{
	local mode=$1 fault=$2 when=${3:-mounted} k=$MNT/seq/1 j=$MNT/seq/2
	local d c what immut=0 inacc=0 size_k opt="errors=$mode"

	what="errors=$mode, $fault"
	[ "$when" = at-mount ] && what="$what at mount"
	if [ "$mode" = default ]; then
		# no errors= option: remount-ro
		opt=
		mode=remount-ro
	fi
	p2z_device "$P2Z_GEOM" 4 0
	p2z_mount "$opt"
	d=$((LBA * 4))
	append "$k" 0 "$d" 171
	append "$j" 0 "$LBA" 172
	if [ "$when" = at-mount ]; then
		p2z_umount
		run_tio_emu set-zone "$DEV" $((NCNV + 1)) "$fault"
		p2z_mount "$opt"
	fi
	xattr "$k" user.zone.cond
	c=$REPLY
	assert_mount_rw "$what, before the fault"
	[ "$when" = at-mount ] ||
		run_tio_emu set-zone "$DEV" $((NCNV + 1)) "$fault"
	case $fault in
	fail-next-io)
		expect EIO "write hitting the injected fault ($what)" \
			write "$k" "$d" "$LBA" -s 171 ;;
	read-only)
		expect_one_of "EIO EROFS EPERM" "write to a zone gone read-only ($what)" \
			write "$k" "$d" "$LBA" -s 171 ;;
	offline)
		expect_one_of "EIO ENXIO EPERM" "write to a zone gone offline ($what)" \
			write "$k" "$d" "$LBA" -s 171 ;;
	esac
	# remount-ro makes the mount itself read-only, as zonefs does
	[ "$mode" = remount-ro ] && wait_mount_ro "$what"
	daemon_alive "$what"

	# expected state of seq/1
	[ "$fault" != fail-next-io ] && immut=1
	[ "$mode" = zone-ro ] || [ "$mode" = zone-offline ] && immut=1
	[ "$fault" = offline ] || [ "$mode" = zone-offline ] && inacc=1
	size_k=$d
	[ $inacc = 1 ] && size_k=0
	assert_size "$k" "$size_k" "$what"
	if [ $inacc = 1 ]; then
		expect EPERM "read of an inaccessible file ($what)" read "$k" 0 "$LBA"
		mode_bits_none "$k" 0777 "inaccessible file ($what)"
	else
		verify "$k" 0 "$d" 171
	fi
	if [ "$mode" = repair ] && [ "$fault" = fail-next-io ]; then
		append "$k" "$d" "$LBA" 171
		verify "$k" 0 $((d + LBA)) 171
		# a closed zone (at mount) is open again after that write
		[ "$c" = closed ] && c=implicit-open
	elif [ $immut = 1 ] && [ "$mode" = remount-ro ]; then
		expect_one_of "EPERM EROFS" "write to seq/1 ($what)" \
			write "$k" "$size_k" "$LBA"
	elif [ $immut = 1 ]; then
		expect EPERM "write to seq/1 ($what)" write "$k" "$size_k" "$LBA"
	else
		expect EROFS "write to seq/1 ($what)" write "$k" "$size_k" "$LBA"
	fi
	[ $immut = 1 ] && mode_bits_none "$k" 0222 "read-only file ($what)"
	case $fault in
	read-only) assert_cond "$k" read-only "$what" ;;
	offline) assert_cond "$k" offline "$what" ;;
	*) assert_cond "$k" "$c" "$what (the zone itself is good)" ;;
	esac
	# the other zone file
	verify "$j" 0 "$LBA" 172
	if [ "$mode" = remount-ro ]; then
		expect EROFS "write to another file ($what)" write "$j" "$LBA" "$LBA"
		expect EROFS "truncate of another file ($what)" truncate "$j" 0
		assert_size "$j" "$LBA" "$what"
	else
		append "$j" "$LBA" "$LBA" 172
		verify "$j" 0 $((LBA * 2)) 172
		assert_mount_rw "$what, after the fault"
	fi
	p2z_umount

	# after a remount: policy effects are gone, zone conditions stay
	p2z_mount "$opt"
	assert_mount_rw "$what, remounted"
	case $fault in
	fail-next-io)
		size_k=$d
		[ "$mode" = repair ] && size_k=$((d + LBA))
		assert_size "$k" "$size_k" "$what, remounted"
		verify "$k" 0 "$size_k" 171
		append "$k" "$size_k" "$LBA" 171
		;;
	read-only)
		assert_size "$k" 0 "$what, remounted (read-only zone at mount)"
		assert_cond "$k" read-only "$what, remounted"
		expect 0 "read of a read-only zone file at mount ($what)" \
			read "$k" 0 "$LBA"
		expect EPERM "write to a read-only zone file at mount ($what)" \
			write "$k" 0 "$LBA"
		mode_bits_none "$k" 0222 "read-only zone at mount ($what)"
		;;
	offline)
		assert_size "$k" 0 "$what, remounted (offline zone at mount)"
		assert_cond "$k" offline "$what, remounted"
		expect EPERM "read of an offline zone file at mount ($what)" \
			read "$k" 0 "$LBA"
		expect EPERM "write to an offline zone file at mount ($what)" \
			write "$k" 0 "$LBA"
		mode_bits_none "$k" 0777 "offline zone at mount ($what)"
		;;
	esac
	still_serving "$j"
	p2z_umount
	info "ok: $what"
}

# run_tio_emu ARGS: po2zfs-emu must succeed
run_tio_emu()
{
	local out

	out=$("$EMU" "$@" 2>&1) || fail "po2zfs-emu $* failed: $out"
}

# errors_test MODE: the three faults under errors=MODE
errors_test()
{
	need_emu "injects faults with po2zfs-emu set-zone"
	fault_case "$1" fail-next-io
	fault_case "$1" read-only
	fault_case "$1" offline
}

# cond_at_mount_case MODE: seq/1 read-only and seq/2 offline in the image
# before the mount, under errors=MODE: shown as zonefs shows them, no
# policy action (the mount stays read-write), the other zones work, the
# daemon keeps running.
cond_at_mount_case()
{
	local mode=$1 what="errors=$1, read-only and offline zones at mount"

	p2z_device "$P2Z_GEOM" 4 0
	p2z_mount "errors=$mode"
	append "$MNT/seq/1" 0 $((LBA * 2)) 191
	append "$MNT/seq/2" 0 $((LBA * 2)) 192
	append "$MNT/seq/3" 0 "$LBA" 193
	p2z_umount
	run_tio_emu set-zone "$DEV" $((NCNV + 1)) read-only
	run_tio_emu set-zone "$DEV" $((NCNV + 2)) offline
	p2z_mount "errors=$mode"
	assert_mount_rw "$what"
	assert_cond "$MNT/seq/1" read-only "$what"
	assert_size "$MNT/seq/1" 0 "$what"
	mode_bits_none "$MNT/seq/1" 0222 "$what"
	expect 0 "read of a read-only zone file ($what)" \
		read "$MNT/seq/1" 0 "$LBA"
	expect EPERM "write to a read-only zone ($what)" \
		write "$MNT/seq/1" 0 "$LBA"
	expect EPERM "reset of a read-only zone ($what)" truncate "$MNT/seq/1" 0
	assert_cond "$MNT/seq/2" offline "$what"
	assert_size "$MNT/seq/2" 0 "$what"
	mode_bits_none "$MNT/seq/2" 0777 "$what"
	expect EPERM "read of an offline zone ($what)" read "$MNT/seq/2" 0 "$LBA"
	expect EPERM "write to an offline zone ($what)" \
		write "$MNT/seq/2" 0 "$LBA"
	expect EPERM "reset of an offline zone ($what)" truncate "$MNT/seq/2" 0
	# none of this was an I/O error: no policy action
	assert_mount_rw "$what, after the refused operations"
	daemon_alive "$what"
	verify "$MNT/seq/3" 0 "$LBA" 193
	append "$MNT/seq/0" 0 "$LBA" 194
	verify "$MNT/seq/0" 0 "$LBA" 194
	still_serving "$MNT/seq/3"
	p2z_umount
	info "ok: $what"
}
