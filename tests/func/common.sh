# shellcheck shell=bash disable=SC2034,SC2012
# (globals are for the sourcing scripts; zone file names are plain decimals)
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Shared code of the po2zfs mount tests (tests/func/NNNN.sh). Sourced by each
# script; run a script as
#
#	P2Z_BUILD=/path/to/build bash tests/func/NNNN.sh
#
# Exit status: 0 pass, 1 fail, 77 skip (one line says why).
#
# Environment:
#   P2Z_BUILD          build directory: po2zfs, mount.po2zfs, po2zfs-emu,
#                      tests/p2z_tio (required)
#   P2Z_TIO            p2z_tio helper (default $P2Z_BUILD/tests/p2z_tio; if
#                      missing it is compiled into the test's work directory)
#   P2Z_GEOM           emulated geometry ZONE/CAP/LBA, default 96M/80M/4096
#   P2Z_GEOMS          geometries looped over by tests whose behaviour depends
#                      on the geometry (npo2 96M/80M and 3M/3M, po2 64M/48M,
#                      512 and 4096-byte LBAs)
#   P2Z_NR_ZONES       zones of an emulated device, default 8
#   P2Z_TEST_DEV       a real zoned device (/dev/ng0n1, /dev/nvme0n2) to use
#                      instead of emulated images; its geometry is read from
#                      the mount's user.dev.* xattrs, the first mount after
#                      p2z_device resets every non-empty sequential zone (a
#                      test starts as on a fresh image: zones an earlier run
#                      left closed would hold the device's active zone
#                      limit), and tests needing emulator features skip.
#                      /dev/nvmeXnY of an npo2 namespace has no node (the
#                      kernel hides the disk; po2zfs goes through ngXnY): it
#                      is accepted when /sys/block/nvmeXnY exists. An emu
#                      image made with the device's geometry and limits
#                      (po2zfs-emu create ... --max-open 3 --max-active 4)
#                      reproduces device mode without a device.
#   P2Z_TEST_BACKEND   backend= mount option for P2Z_TEST_DEV (nvme|zbd|emu)
#   P2Z_FUNC_MOUNT_OPTS  mount options added to every p2z_mount, e.g.
#                      "direct" (emu images read and written with O_DIRECT;
#                      skips unless the work directory takes 512-byte
#                      O_DIRECT writes, which the 512-byte LBA images need)
#   P2Z_KEEP           1: keep the work directory (images, daemon log)
#
# Each test works in its own mktemp -d directory (ctest runs tests in
# parallel), mounts in the foreground daemon mode (-f, backgrounded), waits
# for the mount by polling /proc/self/mountinfo in a bounded loop, and always
# unmounts and reaps the daemon on exit.

set -u

T_NAME=$(basename "$0" .sh)
P2Z_FUNC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
P2Z_GEOM=${P2Z_GEOM:-96M/80M/4096}
P2Z_GEOMS=${P2Z_GEOMS:-96M/80M/4096 96M/80M/512 3M/3M/4096 3M/3M/512 64M/48M/4096 64M/48M/512}
P2Z_NR_ZONES=${P2Z_NR_ZONES:-8}
P2Z_TEST_DEV=${P2Z_TEST_DEV:-}
P2Z_TEST_BACKEND=${P2Z_TEST_BACKEND:-}
P2Z_FUNC_MOUNT_OPTS=${P2Z_FUNC_MOUNT_OPTS:-}

WORK=
MNT=
DEV=
DEV_FRESH=0
DAEMON_PID=
BG_PIDS=()
TIO_OUT=
REPLY=

# ---------------------------------------------------------------- verdicts

skip()
{
	echo "SKIP: $T_NAME: $*"
	exit 77
}

fail()
{
	echo "FAIL: $T_NAME: $*" >&2
	exit 1
}

info()
{
	echo "$T_NAME: $*"
}

# assert_eq EXPECTED GOT WHAT
assert_eq()
{
	[ "$2" = "$1" ] || fail "$3: expected '$1', got '$2'"
}

# assert_ne UNEXPECTED GOT WHAT
assert_ne()
{
	[ "$2" != "$1" ] || fail "$3: got '$2', which it must not be"
}

# ---------------------------------------------------------------- p2z_tio

