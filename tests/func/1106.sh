#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# po2zfs-emu and po2zfs-zone answer alike: --version (and -V) one line
# "PROG VERSION" on stdout, exit 0; --help (and -h) the usage on stdout,
# exit 0; a usage error one line on stderr saying why, "(see PROG --help)",
# exit 2; a device or image that cannot be opened (not an image, missing, an
# unknown backend, busy) exactly one line on stderr, exit 1.
. "$(dirname "$0")/common.sh"

p2z_init "po2zfs-emu, po2zfs-zone: --version, --help, usage errors, one line for a device that cannot be opened"
[ -z "$P2Z_TEST_DEV" ] || skip "an emulated image only"
ZONE=$P2Z_BUILD/po2zfs-zone
[ -x "$ZONE" ] || skip "$ZONE not built"

# run EXPECTED_RC PROG ARGS...: OUT = stdout, ERR = stderr
run()
{
	local want=$1 rc

	shift
	"$@" >"$WORK/out" 2>"$WORK/err" </dev/null
	rc=$?
	OUT=$(cat "$WORK/out")
	ERR=$(cat "$WORK/err")
	[ "$rc" = "$want" ] ||
		fail "${*#"$P2Z_BUILD/"}: exit $rc, expected $want: $OUT $ERR"
}

# The version po2zfs prints ("po2zfs 0.1.0, libfuse 3.14.0").
run 0 "$PO2ZFS" --version
ver=${OUT#po2zfs }
ver=${ver%%,*}
if [ -z "$ver" ] || [ "$ver" = "$OUT" ]; then
	fail "po2zfs --version: '$OUT'"
fi

# A mounted image: po2zfs-zone reset must not get it.
p2z_device 1M/1M/4096 4 1
p2z_mount ""

for prog in po2zfs-emu po2zfs-zone; do
	bin=$P2Z_BUILD/$prog
	for opt in --version -V; do
		run 0 "$bin" "$opt"
		assert_eq "$prog $ver" "$OUT" "$prog $opt"
		assert_eq "" "$ERR" "$prog $opt: stderr"
	done
	run 0 "$bin" --help
	help=$OUT
	assert_eq "Usage:" "${OUT%%$'\n'*}" "$prog --help: first line"
	assert_eq "" "$ERR" "$prog --help: stderr"
	run 0 "$bin" -h
	assert_eq "$help" "$OUT" "$prog -h"

	# Usage errors: one line saying why, on stderr only.
	see="(see $prog --help)"
	run 2 "$bin"
	assert_eq "" "$OUT" "$prog (no command): stdout"
	assert_eq "$prog: missing command $see" "$ERR" \
		"$prog (no command): stderr"
	run 2 "$bin" frob
	assert_eq "$prog: unknown command 'frob' $see" "$ERR" "$prog frob"
	run 2 "$bin" report --frob "$DEV"
	assert_eq "$prog: unknown option '--frob' $see" "$ERR" \
		"$prog report --frob"
	run 2 "$bin" report
	case $prog in
	po2zfs-emu) why="report needs exactly one IMAGE" ;;
	*) why="report needs a DEVICE" ;;
	esac
	assert_eq "$prog: $why $see" "$ERR" "$prog report (no operand)"

	# What cannot be opened: exactly one line.
	run 1 "$bin" report "$WORK/missing.img"
	assert_eq "" "$OUT" "$prog report of a missing file: stdout"
	assert_eq "$prog: $WORK/missing.img: No such file or directory" "$ERR" \
		"$prog report of a missing file"
done

run 1 "$EMU" report /dev/null
assert_eq "po2zfs-emu: /dev/null: not a regular file" "$ERR" \
	"po2zfs-emu report /dev/null"
run 1 "$ZONE" report /dev/null
assert_eq "" "$OUT" "po2zfs-zone report /dev/null: stdout"
assert_eq "po2zfs-zone: /dev/null: not a zoned device nor an emulated zoned image" \
	"$ERR" "po2zfs-zone report /dev/null"
run 1 "$ZONE" map --backend nope "$DEV"
assert_eq 'po2zfs-zone: unknown or unbuilt backend "nope"' "$ERR" \
	"po2zfs-zone map --backend nope"
run 1 "$ZONE" reset "$DEV" 1 --yes
assert_eq "po2zfs-zone: $DEV: Device or resource busy (mounted by po2zfs, or in use by another program)" \
	"$ERR" "po2zfs-zone reset of a mounted image"
# report only looks: it works on the mounted image
run 0 "$ZONE" report "$DEV"
assert_eq "" "$ERR" "po2zfs-zone report of a mounted image: stderr"
p2z_umount
exit 0
