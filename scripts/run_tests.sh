#!/usr/bin/env bash
# Builds groupgemm and runs every test: the C++ suites through ctest, then the
# Python package's tests. On a machine without a GPU the GPU tests (ctest
# label "gpu", and the CUDA cases of the Python tests) are reported as
# skipped, with their reason.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build/release -j"$(nproc)" --output-on-failure --timeout 900
echo "--- why tests were skipped (count, reason):"
grep -h -A1 "Skipped$" build/release/Testing/Temporary/LastTest.log | grep -v "Skipped$\|^--$" \
  | sort | uniq -c | sort -rn || echo "      0 (none skipped)"
bash scripts/python_tests.sh build/release
