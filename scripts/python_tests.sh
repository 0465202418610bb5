#!/usr/bin/env bash
# Runs the Python package's tests (python/tests) against a built library,
# without installing the package:
#   scripts/python_tests.sh [BUILD_DIR [pytest arguments...]]
# BUILD_DIR (default build/release) must hold src/libgroupgemm.so; it is used
# through GROUPGEMM_LIBRARY, with python/ on PYTHONPATH. The tests run in the
# virtual environment build/venv (made on first use with the system's
# packages visible, reused after), and what they need is installed there,
# never into the system's Python: numpy and pytest when missing, ml_dtypes
# (bf16 arrays) where pip can; torch (pinned below, ~4 GB with its CUDA
# libraries, running here on the CPU) only with GG_INSTALL_TORCH=1: otherwise
# the torch tests are skipped, with the reason, where torch or a GPU is
# missing. jax and flax are installed for the CPU when jax is missing (pinned
# below), and libgroupgemm_jax.so, the JAX FFI handlers, is then built into
# BUILD_DIR (or brought up to date); GG_NO_JAX_INSTALL=1 skips both (the JAX
# tests are then skipped when jax is missing). PYTHON names an interpreter to
# use instead of build/venv (its environment then gets the installs). Where
# nvidia-smi lists a GPU, GROUPGEMM_EXPECT_GPU=1 (unless set otherwise): an
# installed torch or jax that sees no GPU then fails the run
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
if [ -n "${PYTHON:-}" ]; then
  python=$PYTHON
  echo "python_tests: test dependencies install into the environment of $python"
else
  venv=build/venv
  if [ -x "$venv/bin/python" ]; then
    echo "python_tests: test dependencies install into the virtual environment $venv (reused)"
  else
    echo "python_tests: test dependencies install into the virtual environment $venv (made now)"
    python3 -m venv --system-site-packages "$venv"
  fi
  python=$PWD/$venv/bin/python
fi
pip_install() { "$python" -m pip install -q --disable-pip-version-check "$@"; }

has() { "$python" -c "import $1" 2>/dev/null; }
missing=()
for module in numpy pytest; do has "$module" || missing+=("$module"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "python_tests: installing ${missing[*]}"
  pip_install "${missing[@]}"
fi
has ml_dtypes || pip_install ml_dtypes ||
  echo "python_tests: ml_dtypes unavailable; the bf16 numpy tests will be skipped"

if [ -z "${GROUPGEMM_EXPECT_GPU:-}" ]; then
  GROUPGEMM_EXPECT_GPU=0
  nvidia-smi -L 2>/dev/null | grep -q '^GPU' && GROUPGEMM_EXPECT_GPU=1
fi
export GROUPGEMM_EXPECT_GPU

TORCH_PIN=("torch==2.15.0")
if [ "${GG_INSTALL_TORCH:-0}" = 1 ] && ! has torch; then
  echo "python_tests: installing ${TORCH_PIN[*]} (~4 GB with its CUDA libraries)"
  pip_install "${TORCH_PIN[@]}"
fi

# jax 0.11.2 is what the GPU machines run; 0.10.2 is the newest on PyPI here.
# flax 0.12.8 needs jax >= 0.10.0.
JAX_PIN=("jax==0.10.2" "jaxlib==0.10.2" "flax==0.12.8")
if [ "${GG_NO_JAX_INSTALL:-0}" != 1 ]; then
  if ! has jax && [ "$GROUPGEMM_EXPECT_GPU" = 1 ]; then
    echo "python_tests: jax missing; a CPU jax would not see the GPU, so the JAX tests will be skipped"
  elif ! has jax; then
    echo "python_tests: installing ${JAX_PIN[*]} (CPU)"
    pip_install "${JAX_PIN[@]}" ||
      echo "python_tests: jax unavailable; the JAX tests will be skipped"
  fi
  # Configured with this Python, so that the handlers are built with its
  # jax's headers; nothing is rebuilt when they are up to date.
  if has jax.ffi; then
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
