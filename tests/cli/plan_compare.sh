#!/usr/bin/env bash
# `dptrain plan --compare` end to end on the mixed lab cluster of issue 29 (two fast and two old devices,
# 10 Gbit/s inside a rack, 1 Gbit/s between the two racks), the GPT untied, step times from a layer
# profile written once (so every command reads the same times):
#   1. the table lists the seven candidates (CGP of pipelines with a group per node the seventh), marks a winner and says why; --json is one object whose rows
#      are ranked by time;
#   2. one prediction per strategy: for every row, `dptrain estimate --json` and `dptrain plan --json` (the
#      strategy's own view: division and buckets, CGP's groups, the pipeline's stages) of the job with the
#      row's overrides give the same samples/s to the printed digits, and plan's text prints it;
#   3. --compare --workers 4,16: every strategy predicted and simulated at both sizes (data parallelism's
#      simulation within a third of the model; at the job's own 4 ranks its own cluster, so the
#      predictions are --compare's), --plot an SVG chart with a line per strategy;
#   4. bad input exits 2 with one stderr line: --compare on a one-rank job, with --stages, on a cluster file
#      whose sizes disagree with the ranks; a pipeline's --stages for a data-parallel job; a list of
#      --workers without --compare; --plot without --workers.
# Usage: bash plan_compare.sh PATH/TO/dptrain REPO_ROOT
set -u
DPTRAIN=$(realpath "${1:?usage: plan_compare.sh DPTRAIN REPO_ROOT}")
ROOT=$(realpath "$2")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-plan-compare.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
failures=0
fail() { echo "not ok - $*"; failures=$((failures + 1)); }
pass() { echo "ok - $*"; }

cat >lab.toml <<'TOML'
[cluster]
kinds = ["fast", "old"]
kind_counts = [2, 2]
kind_speeds = [1.0, 0.4]
kind_memory_gb = [24, 8]
ranks_per_node = 1
nodes_per_rack = 2
[cluster.links]
rack_gbps = 10
cross_gbps = 1
TOML
JOB="$ROOT/configs/gpt.toml"
SETS=(--set model.tied_head=false --set model.layers=2 --set train.steps=60 --set launch.ranks=4)
"$DPTRAIN" profile --layers "$JOB" "${SETS[@]}" --out profile.toml >profile.log 2>&1 ||
  { fail "profile --layers: $(tail -2 profile.log)"; echo "1..0"; exit 1; }

# 1. The table and the JSON.
if "$DPTRAIN" plan "$JOB" "${SETS[@]}" --cluster lab.toml --profile profile.toml --compare >table.txt 2>err.txt; then
  rows=$(grep -cE '^  +[* ] +(data|CGP|CGP of pipelines|pipeline),' table.txt)
  [[ $rows == 7 ]] || fail "the table has $rows candidate rows, not 7: $(cat table.txt)"
  grep -qE '^ +\* ' table.txt || fail "no winner marked: $(cat table.txt)"
  grep -q '^why: .* is predicted fastest' table.txt || fail "no why line: $(cat table.txt)"
  grep -q '^to run it: --set parallel.strategy=' table.txt || fail "no command for the winner"
  pass "plan --compare prints seven candidates, the winner and why"
else
  fail "plan --compare exited $?: $(cat err.txt)"
fi
"$DPTRAIN" plan "$JOB" "${SETS[@]}" --cluster lab.toml --profile profile.toml --compare --json >cmp.json 2>err.txt ||
  fail "plan --compare --json exited $?: $(cat err.txt)"
python3 - cmp.json <<'PY' || fail "--json is not ranked rows with a winner"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
assert len(rows) == 7 and d["winner"] == 0, d
times = [r["time_s"] for r in rows if r["planned"] and r["fits"]]
assert times == sorted(times), times
PY

