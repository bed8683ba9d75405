#!/usr/bin/env bash
# Side-by-side throughput benchmark: `dptrain run` against PyTorch DDP over gloo on the same job.
# Not a test: it prints numbers and asserts nothing. It builds nothing.
#
# Usage: tests/bench/ddp_vs_dptrain.sh [DPTRAIN_BINARY]        (default: build/dptrain)
# Environment (defaults in brackets):
#   REPS [5]       interleaved repetitions of each runner: dptrain, torch, dptrain, torch, ...
#   RANKS [2]      data-parallel ranks        THREADS [1]  compute threads per rank
#   BATCH [128]    global batch               EPOCHS [1]   epochs of Fashion-MNIST (60000 samples)
#   MODEL [mlp]    mlp: configs/quickstart.toml; cnn: configs/cnn.toml (their twins in torch_models.py)
#   PYTHONS        interpreters with torch, space-separated [Debian's /usr/bin/python3 (python3-torch 1.13)
#                  and, when tests/bench/torch-venv.sh has made it, a current PyTorch from PyPI]
#   TORCH_PIN [core]  core: bind torch rank r to one CPU, as mpirun binds dptrain's ranks; none: don't
#   PROFILE [0]    1: also one torch run in --profile mode (no DDP; per-phase ms) after the table
#   KEEP [0]       1: keep the run directories (printed) instead of deleting them
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

bin=${1:-build/dptrain}
REPS=${REPS:-5} RANKS=${RANKS:-2} THREADS=${THREADS:-1} BATCH=${BATCH:-128} EPOCHS=${EPOCHS:-1}
MODEL=${MODEL:-mlp} TORCH_PIN=${TORCH_PIN:-core} PROFILE=${PROFILE:-0} KEEP=${KEEP:-0}
source "$here/machine.sh"
mapfile -t pythons < <(torch_pythons)
case $MODEL in
  mlp) config=configs/quickstart.toml describe="mlp 784-256-128-10, AdamW" ;;
  cnn) config=configs/cnn.toml describe="residual cnn 8-16-32 with per-sample norm, AdamW" ;;
  *) echo "ddp_vs_dptrain: MODEL=$MODEL: use mlp or cnn" >&2; exit 2 ;;
esac

[[ -x $bin ]] || { echo "ddp_vs_dptrain: no dptrain binary at '$bin' (build it, or pass its path)" >&2; exit 2; }
for py in "${pythons[@]}"; do
  "$py" -c 'import torch' 2>/dev/null ||
    { echo "ddp_vs_dptrain: '$py' cannot import torch (Debian's /usr/bin/python3 needs python3-torch)" >&2; exit 2; }
done
bench_machine "$bin" "$THREADS"

work=$(mktemp -d /tmp/ddp_vs_dptrain.XXXXXX)
[[ $KEEP == 1 ]] || trap 'rm -rf "$work"' EXIT

echo "job: $describe, Fashion-MNIST, $EPOCHS epoch(s), global batch $BATCH, $RANKS rank(s) x $THREADS thread(s); $REPS interleaved repetitions" >&2
for ((i = 1; i <= REPS; i++)); do
  echo "  [$i/$REPS] dptrain" >&2
  "$bin" run "$config" --out "$work/dptrain.$i" --force --json \
    --set launch.ranks="$RANKS" --set train.threads="$THREADS" --set train.global_batch="$BATCH" \
    --set train.epochs="$EPOCHS" --set train.eval_every=1000000 --set checkpoint.enabled=false \
    --set log.progress=none >"$work/dptrain.$i.json" 2>"$work/dptrain.$i.log" ||
    { cat "$work/dptrain.$i.log" >&2; exit 1; }
  for p in "${!pythons[@]}"; do
    echo "  [$i/$REPS] torch (${pythons[$p]})" >&2
    "${pythons[$p]}" "$here/torch_ddp.py" --model "$MODEL" --ranks "$RANKS" --threads "$THREADS" --batch "$BATCH" \
      --epochs "$EPOCHS" --pin "$TORCH_PIN" >"$work/torch$p.$i.json" 2>"$work/torch$p.$i.log" ||
      { cat "$work/torch$p.$i.log" >&2; exit 1; }
  done
