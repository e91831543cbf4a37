#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Asynchronous direct writes with depth (po2zfs(7): writes to one zone are
# never reordered). The kernel splits each 4 MiB io_uring write into 1 MiB
# pieces sent concurrently (FUSE_CAP_ASYNC_DIO), which the daemon's worker
# threads may serve in any order: the zone write sequencer writes them in
# offset order. Every write succeeds, the file has exactly the bytes
# written, fio's verify (offset and checksum in every block) passes, the
# daemon logged no failed write, and four such writers on four zones at
# once (appends of different zones in parallel) all do too.
. "$(dirname "$0")/common.sh"

p2z_init "async direct writes at depth land in zone order"
need_prog fio
fio --enghelp=io_uring >/dev/null 2>&1 || skip "fio has no io_uring engine"

p2z_device 96M/80M/4096 8
p2z_mount

# fio_write FILE...: 32 MiB of 4 MiB writes at depth 8 each, then verify
fio_write()
{
	local f args=()

	for f in "$@"; do
		args+=(--name="w${f##*/}" --filename="$f")
	done
	fio --ioengine=io_uring --direct=1 --rw=write --bs=4M --iodepth=8 \
		--size=32M --file_append=1 --fallocate=none \
		--verify=crc32c --verify_fatal=1 --do_verify=1 \
		--output="$WORK/fio.out" "${args[@]}" ||
		{ cat "$WORK/fio.out"; fail "fio write+verify on $*"; }
}

p2z_reset_seq 0
fio_write "$MNT/seq/0"
assert_eq $((32 << 20)) "$(stat -c %s "$MNT/seq/0")" "size of seq/0"

# seq/0 left partly written is an active zone: reset it, so that the four
# writers fit a device's active zone limit of 4 (the QEMU guests' devices)
p2z_reset_seq 0
for z in 1 2 3 4; do
	p2z_reset_seq "$z"
done
fio_write "$MNT/seq/1" "$MNT/seq/2" "$MNT/seq/3" "$MNT/seq/4"
for z in 1 2 3 4; do
	assert_eq $((32 << 20)) "$(stat -c %s "$MNT/seq/$z")" "size of seq/$z"
done
# the data of seq/1 read back once more, through a fresh reader
fio --ioengine=io_uring --direct=1 --rw=write --bs=4M --iodepth=16 \
	--size=32M --verify=crc32c --verify_only --verify_fatal=1 \
	--name=w1 --filename="$MNT/seq/1" --output="$WORK/fio.out" ||
	{ cat "$WORK/fio.out"; fail "fio re-verify of seq/1"; }
if grep -q "failed" "$WORK/daemon.log"; then
	cat "$WORK/daemon.log"
	fail "the daemon logged a failure"
fi
p2z_umount
exit 0
