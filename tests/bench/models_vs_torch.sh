#!/usr/bin/env bash
# Forward+backward step time of each model-zoo model on the CPU, dptrain against PyTorch, one thread
# each, same model and batch, repetitions interleaved. Prints min/median per runner and the speedup
# (PyTorch median / dptrain median). Needs python3-torch (scripts/install-deps.sh --bench).
# Usage: tests/bench/models_vs_torch.sh [BUILD_DIR]   env: REPS (5), THREADS (1), MODELS ("mlp cnn gpt")
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
reps=${REPS:-5}
threads=${THREADS:-1}
bench="$build/tests/bench/bench_model_step"
[[ -x $bench ]] || { echo "missing $bench: build first (scripts/build.sh)" >&2; exit 2; }
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads

declare -A config=([mlp]=configs/quickstart.toml [cnn]=configs/cnn.toml [gpt]=configs/gpt.toml)
declare -A batch=([mlp]=64 [cnn]=64 [gpt]=32)   # one rank's share of each config's global batch
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

for model in ${MODELS:-mlp cnn gpt}; do
  for ((r = 0; r < reps; r++)); do
    "$bench" "${config[$model]}" --batch "${batch[$model]}" --threads "$threads" >> "$tmp/$model.dptrain"
    /usr/bin/python3 tests/bench/torch_models.py "${config[$model]}" --batch "${batch[$model]}" --threads "$threads" \
      >> "$tmp/$model.torch"
  done
done

/usr/bin/python3 - "$tmp" ${MODELS:-mlp cnn gpt} <<'PY'
import json, statistics, sys
tmp, models = sys.argv[1], sys.argv[2:]
print(f"{'model':5} {'batch':>5} {'params':>9} | {'dptrain ms min/med':>19} | {'torch ms min/med':>17} | speedup (torch/dptrain medians)")
for m in models:
    d = [json.loads(l) for l in open(f"{tmp}/{m}.dptrain")]
    t = [json.loads(l) for l in open(f"{tmp}/{m}.torch")]
    dm = statistics.median(x["ms_median"] for x in d); tm = statistics.median(x["ms_median"] for x in t)
    print(f"{m:5} {d[0]['batch']:>5} {d[0]['parameters']:>9} | {min(x['ms_min'] for x in d):8.2f} / {dm:8.2f} | "
          f"{min(x['ms_min'] for x in t):7.2f} / {tm:7.2f} | {tm / dm:.2f}x   ({t[0]['runner']}, params {t[0]['parameters']})")
PY
