#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The daemon's cost per request, two builds side by side: system calls
# and CPU time of the po2zfs process (perf stat -p) over fio 4k random
# reads on a zone file of an emu image mounted -o direct: QD1 (psync),
# io_uring QD16, 4 psync readers, 4 buffered psync readers. Rounds interleave the builds.
#
#   contrib/bench/cost.sh OLD_BUILD NEW_BUILD [ROUNDS]    # as root
#
# P2Z_COST_EVENTS: more perf events, e.g. syscalls:sys_enter_epoll_wait,
# printed per request. P2Z_COST_DIR: where the image goes (/var/tmp).
set -u
die() { echo "cost.sh: $*" >&2; exit 1; }
[ $# -ge 2 ] || die "usage: cost.sh OLD_BUILD NEW_BUILD [ROUNDS]"
old=$1 new=$2 rounds=${3:-2}
for b in "$old" "$new"; do
	if [ ! -x "$b/po2zfs" ] || [ ! -x "$b/po2zfs-emu" ]; then
		die "$b: no po2zfs build"
	fi
done
for t in perf fio bc; do
	command -v $t >/dev/null || die "needs $t"
done
dir=$(mktemp -d "${P2Z_COST_DIR:-/var/tmp}/p2zcost.XXXXXX") || exit 1
trap 'umount -q "$dir/m" 2>/dev/null; rm -rf "$dir"' EXIT
mkdir -p "$dir/m"
n=16000
ev=raw_syscalls:sys_enter,task-clock${P2Z_COST_EVENTS:+,$P2Z_COST_EVENTS}

# job TAG NAME PID JOBS fio-args...
job() {
	local tag=$1 name=$2 pid=$3 nj=$4 pp bw sc tc
	shift 4
	perf stat -x, -e "$ev" -p "$pid" -o "$dir/ps" &
	pp=$!
	# perf attaches asynchronously: give it time before the requests
	sleep 0.3
	bw=$(fio --name=r --rw=randread --bs=4k --direct=1 --size=32M \
		--io_size=$((n * 4 / nj))k --numjobs="$nj" \
		--output-format=terse "$@" 2>/dev/null |
		awk -F';' '{s += $7} END {printf "%.1f", s / 1024}')
	kill -INT "$pp"
	wait "$pp" 2>/dev/null
	sc=$(awk -F, '/raw_syscalls/ {print $1}' "$dir/ps")
	tc=$(awk -F, '/task-clock/ {print $1}' "$dir/ps")
	printf '%-4s %-7s syscalls/req %5.2f  cpu_us/req %6.1f  MiB/s %s\n' \
		"$tag" "$name" "$(echo "$sc / $n" | bc -l)" \
		"$(echo "$tc * 1000 / $n" | bc -l)" "$bw"
	[ -z "${P2Z_COST_EVENTS:-}" ] ||
		awk -F, -v n=$n '/syscalls:sys_enter_/ {printf "       %s %.2f\n", $3, $1 / n}' "$dir/ps"
}

# one BUILD TAG
one() {
	local b=$1 tag=$2 img=$dir/img pid
	rm -f "$img"
	"$b/po2zfs-emu" create "$img" --zone-size 96M --zone-cap 80M \
		--zones 8 >/dev/null || die "po2zfs-emu create failed"
	"$b/po2zfs" "$img" "$dir/m" -o direct -f 2>/dev/null &
	pid=$!
	for _ in $(seq 200); do
		mountpoint -q "$dir/m" && break
		kill -0 "$pid" 2>/dev/null || die "$b/po2zfs did not mount"
		sleep 0.05
	done
	mountpoint -q "$dir/m" || die "$b/po2zfs did not mount in 10 s"
	dd if=/dev/urandom of="$dir/m/seq/0" bs=1M count=32 \
		oflag=direct,append conv=notrunc status=none
	job "$tag" qd1 "$pid" 1 --filename="$dir/m/seq/0" --ioengine=psync
	job "$tag" qd16 "$pid" 1 --filename="$dir/m/seq/0" \
		--ioengine=io_uring --iodepth=16
	job "$tag" 4psync "$pid" 4 --filename="$dir/m/seq/0" --ioengine=psync
	job "$tag" 4buf "$pid" 4 --filename="$dir/m/seq/0" --ioengine=psync \
		--direct=0 --invalidate=1
	umount "$dir/m"
	wait "$pid"
}

echo "per request: system calls and CPU time of the daemon, $n fio 4k random reads per job"
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		one "$old" old
		one "$new" new
	else
		one "$new" new
		one "$old" old
	fi
done
