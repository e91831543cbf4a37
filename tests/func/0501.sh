#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# errors=remount-ro after fail-next-io, read-only and offline faults (zonefs
# table, see errors.sh).
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/errors.sh"

p2z_init "errors=remount-ro after injected faults"
errors_test remount-ro
# remount-ro is the default
fault_case default fail-next-io
exit 0
