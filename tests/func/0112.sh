#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What `sync` means for a mount (po2zfs(7) DURABILITY): plain writes leave
# the device's write cache alone; `sync FILE` (fsync) flushes it once;
# `sync -f FILE` (syncfs) never reaches the daemon (FUSE sends no SYNCFS);
# the daemon flushes once when it lets the device go after an unmount, and
# logs it; a read-only mount does not.
. "$(dirname "$0")/common.sh"

p2z_init "unmount flushes the write cache once; sync FILE flushes, syncfs not"
need_prog sync

# stats_nr NAME: REPLY = "nr=N err=E" of the NAME line, "" if there is none
stats_nr()
{
	run_tio getxattr "$MNT" user.dev.stats
	REPLY=$(echo "$TIO_OUT" | awk -v n="$1" '$1 == n { print $2, $3 }')
}

# assert_stat NAME EXPECTED WHAT
assert_stat()
{
	stats_nr "$1"
	assert_eq "$2" "$REPLY" "$1 ($3)"
}

# flush_lines: REPLY = the daemon's "flushed" log lines so far
flush_lines()
{
	REPLY=$(grep -cx "po2zfs: $MNT: flushed the write cache of $DEV" \
		"$WORK/daemon.log")
}

p2z_device
p2z_mount
p2z_reset_seq 0
expect OK "zero user.dev.stats" setxattr "$MNT" user.dev.stats 0
append "$MNT/seq/0" 0 $((LBA * 4)) 71
assert_stat dev.flush "" "plain appends"
sync -f "$MNT/seq/0" || fail "sync -f"
assert_stat fs.fsync "" "syncfs (sync -f) sends FUSE nothing"
assert_stat dev.flush "" "syncfs (sync -f)"
flush_lines
assert_eq 0 "$REPLY" "flush log lines while mounted"
p2z_umount
flush_lines
assert_eq 1 "$REPLY" "flush log lines after the unmount"
tail -n 2 "$WORK/daemon.log" | head -n 1 | grep -qx "po2zfs: $MNT: unmounted $DEV" ||
	fail "the flush is not logged right after the unmount: $(tail -n 2 "$WORK/daemon.log")"

p2z_mount ro
verify "$MNT/seq/0" 0 $((LBA * 4)) 71
p2z_umount
flush_lines
assert_eq 1 "$REPLY" "flush log lines after a read-only mount"

p2z_mount
expect OK "zero user.dev.stats" setxattr "$MNT" user.dev.stats 0
sync "$MNT/seq/0" || fail "sync FILE"
assert_stat fs.fsync "nr=1 err=0" "sync FILE"
assert_stat dev.flush "nr=1 err=0" "sync FILE"
still_serving "$MNT/seq/0"
p2z_umount
flush_lines
assert_eq 2 "$REPLY" "flush log lines after the second read-write mount"
exit 0
