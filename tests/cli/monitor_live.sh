#!/usr/bin/env bash
# dptrain monitor on a live 4-rank job with rank 2 emulated 20x slower ([cluster.emulate] slowdown), as a
# person sees it: the monitor runs in a detached tmux session of a fixed size and its screen is captured
# after several refreshes. It must name rank 2 as the slow one (and no other) and show progress while the
# job runs; --json must name rank 2 too; Ctrl-C restores the screen and exits 130; after the job ends the
# screen must show it finished. Then nothing is left running. MONITOR_TEST_SLOWDOWN='[1,20,1,1]' slows rank 1 instead: the test must fail.
# Usage: bash monitor_live.sh PATH/TO/dptrain REPO_ROOT
set -u
DPTRAIN=$(realpath "$1")
ROOT=$(realpath "$2")
TMP=$(mktemp -d)
SOCKET="dptrain-monitor-test-$$"
TMUX_CMD=(tmux -u -f /dev/null -L "$SOCKET")
JOB_PID=""
cleanup() {
  "${TMUX_CMD[@]}" kill-server 2>/dev/null
  [[ -n $JOB_PID ]] && kill -- -"$JOB_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
command -v tmux >/dev/null || { echo "not ok - tmux is not installed"; exit 1; }
failures=0
fail() { echo "not ok - $*"; failures=$((failures + 1)); }
RUN="$TMP/run"

# The job: 800 steps of the quickstart MLP at batch 512 (tens of seconds here), logged every 5
# steps, in a process group of its own so that everything it started can be stopped.
setsid "$DPTRAIN" run "$ROOT/configs/quickstart.toml" --out "$RUN" --set launch.ranks=4 \
  --set "cluster.emulate.slowdown=${MONITOR_TEST_SLOWDOWN:-[1,1,20,1]}" --set train.steps=800 \
  --set train.global_batch=512 --set train.eval_every=500 --set log.every=5 --set log.progress=none \
  --set parallel.comm.algorithm=native --set checkpoint.enabled=false >"$TMP/job.log" 2>&1 &
JOB_PID=$!
for ((i = 0; i < 600; i++)); do [[ -e $RUN/job.toml ]] && break; sleep 0.1; done
[[ -e $RUN/job.toml ]] || { cat "$TMP/job.log"; echo "not ok - the job did not start"; exit 1; }

"${TMUX_CMD[@]}" new-session -d -x 150 -y 40 -s monitor \
  "'$DPTRAIN' monitor '$RUN' --interval 0.5 --window 20; echo \"monitor exited \$?\"; sleep 600"
screen() { "${TMUX_CMD[@]}" capture-pane -p -t monitor:0 >"$TMP/screen.txt" 2>/dev/null; }
# Waits up to $2 seconds for the screen to match the extended regular expression $1.
wait_for() {
  local deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    screen
    grep -qE -- "$1" "$TMP/screen.txt" && return 0
    sleep 0.5
  done
  return 1
}
# The step the screen shows.
shown_step() { grep -oE 'step [0-9]+ of 800' "$TMP/screen.txt" | grep -oE '[0-9]+' | head -1; }

# While the job runs: three screens at least a second apart, once the window holds steps past 200.
wait_for 'step ([2-9][0-9][0-9]|[0-9]{4}) of 800' 300 || fail "no progress past step 200 on the screen: $(cat "$TMP/screen.txt")"
checked=0
for take in 1 2 3; do
  kill -0 "$JOB_PID" 2>/dev/null || break
  before=$(shown_step)
  wait_for "step ([0-9]+) of 800" 10
  sleep 1.2
  screen
  kill -0 "$JOB_PID" 2>/dev/null || break  # finished meanwhile: this screen may be the final view
  checked=$((checked + 1))
  cp "$TMP/screen.txt" "$TMP/screen.$take.txt"
  grep -q 'RUNNING' "$TMP/screen.txt" || fail "screen $take does not say RUNNING"
  grep -qE '^progress \[#*-*\] +[0-9.]+%  step [0-9]+ of 800, epoch [0-9]+ .* ETA [0-9]' "$TMP/screen.txt" ||
    fail "screen $take shows no progress line with an ETA"
  grep -qE '^slow rank 2: compute [0-9.]+x the others' "$TMP/screen.txt" ||
    fail "screen $take does not name rank 2 as slow: $(grep -E '^slow' "$TMP/screen.txt")"
  grep -E '^slow' "$TMP/screen.txt" | grep -qE 'rank [013]: compute' &&
    fail "screen $take names another rank slow: $(grep -E '^slow' "$TMP/screen.txt")"
  marked=$(grep -E '<- slow$' "$TMP/screen.txt" | awk '{print $1}' | tr '\n' ' ')
  [[ $marked == "2 " ]] || fail "screen $take marks rank(s) '$marked' slow in the table, not 2"
  [[ $(shown_step) != "$before" ]] || fail "screen $take did not refresh (step $before)"
done
((checked >= 2)) || fail "the job ended before two live screens could be checked (checked $checked)"
echo "# live screen $checked:"
sed 's/^/#   /' "$TMP/screen.txt"

# --json while the job runs.
if kill -0 "$JOB_PID" 2>/dev/null; then
  "$DPTRAIN" monitor "$RUN" --json --window 20 >"$TMP/live.json" || fail "monitor --json exited $?"
  /usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["slow"]["ranks"] == [2], s["slow"]
assert s["state"] in ("running", "finished") and s["total_steps"] == 800 and s["ranks"] == 4, s
' "$TMP/live.json" || fail "--json does not name rank 2 alone: $(head -c 400 "$TMP/live.json")"
else
  fail "the job ended before --json could be checked live"
fi

# Ctrl-C in a second monitor while the job runs: it restores the screen, prints the view, exits 130.
if kill -0 "$JOB_PID" 2>/dev/null; then
  "${TMUX_CMD[@]}" new-window -d -t monitor -n interrupted \
    "'$DPTRAIN' monitor '$RUN' --interval 0.5; echo \"monitor exited \$?\"; sleep 600"
  sleep 2
  "${TMUX_CMD[@]}" send-keys -t monitor:interrupted C-c
  sleep 1
  "${TMUX_CMD[@]}" capture-pane -p -t monitor:interrupted >"$TMP/interrupted.txt"
  grep -q 'monitor exited 130' "$TMP/interrupted.txt" || fail "Ctrl-C: $(grep 'monitor exited' "$TMP/interrupted.txt")"
  grep -qE '^slow rank 2: ' "$TMP/interrupted.txt" || fail "Ctrl-C: the view printed after it does not name rank 2"
  [[ $("${TMUX_CMD[@]}" display -p -t monitor:interrupted '#{alternate_on}') == 0 ]] ||
    fail "Ctrl-C left the terminal on the alternate screen"
else
  fail "the job ended before Ctrl-C could be checked"
fi

# The end: the job finishes, the monitor leaves its alternate screen and prints the final view.
wait "$JOB_PID"
status=$?
JOB_PID=""
((status == 0)) || fail "the job exited $status: $(tail -3 "$TMP/job.log")"
wait_for 'monitor exited' 30 || fail "the monitor did not exit after the job finished"
grep -q 'monitor exited 0' "$TMP/screen.txt" || fail "the monitor's exit: $(grep 'monitor exited' "$TMP/screen.txt")"
grep -q 'FINISHED' "$TMP/screen.txt" || fail "the final view does not say FINISHED"
[[ $("${TMUX_CMD[@]}" display -p -t monitor:0 '#{alternate_on}') == 0 ]] || fail "the terminal is left on the alternate screen"
grep -qE 'step 800 of 800' "$TMP/screen.txt" || fail "the final view does not show step 800 of 800"
grep -qE '^slow rank 2: ' "$TMP/screen.txt" || fail "the final view does not name rank 2: $(grep -E '^slow' "$TMP/screen.txt")"
echo "# final screen:"
sed 's/^/#   /' "$TMP/screen.txt"

# Nothing left running: the tmux server and every process of this test's run directory.
"${TMUX_CMD[@]}" kill-server 2>/dev/null
sleep 0.5
left=$(pgrep -f -- "$TMP" | tr '\n' ' ')
[[ -z $left ]] || fail "processes left running: $left"

echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures problems)"
((failures == 0))
