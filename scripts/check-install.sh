#!/usr/bin/env bash
# Installs the build into a fresh prefix and builds consumer projects against
# it with find_package(lngrad): proves the exported package works.
set -euo pipefail
build=${1:?build dir}
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=$(mktemp -d /tmp/lngrad-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for example in "$root"/examples/*/; do
  name=$(basename "$example")
  cmake -S "$example" -B "$prefix/build-$name" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$prefix/build-$name" -j"$(nproc)" >/dev/null
  echo "== example $name (built against the installed package)"
  if [[ -x "$prefix/build-$name/$name" ]]; then
    "$prefix/build-$name/$name"
  else  # a folder of several programs: run each
    for program in $(find "$prefix/build-$name" -maxdepth 1 -type f -executable | sort); do
      "$program"
    done
  fi
done
echo "install check: passed"
