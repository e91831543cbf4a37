#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# errors=remount-ro remounts only the mount the daemon made, never whatever
# the mount point path names when the error happens:
#  1. umount -l of the po2zfs mount and a tmpfs mounted at the same path;
#  2. the mount point's parent renamed and a symlink put in its place,
#     leading to a tmpfs.
# In both, a write error on a file still open on po2zfs must leave the tmpfs
# writable (exact: a write to it succeeds), turn the zone table read-only
# (a write through another open descriptor fails with EROFS) and log one
# line saying the mount was not remounted. The test runs in a private mount
# namespace, so that even a broken daemon cannot remount anything of the
# host.
if [ -z "${P2Z_0904_NS:-}" ]; then
	if ! unshare -m --propagation private true 2>/dev/null; then
		echo "SKIP: 0904: cannot make a private mount namespace (unshare -m)"
		exit 77
	fi
	P2Z_0904_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/common.sh"

p2z_init "errors=remount-ro never remounts another filesystem"
need_emu "injects faults with po2zfs-emu set-zone"
need_prog unshare

# wait_log FROM: a line about the remount in the daemon's log past line FROM
# (bounded poll: the daemon remounts from a thread after the write failed)
wait_log()
{
	local i re='remounted read-only|not remounted|cannot remount'

	for ((i = 0; i < 400; i++)); do
		REPLY=$(tail -n +$(($1 + 1)) "$WORK/daemon.log" | grep -E "$re")
		[ -n "$REPLY" ] && return 0
		sleep 0.025
	done
	fail "no remount line in the daemon's log 10 s after the error"
}

# wait_daemon_exit WHAT: the daemon ends by itself once its detached mount
# is released, with status 0 (nothing may pin the mount)
wait_daemon_exit()
{
	local i rc

	for ((i = 0; i < 400; i++)); do
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.025
	done
	kill -0 "$DAEMON_PID" 2>/dev/null &&
		fail "$1: daemon still running 10 s after its mount was released"
	wait "$DAEMON_PID"
	rc=$?
	DAEMON_PID=
	assert_eq 0 "$rc" "daemon exit status ($1)"
}

# fault_and_check WHAT TMPFS: fds 5 (seq/1) and 6 (seq/2) are open for
# writing on po2zfs, TMPFS is mounted where the mount point path now leads
fault_and_check()
{
	local what=$1 tmp=$2 from out

	from=$(wc -l <"$WORK/daemon.log")
	out=$("$EMU" set-zone "$DEV" 1 fail-next-io 2>&1) ||
		fail "po2zfs-emu set-zone: $out"
	expect EIO "write hitting the injected fault ($what)" \
		write fd:5 $((4 * LBA)) "$LBA" -s 171
	wait_log "$from"
	case $REPLY in
	*"not remounted"*) ;;
	*) fail "$what: daemon log says '$REPLY', not that it left the mount alone" ;;
	esac
	assert_eq 1 "$(printf '%s\n' "$REPLY" | wc -l)" "remount lines ($what)"
	# the tmpfs is untouched
	echo probe >"$tmp/probe" || fail "$what: the tmpfs is no longer writable"
	assert_eq probe "$(cat "$tmp/probe")" "tmpfs content ($what)"
	awk -v m="$tmp" '$5 == m { split($6, o, ","); r = o[1] == "ro" }
		END { exit !r }' /proc/self/mountinfo &&
		fail "$what: mountinfo shows the tmpfs read-only"
	# po2zfs's table is read-only: writes through its other fd fail
	expect EROFS "write to seq/2 after the error ($what)" \
		write fd:6 "$LBA" "$LBA" -s 172
}

# 1. umount -l, then a tmpfs at the same path
p2z_device "$P2Z_GEOM" 4 0
p2z_mount errors=remount-ro
append "$MNT/seq/1" 0 $((4 * LBA)) 171
append "$MNT/seq/2" 0 "$LBA" 172
exec 5>>"$MNT/seq/1" 6>>"$MNT/seq/2" || fail "open seq/1 and seq/2"
# fd 7 (the root directory) keeps the detached mount alive until the
# daemon has the releases of fds 5 and 6: the kernel sends those in the
# background, and drops what is still queued when the mount goes away
exec 7<"$MNT" || fail "open the mount's root"
umount -l "$MNT" || fail "umount -l $MNT"
mount -t tmpfs p2z-0904 "$MNT" || fail "mount tmpfs on $MNT"
fault_and_check "umount -l, tmpfs at the path" "$MNT"
umount "$MNT" || fail "umount the tmpfs"
exec 5>&- 6>&-
# a request answered after the releases were queued (FIFO): they are read
run_tio statfs /proc/self/fd/7
case $TIO_OUT in
*files=*) ;;
*) fail "statfs of the detached mount: $TIO_OUT" ;;
esac
exec 7<&-
wait_daemon_exit "umount -l, tmpfs at the path"
info "ok: umount -l and a tmpfs at the path"

# 2. the parent renamed, a symlink in its place leading to a tmpfs
mkdir -p "$WORK/p/mnt" "$WORK/other/mnt" || fail "mkdir"
MNT=$WORK/p/mnt
p2z_device "$P2Z_GEOM" 4 0
p2z_mount errors=remount-ro
append "$MNT/seq/1" 0 $((4 * LBA)) 171
append "$MNT/seq/2" 0 "$LBA" 172
exec 5>>"$MNT/seq/1" 6>>"$MNT/seq/2" || fail "open seq/1 and seq/2"
mv "$WORK/p" "$WORK/q" || fail "rename the mount point's parent"
ln -s other "$WORK/p" || fail "symlink"
MNT=$WORK/q/mnt
mount -t tmpfs p2z-0904b "$WORK/other/mnt" || fail "mount tmpfs"
fault_and_check "parent renamed, symlink to a tmpfs" "$WORK/other/mnt"
umount "$WORK/other/mnt" || fail "umount the tmpfs"
exec 5>&- 6>&-
p2z_umount
info "ok: parent renamed and a symlink to a tmpfs"
exit 0
