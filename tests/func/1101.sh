#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installation works with mount(8) whatever the prefix: cmake --install into
# a DESTDIR, the installed tree put in place in a private mount namespace
# (the installed sbin overlaid on the system's, the prefix bound over its
# final place), then "mount -t po2zfs", "mount -T FSTAB DIR" and
# "mount -a -T FSTAB" with a po2zfs line and a fuse.po2zfs line. Nothing
# is installed on the host.
. "$(dirname "$0")/common.sh"

[ -z "$P2Z_TEST_DEV" ] || skip "runs on emulated images only"
# Everything below runs again in a private mount namespace.
p2z_private_ns "$@"

p2z_init "install (DESTDIR), mount -t po2zfs, fstab po2zfs and fuse.po2zfs lines"
need_prog cmake
need_prog findmnt
need_prog flock
[ -f "$P2Z_BUILD/cmake_install.cmake" ] || skip "$P2Z_BUILD has no install rules"

# The real directory mount(8) takes helpers from (/usr/sbin on a merged /usr).
HELPER_DIR=$(realpath /sbin)
MNT2=$WORK/mnt2
mkdir "$MNT2" || fail "mkdir $MNT2"

# p2z_cleanup takes the exit status from $?: keep it
p2z_cleanup_1101()
{
	local rc=$?

	if is_mounted "$MNT2"; then
		umount "$MNT2" 2>/dev/null || umount -l "$MNT2"
	fi
	(exit "$rc")
	p2z_cleanup
}
trap p2z_cleanup_1101 EXIT

# wait_unlocked IMG: the daemon that had IMG exits after the unmount and
# drops its lock; a new mount of IMG before that fails with EBUSY.
wait_unlocked()
{
	local i

	for ((i = 0; i < 400; i++)); do
		flock -n -x "$1" true 2>/dev/null && return 0
		sleep 0.025
	done
	fail "$1 still locked 10 s after the unmount (daemon still running?)"
}

# wait_no_daemon PREFIX: no process runs PREFIX/sbin/po2zfs any more (the
# daemons exit after their unmount, later than they drop the image lock
# when a sanitizer checks for leaks at exit)
wait_no_daemon()
{
	local i exe busy

	for ((i = 0; i < 400; i++)); do
		busy=
		for exe in /proc/[0-9]*/exe; do
			[ "$(readlink "$exe" 2>/dev/null)" = "$1/sbin/po2zfs" ] &&
				busy=${exe%/exe}
		done
		[ -z "$busy" ] && return 0
		sleep 0.025
	done
	fail "a po2zfs daemon ($busy) still runs 10 s after its unmount"
}

# find_fs DIR EXPECTED: findmnt's type, source and target of DIR
find_fs()
{
	assert_eq "$2" "$(findmnt -n -o FSTYPE,SOURCE,TARGET "$1")" \
		"findmnt $1"
}

# has_vfs_opt DIR OPT: the mount DIR has option OPT (findmnt's VFS options)
has_vfs_opt()
{
	case ,$(findmnt -n -o VFS-OPTIONS "$1"), in
	*,"$2",*) return 0 ;;
	esac
	return 1
}

