#!/usr/bin/env bash
# dptrain estimate's step time against runs, side by side (issue 15's target 1, the time half; the memory
# half is tests/cli/estimate_memory.sh). For each job: its blocks profiled once (`dptrain profile --layers`,
# at a rank's share of the global batch), then, interleaved REPS times, `dptrain estimate --profile` and a
# run; the run's step time is the median over its logged steps after the first (data, I-DAT: rank 0's
# train lines; pipeline: its pipeline line's measured mini-batch; CGP: the global batch over the run's
# samples/s). Prints predicted / measured - 1, min and median over the repetitions.
# Usage: tests/bench/estimate.sh [DPTRAIN_BINARY]     Environment: REPS [3], JOBS [all]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
bin=${1:-build/dptrain}
REPS=${REPS:-3}
[[ -x $bin ]] || { echo "estimate: no dptrain binary at '$bin'" >&2; exit 2; }
source "$here/machine.sh"
bench_machine "$bin" 1
work=$(mktemp -d /tmp/estimate-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

common=(--set train.threads=1 --set train.eval_every=100000 --set log.every=5 --set log.progress=none
        --set checkpoint.enabled=false)
declare -A config sets
add() { local name=$1; config[$name]=$2; shift 2; sets[$name]="$*"; }
add mlp-mra      quickstart train.steps=400
add mlp-native   quickstart train.steps=400 parallel.comm.algorithm=native
add cnn-mra      cnn train.steps=60
add gpt-mra      gpt train.steps=40
add gpt-native   gpt train.steps=40 parallel.comm.algorithm=native
add gpt-idat     gpt train.steps=40 parallel.balance.mode=idat 'cluster.emulate.slowdown=[1,2]'
add gpt-cgp      gpt train.steps=40 parallel.strategy=cgp 'parallel.cgp.groups=[0,1]'
add gpt-pipeline gpt train.steps=30 model.tied_head=false parallel.strategy=pipeline \
    'parallel.pipeline.stages="0-2,3-5"' parallel.pipeline.micro_batches=8
add cnn-pipeline cnn train.steps=30 parallel.strategy=pipeline 'parallel.pipeline.stages="0-2,3-6"' \
    parallel.pipeline.micro_batches=8
names=${JOBS:-"mlp-mra mlp-native cnn-mra gpt-mra gpt-native gpt-idat gpt-cgp gpt-pipeline cnn-pipeline"}

args() {  # the --set list of a job
  local out=("${common[@]}") s
  eval "local extra=(${sets[$1]})"
  for s in "${extra[@]}"; do out+=(--set "$s"); done
  printf '%s\n' "${out[@]}"
}
for n in $names; do
  mapfile -t a < <(args "$n")
  echo "  profile $n" >&2
  "$bin" profile --layers "configs/${config[$n]}.toml" "${a[@]}" --out "$work/$n.profile.toml" >/dev/null 2>&1
done
for ((i = 1; i <= REPS; i++)); do
  for n in $names; do
    mapfile -t a < <(args "$n")
    echo "  $n $i" >&2
    "$bin" estimate "configs/${config[$n]}.toml" "${a[@]}" --profile "$work/$n.profile.toml" --json >"$work/$n.$i.json"
    "$bin" run "configs/${config[$n]}.toml" "${a[@]}" --out "$work/$n.$i" --force >/dev/null 2>"$work/$n.$i.log" ||
      { cat "$work/$n.$i.log" >&2; exit 1; }
  done
done

python3 - "$work" "$REPS" $names <<'PY'
import json, statistics, sys
work, reps, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def measured_s(run):
    lines = [json.loads(l) for l in open(f"{work}/{run}/metrics.jsonl")]
    pipe = [l for l in lines if l["kind"] == "pipeline"]
    if pipe: return pipe[-1]["measured"]["minibatch_ms"] / 1e3
    start = next(l for l in lines if l["kind"] == "start")
    summary = json.load(open(f"{work}/{run}/summary.json"))
    if start["strategy"] == "cgp": return start["global_batch"] / summary["samples_per_sec"]
    steps = [start["global_batch"] / l["samples_per_sec"] for l in lines if l["kind"] == "train" and l["rank"] == 0]
    return statistics.median(steps[1:])
print(f"{'job':14} {'predicted ms':>14} {'measured ms (min / median)':>28} {'error (min / median)':>22}")
worst = 0
for n in names:
    pred = [json.load(open(f"{work}/{n}.{i}.json"))["step_s"] for i in range(1, reps + 1)]
    meas = [measured_s(f"{n}.{i}") for i in range(1, reps + 1)]
    err = [p / m - 1 for p, m in zip(pred, meas)]
    worst = max(worst, abs(statistics.median(err)))
    print(f"{n:14} {1e3*statistics.median(pred):14.2f} {1e3*min(meas):13.2f} / {1e3*statistics.median(meas):10.2f}"
          f"   {100*min(err, key=abs):+7.1f}% / {100*statistics.median(err):+7.1f}%")
print(f"worst median error {100*worst:.1f}% (target: 20%)")
PY
