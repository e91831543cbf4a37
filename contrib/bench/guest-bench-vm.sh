#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck source-path=SCRIPTDIR
#
# Runs inside the benchmark guest (see guest-bench.sh), as /p2z/guest.sh:
# one NVMe controller with
#   nsid 1  npo2, 96 MiB zones, 80 MiB capacity (hidden disk)
#   nsid 2  po2, 128 MiB zones, 80 MiB capacity: kernel zonefs
#   nsid 3  the same as nsid 2: po2zfs
# 16 zones each, 4 KiB LBAs. Device names are found by namespace id: on
# 6.12 the generic devices are named in scan order.
#
# Variants: zonefs (nsid 2's block device), po2 (po2zfs on nsid 3's
# /dev/ngXnY), npo2 (po2zfs on nsid 1's), raw-po2 and raw-npo2 (fio's
# io_uring_cmd engine on the same generic devices, zones 8 and up, which
# the mounts do not use), null (p2z_nullfs: FUSE with po2zfs's settings
# and no device, the floor any FUSE filesystem stands on), with the conc
# part nulld (p2z_nullfs --device: the same, each read one synchronous
# NVMe Read passthrough command on nsid 3's generic device in the thread
# that received it, the least a FUSE filesystem on it does; the readers'
# jobs only). All mounted at
# once. Per round, per I/O size:
# a direct append to a freshly reset zone file, a direct read and a
# buffered read of it (after drop_caches), every variant once, in an order
# rotated every round, reversed every other round. Raw passthrough has no
# append in fio: it writes with Write commands (zonemode=zbd) and reads
# plainly, in commands of at most the controller's transfer limit.
#
# Prints progress as "P2Z-BENCH ..." lines, a result line (guest-lib.sh) per
# mount and per fio job, "P2Z-RESULT <variant> <check> PASS|FAIL <seconds>s
# <detail>" (check: mount, or r<round>-<op>-<size> with MiB/s and latency),
# the tables as "P2Z-TABLE ..." lines, then the fio JSON output and the
# daemon logs as a base64 tar.gz between "P2Z-BENCH-JSON-BEGIN" and
# "P2Z-BENCH-JSON-END".
#
# Parts (BENCH_PARTS): "qd1" is the above; "conc" the concurrency jobs of
# issue 22 on the same mounts (fio randread 4k direct io_uring QD16 on one
# zone file, 4 direct and 4 buffered psync readers on 4 zone files, the
# buffered ones timed and with the same reads in every variant, 4 direct
# 128 KiB appenders on 4 zone files; p2z_nullfs at QD16, with and
# without async direct I/O, as FUSE's bound; raw passthrough's QD16 and
# 4 QD1 readers and 4 writers, the device's side); "blk" po2zfs-blk: fio on the
# /dev/ublkbN of nsid 4 (npo2) against nsid 5's block device (po2, the
# kernel's) and raw passthrough on nsid 4 (zones 12 and up), randread 4k
# QD1 and QD16 and 4 sequential writers on 4 zones (zonemode=zbd); the
# same jobs on blk-emu (po2zfs-blk over an emu image in /tmp, nsid 4's
# geometry: the ublk bound) and nullb (the kernel's zoned null_blk), and
# with perf in the guest a profile of each (blk_prof). With
# BENCH_BASE=1 a second build (/p2z/base) runs beside the measured one on
# namespaces of its own (nsid 6 npo2, 7 po2, 8 npo2 for po2zfs-blk):
# variants po2-base, npo2-base and blk-base, interleaved with the others.
set -u
BENCH_ROUNDS=3 BENCH_SIZES="1M 128K 4K" BENCH_MIB=64 BENCH_RAW=1
BENCH_HOST=unknown BENCH_SOURCE=unknown BENCH_IMAGES=unknown BENCH_OPTS=
BENCH_BUDGET=1500 BENCH_PARTS="qd1 conc blk" BENCH_SECS=4 BENCH_CMIB=32
BENCH_BASE=0 BENCH_BASE_SOURCE=
# shellcheck source=/dev/null
. /p2z/vm.conf
# shellcheck source=../../tests/vm/guest-lib.sh
. /p2z/guest-lib.sh
M=$((1024 * 1024))
B=/tmp/bench
J=$B/json
RES=$B/results
RES2=$B/results-conc
mkdir -p "$J" /mnt/zonefs /mnt/po2 /mnt/npo2 /mnt/null /mnt/nulla /mnt/nulld \
	/mnt/po2-base /mnt/npo2-base
: >"$RES"
: >"$RES2"
has_part() { [[ " $BENCH_PARTS " == *" $1 "* ]]; }

say() { echo "P2Z-BENCH $*"; }

declare -A ZS PID
results_init
ns_map
ZS=([1]=$((96 * M)) [2]=$((128 * M)) [3]=$((128 * M)) [4]=$((96 * M))
	[5]=$((128 * M)) [6]=$((96 * M)) [7]=$((128 * M)) [8]=$((96 * M)))
NNS=5
[ "$BENCH_BASE" = 1 ] && NNS=8
# shellcheck disable=SC2046
ns_show $(seq $NNS)
# Transfer limit of each namespace's queue, in whole LBAs: passthrough
# commands must not exceed it. On 6.12 the hidden disk of an npo2
# namespace keeps the block layer's default of 127 KiB.
declare -A MAXT
for n in $(seq $NNS); do
	# shellcheck disable=SC2017 # rounded down to whole 4 KiB LBAs
	MAXT[$n]=$(($(ns_queue "$n" max_hw_sectors_kb || echo 124) / 4 * 4096))
done

# ---- mounts ----

mount_zonefs() {
	local dev=/dev/${DISK[2]:-none}

	if [ ! -b "$dev" ]; then
		result zonefs mount FAIL "no block device for nsid 2"
		return 1
	fi
	# the super block in zone 0, as mkzonefs writes it: seq files start
	# at zone 1
	if ! dd if=/p2z/zonefs-sb.bin of="$dev" bs=4096 count=1 oflag=direct \
		status=none || ! mount -t zonefs "$dev" /mnt/zonefs; then
		result zonefs mount FAIL "$(dmesg | grep -i zonefs | tail -n 1)"
		return 1
	fi
	result zonefs mount PASS "$dev"
}

# wait_mount VARIANT: its daemon (PID[VARIANT]) mounted /mnt/VARIANT, or
# exited, or 20 s passed (1)
wait_mount() {
	for _ in $(seq 400); do
		mountpoint -q "/mnt/$1" && return 0
		kill -0 "${PID[$1]}" 2>/dev/null || break
		sleep 0.05
	done
	return 1
}

mount_po2zfs() { # variant nsid [binary]
	local v=$1 ng=${NG[$2]:-} bin=${3:-po2zfs} opts=()

	if [ -z "$ng" ]; then
		result "$v" mount FAIL "no generic device for nsid $2"
		return 1
	fi
	[ -z "$BENCH_OPTS" ] || opts=(-o "$BENCH_OPTS")
	"$bin" "$ng" "/mnt/$v" -f "${opts[@]}" >"$B/daemon-$v.log" 2>&1 &
	PID[$v]=$!
	if wait_mount "$v"; then
		result "$v" mount PASS "$ng"
		return 0
	fi
	result "$v" mount FAIL "po2zfs $ng: $(tail -n 1 "$B/daemon-$v.log")"
	return 1
}

# FUSE alone, with the read-ahead po2zfs sets on its own mounts; variant
# nulla: with FUSE_CAP_ASYNC_DIO (p2z_nullfs --async-dio); nulld: reads
# from nsid 3's zones (seq/N: zone N), one synchronous passthrough Read
# per transfer limit (p2z_nullfs --device)
mount_null() { # [variant]
	local v=${1:-null} dev a=()

	case $v in
	nulla) a=(--async-dio) ;;
	nulld)
		a=(--device "${NG[3]}" --zone-bytes "${ZS[3]}"
			--max-transfer "${MAXT[3]}")
		;;
	esac
	p2z_nullfs "${a[@]}" "/mnt/$v" >"$B/daemon-$v.log" 2>&1 &
	PID[$v]=$!
	if ! wait_mount "$v"; then
		result "$v" mount FAIL "p2z_nullfs: $(tail -n 1 "$B/daemon-$v.log")"
		return 1
	fi
	result "$v" mount PASS "p2z_nullfs ${a[*]}"
	dev=$(mountpoint -d "/mnt/$v")
	echo 1024 >"/sys/class/bdi/$dev/read_ahead_kb" ||
		say "$v: read-ahead stays at the default"
}

# ---- measurements ----

# ms LIST...: milliseconds the command takes, printed; its output dropped
ms() {
	local t0=$EPOCHREALTIME t1

	"$@" >/dev/null 2>&1
	t1=$EPOCHREALTIME
	echo $(((${t1/./} - ${t0/./}) / 1000))
}

