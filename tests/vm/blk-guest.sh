#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck source-path=SCRIPTDIR
#
# Runs inside the po2zfs-blk guest (see blk.sh) as /p2z/guest.sh: one NVMe
# controller with
#   nsid 1  npo2 ZNS, 16 zones of 96 MiB, 80 MiB capacity (hidden disk)
#   nsid 2  conventional, 512 MiB (f2fs's metadata device)
#   nsid 3  po2 ZNS, 16 zones of 128 MiB, 80 MiB capacity
# 4 KiB LBAs. Device names are found by namespace id: on 6.12 the generic
# devices are named in scan order.
#
# The checks of run_checks take the device under test as an argument and
# run twice: on nsid 3's block device (config "ref", the kernel's own
# view of a po2 namespace: what each filesystem does without po2zfs) and
# on the /dev/ublkbN that po2zfs-blk makes of nsid 1 (config "ublk"), which
# must look the same: geometry (16 zones of 262144 sectors, 163840 of
# capacity), the gap past the capacity, zonefs (bytes compared with a raw
# read of the native zone), f2fs and btrfs (a tree of files checksummed,
# verified after a remount, fsck), fio's zbd mode with verify, fio at
# depth with verify (a QD16 libaio writer beside a QD16 random reader,
# 4 writers on 4 zones), random read and 4-writer figures at QD1 and QD16
# and a sequential throughput figure against raw passthrough
# (informational).
# Then po2zfs-blk's own behaviour: bad input, a second add of the same
# namespace, a delete while mounted, a restart finding its data, a server
# killed after an acknowledged write, SIGTERM (SIGHUP ignored, one flush at
# stop), the server's count of requests in flight after a QD16 reader, SIGTERM refused under a mounted filesystem and forced by a second
# one, del refusing a device whose record does not match and --force,
# del --force of a mounted device, a power cut (SIGKILL of the server of
# an image with a volatile write cache) under btrfs after a sync and
# under zonefs after an fsync; ublk user recovery (ublk/recover: a device
# added with --recovery under zonefs and an append writer, its server
# SIGKILLed P2Z_RECOVER_CYCLES times, 3 by default, and recovered each
# time; refusals); the same kill cycles under btrfs -O zoned with two
# writers of fsynced files (ublk/recover-btrfs: no writer error, every
# acknowledged file intact, btrfs check clean), a server killed again
# while it recovers under btrfs (ublk/recover-chain: the next one sees
# every append of the record it made, files intact, btrfs check clean),
# under fio's zbd mode at
# QD16 with crc32c verify headers, read back and verified
# (ublk/recover-fio), and under btrfs on an emu image with a volatile
# write cache (ublk/recover-volatile: the fsynced files intact, btrfs
# check clean); each prints the requests in flight at each kill and how
# the recovered servers resolved them; last, the kernel log.
# P2Z_BLK_ONLY (vm.conf) names the ublk checks to run after the add, the
# reference checks skipped.
# Each check prints one result line (guest-lib.sh), "P2Z-RESULT <config>
# <check> PASS|FAIL|SKIP|REFUSED|INFO <seconds>s <detail>". REFUSED is the one
# refusal a check expects
# (EXPECT_REFUSE: mkfs.f2fs' defaults on so small a volume); any other
# refusal prints FAIL.
set -u
M=$((1024 * 1024))
Z=$((128 * M)) # po2 zone size of both devices under test
CAP=$((80 * M))
NZ=16
SB=/p2z/zonefs-sb.bin
P2Z_BLK_OLD=0 # 1: a kernel without zoned ublk devices (blk.sh's 6.1 boot)
P2Z_RECOVER_CYCLES=3 # ublk/recover's kills (vm.conf: blk.sh passes it on)
P2Z_BLK_ONLY='' # names of the ublk checks to run after the add, or all
# shellcheck source=/dev/null
. /p2z/vm.conf
# shellcheck source=guest-lib.sh
. /p2z/guest-lib.sh
results_init
SECONDS=0

# the kernel's last lines about $1 (a filesystem or driver name)
klog() {
	dmesg | grep -i "$1" | tail -n 2 | sed 's/^\[ *[0-9.]*\] //' | tr '\n' ' '
}

ns_map
ns_show 1 2 3
CONV=/dev/${DISK[2]:-none}

# a fresh zonefs on block device $1 mounted at $2 (errors=repair): every
# zone reset, the super block written and flushed
zonefs_fresh() { # dev mnt
	blkzone reset "$1"
	dd if="$SB" of="$1" bs=4096 count=1 oflag=direct conv=fsync status=none &&
		mount -t zonefs -o errors=repair "$1" "$2"
}

# "start len cap" of each zone of block device $1, in decimal sectors
zones() {
	blkzone report "$1" | sed -n \
		's/^ *start: \(0x[0-9a-f]*\), len \(0x[0-9a-f]*\), cap \(0x[0-9a-f]*\),.*/\1 \2 \3/p' |
		while read -r s l c; do echo $((s)) $((l)) $((c)); done
}

# zones of $1 written to (write pointer past the start), as a count
zones_used() {
	blkzone report "$1" | grep -vc 'zcond: *1(em)'
}

# The geometry: exactly 16 zones of 262144 sectors, capacity 163840.
check_geometry() { # cfg dev
	local cfg=$1 dev=$2 want got q=/sys/block/${2#/dev/}/queue why=

	want=$(for i in $(seq 0 $((NZ - 1))); do
		echo $((i * Z / 512)) $((Z / 512)) $((CAP / 512))
	done)
	got=$(zones "$dev")
	[ "$got" = "$want" ] || why="blkzone report: $(echo "$got" | head -n 2 | tr '\n' ';')... ($(echo "$got" | wc -l) zones)"
	[ "$(cat "$q/zoned")" = host-managed ] || why="$why zoned=$(cat "$q/zoned")"
	[ "$(cat "$q/chunk_sectors")" = $((Z / 512)) ] ||
		why="$why chunk_sectors=$(cat "$q/chunk_sectors")"
	[ "$(cat "$q/nr_zones")" = $NZ ] || why="$why nr_zones=$(cat "$q/nr_zones")"
	[ "$(cat "$q/logical_block_size")" = 4096 ] ||
		why="$why logical_block_size=$(cat "$q/logical_block_size")"
	[ "$(cat "$q/zone_append_max_bytes")" -gt 0 ] ||
		why="$why zone_append_max_bytes=$(cat "$q/zone_append_max_bytes")"
	# po2zfs-blk takes 512 KiB reads and writes whatever the device's
	# transfer limit (its appends stay within the device's append limit)
	[ "$cfg" != ublk ] || [ "$(cat "$q/max_hw_sectors_kb")" = 512 ] ||
		why="$why max_hw_sectors_kb=$(cat "$q/max_hw_sectors_kb")"
	result_why "$cfg" "geometry" "$why" "$NZ zones, len $((Z / 512)), cap $((CAP / 512)), 4 KiB blocks, max_open $(cat "$q/max_open_zones"), max_active $(cat "$q/max_active_zones"), requests $(cat "$q/max_hw_sectors_kb") KiB, zone append $(($(cat "$q/zone_append_max_bytes") / 1024)) KiB, cache $(cat "$q/write_cache")"
}

# The gap between a zone's capacity and the po2 boundary: zeros to read,
# no writes. Zone 7 finished: its gap reads zeros, a write to it fails and
# leaves it full. Zone 10 empty: 81 MiB written from its start stops at
# the capacity (the 81st MiB fails), the 80 MiB before it are there.
check_gap() { # cfg dev
	local cfg=$1 dev=$2 z7=$((7 * Z / M)) z10=$((10 * Z / M)) why='' st

	blkzone reset "$dev"
	blkzone finish -o $((7 * Z / 512)) -c 1 "$dev" || why="$why finish"
	dd if="$dev" bs=1M skip=$((z7 + CAP / M)) count=1 iflag=direct \
		status=none 2>/dev/null | cmp -s -n $M - /dev/zero ||
		why="$why gap-read"
	dd if="$dev" bs=1M skip=$((z7 + Z / M - 1)) count=1 iflag=direct \
		status=none 2>/dev/null | cmp -s -n $M - /dev/zero ||
		why="$why gap-end-read"
	head -c 4096 /dev/urandom >/tmp/g4k
	dd if=/tmp/g4k of="$dev" bs=4k seek=$(((7 * Z + CAP) / 4096)) \
		oflag=direct conv=notrunc status=none 2>/dev/null &&
		why="$why gap-write-accepted"
	st=$(blkzone report -o $((7 * Z / 512)) -c 1 "$dev")
	[[ $st == *"zcond:14(fu)"* ]] || why="$why zone7($st)"
	head -c $((CAP + M)) /dev/urandom >/tmp/g81
	dd if=/tmp/g81 of="$dev" bs=1M seek=$z10 oflag=direct conv=notrunc \
		status=none 2>/dev/null && why="$why write-past-cap-accepted"
	st=$(blkzone report -o $((10 * Z / 512)) -c 1 "$dev")
	[[ $st == *"zcond:14(fu)"* ]] || why="$why zone10($st)"
	dd if="$dev" bs=1M skip=$z10 count=$((CAP / M)) iflag=direct \
		status=none | cmp -s -n $CAP - /tmp/g81 || why="$why zone10-data"
	result_why "$cfg" "gap" "$why" "reads zeros, writes fail, zone 10 full at capacity"
}

# zonefs: the super block in zone 0, appends to seq/0 (zone 1) with
# O_DIRECT, the bytes through the file and raw from the native zone, the
# file sizes, and seq/1 truncated to its capacity (a zone finish).
check_zonefs() { # cfg dev ng native_zone_bytes
	local cfg=$1 dev=$2 ng=$3 nzb=$4 m=/mnt/zonefs why='' n st

	mkdir -p $m
	blkzone reset "$dev" || { result "$cfg" "zonefs" FAIL "blkzone reset"; return; }
	if ! dd if=$SB of="$dev" bs=4096 count=1 oflag=direct status=none ||
		! mount -t zonefs "$dev" $m; then
		result "$cfg" "zonefs" FAIL "mount: $(klog zonefs)"
		return
	fi
	n=$(find $m/seq -type f | wc -l)
	[ "$n" = $((NZ - 1)) ] || why="$why seq-files($n)"
	[ ! -d $m/cnv ] || [ "$(find $m/cnv -type f | wc -l)" = 0 ] || why="$why cnv-files"
	head -c $((3 * M)) /dev/urandom >/tmp/zf1
	head -c $((2 * M)) /dev/urandom >/tmp/zf2
	dd if=/tmp/zf1 of=$m/seq/0 bs=1M oflag=direct,append conv=notrunc \
		status=none || why="$why dd1"
	dd if=/tmp/zf2 of=$m/seq/0 bs=1M oflag=direct,append conv=notrunc \
		status=none || why="$why dd2"
	cat /tmp/zf1 /tmp/zf2 >/tmp/zf
	[ "$(stat -c %s $m/seq/0)" = $((5 * M)) ] ||
		why="$why size($(stat -c %s $m/seq/0))"
	[ "$(stat -c %s $m/seq/2)" = 0 ] || why="$why size-empty"
	cmp -s $m/seq/0 /tmp/zf || why="$why data"
	echo 3 >/proc/sys/vm/drop_caches
	cmp -s $m/seq/0 /tmp/zf || why="$why data-uncached"
	# a write that is not at the end of the file (the write pointer) fails
	dd if=/tmp/zf2 of=$m/seq/0 bs=1M count=1 oflag=direct conv=notrunc \
		status=none 2>/dev/null && why="$why overwrite-accepted"
	p2z_vm_raw read "$ng" $((nzb / 4096)) $((5 * M)) >/tmp/zfraw &&
		cmp -s /tmp/zfraw /tmp/zf || why="$why raw"
	truncate -s $CAP $m/seq/1 || why="$why truncate-cap"
	[ "$(stat -c %s $m/seq/1)" = $CAP ] || why="$why size-full($(stat -c %s $m/seq/1))"
	st=$(blkzone report -o $((2 * Z / 512)) -c 1 "$dev")
	[[ $st == *"zcond:14(fu)"* ]] || why="$why zone2($st)"
	truncate -s $((CAP + 4096)) $m/seq/2 2>/dev/null && why="$why truncate-past-cap"
	umount $m || why="$why umount"
	if mount -t zonefs "$dev" $m; then
		[ "$(stat -c %s $m/seq/0)" = $((5 * M)) ] || why="$why remount-size"
		cmp -s $m/seq/0 /tmp/zf || why="$why remount-data"
		umount $m || why="$why umount2"
	else
		why="$why remount($(klog zonefs))"
	fi
	result_why "$cfg" "zonefs" "$why" "5 MiB appended = raw bytes of native zone 1, seq/1 full at $CAP"
}

# A tree of files in $1 with their checksums in $2: TREE_BYTES bytes.
TREE_BYTES=0
mktree() { # dir sums
	local d=$1 i s

	mkdir -p "$d/a/b/c" "$d/small"
	for s in 0 1 4095 4096 65537 $((M + 1)) $((8 * M)) $((24 * M)); do
		head -c $s /dev/urandom >"$d/a/f$s"
	done
	head -c $((40 * M)) /dev/urandom >"$d/a/b/c/big"
	for i in $(seq 100); do
		head -c $((i * 97)) /dev/urandom >"$d/small/s$i"
	done
	(cd "$d" && find . -type f | sort | xargs sha256sum) >"$2" &&
		TREE_BYTES=$(find "$d" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }')
}

# mkfs, mount, a tree with checksums, umount, mount, verify, umount.
# The check is named $2; its filesystem is $3.
check_fs() { # cfg name fs dev mkfs-command...
	local cfg=$1 name=$2 fs=$3 dev=$4 m=/mnt/$3 out r why="" used note
	local mdev=$4

	shift 4
	mkdir -p "$m"
	blkzone reset "$dev" || { result "$cfg" "$name" FAIL "blkzone reset"; return; }
	[ "$fs" = f2fs ] && mdev=$CONV
	out=$("$@" 2>&1)
	r=$?
	echo "$out"
	if [ $r != 0 ]; then
		refused "$cfg" "$name" "mkfs exit $r: $(echo "$out" | grep -m1 -iE 'error|fail|invalid')"
		return
	fi
	if [ -n "${EXPECT_REFUSE[$name]:-}" ]; then
		result "$cfg" "$name" FAIL "mkfs accepted what it refused before (${EXPECT_REFUSE[$name]})"
		return
	fi
	if ! out=$(mount -t "$fs" "$mdev" "$m" 2>&1); then
		refused "$cfg" "$name" "mount: $out $(klog "$fs")"
		return
	fi
	mktree "$m/t" "/tmp/sums.$fs" || why="$why write"
	sync
	used=$(zones_used "$dev")
	umount "$m" || why="$why umount"
	if ! mount -t "$fs" "$mdev" "$m"; then
		result "$cfg" "$name" FAIL "${why# } remount: $(klog "$fs")"
		return
	fi
	(cd "$m/t" && sha256sum -c --quiet "/tmp/sums.$fs") || why="$why verify"
	umount "$m" || why="$why umount2"
	# the filesystem's own checker, changing nothing
	note="fsck clean"
	case $fs in
	f2fs) out=$(fsck.f2fs --dry-run -f "$mdev" 2>&1) ;;
	btrfs) out=$(btrfs check --readonly "$dev" 2>&1) ;;
	esac
	r=$?
	echo "$out"
	# fsck.f2fs 1.15 counts the free segments of zones whose capacity is
	# below their size otherwise than the kernel does (on the reference
	# device too): that line failing, and only it, is expected.
	if [ "$fs" = f2fs ] && [ $r = 1 ] &&
		[ "$(echo "$out" | grep -F '[Fail]' | sed 's/ *\[0x[0-9a-f]*\]$//')" = "$F2FS_FSCK_KNOWN" ]; then
		r=0
		note="fsck clean but for its free segment count (known)"
	fi
	[ $r = 0 ] || why="$why fsck($r: $(echo "$out" | grep -m1 -iE '\[Fail\]|error|corrupt|invalid|wrong'))"
	[ "$used" -gt 0 ] || why="$why no-zone-written"
	result_why "$cfg" "$name" "$why" "$(wc -l <"/tmp/sums.$fs") files, $((TREE_BYTES / M)) MiB, verified after remount, $note, $used zones written"
}

