#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# po2zfs-blk in a QEMU guest: the ublk server shows an npo2 NVMe ZNS
# namespace (96 MiB zones, 80 MiB capacity) as a po2 zoned block device
# /dev/ublkbN (128 MiB zones, 80 MiB capacity), and the kernel's zonefs,
# f2fs and btrfs, fio's zbd mode and blkzone run on it, on Debian's 6.12
# kernel (ublk's UBLK_F_ZONED needs 6.6). The same checks run first on a
# po2 namespace of that geometry through the kernel's own NVMe block
# device (the reference: what the filesystems do without po2zfs), then on
# the ublk device; then po2zfs-blk's bad input (a second add, a delete
# while mounted, a killed server) and a power cut (the server of an
# image with a volatile write cache killed under btrfs after a sync and
# under zonefs after an fsync: what was flushed is intact). A second
# boot, of Debian's 6.1, which has no ublk driver, checks that po2zfs-blk
# refuses there with "ublk unavailable:" and leaves no device. See blk-guest.sh. Run as root on
# Debian 12 from anywhere:
#
#   tests/vm/blk.sh [-t SECONDS] [-w WORKDIR]
#
# Environment:
#   P2Z_BUILD       build tree with po2zfs-blk (default: build one in the
#                   work dir)
#   P2Z_VM_CACHE    where kernel packages are kept between runs
#                   (default /var/cache/po2zfs-vm)
#   P2Z_VM_WORK     work dir (default /tmp/po2zfs-vm-blk)
#   P2Z_VM_TIMEOUT  seconds for the guest (default 1200)
#   P2Z_RECOVER_CYCLES  server kills and recoveries of ublk/recover
#                   (default 3; the long run: 20)
#   P2Z_BLK_ONLY    space-separated ublk check names (recover
#                   recover-btrfs ...): the 6.12 guest runs only the add
#                   and these, no reference checks (default: all)
#
# Exit: 0 all passed, 1 something failed, 77 QEMU cannot run here or the
# build has no po2zfs-blk (the reason is printed; the reference checks
# still run and fail the test if they fail).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
vm=$top/tests/vm
tag='vm-blk'
cache=${P2Z_VM_CACHE:-/var/cache/po2zfs-vm}
work=${P2Z_VM_WORK:-/tmp/po2zfs-vm-blk}
tmo=${P2Z_VM_TIMEOUT:-1200}

while getopts "t:w:h" o; do
	case $o in
	t) tmo=$OPTARG ;;
	w) work=$OPTARG ;;
	*) sed -n '4,/^set -uo/p' "$0" | sed '$d'; exit 2 ;;
	esac
done

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$vm/lib.sh"

# One controller, three namespaces (nsid order), 4 KiB LBAs:
#   1  npo2 ZNS, 16 zones of 96 MiB, 80 MiB capacity: po2zfs-blk's
#   2  conventional, 512 MiB: f2fs's metadata device
#   3  po2 ZNS, 16 zones of 128 MiB, 80 MiB capacity: the reference
# Max open and max active 8, not run.sh's 3 and 4: btrfs refuses a
# device with fewer than 8 active zones (BTRFS_MIN_ACTIVE_ZONES, 6.12
# fs/btrfs/zoned.c) and f2fs one with fewer open zones than its 6 active
# logs (fs/f2fs/super.c).
blk_nvme_args() { # image dir
	local dir=$1 n=0 spec zs zc nz zoned

	echo -device nvme,serial=po2zfsblk,id=nvme0
	for spec in 96M:80M:16 512M::1 128M:80M:16; do
		n=$((n + 1))
		IFS=: read -r zs zc nz <<<"$spec"
		truncate -s 0 "$dir/ns$n.img"
		truncate -s $(($(numfmt --from=iec "$zs") * nz)) "$dir/ns$n.img"
		zoned=false
		[ -z "$zc" ] || zoned="true,zoned.zone_size=$zs,zoned.zone_capacity=$zc,zoned.max_open=8,zoned.max_active=8"
		echo -drive "file=$dir/ns$n.img,id=ns$n,format=raw,if=none"
		echo -device "nvme-ns,drive=ns$n,bus=nvme0,nsid=$n,logical_block_size=4096,physical_block_size=4096,zoned=$zoned"
	done
}

