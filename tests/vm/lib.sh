# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash disable=SC2154
#
# QEMU guest machinery shared by the device tests (tests/vm/run.sh),
# po2zfs-blk's test (tests/vm/blk.sh) and the guest benchmark
# (contrib/bench/guest-bench.sh): host packages, Debian
# kernels, the po2zfs build, a busybox initramfs with the tools, kernel
# modules, and one boot with one NVMe controller. Sourced, not run. What
# the guest scripts share is in guest-lib.sh, packed into every guest.
#
# The caller sets: top (source tree), vm (this directory), work (work dir),
# cache (kernel package cache), tmo (seconds per guest) and optionally tag
# (message prefix, default "vm"). build_project sets build.

say() { echo "${tag:-vm}: $*"; }
die() { echo "${tag:-vm}: FAIL: $*" >&2; exit 1; }
skip() { echo "${tag:-vm}: SKIP: $*" >&2; exit 77; }

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
	f2fs-tools:/usr/sbin/mkfs.f2fs btrfs-progs:/usr/sbin/mkfs.btrfs
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
# A raw passthrough reader and nsid mapper for the guest (static,
# independent of the project's code).
build_vm_raw() {
	mkdir -p "$work/bin"
	gcc -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -static \
		-o "$work/bin/p2z_vm_raw" "$vm/p2z_vm_raw.c"
}

# The kernel's zonefs super block, as zonefs-tools' mkzonefs writes it
# (not in Debian 12), in the guest's tree $1 as /p2z/zonefs-sb.bin.
build_zonefs_sb() { # root
	mkdir -p "$work/bin" &&
		gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
			-o "$work/bin/p2z_zonefs_sb" "$vm/p2z_zonefs_sb.c" &&
		"$work/bin/p2z_zonefs_sb" "$1/p2z/zonefs-sb.bin"
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
# The guest's tree in $1 without the caller's payload: busybox, the GNU
# tools, nvme-cli, fio, the po2zfs binaries of $build, p2z_vm_raw (built by
# build_vm_raw), /init, the guest scripts' library guest-lib.sh as
# /p2z/guest-lib.sh, and $2 as /p2z/guest.sh, which /init runs.
vm_base_root() { # root, guest script
	local root=$1 bins=() b

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

	for b in po2zfs po2zfs-emu po2zfs-zone; do
		[ -x "$build/$b" ] || continue
		cp "$build/$b" "$root/p2z/build/"
		copy_libs "$root" "$build/$b"
	done
	if [ -x "$root/p2z/build/po2zfs" ]; then
		ln -s po2zfs "$root/p2z/build/mount.po2zfs"
		ln -s /p2z/build/po2zfs "$root/sbin/mount.po2zfs"
	fi
	cp "$work/bin/p2z_vm_raw" "$root/p2z/bin/"
	cp "$vm/guest-lib.sh" "$root/p2z/guest-lib.sh"
	cp "$2" "$root/p2z/guest.sh"
	cp "$vm/init" "$root/init"
	chmod +x "$root/init" "$root/p2z/guest.sh"
}

# The tree $1 as a newc cpio archive $2.
vm_pack() { # root, output
	(cd "$1" && find . | cpio -o -H newc --quiet) >"$2"
}

# Kernel modules (default nvme, fuse and null_blk), with dependencies, in
# load order, decompressed: busybox insmod takes plain .ko only. /init
# loads all but null_blk, which the device tests load themselves, with
# zoned parameters.
build_modules_cpio() { # kernel root, output, [module...]
	local kroot=$1 out=$2 kver root ko rel m mods=(nvme fuse null_blk)

	shift 2
	[ $# = 0 ] || mods=("$@")
	kver=$(ls "$kroot/lib/modules")
	root=$work/mods
	rm -rf "$root"
	mkdir -p "$root/lib/modules/$kver"
	: >"$root/lib/modules/load.list"
	for m in "${mods[@]}"; do
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
	vm_pack "$root" "$out"
}

# Boot once (TCG, 2 vCPUs, 2 GiB) with the NVMe controller that function
# $4 (default qemu_nvme_args) prints, one "option value" a line, given
# the image directory $5 (default: the log's directory). The console goes
# to the log; its P2Z and vm: lines, and kernel panics, to stdout.
boot_guest() { # kernel root, initrd, log, [args function, [image dir]]
	local kroot=$1 initrd=$2 log=$3 fn=${4:-qemu_nvme_args} dir args=() a

	dir=${5:-$(dirname "$log")}
	while read -r a; do
		args+=("${a%% *}" "${a#* }")
	done < <("$fn" "$dir")
	# tsc=reliable: under TCG the clocksource watchdog may find the TSC
	# skewed on a busy host and mark it unstable; the kernel then
	# re-patches sched_clock's static key on a running SMP guest, and a
	# 6.12 guest died of that once ("Oops: int3" in sched_clock_cpu from
	# __sched_clock_work): TCG showed the other vCPU a stale int3.
	timeout --foreground -k 10 "$tmo" qemu-system-x86_64 \
		-nodefaults -no-user-config -machine q35 -accel tcg -cpu max \
		-m 2G -smp 2 -display none -monitor none -serial stdio \
		-no-reboot -kernel "$(ls "$kroot"/boot/vmlinuz-*)" \
		-initrd "$initrd" -append "console=ttyS0 panic=-1 quiet tsc=reliable" \
		"${args[@]}" </dev/null 2>&1 | tr -d '\r' | tee "$log" |
		grep -a --line-buffered -E '^(P2Z|vm:|\[ *[0-9.]+\] (Kernel panic|BUG|WARNING))'
	return "${PIPESTATUS[0]}"
}

# vm_results LOG VERDICT: how many of the guest's result lines in console
# log LOG have VERDICT (see guest-lib.sh's result)
vm_results() {
	awk -v v="$2" '$1 == "P2Z-RESULT" && $4 == v { n++ } END { print n + 0 }' "$1"
}