# One fio job; appends "round variant op size MiB/s clat_us" to $RES and
# prints its result line: FAIL if fio failed or moved less than it should.
run_job() { # round variant op size index
	local r=$1 v=$2 op=$3 bs=$4 k=$5 args out sec=read n bsb io mib clat
	local want=$((BENCH_MIB * M))
	local ns off f=

	bsb=$(numfmt --from=iec "$bs")
	args=(--name="$op-$bs" --iodepth=1 --output-format=json)
	out=$J/r$r-$v-$op-$bs.json
	case $v in
	raw-*)
		[ "$v" = raw-po2 ] && ns=3 || ns=1
		off=$(((8 + k) * ${ZS[$ns]}))
		[ "$bsb" -le "${MAXT[$ns]}" ] || bsb=${MAXT[$ns]}
		# whole commands: 124 KiB ones do not divide 64 MiB
		want=$((want / bsb * bsb))
		args+=(--ioengine=io_uring_cmd --cmd_type=nvme
			--filename="${NG[$ns]}" --offset="$off" --bs="$bsb")
		case $op in
		append)
			sec="write"
			args+=(--rw=write --zonemode=zbd --size="${ZS[$ns]}"
				--io_size="$want")
			;;
		*) args+=(--rw=read --size="$want") ;;
		esac
		;;
	*)
		f=/mnt/$v/seq/$k
		args+=(--ioengine=psync --filename="$f" --bs="$bs"
			--size="${BENCH_MIB}M")
		case $op in
		append)
			sec="write"
			# a reset: the zone file is written fresh
			truncate -s 0 "$f" || say "truncate $f failed"
			args+=(--rw=write --direct=1 --file_append=1
				--fallocate=none)
			;;
		dread) args+=(--rw=read --direct=1) ;;
		bread)
			echo 3 >/proc/sys/vm/drop_caches
			args+=(--rw=read --direct=0)
			;;
		esac
		;;
	esac
	# the daemon's own counters of this job (user.dev.stats)
	[ "$v" = null ] && f=
	[ -n "$f" ] && setfattr -n user.dev.stats -v 0 "/mnt/$v" 2>/dev/null
	fio "${args[@]}" --output="$out" >"$out.err" 2>&1
	n=$?
	[ -n "$f" ] && getfattr --only-values -n user.dev.stats "/mnt/$v" \
		>"${out%.json}.stats" 2>/dev/null
	io=0 mib=0.000 clat=0
	[ $n != 0 ] || read -r io mib clat < <(fio_result "$out" $sec)
	if [ $n = 0 ] && [ "${io:-0}" -ge "$want" ] && [ "$mib" != 0.000 ]; then
		echo "$r $v $op $bs $mib $clat" >>"$RES"
		result "$v" "r$r-$op-$bs" PASS "$mib MiB/s, clat $clat µs"
	else
		result "$v" "r$r-$op-$bs" FAIL "fio exit $n, ${io:-0} of $want bytes: $(grep -m1 -iE 'err|fail' "$out.err" | head -n 1)"
		echo "$r $v $op $bs err err" >>"$RES"
	fi
}