# The one refusal expected of each check that names one: f2fs with
# mkfs.f2fs' defaults. f2fs-tools 1.15 keeps (2 * (100 / ovp + 1) + 6)
# sections for GC and overprovisioning, at most 10% ovp on a volume of
# 256 segments or more: 28 sections of 128 MiB, more than 16 zones and
# 512 MiB of conventional space hold. The same on the reference device:
# a matter of size, not of po2zfs-blk. With -o 40 (13 sections) it
# formats (the "f2fs" check).
F2FS_FSCK_KNOWN='[FSCK] free segment_count matched with CP             [Fail]'
declare -A EXPECT_REFUSE=([f2fs-defaults]="Device size is not sufficient for F2FS volume")
refused() { # cfg check message
	local want=${EXPECT_REFUSE[$2]:-}

	if [ -n "$want" ] && [[ $3 == *"$want"* ]]; then
		result "$1" "$2" REFUSED "$3"
	else
		result "$1" "$2" FAIL "unexpected refusal: $3"
	fi
}

# fio in zbd mode: two zones (4 and 5) written with crc32c and verified.
check_fio_verify() { # cfg dev
	local cfg=$1 dev=$2 j=/tmp/fio-verify.json r w rd

	blkzone reset "$dev"
	fio --name=zbd-verify --filename="$dev" --direct=1 --ioengine=psync \
		--zonemode=zbd --rw=write --bs=128k --offset=$((4 * Z)) \
		--size=$((2 * Z)) --verify=crc32c --do_verify=1 \
		--output-format=json --output=$j >/tmp/fio-verify.err 2>&1
	r=$?
	read -r w _ < <(fio_result $j write)
	read -r rd _ < <(fio_result $j read)
	if [ $r = 0 ] && [ "$w" = $((2 * CAP)) ] && [ "$rd" = $((2 * CAP)) ]; then
		result "$cfg" "fio-verify" PASS "2 zones, $((2 * CAP / M)) MiB written and verified (crc32c)"
	else
		result "$cfg" "fio-verify" FAIL "fio exit $r, wrote ${w:-?} read ${rd:-?} bytes: $(grep -m1 -iE 'err|verify' /tmp/fio-verify.err)"
	fi
}

# fio at depth with verify: zones 0-2 written by libaio at QD16 (zone
# write plugging keeps one write per zone at the device) and verified
# (crc32c) while a QD16 io_uring random reader reads zones 8-9 (written
# before, compared after). Not io_uring for the writer: with it, fio saw
# EIO for a write 1 run in 5 on /dev/ublkb0 while the server failed no
# write and logged nothing, so the block layer failed it before it reached
# the server (likely io_uring's NOWAIT attempt retried from a worker behind
# the zone's next write, which zone write plugging then refuses). then 4 psync writers in zbd mode on zones 12-15, each
# verified. Each: fio exit 0, all bytes written and read, no verify error.
check_fio_depth() { # cfg dev
	local cfg=$1 dev=$2 r rr w rd why='' z

	blkzone reset "$dev"
	head -c $((32 * M)) /dev/urandom >/tmp/fd32
	for z in 8 9; do
		dd if=/tmp/fd32 of="$dev" bs=1M seek=$((z * Z / M)) \
			oflag=direct conv=notrunc status=none || why="$why dd$z"
	done
	fio --name=qd16-reader --filename="$dev" --direct=1 \
		--ioengine=io_uring --iodepth=16 --rw=randread --bs=4k \
		--zonemode=zbd --offset=$((8 * Z)) --size=$((2 * Z)) \
		--io_size=$((64 * M)) --output-format=json \
		--output=/tmp/fio-qdr.json >/tmp/fio-qdr.err 2>&1 &
	rr=$!
	fio --name=qd16-verify --filename="$dev" --direct=1 \
		--ioengine=libaio --iodepth=16 --zonemode=zbd --rw=write \
		--bs=128k --offset=0 --size=$((3 * Z)) --verify=crc32c \
		--do_verify=1 --output-format=json \
		--output=/tmp/fio-qdw.json >/tmp/fio-qdw.err 2>&1
	r=$?
	wait $rr
	rr=$?
	read -r w _ < <(fio_result /tmp/fio-qdw.json write)
	read -r rd _ < <(fio_result /tmp/fio-qdw.json read)
	[ $r = 0 ] || why="$why writer-exit($r: $(grep -m1 -iE 'err|verify' /tmp/fio-qdw.err))"
	[ "${w:-}" = $((3 * CAP)) ] && [ "${rd:-}" = $((3 * CAP)) ] ||
		why="$why bytes(wrote ${w:-?} verified ${rd:-?})"
	[ $rr = 0 ] || why="$why reader-exit($rr: $(grep -m1 -iE 'err' /tmp/fio-qdr.err))"
	read -r rd _ < <(fio_result /tmp/fio-qdr.json read)
	[ "${rd:-}" = $((64 * M)) ] || why="$why reader-bytes(${rd:-?})"
	for z in 8 9; do
		dd if="$dev" bs=1M skip=$((z * Z / M)) count=32 iflag=direct \
			status=none | cmp -s - /tmp/fd32 || why="$why data$z"
	done
	result_why "$cfg" "fio-qd16-verify" "$why" \
		"3 zones written at QD16 (libaio) and verified (crc32c) beside a QD16 io_uring random reader of 2 zones (64 MiB read, data compared)"
	why=
	fio --name=zbd-4writers --filename="$dev" --direct=1 --ioengine=psync \
		--zonemode=zbd --rw=write --bs=128k --numjobs=4 \
		--offset=$((12 * Z)) --offset_increment=$Z --size=$Z \
		--verify=crc32c --do_verify=1 --group_reporting \
		--output-format=json --output=/tmp/fio-4w.json \
		>/tmp/fio-4w.err 2>&1
	r=$?
	read -r w _ < <(fio_result /tmp/fio-4w.json write)
	read -r rd _ < <(fio_result /tmp/fio-4w.json read)
	[ $r = 0 ] || why="$why exit($r: $(grep -m1 -iE 'err|verify' /tmp/fio-4w.err))"
	[ "${w:-}" = $((4 * CAP)) ] && [ "${rd:-}" = $((4 * CAP)) ] ||
		why="$why bytes(wrote ${w:-?} verified ${rd:-?})"
	result_why "$cfg" "fio-4writers-verify" "$why" \
		"4 psync writers on zones 12-15, $((4 * CAP / M)) MiB written and verified (crc32c)"
}

# MiB/s of fio job $1 (a JSON section: read, write) with the arguments
# after it, 3 rounds, the median; "err" if one failed.
bench_median() { # section fio-args...
	local sec=$1 i v all=

	shift
	for i in 1 2 3; do
		if fio --name=b --output-format=json --output=/tmp/bm.json "$@" \
			>/tmp/bm.err 2>&1; then
			v=$(fio_result /tmp/bm.json "$sec" | awk '{ printf "%.1f", $2 }')
		else
			v=err
		fi
		[ "$v" = err ] && { echo err; return; }
		all="$all $v"
	done
	echo "$all" | tr ' ' '\n' | sed '/^$/d' | sort -n | sed -n 2p
}

# Concurrency figures (informational): random 4k reads of zones 8-9
# (written by check_fio_depth) by io_uring at QD1 and QD16, 5 s each, and
# 4 sequential psync writers on 4 zones (12-15, reset first), medians of 3.
check_bench_depth() { # cfg dev
	local cfg=$1 dev=$2 q1 q16 w4 z

	q1=$(bench_median read --filename="$dev" --direct=1 --ioengine=io_uring \
		--iodepth=1 --rw=randread --bs=4k --zonemode=zbd \
		--offset=$((8 * Z)) --size=$((2 * Z)) --time_based --runtime=5)
	q16=$(bench_median read --filename="$dev" --direct=1 --ioengine=io_uring \
		--iodepth=16 --rw=randread --bs=4k --zonemode=zbd \
		--offset=$((8 * Z)) --size=$((2 * Z)) --time_based --runtime=5)
	w4=$(for z in 1 2 3; do
		blkzone reset -o $((12 * Z / 512)) -c 4 "$dev"
		fio --name=b --output-format=json --output=/tmp/bw.json \
			--filename="$dev" --direct=1 --ioengine=psync \
			--zonemode=zbd --rw=write --bs=128k --numjobs=4 \
			--offset=$((12 * Z)) --offset_increment=$Z --size=$Z \
			--io_size=$((32 * M)) \
			--group_reporting >/dev/null 2>&1 &&
			fio_result /tmp/bw.json write | awk '{ printf "%.1f\n", $2 }'
	done | sort -n | sed -n 2p)
	result "$cfg" "depth-bench" INFO "MiB/s, medians of 3: randread 4k io_uring QD1 $q1, QD16 $q16; 4 psync writers 128k on 4 zones (32 MiB each) ${w4:-err}"
}

