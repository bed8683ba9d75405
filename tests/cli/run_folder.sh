#!/usr/bin/env bash
# A run folder belongs to one run at a time, and its record is never lost by re-running (issue 25):
#  1. --resume of a run that has trained every step changes nothing in its folder (every file but the
#     lock byte-identical), says the run is complete and how to train further, exit 0: strategies data,
#     data with I-DAT, cgp and pipeline, by dptrain's own launch and under a foreign mpirun;
#  2. while a run holds its folder, a second run into it (plain, --force, --resume; launched by dptrain or
#     under a foreign mpirun) is refused at once with one line naming the holder (host, pid, since when),
#     exit 2, and writes nothing: the first run finishes with one start line and its own steps only;
#  3. a run started under a foreign mpirun holds the folder in its rank 0, and says so to a second run;
#  4. a run killed with SIGKILL (launcher, mpirun and ranks) leaves no lock behind: --resume continues.
# Usage: bash run_folder.sh PATH/TO/dptrain REPO_ROOT
set -u
source "$(dirname "$0")/lib/tap.sh"
cd "$TMP" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
MPIRUN=(mpirun -np 2 --mca btl self,vader --mca oob_tcp_if_include lo)

cat >job.toml <<'TOML'
[job]
seed = 5
[model]
hidden = [32, 32]
[data]
dataset = "synthetic"
train_samples = 1024
[train]
steps = 24
global_batch = 64
threads = 1
[launch]
ranks = 2
[log]
every = 4
progress = "plain"
[checkpoint]
every = 8
TOML

# Every file of a folder but the lock, with its checksum.
fingerprint() { (cd "$1" && find . -type f ! -name lock -print0 | sort -z | xargs -0 md5sum); }

# 1. --resume of a finished run, every strategy
declare -A sets=(
  [data]=""
  [idat]="--set parallel.balance.mode=idat --set cluster.emulate.slowdown=[1,2]"
  [cgp]="--set parallel.strategy=cgp --set parallel.cgp.groups=[0,1]"
  [pipeline]="--set parallel.strategy=pipeline --set parallel.pipeline.stages=\"0,1-2\""
)
for strategy in data idat cgp pipeline; do
  # shellcheck disable=SC2086  # the overrides are words
  eval "args=(${sets[$strategy]})"
  "$DPTRAIN" run job.toml --out "done-$strategy" "${args[@]}" >"done-$strategy.log" 2>&1 ||
    { not_ok "$strategy: first run" "$(tail -3 "done-$strategy.log")"; continue; }
  before=$(fingerprint "done-$strategy")
  for how in self foreign; do
    if [[ $how == self ]]; then
      out=$("$DPTRAIN" run job.toml --out "done-$strategy" --resume "${args[@]}" 2>&1)
    else
      out=$("${MPIRUN[@]}" "$DPTRAIN" run job.toml --out "done-$strategy" --resume "${args[@]}" 2>&1)
    fi
    status=$?
    if [[ $status == 0 && $(fingerprint "done-$strategy") == "$before" &&
          $out == *"holds a finished run: its newest checkpoint is step 24 of the job's 24"*"set train.steps above 24"* ]]; then
      ok "$strategy, $how: --resume of a finished run changes nothing, exit 0"
    else
      not_ok "$strategy, $how: --resume of a finished run" "exit $status, $(diff <(echo "$before") <(fingerprint "done-$strategy") | head -3): $out"
    fi
  done
done
# Training further is a larger train.steps with --resume: steps 25-32 follow.
"$DPTRAIN" run job.toml --out done-data --resume --set train.steps=32 >further.log 2>&1 &&
  grep -q '"step":32,' done-data/metrics.jsonl && grep -q "resuming after step 24" further.log &&
  ok "--resume with a larger train.steps trains on" || not_ok "training further" "$(tail -3 further.log)"