# rotate ROUND COUNT WORD...: the words rotated by COUNT, and reversed in
# odd rounds (A B .. B A): a variant and its base neighbour (po2,
# po2-base) swap places every other round
rotate() {
	local r=$1 n=$2 w=() i

	shift 2
	n=$((n % $#))
	w=("${@:n+1}" "${@:1:n}")
	if ((r % 2)); then
		for ((i = ${#w[@]} - 1; i >= 0; i--)); do printf '%s ' "${w[$i]}"; done
		echo
	else
		echo "${w[@]}"
	fi
}

# ---- concurrency (issue 22) and po2zfs-blk ----

CM=$BENCH_CMIB
# readers read zone files 4-7 (written once, CM MiB each), appenders
# append to 11-14: the QD1 jobs use 0-2, raw passthrough zones 8-10
READF="4 5 6 7"
APPF="11 12 13 14"

# fio_run ROUND VARIANT JOB SECTION BYTES FIO-ARGS...: one fio run (its
# jobs reported as one group), under the command FIO_PRE (default none);
# "round variant job MiB/s clat_us" in $RES2, and its result line: FAIL
# if fio failed or moved fewer than BYTES
FIO_PRE=()
fio_run() {
	local r=$1 v=$2 job=$3 sec=$4 want=$5 out n io mib clat st=

	shift 5
	out=$J/r$r-$v-$job.json
	# a po2zfs mount's own counters of this job (user.dev.stats), in
	# the rounds (not in the profiles' runs, rounds p, s, a)
	[[ $v == po2* || $v == npo2* ]] && [[ $r == [1-9]* ]] && st=/mnt/$v
	[ -z "$st" ] || setfattr -n user.dev.stats -v 0 "$st" 2>/dev/null
	"${FIO_PRE[@]}" fio --output-format=json --output="$out" "$@" \
		>"$out.err" 2>&1
	n=$?
	[ -z "$st" ] || getfattr --only-values -n user.dev.stats "$st" \
		>"${out%.json}.stats" 2>/dev/null
	io=0 mib=0.000 clat=0
	[ $n != 0 ] || read -r io mib clat < <(fio_result "$out" "$sec")
	if [ $n = 0 ] && [ "${io:-0}" -ge "$want" ] && [ "$mib" != 0.000 ]; then
		echo "$r $v $job $mib $clat" >>"$RES2"
		result "$v" "r$r-$job" PASS "$mib MiB/s, clat $clat µs"
	else
		result "$v" "r$r-$job" FAIL "fio exit $n, ${io:-0} of $want bytes: $(grep -m1 -iE 'err|fail' "$out.err" | head -n 1)"
		echo "$r $v $job err err" >>"$RES2"
	fi
}

# raw_ap4 ROUND raw-po2|raw-npo2: the device's side of the 4 appenders,
# 4 fio jobs writing (Write commands, zonemode=zbd) to zones RAWZ of the
# namespace, CM MiB each, in commands of 128 KiB; where the namespace's
# transfer limit is smaller (124 KiB on the npo2 namespace, whose hidden
# disk keeps the default 127 KiB), in the commands po2zfs splits a 128
# KiB append into: one of the limit and one of the rest (124 + 4 KiB),
# half of the commands each (bssplit); raw npo2 / raw po2 is the
# device's bound of po2zfs's npo2 / po2
RAWZ="8 9 10 15"
# the zone of raw passthrough's QD16 reader, the device's side of the
# QD16 reader (conc_prep writes CM MiB into it)
RAWR=3
raw_ap4() {
	local r=$1 v=$2 ns=1 bsb=$((128 * 1024)) io a=() i split

	[ "$v" = raw-po2 ] && ns=3
	[ "$bsb" -le "${MAXT[$ns]}" ] || bsb=${MAXT[$ns]}
	split=(--bs="$bsb")
	[ "$bsb" = $((128 * 1024)) ] ||
		split=(--bssplit="$bsb/50:$((128 * 1024 - bsb))/50")
	io=$((CM * M / bsb * bsb))
	for i in $RAWZ; do
		a+=(--name="ap4-$i" --offset=$((i * ${ZS[$ns]})))
	done
	# a split job's last command may end short of io
	fio_run "$r" "$v" ap4 write $((4 * (io - bsb))) --rw=write "${split[@]}" \
		--ioengine=io_uring_cmd --cmd_type=nvme --filename="${NG[$ns]}" \
		--zonemode=zbd --size="${ZS[$ns]}" --io_size="$io" \
		--group_reporting "${a[@]}"
}

# the timed random reads: BENCH_SECS seconds over the first CM MiB
RR=(--rw=randread --bs=4k --size="${CM}M" --time_based
	--runtime="$BENCH_SECS" --norandommap --randrepeat=0)
# bs4: the buffered readers' same reads in every variant, CM * 3/8 MiB
# each (fio's repeatable offsets), so that every variant finds the same
# pages in the page cache: timed, a faster reader reads more of its CM
# MiB and so finds more of it cached, and its rate runs ahead of its cost
BS4=$((CM * 3 / 8 > 0 ? CM * 3 / 8 : 1))

# conc_prep VARIANT: CM MiB in each reader's zone file
conc_prep() {
	local d=/mnt/$1/seq i ns=1

	if [[ $1 == raw-* ]]; then
		[ "$1" = raw-po2 ] && ns=3
		fio --name=prep --ioengine=io_uring_cmd --cmd_type=nvme \
			--filename="${NG[$ns]}" --rw=write --zonemode=zbd --bs=64k \
			--offset=$((RAWR * ${ZS[$ns]})) --size="${ZS[$ns]}" \
			--io_size="${CM}M" >"$B/prep-$1.log" 2>&1
		return
	fi
	for i in $READF; do
		truncate -s 0 "$d/$i" || return 1
		if [[ $1 == null* ]]; then
			truncate -s "${CM}M" "$d/$i" || return 1
		else
			dd if=/dev/zero of="$d/$i" bs=1M count="$CM" oflag=direct,append \
				conv=notrunc status=none || return 1
		fi
	done
}

conc_job() { # round variant job
	local r=$1 v=$2 job=$3 d=/mnt/$2/seq i a=()

	case $job in
	qd16)
		if [[ $v == raw-* ]]; then
			local ns=1
			[ "$v" = raw-po2 ] && ns=3
			fio_run "$r" "$v" "$job" read 1 "${RR[@]}" \
				--ioengine=io_uring_cmd --cmd_type=nvme \
				--filename="${NG[$ns]}" --offset=$((RAWR * ${ZS[$ns]})) \
				--iodepth=16 --name=qd16
			return
		fi
		fio_run "$r" "$v" "$job" read 1 "${RR[@]}" --direct=1 \
			--ioengine=io_uring --iodepth=16 --name=qd16 \
			--filename="$d/4"
		;;
	dr4 | br4 | bs4)
		if [[ $v == raw-* ]]; then
			# dr4's device side: 4 QD1 readers of zone RAWR
			local ns=1
			[ "$v" = raw-po2 ] && ns=3
			for i in $READF; do a+=(--name="$job-$i"); done
			fio_run "$r" "$v" "$job" read 1 "${RR[@]}" \
				--ioengine=io_uring_cmd --cmd_type=nvme \
				--filename="${NG[$ns]}" --iodepth=1 \
				--offset=$((RAWR * ${ZS[$ns]})) --group_reporting "${a[@]}"
			return
		fi
		[ "$job" = dr4 ] || echo 3 >/proc/sys/vm/drop_caches
		for i in $READF; do a+=(--name="$job-$i" --filename="$d/$i"); done
		if [ "$job" = bs4 ]; then
			fio_run "$r" "$v" "$job" read $((4 * BS4 * M)) \
				--rw=randread --bs=4k --size="${CM}M" \
				--io_size="${BS4}M" --norandommap --randrepeat=1 \
				--ioengine=psync --direct=0 --group_reporting "${a[@]}"
			return
		fi
		fio_run "$r" "$v" "$job" read 1 "${RR[@]}" --ioengine=psync \
			--direct="$([ "$job" = dr4 ] && echo 1 || echo 0)" \
			--group_reporting "${a[@]}"
		;;
	ap4)
		if [[ $v == raw-* ]]; then
			raw_ap4 "$r" "$v"
			return
		fi
		for i in $APPF; do
			# a reset: the zone file is written fresh
			truncate -s 0 "$d/$i" || say "truncate $d/$i failed"
			a+=(--name="$job-$i" --filename="$d/$i")
		done
		fio_run "$r" "$v" "$job" write $((4 * CM * M)) --rw=write \
			--bs=128k --direct=1 --ioengine=psync --file_append=1 \
			--fallocate=none --size="${CM}M" --group_reporting "${a[@]}"
		;;
	esac
}

# po2zfs-blk: BDEV[variant] the device fio runs on
declare -A BDEV
Z=$((128 * M)) # po2 zone size of /dev/ublkbN and of nsid 5's disk

# blk_add VARIANT DEVICE [BINARY]: po2zfs-blk add of DEVICE (a generic
# device or an emu image)
blk_add() {
	local v=$1 ng=$2 bin=${3:-po2zfs-blk} out

	if [ -z "$ng" ] || ! command -v "$bin" >/dev/null; then
		result "$v" add FAIL "no backing device ($ng) or no $bin"
		return 1
	fi
	out=$(timeout 60 "$bin" add "$ng" 2>&1 </dev/null)
	for _ in $(seq 400); do
		[ -b "$out" ] && break
		sleep 0.05
	done
	if [ ! -b "$out" ]; then
		result "$v" add FAIL "$bin add $ng: $out"
		return 1
	fi
	BDEV[$v]=$out
	result "$v" add PASS "$bin add $ng: $out"
}

# The ublk bound: po2zfs-blk serving an emulated image on the guest's
# tmpfs (/tmp) with nsid 4's geometry (16 zones of 96 MiB, 80 MiB
# capacity, 4 KiB LBAs, appends up to nsid 4's transfer limit, so that
# /dev/ublkbN takes requests of the same largest size as blk's): ublk and
# the server with a backend that costs next to nothing. Variant
# blk-emu512: the same with appends up to 512 KiB, the kernel block
# device's largest request: a 128 KiB write is one ublk request, not two
# (124 KiB + 4 KiB), which shows what the split costs.
emu_add() { # variant max-append
	local out img=/tmp/$1.img

	rm -f "$img"
	if ! out=$(po2zfs-emu create "$img" --zone-size 96M --zone-cap 80M \
		--zones 16 --max-append "$2" 2>&1); then
		result "$1" add FAIL "po2zfs-emu create: $out"
		return 1
	fi
	blk_add "$1" "$img"
}

# The kernel-side reference: a zoned, memory-backed null_blk with the
# po2 zones of nsid 5 (16 of 128 MiB, 80 MiB capacity, 4 KiB blocks)
nullb_add() {
	local ko dev=/dev/nullb0

	ko=$(grep null_blk /lib/modules/load.list)
	if [ -z "$ko" ] || ! insmod "/lib/modules/$(uname -r)/$ko" \
		nr_devices=1 zoned=1 gb=2 bs=4096 zone_size=128 \
		zone_capacity=80 memory_backed=1 || [ ! -b $dev ]; then
		result nullb add FAIL "null_blk (zoned) did not load"
		return 1
	fi
	BDEV[nullb]=$dev
	result nullb add PASS "null_blk zoned=1 zone_size=128 zone_capacity=80 memory_backed=1"
}

# The ublk floor: po2zfs-blk (zbd backend) on a zoned null_blk that keeps
# no data (memory_backed=0, made through configfs beside nullb0): the
# device costs next to nothing for reads and for writes alike, where an
# emu image's writes copy the data once more. Requests of at most nsid
# 4's transfer limit, like blk's.
nullz_add() {
	local c=/sys/kernel/config/nullb d dev=/dev/nullb1 a

	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config 2>/dev/null
	d=$c/nullb1
	if [ ! -d $c ] || ! mkdir $d; then
		result blk-nullz add FAIL "no null_blk configfs ($c)"
		return 1
	fi
	for a in blocksize=4096 size=2048 zoned=1 zone_size=128 \
		zone_capacity=80 memory_backed=0 \
		max_sectors=$((MAXT[4] / 512)) power=1; do
		if ! echo "${a#*=}" >"$d/${a%%=*}"; then
			result blk-nullz add FAIL "null_blk configfs: $a refused"
			return 1
		fi
	done
	for _ in $(seq 100); do
		[ -b $dev ] && break
		sleep 0.05
	done
	blk_add blk-nullz $dev
}

# blk_prep VARIANT: CM MiB at the start of the read zone (zone 0, or 12 of
# nsid 4 for raw passthrough)
blk_prep() {
	local v=$1 dev=${BDEV[$1]:-}

	if [ "$v" = raw-blk ]; then
		fio --name=prep --ioengine=io_uring_cmd --cmd_type=nvme \
			--filename="${NG[4]}" --rw=write --zonemode=zbd --bs=64k \
			--offset=$((12 * ZS[4])) --size="${ZS[4]}" \
			--io_size="${CM}M" >"$B/prep-$v.log" 2>&1
		return
	fi
	blkzone reset -o 0 -c 1 "$dev" &&
		dd if=/dev/zero of="$dev" bs=1M count="$CM" oflag=direct status=none
}

# raw_wr4 ROUND: the device's side of the 4 writers, raw passthrough on
# nsid 4's zones 8-11 (which the jobs on /dev/ublkbN do not touch), in
# commands of 128 KiB or nsid 4's transfer limit if smaller, as
# po2zfs-blk's own commands are
raw_wr4() {
	local bsb=$((128 * 1024)) io a=() i

	[ "$bsb" -le "${MAXT[4]}" ] || bsb=${MAXT[4]}
	io=$((CM * M / bsb * bsb))
	for i in 8 9 10 11; do
		a+=(--name="wr-$i" --offset=$((i * ZS[4])))
	done
	fio_run "$1" raw-blk wr4 write $((4 * io)) --rw=write --bs="$bsb" \
		--ioengine=io_uring_cmd --cmd_type=nvme --filename="${NG[4]}" \
		--zonemode=zbd --size="${ZS[4]}" --io_size="$io" \
		--group_reporting "${a[@]}"
}

blk_job() { # round variant job
	local r=$1 v=$2 job=$3 dev=${BDEV[$2]:-} a=() i

	case $job in
	rr1 | rr16)
		if [ "$v" = raw-blk ]; then
			a=(--ioengine=io_uring_cmd --cmd_type=nvme
				--filename="${NG[4]}" --offset=$((12 * ZS[4])))
		else
			a=(--ioengine=io_uring --direct=1 --filename="$dev")
		fi
		fio_run "$r" "$v" "$job" read 1 "${RR[@]}" "${a[@]}" \
			--iodepth="${job#rr}" --name="$job"
		;;
	wr4)
		if [ "$v" = raw-blk ]; then
			raw_wr4 "$r"
			return
		fi
		blkzone reset -o $((4 * Z / 512)) -c 4 "$dev" ||
			say "$v: zone reset failed"
		for i in 4 5 6 7; do a+=(--name="wr-$i" --offset=$((i * Z))); done
		fio_run "$r" "$v" "$job" write $((4 * CM * M)) --rw=write \
			--bs=128k --direct=1 --ioengine=psync --zonemode=zbd \
			--filename="$dev" --size="$Z" --io_size="${CM}M" \
			--group_reporting "${a[@]}"
		;;
	esac
}

# ---- where a po2zfs-blk request's time goes (perf in the guest) ----

# blk_pid VARIANT: the pid of the server of BDEV[VARIANT] (its record)
blk_pid() {
	sed -n 2p "/run/po2zfs-blk/${BDEV[$1]#/dev/ublkb}" 2>/dev/null
}

# busy jiffies of the guest's CPUs (user nice system irq softirq steal)
cpu_busy() {
	awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

# perf_val FILE EVENT: the count of EVENT in perf stat -x, output FILE
perf_val() {
	awk -F, -v e="$2" '$3 == e { print $1 + 0; f = 1 } END { if (!f) print 0 }' "$1" 2>/dev/null
}

SC_EV="syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_pread64"
SC_EV+=",syscalls:sys_enter_pwrite64,syscalls:sys_enter_poll"
SC_EV+=",syscalls:sys_enter_read,syscalls:sys_enter_write"

# syscalls_by_name FILE N: the system calls by name of perf stat -x's
# FILE (its syscalls:sys_enter_* events), per one of N I/Os: "read 1.00, ..."
syscalls_by_name() {
	awk -F, -v n="$2" '$3 ~ /^syscalls:sys_enter_/ && $1 + 0 > 0 {
		e = $3; sub(/^syscalls:sys_enter_/, "", e)
		printf "%s%s %.2f", s, e, $1 / n; s = ", " }' "$1"
}

