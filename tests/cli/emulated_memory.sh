#!/usr/bin/env bash
# Emulated device memory ([cluster.emulate] memory_gb, issue 27): every buffer a rank's meter counts is
# held to the capacity. Under strategies data and pipeline:
#  - a run given room trains, every rank's allocated peak (summary.json) under its capacity;
#  - resumed with less than that peak, it fails the way a GPU does: exit 1, one line naming the rank, its
#    role, what was being allocated, the bytes asked and free; a pipeline, whose planner knows the
#    capacity, may instead be refused before it starts (exit 2, one line naming the block that cannot
#    fit); either way the checkpoints already written are byte for byte as they were, and a resume with
#    room continues from them;
#  - the capacity comes from [cluster] memory_gb under as_described too.
# Usage: bash emulated_memory.sh PATH/TO/dptrain REPO_ROOT
set -u
source "$(dirname "$0")/lib/tap.sh"
cat >"$TMP/job.toml" <<'TOML'
[data]
dataset = "synthetic"
train_samples = 2048
features = 256
[model]
hidden = [512, 512, 256]
[train]
steps = 20
global_batch = 64
[log]
progress = "plain"
trace = false
[checkpoint]
every = 10
[launch]
ranks = 2
TOML
peak() {  # rank $2's allocated peak in run dir $1
  sed -n 's/.*"memory": \[\(.*\)\].*/\1/p' "$1/summary.json" | tr '}' '\n' | grep "\"rank\": $2," |
    sed 's/.*"allocated_peak_bytes": \([0-9]*\).*/\1/'
}

for strategy in data pipeline; do
  sets=()
  [[ $strategy == pipeline ]] && sets=(--set parallel.strategy=pipeline --set 'parallel.pipeline.stages="0-1,2-3"'
                                       --set parallel.pipeline.micro_batches=4)
  # Room: 1 GB each. Trains to step 10 (one checkpoint), then to 20 from it.
  "$DPTRAIN" run "$TMP/job.toml" --out "$TMP/$strategy" "${sets[@]}" --set train.steps=10 \
    --set 'cluster.emulate.memory_gb=[1]' >"$TMP/$strategy-a.log" 2>&1 ||
    { not_ok "$strategy: a run with room" "$(tail -3 "$TMP/$strategy-a.log")"; continue; }
  p0=$(peak "$TMP/$strategy" 0) p1=$(peak "$TMP/$strategy" 1)
  [[ -n $p0 && -n $p1 && $p0 -gt 0 && $p0 -lt 1000000000 && $p1 -lt 1000000000 ]] &&
    ok "$strategy: trains under 1 GB (allocated peaks $p0, $p1 bytes)" ||
    not_ok "$strategy: peaks under the capacity" "rank 0: '$p0', rank 1: '$p1'"
  sums_before=$(md5sum "$TMP/$strategy/checkpoints/"* | sort)

  # Less than the smaller rank's peak: the resume fails on the first allocation past it.
  small=$(( (p0 < p1 ? p0 : p1) * 3 / 4 ))
  gb=$(awk -v b="$small" 'BEGIN { printf "%.6f", b / 1e9 }')
  "$DPTRAIN" run "$TMP/job.toml" --out "$TMP/$strategy" "${sets[@]}" --resume \
    --set "cluster.emulate.memory_gb=[$gb]" >"$TMP/$strategy-b.log" 2>&1
  rc=$?
  role='data rank'
  [[ $strategy == pipeline ]] && role='(stage [01] of 2|pipeline rank timing the blocks one at a time)'
  lines=$(grep -Ec "rank [01]: \[cluster.emulate\] memory_gb: error: ($role: )?out of memory allocating [0-9.]+ MB for [a-z]" \
    "$TMP/$strategy-b.log")
  planned=$(grep -Ec '\[parallel.pipeline\] stages: error: the stages do not fit memory even recomputing: block [0-9]+ \(.*\) alone needs' \
    "$TMP/$strategy-b.log")
  if [[ $strategy == pipeline && $rc -eq 2 ]]; then
    [[ $planned -eq 1 ]] && ok "$strategy: with $gb GB it is refused before it starts: exit 2, the block named" ||
      not_ok "$strategy: refused" "$(grep dptrain: "$TMP/$strategy-b.log" | tail -3)"
  else
    [[ $rc -eq 1 && $lines -ge 1 ]] &&
      grep -q "MB free of its $(awk -v b="$small" 'BEGIN { printf "%.1f", b / 1e6 }') MB" "$TMP/$strategy-b.log" &&
      ok "$strategy: with $gb GB it fails: exit 1, the rank, its role, what and the bytes named" ||
      not_ok "$strategy: out of memory" "exit $rc, $lines line(s): $(grep dptrain: "$TMP/$strategy-b.log" | tail -3)"
  fi
  [[ $(md5sum "$TMP/$strategy/checkpoints/"* | sort) == "$sums_before" ]] &&
    ok "$strategy: the checkpoints are as they were" || not_ok "$strategy: checkpoints changed"

  "$DPTRAIN" run "$TMP/job.toml" --out "$TMP/$strategy" "${sets[@]}" --resume \
    --set 'cluster.emulate.memory_gb=[1]' >"$TMP/$strategy-c.log" 2>&1 &&
    grep -q '"steps": 20' "$TMP/$strategy/summary.json" &&
    ok "$strategy: resumed with room, it finishes" || not_ok "$strategy: resume with room" "$(tail -3 "$TMP/$strategy-c.log")"
done

# as_described: [cluster] memory_gb is the capacity (here too small for rank 1).
"$DPTRAIN" run "$TMP/job.toml" --out "$TMP/described" --set cluster.emulate.as_described=true \
  --set 'cluster.memory_gb=[1, 0.001]' >"$TMP/described.log" 2>&1
rc=$?
[[ $rc -eq 1 ]] && grep -q "rank 1: \[cluster\] memory_gb: error: data rank: out of memory" "$TMP/described.log" &&
  ! grep -q "rank 0: .*out of memory" "$TMP/described.log" &&
  ok "as_described: [cluster] memory_gb holds rank 1 to 1 MB" ||
  not_ok "as_described" "exit $rc: $(grep dptrain: "$TMP/described.log" | tail -3)"
finish
