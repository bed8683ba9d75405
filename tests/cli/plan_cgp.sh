#!/usr/bin/env bash
# `dptrain plan` for [parallel] strategy = "cgp" end to end, on a 6-rank job (3 ranks per node, 10 Gbit/s
# inside a node, 1 Gbit/s between nodes, uneven speeds, a 17 MB model):
#   1. the text plan shows the job's solver (aga) and sorted side by side, both group tables, the Pareto
#      front, and a fixed [parallel.cgp] groups predicted; aga's groups stay within the nodes (the slow
#      link makes crossing it the worst choice) and aga predicts at least sorted's samples/s;
#   2. --workers 512 --json is one valid JSON object for 512 drawn ranks whose groupings meet the bound;
#   3. bad input exits 2 with one stderr line naming the key: group_count above the ranks, a staleness
#      bound no fixed group count can meet (with and without a search), --json on a data-parallel job,
#      a fixed grouping against --workers;
#   4. strategy "data" still prints the batch division and the buckets.
# Usage: bash plan_cgp.sh PATH/TO/dptrain REPO_ROOT
set -u

DPTRAIN=$(realpath "${1:?usage: plan_cgp.sh DPTRAIN REPO_ROOT}")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-plan-cgp.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
failures=0
fail() {
  echo "not ok - $*"
  failures=$((failures + 1))
}
pass() { echo "ok - $*"; }

cat >job.toml <<'EOF'
[job]
name = "cgp6"

[model]
hidden = [2048, 2048]

[data]
dataset = "synthetic"
train_samples = 256

[train]
steps = 1
global_batch = 96

[parallel]
strategy = "cgp"

[parallel.balance]
mode = "idat"

[parallel.cgp]
solver = "aga"
max_staleness = 2
exchange_every = 4
solver_seconds = 0.5

[cluster]
ranks_per_node = 3
speeds = [1, 1, 0.5, 2, 1, 0.7]
sample_rate = 2000

[cluster.links]
node_gbps = 10
rack_gbps = 1
cross_gbps = 1

[launch]
ranks = 6
EOF

# 1. The text plan.
if "$DPTRAIN" plan job.toml >plan.txt 2>plan.err; then
  missing=""
  for want in "strategy cgp" "aga's groups:" "sorted's groups:" "Pareto front of aga" "aga / sorted:" "max staleness"; do
    grep -qF "$want" plan.txt || missing+=" '$want'"
  done
  [[ -z $missing ]] && pass "text plan shows both solvers, their groups and the front" ||
    fail "text plan lacks$missing: $(cat plan.txt)"
  # aga's group table: every group's ranks within one node (0-2 or 3-5).
  groups=$(awk '/^aga.s groups:/ {on = 1; next} on && /^$/ {on = 0} on && $1 ~ /^[0-9]+$/ {print $2}' plan.txt)
  bad=0
  for g in $groups; do
    [[ $g =~ ^(0|1|2|0-1|0-2|1-2|0,2)$ || $g =~ ^(3|4|5|3-4|3-5|4-5|3,5)$ ]] || bad=1
  done
  [[ -n $groups && $bad == 0 ]] && pass "aga's groups stay inside the nodes ($(echo $groups))" ||
    fail "aga's groups cross the slow link: $(echo $groups)"
  ratio=$(sed -n 's/^aga \/ sorted: \([0-9.]*\)x.*/\1/p' plan.txt)
  python3 -c "import sys; sys.exit(0 if float('$ratio') >= 1 else 1)" 2>/dev/null &&
    pass "aga predicts at least sorted's samples/s (${ratio}x)" || fail "aga / sorted is '$ratio'"
else
  fail "plan failed: $(cat plan.err)"
fi
if "$DPTRAIN" plan job.toml --set 'parallel.cgp.groups=[0, 0, 0, 1, 1, 1]' >fixed.txt 2>fixed.err &&
  grep -q '^\[parallel.cgp\] groups: .* samples/s' fixed.txt; then
  pass "a fixed grouping is predicted"
else
  fail "fixed grouping: $(cat fixed.err) $(tail -5 fixed.txt)"
fi

# 2. 512 drawn workers as JSON.
if "$DPTRAIN" plan job.toml --workers 512 --seed 3 --json >plan.json 2>json.err; then
  if python3 - plan.json <<'PY'; then
