#!/usr/bin/env bash
# Emulated network links ([cluster.emulate] link_gbps, link_latency_us), end to end:
#   1. `profile --collectives` over 1 Gbit/s links: every allreduce row (native and ring, in and out of
#      place, 1-4 MB) has busbw at most the link's 0.125 GB/s and at least half of it, and no wrong element;
#   2. training over emulated links logs exactly the loss sequence of the same run without them (they
#      delay, never change, the arithmetic), for MRA (also with its all-gather overlapping the next
#      forward, which must give the same losses again) and plain data parallelism, and says so up front;
#   3. the same with [cluster.emulate] as_described (each pair of ranks linked as [cluster] describes:
#      here two nodes of one rank, 5 Gbit/s between them), which the run names.
# Usage: bash emulated_links.sh PATH/TO/dptrain REPO_ROOT
set -u

DPTRAIN=$(realpath "${1:?usage: emulated_links.sh DPTRAIN REPO_ROOT}")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-links.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

cat >job.toml <<'EOF'
[job]
name = "links"
seed = 5

[model]
hidden = [256, 256]

[data]
dataset = "synthetic"
train_samples = 2048

[train]
steps = 30
global_batch = 64
threads = 1

[launch]
ranks = 2

[checkpoint]
enabled = false

[log]
every = 1
progress = "plain"
EOF

# 1. Collectives over 1 Gbit/s links.
if "$DPTRAIN" profile --collectives job.toml --set cluster.emulate.link_gbps=1 --min-bytes 1048576 \
  --max-bytes 4194304 --factor 4 --iters 4 --warmup 1 --json >profile.json 2>profile.err; then
  python3 - profile.json <<'PY' || fail "profile over emulated links: busbw outside [0.0625, 0.125] GB/s"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert len(rows) == 8, f"expected 8 rows (2 sizes x 2 algorithms x 2 placements), got {len(rows)}"
for r in rows:
    assert r["wrong"] == 0, r
    assert 0.0625 <= r["busbw"] <= 0.125 * 1.001, r
print("profile: busbw", sorted(round(r["busbw"], 4) for r in rows))
PY
else
  fail "profile --collectives over emulated links exited non-zero: $(cat profile.err)"
fi

# 2. The same losses with and without emulated links.
losses() {  # rank 0's loss per step, as logged
  python3 -c "import json,sys; print([r['loss'] for r in map(json.loads, open(sys.argv[1])) if r.get('kind') == 'train' and r['rank'] == 0])" "$1"
}
for alg in mra mra-forward native; do
  set_alg=(--set parallel.comm.algorithm=${alg%-forward})
  [[ $alg == mra-forward ]] && set_alg+=(--set parallel.comm.overlap_forward=true)
  "$DPTRAIN" run job.toml --out "plain.$alg" "${set_alg[@]}" >"plain.$alg.log" 2>&1 ||
    fail "$alg without links: $(tail -3 "plain.$alg.log")"
  "$DPTRAIN" run job.toml --out "linked.$alg" "${set_alg[@]}" \
    --set cluster.emulate.link_gbps=5 --set cluster.emulate.link_latency_us=50 >"linked.$alg.log" 2>&1 ||
    fail "$alg over links: $(tail -3 "linked.$alg.log")"
  grep -q "emulated links of 5 Gbit/s each way and 50 us latency" "linked.$alg.log" ||
    fail "$alg: the run does not say its links are emulated"
  a=$(losses "plain.$alg/metrics.jsonl")
  b=$(losses "linked.$alg/metrics.jsonl")
  [[ -n $a && $a == "$b" ]] || fail "$alg: losses differ over emulated links"
  [[ $a != "[]" ]] || fail "$alg: no train lines"
done
[[ $(losses plain.mra/metrics.jsonl) == "$(losses plain.mra-forward/metrics.jsonl)" ]] ||
  fail "MRA's losses change when its all-gather overlaps the next forward"

# 3. Links as the cluster describes them.
"$DPTRAIN" run job.toml --out described --set cluster.emulate.as_described=true --set cluster.ranks_per_node=1 \
  --set cluster.links.rack_gbps=5 --set cluster.links.rack_latency_us=50 >described.log 2>&1 ||
  fail "as_described: $(tail -3 described.log)"
grep -q "emulated links as \[cluster\] describes: 2 rank(s) on 2 node(s) in 1 rack(s); links .*5 Gbit/s 50 us in a rack" \
  described.log || fail "as_described: the run does not name its emulated links: $(grep -m1 gradients described.log)"
[[ $(losses described/metrics.jsonl) == "$(losses plain.mra/metrics.jsonl)" ]] ||
  fail "as_described: losses differ from the run without emulated links"

if ((failures)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "emulated links: all checks passed"
