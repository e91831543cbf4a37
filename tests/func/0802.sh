#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every mount locks its emulated image, read-only ones too: while a daemon
# has the image, po2zfs-emu create --force refuses it (EBUSY, one line)
# and the daemon goes on serving, instead of dying of SIGBUS on a
# reformatted zone table. One writer or any number of read-only mounts.
. "$(dirname "$0")/common.sh"

p2z_init "any mount locks the image: create --force refuses, daemon lives"
need_emu "po2zfs-emu create --force on the image"
need_prog sha256sum
p2z_device 3M/3M/4096 4 0
p2z_mount
append "$MNT/seq/0" 0 $((LBA * 4)) 802
p2z_umount

# busy WHAT CMD...: CMD fails with a one-line "in use" message.
busy()
{
	local what=$1 out rc

	shift
	out=$("$@" 2>&1)
	rc=$?
	[ $rc -ne 0 ] || fail "$what: succeeded while mounted"
	[ "$(printf '%s\n' "$out" | grep -c .)" = 1 ] ||
		fail "$what: expected one line, got: $out"
	case $out in
	*"in use"* | *busy*) ;;
	*) fail "$what: not a busy error: $out" ;;
	esac
	info "ok: $what: $out"
}

for o in ro rw; do
	p2z_mount "$o"
	sum=$(sha256sum <"$DEV")
	busy "create --force under a $o mount" "$EMU" create "$DEV" \
		--zone-size 1M --zones 2 --force
	assert_eq "$sum" "$(sha256sum <"$DEV")" "image after the refused create ($o)"
	m2=$WORK/mnt2
	mkdir -p "$m2"
	# one writer or any number of readers: a read-write mount beside any
	# mount, and any mount beside a read-write one, is refused
	for o2 in rw ro; do
		[ "$o" = ro ] && [ "$o2" = ro ] && continue
		busy "a second $o2 mount beside a $o mount" \
			"$MOUNT_P2Z" "$DEV" "$m2" -o "$o2"
		if is_mounted "$m2"; then
			umount "$m2"
			fail "second $o2 mount beside a $o mount: mounted"
		fi
	done
	# still serving: the data and the zone table are what they were
	kill -0 "$DAEMON_PID" || fail "daemon died ($o)"
	verify "$MNT/seq/0" 0 $((LBA * 4)) 802
	assert_size "$MNT/seq/0" $((LBA * 4)) "$o mount after the refused create"
	p2z_umount
done

# Unmounted, the image is free again.
"$EMU" create "$DEV" --zone-size 1M --zones 2 --force ||
	fail "create --force after the unmount"
exit 0