# Boot kernel $1 with the tree in $work/base.cpio, vm.conf line $2 added
# and modules $3...; 0 if the guest's checks all passed.
boot_one() { # kernel conf-line module...
	local want=$1 conf=$2 kroot kver log rc b dir

	shift 2
	kroot=$(fetch_kernel "$want") || { say "FAIL: no kernel $want"; return 1; }
	kver=$(ls "$kroot/lib/modules")
	dir=$work/$kver
	mkdir -p "$dir/conf/p2z"
	build_modules_cpio "$kroot" "$dir/mods.cpio" "$@" ||
		{ say "FAIL: modules of $kver"; return 1; }
	# a later file in the initramfs replaces an earlier one
	{ cat "$work/root/p2z/vm.conf"; echo "$conf"; } >"$dir/conf/p2z/vm.conf"
	vm_pack "$dir/conf" "$dir/conf.cpio"
	cat "$work/base.cpio" "$dir/mods.cpio" "$dir/conf.cpio" >"$dir/initrd"
	log=$dir/console.log
	say "booting $kver (log: $log)"
	SECONDS=0
	boot_guest "$kroot" "$dir/initrd" "$log" blk_nvme_args
	rc=$?
	say "$kver: guest ran ${SECONDS}s, qemu rc $rc"
	rm -f "$dir"/ns*.img
	[ "$rc" = 124 ] && say "TIMEOUT after ${tmo}s"
	b=$(vm_results "$log" FAIL)
	say "$kver: $(vm_results "$log" PASS) passed, $b failed," \
		"$(vm_results "$log" REFUSED) refused as expected," \
		"$(vm_results "$log" SKIP) skipped"
	if [ "$rc" != 0 ] || [ "$b" != 0 ] ||
		! grep -aq '^P2Z-VM DONE rc=0$' "$log"; then
		say "$kver: FAIL ($b failed checks, qemu rc $rc," \
			"$(grep -a '^P2Z-VM DONE' "$log" || echo 'no guest result'))"
		return 1
	fi
}

main() {
	local root have_blk=1 fails=0

	[ -c /dev/null ] || skip "no /dev/null"
	install_host_pkgs
	mkdir -p "$work" || die "cannot create $work"
	build_project
	[ -x "$build/po2zfs-blk" ] || have_blk=0
	build_vm_raw || die "p2z_vm_raw did not build"
	gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
		-o "$work/bin/p2z_zonefs_sb" "$vm/p2z_zonefs_sb.c" ||
		die "p2z_zonefs_sb did not build"

	root=$work/root
	vm_base_root "$root" "$vm/blk-guest.sh"
	copy_bins "$root" /usr/sbin/mkfs.f2fs /usr/sbin/fsck.f2fs \
		/usr/sbin/mkfs.btrfs /usr/bin/btrfs
	if [ $have_blk = 1 ]; then
		cp "$build/po2zfs-blk" "$root/p2z/build/"
		copy_libs "$root" "$build/po2zfs-blk"
	fi
	"$work/bin/p2z_zonefs_sb" "$root/p2z/zonefs-sb.bin" ||
		die "no zonefs super block"
	{
		echo "P2Z_VM_NNS=3"
		echo "P2Z_RECOVER_CYCLES=${P2Z_RECOVER_CYCLES:-3}"
		printf 'P2Z_BLK_ONLY=%q\n' "${P2Z_BLK_ONLY:-}"
	} >"$root/p2z/vm.conf"
	vm_pack "$root" "$work/base.cpio" || die "initramfs did not build"

	boot_one 6.12 P2Z_BLK_OLD=0 nvme ublk_drv zonefs f2fs btrfs || fails=1
	# Debian's 6.1 has no ublk at all (CONFIG_BLK_DEV_UBLK is not set):
	# po2zfs-blk must say so
	if [ $have_blk = 1 ]; then
		boot_one 6.1 P2Z_BLK_OLD=1 nvme || fails=1
	fi
	[ $fails = 0 ] || { say FAIL; return 1; }
	[ $have_blk = 1 ] ||
		skip "$build has no po2zfs-blk: only the reference checks ran"
	say PASS
}
main
