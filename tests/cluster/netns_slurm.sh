#!/usr/bin/env bash
# dptrain under a real multi-node Slurm on this machine (tests/cluster/netns_cluster.py --slurm: three nodes
# in network namespaces, a slurmd on each under its own name and address, slurmctld on the launcher):
#  1. inside `salloc -N 3` a run's ranks are started by srun --mpi=pmix across the three nodes ([launch]
#     launcher "auto") and finish, each rank on its own node;
#  2. a node's link cut for good once the first checkpoint exists, with [launch] max_restarts = 1 and
#     wait_timeout = 20 (allocation made with --no-kill): the launcher asks the allocation's nodes through
#     Slurm, drops the one that does not answer, relaunches with srun on the two left from the newest
#     checkpoint, and the run finishes its epoch on 2 ranks with every sample trained once;
#  3. no dptrain process is left on any node (Slurm's own step daemon on the cut node waits for its
#     controller; that is Slurm's, reported); the cluster is gone after.
# Usage: bash netns_slurm.sh PATH/TO/dptrain REPO_ROOT. Skipped (77) where namespaces cannot be made.
set -u
DPTRAIN=$(realpath "${1:?usage: netns_slurm.sh DPTRAIN REPO_ROOT}")
REPO=$(realpath "${2:?usage: netns_slurm.sh DPTRAIN REPO_ROOT}")
NAME="${NETNS_NAME:-ns$((RANDOM % 1000))}"
source "$REPO/tests/cluster/netns_lib.sh"
netns_require /usr/sbin/sshd tc munged slurmctld slurmd salloc nsenter
STATE=""

# The description: three nodes of one rank. Run folders live in the cluster's state folder, which every
# node sees (each node's /tmp is its own, as on a real cluster).
DESC=$(mktemp "${TMPDIR:-/tmp}/dptrain-netns-slurm.XXXXXX.toml")
printf '[launch]\nranks = 3\n[cluster]\nranks_per_node = 1\n[cluster.links]\nrack_gbps = 5.0\ncross_gbps = 5.0\n' >"$DESC"
start=$(date +%s.%N)
STATE=$($PY "$TOOL" up "$DESC" --name "$NAME" --slurm) || { rm -f "$DESC"; echo "not ok - the cluster could not be made"; exit 1; }
rm -f "$DESC"
source "$STATE/env"
ok "three nodes with Slurm up in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
WORK="$STATE/work"
mkdir -p "$WORK"
cd "$WORK" || exit 1
QUICK=("$REPO/configs/quickstart.toml" --set launch.ranks=3 --set train.threads=1 --set log.progress=plain)

# 1. srun across the three nodes.
on_launcher salloc -N 3 --ntasks-per-node=1 --no-kill "$DPTRAIN" run "${QUICK[@]}" --set train.steps=40 \
  --out "$WORK/plain" >"$WORK/plain.log" 2>&1
rc=$?
if ((rc == 0)) && grep -q "running srun --mpi=pmix --ntasks=3" "$WORK/plain.log" &&
   grep -q "^nodes: node0 (0), node1 (1), node2 (2)" "$WORK/plain.log"; then
  ok "salloc -N 3: ranks started by srun on node0, node1, node2; $(grep -m1 '^done:' "$WORK/plain.log" | cut -c1-60)"
else
  not_ok "a run under salloc across three nodes" "exit $rc: $(tail -3 "$WORK/plain.log")"
fi

# 2. node2 cut for good once the first checkpoint exists; one epoch (469 steps of 128 samples).
(
  for _ in $(seq 900); do
    [[ -n $(ls "$WORK/elastic/checkpoints" 2>/dev/null) ]] && break
    sleep 0.1
  done
  $PY "$REPO/tests/cluster/netns_faults.py" cut "$NAME" node2 >"$WORK/cut.log"
) &
cutter=$!
start=$(date +%s.%N)
on_launcher salloc -N 3 --ntasks-per-node=1 --no-kill "$DPTRAIN" run "${QUICK[@]}" --set train.steps=469 \
  --set checkpoint.every=100 --set log.every=1 --set launch.wait_timeout=20 --set launch.max_restarts=1 \
  --out "$WORK/elastic" >"$WORK/elastic.log" 2>&1
rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
wait "$cutter"
restart=$(grep -m1 "^dptrain: restart 1 of 1" "$WORK/elastic.log")
steps=$($PY -c "import json, sys; s = json.load(open(sys.argv[1])); print(s['steps'], s['ranks'])" \
          "$WORK/elastic/summary.json" 2>/dev/null)
if ((rc == 0)) && [[ $restart == *"node2 does not answer"*"on node0, node1"*"ranks 3 -> 2"* && $steps == "469 2" ]] &&
   grep -q "running srun .*--nodelist=node0,node1 --nodes=2" "$WORK/elastic.log"; then
  ok "node2 cut for good: srun relaunched on node0, node1 and the run finished 469 steps on 2 ranks in $took s \
(${restart#dptrain: })"
else
  not_ok "a node lost for good under Slurm with max_restarts = 1" \
    "exit $rc, '$restart', summary '$steps': $(tail -4 "$WORK/elastic.log")"
fi
if accounting=$($PY "$REPO/tests/cluster/accounting.py" "$WORK/elastic" 60000 2>&1); then
  ok "every sample trained once across the restart ($(tr "\n" ";" <<<"$accounting"))"
else
  not_ok "data accounting across the restart" "$accounting"
fi

# 3. No dptrain process on any node; the cluster gone after.
left=$($PY "$TOOL" leftovers "$NAME")
ours=$(grep -v " slurmstepd" <<<"$left")
slurm_left=""
[[ -n $left ]] && slurm_left=" (left by Slurm: $(tr '\n' ';' <<<"$left"))"
[[ -z $ours ]] && ok "no dptrain process left on any node$slurm_left" ||
  not_ok "processes left on the nodes" "$ours"
cd / && $PY "$TOOL" down "$NAME"
if ip netns list | grep -q "dpt-$NAME-" || ip link show "${NAME}br" >/dev/null 2>&1 || [[ -e $STATE ]] ||
   pgrep -f "$NAME/slurm/" >/dev/null; then
  not_ok "teardown" "namespaces, bridge, state folder or Slurm daemons left"
else
  ok "torn down: no namespace, bridge, state folder or Slurm daemon left"
fi
echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures check(s) off)"
((failures == 0))
