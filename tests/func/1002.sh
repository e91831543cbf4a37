#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Crash consistency with the device state lost mid-write: the emulated
# device waits 20 ms between storing a write's data and advancing its write
# pointer (P2Z_EMU_WRITE_DELAY_US, only to widen that window), so the kill
# lands inside writes, and its zone append limit of 64 KiB splits records
# into several commands, so a kill between them tears a record (as on the
# nvme backend). Same checks as 1001; in addition at least one cycle must
# have left data of its own on the medium just past the write pointer (a
# record's header, or the rest of the torn record that ends the zone: proof
# that the window was hit), which the new mount never shows.
# Long run: P2Z_CRASH_CYCLES=100 P2Z_BUILD=build bash tests/func/1002.sh
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/crash.sh"

p2z_init "crash consistency: kill -9 inside the device's writes"
need_emu "widens the emulated device's write window"
export P2Z_EMU_WRITE_DELAY_US=20000
# 512-byte LBAs here, 4 KiB in 1001
crash_cycles 24M/20M/512 3 6 500 --max-append 64K
[ "$CR_PAST_WP" -gt 0 ] ||
	fail "no cycle killed the daemon inside a device write (past_wp=0)"
exit 0
