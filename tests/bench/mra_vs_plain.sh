#!/usr/bin/env bash
# MRA against plain data parallelism, side by side: the same job run with [parallel.comm] algorithm =
# "native" (after backward, one MPI_Allreduce per layer, full AdamW update on every rank), "mra"
# (bucketed ring reduce-scatter overlapping backward on a communication thread, sharded update fused into
# it, all-gather running on into the next step's forward: overlap and overlap_forward) and "mra-serial"
# (the same with overlap = false: buckets after backward, no thread), interleaved, on a communication-heavy model
# (configs/comm_heavy.toml) and a compute-heavy one (configs/cnn.toml), with 2 and 4 ranks, over shared
# memory and over emulated network links ([cluster.emulate] link_gbps: transfers take at least
# bytes / bandwidth + latency, ranks sleep for the difference, so the network costs no CPU, as a real
# NIC's does not). Step times come from each run's metrics.jsonl (every step logged): the median and the
# best step, and where the time goes (per step, the slowest rank's compute, wait, exposed communication,
# update). Not a test: it prints numbers and asserts nothing. It builds nothing.
#
# Usage: tests/bench/mra_vs_plain.sh [DPTRAIN_BINARY]        (default: build/dptrain)
# Environment: REPS [3] interleaved repetitions; STEPS [60] steps per run (the first 10 are not counted);
#              RANKS ["2 4"]; MODELS ["comm_heavy cnn"]; THREADS [1] compute threads per rank;
#              LINKS ["0 10"] link bandwidths in Gbit/s (0: shared memory, no emulation);
#              LATENCY_US [20] emulated latency; EXTRA [""] more --set arguments for every run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
bin=${1:-build/dptrain}
REPS=${REPS:-3} STEPS=${STEPS:-60} RANKS=${RANKS:-2 4} MODELS=${MODELS:-comm_heavy cnn} THREADS=${THREADS:-1}
EXTRA=${EXTRA:-} LINKS=${LINKS:-0 10} LATENCY_US=${LATENCY_US:-20}
[[ -x $bin ]] || { echo "mra_vs_plain: no dptrain binary at '$bin'" >&2; exit 2; }
source "$here/machine.sh"
bench_machine "$bin" "$THREADS"
work=$(mktemp -d /tmp/mra_vs_plain.XXXXXX)
trap 'rm -rf "$work"' EXIT

extra=()
for kv in $EXTRA; do extra+=(--set "$kv"); done
for model in $MODELS; do
  for ranks in $RANKS; do
    for link in $LINKS; do
      latency=$LATENCY_US
      [[ $link == 0 ]] && latency=0
      for ((i = 1; i <= REPS; i++)); do
        for alg in native mra mra-serial; do
          run=$model.$ranks.$link.$alg.$i
          echo "  $model, $ranks ranks, link ${link} Gbit/s, $alg [$i/$REPS]" >&2
          overlap=true
          [[ $alg == mra-serial ]] && overlap=false
          "$bin" run "configs/$model.toml" --out "$work/$run" --force \
            --set launch.ranks="$ranks" --set train.threads="$THREADS" --set train.steps="$STEPS" \
            --set parallel.comm.algorithm="${alg%-serial}" --set parallel.comm.overlap=$overlap \
            --set parallel.comm.overlap_forward=$overlap \
            --set cluster.emulate.link_gbps="$link" --set cluster.emulate.link_latency_us="$latency" \
            --set log.every=1 --set log.progress=none \
            --set train.eval_every=1000000 --set checkpoint.enabled=false "${extra[@]}" \
            >"$work/$run.log" 2>&1 || { cat "$work/$run.log" >&2; exit 1; }
        done
      done
    done
  done
done

python3 - "$work" "$REPS" "$MODELS" "$RANKS" "$LINKS" <<'PY'
import json, statistics, sys
work, reps, models, ranks_list, links = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5].split()

def steps(path):
    """Per step: (step ms, slowest rank's compute, wait, comm, update) for steps after the first 10."""
    by_step = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("kind") != "train" or r["step"] <= 10: continue
        by_step.setdefault(r["step"], []).append(r)
    out = []
    for rows in by_step.values():
        batch = sum(r["local_batch"] for r in rows)
        step_ms = 1000.0 * batch / rows[0]["samples_per_sec"]
        out.append((step_ms, *(max(r[k] for r in rows) for k in ("compute_ms", "wait_ms", "comm_ms", "update_ms"))))
    return out

print(f"{'model':<11} {'ranks':>5} {'link':>9} {'algorithm':<10} {'step ms':>8} {'best':>7} {'compute':>8} {'wait':>6} "
      f"{'comm':>7} {'update':>7}   (medians over {reps} runs x steps 11+; comm = exposed; MRA's update runs "
      f"on the comm thread)")
for model in models:
    for ranks in ranks_list:
        for link in links:
            med = {}
            where = "shm" if link == "0" else f"{link} Gb/s"
            for alg in ("native", "mra", "mra-serial"):
                rows = [s for i in range(1, reps + 1)
                        for s in steps(f"{work}/{model}.{ranks}.{link}.{alg}.{i}/metrics.jsonl")]
                cols = [statistics.median(c) for c in zip(*rows)]
                best = min(r[0] for r in rows)
                med[alg] = (cols[0], best)
                print(f"{model:<11} {ranks:>5} {where:>9} {alg:<10} {cols[0]:8.2f} {best:7.2f} {cols[1]:8.2f} "
                      f"{cols[2]:6.2f} {cols[3]:7.2f} {cols[4]:7.2f}")
            for alg in ("mra", "mra-serial"):
                print(f"{'':<11} {'':>5} {'':>9} {alg} speedup over native: {med['native'][0] / med[alg][0]:.2f}x "
                      f"on median steps, {med['native'][1] / med[alg][1]:.2f}x on best steps")
PY