# prof_syms TAG DATA: "- TAG: " and the top 14 symbols (dso, symbol, % of
# the samples) of perf record's DATA, one line.
prof_syms() {
	perf report -i "$2" --stdio --no-children --sort dso,sym 2>/dev/null |
		awk -v t="$1" '$1 ~ /%$/ && n < 14 { $1 = $1; l = l (n++ ? ", " : "") $0 }
		END { if (n) print "- " t ": " l }'
}

# prof_job VARIANT JOB: the job twice more (outside the medians): under
# perf stat of the server (-p, its threads) and of the guest (-a), with
# the guest's busy CPU time from /proc/stat; then, for a server, under
# perf trace -s (time per system call). One row of $B/prof-rows.
prof_job() {
	local v=$1 job=$2 pid o=$J/prof-$1-$2 b0 b1 io bs=4096 n row
	local pre=() ev=task-clock,context-switches,raw_syscalls:sys_enter

	pid=$(blk_pid "$v")
	[ -z "$pid" ] ||
		pre=(perf stat -x "," -o "$o.srv" -e "$ev,$SC_EV" -p "$pid" --)
	pre+=(perf stat -x "," -o "$o.all" -a -e
		"context-switches,raw_syscalls:sys_enter,irq:irq_handler_entry" --)
	b0=$(cpu_busy)
	FIO_PRE=("${pre[@]}")
	RES2=$B/results-prof blk_job p "$v" "$job"
	b1=$(cpu_busy)
	FIO_PRE=()
	io=$(fio_result "$J/rp-$v-$job.json" "$([ "$job" = wr4 ] && echo write || echo read)")
	read -r io _ clat <<<"$io"
	[ "$job" = wr4 ] && bs=131072
	n=$((${io:-0} / bs))
	[ "$n" -gt 0 ] || return 0
	row="| $v $job | $n | $(awk -v b=$((b1 - b0)) -v n=$n 'BEGIN { printf "%.0f", b * 10000 / n }')"
	row+=" | $(awk -v a="$(perf_val "$o.all" context-switches)" -v n=$n 'BEGIN { printf "%.1f", a / n }')"
	row+=" | $(awk -v a="$(perf_val "$o.all" raw_syscalls:sys_enter)" -v n=$n 'BEGIN { printf "%.1f", a / n }')"
	row+=" | $(awk -v a="$(perf_val "$o.all" irq:irq_handler_entry)" -v n=$n 'BEGIN { printf "%.1f", a / n }')"
	if [ -n "$pid" ]; then
		row+=" | $(awk -v a="$(perf_val "$o.srv" task-clock)" -v n=$n 'BEGIN { printf "%.0f", a * 1000 / n }')"
		row+=" | $(awk -v a="$(perf_val "$o.srv" context-switches)" -v n=$n 'BEGIN { printf "%.1f", a / n }')"
		row+=" | $(syscalls_by_name "$o.srv" $n)"
		FIO_PRE=(perf trace -s -o "$o.trace" -p "$pid" --)
		RES2=$B/results-prof blk_job t "$v" "$job"
		FIO_PRE=()
		row+=" | $(awk -v n=$n '
			$1 ~ /^[a-z_0-9]+$/ && $2 ~ /^[0-9]+$/ && $4 ~ /^[0-9.]+$/ {
				c[$1] += $2; t[$1] += $4 }
			END { for (k in c) if (c[k] >= n / 2) {
				printf "%s%s %.0f µs", s, k, t[k] * 1000 / c[k]
				s = ", " } }' "$o.trace")"
		# where the server's CPU time goes: sampled (cpu-clock: TCG has
		# no PMU), top symbols, kernel [k] and user [.]
		FIO_PRE=(perf record -q -e cpu-clock -F 4000 -o "$o.data" -p "$pid" --)
		RES2=$B/results-prof blk_job s "$v" "$job"
		FIO_PRE=()
		prof_syms "$v $job" "$o.data" >>"$B/prof-syms"
	else
		row+=" | - | - | - | -"
	fi
	echo "$row | ${clat:-0} |" >>"$B/prof-rows"
}

blk_prof() {
	local v job

	command -v perf >/dev/null || return 0
	mountpoint -q /sys/kernel/tracing ||
		mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	: >"$B/prof-rows"
	: >"$B/prof-syms"
	for job in rr1 wr4; do
		for v in kdev nullb blk-emu blk-emu512 blk-nullz blk; do
			[ -n "${BDEV[$v]:-}" ] || continue
			[ $v != blk-emu512 ] || [ $job = wr4 ] || continue
			[ "$SECONDS" -le "$BENCH_BUDGET" ] || break 2
			prof_job "$v" "$job"
		done
	done
	[ -s "$B/prof-rows" ] || return 0
	{
		echo
		echo "Where the time goes (each job once more, outside the" \
			"medians; perf $(perf --version | cut -d' ' -f3) in the" \
			"guest): per fio I/O, the guest's busy CPU µs (/proc/stat," \
			"both vCPUs), context switches, system calls and interrupts" \
			"of the whole guest (perf stat -a); the server's CPU µs" \
			"(task-clock), context switches and system calls by name" \
			"(perf stat -p); mean µs per call of the server's frequent" \
			"calls (perf trace -s, another run: its own cost inflates" \
			"them); fio clat of the perf stat run"
		echo
		echo "| job | I/Os | guest CPU µs | guest ctx sw | guest syscalls | IRQs | server CPU µs | server ctx sw | server syscalls / I/O | server µs per call | clat µs |"
		echo "|---|---|---|---|---|---|---|---|---|---|---|"
		cat "$B/prof-rows"
		[ -s "$B/prof-syms" ] || return 0
		echo
		echo "The server's CPU time by symbol (perf record -e cpu-clock" \
			"-p <server>, a third run; perf report --sort dso,sym," \
			"% of the server's samples, the top 14):"
		echo
		cat "$B/prof-syms"
	} >"$B/prof.md"
}

# conc_prof: where a QD16 read's, a 4-appender write's and a buffered
# reader's (of 4) time goes in the FUSE daemons (po2zfs po2 and npo2,
# p2z_nullfs; null adio for QD16 only): the job once more under perf stat
# of the daemon (-p: CPU time,
# context switches, system calls by name, per fio I/O) with the guest's
# busy CPU time from /proc/stat, and a third time under perf record -e
# cpu-clock (top symbols). Outside the medians; $B/cprof.md.
CSC_EV="$SC_EV,syscalls:sys_enter_writev,syscalls:sys_enter_epoll_wait"
CSC_EV+=",syscalls:sys_enter_futex"
conc_prof() {
	local v job pid o b0 b1 io n row sec bs ev=task-clock,context-switches

	command -v perf >/dev/null || return 0
	mountpoint -q /sys/kernel/tracing ||
		mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	: >"$B/cprof-rows"
	: >"$B/cprof-syms"
	for job in qd16 ap4 br4; do
		sec=read bs=4096
		[ $job != ap4 ] || sec=write bs=131072
		for v in po2 npo2 nulla null; do
			[ $v != nulla ] || [ $job = qd16 ] || continue
			pid=${PID[$v]:-}
			[ -n "$pid" ] || continue
			[[ " ${CVARS[*]} " == *" $v "* ]] || continue
			[ "$SECONDS" -le "$BENCH_BUDGET" ] || break 2
			o=$J/cprof-$v-$job
			FIO_PRE=(perf stat -x "," -o "$o.srv" -p "$pid"
				-e "$ev,raw_syscalls:sys_enter,$CSC_EV" --)
			b0=$(cpu_busy)
			RES2=$B/results-prof conc_job p "$v" $job
			b1=$(cpu_busy)
			FIO_PRE=()
			read -r io _ _ < <(fio_result "$J/rp-$v-$job.json" $sec)
			n=$((${io:-0} / bs))
			[ "$n" -gt 0 ] || continue
			row="| $v $job | $n | $(awk -v b=$((b1 - b0)) -v n=$n 'BEGIN { printf "%.0f", b * 10000 / n }')"
			row+=" | $(awk -v a="$(perf_val "$o.srv" task-clock)" -v n=$n 'BEGIN { printf "%.0f", a * 1000 / n }')"
			row+=" | $(awk -v a="$(perf_val "$o.srv" context-switches)" -v n=$n 'BEGIN { printf "%.2f", a / n }')"
			row+=" | $(awk -v a="$(perf_val "$o.srv" raw_syscalls:sys_enter)" -v n=$n 'BEGIN { printf "%.2f", a / n }')"
			row+=" | $(syscalls_by_name "$o.srv" $n)"
			echo "$row |" >>"$B/cprof-rows"
			FIO_PRE=(perf record -q -e cpu-clock -F 4000 -o "$o.data"
				-p "$pid" --)
			RES2=$B/results-prof conc_job s "$v" $job
			FIO_PRE=()
			prof_syms "$v $job" "$o.data" >>"$B/cprof-syms"
		done
	done
	[ -s "$B/cprof-rows" ] || return 0
	{
		echo
		echo "Where the time goes in the FUSE daemon (the QD16 reader," \
			"the 4 appenders and the 4 buffered readers once more," \
			"outside the medians; perf in" \
			"the guest): per fio I/O, the guest's busy CPU µs" \
			"(/proc/stat, both vCPUs), the daemon's CPU µs (task-clock)," \
			"context switches, system calls and system calls by name" \
			"(perf stat -p <daemon>):"
		echo
		echo "| daemon job | I/Os | guest CPU µs | daemon CPU µs | daemon ctx sw | daemon syscalls | by name |"
		echo "|---|---|---|---|---|---|---|"
		cat "$B/cprof-rows"
		[ -s "$B/cprof-syms" ] || return 0
		echo
		echo "The daemon's CPU time by symbol (perf record -e cpu-clock" \
			"-p <daemon>, a third run; % of its samples, the top 14):"
		echo
		cat "$B/cprof-syms"
	} >"$B/cprof.md"
}

