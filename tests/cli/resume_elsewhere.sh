#!/usr/bin/env bash
# Resuming (issue 16): past a damaged newest checkpoint, on another rank count, under another pipeline
# partition.
#  1. The newest checkpoint cut short (a disk error, a copy that stopped): --resume refuses it with one
#     line naming the newest checkpoint that verifies, exit 2, the damaged file left as it is; moved aside,
#     the run resumes from that one with the uninterrupted run's losses. Every checkpoint damaged: the
#     line names the newest, exit 2.
#  2. A data-parallel run checkpointed on 2 ranks resumes on 4: the same mathematics (every step's global
#     batch and update), so the losses match the uninterrupted 2-rank run to rounding (the sums' order
#     differs).
#  3. A pipeline run checkpointed under stages "0,1-2" resumes under "0-1,2": the losses match exactly.
# Usage: bash resume_elsewhere.sh PATH/TO/dptrain REPO_ROOT
set -u
source "$(dirname "$0")/lib/tap.sh"
cat >"$TMP/job.toml" <<'TOML'
[data]
dataset = "synthetic"
train_samples = 4096
[model]
hidden = [64, 32]
[optim]
schedule = "constant"
[train]
steps = 200
global_batch = 64
threads = 1
[log]
every = 1
progress = "plain"
trace = false
[checkpoint]
every = 40
keep = 3
[launch]
ranks = 2
TOML
losses() {  # "step loss" of rank 0's train lines of run dir $1 after step $2
  grep '"kind":"train"' "$1/metrics.jsonl" | grep '"rank":0,' |
    sed 's/.*"step":\([0-9]*\),.*"loss":\([^,]*\),.*/\1 \2/' | awk -v s="$2" '$1 > s'
}
run() { "$DPTRAIN" run "$TMP/job.toml" "$@" >>"$TMP/log" 2>&1; }

# 1. a damaged newest checkpoint
run --out "$TMP/ref" && run --out "$TMP/cut" --set train.steps=120 || not_ok "runs" "$(tail -3 "$TMP/log")"
newest=$TMP/cut/checkpoints/step-00000120.ckpt
truncate -s $(($(stat -c %s "$newest") / 2)) "$newest"
sum=$(sha256sum "$newest")
out=$("$DPTRAIN" run "$TMP/job.toml" --out "$TMP/cut" --resume 2>&1)
rc=$?
[[ $rc -eq 2 && $(grep -c error <<<"$out") -eq 1 && $out == *"$newest"*truncated*"newest checkpoint that verifies is"*step-00000080.ckpt* &&
   $(sha256sum "$newest") == "$sum" ]] &&
  ok "newest checkpoint cut in half: refused, exit 2, naming step-00000080.ckpt; the file left as it was" ||
  not_ok "damaged newest" "exit $rc: $out"
mv "$newest" "$TMP/damaged.ckpt"
run --out "$TMP/cut" --resume
grep -q "resuming after step 80" "$TMP/log" && [[ "$(losses "$TMP/cut" 80)" == "$(losses "$TMP/ref" 80)" ]] &&
  ok "moved aside: resumed after step 80, losses 81-200 identical to the uninterrupted run" ||
  not_ok "resume after moving aside" "$(grep -E 'resuming|error' "$TMP/log" | tail -3)"
mkdir -p "$TMP/bad/checkpoints"
cp "$TMP/ref/job.toml" "$TMP/bad/" 2>/dev/null
for s in 40 80; do head -c 100 "$TMP/ref/checkpoints/step-00000200.ckpt" >"$TMP/bad/checkpoints/step-000000$s.ckpt"; done
out=$("$DPTRAIN" run "$TMP/job.toml" --out "$TMP/bad" --resume 2>&1)
rc=$?
[[ $rc -eq 2 && $(grep -c error <<<"$out") -eq 1 && $out == *step-00000080.ckpt*truncated* ]] &&
  ok "every checkpoint damaged: one line naming the newest, exit 2" || not_ok "all damaged" "exit $rc: $out"

# 2. 2 ranks, then 4
run --out "$TMP/ranks" --set train.steps=120 && run --out "$TMP/ranks" --resume --set launch.ranks=4 ||
  not_ok "2 -> 4 ranks" "$(tail -3 "$TMP/log")"
worst=$(join <(losses "$TMP/ranks" 120) <(losses "$TMP/ref" 120) |
  awk '{ d = $2 - $3; if (d < 0) d = -d; r = d / $3; if (r > m) m = r; n++ } END { printf "%d %.2g", n, m }')
grep -q '"ranks": 4' "$TMP/ranks/summary.json" && [[ ${worst%% *} == 80 ]] &&
  awk -v r="${worst#* }" 'BEGIN { exit !(r < 1e-4) }' &&
  ok "checkpointed on 2 ranks, resumed on 4: steps 121-200 within ${worst#* } (relative) of the 2-rank run" ||
  not_ok "2 -> 4 ranks" "compared (steps, worst relative difference): $worst"

# 3. a pipeline under another partition
# The micro-batch count fixed: chosen from the blocks' timings it may differ between runs (and machines).
pipe=(--set parallel.strategy=pipeline --set parallel.pipeline.micro_batches=4)
run --out "$TMP/pref" "${pipe[@]}" --set 'parallel.pipeline.stages="0,1-2"' &&
  run --out "$TMP/pipe" "${pipe[@]}" --set 'parallel.pipeline.stages="0,1-2"' --set train.steps=120 &&
  run --out "$TMP/pipe" --resume "${pipe[@]}" --set 'parallel.pipeline.stages="0-1,2"' ||
  not_ok "pipeline runs" "$(tail -3 "$TMP/log")"
[[ -n "$(losses "$TMP/pipe" 120)" && "$(losses "$TMP/pipe" 120)" == "$(losses "$TMP/pref" 120)" ]] &&
  ok "pipeline checkpointed under stages 0,1-2, resumed under 0-1,2: losses 121-200 identical" ||
  not_ok "pipeline repartitioned" "$(diff <(losses "$TMP/pipe" 120) <(losses "$TMP/pref" 120) | head -3)"
finish
