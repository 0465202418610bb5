#!/usr/bin/env bash
# Installs what a fresh machine needs to build and test groupgemm: a C++
# compiler, CMake >= 3.25, Ninja and GoogleTest from Debian's packages, and
# ccache where it can (builds work without it, only slower to repeat). The
# CUDA 13 toolkit is expected at /usr/local/cuda (or nvcc on PATH).
# Idempotent and quick when everything is already there. Sourced by the build
# scripts: leaves `compiler_launchers`, the CMake configure arguments that put
# ccache in front of the compilers (empty without ccache).
set -euo pipefail

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v g++ >/dev/null || missing+=(g++)
command -v python3 >/dev/null || missing+=(python3)
[ -f /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
apt_install() {
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt_install "${missing[@]}"
fi
if ! command -v ccache >/dev/null; then
  echo "setup: installing ccache (a compiler cache: a repeated build takes seconds)"
  apt_install ccache 2>/dev/null || echo "setup: ccache could not be installed; building without it"
fi

compiler_launchers=()
if command -v ccache >/dev/null; then
  for language in C CXX CUDA; do
    compiler_launchers+=("-DCMAKE_${language}_COMPILER_LAUNCHER=ccache")
  done
fi

if ! command -v nvcc >/dev/null; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  else
    echo "setup: the CUDA toolkit (nvcc) was not found; install CUDA 13 first" >&2
    exit 1
  fi
fi
