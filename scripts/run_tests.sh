#!/usr/bin/env bash
# Builds groupgemm and runs every test. On a machine without a GPU the GPU
# tests (ctest label "gpu") are reported as skipped, with their reason.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build/release
ctest -j"$(nproc)" --output-on-failure --timeout 900 | tee ctest.log
echo "--- skipped tests and why:"
grep -h "SKIPPED\|Skipped" Testing/Temporary/LastTest.log | grep -v "^\[  SKIPPED \] [0-9]* test" | sort -u | head -20 || true
