#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs each for SECONDS (default 600),
# one at a time under nice -n 19, on a working copy of its seed corpus plus its regressions. Prints per
# target: seconds, executions and exec/s (libFuzzer's -print_final_stats), new corpus units and findings
# (crash-/leak-/timeout-/oom- files, kept under build-fuzz/fuzz-work/TARGET/). Exit status 1 if any found.
#   tests/fuzz/run.sh [SECONDS] [TARGET...]      e.g. tests/fuzz/run.sh 60 idx checkpoint
# Environment: DPTRAIN_FUZZ_BUILD (build folder), DPTRAIN_FUZZ_JOBS (build jobs, default 2).
set -euo pipefail

seconds=${1:-600}
shift || true
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${DPTRAIN_FUZZ_BUILD:-$root/build-fuzz}
all=(job set cluster block_profile pipedream checkpoint idx text)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

# Longest input per target: a few times the largest seed, enough for any structure the reader knows.
declare -A max_len=([job]=8192 [set]=2048 [cluster]=8192 [block_profile]=16384 [pipedream]=16384
                    [checkpoint]=16384 [idx]=16384 [text]=16384)

flags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDPTRAIN_WITH_CUDA=OFF \
  -DDPTRAIN_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
nice -n 10 ninja -C "$build" -j "${DPTRAIN_FUZZ_JOBS:-2}" "${targets[@]/#/fuzz_}"

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0
printf '%-14s %8s %12s %9s %6s %8s\n' target seconds executions exec/s new findings
found=0
for t in "${targets[@]}"; do
  work=$build/fuzz-work/$t
  mkdir -p "$work/corpus" "$work/artifacts" "$work/tmp"
  inputs=("$work/corpus" "$root/tests/fuzz/corpus/$t")
  [ -d "$root/tests/fuzz/regressions/$t" ] && inputs+=("$root/tests/fuzz/regressions/$t")
  # PipeDream's published profiles, read where the project's shared folder has them (never copied here).
  [ "$t" = pipedream ] && [ -d "$root/../shared/profiles/pipedream" ] && inputs+=("$root/../shared/profiles/pipedream")
  start=$(date +%s)
  # The targets' temporary input files go to $work/tmp (left there when a run ends at a finding).
  TMPDIR=$work/tmp nice -n 19 "$build/tests/fuzz/fuzz_$t" "${inputs[@]}" -max_total_time="$seconds" -timeout=25 \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len="${max_len[$t]}" -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" > "$work/log.txt" 2>&1 || true
  took=$(( $(date +%s) - start ))
  stat() { sed -n "s/^stat::$1: *//p" "$work/log.txt" | tail -1; }
  findings=$(find "$work/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' \) | wc -l)
  [ "$findings" -eq 0 ] || found=1
  printf '%-14s %8s %12s %9s %6s %8s\n' "$t" "$took" "$(stat number_of_executed_units)" \
    "$(stat average_exec_per_sec)" "$(stat new_units_added)" "$findings"
done
exit $found
