#!/usr/bin/env bash
# CGP against synchronous training, side by side (issue 13's targets 1 and 3-5), on 6 ranks whose
# emulated machines are much slower than a core ([cluster.emulate]: a slowed rank sleeps until its
# compute has taken its factor x its CPU time, so the 2 cores here are not what limits):
#   model:       the model's predictions against the measurement for four fixed groupings at speeds
#                [1, 1, 1, 1, 0.5, 0.3] (slowdown 16 x 1/speed), each rank its own machine on emulated
#                5 Gbit/s links: samples/s predicted from the speeds probed before the first step ("CGP:"
#                line of the run) against summary.json's, and each group's step and cycle time as the
#                phase's "groups" line has them (predicted from the phase's measured speeds, measured by
#                the server);
#   persistent:  speeds [1, 1, 1, 1, 0.5, 0.3] (slowdown 8 x 1/speed) on the quickstart model, 2 epochs:
#                synchronous with equal shares, synchronous with I-DAT, CGP (groups by the solver on
#                measured speeds), fully asynchronous (every rank its own group, no staleness bound):
#                time to a fixed test accuracy and the final accuracy;
#   network:     two emulated nodes of 3 ranks, 10 Gbit/s inside, 1 Gbit/s between ([cluster]
#                ranks_per_node = 3, [cluster.emulate] as_described), an MLP of 1.9 M parameters: CGP
#                (the solver's groups, exchange every 4 local steps) against synchronous MRA + I-DAT;
#   fluctuating: six machines on emulated 2.5 Gbit/s links, equal shares, 500 steps; a noisy neighbour
#                makes rank 4 five times slower in steps 100-249 and rank 5 in steps 250-399: CGP
#                regrouping when speeds drift (the aga solver, drift 0.5) against fixed groupings (one
#                group, and those that set the slowed ranks apart).
# Times are train_seconds (steps only; evaluation pauses excluded) from metrics.jsonl's eval lines.
# Usage: tests/bench/cgp.sh [DPTRAIN_BINARY]      Environment: REPS [1], PARTS ["model persistent network fluctuating"]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
bin=${1:-build/dptrain}
REPS=${REPS:-1} PARTS=${PARTS:-"model persistent network fluctuating"}
[[ -x $bin ]] || { echo "cgp: no dptrain binary at '$bin'" >&2; exit 2; }
source "$here/machine.sh"
bench_machine "$bin" 1
work=$(mktemp -d /tmp/cgp-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
slow="cluster.emulate.slowdown=[8,8,8,8,16,26.667]"

run() {  # NAME JOB SET...
  local name=$1 job=$2
  shift 2
  echo "  $name" >&2
  "$bin" run "$job" --out "$work/$name" --force --set launch.ranks=6 --set train.threads=1 --set log.every=10 \
    --set log.progress=plain --set checkpoint.enabled=false "$@" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; exit 1; }
}
q=configs/quickstart.toml
for ((i = 1; i <= REPS; i++)); do
  if [[ $PARTS == *model* ]]; then
    for g in "0,0,0,0,0,0" "0,0,0,0,1,1" "0,0,1,1,2,2" "0,0,0,0,1,2"; do
      run "model.${g//,/}.$i" $q --set train.steps=300 --set train.eval_every=300 --set parallel.strategy=cgp \
        --set "parallel.cgp.groups=[$g]" --set parallel.cgp.max_staleness=100 --set cluster.ranks_per_node=1 \
        --set cluster.links.rack_gbps=5 --set cluster.links.rack_latency_us=20 --set cluster.emulate.as_described=true \
        --set "cluster.emulate.slowdown=[16,16,16,16,32,53.333]"
    done
  fi
  if [[ $PARTS == *persistent* ]]; then
    p=(--set train.epochs=2 --set train.eval_every=47 --set "$slow")
    run "persistent.sync-equal.$i" $q "${p[@]}"
    run "persistent.sync-idat.$i" $q "${p[@]}" --set parallel.balance.mode=idat
    run "persistent.cgp.$i" $q "${p[@]}" --set parallel.strategy=cgp
    run "persistent.async.$i" $q "${p[@]}" --set parallel.strategy=cgp --set "parallel.cgp.groups=[0,1,2,3,4,5]" \
      --set parallel.cgp.max_staleness=100
  fi
  if [[ $PARTS == *network* ]]; then
    n=(--set "model.hidden=[1024,1024]" --set train.global_batch=64 --set train.steps=450 --set train.eval_every=45
       --set optim.warmup_steps=20 --set cluster.ranks_per_node=3 --set cluster.links.node_gbps=10
       --set cluster.links.rack_gbps=1 --set cluster.links.cross_gbps=1 --set cluster.emulate.as_described=true
       --set "cluster.emulate.slowdown=[4,4,4,4,4,4]")
    run "network.sync-mra-idat.$i" $q "${n[@]}" --set parallel.balance.mode=idat
    run "network.cgp.$i" $q "${n[@]}" --set parallel.balance.mode=idat --set parallel.strategy=cgp \
      --set parallel.cgp.exchange_every=4
  fi
  if [[ $PARTS == *fluctuating* ]]; then
    f=(--set train.steps=500 --set train.eval_every=25 --set parallel.strategy=cgp --set cluster.ranks_per_node=1
       --set cluster.links.rack_gbps=2.5 --set cluster.links.rack_latency_us=20 --set cluster.emulate.as_described=true
       --set "cluster.emulate.slowdown=[8,8,8,8,8,8]" --set cluster.emulate.fluctuate_rank=4
       --set cluster.emulate.fluctuate_from=100 --set cluster.emulate.fluctuate_to=400
       --set cluster.emulate.fluctuate_move_every=150 --set cluster.emulate.fluctuate_factor=5)
    run "fluctuating.regroup.$i" $q "${f[@]}" --set parallel.cgp.regroup_drift=0.5
    for g in "0,0,0,0,0,0" "0,0,0,0,1,1" "0,0,0,0,1,2" "0,0,0,0,1,0" "0,0,0,0,0,1"; do
      run "fluctuating.fixed-${g//,/}.$i" $q "${f[@]}" --set "parallel.cgp.groups=[$g]"
    done
  fi
