#!/usr/bin/env bash
# The README's second command (and CI's): install what building and the tests need when missing, build
# with the tests, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/build.sh -DDPTRAIN_BUILD_TESTS=ON
cd build
ctest --output-on-failure -j 2
