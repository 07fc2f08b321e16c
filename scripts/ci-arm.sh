#!/usr/bin/env bash
# The Arm job: cross-builds lngrad and its C++ test programs for aarch64
# (cmake/toolchains/aarch64-linux-gnu.cmake, Debian's cross compiler) and runs
# them under qemu-aarch64, on these emulated CPUs:
#   - "max" with SVE vectors of 128, 256, 512 and 2048 bits. The per-target
#     tests run on every target Highway compiled that the CPU supports: SVE2,
#     SVE and NEON at each length, and SVE2_128 (128 bits) and SVE_256 (256
#     bits) where the length matches them; the other tests on the best one.
#   - neoverse-n1, which has no SVE: dispatch must pick NEON.
# Each run's log lists the targets it tested; all logs land in <build>/qemu-logs.
#
# Programs: lngrad_tests (the core suite: gradients, forward, conversions,
# determinism, errors, seeds), lngrad_ascendc_tests,
# lngrad_ascendc_kernel_tests, lngrad_hardening_tests and the AscendC example
# programs on every CPU, but for what takes long emulated or cannot run there:
#   - the tests of large problems run at 128 bits alone, where qemu's SVE
#     is cheapest: the per-target tests of streamed stores, column-sum blocks
#     and very long rows (on SVE2_128, SVE2, SVE and NEON there), and the
#     determinism and plan tests (thread counts, batches, placements, every
#     plan). Emulated SVE at 512 bits took 50-340 s for each per-target
#     instance of them, and the whole job over 35 minutes on an Intel host
#     (2026-12-06). At the other lengths the per-target tests of tails,
#     vector widths, axes and the same bits run in full.
#   - ManyShortRows.MillionRowsOfFour (hardening; 50 s emulated) does not
#     run: the same short-row kernels run in the core suite's small-H cases.
#   - lngrad_hardening_concurrency: its fork test makes qemu 7.2 abort
#     (an assertion in qemu's own vCPU setup when a threaded process forks),
#     and it takes minutes emulated.
#   - lngrad_hardening_large (8.5 GiB).
#   - the three AscendC death tests that re-execute the test program
#     (death_test_style threadsafe): without binfmt_misc the kernel cannot
#     exec an aarch64 program ("Exec format error").
#   - the CLI, the Python module and the benchmark (they need the host's
#     Python, NumPy and oneDNN).
#
# Environment: LNGRAD_JOBS (default: nproc; also the number of qemu runs at
# once), LNGRAD_ARM_DIR (default build-arm).
# Idempotent: installs what is missing (scripts/debian-packages.txt, group
# arm) and rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${LNGRAD_JOBS:-$(nproc)}
build=${LNGRAD_ARM_DIR:-$root/build-arm}

source "$root/scripts/packages.sh"
mapfile -t packages < <(group_packages core arm)
install_missing ci-arm --no-install-recommends "${packages[@]}"

started=$SECONDS
cmake -S "$root" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DLNGRAD_BUILD_TESTS=ON -DLNGRAD_BUILD_CLI=OFF -DLNGRAD_BUILD_PYTHON=OFF \
  -DLNGRAD_BUILD_BENCH=OFF -DLNGRAD_BUILD_FUZZERS=OFF -DLNGRAD_SANITIZE= >/dev/null
cmake --build "$build" -j"$jobs" --target lngrad_tests lngrad_ascendc_tests lngrad_ascendc_kernel_tests \
  lngrad_hardening_tests layer_norm layer_norm_grad layer_norm_grad_beta ascendc_quickstart
echo "ci-arm: built in $((SECONDS - started)) s" >&2

logs=$build/qemu-logs
rm -rf "$logs"
mkdir -p "$logs"
cd "$build/tests"
core=./lngrad_tests
death_tests=ChecksExit.AFailedLaunchExitsWithTheReport:ChecksFault.RawPointerPastAGmBlock:ChecksFault.RawPointerPastTheUnifiedBuffer
large="Targets/PerTarget.StreamedRowsOffALineJoinTheirEdges/*:Targets/PerTarget.StreamedStoresGiveTheCachedBits/*"
large+=":Targets/PerTarget.CallsRunOnAcrossBlocksOfColumnSums/*:Targets/PerTarget.VeryLongRows/*:Determinism.*:Plan.Every*"

# cpu_of NAME: the QEMU_CPU of a run name (sve<bits> or neoverse-n1).
cpu_of() {
  case "$1" in
    sve*) echo "max,sve-default-vector-length=$((${1#sve} / 8))" ;;  # in bytes
    *) echo "$1" ;;
  esac
}

# One run: the programs on one CPU, into $logs/NAME.log; NAME.failed marks a
# failure.
run_on() {
  local name=$1 core_filter=$2 status=0
  export QEMU_CPU
  QEMU_CPU=$(cpu_of "$name")
  {
    echo "== $name (QEMU_CPU=$QEMU_CPU)"
    # The per-target suite's instances name the targets this CPU runs.
    echo "targets: $(qemu-aarch64 "$core" --gtest_list_tests --gtest_filter='Targets/PerTarget.OneRowAndHEqualsOne/*' |
      sed -n 's/^  OneRowAndHEqualsOne\/\([A-Z0-9_]*\).*/\1/p' | tr '\n' ' ')"
    qemu-aarch64 "$core" --gtest_brief=1 --gtest_filter="$core_filter" || status=1
    qemu-aarch64 ascendc/lngrad_ascendc_tests --gtest_brief=1 || status=1
    qemu-aarch64 ascendc_kernels/lngrad_ascendc_kernel_tests --gtest_brief=1 --gtest_filter="-$death_tests" || status=1
    qemu-aarch64 hardening/lngrad_hardening_tests --gtest_brief=1 --gtest_filter=-ManyShortRows.MillionRowsOfFour/* ||
      status=1
    # The AscendC example kernels and the quickstart pass as ctest has them: "test pass!".
    for e in examples/layer_norm examples/layer_norm_grad examples/layer_norm_grad_beta quickstart/ascendc_quickstart; do
      if qemu-aarch64 "ascendc_kernels/$e" | grep -q 'test pass!'; then
        echo "example ${e#*/}: test pass!"
      else
        echo "example ${e#*/}: FAILED"
        status=1
      fi
    done
  } >"$logs/$name.log" 2>&1
  if ((status)); then touch "$logs/$name.failed"; fi
}

unset LNGRAD_MAX_TARGET  # the tests choose the targets themselves
# The longest runs first, at most $jobs at once (on an Intel host, 2026-12-06:
# 250, 172, 84 and 64 s for the core suite at 128, 256, 512 and 2048 bits).
runs=(sve128 sve256 sve512 sve2048 neoverse-n1)
for name in "${runs[@]}"; do
  while (($(jobs -pr | wc -l) >= jobs)); do wait -n; done
  filter="-$large"
  if [[ "$name" == sve128 ]]; then filter="*"; fi
  run_on "$name" "$filter" &
done
wait

failed=()
for name in "${runs[@]}"; do
  # The log's header, its targets, and each program's summary and failures.
  grep -E '^(== |targets:|example |\[  (PASSED|FAILED|SKIPPED) |\[==========\]|qemu:)' "$logs/$name.log" >&2
  if [[ -e "$logs/$name.failed" ]]; then failed+=("$name"); fi
done
echo "ci-arm: $((SECONDS - started)) s in all; logs in $logs" >&2
if ((${#failed[@]})); then
  echo "ci-arm: FAILED on: ${failed[*]}" >&2
  exit 1
fi
echo "ci-arm: every test passed on every emulated CPU" >&2
