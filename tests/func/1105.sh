#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian package on a clean Debian 12: cpack -G DEB, a bookworm minbase
# root made by debootstrap (cached as a tarball in /var/cache/po2zfs-deb,
# one per day), the host's Debian apt sources in it, "apt-get install" of
# the package resolving its runtime dependencies from the registry; then,
# chrooted in a private mount namespace (/proc, /sys, /dev bound in, gone
# with the namespace): po2zfs-emu create, mount -t po2zfs, dd appends, the
# bytes and user.zone.wp read back, umount. Needs root, /dev/fuse, the
# network.
#
# Environment: P2Z_DEB_MIRROR (default: the host's bookworm mirror),
# P2Z_DEB_CACHE (default /var/cache/po2zfs-deb).
. "$(dirname "$0")/common.sh"

info "Debian package installed by apt on a debootstrapped Debian 12, mounted"
[ -n "${P2Z_BUILD:-}" ] || skip "P2Z_BUILD (the build directory) is not set"
[ -f "$P2Z_BUILD/CPackConfig.cmake" ] || skip "$P2Z_BUILD has no CPack configuration"
grep -Eq '^P2Z_(SANITIZE|TSAN):BOOL=ON' "$P2Z_BUILD/CMakeCache.txt" 2>/dev/null &&
	skip "a sanitizer build is not packaged (the gcc build's run installs the package)"
[ -z "${P2Z_TEST_DEV:-}" ] || skip "packaging is not about a device (P2Z_TEST_DEV is set)"
[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot, mount)"
command -v debootstrap >/dev/null || skip "no debootstrap (apt-get install debootstrap)"
command -v dpkg-deb >/dev/null || skip "no dpkg-deb: cannot build a .deb here"
[ -c /dev/fuse ] || skip "no /dev/fuse"
need_prog cpack
need_prog unshare
need_prog chroot
need_prog python3
unshare -m true 2>/dev/null || skip "unshare -m fails: no private mount namespace"

CACHE=${P2Z_DEB_CACHE:-/var/cache/po2zfs-deb}
arch=$(dpkg --print-architecture)

# host_mirror: the first URI of the host's apt sources serving "bookworm"
# (one-line .list entries or deb822 .sources stanzas)
host_mirror()
{
	local f

	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '
		/^[ \t]*deb[ \t]/ {
			i = 2
			if ($i ~ /^\[/) while ($i !~ /\]$/) i++
			if ($i ~ /^\[/ || $i ~ /\]$/) i++
			if ($(i + 1) == "bookworm") { print $i; exit }
		}
		/^URIs:/ { uri = $2 }
		/^Suites:/ { for (j = 2; j <= NF; j++) if ($j == "bookworm") found = uri }
		/^[ \t]*$/ { if (found != "") { print found; exit } uri = "" }
		END { if (found != "") print found }' "$f" | head -n1
	done | head -n1
}

MIRROR=${P2Z_DEB_MIRROR:-$(host_mirror)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
MIRROR=${MIRROR%/}
# The registry must answer before minutes go into debootstrap.
python3 - "$MIRROR/dists/bookworm/InRelease" 2>/dev/null <<'EOF' ||
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=20).read(64)
EOF
	skip "the Debian registry $MIRROR is unreachable"
