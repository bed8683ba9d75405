#!/usr/bin/env bash
# [parallel] strategy = "auto" end to end on the quickstart job (2 ranks, 30 steps):
#   1. the run's first line names the choice; strategy.txt (the comparison) and strategy.toml (the
#      choice) are in the run folder, and the ranks trained under the chosen strategy (its job.toml);
#   2. --resume keeps the recorded choice: strategy.toml is changed by hand to another strategy, and the
#      resumed run trains under that one, not a new comparison's;
#   3. bad input exits 2 with one stderr line and makes no folder: a model that fits no strategy (the
#      line names the smallest pipeline that would, or that none does), estimate of an auto job, ranks started by mpirun
#      directly, an unreadable strategy.toml on --resume.
# Usage: bash strategy_auto.sh PATH/TO/dptrain REPO_ROOT
set -u
DPTRAIN=$(realpath "${1:?usage: strategy_auto.sh DPTRAIN REPO_ROOT}")
ROOT=$(realpath "$2")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-auto.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failures=0
fail() { echo "not ok - $*"; failures=$((failures + 1)); }
pass() { echo "ok - $*"; }
JOB="$ROOT/configs/quickstart.toml"
AUTO=(--set parallel.strategy=auto --set train.steps=30 --set log.progress=plain --set train.threads=1)

# 1. The choice, named first and recorded.
if "$DPTRAIN" run "$JOB" --out run "${AUTO[@]}" >out.txt 2>err.txt; then
  first=$(head -1 out.txt)
  [[ $first == "dptrain: strategy auto: "*" on 2 rank(s), predicted "*" samples/s, bound by "* ]] ||
    fail "the first line does not name the choice: $first"
  [[ -s run/strategy.txt && -s run/strategy.toml ]] || fail "strategy.txt or strategy.toml missing: $(ls run)"
  chosen=$(sed -n "s/^sets = \[ 'parallel.strategy=\([a-z]*\)'.*/\1/p" run/strategy.toml)
  trained=$(sed -n "s/^strategy = '\(.*\)'/\1/p" run/job.toml)
  [[ -n $chosen && $chosen == "$trained" ]] || fail "strategy.toml chose '$chosen', the ranks trained '$trained'"
  [[ $first == *"$(sed -n 's/^chosen = "\(.*\)"/\1/p' run/strategy.toml)"* ]] || fail "first line and strategy.toml differ"
  pass "auto chose $chosen, named it first and recorded it"
else
  fail "run with strategy auto exited $?: $(tail -3 err.txt)"
fi

# 2. --resume keeps the recorded choice, whatever a new comparison would say.
other=pipeline
[[ ${chosen:-} == pipeline ]] && other=data
cat >run/strategy.toml <<TOML
chosen = "recorded by hand"
sets = [ 'parallel.strategy=$other' ]
ranks = 2
TOML
if "$DPTRAIN" run "$JOB" --out run --resume "${AUTO[@]}" --set train.steps=40 >out2.txt 2>err.txt; then
  grep -q "^dptrain: strategy auto: recorded by hand, as this run chose it before" out2.txt ||
    fail "resume did not say it kept the choice: $(head -1 out2.txt)"
  [[ $(sed -n "s/^strategy = '\(.*\)'/\1/p" run/job.toml) == "$other" ]] || fail "resume did not train under $other"
  grep -q '"kind":"train","step":40' run/metrics.jsonl || fail "the resumed run did not reach step 40"
  pass "--resume kept the recorded choice ($other)"
else
  fail "resume exited $?: $(tail -3 err.txt)"
fi

# 3. Bad input: one line, exit 2, no folder.
bad() {
  local what=$1 want=$2 folder=$3; shift 3
  "$@" >out.txt 2>err.txt
  local rc=$?
  local lines
  lines=$(grep -c '^dptrain: ' err.txt)
  if [[ $rc == 2 && $lines == 1 ]] && grep -qE -- "$want" err.txt && [[ -z $folder || ! -e $folder ]]; then
    pass "$what"
  else
    fail "$what: exit $rc, stderr: $(cat err.txt)"
  fi
}
bad "auto with a model that fits no strategy" 'finds no strategy that fits.*(smallest pipeline|no pipeline fits)' none \
  "$DPTRAIN" run "$ROOT/configs/gpt.toml" --out none --set parallel.strategy=auto --set model.tied_head=false \
  --set 'cluster.memory_gb=[0.0001,0.0001]'
bad "estimate of an auto job" '"auto" is chosen when the run starts' "" \
  "$DPTRAIN" estimate "$JOB" --set parallel.strategy=auto --no-timing
bad "ranks started directly with auto" "chosen by dptrain run's launcher" direct \
  mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -np 2 "$DPTRAIN" run "$JOB" --out direct \
  --set parallel.strategy=auto
echo garbage >run/strategy.toml
bad "an unreadable strategy.toml on --resume" 'strategy.toml: error: cannot be read' "" \
  "$DPTRAIN" run "$JOB" --out run --resume "${AUTO[@]}" --set train.steps=50

[[ $failures == 0 ]] && echo "all passed" || echo "$failures failure(s)"
exit $((failures > 0))
