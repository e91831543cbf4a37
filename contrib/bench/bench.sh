#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# po2zfs benchmark: ratios measured side by side in one run (DESIGN.md,
# "Performance shape"):
#   1. the emu backend called directly (p2z_bench) vs through the FUSE
#      mount (dd), for appends and for reads;
#   2. npo2 geometry (96M zones, 80M capacity) vs po2 (64M/48M), the same
#      bytes written to each;
#   3. 1, 2, 4 writers on separate zones, through the mount and directly,
#      both with p2z_bench's threads (--files for the mount's zone files);
#   4. I/O sizes (128K and 4K besides the 1M of part 1), through the mount
#      vs directly, on the npo2 images of part 1;
#   5. `ls -l seq/` of a device with 100,000 zones, first and second time;
#   6. queue depth (issue 22): fio randread 4k io_uring at QD1 and QD16 on
#      a zone file of the npo2 mount (-o direct by default), FUSE alone
#      (p2z_nullfs) beside it, and a base build's po2zfs if
#      P2Z_BENCH_BASE names one; the QD16 / QD1 ratio (target >= 3).
# A host-file row (dd into a plain file next to the images) gives the floor
# under the emulator's own pwrite()s.
#
# By default the images are device-like: their data is read and written with
# O_DIRECT (mount option direct, p2z_bench --direct) on the disk holding
# the work directory, so "through the mount / backend called directly"
# compares the daemon against a device, not against memcpy into the page
# cache. P2Z_BENCH_ODIRECT=0 measures the page cache instead.
#
# The variants are interleaved: every round runs each of them once, in
# reverse order every other round, after one warm-up round that is not
# counted. The table shows medians over the rounds; ratios are the medians
# of the per-round ratios, so that drift of a shared, noisy machine cancels.
#
# Usage (root, or access to /dev/fuse and fusermount3):
#   contrib/bench/bench.sh
# Environment (defaults in brackets):
#   P2Z_BENCH_ROUNDS   counted rounds [15]
#   P2Z_BENCH_WARMUP   warm-up rounds, not counted [1]
#   P2Z_BENCH_MIB      MiB written and read per zone and measurement [48]
#                      (at most 48: the po2 zone capacity)
#   P2Z_BENCH_BS       I/O size of dd and p2z_bench, K/M suffix [1M]
#   P2Z_BENCH_WRITERS  writer counts of part 3 [1 2 4]
#   P2Z_BENCH_LBA      logical block size of the images: 512|4096 [4096]
#   P2Z_BENCH_FLUSH    1: end every write with a flush, inside its timing
#                      (dd conv=fsync, p2z_bench --flush) [0]
#   P2Z_BENCH_PREFAULT 0: no scratch write before each timed write (see
#                      prefault()) [1]
#   P2Z_BENCH_ODIRECT  1: image data with O_DIRECT (device-like); 0: through
#                      the host's page cache [1]
#   P2Z_BENCH_SIZES    I/O sizes of part 4, besides P2Z_BENCH_BS [128K 4K]
#                      ("" skips part 4)
#   P2Z_BENCH_SIZE_MIB MiB per measurement of part 4 [8]
#   P2Z_BENCH_LS       1: part 5, ls -l of a 100,000-zone device [1]
#   P2Z_BENCH_LS_ZONES zones of part 5 [100000]
#   P2Z_BENCH_DIR      where the work directory (images, mount points) is
#                      created; use a real disk, not tmpfs [/var/tmp]
#   P2Z_BENCH_BUILD    build directory [/tmp/build-bench]
#   P2Z_BENCH_NO_BUILD 1: use the build directory as it is [0]
#   P2Z_BENCH_KEEP     1: keep the work directory (daemon logs) [0]
#   P2Z_BENCH_QD       queue depths of part 6 ["1 16"] ("" skips it)
#   P2Z_BENCH_QD_SECS  seconds per fio job of part 6 [2]
#   P2Z_BENCH_QD_MIB   MiB of the zone file part 6 reads [32] (at most 80)
#   P2Z_BENCH_BASE     a second build directory whose po2zfs mounts its
#                      own npo2 image for part 6, interleaved (A/B) [none]
set -euo pipefail
export LC_ALL=C

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROUNDS=${P2Z_BENCH_ROUNDS:-15}
WARMUP=${P2Z_BENCH_WARMUP:-1}
MIB=${P2Z_BENCH_MIB:-48}
BS=${P2Z_BENCH_BS:-1M}
WRITERS=${P2Z_BENCH_WRITERS:-1 2 4}
LBA=${P2Z_BENCH_LBA:-4096}
FLUSH=${P2Z_BENCH_FLUSH:-0}
DIR=${P2Z_BENCH_DIR:-/var/tmp}
BUILD=${P2Z_BENCH_BUILD:-/tmp/build-bench}
NO_BUILD=${P2Z_BENCH_NO_BUILD:-0}
KEEP=${P2Z_BENCH_KEEP:-0}
PREFAULT=${P2Z_BENCH_PREFAULT:-1}
ODIRECT=${P2Z_BENCH_ODIRECT:-1}
SIZES=${P2Z_BENCH_SIZES-128K 4K}
SIZE_MIB=${P2Z_BENCH_SIZE_MIB:-8}
LS=${P2Z_BENCH_LS:-1}
LS_ZONES=${P2Z_BENCH_LS_ZONES:-100000}
QDS=${P2Z_BENCH_QD-1 16}
QD_SECS=${P2Z_BENCH_QD_SECS:-2}
QD_MIB=${P2Z_BENCH_QD_MIB:-32}
BASE=${P2Z_BENCH_BASE:-}

