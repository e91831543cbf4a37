#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck source-path=SCRIPTDIR
#
# Runs inside the benchmark guest (see guest-bench.sh), as /p2z/guest.sh:
# one NVMe controller with
#   nsid 1  npo2, 96 MiB zones, 80 MiB capacity (hidden disk)
#   nsid 2  po2, 128 MiB zones, 80 MiB capacity: kernel zonefs
#   nsid 3  the same as nsid 2: po2zfs
# 16 zones each, 4 KiB LBAs. Device names are found by namespace id: on
# 6.12 the generic devices are named in scan order.
#
# Variants: zonefs (nsid 2's block device), po2 (po2zfs on nsid 3's
# /dev/ngXnY), npo2 (po2zfs on nsid 1's), raw-po2 and raw-npo2 (fio's
# io_uring_cmd engine on the same generic devices, zones 8 and up, which
# the mounts do not use), null (p2z_nullfs: FUSE with po2zfs's settings
# and no device, the floor any FUSE filesystem stands on). All mounted at
# once. Per round, per I/O size:
# a direct append to a freshly reset zone file, a direct read and a
# buffered read of it (after drop_caches), every variant once, in an order
# rotated every round. Raw passthrough has no append in fio: it writes
# with Write commands (zonemode=zbd) and reads plainly, in commands of at
# most the controller's transfer limit.
#
# Prints progress as "P2Z-BENCH ..." lines, a result line (guest-lib.sh) per
# mount and per fio job, "P2Z-RESULT <variant> <check> PASS|FAIL <seconds>s
# <detail>" (check: mount, or r<round>-<op>-<size> with MiB/s and latency),
# the tables as "P2Z-TABLE ..." lines, then the fio JSON output and the
# daemon logs as a base64 tar.gz between "P2Z-BENCH-JSON-BEGIN" and
# "P2Z-BENCH-JSON-END".
set -u
BENCH_ROUNDS=3 BENCH_SIZES="1M 128K 4K" BENCH_MIB=64 BENCH_RAW=1
BENCH_HOST=unknown BENCH_SOURCE=unknown BENCH_IMAGES=unknown BENCH_OPTS=
BENCH_BUDGET=1500
# shellcheck source=/dev/null
. /p2z/vm.conf
# shellcheck source=../../tests/vm/guest-lib.sh
. /p2z/guest-lib.sh
M=$((1024 * 1024))
B=/tmp/bench
J=$B/json
RES=$B/results
mkdir -p "$J" /mnt/zonefs /mnt/po2 /mnt/npo2 /mnt/null
: >"$RES"

say() { echo "P2Z-BENCH $*"; }

declare -A ZS PID
results_init
ns_map
ZS=([1]=$((96 * M)) [2]=$((128 * M)) [3]=$((128 * M)))
ns_show 1 2 3
# Transfer limit of each namespace's queue, in whole LBAs: passthrough
# commands must not exceed it. On 6.12 the hidden disk of an npo2
# namespace keeps the block layer's default of 127 KiB.
declare -A MAXT
for n in 1 2 3; do
	# shellcheck disable=SC2017 # rounded down to whole 4 KiB LBAs
	MAXT[$n]=$(($(ns_queue $n max_hw_sectors_kb || echo 124) / 4 * 4096))
done

# ---- mounts ----

mount_zonefs() {
	local dev=/dev/${DISK[2]:-none}

	if [ ! -b "$dev" ]; then
		result zonefs mount FAIL "no block device for nsid 2"
		return 1
	fi
	# the super block in zone 0, as mkzonefs writes it: seq files start
	# at zone 1
	if ! dd if=/p2z/zonefs-sb.bin of="$dev" bs=4096 count=1 oflag=direct \
		status=none || ! mount -t zonefs "$dev" /mnt/zonefs; then
		result zonefs mount FAIL "$(dmesg | grep -i zonefs | tail -n 1)"
		return 1
	fi
	result zonefs mount PASS "$dev"
}

# wait_mount VARIANT: its daemon (PID[VARIANT]) mounted /mnt/VARIANT, or
# exited, or 20 s passed (1)
wait_mount() {
	for _ in $(seq 400); do
		mountpoint -q "/mnt/$1" && return 0
		kill -0 "${PID[$1]}" 2>/dev/null || break
		sleep 0.05
	done
	return 1
}