# run_tio ARGS...: run the helper, its output in TIO_OUT. The helper exits 0
# whatever the tested call returned; anything else is a broken test.
run_tio()
{
	local rc

	TIO_OUT=$("$TIO" "$@")
	rc=$?
	[ $rc -eq 0 ] || fail "p2z_tio $* exited $rc"
}

# expect EXPECTED WHAT ARGS...: run p2z_tio ARGS, its output must be EXPECTED
# (a byte count, OK, or an errno name such as EINVAL).
expect()
{
	local exp=$1 what=$2

	shift 2
	run_tio "$@"
	[ "$TIO_OUT" = "$exp" ] ||
		fail "$what: expected '$exp', got '$TIO_OUT' (p2z_tio $*)"
}

# expect_one_of "A B C" WHAT ARGS...: the outcome must be one of the words.
expect_one_of()
{
	local set=$1 what=$2 w

	shift 2
	run_tio "$@"
	for w in $set; do
		[ "$TIO_OUT" = "$w" ] && return 0
	done
	fail "$what: expected one of '$set', got '$TIO_OUT' (p2z_tio $*)"
}

# stat_all FILE: ST[KEY] for every KEY of stat_field, from one stat call
declare -A ST
stat_all()
{
	local kv

	run_tio stat "$1"
	case $TIO_OUT in
	*=*) ;;
	*) fail "stat $1: $TIO_OUT" ;;
	esac
	ST=()
	for kv in $TIO_OUT; do
		ST[${kv%%=*}]=${kv#*=}
	done
}

# stat_field FILE KEY: REPLY = size|blocks|blksize|mode|type|uid|gid|ino|nlink
stat_field()
{
	stat_all "$1"
	[ -n "${ST[$2]+set}" ] || fail "stat $1: no field $2 in '$TIO_OUT'"
	REPLY=${ST[$2]}
}

# statfs_field PATH KEY: REPLY = bsize|frsize|blocks|bfree|bavail|files|
# ffree|namemax|ro
statfs_field()
{
	local kv

	run_tio statfs "$1"
	for kv in $TIO_OUT; do
		if [ "${kv%%=*}" = "$2" ]; then
			REPLY=${kv#*=}
			return 0
		fi
	done
	fail "statfs $1: no field $2 in '$TIO_OUT'"
}

# mount_is_ro: the mount's own options (mountinfo field 6) say read-only
mount_is_ro()
{
	awk -v m="$MNT" '$5 == m { split($6, o, ","); r = o[1] == "ro" }
		END { exit !r }' /proc/self/mountinfo
}

# wait_mount_ro WHAT: statfs must show ST_RDONLY, and mountinfo the ro
# option, within 10 s (bounded poll: the daemon remounts from a thread of
# its own after the failing call has returned)
wait_mount_ro()
{
	local i

	for ((i = 0; i < 400; i++)); do
		statfs_field "$MNT" ro
		[ "$REPLY" = 1 ] && break
		sleep 0.025
	done
	[ "$REPLY" = 1 ] ||
		fail "$1: statfs shows no read-only flag 10 s after the error"
	mount_is_ro || fail "$1: statfs says read-only, mountinfo does not"
}

# assert_mount_rw WHAT: statfs shows no ST_RDONLY
assert_mount_rw()
{
	statfs_field "$MNT" ro
	assert_eq 0 "$REPLY" "statfs read-only flag ($1)"
	mount_is_ro && fail "$1: mountinfo says read-only"
	return 0
}

# xattr FILE NAME: REPLY = the value; fails the test if it cannot be read
xattr()
{
	run_tio getxattr "$1" "$2"
	case $TIO_OUT in
	E[A-Z]*) fail "getxattr $1 $2: $TIO_OUT" ;;
	esac
	REPLY=$TIO_OUT
}

assert_size()
{
	stat_field "$1" size
	assert_eq "$2" "$REPLY" "size of ${1#"$MNT"/}${3:+ ($3)}"
}

assert_xattr()
{
	xattr "$1" "$2"
	assert_eq "$3" "$REPLY" "${2} of ${1#"$MNT"/}${4:+ ($4)}"
}

assert_cond()
{
	assert_xattr "$1" user.zone.cond "$2" "${3:-}"
}

# append FILE OFS LEN SEED: write LEN pattern bytes at OFS (must succeed)
append()
{
	expect "$3" "append $3 bytes at $2 to ${1#"$MNT"/}" \
		write "$1" "$2" "$3" -s "$4"
}

