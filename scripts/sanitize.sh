#!/usr/bin/env bash
# Runs the small GPU test cases under compute-sanitizer: memcheck (with leak
# checking), racecheck and synccheck. The cases are those whose names contain
# "Small" (bit-exact small-integer products, bad device sizes, graph replays
# with changed sizes): small enough that the slow tools stay quick, and they
# reach the kernels' edges (partial tiles, empty groups, clamped sizes).
# Prints one summary line per tool; exits non-zero when a tool reports an
# error, a test fails, or no test ran at all (nothing was checked).
#   scripts/sanitize.sh <build-dir>
# GG_SANITIZE_FILTER overrides the gtest filter, GG_SANITIZE_TOOLS the tools.
# Both GPU suites (GEMM and quantize) run. Full logs go to
# <build-dir>/sanitize-logs/<suite>-<tool>.log.
set -uo pipefail

build=${1:?usage: scripts/sanitize.sh <build-dir>}
binaries="$build/tests/gpu/gg_gpu_gemm_tests $build/tests/gpu/gg_gpu_quantize_tests"
filter=${GG_SANITIZE_FILTER:-*Small*}
tools=${GG_SANITIZE_TOOLS:-memcheck racecheck synccheck}
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

for binary in $binaries; do
  if [ ! -x "$binary" ]; then
    echo "sanitize: $binary not found; build the GPU test targets first" >&2
    exit 2
  fi
done
if [ ! -x "$sanitizer" ]; then
  echo "sanitize: compute-sanitizer not found (on PATH or in /usr/local/cuda/bin)" >&2
  exit 2
fi
logs=$build/sanitize-logs
mkdir -p "$logs"

count() {  # count <log> <PASSED|FAILED|SKIPPED>: gtest's final tally, 0 if absent
  grep -oE "^\[  $2 +\] [0-9]+ test" "$1" | grep -oE "[0-9]+" | tail -1 || true
}

failed_tools=0
for binary in $binaries; do
for tool in $tools; do
  log=$logs/$(basename "$binary")-$tool.log
  options=(--tool "$tool" --error-exitcode 99)
  [ "$tool" = memcheck ] && options+=(--leak-check full)
  start=$SECONDS
  "$sanitizer" "${options[@]}" "$binary" --gtest_filter="$filter" >"$log" 2>&1
  rc=$?
  passed=$(count "$log" PASSED); passed=${passed:-0}
  failed=$(count "$log" FAILED); failed=${failed:-0}
  skipped=$(count "$log" SKIPPED); skipped=${skipped:-0}
  summary=$(grep -E "(ERROR|RACECHECK) SUMMARY" "$log" | tail -1 | sed -E 's/^=+ *//')
  if [ "$rc" -eq 0 ] && [ "$passed" -gt 0 ]; then
    verdict=PASS
  elif [ "$rc" -eq 0 ]; then
    verdict="FAIL(no test ran)"
  elif [ "$rc" -eq 99 ]; then
    verdict="FAIL(sanitizer errors)"
  else
    verdict="FAIL(rc=$rc)"
  fi
  printf '%-22s %-10s %-24s %s; tests: %s passed, %s failed, %s skipped; %ss\n' "$(basename "$binary")" "$tool" "$verdict" \
    "${summary:-no sanitizer summary}" "$passed" "$failed" "$skipped" "$((SECONDS - start))"
  if [ "$verdict" != PASS ]; then
    failed_tools=$((failed_tools + 1))
    # The first reports say where to look; the full log has the rest.
    grep -E "^========= |^\[  FAILED  \] [^0-9]|no CUDA device" "$log" |
      sed -E 's/ \([0-9]+ ms\)$//' | awk '!seen[$0]++' | head -20 | sed 's/^/    /'
  fi
done
done
exit $((failed_tools > 0))
