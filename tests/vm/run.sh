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

say() { echo "vm: $*"; }
die() { echo "vm: FAIL: $*" >&2; exit 1; }
skip() { echo "vm: SKIP: $*" >&2; exit 77; }

# ---- host packages ----

# Each entry: package, then a file it provides that the harness uses.
host_pkgs=(
	qemu-system-x86:/usr/bin/qemu-system-x86_64
	busybox-static:/bin/busybox
	cpio:/usr/bin/cpio kmod:/usr/sbin/depmod xz-utils:/usr/bin/xz
	zstd:/usr/bin/zstd nvme-cli:/usr/sbin/nvme fio:/usr/bin/fio
	attr:/usr/bin/getfattr fuse3:/usr/bin/fusermount3
	gcc:/usr/bin/gcc libc6-dev:/usr/include/stdio.h
	pkg-config:/usr/bin/pkg-config liburing-dev:/usr/include/liburing.h
	libnvme-dev:/usr/include/libnvme.h libzbd-dev:/usr/include/libzbd/zbd.h
	cmake:/usr/bin/cmake libfuse3-dev:/usr/include/fuse3/fuse.h
	util-linux:/usr/bin/mount diffutils:/usr/bin/cmp procps:/usr/bin/pgrep
)

install_host_pkgs() {
	local e missing=()

	for e in "${host_pkgs[@]}"; do
		[ -e "${e#*:}" ] || missing+=("${e%%:*}")
	done
	# busybox (not -static) also installs /bin/busybox, dynamically linked
	if [ -e /bin/busybox ] && ! busybox_is_static; then
		missing+=(busybox-static)
	fi
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		[ -e /usr/bin/qemu-system-x86_64 ] ||
			skip "qemu-system-x86_64 missing and cannot be installed (not root or no apt-get)"
		die "missing packages, and cannot install them: ${missing[*]}"
	fi
	say "installing ${missing[*]}"
	apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends "${missing[@]}" >/dev/null
	[ -e /usr/bin/qemu-system-x86_64 ] ||
		skip "qemu-system-x86_64 could not be installed"
	for e in "${host_pkgs[@]}"; do
		[ -e "${e#*:}" ] || die "package ${e%%:*} did not install ${e#*:}"
	done
}

busybox_is_static() {
	! ldd /bin/busybox >/dev/null 2>&1
}

# ---- kernels ----

# Debian package name for "6.1" (what linux-image-amd64 depends on) or
# "6.12" (bookworm's newest 6.12 image).
kernel_pkg() {
	case $1 in
	6.1)
		apt-cache depends linux-image-amd64 2>/dev/null |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-6\.1\./ {
				print $2; exit }'
		;;
	*)
		apt-cache search --names-only \
			"^linux-image-${1//./\\.}\\.[0-9]+\\+deb12-amd64\$" 2>/dev/null |
			awk '{ print $1 }' | sort -V | tail -1
		;;
	esac
}

# Download (never install) and unpack a kernel; prints its root dir.
fetch_kernel() {
	local want=$1 pkg deb root

	pkg=$(kernel_pkg "$want")
	if [ -z "$pkg" ]; then
		apt-get update -qq >/dev/null 2>&1
		pkg=$(kernel_pkg "$want")
	fi
	[ -n "$pkg" ] || { echo "no Debian package for kernel $want" >&2; return 1; }
	root=$cache/$pkg
	if [ ! -e "$root/.unpacked" ]; then
		mkdir -p "$cache" || return 1
		deb=$(find "$cache" -maxdepth 1 -name "${pkg}_*.deb" | head -1)
		if [ -z "$deb" ]; then
			echo "vm: downloading $pkg" >&2
			(cd "$cache" && apt-get download -qq "$pkg" >&2) || return 1
			deb=$(find "$cache" -maxdepth 1 -name "${pkg}_*.deb" | head -1)
		fi
		rm -rf "$root"
		mkdir -p "$root" && dpkg-deb -x "$deb" "$root" || return 1
		depmod -b "$root" "$(ls "$root/lib/modules")" || return 1
		touch "$root/.unpacked"
	fi
	echo "$root"
}

# ---- build ----

build_project() {
	if [ -n "${P2Z_BUILD:-}" ]; then
		build=$P2Z_BUILD
	else
		build=$work/build
		say "building po2zfs in $build"
		if ! cmake -S "$top" -B "$build" -DP2Z_TESTS=OFF \
			-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null ||
			! cmake --build "$build" -j2 >/dev/null; then
			say "build of po2zfs failed: mount tests will fail"
		fi
	fi
}

