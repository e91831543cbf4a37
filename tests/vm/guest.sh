#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck source-path=SCRIPTDIR
#
# Runs inside the device-test guest (see run.sh): one NVMe controller with
#   nsid 1  npo2, 96 MiB zones, 80 MiB capacity, 4 KiB LBAs (hidden disk)
#   nsid 2  npo2, 3 MiB zones, capacity = size, 512-byte LBAs (hidden disk)
#   nsid 3  po2, 64 MiB zones, 48 MiB capacity, 4 KiB LBAs (block device)
#   nsid 4  the same as nsid 3
#   nsid 5  npo2, 9000 zones of 12 KiB, 8 KiB capacity (hidden disk)
# Device names are found by namespace id, never assumed: on 6.12 the
# generic devices are named in scan order.
#
# For each configuration (device path, backend or "auto") it runs the
# device-layer test, checks the bytes it left against a raw read and the
# zone state against nvme-cli and po2zfs-zone (report, JSON, map, finish
# and reset of another zone), mounts and checks the same through the
# filesystem, then
# runs the mount tests (tests/func) with P2Z_TEST_DEV set: all of them on
# the npo2 and po2 namespaces through passthrough and on the po2 namespace
# through libzbd, a quick subset on the others (see run.sh for the knobs).
# Then nsid 5, whose zones take more than one report, and last a zoned
# null_blk with conventional zones through the zbd backend.
# Namespaces are independent devices: the configurations of nsid 1, of
# nsid 2, 5 and null_blk, of nsid 3 and of nsid 4 run alongside each other.
#
# Prints a result line (guest-lib.sh) per check, "P2Z-RESULT <config> <test>
# <verdict> <seconds>s [reason]", the clock starting at the previous result
# of the same configuration; each configuration's full output follows at
# the end.
set -u
export P2Z_BUILD=/p2z/build P2Z_TIO=/p2z/build/tests/p2z_tio
P2Z_VM_TESTS='' P2Z_VM_FULL=0
# shellcheck source=/dev/null
. /p2z/vm.conf
# shellcheck source=guest-lib.sh
. /p2z/guest-lib.sh
# The mount tests' helpers (is_mounted, po2_roundup, ...): defining them
# has no side effect; their verdict functions (fail, skip) exit, so the
# guest's own checks report through guest-lib.sh's result instead.
# shellcheck source=../func/common.sh
. /p2z/tests/func/common.sh
QUICK="0001 0101 0104 0109 0201 0202 0301 0402"
M=$((1024 * 1024))
# results go to the console (fd 3), each configuration's output to its log
P2Z_RESULT_FD=3

ns_map
ns_show 1 2 3 4 5

# nvme-cli's view of one zone: "<condition> <wp - zslba in LBAs>", the
# condition named as po2zfs names it (nvme-cli 2.3 prints the raw ZS byte).
zone_state() { # ngdev zone_lba zidx
	local k1 slba wp cap zs rest

	nvme zns report-zones "$1" -s $(($2 * $3)) -d 1 2>&1 |
		while read -r k1 slba _ wp _ cap _ zs rest; do
			[ "$k1" = SLBA: ] || continue
			case $((zs >> 4)) in
			1) zs=empty ;; 2) zs=implicit-open ;; 3) zs=explicit-open ;;
			4) zs=closed ;; 13) zs=read-only ;; 14) zs=full ;;
			15) zs=offline ;; *) zs="zs=$zs" ;;
			esac
			echo "$zs $((wp - slba))"
		done
}

# xa NAME FILE: the value of extended attribute NAME of FILE
xa() {
	getfattr --absolute-names --only-values -n "$1" "$2"
}

# start_daemon DEV MNT TRIES [OPTION...]: po2zfs DEV MNT -f OPTION... in the
# background (PID, output in $W/daemon.log); 0 once MNT is mounted, 1 (the
# daemon reaped) if it exits first or TRIES x 50 ms pass.
start_daemon() {
	local dev=$1 mnt=$2 tries=$3

	shift 3
	po2zfs "$dev" "$mnt" -f "$@" >"$W/daemon.log" 2>&1 &
	PID=$!
	for _ in $(seq "$tries"); do
		is_mounted "$mnt" && return 0
		kill -0 $PID 2>/dev/null || break
		sleep 0.05
	done
	is_mounted "$mnt" && return 0
	wait $PID
	return 1
}