# sys_prof: the whole guest under perf record -a (cpu-clock, no
# tracepoints) during one more run of the 4 direct readers on zonefs, po2
# and null, outside the medians: the share of the samples of the idle
# task, fio, the daemon and the rest, and fio's and the daemon's CPU µs
# per read (share x vCPUs x the job's seconds / reads)
sys_prof() {
	local v o io n d cpus

	command -v perf >/dev/null || return 0
	cpus=$(nproc)
	: >"$B/sprof-rows"
	for v in zonefs po2 null; do
		[[ " ${CVARS[*]} " == *" $v "* ]] || continue
		[ "$SECONDS" -le "$BENCH_BUDGET" ] || break
		o=$J/sprof-$v-dr4
		FIO_PRE=(perf record -q -a -e cpu-clock -F 2000 -o "$o.data" --)
		RES2=$B/results-prof conc_job a "$v" dr4
		FIO_PRE=()
		read -r io _ _ < <(fio_result "$J/ra-$v-dr4.json" read)
		n=$((${io:-0} / 4096))
		[ "$n" -gt 0 ] || continue
		case $v in
		po2) d=po2zfs ;;
		null) d=p2z_nullfs ;;
		*) d=- ;;
		esac
		perf report -i "$o.data" --stdio --no-children --sort comm \
			2>/dev/null | awk -v v="$v" -v n="$n" -v d="$d" \
			-v us="$(awk -v c="$cpus" -v s="$BENCH_SECS" -v n="$n" \
				'BEGIN { print c * s * 1e6 / n / 100 }')" '
			/^ +[0-9.]+%/ { p = $1 + 0
				if ($2 == "swapper") idle += p
				else if ($2 == "fio") fio += p
				else if ($2 == d) dm += p
				else other += p }
			END { printf "| %s | %d | %.1f | %.1f | %s | %.1f | %.0f | %s |\n",
				v, n, idle, fio, d == "-" ? "-" : sprintf("%.1f", dm),
				other, fio * us, d == "-" ? "-" : sprintf("%.0f", dm * us) }' \
			>>"$B/sprof-rows"
	done
	[ -s "$B/sprof-rows" ] || return 0
	{
		echo
		echo "The whole guest during the 4 direct readers (one more run," \
			"outside the medians, under perf record -a -e cpu-clock):" \
			"% of the samples of both vCPUs by command (idle: the idle" \
			"task), and fio's and the daemon's CPU µs per read:"
		echo
		echo "| variant | reads | idle % | fio % | daemon % | other % | fio µs/read | daemon µs/read |"
		echo "|---|---|---|---|---|---|---|---|"
		cat "$B/sprof-rows"
	} >"$B/sprof.md"
}

# ---- tables ----

# what the tables' awk programs share: med(LIST), the median of a list of
# numbers separated by spaces ("" if none), and fmt(X), a MiB/s or µs
# figure ("-" if none)
MED_AWK=$(cat <<'EOF'
function med(list,    n, i, j, t, a) {
	n = split(list, a, " ")
	if (n == 0)
		return ""
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function fmt(x) {
	if (x == "")
		return "-"
	return x + 0 >= 100 ? sprintf("%.0f", x) : sprintf("%.1f", x)
}
EOF
)

# medians and ratios from the lines of $RES
TABLE_AWK=$(cat <<'EOF'
function medk(key, vals) { return med(vals[key]) }
function fmtr(x) { return x == "" ? "-" : sprintf("%.2f", x) }
function add(arr, key, x) { arr[key] = arr[key] " " x }
# the bound of a synchronous request through FUSE: at least the FUSE
# round trip (null) and the device's time (zonefs's whole time, at best),
# one after the other: per byte 1/null + 1/zonefs, so at most
# null / (null + zonefs) of zonefs's throughput
function bounds(arr, op, bs,    r, n, z) {
	for (r = 1; r <= nr; r++)
		if ((r, "null", op, bs) in mib && (r, "zonefs", op, bs) in mib) {
			n = mib[r, "null", op, bs]; z = mib[r, "zonefs", op, bs]
			if (n + z > 0)
				add(arr, "bound" SUBSEP op SUBSEP bs, n / (n + z))
		}
}
function ratios(arr, a, b, op, bs,    r) {
	for (r = 1; r <= nr; r++)
		if ((r, a, op, bs) in mib && (r, b, op, bs) in mib &&
		    mib[r, b, op, bs] > 0)
			add(arr, a SUBSEP b SUBSEP op SUBSEP bs,
			    mib[r, a, op, bs] / mib[r, b, op, bs])
}
BEGIN {
	name["append"] = "direct append"; name["dread"] = "direct read"
	name["bread"] = "buffered read"
	ops[1] = "append"; ops[2] = "dread"; ops[3] = "bread"
}
$5 != "err" {
	mib[$1, $2, $3, $4] = $5
	add(mv, $2 SUBSEP $3 SUBSEP $4, $5)
	add(cv, $2 SUBSEP $3 SUBSEP $4, $6)
	if ($1 > nr) nr = $1
	if (!($4 in seen)) { seen[$4] = 1; sizes[++ns] = $4 }
}
$5 == "err" { if ($1 > nr) nr = $1 }
END {
	for (o = 1; o <= 3; o++)
		for (s = 1; s <= ns; s++) {
			ratios(rv, "po2", "zonefs", ops[o], sizes[s])
			ratios(rv, "npo2", "zonefs", ops[o], sizes[s])
			ratios(rv, "po2", "raw-po2", ops[o], sizes[s])
			ratios(rv, "npo2", "raw-npo2", ops[o], sizes[s])
			ratios(rv, "null", "zonefs", ops[o], sizes[s])
			ratios(rv, "po2", "null", ops[o], sizes[s])
			bounds(rv, ops[o], sizes[s])
		}
	print "| job | zonefs MiB/s | po2zfs po2 | ratio | po2zfs npo2 | ratio |"
	print "|---|---|---|---|---|---|"
	for (o = 1; o <= 3; o++)
		for (s = 1; s <= ns; s++) {
			op = ops[o]; bs = sizes[s]
			k = SUBSEP op SUBSEP bs
			printf "| %s %s | %s | %s | %s | %s | %s |\n",
			    name[op], label(bs), fmt(medk("zonefs" k, mv)),
			    fmt(medk("po2" k, mv)),
			    fmtr(medk("po2" SUBSEP "zonefs" k, rv)),
			    fmt(medk("npo2" k, mv)),
			    fmtr(medk("npo2" SUBSEP "zonefs" k, rv))
		}
	print ""
	print "Raw passthrough (fio io_uring_cmd, QD1, commands of at most " \
	    maxt "; writes are Write commands, zonemode=zbd), MiB/s:"
	print ""
	print "| job | raw po2 | po2zfs po2 / raw | raw npo2 | po2zfs npo2 / raw |"
	print "|---|---|---|---|---|"
	for (o = 1; o <= 2; o++)
		for (s = 1; s <= ns; s++) {
			op = ops[o]; bs = sizes[s]
			k = SUBSEP op SUBSEP bs
			printf "| %s %s | %s | %s | %s | %s |\n",
			    name[op], label(bs), fmt(medk("raw-po2" k, mv)),
			    fmtr(medk("po2" SUBSEP "raw-po2" k, rv)),
			    fmt(medk("raw-npo2" k, mv)),
			    fmtr(medk("npo2" SUBSEP "raw-npo2" k, rv))
		}
	print ""
	print "FUSE alone (p2z_nullfs: po2zfs's FUSE settings, no device; what" \
	    " every FUSE filesystem pays), MiB/s and ratio to zonefs; the bound" \
	    " of a direct request through FUSE, null / (null + zonefs): its" \
	    " round trip and the device's time (zonefs's, at best) one after" \
	    " the other:"
	print ""
	print "| job | null MiB/s | null / zonefs | bound | po2zfs po2 / zonefs | po2zfs po2 / null |"
	print "|---|---|---|---|---|---|"
	for (o = 1; o <= 3; o++)
		for (s = 1; s <= ns; s++) {
			op = ops[o]; bs = sizes[s]
			k = SUBSEP op SUBSEP bs
			printf "| %s %s | %s | %s | %s | %s | %s |\n",
			    name[op], label(bs), fmt(medk("null" k, mv)),
			    fmtr(medk("null" SUBSEP "zonefs" k, rv)),
			    op == "bread" ? "-" : fmtr(medk("bound" k, rv)),
			    fmtr(medk("po2" SUBSEP "zonefs" k, rv)),
			    fmtr(medk("po2" SUBSEP "null" k, rv))
		}
	print ""
	print "Completion latency per request (fio clat mean, µs, median of the rounds):"
	print ""
	print "| job | zonefs | po2zfs po2 | po2zfs npo2 | raw po2 | raw npo2 | null |"
	print "|---|---|---|---|---|---|---|"
	for (o = 1; o <= 3; o++)
		for (s = 1; s <= ns; s++) {
			op = ops[o]; bs = sizes[s]
			k = SUBSEP op SUBSEP bs
			printf "| %s %s | %s | %s | %s | %s | %s | %s |\n",
			    name[op], label(bs), fmt(medk("zonefs" k, cv)),
			    fmt(medk("po2" k, cv)), fmt(medk("npo2" k, cv)),
			    fmt(medk("raw-po2" k, cv)), fmt(medk("raw-npo2" k, cv)),
			    fmt(medk("null" k, cv))
		}
}
function label(bs) {
	sub(/K$/, " KiB", bs); sub(/M$/, " MiB", bs)
	return bs
}
EOF
)

table() {
	local v

	echo "### po2zfs guest benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "- host: $BENCH_HOST"
	echo "- guest: Linux $(uname -r), 2 vCPUs, 2 GiB; $(fio --version);" \
		"po2zfs $BENCH_SOURCE${BENCH_OPTS:+, -o $BENCH_OPTS}"
	echo "- device: one NVMe controller (QEMU), ns1 npo2 96 MiB zones /" \
		"80 MiB capacity, ns2 and ns3 po2 128 MiB / 80 MiB, 16 zones," \
		"4 KiB LBAs; images on $BENCH_IMAGES"
	echo "- zonefs on ns2's block device, po2zfs po2 on ns3's and npo2 on" \
		"ns1's generic device, mounted together"
	has_part blk && echo "- po2zfs-blk: ns4 npo2 96 MiB / 80 MiB" \
		"(/dev/ublkbN, and raw passthrough), ns5 po2 128 MiB / 80 MiB" \
		"(the kernel's block device)"
	[ "$BENCH_BASE" = 1 ] && echo "- base build: $BENCH_BASE_SOURCE;" \
		"its po2zfs npo2 on ns6, po2 on ns7, po2zfs-blk on ns8 (npo2)"
	echo "- parts: $BENCH_PARTS"
	has_part qd1 && echo "- QD1 part: fio psync, QD1, $BENCH_MIB MiB per" \
		"job, appends with file_append=1 direct=1 to a reset zone file"
	echo "- rounds: $BENCH_ROUNDS, variants interleaved; medians; a ratio" \
		"is the median of the per-round ratios"
	[ "$DONE" = "$BENCH_ROUNDS" ] ||
		echo "- **only $DONE of $BENCH_ROUNDS rounds complete**: time" \
			"budget of ${BENCH_BUDGET}s (P2Z_BENCH_TIMEOUT)"
	n=$(cat "$RES" "$RES2" | grep -c ' err err$')
	[ "$n" = 0 ] || echo "- **$n fio jobs failed** (see the console log);" \
		"the medians leave them out"
	has_part qd1 || return 0
	echo
	awk -v maxt="$((MAXT[3] / 1024)) KiB on ns3, $((MAXT[1] / 1024)) KiB on ns1" \
		"$MED_AWK
$TABLE_AWK" "$RES"
	echo
	echo "\`ls -l seq/\` (16 files), ms: first after the mount; again" \
		"(median of the rounds)"
	echo
	echo "| | zonefs | po2zfs po2 | po2zfs npo2 |"
	echo "|---|---|---|---|"
	for v in first again; do
		echo "| $v$(for m in zonefs po2 npo2; do
			printf ' | %s' "$(awk -v v=$m -v w=$v '$1 == w && $2 == v { print $3 }' "$B/ls" |
				sort -n | awk '{ a[NR] = $1 } END {
					if (NR) print a[int((NR + 1) / 2)]; else print "-" }')"
		done) |"
	done
}