# install_at PREFIX: install into $WORK/root with DESTDIR, check the
# helper link, then make PREFIX and the helper visible at their places.
install_at()
{
	local prefix=$1 root=$WORK/root-${1//\//_} out link

	out=$(DESTDIR=$root cmake --install "$P2Z_BUILD" --prefix "$prefix" 2>&1) ||
		fail "cmake --install --prefix $prefix: $out"
	link=$(readlink "$root/sbin/mount.po2zfs") ||
		fail "no $root/sbin/mount.po2zfs after the install ($prefix)"
	assert_eq "../..$prefix/sbin/po2zfs" "$link" "mount helper link ($prefix)"
	[ -x "$root$prefix/sbin/po2zfs" ] || fail "$prefix/sbin/po2zfs not installed"
	# The prefix: bound over its place (a tmpfs keeps the host's /opt
	# untouched when the prefix does not exist there).
	TMPFS_PARENT=
	if [ ! -d "$prefix" ]; then
		TMPFS_PARENT=${prefix%/*}
		mount -t tmpfs p2z-1101 "${prefix%/*}" ||
			fail "tmpfs on ${prefix%/*}"
		mkdir -p "$prefix"
	fi
	mount --bind "$root$prefix" "$prefix" || fail "bind $root$prefix $prefix"
	# The helper: the installed sbin over the system's, which mount(8)
	# and mount.fuse3 still need.
	mount -t overlay p2z-1101 \
		-o "lowerdir=$root/sbin:$HELPER_DIR" "$HELPER_DIR" ||
		skip "no overlayfs to lay the installed sbin over $HELPER_DIR"
	assert_eq "$prefix/sbin/po2zfs" "$(readlink -f /sbin/mount.po2zfs)" \
		"/sbin/mount.po2zfs resolved ($prefix)"
	PATH=$prefix/sbin:$PATH
}

# undo_install PREFIX
undo_install()
{
	umount "$HELPER_DIR" || fail "umount the overlay on $HELPER_DIR"
	umount "$1" || fail "umount $1"
	if [ -n "$TMPFS_PARENT" ]; then
		umount "$TMPFS_PARENT" || fail "umount $TMPFS_PARENT"
	fi
}

p2z_device 3M/3M/4096 4
IMG2=$WORK/dev2.img
"$EMU" create "$IMG2" --zone-size 3M --zones 4 >/dev/null ||
	fail "po2zfs-emu create $IMG2"

for prefix in /usr/local /opt/p2z-1101; do
	install_at "$prefix"

	# mount -t po2zfs: mount(8) runs /sbin/mount.po2zfs, which daemonizes
	out=$(mount -t po2zfs "$DEV" "$MNT" -o uid=5,perm=0600 2>&1) ||
		fail "mount -t po2zfs ($prefix): $out"
	find_fs "$MNT" "fuse.po2zfs $DEV $MNT"
	stat_all "$MNT/seq/0"
	assert_eq 5 "${ST[uid]}" "uid of seq/0 (mount -t, $prefix)"
	assert_eq 0600 "${ST[mode]}" "mode of seq/0 (mount -t, $prefix)"
	expect OK "reset seq/0" truncate "$MNT/seq/0" 0
	append "$MNT/seq/0" 0 1048576 11
	assert_size "$MNT/seq/0" 1048576 "mount -t, $prefix"
	umount "$MNT" || fail "umount $MNT ($prefix)"
	is_mounted "$MNT" && fail "$MNT still mounted"
	wait_unlocked "$DEV"

	# fstab: a po2zfs line (mount.po2zfs) and a fuse.po2zfs line
	# (mount.fuse3, which runs po2zfs from PATH)
	cat >"$WORK/fstab" <<-EOF
		$DEV $MNT po2zfs uid=7,gid=8 0 0
		$IMG2 $MNT2 fuse.po2zfs ro,uid=9 0 0
	EOF
	out=$(mount -T "$WORK/fstab" "$MNT" 2>&1) ||
		fail "mount -T fstab $MNT ($prefix): $out"
	find_fs "$MNT" "fuse.po2zfs $DEV $MNT"
	stat_all "$MNT/seq/0"
	assert_eq "7 8 1048576" "${ST[uid]} ${ST[gid]} ${ST[size]}" \
		"uid gid size of seq/0 (mount -T DIR, $prefix)"
	umount "$MNT" || fail "umount $MNT ($prefix)"
	wait_unlocked "$DEV"

	# mount.fuse3 runs "po2zfs" through /bin/sh with mount(8)'s PATH,
	# which holds the standard directories only: a fuse.po2zfs line works
	# for the /usr and /usr/local prefixes, a po2zfs line for any prefix.
	out=$(mount -a -T "$WORK/fstab" 2>&1)
	rc=$?
	find_fs "$MNT" "fuse.po2zfs $DEV $MNT"
	has_vfs_opt "$MNT" rw || fail "po2zfs line: $MNT is not rw"
	assert_size "$MNT/seq/0" 1048576 "mount -a, po2zfs line, $prefix"
	case $prefix in
	/usr | /usr/local)
		[ $rc -eq 0 ] || fail "mount -a -T fstab ($prefix): $out"
		find_fs "$MNT2" "fuse.po2zfs $IMG2 $MNT2"
		has_vfs_opt "$MNT2" ro || fail "fuse.po2zfs line: $MNT2 is not ro"
		assert_size "$MNT2/seq/0" 0 "mount -a, fuse.po2zfs line, $prefix"
		stat_field "$MNT2/seq/1" uid
		assert_eq 9 "$REPLY" "uid of seq/1 (fuse.po2zfs line, $prefix)"
		expect EROFS "append on the ro fuse.po2zfs mount" \
			write "$MNT2/seq/1" 0 4096 -s 1
		umount "$MNT2" || fail "umount $MNT2 ($prefix)"
		;;
	*)
		assert_ne 0 "$rc" "mount -a status, fuse.po2zfs line, $prefix"
		case $out in
		*"po2zfs: not found"*) ;;
		*) fail "mount -a ($prefix): expected 'po2zfs: not found', got: $out" ;;
		esac
		is_mounted "$MNT2" && fail "$MNT2 mounted with po2zfs out of PATH"
		;;
	esac
	umount "$MNT" || fail "umount $MNT ($prefix)"
	wait_unlocked "$DEV"
	wait_unlocked "$IMG2"

	wait_no_daemon "$prefix"
	undo_install "$prefix"
	info "ok: prefix $prefix"
done
exit 0