# The server's own count of requests in flight at once, as it logs it at
# stop: after one QD16 random reader, more than P2Z_BLK_MAX_QUEUES (4),
# the most a server serving each queue's tags one after the other holds.
# Each queue's device ring holds /dev/ublkc0 as a registered file (the
# ring's fdinfo lists it), so the kernel releases the char device, and a
# recover can start, only after the ring's last device command completed
# (src/README.md "ublk user recovery"). The ublk rings register nothing:
# one ring per queue lists ublkc0.
check_ring_holds() { # pid
	local fd n=0 nq

	nq=$(find /sys/block/ublkb0/mq -mindepth 1 -maxdepth 1 | wc -l)
	for fd in /proc/"$1"/fd/*; do
		[ "$(readlink "$fd")" = "anon_inode:[io_uring]" ] || continue
		grep -Eq '^ *[0-9]+: ublkc0$' "/proc/$1/fdinfo/${fd##*/}" &&
			n=$((n + 1))
	done
	if [ "$n" -ge 1 ] && [ "$n" = "$nq" ]; then
		result ublk ring-holds-cdev PASS "$n rings of $nq queues hold ublkc0"
	else
		result ublk ring-holds-cdev FAIL "$n rings hold ublkc0, $nq queues: $(cat /proc/"$1"/fdinfo/* 2>/dev/null | grep -E 'UserFiles|ublkc' | tr '\n' '|')"
	fi
}

check_inflight() { # ng
	local r why='' n log=/tmp/addq.out

	if ! add_fg "$1" $log; then
		result ublk inflight FAIL "add -f: no /dev/ublkb0: $(cat $log)"
		return
	fi
	check_ring_holds "$PID"
	blkzone reset -o $((8 * Z / 512)) -c 1 /dev/ublkb0
	head -c $((16 * M)) /dev/urandom >/tmp/if16
	dd if=/tmp/if16 of=/dev/ublkb0 bs=1M seek=$((8 * Z / M)) oflag=direct \
		conv=notrunc status=none || why="$why dd"
	fio --name=qd16 --filename=/dev/ublkb0 --direct=1 --ioengine=io_uring \
		--iodepth=16 --rw=randread --bs=4k --zonemode=zbd \
		--offset=$((8 * Z)) --size=$Z --io_size=$((16 * M)) \
		>/tmp/fio-if.err 2>&1 || why="$why fio"
	kill -TERM "$PID"
	wait "$PID"
	r=$?
	[ $r = 0 ] || why="$why exit($r)"
	n=$(sed -n 's/.* requests served, at most \([0-9]*\) in flight$/\1/p' $log)
	[ -n "$n" ] && [ "$n" -gt 4 ] || why="$why in-flight(${n:-no line})"
	result_why ublk inflight "${why# }${why:+: $(tr '\n' '|' <$log)}" \
		"after a QD16 random reader: at most $n requests in flight at once (server's count at stop)"
}

# MiB/s of one sequential fio job (64 KiB commands: below every transfer
# limit of the guest's queues), or "err"
bench_job() { # rw args...
	local rw=$1 j=/tmp/bench.json

	shift
	if fio --name=bench --rw="$rw" --bs=64k --iodepth=1 --zonemode=zbd \
		--output-format=json --output=$j "$@" >/tmp/bench.err 2>&1; then
		fio_result $j "$rw" | awk '{ printf "%.1f\n", $2 }'
	else
		echo err
	fi
}

# "<write MiB/s> <read MiB/s>", the better of two rounds each (the host
# is shared): the zones reset with command $1, written, read.
bench_pair() { # reset-command fio-args...
	local reset=$1 i w r bw=0 br=0

	shift
	for i in 1 2; do
		$reset >/dev/null 2>&1
		w=$(bench_job write "$@")
		r=$(bench_job read "$@")
		[ "$w" = err ] && bw=err
		[ "$r" = err ] && br=err
		[ "$bw" = err ] || bw=$(awk -v a="$bw" -v b="$w" 'BEGIN { print (b + 0 > a + 0) ? b : a }')
		[ "$br" = err ] || br=$(awk -v a="$br" -v b="$r" 'BEGIN { print (b + 0 > a + 0) ? b : a }')
	done
	echo "$bw $br"
}

# 2 zones written then read through the zoned block device (zones 8-9),
# and raw with passthrough commands on the native namespace (its zones
# 12-13, untouched by the block device). Informational.
BW=
check_bench_blk() { # dev
	BW=$(bench_pair "blkzone reset $1" --filename="$1" --direct=1 \
		--ioengine=io_uring --offset=$((8 * Z)) --size=$((2 * Z)))
}

check_bench_raw() { # cfg ng native_zone_bytes
	local w r bw br ratio

	read -r w r < <(bench_pair "nvme zns reset-zone $2 -a" \
		--filename="$2" --ioengine=io_uring_cmd --cmd_type=nvme \
		--offset=$((12 * $3)) --size=$((2 * $3)))
	read -r bw br <<<"$BW"
	ratio=$(awk -v a="$bw" -v b="$br" -v c="$w" -v d="$r" 'BEGIN {
		printf "%s/%s", (c + 0 > 0 ? sprintf("%.2f", a / c) : "-"),
			(d + 0 > 0 ? sprintf("%.2f", b / d) : "-") }')
	result "$1" "blk-bench" INFO "seq 64k qd1, best of 2, MiB/s: write $bw (raw $w), read $br (raw $r), block/raw write/read $ratio"
}

run_checks() { # cfg dev ng native_zone_bytes
	check_geometry "$1" "$2"
	check_gap "$1" "$2"
	check_zonefs "$1" "$2" "$3" "$4"
	check_fs "$1" f2fs-defaults f2fs "$2" mkfs.f2fs -f -m -c "$2" "$CONV"
	check_fs "$1" f2fs f2fs "$2" mkfs.f2fs -f -m -o 40 -c "$2" "$CONV"
	check_fs "$1" btrfs btrfs "$2" mkfs.btrfs -f -O zoned -d single -m single "$2"
	check_fio_verify "$1" "$2"
	check_fio_depth "$1" "$2"
	check_bench_depth "$1" "$2"
	check_bench_blk "$2"
}

# no kernel warning, bug or oops in the whole run
# The kernel log has no WARNING, BUG or Oops, but for the WARNINGs a
# check listed in /tmp/klog-expected (whole lines), skipped with their
# call traces up to their end-of-trace line.
check_klog() {
	touch /tmp/klog-expected
	result_why kernel log "$(dmesg | awk 'BEGIN {
			while ((getline l <"/tmp/klog-expected") > 0)
				want[l] = 1
		}
		$0 in want { skip = 1; next }
		skip { if ($0 ~ /end trace/) skip = 0; next }
		{ print }' |
		grep -E 'WARNING:|BUG:|Oops|general protection|Call Trace' | head -n 3)" \
		"no WARNING, BUG or Oops$([ -s /tmp/klog-expected ] && echo " (but $(grep -c . /tmp/klog-expected) expected btrfs warnings after recover-volatile's abort)")"
}

# Where ublk cannot make zoned devices, add refuses in one line starting
# "ublk unavailable:", exit 1, and leaves no ublk device behind.
check_unavailable() { # ng
	local out r why=''

	out=$(timeout 30 po2zfs-blk add "$1" 2>&1 </dev/null)
	r=$?
	[ $r = 1 ] || why="exit $r"
	[[ $out == "po2zfs-blk: ublk unavailable: "* ]] || why="$why message"
	[ "$(echo "$out" | wc -l)" = 1 ] || why="$why $(echo "$out" | wc -l)-lines"
	ls /dev/ublkb* /dev/ublkc* >/dev/null 2>&1 && why="$why device-left($(ls /dev/ublk[bc]*))"
	result_why ublk unavailable "$why${why:+: $(printf %s "$out" | tr '\n' '|')}" \
		"$(uname -r), $([ -c /dev/ublk-control ] || echo 'no ')/dev/ublk-control: exit $r: $out"
}

if [ "$P2Z_BLK_OLD" = 1 ]; then
	if ! command -v po2zfs-blk >/dev/null; then
		result ublk unavailable SKIP "po2zfs-blk was not built"
	else
		check_unavailable "${NG[1]:-/dev/ng-none}"
	fi
	check_klog
	results_passed
	exit
fi

# ---- reference: the po2 namespace's own block device ----

if [ -n "$P2Z_BLK_ONLY" ]; then
	echo "P2Z-VM P2Z_BLK_ONLY: the reference checks not run"
elif [ -b "/dev/${DISK[3]:-none}" ] && [ -c "${NG[3]:-none}" ]; then
	run_checks ref "/dev/${DISK[3]}" "${NG[3]}" $Z
	check_bench_raw ref "${NG[3]}" $Z
else
	result ref setup FAIL "no block device for nsid 3"
fi
echo "P2Z-VM ref done at ${SECONDS}s"

# ---- po2zfs-blk ----

# poll for $1 to exist (1) or not (0), up to 10 s; 0 if it did
wait_node() { # path 1|0
	local i

	for i in $(seq 200); do
		if [ "$2" = 1 ]; then [ -e "$1" ] && return 0; else [ -e "$1" ] || return 0; fi
		sleep 0.05
	done
	return 1
}

# A refusal as po2zfs-blk(8) documents it: exit 1 and a one-line reason
# with EBUSY's text. Empty if so, else what differs.
ebusy_why() { # exit output
	local why=''

	[ "$1" = 1 ] || why="exit $1"
	[ "$(echo "$2" | wc -l)" = 1 ] || why="$why $(echo "$2" | wc -l)-lines"
	[[ $2 == *"Device or resource busy"* ]] || why="$why no-EBUSY"
	echo "${why# }"
}

