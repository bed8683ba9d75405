#!/usr/bin/env bash
# What recording trace.json costs: the step time of the same job with [log] trace on (every step
# recorded: trace_first = 1, trace_steps = all) and off, side by side, REPS interleaved repetitions
# (on, off, on, off, ...), for the quickstart (MLP on Fashion-MNIST, MRA, 2 ranks) and configs/gpt.toml
# (GPT on the Jargon File, 2 ranks). A benchmark, not a test: it prints numbers and asserts nothing.
# Step times are rank 0's metrics.jsonl lines (global batch / samples_per_sec), the first 5 steps left
# out (warm-up); per job and setting: the minimum and the median over all repetitions' steps, the median
# of the repetitions' medians, and the ratio on / off of those. First, bench_trace_cost (when built): the
# nanoseconds one event costs its thread, recording, outside the window and with no tracer.
# Usage: tests/bench/trace_overhead.sh [DPTRAIN]   (REPS=5, MLP_STEPS=300, GPT_STEPS=30, JOBS="quickstart gpt")
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
DPTRAIN=$(realpath "${1:-build/dptrain}")
REPS=${REPS:-5}
MLP_STEPS=${MLP_STEPS:-300}
GPT_STEPS=${GPT_STEPS:-30}
JOBS=${JOBS:-"quickstart gpt"}
source tests/bench/machine.sh
bench_machine "$DPTRAIN" 1
# The recorder alone (ninja -C build bench_trace_cost): what one event costs the thread recording it.
COST=$(dirname "$DPTRAIN")/tests/bench/bench_trace_cost
[[ -x $COST ]] && "$COST"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-trace-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
export OMPI_MCA_rmaps_base_oversubscribe=1

run_once() {  # run_once JOB STEPS on|off REP: appends rank 0's step seconds to $TMP/JOB-SETTING.steps
  local job=$1 steps=$2 setting=$3 rep=$4 name
  name=$(basename "$job" .toml)
  local trace=(--set log.trace=false)
  [[ $setting == on ]] && trace=(--set log.trace=true --set log.trace_first=1 --set "log.trace_steps=$steps")
  "$DPTRAIN" run "$REPO/$job" --out "$TMP/$name-$setting-$rep" --set "train.steps=$steps" --set log.every=1 \
    --set checkpoint.enabled=false --set "train.eval_every=$steps" --set log.progress=none "${trace[@]}" \
    >"$TMP/$name-$setting-$rep.log" 2>&1
  /usr/bin/python3 - "$TMP/$name-$setting-$rep/metrics.jsonl" "$rep" >>"$TMP/$name-$setting.steps" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") == "train" and r["rank"] == 0 and r["step"] > 5:
        print(sys.argv[2], r["step"], 1.0 / r["samples_per_sec"])
EOF
}

for rep in $(seq 1 "$REPS"); do
  for setting in on off; do
    [[ " $JOBS " == *" quickstart "* ]] && run_once configs/quickstart.toml "$MLP_STEPS" "$setting" "$rep"
    [[ " $JOBS " == *" gpt "* ]] && run_once configs/gpt.toml "$GPT_STEPS" "$setting" "$rep"
  done
  echo "# repetition $rep of $REPS done" >&2
done
for job in $JOBS; do  # "on" wrote its traces, "off" none
  [[ -f $TMP/$job-on-1/trace.json && ! -e $TMP/$job-off-1/trace.json ]]
done

/usr/bin/python3 - "$TMP" $JOBS <<'EOF'
import glob, json, os, statistics, sys
tmp = sys.argv[1]
print(f"{'job':<11} {'trace':<5} {'steps':>6} {'min ms':>9} {'median ms':>10} {'median of reps':>15}  events/step/rank")
for job in sys.argv[2:]:
    rows = {}
    for setting in ("on", "off"):
        per_rep = {}
        for line in open(f"{tmp}/{job}-{setting}.steps"):
            rep, step, inv = line.split()
            per_rep.setdefault(rep, []).append(float(inv))
        batch = json.load(open(glob.glob(f"{tmp}/{job}-{setting}-1/summary.json")[0]))["job"]["train"]["global_batch"]
        ms = {rep: [v * batch * 1e3 for v in vals] for rep, vals in per_rep.items()}
        everything = [v for vals in ms.values() for v in vals]
        rep_medians = [statistics.median(vals) for vals in ms.values()]
        events = ""
        if setting == "on":
            t = json.load(open(f"{tmp}/{job}-on-1/trace.json"))
            x = sum(1 for e in t["traceEvents"] if e["ph"] == "X")
            steps = sum(1 for e in t["traceEvents"] if e["ph"] == "X" and e["name"] == "step")
            events = f"{x / steps:.1f}" if steps else "?"
        rows[setting] = (min(everything), statistics.median(everything), statistics.median(rep_medians))
        print(f"# {job} {setting}: the repetitions' medians (ms) " + " ".join(f"{m:.3f}" for m in rep_medians))
        print(f"{job:<11} {setting:<5} {len(everything):>6} {rows[setting][0]:>9.3f} {rows[setting][1]:>10.3f} "
              f"{rows[setting][2]:>15.3f}  {events}")
    on, off = rows["on"], rows["off"]
    print(f"{job:<11} on/off: min {on[0] / off[0]:.4f}, median {on[1] / off[1]:.4f}, median of reps {on[2] / off[2]:.4f}")
EOF