# verify FILE OFS LEN SEED: the LEN bytes at OFS are pattern SEED
verify()
{
	expect "$3" "read back $3 bytes at $2 of ${1#"$MNT"/}" \
		read "$1" "$2" "$3" -s "$4"
}

# verify_zeros FILE OFS LEN
verify_zeros()
{
	expect "$3" "read $3 zero bytes at $2 of ${1#"$MNT"/}" \
		read "$1" "$2" "$3" -z
}

# still_serving FILE: one more LBA appends at the end of FILE and reads back;
# ends errno tests, to show that the daemon survived the bad input.
still_serving()
{
	local f=$1 size

	stat_field "$f" size
	size=$REPLY
	append "$f" "$size" "$LBA" 4242
	verify "$f" "$size" "$LBA" 4242
	assert_size "$f" $((size + LBA)) "after the final append"
}

# ---------------------------------------------------------------- numbers

# to_bytes 96M -> 100663296 (K/M/G binary suffixes)
to_bytes()
{
	local v=$1

	case $v in
	*K) echo $((${v%K} * 1024)) ;;
	*M) echo $((${v%M} * 1024 * 1024)) ;;
	*G) echo $((${v%G} * 1024 * 1024 * 1024)) ;;
	*) echo $((v)) ;;
	esac
}

# po2_roundup N: the smallest power of two >= N
po2_roundup()
{
	local p=1

	while [ $p -lt "$1" ]; do
		p=$((p * 2))
	done
	echo $p
}

# ---------------------------------------------------------------- setup

is_mounted()
{
	awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo
}

p2z_cleanup()
{
	local rc=$? fd pid i

	set +e
	for fd in 5 6 7 8 9; do
		eval "exec $fd>&-" 2>/dev/null
	done
	for pid in "${BG_PIDS[@]}"; do
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	if [ -n "$MNT" ] && is_mounted "$MNT"; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT"
	fi
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -TERM "$DAEMON_PID"
		for ((i = 0; i < 200; i++)); do
			kill -0 "$DAEMON_PID" 2>/dev/null || break
			sleep 0.025
		done
		kill -KILL "$DAEMON_PID" 2>/dev/null
		wait "$DAEMON_PID" 2>/dev/null
	fi
	if [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ -s "$WORK/daemon.log" ]; then
		local n=40
		grep -q '^--- thread ' "$WORK/daemon.log" && n=300
		echo "--- $T_NAME: daemon output (last $n lines):" >&2
		tail -n $n "$WORK/daemon.log" >&2
	fi
	if [ -n "$MNT" ] && is_mounted "$MNT"; then
		echo "$T_NAME: $MNT still mounted, leaving $WORK" >&2
		rc=1
	elif [ "${P2Z_KEEP:-0}" = 1 ]; then
		echo "$T_NAME: work directory kept: $WORK" >&2
	elif [ -n "$WORK" ]; then
		rm -rf "$WORK"
	fi
	exit $rc
}

# p2z_init DESCRIPTION: checks what every mount test needs, makes the work
# directory and installs the cleanup.
p2z_init()
{
	info "$*"
	[ -n "${P2Z_BUILD:-}" ] || skip "P2Z_BUILD (the build directory) is not set"
	PO2ZFS=$P2Z_BUILD/po2zfs
	MOUNT_P2Z=$P2Z_BUILD/mount.po2zfs
	EMU=$P2Z_BUILD/po2zfs-emu
	[ "$(id -u)" = 0 ] || skip "not root (FUSE mounts with allow_other need root)"
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	[ -x "$PO2ZFS" ] || skip "$PO2ZFS not built"
	if [ -z "$P2Z_TEST_DEV" ]; then
		[ -x "$EMU" ] || skip "$EMU not built"
	else
		[ -e "$P2Z_TEST_DEV" ] ||
			[ -e "/sys/block/${P2Z_TEST_DEV##*/}" ] ||
			skip "P2Z_TEST_DEV=$P2Z_TEST_DEV missing"
	fi
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/p2z-$T_NAME.XXXXXX") ||
		fail "mktemp failed"
	MNT=$WORK/mnt
	mkdir "$MNT" || fail "mkdir $MNT"
	trap p2z_cleanup EXIT
	trap 'exit 1' INT TERM
	p2z_check_direct
	p2z_find_tio
}

