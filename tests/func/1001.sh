#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Crash consistency: kill -9 of the daemon at random moments while 6
# writers append records to 3 zones; after each new mount every
# acknowledged record is there, intact, in order, and nothing past the
# write pointer is visible (rules in crash.sh and helpers/p2z_crash.c).
# Default 5 cycles; the long run:
#	P2Z_CRASH_CYCLES=100 P2Z_BUILD=build bash tests/func/1001.sh
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/crash.sh"

p2z_init "crash consistency: kill -9 during appends, nothing acknowledged lost"
# npo2 zones of 96 MiB, 80 MiB capacity; kills within 20-270 ms, before
# the zones fill (a full zone ends its writers with a write cut short)
crash_cycles 96M/80M/4096 3 6 250
exit 0
