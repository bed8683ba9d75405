#!/usr/bin/env bash
# [launch] wait_timeout (issue 16): no wait blocks forever. A 3-rank job with wait_timeout = 3:
#  - a rank stopped with SIGSTOP: rank 0 ends the job (exit 124) naming it, silent, and what the others
#    wait in; the launcher's line follows; no process of the job is left;
#  - rank 0 itself stopped: another rank ends the job after the timeout + 5 s, saying rank 0 may be the
#    one stopped;
#  - a healthy run with the same timeout (evaluations and checkpoints included) finishes.
# Usage: bash wait_timeout.sh PATH/TO/dptrain REPO_ROOT
set -u
source "$(dirname "$0")/lib/tap.sh"
trap 'pkill -KILL -f -- "--out $TMP/" 2>/dev/null; rm -rf "$TMP"' EXIT
cat >"$TMP/job.toml" <<'TOML'
[data]
dataset = "synthetic"
train_samples = 4096
[model]
hidden = [64]
[train]
steps = 1000000
global_batch = 64
eval_every = 200
[log]
progress = "none"
trace = false
[checkpoint]
every = 100
[launch]
ranks = 3
wait_timeout = 3
TOML
rank_pid() {  # the pid of rank $2 of the run in $1
  local p
  for p in $(pgrep -f -- "--out $1"); do
    grep -qz "^OMPI_COMM_WORLD_RANK=$2\$" "/proc/$p/environ" 2>/dev/null && { echo "$p"; return; }
  done
}
for victim in 1 0; do
  out=$TMP/run-$victim
  setsid "$DPTRAIN" run "$TMP/job.toml" --out "$out" >"$out.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do grep -q '"kind":"train"' "$out/metrics.jsonl" 2>/dev/null && break; sleep 0.1; done
  sleep 1
  kill -STOP "$(rank_pid "$out" "$victim")"
  t0=$SECONDS
  status=running
  for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || { wait "$pid"; status=$?; break; }; sleep 0.1; done
  took=$((SECONDS - t0))
  if [[ $victim == 1 ]]; then
    # Ranks 0 and 2 wait in one activity or two ('all-gather', 'reduce-scatter'): either is named.
    want="dptrain: rank 0: no rank made progress for [0-9]* s (\[launch\] wait_timeout): waiting for rank 1 ([^)]*), silent for [0-9]* s (stopped, or its host unreachable); rank(s) [02][, 02]* in '[^']*'"
  else
    want="dptrain: rank [12] ([^)]*): no progress for [0-9]* s in '[^']*' (\[launch\] wait_timeout 3 s); rank 0, which watches the job, has not ended it: it may be the one stopped"
  fi
  [[ $status == 124 ]] && grep -q "$want" "$out.log" &&
    grep -q "dptrain: the run ended: it made no progress for \[launch\] wait_timeout (exit status 124); its newest checkpoint is" "$out.log" &&
    ok "rank $victim stopped: exit 124 after $took s, $(grep -m1 'no .*progress' "$out.log" | cut -c1-150)..." ||
    not_ok "rank $victim stopped" "status $status after $took s: $(grep dptrain: "$out.log" | tail -3)"
  sleep 1
  left=$(pgrep -af -- "--out $out")
  [[ -z $left ]] && ok "rank $victim stopped: no process of the job left" || not_ok "rank $victim: processes left" "$left"
done
"$DPTRAIN" run "$TMP/job.toml" --out "$TMP/healthy" --set train.steps=600 >"$TMP/healthy.log" 2>&1 &&
  [[ -s $TMP/healthy/summary.json ]] && ok "a healthy run with wait_timeout 3 s finishes" ||
  not_ok "healthy run" "$(tail -3 "$TMP/healthy.log")"
finish