# With P2Z_FUNC_MOUNT_OPTS=direct, images are read and written with
# O_DIRECT: the work directory must take it for 512-byte blocks.
p2z_check_direct()
{
	case ,$P2Z_FUNC_MOUNT_OPTS, in
	*,direct,*) ;;
	*) return 0 ;;
	esac
	dd if=/dev/zero of="$WORK/odirect" bs=512 count=1 oflag=direct \
		status=none 2>/dev/null ||
		skip "P2Z_FUNC_MOUNT_OPTS=direct: $WORK takes no 512-byte O_DIRECT writes"
	rm -f "$WORK/odirect"
}

# The helper comes from the build; a guest without it may compile it here.
p2z_find_tio()
{
	TIO=${P2Z_TIO:-$P2Z_BUILD/tests/p2z_tio}
	[ -x "$TIO" ] && return 0
	TIO=$WORK/p2z_tio
	command -v "${CC:-cc}" >/dev/null ||
		skip "p2z_tio helper not built and no C compiler"
	"${CC:-cc}" -D_GNU_SOURCE -O2 -o "$TIO" \
		"$P2Z_FUNC_DIR/helpers/p2z_tio.c" || fail "cannot build p2z_tio"
}

need_emu()
{
	[ -z "$P2Z_TEST_DEV" ] || skip "needs the emulator ($*)"
}

need_prog()
{
	command -v "$1" >/dev/null || skip "$1 not installed"
}

# p2z_private_ns "$@": run the calling script again, from its start, in a
# private mount namespace (unshare -m, propagation private), so that nothing
# it mounts or binds reaches the host; skips unless root, with unshare and
# /dev/fuse. Returns only in the new namespace. Call it before p2z_init:
# the work directory and the cleanup belong to the second run.
p2z_private_ns()
{
	[ "${P2Z_PRIVATE_NS:-}" = "$0" ] && return 0
	[ "$(id -u)" = 0 ] || skip "not root (mount namespaces and FUSE mounts)"
	command -v unshare >/dev/null || skip "no unshare (util-linux)"
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	unshare -m --propagation private true 2>/dev/null ||
		skip "unshare -m does not work here"
	P2Z_PRIVATE_NS=$0 exec unshare -m --propagation private bash "$0" "$@"
}

# p2z_geoms [GEOM...]: the geometries a test loops over: GEOM... (default
# $P2Z_GEOMS) on emulated images, or the one device ("dev") when
# P2Z_TEST_DEV names a real one
p2z_geoms()
{
	if [ -n "$P2Z_TEST_DEV" ]; then
		echo dev
	else
		echo "${@:-$P2Z_GEOMS}"
	fi
}

