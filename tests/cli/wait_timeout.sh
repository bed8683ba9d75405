#!/usr/bin/env bash
# [launch] wait_timeout (issue 16): no wait blocks forever. A 3-rank job with wait_timeout = 3:
#  - a rank stopped with SIGSTOP: rank 0 ends the job (exit 124) naming it, silent, and what the others
#    wait in; the launcher's line follows; no process of the job is left;
#  - rank 0 itself stopped: another rank ends the job after the timeout + 5 s, saying rank 0 may be the
#    one stopped;
#  - a rank stopped before MPI's start (issue 28: a node frozen as the ranks start): rank 0's guard ends
#    the job after the timeout (exit 124, one line); nothing is left;
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
# A rank stopped before MPI's start (an mpirun whose rank 1 stops itself before it execs dptrain): rank 0
# waits in MPI's start, a meeting of every rank, until its guard ends the job after wait_timeout (without
# the guard it waited there for good).
cat >"$TMP/mpirun-stopped" <<'SH'
#!/usr/bin/env bash
# mpirun [options] -np N PROGRAM ARGS...: rank 0 as given, rank 1 a shell that stops itself before it execs.
opts=() prog=()
while (($#)); do
  case $1 in
    -np) shift 2 ;;
    "$STOPPED_PROGRAM") prog=("$@"); break ;;
    *) opts+=("$1"); shift ;;
  esac
done
exec mpirun "${opts[@]}" -np 1 "${prog[@]}" : -np 1 sh -c 'kill -STOP $$; exec "$@"' sh "${prog[@]}"
SH
chmod +x "$TMP/mpirun-stopped"
out=$TMP/run-start
t0=$SECONDS
STOPPED_PROGRAM=$DPTRAIN timeout -s KILL 120 "$DPTRAIN" run "$TMP/job.toml" --out "$out" --set launch.ranks=2 \
  --set "launch.mpirun=$TMP/mpirun-stopped" >"$out.log" 2>&1
status=$?
took=$((SECONDS - t0))
[[ $status == 124 ]] &&
  grep -q "^dptrain: not every rank reached MPI's start within 3 s (\[launch\] wait_timeout): a rank stopped, failed or cannot be reached; ending the job$" "$out.log" &&
  grep -q "dptrain: the run ended: it made no progress for \[launch\] wait_timeout (exit status 124)" "$out.log" &&
  ok "a rank stopped before MPI's start: exit 124 after $took s, the guard's line and the launcher's" ||
  not_ok "a rank stopped before MPI's start" "status $status after $took s: $(grep dptrain: "$out.log" | tail -3)"
sleep 1
left=$(pgrep -af -- "--out $out")
[[ -z $left ]] && ok "a rank stopped before MPI's start: no process of the job left" ||
  not_ok "stopped before MPI's start: processes left" "$left"
"$DPTRAIN" run "$TMP/job.toml" --out "$TMP/healthy" --set train.steps=600 >"$TMP/healthy.log" 2>&1 &&
  [[ -s $TMP/healthy/summary.json ]] && ok "a healthy run with wait_timeout 3 s finishes" ||
  not_ok "healthy run" "$(tail -3 "$TMP/healthy.log")"
finish
