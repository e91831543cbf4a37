#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck disable=SC2119 # every mount here is without options
# Power cut: on an image with a volatile write cache (po2zfs-emu create
# --volatile-cache), SIGKILL of the daemon loses everything not flushed, as
# a power cut does. Each cycle, four writers append self-describing 16 KiB
# records, one write each (one FUSE request, one device write), to seq/0 (dd oflag=dsync: O_DSYNC, a FUA write),
# seq/1 (dd conv=fsync: a flush after each record), seq/2 and seq/3 (plain
# writes), logging each acknowledged record; the daemon is killed with
# SIGKILL after a random delay, the device mounted again, and every zone
# checked: its bytes are whole records numbered 0, 1, 2... in order (none
# torn, none out of order), user.zone.wp equals the size, and the po2 view
# reads zeros right past the write pointer. Every acknowledged record of
# seq/0 and seq/1 must be there (sync_lost=0); plain records may be lost.
# Then: records written before a clean unmount are in the image (report)
# and survive a SIGKILL of the next daemon.
#
# The kill delay is the variable under test, drawn from bash's PRNG seeded
# with P2Z_CRASH_SEED (printed). Environment:
#   P2Z_CRASH_CYCLES  cycles (default 20, about 15 s; the long run, 100
#                     cycles, took 75 s here:
#	P2Z_CRASH_CYCLES=100 P2Z_BUILD=build bash tests/func/1005.sh
#   P2Z_CRASH_SEED    PRNG seed (default: from the clock)
#   P2Z_CRASH_MAX_MS  kill delays are 50 ms + 0 .. this (default 400)
# Summary line: power-cut: cycles=N sync_acked=X sync_lost=0 plain_acked=Y
# plain_lost=Z
. "$(dirname "$0")/common.sh"

p2z_init "power cut: kill -9 on a volatile-cache image, no synced record lost"
need_emu "needs po2zfs-emu create --volatile-cache"
need_prog dd
need_prog awk

PC_REC=16384 # bytes per record: 512 lines of 32 bytes
PC_LINES=$((PC_REC / 32))
PC_KINDS=(dsync fsync plain plain)

# pc_writer Z N: append records N, N+1... to seq/Z as PC_KINDS[Z] says until
# a write fails (the daemon died); log each acknowledged one in ack.Z
pc_writer()
{
	local z=$1 n=$2 f=$MNT/seq/$1 line
	local -a how

	case ${PC_KINDS[$z]} in
	dsync) how=("oflag=append,dsync" conv=notrunc) ;;
	fsync) how=(oflag=append "conv=notrunc,fsync") ;;
	*) how=(oflag=append conv=notrunc) ;;
	esac
	while :; do
		printf -v line '%-31s' "pc z=$z n=$n"
		yes "$line" | head -c "$PC_REC" |
			dd of="$f" bs="$PC_REC" count=1 iflag=fullblock \
				"${how[@]}" status=none 2>/dev/null || break
		echo "$n" >>"$WORK/ack.$z"
		n=$((n + 1))
	done
}

