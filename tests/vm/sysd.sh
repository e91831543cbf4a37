#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# contrib/systemd/po2zfs-blk@.service under real systemd: a QEMU guest of
# Debian's 6.12 kernel whose PID 1 is the host's systemd (with
# systemd-udevd, journald, systemctl, the udev rules 99-systemd.rules and
# contrib/udev/60-po2zfs-zns.rules with its po2zfs-ng-id), the unit file
# as shipped in /etc/systemd/system and po2zfs-blk in /usr/sbin, where
# the unit runs it. One NVMe controller with one npo2 ZNS namespace (16
# zones of 96 MiB, 80 MiB capacity); the instance is its stable name
# /dev/zns/QEMU_NVMe_Ctrl_po2zfssysd-ns1, escaped. default.target runs
# sysd-guest.sh (p2z-sysd.service), which starts the unit, SIGKILLs its
# server under a zonefs append writer (systemd restarts it, the device is
# recovered), restarts it (the upgrade path: handover), stops it, and
# powers off. See sysd-guest.sh. Run as root on Debian 12 from anywhere:
#
#   tests/vm/sysd.sh [-t SECONDS] [-w WORKDIR]
#
# Environment:
#   P2Z_BUILD       build tree with po2zfs-blk (default: build one in the
#                   work dir)
#   P2Z_VM_CACHE    where kernel and udev packages are kept between runs
#                   (default /var/cache/po2zfs-vm)
#   P2Z_VM_WORK     work dir (default /tmp/po2zfs-vm-sysd)
#   P2Z_VM_TIMEOUT  seconds for the guest (default 600)
#
# The host needs systemd (its PID 1 and tools go into the guest); udev,
# when the host has none, comes from Debian's udev package (downloaded to
# the cache, never installed).
# Exit: 0 all passed, 1 something failed, 77 QEMU or systemd cannot run
# here or the build has no po2zfs-blk (the reason is printed).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
vm=$top/tests/vm
tag='vm-sysd'
cache=${P2Z_VM_CACHE:-/var/cache/po2zfs-vm}
work=${P2Z_VM_WORK:-/tmp/po2zfs-vm-sysd}
tmo=${P2Z_VM_TIMEOUT:-600}

while getopts "t:w:h" o; do
	case $o in
	t) tmo=$OPTARG ;;
	w) work=$OPTARG ;;
	*) sed -n '4,/^set -uo/p' "$0" | sed '$d'; exit 2 ;;
	esac
done

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$vm/lib.sh"

sysd_serial=po2zfssysd

# One controller, one npo2 ZNS namespace: 16 zones of 96 MiB, 80 MiB
# capacity, 4 KiB LBAs, 8 open and active zones.
sysd_nvme_args() { # image dir
	local dir=$1

	echo -device nvme,serial=$sysd_serial,id=nvme0
	truncate -s 0 "$dir/ns1.img"
	truncate -s $((16 * 96 * 1024 * 1024)) "$dir/ns1.img"
	echo -drive "file=$dir/ns1.img,id=ns1,format=raw,if=none"
	echo -device "nvme-ns,drive=ns1,bus=nvme0,nsid=1,logical_block_size=4096,physical_block_size=4096,zoned=true,zoned.zone_size=96M,zoned.zone_capacity=80M,zoned.max_open=8,zoned.max_active=8"
}

# The root of udev's files: the host's if it has udev, else Debian's udev
# package unpacked in the cache (the host's systemd is the same release).
fetch_udev() {
	local deb root

	if [ -x /lib/systemd/systemd-udevd ] && [ -x /bin/udevadm ]; then
		echo /
		return
	fi
	deb=$(find "$cache" -maxdepth 1 -name 'udev_*.deb' 2>/dev/null | sort -V | tail -1)
	if [ -z "$deb" ]; then
		mkdir -p "$cache" || return 1
		echo "vm: downloading udev" >&2
		(cd "$cache" && apt-get download -qq udev >&2) || return 1
		deb=$(find "$cache" -maxdepth 1 -name 'udev_*.deb' | sort -V | tail -1)
		[ -n "$deb" ] || return 1
	fi
	root=$cache/$(basename "$deb" .deb)
	if [ ! -e "$root/.unpacked" ]; then
		rm -rf "$root"
		mkdir -p "$root" && dpkg-deb -x "$deb" "$root" || return 1
		touch "$root/.unpacked"
	fi
	echo "$root"
}

