#!/usr/bin/env bash
# One call on a GPU machine checks everything: builds in Release, runs the
# CPU and GPU tests, the compute-sanitizer runs, the Python tests, and the
# benchmarks, then prints a short summary table last. Full logs go to $OUT
# (or ./gpu-check-logs). Exits non-zero when a step failed.
#   scripts/gpu_check.sh [all|tests|bench] [groupgemm bench arguments...]
#     tests: build, tests, sanitizer, Python tests; bench: build, benchmarks.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${OUT:-$PWD/gpu-check-logs}
mkdir -p "$logs"
what=${1:-all}
[ $# -gt 0 ] && shift
bench_args=("$@")
[ ${#bench_args[@]} -eq 0 ] && bench_args=(--routing both)
build=build/release
steps=()
declare -A result

step() {  # step <name> <command...>: runs it, logs it, records PASS/FAIL
  local name=$1; shift
  local start=$SECONDS rc=0
  "$@" >"$logs/$name.log" 2>&1 || rc=$?
  if [ $rc -eq 0 ]; then result[$name]="PASS"; else result[$name]="FAIL(rc=$rc)"; fi
  result[$name]="${result[$name]} $((SECONDS - start))s"
  steps+=("$name")
  echo "== $name: ${result[$name]}"
  tail -n 15 "$logs/$name.log"
}

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader \
  | tee "$logs/gpu.txt"
step build env GG_BUILD_DIR=$build bash scripts/build.sh -DCMAKE_CUDA_ARCHITECTURES=90a-real
if [ "$what" != bench ]; then
  step cpu_tests ctest --test-dir $build -L cpu -j16 --output-on-failure
  step gpu_tests ctest --test-dir $build -L gpu -j4 -V --timeout 600
  step sanitizer bash scripts/sanitize.sh $build
  step python_tests bash scripts/python_tests.sh $build
fi
if [ "$what" != tests ]; then
  step bench $build/src/cli/groupgemm bench "${bench_args[@]}"
  step torch_bench env PYTHONPATH=python GROUPGEMM_LIBRARY=$build/src/libgroupgemm.so \
    python3 -m groupgemm.bench --png "$logs/torch_bench.png" --json "$logs/torch_bench.json"
  step energy_bench env GROUPGEMM_LIBRARY=$build/src/libgroupgemm.so \
    python3 tools/bench_energy.py
  # The opt-in runs kernels not yet on the verified list (kernels/verified_kernels.h).
  step quantized_gemm_bench env PYTHONPATH=python GROUPGEMM_LIBRARY=$build/src/libgroupgemm.so \
    GROUPGEMM_UNVERIFIED_KERNELS=1 python3 -m groupgemm.bench_quantized
  # Groups of a few rows: the paths' own kernels (the opt-in off), then the
  # skinny kernel, which the plan gives them once it is verified.
  step skinny_bench env PYTHONPATH=python GROUPGEMM_LIBRARY=$build/src/libgroupgemm.so \
    bash -c 'for opt in 0 1; do echo "== GROUPGEMM_UNVERIFIED_KERNELS=$opt"
      GROUPGEMM_UNVERIFIED_KERNELS=$opt python3 -m groupgemm.bench_quantized --tokens 128 \
        --ops fprop,dgrad || exit; done'
  step recipe_step_bench env PYTHONPATH=python GROUPGEMM_LIBRARY=$build/src/libgroupgemm.so \
    python3 -m groupgemm.bench_recipes
  step recipe_step_bench_skewed env PYTHONPATH=python GROUPGEMM_LIBRARY=$build/src/libgroupgemm.so \
    python3 -m groupgemm.bench_recipes --routing skewed
  # The quantized formats in the C++ bench, beside our bf16 and cuBLASLt's dense fp8.
  step format_bench bash -c 'for f in e4m3-group e4m3-rowwise e4m3-blockwise mxfp8 mxfp4 nvfp4; do
      "$0" bench --format "$f" --routing both || exit; done' $build/src/cli/groupgemm
  step quantize_bench $build/src/cli/groupgemm bench-quantize
  step torch_quantize_bench env PYTHONPATH=python GROUPGEMM_LIBRARY=$build/src/libgroupgemm.so \
    python3 -m groupgemm.bench_quantize
  if python3 -c "import jax" 2>/dev/null; then
    step jax_bench env PYTHONPATH=python GROUPGEMM_LIBRARY=$build/src/libgroupgemm.so \
      python3 -m groupgemm.jax.bench --json "$logs/jax_bench.json"
  fi
fi

echo
echo "=== summary: $(head -1 "$logs/gpu.txt")"
for name in cpu_tests gpu_tests; do
  [ -f "$logs/$name.log" ] && echo "$name: $(grep -E 'tests passed|tests failed' "$logs/$name.log")"
done
if [ -f "$logs/gpu_tests.log" ]; then
  echo "cases a path reports not supported: $(grep -c 'NOT SUPPORTED' "$logs/gpu_tests.log")"
fi
[ -f "$logs/bench.log" ] && grep -v '^\[' "$logs/bench.log"
[ -f "$logs/format_bench.log" ] && grep -v '^\[' "$logs/format_bench.log"
[ -f "$logs/torch_bench.log" ] && tail -n 40 "$logs/torch_bench.log"
[ -f "$logs/jax_bench.log" ] && tail -n 30 "$logs/jax_bench.log"
[ -f "$logs/energy_bench.log" ] && cat "$logs/energy_bench.log"
[ -f "$logs/quantized_gemm_bench.log" ] && grep -v '^  not run' "$logs/quantized_gemm_bench.log" | tail -n 60
[ -f "$logs/skinny_bench.log" ] && grep -v '^  not run' "$logs/skinny_bench.log"
[ -f "$logs/recipe_step_bench.log" ] && grep -v '^  not run' "$logs/recipe_step_bench.log"
[ -f "$logs/recipe_step_bench_skewed.log" ] && grep -v '^  not run' "$logs/recipe_step_bench_skewed.log"
[ -f "$logs/quantize_bench.log" ] && tail -n 30 "$logs/quantize_bench.log"
[ -f "$logs/torch_quantize_bench.log" ] && tail -n 30 "$logs/torch_quantize_bench.log"
printf '%-13s %s\n' step result
failed=0
for name in "${steps[@]}"; do
  printf '%-13s %s\n' "$name" "${result[$name]}"
  [[ ${result[$name]} == PASS* ]] || failed=1
done
exit $failed
