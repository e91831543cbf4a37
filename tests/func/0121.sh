#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A worker about to sleep on another request hands its receiving over
# (src/fs_loop.c, receivers and spares). With one receiving worker
# (P2Z_FS_RECEIVERS=1), a write through po2 ahead of its zone's write
# pointer is held for its predecessor; the predecessor, written through
# the zone file after it, must still be received: both writes succeed
# and the zone holds both. Without the handoff the held write is the one
# receiver, the predecessor waits in /dev/fuse until the hold bound
# fails the held write (EINVAL).
. "$(dirname "$0")/common.sh"

p2z_init "a held write leaves a receiver behind"

p2z_device 96M/80M/4096 8
export P2Z_FS_RECEIVERS=1
p2z_mount
unset P2Z_FS_RECEIVERS
p2z_reset_seq 2
xattr "$MNT/seq/2" user.zone.po2_start
z=$REPLY

# the write ahead, through po2: held until the zone's first LBA is written
"$TIO" write "$MNT/po2" $((z + 4096)) 4096 -s 31 >"$WORK/ahead.out" &
pid=$!
# its request is at the daemon once the writer sleeps waiting for the answer
for ((i = 0; i < 400; i++)); do
	case $(cat "/proc/$pid/wchan" 2>/dev/null) in
	*request_wait_answer* | *fuse_*) break ;;
	esac
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.025
done
kill -0 "$pid" 2>/dev/null ||
	fail "the write ahead ended before its predecessor: $(cat "$WORK/ahead.out")"
append "$MNT/seq/2" 0 4096 30
wait "$pid"
assert_eq 4096 "$(cat "$WORK/ahead.out")" "the held write, once its predecessor was written"
assert_size "$MNT/seq/2" 8192
verify "$MNT/seq/2" 0 4096 30
expect 4096 "read back the held write through seq/2" \
	read "$MNT/seq/2" 4096 4096 -s 31 -P $((z + 4096))
grep -q "a spare worker cannot receive" "$WORK/daemon.log" &&
	fail "the daemon could not hand over receiving"
still_serving "$MNT/seq/2"
exit 0
