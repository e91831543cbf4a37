#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# po2zfs-zone on an emulated npo2 device (96 MiB zones, 80 MiB capacity,
# one conventional zone): exact report rows, JSON fields, map cells, reset
# and finish verified through report, the confirmation rules, and the
# refusal (EBUSY) of a mounted image.
. "$(dirname "$0")/common.sh"

p2z_init "po2zfs-zone: report, report --json, map, reset, finish, EBUSY"
[ -z "$P2Z_TEST_DEV" ] || skip "exact rows of an emulated image only"
ZONE=$P2Z_BUILD/po2zfs-zone
[ -x "$ZONE" ] || skip "$ZONE not built"
need_prog python3

# row ZONE TYPE COND START PO2 WP CAP FILL: a report line, as the tool
# prints it
row()
{
	printf '%6s %-4s %-14s %12s %12s %12s %12s %5s\n' "$@"
}

# rows: the zone lines of the report (after the column header)
rows()
{
	"$ZONE" report "$DEV" | sed -n '/^  zone type/,$p' | tail -n +2
}

# json_rows: the same fields from report --json, one zone per line
json_rows()
{
	"$ZONE" report --json "$DEV" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for z in d["zones"]:
    wp = "-" if z["wp_lba"] is None else z["wp_lba"]
    fill = "-" if z["fill_pct"] is None else "%d%%" % z["fill_pct"]
    print("%6s %-4s %-14s %12s %12s %12s %12s %5s" % (z["zone"], z["type"],
          z["cond"], z["start_lba"], z["po2_start_lba"], wp, z["cap_lba"],
          fill))
'
}

# check_report WHAT EXPECTED: report and report --json both show EXPECTED
check_report()
{
	assert_eq "$2" "$(rows)" "report rows ($1)"
	assert_eq "$2" "$(json_rows)" "report --json zones ($1)"
}

# zone_cmd EXPECTED_RC ARGS...: run po2zfs-zone ARGS with stdin from
# /dev/null; OUT = stdout and stderr
zone_cmd()
{
	local want=$1 rc

	shift
	OUT=$("$ZONE" "$@" </dev/null 2>&1)
	rc=$?
	[ "$rc" = "$want" ] ||
		fail "po2zfs-zone $*: exit $rc, expected $want: $OUT"
}

# 96M zones = 24576 LBAs of 4 KiB, po2 32768, capacity 20480
p2z_device 96M/80M/4096 6 1
p2z_mount
append "$MNT/seq/0" 0 $((8 * 1024 * 1024)) 1 # zone 1: 2048 LBAs, 10%
expect OK "finish seq/1" truncate "$MNT/seq/1" $((80 * 1024 * 1024))
append "$MNT/seq/2" 0 4096 3 # zone 3: 1 LBA, 0%

# report works while mounted (it claims nothing); reset and finish refuse
zone_cmd 0 report "$DEV"
zone_cmd 1 reset "$DEV" 1 --yes
case $OUT in
*"$DEV: Device or resource busy (mounted by po2zfs"*) ;;
*) fail "reset of a mounted image: expected EBUSY, got: $OUT" ;;
esac
zone_cmd 1 finish "$DEV" --all --yes
case $OUT in
*"Device or resource busy"*) ;;
*) fail "finish of a mounted image: expected EBUSY, got: $OUT" ;;
esac
assert_size "$MNT/seq/0" $((8 * 1024 * 1024)) "after the refused reset"
p2z_umount

geom=$("$ZONE" report "$DEV" | sed -n '1,/^$/p')
want="device:         $DEV (emu)
lba size:       4096 bytes
zone size:      24576 LBAs (96 MiB)
po2 zone size:  32768 LBAs (128 MiB)
zones:          6 (1 conventional, 5 sequential)
max open:       unlimited
max active:     unlimited"
assert_eq "$want" "$geom" "report geometry"

# As the daemon left it: zones 1 and 3 implicitly open.
check_report "after the mount" "$(
	row 0 cnv not-wp 0 0 - 24576 -
	row 1 seq implicit-open 24576 32768 26624 20480 10%
	row 2 seq full 49152 65536 69632 20480 100%
	row 3 seq implicit-open 73728 98304 73729 20480 0%
	row 4 seq empty 98304 131072 98304 20480 0%
	row 5 seq empty 122880 163840 122880 20480 0%
)"
"$ZONE" report --json "$DEV" | python3 -m json.tool >/dev/null ||
	fail "report --json is not valid JSON"
json=$("$ZONE" report --json "$DEV" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["device"], d["backend"], d["lba_bytes"], d["zone_lba"],
      d["po2_zone_lba"], d["nr_zones"], d["nr_cnv_zones"], d["max_open"],
      d["max_active"], len(d["zones"]))')
assert_eq "$DEV emu 4096 24576 32768 6 1 0 0 6" "$json" "report --json device fields"

want="$DEV: 6 zones, 16 per row
       0: N- I1 F* I0 E0 E0
