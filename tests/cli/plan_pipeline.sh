#!/usr/bin/env bash
# `dptrain plan --profile` end to end, on PipeDream's published AlexNet profile (../shared/profiles) and a
# 4-rank job whose ranks sit 2 to a node, node 1 twice as fast as node 0, 25 Gbit/s inside a node and
# 1 Gbit/s between:
#   1. the text plan shows the comparison (planner, --stages, naive, data parallel), the verdict and the
#      stage tables;
#   2. --json is one object whose plan covers the blocks in order on disjoint ranks within memory, and
#      predicts at least the naive plan's and data parallelism's samples/s; --stages is evaluated beside;
#   3. --cluster FILE plans on another cluster (6 ranks) and --workers on drawn ranks;
#   4. a memory limit the plain layout exceeds makes the plan recompute, and one nothing fits is refused;
#   5. `profile --layers --out` writes a layer profile of the job's own model that plan reads;
#   6. bad input exits 2 with one stderr line naming the problem: stages that leave blocks out, overlap,
#      run past the last block or take more devices than there are, a profile line with a negative time
#      (FILE:LINE, both formats), micro-batches that do not divide the batch, --stages for a data-parallel
#      job, --profile-batch with a dptrain profile, --layers without a job.
# Usage: bash plan_pipeline.sh PATH/TO/dptrain REPO_ROOT
set -u

DPTRAIN=$(realpath "${1:?usage: plan_pipeline.sh DPTRAIN REPO_ROOT}")
ROOT=$(realpath "${2:?usage: plan_pipeline.sh DPTRAIN REPO_ROOT}")
PROFILE="$ROOT/../shared/profiles/pipedream/alexnet_graph.txt"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-plan-pipeline.XXXXXX")
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
name = "alexnet4"

[data]
dataset = "synthetic"
train_samples = 256

[train]
steps = 1
global_batch = 128

[cluster]
ranks_per_node = 2
speeds = [1, 1, 2, 2]
memory_gb = [16, 16, 16, 16]

[cluster.links]
node_gbps = 25
rack_gbps = 1

[launch]
ranks = 4
EOF
cat >six.toml <<'EOF'
[cluster]
speeds = [1, 1, 1, 1, 0.5, 0.5]
memory_gb = [8, 8, 8, 8, 8, 8]
ranks_per_node = 3
EOF

# 1. The text plan.
if "$DPTRAIN" plan job.toml --profile "$PROFILE" --stages "0-10,11-21" >plan.txt 2>plan.err; then
  missing=""
  for want in "pipeline of 22 blocks" "plan: the planner's (exact)" "verdict: the planner's samples/s are" "planner's stages" \
    "--stages (M =" "naive" "one stage"; do
    grep -qF -- "$want" plan.txt || missing+=" '$want'"
  done
  [[ -z $missing ]] && pass "text plan shows the comparison, the verdict and the stages" ||
    fail "text plan lacks$missing: $(cat plan.txt)"
else
  fail "plan failed: $(cat plan.err)"
fi

# 2. JSON.
check_json() {  # FILE RANKS
  python3 - "$1" "$2" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); ranks = int(sys.argv[2])
assert p["blocks"] == 22 and p["ranks"] == ranks, (p["blocks"], p["ranks"])
plan = p["plan"]
assert plan["feasible"], plan
expect, used = 0, set()
for s in plan["stages"]:
    assert s["first"] == expect and s["last"] >= s["first"], s
    expect = s["last"] + 1
    assert not used & set(s["ranks"]), s["ranks"]
    used |= set(s["ranks"])
    assert sum(s["shares"]) * plan["micro_batches"] == p["global_batch"], s["shares"]
    for peak, mem in zip(s["peak_bytes"], s["memory_bytes"]):
        assert mem == 0 or peak <= mem, (peak, mem)
assert expect == 22
for other in ("naive", "one_stage"):
    if p[other]["feasible"]:
        assert plan["samples_per_s"] >= p[other]["samples_per_s"] * (1 - 1e-9), (other, p[other]["samples_per_s"])
print(plan["samples_per_s"] / p["naive"]["samples_per_s"])
PY
}
if "$DPTRAIN" plan job.toml --profile "$PROFILE" --stages "0-10,11-21" --json >plan.json 2>json.err &&
  ratio=$(check_json plan.json 4) && python3 -c '
import json; g = json.load(open("plan.json"))["given"]
assert g["stages"][0]["last"] == 10 and g["stages"][1]["first"] == 11, g'; then
  pass "--json: the plan covers the blocks on disjoint ranks within memory, ${ratio}x the naive plan"
else
  fail "--json: $(cat json.err)"
fi

# 3. Another cluster, drawn workers.
if "$DPTRAIN" plan job.toml --profile "$PROFILE" --cluster six.toml --set launch.ranks=6 --json >six.json 2>six.err &&
  check_json six.json 6 >/dev/null; then
  pass "--cluster plans on the file's 6 ranks"
else
  fail "--cluster: $(cat six.err)"
fi
if "$DPTRAIN" plan job.toml --profile "$PROFILE" --workers 64 --set 'cluster.kinds=["a","b"]' \
  --set 'cluster.kind_counts=[2,2]' --set 'cluster.kind_speeds=[1,2]' --set 'cluster.kind_memory_gb=[16,32]' \
  --set cluster.speeds=[] --set cluster.memory_gb=[] --json >drawn.json 2>drawn.err && check_json drawn.json 64 >/dev/null &&
  grep -q '"method":"heuristic"' drawn.json; then
  pass "--workers 64 plans drawn ranks with the heuristic"
