#!/usr/bin/env bash
# Builds build-device/ HERE (cmake/Device.cmake: CUDA kernels, CPU oracle, GPU tests, GPU benchmark) for
# the GPU machine, checks that every binary needs only glibc and CUDA libraries, and prints how much must
# travel (the device tool carries at most 64 MiB: the working tree plus `carry: ["build-device/bin"]`).
# Then, on the GPU machine, from the repo root: scripts/device-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DEVICE_BUILD_DIR:-build-device}
limit=$((64 * 1024 * 1024))

if ! grep -q 'cmake/Device.cmake' CMakeLists.txt; then
  echo "device-build: CMakeLists.txt does not include cmake/Device.cmake yet (see the comment at its top)" >&2
  exit 1
fi
mkdir -p "$build"
log=$build/configure.log
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cmake -S . -B "$build" -G Ninja -DDPTRAIN_DEVICE_BUILD=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$nvcc" >"$log" 2>&1 || { cat "$log"; exit 1; }
ninja -C "$build"
# Symbols are not needed there; stripping roughly halves the binaries.
strip --strip-unneeded "$build"/bin/*

# Only the C library family and CUDA's own libraries may be needed at run time.
allowed='^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libcublas|libcublasLt|libcudnn|libnccl)\.so'
status=0
for bin in "$build"/bin/*; do
  while read -r lib; do
    if ! [[ $lib =~ $allowed ]]; then
      echo "device-build: $bin needs $lib, which the GPU machine does not have" >&2
      status=1
    fi
  done < <(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done
echo "needed libraries (all binaries): $(for b in "$build"/bin/*; do readelf -d "$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; done | sort -u | tr '\n' ' ')"

bin_bytes=$(du -cb "$build"/bin/* | tail -1 | cut -f1)
tree_bytes=$(git ls-files -z -co --exclude-standard | xargs -0 du -cb 2>/dev/null | awk '$2 == "total" {s += $1} END {print s + 0}')
[[ -d shared ]] && tree_bytes=$((tree_bytes + $(du -sb shared | cut -f1)))
total=$((bin_bytes + tree_bytes))
awk -v b="$bin_bytes" -v t="$tree_bytes" -v d="$build/bin" 'BEGIN {
  printf "binaries %s: %.1f MiB; working tree: %.1f MiB; total to travel: %.1f MiB (limit 64 MiB)\n",
         d, b / 1048576, t / 1048576, (b + t) / 1048576 }'
if ((total >= limit)); then
  echo "device-build: over the 64 MiB the device tool carries" >&2
  status=1
fi
((status == 0)) && echo "device-build: OK; run on the GPU machine with carry [\"$build/bin\"]: scripts/device-check.sh"
exit $status