# Bad input before any device exists, as po2zfs-blk(8) documents it:
# usage errors exit 2, failures 1, each with one line, and no device is
# made. "CMD => EXIT" a case.
check_bad_input() { # conventional ng
	local c cmd want out r why=''

	for c in "add => 2" "del => 2" "bogus => 2" "add -x $1 => 2" "add --backend bogus $1 => 2" \
		"add /dev/nonexistent => 1" "add $1 => 1" "add /dev/null => 1" \
		"del 5 => 1" "del x => 2" "del --force x => 2" "del --force 5 => 1" \
		"add --force $1 => 2" "list --force => 2"; do
		cmd=${c% => *}
		want=${c##* => }
		# shellcheck disable=SC2086 # CMD
		out=$(timeout 30 po2zfs-blk $cmd 2>&1 </dev/null)
		r=$?
		echo "P2Z-VM po2zfs-blk $cmd: exit $r: $out"
		[ $r = "$want" ] || why="$why {$cmd: exit $r, not $want}"
		[ "$(echo "$out" | wc -l)" = 1 ] && [ -n "$out" ] ||
			why="$why {$cmd: $(printf %s "$out" | tr '\n' '|')}"
	done
	[ -e /dev/ublkb0 ] && why="$why ublkb0-made"
	[ -z "$(po2zfs-blk list 2>&1)" ] || why="$why listed"
	result_why ublk bad-input "$why" "usage exit 2, failures exit 1, one line each, no device"
}

# After a restart, the server finds what the device holds: the zonefs
# file del-mounted wrote, through a new mount.
check_readd() { # dev
	local m=/mnt/zonefs why=''

	if ! mount -t zonefs "$1" $m; then
		result ublk readd FAIL "mount: $(klog zonefs)"
		return
	fi
	[ "$(stat -c %s $m/seq/3)" = $((2 * M)) ] || why="size($(stat -c %s $m/seq/3))"
	cmp -s $m/seq/3 /tmp/dm || why="$why data"
	umount $m || why="$why umount"
	result_why ublk readd "$why" "2 MiB of zonefs seq/3 back after del and add"
}

# a second add of the same namespace: EBUSY, no second device
check_add_again() { # ng
	local out r why

	out=$(timeout 30 po2zfs-blk add "$1" 2>&1 </dev/null)
	r=$?
	why=$(ebusy_why $r "$out")
	[ -e /dev/ublkb1 ] && why="$why ublkb1-made"
	result_why ublk add-again "$why${why:+: $(printf %s "$out" | tr '\n' '|')}" \
		"exit $r: $out"
}

# del while zonefs is mounted: refused (EBUSY), the device and the data
# stay
check_del_mounted() { # dev
	local dev=$1 m=/mnt/zonefs out r why=''

	blkzone reset "$dev"
	if ! dd if=$SB of="$dev" bs=4096 count=1 oflag=direct status=none ||
		! mount -t zonefs "$dev" $m; then
		result ublk del-mounted FAIL "mount: $(klog zonefs)"
		return
	fi
	head -c $((2 * M)) /dev/urandom >/tmp/dm
	dd if=/tmp/dm of=$m/seq/3 bs=1M oflag=direct,append conv=notrunc \
		status=none || why="$why dd"
	out=$(timeout 30 po2zfs-blk del 0 2>&1 </dev/null)
	r=$?
	why="$why $(ebusy_why $r "$out")"
	why=${why% }
	[ -b "$dev" ] || why="$why device-gone"
	echo 3 >/proc/sys/vm/drop_caches
	cmp -s $m/seq/3 /tmp/dm || why="$why data"
	umount $m || why="$why umount"
	result_why ublk del-mounted "$why${why:+: $(printf %s "$out" | tr '\n' '|')}" \
		"exit $r: $out"
}

# SIGKILL the server after an acknowledged O_DIRECT write to zone 6, then
# del cleans up, and the bytes are in native zone 6.
check_kill() { # dev ng pid
	local dev=$1 ng=$2 pid=$3 out r why=

	head -c $((4 * M)) /dev/urandom >/tmp/kw
	dd if=/tmp/kw of="$dev" bs=1M seek=$((6 * Z / M)) oflag=direct \
		conv=notrunc status=none || why="$why dd"
	kill -KILL "$pid" || why="$why kill"
	wait "$pid" 2>/dev/null
	out=$(po2zfs-blk list 2>&1)
	[[ $out == "/dev/ublkb0"*"dead"* ]] || why="$why list-after-kill($out)"
	out=$(timeout 30 po2zfs-blk recover 0 2>&1 </dev/null)
	r=$?
	echo "P2Z-VM po2zfs-blk recover 0 (no recovery): exit $r: $out"
	r=$(refuse_why $r "$out" "was added without recovery")
	why="$why${r:+ recover($r)}"
	out=$(timeout 30 po2zfs-blk del 0 2>&1 </dev/null)
	r=$?
	[ $r = 0 ] || why="$why del-exit($r: $out)"
	wait_node /dev/ublkb0 0 || why="$why ublkb0-left"
	wait_node /dev/ublkc0 0 || why="$why ublkc0-left"
	out=$(po2zfs-blk list 2>&1)
	! echo "$out" | grep -q ublk || why="$why list($out)"
	p2z_vm_raw read "$ng" $((6 * 96 * M / 4096)) $((4 * M)) >/tmp/kwraw &&
		cmp -s /tmp/kwraw /tmp/kw || why="$why raw-bytes"
	result_why ublk kill "$why" "4 MiB acknowledged, server killed, del cleaned up, bytes in native zone 6"
}

# poll po2zfs-blk list until device 0's state (third field) is $1, up to
# 30 s (the kernel sees a dead server within its 5 s monitor period)
wait_state() { # state
	local i

	for i in $(seq 600); do
		[ "$(po2zfs-blk list 2>/dev/null | awk '$1 == "/dev/ublkb0" { print $3 }')" = "$1" ] &&
			return 0
		sleep 0.05
	done
	return 1
}

# A refusal of recover: exit 1, one line containing $3. Empty if so.
refuse_why() { # exit output text
	local why=''

	[ "$1" = 1 ] || why="exit $1"
	[ "$(echo "$2" | wc -l)" = 1 ] || why="$why $(echo "$2" | wc -l)-lines"
	[[ $2 == *"$3"* ]] || why="$why {$2}"
	echo "${why# }"
}

# The append writer of check_recover: 1 MiB records appended to zonefs
# seq/$2 with O_DIRECT until /tmp/rc-stop exists; an acknowledged record
# is logged "INDEX OFFSET" in /tmp/rc-acked.$2, a failed one in
# /tmp/rc-err.$2.
rc_writer() { # mnt file
	local i=0 before f=$1/seq/$2

	: >"/tmp/rc-acked.$2"
	: >"/tmp/rc-err.$2"
	while [ ! -e /tmp/rc-stop ]; do
		head -c $M /dev/urandom >"/tmp/rc-rec.$2.$i"
		before=$(stat -c %s "$f")
		if dd if="/tmp/rc-rec.$2.$i" of="$f" bs=1M oflag=direct,append \
			conv=notrunc status=none 2>>/tmp/rc-err.log; then
			echo "$i $before" >>"/tmp/rc-acked.$2"
		else
			echo "$i $before" >>"/tmp/rc-err.$2"
		fi
		i=$((i + 1))
	done
}

# ublk user recovery (po2zfs-blk(8) RECOVERY): a device added with
# --recovery under zonefs and four append writers (seq/0 to seq/3, so
# that requests are in flight at the kills); the server is SIGKILLed
# at random moments P2Z_RECOVER_CYCLES times (3 here; 20 by hand) and
# each time the device is quiesced (list), the writer's next requests
# are held, and po2zfs-blk recover serves it again. Then every
# acknowledged record is in its file at its offset and each file's size
# equals its zone's write pointer. Refusals: recover of a live device, of a
# device added without --recovery (check_kill's), with a record naming
# another backing device.
check_recover() { # ng
	local ng=$1 m=/mnt/zonefs dev=/dev/ublkb0 why='' out r c w res f
	local wpids=
	local cycles=${P2Z_RECOVER_CYCLES:-3} done_c=0 acked=0 bad=0 i off sz wp rec

	po2zfs-blk add -f --recovery "$ng" >/tmp/rc-add.out 2>&1 </dev/null &
	PID=$!
	if ! wait_node $dev 1; then
		result ublk recover FAIL "add --recovery: $(cat /tmp/rc-add.out)"
		return
	fi
	out=$(timeout 30 po2zfs-blk recover 0 2>&1 </dev/null)
	r=$?
	w=$(refuse_why $r "$out" "is alive, not quiesced: nothing to recover")
	why="$why${w:+ live($w)}"
	echo "P2Z-VM po2zfs-blk recover 0 (live): exit $r: $out"
	if ! zonefs_fresh $dev $m; then
		result ublk recover FAIL "mount: $(klog zonefs)"
		kill -TERM "$PID"
		wait "$PID"
		return
	fi
	rm -f /tmp/rc-stop /tmp/rc-rec.* /tmp/rc-rec*.out
	for f in 0 1 2 3; do
		rc_writer $m $f &
		wpids="$wpids $!"
	done
	for c in $(seq "$cycles"); do
		sleep "0.$((RANDOM % 9 + 1))" # a random moment, not a wait
		kill -KILL "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
		if ! wait_state quiesced; then
			why="$why cycle$c-not-quiesced($(po2zfs-blk list 2>&1))"
			break
		fi
		if [ "$c" = 1 ]; then
			# another backing device in the record: refused, no change
			cp /run/po2zfs-blk/0 /tmp/rc-record
			sed -i '3s/^[a-z]*=[0-9:]*/blk=1:1/' /run/po2zfs-blk/0
			out=$(timeout 30 po2zfs-blk recover 0 2>&1 </dev/null)
			r=$?
			echo "P2Z-VM po2zfs-blk recover 0 (other device): exit $r: $out"
			w=$(refuse_why $r "$out" "is not the device /dev/ublkb0 served")
			why="$why${w:+ other-device($w)}"
			wait_state quiesced || why="$why other-device-changed-state"
			cp /tmp/rc-record /run/po2zfs-blk/0
		fi
		po2zfs-blk recover -f 0 >"/tmp/rc-rec$c.out" 2>&1 </dev/null &
		PID=$!
		if ! wait_state alive; then
			why="$why cycle$c-recover($(tr '\n' '|' <"/tmp/rc-rec$c.out"))"
			break
		fi
		done_c=$c
	done
	# the writer appends once more after the last recovery
	c=$(wc -l </tmp/rc-acked.0)
	for i in $(seq 600); do
		[ "$(wc -l </tmp/rc-acked.0)" -gt "$c" ] && break
		sleep 0.05
	done
	touch /tmp/rc-stop
	# shellcheck disable=SC2086 # the writers' pids
	wait $wpids
	echo 3 >/proc/sys/vm/drop_caches
	for f in 0 1 2 3; do
		while read -r i off; do
			rec=$(dd if=$m/seq/$f bs=4k skip=$((off / 4096)) count=256 iflag=direct status=none |
				cmp -s - "/tmp/rc-rec.$f.$i" && echo ok)
			[ "$rec" = ok ] || bad=$((bad + 1))
			acked=$((acked + 1))
		done <"/tmp/rc-acked.$f"
		# seq/f is the device's zone f + 1 (zone 0 holds the super block)
		sz=$(stat -c %s $m/seq/$f)
		wp=$(blkzone report -o $(((f + 1) * Z / 512)) -c 1 $dev | sed -n 's/.*wptr \(0x[0-9a-f]*\).*/\1/p')
		wp=$((wp * 512))
		[ "$sz" = "$wp" ] || why="$why seq/$f-size($sz)-not-wp($wp)"
	done
	umount $m || why="$why umount"
	[ "$bad" = 0 ] || why="$why lost=$bad"
	cat /tmp/rc-err.[0-3] >/tmp/rc-err
	[ ! -s /tmp/rc-err ] || why="$why writer-errors($(tr '\n' ' ' </tmp/rc-err))"
	[ "$done_c" = "$cycles" ] || why="$why cycles=$done_c/$cycles"
	[ "$acked" -gt 0 ] || why="$why nothing-acked"
	kill -TERM "$PID"
	wait "$PID"
	r=$?
	[ $r = 0 ] || why="$why server-exit($r)"
	wait_node $dev 0 || why="$why ublkb0-left"
	# how the recovered servers resolved the requests sent again
	cat /tmp/rc-rec*.out >/tmp/rc-logs 2>/dev/null
	res="appends_in_record=$(sed -n 's/.*: \([0-9]*\) appends in the dead server.s record/\1/p' /tmp/rc-logs | awk '{ n += $1 } END { print n + 0 }')"
	for c in already-written rest append-landed append-sent failed; do
		res="$res $c=$(grep -c "recovery: reissued request of zone [0-9]*: $c\$" /tmp/rc-logs)"
	done
	sum="cycles=$done_c acked=$acked records of 1 MiB in 4 files, lost=$bad writer_errors=$(wc -l </tmp/rc-err) sizes=write pointers $res"
	echo "P2Z-VM blk-recover: $sum"
	result_why ublk recover "${why# }${why:+: $sum}" "$sum; refusals: live, other device"
}

# poll until /tmp/rc-acked.$1 has more than $2 lines, up to 60 s
wait_acked() { # file lines
	local i

	for i in $(seq 1200); do
		[ "$(wc -l <"/tmp/rc-acked.$1")" -gt "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# An upgrade is a restart (po2zfs-blk(8) SIGNALS): a device added with
# the default (recovery) in the foreground, zonefs on it and an append
# writer on seq/5 (rc_writer). SIGTERM to the server hands the mounted
# device over: the server drains, flushes, exits 0 with "left
# /dev/ublkb0 quiesced for recover", list shows it quiesced, and add -f
# of the same namespace (no --id, as the systemd unit runs it) recovers
# it. The writer never saw an error, every acknowledged record is in
# the file at its offset, the file's size is its zone's write pointer.
# Then the server of the unmounted device is SIGKILLed (quiesced again)
# and a plain del deletes the quiesced device, its records with it.
check_restart() { # ng
	local ng=$1 m=/mnt/zonefs dev=/dev/ublkb0 why='' out r wpid c1 c2
	local line acked=0 bad=0 i off rec sz wp st

	line="po2zfs-blk: left /dev/ublkb0 quiesced for recover"
	if ! add_fg "$ng" /tmp/rs-add.out; then
		result ublk restart FAIL "add -f: no /dev/ublkb0: $(cat /tmp/rs-add.out)"
		return
	fi
	if ! zonefs_fresh $dev $m; then
		result ublk restart FAIL "mount: $(klog zonefs)"
		kill -TERM "$PID"
		wait "$PID"
		return
	fi
	rm -f /tmp/rc-stop /tmp/rc-rec.5.*
	rc_writer $m 5 &
	wpid=$!
	wait_acked 5 2 || why="$why writer-stuck-before"
	kill -TERM "$PID"
	wait "$PID"
	r=$?
	[ $r = 0 ] || why="$why server-exit($r)"
	grep -qxF "$line" /tmp/rs-add.out || why="$why no-handover-line"
	[ -b $dev ] || why="$why device-gone"
	st=$(po2zfs-blk list 2>&1 | awk '$1 == "/dev/ublkb0" { print $3 }')
	[ "$st" = quiesced ] || why="$why list($st)"
	c1=$(wc -l </tmp/rc-acked.5)
	po2zfs-blk add -f "$ng" >/tmp/rs-rec.out 2>&1 </dev/null &
	PID=$!
	wait_state alive || why="$why add-recover($(tr '\n' '|' </tmp/rs-rec.out))"
	grep -qF "po2zfs-blk: /dev/ublkb0 is quiesced, served from $ng: recovering it" \
		/tmp/rs-rec.out || why="$why no-recover-line"
	[ ! -e /dev/ublkb1 ] || why="$why ublkb1-made"
	wait_acked 5 $((c1 + 2)) || why="$why writer-stuck-after"
	touch /tmp/rc-stop
	wait "$wpid"
	c2=$(wc -l </tmp/rc-acked.5)
	echo 3 >/proc/sys/vm/drop_caches
	while read -r i off; do
		rec=$(dd if=$m/seq/5 bs=4k skip=$((off / 4096)) count=256 iflag=direct status=none |
			cmp -s - "/tmp/rc-rec.5.$i" && echo ok)
		[ "$rec" = ok ] || bad=$((bad + 1))
		acked=$((acked + 1))
	done </tmp/rc-acked.5
	sz=$(stat -c %s $m/seq/5)
	wp=$(blkzone report -o $((6 * Z / 512)) -c 1 $dev | sed -n 's/.*wptr \(0x[0-9a-f]*\).*/\1/p')
	wp=$((wp * 512))
	[ "$sz" = "$wp" ] || why="$why size($sz)-not-wp($wp)"
	[ "$sz" = $((acked * M)) ] || why="$why size($sz)-not-acked($acked MiB)"
	umount $m || why="$why umount"
	[ "$bad" = 0 ] || why="$why lost=$bad"
	[ ! -s /tmp/rc-err.5 ] || why="$why writer-errors($(tr '\n' ' ' </tmp/rc-err.5))"
	# a quiesced device nobody serves: a plain del deletes it
	kill -KILL "$PID"
	wait "$PID" 2>/dev/null
	wait_state quiesced || why="$why not-quiesced-after-kill"
	out=$(timeout 30 po2zfs-blk del 0 2>&1 </dev/null)
	r=$?
	[ $r = 0 ] && [ -z "$out" ] || why="$why del($r: $out)"
	wait_node $dev 0 || why="$why ublkb0-left"
	wait_node /dev/ublkc0 0 || why="$why ublkc0-left"
	[ -z "$(po2zfs-blk list 2>&1)" ] || why="$why listed"
	[ ! -e /run/po2zfs-blk/0 ] && [ ! -e /run/po2zfs-blk/0.slots ] ||
		why="$why records-left($(ls /run/po2zfs-blk))"
	sum="acked=$acked records of 1 MiB ($c1 before the restart, $((c2 - c1)) after), lost=$bad, writer_errors=$(wc -l </tmp/rc-err.5), size=write pointer=$sz"
	echo "P2Z-VM blk-restart: $sum"
	result_why ublk restart "${why# }${why:+: $sum; $(tr '\n' '|' </tmp/rs-add.out) $(tr '\n' '|' </tmp/rs-rec.out)}" \
		"SIGTERM under zonefs: handed over (exit 0, quiesced), add -f without --id recovered it; $sum; del of a quiesced device"
}

# P2Z_BLK_ONLY (blk.sh passes it on): after the add, delete the device
# and run only the checks named there (their result names: recover,
# recover-btrfs, ...), in that order; an unknown name FAILs.
run_only() { # ng
	local ng=$1 c

	# the mount point check_zonefs (not run) makes
	mkdir -p /mnt/zonefs
	po2zfs-blk del 0 >/dev/null 2>&1 </dev/null
	wait_node /dev/ublkb0 0 || result ublk only FAIL "del 0: /dev/ublkb0 left"
	for c in $P2Z_BLK_ONLY; do
		case $c in
		sigterm) check_sigterm "$ng" ;;
		inflight) check_inflight "$ng" ;;
		sigterm-mounted) check_sigterm_mounted "$ng" ;;
		del-force) check_del_force "$ng" ;;
		del-force-mounted) check_del_force_mounted "$ng" ;;
		recover) check_recover "$ng" ;;
		restart) check_restart "$ng" ;;
		recover-btrfs) check_recover_btrfs "$ng" ;;
		recover-chain) check_recover_chain "$ng" ;;
		recover-fio) check_recover_fio "$ng" ;;
		recover-volatile) check_recover_volatile ;;
		power-cut) check_power_cut --volatile-cache sync ;;
		power-cut-zonefs) check_power_cut_zonefs --volatile-cache ;;
		bench-raw) check_bench_raw ublk "$ng" $((96 * M)) ;;
		*) result ublk "$c" FAIL "P2Z_BLK_ONLY: no such check" ;;
		esac
	done
}

