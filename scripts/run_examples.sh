#!/usr/bin/env bash
# Runs the examples against a built library and reports each:
#   scripts/run_examples.sh [BUILD_DIR]
# BUILD_DIR (default build/release) must hold src/libgroupgemm.so and
# examples/c_api_minute (scripts/build.sh builds both). The Python examples
# run from the source tree, as scripts/python_tests.sh runs the tests:
# python/ on PYTHONPATH, the library through GROUPGEMM_LIBRARY. An example
# whose framework (torch; jax with flax) is not importable is skipped, with
# the reason; nothing is installed here. PYTHON picks the interpreter
# (default python3). Exits non-zero when an example failed or is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
python=${PYTHON:-python3}
library="$build/src/libgroupgemm.so"
if [ ! -f "$library" ]; then
  echo "run_examples: $library not found: build the library first (scripts/build.sh)" >&2
  exit 1
fi
GROUPGEMM_LIBRARY="$(realpath "$library")"
export GROUPGEMM_LIBRARY
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export XLA_PYTHON_CLIENT_PREALLOCATE=${XLA_PYTHON_CLIENT_PREALLOCATE:-false}

failed=0
report=()

run() {  # run <name> <command...>: runs it, its output indented, and records the result
  local name=$1; shift
  echo "== $name"
  if "$@" 2>&1 | sed 's/^/   /'; then
    report+=("PASS  $name")
  else
    report+=("FAIL  $name")
    failed=1
  fi
}

skip() {  # skip <name> <reason>
  echo "== $1: skipped: $2"
  report+=("SKIP  $1 ($2)")
}

# The first of the modules that $python cannot import, or nothing.
missing_module() {
  local module
  for module in "$@"; do
    "$python" -c "import $module" 2>/dev/null || { echo "$module"; return; }
  done
}

c_example="$build/examples/c_api_minute"
if [ -x "$c_example" ]; then
  run c_api_minute "$c_example"
else
  echo "== c_api_minute: $c_example not found (configured with GROUPGEMM_BUILD_EXAMPLES=OFF?)"
  report+=("FAIL  c_api_minute (not built)")
  failed=1
fi

for example in torch_moe:torch jax_moe:jax,flax.linen,optax; do
  name=${example%%:*}
  IFS=, read -r -a modules <<< "${example#*:}"
  module=$(missing_module "${modules[@]}")
  if [ -n "$module" ]; then
    skip "$name" "$python cannot import $module"
  else
    run "$name" "$python" "examples/$name.py"
  fi
done

echo
echo "=== examples"
printf '%s\n' "${report[@]}"
exit "$failed"
