# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# What every guest script shares (tests/vm/guest.sh, tests/vm/blk-guest.sh,
# contrib/bench/guest-bench-vm.sh): the namespace map, the result lines and
# the reader of fio's JSON output. vm_base_root (lib.sh) packs it as
# /p2z/guest-lib.sh. Sourced, not run: defining the functions has no side
# effect. Runs under the guest's bash, with GNU coreutils and mawk.

# ---- namespaces ----

# ns_map: NG[nsid] = the namespace's generic device (/dev/ngXnY), DISK[nsid]
# = its block device's name (nvmeXnY), both found by namespace id, never
# assumed: on 6.12 the generic devices are named in scan order, and a
# namespace the kernel cannot show as a block device (npo2) has a hidden
# disk in /sys/block but no node in /dev.
ns_map() {
	local ng d

	declare -gA NG=() DISK=()
	for ng in /dev/ng*; do
		[ -c "$ng" ] && NG[$(p2z_vm_raw nsid "$ng")]=$ng
	done
	for d in /sys/block/nvme*; do
		[ -e "$d/nsid" ] && DISK[$(cat "$d/nsid")]=${d##*/}
	done
}

# ns_queue NSID ATTR: the block queue attribute ATTR of namespace NSID's
# disk (/sys/block/nvmeXnY/queue/ATTR), nothing if it has none
ns_queue() {
	cat "/sys/block/${DISK[$1]:-none}/queue/$2" 2>/dev/null
}

# ns_show NSID...: one "P2Z-VM nsid N: ..." line each, what ns_map found
ns_show() {
	local n d

	for n in "$@"; do
		d=${DISK[$n]:-}
		echo "P2Z-VM nsid $n: generic ${NG[$n]:-none}, disk ${d:-none}" \
			"(node $([ -b "/dev/$d" ] && echo present || echo absent)," \
			"zoned $(ns_queue "$n" zoned)," \
			"max_hw_sectors_kb $(ns_queue "$n" max_hw_sectors_kb))"
	done
}

# ---- results ----

# A check's verdict is one console line
#   P2Z-RESULT <config> <check> <verdict> <seconds>s [detail]
# config and check are single words; verdict is PASS, FAIL, SKIP, INFO (a
# figure, never a failure) or REFUSED (the one refusal a check expects);
# seconds since the previous result of the same clock (result_start).
# The host reads them with vm_results (lib.sh). Any FAIL leaves
# /tmp/p2z-failed: results_passed is then false.
P2Z_RESULT_FD=1 # where result lines go: the console
P2Z_RESULT_T0=0

# results_init: no failure yet, the clock at 0
results_init() {
	rm -f /tmp/p2z-failed
	result_start
}

# result_start: the next result's seconds count from now
result_start() {
	P2Z_RESULT_T0=$SECONDS
}

result() { # config check verdict [detail]
	echo "P2Z-RESULT $1 $2 $3 $((SECONDS - P2Z_RESULT_T0))s${4:+ $4}" \
		>&"$P2Z_RESULT_FD"
	P2Z_RESULT_T0=$SECONDS
	[ "$3" != FAIL ] || touch /tmp/p2z-failed
}

# result_why CONFIG CHECK WHY [DETAIL]: PASS (with DETAIL) if WHY is empty,
# else FAIL with WHY (a list of " reason" words, the first space dropped)
result_why() {
	if [ -z "$3" ]; then
		result "$1" "$2" PASS "${4:-}"
	else
		result "$1" "$2" FAIL "${3# }"
	fi
}

# results_passed: no result was FAIL
results_passed() {
	[ ! -e /tmp/p2z-failed ]
}

# ---- fio ----

# fio_result JSON SECTION: "<bytes> <MiB/s> <mean completion latency µs>"
# of section SECTION (read, write) of the first job in fio's JSON output
# (--output-format=json --output=JSON); status 1 if it has no such section.
fio_result() {
	awk -v sec="$2" '
		/^ *"[a-z]+" : \{/ {
			cur = $1; gsub(/"/, "", cur)
			if (cur == sec)
				n++
		}
		n == 1 && cur == sec && /"io_bytes" :/ { io = $3 + 0; found = 1 }
		n == 1 && cur == sec && /"bw_bytes" :/ { bw = $3 + 0 }
		/"clat_ns" : \{/ { inclat = (n == 1 && cur == sec) }
		inclat && /"mean" :/ { clat = $3 + 0; inclat = 0 }
		END {
			if (!found)
				exit 1
			printf "%.0f %.3f %.1f\n", io, bw / 1048576, clat / 1000
		}' "$1"
}
