#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Guest benchmark: the kernel's zonefs against po2zfs on NVMe ZNS
# namespaces that QEMU emulates, in one boot of a Debian kernel (TCG,
# 2 vCPUs), with raw io_uring passthrough alongside, so the daemon's own
# cost shows, and a FUSE filesystem that does nothing (p2z_nullfs), so
# FUSE's own cost shows. Run as root on Debian 12, from anywhere:
#
#   contrib/bench/guest-bench.sh
#
# Prints a markdown table on stdout (progress goes to stderr) and keeps the
# fio JSON output of every job, the daemon logs and the console log in the
# work dir. A benchmark only: it never fails on a figure, only when the
# guest does not produce the table.
#
# Environment:
#   P2Z_BUILD          build tree whose po2zfs is measured (default: build
#                      one in the work dir)
#   P2Z_BENCH_ROUNDS   rounds (default 3)
#   P2Z_BENCH_SIZES    I/O sizes (default "1M 128K 4K")
#   P2Z_BENCH_MIB      MiB per job (default 64, at most 80)
#   P2Z_BENCH_RAW      0: no raw passthrough jobs (default 1)
#   P2Z_BENCH_PARTS    which parts run (default "qd1 conc blk"): qd1 the
#                      QD1 jobs per size, conc the concurrency jobs (QD16,
#                      4 readers, 4 appenders), blk po2zfs-blk against the
#                      kernel's block device and raw passthrough, with
#                      the ublk bound (po2zfs-blk over an emulated image
#                      on the guest's tmpfs), the kernel's zoned null_blk
#                      and, with P2Z_BENCH_PROFILE=1 and perf on the
#                      host, a profile of each job, and of the FUSE
#                      daemons' QD16 reader, 4 appenders, 4 buffered
#                      readers and the whole guest's 4 direct readers (off by
#                      default: perf under TCG once crashed a guest,
#                      int3 oops)
#   P2Z_BENCH_SECS     seconds per timed reader job of conc and blk
#                      (default 4)
#   P2Z_BENCH_CONC_MIB MiB per zone of conc and blk (default 32)
#   P2Z_BENCH_BASE     a second build tree (with po2zfs, po2zfs-blk)
#                      measured beside P2Z_BUILD's in the same boot, on
#                      namespaces of its own, interleaved: the A/B table
#   P2Z_BENCH_OPTS     po2zfs -o options for both mounts (default none)
#   P2Z_BENCH_KERNEL   Debian kernel (default 6.12)
#   P2Z_BENCH_WORK     work dir (default /tmp/po2zfs-gbench)
#   P2Z_BENCH_IMAGES   where the namespace images go (default /dev/shm,
#                      a tmpfs; deleted on exit)
#   P2Z_BENCH_TIMEOUT  seconds for the guest (default 3600); after 3/4
#                      of it the guest starts no more jobs, and rounds
#                      that would end later are left out (the table
#                      says so)
#   P2Z_VM_CACHE       where kernel packages are kept between runs
#                      (default /var/cache/po2zfs-vm)
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
vm=$top/tests/vm
bench=$top/contrib/bench
tag=bench
cache=${P2Z_VM_CACHE:-/var/cache/po2zfs-vm}
work=${P2Z_BENCH_WORK:-/tmp/po2zfs-gbench}
tmo=${P2Z_BENCH_TIMEOUT:-3600}
kernel=${P2Z_BENCH_KERNEL:-6.12}
images=${P2Z_BENCH_IMAGES:-/dev/shm}
rounds=${P2Z_BENCH_ROUNDS:-3}
sizes=${P2Z_BENCH_SIZES:-1M 128K 4K}
mib=${P2Z_BENCH_MIB:-64}
raw=${P2Z_BENCH_RAW:-1}
parts=${P2Z_BENCH_PARTS:-qd1 conc blk}
secs=${P2Z_BENCH_SECS:-4}
cmib=${P2Z_BENCH_CONC_MIB:-32}
base=${P2Z_BENCH_BASE:-}
nsz="96M 128M 128M 96M 128M"

