#!/usr/bin/env bash
# dptrain on a real cluster of three nodes on this machine (tests/cluster/netns_cluster.py: a network
# namespace, host name and sshd per node, links shaped by the kernel at 5, 2.5 and 1 Gbit/s):
#  1. each node answers ssh under its own host name; the machine's /etc/hosts is untouched;
#  2. `dptrain profile --links` measures every pair within 10% of a reference TCP stream (iperf3) over
#     the same link, and the pairs' latency as it is (printed); its cluster file names the nodes;
#  3. data parallelism (MRA) and a pipeline across the nodes, ranks started by mpirun over ssh, give the
#     losses of one process (1e-4 relative), also on two nodes of two ranks (shared memory inside a node);
#     CGP across them trains to the end;
#  4. a node cut for good with [launch] max_restarts = 1 under strategy "auto": the run restarts on the
#     nodes left, chooses its strategy again for them, and finishes;
#  5. no process of a run is left on any node, and the cluster is gone after (namespaces, bridge, hosts).
# Usage: bash netns.sh PATH/TO/dptrain REPO_ROOT. Skipped (77) where namespaces cannot be made (not root).
set -u
DPTRAIN=$(realpath "${1:?usage: netns.sh DPTRAIN REPO_ROOT}")
REPO=$(realpath "${2:?usage: netns.sh DPTRAIN REPO_ROOT}")
NAME="${NETNS_NAME:-nt$((RANDOM % 1000))}"
source "$REPO/tests/cluster/netns_lib.sh"
netns_require iperf3 /usr/sbin/sshd tc
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-netns.XXXXXX")
netns_cleanup_more() { [[ -n ${KEEP_TMP:-} ]] || rm -rf "$TMP"; }
hosts_before=$(sha256sum /etc/hosts)

cat >"$TMP/three.toml" <<'EOF'
[launch]
ranks = 3
[cluster]
ranks_per_node = 1
[cluster.links]   # node0-node1 5, node0-node2 2.5, node1-node2 1 Gbit/s
gbps = [0, 5, 2.5,  5, 0, 1,  2.5, 1, 0]
EOF
STATE=$($PY "$TOOL" up "$TMP/three.toml" --name "$NAME") || { echo "not ok - the cluster could not be made"; exit 1; }
source "$STATE/env"
node_ns() { echo "dpt-$NAME-node$1"; }
node_ip() { awk -v h="node$1" '$2 == h { print $1 }' "/etc/netns/$LAUNCHER/hosts"; }

# 1. Host names over ssh; the machine's name table untouched.
names=$(for k in 0 1 2; do on_launcher "$STATE/ssh" "node$k" hostname; done | tr '\n' ' ')
[[ $names == "node0 node1 node2 " ]] && ok "each node answers ssh under its own name: $names" ||
  not_ok "ssh to the nodes" "got '$names'"
[[ $(sha256sum /etc/hosts) == "$hosts_before" ]] && ok "/etc/hosts untouched" || not_ok "/etc/hosts" "changed"

# 2. profile --links against iperf3 over the same links.
on_launcher "$DPTRAIN" profile --links "$TMP/three.toml" --set "launch.hostfile=$STATE/hostfile" \
  --out "$TMP/links.toml" >"$TMP/links.out" 2>&1 || not_ok "profile --links" "$(tail -3 "$TMP/links.out")"
for pair in "0 1" "0 2" "1 2"; do
  set -- $pair
  ip netns exec "$(node_ns "$2")" iperf3 -s -1 -D -p 5201 >/dev/null 2>&1
  sleep 0.3
  ip netns exec "$(node_ns "$1")" iperf3 -c "$(node_ip "$2")" -p 5201 -t 2 -J >"$TMP/iperf_$1$2.json" 2>&1
done
$PY - "$TMP" <<'PY' || not_ok "profile --links against iperf3" "see above"
import json, re, sys, tomllib
tmp = sys.argv[1]
cluster = tomllib.load(open(f"{tmp}/links.toml", "rb"))["cluster"]
links = cluster["links"]
bad = 0
if cluster.get("node_sizes") != [1, 1, 1]:
    print(f"# the links file's node_sizes: {cluster.get('node_sizes')}, not [1, 1, 1] (one rank on each node)")
    bad += 1
