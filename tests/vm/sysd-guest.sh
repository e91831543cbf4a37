#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck source-path=SCRIPTDIR
#
# Runs inside the systemd guest (see sysd.sh) as /p2z/guest.sh, started
# by systemd (p2z-sysd.service, after udev's coldplug): one NVMe
# controller with nsid 1, an npo2 ZNS namespace of 16 zones of 96 MiB,
# 80 MiB capacity. The unit under test is contrib/systemd/po2zfs-blk@.service
# as shipped, its instance the namespace's stable name from
# contrib/udev/60-po2zfs-zns.rules, /dev/zns/QEMU_NVMe_Ctrl_<serial>-ns1,
# escaped. In order, each one result line (guest-lib.sh):
#   sysd start    systemctl start: the device unit of the stable name is
#                 plugged (the rule tags it for systemd) and links to the
#                 namespace's ngXnY, the unit is active (running, no
#                 restart), /dev/ublkb0 has 16 zones of 128 MiB with 80 MiB
#                 capacity, list shows it alive; zonefs made on it
#   sysd kill     an O_DIRECT append writer on zonefs seq/0, the server's
#                 MainPID SIGKILLed: systemd restarts it (NRestarts=1, a
#                 new MainPID), its add recovers the quiesced device (the
#                 journal's "recovering it" line, list alive), the writer
#                 goes on without an error and every acknowledged record
#                 reads back at its offset, the file's size is the zone's
#                 write pointer
#   sysd restart  the same under systemctl restart (the upgrade path): the
#                 old server hands the mounted device over (its handover
#                 and "left ... quiesced" lines, systemd's "Deactivated
#                 successfully": exit 0), the new one recovers it;
#                 NRestarts 0 (a manual restart resets systemd's count)
#   sysd stop     zonefs unmounted, systemctl stop: the server stops the
#                 device ("Terminated: stopping"), the unit is inactive with
#                 Result=success and exit 0, no /dev/ublkb0 or /dev/ublkc0,
#                 nothing listed, no record left in /run/po2zfs-blk
# then the kernel log (no WARNING, BUG, Oops), and power off.
set -u
export PATH=/p2z/bin:/usr/sbin:/usr/bin:/sbin:/bin
M=$((1024 * 1024))
Z=$((128 * M))
SB=/p2z/zonefs-sb.bin
P2Z_SYSD_SERIAL=po2zfssysd
MNT=/mnt/zonefs
DEV=/dev/ublkb0
# shellcheck source=/dev/null
. /p2z/vm.conf
# shellcheck source=guest-lib.sh
. /p2z/guest-lib.sh
results_init
SECONDS=0
ZNS=/dev/zns/QEMU_NVMe_Ctrl_$P2Z_SYSD_SERIAL-ns1
U=po2zfs-blk@$(systemd-escape --path "$ZNS").service
J0=0 # lines of the unit's journal before the current check
W_N=0 W_WHY= # writer_verify's results
echo "P2Z-VM sysd: up after $(cut -d' ' -f1 /proc/uptime) s, unit $U"

# prop NAME: the unit's property NAME
prop() {
	systemctl show -P "$1" "$U"
}

