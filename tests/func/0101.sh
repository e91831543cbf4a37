#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Appends: size = write pointer after each append, bytes read back exactly,
# reads stop at the write pointer (EOF past it), fsync succeeds.
. "$(dirname "$0")/common.sh"

p2z_init "appends, sizes, byte-exact read-back, EOF at the write pointer"

for g in $(p2z_geoms); do
	p2z_device "$g" 4 0
	p2z_mount
	p2z_reset_seq 0 1
	f=$MNT/seq/0
	size=0
	# one LBA, three LBAs, 1 MiB + 1 LBA in one write, 3 MiB in 128 KiB
	# writes, then a 2 MiB write through O_DIRECT
	for len in "$LBA" $((LBA * 3)) $((1024 * 1024 + LBA)); do
		append "$f" "$size" "$len" 1
		size=$((size + len))
		assert_size "$f" "$size" "$g, after appending $len"
	done
	# up to 3 MiB (half the room left on small zones) in 128 KiB writes
	big=$((3 * 1024 * 1024))
	[ $((size + 2 * big)) -le "$CAP" ] || big=$(((CAP - size) / 2 / LBA * LBA))
	expect "$big" "$big bytes in 128 KiB writes ($g)" \
		write "$f" "$size" "$big" -s 1 -b 128K
	size=$((size + big))
	assert_size "$f" "$size" "$g, after $big more"
	if [ $((size + 2 * 1024 * 1024)) -le "$CAP" ]; then
		expect $((2 * 1024 * 1024)) "2 MiB O_DIRECT write ($g)" \
			write "$f" "$size" $((2 * 1024 * 1024)) -s 1 -d
		size=$((size + 2 * 1024 * 1024))
	fi
	# user.zone.wp is the write pointer's offset in the zone (as
	# po2zfs-emu report prints it); user.zone.size the native zone size
	assert_xattr "$f" user.zone.wp "$size" "$g"
	assert_xattr "$f" user.zone.size "$ZSIZE" "$g"
	# read back everything, whole and in odd pieces, buffered and direct
	verify "$f" 0 "$size" 1
	expect "$size" "read back in 4 KiB reads ($g)" read "$f" 0 "$size" -s 1 -b 4096
	expect "$size" "read back with O_DIRECT ($g)" read "$f" 0 "$size" -s 1 -d
	expect 1000 "unaligned buffered read ($g)" read "$f" 7 1000 -s 1
	# EOF at the write pointer
	expect "$LBA" "read straddling the write pointer ($g)" \
		read "$f" $((size - LBA)) $((LBA * 4)) -s 1
	expect 0 "read at the write pointer ($g)" read "$f" "$size" "$LBA"
	expect 0 "read past the write pointer ($g)" read "$f" $((size + 1024 * 1024)) "$LBA"
	expect 0 "read of an empty zone ($g)" read "$MNT/seq/1" 0 "$LBA"
	cmp -n "$size" "$f" <("$TIO" pattern 1 0 "$size") ||
		fail "cmp seq/0 against the pattern ($g)"
	got=$(wc -c <"$f")
	assert_eq "$size" "$got" "bytes cat/wc reads ($g)"
	expect OK "fsync seq/0 ($g)" fsync "$f"
	# the other zone is untouched
	assert_size "$MNT/seq/1" 0 "$g, neighbour"
	still_serving "$f"
	p2z_umount
	info "ok: $g"
done
exit 0
