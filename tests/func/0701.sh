#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# fio sequential writes, ioengine=libaio, direct=1, iodepth 8, bs 128k and 1M,
# on zone files: data lands byte-exact and in order (crc32c verify with
# offset headers), sizes are exact, and the data survives a remount.
. "$(dirname "$0")/common.sh"

p2z_init "fio libaio iodepth 8 sequential writes"
fio_seq_suite libaio
exit 0
