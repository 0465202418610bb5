#!/usr/bin/env bash
# Runs the Python package's tests (python/tests) against a built library,
# without installing the package:
#   scripts/python_tests.sh [BUILD_DIR [pytest arguments...]]
# BUILD_DIR (default build/release) must hold src/libgroupgemm.so; it is used
# through GROUPGEMM_LIBRARY, with python/ on PYTHONPATH. numpy and pytest are
# installed with pip when missing, ml_dtypes (bf16 arrays) too where pip can;
# torch never is: the torch tests are skipped, with the reason, where torch or
# a GPU is missing. PYTHON picks the interpreter (default python3).
# pytest's "no tests collected" (exit code 5) counts as a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
[ $# -gt 0 ] && shift
library="$build/src/libgroupgemm.so"
if [ ! -f "$library" ]; then
  echo "python_tests: $library not found: build the library first (scripts/build.sh)" >&2
  exit 1
fi
python=${PYTHON:-python3}

has() { "$python" -c "import $1" 2>/dev/null; }
missing=()
for module in numpy pytest; do has "$module" || missing+=("$module"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "python_tests: installing ${missing[*]}"
  "$python" -m pip install -q "${missing[@]}"
fi
has ml_dtypes || "$python" -m pip install -q ml_dtypes ||
  echo "python_tests: ml_dtypes unavailable; the bf16 numpy tests will be skipped"

GROUPGEMM_LIBRARY="$(realpath "$library")"
export GROUPGEMM_LIBRARY
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
status=0
"$python" -m pytest python/tests -ra "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "python_tests: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