info "mirror $MIRROR"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/p2z-$T_NAME.XXXXXX") || fail "mktemp failed"
ROOT=$WORK/root
cleanup_1105()
{
	local rc=$? pid

	# Processes of this test left in the chroot (a daemon of a failed
	# run): by id, those whose root is ours.
	for pid in /proc/[0-9]*; do
		pid=${pid#/proc/}
		[ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$ROOT" ] &&
			kill -9 "$pid" 2>/dev/null
	done
	[ "${P2Z_KEEP:-0}" = 1 ] || rm -rf --one-file-system "$WORK"
	exit $rc
}
trap cleanup_1105 EXIT

# The package, built here (not shared with 1104: ctest runs in parallel).
out=$(cd "$P2Z_BUILD" && cpack -G DEB -B "$WORK/cpack" 2>&1) ||
	fail "cpack -G DEB: $out"
deb=$(ls "$WORK"/cpack/po2zfs_*_"$arch".deb 2>/dev/null | head -n1)
[ -f "$deb" ] || fail "no .deb after cpack: $(ls "$WORK/cpack")"
version=$(dpkg-deb -f "$deb" Version)

# The clean root: today's cached tarball, or debootstrap and cache it.
tarball=$CACHE/bookworm-minbase-$arch-$(date -u +%Y%m%d).tar
mkdir -p "$ROOT" || fail "mkdir $ROOT"
if [ -s "$tarball" ]; then
	info "root from $tarball"
	tar -C "$ROOT" -xpf "$tarball" || fail "tar -x $tarball"
else
	info "debootstrap --variant=minbase bookworm (cache: $tarball)"
	out=$(debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" 2>&1) ||
		fail "debootstrap: $(printf '%s\n' "$out" | tail -n 5)"
	mkdir -p "$CACHE" || fail "mkdir $CACHE"
	tar -C "$ROOT" -cf "$tarball.tmp" . || fail "tar -c $tarball"
	mv "$tarball.tmp" "$tarball" || fail "mv $tarball"
	find "$CACHE" -maxdepth 1 -name "bookworm-minbase-$arch-*.tar" \
		! -path "$tarball" -delete
fi

# The host's Debian sources (those of the mirror: other vendors' need
# their keys), its resolver, the package and the test data.
rm -f "$ROOT"/etc/apt/sources.list "$ROOT"/etc/apt/sources.list.d/*
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
	/etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] && grep -q "$MIRROR" "$f" &&
		cp "$f" "$ROOT/etc/apt/sources.list.d/host-${f##*/}"
done
ls "$ROOT"/etc/apt/sources.list.d/host-* >/dev/null 2>&1 ||
	echo "deb $MIRROR bookworm main" >"$ROOT/etc/apt/sources.list.d/host.list"
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf" || fail "no /etc/resolv.conf"
cp "$deb" "$ROOT/tmp/po2zfs.deb" || fail "cp $deb"
head -c $((3 * 1024 * 1024 + 4096 * 5)) /dev/urandom >"$ROOT/tmp/a" ||
	fail "test data"
head -c $((4096 * 7)) /dev/urandom >"$ROOT/tmp/b" || fail "test data"

# Inside the chroot: each step prints one "key=value" line, the outcome
# checked below; the first failing step ends the script.
cat >"$ROOT/tmp/p2z-1105.sh" <<'EOF'
set -u
step() { "$@" >/tmp/step.log 2>&1 || { echo "failed=$*"; tail -n 5 /tmp/step.log; exit 1; }; }
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
step apt-get update
step apt-get install -y --no-install-recommends /tmp/po2zfs.deb attr
echo "status=$(dpkg-query -W -f='${Status} ${Version}' po2zfs)"
echo "helper=$(readlink -f /sbin/mount.po2zfs)"
step po2zfs-emu create /tmp/z.img --zone-size 96M --zone-cap 80M --zones 4
mkdir -p /mnt/z
step mount -t po2zfs /tmp/z.img /mnt/z
echo "fstype=$(awk '$2 == "/mnt/z" { print $3 }' /proc/self/mounts)"
step dd if=/tmp/a of=/mnt/z/seq/0 bs=64K oflag=append conv=notrunc
step dd if=/tmp/b of=/mnt/z/seq/0 bs=4096 oflag=append conv=notrunc
echo "size=$(stat -c %s /mnt/z/seq/0)"
cat /tmp/a /tmp/b | cmp - /mnt/z/seq/0 >/dev/null && echo "cmp=same" || echo "cmp=differ"
echo "wp=$(getfattr --absolute-names --only-values -n user.zone.wp /mnt/z/seq/0)"
step umount /mnt/z
echo "mounted=$(awk '$2 == "/mnt/z"' /proc/self/mounts | wc -l)"
EOF

out=$(unshare -m --propagation private /bin/sh -c '
	r=$1
	mount --bind /proc "$r/proc" && mount --rbind /sys "$r/sys" &&
		mount --rbind /dev "$r/dev" || exit 97
	exec chroot "$r" /bin/bash /tmp/p2z-1105.sh' sh "$ROOT" 2>&1)
rc=$?
[ $rc -ne 97 ] || skip "cannot bind /proc, /sys, /dev into the chroot"
printf '%s\n' "$out" | sed "s/^/$T_NAME: chroot: /"
[ $rc -eq 0 ] || fail "in the chroot (exit $rc): $(printf '%s\n' "$out" | tail -n 6)"

get() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }
size=$((3 * 1024 * 1024 + 4096 * 12))
assert_eq "install ok installed $version" "$(get status)" "dpkg status in the chroot"
assert_eq /usr/sbin/po2zfs "$(get helper)" "mount.po2zfs resolved in the chroot"
assert_eq fuse.po2zfs "$(get fstype)" "file system type of the mount"
assert_eq "$size" "$(get size)" "size of seq/0 after two dd appends"
assert_eq same "$(get cmp)" "seq/0 read back"
assert_eq "$size" "$(get wp)" "user.zone.wp of seq/0"
assert_eq 0 "$(get mounted)" "mounts of /mnt/z after umount"
info "ok: $deb on Debian 12 (bookworm, $MIRROR)"
exit 0
