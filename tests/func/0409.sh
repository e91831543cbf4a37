#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Crash with requests in flight: on an image with a volatile write cache
# (po2zfs-emu create --volatile-cache: SIGKILL of the daemon loses what was
# not flushed), each cycle runs p2z_uring load: io_uring appenders with 4
# O_DIRECT writes in flight each, on seq/0 (RWF_DSYNC), seq/1 (each write
# linked to an fsync), seq/2 and seq/3 (plain), and an io_uring reader with
# 16 O_DIRECT reads in flight below the completed appends, checking every
# byte as it runs; the daemon is killed with SIGKILL after a random delay,
# the device mounted again and p2z_uring check run: every zone's size equals
# user.zone.wp, is whole LBAs, every byte up to it is the pattern of its
# offset (nothing torn, nothing out of order), a read at the size returns 0
# bytes, and every acknowledged RWF_DSYNC or fsync'd byte of seq/0 and seq/1
# is there. After the last cycle and a clean unmount, po2zfs-emu report
# reads the image (its own checks) and its stored write pointers are the
# sizes the mount showed.
# Environment:
#   P2Z_CRASH_CYCLES  cycles (default 10, about 5 s; the long run, 100
#                     cycles, took 51 s here:
#	P2Z_CRASH_CYCLES=100 P2Z_BUILD=build bash tests/func/0409.sh
#   P2Z_CRASH_SEED    PRNG seed of the kill delays (default: from the clock)
#   P2Z_CRASH_MAX_MS  kill delays are 50 ms + 0 .. this (default 300)
. "$(dirname "$0")/common.sh"

p2z_init "kill -9 with io_uring reads and dsync/fsync'd appends in flight"
need_emu "needs po2zfs-emu create --volatile-cache"
need_prog awk
URING=$P2Z_BUILD/tests/p2z_uring
[ -x "$URING" ] || skip "p2z_uring helper not built (needs liburing)"

seed=${P2Z_CRASH_SEED:-$(($(date +%s%N) % 1000000007))}
cycles=${P2Z_CRASH_CYCLES:-10}
maxms=${P2Z_CRASH_MAX_MS:-300}
info "seed $seed (P2Z_CRASH_SEED=$seed replays the kill times), $cycles cycles"
RANDOM=$seed

p2z_device 96M/80M/4096 5 0 --volatile-cache
p2z_mount
need_seq 5

declare -A size
acked=0 lost=0
for ((c = 1; c <= cycles; c++)); do
	for z in 0 1 2 3; do
		stat_field "$MNT/seq/$z" size
		[ "$REPLY" -gt $((16 << 20)) ] || continue
		expect OK "reset seq/$z before cycle $c" truncate "$MNT/seq/$z" 0
	done
	: >"$WORK/ack.log"
	"$URING" load "$MNT/seq" "$WORK/ack.log" 60 >"$WORK/load.out" 2>&1 &
	BG_PIDS+=($!)
	ms=$((50 + RANDOM % maxms))
	sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
	p2z_kill_daemon
	wait "${BG_PIDS[-1]}"
	rc=$?
	unset 'BG_PIDS[-1]'
	[ $rc = 0 ] ||
		fail "cycle $c (kill after $ms ms, seed $seed): load exited $rc: $(cat "$WORK/load.out")"
	p2z_mount
	out=$("$URING" check "$MNT/seq" "$WORK/ack.log" 2>&1) ||
		fail "cycle $c (kill after $ms ms, seed $seed): $out"
	while read -r z s a l; do
		size[$z]=${s#size=}
		[ "$z" -lt 2 ] || continue
		a=${a#acked=}
		[ "$a" -gt 0 ] && acked=$((acked + 1))
		lost=$((lost + ${l#lost=}))
	done <<<"$out"
	info "cycle $c: kill after $ms ms: $(cat "$WORK/load.out"); $(tr '\n' ' ' <<<"$out")"
done
[ "$lost" = 0 ] || fail "$lost acknowledged synchronous bytes lost"
[ "$acked" -gt 0 ] || fail "no synchronous write acknowledged in $cycles cycles"
still_serving "$MNT/seq/4"
p2z_umount
out=$("$EMU" report "$DEV" 2>&1) || fail "po2zfs-emu report: $out"
for z in 0 1 2 3; do
	wp=$(awk -v z="$z" '$1 == z && $2 == "seq" { print $5 }' <<<"$out")
	assert_eq "${size[$z]}" "$wp" "stored write pointer of zone $z after the last cycle"
done
info "cycles=$cycles sync_zone_cycles_acked=$acked sync_bytes_lost=$lost"
exit 0