# Geometries: name, zone size, zone capacity.
GEOMS=(npo2 po2)
declare -A ZSIZE=([npo2]=96M [po2]=64M)
declare -A ZCAP=([npo2]=80M [po2]=48M)

WORK=
declare -A MNT=() DAEMON=()
declare -A VALS=() CPU=() WALL=()
declare -A SZ_BYTES=() SZ_COUNT=()

die()
{
	echo "bench: $*" >&2
	exit 1
}

# ------------------------------------------------------------ arguments

check_env()
{
	local n max_w=0 w

	[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "P2Z_BENCH_ROUNDS: not a count: '$ROUNDS'"
	[[ $WARMUP =~ ^[0-9]+$ ]] || die "P2Z_BENCH_WARMUP: not a count: '$WARMUP'"
	if ! [[ $MIB =~ ^[1-9][0-9]*$ ]] || ((MIB > 48)); then
		die "P2Z_BENCH_MIB: 1..48 (the po2 zone capacity), not '$MIB'"
	fi
	[[ $BS =~ ^[1-9][0-9]*[KM]?$ ]] || die "P2Z_BENCH_BS: a size such as 1M or 128K, not '$BS'"
	BS_BYTES=$(numfmt --from=iec "$BS")
	[[ $LBA = 512 || $LBA = 4096 ]] || die "P2Z_BENCH_LBA: 512 or 4096, not '$LBA'"
	n=$((MIB * 1048576))
	((BS_BYTES % LBA == 0 && n % BS_BYTES == 0 && BS_BYTES <= 1048576)) ||
		die "P2Z_BENCH_BS=$BS must be a multiple of $LBA, at most 1M, and divide $MIB MiB"
	COUNT=$((n / BS_BYTES))
	BYTES=$n
	read -ra WRITER_LIST <<<"$WRITERS"
	[ ${#WRITER_LIST[@]} -gt 0 ] || die "P2Z_BENCH_WRITERS: empty"
	for w in "${WRITER_LIST[@]}"; do
		[[ $w =~ ^[1-9][0-9]*$ ]] || die "P2Z_BENCH_WRITERS: not counts: '$WRITERS'"
		((w > max_w)) && max_w=$w
	done
	((max_w > 0 && max_w <= 64)) || die "P2Z_BENCH_WRITERS: 1..64 writers"
	# zone 1 of the npo2 images holds part 6's file
	NR_ZONES=$((max_w > 2 ? max_w : 2))
	read -ra QD_LIST <<<"$QDS"
	for w in "${QD_LIST[@]}"; do
		if ! [[ $w =~ ^[1-9][0-9]*$ ]] || ((w > 128)); then
			die "P2Z_BENCH_QD: depths 1..128, not '$QDS'"
		fi
	done
	if ((${#QD_LIST[@]})); then
		[[ $QD_SECS =~ ^[1-9][0-9]*$ ]] || die "P2Z_BENCH_QD_SECS: not a count: '$QD_SECS'"
		if ! [[ $QD_MIB =~ ^[1-9][0-9]*$ ]] || ((QD_MIB > 80)); then
			die "P2Z_BENCH_QD_MIB: 1..80 (the npo2 zone capacity), not '$QD_MIB'"
		fi
		command -v fio >/dev/null || die "fio not found (Debian: fio), or P2Z_BENCH_QD=''"
	fi
	if [ -n "$BASE" ] && ! [ -x "$BASE/po2zfs" ]; then
		die "P2Z_BENCH_BASE: no po2zfs in $BASE"
	fi
	[[ $FLUSH = 0 || $FLUSH = 1 ]] || die "P2Z_BENCH_FLUSH: 0 or 1"
	[[ $PREFAULT = 0 || $PREFAULT = 1 ]] || die "P2Z_BENCH_PREFAULT: 0 or 1"
	[[ $ODIRECT = 0 || $ODIRECT = 1 ]] || die "P2Z_BENCH_ODIRECT: 0 or 1"
	[[ $LS = 0 || $LS = 1 ]] || die "P2Z_BENCH_LS: 0 or 1"
	if ! [[ $LS_ZONES =~ ^[1-9][0-9]*$ ]] || ((LS_ZONES > 1048576)); then
		die "P2Z_BENCH_LS_ZONES: 1..1048576, not '$LS_ZONES'"
	fi
	if ! [[ $SIZE_MIB =~ ^[1-9][0-9]*$ ]] || ((SIZE_MIB > 48)); then
		die "P2Z_BENCH_SIZE_MIB: 1..48, not '$SIZE_MIB'"
	fi
	SZ_BYTES[$BS]=$BYTES
	SZ_COUNT[$BS]=$COUNT
	read -ra SIZE_LIST <<<"$SIZES"
	for w in "${SIZE_LIST[@]}"; do
		[[ $w =~ ^[1-9][0-9]*[KM]?$ ]] || die "P2Z_BENCH_SIZES: sizes such as 128K 4K, not '$SIZES'"
		[ "$w" != "$BS" ] || die "P2Z_BENCH_SIZES: $w is P2Z_BENCH_BS already"
		n=$(numfmt --from=iec "$w")
		((n % LBA == 0 && (SIZE_MIB * 1048576) % n == 0 && n <= 1048576)) ||
			die "P2Z_BENCH_SIZES: $w must be a multiple of $LBA, at most 1M, and divide $SIZE_MIB MiB"
		SZ_BYTES[$w]=$((SIZE_MIB * 1048576))
		SZ_COUNT[$w]=$((SIZE_MIB * 1048576 / n))
	done
	MOUNT_OPTS=()
	DIO=
	HOST_DIO=()
	if [ "$ODIRECT" = 1 ]; then
		MOUNT_OPTS=(-o direct)
		DIO=--direct
		HOST_DIO=(oflag=direct iflag=direct)
	fi
	DD_CONV=notrunc
	FL=
	if [ "$FLUSH" = 1 ]; then
		DD_CONV=notrunc,fsync
		FL=--flush
	fi
	CLK_TCK=$(getconf CLK_TCK)
	[ -d "$DIR" ] || die "P2Z_BENCH_DIR: $DIR is not a directory"
	[ -w /dev/fuse ] || die "no write access to /dev/fuse: run as root"
	command -v fusermount3 >/dev/null || die "fusermount3 not found (Debian: fuse3)"
}

# ------------------------------------------------------------ build

build()
{
	local log=$BUILD.log

	if [ "$NO_BUILD" = 1 ]; then
		echo "bench: using the build in $BUILD as it is"
	else
		echo "bench: building po2zfs, po2zfs-emu, p2z_bench in $BUILD (log: $log)"
		if ! { cmake -S "$TOP" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
			-DP2Z_TESTS=OFF -DP2Z_BENCH=ON &&
			cmake --build "$BUILD" -j2 --target po2zfs po2zfs-emu p2z_bench; } \
			>"$log" 2>&1; then
			tail -n 20 "$log" >&2
			die "build failed (full log: $log)"
		fi
	fi
	PO2ZFS=$BUILD/po2zfs
	EMU=$BUILD/po2zfs-emu
	P2ZB=$BUILD/p2z_bench
	local f
	for f in "$PO2ZFS" "$EMU" "$P2ZB"; do
		[ -x "$f" ] || die "$f is missing (configure with -DP2Z_BENCH=ON)"
	done
	NULLFS=$BUILD/p2z_nullfs
	# shellcheck disable=SC2046 # pkg-config's flags are words
	gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
		$(pkg-config --cflags fuse3) -o "$NULLFS" \
		"$TOP/contrib/bench/p2z_nullfs.c" $(pkg-config --libs fuse3) \
		-lpthread >>"$log" 2>&1 || die "p2z_nullfs did not build (log: $log)"
	BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt")
}

# ------------------------------------------------------------ images, mounts

is_mounted()
{
	awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo
}

# reap_daemon KEY: the daemon exits once unmounted; give it 10 s, then
# stop it (it is our own child). Say so if it did not exit cleanly.
reap_daemon()
{
	local pid=${DAEMON[$1]} i rc=0

	for ((i = 0; i < 500; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "bench: po2zfs $pid still running after unmount: stopping it" >&2
		kill -TERM "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || rc=$?
	if [ "$rc" != 0 ]; then
		echo "bench: po2zfs ($1) exited with status $rc: $(tail -n 3 "$WORK/daemon-$1.log" | tr '\n' ' ')" >&2
	fi
	return 0
}

cleanup()
{
	local g

	trap - EXIT INT TERM
	for g in "${!MNT[@]}"; do
		if is_mounted "${MNT[$g]}"; then
			fusermount3 -u "${MNT[$g]}" 2>/dev/null ||
				fusermount3 -u -z "${MNT[$g]}" 2>/dev/null || true
		fi
		[ -n "${DAEMON[$g]:-}" ] && reap_daemon "$g"
	done
	if [ -n "$WORK" ]; then
		if [ "$KEEP" = 1 ]; then
			echo "bench: kept $WORK"
		else
			rm -rf "$WORK"
		fi
	fi
}

# mount_image KEY IMAGE: mount IMAGE on $WORK/mnt-KEY with the daemon in
# the foreground (backgrounded here) and wait for it, bounded. KEY null:
# p2z_nullfs instead (no image).
mount_image()
{
	local k=$1 i

	MNT[$k]=$WORK/mnt-$k
	mkdir "${MNT[$k]}"
	if [ "$k" = null ]; then
		"$NULLFS" "${MNT[$k]}" >"$WORK/daemon-$k.log" 2>&1 &
	elif [ "$k" = base ]; then
		"$BASE/po2zfs" "$WORK/$2" "${MNT[$k]}" -f "${MOUNT_OPTS[@]}" >"$WORK/daemon-$k.log" 2>&1 &
	else
		"$PO2ZFS" "$WORK/$2" "${MNT[$k]}" -f "${MOUNT_OPTS[@]}" >"$WORK/daemon-$k.log" 2>&1 &
	fi
	DAEMON[$k]=$!
	for ((i = 0; i < 500; i++)); do
		is_mounted "${MNT[$k]}" && return 0
		kill -0 "${DAEMON[$k]}" 2>/dev/null ||
			die "po2zfs exited before mounting $2: $(tail -n 3 "$WORK/daemon-$k.log")"
		sleep 0.02
	done
	die "${MNT[$k]} not mounted after 10 s"
}

# create_image NAME GEOM
create_image()
{
	"$EMU" create "$WORK/$1" --zone-size "${ZSIZE[$2]}" --zone-cap "${ZCAP[$2]}" \
		--zones "$NR_ZONES" --lba-size "$LBA" >/dev/null ||
		die "po2zfs-emu create $1 failed"
}

# Images and mounts. Part 3 has its own: writers leave the daemon with more
# FUSE worker threads (libfuse keeps them), which slows its single-stream
# writes, and parts 1 and 2 must compare daemons that served the same load.
setup()
{
	local g

	WORK=$(mktemp -d "$DIR/p2z-bench.XXXXXX")
	FSTYPE=$(df --output=fstype "$WORK" | tail -n 1)
	FSSRC=$(df --output=source "$WORK" | tail -n 1)
	if [ "$FSTYPE" = tmpfs ]; then
		echo "bench: warning: $WORK is on tmpfs: the emulator's file I/O never reaches a disk" >&2
	fi
	if [ "$ODIRECT" = 1 ] && ! dd if=/dev/zero of="$WORK/odirect" bs="$LBA" \
		count=1 oflag=direct status=none 2>/dev/null; then
		die "$WORK ($FSTYPE) takes no $LBA-byte O_DIRECT writes: P2Z_BENCH_ODIRECT=0, or another P2Z_BENCH_DIR"
	fi
	rm -f "$WORK/odirect"
	for g in "${GEOMS[@]}"; do
		create_image "$g-direct.img" "$g"
		create_image "$g-mount.img" "$g"
		mount_image "$g" "$g-mount.img"
	done
	create_image npo2-writers-direct.img npo2
	create_image npo2-writers-mount.img npo2
	mount_image wr npo2-writers-mount.img
	mount_image null ""
	if ((${#QD_LIST[@]})); then
		QD_KEYS=(npo2 null)
		if [ -n "$BASE" ]; then
			create_image npo2-base-mount.img npo2
			mount_image base npo2-base-mount.img
			QD_KEYS+=(base)
		fi
		qd_prep
	fi
	MAX_APPEND=$(getfattr --only-values -n user.dev.max_append "${MNT[npo2]}" 2>/dev/null || echo '?')
}

# ------------------------------------------------------------ measurements

# record KEY VALUE
record()
{
	VALS[$1]="${VALS[$1]:-} $2"
}

# daemon_cpu KEY: CPU seconds the daemon has used so far, user and system,
# threads that exited included: the daemon keeps only a few idle FUSE
# workers, so a sum over the live threads (task/*/sched) would go down
# after a burst. /proc/PID/stat counts in clock ticks (utime, stime: fields
# 14 and 15, i.e. 12 and 13 after the command name, which may hold spaces).
daemon_cpu()
{
	local st

	st=$(cat "/proc/${DAEMON[$1]}/stat" 2>/dev/null) || { echo 0; return; }
	awk -v hz="$CLK_TCK" '{ printf "%.6f", ($12 + $13) / hz }' <<<"${st##*) }"
}

# cpu_account KEY GEOM CPU_BEFORE SECS: add the daemon's CPU time and the
# wall time of one measurement, for the CPU share column.
cpu_account()
{
	local now

	now=$(daemon_cpu "$2")
	CPU[$1]=$(awk -v a="${CPU[$1]:-0}" -v b="$now" -v c="$3" 'BEGIN { print a + b - c }')
	WALL[$1]=$(awk -v a="${WALL[$1]:-0}" -v b="$4" 'BEGIN { print a + b }')
}

# prefault N: make N bytes of fresh page cache cheap to allocate. In a VM
# with free page reporting (Firecracker, virtio-balloon), pages free for a
# couple of seconds go back to the host and the next write touching them
# runs at a tenth of its speed, whatever the stack above: writing and
# deleting a scratch file right before a timed write takes that hit outside
# the timing, for every variant alike. P2Z_BENCH_PREFAULT=0 turns it off.
prefault()
{
	local f=$WORK/prefault.dat

	[ "$PREFAULT" = 1 ] || return 0
	dd if=/dev/zero of="$f" bs=1M count=$(($1 / 1048576 + 16)) status=none ||
		die "dd to $f failed"
	rm -f "$f"
}

# dd_secs ERRFILE [BYTES]: the seconds dd reported; checks it moved BYTES
# (default $BYTES).
dd_secs()
{
	awk -v want="${2:-$BYTES}" -v f="$1" '
		/ copied, / {
			for (i = 1; i <= NF; i++)
				if ($i == "copied,") { s = $(i + 1); b = $1 }
		}
		END {
			if (b != want) {
				printf "dd moved %s bytes, not %s (%s)\n", b, want, f > "/dev/stderr"
				exit 1
			}
			print s
		}' "$1"
}

# p2z_mibs OUTPUT, p2z_secs OUTPUT: fields of a p2z_bench line
p2z_mibs()
{
	sed -n 's/.* mib_s=\([0-9.]*\).*/\1/p' <<<"$1"
}

p2z_secs()
{
	sed -n 's/.* secs=\([0-9.]*\).*/\1/p' <<<"$1"
}

mibs_of()
{
	awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", b / s / 1048576 }'
}

# reset_mount GEOM N: reset zones 0..N-1 through the mount (not timed)
reset_mount()
{
	local i

	for ((i = 0; i < $2; i++)); do
		truncate -s 0 "${MNT[$1]}/seq/$i"
	done
}

# Host file: dd into a plain file in the work directory, read it back.
measure_host()
{
	local err=$WORK/dd.err f=$WORK/host.dat secs

	rm -f "$f"
	prefault "$BYTES"
	dd if=/dev/zero of="$f" bs="$BS" count="$COUNT" conv="$DD_CONV" \
		${HOST_DIO[0]:+"${HOST_DIO[0]}"} 2>"$err" ||
		die "dd to $f failed: $(tail -n 1 "$err")"
	secs=$(dd_secs "$err")
	record host.w "$(mibs_of "$BYTES" "$secs")"
	dd if="$f" of=/dev/null bs="$BS" count="$COUNT" \
		${HOST_DIO[1]:+"${HOST_DIO[1]}"} 2>"$err" ||
		die "dd from $f failed: $(tail -n 1 "$err")"
	secs=$(dd_secs "$err")
	record host.r "$(mibs_of "$BYTES" "$secs")"
}

# measure_direct GEOM [SIZE]: zone append then read of zone 0, emu called
# directly, in calls of SIZE (default $BS); keys GEOM.direct.w|r, with
# .SIZE appended for part 4.
measure_direct()
{
	local g=$1 bs=${2:-$BS} img=$WORK/$1-direct.img out k=$1.direct n

	n=${SZ_BYTES[$bs]}
	[ -n "${2:-}" ] && k=$k.$bs
	prefault "$n"
	out=$("$P2ZB" -o append -s "$bs" -n "$n" $FL $DIO "$img") ||
		die "p2z_bench append on $img failed"
	record "$k.w" "$(p2z_mibs "$out")"
	out=$("$P2ZB" -o read -s "$bs" -n "$n" $DIO "$img") ||
		die "p2z_bench read on $img failed"
	record "$k.r" "$(p2z_mibs "$out")"
}

# measure_mount GEOM [SIZE]: append with dd then read back with O_DIRECT,
# seq/0, in blocks of SIZE (default $BS); keys as measure_direct's
measure_mount()
{
	local g=$1 bs=${2:-$BS} f=${MNT[$1]}/seq/0 err=$WORK/dd.err t0 secs size
	local k=$1.mount n count

	n=${SZ_BYTES[$bs]}
	count=${SZ_COUNT[$bs]}
	[ -n "${2:-}" ] && k=$k.$bs
	reset_mount "$g" 1
	prefault "$n"
	t0=$(daemon_cpu "$g")
	dd if=/dev/zero of="$f" oflag=append conv="$DD_CONV" bs="$bs" \
		count="$count" 2>"$err" || die "dd to $f failed: $(tail -n 1 "$err")"
	secs=$(dd_secs "$err" "$n")
	cpu_account "$k.w" "$g" "$t0" "$secs"
	record "$k.w" "$(mibs_of "$n" "$secs")"
	size=$(stat -c %s "$f")
	[ "$size" = "$n" ] || die "$f: size $size after writing $n bytes"
	t0=$(daemon_cpu "$g")
	dd if="$f" of=/dev/null iflag=direct bs="$bs" count="$count" 2>"$err" ||
		die "dd from $f failed: $(tail -n 1 "$err")"
	secs=$(dd_secs "$err" "$n")
	cpu_account "$k.r" "$g" "$t0" "$secs"
	record "$k.r" "$(mibs_of "$n" "$secs")"
}

# FUSE alone: the mount's dd commands on p2z_nullfs (writes dropped, reads
# zeros), what any FUSE filesystem costs before it does any work; keys
# null.mount.w|r
measure_null()
{
	measure_mount null
}

# Part 4, one I/O size: the npo2 images of part 1, mount then direct (the
# round's order reverses every other round, as for the other variants)
measure_size_mount()
{
	measure_mount npo2 "$1"
}

measure_size_direct()
{
	measure_direct npo2 "$1"
}

# measure_writers_mount N: N threads of p2z_bench --files, each appending
# to its own zone file of the writers' npo2 mount: the harness and clock of the
# direct runs (N dd processes cannot be started together: spawning one
# takes 1-25 ms on a busy 2-CPU machine, as long as the I/O itself).
measure_writers_mount()
{
	local n=$1 i cpu0 out files=() size

	for ((i = 0; i < n; i++)); do
		files+=("${MNT[wr]}/seq/$i")
	done
	reset_mount wr "$n"
	prefault $((n * BYTES))
	cpu0=$(daemon_cpu wr)
	out=$("$P2ZB" -F -N -o append -s "$BS" -n "${MIB}M" $FL "${files[@]}") ||
		die "p2z_bench --files with $n writers failed"
	cpu_account "w$n.mount" wr "$cpu0" "$(p2z_secs "$out")"
	for ((i = 0; i < n; i++)); do
		size=$(stat -c %s "${files[$i]}")
		[ "$size" = "$BYTES" ] || die "${files[$i]}: size $size after writing $BYTES bytes"
	done
	record "w$n.mount" "$(p2z_mibs "$out")"
}

# measure_writers_direct N: N threads of p2z_bench, zones 0..N-1
measure_writers_direct()
{
	local n=$1 out

	prefault $((n * BYTES))
	out=$("$P2ZB" -o append -t "$n" -s "$BS" -n "${MIB}M" $FL $DIO "$WORK/npo2-writers-direct.img") ||
		die "p2z_bench with $n threads failed"
	record "w$n.direct" "$(p2z_mibs "$out")"
}

# Part 6: QD_MIB MiB in seq/1 of the npo2 mount (and the base build's),
# written once; p2z_nullfs's seq/1 truncated to that size (reads zeros)
qd_prep()
{
	local k f

	for k in "${QD_KEYS[@]}"; do
		f=${MNT[$k]}/seq/1
		truncate -s 0 "$f"
		if [ "$k" = null ]; then
			truncate -s "${QD_MIB}M" "$f"
		else
			dd if=/dev/zero of="$f" oflag=append conv=notrunc bs=1M \
				count="$QD_MIB" status=none || die "dd to $f failed"
		fi
	done
}

# measure_qd KEY DEPTH: fio randread 4k with io_uring at DEPTH on seq/1 of
# mount KEY (npo2, null, base), QD_SECS seconds; key qdDEPTH.KEY
measure_qd()
{
	local k=$1 d=$2 out=$WORK/fio-qd.json mibs

	fio --name=qd --filename="${MNT[$k]}/seq/1" --rw=randread --bs=4k \
		--direct=1 --ioengine=io_uring --iodepth="$d" --size="${QD_MIB}M" \
		--time_based --runtime="$QD_SECS" --norandommap --randrepeat=0 \
		--output-format=json --output="$out" >"$WORK/fio-qd.err" 2>&1 ||
		die "fio QD$d on ${MNT[$k]}/seq/1 failed: $(tail -n 1 "$WORK/fio-qd.err")"
	mibs=$(awk '/"read" : \{/ { r = 1 } r && /"bw_bytes" :/ {
		printf "%.1f", $3 / 1048576; exit }' "$out")
	[ -n "$mibs" ] || die "fio QD$d on ${MNT[$k]}/seq/1: no read figure"
	record "qd$d.$k" "$mibs"
}

# Part 5: `ls -l seq/` of a device of LS_ZONES zones, right after the mount
# (nothing cached by the kernel) and once more; once, after the rounds: it
# measures lookups and attributes, not I/O.
measure_ls()
{
	local m t0 t1 t2 t3 n

	"$EMU" create "$WORK/ls.img" --zone-size 1M --zones "$LS_ZONES" \
		--lba-size "$LBA" >/dev/null || die "po2zfs-emu create ls.img failed"
	t0=$EPOCHREALTIME
	mount_image ls ls.img
	t1=$EPOCHREALTIME
	m=${MNT[ls]}
	ls -l "$m/seq" >"$WORK/ls.out" || die "ls -l $m/seq failed"
	t2=$EPOCHREALTIME
	ls -l "$m/seq" >"$WORK/ls.out" || die "ls -l $m/seq failed"
	t3=$EPOCHREALTIME
	n=$(grep -c '^-' "$WORK/ls.out")
	[ "$n" = "$LS_ZONES" ] || die "ls -l $m/seq listed $n files, not $LS_ZONES"
	LS_MOUNT=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	LS_FIRST=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", b - a }')
	LS_AGAIN=$(awk -v a="$t2" -v b="$t3" 'BEGIN { printf "%.2f", b - a }')
	LS_RSS=$(awk '$1 == "VmRSS:" { printf "%.0f MB", $2 / 1024 }' "/proc/${DAEMON[ls]}/status")
	fusermount3 -u "$m" || die "fusermount3 -u $m failed"
	reap_daemon ls
	unset 'MNT[ls]' 'DAEMON[ls]'
	rm -f "$WORK/ls.img" "$WORK/ls.out"
}

# One round: every variant once; reversed order on odd rounds (A B .. B A).
run_round()
{
	local r=$1 g w i steps=(host null) step=()

	for g in "${GEOMS[@]}"; do
		steps+=("direct $g" "mount $g")
	done
	for w in "${WRITER_LIST[@]}"; do
		steps+=("writers_mount $w" "writers_direct $w")
	done
	for w in "${SIZE_LIST[@]}"; do
		steps+=("size_mount $w" "size_direct $w")
	done
	for w in "${QD_LIST[@]}"; do
		for g in "${QD_KEYS[@]}"; do
			steps+=("qd $g $w")
		done
	done
	for ((i = 0; i < ${#steps[@]}; i++)); do
		if ((r % 2)); then
			read -ra step <<<"${steps[${#steps[@]} - 1 - i]}"
		else
			read -ra step <<<"${steps[$i]}"
		fi
		"measure_${step[0]}" "${step[@]:1}"
	done
}

# ------------------------------------------------------------ report

median()
{
	tr ' ' '\n' | grep . | sort -g | awk '
		{ a[NR] = $1 }
		END {
			if (!NR) { print "-"; exit }
			if (NR % 2) printf "%.1f\n", a[(NR + 1) / 2]
			else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2
		}'
}

# spread KEY: min-max of the rounds
spread()
{
	tr ' ' '\n' <<<"${VALS[$1]}" | grep . | sort -g |
		awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f-%.0f", lo, hi }'
}

# paired A B: "a b" lines, the values of A and B round by round
paired()
{
	paste -d ' ' <(tr ' ' '\n' <<<"${VALS[$1]}" | grep .) \
		<(tr ' ' '\n' <<<"${VALS[$2]}" | grep .)
}

# ratio A B: median over rounds of A/B, paired round by round
ratio()
{
	paired "$1" "$2" | awk '$2 > 0 { print $1 / $2 }' | median_ratio
}

# bound A B: median over rounds of A/(A+B), paired round by round: the
# throughput, relative to B's, of B's work done after A's, one after the other
bound()
{
	paired "$1" "$2" | awk '$1 + $2 > 0 { print $1 / ($1 + $2) }' | median_ratio
}

median_ratio()
{
	sort -g | awk '
		{ a[NR] = $1 }
		END {
			if (!NR) { print "-"; exit }
			if (NR % 2) m = a[(NR + 1) / 2]
			else m = (a[NR / 2] + a[NR / 2 + 1]) / 2
			printf "%.2f\n", m
		}'
}

# cpu_share KEY: daemon CPU time / wall time over all rounds, percent
cpu_share()
{
	awk -v c="${CPU[$1]:-0}" -v w="${WALL[$1]:-0}" \
		'BEGIN { if (w > 0) printf "%.0f%%", 100 * c / w; else print "-" }'
}

row()
{
	local label=$1 w=$2 r=$3 cw=${4:-} cr=${5:-}

	printf '  %-34s %9s %-11s %9s %-11s %5s %5s\n' "$label" \
		"$(median <<<"${VALS[$w]}")" "($(spread "$w"))" \
		"$(median <<<"${VALS[$r]}")" "($(spread "$r"))" "$cw" "$cr"
}

# size_row SIZE MOUNT_KEY DIRECT_KEY: one line of the I/O size table
size_row()
{
	printf '  %-6s %6s %9s %9s %6s %9s %9s %6s %5s %5s\n' "$1" \
		$((SZ_BYTES[$1] / 1048576)) \
		"$(median <<<"${VALS[$2.w]}")" "$(median <<<"${VALS[$3.w]}")" \
		"$(ratio "$2.w" "$3.w")" \
		"$(median <<<"${VALS[$2.r]}")" "$(median <<<"${VALS[$3.r]}")" \
		"$(ratio "$2.r" "$3.r")" "$(cpu_share "$2.w")" "$(cpu_share "$2.r")"
}

# part 6's table: MiB/s per depth; the last depth against the first
qd_report()
{
	local d d1=${QD_LIST[0]} dn=${QD_LIST[-1]} b=

	echo
	echo "  random reads 4k, fio io_uring, direct, ${QD_SECS} s over seq/1 (${QD_MIB} MiB) of the npo2 mount ${MOUNT_OPTS[*]}, MiB/s"
	[ -n "$BASE" ] && b=yes
	printf '  %-5s %9s %-11s %9s %-11s%s\n' QD mount "" null "" \
		"${b:+$(printf ' %9s %-11s %7s' base "" "new / base")}"
	for d in "${QD_LIST[@]}"; do
		printf '  %-5s %9s %-11s %9s %-11s%s\n' "$d" \
			"$(median <<<"${VALS[qd$d.npo2]}")" "($(spread "qd$d.npo2"))" \
			"$(median <<<"${VALS[qd$d.null]}")" "($(spread "qd$d.null"))" \
			"${b:+$(printf ' %9s %-11s %7s' "$(median <<<"${VALS[qd$d.base]}")" \
				"($(spread "qd$d.base"))" "$(ratio "qd$d.npo2" "qd$d.base")")}"
	done
	[ "$d1" != "$dn" ] || return 0
	printf '  QD%s / QD%s (median of per-round ratios; target >= 3 for the mount): mount %s, null %s%s\n' \
		"$dn" "$d1" "$(ratio "qd$dn.npo2" "qd$d1.npo2")" \
		"$(ratio "qd$dn.null" "qd$d1.null")" \
		"${b:+, base $(ratio "qd$dn.base" "qd$d1.base")}"
}

report()
{
	local g w w1 lbl

	echo
	echo "po2zfs bench: $ROUNDS rounds (+$WARMUP warm-up), $MIB MiB per zone, I/O size $BS, LBA $LBA, flush $FLUSH, prefault $PREFAULT"
	echo "  images: $WORK ($FSTYPE on $FSSRC), $([ "$ODIRECT" = 1 ] && echo "data with O_DIRECT (-o direct, p2z_bench --direct)" || echo "data in the host's page cache")"
	echo "  build $BUILD ($BUILD_TYPE); $(nproc) CPUs; emu max append $MAX_APPEND"
	echo "  MiB/s: median (min-max over rounds); dmn = daemon CPU time / wall time"
	echo
	printf '  %-34s %21s %21s %5s %5s\n' "" "write (append)" "read" "dmn.w" "dmn.r"
	row "host file, dd$([ "$ODIRECT" = 1 ] && echo ' O_DIRECT'), no po2zfs" host.w host.r
	row "FUSE alone (p2z_nullfs), dd" null.mount.w null.mount.r \
		"$(cpu_share null.mount.w)" "$(cpu_share null.mount.r)"
	for g in "${GEOMS[@]}"; do
		lbl="$g ${ZSIZE[$g]}/${ZCAP[$g]}"
		row "$lbl direct (p2z_bench)" "$g.direct.w" "$g.direct.r"
		row "$lbl mount (dd)" "$g.mount.w" "$g.mount.r" \
			"$(cpu_share "$g.mount.w")" "$(cpu_share "$g.mount.r")"
	done
	echo
	echo "  ratios (median of per-round ratios)       write   read"
	for g in "${GEOMS[@]}"; do
		printf '  %-40s %6s %6s\n' "mount / direct, $g" \
			"$(ratio "$g.mount.w" "$g.direct.w")" "$(ratio "$g.mount.r" "$g.direct.r")"
	done
	for g in "${GEOMS[@]}"; do
		printf '  %-40s %6s %6s\n' "bound: FUSE, then direct, $g" \
			"$(bound null.mount.w "$g.direct.w")" \
			"$(bound null.mount.r "$g.direct.r")"
	done
	printf '  %-40s %6s %6s\n' "npo2 / po2, through the mount" \
		"$(ratio npo2.mount.w po2.mount.w)" "$(ratio npo2.mount.r po2.mount.r)"
	printf '  %-40s %6s %6s\n' "npo2 / po2, direct" \
		"$(ratio npo2.direct.w po2.direct.w)" "$(ratio npo2.direct.r po2.direct.r)"
	printf '  %-40s %6s %6s\n' "direct npo2 / host file" \
		"$(ratio npo2.direct.w host.w)" "$(ratio npo2.direct.r host.r)"
	echo
	echo "  writers on separate zones, npo2 (own images and daemon), aggregate write MiB/s"
	printf '  %-7s %9s %-11s %9s %-11s %6s %6s %6s %5s\n' writers mount "" \
		direct "" "m / d" "m N/1" "d N/1" dmn
	w1=${WRITER_LIST[0]}
	for w in "${WRITER_LIST[@]}"; do
		printf '  %-7s %9s %-11s %9s %-11s %6s %6s %6s %5s\n' "$w" \
			"$(median <<<"${VALS[w$w.mount]}")" "($(spread "w$w.mount"))" \
			"$(median <<<"${VALS[w$w.direct]}")" "($(spread "w$w.direct"))" \
			"$(ratio "w$w.mount" "w$w.direct")" \
			"$(ratio "w$w.mount" "w$w1.mount")" \
			"$(ratio "w$w.direct" "w$w1.direct")" "$(cpu_share "w$w.mount")"
	done
	if ((${#SIZE_LIST[@]})); then
		echo
		echo "  I/O sizes, npo2 (images of part 1), MiB/s medians; m / d = mount / direct"
		printf '  %-6s %6s %9s %9s %6s %9s %9s %6s %5s %5s\n' size MiB \
			mount.w direct.w "m / d" mount.r direct.r "m / d" dmn.w dmn.r
		size_row "$BS" npo2.mount npo2.direct
		for w in "${SIZE_LIST[@]}"; do
			size_row "$w" "npo2.mount.$w" "npo2.direct.$w"
		done
	fi
	if ((${#QD_LIST[@]})); then
		qd_report
	fi
	if [ "$LS" = 1 ]; then
		echo
		echo "  ls -l seq/ of $LS_ZONES zones (1M each): first ${LS_FIRST}s, again ${LS_AGAIN}s (mount ${LS_MOUNT}s, daemon RSS $LS_RSS)"
	fi
	echo
	echo "command:"
	echo "  cd $TOP && P2Z_BENCH_ROUNDS=$ROUNDS P2Z_BENCH_WARMUP=$WARMUP P2Z_BENCH_MIB=$MIB P2Z_BENCH_BS=$BS \\"
	echo "    P2Z_BENCH_WRITERS='$WRITERS' P2Z_BENCH_LBA=$LBA P2Z_BENCH_FLUSH=$FLUSH P2Z_BENCH_DIR=$DIR \\"
	echo "    P2Z_BENCH_ODIRECT=$ODIRECT P2Z_BENCH_SIZES='$SIZES' P2Z_BENCH_SIZE_MIB=$SIZE_MIB P2Z_BENCH_LS=$LS P2Z_BENCH_LS_ZONES=$LS_ZONES \\"
	echo "    P2Z_BENCH_QD='$QDS' P2Z_BENCH_QD_SECS=$QD_SECS P2Z_BENCH_QD_MIB=$QD_MIB${BASE:+ P2Z_BENCH_BASE=$BASE} contrib/bench/bench.sh"
	echo "each measurement:"
	echo "  po2zfs-emu create IMG --zone-size 96M|64M --zone-cap 80M|48M --zones $NR_ZONES --lba-size $LBA"
	echo "    IMG: {npo2,po2}-{direct,mount}.img, npo2-writers-{direct,mount}.img"
	echo "  po2zfs *-mount.img MNT -f ${MOUNT_OPTS[*]}  (3 daemons: npo2, po2, npo2 writers)"
	echo "  null:   p2z_nullfs MNT; the mount's dd commands on MNT/seq/0 (bound = null / (null + direct))"
	echo "  direct: p2z_bench -o append|read -s $BS -n ${MIB}M [-t N]$([ "$FLUSH" = 1 ] && echo ' --flush') $DIO G-direct.img"
	echo "  sizes:  the same with -s SIZE -n ${SIZE_MIB}M, dd bs=SIZE, on npo2-{direct,mount}.img"
	echo "  qd:     fio --name=qd --filename=MNT/seq/1 --rw=randread --bs=4k --direct=1 --ioengine=io_uring --iodepth=QD --size=${QD_MIB}M --time_based --runtime=$QD_SECS --norandommap --randrepeat=0 (QD: ${QDS:-none}; MNT: npo2, null${BASE:+, base $BASE/po2zfs on its own npo2 image})"
	echo "  ls:     po2zfs-emu create ls.img --zone-size 1M --zones $LS_ZONES; po2zfs ls.img MNT -f ${MOUNT_OPTS[*]}; ls -l MNT/seq > FILE; twice"
	echo "  mount:  truncate -s 0 MNT/seq/I; dd if=/dev/zero of=MNT/seq/I oflag=append conv=$DD_CONV bs=$BS count=$COUNT"
	echo "          dd if=MNT/seq/0 of=/dev/null iflag=direct bs=$BS count=$COUNT"
	echo "  writers: p2z_bench -F -N -o append -s $BS -n ${MIB}M$([ "$FLUSH" = 1 ] && echo ' --flush') MNT/seq/0 .. MNT/seq/N-1 (after truncate -s 0)"
	echo "  timing: p2z_bench's own clock (I/O calls only); dd's reported time (copy loop only)"
}

# ------------------------------------------------------------ main

main()
{
	local r t0

	check_env
	build
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	setup
	t0=$EPOCHREALTIME
	for ((r = 0; r < WARMUP; r++)); do
		echo "bench: warm-up round $((r + 1))/$WARMUP"
		run_round "$r"
	done
	VALS=() CPU=() WALL=()
	for ((r = 0; r < ROUNDS; r++)); do
		echo "bench: round $((r + 1))/$ROUNDS"
		run_round "$r"
	done
	[ "$LS" = 1 ] && measure_ls
	report
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "\nbench: measured in %.0f s\n", b - a }'
}

main "$@"