# grid ROWS COLS [FILE]: a markdown table of the lines "round variant job
# MiB/s clat_us" of FILE (default $RES2); ROWS "job|label;...", COLS
# "spec|header;..." where spec is a variant (median MiB/s), a/b (median of
# the per-round ratios of a to b), a~b (median of the per-round a / (a +
# b)), a~b/c (median of the per-round a * b / (a + b) / c: a and b one
# after the other, as a ratio to c) or variant@clat (median clat, µs)
GRID_AWK=$(cat <<'EOF2'
function cell(spec, job,    ab, r, l, c, x, y) {
	if (index(spec, "~") && index(spec, "/")) {
		# a~b/c: a and b one after the other (per byte 1/a + 1/b), as
		# a ratio to c
		split(spec, c, "/")
		split(c[1], ab, "~")
		l = ""
		for (r = 1; r <= nr; r++)
			if ((r, ab[1], job) in mib && (r, ab[2], job) in mib &&
			    (r, c[2], job) in mib && mib[r, c[2], job] > 0) {
				x = mib[r, ab[1], job]; y = mib[r, ab[2], job]
				if (x + y > 0)
					l = l " " x * y / (x + y) / mib[r, c[2], job]
			}
		l = med(l)
		return l == "" ? "-" : sprintf("%.2f", l)
	}
	if (index(spec, "~")) {
		split(spec, ab, "~")
		l = ""
		for (r = 1; r <= nr; r++)
			if ((r, ab[1], job) in mib && (r, ab[2], job) in mib &&
			    mib[r, ab[1], job] + mib[r, ab[2], job] > 0)
				l = l " " mib[r, ab[1], job] / (mib[r, ab[1], job] + mib[r, ab[2], job])
		l = med(l)
		return l == "" ? "-" : sprintf("%.2f", l)
	}
	if (index(spec, "/")) {
		split(spec, ab, "/")
		l = ""
		for (r = 1; r <= nr; r++)
			if ((r, ab[1], job) in mib && (r, ab[2], job) in mib &&
			    mib[r, ab[2], job] > 0)
				l = l " " mib[r, ab[1], job] / mib[r, ab[2], job]
		l = med(l)
		return l == "" ? "-" : sprintf("%.2f", l)
	}
	if (index(spec, "@clat")) {
		sub(/@clat$/, "", spec)
		return fmt(med(cv[spec, job]))
	}
	return fmt(med(mv[spec, job]))
}
$4 != "err" {
	mib[$1, $2, $3] = $4
	mv[$2, $3] = mv[$2, $3] " " $4
	cv[$2, $3] = cv[$2, $3] " " $5
}
{ if ($1 > nr) nr = $1 }
END {
	nrow = split(rows, R, ";"); ncol = split(cols, C, ";")
	line = "| job |"; sep = "|---|"
	for (c = 1; c <= ncol; c++) {
		split(C[c], h, "|"); line = line " " h[2] " |"; sep = sep "---|"
	}
	print line; print sep
	for (i = 1; i <= nrow; i++) {
		split(R[i], rr, "|")
		line = "| " rr[2] " |"
		for (c = 1; c <= ncol; c++) {
			split(C[c], h, "|"); line = line " " cell(h[1], rr[1]) " |"
		}
		print line
	}
}
EOF2
)

grid() { # rows cols [file]
	awk -v rows="$1" -v cols="$2" "$MED_AWK
$GRID_AWK" "${3:-$RES2}"
}

CROWS="qd16|randread 4k direct, io_uring QD16, one file"
CROWS+=";dr4|randread 4k direct, 4 psync jobs, 4 zones"
CROWS+=";br4|randread 4k buffered, 4 psync jobs, 4 zones"
CROWS+=";bs4|randread 4k buffered, 4 psync jobs, 4 zones, the same reads"
CROWS+=";ap4|append 128k direct, 4 psync jobs, 4 zones"
BROWS="rr1|randread 4k direct, io_uring QD1"
BROWS+=";rr16|randread 4k direct, io_uring QD16"
BROWS+=";wr4|write 128k, 4 psync jobs, 4 zones (zbd)"

conc_table() {
	echo
	echo "Concurrency (issue 22): fio, ${BENCH_SECS} s per reader job over" \
		"the first $CM MiB of a zone file; appenders $CM MiB per zone" \
		"file, reset first; the same reads: $BS4 MiB per buffered" \
		"reader, the same offsets in every variant (fio randrepeat)," \
		"untimed; MiB/s medians, ratios the median of the" \
		"per-round ratios:"
	echo
	grid "$CROWS" "zonefs|zonefs;po2|po2zfs po2;po2/zonefs|ratio;npo2|po2zfs npo2;npo2/zonefs|ratio;npo2/po2|npo2 / po2"
	echo
	echo "The device's side through passthrough, which po2zfs uses: raw" \
		"(fio io_uring_cmd) QD16 random reads, and 4 QD1 readers, over" \
		"the first $CM MiB of zone $RAWR, and 4 writers (Write commands, zonemode=zbd) on 4" \
		"zones of each namespace in commands of 128 KiB, or where the" \
		"transfer limit is smaller ($((MAXT[3] / 1024)) KiB on ns3," \
		"$((MAXT[1] / 1024)) KiB on ns1) in the two commands po2zfs" \
		"splits a 128 KiB append into, half of the commands each; raw" \
		"npo2 / raw po2 is the device's bound of po2zfs npo2 / po2:"
	echo
	grid "qd16|randread 4k, QD16;dr4|randread 4k, 4 QD1 readers;ap4|append 128k direct, 4 writers, 4 zones" "raw-po2|raw po2;raw-npo2|raw npo2;raw-npo2/raw-po2|raw npo2 / po2;npo2/po2|po2zfs npo2 / po2;po2/raw-po2|po2zfs po2 / raw;npo2/raw-npo2|po2zfs npo2 / raw"
	echo
	echo "The bound on passthrough: a request costs FUSE's work (null's," \
		"at best; null adio's at QD16) and the device's through" \
		"passthrough (raw's, at best). A psync job pays them one after" \
		"the other; under TCG both are CPU time of the same host cores," \
		"so at depth they add up too: per byte 1/null + 1/raw, per" \
		"round, as a ratio to zonefs:"
	echo
	grid "qd16|randread 4k direct, io_uring QD16, one file" "nulla~raw-po2/zonefs|bound po2 / zonefs;po2/zonefs|po2zfs po2 / zonefs;nulla~raw-npo2/zonefs|bound npo2 / zonefs;npo2/zonefs|po2zfs npo2 / zonefs"
	grid "dr4|randread 4k direct, 4 psync jobs, 4 zones" "null~raw-po2/zonefs|bound po2 / zonefs;po2/zonefs|po2zfs po2 / zonefs;null~raw-npo2/zonefs|bound npo2 / zonefs;npo2/zonefs|po2zfs npo2 / zonefs" | tail -n 1
	grid "ap4|append 128k direct, 4 psync jobs, 4 zones" "null~raw-po2/zonefs|bound po2 / zonefs;po2/zonefs|po2zfs po2 / zonefs;null~raw-npo2/zonefs|bound npo2 / zonefs;npo2/zonefs|po2zfs npo2 / zonefs" | tail -n 1
	echo
	echo "FUSE's bound (p2z_nullfs, the same jobs; null: po2zfs's" \
		"settings, no async direct I/O; null adio: with" \
		"FUSE_CAP_ASYNC_DIO, QD16 only), MiB/s and ratios; the serial" \
		"bound null / (null + zonefs): a synchronous (psync) request" \
		"pays FUSE's round trip (null's, at best) and the device's time" \
		"(zonefs's, at best) one after the other, so it is the bound of" \
		"the psync jobs; at QD16 the two overlap and null adio / zonefs" \
		"is the bound:"
	echo
	grid "$CROWS" "null|null;null/zonefs|null / zonefs;null~zonefs|serial bound;nulla|null adio;nulla/zonefs|null adio / zonefs;po2/null|po2zfs po2 / null;po2/nulla|po2zfs po2 / null adio"
	echo
	echo "Completion latency per request (fio clat mean, µs, median of the rounds):"
	echo
	grid "$CROWS" "zonefs@clat|zonefs;po2@clat|po2zfs po2;npo2@clat|po2zfs npo2;null@clat|null;nulla@clat|null adio;nulld@clat|null + device"
	echo
	echo "The readers' bound measured: null + device (p2z_nullfs" \
		"--device, po2zfs's FUSE settings, libfuse's multi-threaded" \
		"loop, each read one synchronous NVMe Read passthrough on" \
		"nsid 3, po2zfs po2's namespace, in the thread that received it:" \
		"the least a FUSE filesystem on this device does per read), the" \
		"same jobs, MiB/s and ratios:"
	echo
	grid "dr4|randread 4k direct, 4 psync jobs, 4 zones;br4|randread 4k buffered, 4 psync jobs, 4 zones;bs4|randread 4k buffered, 4 psync jobs, 4 zones, the same reads" "nulld|null + device;nulld/zonefs|null + device / zonefs;po2/zonefs|po2zfs po2 / zonefs;npo2/zonefs|po2zfs npo2 / zonefs;po2/nulld|po2zfs po2 / null + device;npo2/nulld|po2zfs npo2 / null + device"
}

