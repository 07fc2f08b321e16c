# Cross build for 64-bit Arm Linux with Debian's cross compiler
# (g++-aarch64-linux-gnu) against the arm64 multiarch packages
# (libhwy-dev:arm64, libgtest-dev:arm64), whose files live under
# /usr/lib/aarch64-linux-gnu and /usr/include. scripts/ci-arm.sh uses it and
# runs the result under qemu-aarch64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Packages from the arm64 multiarch paths only; programs (cmake's helpers)
# from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# Test programs (and gtest_discover_tests' listing at build time) run under
# qemu-user; QEMU_CPU in the environment picks the CPU and SVE vector length.
# They load the arm64 multiarch runtime (libc6:arm64, libstdc++6:arm64, which
# libhwy-dev:arm64 brings) through /lib/ld-linux-aarch64.so.1. Not with
# QEMU_LD_PREFIX=/usr/aarch64-linux-gnu: that loader (the cross toolchain's
# glibc) finds the multiarch libc.so.6, another build of glibc, through the
# host's ld.so.cache, and the first pthread_create then never returns.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
