#!/usr/bin/env bash
# Runs the Python package's tests (python/tests) against a built library,
# without installing the package:
#   scripts/python_tests.sh [BUILD_DIR [pytest arguments...]]
# BUILD_DIR (default build/release) must hold src/libgroupgemm.so; it is used
# through GROUPGEMM_LIBRARY, with python/ on PYTHONPATH. numpy and pytest are
# installed with pip when missing, ml_dtypes (bf16 arrays) too where pip can;
# torch never is: the torch tests are skipped, with the reason, where torch or
# a GPU is missing. jax is installed for the CPU when missing (pinned below),
# and libgroupgemm_jax.so, the JAX FFI handlers, is then built into BUILD_DIR
# if it is not there yet; GG_NO_JAX_INSTALL=1 skips both (the JAX tests are
# then skipped when jax is missing). PYTHON picks the interpreter (default
# python3). Where nvidia-smi lists a GPU, GROUPGEMM_EXPECT_GPU=1 (unless set
# otherwise): an installed torch or jax that sees no GPU then fails the run
# (python/tests/conftest.py), and no CPU jax is installed.
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

if [ -z "${GROUPGEMM_EXPECT_GPU:-}" ]; then
  GROUPGEMM_EXPECT_GPU=0
  nvidia-smi -L 2>/dev/null | grep -q '^GPU' && GROUPGEMM_EXPECT_GPU=1
fi
export GROUPGEMM_EXPECT_GPU

# jax 0.11.2 is what the GPU machines run; 0.10.2 is the newest on PyPI here.
JAX_PIN=("jax==0.10.2" "jaxlib==0.10.2")
if [ "${GG_NO_JAX_INSTALL:-0}" != 1 ]; then
  if ! has jax && [ "$GROUPGEMM_EXPECT_GPU" = 1 ]; then
    echo "python_tests: jax missing; a CPU jax would not see the GPU, so the JAX tests will be skipped"
  elif ! has jax; then
    echo "python_tests: installing ${JAX_PIN[*]} (CPU)"
    "$python" -m pip install -q "${JAX_PIN[@]}" ||
      echo "python_tests: jax unavailable; the JAX tests will be skipped"
  fi
  if has jax.ffi && [ ! -f "$build/src/libgroupgemm_jax.so" ]; then
    echo "python_tests: building libgroupgemm_jax.so in $build"
    cmake -S . -B "$build" -DPython3_EXECUTABLE="$(command -v "$python")" >/dev/null
    cmake --build "$build" --target groupgemm_python -j2
  fi
fi

GROUPGEMM_LIBRARY="$(realpath "$library")"
export GROUPGEMM_LIBRARY
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
# jax would otherwise take 75% of the GPU memory at its first use, leaving
# too little to the torch tests in the same process.
export XLA_PYTHON_CLIENT_PREALLOCATE=${XLA_PYTHON_CLIENT_PREALLOCATE:-false}
status=0
"$python" -m pytest python/tests -ra "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "python_tests: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
