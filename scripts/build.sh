#!/usr/bin/env bash
# Configures and builds dptrain in build/ (Release, Ninja). The CUDA backend is compiled when nvcc is
# found (DPTRAIN_WITH_CUDA); extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x /usr/local/cuda/bin/nvcc && -z "$(command -v nvcc)" ]] && export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
ninja -C build