run_ublk() {
	local ng=${NG[1]:-} out r pid

	if [ ! -c /dev/ublk-control ]; then
		result ublk available FAIL "no /dev/ublk-control: $(klog ublk)"
		return
	fi
	result ublk available PASS "/dev/ublk-control, $(uname -r)"
	if ! command -v po2zfs-blk >/dev/null; then
		result ublk add SKIP "po2zfs-blk was not built"
		return
	fi
	[ -c "$ng" ] || { result ublk add FAIL "no generic device for nsid 1"; return; }
	check_bad_input "${NG[2]:-/dev/ng-none}"
	timeout 60 po2zfs-blk add "$ng" >/tmp/add.out 2>&1 </dev/null
	r=$?
	out=$(cat /tmp/add.out)
	if [ $r != 0 ] || [ "$out" != /dev/ublkb0 ] || ! wait_node /dev/ublkb0 1; then
		result ublk add FAIL "exit $r: $out"
		return
	fi
	result ublk add PASS "po2zfs-blk add $ng: $out"
	echo "P2Z-VM po2zfs-blk list: $(po2zfs-blk list 2>&1 | tr '\n' ' ')"
	if [ -n "$P2Z_BLK_ONLY" ]; then
		run_only "$ng"
		return
	fi
	run_checks ublk /dev/ublkb0 "$ng" $((96 * M))
	check_add_again "$ng"
	check_del_mounted /dev/ublkb0
	out=$(timeout 30 po2zfs-blk del 0 2>&1 </dev/null)
	r=$?
	if [ $r = 0 ] && wait_node /dev/ublkb0 0 && wait_node /dev/ublkc0 0 &&
		[ -z "$(po2zfs-blk list 2>&1)" ]; then
		result ublk del PASS "no /dev/ublkb0, /dev/ublkc0, nothing listed"
	else
		result ublk del FAIL "exit $r: $out; list: $(po2zfs-blk list 2>&1 | tr '\n' ' ')"
		return
	fi
	# again in the foreground, to know the server's process; without
	# recovery: check_kill's server dies and its device is dead
	po2zfs-blk add -f --no-recovery "$ng" >/tmp/addf.out 2>&1 </dev/null &
	pid=$!
	if ! wait_node /dev/ublkb0 1; then
		result ublk kill FAIL "add -f: no /dev/ublkb0: $(cat /tmp/addf.out)"
		kill "$pid"
		return
	fi
	check_readd /dev/ublkb0
	check_kill /dev/ublkb0 "$ng" "$pid"
	check_sigterm "$ng"
	check_inflight "$ng"
	check_sigterm_mounted "$ng"
	check_del_force "$ng"
	check_del_force_mounted "$ng"
	check_recover "$ng"
	check_restart "$ng"
	check_recover_btrfs "$ng"
	check_recover_chain "$ng"
	check_recover_fio "$ng"
	check_recover_volatile
	check_power_cut --volatile-cache sync
	check_power_cut_zonefs --volatile-cache
	check_bench_raw ublk "$ng" $((96 * M))
}

# The server's one flush at stop, as it logs it: exactly one line, with
# the device's flush count ($3: the stop's flush and nothing else). Empty
# if so, else what differs.
flush_why() { # log ng flushes
	local n want

	want="po2zfs-blk: /dev/ublkb0: $2 flushed at stop ($3 flushes, 0 FUA writes in all)"
	n=$(grep -c 'flushed at stop' "$1")
	if [ "$n" != 1 ]; then
		echo "flush-lines($n)"
	elif ! grep -qxF "$want" "$1"; then
		echo "flush-line($(grep 'flushed at stop' "$1"))"
	fi
}

# poll for the line $2 in file $1, up to 10 s; 0 if it came
wait_line() { # file line
	local i

	for i in $(seq 200); do
		grep -qxF "$2" "$1" && return 0
		sleep 0.05
	done
	return 1
}

# add -f $1 in the background (options $3...: e.g. --no-recovery), its
# output in $2; sets PID; 0 if the device came
PID=
add_fg() { # ng out [option...]
	po2zfs-blk add -f "${@:3}" "$1" >"$2" 2>&1 </dev/null &
	PID=$!
	wait_node /dev/ublkb0 1 && return 0
	kill "$PID"
	wait "$PID"
	return 1
}

# SIGHUP (a dropped ssh session) is ignored; SIGTERM stops the server,
# which flushes the device once (nothing else flushed it: O_DIRECT
# writes, no fsync), deletes its device and exits 0.
check_sigterm() { # ng
	local r why='' ht

	if ! add_fg "$1" /tmp/addt.out; then
		result ublk sigterm FAIL "add -f: no /dev/ublkb0: $(cat /tmp/addt.out)"
		return
	fi
	head -c $M /dev/urandom >/tmp/st1
	blkzone reset -o $((6 * Z / 512)) -c 1 /dev/ublkb0 || why="$why reset"
	dd if=/tmp/st1 of=/dev/ublkb0 bs=1M seek=$((6 * Z / M)) oflag=direct \
		conv=notrunc status=none || why="$why dd"
	# an ignored signal is discarded when it is sent: nothing to wait for
	kill -HUP "$PID" || why="$why kill-hup"
	kill -0 "$PID" 2>/dev/null && [ -b /dev/ublkb0 ] || why="$why sighup-stopped"
	ht=$(grep -c . /tmp/addt.out)
	kill -TERM "$PID"
	wait "$PID"
	r=$?
	[ $r = 0 ] || why="$why exit($r)"
	wait_node /dev/ublkb0 0 || why="$why ublkb0-left"
	wait_node /dev/ublkc0 0 || why="$why ublkc0-left"
	[ -z "$(po2zfs-blk list 2>&1)" ] || why="$why listed"
	why="$why $(flush_why /tmp/addt.out "$1" 1)"
	why=${why% }
	result_why ublk sigterm "${why# }${why:+: $(tr '\n' '|' </tmp/addt.out)}" \
		"SIGHUP ignored ($ht log line before SIGTERM), server exit 0, device deleted, one flush at stop"
}

# A stop signal under a mounted zonefs: the first is refused (logged, the
# device and its data stay), a second forces the stop; the acknowledged
# bytes are on the device, flushed once, and the server exits 0 once the
# filesystem is unmounted.
check_sigterm_mounted() { # ng
	local ng=$1 m=/mnt/zonefs r why='' refusal n

	refusal="po2zfs-blk: Terminated: /dev/ublkb0 is mounted, held or open: not stopping (a second signal, or del --force 0, stops it)"
	if ! add_fg "$ng" /tmp/addm.out --no-recovery; then
		result ublk sigterm-mounted FAIL "add -f: no /dev/ublkb0: $(cat /tmp/addm.out)"
		return
	fi
	blkzone reset /dev/ublkb0
	if ! dd if=$SB of=/dev/ublkb0 bs=4096 count=1 oflag=direct status=none ||
		! mount -t zonefs /dev/ublkb0 $m; then
		result ublk sigterm-mounted FAIL "mount: $(klog zonefs)"
		kill -TERM "$PID"
		wait "$PID"
		return
	fi
	head -c $((2 * M)) /dev/urandom >/tmp/sm
	dd if=/tmp/sm of=$m/seq/4 bs=1M oflag=direct,append conv=notrunc \
		status=none || why="$why dd"
	kill -HUP "$PID"
	kill -TERM "$PID"
	wait_line /tmp/addm.out "$refusal" || why="$why no-refusal"
	kill -0 "$PID" 2>/dev/null || why="$why server-gone"
	[ -b /dev/ublkb0 ] || why="$why device-gone"
	echo 3 >/proc/sys/vm/drop_caches
	cmp -s $m/seq/4 /tmp/sm || why="$why data"
	kill -TERM "$PID"
	wait_node /dev/ublkb0 0 || why="$why not-forced"
	timeout 60 umount $m || why="$why umount"
	wait "$PID"
	r=$?
	[ $r = 0 ] || why="$why exit($r)"
	p2z_vm_raw read "$ng" $((5 * 96 * M / 4096)) $((2 * M)) >/tmp/smraw &&
		cmp -s /tmp/smraw /tmp/sm || why="$why raw-bytes"
	n=$(grep -cF "$refusal" /tmp/addm.out)
	[ "$n" = 1 ] || why="$why refusals($n)"
	n=$(grep -c 'flushed at stop' /tmp/addm.out)
	[ "$n" = 1 ] || why="$why flush-lines($n)"
	result_why ublk sigterm-mounted "${why# }${why:+: $(tr '\n' '|' </tmp/addm.out)}" \
		"first SIGTERM refused under zonefs, second forced, 2 MiB in native zone 5, one flush at stop"
}

