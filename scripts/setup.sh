#!/usr/bin/env bash
# The README's first command: install what is needed, build, and train the quickstart job
# (configs/quickstart.toml: an MLP on Fashion-MNIST over 2 ranks) into runs/quickstart.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build/dptrain run configs/quickstart.toml --force