# Device layer, raw bytes, nvme-cli zone state. Leaves zone 2 closed with
# the bytes of $W/expect.
test_dev() { # config path backend ng zone cap
	local cfg=$1 path=$2 be=$3 ng=$4 zone=$5 cap=$6 out r st
	local slba='' bytes='' lbs

	out=$(p2z_vm_dev "$path" "$be" "$zone" "$cap" "$W/expect" 2>&1)
	r=$?
	echo "$out"
	if [ $r != 0 ]; then
		result "$cfg" dev-layer FAIL "$(echo "$out" | grep -c '^  FAIL') checks"
		return 1
	fi
	result "$cfg" dev-layer PASS
	eval "$(echo "$out" | sed -n 's/^P2Z-RAW \(.*\)/\1/p' | tr ' ' ';')"
	if p2z_vm_raw read "$ng" "$slba" "$bytes" >"$W/raw" &&
		cmp "$W/expect" "$W/raw"; then
		result "$cfg" raw-bytes PASS
	else
		result "$cfg" raw-bytes FAIL "raw read of zone 2 differs"
	fi
	lbs=$(p2z_vm_raw lbs "$ng")
	st=$(zone_state "$ng" $((zone / lbs)) 2)
	if [ "$st" = "closed $((bytes / lbs))" ]; then
		result "$cfg" nvme-cli-zone PASS
	else
		result "$cfg" nvme-cli-zone FAIL "zone 2: '$st', expected 'closed $((bytes / lbs))'"
	fi
	[ -x /p2z/build/po2zfs-zone ] &&
		test_zone_tool "$cfg" "$path" "$be" "$ng" "$zone" "$cap" "$lbs" "$bytes"
	# again under ASan and UBSan (leaks included), then the same end state
	out=$(ASAN_OPTIONS=detect_leaks=1:exitcode=99 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		p2z_vm_dev_asan "$path" "$be" "$zone" "$cap" "$W/expect.asan" 2>&1)
	r=$?
	echo "$out"
	# same data pattern, so zone 2 holds $W/expect again
	if [ $r = 0 ] && cmp "$W/expect" "$W/expect.asan"; then
		result "$cfg" dev-layer-asan PASS
	else
		result "$cfg" dev-layer-asan FAIL "exit $r: $(echo "$out" | grep -m1 -E '^  FAIL|ERROR|runtime error')"
	fi
}

# po2zfs-zone on the device: zone 2 as the device-layer test left it
# (closed, BYTES written) in the table, the JSON and the map, then zone 3
# finished and reset with the tool and checked with nvme-cli.
test_zone_tool() { # config path backend ng zone cap lbs bytes
	local cfg=$1 path=$2 ng=$4 zone=$5 cap=$6 lbs=$7 bytes=$8
	local po2 why='' out row cell st pct z3 bo=()

	[ "$3" = auto ] || bo=(--backend "$3")
	po2=$(po2_roundup "$zone")
	local s=$((2 * zone / lbs)) p=$((2 * po2 / lbs)) w=$((bytes / lbs))
	pct=$((bytes * 100 / cap))
	out=$(po2zfs-zone report "${bo[@]}" "$path" 2>&1) || why="report"
	echo "$out"
	row=$(echo "$out" | awk '$1 == 2 && $2 == "seq" {print $3, $4, $5, $6, $7, $8}')
	[ "$row" = "closed $s $p $((s + w)) $((cap / lbs)) $pct%" ] ||
		why="$why table($row)"
	out=$(po2zfs-zone report --json "${bo[@]}" "$path" 2>&1) || why="$why json"
	echo "$out"
	[[ $out == *'"lba_bytes": '$lbs,* ]] || why="$why json-lba"
	[[ $out == *'"zone_lba": '$((zone / lbs)),* ]] || why="$why json-zone"
	[[ $out == *'"po2_zone_lba": '$((po2 / lbs)),* ]] || why="$why json-po2"
	[[ $out == *'{"zone": 2, "type": "seq", "cond": "closed", "start_lba": '$s', "po2_start_lba": '$p', "wp_lba": '$((s + w))', "cap_lba": '$((cap / lbs))', "fill_pct": '$pct'}'* ]] ||
		why="$why json-zone2"
	out=$(po2zfs-zone map "${bo[@]}" "$path" 2>&1) || why="$why map"
	echo "$out"
	cell=$(echo "$out" | awk '$1 == "0:" {print $4}')
	[ "$cell" = "C$((pct / 10))" ] || why="$why map($cell)"
	z3=$((3 * zone / lbs))
	po2zfs-zone finish "${bo[@]}" "$path" 3 --yes </dev/null || why="$why finish"
	st=$(zone_state "$ng" $((zone / lbs)) 3)
	[ "${st%% *}" = full ] || why="$why nvme-cli-finish($st)"
	out=$(po2zfs-zone report --json "${bo[@]}" "$path" 2>&1)
	[[ $out == *'{"zone": 3, "type": "seq", "cond": "full", "start_lba": '$z3,* ]] ||
		why="$why json-full"
	po2zfs-zone reset "${bo[@]}" "$path" 3 --yes </dev/null || why="$why reset"
	st=$(zone_state "$ng" $((zone / lbs)) 3)
	[ "$st" = "empty 0" ] || why="$why nvme-cli-reset($st)"
	result_why "$cfg" zone-tool "$why"
}

