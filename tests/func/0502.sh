#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# errors=zone-ro after fail-next-io, read-only and offline faults (zonefs
# table, see errors.sh).
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/errors.sh"

p2z_init "errors=zone-ro after injected faults"
errors_test zone-ro
exit 0
