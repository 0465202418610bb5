#!/usr/bin/env bash
# Builds groupgemm and runs the main job: `groupgemm bench` on the built-in
# MoE presets. Without a GPU it says so and runs the CPU reference on a small
# preset. Extra arguments go to `groupgemm bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/release/src/cli/groupgemm bench "$@"
