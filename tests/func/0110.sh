#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Conventional zone files take writable shared mappings, as on zonefs: bytes
# stored through the mapping and msync'ed reach the device, exactly, and
# survive a remount. Sequential zone files still refuse such mappings.
. "$(dirname "$0")/common.sh"

p2z_init "writable shared mapping of a conventional zone file"
for g in $(cnv_geoms); do
	p2z_cnv_mount "$g"
	f=$MNT/cnv/0
	# zeros around the stored range first (a real device may hold data)
	ofs=$(((CAP / 2) / 65536 * 65536 + LBA))
	len=$((3 * 4096 + LBA))
	expect $((len + 2 * 4096)) "zeros around the range ($g)" \
		write "$f" $((ofs - 4096)) $((len + 2 * 4096)) -z
	expect OK "store through a shared mapping + msync ($g)" \
		mmap "$f" rw 81 "$ofs" "$len"
	verify "$f" "$ofs" "$len" 81
	verify_zeros "$f" $((ofs - 4096)) 4096
	verify_zeros "$f" $((ofs + len)) 4096
	# the last bytes of the file, through a second mapping
	expect OK "store at the end of the file ($g)" \
		mmap "$f" rw 82 $((CAP - LBA)) "$LBA"
	expect ENODEV "writable shared mapping of a sequential file ($g)" \
		mmap "$MNT/seq/0" rw
	p2z_umount

	p2z_mount
	CAP=$CNV_CAP # p2z_mount set it to the sequential zones' capacity
	verify "$f" "$ofs" "$len" 81
	verify_zeros "$f" $((ofs - 4096)) 4096
	verify_zeros "$f" $((ofs + len)) 4096
	verify "$f" $((CAP - LBA)) "$LBA" 82
	# and through the po2 view, which never uses the page cache
	xattr "$f" user.zone.po2_start
	z=$REPLY
	expect "$len" "po2 view of the stored range ($g)" \
		read "$MNT/po2" $((z + ofs)) "$len" -s 81 -P "$ofs"
	still_serving "$MNT/seq/0"
	p2z_umount
	info "ok: $g"
done
exit 0
