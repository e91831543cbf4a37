#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Device tests in a QEMU guest: po2zfs on NVMe ZNS namespaces emulated by
# QEMU (npo2 and po2 zone sizes), through io_uring passthrough (nvme backend)
# and through the zoned block device (zbd backend), on Debian's 6.1 and 6.12
# kernels. Run as root on Debian 12 from anywhere:
#
#   tests/vm/run.sh [-k 6.1,6.12] [-t SECONDS] [-w WORKDIR]
#
# Environment:
#   P2Z_BUILD       build tree with po2zfs, po2zfs-emu (default: build one
#                   in the work dir)
#   P2Z_VM_KERNELS  kernels to boot, comma separated (default 6.1,6.12)
#   P2Z_VM_CACHE    where kernel packages are kept between runs
#                   (default /var/cache/po2zfs-vm)
#   P2Z_VM_WORK     work dir (default /tmp/po2zfs-vm)
#   P2Z_VM_TIMEOUT  seconds per guest (default 900)
#   P2Z_VM_TESTS    mount tests to run everywhere, e.g. "0001 0101"
#                   (default: all of tests/func on the main configurations,
#                   a quick subset on the others)
#   P2Z_VM_FULL     1: all mount tests on every configuration
#
# Exit: 0 all passed, 1 something failed, 77 QEMU cannot run here (the
# reason is printed).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
vm=$top/tests/vm
kernels=${P2Z_VM_KERNELS:-6.1,6.12}
cache=${P2Z_VM_CACHE:-/var/cache/po2zfs-vm}
work=${P2Z_VM_WORK:-/tmp/po2zfs-vm}
tmo=${P2Z_VM_TIMEOUT:-900}

while getopts "k:t:w:h" o; do
	case $o in
	k) kernels=$OPTARG ;;
	t) tmo=$OPTARG ;;
	w) work=$OPTARG ;;
	*) sed -n '4,/^set -uo/p' "$0" | sed '$d'; exit 2 ;;
	esac
done

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$vm/lib.sh"

# ---- build ----

# The guest's own helpers: a raw passthrough reader (static, independent of
# the project's code), a backend test built from the build's p2z_core
# sources (with its compiler and options, and again under ASan and UBSan),
# and the mount tests' I/O helper.
build_helpers() {
	local cc srcs=() defs=() san='' libs
	local warn=(-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror)

	build_vm_raw || return 1
	if [ ! -s "$build/p2z_core_sources.txt" ]; then
		say "no $build/p2z_core_sources.txt: run cmake on that build again"
		return 1
	fi
	mapfile -t srcs <"$build/p2z_core_sources.txt"
	cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
	grep -q '^P2Z_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" &&
		san=-fsanitize=address,undefined
	grep -q '^P2Z_WITH_NVME:BOOL=ON' "$build/CMakeCache.txt" && defs+=(-DP2Z_HAVE_NVME)
	grep -q '^P2Z_WITH_ZBD:BOOL=ON' "$build/CMakeCache.txt" && defs+=(-DP2Z_HAVE_ZBD)
	libs=$(pkg-config --libs liburing libnvme libzbd) || return 1
	# shellcheck disable=SC2086
	(cd "$top" && "${cc:-gcc}" -O2 -g "${warn[@]}" "${defs[@]}" $san \
		-Iinclude -o "$work/bin/p2z_vm_dev" "$vm/p2z_vm_dev.c" \
		"${srcs[@]}" $libs -lpthread) || return 1
	# shellcheck disable=SC2086
	(cd "$top" && gcc -O1 -g "${warn[@]}" "${defs[@]}" \
		-fsanitize=address,undefined -fno-omit-frame-pointer \
		-fno-sanitize-recover=undefined -Iinclude \
		-o "$work/bin/p2z_vm_dev_asan" "$vm/p2z_vm_dev.c" "${srcs[@]}" \
		$libs -lpthread) || return 1
	if [ -x "$build/tests/p2z_tio" ]; then
		cp "$build/tests/p2z_tio" "$work/bin/p2z_tio"
	else
		gcc -O2 -D_GNU_SOURCE -o "$work/bin/p2z_tio" \
			"$top/tests/func/helpers/p2z_tio.c"
	fi
}

# ---- initramfs ----

