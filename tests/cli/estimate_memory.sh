#!/usr/bin/env bash
# `dptrain estimate` against what `dptrain run` measures: short runs of the MLP, CNN and GPT under every
# strategy that applies (data with MRA and plain, I-DAT shares, CGP, pipeline; data and CGP with [train]
# micro_batch and recompute too), every rank's estimated buffers (memory total) within 10% of its
# allocated_peak_bytes in summary.json, and its resident size within 15% of resident_peak_bytes. Prints the
# table. Pipelines are given their micro-batch count (the planner's choice needs times, which --no-timing
# leaves out). Usage: bash estimate_memory.sh PATH/TO/dptrain REPO_ROOT
set -u
DPTRAIN=$(realpath "$1")
ROOT=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
failures=0
printf '%-34s %4s %12s %12s %7s %12s %12s %7s\n' job rank "est alloc" "run alloc" err "est resid" "run resid" err
check() {  # name config overrides...
  local name=$1 config=$2
  shift 2
  # One compute thread per rank: per-thread BLAS buffers and oneDNN scratch are not in the estimate, and
  # the default (cores / ranks) differs from machine to machine.
  local sets=(--set train.steps=6 --set train.threads=1 --set log.progress=none --set checkpoint.enabled=false --set train.eval_every=3
              --set log.every=1)
  for s in "$@"; do sets+=(--set "$s"); done
  "$DPTRAIN" estimate "$ROOT/configs/$config.toml" "${sets[@]}" --no-timing --json >"$TMP/$name.json" 2>"$TMP/$name.err" ||
    { echo "not ok - $name: estimate failed: $(tail -1 "$TMP/$name.err")"; failures=$((failures + 1)); return; }
  "$DPTRAIN" run "$ROOT/configs/$config.toml" "${sets[@]}" --out "$TMP/$name" >/dev/null 2>"$TMP/$name.run.err" ||
    { echo "not ok - $name: run failed: $(tail -1 "$TMP/$name.run.err")"; failures=$((failures + 1)); return; }
  $PY - "$name" "$TMP/$name.json" "$TMP/$name/summary.json" "$TMP/$name/metrics.jsonl" <<'PY' || failures=$((failures + 1))
import json, sys
name, est, run = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
# I-DAT divides by measured speeds: on a loaded machine a rank may take more than the estimate allows
# from the declared slowdowns (its balanced share, or the equal share of the first steps), and hold more.
# Such a rank is shown, not compared.
equal = -(-run["job"]["train"]["global_batch"] // len(est["ranks"]))
most = {}
for line in open(sys.argv[4]):
    m = json.loads(line)
    if m.get("kind") == "train" and "local_batch" in m:
        most[m["rank"]] = max(most.get(m["rank"], 0), m["local_batch"])
bad = 0
for r, m in zip(est["ranks"], sorted(run["memory"], key=lambda m: m["rank"])):
    if "idat" in name and most.get(r["rank"], 0) > max(r["samples"], equal):
        print(f"{name:34s} {r['rank']:4d} took {most[r['rank']]} samples, estimated {r['samples']}: the load moved "
              "I-DAT's shares; not compared")
        continue
    a, ra = r["memory"]["total"], m["allocated_peak_bytes"]
    s, rs = r["resident_bytes"], m["resident_peak_bytes"]
    ea, es = a / ra - 1, s / rs - 1
    # Buffers within 10%; resident within 15% (oneDNN's convolution scratchpads are not metered: the
    # CNN's rank 0 is 11.5% under here).
    ok = abs(ea) <= 0.10 and abs(es) <= 0.15
    bad += not ok
    print(f"{name:34s} {r['rank']:4d} {a/1e6:10.2f}MB {ra/1e6:10.2f}MB {ea:+7.1%} {s/1e6:10.1f}MB {rs/1e6:10.1f}MB {es:+7.1%}"
          + ("" if ok else "   <- over the bound"))
sys.exit(1 if bad else 0)
PY
}
check mlp-data-mra quickstart
check mlp-data-native quickstart parallel.comm.algorithm=native launch.ranks=4
check mlp-idat quickstart parallel.balance.mode=idat 'cluster.emulate.slowdown=[1,3]'
check mlp-cgp quickstart parallel.strategy=cgp launch.ranks=4 'parallel.cgp.groups=[0,0,1,1]'
check mlp-pipeline quickstart parallel.strategy=pipeline 'parallel.pipeline.stages="0-1,2"' \
  parallel.pipeline.micro_batches=8
check cnn-data-mra cnn 'model.channels=[4,8,16]'
check cnn-data-levers cnn 'model.channels=[4,8,16]' train.micro_batch=8 train.recompute=all
check cnn-cgp cnn 'model.channels=[4,8,16]' parallel.strategy=cgp 'parallel.cgp.groups=[0,1]'
check cnn-cgp-levers cnn 'model.channels=[4,8,16]' parallel.strategy=cgp 'parallel.cgp.groups=[0,1]' \
  train.micro_batch=8 train.recompute=all
check cnn-pipeline cnn 'model.channels=[4,8,16]' parallel.strategy=pipeline 'parallel.pipeline.stages="0-2,3-6"' \
  parallel.pipeline.micro_batches=8
check gpt-data-mra gpt model.layers=2 launch.ranks=4
check gpt-idat gpt model.layers=2 parallel.balance.mode=idat 'cluster.emulate.slowdown=[1,2]'
check gpt-pipeline gpt model.layers=2 model.tied_head=false parallel.strategy=pipeline \
  'parallel.pipeline.stages="0-1,2-3"' parallel.pipeline.micro_batches=8
# MRA's sharded update keeps only the rank's shard of the optimizer state: with checkpoints (each rank writes
# its piece, brought together from the shards), every rank's measured peak drops by exactly what the
# estimate says against keeping all of it (AdamW: 2 slots x (1 - 1/4) of the parameters).
check gpt-data-sharded gpt model.layers=2 launch.ranks=4 checkpoint.enabled=true checkpoint.every=3
check gpt-data-unsharded gpt model.layers=2 launch.ranks=4 checkpoint.enabled=true checkpoint.every=3 \
  parallel.comm.sharded_update=false
check gpt-pipeline-replicas gpt model.layers=2 model.tied_head=false parallel.strategy=pipeline launch.ranks=3 \
  'parallel.pipeline.stages="0-1x2,2-3"' parallel.pipeline.micro_batches=8 checkpoint.enabled=true checkpoint.every=3
$PY - "$TMP" <<'PY' || failures=$((failures + 1))
import json, sys
def peaks(name):
    est = json.load(open(f"{sys.argv[1]}/{name}.json"))
    run = json.load(open(f"{sys.argv[1]}/{name}/summary.json"))
    measured = [m["allocated_peak_bytes"] for m in sorted(run["memory"], key=lambda m: m["rank"])]
    return [r["memory"]["total"] for r in est["ranks"]], measured, est["ranks"][0]["memory"]["optimizer"]
(es, rs, opt_s), (eu, ru, opt_u) = peaks("gpt-data-sharded"), peaks("gpt-data-unsharded")
ok = True
for r in range(4):
    saved, predicted = ru[r] - rs[r], eu[r] - es[r]
    ok = ok and predicted > 0 and abs(saved / predicted - 1) <= 0.01
    print(f"rank {r}: sharded {rs[r]/1e6:.3f} MB, unsharded {ru[r]/1e6:.3f} MB: {saved/1e6:.3f} MB less, "
          f"predicted {predicted/1e6:.3f}")
print(("ok" if ok else "not ok") + f" - MRA's sharded update keeps its shard of the optimizer state: {opt_s/1e6:.3f} MB "
      f"per rank, not {opt_u/1e6:.3f}")
sys.exit(0 if ok else 1)
PY
echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures job(s) off)"
((failures == 0))
