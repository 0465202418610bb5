#!/usr/bin/env bash
# Configures and builds groupgemm in Release into build/<name> (default
# build/release). Extra arguments go to the CMake configure step. The JAX FFI
# handlers (libgroupgemm_jax.so) are built when $PYTHON (default python3)
# can import jax, whose jaxlib ships the XLA FFI headers; the configure step
# says why when they are skipped. GG_BUILD_TARGETS (space-separated) builds
# only those targets (default: all). ccache, where installed, caches the
# compiled objects. After the build, scripts/check_ptxas.py reads ptxas's
# report of every kernel (spills, serialized wgmmas).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
name=${GG_BUILD_DIR:-build/release}
python=$(command -v "${PYTHON:-python3}" || true)
configure_log=$(cmake -S . -B "$name" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  ${python:+-DPython3_EXECUTABLE="$python"} "${compiler_launchers[@]}" "$@") || { echo "$configure_log"; exit 1; }
grep 'groupgemm:' <<<"$configure_log" || true
read -r -a targets <<< "${GG_BUILD_TARGETS:-all}"
cmake --build "$name" -j"$(nproc)" --target "${targets[@]}" -- -k 0  # report every error, not the first
# No kernel spills or serializes its wgmmas but those the check's allow-list explains.
python3 scripts/check_ptxas.py "$name"
