#!/usr/bin/env bash
# Times two builds of lngrad against each other in one process (bench/ab.cpp).
#   bench/ab.sh [--cold] [--offset BYTES] [--plan-a SPEC] [--plan-b SPEC] BUILD_A BUILD_B ROUNDS ROWSxH:DTYPE:THREADS[:forward]...
# BUILD_A and BUILD_B are build trees (each built at least with
# `cmake --build DIR --target lngrad`), e.g. of two git worktrees; the
# lngrad-ab driver comes from BUILD_A (target lngrad_ab).
set -euo pipefail
plans=()
while [[ ${1:-} == --plan-a || ${1:-} == --plan-b || ${1:-} == --offset || ${1:-} == --cold ]]; do
  if [[ $1 == --cold ]]; then
    plans+=("$1")
    shift
  else
    plans+=("$1" "$2")
    shift 2
  fi
done
if (($# < 4)); then
  echo "usage: bench/ab.sh BUILD_A BUILD_B ROUNDS ROWSxH:DTYPE:THREADS..." >&2
  exit 2
fi
a=$1 b=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for side in a b; do
  dir=${!side}
  lib=$dir/src/liblngrad.a
  [[ -f $lib ]] || { echo "bench/ab.sh: no $lib (build the lngrad target there)" >&2; exit 2; }
  g++ -shared -o "$tmp/$side.so" -Wl,--whole-archive "$lib" -Wl,--no-whole-archive -lhwy -lpthread
done
driver=$a/bench/lngrad-ab
[[ -x $driver ]] || { echo "bench/ab.sh: no $driver (cmake --build $a --target lngrad_ab)" >&2; exit 2; }
"$driver" "${plans[@]}" "$tmp/a.so" "$tmp/b.so" "$@"