import json, sys
plan = json.load(open(sys.argv[1]))
assert plan["ranks"] == 512 and plan["drawn"] and plan["seed"] == 3, plan["ranks"]
solvers = [s["solver"] for s in plan["solutions"]]
assert solvers == ["aga", "sorted"], solvers
for s in plan["solutions"]:
    assert len(s["grouping"]) == 512
    assert s["prediction"]["max_staleness"] <= 2 + 1e-9
    assert sum(len(g["members"]) for g in s["prediction"]["groups"]) == 512
    assert s["front"], "empty front"
assert plan["ratio_to_sorted"] >= 1 - 1e-9, plan["ratio_to_sorted"]
PY
    pass "--workers 512 --json is valid JSON with 512 ranks grouped within the bound"
  else
    fail "--workers 512 --json: unexpected content"
  fi
  python3 -c 'import json,sys; json.load(sys.stdin)' <plan.json || fail "--json is not JSON"
else
  fail "--workers 512 --json failed: $(cat json.err)"
fi

# 3. Bad input: exit 2, one stderr line naming the key.
bad() {  # NAME KEY ARGS...
  local name=$1 key=$2
  shift 2
  "$DPTRAIN" plan job.toml "$@" >bad.out 2>bad.err
  local rc=$? lines
  lines=$(wc -l <bad.err)
  if [[ $rc == 2 && $lines == 1 ]] && grep -qF -- "$key" bad.err; then
    pass "$name: exit 2, one line naming $key"
  else
    fail "$name: exit $rc, $lines line(s): $(cat bad.err)"
  fi
}
bad "group_count above the ranks" parallel.cgp.group_count --set parallel.cgp.group_count=7
bad "three groups under staleness 1" parallel.cgp.max_staleness \
  --set parallel.cgp.group_count=3 --set parallel.cgp.max_staleness=1
bad "two groups under staleness 0" parallel.cgp.max_staleness \
  --set parallel.cgp.group_count=2 --set parallel.cgp.max_staleness=0
# Two unequal groups under staleness 1: the faster group is slowed to the slower one's cycle to meet it
# (held, or waiting at the server behind the other's exchange), and its step is the shorter.
if "$DPTRAIN" plan job.toml --json --set parallel.cgp.group_count=2 --set parallel.cgp.max_staleness=1 >held.json &&
  python3 -c '
import json, sys
p = json.load(open("held.json"))["solutions"][0]["prediction"]
assert p["max_staleness"] <= 1 + 1e-9, p["max_staleness"]
a, b = sorted(p["groups"], key=lambda g: g["step_s"])
assert a["step_s"] < b["step_s"] and abs(a["cycle_s"] / b["cycle_s"] - 1) < 1e-6, p
' 2>held.err; then
  pass "two unequal groups under staleness 1: the faster one is slowed to the other's cycle to meet it"
else
  fail "two unequal groups under staleness 1: $(cat held.err)"
fi
bad "--workers with strategy data" --workers --workers 8 --set parallel.strategy=data
bad "a fixed grouping of 6 ranks for 512 workers" --workers --workers 512 --set 'parallel.cgp.groups=[0, 0, 0, 1, 1, 1]'

# 4. Strategy data: the division, the buckets and the predicted step (the blocks timed here); --json too.
if "$DPTRAIN" plan job.toml --set parallel.strategy=data >data.txt 2>data.err &&
  grep -q "^first division" data.txt && grep -q "^gradients: mra" data.txt && ! grep -q "groups" data.txt &&
  grep -Eq "^predicted by estimate's model .*: step [0-9.]+ ms .*, [0-9]+ samples/s" data.txt; then
  pass "strategy data prints the division, the buckets and the predicted step"
else
  fail "strategy data: $(cat data.err) $(cat data.txt)"
fi
if "$DPTRAIN" plan job.toml --set parallel.strategy=data --json >data.json 2>data.err &&
  python3 -c '
import json, sys
p = json.load(open("data.json"))
assert p["gradients"] == "mra" and p["buckets"] and len(p["per_rank"]) == p["ranks"], p
assert sum(r["share"] for r in p["per_rank"]) == p["global_batch"], p
assert p["predicted"]["samples_per_s"] > 0 and p["predicted"]["step_s"] > 0, p'; then
  pass "strategy data --json: shares, buckets, memory per rank and the prediction"
else
  fail "strategy data --json: $(cat data.err) $(head -c 600 data.json)"
fi

echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures failing check(s))"
((failures == 0))
