#!/usr/bin/env bash
# The sanitizer jobs (docs/HARDENING.md, "Sanitizers"):
#   1. AddressSanitizer + UndefinedBehaviorSanitizer (clang): everything is
#      built, with the fuzz targets ci-fuzz.sh then runs from the same build
#      (scripts/asan-build.sh), and the whole ctest suite runs: the C++
#      tests, the hardening suite (with its `large` test), the fuzz corpus
#      replays and the CLI tests (the lngrad command is the instrumented
#      binary pytest drives).
#   2. ThreadSanitizer: the concurrency tests and the core determinism tests,
#      which drive the shared thread pool from one and from many callers.
# Every sanitizer halts on its first report; the test that made it fails, and
# so does this script.
#
# Not under ASan: the Python module's tests. An instrumented extension module
# needs the ASan runtime preloaded into the (uninstrumented) interpreter, which
# then reports NumPy's and PyTorch's own allocations; the module is therefore
# not built here (LNGRAD_BUILD_PYTHON=OFF). The benchmark is not a test and is
# not built either.
#
# Environment: LNGRAD_JOBS (default: nproc), LNGRAD_ASAN_DIR, LNGRAD_TSAN_DIR.
# Idempotent: reuses the build folders (every option is set explicitly, so a
# stale cache cannot change what is built) and rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${LNGRAD_JOBS:-$(nproc)}
asan_dir=${LNGRAD_ASAN_DIR:-$root/build-asan}
tsan_dir=${LNGRAD_TSAN_DIR:-$root/build-tsan}

source "$root/scripts/packages.sh"
source "$root/scripts/asan-build.sh"
install_missing ci-sanitize --no-install-recommends clang libclang-rt-14-dev cmake libhwy-dev libgtest-dev python3-numpy python3-pytest

export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

failed=()

echo "== ASan+UBSan: build everything, run the whole ctest suite" >&2
configure_asan_build "$asan_dir"
cmake --build "$asan_dir" -j"$jobs"
ctest --test-dir "$asan_dir" --output-on-failure -j"$jobs" --timeout 1800 || failed+=("ASan+UBSan suite")

echo "== TSan: concurrent callers and the thread pool" >&2
CC=clang CXX=clang++ cmake -S "$root" -B "$tsan_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLNGRAD_SANITIZE=thread -DLNGRAD_BUILD_TESTS=ON -DLNGRAD_BUILD_CLI=OFF -DLNGRAD_BUILD_PYTHON=OFF \
  -DLNGRAD_BUILD_BENCH=OFF -DLNGRAD_BUILD_FUZZERS=OFF >/dev/null
cmake --build "$tsan_dir" -j"$jobs" --target lngrad_hardening_concurrency lngrad_tests
ctest --test-dir "$tsan_dir" --output-on-failure -j"$jobs" --timeout 900 \
  -R '^(Concurrency|Determinism)\.' --no-tests=error || failed+=("TSan concurrency")

if ((${#failed[@]})); then
  echo "ci-sanitize: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "ci-sanitize: no sanitizer reports, every test passed" >&2