case "$*" in
-h | --help) sed -n '4,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
?*) echo "usage: $0 (knobs in the environment, see --help)" >&2; exit 2 ;;
esac
# shellcheck source-path=SCRIPTDIR source=../../tests/vm/lib.sh
. "$vm/lib.sh"

[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "P2Z_BENCH_ROUNDS: not a count: $rounds"
if ! [[ $mib =~ ^[1-9][0-9]*$ ]] || [ "$mib" -gt 80 ]; then
	die "P2Z_BENCH_MIB: 1 to 80 (the zone capacity), not $mib"
fi
[[ $secs =~ ^[1-9][0-9]*$ ]] || die "P2Z_BENCH_SECS: not a count: $secs"
if ! [[ $cmib =~ ^[1-9][0-9]*$ ]] || [ "$cmib" -gt 80 ]; then
	die "P2Z_BENCH_CONC_MIB: 1 to 80 (the zone capacity), not $cmib"
fi
for s in $parts; do
	case $s in qd1 | conc | blk) ;; *) die "P2Z_BENCH_PARTS: no part $s" ;; esac
done
if [ -n "$base" ]; then
	[ -x "$base/po2zfs" ] || die "P2Z_BENCH_BASE: no po2zfs in $base"
	nsz="$nsz 96M 128M 96M"
fi
for s in $sizes; do
	if ! [[ $s =~ ^[1-9][0-9]*[KM]$ ]] ||
		[ $((mib * 1024 * 1024 % $(numfmt --from=iec "$s"))) != 0 ]; then
		die "P2Z_BENCH_SIZES: $s is not a size like 4K or 1M dividing $mib MiB"
	fi
done

# One controller, ZNS namespaces of 16 zones, 4 KiB LBAs, 80 MiB capacity
# (nsid order, $nsz): npo2 96 MiB zones (po2zfs), po2 128 MiB (zonefs),
# po2 (po2zfs), npo2 (po2zfs-blk), po2 (the kernel's block device); with
# a base build three more: npo2, po2 (its po2zfs), npo2 (its
# po2zfs-blk). No open or active limits; appends up to the transfer limit
# (ZASL = MDTS).
bench_nvme_args() { # image dir
	local dir=$1 n=0 zs

	echo -device nvme,serial=po2zfsbench,id=nvme0
	for zs in $nsz; do
		n=$((n + 1))
		truncate -s $(($(numfmt --from=iec "$zs") * 16)) "$dir/ns$n.img"
		echo -drive "file=$dir/ns$n.img,id=ns$n,format=raw,if=none"
		echo -device "nvme-ns,drive=ns$n,bus=nvme0,nsid=$n,logical_block_size=4096,physical_block_size=4096,zoned=true,zoned.zone_size=$zs,zoned.zone_capacity=80M"
	done
}

