#!/usr/bin/env bash
# On a GPU machine: a kernel launch's executed instructions by SASS block.
# Nsight Compute profiles the launches of the kernels whose names match
# <regex> in one groupgemm command, with its source counters (executed
# instructions and warp-state samples per SASS instruction); the report's
# SASS source page goes to CSV, and tools/sass_blocks.py prints the blocks
# that execute the most.
#   tools/instruction_profile.sh <groupgemm binary> <regex> <subcommand and arguments...>
#   e.g. tools/instruction_profile.sh build/release/src/cli/groupgemm quantize_kernel \
#          bench-quantize --preset deepseek-v3 --tokens 65536 --iters 1 --warm-ms 0 --formats nvfp4_group
# PROFILE_LAUNCHES (default 2) launches are profiled; NCU_ARGS go to the
# profile (e.g. "--clock-control none": the GPU's own clock instead of the
# base clock Nsight Compute locks by default); SASS_BLOCKS_ARGS go to
# sass_blocks.py (e.g. "--kernel Pass.1 --top 30": the quantize launch). The report and the
# CSV stay in $OUT (or build/profile), for a second export to compare with
# (sass_blocks.py --against).
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:?usage: tools/instruction_profile.sh <groupgemm binary> <regex> <subcommand...>}
regex=${2:?usage: tools/instruction_profile.sh <groupgemm binary> <regex> <subcommand...>}
shift 2
[ $# -gt 0 ] || { echo "instruction_profile: no groupgemm command given" >&2; exit 2; }
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[ -x "$ncu" ] || { echo "instruction_profile: Nsight Compute (ncu) not found" >&2; exit 2; }
out=${OUT:-$PWD/build/profile}
mkdir -p "$out"
report="$out/profile"
read -r -a ncu_args <<< "${NCU_ARGS:-}"
"$ncu" --section SourceCounters --metrics gpu__time_duration.sum,smsp__inst_executed.sum \
  -k "regex:$regex" --launch-count "${PROFILE_LAUNCHES:-2}" "${ncu_args[@]}" -o "$report" -f \
  "$binary" "$@"
"$ncu" -i "$report.ncu-rep" --page source --csv --print-source sass > "$report.csv"
read -r -a extra <<< "${SASS_BLOCKS_ARGS:-}"
python3 tools/sass_blocks.py "$report.csv" "${extra[@]}"
