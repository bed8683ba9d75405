#!/usr/bin/env bash
# Issue 15: "dptrain run writes trace.json in the Chrome trace event format: one track per rank with
# forward, backward, each communication bucket, the update, waits, pipeline sends and receives, CGP
# exchanges; viewable in Perfetto. A test checks the format (valid JSON, well-nested complete events per
# track, timestamps monotone per track)."
# Usage: bash trace_format.sh PATH/TO/dptrain REPO_ROOT
#
# Short synthetic jobs under each strategy, every trace checked by trace_check.py (beside this script):
#   1. data, MRA over several buckets overlapping backward, 2 ranks: compute and comm tracks on every
#      rank; step, forward, backward, reduce-scatter, update, all-gather, the waits; the window holds
#      exactly trace_steps steps, none before trace_first;
#   2. data, I-DAT with plain native allreduce, 4 ranks: the wait for the slowest rank, allreduce, update;
#      the same with overlap_forward (all-gathers into the next forward);
#   3. cgp, groups [0,0,1,1], 4 ranks: exchanges (push, pull, the group's all-gather) on every rank, the
#      server's track and its applied updates on rank 0; the solver's groups: regrouping decisions;
#   4. pipeline, two stages on 2 ranks: sends and receives of activations and gradients where they belong;
#   5. a resumed run replaces trace.json with its own (steps after the resume point only); trace = false
#      writes none;
#   6. the checker itself fails on a trace with a partial overlap, on one out of time order, on a missing
#      thread name and on a missing expected event (so it cannot pass vacuously).
set -u

DPTRAIN=$(realpath "${1:?usage: trace_format.sh DPTRAIN REPO_ROOT}")
CHECK="$(dirname "$(realpath "$0")")/trace_check.py"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-trace.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
export OMPI_MCA_rmaps_base_oversubscribe=1

fail() {
  echo "not ok - $1"
  for f in "${@:2}"; do [[ -f $f ]] && sed 's/^/#   /' "$f" | tail -20; done
  exit 1
}

# A small synthetic MLP job; $1 ranks, then extra TOML appended.
write_job() {
  cat >"$1.toml" <<EOF
[job]
name = "$1"
seed = 5

[model]
hidden = [256, 128]

[data]
dataset = "synthetic"
train_samples = 2048

[train]
steps = 8
global_batch = 64
threads = 1

[launch]
ranks = $2

[checkpoint]
enabled = false

[log]
progress = "plain"
trace_first = 2
trace_steps = 4
$3
EOF
}

run() {  # run NAME [more dptrain arguments]: into out-NAME
  local name=$1
  shift
  "$DPTRAIN" run "$name.toml" --out "out-$name" "$@" >"$name.log" 2>&1 || fail "dptrain run $name" "$name.log"
}

check() {  # check NAME RANKS [checker arguments]
  local name=$1 ranks=$2
  shift 2
  [[ -f out-$name/trace.json ]] || fail "$name: no trace.json" "$name.log"
  /usr/bin/python3 "$CHECK" "out-$name/trace.json" --ranks "$ranks" "$@" >"$name.check" 2>&1 ||
    fail "$name: trace.json" "$name.check"
  echo "ok - $name: trace.json ($(grep -o '"ph":"X"' "out-$name/trace.json" | wc -l) complete events)"
}

# 1. MRA: buckets of 0.1 MB (the MLP's 0.2 M parameters make several), overlapping backward.
write_job mra 2 '
[parallel.comm]
algorithm = "mra"
bucket_mb = 0.2
first_bucket_mb = 0.1'
run mra
check mra 2 --track compute --track comm --steps 4 --min-step 2 \
  --on-every step --on-every forward --on-every backward --on-every reduce-scatter --on-every update \
  --on-every all-gather --on-every "wait for gradient sums" --on-every "exchange step records"
grep -q "^trace: .* events of steps 2-5" mra.log || fail "mra: the log does not name the trace" mra.log
# ... with the all-gathers into the next forward (its waits for parameters are recorded only when it
#     does wait, which depends on timing: not asserted).
write_job forward 2 '
[parallel.comm]
algorithm = "mra"
bucket_mb = 0.2
first_bucket_mb = 0.1
overlap_forward = true'
run forward
check forward 2 --track comm --on-every all-gather --on-every update --on-every forward

# 2. I-DAT with the transport's allreduce after backward.
write_job idat 4 '
[parallel.comm]
algorithm = "native"