# p2z_device GEOM [NR_ZONES [NR_CNV [po2zfs-emu create options...]]]
# Emulator mode: creates a fresh image $WORK/dev.img (replacing an older one)
# with GEOM = ZONE/CAP/LBA. Device mode: uses P2Z_TEST_DEV, whatever GEOM is.
# Sets DEV and, in emulator mode, the expected geometry: ZSIZE CAP (of the
# sequential zones) CNV_CAP (of the conventional ones) LBA PO2 NRZ NCNV NSEQ
# (device mode fills them at p2z_mount from the xattrs).
p2z_device()
{
	local geom=${1:-$P2Z_GEOM} nz=${2:-$P2Z_NR_ZONES} nc=${3:-0} out

	shift $(($# < 3 ? $# : 3))
	if [ -n "$P2Z_TEST_DEV" ]; then
		DEV=$P2Z_TEST_DEV
		EMU_GEOM=0
		DEV_FRESH=1
		return 0
	fi
	EMU_GEOM=1
	IFS=/ read -r ZSIZE CAP LBA <<<"$geom"
	ZSIZE=$(to_bytes "$ZSIZE")
	CAP=$(to_bytes "$CAP")
	PO2=$(po2_roundup "$ZSIZE")
	NRZ=$nz
	NCNV=$nc
	NSEQ=$((nz - nc))
	# the emulator's conventional zones have no capacity below the size
	CNV_CAP=$ZSIZE
	DEV=$WORK/dev.img
	rm -f "$DEV"
	out=$("$EMU" create "$DEV" --zone-size "$ZSIZE" --zone-cap "$CAP" \
		--zones "$nz" --conv "$nc" --lba-size "$LBA" "$@" 2>&1) ||
		fail "po2zfs-emu create $geom x$nz conv $nc $*: $out"
}

# wait_mounted: poll mountinfo, bounded (10 s); fail early if the daemon died
wait_mounted()
{
	local i rc

	for ((i = 0; i < 400; i++)); do
		is_mounted "$MNT" && return 0
		if [ -n "$DAEMON_PID" ] && ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			wait "$DAEMON_PID"
			rc=$?
			DAEMON_PID=
			fail "daemon exited with status $rc before mounting: $(tail -n 3 "$WORK/daemon.log")"
		fi
		sleep 0.025
	done
	fail "$MNT not mounted after 10 s"
}

# cnv_geoms: the geometries of the conventional zone tests, or "dev"
cnv_geoms()
{
	if [ -n "$P2Z_TEST_DEV" ]; then
		echo dev
	else
		echo "96M/80M/4096 3M/3M/512"
	fi
}

# p2z_cnv_mount G: a device of geometry G with two conventional zones (or
# the device under test, skipped when it has none), mounted; CAP is set to
# the conventional zones' capacity.
p2z_cnv_mount()
{
	p2z_device "$1" 4 2
	p2z_mount
	[ "$NCNV" -gt 0 ] || skip "the device has no conventional zones"
	CAP=$CNV_CAP
}

# p2z_mount [OPTIONS]: mount DEV on MNT with the daemon in the foreground
# (backgrounded here), then read the geometry in device mode.
p2z_mount()
{
	local o=${1:-}

	[ -n "$P2Z_TEST_BACKEND" ] && o=${o:+$o,}backend=$P2Z_TEST_BACKEND
	[ -n "$P2Z_FUNC_MOUNT_OPTS" ] && o=${o:+$o,}$P2Z_FUNC_MOUNT_OPTS
	echo "=== mount $DEV ${o:+-o $o}" >>"$WORK/daemon.log"
	if [ -n "$o" ]; then
		"$PO2ZFS" "$DEV" "$MNT" -f -o "$o" >>"$WORK/daemon.log" 2>&1 &
	else
		"$PO2ZFS" "$DEV" "$MNT" -f >>"$WORK/daemon.log" 2>&1 &
	fi
	DAEMON_PID=$!
	wait_mounted
	p2z_mounted "$o"
}

# p2z_mounted OPTIONS: after a mount of DEV on MNT; in device mode reads the
# geometry and, on the first rw mount since p2z_device, resets every
# sequential zone holding data, so that the test starts as on a fresh image
p2z_mounted()
{
	local f

	[ "${EMU_GEOM:-1}" = 1 ] && return 0
	p2z_read_geom
	[ "$DEV_FRESH" = 1 ] || return 0
	case ,$1, in
	*,ro,*) return 0 ;;
	esac
	DEV_FRESH=0
	for f in "$MNT"/seq/*; do
		[ -s "$f" ] || continue
		expect OK "reset ${f#"$MNT"/}, left non-empty by an earlier run" \
			truncate "$f" 0
	done
}

# Device mode: geometry from the root xattrs and the directory listings.
p2z_read_geom()
{
	xattr "$MNT" user.dev.lba_size
	LBA=$REPLY
	xattr "$MNT" user.dev.zone_size
	ZSIZE=$REPLY
	xattr "$MNT" user.dev.po2_zone_size
	PO2=$REPLY
	xattr "$MNT" user.dev.nr_zones
	NRZ=$REPLY
	NSEQ=$(ls "$MNT/seq" | wc -l)
	NCNV=0
	[ -d "$MNT/cnv" ] && NCNV=$(ls "$MNT/cnv" | wc -l)
	xattr "$MNT/seq/0" user.zone.capacity
	CAP=$REPLY
	CNV_CAP=$ZSIZE
	if [ "$NCNV" -gt 0 ]; then
		xattr "$MNT/cnv/0" user.zone.capacity
		CNV_CAP=$REPLY
	fi
}

# p2z_umount: unmount, then the daemon must exit by itself with status 0
# (a sanitizer report or a crash at exit fails the test). A daemon that
# has not exited 30 s later (sanitizer builds on a loaded machine take a
# few seconds) is taken as hung: its threads' stacks go to the log.
p2z_umount()
{
	local i rc t

	umount "$MNT" || fail "umount $MNT failed"
	is_mounted "$MNT" && fail "$MNT still mounted after umount"
	[ -n "$DAEMON_PID" ] || return 0
	for ((i = 0; i < 1200; i++)); do
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.025
	done
	if kill -0 "$DAEMON_PID" 2>/dev/null; then
		for t in /proc/"$DAEMON_PID"/task/*; do
			echo "--- thread ${t##*/} $(cat "$t/comm" 2>/dev/null)" \
				"state $(awk '{print $3}' "$t/stat" 2>/dev/null)" \
				"wchan $(cat "$t/wchan" 2>/dev/null)"
			cat "$t/stack" 2>/dev/null
		done >>"$WORK/daemon.log"
		command -v gdb >/dev/null &&
			timeout 60 gdb -q -batch -p "$DAEMON_PID" \
				-ex 'thread apply all bt' >>"$WORK/daemon.log" 2>&1
		kill -KILL "$DAEMON_PID"
		wait "$DAEMON_PID"
		DAEMON_PID=
		fail "daemon still running 30 s after unmount (stacks in the log)"
	fi
	wait "$DAEMON_PID"
	rc=$?
	DAEMON_PID=
	[ $rc -eq 0 ] || fail "daemon exit status $rc after unmount"
}

