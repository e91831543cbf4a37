#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Read-ahead: the daemon raises its mount's read-ahead (the bdi's
# read_ahead_kb) from the kernel's 128 KiB to 1024, FUSE's largest request,
# so a sequential buffered reader costs one READ per MiB: 1 MiB reads of a
# 4 MiB zone file (less if the zone is smaller), from a cold page cache,
# arrive as READs of 1 MiB, one each, and return the bytes written.
. "$(dirname "$0")/common.sh"

p2z_init "read-ahead of the mount: 1024 KiB, buffered reads in 1 MiB READs"
need_prog getfattr "reads the multi-line user.dev.stats value"
need_prog setfattr "zeroes user.dev.stats"
need_prog mountpoint "names the mount's device"
[ "$(id -u)" = 0 ] || skip "only root may set a bdi's read_ahead_kb"
p2z_device 8M/8M/4096 2 0
p2z_mount
p2z_reset_seq 0
n=$((CAP / 1048576))
[ "$n" -le 4 ] || n=4
[ "$n" -ge 1 ] || skip "zones below 1 MiB of capacity"
append "$MNT/seq/0" 0 $((n * 1048576)) 23
p2z_umount

# A fresh mount: nothing of seq/0 cached.
p2z_mount
bdi=/sys/class/bdi/$(mountpoint -d "$MNT")
[ -r "$bdi/read_ahead_kb" ] || fail "$bdi/read_ahead_kb: no such file"
assert_eq 1024 "$(cat "$bdi/read_ahead_kb")" "read_ahead_kb of the mount"
setfattr -n user.dev.stats -v 0 "$MNT" || fail "setfattr user.dev.stats 0"
dd if="$MNT/seq/0" of="$WORK/r" bs=1M status=none || fail "buffered read"
line=$(getfattr --only-values --absolute-names -n user.dev.stats "$MNT" |
	awk '$1 == "fs.read"')
if [ "$LBA" -ge 4096 ]; then
	assert_eq "fs.read nr=$n err=0 bytes=$((n * 1048576))" \
		"${line%% avg_us=*}" "READ requests"
	assert_eq "sizes=1M:$n" "${line##* }" "READ sizes"
else
	# zone files of sub-page LBAs are direct I/O (po2zfs(7)): no page
	# cache, no read-ahead; dd's reads go as they are, the last at the end
	assert_eq "err=0 bytes=$((n * 1048576))" \
		"$(echo "$line" | awk '{ print $3, $4 }')" "READs, direct I/O"
fi
"$TIO" pattern 23 0 $((n * 1048576)) >"$WORK/ref"
cmp -s "$WORK/r" "$WORK/ref" || fail "buffered read differs from what was written"
p2z_umount
exit 0