# The guest's own helpers: a raw passthrough reader (static, independent of
# the project's code), a backend test built from the build's p2z_core
# sources (with its compiler and options, and again under ASan and UBSan),
# and the mount tests' I/O helper.
build_helpers() {
	local cc srcs=() defs=() san= libs
	local warn=(-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror)

	mkdir -p "$work/bin"
	gcc -O2 -g "${warn[@]}" -static -o "$work/bin/p2z_vm_raw" \
		"$vm/p2z_vm_raw.c" || return 1
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

# Copy the shared libraries program $2 loads into the tree $1.
copy_libs() {
	local root=$1 lib

	ldd "$2" 2>/dev/null | grep -oE '/[^ ]+\.so[^ ]*' | while read -r lib; do
		[ -e "$root$lib" ] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}

# Copy programs to the same path in the tree $1, with their libraries.
copy_bins() {
	local root=$1 b
	shift

	for b in "$@"; do
		[ -e "$b" ] || { say "warning: $b missing on the host"; continue; }
		mkdir -p "$root$(dirname "$b")"
		cp -L "$b" "$root$b"
		copy_libs "$root" "$b"
	done
}

# Everything but kernel modules, shared by all kernels.
build_base_cpio() {
	local root=$work/root bins=() b

	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,mnt,run,etc,p2z/build,p2z/tests,p2z/bin}
	cp /bin/busybox "$root/bin/busybox"
	ln -s busybox "$root/bin/sh"
	# GNU tools in /usr/bin come first in the guest's PATH, busybox fills in.
	while read -r b; do
		case $b in /usr/bin/* | /bin/*) [ -f "$b" ] && bins+=("/usr/bin/${b##*/}") ;; esac
	done < <(dpkg -L coreutils)
	bins+=(/usr/bin/bash /usr/bin/grep /usr/bin/sed /usr/bin/mawk
		/usr/bin/find /usr/bin/xargs /usr/bin/cmp /usr/bin/diff
		/usr/bin/mount /usr/bin/umount /usr/bin/mountpoint
		/usr/bin/getfattr /usr/bin/setfattr /usr/bin/fusermount3
		/usr/bin/setpriv /usr/bin/pgrep /usr/bin/ps /usr/bin/pkill
		/usr/sbin/nvme /usr/bin/fio /usr/sbin/blkzone)
	copy_bins "$root" "${bins[@]}"
	ln -sf mawk "$root/usr/bin/awk"
	ln -sf /usr/bin/bash "$root/bin/bash"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' \
		>"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	ln -s /proc/self/mounts "$root/etc/mtab"

	for b in po2zfs po2zfs-emu; do
		[ -x "$build/$b" ] || continue
		cp "$build/$b" "$root/p2z/build/"
		copy_libs "$root" "$build/$b"
	done
	if [ -x "$root/p2z/build/po2zfs" ]; then
		ln -s po2zfs "$root/p2z/build/mount.po2zfs"
		ln -s /p2z/build/po2zfs "$root/sbin/mount.po2zfs"
	fi
	for b in p2z_vm_dev p2z_vm_dev_asan; do
		cp "$work/bin/$b" "$root/p2z/bin/"
		copy_libs "$root" "$work/bin/$b"
	done
	cp "$work/bin/p2z_vm_raw" "$root/p2z/bin/"
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
	cp "$vm/guest.sh" "$root/p2z/"
	cp "$vm/init" "$root/init"
	chmod +x "$root/init" "$root/p2z/guest.sh"
	printf 'P2Z_VM_TESTS="%s"\nP2Z_VM_FULL=%s\n' "${P2Z_VM_TESTS:-}" \
		"${P2Z_VM_FULL:-0}" >"$root/p2z/vm.conf"
	(cd "$root" && find . | cpio -o -H newc --quiet) >"$work/base.cpio"
}

# Kernel modules for nvme, fuse and null_blk (with dependencies, in load
# order), decompressed: busybox insmod takes plain .ko only. The guest loads
# null_blk itself, with zoned parameters.
build_modules_cpio() { # kernel root, output
	local kroot=$1 out=$2 kver root ko rel m

	kver=$(ls "$kroot/lib/modules")
	root=$work/mods
	rm -rf "$root"
	mkdir -p "$root/lib/modules/$kver"
	: >"$root/lib/modules/load.list"
	for m in nvme fuse null_blk; do
		modprobe -d "$kroot" -S "$kver" --show-depends "$m" 2>/dev/null |
			awk '$1 == "insmod" { print $2 }'
	done | awk '!seen[$0]++' | while read -r ko; do
		rel=${ko#"$kroot/lib/modules/$kver/"}
		mkdir -p "$root/lib/modules/$kver/$(dirname "$rel")"
		case $ko in
		*.xz) xz -dc "$ko" >"$root/lib/modules/$kver/${rel%.xz}"; rel=${rel%.xz} ;;
		*.zst) zstd -qdc "$ko" >"$root/lib/modules/$kver/${rel%.zst}"; rel=${rel%.zst} ;;
		*) cp "$ko" "$root/lib/modules/$kver/$rel" ;;
		esac
		echo "$rel" >>"$root/lib/modules/load.list"
	done
	(cd "$root" && find . | cpio -o -H newc --quiet) >"$out"
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

boot_guest() { # kernel root, initrd, log
	local kroot=$1 initrd=$2 log=$3 dir args=() a

	dir=$(dirname "$log")
	while read -r a; do
		args+=("${a%% *}" "${a#* }")
	done < <(qemu_nvme_args "$dir")
	timeout --foreground -k 10 "$tmo" qemu-system-x86_64 \
		-nodefaults -no-user-config -machine q35 -accel tcg -cpu max \
		-m 2G -smp 2 -display none -monitor none -serial stdio \
		-no-reboot -kernel "$(ls "$kroot"/boot/vmlinuz-*)" \
		-initrd "$initrd" -append "console=ttyS0 panic=-1 quiet" \
		"${args[@]}" </dev/null 2>&1 | tr -d '\r' | tee "$log" |
		grep -a --line-buffered -E '^(P2Z|vm:|\[ *[0-9.]+\] (Kernel panic|BUG|WARNING))'
	return "${PIPESTATUS[0]}"
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
			! grep -aq '^P2Z-RESULT .* FAIL' "$log" || fails=1
	done

	echo "=================== po2zfs device tests ==================="
	for k in "${results[@]}"; do echo "$k"; done
	echo "==========================================================="
	[ $fails = 0 ] && echo "vm: PASS" || echo "vm: FAIL"
	return $fails
}

# Per-kernel table from the guest's
# "P2Z-RESULT <config> <test> <verdict> <seconds>s [reason]" lines.
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
