#!/usr/bin/env bash
# scripts/sanitize.sh with more shards than the filter selects cases: every
# shard it starts runs a case. compute-sanitizer fails a shard whose program
# launches no kernel ("Target application terminated before first
# instrumented API call"), which the stand-in sanitizer below does too, so
# a shard without a case fails this test. Needs no GPU.
#   tests/gpu/sanitize_shards_test.sh <repository root>
set -euo pipefail
root=${1:?usage: sanitize_shards_test.sh <repository root>}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/tests/gpu" "$work/bin"

# A gtest binary of two cases, Suite.Small1 and Suite.Small2 (gtest's own
# sharding: case i runs in shard i % total).
cat > "$work/build/tests/gpu/gg_gpu_gemm_tests" <<'TESTS'
#!/usr/bin/env bash
case "$*" in *--gtest_list_tests*) printf 'Suite.\n  Small1\n  Small2\n'; exit 0 ;; esac
ran=0
for i in 0 1; do
  if [ $((i % ${GTEST_TOTAL_SHARDS:-1})) -eq "${GTEST_SHARD_INDEX:-0}" ]; then
    echo "[       OK ] Suite.Small$((i + 1))"
    ran=$((ran + 1))
  fi
done
[ "$ran" -gt 0 ] && echo "LAUNCHED_A_KERNEL"
echo "[  PASSED  ] $ran tests."
TESTS
# The sanitizer: runs the program; exits 255 when it launched no kernel.
cat > "$work/bin/compute-sanitizer" <<'SANITIZER'
#!/usr/bin/env bash
while [ "${1#--}" != "$1" ]; do shift 2; done
out=$("$@")
echo "$out"
if ! grep -q LAUNCHED_A_KERNEL <<<"$out"; then
  echo "========= Error: Target application terminated before first instrumented API call"
  exit 255
fi
echo "========= ERROR SUMMARY: 0 errors"
SANITIZER
chmod +x "$work/build/tests/gpu/gg_gpu_gemm_tests" "$work/bin/compute-sanitizer"

summary=$(PATH="$work/bin:$PATH" GG_SANITIZE_SUITES=gemm GG_SANITIZE_TOOLS=memcheck \
  GG_SANITIZE_SHARDS=8 bash "$root/scripts/sanitize.sh" "$work/build") || {
  echo "sanitize.sh failed with 8 shards for 2 cases:"; echo "$summary"; exit 1; }
echo "$summary"
grep -q "memcheck   PASS .* in 2 of 2 shards; tests: 2 passed, 0 failed" <<<"$summary"
