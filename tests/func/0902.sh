#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A geometry whose po2 view is 2^63 bytes or more cannot be shown as a file
# (its size would be a negative off_t): the mount, and mount.po2zfs -f, refuse
# it with one clear line. Just below, a po2 view of 2^62 bytes mounts and
# has that exact size. The images are sparse files of 2^61 to 2^62 bytes,
# which only tmpfs holds (ext4 stops at 16 TiB): they live in /dev/shm.
. "$(dirname "$0")/common.sh"

p2z_init "po2 view of 2^63 bytes or more refused at mount"
need_emu "needs huge sparse emulated images"
[ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] ||
	skip "/dev/shm is not a tmpfs (the only filesystem here with sparse files of 2^62 bytes)"
SHM=$(mktemp -d /dev/shm/p2z-0902.XXXXXX) || fail "mktemp in /dev/shm"
trap 'rc=$?; rm -rf "$SHM"; (exit $rc); p2z_cleanup' EXIT

# mkimg NAME ZONE_BYTES NR_ZONES: a 4096-byte LBA image in $SHM
mkimg()
{
	local out

	DEV=$SHM/$1.img
	out=$("$EMU" create "$DEV" --zone-size "$2" --zone-cap "$2" \
		--zones "$3" --lba-size 4096 2>&1) ||
		fail "po2zfs-emu create $1 ($2 x $3): $out"
}

# refused WHAT PROG ARGS...: PROG must fail with exit status 32, mount
# nothing, and say why in one line
refused()
{
	local what=$1 out rc

	shift
	out=$(timeout 60 "$@" 2>&1)
	rc=$?
	is_mounted "$MNT" && fail "$what: mounted a po2 view of 2^63 bytes or more"
	assert_eq 32 "$rc" "exit status of $what"
	case $out in
	*"2^63 bytes or more"*) ;;
	*) fail "$what: no clear reason in '$out'" ;;
	esac
	assert_eq 1 "$(printf '%s\n' "$out" | wc -l)" "lines printed by $what"
}

# npo2 zone of 2^62 + 4096 bytes: native 2^62 + 4096, po2 view exactly 2^63
mkimg po2-2p63 $(((1 << 62) + 4096)) 1
refused "po2zfs -f (po2 view 2^63)" "$PO2ZFS" "$DEV" "$MNT" -f
refused "mount.po2zfs -f (po2 view 2^63)" "$MOUNT_P2Z" "$DEV" "$MNT" -f
# two zones of 2^61 + 4096: po2 view 2^63 again, by the zone count
mkimg po2-2x2p62 $(((1 << 61) + 4096)) 2
refused "po2zfs -f (2 zones, po2 view 2^63)" "$PO2ZFS" "$DEV" "$MNT" -f

# one zone of 2^61 + 4096 bytes: po2 view 2^62, mounts
mkimg po2-2p62 $(((1 << 61) + 4096)) 1
p2z_mount
stat_field "$MNT/po2" size
assert_eq $((1 << 62)) "$REPLY" "size of po2 (2^62)"
verify_zeros "$MNT/po2" $(((1 << 62) - 8192)) 8192
append "$MNT/seq/0" 0 4096 91
expect 4096 "po2 view of the appended LBA" read "$MNT/po2" 0 4096 -s 91
p2z_umount
exit 0
