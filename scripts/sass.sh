#!/usr/bin/env bash
# The SASS of built kernels, on any machine with or without a GPU, so that
# two builds' code can be compared before they are timed. Where the CUDA
# toolkit lacks cuobjdump and nvdisasm (a compiler-only install), the first
# run says so and installs the pinned NVIDIA wheels of both (pip, from PyPI)
# under build/tools/sass; later runs use them.
#   scripts/sass.sh <binary|object|cubin> [kernel regex]
#     the SASS of every kernel whose mangled name matches (default: all)
#   scripts/sass.sh --count <binary|object|cubin> [kernel regex]
#     per matching kernel: its instructions, then the name
# Exits 3 when no kernel in the file matches the regex.
set -euo pipefail
count=0
if [ "${1:-}" = --count ]; then
  count=1
  shift
fi
file=${1:?usage: scripts/sass.sh [--count] <binary|object|cubin> [kernel regex]}
pattern=${2:-.}
[ -f "$file" ] || { echo "sass: $file not found" >&2; exit 2; }
file=$(realpath "$file")

tools=$(realpath "$(dirname "$0")/..")/build/tools/sass
version=13.5.37
toolkit=$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")
if [ -x "$toolkit/cuobjdump" ] && [ -x "$toolkit/nvdisasm" ]; then
  cuobjdump=$toolkit/cuobjdump
  export NVDISASM_PATH=$toolkit
else
  if [ ! -x "$tools/nvidia/cu13/bin/nvdisasm" ]; then
    echo "sass: $toolkit has no cuobjdump/nvdisasm; installing NVIDIA's" \
      "nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm $version wheels into $tools" \
      "(once)" >&2
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
      --target "$tools" \
      "nvidia-cuda-cuobjdump==$version" "nvidia-cuda-nvdisasm==$version" >&2
  fi
  cuobjdump=$tools/nvidia/cu13/bin/cuobjdump
  export NVDISASM_PATH=$tools/nvidia/cu13/bin
fi

# Kernels start at a "Function :" line; keep the matching ones.
"$cuobjdump" -sass "$file" | awk -v pattern="$pattern" -v count=$count -v file="$file" '
  /Function : / {
    name = $3; kernels++; keep = name ~ pattern
    if (keep) { matched++; n[name] = 0 }
    if (keep && !count) print
    next
  }
  keep && /^ +\/\*[0-9a-f]+\*\// { if (count) n[name]++; else print; next }
  keep && !count { print }
  END {
    if (count) for (k in n) printf "%8d %s\n", n[k], k
    if (!matched) {
      printf "sass: none of the %d kernels in %s matches /%s/\n", kernels, file, pattern > "/dev/stderr"
      exit 3
    }
  }'
