#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# user.dev.stats on the root: the daemon's request counters. Exact counts
# for a known request (a 1 MiB write, its data not copied in the daemon),
# zeroed by setting the attribute to "0"; any other
# value EINVAL, on any other file EPERM. And what the counters show about
# the kernel's caches (DESIGN "Performance shape"): a zone file read again
# is served from the page cache across opens without a single request, a
# cached reader asks no GETATTR per read, a second `ls -l` of seq/ sends
# no READDIR, LOOKUP or GETATTR, and security/ACL xattrs are EOPNOTSUPP (as
# on zonefs), so ls stops asking for them after the first file.
. "$(dirname "$0")/common.sh"

p2z_init "user.dev.stats: exact request counts, caches seen through them"
need_prog getfattr "reads the multi-line user.dev.stats value"
need_prog setfattr "zeroes user.dev.stats"
p2z_device
p2z_mount
p2z_reset_seq 0

# stats_line NAME: REPLY = the "NAME nr=..." line of user.dev.stats, or ""
stats_line()
{
	REPLY=$(getfattr --only-values --absolute-names -n user.dev.stats \
		"$MNT" | awk -v n="$1" '$1 == n')
}

stats_zero()
{
	setfattr -n user.dev.stats -v 0 "$MNT" || fail "setfattr user.dev.stats 0"
}

expect EINVAL "user.dev.stats set to 1" setxattr "$MNT" user.dev.stats 1
expect EPERM "user.dev.stats set on a zone file" setxattr "$MNT/seq/0" user.dev.stats 0
run_tio listxattr "$MNT"
echo "$TIO_OUT" | grep -qx user.dev.stats || fail "user.dev.stats not listed"

# One write of 1 MiB: exactly one fs.write of that size, nothing failed.
stats_zero
append "$MNT/seq/0" 0 1048576 11
stats_line fs.write
assert_eq "fs.write nr=1 err=0 bytes=1048576" "${REPLY%% avg_us=*}" "fs.write line"
assert_eq "sizes=1M:1" "${REPLY##* }" "fs.write size buckets"
# Its data was not copied in the daemon (src/README.md, "Request
# buffers"): with libfuse 3.14 to 3.16 the loop's request buffers put a
# WRITE's data on a page, and a write submitted to the device keeps its
# request buffer. Other versions keep their own buffers and copy.
if fusermount3 -V 2>/dev/null | grep -Eq 'version: *3\.1[456]\.'; then
	stats_line fs.write_copy
	assert_eq "" "$REPLY" "fs.write_copy (writes whose data the daemon copied)"
else
	echo "note: $(fusermount3 -V 2>&1): libfuse's own buffers, fs.write_copy not asserted"
fi
stats_line dev.append
[ -n "$REPLY" ] || stats_line dev.write
assert_eq "nr=1 err=0 bytes=1048576" "$(echo "$REPLY" | awk '{ print $2, $3, $4 }')" "device write line"

# Zeroed: no line for requests that did not happen since.
stats_zero
stats_line fs.write
assert_eq "" "$REPLY" "fs.write after zeroing"

# A cached reader: the first read after a stat asks no GETATTR, and the
# whole file read a second time (a new open) is served by the page cache.
stat_field "$MNT/seq/0" size
assert_eq 1048576 "$REPLY" "size after the write"
stats_zero
dd if="$MNT/seq/0" of="$WORK/r1" bs=4k status=none || fail "buffered read 1"
stats_line fs.getattr
case $REPLY in
"" | "fs.getattr nr=1 "*) ;; # dd's open and fstat may ask once
*) fail "GETATTRs during 256 cached 4 KiB reads: $REPLY (at most 1)" ;;
esac
stats_line fs.read
assert_eq "err=0 bytes=1048576" "$(echo "$REPLY" | awk '{ print $3, $4 }')" "first buffered read"
stats_zero
dd if="$MNT/seq/0" of="$WORK/r2" bs=4k status=none || fail "buffered read 2"
stats_line fs.read
if [ "$LBA" -ge 4096 ]; then
	assert_eq "" "$REPLY" "READs of a file read before (page cache kept across opens)"
else
	# zone files of sub-page LBAs are always direct I/O (po2zfs(7))
	assert_eq "err=0 bytes=1048576" "$(echo "$REPLY" | awk '{ print $3, $4 }')" \
		"second read, direct I/O on ${LBA}-byte LBAs"
fi
cmp -s "$WORK/r1" "$WORK/r2" || fail "the two reads differ"
"$TIO" pattern 11 0 1048576 >"$WORK/ref"
cmp -s "$WORK/r1" "$WORK/ref" || fail "buffered read differs from what was written"

# Listing: the second `ls -l` comes from the kernel's caches.
ls -l "$MNT/seq" >/dev/null || fail "ls -l 1"
stats_zero
ls -l "$MNT/seq" >"$WORK/ls2" || fail "ls -l 2"
for op in fs.readdir fs.lookup; do
	stats_line $op
	assert_eq "" "$REPLY" "$op requests of a second ls -l"
done
assert_eq "$NSEQ" "$(grep -c '^-' "$WORK/ls2")" "files listed"
expect EOPNOTSUPP "security.selinux" getxattr "$MNT/seq/1" security.selinux
stats_zero
ls -l "$MNT/seq" >/dev/null
stats_line fs.xattr
n=$(echo "$REPLY" | sed -n 's/.* nr=\([0-9]*\) .*/\1/p')
[ "${n:-0}" -le 4 ] || fail "ls -l asked $n xattrs for $NSEQ files (at most 4: the first answer stops it)"
still_serving "$MNT/seq/0"
p2z_umount
exit 0
