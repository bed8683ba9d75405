#!/usr/bin/env bash
# The whole CPU test suite under AddressSanitizer + UndefinedBehaviorSanitizer: configures build-sanitize/
# (-DDPTRAIN_SANITIZE=ON, CPU only), builds it and runs every CTest test with the sanitizers' settings.
# Any report fails its test. Extra arguments go to ctest (e.g. -R 'train_|cli_resume'). Only OpenMPI's
# own leaks are left out (scripts/lsan.supp, lib/comm/mpi_communicator.cpp); ours never are.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
[[ -x /usr/local/cuda/bin/nvcc && -z "$(command -v nvcc)" ]] && export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDPTRAIN_SANITIZE=ON \
      -DDPTRAIN_WITH_CUDA=OFF >/dev/null
ninja -C build-sanitize -j "${SANITIZE_JOBS:-2}"

# Exported, so every child sees them: the tests, the dptrain binary the cli scripts run, and the ranks
# mpirun starts on this machine (mpirun and dptrain's launcher pass their environment on).
export ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1"
export LSAN_OPTIONS="suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Tests that cannot run under the sanitizers, by name, and why:
#   container_podman     builds the Dockerfile inside podman with its own plain build: nothing of
#                        build-sanitize/ runs in it.
#   cli_estimate_memory  compares dptrain estimate's resident bytes with the ranks' measured peak RSS;
#                        ASan's shadow memory, redzones and quarantine add 100-250 MB to every rank.
EXCLUDE='^(container_podman|cli_estimate_memory)$'
cd build-sanitize
# Every test's time limit is multiplied under the sanitizers (tests/CMakeLists.txt).
ctest --output-on-failure -j 2 -E "$EXCLUDE" "$@"
