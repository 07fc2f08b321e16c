#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time under ASan+UBSan
# (docs/HARDENING.md, "Fuzzing"). Targets: fuzz_validation always; fuzz_npy
# and fuzz_ascendc once the .npy reader and the AscendC layer are in the tree.
#
# Each target starts from its seed corpus (fuzz/corpus/<target>/, read only);
# inputs it finds go to <build>/fuzz-work/<target>/, crashes to
# <build>/fuzz-artifacts/<target>/. A crash fails the script; once fixed, the
# crashing input belongs in fuzz/regressions/<target>/ (ctest replays it).
#
# Environment: LNGRAD_FUZZ_SECONDS (per target, default 60), LNGRAD_JOBS,
# LNGRAD_ASAN_DIR (the build folder ci-sanitize.sh shares, default build-asan).
# Longer runs: see docs/HARDENING.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${LNGRAD_JOBS:-$(nproc)}
seconds=${LNGRAD_FUZZ_SECONDS:-60}
build=${LNGRAD_ASAN_DIR:-$root/build-asan}

source "$root/scripts/packages.sh"
source "$root/scripts/asan-build.sh"
install_missing ci-fuzz --no-install-recommends clang libclang-rt-14-dev cmake libhwy-dev libgtest-dev

export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

configure_asan_build "$build"

# Fuzz targets this tree configures (Makefile and Ninja listings).
mapfile -t targets < <(cmake --build "$build" --target help |
  sed -n -e 's/^\.\.\. \(fuzz_[a-z_]*\).*/\1/p' -e 's/^\(fuzz_[a-z_]*\): .*/\1/p' | sort -u)
if ((${#targets[@]} == 0)); then
  echo "ci-fuzz: no fuzz targets configured" >&2
  exit 1
fi
cmake --build "$build" -j"$jobs" --target "${targets[@]}"

failed=()
for t in "${targets[@]}"; do
  seeds=$root/fuzz/corpus/$t
  work=$build/fuzz-work/$t
  artifacts=$build/fuzz-artifacts/$t
  if [[ ! -d $seeds ]] || [[ -z $(ls -A "$seeds") ]]; then
    echo "ci-fuzz: $t has no seed corpus in $seeds" >&2
    failed+=("$t")
    continue
  fi
  mkdir -p "$work" "$artifacts"
  echo "== $t: ${seconds}s" >&2
  if ! "$build/fuzz/$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=4096 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" "$seeds" 2>"$build/fuzz-$t.log"; then
    tail -n 60 "$build/fuzz-$t.log" >&2
    echo "ci-fuzz: $t failed; inputs in $artifacts (reproduce: $build/fuzz/$t <file>)" >&2
    failed+=("$t")
  else
    grep -E '^(stat::number_of_executed_units|stat::new_units_added)' "$build/fuzz-$t.log" | sed "s/^/  $t /" >&2
  fi
done

if ((${#failed[@]})); then
  echo "ci-fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "ci-fuzz: ${targets[*]}: no crash in ${seconds}s each" >&2