# del refuses a device whose record is not its own (a record naming
# another server, then none), and list says so; --force deletes it.
check_del_force() { # ng
	local rec=/run/po2zfs-blk/0 out r why='' l

	if ! add_fg "$1" /tmp/addd.out; then
		result ublk del-force FAIL "add -f: no /dev/ublkb0: $(cat /tmp/addd.out)"
		return
	fi
	l=$(po2zfs-blk list)
	[ "$l" = "$(printf '/dev/ublkb0\t%s\talive\t%s\tpo2zfs-blk' "$(realpath "$1")" "$PID")" ] ||
		why="$why list($l)"
	[ "$(stat -c %a /run/po2zfs-blk)" = 700 ] || why="$why run-dir-mode($(stat -c %a /run/po2zfs-blk))"
	printf '/dev/elsewhere\n1\n' >$rec
	l=$(po2zfs-blk list)
	[ "$l" = "$(printf '/dev/ublkb0\t-\talive\t%s\tstale-record' "$PID")" ] ||
		why="$why list-stale($l)"
	out=$(timeout 30 po2zfs-blk del 0 2>&1 </dev/null)
	r=$?
	[ $r = 1 ] && [ "$out" = "po2zfs-blk: del 0: /dev/ublkb0: not made by po2zfs-blk (its record names server 1, the kernel $PID): Operation not permitted; --force deletes it" ] ||
		why="$why del-stale($r: $out)"
	rm -f $rec
	out=$(timeout 30 po2zfs-blk del 0 2>&1 </dev/null)
	r=$?
	[ $r = 1 ] && [ "$out" = "po2zfs-blk: del 0: /dev/ublkb0: not made by po2zfs-blk (no record in /run/po2zfs-blk): Operation not permitted; --force deletes it" ] ||
		why="$why del-norecord($r: $out)"
	l=$(po2zfs-blk list)
	[ "$l" = "$(printf '/dev/ublkb0\t-\talive\t%s\tother' "$PID")" ] ||
		why="$why list-other($l)"
	[ -b /dev/ublkb0 ] && kill -0 "$PID" 2>/dev/null || why="$why refused-but-gone"
	out=$(timeout 30 po2zfs-blk del --force 0 2>&1 </dev/null)
	r=$?
	[ $r = 0 ] && [ -z "$out" ] || why="$why del-force($r: $out)"
	wait "$PID"
	r=$?
	[ $r = 0 ] || why="$why server-exit($r)"
	wait_node /dev/ublkb0 0 || why="$why ublkb0-left"
	wait_node /dev/ublkc0 0 || why="$why ublkc0-left"
	[ -z "$(po2zfs-blk list 2>&1)" ] || why="$why listed"
	why="$why $(flush_why /tmp/addd.out "$1" 1)"
	why=${why% }
	result_why ublk del-force "${why# }${why:+: $(tr '\n' '|' </tmp/addd.out)}" \
		"del refused (exit 1, EPERM): a record of another server, no record; list marks both; del --force: exit 0, one flush at stop"
}

# del --force under a mounted zonefs: it stops the device at once and
# returns (the kernel deletes it when zonefs lets go); the acknowledged
# bytes are on the device, flushed once, and the server exits 0 once the
# filesystem is unmounted.
check_del_force_mounted() { # ng
	local ng=$1 m=/mnt/zonefs out r why=''

	if ! add_fg "$ng" /tmp/addfm.out; then
		result ublk del-force-mounted FAIL "add -f: no /dev/ublkb0: $(cat /tmp/addfm.out)"
		return
	fi
	blkzone reset /dev/ublkb0
	if ! dd if=$SB of=/dev/ublkb0 bs=4096 count=1 oflag=direct status=none ||
		! mount -t zonefs /dev/ublkb0 $m; then
		result ublk del-force-mounted FAIL "mount: $(klog zonefs)"
		kill -TERM "$PID"
		wait "$PID"
		return
	fi
	head -c $((2 * M)) /dev/urandom >/tmp/fm
	dd if=/tmp/fm of=$m/seq/7 bs=1M oflag=direct,append conv=notrunc \
		status=none || why="$why dd"
	out=$(timeout 30 po2zfs-blk del --force 0 2>&1 </dev/null)
	r=$?
	[ $r = 0 ] && [ -z "$out" ] || why="$why del-force($r: $out)"
	wait_node /dev/ublkb0 0 || why="$why ublkb0-left"
	timeout 60 umount $m || why="$why umount"
	wait "$PID"
	r=$?
	[ $r = 0 ] || why="$why server-exit($r)"
	wait_node /dev/ublkc0 0 || why="$why ublkc0-left"
	[ -z "$(po2zfs-blk list 2>&1)" ] || why="$why listed"
	p2z_vm_raw read "$ng" $((8 * 96 * M / 4096)) $((2 * M)) >/tmp/fmraw &&
		cmp -s /tmp/fmraw /tmp/fm || why="$why raw-bytes"
	r=$(grep -c 'flushed at stop' /tmp/addfm.out)
	[ "$r" = 1 ] || why="$why flush-lines($r)"
	result_why ublk del-force-mounted "${why# }${why:+: $(tr '\n' '|' </tmp/addfm.out)}" \
		"del --force of a mounted device: exit 0 at once, server exit 0 after umount, 2 MiB in native zone 8, one flush at stop"
}

# the sum of the write pointers (from each zone's start) of block device
# $1's zones, in KiB
wp_kib() {
	blkzone report "$1" | sed -n 's/.*wptr \(0x[0-9a-f]*\).*/\1/p' |
		while read -r w; do echo $((w)); done |
		awk '{ n += $1 } END { printf "%d\n", n / 2 }'
}

# files of the checksum list $2 (relative to directory $1) whose bytes
# match
sums_ok() { # dir sums
	(cd "$1" 2>/dev/null && sha256sum -c "$2" 2>/dev/null) | grep -c ': OK$'
}

# po2zfs-blk add -f of a new emu image $1 (npo2: 16 zones of 96 MiB, 80
# MiB capacity, 8 open and active) made with option $3 (--volatile-cache
# or none), its log in $2; sets PID; 0 if /dev/ublkb0 came, else the
# reason in PC_WHY
PC_HOW='' PC_WHY=''
pc_add() { # image log cache-option
	local out

	rm -f "$1"
	# shellcheck disable=SC2086 # $3: an option or none
	if ! out=$(po2zfs-emu create "$1" --zone-size 96M --zone-cap 80M \
		--zones 16 --max-open 8 --max-active 8 $3 2>&1); then
		PC_WHY="po2zfs-emu create: $out"
		return 1
	fi
	# without recovery: the kill is a power cut, not a pause
	add_fg "$1" "$2" --no-recovery && return 0
	PC_WHY="add -f $1: no /dev/ublkb0: $(cat "$2")"
	return 1
}

# The power cut: SIGKILL of the server of /dev/ublkb0 (PID) under the
# filesystem mounted on $1, which sees I/O errors then; its umount (lazy
# if a plain one fails), del 0, and the server added again on image $2
# with its log in $3. Sets PC_HOW (how the umount went) and PC_WHY (what
# went wrong, empty if nothing); 0 if the device came back.
pc_cut() { # mountpoint image log
	local out r

	PC_WHY=
	kill -KILL "$PID"
	wait "$PID" 2>/dev/null
	PC_HOW=umount
	if ! timeout 120 umount "$1"; then
		PC_HOW=umount-lazy
		timeout 60 umount -l "$1" || { PC_HOW=umount-failed; PC_WHY=" umount"; }
	fi
	out=$(timeout 30 po2zfs-blk del 0 2>&1 </dev/null)
	r=$?
	[ $r = 0 ] && [ -z "$out" ] || PC_WHY="$PC_WHY del($r: $out)"
	wait_node /dev/ublkb0 0 || PC_WHY="$PC_WHY ublkb0-left"
	wait_node /dev/ublkc0 0 || PC_WHY="$PC_WHY ublkc0-left"
	add_fg "$2" "$3" --no-recovery && return 0
	PC_WHY="$PC_WHY add-again($(tr '\n' '|' <"$3"))"
	return 1
}

# stop the server of /dev/ublkb0 (PID) with SIGTERM; PC_WHY empty if it
# exited 0
pc_stop() {
	local r

	kill -TERM "$PID"
	wait "$PID"
	r=$?
	PC_WHY=
	[ $r = 0 ] || PC_WHY=" server-exit($r)"
}

# A power cut under btrfs. po2zfs-blk serves an emu image made with a
# volatile write cache (po2zfs-emu(8)): what is written lives in the
# server until a flush, so SIGKILL of the server is a power cut. btrfs
# (commit=600: no commit but the sync's), a tree of files, sync, then
# more files without a sync (buffered ones, and two of 4 MiB with
# O_DIRECT, which btrfs writes to the device at once), SIGKILL, umount,
# del, add of the image again: every file written before the sync is
# intact and btrfs check is clean; the unsynced files may be lost (they
# are counted, not required). The device holds exactly what was flushed:
# its zones' write pointers are as after the sync, the unsynced O_DIRECT
# data, written and acknowledged, went with the cache. So the sync's
# flushes, which po2zfs-blk forwards, are what kept the files.
# $1: po2zfs-emu create's cache option (--volatile-cache, or empty to
# show a device without a cache keeping everything: the check then fails
# on the write pointers); $2: sync, or nosync to show the files lost
# without it (the check then fails).
check_power_cut() { # cache-option sync|nosync
	local img=/tmp/pc.img m=/mnt/btrfs dev=/dev/ublkb0 q=/sys/block/ublkb0/queue
	local out r why='' i nsync nun intact=0 survived=0 wsync wkill wreadd sum

	pc_add $img /tmp/pc1.out "$1" || { result ublk power-cut FAIL "$PC_WHY"; return; }
	out="$(cat $q/write_cache), fua $(cat $q/fua)"
	[ "$out" = "write back, fua 1" ] || why="$why cache($out)"
	mkdir -p $m
	if ! mkfs.btrfs -f -O zoned -d single -m single $dev >/tmp/pc-mkfs.out 2>&1 ||
		! mount -t btrfs -o commit=600 $dev $m; then
		result ublk power-cut FAIL "mkfs/mount: $(grep -m1 -iE 'error|fail' /tmp/pc-mkfs.out) $(klog btrfs)"
		pc_stop
		return
	fi
	mktree $m/t /tmp/pc-sums || why="$why write"
	nsync=$(wc -l </tmp/pc-sums)
	[ "$2" = nosync ] || sync
	wsync=$(wp_kib $dev)
	mkdir $m/u
	for i in $(seq 20); do
		head -c $((i * 4099)) /dev/urandom >"$m/u/b$i"
	done
	for i in 1 2; do
		head -c $((4 * M)) /dev/urandom >/tmp/pc-d$i
		dd if=/tmp/pc-d$i of="$m/u/d$i" bs=1M oflag=direct status=none ||
			why="$why dio"
	done
	(cd $m && find u -type f | sort | xargs sha256sum) >/tmp/pc-usums
	nun=$(wc -l </tmp/pc-usums)
	wkill=$(wp_kib $dev)
	if ! pc_cut $m $img /tmp/pc2.out; then
		result ublk power-cut FAIL "${why# }$PC_WHY"
		return
	fi
	why="$why$PC_WHY"
	wreadd=$(wp_kib $dev)
	if mount -t btrfs $dev $m; then
		intact=$(sums_ok $m/t /tmp/pc-sums)
		survived=$(sums_ok $m /tmp/pc-usums)
		umount $m || why="$why umount2"
	else
		why="$why remount($(klog btrfs))"
	fi
	out=$(btrfs check --readonly $dev 2>&1)
	r=$?
	echo "$out"
	[ $r = 0 ] || why="$why btrfs-check($r: $(echo "$out" | grep -m1 -iE 'error|corrupt|invalid|wrong|mismatch'))"
	pc_stop
	why="$why$PC_WHY"
	rm -f $img
	[ "$intact" = "$nsync" ] || why="$why lost-synced"
	[ "$wkill" -ge $((wsync + 8192)) ] || why="$why dio-not-on-device"
	[ "$wreadd" = "$wsync" ] || why="$why device-not-as-flushed"
	sum="synced_files=$nsync intact=$intact lost=$((nsync - intact)) unsynced_files=$nun survived=$survived"
	echo "P2Z-VM blk-power-cut: $sum"
	result_why ublk power-cut "${why# }${why:+: $sum; zone write pointers after the sync $wsync KiB, at the kill $wkill, after add $wreadd}" \
		"$sum; zone write pointers: after the sync $wsync KiB, at the kill $wkill, after add again $wreadd (the $((wkill - wsync)) KiB after the last flush lost), $PC_HOW after the kill, del exit 0, btrfs check clean"
}

