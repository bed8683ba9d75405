#!/usr/bin/env bash
# Determinism of `dptrain run`:
#   1. the same job with the same seed, run twice, logs the same loss sequence (same JSON number text);
#      a different seed gives a different one (so the comparison can fail);
#   2. the same global batch on 1, 2 and 4 ranks (--set launch.ranks=N) gives loss curves equal within a
#      relative tolerance of 1e-4 at every step (the sums over ranks differ only in rounding), whatever
#      the gradient algorithm (MRA by default, plain native allreduce) and the division of the batch
#      (I-DAT with rank 1 emulated 3x slower: uneven shares that change as speeds are measured).
# Usage: bash determinism.sh PATH/TO/dptrain REPO_ROOT
set -u

DPTRAIN=$(realpath "${1:?usage: determinism.sh DPTRAIN REPO_ROOT}")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-determinism.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
failures=0

cat >job.toml <<'EOF'
[job]
name = "determinism"
seed = 11

[model]
hidden = [64, 64]

[data]
dataset = "synthetic"
train_samples = 4096

[train]
epochs = 3
global_batch = 64
threads = 1

[launch]
ranks = 2

[checkpoint]
every = 20
keep = 3

[log]
every = 1
progress = "none"
EOF

run() {  # run OUT [--set ...]
  local out=$1
  shift
  if ! "$DPTRAIN" run job.toml --out "$out" "$@" >"$out.log" 2>&1 </dev/null; then
    echo "not ok - run $out ($*) failed"
    sed 's/^/#   /' "$out.log" | tail -10
    failures=$((failures + 1))
    return 1
  fi
}

run same1
run same2
run seed2 --set job.seed=12
for n in 1 2 4; do run "ranks$n" --set "launch.ranks=$n"; done
run native2 --set parallel.comm.algorithm=native
run idat2 --set parallel.balance.mode=idat --set "cluster.emulate.slowdown=[1,3]"
run idat4 --set launch.ranks=4 --set parallel.balance.mode=idat --set "cluster.emulate.slowdown=[1,2,1,3]" \
  --set parallel.comm.algorithm=ring
((failures == 0)) || exit 1

python3 - <<'EOF'
import json, sys

failures = 0

def report(ok, what):
    global failures
    print(("ok - " if ok else "not ok - ") + what)
    failures += not ok

def train_losses(run):
    """step -> raw loss text (checked equal across the ranks' lines of one step), and eval lines."""
    losses, evals, problems = {}, {}, []
    for n, raw in enumerate(open(f"{run}/metrics.jsonl"), 1):
        obj = json.loads(raw)
        if obj["kind"] == "train":
            text = raw.split('"loss":', 1)[1].split(",", 1)[0]
            if obj["step"] in losses and losses[obj["step"]] != text:
                problems.append(f"step {obj['step']}: ranks log different losses")
            losses[obj["step"]] = text
        elif obj["kind"] == "eval":
            evals[obj["step"]] = obj["test_loss"]
    return losses, evals, problems

a, ea, pa = train_losses("same1")
b, eb, pb = train_losses("same2")
c, _, _ = train_losses("seed2")
for p in pa + pb:
    report(False, p)
n = len(a)
report(n > 100 and a == b and ea == eb,
       f"same job, same seed, twice: {n} steps, loss sequences {'identical' if a == b else 'DIFFERENT'}"
       + ("" if a == b else f" (first difference at step {min(s for s in a if a.get(s) != b.get(s))})"))
summaries = [open(f"{r}/summary.json").read().split('"test_loss": ')[1].split(",")[0] for r in ("same1", "same2")]
report(summaries[0] == summaries[1], f"same seed twice: summary test_loss {summaries[0]} vs {summaries[1]}")
differ = sum(a[s] != c.get(s) for s in a)
report(differ > n // 2, f"a different seed changes the losses ({differ} of {n} steps differ)")

TOL = 1e-4
curves = {r: train_losses(f"ranks{r}") for r in (1, 2, 4)}
curves.update({name: train_losses(name) for name in ("native2", "idat2", "idat4")})
ref, ref_eval, _ = curves[1]
shares = {}
for raw in open("idat2/metrics.jsonl"):
    obj = json.loads(raw)
    if obj["kind"] == "train":
        shares.setdefault(obj["step"], []).append(obj["local_batch"])
uneven = sum(1 for v in shares.values() if len(set(v)) > 1)
report(uneven > len(shares) // 2, f"I-DAT with rank 1 slowed 3x divides unevenly ({uneven} of {len(shares)} steps; "
       f"last shares {shares[max(shares)]})")
for r in (2, 4, "native2", "idat2", "idat4"):
    losses, evals, problems = curves[r]
    for p in problems:
        report(False, f"{r} ranks: {p}")
    if set(losses) != set(ref):
        report(False, f"{r} ranks log steps {len(losses)}, 1 rank logs {len(ref)}")
        continue
    worst, worst_step = 0.0, None
    for s in ref:
        x, y = float(ref[s]), float(losses[s])
        rel = abs(x - y) / max(abs(x), 1e-30)
        if rel > worst:
            worst, worst_step = rel, s
    eval_worst = max((abs(ref_eval[s] - evals[s]) / abs(ref_eval[s]) for s in ref_eval if s in evals), default=0.0)
    ok = worst <= TOL and eval_worst <= TOL and set(evals) == set(ref_eval)
    report(ok, f"1 vs {r} ranks, global batch 64: {len(ref)} steps, max relative loss difference {worst:.3g}"
               + (f" at step {worst_step}" if worst_step else "") + f", test loss {eval_worst:.3g} (tolerance {TOL:g})")
sys.exit(1 if failures else 0)
EOF
