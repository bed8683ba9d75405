#!/usr/bin/env bash
# Fault injection (tests/cli/faults.py): per strategy (data with MRA, I-DAT, CGP, pipeline), one rank
# killed with SIGKILL and one stop signal at random moments of a 4-rank job, each run then resumed and
# compared with an uninterrupted run. The seed is printed; FAULTS_SEED=N repeats a run.
# tests/bench/faults.sh runs the long version (20 kills per strategy).
# Usage: bash faults.sh PATH/TO/dptrain REPO_ROOT
exec python3 "$(dirname "$0")/faults.py" "$1" --kills 1 --signals 1 ${FAULTS_SEED:+--seed "$FAULTS_SEED"}
