#!/usr/bin/env bash
# Strategy "cgp-pipeline" against its two reductions on the case built for it (tests/bench/hybrid.toml:
# two unequal nodes joined by a slow link, a model too large for one device): the pipeline over all four
# ranks (the planner's plan), CGP (one stage per group: a whole replica per rank) and, for completeness,
# data parallelism, these two with their memory levers ([train] micro_batch = 1, recompute = "all").
# Strategies that do not fit the devices' memory fail at their start (their error is printed). Reports the time to a validation loss of TARGET (train_seconds of the first evaluation at or
# below it; evaluation pauses excluded), min and median over REPS interleaved repetitions (data and CGP:
# one run), the ratios pipeline / hybrid and data / hybrid, and each run's final validation loss. A run
# that trained but failed after (data parallelism at its checkpoint) is timed and its error printed.
# Usage: tests/bench/hybrid.sh [DPTRAIN_BINARY]     Environment: REPS [3], TARGET [2.8], STEPS [90]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
bin=${1:-build/dptrain}
REPS=${REPS:-3} TARGET=${TARGET:-2.8} STEPS=${STEPS:-90}
[[ -x $bin ]] || { echo "hybrid: no dptrain binary at '$bin'" >&2; exit 2; }
source "$here/machine.sh"
bench_machine "$bin" 1
work=$(mktemp -d /tmp/hybrid-bench.XXXXXX)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT

for rep in $(seq 1 "$REPS"); do
  for strategy in cgp-pipeline pipeline cgp data; do
    # CGP and data do not fit, even with their memory levers: shown once.
    levers=()
    if [[ $strategy == cgp || $strategy == data ]]; then
      ((rep == 1)) || continue
      levers=(--set train.micro_batch=1 --set train.recompute=all)
    fi
    echo "rep $rep: $strategy" >&2
    if ! "$bin" run tests/bench/hybrid.toml --set parallel.strategy="$strategy" --set train.steps="$STEPS" "${levers[@]}" \
        --out "$work/$strategy-$rep" --force >"$work/$strategy-$rep.log" 2>&1; then
      echo "  $strategy: $(grep -m1 'error' "$work/$strategy-$rep.log" | cut -c1-200)"
    fi
  done
done

python3 - "$work" "$REPS" "$TARGET" <<'PY'
import json, os, statistics, sys
work, reps, target = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def run(name):
    path = os.path.join(work, name, "metrics.jsonl")
    if not os.path.exists(path):
        return None
    lines = [json.loads(l) for l in open(path)]
    evals = [e for e in lines if e.get("kind") == "eval"]
    reached = next((e["train_seconds"] for e in evals if e["test_loss"] <= target), None)
    return reached, (evals[-1]["test_loss"] if evals else None), (evals[-1]["step"] if evals else 0)
print(f"time to validation loss {target} (s, train_seconds), {reps} interleaved repetition(s)")
times = {}
for strategy in ["cgp-pipeline", "pipeline", "data", "cgp"]:
    got = [g for g in (run(f"{strategy}-{r}") for r in range(1, reps + 1)) if g]
    if not got:
        print(f"  {strategy:13s} did not run (see its error above)")
        continue
    reached = [g[0] for g in got if g[0] is not None]
    finals = ", ".join(f"{g[1]:.4f} at step {g[2]}" for g in got)
    if reached and len(reached) == len(got):
        times[strategy] = reached
        print(f"  {strategy:13s} min {min(reached):7.1f}  median {statistics.median(reached):7.1f}  ({len(got)} run(s))"
              f"   final {finals}")
    else:
        print(f"  {strategy:13s} did not reach {target} in every run ({len(reached)} of {len(got)}); final {finals}")
h = times.get("cgp-pipeline")
for other in ["pipeline", "data"]:
    if h and other in times:
        o = times[other]
        print(f"{other} / hybrid: min {min(o) / min(h):.2f}x, median {statistics.median(o) / statistics.median(h):.2f}x")
PY
