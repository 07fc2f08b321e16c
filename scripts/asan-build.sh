# Sourced by ci-sanitize.sh and ci-fuzz.sh: the one ASan+UBSan build both use.
# The library, the tests, the lngrad command and the libFuzzer targets are
# built together, so the kernels (the longest compile under ASan) are compiled
# once for the ctest suite and the fuzzers; both scripts configure it with
# these same options, so neither invalidates what the other built.
#   configure_asan_build DIR
configure_asan_build() {
  CC=clang CXX=clang++ cmake -S "$root" -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLNGRAD_SANITIZE=address,undefined -DLNGRAD_BUILD_FUZZERS=ON -DLNGRAD_BUILD_TESTS=ON \
    -DLNGRAD_BUILD_CLI=ON -DLNGRAD_BUILD_PYTHON=OFF -DLNGRAD_BUILD_BENCH=OFF >/dev/null
}