mount_po2zfs() { # variant nsid
	local v=$1 ng=${NG[$2]:-} opts=()

	if [ -z "$ng" ]; then
		result "$v" mount FAIL "no generic device for nsid $2"
		return 1
	fi
	[ -z "$BENCH_OPTS" ] || opts=(-o "$BENCH_OPTS")
	po2zfs "$ng" "/mnt/$v" -f "${opts[@]}" >"$B/daemon-$v.log" 2>&1 &
	PID[$v]=$!
	if wait_mount "$v"; then
		result "$v" mount PASS "$ng"
		return 0
	fi
	result "$v" mount FAIL "po2zfs $ng: $(tail -n 1 "$B/daemon-$v.log")"
	return 1
}

# FUSE alone, with the read-ahead po2zfs sets on its own mounts
mount_null() {
	local dev

	p2z_nullfs /mnt/null >"$B/daemon-null.log" 2>&1 &
	PID[null]=$!
	if ! wait_mount null; then
		result null mount FAIL "p2z_nullfs: $(tail -n 1 "$B/daemon-null.log")"
		return 1
	fi
	result null mount PASS p2z_nullfs
	dev=$(mountpoint -d /mnt/null)
	echo 1024 >"/sys/class/bdi/$dev/read_ahead_kb" ||
		say "null: read-ahead stays at the default"
}

# ---- measurements ----

# ms LIST...: milliseconds the command takes, printed; its output dropped
ms() {
	local t0=$EPOCHREALTIME t1

	"$@" >/dev/null 2>&1
	t1=$EPOCHREALTIME
	echo $(((${t1/./} - ${t0/./}) / 1000))
}

# One fio job; appends "round variant op size MiB/s clat_us" to $RES and
# prints its result line: FAIL if fio failed or moved less than it should.
run_job() { # round variant op size index
	local r=$1 v=$2 op=$3 bs=$4 k=$5 args out sec=read n bsb io mib clat
	local want=$((BENCH_MIB * M))
	local ns off f=

	bsb=$(numfmt --from=iec "$bs")
	args=(--name="$op-$bs" --iodepth=1 --output-format=json)
	out=$J/r$r-$v-$op-$bs.json
	case $v in
	raw-*)
		[ "$v" = raw-po2 ] && ns=3 || ns=1
		off=$(((8 + k) * ${ZS[$ns]}))
		[ "$bsb" -le "${MAXT[$ns]}" ] || bsb=${MAXT[$ns]}
		# whole commands: 124 KiB ones do not divide 64 MiB
		want=$((want / bsb * bsb))
		args+=(--ioengine=io_uring_cmd --cmd_type=nvme
			--filename="${NG[$ns]}" --offset="$off" --bs="$bsb")
		case $op in
		append)
			sec="write"
			args+=(--rw=write --zonemode=zbd --size="${ZS[$ns]}"
				--io_size="$want")
			;;
		*) args+=(--rw=read --size="$want") ;;
		esac
		;;
	*)
		f=/mnt/$v/seq/$k
		args+=(--ioengine=psync --filename="$f" --bs="$bs"
			--size="${BENCH_MIB}M")
		case $op in
		append)
			sec="write"
			# a reset: the zone file is written fresh
			truncate -s 0 "$f" || say "truncate $f failed"
			args+=(--rw=write --direct=1 --file_append=1
				--fallocate=none)
			;;
		dread) args+=(--rw=read --direct=1) ;;
		bread)
			echo 3 >/proc/sys/vm/drop_caches
			args+=(--rw=read --direct=0)
			;;
		esac
		;;
	esac
	# the daemon's own counters of this job (user.dev.stats)
	[ "$v" = null ] && f=
	[ -n "$f" ] && setfattr -n user.dev.stats -v 0 "/mnt/$v" 2>/dev/null
	fio "${args[@]}" --output="$out" >"$out.err" 2>&1
	n=$?
	[ -n "$f" ] && getfattr --only-values -n user.dev.stats "/mnt/$v" \
		>"${out%.json}.stats" 2>/dev/null
	io=0 mib=0.000 clat=0
	[ $n != 0 ] || read -r io mib clat < <(fio_result "$out" $sec)
	if [ $n = 0 ] && [ "${io:-0}" -ge "$want" ] && [ "$mib" != 0.000 ]; then
		echo "$r $v $op $bs $mib $clat" >>"$RES"
		result "$v" "r$r-$op-$bs" PASS "$mib MiB/s, clat $clat µs"
	else
		result "$v" "r$r-$op-$bs" FAIL "fio exit $n, ${io:-0} of $want bytes: $(grep -m1 -iE 'err|fail' "$out.err" | head -n 1)"
		echo "$r $v $op $bs err err" >>"$RES"
	fi
}