E empty, I implicit-open, O explicit-open, C closed, F full, R read-only, X offline, N conventional;
then the written part in tenths of the capacity: 0-9, * full"
assert_eq "$want" "$("$ZONE" map "$DEV")" "map (not a terminal: no colours)"

# No terminal, no --yes: refused before the device is opened.
zone_cmd 1 reset "$DEV" 1
assert_eq "po2zfs-zone: $DEV: not a terminal to ask on: reset needs --yes" \
	"$OUT" "reset without --yes"
# Conventional zones and zones past the end are refused.
zone_cmd 1 reset "$DEV" 0 --yes
assert_eq "po2zfs-zone: $DEV: zone 0 is conventional: nothing to reset" \
	"$OUT" "reset of a conventional zone"
zone_cmd 1 finish "$DEV" 4-6 --yes
assert_eq "po2zfs-zone: $DEV: zone 6 out of range (6 zones)" "$OUT" \
	"finish past the last zone"
zone_cmd 2 reset "$DEV" 3-1 --yes
zone_cmd 2 reset "$DEV"
zone_cmd 2 map "$DEV" --yes

# The claiming open (a new "power cycle" of the emulated device) leaves
# implicitly open zones closed, as after a daemon restart.
zone_cmd 0 reset "$DEV" 1 --yes
assert_eq "$DEV: reset 1 zone (1-1)" "$OUT" "reset 1 output"
zone_cmd 0 finish "$DEV" 4-5 --yes
assert_eq "$DEV: finished 2 zones (4-5)" "$OUT" "finish 4-5 output"
check_report "after reset 1, finish 4-5" "$(
	row 0 cnv not-wp 0 0 - 24576 -
	row 1 seq empty 24576 32768 24576 20480 0%
	row 2 seq full 49152 65536 69632 20480 100%
	row 3 seq closed 73728 98304 73729 20480 0%
	row 4 seq full 98304 131072 118784 20480 100%
	row 5 seq full 122880 163840 143360 20480 100%
)"
assert_eq "       0: N- E0 F* C0 F* F*" "$("$ZONE" map "$DEV" | sed -n 2p)" \
	"map after reset 1, finish 4-5"

# On a terminal (script(1) gives one): the question, answered n then y.
if command -v script >/dev/null; then
	out=$(printf 'n\n' | script -qec "'$ZONE' reset '$DEV' 2" /dev/null)
	rc=$?
	assert_eq 1 "$rc" "reset answered n: exit status"
	case $out in
	*"reset zone 2 of $DEV (its data is lost)? [y/N] "*"nothing done"*) ;;
	*) fail "reset answered n: $out" ;;
	esac
	assert_eq "$(row 2 seq full 49152 65536 69632 20480 100%)" \
		"$(rows | sed -n 3p)" "zone 2 after the n answer"
	out=$(printf 'y\n' | script -qec "'$ZONE' reset '$DEV' 2" /dev/null) ||
		fail "reset answered y: $out"
	assert_eq "$(row 2 seq empty 49152 65536 49152 20480 0%)" \
		"$(rows | sed -n 3p)" "zone 2 after the y answer"
	# colours only on a terminal
	out=$(script -qec "'$ZONE' map '$DEV'" /dev/null)
	case $out in
	*$'\033[34mF*\033[0m'*) ;;
	*) fail "map on a terminal: no colour for a full zone: $out" ;;
	esac
	# progress on a terminal once a command runs long (at once with
	# P2Z_ZONE_PROGRESS_MS=0): the first and the last count, each over
	# the one before, then the line cleared for the result
	out=$(P2Z_ZONE_PROGRESS_MS=0 script -qec \
		"'$ZONE' finish '$DEV' --all --yes" /dev/null) ||
		fail "finish --all on a terminal: $out"
	case $out in
	$'\r'"$DEV: finish: 1/5 zones"*$'\r'"$DEV: finish: 5/5 zones"$'\r\033[K'"$DEV: finished 5 zones (1-5)"*) ;;
	*) fail "finish --all on a terminal, progress: $(printf %q "$out")" ;;
	esac
else
	info "no script(1): the terminal cases are not checked"
fi
# no progress where stderr is not a terminal, however long it takes
P2Z_ZONE_PROGRESS_MS=0 zone_cmd 0 finish "$DEV" --all --yes
assert_eq "$DEV: finished 5 zones (1-5)" "$OUT" "finish --all, no terminal"

zone_cmd 0 reset "$DEV" --all --yes
assert_eq "$DEV: reset 5 zones (1-5)" "$OUT" "reset --all output"
check_report "after reset --all" "$(
	row 0 cnv not-wp 0 0 - 24576 -
	row 1 seq empty 24576 32768 24576 20480 0%
	row 2 seq empty 49152 65536 49152 20480 0%
	row 3 seq empty 73728 98304 73728 20480 0%
	row 4 seq empty 98304 131072 98304 20480 0%
	row 5 seq empty 122880 163840 122880 20480 0%
)"

# The mount sees what the tool did.
p2z_mount
assert_size "$MNT/seq/0" 0 "seq/0 after reset --all"
assert_cond "$MNT/seq/3" empty "after reset --all"
p2z_umount
exit 0
