#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian package: cpack -G DEB from the build, its control fields, its
# files (programs, the /sbin mount helper link, man pages, completions),
# installed with dpkg --root into a scratch root (own dpkg database, the
# host's untouched) and unpacked with dpkg -x; the installed programs run.
# Needs neither root nor /dev/fuse.
. "$(dirname "$0")/common.sh"

info "Debian package: build, contents, dpkg --root install, programs run"
[ -n "${P2Z_BUILD:-}" ] || skip "P2Z_BUILD (the build directory) is not set"
[ -f "$P2Z_BUILD/CPackConfig.cmake" ] || skip "$P2Z_BUILD has no CPack configuration"
command -v dpkg-deb >/dev/null || skip "no dpkg-deb: cannot build a .deb here"
command -v dpkg >/dev/null || skip "no dpkg"
need_prog cpack
need_prog python3

WORK=$(mktemp -d "${TMPDIR:-/tmp}/p2z-$T_NAME.XXXXXX") || fail "mktemp failed"
cleanup_1104()
{
	local rc=$?

	[ "${P2Z_KEEP:-0}" = 1 ] || rm -rf "$WORK"
	exit $rc
}
trap cleanup_1104 EXIT

version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' \
	"$P2Z_BUILD/CPackConfig.cmake")
[ -n "$version" ] || fail "no CPACK_PACKAGE_VERSION in CPackConfig.cmake"
arch=$(dpkg --print-architecture)
deb=$WORK/po2zfs_${version}_$arch.deb

out=$(cd "$P2Z_BUILD" && cpack -G DEB -B "$WORK" 2>&1) ||
	fail "cpack -G DEB: $out"
[ -f "$deb" ] || fail "no $deb after cpack: $(ls "$WORK")"

assert_eq po2zfs "$(dpkg-deb -f "$deb" Package)" "Package"
assert_eq "$version" "$(dpkg-deb -f "$deb" Version)" "Version"
depends=$(dpkg-deb -f "$deb" Depends)
for p in libfuse3-3 fuse3 liburing2 libnvme1 libzbd2; do
	case ", $depends," in
	*", $p,"* | *", $p ("*) ;;
	*) fail "Depends lacks $p: $depends" ;;
	esac
done
info "Depends: $depends"

# Contents: exact file list (directories left out)
want="./sbin/mount.po2zfs -> ../../usr/sbin/po2zfs
./usr/sbin/po2zfs
./usr/sbin/po2zfs-blk
./usr/sbin/po2zfs-emu
./usr/sbin/po2zfs-zone
./usr/share/bash-completion/completions/mount.po2zfs
./usr/share/bash-completion/completions/po2zfs
./usr/share/bash-completion/completions/po2zfs-blk
./usr/share/bash-completion/completions/po2zfs-emu
./usr/share/bash-completion/completions/po2zfs-zone
./usr/share/doc/po2zfs/changelog.gz
./usr/share/doc/po2zfs/copyright
./usr/share/lintian/overrides/po2zfs
./usr/share/man/man7/po2zfs.7.gz
./usr/share/man/man8/mount.po2zfs.8.gz
./usr/share/man/man8/po2zfs-blk.8.gz
./usr/share/man/man8/po2zfs-emu.8.gz
./usr/share/man/man8/po2zfs-zone.8.gz"
got=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print }' | sort)
assert_eq "$want" "$got" "package contents"

# The link resolves to the program whether /sbin is a directory or, on a
# merged /usr, a link to usr/sbin.
target=$(dpkg-deb -c "$deb" | awk '$6 == "./sbin/mount.po2zfs" { print $8 }')
for dir in /sbin /usr/sbin; do
	got=$(python3 -c 'import os, sys; print(os.path.normpath(os.path.join(sys.argv[1], sys.argv[2])))' \
		"$dir" "$target")
	assert_eq /usr/sbin/po2zfs "$got" "mount.po2zfs resolved from $dir"
done