for a, b, set_to in ((0, 1, 5.0), (0, 2, 2.5), (1, 2, 1.0)):
    ref = json.load(open(f"{tmp}/iperf_{a}{b}.json"))["end"]["sum_received"]["bits_per_second"] / 1e9
    got = links["gbps"][a * 3 + b]
    lat = links["latency_us"][a * 3 + b]
    off = got / ref - 1
    print(f"# node{a} -> node{b}: shaped {set_to} Gbit/s, iperf3 {ref:.3f}, profile --links {got:.3f} "
          f"({off:+.1%}), latency {lat:.1f} us one way")
    bad += abs(off) > 0.10
sys.exit(bad)
PY
[[ $failures == 0 ]] && ok "profile --links within 10% of iperf3 on each of the three links"

# 3. Training across the nodes against one process.
losses() {  # rank 0's first $2 train losses in run folder $1
  grep '"kind":"train"' "$1/metrics.jsonl" | grep '"rank":0,' | sed 's/.*"loss":\([^,}]*\).*/\1/' | head -"$2"
}
close() {  # the largest relative difference between the loss lists $1 and $2 is at most 1e-4
  $PY -c "import sys; a, b = (list(map(float, open(f).read().split())) for f in sys.argv[1:3]); \
assert len(a) == len(b) > 0, (len(a), len(b)); d = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b)); \
print(f'# {len(a)} losses, largest relative difference {d:.2e}'); sys.exit(d > 1e-4)" "$1" "$2"
}
across() {  # $1: name, then the job and overrides: the run across the three nodes and one of one process
  local name=$1; shift
  local common=(--set train.threads=1 --set log.every=1 --set log.progress=plain --set train.eval_every=0)
  if ! on_launcher "$DPTRAIN" run "$@" "${common[@]}" --set launch.ranks=3 --set "launch.hostfile=$STATE/hostfile" \
       --out "$TMP/$name.nodes" >"$TMP/$name.nodes.log" 2>&1; then
    not_ok "$name across three nodes" "$(tail -3 "$TMP/$name.nodes.log")"; return 1
  fi
  grep -q "^nodes: node0 (0), node1 (1), node2 (2)" "$TMP/$name.nodes.log" ||
    { not_ok "$name across three nodes" "no line naming the ranks' nodes"; return 1; }
}
one_process() {  # $1: name, then the job and overrides: the same job on one process, its losses vs the nodes'
  local name=$1 steps=$2; shift 2
  if ! "$DPTRAIN" run "$@" --set train.threads=1 --set log.every=1 --set train.eval_every=0 --set launch.ranks=1 \
       --out "$TMP/$name.one" >"$TMP/$name.one.log" 2>&1; then
    not_ok "$name on one process" "$(tail -3 "$TMP/$name.one.log")"; return 1
  fi
  losses "$TMP/$name.nodes" "$steps" >"$TMP/$name.a"
  losses "$TMP/$name.one" "$steps" >"$TMP/$name.b"
  close "$TMP/$name.a" "$TMP/$name.b" ||
    { not_ok "$name on three nodes against one process" "losses differ"; return 1; }
}
QUICK=("$REPO/configs/quickstart.toml" --set train.steps=20)
across data "${QUICK[@]}" && one_process data 20 "${QUICK[@]}" &&
  ok "data parallelism (MRA) on three nodes: one process's losses"
# Two nodes of two ranks (shared memory inside a node, TCP between): the same losses.
printf 'node0 slots=2\nnode1 slots=2\n' >"$TMP/two_by_two"
if on_launcher "$DPTRAIN" run "${QUICK[@]}" --set train.threads=1 --set log.every=1 --set log.progress=plain \
     --set train.eval_every=0 --set launch.ranks=4 --set "launch.hostfile=$TMP/two_by_two" --out "$TMP/data4.nodes" \
     >"$TMP/data4.nodes.log" 2>&1; then
  if grep -q "^nodes: node0 (0,1), node1 (2,3)" "$TMP/data4.nodes.log"; then
    one_process data4 20 "${QUICK[@]}" && ok "data parallelism on two nodes of two ranks: one process's losses"
  else
    not_ok "two nodes of two ranks" "ranks placed as '$(grep -m1 '^nodes:' "$TMP/data4.nodes.log")'"
  fi
else
  not_ok "data parallelism on two nodes of two ranks" "$(tail -3 "$TMP/data4.nodes.log")"
