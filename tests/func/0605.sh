#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# mount(8) calls helpers as "mount.TYPE SPEC DIR [-sfnv] [-o OPTS]", where
# -f is "fake": mount.po2zfs -f checks the options and the device, exits 0
# and mounts nothing, leaving no process behind; a bad option or device
# still fails. po2zfs -f stays the foreground daemon.
. "$(dirname "$0")/common.sh"

p2z_init "mount.po2zfs -f: fake mount"
need_prog timeout
[ -x "$MOUNT_P2Z" ] || fail "$MOUNT_P2Z missing (the build makes the symlink)"
p2z_device 3M/3M/4096 4 0
o=
[ -n "$P2Z_TEST_BACKEND" ] && o=,backend=$P2Z_TEST_BACKEND
sum=
[ -z "$P2Z_TEST_DEV" ] && command -v sha256sum >/dev/null &&
	sum=$(sha256sum <"$DEV")

# fake MODE WHAT ARGS...: mount.po2zfs ARGS; MODE ok: exit 0, no output;
# MODE bad: non-zero, one line. Either way nothing mounted, nothing left.
fake()
{
	local mode=$1 what=$2 out rc

	shift 2
	out=$(timeout -k 5 20 "$MOUNT_P2Z" "$@" 2>&1 </dev/null)
	rc=$?
	if is_mounted "$MNT"; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT"
		fail "$what: mounted"
	fi
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		fail "$what: still running after 20 s"
	fi
	pgrep -f -- " $MNT" >/dev/null && fail "$what: a process is left for $MNT"
	if [ "$mode" = ok ]; then
		[ $rc -eq 0 ] || fail "$what: exit status $rc: $out"
		[ -z "$out" ] || fail "$what: unexpected output: $out"
	else
		[ $rc -ne 0 ] || fail "$what: exit status 0"
		[ "$(printf '%s\n' "$out" | grep -c .)" = 1 ] ||
			fail "$what: expected a one-line message, got: $out"
	fi
	info "ok: $what: exit $rc${out:+: $out}"
}

fake ok "-f" "$DEV" "$MNT" -f -o "defaults$o"
fake ok "-f with options" "$DEV" "$MNT" -f -o "errors=zone-ro,uid=1,perm=600,allow_other$o"
fake ok "-sfnv, as mount(8) passes it" "$DEV" "$MNT" -sfnv -o "ro$o"
fake ok "-o before -f" "$DEV" "$MNT" -o "rw$o" -f
fake bad "-f with an unknown option" "$DEV" "$MNT" -f -o "bogus$o"
fake bad "-f with errors=bogus" "$DEV" "$MNT" -f -o "errors=bogus$o"
fake bad "-f with a missing device" "$WORK/nonexistent" "$MNT" -f
fake bad "-f with a missing mount point" "$DEV" "$WORK/nonexistent" -f
if [ -z "$P2Z_TEST_DEV" ]; then
	echo "not a zoned device" >"$WORK/text"
	fake bad "-f with a text file" "$WORK/text" "$MNT" -f
fi
[ -n "$sum" ] && assert_eq "$sum" "$(sha256sum <"$DEV")" "image after fake mounts"

# po2zfs -f: the foreground daemon, as the other tests use it
p2z_mount
p2z_reset_seq 0
append "$MNT/seq/0" 0 "$LBA" 221
verify "$MNT/seq/0" 0 "$LBA" 221
p2z_umount
exit 0
