#!/usr/bin/env bash
# The benchmarks' headline comparisons over real links (issue 28): each case run on a cluster of network
# namespaces on this machine (tests/cluster/netns_cluster.py: a node per namespace, ranks started over ssh,
# links shaped by the kernel's HTB) and, interleaved with it, the same case on dptrain's link emulator
# ([cluster.emulate] as_described) on this machine. Both get the same [cluster] description, so planners,
# solvers and cost models see the same inputs; compute slowness stays emulated in both ([cluster.emulate]
# slowdown: the kernel cannot slow a core), links are the kernel's in one and the emulator's in the other.
#   mra:      configs/comm_heavy.toml on 2 nodes of 1 rank at 1 and at 10 Gbit/s, both ranks 4x slower than
#             a core: MRA against plain data parallelism (one MPI_Allreduce per layer after backward);
#             `estimate`'s step time beside each;
#   idat:     the same model, batch 32, 2 nodes at 10 Gbit/s, rank 0 4x and rank 1 8x slower than a core:
#             I-DAT + MRA against equal shares without MRA;
#   cgp:      two nodes of three ranks (shared memory inside, 10 Gbit/s described) joined by 1 Gbit/s, an MLP
#             of 1.9 M parameters, every rank 4x slower than a core: CGP (the solver's groups, exchange
#             every 4 local steps) against synchronous MRA + I-DAT, train seconds to test accuracy 0.80;
#             the CGP model's predicted samples/s against the run's;
#   pipeline: the GPT (untied head) on two nodes of two ranks joined by 0.5 Gbit/s, speeds [1, 1, 0.5, 0.5]:
#             the planner's plan against the naive one (equal block counts, ranks in order); the plan's
#             predicted mini-batch time against the measured.
# On the namespace cluster each described node of 3 (cgp) or 2 (pipeline) ranks is one namespace node of
# as many ranks (shared memory inside, as on a real node); the job's description is the same in both modes.
# Every rank is emulated at least 4x slower than a core: its sleeps leave this machine's 2 cores to the
# kernel's TCP, veth and HTB work, which a real node's own NIC and cores would do beside its device.
# Times from metrics.jsonl; min / median over REPS interleaved repetitions. Not a test: it asserts nothing.
# Needs root (namespaces), iperf3 not needed. The latency a real link has here is the veth's (about 6 us);
# the descriptions say 10 us.
# Usage: tests/bench/real_links.sh [DPTRAIN]      Environment: REPS [3], PARTS ["mra idat cgp pipeline"],
#        KEEP=1 keeps the run folders
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
bin=$(realpath "${1:-build/dptrain}")
REPS=${REPS:-3} PARTS=${PARTS:-"mra idat cgp pipeline"}
[[ -x $bin ]] || { echo "real_links: no dptrain binary at '$bin'" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "real_links: network namespaces need root" >&2; exit 2; }
source "$here/machine.sh"
bench_machine "$bin" 1
TOOL=tests/cluster/netns_cluster.py
work=$(mktemp -d /tmp/real-links.XXXXXX)
name="" state=""
cleanup() {
  trap '' INT TERM HUP
  [[ -z $name ]] || python3 "$TOOL" down "$name" >/dev/null
  [[ -n ${KEEP:-} ]] && echo "# runs kept in $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

cluster_up() {  # DESCRIPTION (a [launch] ranks and [cluster] TOML text): the namespaces for the case
  [[ -z $name ]] || cluster_down
  printf '%s\n' "$1" >"$work/cluster.toml"
  name=rl$((RANDOM % 1000))
  state=$(python3 "$TOOL" up "$work/cluster.toml" --name "$name")
}
cluster_down() { python3 "$TOOL" down "$name" >/dev/null; name=""; }

# run MODE RUN JOB SET...: MODE emu (on this machine, the described links emulated) or real (on the cluster).
# REAL_SLOW / EMU_SLOW: the case's [cluster.emulate] slowdown for each (as_described adds the described
# speeds to EMU_SLOW; on the cluster they are given in REAL_SLOW).
run() {
  local mode=$1 run=$2 job=$3
  shift 3
  echo "  $run" >&2
  local args=(run "$job" --out "$work/$run" --force --set train.threads=1 --set log.progress=plain
              --set checkpoint.enabled=false "$@")
  if [[ $mode == emu ]]; then
    "$bin" "${args[@]}" --set cluster.emulate.as_described=true --set "cluster.emulate.slowdown=$EMU_SLOW"
  else
    (source "$state/env"
     ip netns exec "dpt-$name-launcher" unshare --uts -- sh -c 'hostname launcher && exec "$@"' sh \
       "$bin" "${args[@]}" --set "cluster.emulate.slowdown=$REAL_SLOW" --set "launch.hostfile=$state/hostfile")
  fi >"$work/$run.log" 2>&1 || { tail -20 "$work/$run.log" >&2; exit 1; }
}
estimate() {  # RUN JOB SET...: estimate's step seconds for the job as described, with EMU_SLOW
  local run=$1 job=$2
  shift 2
  "$bin" estimate "$job" "$@" --set cluster.emulate.as_described=true --set "cluster.emulate.slowdown=$EMU_SLOW" \
    --json 2>/dev/null |
    python3 -c "import json, sys; print(json.load(sys.stdin)['step_s'])" >"$work/$run.estimate"
}

if [[ $PARTS == *mra* ]]; then
  for gbps in 1 10; do
    cluster_up "$(printf '[launch]\nranks = 2\n[cluster]\nranks_per_node = 1\n[cluster.links]\nrack_gbps = %s' $gbps)"
    EMU_SLOW="[4, 4]" REAL_SLOW="[4, 4]"
    m=(--set launch.ranks=2 --set cluster.ranks_per_node=1 --set "cluster.links.rack_gbps=$gbps"
       --set cluster.links.rack_latency_us=10 --set train.steps=40 --set log.every=1 --set train.eval_every=1000000)
    for alg in native mra; do estimate "mra.$gbps.$alg" configs/comm_heavy.toml "${m[@]}" \
      --set parallel.comm.algorithm=$alg; done
    for ((i = 1; i <= REPS; i++)); do
      for mode in real emu; do
        for alg in native mra; do
          run $mode "mra.$gbps.$alg.$mode.$i" configs/comm_heavy.toml "${m[@]}" --set parallel.comm.algorithm=$alg
        done
      done
    done
  done
fi
if [[ $PARTS == *idat* ]]; then
  cluster_up "$(printf '[launch]\nranks = 2\n[cluster]\nranks_per_node = 1\n[cluster.links]\nrack_gbps = 10')"
  EMU_SLOW="[4, 4]" REAL_SLOW="[4, 8]"
  d=(--set launch.ranks=2 --set cluster.ranks_per_node=1 --set cluster.links.rack_gbps=10
     --set cluster.links.rack_latency_us=10 --set "cluster.speeds=[1, 0.5]" --set train.global_batch=32
     --set train.steps=60 --set log.every=1 --set train.eval_every=1000000)
  estimate idat.equal configs/comm_heavy.toml "${d[@]}" --set parallel.comm.algorithm=native
  estimate idat.idat configs/comm_heavy.toml "${d[@]}" --set parallel.balance.mode=idat
  for ((i = 1; i <= REPS; i++)); do
    for mode in real emu; do
      run $mode "idat.equal.$mode.$i" configs/comm_heavy.toml "${d[@]}" --set parallel.comm.algorithm=native
      run $mode "idat.idat.$mode.$i" configs/comm_heavy.toml "${d[@]}" --set parallel.balance.mode=idat
    done
  done
fi
if [[ $PARTS == *cgp* ]]; then
  cluster_up "$(printf '[launch]\nranks = 6\n[cluster]\nranks_per_node = 3\n[cluster.links]\nrack_gbps = 1')"
  EMU_SLOW="[4, 4, 4, 4, 4, 4]" REAL_SLOW="[4, 4, 4, 4, 4, 4]"
  c=(--set launch.ranks=6 --set "model.hidden=[1024,1024]" --set train.global_batch=64 --set train.steps=450
     --set train.eval_every=45 --set log.every=10 --set optim.warmup_steps=20 --set cluster.ranks_per_node=3
     --set cluster.links.node_gbps=10 --set cluster.links.rack_gbps=1 --set cluster.links.rack_latency_us=10
     --set parallel.balance.mode=idat)
  for ((i = 1; i <= REPS; i++)); do
    for mode in real emu; do
      run $mode "cgp.sync-mra-idat.$mode.$i" configs/quickstart.toml "${c[@]}"
      run $mode "cgp.cgp.$mode.$i" configs/quickstart.toml "${c[@]}" --set parallel.strategy=cgp \
        --set parallel.cgp.exchange_every=4
    done
  done
fi
if [[ $PARTS == *pipeline* ]]; then
  cluster_up "$(printf '[launch]\nranks = 4\n[cluster]\nranks_per_node = 2\n[cluster.links]\nrack_gbps = 0.5')"
  EMU_SLOW="[4, 4, 4, 4]" REAL_SLOW="[4, 4, 8, 8]"
  p=(--set parallel.strategy=pipeline --set model.tied_head=false --set train.steps=30 --set launch.ranks=4
     --set "cluster.speeds=[1, 1, 0.5, 0.5]" --set cluster.ranks_per_node=2 --set cluster.links.node_gbps=10
     --set cluster.links.rack_gbps=0.5 --set cluster.links.rack_latency_us=10 --set train.eval_every=100000
     --set log.every=10)
  for ((i = 1; i <= REPS; i++)); do
    for mode in real emu; do
      run $mode "pipeline.planner.$mode.$i" configs/gpt.toml "${p[@]}"
      run $mode "pipeline.naive.$mode.$i" configs/gpt.toml "${p[@]}" \
        --set 'parallel.pipeline.stages="0-1@0,2-3@1,4@2,5@3"'
    done
  done
fi
[[ -z $name ]] || cluster_down

python3 "$here/real_links_report.py" "$work" "$REPS"
