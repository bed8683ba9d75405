#!/usr/bin/env bash
# Run ON THE GPU MACHINE from the repo root, after scripts/device-build.sh here and with build-device/bin
# carried (device tool: carry ["build-device/bin"], command "scripts/device-check.sh"). Prints the GPU and
# the CUDA libraries found, runs every GPU test binary, then the GPU benchmarks; everything goes to stdout
# and to $OUT/gpu-results.txt. Takes a minute or two; at most about 9 minutes (time limits per step and overall).
set -uo pipefail
bin=${1:-build-device/bin}
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
results=$out/gpu-results.txt
: >"$results"
exec > >(tee -a "$results") 2>&1

echo "== $(date -u +%FT%TZ) $(uname -srm)"
echo "== nvidia-smi"
nvidia-smi || echo "nvidia-smi failed"
echo "== CUDA libraries in the loader cache"
ldconfig -p | grep -E 'cublas|cudnn|nccl' || echo "(none)"

# cuDNN, NCCL (and sometimes cuBLAS) may live only in Python wheels there: find what the loader misses.
if ! ls "$bin"/gpu_* >/dev/null 2>&1; then
  echo "no GPU binaries in $bin: run scripts/device-build.sh here and carry $bin" >&2
  exit 2
fi
probe=$bin/gpu_conv  # needs the most: cuBLAS and cuDNN
missing=$(for b in "$bin"/gpu_*; do ldd "$b"; done | awk '/not found/ {print $1}' | sort -u)
for lib in $missing; do
  # Python wheels (nvidia-cudnn, nvidia-nccl) may sit in site-packages outside these roots too.
  roots=(/usr/local /usr/lib /opt $(python3 -c 'import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null))
  dir=$(find "${roots[@]}" -name "$lib" -not -path '*/stubs/*' 2>/dev/null | head -1 | xargs -r dirname)
  if [[ -n $dir ]]; then
    echo "== $lib found in $dir (added to LD_LIBRARY_PATH)"
    export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  else
    echo "== $lib: not found anywhere"
  fi
done
echo "== ldd $probe"
ldd "$probe"

echo "== GPU tests"
pass=0 fail=0 skip=0 failed=()
for t in "$bin"/gpu_*; do
  name=$(basename "$t")
  [[ $name == gpu_bench_* ]] && continue
  if ((SECONDS > 360)); then  # keep the whole script well inside the device tool's 10 minutes
    fail=$((fail + 1)); failed+=("$name"); echo "-- $name: NOT RUN (out of time)"; continue
  fi
  start=$(date +%s.%N)
  timeout 60 "$t" --color_output=no --report_level=short
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  case $rc in
    0) pass=$((pass + 1)); echo "-- $name: PASS (${secs}s)" ;;
    77) skip=$((skip + 1)); echo "-- $name: SKIPPED (${secs}s)" ;;
    *) fail=$((fail + 1)); failed+=("$name"); echo "-- $name: FAIL rc=$rc (${secs}s)" ;;
  esac
done
echo "== GPU tests: $pass passed, $fail failed, $skip skipped${failed:+ (failed: ${failed[*]})}"

echo "== GPU benchmark: kernels"
timeout 150 "$bin/gpu_bench_ops"
echo "== benchmark exit status $?"
echo "== GPU benchmark: training steps (GPT-2 small tokens/s and MFU, CNN samples/s)"
timeout 150 "$bin/gpu_bench_models"
echo "== benchmark exit status $?"
echo "== results in $results"
((fail == 0))