# p2z_kill_daemon: kill -9 the daemon (crash), detach the dead mount.
p2z_kill_daemon()
{
	kill -KILL "$DAEMON_PID" 2>/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
	umount "$MNT" 2>/dev/null || umount -l "$MNT" ||
		fail "cannot detach $MNT after killing the daemon"
	is_mounted "$MNT" && fail "$MNT still mounted after the daemon died"
}

# p2z_reset_seq I...: reset the given sequential zone files (a no-op right
# after the first mount, fresh image or cleaned device; skips the test when
# the device has too few sequential zones).
p2z_reset_seq()
{
	local i

	for i in "$@"; do
		[ "$i" -lt "$NSEQ" ] ||
			skip "needs $((i + 1)) sequential zones, device has $NSEQ"
		expect OK "reset seq/$i" truncate "$MNT/seq/$i" 0
	done
}

# need_seq N: the device must have at least N sequential zones
need_seq()
{
	[ "$NSEQ" -ge "$1" ] || skip "needs $1 sequential zones, device has $NSEQ"
}

# assert_cond_in "C1 C2" FILE WHAT: the zone condition is one of the words
assert_cond_in()
{
	local w

	xattr "$2" user.zone.cond
	for w in $1; do
		[ "$REPLY" = "$w" ] && return 0
	done
	fail "user.zone.cond of ${2#"$MNT"/} ($3): expected one of '$1', got '$REPLY'"
}

# ---------------------------------------------------------------- po2 view

# A model of the po2 view for build_po2_ref: per device zone index i,
# ZW[i] = bytes of pattern ZSEED[i] written from the zone start (zeros
# follow up to the po2 boundary).
declare -A ZW ZSEED

# build_po2_ref OFS LEN OUT: the expected po2 view bytes [OFS, OFS+LEN)
build_po2_ref()
{
	local pos=$1 end=$(($1 + $2)) out=$3 i zo zend w n

	: >"$out"
	while [ "$pos" -lt "$end" ]; do
		i=$((pos / PO2))
		zo=$((pos - i * PO2))
		zend=$(((i + 1) * PO2))
		[ "$zend" -gt "$end" ] && zend=$end
		zend=$((zend - i * PO2))
		w=${ZW[$i]:-0}
		if [ "$zo" -lt "$w" ]; then
			n=$(( (w < zend ? w : zend) - zo ))
			"$TIO" pattern "${ZSEED[$i]}" "$zo" "$n" >>"$out"
			zo=$((zo + n))
		fi
		if [ "$zo" -lt "$zend" ]; then
			head -c $((zend - zo)) /dev/zero >>"$out"
		fi
		pos=$((i * PO2 + zend))
	done
}

# expect_po2 OFS LEN WHAT: the po2 view at [OFS, OFS+LEN) matches the model
# (read in one pread call up to 1 MiB per call)
expect_po2()
{
	local ref=$WORK/po2.ref

	build_po2_ref "$1" "$2" "$ref"
	expect "$2" "po2 view [$1, +$2) ($3)" read "$MNT/po2" "$1" "$2" -f "$ref"
}

# ---------------------------------------------------------------- fio