[parallel.balance]
mode = "idat"'
run idat
check idat 4 --track compute --steps 4 \
  --on-every step --on-every forward --on-every backward --on-every "wait for slowest rank" \
  --on-every allreduce --on-every update

# 3. CGP: two fixed groups of two, exchanging every 2 local steps.
write_job cgp 4 '
[parallel]
strategy = "cgp"

[parallel.comm]
bucket_mb = 0.2
first_bucket_mb = 0.1

[parallel.cgp]
groups = [0, 0, 1, 1]
exchange_every = 2'
run cgp
check cgp 4 --track compute --track comm --track-on 0 server \
  --on-every step --on-every forward --on-every backward --on-every "cgp exchange" --on-every "cgp push" \
  --on-every "cgp pull (wait for server)" --on-every "group all-gather" --on 0 "server applies update"

# ... and the solver's groups, reconsidered every 3 steps (every local step traced from the first).
write_job regroup 4 '
[parallel]
strategy = "cgp"

[parallel.cgp]
exchange_every = 2
regroup_every = 3
max_staleness = 4'
sed -i 's/^trace_first = 2$/trace_first = 1/; s/^trace_steps = 4$/trace_steps = 8/' regroup.toml
run regroup
check regroup 4 --track-on 0 server --on 0 "regroup decision" --on 0 "server applies update"

# 4. Pipeline: two stages (the MLP's blocks 0-1 and 2), 4 micro-batches.
write_job pipeline 2 '
[parallel]
strategy = "pipeline"

[parallel.pipeline]
stages = "0-1,2"
micro_batches = 4'
run pipeline
check pipeline 2 --track compute --steps 4 --on-every step --on-every forward --on-every backward \
  --on 0 "send activations" --on 0 "wait recv gradients" --on 0 "post recv gradients" \
  --on 1 "wait recv activations" --on 1 "send gradients" --on 1 "post recv activations"

# 5. Resume: 5 steps (a checkpoint after step 5), then resumed to 8; the new trace holds steps 7-8 only (the
#    second invocation's steps 2-3). Then trace = false: no file.
write_job resume 2 ''
sed -i 's/^enabled = false$/enabled = true\nevery = 5/' resume.toml
run resume --set train.steps=5
check resume 2 --steps 4 --min-step 2
run resume --resume
check resume 2 --steps 2 --min-step 7
write_job off 2 '' && sed -i 's/^trace_first = 2$/trace = false/' off.toml
run off
[[ ! -e out-off/trace.json ]] || fail "trace = false wrote trace.json"
echo "ok - trace = false writes no trace.json"

# 6. The checker fails on broken traces.
cat >break.py <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    t = json.load(f)
ev = t["traceEvents"]
exec(sys.argv[2])
json.dump(t, sys.stdout)
EOF
broken() {  # broken WHAT PYTHON-EDIT EXPECTED: edits the mra trace's events (list `ev`); the checker must fail
  /usr/bin/python3 break.py out-mra/trace.json "$2" >"broken.json" || fail "break.py: $1"
  if /usr/bin/python3 "$CHECK" broken.json --ranks 2 --on-every forward >broken.check 2>&1; then
    fail "the checker accepted a trace with $1"
  fi
  grep -q "$3" broken.check || fail "the checker rejected a trace with $1, but not for it" broken.check
  echo "ok - the checker rejects $1: $(head -1 broken.check)"
}
# A forward that ends after the step enclosing it.
broken "a partial overlap" '
s = next(e for e in ev if e.get("name") == "step" and e["pid"] == 0)
f = next(e for e in ev if e.get("name") == "forward" and e["pid"] == 0 and e["ts"] >= s["ts"])
f["dur"] = s["ts"] + s["dur"] - f["ts"] + 5' "partially"
broken "time out of order" '
xs = [i for i, e in enumerate(ev) if e["ph"] == "X" and e["pid"] == 1 and e["tid"] == 0]
ev[xs[0]], ev[xs[-1]] = ev[xs[-1]], ev[xs[0]]' "starts before the previous event"
broken "a missing thread name" '
t["traceEvents"] = [e for e in ev if not (e.get("name") == "thread_name" and e["pid"] == 1 and e["tid"] == 1)]' "no thread_name"
broken "a missing forward" '
t["traceEvents"] = [e for e in ev if not (e.get("name") == "forward" and e["pid"] == 1)]' "no .forward. event on rank"
broken "a negative duration" '
next(e for e in ev if e["ph"] == "X")["dur"] = -1' "negative duration"
echo "ok - trace_format"
