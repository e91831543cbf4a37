#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# O_DSYNC, O_SYNC and RWF_DSYNC writes are on stable media when they return
# (po2zfs(7) DURABILITY). Direct-io files (sequential zone writers, O_DIRECT
# opens, po2) get no fsync from the kernel: the daemon writes each such
# request with FUA (or flushes after it), counted once in dev.fua whatever
# the backend does. Plain writes are not. A conventional file written
# through the page cache with O_DSYNC is fsync()ed by the kernel itself:
# one FSYNC, one device flush per write, and no FUA. A mount with -o sync
# makes every write O_DSYNC.
. "$(dirname "$0")/common.sh"

p2z_init "O_DSYNC, O_SYNC, RWF_DSYNC writes: FUA; buffered O_DSYNC: fsync"
need_prog dd

# stats_nr NAME: REPLY = "nr=N err=E" of the NAME line, "" if there is none
# (one getxattr call with a 4 KiB buffer: getfattr's second call, sized by
# its first, fails with ERANGE when the fs.xattr line appears in between)
stats_nr()
{
	run_tio getxattr "$MNT" user.dev.stats
	REPLY=$(echo "$TIO_OUT" | awk -v n="$1" '$1 == n { print $2, $3 }')
}

stats_zero()
{
	expect OK "zero user.dev.stats" setxattr "$MNT" user.dev.stats 0
}

# assert_stat NAME EXPECTED WHAT
assert_stat()
{
	stats_nr "$1"
	assert_eq "$2" "$REPLY" "$1 ($3)"
}

p2z_device "$P2Z_GEOM" 4 1
p2z_mount
p2z_reset_seq 0 1
f=$MNT/seq/0
bs=$((LBA * 16))

# Plain appends: nothing forced to stable media.
stats_zero
dd if=/dev/zero of="$f" bs="$bs" count=4 conv=notrunc status=none ||
	fail "dd plain appends"
assert_size "$f" $((bs * 4)) "plain appends"
assert_stat fs.write "nr=4 err=0" "plain appends"
assert_stat dev.fua "" "plain appends"
assert_stat dev.flush "" "plain appends"

# dd oflag=dsync: four O_DSYNC writes, four FUA writes.
stats_zero
dd if=/dev/zero of="$f" bs="$bs" count=4 seek=4 oflag=dsync conv=notrunc \
	status=none || fail "dd oflag=dsync appends"
assert_size "$f" $((bs * 8)) "dsync appends"
assert_stat fs.write "nr=4 err=0" "dd oflag=dsync"
assert_stat dev.fua "nr=4 err=0" "dd oflag=dsync"
assert_stat fs.fsync "" "dd oflag=dsync (direct-io: no fsync from the kernel)"

# O_SYNC (open flag), RWF_DSYNC (per call, two calls), O_DSYNC on po2.
stats_zero
expect "$bs" "O_SYNC append" write "$f" $((bs * 8)) "$bs" -s 61 -Y
assert_stat dev.fua "nr=1 err=0" "O_SYNC append"
expect $((bs * 2)) "RWF_DSYNC appends" write "$f" $((bs * 9)) $((bs * 2)) \
	-s 61 -R -b "$bs"
assert_stat dev.fua "nr=3 err=0" "after two RWF_DSYNC appends"
verify "$f" $((bs * 8)) $((bs * 3)) 61
s1=$((NCNV + 1))
expect "$bs" "O_DSYNC write to po2" write "$MNT/po2" $((s1 * PO2)) "$bs" \
	-s 62 -P 0 -D
assert_stat dev.fua "nr=4 err=0" "after an O_DSYNC po2 write"
verify "$MNT/seq/1" 0 "$bs" 62
assert_stat fs.fsync "" "direct-io writes"

if [ "$NCNV" -gt 0 ]; then
	# O_DIRECT with O_DSYNC on a conventional file: direct-io, FUA.
	stats_zero
	expect "$LBA" "O_DIRECT|O_DSYNC conventional write" write \
		"$MNT/cnv/0" "$LBA" "$LBA" -s 63 -d -D
	assert_stat dev.fua "nr=1 err=0" "O_DIRECT|O_DSYNC conventional write"
	assert_stat fs.fsync "" "O_DIRECT|O_DSYNC conventional write"

	# Through the page cache: the kernel fsyncs after each O_DSYNC write.
	stats_zero
	expect $((LBA * 2)) "buffered O_DSYNC conventional writes" write \
		"$MNT/cnv/0" $((LBA * 4)) $((LBA * 2)) -s 64 -D -b "$LBA"
	assert_stat fs.write "nr=2 err=0" "buffered O_DSYNC writes"
	assert_stat fs.fsync "nr=2 err=0" "buffered O_DSYNC writes"
	assert_stat dev.flush "nr=2 err=0" "buffered O_DSYNC writes"
	assert_stat dev.fua "" "buffered O_DSYNC writes (the kernel's fsync flushes)"
	verify "$MNT/cnv/0" "$LBA" "$LBA" 63
	verify "$MNT/cnv/0" $((LBA * 4)) $((LBA * 2)) 64
else
	info "no conventional zones: their O_DSYNC cases not run"
fi

still_serving "$f"
p2z_umount

# -o sync (MS_SYNCHRONOUS): every write is O_DSYNC for the kernel.
p2z_mount sync
stats_zero
dd if=/dev/zero of="$f" bs="$bs" count=2 oflag=append conv=notrunc \
	status=none || fail "dd appends on a sync mount"
assert_stat dev.fua "nr=2 err=0" "plain appends on a sync mount"
p2z_umount
exit 0