# fio_seq_write FILE ENGINE BS SIZE: sequential direct writes, iodepth 8,
# appended from the current file size (a reset zone: offset 0), verified by
# crc32c with fio's offset-carrying headers (a write landing out of order
# fails the verification).
fio_seq_write()
{
	local f=$1 eng=$2 bs=$3 size=$4 log=$WORK/fio.log

	fio --name=seqw --filename="$f" --create_on_open=0 \
		--allow_file_create=0 --file_append=1 --unlink=0 \
		--fallocate=none --rw=write --ioengine="$eng" --iodepth=8 \
		--direct=1 --bs="$bs" --size="$size" --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --verify_state_save=0 \
		--continue_on_error=none \
		>"$log" 2>&1 ||
		fail "fio $eng bs=$bs size=$size on ${f#"$MNT"/}: $(grep -iE 'err|verify' "$log" | head -5)"
}

# fio_verify_only FILE ENGINE BS SIZE: check data written by fio_seq_write
# at offset 0 (after a reset) is still there, e.g. after a remount
fio_verify_only()
{
	local f=$1 eng=$2 bs=$3 size=$4 log=$WORK/fio.log

	fio --name=seqw --filename="$f" --create_on_open=0 \
		--allow_file_create=0 --unlink=0 --fallocate=none --rw=write \
		--offset=0 --ioengine="$eng" --iodepth=8 --direct=1 --bs="$bs" \
		--size="$size" --verify=crc32c --verify_only=1 \
		--verify_fatal=1 --verify_state_save=0 >"$log" 2>&1 ||
		fail "fio verify_only $eng bs=$bs on ${f#"$MNT"/}: $(grep -iE 'err|verify' "$log" | head -5)"
}

# fio_seq_suite ENGINE: on each geometry, fio sequential writes with bs 128k
# and 1M to two zone files, exact sizes, the data again after a remount, and
# a zone filled to capacity by fio (the body of the per-engine tests)
fio_seq_suite()
{
	local eng=$1 g size s0 s1

	need_fio_engine "$eng"
	for g in $(p2z_geoms "$P2Z_GEOM" 64M/48M/512); do
		p2z_device "$g" 4 0
		p2z_mount
		p2z_reset_seq 0 1
		size=$((CAP < 32 * 1024 * 1024 ? CAP : 32 * 1024 * 1024))
		s0=$((size / (128 * 1024) * 128 * 1024))
		# seq/0 takes the final append (still_serving): below capacity
		[ "$s0" -lt "$CAP" ] || s0=$((s0 - 128 * 1024))
		s1=$((size / (1024 * 1024) * 1024 * 1024))
		fio_seq_write "$MNT/seq/0" "$eng" 128k "$s0"
		assert_size "$MNT/seq/0" "$s0" "after fio bs=128k ($g)"
		fio_seq_write "$MNT/seq/1" "$eng" 1M "$s1"
		assert_size "$MNT/seq/1" "$s1" "after fio bs=1M ($g)"
		p2z_umount
		p2z_mount
		assert_size "$MNT/seq/0" "$s0" "remounted ($g)"
		assert_size "$MNT/seq/1" "$s1" "remounted ($g)"
		fio_verify_only "$MNT/seq/0" "$eng" 128k "$s0"
		fio_verify_only "$MNT/seq/1" "$eng" 1M "$s1"
		# a full zone by fio: writing exactly the capacity
		if [ "$CAP" -le $((48 * 1024 * 1024)) ]; then
			expect OK "reset seq/1 ($g)" truncate "$MNT/seq/1" 0
			fio_seq_write "$MNT/seq/1" "$eng" 1M "$CAP"
			assert_size "$MNT/seq/1" "$CAP" "fio to capacity ($g)"
			assert_cond "$MNT/seq/1" full "fio to capacity ($g)"
		fi
		still_serving "$MNT/seq/0"
		p2z_umount
		info "ok: $g"
	done
}

# need_fio_engine ENGINE: skip when fio or the engine does not work here
need_fio_engine()
{
	local t=$WORK/fio-probe

	need_prog fio
	head -c 65536 /dev/zero >"$t"
	fio --name=probe --filename="$t" --rw=read --ioengine="$1" \
		--size=64k --bs=4k >/dev/null 2>&1 ||
		skip "fio ioengine $1 does not work on this system"
	rm -f "$t"
}