else
  fail "--workers 64: $(cat drawn.err)"
fi

# 4. Memory: recomputation under a limit the plain layout exceeds; nothing fits below the parameters.
if "$DPTRAIN" plan job.toml --profile "$PROFILE" --set train.global_batch=256 --profile-batch 128 --micro-batches 2 \
  --set 'cluster.memory_gb=[1,1,1,1]' \
  --json >tight.json 2>tight.err && python3 -c '
import json; p = json.load(open("tight.json"))["plan"]
assert p["feasible"] and any(s["recompute"] for s in p["stages"]), p'; then
  pass "a tight memory limit makes stages recompute"
else
  fail "tight memory: $(cat tight.err) $(head -c 600 tight.json)"
fi

# 5. The job's own model as a profile: a small MLP on synthetic data, 5 blocks.
cat >mlp.toml <<'EOF'
[model]
hidden = [64, 64, 32, 32]

[data]
dataset = "synthetic"
train_samples = 64

[train]
steps = 1
global_batch = 32

[launch]
ranks = 2
EOF
if "$DPTRAIN" profile --layers mlp.toml --batch 8 --steps 3 --out layers.toml >layers.txt 2>layers.err &&
  grep -q '^\[profile\]' layers.toml && [[ $(grep -c '^\[\[block\]\]' layers.toml) == 5 ]] &&
  "$DPTRAIN" plan mlp.toml --profile layers.toml --set parallel.strategy=pipeline --json >mlp_plan.json 2>mlp_plan.err &&
  python3 -c '
import json; p = json.load(open("mlp_plan.json"))
assert p["blocks"] == 5 and p["profile_batch"] == 8 and p["plan"]["feasible"], p'; then
  pass "profile --layers writes a profile of the job's model (5 blocks) that plan reads"
else
  fail "profile --layers: $(cat layers.err mlp_plan.err) $(cat layers.txt)"
fi

# 6. Bad input: exit 2, one stderr line with the text.
bad() {  # NAME TEXT ARGS...
  local name=$1 text=$2
  shift 2
  "$DPTRAIN" plan job.toml "$@" >bad.out 2>bad.err
  local rc=$? lines
  lines=$(wc -l <bad.err)
  if [[ $rc == 2 && $lines == 1 ]] && grep -qF -- "$text" bad.err; then
    pass "$name: exit 2, one line ('$text')"
  else
    fail "$name: exit $rc, $lines line(s): $(cat bad.err)"
  fi
}
bad "stages leaving blocks out" "blocks 11-21 are in no stage" --profile "$PROFILE" --stages "0-10"
bad "overlapping stages" "overlaps the stage before it" --profile "$PROFILE" --stages "0-10,10-21"
bad "a stage past the last block" "runs past the last block, 21" --profile "$PROFILE" --stages "0-10,11-30"
bad "more stages than devices" "more devices than the cluster's 4" --profile "$PROFILE" --stages "0-1,2-3,4-5,6-7,8-21"
bad "a rank in two stages" "rank 1 is in two stages" --profile "$PROFILE" --stages "0-10@0+1,11-21@1"
bad "nothing fits" "no partition of the 22 blocks over the 1 device fits" --profile "$PROFILE" \
  --set launch.ranks=1 --set cluster.ranks_per_node=1 --set 'cluster.speeds=[1]' --set 'cluster.memory_gb=[0.7]'
bad "a block fitting no device" "alone needs" --profile "$PROFILE" --set 'cluster.memory_gb=[0.4,0.4,0.4,0.4]'
sed 's/backward_compute_time=7.197/backward_compute_time=-7.197/' "$PROFILE" >negative.txt
grep -q -- '-7.197' negative.txt || fail "the test's profile edit did not apply"
line=$(grep -n -- '-7.197' negative.txt | head -1 | cut -d: -f1)
bad "a negative time in the profile" "negative.txt:$line:" --profile negative.txt
bad "micro-batches not dividing the batch" "do not divide the global batch of 128" --profile "$PROFILE" --micro-batches 3
bad "--stages for a data-parallel job" "add --set parallel.strategy=pipeline" --stages "0-3"
bad "a missing cluster file" "six-missing.toml" --profile "$PROFILE" --cluster six-missing.toml
bad "--profile-batch with a dptrain profile" "is for PipeDream's profiles" --profile layers.toml --profile-batch 4 \
  --set parallel.strategy=pipeline
{ cat layers.toml; echo "shares_weights_with = 0"; } >tied.toml
bad "a head sharing the embedding's weights" "shares its weights with block 0" --profile tied.toml \
  --set parallel.strategy=pipeline
sed '0,/backward_ms = /s/backward_ms = /backward_ms = -/' layers.toml >negative.toml
line=$(grep -n 'backward_ms = -' negative.toml | head -1 | cut -d: -f1)
bad "a negative time in a dptrain profile" "negative.toml:$line:" --profile negative.toml
sed '0,/forward_fixed_ms = /s/forward_fixed_ms = .*/forward_fixed_ms = 1e9/' layers.toml >fixed.toml
line=$(grep -n 'forward_fixed_ms = 1e9' fixed.toml | head -1 | cut -d: -f1)
bad "a fixed time above its time" "fixed.toml:$line:" --profile fixed.toml
"$DPTRAIN" profile --layers >bad.out 2>bad.err
[[ $? == 2 && $(wc -l <bad.err) == 1 ]] && grep -q "needs a job file" bad.err && pass "--layers without a job: exit 2" ||
  fail "--layers without a job: $(cat bad.err)"

echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures failing check(s))"
((failures == 0))