# The same power cut under zonefs, where each file is a zone: 2 MiB
# appended to seq/0 with O_DIRECT and fsync (a flush), 2 MiB to seq/1
# with O_DIRECT only (acknowledged, in the cache); after the SIGKILL, del
# and add, seq/0 has its 2 MiB, seq/1 is empty (its zone's write pointer
# as the image last stored it). $1: as check_power_cut's (without a
# cache, seq/1 keeps its 2 MiB and the check fails).
check_power_cut_zonefs() { # cache-option
	local img=/tmp/pcz.img m=/mnt/zonefs dev=/dev/ublkb0 why='' s0 s1

	mkdir -p $m
	pc_add $img /tmp/pcz1.out "$1" ||
		{ result ublk power-cut-zonefs FAIL "$PC_WHY"; return; }
	# the super block flushed too (fsync of the block device)
	if ! dd if=$SB of=$dev bs=4096 count=1 oflag=direct conv=fsync status=none ||
		! mount -t zonefs $dev $m; then
		result ublk power-cut-zonefs FAIL "mount: $(klog zonefs)"
		pc_stop
		return
	fi
	head -c $((2 * M)) /dev/urandom >/tmp/pcz0
	head -c $((2 * M)) /dev/urandom >/tmp/pcz1
	dd if=/tmp/pcz0 of=$m/seq/0 bs=1M oflag=direct,append conv=notrunc,fsync \
		status=none || why="$why dd0"
	dd if=/tmp/pcz1 of=$m/seq/1 bs=1M oflag=direct,append conv=notrunc \
		status=none || why="$why dd1"
	s0=$(stat -c %s $m/seq/0) s1=$(stat -c %s $m/seq/1)
	[ "$s0 $s1" = "$((2 * M)) $((2 * M))" ] || why="$why sizes-before($s0 $s1)"
	if ! pc_cut $m $img /tmp/pcz2.out; then
		result ublk power-cut-zonefs FAIL "${why# }$PC_WHY"
		return
	fi
	why="$why$PC_WHY"
	if mount -t zonefs $dev $m; then
		s0=$(stat -c %s $m/seq/0) s1=$(stat -c %s $m/seq/1)
		[ "$s0" = $((2 * M)) ] && cmp -s $m/seq/0 /tmp/pcz0 || why="$why fsynced-lost($s0)"
		[ "$s1" = 0 ] || why="$why unsynced-kept($s1)"
		umount $m || why="$why umount2"
	else
		why="$why remount($(klog zonefs))"
	fi
	pc_stop
	why="$why$PC_WHY"
	rm -f $img
	result_why ublk power-cut-zonefs "${why# }" \
		"after SIGKILL, del, add: seq/0 (fsynced) $s0 bytes, intact; seq/1 (not fsynced) $s1 bytes; $PC_HOW after the kill"
}

# ---- kill cycles under btrfs and fio (issue #24) ----

# add -f --recovery of $1 in the background, its log in $2; sets PID; 0
# if /dev/ublkb0 came
add_rec() { # ng-or-image log
	po2zfs-blk add -f --recovery "$1" >"$2" 2>&1 </dev/null &
	PID=$!
	wait_node /dev/ublkb0 1 && return 0
	kill "$PID"
	wait "$PID"
	return 1
}

