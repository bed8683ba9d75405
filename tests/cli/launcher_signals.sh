#!/usr/bin/env bash
# Signals sent to the `dptrain run` launcher alone (not to its process group): SIGTERM and SIGHUP go on to
# mpirun, which stops the ranks; the launcher returns 128 + the signal once they are gone, and no process
# of the run is left. SIGUSR1 (a scheduler's warning before pre-emption) neither stops the launcher nor
# the run. Before: a SIGTERM ended the launcher with 143 while mpirun and the ranks trained on as orphans.
# After the run stops (a signal, a killed rank) the launcher's last line names the checkpoint to resume from.
# Usage: bash launcher_signals.sh PATH/TO/dptrain REPO_ROOT
set -u
DPTRAIN=$(realpath "$1")
TMP=$(mktemp -d)
failures=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1: $2"; failures=$((failures + 1)); }
left() { pgrep -f -- "--out $TMP/run" | grep -vx "$$" ; }
trap 'pkill -KILL -f -- "--out $TMP/run" 2>/dev/null; rm -rf "$TMP"' EXIT
cat >"$TMP/job.toml" <<'TOML'
[data]
dataset = "synthetic"
train_samples = 4096
[model]
hidden = [64]
[train]
steps = 1000000
global_batch = 64
[log]
every = 5
progress = "none"
[checkpoint]
every = 100
[launch]
ranks = 2
TOML

# start_run NAME: the launcher in the background, in a session of its own (as a batch system starts it,
# so no terminal signal reaches its group); waits for training to be logged.
start_run() {
  setsid "$DPTRAIN" run "$TMP/job.toml" --out "$TMP/run-$1" --force >"$TMP/$1.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    grep -q '"kind":"train"' "$TMP/run-$1/metrics.jsonl" 2>/dev/null && return 0
    sleep 0.1
  done
  not_ok "$1" "no training logged in 60 s: $(tail -3 "$TMP/$1.log")"
  return 1
}
# wait_gone PID SECONDS: waits for the launcher to exit; sets status to its exit status (or "running").
wait_gone() {
  status=running
  for _ in $(seq $(($2 * 10))); do
    kill -0 "$1" 2>/dev/null || { wait "$1"; status=$?; return; }
    sleep 0.1
  done
}

for sig in TERM HUP; do
  want=$((128 + $(kill -l "$sig")))
  start_run "$sig" || continue
  kill -"$sig" "$pid"
  t0=$SECONDS
  wait_gone "$pid" 60
  [[ $status == "$want" ]] && ok "SIG$sig to the launcher: exit $status after $((SECONDS - t0)) s" ||
    not_ok "SIG$sig to the launcher" "status $status, expected $want: $(tail -3 "$TMP/$sig.log")"
  grep -q "dptrain: the run stopped by SIG$sig; its newest checkpoint is $TMP/run-$sig/checkpoints/step-.*--resume" \
    "$TMP/$sig.log" && ok "SIG$sig: the last line names the newest checkpoint and --resume" ||
    not_ok "SIG$sig: no resume line" "$(tail -1 "$TMP/$sig.log")"
  sleep 1
  rest=$(pgrep -af -- "--out $TMP/run-$sig")
  [[ -z $rest ]] && ok "SIG$sig: no mpirun or rank of the run left" ||
    not_ok "SIG$sig: processes left" "$rest"
done

start_run USR1 && {
  kill -USR1 "$pid"
  sleep 3
  kill -0 "$pid" 2>/dev/null && [[ -n $(pgrep -f -- "--out $TMP/run-USR1") ]] &&
    ok "SIGUSR1 to the launcher: the run goes on" || not_ok "SIGUSR1" "the run stopped: $(tail -3 "$TMP/USR1.log")"
  kill -TERM "$pid"
  wait_gone "$pid" 60
  [[ $status == 143 ]] && ok "then SIGTERM: exit 143" || not_ok "SIGTERM after SIGUSR1" "status $status"
}
# A rank killed (SIGKILL): mpirun ends the job and names the rank and its host; the launcher's line says
# where to continue from. The rank is killed once the first checkpoint exists (step 100: on a slow machine,
# or under the sanitizers, training is logged well before it).
first_checkpoint() {
  for _ in $(seq 600); do
    compgen -G "$TMP/run-$1/checkpoints/step-*.ckpt" >/dev/null && return 0
    sleep 0.1
  done
  not_ok "$1" "no checkpoint written in 60 s: $(tail -3 "$TMP/$1.log")"
  return 1
}
start_run KILL && first_checkpoint KILL && {
  rank=$(pgrep -f -- "dptrain run $TMP/job.toml --out $TMP/run-KILL" | grep -vx "$pid" | tail -1)
  kill -KILL "$rank"
  wait_gone "$pid" 60
  [[ $status == 137 ]] && ok "a rank killed: the launcher exits 137" || not_ok "a rank killed" "status $status"
  grep -q "mpirun noticed that process rank [01] .* on node .* exited on signal 9" "$TMP/KILL.log" &&
    grep -q "dptrain: the run ended: a process was killed by signal 9; its newest checkpoint is .*--resume" "$TMP/KILL.log" &&
    ok "the rank and its host named (mpirun), then the checkpoint to resume from" ||
    not_ok "a rank killed: messages" "$(tail -4 "$TMP/KILL.log")"
}
echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures failing check(s))"
((failures == 0))
