#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# po2 view coherence: a reader keeping the po2 view open sees zone-file
# appends and resets at once (no stale cache across the two names), and a
# cached zone-file reader sees writes made through po2.
. "$(dirname "$0")/common.sh"

p2z_init "po2 view coherent with the zone files"
p2z_device 3M/3M/4096 4 0
p2z_mount
p2z_reset_seq 0 1
need_seq 2
p=$MNT/po2
b0=$((NCNV * PO2))
b1=$(((NCNV + 1) * PO2))
# keep the po2 view open and cached over both zones
exec 5<"$p" || fail "open po2"
expect $((2 * PO2)) "cache seq/0 and seq/1 in po2" read fd:5 "$b0" $((2 * PO2)) -z
append "$MNT/seq/0" 0 $((LBA * 3)) 132
expect $((LBA * 3)) "open po2 reader sees a new append" \
	read fd:5 "$b0" $((LBA * 3)) -s 132 -P 0
expect $((LBA * 3)) "fresh po2 reader sees a new append" \
	read "$p" "$b0" $((LBA * 3)) -s 132 -P 0
expect OK "reset seq/0" truncate "$MNT/seq/0" 0
expect $((LBA * 3)) "open po2 reader sees zeros after a reset" \
	read fd:5 "$b0" $((LBA * 3)) -z
append "$MNT/seq/0" 0 "$LBA" 133
expect "$LBA" "open po2 reader sees the rewrite" read fd:5 "$b0" "$LBA" -s 133 -P 0
expect "$LBA" "zone reader sees the rewrite" read "$MNT/seq/0" 0 "$LBA" -s 133
# writes through po2 are seen by a cached zone-file reader
exec 6<"$MNT/seq/1" || fail "open seq/1"
expect 0 "seq/1 empty" read fd:6 0 "$LBA"
expect "$LBA" "po2 write into seq/1" write "$p" "$b1" "$LBA" -s 134 -P 0
expect "$LBA" "open seq/1 reader sees the po2 write" read fd:6 0 "$LBA" -s 134
expect "$LBA" "open po2 reader sees its own write" read fd:5 "$b1" "$LBA" -s 134 -P 0
exec 5<&- 6<&-
still_serving "$MNT/seq/1"
p2z_umount
exit 0