# wait_for SECONDS COMMAND...: poll COMMAND every 0.05 s until it
# succeeds, at most SECONDS
wait_for() {
	local i n=$(($1 * 20))

	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

exists() { [ -e "$1" ]; }
absent() { [ ! -e "$1" ]; }

# the third field of po2zfs-blk list for /dev/ublkb0
blk_state() {
	po2zfs-blk list 2>/dev/null | awk '$1 == "/dev/ublkb0" { print $3 }'
}

state_is() { [ "$(blk_state)" = "$1" ]; }

# the unit is active and running with NRestarts $1 and a MainPID other
# than $2
running() { # restarts oldpid
	[ "$(prop ActiveState)/$(prop SubState)/$(prop NRestarts)" = "active/running/$1" ] &&
		[ "$(prop MainPID)" != 0 ] && [ "$(prop MainPID)" != "$2" ]
}

# the unit's journal since the check began (journal_mark), message text:
# the lines past the J0 it had then (journald appends in arrival order)
journal() {
	journalctl --no-pager -o cat -u "$U" | tail -n +$((J0 + 1))
}

journal_mark() {
	J0=$(journalctl --no-pager -o cat -u "$U" | wc -l)
}

# lines of journal matching fixed string $1
jcount() {
	journal | grep -cF -- "$1"
}

# journald got exactly one line matching $1 (it reads the server's
# output and systemd's messages on their own sockets: poll)
jonce() {
	wait_for 10 jis1 "$1"
}

jis1() { [ "$(jcount "$1")" = 1 ]; }

# the append writer: 1 MiB records appended with O_DIRECT to zonefs
# seq/$1 until /tmp/w-stop exists; an acknowledged record is logged
# "INDEX OFFSET" in /tmp/w-acked.$1, a failed one in /tmp/w-err.$1
writer() { # file
	local i=0 before f=$MNT/seq/$1

	: >"/tmp/w-acked.$1"
	: >"/tmp/w-err.$1"
	while [ ! -e /tmp/w-stop ]; do
		head -c $M /dev/urandom >"/tmp/w-rec.$1.$i"
		before=$(stat -c %s "$f")
		if dd if="/tmp/w-rec.$1.$i" of="$f" bs=1M oflag=direct,append \
			conv=notrunc status=none 2>>"/tmp/w-err.$1"; then
			echo "$i $before" >>"/tmp/w-acked.$1"
		else
			echo "$i $before" >>"/tmp/w-err.$1"
		fi
		i=$((i + 1))
	done
}

acked_over() { # file lines
	[ "$(wc -l <"/tmp/w-acked.$1")" -gt "$2" ]
}

# Stop writer $2 (pid) of seq/$1, then every acknowledged record must read
# back at its offset, no write failed, and the file's size is its zone's
# write pointer and the acknowledged bytes. Sets W_N (records
# acknowledged) and W_WHY (the reasons, if any).
writer_verify() { # file pid
	local f=$1 why='' i off n=0 bad=0 sz wp

	touch /tmp/w-stop
	wait "$2"
	rm -f /tmp/w-stop
	echo 3 >/proc/sys/vm/drop_caches
	while read -r i off; do
		dd if="$MNT/seq/$f" bs=4k skip=$((off / 4096)) count=256 \
			iflag=direct status=none | cmp -s - "/tmp/w-rec.$f.$i" ||
			bad=$((bad + 1))
		n=$((n + 1))
	done <"/tmp/w-acked.$f"
	sz=$(stat -c %s "$MNT/seq/$f")
	# seq/f is zone f + 1 (zone 0 holds the super block)
	wp=$(blkzone report -o $(((f + 1) * Z / 512)) -c 1 $DEV |
		sed -n 's/.*wptr \(0x[0-9a-f]*\).*/\1/p')
	wp=$((wp * 512))
	[ "$sz" = "$wp" ] || why="$why size($sz)-not-wp($wp)"
	[ "$sz" = $((n * M)) ] || why="$why size($sz)-not-acked($n MiB)"
	[ "$bad" = 0 ] || why="$why lost=$bad"
	[ ! -s "/tmp/w-err.$f" ] ||
		why="$why writer-errors($(tr '\n' ' ' <"/tmp/w-err.$f"))"
	[ "$n" -gt 0 ] || why="$why nothing-acked"
	W_N=$n
	W_WHY=$why
}

# (a) systemctl start: the device unit, the unit, the device's geometry
check_start() {
	local why='' r ng dunit q=/sys/block/ublkb0/queue z0

	journal_mark
	timeout 200 systemctl start "$U"
	r=$?
	[ $r = 0 ] || why="$why start-exit($r)"
	ns_map
	ng=${NG[1]:-none}
	[ "$(readlink -f "$ZNS")" = "$ng" ] ||
		why="$why link($ZNS->$(readlink -f "$ZNS"), ng $ng)"
	dunit=$(systemd-escape --path --suffix=device "$ZNS")
	[ "$(systemctl show -P ActiveState "$dunit")" = active ] ||
		why="$why $dunit($(systemctl show -P ActiveState "$dunit"))"
	running 0 0 || why="$why unit($(prop ActiveState)/$(prop SubState)/$(prop NRestarts))"
	wait_for 10 exists $DEV || why="$why no-$DEV"
	z0=$(blkzone report -c 1 $DEV 2>&1 | sed -n \
		's/^ *start: \(0x[0-9a-f]*\), len \(0x[0-9a-f]*\), cap \(0x[0-9a-f]*\),.*/\1 \2 \3/p')
	[ "$z0" = "0x000000000 0x040000 0x028000" ] || why="$why zone0($z0)"
	[ "$(cat $q/chunk_sectors 2>&1)" = $((Z / 512)) ] ||
		why="$why chunk_sectors=$(cat $q/chunk_sectors 2>&1)"
	[ "$(cat $q/nr_zones 2>&1)" = 16 ] || why="$why nr_zones=$(cat $q/nr_zones 2>&1)"
	[ "$(cat $q/zoned 2>&1)" = host-managed ] || why="$why zoned=$(cat $q/zoned 2>&1)"
	state_is alive || why="$why list($(po2zfs-blk list 2>&1))"
	jonce "serving $ZNS as /dev/ublkb0" ||
		why="$why journal($(journal | tail -n 3 | tr '\n' '|'))"
	result_why sysd start "${why# }" \
		"$U active, MainPID $(prop MainPID), $ZNS -> $ng, $dunit plugged, $DEV: 16 zones, chunk_sectors $((Z / 512)), zone 0 $z0"
}

# a fresh zonefs on /dev/ublkb0 at /mnt/zonefs: every zone reset, the
# super block written and flushed
zonefs_fresh() {
	mkdir -p $MNT
	blkzone reset $DEV &&
		dd if=$SB of=$DEV bs=4096 count=1 oflag=direct conv=fsync status=none &&
		mount -t zonefs -o errors=repair $DEV $MNT
}

# (b) SIGKILL of the MainPID under a writer: systemd restarts the server,
# which recovers the device
check_kill() {
	local why='' pid wpid c1

	journal_mark
	writer 0 &
	wpid=$!
	wait_for 60 acked_over 0 1 || why="$why writer-stuck-before"
	pid=$(prop MainPID)
	kill -KILL "$pid" || why="$why kill($pid)"
	c1=$(wc -l </tmp/w-acked.0)
	# RestartSec=2, then the add recovers the device
	wait_for 90 running 1 "$pid" ||
		why="$why not-restarted($(prop ActiveState)/$(prop SubState)/$(prop NRestarts))"
	wait_for 30 state_is alive || why="$why list($(po2zfs-blk list 2>&1))"
	wait_for 60 acked_over 0 $((c1 + 1)) || why="$why writer-stuck-after"
	writer_verify 0 "$wpid"
	why="$why$W_WHY"
	jonce "Main process exited, code=killed, status=9/KILL" ||
		why="$why journal-no-kill"
	jonce "is quiesced, served from $ZNS: recovering it" ||
		why="$why journal-no-recover($(journal | tail -n 4 | tr '\n' '|'))"
	[ -e /dev/ublkb1 ] && why="$why ublkb1-made"
	[ -z "$why" ] || journal | sed 's/^/P2Z-VM journal: /'
	result_why sysd kill "${why# }" \
		"server $pid SIGKILLed under zonefs: NRestarts=$(prop NRestarts), new MainPID $(prop MainPID), device recovered; $W_N records of 1 MiB before and after, all read back, no writer error"
}

# (c) systemctl restart while mounted, under a writer: handover, recovery
check_restart() {
	local why='' pid wpid c1 r l

	journal_mark
	writer 1 &
	wpid=$!
	wait_for 60 acked_over 1 1 || why="$why writer-stuck-before"
	pid=$(prop MainPID)
	c1=$(wc -l </tmp/w-acked.1)
	timeout 200 systemctl restart "$U"
	r=$?
	[ $r = 0 ] || why="$why restart-exit($r)"
	running 0 "$pid" ||
		why="$why unit($(prop ActiveState)/$(prop SubState)/$(prop NRestarts))"
	state_is alive || why="$why list($(po2zfs-blk list 2>&1))"
	[ -e /proc/"$pid" ] && why="$why old-server-left"
	wait_for 60 acked_over 1 $((c1 + 1)) || why="$why writer-stuck-after"
	writer_verify 1 "$wpid"
	why="$why$W_WHY"
	for l in "po2zfs-blk: Terminated: /dev/ublkb0 is in use: handing it over" \
		"po2zfs-blk: left /dev/ublkb0 quiesced for recover" \
		"Deactivated successfully." \
		"is quiesced, served from $ZNS: recovering it"; do
		jonce "$l" || why="$why journal-not-once{$l}"
	done
	[ "$(jcount "Main process exited")" = 0 ] ||
		why="$why {$(journal | grep -F 'Main process exited')}"
	[ -e /dev/ublkb1 ] && why="$why ublkb1-made"
	[ "${why# }" = "" ] || why="$why journal: $(journal | tr '\n' '|')"
	result_why sysd restart "${why# }" \
		"systemctl restart under zonefs: server $pid handed over and exited 0, new MainPID $(prop MainPID) recovered $DEV, NRestarts=$(prop NRestarts); $W_N records of 1 MiB, all read back, no writer error"
}

# (d) systemctl stop after the unmount: the device deleted
check_stop() {
	local why='' r left

	umount $MNT || why="$why umount"
	journal_mark
	timeout 120 systemctl stop "$U"
	r=$?
	[ $r = 0 ] || why="$why stop-exit($r)"
	[ "$(prop ActiveState)/$(prop Result)/$(prop ExecMainStatus)" = inactive/success/0 ] ||
		why="$why unit($(prop ActiveState)/$(prop Result)/$(prop ExecMainStatus))"
	wait_for 10 absent $DEV || why="$why $DEV-left"
	wait_for 10 absent /dev/ublkc0 || why="$why ublkc0-left"
	[ -z "$(po2zfs-blk list 2>&1)" ] || why="$why listed($(po2zfs-blk list 2>&1))"
	left=$(ls -A /run/po2zfs-blk 2>/dev/null)
	[ -z "$left" ] || why="$why records-left($left)"
	jonce "po2zfs-blk: Terminated: stopping /dev/ublkb0" ||
		why="$why journal-no-stop($(journal | tr '\n' '|'))"
	result_why sysd stop "${why# }" \
		"systemctl stop after umount: inactive, Result=success, exit 0, no $DEV, no record"
}

# no kernel WARNING, BUG or Oops
check_klog() {
	local bad

	bad=$(dmesg | grep -E 'WARNING:|BUG:|Oops' | head -n 3 | tr '\n' '|')
	result_why sysd kernel-log "${bad:+kernel: $bad}" "no WARNING, BUG, Oops"
}

main() {
	local c

	check_start
	if [ "$(prop ActiveState)" = active ] && zonefs_fresh; then
		for c in check_kill check_restart check_stop; do
			"$c"
		done
	else
		result sysd zonefs FAIL "not started or no zonefs: $(dmesg | grep -i zonefs | tail -n 2 | tr '\n' ' ')"
		journal | tail -n 20 | sed 's/^/P2Z-VM journal: /'
	fi
	check_klog
	results_passed
}

main
rc=$?
echo "P2Z-VM sysd: done after $SECONDS s"
echo "P2Z-VM DONE rc=$rc"
sync
systemctl poweroff -ff