# 2. a second run while one holds the folder
cat >long.toml <<'TOML'
[model]
hidden = [256, 256]
[data]
dataset = "synthetic"
train_samples = 8192
[train]
steps = 100000
global_batch = 64
threads = 1
[launch]
ranks = 2
[log]
every = 50
progress = "plain"
[checkpoint]
every = 100
TOML
# wait_for_training DIR: until its metrics log holds a train line (the run holds its folder by then)
wait_for_training() {
  for _ in $(seq 600); do
    grep -q '"kind":"train"' "$1/metrics.jsonl" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# stop_run PID: the run's own stop (SIGTERM to the launcher or rank), then wait for it
stop_run() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# every file of the folder with its size, time and checksum, the lock included
snapshot() { (cd "$1" && find . -printf '%p %s %T@\n' | sort && find . -type f -print0 | sort -z | xargs -0 md5sum); }
# refused NAME HOLDER-PATTERN COMMAND...: a second run is one line naming the holder, exit 2, and writes
# nothing: the holding run (session $holding) is frozen with SIGSTOP meanwhile, so the folder must stay
# exactly as it was
refused() {
  local name=$1 holder=$2
  shift 2
  local before out status
  kill -STOP $(ps -o pid= -s "$holding") 2>/dev/null
  before=$(snapshot held)
  out=$("$@" 2>&1)
  status=$?
  local after
  after=$(snapshot held)
  kill -CONT $(ps -o pid= -s "$holding") 2>/dev/null
  if [[ $status == 2 && $(grep -c . <<<"$out") == 1 && $out == *"run folder is in use by $holder, pid "*" on host $(hostname), since "*" UTC"* &&
        $after == "$before" ]]; then
    ok "$name: refused, naming the holder"
  else
    not_ok "$name" "exit $status: $out; changed: $(diff <(echo "$before") <(echo "$after") | head -4 | tr "\n" " ")"
  fi
}

setsid "$DPTRAIN" run long.toml --out held >held.log 2>&1 &
launcher=$! holding=$!
wait_for_training held || not_ok "long run" "did not start: $(tail -3 held.log)"
refused "a second run" "the dptrain run launcher (ranks under mpirun)" "$DPTRAIN" run long.toml --out held
refused "a second run with --force" "the dptrain run launcher (ranks under mpirun)" "$DPTRAIN" run long.toml --out held --force
refused "a second run with --resume" "the dptrain run launcher (ranks under mpirun)" "$DPTRAIN" run long.toml --out held --resume
# Under a foreign mpirun rank 0 reports it (one line from rank 0; mpirun adds its own box below).
out=$("${MPIRUN[@]}" "$DPTRAIN" run long.toml --out held --force 2>&1)
status=$?
[[ $status != 0 && $(grep -c "run folder is in use by the dptrain run launcher" <<<"$out") == 1 ]] &&
  ok "a second run under a foreign mpirun: refused by rank 0" || not_ok "foreign second run" "exit $status: $out"
stop_run "$launcher"
[[ $(grep -c '"kind":"start"' held/metrics.jsonl) == 1 ]] && ok "the first run's log holds one start line" ||
  not_ok "first run's log" "$(grep -c '"kind":"start"' held/metrics.jsonl) start lines"

# 3. a run under a foreign mpirun: rank 0 holds the folder
setsid "${MPIRUN[@]}" "$DPTRAIN" run long.toml --out held --resume >foreign.log 2>&1 &
foreign=$! holding=$!
sleep 1
for _ in $(seq 300); do grep -q "rank 0 of dptrain run under mpirun" held/lock 2>/dev/null && break; sleep 0.1; done
refused "a second run beside a foreign mpirun's" "rank 0 of dptrain run under mpirun" "$DPTRAIN" run long.toml --out held --resume
stop_run "$foreign"

# 4. SIGKILL of every process of a run: the lock goes with them, --resume continues
setsid "$DPTRAIN" run long.toml --out killed >killed.log 2>&1 &
session=$!
wait_for_training killed || not_ok "run to kill" "did not start"
for _ in $(seq 600); do ls killed/checkpoints/*.ckpt >/dev/null 2>&1 && break; sleep 0.1; done
kill -9 $(ps -o pid= -s "$session") 2>/dev/null
wait "$session" 2>/dev/null
sleep 0.5
# A step takes about a millisecond here: the kill lands some checkpoints after the first one was seen.
newest=$(ls killed/checkpoints/ 2>/dev/null | sed -n 's/^step-0*\([0-9][0-9]*\)\.ckpt$/\1/p' | sort -n | tail -1)
out=$("$DPTRAIN" run long.toml --out killed --resume --set train.steps=$((${newest:-0} + 110)) 2>&1)
status=$?
[[ $status == 0 && $out == *"resuming after step"* ]] && ok "after SIGKILL, --resume holds the folder and continues" ||
  not_ok "resume after SIGKILL" "exit $status: $(tail -3 <<<"$out")"

finish
