#!/usr/bin/env bash
# One call on a GPU machine checks everything: builds in Release, runs the GPU
# tests, the compute-sanitizer runs and the benchmarks, and prints a short
# summary table last. Logs go to $OUT (or ./gpu-check-logs) in full.
#   scripts/gpu_check.sh [--quick]   --quick: decode presets only in the bench
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${OUT:-$PWD/gpu-check-logs}
mkdir -p "$logs"
quick=0; [ "${1:-}" = "--quick" ] && quick=1
declare -A result

step() {  # step <name> <command...>: runs, logs, records PASS/FAIL
  local name=$1; shift
  local start=$SECONDS
  if "$@" >"$logs/$name.log" 2>&1; then result[$name]="PASS"; else result[$name]="FAIL(rc=$?)"; fi
  result[$name]="${result[$name]} $((SECONDS - start))s"
  echo "== $name: ${result[$name]}"; tail -n 25 "$logs/$name.log"
}

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$logs/gpu.txt"
step build env GG_BUILD_DIR=build/release bash scripts/build.sh -DCMAKE_CUDA_ARCHITECTURES=90a-real
step cpu_tests ctest --test-dir build/release -L cpu -j16 --output-on-failure
step gpu_tests ctest --test-dir build/release -L gpu -j1 --output-on-failure --timeout 900
step sanitizer bash scripts/sanitize.sh build/release
bench_args=(--routing both)
[ $quick = 1 ] && bench_args+=(--tokens 2048)
step bench ./build/release/src/cli/groupgemm bench "${bench_args[@]}"
./build/release/src/cli/groupgemm bench "${bench_args[@]}" --json >"$logs/bench.json" 2>/dev/null || true

echo
echo "=== summary ($(head -1 "$logs/gpu.txt"))"
grep -E "tests passed|tests failed" "$logs/cpu_tests.log" "$logs/gpu_tests.log" | sed 's/^.*\///'
printf '%-10s %s\n' step result
for s in build cpu_tests gpu_tests sanitizer bench; do printf '%-10s %s\n' "$s" "${result[$s]:-not run}"; done
