#!/usr/bin/env bash
# Times one groupgemm bench command on two builds in the same call, so that
# a change is measured against its base on the same GPU at the same time:
# the base (a commit's tree, by git archive, or a directory holding a
# source tree) and the working tree, each
# built in Release for this GPU only (build/ab/base, build/ab/head), then the
# command run AB_ROUNDS times (default 2) on each build, alternating. Prints
# a table last: each row's times on both builds and its speed, the base's
# best time over the working tree's best (above 1: the working tree is
# faster). Rows are read from the command's table: the columns before "ms"
# name a row. AB_SAME_FILES (paths, space-separated) are taken from the
# working tree into the base's too, so that both builds run the same
# harness (e.g. a changed bench command) around their own kernels.
#   scripts/ab_bench.sh <base> <groupgemm subcommand and arguments...>
#   e.g. scripts/ab_bench.sh HEAD bench-quantize --routing random --tokens 16384,65536
# A machine whose copy of the repository lacks the base commit takes its
# tree as a directory: `git archive <commit> | tar -x -C .ab-base` here
# (.ab-base/ is ignored by git), sent along with the working tree, then
# `scripts/ab_bench.sh .ab-base ...` there.
# Every run's output goes to $OUT (or build/ab/logs).
# AB_BASE_CLI and AB_HEAD_CLI, both set, name groupgemm CLIs already built
# for this GPU (elsewhere, by the same CUDA toolkit, and carried along):
# they are run as they are, nothing is built, and <base> only names the
# base in the table.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: scripts/ab_bench.sh <base> <groupgemm subcommand and arguments...>}
shift
[ $# -gt 0 ] || { echo "ab_bench: no groupgemm command given" >&2; exit 2; }
rounds=${AB_ROUNDS:-2}
logs=${OUT:-$PWD/build/ab/logs}
command -v nvidia-smi > /dev/null || { echo "ab_bench: needs a GPU (no nvidia-smi)" >&2; exit 2; }
mkdir -p "$logs" build/ab
capability=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1)
arch=${capability/./}
[ "$arch" = 90 ] && arch=90a  # the sm90 path needs the arch-specific target
# The base's tree is extracted (or copied) again only when it changed, so
# that a second call on the same base rebuilds nothing.
if [ -n "${AB_BASE_CLI:-}" ] && [ -n "${AB_HEAD_CLI:-}" ]; then
  cli_base=$AB_BASE_CLI
  cli_head=$AB_HEAD_CLI
elif [ -d "$base" ]; then
  if ! diff -rq "$base" build/ab/base-src > /dev/null 2>&1; then
    rm -rf build/ab/base-src build/ab/base-src.commit
    cp -r "$base" build/ab/base-src
  fi
else
  commit=$(git rev-parse "$base^{commit}")
  if [ "$(cat build/ab/base-src.commit 2>/dev/null)" != "$commit" ]; then
    rm -rf build/ab/base-src
    mkdir -p build/ab/base-src
    git archive "$commit" | tar -x -C build/ab/base-src
    echo "$commit" > build/ab/base-src.commit
  fi
fi
if [ -z "${cli_base:-}" ]; then
  for path in ${AB_SAME_FILES:-}; do
    cmp -s "$path" "build/ab/base-src/$path" || cp "$path" "build/ab/base-src/$path"
  done
  build() {  # build <source> <build dir>
    cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES="$arch-real" > "$2.log" 2>&1 &&
      cmake --build "$2" -j"$(( ($(nproc) + 1) / 2 ))" --target groupgemm_cli >> "$2.log" 2>&1
  }
  build build/ab/base-src build/ab/base & base_build=$!
  build . build/ab/head & head_build=$!
  status=0
  wait $base_build || { echo "ab_bench: the build of $base failed (build/ab/base.log)" >&2; status=1; }
  wait $head_build || { echo "ab_bench: the build of the working tree failed (build/ab/head.log)" >&2; status=1; }
  [ $status -eq 0 ] || exit 1
  cli_base=build/ab/base/src/cli/groupgemm
  cli_head=build/ab/head/src/cli/groupgemm
fi

for round in $(seq "$rounds"); do
  for side in base head; do
    echo "== $side, round $round: groupgemm $*"
    cli=cli_$side
    "${!cli}" "$@" | tee "$logs/$side-$round.txt"
  done
done

python3 - "$logs" "$rounds" "$base" <<'EOF'
import sys
logs, rounds, base = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = {"base": {}, "head": {}}
order = []
for side in times:
    for r in range(1, rounds + 1):
        ms_column = None
        for line in open(f"{logs}/{side}-{r}.txt"):
            fields = line.split()
            if fields[:1] == ["preset"] and "ms" in fields:  # a table's header
                ms_column = fields.index("ms")
                continue
            if ms_column is None or len(fields) <= ms_column:
                continue
            try:
                ms = float(fields[ms_column])
            except ValueError:
                continue
            key = " ".join(fields[:ms_column])
            if key not in times[side]:
                times[side][key] = []
                if side == "base":
                    order.append(key)
            times[side][key].append(ms)
print(f"\n=== {base} (base) against the working tree (head), {rounds} runs each")
print(f"{'row':<56} {'base ms':>17} {'head ms':>17} {'speed':>7}")
span = lambda v: f"{min(v):.3f}-{max(v):.3f}" if min(v) != max(v) else f"{v[0]:.3f}"
for key in order:
    b, h = times["base"][key], times["head"].get(key)
    if not h:
        print(f"{key:<56} {span(b):>17} {'(missing)':>17}")
        continue
    print(f"{key:<56} {span(b):>17} {span(h):>17} {min(b) / min(h):>6.2f}x")
EOF