# "<cpu model>, <n> CPUs, <memory>, Linux <release>; QEMU <version>"
host_info() {
	local cpu mem qv

	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
	mem=$(awk '$1 == "MemTotal:" { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
	qv=$(qemu-system-x86_64 --version | sed -n '1s/.*version \([^ ]*\).*/\1/p')
	echo "${cpu:-unknown CPU}, $(nproc) CPUs, $mem, $(uname -sr); QEMU $qv TCG"
}

# What is measured: "<git describe of $build's source tree now> (<build
# dir>, binary <sha256 prefix>)". The tree may have moved on since the
# build; the hash tells two binaries apart.
source_info() { # [build dir]
	local b=${1:-$build} src d sum

	src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$b/CMakeCache.txt" 2>/dev/null)
	d=$(git -C "${src:-$top}" describe --always --dirty 2>/dev/null)
	sum=$(sha256sum "$b/po2zfs" | cut -c1-12)
	echo "${d:-unknown} ($b, binary $sum)"
}

main() {
	local kroot kver log imgdir root rc b d

	install_host_pkgs
	mkdir -p "$work" || die "cannot create $work"
	build_project
	[ -x "$build/po2zfs" ] || die "no po2zfs in $build"
	build_vm_raw || die "p2z_vm_raw did not build"
	# shellcheck disable=SC2046 # pkg-config's flags are words
	gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
		$(pkg-config --cflags fuse3) -o "$work/bin/p2z_nullfs" \
		"$bench/p2z_nullfs.c" $(pkg-config --libs fuse3) -lpthread ||
		die "p2z_nullfs did not build"
	kroot=$(fetch_kernel "$kernel") || die "no kernel $kernel"
	kver=$(ls "$kroot/lib/modules")

	root=$work/root
	vm_base_root "$root" "$bench/guest-bench-vm.sh"
	cp "$work/bin/p2z_nullfs" "$root/p2z/bin/" || die "no p2z_nullfs"
	copy_libs "$root" "$work/bin/p2z_nullfs"
	# "<guest dir>:<binary>": the base build's go to /p2z/base
	for b in "build:$build/po2zfs-blk" \
		${base:+"base:$base/po2zfs" "base:$base/po2zfs-blk"}; do
		d=$root/p2z/${b%%:*} b=${b#*:}
		[ -x "$b" ] || { say "no $b: its rows stay empty" >&2; continue; }
		mkdir -p "$d" || die "cannot create $d"
		cp "$b" "$d/" || die "cannot copy $b"
		copy_libs "$root" "$b"
	done
	# perf for the blk and conc parts' profiles (where a request's time
	# goes), if the host has it: the guest mounts tracefs for its
	# tracepoints
	if [[ " $parts " == *" blk "* || " $parts " == *" conc "* ]] &&
		[ "${P2Z_BENCH_PROFILE:-0}" = 1 ] && [ -x /usr/bin/perf ]; then
		copy_bins "$root" /usr/bin/perf
	fi
	build_zonefs_sb "$root" || die "no zonefs super block"
	mkdir -p "$images" || die "cannot create $images"
	imgdir=$(mktemp -d "$images/po2zfs-gbench.XXXXXX") ||
		die "cannot create a directory in $images"
	# shellcheck disable=SC2064
	trap "rm -rf '$imgdir'" EXIT
	{
		echo "P2Z_VM_NNS=$(wc -w <<<"$nsz")"
		printf 'BENCH_%s=%q\n' ROUNDS "$rounds" SIZES "$sizes" \
			MIB "$mib" RAW "$raw" OPTS "${P2Z_BENCH_OPTS:-}" \
			PARTS "$parts" SECS "$secs" CMIB "$cmib" \
			BASE "$([ -n "$base" ] && echo 1 || echo 0)" \
			BASE_SOURCE "$([ -z "$base" ] || source_info "$base")" \
			BUDGET $((tmo * 3 / 4)) \
			HOST "$(host_info)" SOURCE "$(source_info)" \
			IMAGES "$(stat -f -c %T "$imgdir")"
	} >"$root/p2z/vm.conf"
	vm_pack "$root" "$work/base.cpio" || die "initramfs did not build"
	mkdir -p "$work/$kver"
	build_modules_cpio "$kroot" "$work/$kver/mods.cpio" nvme fuse zonefs ublk_drv \
		null_blk ||
		die "modules of $kver"
	cat "$work/base.cpio" "$work/$kver/mods.cpio" >"$work/$kver/initrd"

	log=$work/$kver/console.log
	say "booting $kver, $rounds rounds of $parts${base:+, base $base} (log: $log)" >&2
	SECONDS=0
	boot_guest "$kroot" "$work/$kver/initrd" "$log" bench_nvme_args \
		"$imgdir" | grep -av '^P2Z-TABLE' >&2
	rc=${PIPESTATUS[0]}
	say "guest ran ${SECONDS}s, qemu rc $rc; $(vm_results "$log" PASS)" \
		"mounts and fio jobs passed, $(vm_results "$log" FAIL) failed" >&2

	rm -rf "$work/json"
	sed -n '/^P2Z-BENCH-JSON-BEGIN$/,/^P2Z-BENCH-JSON-END$/p' "$log" |
		sed '1d;$d' | base64 -d | tar -C "$work" -xzf - ||
		say "no fio JSON output in the log" >&2
	sed -n 's/^P2Z-TABLE //p' "$log" >"$work/table.md"
	[ -s "$work/table.md" ] || die "the guest printed no table (see $log)"
	cat "$work/table.md"
	say "table: $work/table.md; fio JSON: $work/json/" >&2
}

main
