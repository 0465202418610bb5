#!/usr/bin/env bash
# Configures and builds groupgemm in Release into build/<name> (default
# build/release). Extra arguments go to the CMake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
name=${GG_BUILD_DIR:-build/release}
cmake -S . -B "$name" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$name" -j"$(nproc)" -- -k 0  # report every error, not the first
