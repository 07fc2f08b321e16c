#!/usr/bin/env bash
# Static analysis of src/ and include/ (docs/HARDENING.md, "Static checks"):
# clang-tidy with the repository's .clang-tidy, and cppcheck with
# .cppcheck-suppressions (every suppression carries its reason). Both read the
# compile commands of a configure-only build, so they see the real flags.
# Any finding fails the script; the list is printed as file:line: check.
#
# Environment: LNGRAD_JOBS (default: nproc), LNGRAD_STATIC_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${LNGRAD_JOBS:-$(nproc)}
build=${LNGRAD_STATIC_DIR:-$root/build-static}

source "$root/scripts/packages.sh"
install_missing ci-static --no-install-recommends clang clang-tidy cppcheck cmake libhwy-dev python3

# Configure only: compile_commands.json and the generated version header.
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DLNGRAD_BUILD_TESTS=OFF -DLNGRAD_BUILD_CLI=OFF -DLNGRAD_BUILD_PYTHON=OFF -DLNGRAD_BUILD_BENCH=OFF >/dev/null

# The library's translation units only (headers under include/ and src/ are
# checked through them).
/usr/bin/python3 - "$build/compile_commands.json" "$build/compile_commands_src.json" "$root/src/" <<'EOF'
import json, sys
entries = [e for e in json.load(open(sys.argv[1])) if e["file"].startswith(sys.argv[3])]
json.dump(entries, open(sys.argv[2], "w"), indent=1)
if not entries:
    sys.exit("ci-static: no translation units under " + sys.argv[3])
EOF

status=0

echo "== clang-tidy" >&2
tidy_log=$build/clang-tidy.log
tidy_rc=0
run-clang-tidy -p "$build" -quiet -j "$jobs" "^$root/src/" >"$tidy_log" 2>&1 || tidy_rc=$?
sed -i 's/\x1b\[[0-9;]*m//g' "$tidy_log"
if grep -qE '^/.*: (warning|error): ' "$tidy_log"; then
  grep -E '^/.*: (warning|error): ' "$tidy_log" | sort -u >&2
  status=1
elif ((tidy_rc)); then
  cat "$tidy_log" >&2  # clang-tidy could not process a file
  status=1
fi

echo "== cppcheck" >&2
if ! cppcheck --project="$build/compile_commands_src.json" --std=c++20 \
    --enable=warning,style,performance,portability --inline-suppr \
    --suppressions-list="$root/.cppcheck-suppressions" --error-exitcode=1 --quiet -j "$jobs" \
    --template='{file}:{line}: {severity}: {id}: {message}'; then
  status=1
fi

if ((status)); then
  echo "ci-static: FAILED (findings above)" >&2
  exit 1
fi
echo "ci-static: clang-tidy and cppcheck clean on src/ and include/" >&2