# dpkg --root: a scratch root with an empty dpkg database (the runtime
# dependencies are the host's, not in that database: --force-depends).
root=$WORK/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" ||
	fail "mkdir $root"
: >"$root/var/lib/dpkg/status"
out=$(dpkg --root="$root" --force-depends --force-not-root -i "$deb" 2>&1) ||
	fail "dpkg --root -i: $out"
assert_eq "ii" "$(dpkg --root="$root" -s po2zfs 2>/dev/null |
	sed -n 's/^Status: install ok installed$/ii/p')" "dpkg --root status"
for f in usr/sbin/po2zfs usr/sbin/po2zfs-blk usr/sbin/po2zfs-emu \
	usr/sbin/po2zfs-zone; do
	[ -x "$root/$f" ] || fail "$f not installed by dpkg --root"
done
assert_eq ../../usr/sbin/po2zfs "$(readlink "$root/sbin/mount.po2zfs")" \
	"mount helper link installed by dpkg --root"
for m in man7/po2zfs.7 man8/mount.po2zfs.8 man8/po2zfs-blk.8 \
	man8/po2zfs-emu.8 man8/po2zfs-zone.8; do
	gzip -t "$root/usr/share/man/$m.gz" || fail "man page $m.gz not installed"
done
gzip -t "$root/usr/share/doc/po2zfs/changelog.gz" || fail "no changelog.gz"
grep -q '^License: GPL-2.0+$' "$root/usr/share/doc/po2zfs/copyright" ||
	fail "copyright file lacks the GPL-2.0+ license"

# dpkg -x: the same files
mkdir "$WORK/x" || fail "mkdir $WORK/x"
dpkg -x "$deb" "$WORK/x" || fail "dpkg -x"
cmp "$WORK/x/usr/sbin/po2zfs" "$root/usr/sbin/po2zfs" ||
	fail "dpkg -x and dpkg --root differ"

# The installed programs run (with the host's libraries).
out=$("$root/usr/sbin/po2zfs" --version 2>&1) || fail "po2zfs --version: $out"
case $out in
"po2zfs $version,"*) ;;
*) fail "po2zfs --version: $out" ;;
esac
"$root/usr/sbin/po2zfs-zone" --help | grep -q '^  po2zfs-zone report' ||
	fail "po2zfs-zone --help"
"$root/usr/sbin/po2zfs-emu" create "$WORK/z.img" --zone-size 3M --zones 2 \
	>/dev/null || fail "installed po2zfs-emu create"
"$root/usr/sbin/po2zfs-zone" report "$WORK/z.img" | grep -q '^zones: *2 ' ||
	fail "installed po2zfs-zone report"
# The control fields lintian looks at.
assert_eq admin "$(dpkg-deb -f "$deb" Section)" "Section"
assert_eq optional "$(dpkg-deb -f "$deb" Priority)" "Priority"
case $(dpkg-deb -f "$deb" Description | sed -n 2p) in
" "?*) ;;
*) fail "Description has no extended description" ;;
esac
case ", $depends," in
*", libc6 ("*) ;;
*) fail "Depends lacks libc6 (dpkg-shlibdeps): $depends" ;;
esac

# lintian: no error tag that the package's overrides do not cover;
# warnings and infos are printed.
if command -v lintian >/dev/null; then
	lint=$(lintian --no-tag-display-limit -I --pedantic "$deb" 2>&1)
	printf '%s\n' "$lint" | grep -E '^[WIP]: ' | sed "s/^/$T_NAME: lintian: /"
	errs=$(printf '%s\n' "$lint" | grep '^E: ')
	[ -z "$errs" ] || fail "lintian errors: $errs"
	info "lintian: $(printf '%s\n' "$lint" | grep -c '^W: ') warnings, $(printf '%s\n' "$lint" | grep -c '^[IP]: ') infos, no errors"
else
	info "no lintian: package not linted"
fi
info "ok: $deb"
exit 0
