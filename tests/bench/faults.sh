#!/usr/bin/env bash
# Fault injection, the long version of the CTest cli_faults (tests/cli/faults.py): per strategy, KILLS
# (20) ranks killed with SIGKILL and SIGNALS (5) stop signals at random moments of a 4-rank job; prints
# every fault, how long the job took to end, the work each kill lost, and whether the resumed run matched
# the uninterrupted one. Usage: tests/bench/faults.sh [DPTRAIN]   (SEED=N repeats a run;
# STRATEGIES=data,idat,cgp,pipeline chooses)
set -euo pipefail
here=$(dirname "$0")
source "$here/machine.sh"
bench_machine "${1:-build/dptrain}"
exec python3 "$here/../cli/faults.py" "${1:-build/dptrain}" --kills "${KILLS:-20}" --signals "${SIGNALS:-5}" \
  ${SEED:+--seed "$SEED"} ${STRATEGIES:+--strategies "$STRATEGIES"}
