#!/usr/bin/env bash
# Sizing a model this machine cannot hold (issue 27, "Sizing from shapes"): estimate, profile --layers
# --device and plan read the model's block shapes and never build it. A 64 B-parameter GPT estimated on
# H200s (each rank's limit the H200's 141 GB, one GPU per rank in the request); a 175 B one profiled from
# the H200's rates and planned as a pipeline on 64 H200s from that profile, refused on 8 with the smallest
# pipeline that fits named, and under data parallelism `estimate --fit` and `plan` name that pipeline;
# timing its blocks here is refused with a hint. No wall times are asserted.
# Usage: bash estimate_sizing.sh PATH/TO/dptrain REPO_ROOT
set -u
DPTRAIN=$(realpath "$1")
ROOT=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
failures=0
fail() { echo "not ok - $*"; failures=$((failures + 1)); }
G64=(--set model.layers=80 --set model.width=8192 --set model.heads=64)
G175=(--set model.layers=96 --set model.width=12288 --set model.heads=96 --set model.tied_head=false
      --set train.global_batch=512)

# 1. The 64 B GPT on H200s, memory only.
if "$DPTRAIN" estimate "$ROOT/configs/gpt.toml" "${G64[@]}" --device h200 --no-timing --json >"$TMP/e64.json" 2>"$TMP/e64.err"; then
  $PY - "$TMP/e64.json" <<'PY' || fail "64 B GPT estimate: rows or request not the H200's"
import json, sys
e = json.load(open(sys.argv[1]))
assert "64435363840 parameters" in e["model"], e["model"]
assert all(r["memory_limit_bytes"] == 141e9 for r in e["ranks"]), [r["memory_limit_bytes"] for r in e["ranks"]]
assert all(not r["fits"] for r in e["ranks"])  # 258 GB of parameters alone
assert e["request"]["gpus_per_rank"] == 1
PY
else
  fail "64 B GPT estimate --device h200 --no-timing refused: $(head -2 "$TMP/e64.err")"
fi

# 2. Timing the 64 B GPT's blocks here would build it: refused, pointing at --device and --profile.
"$DPTRAIN" estimate "$ROOT/configs/gpt.toml" "${G64[@]}" >"$TMP/here.out" 2>"$TMP/here.err"
rc=$?
if ((rc != 2)) || ! grep -q -- "--profile" "$TMP/here.err" || ! grep -q -- "--device NAME" "$TMP/here.err" ||
   (($(wc -l <"$TMP/here.err") != 1)); then
  fail "timing a model too large for this machine: exit $rc, $(head -2 "$TMP/here.err")"
fi

# 3. The 175 B GPT: a layer profile from the H200's rates, then a pipeline on 64 H200s from it.
if "$DPTRAIN" profile --layers "$ROOT/configs/gpt.toml" "${G175[@]}" --device h200 --batch 8 --out "$TMP/h200.toml" \
     >"$TMP/profile.out" 2>"$TMP/profile.err"; then
  grep -q "from the device's peak rates" "$TMP/profile.out" || fail "profile --layers --device: no roofline header"
  grep -q '^ *97 head' "$TMP/profile.out" || fail "profile --layers --device: not 98 blocks"
  if "$DPTRAIN" plan "$ROOT/configs/gpt.toml" "${G175[@]}" --set launch.ranks=64 --profile "$TMP/h200.toml" \
       --set parallel.strategy=pipeline --device h200 --json >"$TMP/plan.json" 2>"$TMP/plan.err"; then
    $PY - "$TMP/plan.json" <<'PY' || fail "plan of the 175 B GPT on 64 H200s: not a fitting plan"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["ranks"] == 64 and p["blocks"] == 98, (p["ranks"], p["blocks"])
