#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# In the background (no -f) the daemon logs to syslog as "po2zfs" with its
# pid, facility daemon: the mount, an errors= event with its zone and
# action, the unmount. A fake /dev/log (a datagram socket read by a small
# python3 script) is put in place in a private mount namespace.
. "$(dirname "$0")/common.sh"

[ -z "$P2Z_TEST_DEV" ] || skip "injects faults: emulated images only"
p2z_private_ns "$@"

p2z_init "syslog in the background: mount, errors= event, unmount"
need_prog python3
need_prog flock

SYSLOG=$WORK/syslog

# /dev/log: bound over when it exists; else /dev becomes a tmpfs holding
# the nodes the test needs, bound from the real /dev (left as it is), and
# the socket. A socket seen through an overlay takes no connections.
if [ -e /dev/log ] || [ -L /dev/log ]; then
	LOG_SOCK=$WORK/log.sock
else
	LOG_SOCK=/dev/log
	mkdir "$WORK/olddev" || fail "mkdir $WORK/olddev"
	mount --bind /dev "$WORK/olddev" || fail "bind /dev"
	mount -t tmpfs -o mode=0755 p2z-1102 /dev || fail "tmpfs on /dev"
	for n in fuse null zero full random urandom tty; do
		[ -e "$WORK/olddev/$n" ] || continue
		: >"/dev/$n" && mount --bind "$WORK/olddev/$n" "/dev/$n" ||
			fail "bind /dev/$n"
	done
	ln -s /proc/self/fd /dev/fd
	ln -s /proc/self/fd/0 /dev/stdin
	ln -s /proc/self/fd/1 /dev/stdout
	ln -s /proc/self/fd/2 /dev/stderr
	umount "$WORK/olddev" || fail "umount $WORK/olddev"
fi

# The reader: one line per datagram, as syslog(3) sent it
# ("<PRI>TIMESTAMP IDENT[PID]: MESSAGE"), flushed at once.
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as out:
    print("ready", file=out, flush=True)
    while True:
        msg = s.recv(65536).decode(errors="replace").rstrip("\n")
        print(msg, file=out, flush=True)
' "$LOG_SOCK" "$SYSLOG" &
BG_PIDS+=($!)
for ((i = 0; i < 400; i++)); do
	grep -q '^ready$' "$SYSLOG" 2>/dev/null && break
	sleep 0.025
done
[ -S "$LOG_SOCK" ] || fail "the syslog reader did not start"
if [ "$LOG_SOCK" != /dev/log ]; then
	mount --bind "$LOG_SOCK" /dev/log || fail "bind over /dev/log"
fi

# wait_syslog REGEX WHAT: a line matching REGEX arrives within 10 s
wait_syslog()
{
	local i

	for ((i = 0; i < 400; i++)); do
		REPLY=$(grep -E -- "$1" "$SYSLOG")
		[ -n "$REPLY" ] && return 0
		sleep 0.025
	done
	fail "$2: no syslog line matching '$1'; got: $(tail -n 5 "$SYSLOG")"
}

p2z_device 3M/3M/4096 4
# The daemon detaches: mount.po2zfs returns once mounted.
out=$("$MOUNT_P2Z" "$DEV" "$MNT" -o errors=zone-ro 2>&1) ||
	fail "mount.po2zfs exited $?: $out"
assert_eq "" "$out" "mount.po2zfs output (everything goes to syslog)"
wait_mounted
# LOG_DAEMON | LOG_INFO = <30>, LOG_DAEMON | LOG_WARNING = <28>
wait_syslog "^<30>.* po2zfs\[[0-9]+\]: $MNT: mounted $DEV\$" mount
pid=${REPLY#*po2zfs[}
pid=${pid%%]*}
kill -0 "$pid" 2>/dev/null || fail "syslog pid $pid is not a running daemon"

append "$MNT/seq/1" 0 4096 1
out=$("$EMU" set-zone "$DEV" 1 fail-next-io 2>&1) ||
	fail "po2zfs-emu set-zone: $out"
expect EIO "write hitting the injected fault" write "$MNT/seq/1" 4096 4096 -s 2
# LOG_DAEMON | LOG_ERR = <27>: the failed device write
wait_syslog "^<27>.* po2zfs\[$pid\]: zone 1: write of 4096 bytes at 4096 failed \(-5\)\$" \
	"device error"
wait_syslog "^<28>.* po2zfs\[$pid\]: zone 1: write error, zone [a-z-]+, errors=zone-ro: zone read-only\$" \
	"errors= event"

umount "$MNT" || fail "umount $MNT"
wait_syslog "^<30>.* po2zfs\[$pid\]: $MNT: unmounted $DEV\$" unmount
for ((i = 0; i < 400; i++)); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.025
done
kill -0 "$pid" 2>/dev/null && fail "daemon $pid still running after the unmount"
# Nothing from the daemon but po2zfs[pid] lines.
out=$(grep -v '^ready$' "$SYSLOG" | grep -vE "^<[0-9]+>.* po2zfs\[$pid\]: ")
assert_eq "" "$out" "syslog lines not from po2zfs[$pid]"
info "syslog lines:"
grep -v '^ready$' "$SYSLOG"
exit 0
