#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Checks of contrib/ (examples and helpers, not built): bash syntax of the
# completion and the scripts (shellcheck too when installed), what the
# completion functions offer, the udev helper on a fake sysfs tree, the
# udev rules' syntax (udevadm verify where it exists), and the systemd mount
# unit and po2zfs-blk@.service (systemd-analyze verify where it exists). Run as
#	bash tests/contrib/check_contrib.sh
# Exit status: 0 pass, 1 fail.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
comp=$top/contrib/bash-completion/po2zfs
ngid=$top/contrib/udev/po2zfs-ng-id
rules=$top/contrib/udev/60-po2zfs-zns.rules
unit=$top/contrib/systemd/mnt-zns.mount
blk_unit=$top/contrib/systemd/po2zfs-blk@.service
work=$(mktemp -d "${TMPDIR:-/tmp}/p2z-contrib.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

fail()
{
	echo "FAIL: check_contrib: $*" >&2
	exit 1
}

info()
{
	echo "check_contrib: $*"
}

assert_eq()
{
	[ "$2" = "$1" ] || fail "$3: expected '$1', got '$2'"
}

# --- syntax
for f in "$comp" "$ngid" "$top/contrib/install-deps.sh" \
	"$top/contrib/quickstart.sh"; do
	bash -n "$f" || fail "bash -n $f"
done
sh -n "$ngid" || fail "sh -n $ngid"
if command -v shellcheck >/dev/null; then
	shellcheck -s bash "$comp" || fail "shellcheck $comp"
	shellcheck "$ngid" || fail "shellcheck $ngid"
else
	info "no shellcheck: syntax only"
fi

# --- completion: complete WORDS... -> COMPREPLY, the last word the cursor's
complete_words()
{
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		f=$(complete -p "${COMP_WORDS[0]}" | sed "s/.*-F \([^ ]*\).*/\1/")
		"$f" 2>/dev/null; echo "${COMPREPLY[*]}"' _ "$comp" "$@"
}
for c in po2zfs mount.po2zfs po2zfs-blk po2zfs-emu po2zfs-zone; do
	bash -c '. "$1"; complete -p "$2"' _ "$comp" "$c" >/dev/null ||
		fail "no completion registered for $c"
done
assert_eq "report reset" "$(complete_words po2zfs-zone re)" \
	"po2zfs-zone commands"
assert_eq "add" "$(complete_words po2zfs-blk a)" "po2zfs-blk commands"
assert_eq "-f --backend" "$(complete_words po2zfs-blk add -)" \
	"po2zfs-blk add options"
assert_eq "nvme zbd emu" "$(complete_words po2zfs-blk add --backend '')" \
	"po2zfs-blk --backend values"
assert_eq "--all --yes --backend --help" \
	"$(complete_words po2zfs-zone reset --)" "po2zfs-zone reset options"
assert_eq "--json" "$(complete_words po2zfs-zone report --j)" \
	"po2zfs-zone report --json"
assert_eq "nvme zbd emu" "$(complete_words po2zfs-zone map --backend '')" \
	"po2zfs-zone --backend values"
assert_eq "uid=0,errors=remount-ro uid=0,errors=zone-ro uid=0,errors=zone-offline uid=0,errors=repair" \
	"$(complete_words po2zfs dev.img /mnt -o uid=0,err)" "po2zfs -o list"
assert_eq "-s -f -n -v -o -h" "$(complete_words mount.po2zfs dev.img /mnt -)" \
	"mount.po2zfs flags"
assert_eq "create" "$(complete_words po2zfs-emu cr)" "po2zfs-emu commands"
assert_eq "512 4096" "$(complete_words po2zfs-emu create x --lba-size '')" \
	"po2zfs-emu --lba-size values"
assert_eq "fail-next-io" "$(complete_words po2zfs-emu set-zone x.img 3 fa)" \
	"po2zfs-emu set-zone faults"
assert_eq "--version" "$(complete_words po2zfs-emu --v)" "po2zfs-emu --version"
assert_eq "--version" "$(complete_words po2zfs-zone --v)" "po2zfs-zone --version"
mkdir "$work/mntdir"
assert_eq "$work/mntdir" "$(complete_words po2zfs dev.img "$work/mnt")" \
	"po2zfs: mount point completes to directories"
info "ok: completion"

# --- udev helper on a fake sysfs: a zoned namespace and a plain one
mk_ns()
{
	local ng=$1 model=$2 serial=$3 nsid=$4 zoned=$5

	mkdir -p "$work/sys/class/nvme-generic/$ng/device" \
		"$work/sys/block/nvme${ng#ng}/queue"
	printf '%s\n' "$model" >"$work/sys/class/nvme-generic/$ng/device/model"
	printf '%s\n' "$serial" >"$work/sys/class/nvme-generic/$ng/device/serial"
	echo "$nsid" >"$work/sys/block/nvme${ng#ng}/nsid"
	echo "$zoned" >"$work/sys/block/nvme${ng#ng}/queue/zoned"
}
mk_ns ng0n2 "QEMU NVMe Ctrl                          " "zns-1   " 2 host-managed
mk_ns ng7n1 "ACME SSD/2" "S#9" 1 none
out=$(SYSFS=$work/sys sh "$ngid" ng0n2) || fail "po2zfs-ng-id ng0n2 failed"
assert_eq "PO2ZFS_ZONED=1
PO2ZFS_NSID=2
PO2ZFS_ID=QEMU_NVMe_Ctrl_zns-1-ns2" "$out" "po2zfs-ng-id ng0n2"
# (no /dev/ng7n1 here: nvme-cli, if installed, cannot call it zoned)
out=$(SYSFS=$work/sys sh "$ngid" ng7n1) || fail "po2zfs-ng-id ng7n1 failed"
assert_eq "PO2ZFS_ZONED=0
PO2ZFS_NSID=1
PO2ZFS_ID=ACME_SSD_2_S_9-ns1" "$out" "po2zfs-ng-id ng7n1"
SYSFS=$work/sys sh "$ngid" nvme0n1 >/dev/null 2>&1 &&
	fail "po2zfs-ng-id accepted a name that is not ngXnY"
SYSFS=$work/sys sh "$ngid" ng5n5 >/dev/null 2>&1 &&
	fail "po2zfs-ng-id succeeded without sysfs entries"
info "ok: udev helper"

# --- udev rules: every line KEY{attr}OP"value"[, ...], or a comment
re_pair='[A-Z_]+(\{[^}]*\})?(==|!=|\+=|-=|:=|=)"[^"]*"'
n=0
while IFS= read -r line; do
	n=$((n + 1))
	case $line in
	'' | '#'*) continue ;;
	esac
	[[ $line =~ ^$re_pair(,\ *$re_pair)*$ ]] ||
		fail "$rules:$n: not a udev rule: $line"
