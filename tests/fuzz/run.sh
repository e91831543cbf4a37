#!/bin/bash
# Run each fuzz target for a bounded time on a temporary copy of its seed
# corpus (tests/fuzz/corpus/<target>/, never modified), after replaying
# every seed, the regress-* inputs of fixed crashes included.
#   tests/fuzz/run.sh [BUILD_DIR]      (default: build-fuzz)
# Build first:
#   CC=clang cmake -S . -B build-fuzz -DP2Z_FUZZ=ON && cmake --build build-fuzz
# P2Z_FUZZ_SECONDS: seconds per target (default 30). Crash inputs are kept
# in BUILD_DIR/fuzz-artifacts/<target>/. Exit 0 if no target crashed, 1 if
# one did (or a target is missing), 77 if clang's libFuzzer is missing.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build-fuzz}" 2>/dev/null && pwd) || build=${1:-$top/build-fuzz}
secs=${P2Z_FUZZ_SECONDS:-30}
targets=(fuzz_emu_image fuzz_opts fuzz_nvme_path fuzz_report)

fuzzer_lib=$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)
if [ -z "$fuzzer_lib" ] || [ ! -f "$fuzzer_lib" ]; then
	echo "************************************************************"
	echo "fuzz: SKIPPED: clang's libFuzzer (libclang_rt.fuzzer) is missing."
	echo "fuzz: on Debian 12: apt-get install clang libclang-rt-14-dev"
	echo "************************************************************"
	exit 77
fi
case $secs in
'' | *[!0-9]*)
	echo "fuzz: P2Z_FUZZ_SECONDS=$secs is not a number of seconds"
	exit 1
	;;
esac

# The targets write small files for each input: a tmpfs is much faster.
tmp_parent=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && tmp_parent=/dev/shm
work=$(mktemp -d "$tmp_parent/p2z-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

fail=0
for t in "${targets[@]}"; do
	bin=$build/tests/fuzz/$t
	if [ "$t" = fuzz_nvme_path ] &&
		grep -qs '^P2Z_WITH_NVME:BOOL=OFF' "$build/CMakeCache.txt"; then
		echo "fuzz: $t: skipped, the nvme backend is not built"
		continue
	fi
	if [ ! -x "$bin" ]; then
		echo "fuzz: $t: not built in $build (cmake -DP2Z_FUZZ=ON, CC=clang)"
		fail=1
		continue
	fi
	mkdir -p "$work/$t/corpus" "$work/$t/tmp" "$work/$t/art"
	cp "$top/tests/fuzz/corpus/$t/"* "$work/$t/corpus/"
	TMPDIR=$work/$t/tmp "$bin" -max_total_time="$secs" \
		-print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$work/$t/art/" "$work/$t/corpus" \
		>"$work/$t/log" 2>&1
	rc=$?
	execs=$(awk '/^stat::number_of_executed_units:/ { print $2 }' \
		"$work/$t/log")
	if [ $rc -eq 0 ] && [ -n "$execs" ]; then
		echo "fuzz: $t: ${execs} executions in ${secs}s: ok"
		continue
	fi
	fail=1
	echo "fuzz: $t: FAILED (exit $rc, ${execs:-?} executions); its log ends:"
	tail -n 40 "$work/$t/log" | sed 's/^/    /'
	if compgen -G "$work/$t/art/*" >/dev/null; then
		mkdir -p "$build/fuzz-artifacts/$t"
		cp "$work/$t/art/"* "$build/fuzz-artifacts/$t/"
		echo "fuzz: $t: inputs kept in $build/fuzz-artifacts/$t/;" \
			"replay one with: $bin FILE"
	fi
done
exit $fail