assert p["plan"]["feasible"], p["plan"]["method"]
PY
  else
    fail "plan of the 175 B GPT on 64 H200s refused: $(head -2 "$TMP/plan.err")"
  fi
  # On 8 H200s nothing fits (2.78 TB of training state): refused in one line naming the smallest pipeline.
  "$DPTRAIN" plan "$ROOT/configs/gpt.toml" "${G175[@]}" --set launch.ranks=8 --profile "$TMP/h200.toml" \
    --set parallel.strategy=pipeline --device h200 >"$TMP/small.out" 2>"$TMP/small.err"
  rc=$?
  if ((rc != 2)) || (($(wc -l <"$TMP/small.err") != 1)) ||
     ! grep -Eq "the smallest pipeline that fits takes [0-9]+ devices like rank 0 \(141 GB\): [0-9]+ stages" "$TMP/small.err"; then
    fail "plan of the 175 B GPT on 8 H200s: exit $rc, $(head -2 "$TMP/small.err")"
  fi
else
  fail "profile --layers --device h200 of the 175 B GPT refused: $(head -2 "$TMP/profile.err")"
fi

# 4. The 175 B GPT under data parallelism fits no number of H200s (each would hold the whole 2.78 TB of
#    training state): --fit names the smallest pipeline that does, at least the 20 H200s its state needs.
if "$DPTRAIN" estimate "$ROOT/configs/gpt.toml" "${G175[@]}" --device h200 --fit --json >"$TMP/fit.json" \
     2>"$TMP/fit.err"; then
  $PY - "$TMP/fit.json" <<'PY' || fail "175 B GPT estimate --fit: no smallest pipeline"
import json, sys
f = json.load(open(sys.argv[1]))["fit"]
assert f["devices"] == 0, f
assert 20 <= f["pipeline_devices"] <= 64, f
assert f["pipeline_note"].startswith(f"{f['pipeline_devices']} h200: ") and "stages" in f["pipeline_note"], f
PY
else
  fail "175 B GPT estimate --fit refused: $(head -2 "$TMP/fit.err")"
fi

# 5. A pipeline estimate leaving ranks out lists them as idle.
"$DPTRAIN" estimate "$ROOT/configs/gpt.toml" --set model.tied_head=false --set parallel.strategy=pipeline \
  --set 'parallel.pipeline.stages="0-5"' --set parallel.pipeline.micro_batches=8 --set launch.ranks=3 --no-timing \
  >"$TMP/idle.out" 2>&1 || fail "pipeline estimate of one stage on 3 ranks: $(head -2 "$TMP/idle.out")"
[[ $(grep -c "idle (not in the plan)" "$TMP/idle.out") == 2 ]] || fail "ranks left out not listed as idle: $(cat "$TMP/idle.out")"

# 6. `plan` of a data-parallel job checks each rank's buffers against its device: the 175 B GPT on 64 H200s
#    is refused in one line naming rank 0, its buffers and the smallest pipeline that fits (sized from
#    shapes alone: no rate named); the quickstart GPT fits, each rank's line against the H200's memory.
"$DPTRAIN" plan "$ROOT/configs/gpt.toml" "${G175[@]}" --set launch.ranks=64 --device h200 >"$TMP/dplan.out" \
  2>"$TMP/dplan.err"
rc=$?
if ((rc != 2)) || (($(wc -l <"$TMP/dplan.err") != 1)) ||
   ! grep -q "rank 0 does not fit: data parallelism needs 1558.6 GB" "$TMP/dplan.err" ||
   ! grep -Eq "the smallest pipeline that fits takes [0-9]+ devices like rank 0 \(141 GB\): [0-9]+ stages" \
     "$TMP/dplan.err" || grep -q "samples/s" "$TMP/dplan.err"; then
  fail "plan of the 175 B GPT as data on 64 H200s: exit $rc, $(head -2 "$TMP/dplan.err")"
fi
if "$DPTRAIN" plan "$ROOT/configs/gpt.toml" --device h200 >"$TMP/fits.out" 2>"$TMP/fits.err"; then
  rows=$(grep -Ec "^ +[0-9]+ +[0-9.]+ +[0-9.]+ +141000.0$" "$TMP/fits.out")
  [[ $rows == 2 ]] || fail "plan of the GPT as data on H200s: $rows memory row(s) against 141 GB: $(tail -4 "$TMP/fits.out")"
else
  fail "plan of the GPT as data on H200s refused: $(head -2 "$TMP/fits.err")"
fi

echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures check(s) off)"
((failures == 0))
