#!/usr/bin/env bash
# Runs the small GPU test cases under compute-sanitizer: memcheck (with leak
# checking), racecheck and synccheck. The cases are those whose names contain
# "Small" (bit-exact small-integer products, bad device sizes, graph replays
# with changed sizes): small enough that the slow tools stay quick, and they
# reach the kernels' edges (partial tiles, empty groups, clamped sizes).
# Each suite's cases are split into GG_SANITIZE_SHARDS gtest shards (default:
# half the CPU cores, at most 8; no more than the cases the filter selects,
# since compute-sanitizer fails a shard that runs no kernel) run side by
# side on the one GPU: the tools
# spend most of their time on the host, one process at a time leaves the GPU
# idle, and racecheck over the GEMM cases alone otherwise takes over 8 minutes.
# Prints one summary line per suite and tool; exits non-zero when a tool
# reports an error, a test fails, or no test ran at all (nothing was checked).
#   scripts/sanitize.sh <build-dir>
# GG_SANITIZE_FILTER overrides the gtest filter, GG_SANITIZE_TOOLS the tools,
# GG_SANITIZE_SUITES the GPU suites (default: gemm quantize). Full logs go to
# <build-dir>/sanitize-logs/<suite>-<tool>-<shard>.log.
set -uo pipefail

build=${1:?usage: scripts/sanitize.sh <build-dir>}
suites=${GG_SANITIZE_SUITES:-gemm quantize}
binaries=$(for suite in $suites; do echo "$build/tests/gpu/gg_gpu_${suite}_tests"; done)
filter=${GG_SANITIZE_FILTER:-*Small*}
tools=${GG_SANITIZE_TOOLS:-memcheck racecheck synccheck}
cores=$(nproc)
shards=${GG_SANITIZE_SHARDS:-$(( cores / 2 < 1 ? 1 : (cores / 2 > 8 ? 8 : cores / 2) ))}
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

total() {  # total <pattern> <logs...>: the sum over the logs of the number <pattern> captures
  local pattern=$1; shift
  cat "$@" | sed -nE "s/$pattern/\1/p" | awk '{ sum += $1 } END { print sum + 0 }'
}

failed_tools=0
for binary in $binaries; do
cases=$("$binary" --gtest_filter="$filter" --gtest_list_tests | grep -c '^  ')
binary_shards=$(( cases < 1 ? 1 : (cases < shards ? cases : shards) ))
for tool in $tools; do
  prefix=$logs/$(basename "$binary")-$tool
  options=(--tool "$tool" --error-exitcode 99)
  [ "$tool" = memcheck ] && options+=(--leak-check full)
  start=$SECONDS
  rm -f "$prefix"-*.log
  pids=()
  for shard in $(seq 0 $((binary_shards - 1))); do
    GTEST_TOTAL_SHARDS=$binary_shards GTEST_SHARD_INDEX=$shard \
      "$sanitizer" "${options[@]}" "$binary" --gtest_filter="$filter" >"$prefix-$shard.log" 2>&1 &
    pids+=($!)
  done
  rc=0
  for pid in "${pids[@]}"; do
    wait "$pid"
    shard_rc=$?
    # A sanitizer error outranks any other failure in the verdict.
    if [ "$shard_rc" -eq 99 ] || [ "$rc" -eq 0 ]; then rc=$shard_rc; fi
  done
  shard_logs=("$prefix"-*.log)
  # gtest's final tallies, and the sanitizer's reports (errors or hazards).
  passed=$(total '^\[  PASSED  \] ([0-9]+) test.*' "${shard_logs[@]}")
  failed=$(total '^\[  FAILED  \] ([0-9]+) test.*' "${shard_logs[@]}")
  skipped=$(total '^\[  SKIPPED \] ([0-9]+) test.*' "${shard_logs[@]}")
  reports=$(total '^=+ [A-Z]+ SUMMARY: ([0-9]+) .*' "${shard_logs[@]}")
  summaries=$(grep -hcE "(ERROR|RACECHECK) SUMMARY" "${shard_logs[@]}" | awk '{ n += $1 } END { print n + 0 }')
  if [ "$rc" -eq 0 ] && [ "$passed" -gt 0 ]; then
    verdict=PASS
  elif [ "$rc" -eq 0 ]; then
    verdict="FAIL(no test ran)"
  elif [ "$rc" -eq 99 ]; then
    verdict="FAIL(sanitizer errors)"
  else
    verdict="FAIL(rc=$rc)"
  fi
  printf '%-22s %-10s %-24s %s reported in %s of %s shards; tests: %s passed, %s failed, %s skipped; %ss\n' \
    "$(basename "$binary")" "$tool" "$verdict" "$reports" "$summaries" "$binary_shards" \
    "$passed" "$failed" "$skipped" "$((SECONDS - start))"
  if [ "$verdict" != PASS ]; then
    failed_tools=$((failed_tools + 1))
    # The first reports say where to look; the full logs have the rest.
    grep -hE "^========= |^\[  FAILED  \] [^0-9]|no NVIDIA driver/GPU found|no usable CUDA device" "${shard_logs[@]}" |
      sed -E 's/ \([0-9]+ ms\)$//' | awk '!seen[$0]++' | head -20 | sed 's/^/    /'
  fi
done
done
exit $((failed_tools > 0))
