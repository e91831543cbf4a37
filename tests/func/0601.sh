#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Bad mount options and bad devices: non-zero exit, exactly one line of
# message, nothing mounted, no daemon left; a good mount works afterwards.
. "$(dirname "$0")/common.sh"

p2z_init "bad options and devices fail cleanly"
need_prog timeout
p2z_device 3M/3M/4096 4 0
good=$DEV

# bad_mount WHAT ARGS...: po2zfs ARGS must fail cleanly
bad_mount()
{
	local what=$1 out rc n

	shift
	out=$(timeout -k 5 20 "$PO2ZFS" "$@" 2>&1 </dev/null)
	rc=$?
	if is_mounted "$MNT"; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT"
		fail "$what: mounted"
	fi
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		fail "$what: still running after 20 s"
	fi
	[ $rc -ne 0 ] || fail "$what: exit status 0"
	[ $rc -lt 128 ] || fail "$what: killed by signal $((rc - 128)): $out"
	n=$(printf '%s\n' "$out" | grep -c .)
	[ "$n" = 1 ] || { [ "${USAGE_OK:-0}" = 1 ] && [ "$n" -gt 0 ]; } || fail "$what: expected a one-line message, got $n lines: $out"
	info "ok: $what: exit $rc: $out"
}

o=
[ -n "$P2Z_TEST_BACKEND" ] && o=,backend=$P2Z_TEST_BACKEND
bad_mount "unknown option" "$good" "$MNT" -f -o "bogus$o"
bad_mount "unknown option among good ones" "$good" "$MNT" -f -o "uid=1,nosuchopt=3,gid=2$o"
bad_mount "errors=bogus" "$good" "$MNT" -f -o "errors=bogus$o"
bad_mount "errors= empty" "$good" "$MNT" -f -o "errors=$o"
bad_mount "uid=abc" "$good" "$MNT" -f -o "uid=abc$o"
bad_mount "uid=-1" "$good" "$MNT" -f -o "uid=-1$o"
bad_mount "uid=99999999999" "$good" "$MNT" -f -o "uid=99999999999$o"
bad_mount "gid=abc" "$good" "$MNT" -f -o "gid=abc$o"
bad_mount "gid= empty" "$good" "$MNT" -f -o "gid=$o"
bad_mount "perm=999" "$good" "$MNT" -f -o "perm=999$o"
bad_mount "perm=abc" "$good" "$MNT" -f -o "perm=abc$o"
bad_mount "perm=077777" "$good" "$MNT" -f -o "perm=077777$o"
bad_mount "backend=nope" "$good" "$MNT" -f -o backend=nope
bad_mount "missing device" "$WORK/nonexistent" "$MNT" -f
bad_mount "missing mount point" "$good" "$WORK/nonexistent" -f
# a usage text may take several lines when arguments are missing
USAGE_OK=1 bad_mount "no arguments"
USAGE_OK=1 bad_mount "no mount point" "$good"
if [ -z "$P2Z_TEST_DEV" ]; then
	head -c $((1024 * 1024)) /dev/zero >"$WORK/zeros"
	bad_mount "a file of zeros" "$WORK/zeros" "$MNT" -f
	echo "not a zoned device" >"$WORK/text"
	bad_mount "a text file" "$WORK/text" "$MNT" -f
	: >"$WORK/empty"
	bad_mount "an empty file" "$WORK/empty" "$MNT" -f
	mkdir "$WORK/dir"
	bad_mount "a directory" "$WORK/dir" "$MNT" -f
	head -c 4096 "$good" >"$WORK/trunc.img"
	bad_mount "an image cut to its first 4 KiB" "$WORK/trunc.img" "$MNT" -f
	head -c 64 "$good" >"$WORK/trunc64.img"
	bad_mount "an image cut to 64 bytes" "$WORK/trunc64.img" "$MNT" -f
	bad_mount "backend=nvme on an image" "$good" "$MNT" -f -o backend=nvme
	bad_mount "backend=zbd on an image" "$good" "$MNT" -f -o backend=zbd
	bad_mount "/dev/null" /dev/null "$MNT" -f
fi
# also through the daemonizing helper: the error reaches its exit status
if [ -x "$MOUNT_P2Z" ]; then
	PO2ZFS=$MOUNT_P2Z bad_mount "mount.po2zfs errors=bogus" "$good" "$MNT" -o "errors=bogus$o"
	PO2ZFS=$MOUNT_P2Z bad_mount "mount.po2zfs missing device" "$WORK/nonexistent" "$MNT"
fi
# the good device still mounts and works
DEV=$good
p2z_mount
p2z_reset_seq 0
append "$MNT/seq/0" 0 "$LBA" 201
verify "$MNT/seq/0" 0 "$LBA" 201
p2z_umount
exit 0
