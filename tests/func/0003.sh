#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Crash: after kill -9 of the daemon, a new mount shows every acknowledged
# write, and a zone left explicitly open by the dead daemon is closed.
. "$(dirname "$0")/common.sh"

p2z_init "kill -9 keeps acknowledged writes; mount closes open zones"

p2z_device "$P2Z_GEOM" 4 0 --max-open 4
p2z_mount explicit-open
p2z_reset_seq 0 1
append "$MNT/seq/0" 0 $((LBA * 3)) 7
append "$MNT/seq/0" $((LBA * 3)) $((1024 * 1024)) 7
expect "$LBA" "fsync'd append to seq/1" write "$MNT/seq/1" 0 "$LBA" -s 8 -S
# hold seq/2 open for writing: explicit-open opens the zone
exec 5>>"$MNT/seq/2" || fail "open seq/2 for writing"
assert_cond "$MNT/seq/2" explicit-open "held open for writing"
exec 6>>"$MNT/seq/3" || fail "open seq/3 for writing"
expect "$LBA" "append through the held fd" write fd:6 0 "$LBA" -s 9
p2z_kill_daemon
exec 5>&- 6>&-

p2z_mount
assert_size "$MNT/seq/0" $((LBA * 3 + 1024 * 1024)) "after crash"
verify "$MNT/seq/0" 0 $((LBA * 3 + 1024 * 1024)) 7
assert_size "$MNT/seq/1" "$LBA" "after crash"
verify "$MNT/seq/1" 0 "$LBA" 8
assert_size "$MNT/seq/2" 0 "after crash"
assert_cond_in "empty closed" "$MNT/seq/2" "explicitly open and empty at the crash"
assert_size "$MNT/seq/3" "$LBA" "after crash"
verify "$MNT/seq/3" 0 "$LBA" 9
assert_cond "$MNT/seq/3" closed "explicitly open with data at the crash"
still_serving "$MNT/seq/3"
p2z_umount
exit 0
