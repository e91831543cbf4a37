#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# xattrs are read-only and listable: getfattr -d / listxattr show all of
# them; setting, replacing or removing any: EPERM or ENOTSUP, never a crash.
. "$(dirname "$0")/common.sh"

p2z_init "xattrs: listed, read-only"
p2z_device
p2z_mount
p2z_reset_seq 0
zone_names="user.zone.capacity user.zone.cond user.zone.index user.zone.po2_start user.zone.size user.zone.start user.zone.type user.zone.wp"
dev_names="user.dev.backend user.dev.lba_size user.dev.max_active user.dev.max_append user.dev.max_open user.dev.nr_zones user.dev.path user.dev.po2_zone_size user.dev.stats user.dev.zone_size"

run_tio listxattr "$MNT/seq/0"
assert_eq "$(echo "$zone_names" | tr ' ' '\n')" "$(echo "$TIO_OUT" | sort)" "xattr names of seq/0"
run_tio listxattr "$MNT"
assert_eq "$(echo "$dev_names" | tr ' ' '\n')" "$(echo "$TIO_OUT" | sort)" "xattr names of the root"
if command -v getfattr >/dev/null; then
	n=$(getfattr -d --absolute-names "$MNT/seq/0" | grep -c '^user\.zone\.')
	assert_eq 8 "$n" "getfattr -d seq/0 entries"
	n=$(getfattr -d --absolute-names "$MNT" | grep -c '^user\.dev\.')
	assert_eq 10 "$n" "getfattr -d root entries"
fi
expect ENODATA "getxattr of an unknown name" getxattr "$MNT/seq/0" user.zone.bogus
expect ENODATA "getxattr of a dev name on a file" getxattr "$MNT/seq/0" user.dev.zone_size

for f in "$MNT/seq/0" "$MNT"; do
	for n in user.zone.size user.zone.cond user.dev.zone_size user.new trusted.x; do
		expect_one_of "EPERM ENOTSUP" "setxattr $n on ${f#"$MNT"}" setxattr "$f" "$n" 123
		expect_one_of "EPERM ENOTSUP ENODATA" "removexattr $n on ${f#"$MNT"}" removexattr "$f" "$n"
	done
done
assert_xattr "$MNT/seq/0" user.zone.size "$ZSIZE" "after refused setxattr"
assert_xattr "$MNT/seq/0" user.zone.wp 0 "after refused setxattr"
assert_xattr "$MNT/seq/0" user.zone.type seq
still_serving "$MNT/seq/0"
p2z_umount
exit 0
