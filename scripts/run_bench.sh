#!/usr/bin/env bash
# Builds the groupgemm library and CLI (not the test suites) and runs the
# main job: `groupgemm bench` on the built-in MoE presets. Without a GPU it
# says so and runs the CPU reference on a small preset. Extra arguments go to
# `groupgemm bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
GG_BUILD_TARGETS="groupgemm groupgemm_cli" bash scripts/build.sh
./build/release/src/cli/groupgemm bench "$@"
