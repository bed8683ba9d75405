#!/usr/bin/env bash
# The README's first command: install what building and running need (not the test suite's packages),
# build dptrain (without the tests), and train the quickstart job (configs/quickstart.toml: an MLP on
# Fashion-MNIST over 2 ranks) into runs/quickstart.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DDPTRAIN_BUILD_TESTS=OFF
build/dptrain run configs/quickstart.toml --force
