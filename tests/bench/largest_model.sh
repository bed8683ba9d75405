#!/usr/bin/env bash
# The largest model each way of training fits (issue 27): 4 ranks, each held to the same emulated device
# memory M ([cluster.emulate] memory_gb), a GPT of width 256 and context 128, global batch 32, growing
# depth. For each configuration: the deepest model whose run (2 steps and the evaluation) stays under
# the limit, found by doubling then bisection; every rank's allocated peak and the share of it that is
# not training state (activations, working memory, buffers); the first 20 losses of that depth under the
# limit against one process without it (relative, as tests/train/pipeline/test_mpi_pipeline.cpp); and the
# error of one layer deeper. The bound is 4 M over one layer's training state (parameters, gradients and
# AdamW's two slots: 16 bytes a parameter). The validation split is kept to a few windows so that rank
# 0's evaluation (64 windows at a time under data parallelism) does not decide the data-parallel rows.
# Memory, not time, decides every number here: the machine's load does not change them.
# Usage: tests/bench/largest_model.sh PATH/TO/dptrain [M_GB] [CONFIG...]   (default M 0.06; every config)
set -uo pipefail
DPTRAIN=$(realpath "${1:?usage: $0 PATH/TO/dptrain [M_GB] [CONFIG...]}")
M=${2:-0.06}
shift $(( $# >= 2 ? 2 : 1 ))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat >"$TMP/job.toml" <<'TOML'
[job]
name = "largest"
seed = 3
[model]
type = "gpt"
heads = 4
width = 256
context = 128
tied_head = false
[data]
dataset = "text"
context = 128
val_fraction = 0.0007
[optim]
name = "adamw"
lr = 3e-4
warmup_steps = 10
[train]
global_batch = 32
threads = 1
[log]
every = 1
progress = "plain"
trace = false
[checkpoint]
enabled = false
[launch]
ranks = 4
TOML
declare -A SETS=(
  [data-plain]="--set parallel.strategy=data --set parallel.comm.algorithm=native"
  [data-mra-sharded]="--set parallel.strategy=data --set parallel.comm.algorithm=mra --set parallel.comm.sharded_update=true"
  [data-mra-recompute-accumulate]="--set parallel.strategy=data --set parallel.comm.algorithm=mra --set train.recompute=all --set train.micro_batch=1"
  [pipeline-no-recompute]="--set parallel.strategy=pipeline --set parallel.pipeline.recompute=none"
  [pipeline-recompute]="--set parallel.strategy=pipeline --set parallel.pipeline.recompute=auto"
)
CONFIGS=("$@")
[[ ${#CONFIGS[@]} -gt 0 ]] || CONFIGS=(data-plain data-mra-sharded data-mra-recompute-accumulate pipeline-no-recompute
                                       pipeline-recompute)
LAYER=789760  # 12 C^2 + 13 C parameters of one layer at C = 256
bound=$(awk -v m="$M" -v l="$LAYER" 'BEGIN { printf "%.1f", 4 * m * 1e9 / (16 * l) }')
echo "M = $M GB per rank; one layer's training state $((16 * LAYER)) bytes; bound 4 M / layer = $bound layers"

fits() {  # config, layers: 0 when 2 steps and the evaluation train under the limit (log in $TMP/CONFIG-L.log)
  read -r -a sets <<<"${SETS[$1]}"
  "$DPTRAIN" run "$TMP/job.toml" --out "$TMP/$1-$2" --force "${sets[@]}" --set model.layers="$2" \
    --set train.steps=2 --set "cluster.emulate.memory_gb=[$M]" >"$TMP/$1-$2.log" 2>&1
}
losses() { grep '"kind":"train"' "$1/metrics.jsonl" | grep '"rank":0,' | sed 's/.*"loss":\([^,]*\),.*/\1/'; }

for config in "${CONFIGS[@]}"; do
  good=0 bad=0
  for ((l = 1; l <= 64; l *= 2)); do
    if fits "$config" "$l"; then good=$l; else bad=$l; break; fi
  done
  while ((bad - good > 1)); do
    mid=$(( (good + bad) / 2 ))
    if fits "$config" "$mid"; then good=$mid; else bad=$mid; fi
  done
  if ((good == 0)); then
    echo "$config: no depth fits; 1 layer: $(grep -m1 'error' "$TMP/$config-1.log")"
    continue
  fi
  summary="$TMP/$config-$good/summary.json"
  # Every rank's peak, and the share that is not its training state (its stage's blocks' under pipeline).
  read -r peaks share < <(python3 - "$summary" "$TMP/$config-$good.log" "$config" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1])); log = open(sys.argv[2]).read(); config = sys.argv[3]
C, V, T, L = 256, 155, 128, s["job"]["model"]["layers"]
block = [V * C + T * C] + [12 * C * C + 13 * C] * L + [2 * C + V * C]
peaks = [m["allocated_peak_bytes"] for m in s["memory"]]
ranks = len(peaks)
state = [16 * sum(block)] * ranks
if config.startswith("data-mra"):  # parameters and gradients whole, optimizer state sharded
    state = [sum(block) * (8 + 8 / ranks)] * ranks
if config.startswith("pipeline"):
    state = [0] * ranks
    for first, last, on in re.findall(r"stage \d+: blocks (\d+)-(\d+) .*? on rank ([\d+]+)", log):
        members = on.split("+")
        for r in members:
            state[int(r)] = sum(block[int(first):int(last) + 1]) * (8 + 8 / len(members))
print("/".join(f"{p / 1e6:.1f}" for p in peaks), "/".join(f"{max(0.0, 1 - st / p):.0%}" for st, p in zip(state, peaks)))
PY
)
  # 20 steps under the limit against one process without it.
  read -r -a sets <<<"${SETS[$config]}"
  "$DPTRAIN" run "$TMP/job.toml" --out "$TMP/$config-run" --force "${sets[@]}" --set model.layers="$good" \
    --set train.steps=20 --set "cluster.emulate.memory_gb=[$M]" >"$TMP/$config-run.log" 2>&1 ||
    echo "$config: the 20-step run at $good layers failed: $(grep -m1 error "$TMP/$config-run.log")"
  "$DPTRAIN" run "$TMP/job.toml" --out "$TMP/$config-solo" --force --set launch.ranks=1 --set model.layers="$good" \
    --set train.steps=20 >"$TMP/$config-solo.log" 2>&1
  worst=$(paste <(losses "$TMP/$config-run") <(losses "$TMP/$config-solo") | awk 'BEGIN { w = 0; n = 0 }
    { d = ($1 - $2) / $2; if (d < 0) d = -d; if (d > w) w = d; n++ } END { printf "%.2e over %d", w, n }')
  deeper=$(grep -m1 -E 'dptrain: .*error' "$TMP/$config-$bad.log" | sed 's/ (hint:.*//' | cut -c1-160)
  echo "$config: $good layers ($(awk -v g="$good" -v b="$bound" 'BEGIN { printf "%.0f%%", 100 * g / b }') of the" \
       "bound); peaks $peaks MB, not training state $share; losses vs one process: max relative difference $worst;" \
       "$bad layers: $deeper"
  grep -m1 "pipeline: " "$TMP/$config-$good.log" | sed "s/^/  $good layers: /"
done
