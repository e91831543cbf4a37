#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The namespace is fixed: unlink, rename, mkdir, rmdir, link, symlink, mknod
# EPERM; creating a new name EACCES; the daemon keeps serving.
. "$(dirname "$0")/common.sh"

p2z_init "namespace operations: EPERM, creating a name EACCES"
p2z_device
p2z_mount
p2z_reset_seq 0 1
append "$MNT/seq/0" 0 "$LBA" 151
s=$MNT/seq
expect EPERM "unlink seq/0" unlink "$s/0"
expect EPERM "unlink po2" unlink "$MNT/po2"
expect EPERM "rename seq/0 -> seq/x" rename "$s/0" "$s/x"
expect EPERM "rename seq/0 -> seq/1" rename "$s/0" "$s/1"
expect EPERM "rename seq -> other" rename "$s" "$MNT/other"
expect EPERM "mkdir seq/d" mkdir "$s/d"
expect EPERM "mkdir d" mkdir "$MNT/d"
expect EPERM "rmdir seq" rmdir "$s"
expect EPERM "link seq/0 -> seq/l" link "$s/0" "$s/l"
expect EPERM "symlink seq/s" symlink 0 "$s/s"
expect EPERM "mknod seq/n" mknod "$s/n"
expect EACCES "create seq/new" open "$s/new" w,creat
expect EACCES "create seq/new exclusively" open "$s/new" w,creat,excl
expect EACCES "create a file in the root" open "$MNT/new" w,creat
expect EEXIST "O_CREAT|O_EXCL of an existing zone file" open "$s/0" w,creat,excl
expect ENOENT "open a missing name" open "$s/$NSEQ" r
expect ENOENT "open a missing name" open "$s/00" r
touch "$s/new" 2>/dev/null && fail "touch seq/new succeeded"
[ -e "$s/new" ] && fail "seq/new exists"
assert_eq "$(seq 0 $((NSEQ - 1)))" "$(ls "$s" | sort -n)" "seq/ after refused operations"
assert_size "$s/0" "$LBA" "after refused operations"
verify "$s/0" 0 "$LBA" 151
still_serving "$s/0"
p2z_umount
exit 0
