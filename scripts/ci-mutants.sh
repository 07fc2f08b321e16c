#!/usr/bin/env bash
# The mutation job (README, "What is tested"): the fixed subset of
# scripts/mutants/ marked `ci: yes`, each planted in a scratch copy of the
# tree (build-mutants/) and stopped at the first C++ suite that kills it.
# Fails on a survivor, an anchor that no longer matches, or a mutant that
# does not build. The whole set: ./run mutants (about 25 minutes here).
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 scripts/mutants/run.py --ci "$@"