# SIGKILL the server of /dev/ublkb0 (PID) $1 times, each at a random
# moment, delayed to the next with writes in flight; each time note the
# device's requests
# in flight (/sys/block/ublkb0/inflight, reads/writes, just before the
# kill), wait until the kernel quiesced it, then po2zfs-blk recover -f 0 in
# the background (log $2.C, PID its process) until the device is alive.
# With $3, a process id: no kill once it has ended. Sets KR_DONE (cycles
# done), KR_INFLIGHT (r/w per cycle) and KR_WHY (empty if all went well).
KR_DONE=0 KR_INFLIGHT='' KR_WHY=''
kill_recover() { # cycles log-prefix [pid]
	local c f rd wr

	KR_DONE=0 KR_INFLIGHT='' KR_WHY=''
	for c in $(seq "$1"); do
		sleep "0.$((RANDOM % 9 + 1))" # a random moment, not a wait
		[ -z "${3:-}" ] || kill -0 "$3" 2>/dev/null || break
		# then the first moment with writes in flight, if one comes
		# within 4000 looks (seconds in the TCG guest)
		for f in $(seq 4000); do
			read -r rd wr </sys/block/ublkb0/inflight
			[ "$wr" = 0 ] || break
		done
		f="$rd/$wr"
		kill -KILL "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
		KR_INFLIGHT="$KR_INFLIGHT $f"
		if ! wait_state quiesced; then
			KR_WHY="$KR_WHY cycle$c-not-quiesced($(po2zfs-blk list 2>&1))"
			return 1
		fi
		po2zfs-blk recover -f 0 >"$2.$c" 2>&1 </dev/null &
		PID=$!
		if ! wait_state alive; then
			KR_WHY="$KR_WHY cycle$c-recover($(tr '\n' '|' <"$2.$c"))"
			return 1
		fi
		KR_DONE=$c
	done
	KR_INFLIGHT=${KR_INFLIGHT# }
}

# how the recovered servers (logs $1.*) resolved the requests sent again:
# "appends_in_record=N already-written=N rest=N append-landed=N
# append-sent=N failed=N"
rec_classes() { # log-prefix
	local c out

	cat "$1".* >/tmp/rec-logs 2>/dev/null
	out="appends_in_record=$(sed -n 's/.*: \([0-9]*\) appends in the dead server.s record/\1/p' /tmp/rec-logs | awk '{ n += $1 } END { print n + 0 }')"
	for c in already-written rest append-landed append-sent failed; do
		out="$out $c=$(grep -c "recovery: reissued request of zone [0-9]*: $c\$" /tmp/rec-logs)"
	done
	echo "$out"
}

# The writer of the btrfs kill cycles: files of 4 KiB to 2 MiB of random
# bytes written into directory $1 with dd conv=fsync until /tmp/rb-stop
# exists; a file whose fsync returned is listed "SHA256  NAME" in $2 (the
# acknowledged set), any error goes to $2.err.
rb_writer() { # dir sums
	local i=0 src=$2.src sum

	mkdir -p "$1"
	: >"$2"
	: >"$2.err"
	while [ ! -e /tmp/rb-stop ]; do
		head -c $(((RANDOM % 512 + 1) * 4096)) /dev/urandom >"$src"
		sum=$(sha256sum <"$src")
		if dd if="$src" of="$1/f$i" bs=64k conv=fsync status=none 2>>"$2.err"; then
			echo "${sum%% *}  f$i" >>"$2"
		else
			echo "f$i: dd failed" >>"$2.err"
		fi
		i=$((i + 1))
	done
}

# btrfs (zoned, single) on /dev/ublkb0 (PID's, added with --recovery)
# and three fsyncing writers; the server SIGKILLed and recovered
# P2Z_RECOVER_CYCLES times (kill_recover); then the writers stop, umount,
# btrfs check, mount, every acknowledged file compared, umount, SIGTERM.
# The result (name $1) counts the writers' errors as failures unless $2
# is "volatile" (an image whose cache died with the server: the writers
# may see errors, the fsynced files must survive). Server logs: $3.*.
rb_run() { # check-name strict|volatile log-prefix
	local m=/mnt/btrfs dev=/dev/ublkb0 why='' w wpids='' out r f
	local acked=0 bytes=0 bad=0 errs cls sum

	mkdir -p $m
	if ! mkfs.btrfs -f -O zoned -d single -m single $dev >/tmp/rb-mkfs.out 2>&1 ||
		! mount -t btrfs $dev $m; then
		result ublk "$1" FAIL "mkfs/mount: $(grep -m1 -iE 'error|fail' /tmp/rb-mkfs.out) $(klog btrfs)"
		kill -TERM "$PID"
		wait "$PID"
		return
	fi
	rm -f /tmp/rb-stop
	for w in 0 1 2; do
		rb_writer $m/w$w /tmp/rb-sums.$w &
		wpids="$wpids $!"
	done
	# the first kill once every writer has something acknowledged (up
	# to 2 min: a loaded TCG host)
	for w in $(seq 2400); do
		[ -s /tmp/rb-sums.0 ] && [ -s /tmp/rb-sums.1 ] &&
			[ -s /tmp/rb-sums.2 ] && break
		sleep 0.05
	done
	kill_recover "${P2Z_RECOVER_CYCLES:-3}" "$3" || why="$why$KR_WHY"
	# the writers go on after the last recovery (not where the cache died)
	w=$(wc -l </tmp/rb-sums.0)
	[ "$2" = volatile ] && w=-1
	for f in $(seq 600); do
		[ "$(wc -l </tmp/rb-sums.0)" -gt "$w" ] && break
		sleep 0.05
	done
	touch /tmp/rb-stop
	# shellcheck disable=SC2086 # the writers' pids
	wait $wpids
	timeout 120 umount $m || why="$why umount"
	out=$(btrfs check --readonly $dev 2>&1)
	r=$?
	echo "$out" | tail -n 5
	[ $r = 0 ] || why="$why btrfs-check($r: $(echo "$out" | grep -m1 -iE 'error|corrupt|invalid|wrong|mismatch'))"
	if mount -t btrfs $dev $m; then
		: >/tmp/rb-names
		for w in 0 1 2; do
			acked=$((acked + $(wc -l </tmp/rb-sums.$w)))
			bad=$((bad + $(wc -l </tmp/rb-sums.$w) - $(sums_ok $m/w$w /tmp/rb-sums.$w)))
			sed "s|^[0-9a-f]*  |$m/w$w/|" /tmp/rb-sums.$w >>/tmp/rb-names
		done
		bytes=$(xargs -r stat -c %s </tmp/rb-names 2>/dev/null | awk '{ n += $1 } END { print n + 0 }')
		umount $m || why="$why umount2"
	else
		why="$why remount($(klog btrfs))"
	fi
	kill -TERM "$PID"
	wait "$PID"
	r=$?
	[ $r = 0 ] || why="$why server-exit($r)"
	wait_node $dev 0 || why="$why ublkb0-left"
	cat /tmp/rb-sums.[0-2].err >/tmp/rb-err
	errs=$(grep -c 'dd failed' /tmp/rb-err)
	[ "$2" = volatile ] || [ ! -s /tmp/rb-err ] ||
		why="$why writer-errors($(head -c 300 /tmp/rb-err | tr '\n' ' '))"
	if [ "$2" != volatile ] && [ -s /tmp/rb-err ]; then
		# where the error came from: the kernel's and the servers' lines
		dmesg | grep -iE 'error|ublk|btrfs' | grep -v 'BTRFS info' |
			tail -n 12 | sed 's/^/P2Z-VM blk-'"$1"' klog: /'
		grep -HiE 'recovery|error|fail|EIO' "$3".* 2>/dev/null |
			grep -vE 'append-landed$|already-written$|rest$' |
			tail -n 20 | sed 's/^/P2Z-VM blk-'"$1"' server: /'
	fi
	[ "$bad" = 0 ] || why="$why lost=$bad"
	[ "$KR_DONE" = "${P2Z_RECOVER_CYCLES:-3}" ] || why="$why cycles=$KR_DONE"
	[ "$acked" -gt 0 ] || why="$why nothing-acked"
	cls=$(rec_classes "$3")
	sum="cycles=$KR_DONE inflight_at_kills(r/w)=${KR_INFLIGHT// /,} acked=$acked files $bytes bytes lost=$bad writer_errors=$errs $cls"
	echo "P2Z-VM blk-$1: $sum"
	result_why ublk "$1" "${why# }${why:+: $sum}" "$sum; btrfs check clean"
}

# ublk user recovery under btrfs (issue #24): a device added with
# --recovery, btrfs -O zoned on it (data by zone append), three writers of
# fsynced files; the server SIGKILLed at random moments
# P2Z_RECOVER_CYCLES times (3 here; 20 by hand) and recovered each time.
# The writers see no error, every file whose fsync returned is intact,
# btrfs check is clean.
check_recover_btrfs() { # ng
	if ! add_rec "$1" /tmp/rb-add.out; then
		result ublk recover-btrfs FAIL "add -f --recovery: $(cat /tmp/rb-add.out)"
		return
	fi
	rb_run recover-btrfs strict /tmp/rb-rec
}

# the number in "recover 0: N appends in the dead server's record" of log
# $1 once it is there (up to 10 s), else empty
rc_appends() { # log
	local i n

	for i in $(seq 200); do
		n=$(sed -n 's/.*recover 0: \([0-9]*\) appends in the dead server.s record/\1/p' "$1")
		[ -n "$n" ] && echo "$n" && return 0
		sleep 0.05
	done
	return 1
}

# A server killed while it recovers (issue #24): btrfs and three writers
# as recover-btrfs; the server S1 SIGKILLed with writes in flight; while a
# holder keeps /dev/ublkc0 open (START_USER_RECOVERY refuses then, and
# recover retries for 5 s) recover S2 loads S1's record and makes its own;
# S2 SIGKILLed there; the holder ends; recover S3 serves the device. S3
# must see every append S2 saw (S2's record carries S1's unresolved
# slots: N3 = N2 exactly; before the carry area S2's fresh record had 0,
# and S3 sent them again). Repeated (S3 the next S1) until a kill leaves
# appends in the record (up to 8 times); then the writers stop: no writer
# error, every acknowledged file intact, btrfs check clean.
check_recover_chain() { # ng
	local m=/mnt/btrfs dev=/dev/ublkb0 why='' w wpids='' c f rd wr hpid
	local n2='' n3='' tries=0 acked=0 bad=0 r out l

	if ! add_rec "$1" /tmp/rc-add.out; then
		result ublk recover-chain FAIL "add -f --recovery: $(cat /tmp/rc-add.out)"
		return
	fi
	mkdir -p $m
	if ! mkfs.btrfs -f -O zoned -d single -m single $dev >/tmp/rc-mkfs.out 2>&1 ||
		! mount -t btrfs $dev $m; then
		result ublk recover-chain FAIL "mkfs/mount: $(grep -m1 -iE 'error|fail' /tmp/rc-mkfs.out)"
		kill -TERM "$PID"
		wait "$PID"
		return
	fi
	rm -f /tmp/rb-stop /tmp/rc-rec.*
	for w in 0 1 2; do
		rb_writer $m/w$w /tmp/rc-sums.$w &
		wpids="$wpids $!"
	done
	for w in $(seq 2400); do
		[ -s /tmp/rc-sums.0 ] && [ -s /tmp/rc-sums.1 ] &&
			[ -s /tmp/rc-sums.2 ] && break
		sleep 0.05
	done
	for c in $(seq 8); do
		tries=$c
		sleep "0.$((RANDOM % 9 + 1))"
		for f in $(seq 4000); do
			read -r rd wr </sys/block/ublkb0/inflight
			[ "$wr" = 0 ] || break
		done
		kill -KILL "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
		wait_state quiesced || { why="$why c$c-not-quiesced"; break; }
		l=/tmp/rc-rec.$c
		sleep 600 9<>/dev/ublkc0 &
		hpid=$!
		for f in $(seq 200); do
			[ -e "/proc/$hpid/fd/9" ] || ! kill -0 "$hpid" 2>/dev/null ||
				break
			sleep 0.05
		done
		if [ ! -e "/proc/$hpid/fd/9" ]; then
			why="$why c$c-holder(/dev/ublkc0 not held open)"
			break
		fi
		po2zfs-blk recover -f 0 >"$l.s2" 2>&1 </dev/null &
		PID=$!
		n2=$(rc_appends "$l.s2")
		kill -KILL "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
		kill "$hpid"
		wait "$hpid" 2>/dev/null
		if [ -z "$n2" ]; then
			why="$why c$c-s2($(tr '\n' '|' <"$l.s2"))"
			break
		fi
		po2zfs-blk recover -f 0 >"$l.s3" 2>&1 </dev/null &
		PID=$!
		n3=$(rc_appends "$l.s3")
		if ! wait_state alive; then
			why="$why c$c-s3($(tr '\n' '|' <"$l.s3"))"
			break
		fi
		[ "$n3" = "$n2" ] || why="$why c$c-carried(s2=$n2,s3=${n3:-?})"
		[ "$n2" = 0 ] || break
	done
	[ "${n2:-0}" != 0 ] || why="$why no-appends-in-$tries-kills"
	touch /tmp/rb-stop
	# shellcheck disable=SC2086 # the writers' pids
	wait $wpids
	timeout 120 umount $m || why="$why umount"
	out=$(btrfs check --readonly $dev 2>&1)
	r=$?
	[ $r = 0 ] || why="$why btrfs-check($r: $(echo "$out" | grep -m1 -iE 'error|corrupt|invalid|wrong|mismatch'))"
	if mount -t btrfs $dev $m; then
		for w in 0 1 2; do
			acked=$((acked + $(wc -l </tmp/rc-sums.$w)))
			bad=$((bad + $(wc -l </tmp/rc-sums.$w) - $(sums_ok $m/w$w /tmp/rc-sums.$w)))
		done
		umount $m || why="$why umount2"
	else
		why="$why remount($(klog btrfs))"
	fi
	kill -TERM "$PID"
	wait "$PID"
	r=$?
	[ $r = 0 ] || why="$why server-exit($r)"
	wait_node $dev 0 || why="$why ublkb0-left"
	cat /tmp/rc-sums.[0-2].err >/tmp/rc-err
	[ ! -s /tmp/rc-err ] || why="$why writer-errors($(head -c 300 /tmp/rc-err | tr '\n' ' '))"
	[ "$bad" = 0 ] || why="$why lost=$bad"
	[ "$acked" -gt 0 ] || why="$why nothing-acked"
	out="tries=$tries appends_in_record(s2/s3)=${n2:-?}/${n3:-?} acked=$acked lost=$bad $(rec_classes /tmp/rc-rec)"
	echo "P2Z-VM blk-recover-chain: $out"
	result_why ublk recover-chain "${why# }${why:+: $out}" "$out; btrfs check clean"
}

# The same on an emu image made with a volatile write cache
# (po2zfs-emu(8)), which dies with the server: what was flushed
# survives, the rest may not, and the writers may see errors (counted);
# every file whose fsync returned is intact and btrfs check is clean.
check_recover_volatile() {
	local img=/tmp/rv.img out k0

	rm -f $img
	if ! out=$(po2zfs-emu create $img --zone-size 96M --zone-cap 80M \
		--zones 16 --max-open 8 --max-active 8 --volatile-cache 2>&1) ||
		! add_rec $img /tmp/rv-add.out; then
		result ublk recover-volatile FAIL "$out $(cat /tmp/rv-add.out 2>/dev/null)"
		return
	fi
	k0=$(dmesg | wc -l)
	rb_run recover-volatile volatile /tmp/rv-rec
	rm -f $img
	# btrfs aborts its transaction on the flush EIO (expected: the cache
	# died) and may WARN while unmounting after the abort
	# (btrfs_put_block_group): those warnings of this check are expected
	dmesg | tail -n +$((k0 + 1)) >/tmp/rv-klog
	if grep -q 'Transaction aborted' /tmp/rv-klog; then
		grep -E 'WARNING:.* fs/btrfs/' /tmp/rv-klog >>/tmp/klog-expected
		echo "P2Z-VM recover-volatile: expected btrfs warnings after the abort: $(grep -c . /tmp/klog-expected)"
	fi
}

# fio's zbd mode at depth (io_uring, QD16, direct, 64 KiB, crc32c verify
# headers) writing 5 zones (more for over 5 kills) of /dev/ublkb0 (added with --recovery) while
# the server is SIGKILLed and recovered P2Z_RECOVER_CYCLES times; fio
# sees no error, writes every byte, then reads every block back and its
# checksums match (the same job's verify phase: a second job with
# --verify_only read zeros at the first block, as fio's zbd mode resets
# a write job's zones when it starts).
check_recover_fio() { # ng
	local dev=/dev/ublkb0 why='' fpid r w rd cls sum
	# 5 zones outlast 3 kills; the long run's 20 need more (19 in 5)
	local cycles=${P2Z_RECOVER_CYCLES:-3} nz=5
	[ "$cycles" -le 5 ] || nz=$((cycles / 2 + 5 > 15 ? 15 : cycles / 2 + 5))
	local args=(--name=rf "--filename=$dev" --direct=1 --ioengine=io_uring
		--iodepth=16 --zonemode=zbd --rw=write --bs=64k "--offset=$Z"
		--size=$((nz * Z)) --verify=crc32c --output-format=json)

	if ! add_rec "$1" /tmp/rf-add.out; then
		result ublk recover-fio FAIL "add -f --recovery: $(cat /tmp/rf-add.out)"
		return
	fi
	blkzone reset $dev
	fio "${args[@]}" --do_verify=1 --output=/tmp/rf-w.json >/tmp/rf-w.err 2>&1 &
	fpid=$!
	kill_recover "${P2Z_RECOVER_CYCLES:-3}" /tmp/rf-rec "$fpid" || why="$why$KR_WHY"
	wait $fpid
	r=$?
	[ $r = 0 ] || why="$why fio-exit($r: $(grep -m1 -iE 'err|verify' /tmp/rf-w.err))"
	read -r w _ < <(fio_result /tmp/rf-w.json write)
	read -r rd _ < <(fio_result /tmp/rf-w.json read)
	[ "${w:-}" = $((nz * CAP)) ] && [ "${rd:-}" = $((nz * CAP)) ] ||
		why="$why bytes(wrote ${w:-?} verified ${rd:-?})"
	[ "$KR_DONE" = "${P2Z_RECOVER_CYCLES:-3}" ] || why="$why cycles=$KR_DONE"
	kill -TERM "$PID"
	wait "$PID"
	r=$?
	[ $r = 0 ] || why="$why server-exit($r)"
	wait_node $dev 0 || why="$why ublkb0-left"
	cls=$(rec_classes /tmp/rf-rec)
	sum="cycles=$KR_DONE inflight_at_kills(r/w)=${KR_INFLIGHT// /,} written=${w:-?} verified=${rd:-?} $cls"
	echo "P2Z-VM blk-recover-fio: $sum"
	result_why ublk recover-fio "${why# }${why:+: $sum}" "$sum; fio QD16 io_uring zbd, crc32c verified"
}

# Every 300 s the processes of the checks (pid, state, kernel wait
# channel, command) and any in D state: a check that hangs shows where in
# the log (the guest's timeout alone says nothing).
blk_watchdog() {
	local p st cmd

	while sleep 300; do
		echo "P2Z-VM watchdog at ${SECONDS}s: $(timeout 10 po2zfs-blk list 2>&1 | tr '\n\t' '| ')"
		for p in /proc/[0-9]*; do
			st=$(awk '{ print $3 }' "$p/stat" 2>/dev/null) || continue
			cmd=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | head -c 120)
			case "$cmd" in
			*po2zfs* | dd\ * | *fio* | *btrfs* | *mount* | *blkzone*) ;;
			*) [ "$st" = D ] || continue ;;
			esac
			echo "P2Z-VM   ${p#/proc/} $st $(cat "$p/wchan" 2>/dev/null) $cmd"
		done
	done
}
blk_watchdog &
WD_PID=$!

run_ublk
echo "P2Z-VM ublk done at ${SECONDS}s"
kill "$WD_PID" 2>/dev/null

check_klog
results_passed
