#!/usr/bin/env bash
# Builds the CPU test suites and the CLI with AddressSanitizer and
# UndefinedBehaviorSanitizer on the host code into BUILD_DIR (default
# build/host-sanitize), and runs the CPU tests (ctest label "cpu") there: any
# out-of-bounds access, leak or undefined behaviour fails the test that caused
# it. The CUDA kernels are built with the Release flags of scripts/build.sh:
# the same nvcc commands, so that ccache hands back those objects instead of
# compiling them a second time. scripts/sanitize.sh is the device-side
# counterpart (compute-sanitizer on a GPU).
#   scripts/host_sanitize.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
build=${1:-build/host-sanitize}
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
configure_log=$(cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="-O3 -DNDEBUG" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" \
  -DCMAKE_SHARED_LINKER_FLAGS="$flags" "${compiler_launchers[@]}") || { echo "$configure_log"; exit 1; }
# Every target a "cpu" test runs.
cmake --build "$build" -j"$(nproc)" --target api_test test_reference test_plan formats_test \
  groupgemm groupgemm_cli c_api_minute
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
ctest --test-dir "$build" -L cpu -j"$(nproc)" --output-on-failure --timeout 900