fi
GPT=("$REPO/configs/gpt.toml" --set model.tied_head=false --set train.steps=8 --set train.global_batch=24
     --set parallel.pipeline.micro_batches=4)
across pipeline "${GPT[@]}" --set parallel.strategy=pipeline --set 'parallel.pipeline.stages="0-1,2-3,4-5"' &&
  one_process pipeline 8 "${GPT[@]}" &&
  ok "a pipeline of three stages, one per node: one process's losses"
across cgp "$REPO/configs/quickstart.toml" --set train.steps=30 --set parallel.strategy=cgp &&
  ok "CGP on three nodes trains to the end ($(grep -m1 -o 'groups[^;]*' "$TMP/cgp.nodes.log" | head -c 80))"

# 4. A node lost for good (its link cut once the first checkpoint exists) under strategy "auto" with
#    max_restarts = 1 and wait_timeout = 20: the run restarts on the two nodes left, chooses its strategy
#    again for them (said on the restart line), and finishes.
FAULTS="$REPO/tests/cluster/netns_faults.py"
(
  for _ in $(seq 600); do
    [[ -n $(ls "$TMP/elastic/checkpoints" 2>/dev/null) ]] && break
    sleep 0.1
  done
  $PY "$FAULTS" cut "$NAME" node2 >"$TMP/cut.log"
) &
cutter=$!
start=$(date +%s.%N)
on_launcher "$DPTRAIN" run "${QUICK[@]}" --set train.steps=400 --set checkpoint.every=100 --set train.threads=1 \
  --set launch.ranks=3 --set "launch.hostfile=$STATE/hostfile" --set launch.wait_timeout=20 \
  --set launch.max_restarts=1 --set log.progress=plain --set parallel.strategy=auto --out "$TMP/elastic" \
  >"$TMP/elastic.log" 2>&1
rc=$?
wait "$cutter"
restart=$(grep -m1 "^dptrain: restart 1 of 1" "$TMP/elastic.log")
steps=$($PY -c "import json, sys; s = json.load(open(sys.argv[1])); print(s['steps'], s['ranks'])" \
          "$TMP/elastic/summary.json" 2>/dev/null)
if ((rc == 0)) && [[ $restart == *"node2 does not answer"*"ranks 3 -> 2"*"strategy auto: "*" on 2 rank(s)"* &&
      $steps == "400 2" ]]; then
  ok "node2 cut for good: restarted on node0, node1 and finished 400 steps on 2 ranks in $(awk -v a="$start" \
-v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s (${restart#dptrain: })"
else
  not_ok "a node lost for good with max_restarts = 1" \
    "exit $rc, '$restart', summary '$steps': $(tail -3 "$TMP/elastic.log")"
fi

# Bad input: with node2 still cut off, a run on all three is refused before any rank starts, in one line
# naming node2, within 30 s; the run folder not made.
start=$(date +%s.%N)
on_launcher "$DPTRAIN" run "${QUICK[@]}" --set launch.ranks=3 --set "launch.hostfile=$STATE/hostfile" \
  --out "$TMP/unreachable" >"$TMP/unreachable.out" 2>"$TMP/unreachable.err"
rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if ((rc == 2)) && (($(wc -l <"$TMP/unreachable.err") == 1)) && grep -q "node2 does not answer" "$TMP/unreachable.err" &&
   [[ ! -e $TMP/unreachable ]] && awk -v t="$took" 'BEGIN { exit !(t < 30) }'; then
  ok "a hostfile naming a node that does not answer: refused in $took s ($(cat "$TMP/unreachable.err"))"
else
  not_ok "a hostfile naming a node that does not answer" "exit $rc in $took s: $(head -3 "$TMP/unreachable.err")"
fi

# 5. Nothing left on the nodes; the cluster gone after.
left=$($PY "$TOOL" leftovers "$NAME")
[[ -z $left ]] && ok "no process left on any node" || not_ok "processes left on the nodes" "$left"
$PY "$TOOL" down "$NAME"
if ip netns list | grep -q "dpt-$NAME-" || ip link show "${NAME}br" >/dev/null 2>&1 ||
   [[ -e /etc/netns/$LAUNCHER ]]; then
  not_ok "teardown" "namespaces, bridge or host tables left"
else
  ok "torn down: no namespace, bridge or host table left"
fi
echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures check(s) off)"
((failures == 0))
