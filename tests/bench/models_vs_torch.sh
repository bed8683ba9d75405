#!/usr/bin/env bash
# Forward+backward step time of each model-zoo model on the CPU, dptrain against PyTorch, one thread
# each, same model and batch, repetitions interleaved. Prints what each side ran on (CPU, instruction
# sets, BLAS kernels, oneDNN, threads), min/median per runner and the speedup (PyTorch median / dptrain
# median) against each PyTorch given.
# Usage: tests/bench/models_vs_torch.sh [BUILD_DIR]
# env: REPS (5), THREADS (1), MODELS ("mlp cnn gpt"), PYTHONS (interpreters with torch, space-separated;
#      default Debian's /usr/bin/python3 (python3-torch, scripts/install-deps.sh --bench) and, when
#      tests/bench/torch-venv.sh has made it, the current PyTorch from PyPI in its virtual environment)
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/machine.sh
build=${1:-build}
reps=${REPS:-5}
threads=${THREADS:-1}
bench="$build/tests/bench/bench_model_step"
[[ -x $bench ]] || { echo "missing $bench: build first (scripts/build.sh)" >&2; exit 2; }
mapfile -t pythons < <(torch_pythons)
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
bench_machine "$build/dptrain" "$threads"

declare -A config=([mlp]=configs/quickstart.toml [cnn]=configs/cnn.toml [gpt]=configs/gpt.toml)
declare -A batch=([mlp]=64 [cnn]=64 [gpt]=32)   # one rank's share of each config's global batch
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

for model in ${MODELS:-mlp cnn gpt}; do
  for ((r = 0; r < reps; r++)); do
    "$bench" "${config[$model]}" --batch "${batch[$model]}" --threads "$threads" >> "$tmp/$model.dptrain"
    for i in "${!pythons[@]}"; do
      "${pythons[$i]}" tests/bench/torch_models.py "${config[$model]}" --batch "${batch[$model]}" --threads "$threads" \
        >> "$tmp/$model.torch$i"
    done
  done
done

/usr/bin/python3 - "$tmp" "${#pythons[@]}" ${MODELS:-mlp cnn gpt} <<'PY'
import json, statistics, sys
tmp, n, models = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
load = lambda f: [json.loads(l) for l in open(f)]
first = load(f"{tmp}/{models[0]}.dptrain")[0]
print(f"# dptrain: {first['machine']}")
for i in range(n):
    print(f"# {load(f'{tmp}/{models[0]}.torch{i}')[0]['machine']}")
head = f"{'model':5} {'batch':>5} {'params':>9} | {'dptrain ms min/med':>19}"
for i in range(n):
    head += f" | {load(f'{tmp}/{models[0]}.torch{i}')[0]['runner'][:18]:>18} min/med | speedup"
print(head)
for m in models:
    d = load(f"{tmp}/{m}.dptrain")
    dm = statistics.median(x["ms_median"] for x in d)
    row = f"{m:5} {d[0]['batch']:>5} {d[0]['parameters']:>9} | {min(x['ms_min'] for x in d):8.2f} / {dm:8.2f}"
    for i in range(n):
        t = load(f"{tmp}/{m}.torch{i}")
        assert t[0]["parameters"] == d[0]["parameters"], (m, t[0]["parameters"], d[0]["parameters"])
        tm = statistics.median(x["ms_median"] for x in t)
        row += f" | {min(x['ms_min'] for x in t):9.2f} / {tm:9.2f}    | {tm / dm:6.2f}x"
    print(row)
PY
