# shellcheck shell=bash disable=SC2034
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Crash cycles, shared by 1001 and 1002. One cycle: NW writer threads of
# p2z_crash append self-describing records (4 KiB to 256 KiB, O_APPEND,
# O_DIRECT) to seq/0 .. seq/NZ-1, logging each acknowledged one; the daemon
# is killed with SIGKILL after a random delay; the dead mount is detached
# (umount -l); the device is mounted again and p2z_crash verify checks that
# every acknowledged record of every cycle since the zone's last reset is
# there, whole and in order, that every byte up to the size parses as
# records (the last may be an unacknowledged prefix of one), that
# user.zone.wp equals the size and that a read at the size returns nothing.
# Zones more than half full (or holding more than 16 MiB) are reset before
# a cycle.
#
# The kill delay is the variable under test, not a synchronisation: it is
# drawn from bash's PRNG seeded with P2Z_CRASH_SEED (printed; set it to
# replay a failure). Environment:
#   P2Z_CRASH_CYCLES  cycles (default 5; the documented long run is 100)
#   P2Z_CRASH_SEED    PRNG seed (default: from the clock)
#   P2Z_CRASH_MAX_MS  largest kill delay in ms (default: the test's)

# crash_find_helper: CRASH = the p2z_crash program (built, or compiled here)
crash_find_helper()
{
	CRASH=$P2Z_BUILD/tests/p2z_crash
	[ -x "$CRASH" ] && return 0
	CRASH=$WORK/p2z_crash
	command -v "${CC:-cc}" >/dev/null ||
		skip "p2z_crash helper not built and no C compiler"
	"${CC:-cc}" -D_GNU_SOURCE -O2 -pthread -o "$CRASH" \
		"$P2Z_FUNC_DIR/helpers/p2z_crash.c" || fail "cannot build p2z_crash"
}

# crash_cycles GEOM NZ NW MAXMS [po2zfs-emu create options...]: the whole
# test on a fresh device of geometry GEOM (emulator) or P2Z_TEST_DEV, NZ
# zones, NW writers, kill delays of 20 to 20 + MAXMS ms. Sets CR_ACKED,
# CR_PAST_WP, CR_TORN.
crash_cycles()
{
	local geom=$1 nz=$2 nw=$3 log=$WORK/acks.log c z ms out rc
	local cycles=${P2Z_CRASH_CYCLES:-5} maxms=${P2Z_CRASH_MAX_MS:-$4}
	local seed=${P2Z_CRASH_SEED:-$(($(date +%s%N) % 1000000007))}
	local image='' total=0 n limit

	shift 4

	crash_find_helper
	info "seed $seed (P2Z_CRASH_SEED=$seed replays the kill times), $cycles cycles"
	RANDOM=$seed
	p2z_device "$geom" $((nz + 2)) 0 "$@"
	[ "${EMU_GEOM:-1}" = 1 ] && image=$DEV
	: >"$log"
	CR_ACKED=0
	CR_PAST_WP=0
	CR_TORN=0
	p2z_mount
	need_seq "$nz"
	# what a verification reads stays small (slow guests read it too)
	limit=$((CAP / 2 < 16 * 1024 * 1024 ? CAP / 2 : 16 * 1024 * 1024))
	for ((c = 1; c <= cycles; c++)); do
		for ((z = 0; z < nz; z++)); do
			stat_field "$MNT/seq/$z" size
			[ "$REPLY" -gt "$limit" ] || continue
			expect OK "reset seq/$z before cycle $c" \
				truncate "$MNT/seq/$z" 0
			echo "R $z $c" >>"$log"
		done
		ms=$((20 + RANDOM % maxms))
		"$CRASH" write "$MNT/seq" "$log" "$c" "$nz" "$nw" "$seed" \
			>"$WORK/writers.out" 2>&1 &
		BG_PIDS+=($!)
		sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
		p2z_kill_daemon
		wait "${BG_PIDS[-1]}"
		rc=$?
		unset 'BG_PIDS[-1]'
		[ $rc = 0 ] || fail "cycle $c: writers exited $rc: $(cat "$WORK/writers.out")"
		n=$(sed -n 's/^acked=//p' "$WORK/writers.out")
		p2z_mount
		# shellcheck disable=SC2086
		out=$("$CRASH" verify "$MNT/seq" "$log" "$c" "$nz" $image 2>&1) ||
			fail "cycle $c (kill after $ms ms, seed $seed): $out"
		info "cycle $c: kill after $ms ms, $n records acknowledged; $out"
		total=$((total + n))
		case $out in
		*" lost=0 "*) ;;
		*) fail "cycle $c: records lost: $out" ;;
		esac
		[[ $out =~ past_wp=([0-9]+) ]] &&
			CR_PAST_WP=$((CR_PAST_WP + BASH_REMATCH[1]))
		[[ $out =~ torn=([0-9]+) ]] && CR_TORN=${BASH_REMATCH[1]}
	done
	CR_ACKED=$total
	still_serving "$MNT/seq/$nz"
	p2z_umount
	info "cycles=$cycles records_acknowledged=$total records_lost=0 writes_cut_past_wp=$CR_PAST_WP torn_records_now=$CR_TORN"
}