done <"$rules"
grep -q 'IMPORT{program}="po2zfs-ng-id %k"' "$rules" ||
	fail "$rules: does not run po2zfs-ng-id"
# po2zfs-blk@.service binds to the device unit of the name: systemd makes
# one only for a device udev tags "systemd" (99-systemd.rules tags block
# devices, not nvme-generic ones); tests/vm/sysd.sh runs it
grep -qx 'TAG+="systemd"' "$rules" ||
	fail "$rules: does not tag the namespaces for systemd"
if command -v udevadm >/dev/null && udevadm verify --help >/dev/null 2>&1; then
	udevadm verify "$rules" || fail "udevadm verify $rules"
else
	info "no udevadm verify (systemd < 254): the rules' syntax checked by pattern only"
fi
info "ok: udev rules"

# --- systemd mount unit
if command -v systemd-analyze >/dev/null; then
	cp "$unit" "$work/" || fail "copy $unit"
	out=$(systemd-analyze verify --man=no "$work/${unit##*/}" 2>&1) ||
		fail "systemd-analyze verify ${unit##*/}: $out"
	assert_eq "" "$out" "systemd-analyze verify ${unit##*/} output"
	info "ok: systemd unit"
	# The template, as an instance of a /dev/zns link, in a root holding
	# it and an executable /usr/sbin/po2zfs-blk (verify checks ExecStart).
	root=$work/root
	mkdir -p "$root/usr/sbin" "$root/etc/systemd/system" || fail "mkdir $root"
	{ printf '#!/bin/sh\n' >"$root/usr/sbin/po2zfs-blk" &&
		chmod 755 "$root/usr/sbin/po2zfs-blk"; } || fail "$root/usr/sbin/po2zfs-blk"
	cp "$blk_unit" "$root/etc/systemd/system/" || fail "copy $blk_unit"
	inst=$(systemd-escape --path /dev/zns/ACME_ZNS_SN123-ns2)
	assert_eq 'dev-zns-ACME_ZNS_SN123\x2dns2' "$inst" "systemd-escape --path"
	out=$(systemd-analyze verify --man=no --root="$root" \
		"po2zfs-blk@$inst.service" 2>&1) ||
		fail "systemd-analyze verify po2zfs-blk@$inst.service: $out"
	assert_eq "" "$out" "systemd-analyze verify po2zfs-blk@$inst.service output"
	# shellcheck disable=SC2016 # the unit's own $P2Z_BLK_OPTS, literally
	grep -Fxq 'ExecStart=/usr/sbin/po2zfs-blk add -f $P2Z_BLK_OPTS %f' "$blk_unit" ||
		fail "${blk_unit##*/}: ExecStart is not 'po2zfs-blk add -f \$P2Z_BLK_OPTS %f' (recovery is add's default)"
	info "ok: systemd template unit ${blk_unit##*/}"
else
	info "SKIP: no systemd-analyze: ${unit##*/}, ${blk_unit##*/} not verified"
fi
exit 0