# pc_check Z: REPLY = records in seq/Z, after checking they are whole and in
# order, that user.zone.wp is the size and that nothing past it is visible
pc_check()
{
	local z=$1 f=$MNT/seq/$1 size n out

	stat_field "$f" size
	size=$REPLY
	n=$((size / PC_REC))
	[ $((size % PC_REC)) = 0 ] ||
		fail "seq/$z: size $size is not whole records: a torn write"
	assert_xattr "$f" user.zone.wp "$size"
	out=$(awk -v z="$z" -v per="$PC_LINES" '
		{
			n = int((NR - 1) / per)
			want = sprintf("%-31s", "pc z=" z " n=" n)
			if ($0 != want) {
				print "record " n " line " NR ": \"" $0 "\", expected \"" want "\""
				exit 1
			}
		}' "$f") || fail "seq/$z: $out"
	# the po2 view: zeros from the write pointer on (if the zone has room)
	if [ "$size" -lt "$CAP" ]; then
		out=$(dd if="$MNT/po2" bs=4096 count=4 status=none \
			iflag=skip_bytes skip=$((z * PO2 + size)) | tr -d '\0' | wc -c)
		[ "$out" = 0 ] ||
			fail "seq/$z: $out non-zero bytes past the write pointer $size"
	fi
	REPLY=$n
}

seed=${P2Z_CRASH_SEED:-$(($(date +%s%N) % 1000000007))}
cycles=${P2Z_CRASH_CYCLES:-20}
maxms=${P2Z_CRASH_MAX_MS:-400}
info "seed $seed (P2Z_CRASH_SEED=$seed replays the kill times), $cycles cycles"
RANDOM=$seed

p2z_device 96M/80M/4096 4 0 --volatile-cache
out=$("$EMU" report "$DEV" 2>&1) || fail "po2zfs-emu report: $out"
[[ $out == *"write cache:    volatile"* ]] ||
	fail "report does not show the volatile cache: $out"
p2z_mount
need_seq 4

sync_acked=0 sync_lost=0 plain_acked=0 plain_lost=0
have=(0 0 0 0)
for ((c = 1; c <= cycles; c++)); do
	pids=()
	for z in 0 1 2 3; do
		# keep what a check reads small: reset a zone past 8 MiB
		if [ $((have[z] * PC_REC)) -gt $((8 << 20)) ]; then
			expect OK "reset seq/$z" truncate "$MNT/seq/$z" 0
			have[z]=0
		fi
		: >"$WORK/ack.$z"
		pc_writer "$z" "${have[z]}" &
		pids+=($!)
	done
	BG_PIDS+=("${pids[@]}")
	ms=$((50 + RANDOM % maxms))
	sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
	p2z_kill_daemon
	wait "${pids[@]}"
	BG_PIDS=()
	p2z_mount
	line=
	for z in 0 1 2 3; do
		acked=$(wc -l <"$WORK/ack.$z")
		last=$(tail -n 1 "$WORK/ack.$z")
		pc_check "$z"
		lost=0
		[ "$acked" -gt 0 ] && [ "$REPLY" -le "$last" ] &&
			lost=$((last + 1 - REPLY))
		if [ "${PC_KINDS[z]}" = plain ]; then
			plain_acked=$((plain_acked + acked))
			plain_lost=$((plain_lost + lost))
		else
			sync_acked=$((sync_acked + acked))
			sync_lost=$((sync_lost + lost))
			[ "$lost" = 0 ] ||
				fail "cycle $c (kill after $ms ms, seed $seed): seq/$z (${PC_KINDS[z]}): $lost of $acked acknowledged records lost (records up to $last acknowledged, $REPLY there)"
		fi
		line+=" seq/$z ${PC_KINDS[z]} acked=$acked kept=$((REPLY - have[z]))"
		have[z]=$REPLY
	done
	info "cycle $c: kill after $ms ms:$line"
done

# Unmount flushes: plain records, a clean unmount, the image holds them
# (report shows the stored write pointer); a daemon killed right after the
# next mount loses none of them.
: >"$WORK/ack.3"
for ((n = have[3]; n < have[3] + 8; n++)); do
	printf -v line '%-31s' "pc z=3 n=$n"
	yes "$line" | head -c "$PC_REC" |
		dd of="$MNT/seq/3" bs="$PC_REC" count=1 iflag=fullblock \
			oflag=append conv=notrunc status=none ||
		fail "plain write of record $n before the unmount"
done
want=$(((have[3] + 8) * PC_REC))
p2z_umount
out=$("$EMU" report "$DEV" 2>&1) || fail "po2zfs-emu report: $out"
wp=$(awk '$1 == 3 && $2 == "seq" { print $5 }' <<<"$out")
assert_eq "$want" "$wp" "stored write pointer of zone 3 after a clean unmount"
p2z_mount
p2z_kill_daemon
p2z_mount
pc_check 3
assert_eq "$((have[3] + 8))" "$REPLY" "seq/3 records after unmount, kill -9"
still_serving "$MNT/seq/0"
p2z_umount

info "power-cut: cycles=$cycles sync_acked=$sync_acked sync_lost=$sync_lost plain_acked=$plain_acked plain_lost=$plain_lost"
[ "$sync_lost" = 0 ] || fail "synchronous records lost"
[ "$sync_acked" -gt 0 ] || fail "no synchronous record acknowledged in $cycles cycles"
exit 0
