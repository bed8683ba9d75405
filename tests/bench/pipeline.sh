#!/usr/bin/env bash
# Pipeline runs against their plans, side by side (issue 14's targets 3-5). Every run's metrics.jsonl ends
# with a pipeline line: the plan's predicted mini-batch time and per-rank peak memory beside the measured
# median mini-batch time and each stage's metered peak (what its buffers held at once).
#   predict:    2 ranks on this machine: the quickstart MLP in the planner's plan, the CNN and the GPT cut
#               in two, the GPT as one replicated stage; predicted against measured time and memory;
#   hetero:     the GPT (untied head) on 4 emulated ranks: 2 nodes of 2, speeds [1, 1, 0.5, 0.5] (and all
#               4x slower than a core, so the 4 ranks do not crowd 2 cores), links 10 Gbit/s inside a
#               node and 0.5 Gbit/s between; five plans: the planner's, data parallelism, the naive one
#               (equal block counts, ranks in order), stages replicated across the slow link, and the
#               planner's stages on the other node; measured ranking against predicted, and the
#               planner's plan against the naive one;
#   recompute:  the GPT cut in two ("0-2,3-5", 4 micro-batches of 8) with 40 MB per rank in [cluster]
#               memory_gb: no recomputation (over the limit), the balanced choice per stage (auto), and
#               every block; memory saved and time paid per stage, and the planner's own plan under the
#               same limit.
# Times: the pipeline line's medians over the run's full mini-batches. Repetitions are interleaved; min /
# median over them.
# Usage: tests/bench/pipeline.sh [DPTRAIN_BINARY]     Environment: REPS [2], PARTS ["predict hetero recompute"]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
bin=${1:-build/dptrain}
REPS=${REPS:-2} PARTS=${PARTS:-"predict hetero recompute"}
[[ -x $bin ]] || { echo "pipeline: no dptrain binary at '$bin'" >&2; exit 2; }
source "$here/machine.sh"
bench_machine "$bin" 1
work=$(mktemp -d /tmp/pipeline-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

run() {  # NAME JOB SET...
  local name=$1 job=$2
  shift 2
  echo "  $name" >&2
  "$bin" run "$job" --out "$work/$name" --force --set parallel.strategy=pipeline --set train.threads=1 \
    --set train.eval_every=100000 --set log.every=10 --set log.progress=plain --set checkpoint.enabled=false \
    "$@" >"$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; exit 1; }
}
gpt=(--set model.tied_head=false --set train.steps=30)
het=("${gpt[@]}" --set launch.ranks=4 --set "cluster.speeds=[1, 1, 0.5, 0.5]" --set cluster.ranks_per_node=2
     --set cluster.links.node_gbps=10 --set cluster.links.rack_gbps=0.5 --set cluster.emulate.as_described=true
     --set "cluster.emulate.slowdown=[4, 4, 4, 4]")
rec=("${gpt[@]}" --set parallel.pipeline.micro_batches=4 --set "cluster.memory_gb=[0.04, 0.04]")
for ((i = 1; i <= REPS; i++)); do
  if [[ $PARTS == *predict* ]]; then
    run "predict.mlp-planner.$i" configs/quickstart.toml --set train.steps=300
    run "predict.cnn-2-stages.$i" configs/cnn.toml --set train.steps=30 --set 'parallel.pipeline.stages="0-2,3-6"' \
      --set parallel.pipeline.micro_batches=8
    run "predict.gpt-2-stages.$i" configs/gpt.toml "${gpt[@]}" --set 'parallel.pipeline.stages="0-2,3-5"' \
      --set parallel.pipeline.micro_batches=8
    run "predict.gpt-replicated.$i" configs/gpt.toml "${gpt[@]}" --set 'parallel.pipeline.stages="0-5x2"' \
      --set parallel.pipeline.micro_batches=4
  fi
  if [[ $PARTS == *hetero* ]]; then
    run "hetero.a-planner.$i" configs/gpt.toml "${het[@]}"
    run "hetero.b-data-parallel.$i" configs/gpt.toml "${het[@]}" --set 'parallel.pipeline.stages="0-5x4"'
    run "hetero.c-naive.$i" configs/gpt.toml "${het[@]}" --set 'parallel.pipeline.stages="0-1@0,2-3@1,4@2,5@3"'
    run "hetero.d-across-the-link.$i" configs/gpt.toml "${het[@]}" --set 'parallel.pipeline.stages="0-3@0+2,4-5@1+3"'
    run "hetero.e-other-node.$i" configs/gpt.toml "${het[@]}" --set 'parallel.pipeline.stages="0-3@2+3,4-5@0+1"'
  fi
  if [[ $PARTS == *recompute* ]]; then
    for mode in none auto all; do
      run "recompute.$mode.$i" configs/gpt.toml "${rec[@]}" --set 'parallel.pipeline.stages="0-2,3-5"' \
        --set parallel.pipeline.recompute=$mode
    done
    run "recompute.planner.$i" configs/gpt.toml "${rec[@]}" --set parallel.pipeline.micro_batches=0
  fi
done

python3 - "$work" "$REPS" <<'PY'
import glob, json, os, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
def line(run):
    return [o for o in map(json.loads, open(f"{work}/{run}/metrics.jsonl")) if o["kind"] == "pipeline"][-1]
def names(part):
    return sorted({os.path.basename(d).rsplit(".", 1)[0] for d in glob.glob(f"{work}/{part}.*") if os.path.isdir(d)})
def runs(name):
    return [f"{name}.{i}" for i in range(1, reps + 1)]
def mm(xs):
    return f"{min(xs):8.1f} / {statistics.median(xs):8.1f}"
def plan_text(run):
    l = line(run)
    return " ".join(f"{s['blocks'][0]}-{s['blocks'][1]}@{'+'.join(map(str, s['ranks']))}"
                    + (f"(r{','.join(map(str, s['recompute']))})" if s["recompute"] else "") for s in l["stages"])
def time_row(name):
    ls = [line(r) for r in runs(name)]
    pred = [l["predicted"]["minibatch_ms"] for l in ls]
    meas = [l["measured"]["minibatch_ms"] for l in ls]
    err = [p / m - 1 for p, m in zip(pred, meas)]
    return pred, meas, err
def memory_errors(name):
    out = []
    for r in runs(name):
        for s in line(r)["stages"]:
            for p, m in zip(s["predicted"]["peak_bytes"], s["measured"]["peak_bytes"]):
                out.append(p / m - 1)
    return out
worst_time, worst_memory = 0.0, 0.0
for part in ("predict", "hetero", "recompute"):
    ns = names(part)
    if not ns: continue
    print(f"{part}: mini-batch ms predicted and measured (min / median over {reps}), prediction error; peak memory error (worst rank)")
    for n in ns:
        pred, meas, err = time_row(n)
        mem = memory_errors(n)
        fits = part != "recompute" or not n.endswith(".none")
        if fits: worst_time = max(worst_time, max(abs(e) for e in err))
        worst_memory = max(worst_memory, max(abs(e) for e in mem))
        print(f"  {n.split('.', 1)[1]:20} predicted {mm(pred)}  measured {mm(meas)}  error {100*min(err):+5.1f}..{100*max(err):+5.1f}%"
              f"  memory {100*min(mem):+5.1f}..{100*max(mem):+5.1f}%   {plan_text(runs(n)[0])}")
print(f"worst time error {100*worst_time:.1f}%, worst memory error {100*worst_memory:.1f}% (targets: 20%, 10%)")

het = names("hetero")
if het:
    med = lambda n, side: statistics.median(line(r)[side]["minibatch_ms"] for r in runs(n))
    by_pred = sorted(het, key=lambda n: med(n, "predicted"))
    by_meas = sorted(het, key=lambda n: med(n, "measured"))
    short = lambda ns: " < ".join(n.split(".")[1][2:] for n in ns)
    print(f"hetero ranking, predicted: {short(by_pred)}")
    print(f"hetero ranking, measured:  {short(by_meas)}")
    agree = sum(1 for a in range(len(het)) for b in range(a + 1, len(het))
                if (med(het[a], "predicted") < med(het[b], "predicted")) == (med(het[a], "measured") < med(het[b], "measured")))
    print(f"  pairs ordered alike: {agree} of {len(het) * (len(het) - 1) // 2}")
    planner, naive = "hetero.a-planner", "hetero.c-naive"
    ratios = [line(f"{naive}.{i}")["measured"]["minibatch_ms"] / line(f"{planner}.{i}")["measured"]["minibatch_ms"]
              for i in range(1, reps + 1)]
    print(f"  the planner's plan against the naive one, measured: {min(ratios):.2f} / {statistics.median(ratios):.2f}x samples/s")

if names("recompute"):
    print("recompute: per stage, peak MB measured (limit 40) and compute ms per mini-batch, medians; against no recomputation")
    med_stage = lambda mode, s, key: statistics.median(
        (max(line(r)["stages"][s]["measured"]["peak_bytes"]) / 1e6 if key == "peak" else line(r)["stages"][s]["measured"][key])
        for r in runs(f"recompute.{mode}"))
    for mode in ("none", "auto", "all"):
        parts = []
        for s in range(2):
            peak, comp = med_stage(mode, s, "peak"), med_stage(mode, s, "compute_ms")
            if mode == "none": parts.append(f"stage {s}: {peak:6.1f} MB {comp:7.1f} ms")
            else:
                parts.append(f"stage {s}: {peak:6.1f} MB ({peak - med_stage('none', s, 'peak'):+6.1f}) {comp:7.1f} ms "
                             f"({comp - med_stage('none', s, 'compute_ms'):+6.1f})")
        recomputed = [line(runs(f"recompute.{mode}")[0])["stages"][s]["recompute"] for s in range(2)]
        print(f"  {mode:5} {'   '.join(parts)}   recomputed {recomputed}")
    t = lambda mode: [line(r)["measured"]["minibatch_ms"] for r in runs(f"recompute.{mode}")]
    ratio = [a / b for a, b in zip(t("all"), t("auto"))]
    print(f"  balanced (auto) against recomputing every block, measured: {min(ratio):.2f} / {statistics.median(ratio):.2f}x samples/s")
    ratio = [a / b for a, b in zip(t("auto"), t("planner"))]
    print(f"  the planner's own plan under the limit against the balanced stages: {min(ratio):.2f} / {statistics.median(ratio):.2f}x "
          f"({plan_text(runs('recompute.planner')[0])})")
PY