# The same through a mount: what the device layer left, appends with dd,
# the bytes through the mount and raw, the zone state, then a reset.
test_mount() { # config path backend ng zone
	local cfg=$1 path=$2 be=$3 ng=$4 zone=$5 mnt=$W/mnt lbs st n
	local why='' opts=()

	mkdir -p "$mnt"
	if [ "$be" = auto ]; then
		be=nvme
	else
		opts=(-o backend="$be")
	fi
	if ! start_daemon "$path" "$mnt" 200 "${opts[@]}"; then
		result "$cfg" mount-bytes FAIL "mount: $(tail -n 1 "$W/daemon.log")"
		return
	fi
	lbs=$(p2z_vm_raw lbs "$ng")
	[ "$(xa user.dev.backend "$mnt")" = "$be" ] || why="user.dev.backend"
	[ "$(xa user.zone.cond "$mnt/seq/2")" = closed ] ||
		why="$why user.zone.cond"
	cmp "$mnt/seq/2" "$W/expect" || why="$why data"
	# 1 MiB + 3 LBAs with plain dd (no O_DIRECT), appended
	head -c $((M + 3 * lbs)) /dev/urandom >"$W/more"
	dd if="$W/more" of="$mnt/seq/2" bs=1M oflag=append conv=notrunc \
		status=none || why="$why dd"
	cat "$W/expect" "$W/more" >"$W/all"
	n=$(stat -c %s "$W/all")
	[ "$(stat -c %s "$mnt/seq/2")" = "$n" ] || why="$why size"
	cmp "$mnt/seq/2" "$W/all" || why="$why data-after-append"
	p2z_vm_raw read "$ng" $((2 * zone / lbs)) "$n" >"$W/raw" &&
		cmp "$W/raw" "$W/all" || why="$why raw-after-append"
	st=$(zone_state "$ng" $((zone / lbs)) 2)
	[ "$st" = "implicit-open $((n / lbs))" ] || why="$why nvme-cli($st)"
	truncate -s 0 "$mnt/seq/2" || why="$why reset"
	st=$(zone_state "$ng" $((zone / lbs)) 2)
	[ "$st" = "empty 0" ] || why="$why nvme-cli-after-reset($st)"
	umount "$mnt" || why="$why umount"
	wait $PID || why="$why daemon-exit"
	result_why "$cfg" mount-bytes "$why"
	[ -z "$why" ] || tail -n 5 "$W/daemon.log"
}

test_func() { # config path backend tests
	local cfg=$1 t name out r want=$4

	for t in /p2z/tests/func/[0-9]*.sh; do
		name=$(basename "$t" .sh)
		[ -z "$want" ] || [[ " $want " == *" $name "* ]] || continue
		# the stress test runs only when named (ctest label stress)
		[ -n "$want" ] || [ "$name" != 1003 ] || continue
		out=$(P2Z_TEST_DEV=$2 P2Z_TEST_BACKEND=${3#auto} \
			timeout 300 bash "$t" 2>&1)
		r=$?
		echo "$out"
		case $r in
		0) result "$cfg" "func/$name" PASS ;;
		77) result "$cfg" "func/$name" SKIP "$(echo "$out" | sed -n 's/^SKIP: [^:]*: //p' | head -n 1)" ;;
		*) result "$cfg" "func/$name" FAIL "exit $r: $(echo "$out" | sed -n 's/^FAIL: [^:]*: //p' | head -n 1)" ;;
		esac
	done
}

