#!/usr/bin/env bash
# Signals sent to the `dptrain run` launcher alone (not to its process group), as a scheduler or a terminal
# sends them: SIGTERM, SIGHUP, SIGINT and SIGUSR1 (Slurm's warning before pre-emption) ask the ranks,
# through mpirun, to stop after the current step; they write that step's checkpoint and stopped.json,
# and the launcher exits with 128 + the signal, its last line naming the checkpoint and --resume; no
# process of the run is left. A second signal a second or more later ends the ranks at once (tested with
# a rank stopped by SIGSTOP, so that the first cannot be honoured). A rank killed by SIGKILL: mpirun
# names it and its host, and the launcher's line the newest checkpoint. Before this issue a SIGTERM
# ended the launcher with 143 while mpirun and the ranks trained on as orphans.
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

for sig in TERM HUP INT USR1; do
  want=$((128 + $(kill -l "$sig")))
  start_run "$sig" || continue
  kill -"$sig" "$pid"
  t0=$SECONDS
  wait_gone "$pid" 60
  [[ $status == "$want" ]] && ok "SIG$sig to the launcher: exit $status after $((SECONDS - t0)) s" ||
    not_ok "SIG$sig to the launcher" "status $status, expected $want: $(tail -3 "$TMP/$sig.log")"
  step=$(sed -n 's/.*"step": \([0-9]*\).*/\1/p' "$TMP/run-$sig/stopped.json" 2>/dev/null)
  ckpt=$TMP/run-$sig/checkpoints/$(printf 'step-%08d.ckpt' "${step:-0}")
  [[ -n $step && -f $ckpt ]] && ok "SIG$sig: stopped.json names step $step, and its checkpoint exists" ||
    not_ok "SIG$sig: no checkpoint of the step it stopped after" "$(cat "$TMP/run-$sig/stopped.json" 2>&1)"
  grep -q "dptrain: the run stopped on SIG$sig after step $step; it wrote $ckpt: continue with --resume --out $TMP/run-$sig" \
    "$TMP/$sig.log" && ok "SIG$sig: the last line names that checkpoint and --resume" ||
    not_ok "SIG$sig: no resume line" "$(tail -1 "$TMP/$sig.log")"
  sleep 1
  rest=$(pgrep -af -- "--out $TMP/run-$sig")
  [[ -z $rest ]] && ok "SIG$sig: no mpirun or rank of the run left" ||
    not_ok "SIG$sig: processes left" "$rest"
done

# A second signal: a rank stopped by SIGSTOP cannot honour the first, so the run hangs in its next step
# until a second SIGTERM, 1.5 s later, ends the ranks through mpirun.
start_run SECOND && {
  rank=$(pgrep -f -- "dptrain run $TMP/job.toml --out $TMP/run-SECOND" | grep -vx "$pid" | tail -1)
  kill -STOP "$rank"
  kill -TERM "$pid"
  sleep 1.5
  kill -0 "$pid" 2>/dev/null && ok "one SIGTERM with a rank stopped: the launcher waits for the step" ||
    not_ok "first SIGTERM with a rank stopped" "the launcher ended: $(tail -3 "$TMP/SECOND.log")"
  kill -TERM "$pid"
  t0=$SECONDS
  wait_gone "$pid" 60
  [[ $status == 143 ]] && ok "a second SIGTERM: exit 143 after $((SECONDS - t0)) s" ||
    not_ok "a second SIGTERM" "status $status: $(tail -3 "$TMP/SECOND.log")"
  # mpirun sends the stopped rank SIGCONT before SIGTERM: it may still finish the step and save first.
  grep -q -e "dptrain: the run stopped by SIGTERM; its newest checkpoint is .*--resume" \
    -e "dptrain: the run stopped on SIGTERM after step [0-9]*; it wrote .*--resume" "$TMP/SECOND.log" &&
    ok "a second SIGTERM: the line names the newest checkpoint" || not_ok "a second SIGTERM: line" "$(tail -1 "$TMP/SECOND.log")"
  sleep 1
  rest=$(pgrep -af -- "--out $TMP/run-SECOND")
  [[ -z $rest ]] && ok "a second SIGTERM: no process of the run left" || not_ok "a second SIGTERM: processes left" "$rest"
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
    grep -q "dptrain: at the last heartbeat: rank 0 ([^)]*) in '[^']*'; rank 1 ([^)]*) in '[^']*'" "$TMP/KILL.log" &&
    grep -q "dptrain: the run ended: a process was killed by SIGKILL; its newest checkpoint is .*--resume" "$TMP/KILL.log" &&
    ok "the rank and its host named (mpirun), what each rank was doing, then the checkpoint to resume from" ||
    not_ok "a rank killed: messages" "$(tail -4 "$TMP/KILL.log")"
}
echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures failing check(s))"
((failures == 0))