done

python3 - "$work" "$REPS" <<'PY'
import json, re, statistics, sys, glob, os
work, reps = sys.argv[1], int(sys.argv[2])
def evals(name):
    return [o for o in map(json.loads, open(f"{work}/{name}/metrics.jsonl")) if o["kind"] == "eval"]
def summary(name):
    return json.load(open(f"{work}/{name}/summary.json"))
def predicted(name):
    m = re.search(r"predicted (\d+) samples/s", open(f"{work}/{name}.log").read())
    return float(m.group(1)) if m else float("nan")
def to_accuracy(name, target):
    for e in evals(name):
        if e["test_accuracy"] >= target: return e["train_seconds"]
    return float("inf")
def stats(xs):
    xs = [x for x in xs if x == x]
    return (min(xs), statistics.median(xs)) if xs else (float("nan"), float("nan"))
def names(prefix):
    return sorted({os.path.basename(d).rsplit(".", 1)[0] for d in glob.glob(f"{work}/{prefix}.*") if os.path.isdir(d)})
def groups_line(name):
    return [o for o in map(json.loads, open(f"{work}/{name}/metrics.jsonl")) if o["kind"] == "groups"][-1]
if names("model"):
    print("model: predicted against measured, median over reps (error: predicted / measured - 1)")
    print(f"  {'grouping':14} {'probed: samples/s':>26} {'phase: samples/s':>26}   groups: step ms, cycle ms (predicted/measured)")
    for n in names("model"):
        runs = [f"{n}.{i}" for i in range(1, reps + 1)]
        pred = statistics.median(predicted(r) for r in runs)
        meas = statistics.median(summary(r)["samples_per_sec"] for r in runs)
        lines = [groups_line(r) for r in runs]
        ppred = statistics.median(l["predicted_samples_per_sec"] for l in lines)
        pmeas = statistics.median(l["measured_samples_per_sec"] for l in lines)
        parts = []
        for gi, g in enumerate(lines[0]["groups"]):
            med = lambda side, key: statistics.median(l["groups"][gi][side][key] for l in lines)
            parts.append("{%s} %.1f/%.1f %.1f/%.1f" % (",".join(map(str, g["members"])), med("predicted", "step_ms"),
                         med("measured", "step_ms"), med("predicted", "cycle_ms"), med("measured", "cycle_ms")))
        print(f"  {n.split('.')[1]:14} {pred:8.0f} {meas:8.0f} {100*(pred/meas-1):+6.1f}%   {ppred:8.0f} {pmeas:8.0f} {100*(ppred/pmeas-1):+6.1f}%   {'  '.join(parts)}")
def table(part, target, base):
    ns = names(part)
    if not ns: return
    print(f"{part}: train seconds to test accuracy {target}, final accuracy; speedup against {base} (min / median over reps)")
    ref = [to_accuracy(f"{part}.{base}.{i}", target) for i in range(1, reps + 1)]
    for n in ns:
        t = [to_accuracy(f"{n}.{i}", target) for i in range(1, reps + 1)]
        acc = [summary(f"{n}.{i}")["test_accuracy"] for i in range(1, reps + 1)]
        total = [summary(f"{n}.{i}")["train_seconds"] for i in range(1, reps + 1)]
        sp = [r / x for r, x in zip(ref, t)]
        print(f"  {n.split('.')[1]:16} to {target}: {min(t):7.2f} / {statistics.median(t):7.2f} s   speedup {min(sp):5.2f} / {statistics.median(sp):5.2f}x"
              f"   final accuracy {statistics.median(acc):.4f}   all steps {statistics.median(total):7.2f} s")
for n in names("persistent.cgp") + names("network.cgp"):
    for i in range(1, reps + 1):
        m = re.search(r"CGP: groups (.*?) \(", open(f"{work}/{n}.{i}.log").read())
        print(f"{n}.{i}: groups {m.group(1) if m else '?'}")
table("persistent", 0.86, "sync-equal")
table("network", 0.80, "sync-mra-idat")
table("fluctuating", 0.85, "fixed-000000")
fixed = [n for n in names("fluctuating") if ".fixed-" in n]
if fixed and names("fluctuating.regroup"):
    for target in (0.84, 0.85):
        ratios = []
        for i in range(1, reps + 1):
            best = min(to_accuracy(f"{n}.{i}", target) for n in fixed)
            ratios.append(best / to_accuracy(f"fluctuating.regroup.{i}", target))
        print(f"  regrouping against the best fixed grouping of each repetition, to {target}: {min(ratios):.2f} / {statistics.median(ratios):.2f}x")
for n in names("fluctuating.regroup"):
    for i in range(1, reps + 1):
        for o in map(json.loads, open(f"{work}/{n}.{i}/metrics.jsonl")):
            if o["kind"] == "regroup":
                print(f"  regroup at step {o['step']}: {o['grouping']} adopted={o['adopted']} ({o['reason']}; predicted {o['predicted_before']:.0f} -> {o['predicted_after']:.0f} samples/s) cost {o['cost_ms']:.1f} ms")
PY