# The guest's units: the test service (default.target wants it) and the
# units of systemd, journald and udev it needs, enabled as on a host.
sysd_units() { # root, udev root
	local root=$1 u=$2 etc=$1/etc/systemd/system lib=$1/lib/systemd/system f

	mkdir -p "$etc/sockets.target.wants" "$etc/sysinit.target.wants" "$lib"
	for f in basic.target sysinit.target sockets.target paths.target \
		timers.target slices.target local-fs.target local-fs-pre.target \
		swap.target shutdown.target umount.target final.target \
		poweroff.target systemd-poweroff.service modprobe@.service \
		-.slice system.slice systemd-journald.service \
		systemd-journald.socket systemd-journald-dev-log.socket \
		systemd-journald-audit.socket; do
		[ -e "/lib/systemd/system/$f" ] && cp "/lib/systemd/system/$f" "$lib/"
	done
	for f in systemd-udevd.service systemd-udevd-control.socket \
		systemd-udevd-kernel.socket systemd-udev-trigger.service; do
		cp "$u/lib/systemd/system/$f" "$lib/" || return 1
	done
	for f in systemd-journald.socket systemd-journald-dev-log.socket \
		systemd-udevd-control.socket systemd-udevd-kernel.socket; do
		ln -s "/lib/systemd/system/$f" "$etc/sockets.target.wants/$f"
	done
	for f in systemd-journald.service systemd-udevd.service \
		systemd-udev-trigger.service; do
		ln -s "/lib/systemd/system/$f" "$etc/sysinit.target.wants/$f"
	done
	# the unit under test, as shipped
	cp "$top/contrib/systemd/po2zfs-blk@.service" "$etc/" || return 1
	cat >"$etc/p2z-sysd.target" <<-'EOF'
		[Unit]
		Description=po2zfs-blk@.service test
		Requires=p2z-sysd.service
		After=p2z-sysd.service
		AllowIsolate=yes
	EOF
	cat >"$etc/p2z-sysd.service" <<-'EOF'
		[Unit]
		Description=po2zfs-blk@.service test: /p2z/guest.sh, then power off
		Wants=systemd-udev-trigger.service systemd-journald.service
		After=basic.target systemd-udev-trigger.service systemd-journald.service

		[Service]
		Type=oneshot
		ExecStart=/usr/bin/bash /p2z/guest.sh
		StandardOutput=tty
		StandardError=tty
		TimeoutStartSec=infinity
	EOF
	ln -s p2z-sysd.target "$etc/default.target"
}

# The guest's tree: the device guests' base (lib.sh), po2zfs-blk in
# /usr/sbin, systemd, journald, udev and their units, the udev rules.
sysd_root() { # root, udev root
	local root=$1 u=$2

	vm_base_root "$root" "$vm/sysd-guest.sh" || return 1
	cp "$vm/sysd-init" "$root/init" && chmod +x "$root/init" || return 1
	mkdir -p "$root/usr/sbin" "$root/lib/udev/rules.d" \
		"$root/etc/udev/rules.d" "$root/lib/systemd"
	cp "$build/po2zfs-blk" "$root/usr/sbin/" &&
		copy_libs "$root" "$build/po2zfs-blk" || return 1
	copy_bins "$root" /lib/systemd/systemd /lib/systemd/systemd-journald \
		/lib/systemd/systemd-shutdown /bin/systemctl /bin/journalctl \
		/bin/systemd-escape
	cp "$u/bin/udevadm" "$root/bin/udevadm" &&
		copy_libs "$root" "$u/bin/udevadm" || return 1
	ln -s /bin/udevadm "$root/lib/systemd/systemd-udevd"
	cp /lib/udev/rules.d/99-systemd.rules "$root/lib/udev/rules.d/" || return 1
	cp "$top/contrib/udev/60-po2zfs-zns.rules" "$root/etc/udev/rules.d/" &&
		install -m 0755 "$top/contrib/udev/po2zfs-ng-id" "$root/lib/udev/" ||
		return 1
	cp /usr/lib/os-release "$root/etc/os-release"
	: >"$root/etc/machine-id"
	# services start with a clean environment: the loader finds the
	# libraries by its cache
	cp -r /etc/ld.so.conf /etc/ld.so.conf.d "$root/etc/" 2>/dev/null
	ldconfig -r "$root" || return 1
	sysd_units "$root" "$u" || return 1
	"$work/bin/p2z_zonefs_sb" "$root/p2z/zonefs-sb.bin" || return 1
	echo "P2Z_SYSD_SERIAL=$sysd_serial" >"$root/p2z/vm.conf"
}

main() {
	local root kroot kver udev log rc b

	[ -c /dev/null ] || skip "no /dev/null"
	if [ ! -x /lib/systemd/systemd ] || [ ! -x /bin/systemctl ]; then
		skip "the host has no systemd to put in the guest"
	fi
	install_host_pkgs
	mkdir -p "$work/bin" || die "cannot create $work"
	build_project
	[ -x "$build/po2zfs-blk" ] || skip "$build has no po2zfs-blk"
	build_vm_raw || die "p2z_vm_raw did not build"
	gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
		-o "$work/bin/p2z_zonefs_sb" "$vm/p2z_zonefs_sb.c" ||
		die "p2z_zonefs_sb did not build"
	udev=$(fetch_udev) || skip "no udev: not on the host, and its package did not download"
	kroot=$(fetch_kernel 6.12) || die "no kernel 6.12"
	kver=$(ls "$kroot/lib/modules")

	root=$work/root
	sysd_root "$root" "$udev" || die "the guest's tree did not build"
	vm_pack "$root" "$work/base.cpio" || die "initramfs did not build"
	build_modules_cpio "$kroot" "$work/mods.cpio" nvme ublk_drv zonefs ||
		die "modules of $kver"
	cat "$work/base.cpio" "$work/mods.cpio" >"$work/initrd"
	log=$work/console.log
	say "booting $kver with systemd as PID 1 (log: $log)"
	SECONDS=0
	boot_guest "$kroot" "$work/initrd" "$log" sysd_nvme_args "$work"
	rc=$?
	say "guest ran ${SECONDS}s, qemu rc $rc"
	rm -f "$work"/ns*.img
	[ "$rc" = 124 ] && say "TIMEOUT after ${tmo}s"
	b=$(vm_results "$log" FAIL)
	say "$(vm_results "$log" PASS) passed, $b failed"
	if [ "$rc" != 0 ] || [ "$b" != 0 ] ||
		[ "$(vm_results "$log" PASS)" = 0 ] ||
		! grep -aq '^P2Z-VM DONE rc=0$' "$log"; then
		say "FAIL ($b failed checks, qemu rc $rc," \
			"$(grep -a '^P2Z-VM DONE' "$log" || echo 'no guest result'))"
		return 1
	fi
	say PASS
}
main
