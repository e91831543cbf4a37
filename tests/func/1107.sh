#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# po2zfs-blk's command line on the host (no ublk needed): --version prints
# one line "po2zfs-blk VERSION" (the project's version) and exits 0;
# --help prints the usage on stdout, nothing on stderr, exit 0; usage
# errors (an unknown command, an unknown option, no command, a bad --id, a
# bad del number, --id with list, --recovery with --no-recovery or either
# outside add) print one line on stderr, nothing on stdout, and exit 2
# before anything opens.
. "$(dirname "$0")/common.sh"

info "po2zfs-blk --version, --help, usage errors"
[ -n "${P2Z_BUILD:-}" ] || skip "P2Z_BUILD (the build directory) is not set"
BLK=$P2Z_BUILD/po2zfs-blk
[ -x "$BLK" ] || skip "no $BLK (built on Linux with liburing only)"
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$P2Z_BUILD/CMakeCache.txt")
[ -n "$version" ] || skip "no CMAKE_PROJECT_VERSION in $P2Z_BUILD/CMakeCache.txt"
WORK=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$WORK"' EXIT

# run ARGS...: po2zfs-blk's exit status in RC, its output in OUT and ERR
run()
{
	RC=0
	"$BLK" "$@" >"$WORK/out" 2>"$WORK/err" || RC=$?
	OUT=$(cat "$WORK/out")
	ERR=$(cat "$WORK/err")
}

run --version
assert_eq 0 "$RC" "--version: exit status"
assert_eq "po2zfs-blk $version" "$OUT" "--version: stdout"
assert_eq "" "$ERR" "--version: stderr"

for h in --help -h; do
	run $h
	assert_eq 0 "$RC" "$h: exit status"
	assert_eq "Usage:" "$(head -n 1 "$WORK/out")" "$h: first line"
	grep -q -- ' add \[-f\] \[--id N\] \[--no-recovery\]' "$WORK/out" || fail "$h: no add line with --id and --no-recovery: $OUT"
	assert_eq "" "$ERR" "$h: stderr"
done
run add --help
assert_eq 0 "$RC" "add --help: exit status"
assert_eq "Usage:" "$(head -n 1 "$WORK/out")" "add --help: first line"

# usage_error WANT_LINE ARGS...: exit 2, one line on stderr, none on stdout
usage_error()
{
	local want=$1

	shift
	run "$@"
	assert_eq 2 "$RC" "$*: exit status"
	assert_eq "" "$OUT" "$*: stdout"
	assert_eq "$want" "$ERR" "$*: stderr"
}

usage_error "po2zfs-blk: usage: po2zfs-blk add [-f] [--id N] [--no-recovery] DEVICE | recover [-f] N | list | del [--force] N (see po2zfs-blk --help)" frob
usage_error "po2zfs-blk: a command is needed (see po2zfs-blk --help)"
usage_error "po2zfs-blk: unknown option '--frob' (see po2zfs-blk --help)" add --frob /dev/null
usage_error "po2zfs-blk: --id: 'x' is not a device number (0 to 1048575)" add --id x /dev/null
usage_error "po2zfs-blk: --id: '1048576' is not a device number (0 to 1048575)" add --id 1048576 /dev/null
usage_error "po2zfs-blk: --id: '-1' is not a device number (0 to 1048575)" add --id=-1 /dev/null
usage_error "po2zfs-blk: --id is an option of add only" list --id 3
usage_error "po2zfs-blk: del: 'abc' is not a device number" del abc
usage_error "po2zfs-blk: --force is an option of del only" list --force
usage_error "po2zfs-blk: --no-recovery is an option of add only" list --no-recovery
usage_error "po2zfs-blk: --recovery is an option of add only" recover --recovery 0
usage_error "po2zfs-blk: --recovery and --no-recovery exclude each other" add --recovery --no-recovery /dev/null
usage_error "po2zfs-blk: --recovery and --no-recovery exclude each other" add --no-recovery --recovery /dev/null
info "pass"
