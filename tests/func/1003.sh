#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Stress: on 4 zones, threads mixing appends (direct and not), cached and
# O_DIRECT reads, resets, finishes, stat, getxattr, explicit opens and
# closes, plus requests at depth: an io_uring reader with 16 O_DIRECT reads
# in flight and io_uring bursts of 2 to 8 O_DIRECT appends in flight on one
# zone, for a bounded time, with invariants checked as they run (see
# helpers/p2z_stress.c): read-back equals what was appended, appends in
# flight complete whole and land in order, no read returns bytes past
# user.zone.wp, a read below the appended size returns all of it, the size
# never shrinks between resets, user.zone.wp equals the size, the open and
# active zone limits hold. Three rounds: a npo2 geometry with 4 KiB LBAs, a po2
# one with 512-byte LBAs (pages hold several LBAs), and that one again with
# -o explicit-open. The daemon must exit 0 at unmount and print no
# sanitizer report: the test command runs this in the gcc build and under
# the ASan+UBSan and TSan builds (TSAN_OPTIONS=halt_on_error=1:exitcode=66);
# the QEMU guest runs it only when named.
# P2Z_STRESS_SECONDS: seconds per round (default 4).
. "$(dirname "$0")/common.sh"

p2z_init "stress: concurrent appends, reads, truncates, stat, getxattr, opens"
STRESS=$P2Z_BUILD/tests/p2z_stress
if [ ! -x "$STRESS" ]; then
	STRESS=$WORK/p2z_stress
	command -v "${CC:-cc}" >/dev/null ||
		skip "p2z_stress helper not built and no C compiler"
	echo '#include <liburing.h>' | "${CC:-cc}" -E - >/dev/null 2>&1 ||
		skip "p2z_stress helper not built and liburing.h missing (liburing-dev): NO STRESS RUN"
	"${CC:-cc}" -D_GNU_SOURCE -O2 -pthread -o "$STRESS" \
		"$P2Z_FUNC_DIR/helpers/p2z_stress.c" -luring ||
		fail "cannot build p2z_stress"
fi
secs=${P2Z_STRESS_SECONDS:-4}

# no_sanitizer_report WHAT: the daemon's log holds no sanitizer report
no_sanitizer_report()
{
	local r

	r=$(grep -m 3 -E 'WARNING: ThreadSanitizer|ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:' \
		"$WORK/daemon.log") && fail "$1: sanitizer report in the daemon's log: $r"
	return 0
}

# Rounds "GEOM:OPTION" ("-" for none), P2Z_STRESS_ROUNDS to choose others.
rounds=${P2Z_STRESS_ROUNDS:-12M/10M/4096:- 3M/3M/512:- 3M/3M/512:explicit-open}
for round in $rounds; do
	geom=${round%%:*} opt=${round#*:}
	[ "$opt" = - ] && opt=
	p2z_device "$geom" 5 0 --max-open 2 --max-active 3
	p2z_mount "$opt"
	need_seq 5
	out=$("$STRESS" "$MNT" 4 "$secs" 2>&1)
	rc=$?
	[ $rc = 0 ] || fail "$geom ${opt:-default}: p2z_stress exited $rc: $out"
	info "$geom ${opt:-default}, $secs s: $out"
	# the stress left zones active: free the device's active slots
	p2z_reset_seq 0 1 2 3
	still_serving "$MNT/seq/4"
	p2z_umount
	no_sanitizer_report "$geom ${opt:-default}"
done
exit 0
