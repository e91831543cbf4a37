#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# errors=repair after fail-next-io, read-only and offline faults (zonefs
# table, see errors.sh).
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/errors.sh"

p2z_init "errors=repair after injected faults"
errors_test repair
exit 0