# daemon_stats STATS read|write: "requests KiB-per-request µs-per-request
# µs-in-device-per-request" of a user.dev.stats dump: its FUSE READs
# (fs.read) or WRITEs (fs.write), from receipt to reply, and of that the
# device's reads (dev.read) or writes and appends, submission to
# completion as the daemon sees it; nothing if it has no such request
daemon_stats() {
	local fsl=fs.read dvl=dev.read

	[ "$2" = write ] && fsl=fs.write dvl="dev.append|dev.write"
	awk -v fsl="$fsl" -v dvl="^($dvl)\$" '
	function val(line, k,   i, a) {
		for (i = 2; i <= split(line, a, " "); i++)
			if (index(a[i], k "=") == 1)
				return substr(a[i], length(k) + 2)
		return 0 }
	$1 == fsl { nr = val($0, "nr"); by = val($0, "bytes"); us = val($0, "avg_us") }
	$1 ~ dvl { dus += val($0, "avg_us") * val($0, "nr") }
	END { if (nr) printf "%d %.0f %d %.0f\n", nr, by / nr / 1024, us, dus / nr }' "$1"
}

# conc_stats: where a request's time goes, last round: fio's completion
# latency per I/O against the daemon's time per FUSE request from its
# receipt to its reply, of which in the device (daemon_stats); beside
# them null's, raw's and null + device's latency in the same round (FUSE
# alone, the device alone through passthrough, the two in the least
# FUSE filesystem on the device)
conc_stats() {
	local job v sec bs io nr us dus clat nclat rclat dclat

	echo
	echo "Inside the daemon, round $DONE (user.dev.stats): fio's" \
		"completion latency per I/O, the daemon's FUSE requests per" \
		"I/O and its µs per request from receipt to reply, of which in" \
		"the device; null's, raw's and null + device's latency in the" \
		"same round:"
	echo
	echo "| job | variant | fio clat µs | requests per I/O | µs in the daemon | µs in device | null clat µs | raw clat µs | null + device clat µs |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for job in qd16 dr4 bs4 br4 ap4; do
		sec=read bs=4096
		[ $job = ap4 ] && sec=write bs=131072
		for v in po2 npo2; do
			[ -s "$J/r$DONE-$v-$job.stats" ] || continue
			read -r nr _ us dus < <(daemon_stats \
				"$J/r$DONE-$v-$job.stats" $sec) || continue
			read -r io _ < <(fio_result "$J/r$DONE-$v-$job.json" $sec)
			read -r clat nclat rclat dclat < <(awk -v r="$DONE" \
				-v v="$v" -v j="$job" '
				$1 == r && $3 == j { c[$2] = $5 }
				function p(k) { return k in c ? c[k] : "-" }
				END { print p(v), p("null"), p("raw-" v), p("nulld") }' \
				"$RES2")
			printf '| %s | %s | %s | %s | %d | %d | %s | %s | %s |\n' \
				$job $v "$clat" "$(awk -v n="$nr" -v i="$((${io:-0} / bs))" \
					'BEGIN { printf "%.2f", i ? n / i : 0 }')" \
				"$us" "$dus" "$nclat" "$rclat" "$dclat"
		done
	done
}

blk_table() {
	local c

	echo
	echo "po2zfs-blk: fio on ${BDEV[blk]:-/dev/ublkbN} (po2zfs-blk on" \
		"nsid 4, npo2) against nsid 5's block device" \
		"(${BDEV[kdev]:-none}, po2, the kernel's) and raw passthrough" \
		"(io_uring_cmd) on nsid 4's zone 12; reads ${BENCH_SECS} s over" \
		"the first $CM MiB of a zone, writers $CM MiB per zone; MiB/s" \
		"medians:"
	echo
	c="raw-blk|raw passthrough npo2;kdev|kernel block device po2"
	c+=";blk|po2zfs-blk npo2;blk/kdev|ublk / kernel;blk/raw-blk|ublk / raw"
	c+=";blk@clat|ublk clat µs;kdev@clat|kernel clat µs"
	grid "$BROWS" "$c"
	echo
	echo "The ublk bound: po2zfs-blk on an emulated image in the guest's" \
		"tmpfs with nsid 4's geometry (${BDEV[blk-emu]:-none}: ublk and" \
		"the server, a backend that costs next to nothing) and the" \
		"kernel's zoned null_blk (${BDEV[nullb]:-none}, memory backed)," \
		"the same jobs, MiB/s and ratios to the kernel block device; the" \
		"serial bound emu / (emu + kernel): a request through ublk pays" \
		"ublk's round trip (ublk over emu, at best) and the device's" \
		"time (the kernel block device's, at best) one after the other" \
		"(so it holds for QD1 and for each psync writer; at QD16 the two" \
		"overlap and ublk over emu / kernel is the bound):"
	echo
	c="blk-emu|ublk over tmpfs emu;blk-emu/kdev|emu / kernel"
	c+=";blk-emu~kdev|serial bound;blk/kdev|po2zfs-blk / kernel"
	c+=";blk/blk-emu|po2zfs-blk / emu;nullb|null_blk;nullb/kdev|null_blk / kernel"
	c+=";blk-emu512|ublk over emu, 512 KiB requests"
	c+=";blk-emu512/blk-emu|512 KiB / 124 KiB"
	grid "$BROWS" "$c"
	echo
	echo "The ublk floor for writes too: po2zfs-blk (zbd backend) on a" \
		"zoned null_blk that keeps no data (${BDEV[blk-nullz]:-none}," \
		"memory_backed=0, po2 128 MiB zones of 80 MiB capacity, requests" \
		"of at most nsid 4's transfer limit): ublk's round trip, the" \
		"USER_COPY of the data and the server, with a device that costs" \
		"nothing. Serial bound null / (null + kernel) as above:"
	echo
	c="blk-nullz|ublk over null;blk-nullz/kdev|ublk null / kernel"
	c+=";blk-nullz~kdev|serial bound;blk/kdev|po2zfs-blk / kernel"
	c+=";blk/blk-nullz|po2zfs-blk / ublk null"
	c+=";blk-nullz~raw-blk/kdev|bound on passthrough"
	grid "$BROWS" "$c"
	echo
	echo "(bound on passthrough: ublk's round trip (ublk over null, at" \
		"best) and the device's time through passthrough (raw's, at" \
		"best) one after the other, per byte 1/null + 1/raw, as a ratio" \
		"to the kernel block device: po2zfs-blk reaches the npo2" \
		"namespace only through passthrough)"
	echo
	echo "Completion latency per request (fio clat mean, µs, median of" \
		"the rounds); largest request (max_sectors_kb): $MAXKB"
	echo
	c="kdev@clat|kernel block device;nullb@clat|null_blk"
	c+=";blk-emu@clat|ublk over emu;blk@clat|po2zfs-blk nvme"
	c+=";blk-emu512@clat|ublk over emu, 512 KiB;blk-nullz@clat|ublk over null"
	c+=";raw-blk@clat|raw passthrough"
	grid "$BROWS" "$c"
}

# the measured build against the base, side by side: every job of every
# part that ran
ab_table() {
	local rows="" bs op c

	[ "$BENCH_BASE" = 1 ] || return 0
	echo
	echo "A/B in this run: the measured build against the base" \
		"($BENCH_BASE_SOURCE), on namespaces of their own, interleaved;" \
		"MiB/s medians, new / base the median of the per-round ratios:"
	echo
	c="po2-base|po2 base;po2|po2 new;po2/po2-base|new / base"
	c+=";npo2-base|npo2 base;npo2|npo2 new;npo2/npo2-base|new / base"
	if has_part qd1; then
		for bs in $BENCH_SIZES; do
			for op in append dread bread; do
				rows+=";$op-$bs|QD1 $op $bs"
			done
		done
		awk '{ print $1, $2, $3 "-" $4, $5, $6 }' "$RES" >"$B/results-qd1"
		grid "${rows#;}" "$c" "$B/results-qd1"
		echo
	fi
	if has_part conc; then
		grid "$CROWS" "$c"
		echo
	fi
	if has_part blk; then
		grid "$BROWS" "blk-base|ublk base;blk|ublk new;blk/blk-base|new / base;kdev|kernel block device"
	fi
}

# ---- main ----

VARS=()
: >"$B/ls"
mount_zonefs && VARS+=(zonefs)
# a base variant next to its counterpart: rotate() swaps them every
# other round
mount_po2zfs po2 3 && VARS+=(po2)
[ "$BENCH_BASE" = 1 ] && mount_po2zfs po2-base 7 /p2z/base/po2zfs &&
	VARS+=(po2-base)
mount_po2zfs npo2 1 && VARS+=(npo2)
[ "$BENCH_BASE" = 1 ] && mount_po2zfs npo2-base 6 /p2z/base/po2zfs &&
	VARS+=(npo2-base)
for v in "${VARS[@]}"; do
	echo "first $v $(ms ls -l "/mnt/$v/seq/")" >>"$B/ls"
done
mount_null && VARS+=(null)
if [ "$BENCH_RAW" = 1 ]; then
	[ -n "${NG[3]:-}" ] && VARS+=(raw-po2)
	[ -n "${NG[1]:-}" ] && VARS+=(raw-npo2)
fi
CVARS=() BVARS=()
if has_part conc; then
	mount_null nulla && VARS+=(nulla)
	[ -n "${NG[3]:-}" ] && mount_null nulld && VARS+=(nulld)
	for v in "${VARS[@]}"; do
		if conc_prep "$v"; then
			CVARS+=("$v")
		else
			result "$v" conc-prep FAIL "$CM MiB into seq/{${READF// /,}}"
		fi
	done
fi
has_nullb=0
if has_part blk; then
	if [ -c /dev/ublk-control ]; then
		blk_add blk "${NG[4]:-}" && BVARS+=(blk)
		[ "$BENCH_BASE" = 1 ] &&
			blk_add blk-base "${NG[8]:-}" /p2z/base/po2zfs-blk &&
			BVARS+=(blk-base)
		emu_add blk-emu "${MAXT[4]}" && BVARS+=(blk-emu)
		emu_add blk-emu512 512K && BVARS+=(blk-emu512)
		nullb_add && has_nullb=1
		[ "$has_nullb" = 1 ] && nullz_add && BVARS+=(blk-nullz)
	else
		result blk add FAIL "no /dev/ublk-control"
	fi
	BDEV[kdev]=/dev/${DISK[5]:-none}
	[ -b "${BDEV[kdev]}" ] && BVARS+=(kdev)
	if [ ! -c /dev/ublk-control ]; then # else added above
		nullb_add && has_nullb=1
	fi
	[ "$has_nullb" = 1 ] && BVARS+=(nullb)
	[ -n "${NG[4]:-}" ] && BVARS+=(raw-blk)
	for v in "${BVARS[@]}"; do
		blk_prep "$v" || result "$v" blk-prep FAIL "$CM MiB into the read zone"
	done
fi
say "variants: ${VARS[*]}; sizes: $BENCH_SIZES; rounds: $BENCH_ROUNDS; ${BENCH_MIB} MiB per job"
say "parts: $BENCH_PARTS; concurrency: ${CVARS[*]}; po2zfs-blk: ${BVARS[*]}"

SECONDS=0
result_start
DONE=0
for r in $(seq "$BENCH_ROUNDS"); do
	# stop before a round that would not end within the budget
	if [ "$DONE" -gt 0 ] &&
		[ $((SECONDS + SECONDS / DONE)) -gt "$BENCH_BUDGET" ]; then
		say "stopping after $DONE rounds: time budget ${BENCH_BUDGET}s"
		break
	fi
	k=0
	for bs in $BENCH_SIZES; do
		has_part qd1 || break
		for op in append dread bread; do
			# shellcheck disable=SC2046
			for v in $(rotate "$r" $((r + k)) "${VARS[@]}"); do
				[ "$op" != bread ] || [[ $v != raw-* ]] || continue
				[[ $v != null[ad] ]] || continue
				[ "$SECONDS" -le "$BENCH_BUDGET" ] || break 4
				run_job "$r" "$v" $op "$bs" $k
			done
		done
		k=$((k + 1))
	done
	for job in qd16 dr4 br4 bs4 ap4; do
		[ ${#CVARS[@]} -gt 0 ] || break
		# shellcheck disable=SC2046
		for v in $(rotate "$r" $((r + k)) "${CVARS[@]}"); do
			[ "$v" != nulla ] || [ $job = qd16 ] || continue
			[ "$v" != nulld ] || [[ $job == ?r4 || $job = bs4 ]] ||
				continue
			[[ $v != raw-* ]] || [ $job = ap4 ] || [ $job = qd16 ] ||
				[ $job = dr4 ] || continue
			[ "$SECONDS" -le "$BENCH_BUDGET" ] || break 3
			conc_job "$r" "$v" $job
		done
		k=$((k + 1))
	done
	for job in rr1 rr16 wr4; do
		[ ${#BVARS[@]} -gt 0 ] || break
		# shellcheck disable=SC2046
		for v in $(rotate "$r" $((r + k)) "${BVARS[@]}"); do
			[ "$SECONDS" -le "$BENCH_BUDGET" ] || break 3
			blk_job "$r" "$v" $job
		done
		k=$((k + 1))
	done
	for v in "${VARS[@]}"; do
		has_part qd1 || break
		[[ $v == raw-* || $v == null* ]] || echo "again $v $(ms ls -l "/mnt/$v/seq/")" >>"$B/ls"
	done
	DONE=$r
	say "round $r done, ${SECONDS}s"
done
[ "$SECONDS" -le "$BENCH_BUDGET" ] ||
	say "time budget of ${BENCH_BUDGET}s passed in round $((DONE + 1))"
MAXKB=
for v in "${BVARS[@]}"; do
	[ -n "${BDEV[$v]:-}" ] || continue
	MAXKB+="${MAXKB:+, }$v $(cat "/sys/block/${BDEV[$v]#/dev/}/queue/max_sectors_kb" 2>/dev/null)"
done
# Where a request's time goes: per po2zfs job of the last round, the FUSE
# requests the daemon served (fs.*: count, mean size, mean time) and what
# the device took of that time (dev.*), from user.dev.stats.
stats_table() {
	local v op bs st nr kib us dus

	echo
	echo "Inside the daemon, last round (user.dev.stats: requests, mean size," \
		"mean µs in the daemon, of which in the device):"
	echo
	echo "| job | variant | requests | KiB/request | µs/request | µs in device |"
	echo "|---|---|---|---|---|---|"
	for bs in $BENCH_SIZES; do
		for op in append dread bread; do
			for v in po2 npo2; do
				st=$J/r$DONE-$v-$op-$bs.stats
				[ -s "$st" ] || continue
				read -r nr kib us dus < <(daemon_stats "$st" \
					"$([ $op = append ] && echo write || echo read)") ||
					continue
				echo "| $op $bs | $v | $nr | $kib | $us | $dus |"
			done
		done
	done
}

{
	table
	has_part conc && conc_table
	has_part blk && blk_table
	ab_table
	has_part qd1 && stats_table
	has_part conc && conc_stats
} | sed 's/^/P2Z-TABLE /'

# The profiles come after the medians are out: perf's tracepoints have
# crashed this TCG guest (an int3 oops while the kernel patches its text
# to enable them), which must not cost the table above.
has_part blk && blk_prof
has_part conc && conc_prof
has_part conc && sys_prof
for f in "$B/cprof.md" "$B/sprof.md" "$B/prof.md"; do
	[ ! -s "$f" ] || sed 's/^/P2Z-TABLE /' "$f"
done

for v in blk blk-emu blk-emu512 blk-nullz blk-base; do
	[ -n "${BDEV[$v]:-}" ] || continue
	b=po2zfs-blk
	[ $v != blk-base ] || b=/p2z/base/po2zfs-blk
	timeout 60 "$b" del "${BDEV[$v]#/dev/ublkb}" </dev/null ||
		say "$b del ${BDEV[$v]} failed"
done
for v in po2 npo2 po2-base npo2-base null nulla nulld; do
	mountpoint -q "/mnt/$v" || continue
	umount "/mnt/$v" || say "umount /mnt/$v failed"
	wait "${PID[$v]}" || say "po2zfs ($v) exited with $?"
done
mountpoint -q /mnt/zonefs && umount /mnt/zonefs
cp "$RES" "$RES2" "$B/ls" "$J/"
cp "$B"/daemon-*.log "$J/" 2>/dev/null
echo "P2Z-BENCH-JSON-BEGIN"
tar -C "$B" -czf - json | base64
echo "P2Z-BENCH-JSON-END"
