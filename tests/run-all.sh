#!/bin/bash
# The whole po2zfs test suite, as CI runs it (.ci/run calls this and nothing
# else). Run as root on Debian 12 from the top of a clone:
#   tests/run-all.sh
# Steps: install packages, format and man page lint, gcc -Werror build with
# unit, valgrind and mount tests, clang ASan/UBSan build with unit and mount
# tests, clang TSan build with the stress test and the threaded unit
# tests, a clang libFuzzer build with each fuzz target run for 40 s
# (tests/fuzz/run.sh), then the device tests in a QEMU guest
# (tests/vm/run.sh: Debian's 6.1 and 6.12 kernels, NVMe ZNS namespaces npo2
# and po2), then po2zfs-blk in a QEMU guest (tests/vm/blk.sh: 6.12, zonefs,
# f2fs, btrfs and fio on the ublk device of an npo2 namespace; 6.1, which
# has no ublk, for the refusal), then contrib/systemd/po2zfs-blk@.service
# under systemd as a guest's PID 1 (tests/vm/sysd.sh: start, a killed
# server restarted and its device recovered, systemctl restart handing
# it over, stop). Build trees go to build-*/. P2Z_VM=0
# leaves the QEMU steps out (a quick local run).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export CI=${CI:-}
fail=0
steps_ok=0 steps_bad=0 steps_skipped=0

step() { # name, command...
	local name=$1
	shift
	echo "=== $name"
	"$@"
	case $? in
	0)
		steps_ok=$((steps_ok + 1))
		echo "=== $name: ok"
		;;
	77)
		steps_skipped=$((steps_skipped + 1))
		echo "=== $name: SKIPPED (see the reason above)"
		;;
	*)
		steps_bad=$((steps_bad + 1))
		fail=1
		echo "=== $name: FAILED"
		;;
	esac
}

contrib/install-deps.sh --test || { echo "install-deps failed"; exit 1; }

format_check() {
	local files
	files=$(git ls-files '*.c' '*.h' 2>/dev/null || find src include tests -name '*.[ch]')
	# shellcheck disable=SC2086
	clang-format --dry-run --Werror $files
}

man_lint() {
	local m out rc=0
	for m in man/*.[78]; do
		out=$(LC_ALL=C groff -man -ww -z "$m" 2>&1)
		[ -z "$out" ] || { echo "$m: $out"; rc=1; }
	done
	return $rc
}

build() { # dir, cmake args...
	local dir=$1
	shift
	cmake -S . -B "$dir" -DP2Z_WERROR=ON -DP2Z_TESTS=ON "$@" >/dev/null &&
		cmake --build "$dir" -j"$(nproc)" -- --no-print-directory >/dev/null ||
		cmake --build "$dir" -j1 # again, to show the errors
}

run_ctest() { # dir, labels regex
	(cd "$1" && ctest --output-on-failure -j2 -L "$2")
}

step "format (clang-format --dry-run --Werror)" format_check
step "man pages (groff -man -ww -z)" man_lint
step "build gcc" build build-gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo
step "tests gcc: unit, valgrind, mount" run_ctest build-gcc 'unit|valgrind|func'
build_asan() {
	CC=clang build build-asan -DCMAKE_BUILD_TYPE=Debug -DP2Z_SANITIZE=ON
}

step "build clang asan+ubsan" build_asan
step "tests clang asan+ubsan: unit, mount" \
	env ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	bash -c "cd build-asan && ctest --output-on-failure -j2 -L 'unit|func'"
# ThreadSanitizer: the stress test (its daemon and helper built with TSan)
# and the unit suites with threads (check_geom is pure math, and slow
# there). A report stops the daemon (halt_on_error) with status 66, which
# fails the test, as does a report in its log.
build_tsan() {
	CC=clang build build-tsan -DCMAKE_BUILD_TYPE=Debug -DP2Z_TSAN=ON
}

step "build clang tsan" build_tsan
step "tests clang tsan: stress, unit (dev, emu, zone, uring)" \
	env TSAN_OPTIONS=halt_on_error=1:exitcode=66 \
	bash -c "cd build-tsan && ctest --output-on-failure -j2 -R '^(func/1003|unit/check_(dev|async|emu.*|zone.*|uring))'"
# libFuzzer: each target replays its seed corpus (regress-* inputs
# included) and fuzzes for 40 s; a crash fails the step, a missing
# libFuzzer skips it (77). Only the targets are built.
build_fuzz() {
	[ -f "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] || {
		echo "clang's libFuzzer is missing (libclang-rt-14-dev)"
		return 77
	}
	CC=clang cmake -S . -B build-fuzz -DP2Z_WERROR=ON -DP2Z_FUZZ=ON \
		-DP2Z_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
		cmake --build build-fuzz -j"$(nproc)" --target fuzz_emu_image \
			fuzz_opts fuzz_nvme_path fuzz_report -- \
			--no-print-directory >/dev/null ||
		cmake --build build-fuzz -j1 --target fuzz_emu_image fuzz_opts \
			fuzz_nvme_path fuzz_report # again, to show the errors
}

step "build clang libFuzzer" build_fuzz
step "fuzz targets, 40 s each" \
	env P2Z_FUZZ_SECONDS=40 bash tests/fuzz/run.sh build-fuzz
if [ "${P2Z_VM:-1}" != 0 ]; then
	step "device tests in a QEMU guest (kernels 6.1, 6.12)" \
		env P2Z_BUILD="$top/build-gcc" P2Z_VM_WORK="$top/build-vm" \
		bash tests/vm/run.sh
	# the guest has 900 s; the whole step, with its build, 1200 s
	step "po2zfs-blk in a QEMU guest (kernel 6.12: zonefs, f2fs, btrfs; 6.1: refusal)" \
		env P2Z_BUILD="$top/build-gcc" P2Z_VM_WORK="$top/build-vm-blk" \
		P2Z_VM_TIMEOUT=900 timeout -k 10 1200 bash tests/vm/blk.sh
	step "po2zfs-blk@.service under systemd in a QEMU guest (kill, restart, stop)" \
		env P2Z_BUILD="$top/build-gcc" P2Z_VM_WORK="$top/build-vm-sysd" \
		P2Z_VM_TIMEOUT=600 timeout -k 10 900 bash tests/vm/sysd.sh
fi

echo "run-all: $steps_ok passed, $steps_bad failed, $steps_skipped skipped"
exit $fail
