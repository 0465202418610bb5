#!/usr/bin/env bash
# Builds groupgemm (everything: library, CLI, test suites) and runs every
# test: the C++ suites through ctest, then the Python package's tests
# (scripts/python_tests.sh, in the virtual environment build/venv), then the
# examples (scripts/run_examples.sh). On a machine without a GPU the GPU tests
# (ctest label "gpu", and the CUDA cases of the Python tests) are reported as
# skipped, with their reason. Every step runs even when one before it failed;
# the exit code is non-zero when any did.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release
bash scripts/build.sh
failed=()
ctest --test-dir $build -j"$(nproc)" --output-on-failure --timeout 900 | tee $build/ctest.log ||
  failed+=(ctest)
python3 scripts/ctest_summary.py $build/ctest.log $build/Testing/Temporary/LastTest.log
bash scripts/python_tests.sh $build || failed+=(python_tests)
if [ -f scripts/run_examples.sh ]; then
  # The examples run with the Python the tests ran with (build/venv unless
  # PYTHON names one), and so with what was installed for them.
  examples_env=()
  [ -z "${PYTHON:-}" ] && examples_env=(PATH="$PWD/build/venv/bin:$PATH" PYTHON="$PWD/build/venv/bin/python")
  env "${examples_env[@]}" bash scripts/run_examples.sh $build || failed+=(run_examples)
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_tests: failed: ${failed[*]}" >&2
  exit 1
fi
