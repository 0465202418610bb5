#!/usr/bin/env bash
# Installs what a fresh machine needs to build and test groupgemm: a C++
# compiler, CMake >= 3.25, Ninja and GoogleTest from Debian's packages. The
# CUDA 13 toolkit is expected at /usr/local/cuda (or nvcc on PATH).
# Idempotent and quick when everything is already there.
set -euo pipefail

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v g++ >/dev/null || missing+=(g++)
command -v python3 >/dev/null || missing+=(python3)
[ -f /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  else
    echo "setup: the CUDA toolkit (nvcc) was not found; install CUDA 13 first" >&2
    exit 1
  fi
fi
