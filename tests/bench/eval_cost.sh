#!/usr/bin/env bash
# What evaluation through the pipeline costs (issue 27) against evaluation of the whole model on rank 0,
# side by side: the GPT (configs/gpt.toml, untied, 4 stages "0-1,2,3,4-5") and the CNN (configs/cnn.toml,
# stages "0-2,3-6" on 2 ranks), each run twice per round in alternating order: as a pipeline (forward-only
# micro-batches stage to stage, loss and accuracy at the last stage) and as strategy data, whose rank 0
# evaluates the whole model alone (evaluate_on_rank0: what the pipeline did before, after gathering every
# stage's parameters to rank 0, a cost this comparison leaves out: the ratio is an upper bound). Times are
# the "evaluate" spans of rank 0's trace (log.trace), two evaluations per run; the table gives min and
# median over rounds of each, and of the ratio within a round.
# Usage: tests/bench/eval_cost.sh PATH/TO/dptrain [ROUNDS]   (default 3)
set -uo pipefail
DPTRAIN=$(realpath "${1:?usage: $0 PATH/TO/dptrain [ROUNDS]}")
ROUNDS=${2:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

eval_seconds() {  # config ranks strategy stages round -> the mean of rank 0's evaluate spans, seconds
  local config=$1 ranks=$2 strategy=$3 stages=$4 out="$TMP/$1-$3-$5"
  "$DPTRAIN" run "$ROOT/configs/$config.toml" --out "$out" --set launch.ranks="$ranks" --set train.steps=4 \
    --set train.eval_every=2 --set log.trace=true --set log.progress=none --set checkpoint.enabled=false \
    --set "parallel.strategy=\"$strategy\"" --set "parallel.pipeline.stages=\"$stages\"" \
    $([[ $config == gpt ]] && echo --set model.tied_head=false) >"$out.log" 2>&1 ||
    { echo "run failed: $config $strategy: $(tail -2 "$out.log")" >&2; echo nan; return; }
  python3 - "$out/trace.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
events = t["traceEvents"] if isinstance(t, dict) else t
spans = [e["dur"] / 1e6 for e in events
         if e.get("name") == "evaluate" and e["pid"] == 0 and "step" in e.get("args", {})]
print(sum(spans) / len(spans))
PY
}

printf '%-5s %5s %12s %12s %8s\n' model round pipeline_s data_s ratio >"$TMP/table"
for ((round = 1; round <= ROUNDS; round++)); do
  for spec in "gpt 4 0-1,2,3,4-5" "cnn 2 0-2,3-6"; do
    read -r config ranks stages <<<"$spec"
    if ((round % 2)); then
      p=$(eval_seconds "$config" "$ranks" pipeline "$stages" "$round")
      d=$(eval_seconds "$config" "$ranks" data "$stages" "$round")
    else
      d=$(eval_seconds "$config" "$ranks" data "$stages" "$round")
      p=$(eval_seconds "$config" "$ranks" pipeline "$stages" "$round")
    fi
    printf '%-5s %5d %12.3f %12.3f %8.3f\n' "$config" "$round" "$p" "$d" "$(python3 -c "print($p / $d)")" |
      tee -a "$TMP/table"
  done
done
python3 - "$TMP/table" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
print("\nmodel  pipeline s (min / median)  rank-0 whole model s (min / median)  ratio (min / median)")
for model in sorted({r[0] for r in rows}):
    p, d, q = ([float(r[i]) for r in rows if r[0] == model] for i in (2, 3, 4))
    print(f"{model:5s}  {min(p):8.3f} / {statistics.median(p):8.3f}       "
          f"{min(d):8.3f} / {statistics.median(d):8.3f}                   {min(q):6.3f} / {statistics.median(q):6.3f}")
PY