rotate() { # count word...
	local n=$1

	shift
	n=$((n % $#))
	echo "${@:n+1}" "${@:1:n}"
}

# ---- tables ----

# medians and ratios from the lines of $RES
TABLE_AWK=$(cat <<'EOF'
function med(key, vals,    n, i, j, t, a) {
	n = split(vals[key], a, " ")
	if (n == 0)
		return ""
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function fmt(x) {
	if (x == "")
		return "-"
	return x + 0 >= 100 ? sprintf("%.0f", x) : sprintf("%.1f", x)
}
function fmtr(x) { return x == "" ? "-" : sprintf("%.2f", x) }
function add(arr, key, x) { arr[key] = arr[key] " " x }
# the bound of a synchronous request through FUSE: at least the FUSE
# round trip (null) and the device's time (zonefs's whole time, at best),
# one after the other: per byte 1/null + 1/zonefs, so at most
# null / (null + zonefs) of zonefs's throughput
function bounds(arr, op, bs,    r, n, z) {
	for (r = 1; r <= nr; r++)
		if ((r, "null", op, bs) in mib && (r, "zonefs", op, bs) in mib) {
			n = mib[r, "null", op, bs]; z = mib[r, "zonefs", op, bs]
			if (n + z > 0)
				add(arr, "bound" SUBSEP op SUBSEP bs, n / (n + z))
		}
}
function ratios(arr, a, b, op, bs,    r) {
	for (r = 1; r <= nr; r++)
		if ((r, a, op, bs) in mib && (r, b, op, bs) in mib &&
		    mib[r, b, op, bs] > 0)
			add(arr, a SUBSEP b SUBSEP op SUBSEP bs,
			    mib[r, a, op, bs] / mib[r, b, op, bs])
}
BEGIN {
	name["append"] = "direct append"; name["dread"] = "direct read"
	name["bread"] = "buffered read"
	ops[1] = "append"; ops[2] = "dread"; ops[3] = "bread"
}
$5 != "err" {
	mib[$1, $2, $3, $4] = $5
	add(mv, $2 SUBSEP $3 SUBSEP $4, $5)
	add(cv, $2 SUBSEP $3 SUBSEP $4, $6)
	if ($1 > nr) nr = $1
	if (!($4 in seen)) { seen[$4] = 1; sizes[++ns] = $4 }
}
$5 == "err" { if ($1 > nr) nr = $1 }
END {
	for (o = 1; o <= 3; o++)
		for (s = 1; s <= ns; s++) {
			ratios(rv, "po2", "zonefs", ops[o], sizes[s])
			ratios(rv, "npo2", "zonefs", ops[o], sizes[s])
			ratios(rv, "po2", "raw-po2", ops[o], sizes[s])
			ratios(rv, "npo2", "raw-npo2", ops[o], sizes[s])
			ratios(rv, "null", "zonefs", ops[o], sizes[s])
			ratios(rv, "po2", "null", ops[o], sizes[s])
			bounds(rv, ops[o], sizes[s])
		}
	print "| job | zonefs MiB/s | po2zfs po2 | ratio | po2zfs npo2 | ratio |"
	print "|---|---|---|---|---|---|"
	for (o = 1; o <= 3; o++)
		for (s = 1; s <= ns; s++) {
			op = ops[o]; bs = sizes[s]
			k = SUBSEP op SUBSEP bs
			printf "| %s %s | %s | %s | %s | %s | %s |\n",
			    name[op], label(bs), fmt(med("zonefs" k, mv)),
			    fmt(med("po2" k, mv)),
			    fmtr(med("po2" SUBSEP "zonefs" k, rv)),
			    fmt(med("npo2" k, mv)),
			    fmtr(med("npo2" SUBSEP "zonefs" k, rv))
		}
	print ""
	print "Raw passthrough (fio io_uring_cmd, QD1, commands of at most " \
	    maxt "; writes are Write commands, zonemode=zbd), MiB/s:"
	print ""
	print "| job | raw po2 | po2zfs po2 / raw | raw npo2 | po2zfs npo2 / raw |"
	print "|---|---|---|---|---|"
	for (o = 1; o <= 2; o++)
		for (s = 1; s <= ns; s++) {
			op = ops[o]; bs = sizes[s]
			k = SUBSEP op SUBSEP bs
			printf "| %s %s | %s | %s | %s | %s |\n",
			    name[op], label(bs), fmt(med("raw-po2" k, mv)),
			    fmtr(med("po2" SUBSEP "raw-po2" k, rv)),
			    fmt(med("raw-npo2" k, mv)),
			    fmtr(med("npo2" SUBSEP "raw-npo2" k, rv))
		}
	print ""
	print "FUSE alone (p2z_nullfs: po2zfs's FUSE settings, no device; what" \
	    " every FUSE filesystem pays), MiB/s and ratio to zonefs; the bound" \
	    " of a direct request through FUSE, null / (null + zonefs): its" \
	    " round trip and the device's time (zonefs's, at best) one after" \
	    " the other:"
	print ""
	print "| job | null MiB/s | null / zonefs | bound | po2zfs po2 / zonefs | po2zfs po2 / null |"
	print "|---|---|---|---|---|---|"
	for (o = 1; o <= 3; o++)
		for (s = 1; s <= ns; s++) {
			op = ops[o]; bs = sizes[s]
			k = SUBSEP op SUBSEP bs
			printf "| %s %s | %s | %s | %s | %s | %s |\n",
			    name[op], label(bs), fmt(med("null" k, mv)),
			    fmtr(med("null" SUBSEP "zonefs" k, rv)),
			    op == "bread" ? "-" : fmtr(med("bound" k, rv)),
			    fmtr(med("po2" SUBSEP "zonefs" k, rv)),
			    fmtr(med("po2" SUBSEP "null" k, rv))
		}
	print ""
	print "Completion latency per request (fio clat mean, µs, median of the rounds):"
	print ""
	print "| job | zonefs | po2zfs po2 | po2zfs npo2 | raw po2 | raw npo2 | null |"
	print "|---|---|---|---|---|---|---|"
	for (o = 1; o <= 3; o++)
		for (s = 1; s <= ns; s++) {
			op = ops[o]; bs = sizes[s]
			k = SUBSEP op SUBSEP bs
			printf "| %s %s | %s | %s | %s | %s | %s | %s |\n",
			    name[op], label(bs), fmt(med("zonefs" k, cv)),
			    fmt(med("po2" k, cv)), fmt(med("npo2" k, cv)),
			    fmt(med("raw-po2" k, cv)), fmt(med("raw-npo2" k, cv)),
			    fmt(med("null" k, cv))
		}
}
function label(bs) {
	sub(/K$/, " KiB", bs); sub(/M$/, " MiB", bs)
	return bs
}
EOF
)

table() {
	local v

	echo "### po2zfs guest benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "- host: $BENCH_HOST"
	echo "- guest: Linux $(uname -r), 2 vCPUs, 2 GiB; $(fio --version);" \
		"po2zfs $BENCH_SOURCE${BENCH_OPTS:+, -o $BENCH_OPTS}"
	echo "- device: one NVMe controller (QEMU), ns1 npo2 96 MiB zones /" \
		"80 MiB capacity, ns2 and ns3 po2 128 MiB / 80 MiB, 16 zones," \
		"4 KiB LBAs; images on $BENCH_IMAGES"
	echo "- zonefs on ns2's block device, po2zfs po2 on ns3's and npo2 on" \
		"ns1's generic device, mounted together"
	echo "- fio psync, QD1, $BENCH_MIB MiB per job, appends with" \
		"file_append=1 direct=1 to a reset zone file; rounds:" \
		"$BENCH_ROUNDS, variants interleaved; medians; a ratio is the median" \
		"of the per-round ratios"
	[ "$DONE" = "$BENCH_ROUNDS" ] ||
		echo "- **only $DONE of $BENCH_ROUNDS rounds complete**: time" \
			"budget of ${BENCH_BUDGET}s (P2Z_BENCH_TIMEOUT)"
	n=$(grep -c ' err err$' "$RES")
	[ "$n" = 0 ] || echo "- **$n fio jobs failed** (see the console log);" \
		"the medians leave them out"
	echo
	awk -v maxt="$((MAXT[3] / 1024)) KiB on ns3, $((MAXT[1] / 1024)) KiB on ns1" \
		"$TABLE_AWK" "$RES"
	echo
	echo "\`ls -l seq/\` (16 files), ms: first after the mount; again" \
		"(median of the rounds)"
	echo
	echo "| | zonefs | po2zfs po2 | po2zfs npo2 |"
	echo "|---|---|---|---|"
	for v in first again; do
		echo "| $v$(for m in zonefs po2 npo2; do
			printf ' | %s' "$(awk -v v=$m -v w=$v '$1 == w && $2 == v { print $3 }' "$B/ls" |
				sort -n | awk '{ a[NR] = $1 } END {
					if (NR) print a[int((NR + 1) / 2)]; else print "-" }')"
		done) |"
	done
}

# ---- main ----

VARS=()
: >"$B/ls"
mount_zonefs && VARS+=(zonefs)
mount_po2zfs po2 3 && VARS+=(po2)
mount_po2zfs npo2 1 && VARS+=(npo2)
for v in "${VARS[@]}"; do
	echo "first $v $(ms ls -l "/mnt/$v/seq/")" >>"$B/ls"
done
mount_null && VARS+=(null)
if [ "$BENCH_RAW" = 1 ]; then
	[ -n "${NG[3]:-}" ] && VARS+=(raw-po2)
	[ -n "${NG[1]:-}" ] && VARS+=(raw-npo2)
fi
say "variants: ${VARS[*]}; sizes: $BENCH_SIZES; rounds: $BENCH_ROUNDS; ${BENCH_MIB} MiB per job"

SECONDS=0
result_start
DONE=0
for r in $(seq "$BENCH_ROUNDS"); do
	# stop before a round that would not end within the budget
	if [ "$DONE" -gt 0 ] &&
		[ $((SECONDS + SECONDS / DONE)) -gt "$BENCH_BUDGET" ]; then
		say "stopping after $DONE rounds: time budget ${BENCH_BUDGET}s"
		break
	fi
	k=0
	for bs in $BENCH_SIZES; do
		for op in append dread bread; do
			# shellcheck disable=SC2046
			for v in $(rotate $((r + k)) "${VARS[@]}"); do
				[ "$op" != bread ] || [[ $v != raw-* ]] || continue
				[ "$SECONDS" -le "$BENCH_BUDGET" ] || break 4
				run_job "$r" "$v" $op "$bs" $k
			done
		done
		k=$((k + 1))
	done
	for v in "${VARS[@]}"; do
		[[ $v == raw-* || $v == null ]] || echo "again $v $(ms ls -l "/mnt/$v/seq/")" >>"$B/ls"
	done
	DONE=$r
	say "round $r done, ${SECONDS}s"
done
[ "$SECONDS" -le "$BENCH_BUDGET" ] ||
	say "time budget of ${BENCH_BUDGET}s passed in round $((DONE + 1))"

# Where a request's time goes: per po2zfs job of the last round, the FUSE
# requests the daemon served (fs.*: count, mean size, mean time) and what
# the device took of that time (dev.*), from user.dev.stats.
stats_table() {
	local v op bs st fsl dvl
	echo
	echo "Inside the daemon, last round (user.dev.stats: requests, mean size," \
		"mean µs in the daemon, of which in the device):"
	echo
	echo "| job | variant | requests | KiB/request | µs/request | µs in device |"
	echo "|---|---|---|---|---|---|"
	for bs in $BENCH_SIZES; do
		for op in append dread bread; do
			for v in po2 npo2; do
				st=$J/r$DONE-$v-$op-$bs.stats
				[ -s "$st" ] || continue
				[ $op = append ] && fsl=fs.write || fsl=fs.read
				[ $op = append ] && dvl="dev.append|dev.write" || dvl=dev.read
				awk -v job="$op $bs" -v v="$v" -v fsl="$fsl" -v dvl="^($dvl)\$" '
				function val(line, k,   i, a) {
					for (i = 2; i <= split(line, a, " "); i++)
						if (index(a[i], k "=") == 1)
							return substr(a[i], length(k) + 2)
					return 0 }
				$1 == fsl { nr = val($0, "nr"); by = val($0, "bytes"); us = val($0, "avg_us") }
				$1 ~ dvl { dnr += val($0, "nr"); dus += val($0, "avg_us") * val($0, "nr") }
				END { if (nr) printf "| %s | %s | %d | %.0f | %d | %.0f |\n", job, v, nr, by / nr / 1024, us, dus / nr }' "$st"
			done
		done
	done
}

{ table; stats_table; } | sed 's/^/P2Z-TABLE /'

for v in po2 npo2 null; do
	mountpoint -q "/mnt/$v" || continue
	umount "/mnt/$v" || say "umount /mnt/$v failed"
	wait "${PID[$v]}" || say "po2zfs ($v) exited with $?"
done
mountpoint -q /mnt/zonefs && umount /mnt/zonefs
cp "$RES" "$B/ls" "$J/"
cp "$B"/daemon-*.log "$J/" 2>/dev/null
echo "P2Z-BENCH-JSON-BEGIN"
tar -C "$B" -czf - json | base64
echo "P2Z-BENCH-JSON-END"