# 2. One prediction per strategy: estimate of each row's job prints the same samples/s.
while IFS=$'\t' read -r name want sets; do
  read -ra extra <<<"$sets"
  got=$("$DPTRAIN" estimate "$JOB" "${SETS[@]}" --cluster lab.toml --profile profile.toml "${extra[@]}" --json \
        2>err.txt | python3 -c 'import json, sys; print("%.6g" % json.load(sys.stdin)["samples_per_s"])') ||
    { fail "estimate for '$name' failed: $(cat err.txt)"; continue; }
  [[ $got == "$want" ]] && pass "$name: estimate and --compare agree ($got samples/s)" ||
    fail "$name: estimate says $got samples/s, --compare $want"
  got=$("$DPTRAIN" plan "$JOB" "${SETS[@]}" --cluster lab.toml --profile profile.toml "${extra[@]}" --json \
        2>err.txt | python3 -c 'import json, sys; print("%.6g" % json.load(sys.stdin)["predicted"]["samples_per_s"])') ||
    { fail "plan --json for '$name' failed: $(cat err.txt)"; continue; }
  [[ $got == "$want" ]] && pass "$name: plan and --compare agree ($got samples/s)" ||
    fail "$name: plan says $got samples/s, --compare $want"
  "$DPTRAIN" plan "$JOB" "${SETS[@]}" --cluster lab.toml --profile profile.toml "${extra[@]}" >plan.txt 2>err.txt &&
    grep -q "^predicted by estimate's model .*, $(printf %.0f "$want") samples/s" plan.txt ||
    fail "$name: plan's text does not end with the prediction: $(tail -3 plan.txt) $(cat err.txt)"
done < <(python3 - cmp.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r["planned"]:
        print(r["name"], "%.6g" % r["samples_per_s"], " ".join("--set " + s for s in r["sets"]), sep="\t")
PY
)

# 3. How each strategy scales: --workers N[,N...] predicts and simulates every candidate at each size;
#    --plot writes an SVG chart with one line per strategy.
if "$DPTRAIN" plan "$JOB" "${SETS[@]}" --cluster lab.toml --profile profile.toml --compare --workers 4,16 --json \
     --plot scale.svg >scale.json 2>err.txt &&
  python3 - scale.json scale.svg cmp.json <<'PY'
import json, sys, xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
points = d["points"]
assert len(points) == 14 and {p["workers"] for p in points} == {4, 16}, points
# At the job's own 4 ranks the cluster is the job's, not one drawn from its kinds: the predictions are
# --compare's own (a draw shuffles fast and old devices across the racks).
compared = {r["name"]: r["samples_per_s"] for r in json.load(open(sys.argv[3]))["rows"] if r["planned"]}
for p in points:
    if p["workers"] == 4:
        assert "%.6g" % p["predicted_samples_per_s"] == "%.6g" % compared[p["strategy"]], (p, compared)
for p in points:
    assert p["planned"] and p["predicted_samples_per_s"] > 0, p
    assert p["simulated_samples_per_s"] > 0 and p["error"] is None, p
    # The simulator replays the model's inputs: for data parallelism (no queue, no schedule for the closed
    # form to approximate) within a third of it, whatever this machine's step times.
    if p["strategy"].startswith("data"):
        assert 0.67 < p["simulated_samples_per_s"] / p["predicted_samples_per_s"] < 1.5, p
lines = [e for e in ET.parse(sys.argv[2]).iter() if e.tag.endswith("polyline")]
assert len(lines) == 7, len(lines)
PY
then
  pass "--compare --workers 4,16: every strategy predicted and simulated at both sizes; --plot draws seven lines"
else
  fail "--compare --workers: $(cat err.txt) $(head -c 400 scale.json)"
fi

# 4. Bad input: one line, exit 2.
bad() {
  local what=$1 want=$2; shift 2
  "$DPTRAIN" plan "$@" >out.txt 2>err.txt
  local rc=$?
  if [[ $rc == 2 && $(wc -l <err.txt) == 1 ]] && grep -q -- "$want" err.txt; then pass "$what"
  else fail "$what: exit $rc, stderr: $(cat err.txt)"; fi
}
bad "--compare on one rank" "nothing to compare" "$JOB" "${SETS[@]}" --set launch.ranks=1 --profile profile.toml --compare
bad "a list of --workers without --compare" "--workers" "$JOB" "${SETS[@]}" --profile profile.toml --workers 4,8
bad "--plot without --workers" "--plot" "$JOB" "${SETS[@]}" --profile profile.toml --compare --plot x.svg
bad "--compare with --stages" "--stages" "$JOB" "${SETS[@]}" --profile profile.toml --compare --stages 0-3,4-7
bad "a cluster file of 4 ranks for 3" "kind_counts: adds up to 4 ranks, but launch.ranks is 3" \
  "$JOB" "${SETS[@]}" --set launch.ranks=3 --cluster lab.toml --profile profile.toml --compare
bad "--stages for a data-parallel job" "strategy is data.*parallel.strategy=pipeline" \
  "$JOB" "${SETS[@]}" --profile profile.toml --stages 0-1,2-3

[[ $failures == 0 ]] && echo "all passed" || echo "$failures failure(s)"
exit $((failures > 0))