# Everything but kernel modules, shared by all kernels.
build_base_cpio() {
	local root=$work/root b

	vm_base_root "$root" "$vm/guest.sh"
	for b in p2z_vm_dev p2z_vm_dev_asan; do
		cp "$work/bin/$b" "$root/p2z/bin/"
		copy_libs "$root" "$work/bin/$b"
	done
	mkdir -p "$root/p2z/build/tests"
	cp "$work/bin/p2z_tio" "$root/p2z/build/tests/"
	copy_libs "$root" "$work/bin/p2z_tio"
	# helpers of the crash (func/1001) and stress (func/1003) tests
	for b in p2z_crash p2z_stress; do
		[ -x "$build/tests/$b" ] || continue
		cp "$build/tests/$b" "$root/p2z/build/tests/"
		copy_libs "$root" "$build/tests/$b"
	done
	cp -a "$top/tests/func" "$root/p2z/tests/"
	printf 'P2Z_VM_TESTS="%s"\nP2Z_VM_FULL=%s\n' "${P2Z_VM_TESTS:-}" \
		"${P2Z_VM_FULL:-0}" >"$root/p2z/vm.conf"
	vm_pack "$root" "$work/base.cpio"
}

# ---- guest ----

# One controller, five ZNS namespaces (nsid order): npo2 96 MiB zones with
# 80 MiB capacity, npo2 3 MiB zones with 512-byte LBAs, twice po2 64 MiB
# zones with 48 MiB capacity (one for each backend, so that both run at
# once), and 9000 npo2 zones of 12 KiB, 8 KiB capacity, more than one Zone
# Management Receive can report (8191 zones in 512 KiB). Max open 3, max
# active 4. ZASL 5: appends up to 128 KiB.
qemu_nvme_args() { # image dir
	local dir=$1 n=0 spec id zs zc nz lbs

	echo -device nvme,serial=po2zfsvm,id=nvme0,zoned.zasl=5
	for spec in 96M:80M:8:4096 3M:3M:16:512 64M:48M:8:4096 64M:48M:8:4096 \
		12K:8K:9000:4096; do
		n=$((n + 1))
		IFS=: read -r zs zc nz lbs <<<"$spec"
		truncate -s 0 "$dir/ns$n.img"
		truncate -s $(($(numfmt --from=iec "$zs") * nz)) "$dir/ns$n.img"
		id=ns$n
		echo -drive "file=$dir/ns$n.img,id=$id,format=raw,if=none"
		echo -device "nvme-ns,drive=$id,bus=nvme0,nsid=$n,logical_block_size=$lbs,physical_block_size=$lbs,zoned=true,zoned.zone_size=$zs,zoned.zone_capacity=$zc,zoned.max_open=3,zoned.max_active=4"
	done
}


main() {
	local k kroot kver log rc fails=0 results=()

	[ -c /dev/null ] || skip "no /dev/null"
	install_host_pkgs
	mkdir -p "$work" || die "cannot create $work"
	build_project
	build_helpers || die "guest helpers did not build"
	build_base_cpio || die "initramfs did not build"

	for k in ${kernels//,/ }; do
		kroot=$(fetch_kernel "$k") || { results+=("$k: FAIL (no kernel)"); fails=1; continue; }
		kver=$(ls "$kroot/lib/modules")
		mkdir -p "$work/$kver"
		build_modules_cpio "$kroot" "$work/$kver/mods.cpio" ||
			{ results+=("$k: FAIL (modules)"); fails=1; continue; }
		cat "$work/base.cpio" "$work/$kver/mods.cpio" >"$work/$kver/initrd"
		log=$work/$kver/console.log
		say "booting $kver (log: $log)"
		SECONDS=0
		boot_guest "$kroot" "$work/$kver/initrd" "$log"
		rc=$?
		results+=("$(summarize "$kver" "$log" "$rc" "$SECONDS")") || fails=1
		grep -aq "^P2Z-VM DONE rc=0\$" "$log" && [ $rc = 0 ] &&
			[ "$(vm_results "$log" FAIL)" = 0 ] || fails=1
	done

	echo "=================== po2zfs device tests ==================="
	for k in "${results[@]}"; do echo "$k"; done
	echo "==========================================================="
	[ $fails = 0 ] && echo "vm: PASS" || echo "vm: FAIL"
	return $fails
}

# Per-kernel table from the guest's result lines (guest-lib.sh),
# "P2Z-RESULT <config> <test> <verdict> <seconds>s [reason]".
summarize() { # kver, log, qemu rc, seconds
	local kver=$1 log=$2 rc=$3 secs=$4 done_rc

	done_rc=$(LC_ALL=C sed -n 's/^P2Z-VM DONE rc=\([0-9]*\)$/\1/p' "$log")
	echo "kernel $kver: ${secs}s, qemu rc $rc, guest rc ${done_rc:-none}"
	[ "$rc" = 124 ] && echo "  TIMEOUT after ${tmo}s"
	awk '$1 == "P2Z-RESULT" {
		why = $0
		for (i = 0; i < 5; i++)
			sub(/^[^ ]+ ?/, "", why)
		printf "  %-5s %-14s %-16s %5s  %s\n", $4, $2, $3, $5, why }' \
		"$log" | sort -s -k2,2
}

main