# Ownership: while po2zfs has a namespace, a second po2zfs on it fails
# with a one-line "in use" (EBUSY), by its generic device (flock) or its
# block device (O_EXCL, also what a zonefs mount takes), and the first
# mount serves on. With a hidden disk (npo2) the lock on the generic device
# is all there is; its block name resolves to the same generic device.
test_owner() { # config ng disk
	local cfg=$1 ng=$2 disk=$3 mnt=$W/mnt m2=$W/mnt2 why='' h t out r
	local holders=("$ng nvme")

	[ -b "/dev/$disk" ] && holders+=("/dev/$disk zbd")
	mkdir -p "$mnt" "$m2"
	for h in "${holders[@]}"; do
		# shellcheck disable=SC2086 # DEV BACKEND
		set -- $h
		if ! start_daemon "$1" "$mnt" 200 -o backend="$2"; then
			why="$why mount($1: $(tail -n 1 "$W/daemon.log"))"
			continue
		fi
		# DEV -o OPTS: a rw mount by either name, a ro one, libzbd's
		for t in "$ng -o backend=nvme" "/dev/$disk -o ro" \
			${holders[1]:+"/dev/$disk -o backend=zbd"}; do
			# shellcheck disable=SC2086 # -o OPTS
			out=$(timeout 20 po2zfs "${t%% *}" "$m2" -f \
				${t#* } 2>&1 </dev/null)
			r=$?
			is_mounted "$m2" && umount -l "$m2"
			[ $r = 0 ] || [ $r = 124 ] && why="$why second($t)"
			[[ $out == *"Device or resource busy ("* ]] || why="$why message($t: $out)"
		done
		[ "$(xa user.dev.backend "$mnt")" = "$2" ] || why="$why serving($1)"
		umount "$mnt" || why="$why umount($1)"
		wait $PID || why="$why daemon-exit($1)"
	done
	result_why "$cfg" ownership "$why"
}

# config_begin CONFIG PATH BACKEND: the configuration's work dir $W, its
# output to $W/log, the clock of its results at 0
config_begin() {
	W=/tmp/$1
	mkdir -p "$W"
	exec >"$W/log" 2>&1
	result_start
	echo "P2Z-VM ---- $1: $2 backend=$3"
}

run_config() { # config path backend nsid zone cap full|quick
	local cfg=$1 ng=${NG[$4]:-} tests

	config_begin "$cfg" "$2" "$3"
	if [ -z "$ng" ]; then
		result "$cfg" setup FAIL "no generic device for nsid $4"
		return
	fi
	# A configuration starts from an empty namespace: the one before on
	# the same namespace may have left zones active (crash and stress
	# tests do), and the device-layer test opens zones explicitly.
	nvme zns reset-zone "$ng" -a >/dev/null 2>&1 ||
		echo "P2Z-VM $cfg: nvme zns reset-zone -a $ng failed"
	test_dev "$cfg" "$2" "$3" "$ng" "$5" "$6"
	if [ ! -x /p2z/build/po2zfs ]; then
		result "$cfg" mount FAIL "po2zfs was not built"
		return
	fi
	test_mount "$cfg" "$2" "$3" "$ng" "$5"
	tests=$P2Z_VM_TESTS
	if [ -z "$tests" ] && [ "$7" = quick ] && [ "$P2Z_VM_FULL" != 1 ]; then
		tests=$QUICK
	fi
	test_func "$cfg" "$2" "$3" "$tests"
	[ "$3" = nvme ] && test_owner "$cfg" "$ng" "${DISK[$4]:-none}"
}

# A zoned null_blk: 16 MiB zones of 12 MiB capacity, the first two
# conventional, found by the zbd backend from the path alone.
run_nullblk() {
	local cfg=nullblk-zbd ko

	config_begin $cfg /dev/nullb0 auto
	ko=$(grep null_blk /lib/modules/load.list)
	if ! insmod "/lib/modules/$(uname -r)/$ko" nr_devices=1 zoned=1 gb=1 \
		bs=4096 zone_size=16 zone_capacity=12 zone_nr_conv=2 \
		zone_max_open=3 zone_max_active=4 memory_backed=1 ||
		[ ! -b /dev/nullb0 ]; then
		result $cfg setup FAIL "null_blk did not load"
		return
	fi
	echo "P2Z-VM nullb0: zoned $(cat /sys/block/nullb0/queue/zoned)," \
		"$(cat /sys/block/nullb0/queue/nr_zones) zones"
	if [ -n "$P2Z_VM_TESTS" ]; then
		test_func $cfg /dev/nullb0 auto "$P2Z_VM_TESTS"
	elif [ "$P2Z_VM_FULL" = 1 ]; then
		test_func $cfg /dev/nullb0 auto ""
	else
		test_func $cfg /dev/nullb0 auto "$QUICK 0108 0110 0304"
	fi
}

# nsid 5: 9000 zones, more than one Zone Management Receive returns (at
# most 8191 in 512 KiB on 6.1, 1983 in 124 KiB on 6.12). The mount reads
# them all, page by page; zones on both sides of each page boundary and the
# last one are filled with an append each and checked against nvme-cli and
# a raw read, then again after a remount.
run_many() {
	local cfg=npo2-many ng=${NG[5]:-} mnt z st why='' zones out r n
	local cap=8192

	config_begin $cfg "$ng" auto
	if [ -z "$ng" ]; then
		result $cfg setup FAIL "no generic device for nsid 5"
		return
	fi
	# every zone in one report call, through the device layer
	out=$(p2z_vm_dev "$ng" nvme 12288 $cap /dev/null geometry 2>&1)
	r=$?
	echo "$out"
	if [ $r = 0 ]; then
		result $cfg report-all PASS
	else
		result $cfg report-all FAIL "$(echo "$out" | grep -m1 '^  FAIL')"
	fi
	# both sides of the pages of one report (8191, 1983 zones) and of the
	# mount's report batches (1024 zones), and the last zone
	zones="0 1023 1024 1982 1983 2047 2048 8190 8191 8998 8999"
	mnt=$W/mnt
	mkdir -p "$mnt"
	if ! start_daemon "$ng" "$mnt" 400; then
		result $cfg mount FAIL "mount: $(tail -n 1 "$W/daemon.log")"
		return
	fi
	n=$(find "$mnt/seq" -mindepth 1 -maxdepth 1 | wc -l)
	[ "$n" = 9000 ] || why="$why count($n)"
	for z in $zones; do
		head -c $cap /dev/urandom >"$W/d$z"
		dd if="$W/d$z" of="$mnt/seq/$z" bs=$cap oflag=append \
			conv=notrunc status=none || why="$why dd($z)"
		cmp -s "$mnt/seq/$z" "$W/d$z" || why="$why data($z)"
		p2z_vm_raw read "$ng" $((z * 3)) $cap >"$W/raw" &&
			cmp -s "$W/raw" "$W/d$z" || why="$why raw($z)"
		st=$(zone_state "$ng" 3 "$z")
		# QEMU reports a full zone's write pointer as all ones
		[ "${st%% *}" = full ] || why="$why nvme-cli($z:$st)"
	done
	st=$(xa user.zone.start "$mnt/seq/8999")
	[ "$st" = $((8999 * 3 * 4096)) ] || why="$why start(8999:$st)"
	umount "$mnt" || why="$why umount"
	wait $PID || why="$why daemon-exit"
	result_why $cfg append-report "$why"

	# again from the device's reports alone
	why=
	if ! start_daemon "$ng" "$mnt" 400; then
		result $cfg remount FAIL "mount: $(tail -n 1 "$W/daemon.log")"
		return
	fi
	for z in $zones; do
		[ "$(stat -c %s "$mnt/seq/$z")" = $cap ] || why="$why size($z)"
		[ "$(xa user.zone.cond "$mnt/seq/$z")" = full ] ||
			why="$why cond($z)"
		cmp -s "$mnt/seq/$z" "$W/d$z" || why="$why data($z)"
	done
	for z in 1 1022 1025 1981 1984 8192 8997; do
		[ "$(stat -c %s "$mnt/seq/$z")" = 0 ] || why="$why size($z)"
		[ "$(xa user.zone.cond "$mnt/seq/$z")" = empty ] ||
			why="$why cond($z)"
	done
	umount "$mnt" || why="$why umount"
	wait $PID || why="$why daemon-exit"
	result_why $cfg remount "$why"
	[ -z "$why" ] || tail -n 5 "$W/daemon.log"
}

exec 3>&1
results_init
(
	run_config npo2-ng "${NG[1]:-}" nvme 1 $((96 * M)) $((80 * M)) full
	# the block name of a hidden disk, resolved to the generic device
	run_config npo2-blkname "/dev/${DISK[1]:-nvme0n1}" auto 1 \
		$((96 * M)) $((80 * M)) quick
) &
(
	run_config npo2-512 "${NG[2]:-}" auto 2 $((3 * M)) $((3 * M)) quick
	run_many
	run_nullblk
) &
(
	run_config po2-ng "${NG[3]:-}" nvme 3 $((64 * M)) $((48 * M)) full
) &
(
	run_config po2-zbd "/dev/${DISK[4]:-nvme0n4}" zbd 4 \
		$((64 * M)) $((48 * M)) full
) &
wait
for cfg in npo2-ng npo2-blkname npo2-512 npo2-many nullblk-zbd po2-ng po2-zbd; do
	sed "s/^/$cfg| /" "/tmp/$cfg/log"
done
results_passed
