#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# errors= matrix, the cells "at mount" (the matrix and the tests of the
# other cells are in errors.sh): under each errors= mode, read-only and
# offline zones found at mount are shown as zonefs shows them with no
# policy action, and an I/O error pending at mount hits the first write
# and takes the mode's action as while mounted; the daemon never exits and
# serves the other zones.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/errors.sh"

p2z_init "errors= modes x faults present at mount"
need_emu "injects faults with po2zfs-emu set-zone"
for mode in remount-ro zone-ro zone-offline repair; do
	cond_at_mount_case "$mode"
	fault_case "$mode" fail-next-io at-mount
done
exit 0