done
if [[ $PROFILE == 1 ]]; then
  echo "  torch --profile" >&2
  "${pythons[0]}" "$here/torch_ddp.py" --model "$MODEL" --ranks "$RANKS" --threads "$THREADS" --batch "$BATCH" \
    --epochs "$EPOCHS" --pin "$TORCH_PIN" --profile >"$work/torch.profile.json" 2>"$work/torch.profile.log" ||
    { cat "$work/torch.profile.log" >&2; exit 1; }
fi
[[ $KEEP == 1 ]] && echo "runs kept in $work" >&2

/usr/bin/python3 - "$work" "$REPS" "${#pythons[@]}" <<'EOF'
import json, os, statistics, sys
work, reps, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
load = lambda p: json.load(open(p))
d = [load(f"{work}/dptrain.{i}.json") for i in range(1, reps + 1)]
ts = [[json.loads(open(f"{work}/torch{p}.{i}.json").read().strip().splitlines()[-1]) for i in range(1, reps + 1)]
      for p in range(n)]
t = ts[0]
m = d[0]["machines"][0]
print(f"dptrain machine: {m['cpu']}, {m['blas']} {m['blas_version']} {m['blas_kernels']} kernels "
      f"({m['blas_kernels_source']}), {m['threads']} thread(s), convolutions {m['convolutions']}")

def row(name, runs):
    s = [r["samples_per_sec"] for r in runs]
    acc = [r["test_accuracy"] for r in runs]
    print(f"{name:<16} {min(s):>9.0f} {statistics.median(s):>9.0f} {max(s):>9.0f}   "
          f"{min(acc):.4f}-{max(acc):.4f}  {' '.join(f'{x:.0f}' for x in s)}")
    return statistics.median(s), max(s)

print(f"{d[0]['model']}, {d[0]['steps']} steps/run, "
      f"{d[0]['ranks']} ranks x {t[0]['threads']} thread(s), global batch {t[0]['global_batch']}")
print(f"{'runner':<16} {'min':>9} {'median':>9} {'max':>9}   test acc       samples/s of each run, in order")
dm, db = row("dptrain", d)
for tp in ts:
    tm, tb = row(f"torch {tp[0]['torch'][:10]}", tp)
    print(f"  ratio dptrain/torch {tp[0]['torch']}: medians {dm / tm:.2f}x, bests {db / tb:.2f}x")

# Where dptrain's step time goes: metrics.jsonl (every log.every steps, each rank), all repetitions.
keys = ["compute_ms", "wait_ms", "comm_ms", "update_ms"]
lines = []
for i in range(1, reps + 1):
    for ln in open(f"{work}/dptrain.{i}/metrics.jsonl"):
        r = json.loads(ln)
        if r.get("kind") == "train":
            lines.append(r)
if lines:
    med = {k: statistics.median(r[k] for r in lines) for k in keys}
    print("dptrain per step (median over logged steps and ranks): " +
          ", ".join(f"{k[:-3]} {v:.3f} ms" for k, v in med.items()) + f"; total {sum(med.values()):.3f} ms")
for tp in ts:
    print(f"torch {tp[0]['torch']} per step (median over runs of the mean step): "
          f"{1e3 * statistics.median(r['train_seconds'] / r['steps'] for r in tp):.3f} ms")
p = f"{work}/torch.profile.json"
if os.path.exists(p):
    r = json.loads(open(p).read().strip().splitlines()[-1])
    ms = r["mean_ms"]
    print("torch --profile per step (mean, no DDP overlap): " +
          ", ".join(f"{k} {v:.3f} ms" for k, v in ms.items()) + f"; total {sum(ms.values()):.3f} ms")
EOF
