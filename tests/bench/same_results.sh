#!/usr/bin/env bash
# Whether two dptrain builds train the same: each job below runs once with each binary, and their losses
# (every "train" and "eval" line of metrics.jsonl, compared as text) and their checkpoint files (manifests
# and parts, byte for byte) must be identical. For a change meant to leave behaviour as it was (a
# refactoring): run it with the binary before and the binary after. The jobs: the quickstart (data
# parallelism over 2 ranks), the same with a fixed CGP grouping of one group (synchronous: deterministic),
# and a pipeline of two fixed stages. Then the after binary resumes the before binary's quickstart run for
# one more epoch (a checkpoint written before the change resumes after it). Not part of the suite (a few
# minutes on a quiet machine). Exit status 1 when anything differs.
# Usage: tests/bench/same_results.sh BEFORE_BINARY AFTER_BINARY
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ $# -eq 2 ]] || { echo "usage: $0 BEFORE_BINARY AFTER_BINARY" >&2; exit 2; }
BEFORE=$(realpath "$1") AFTER=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

declare -A JOBS=(
  [quickstart]=""
  [cgp-one-group]="--set parallel.strategy=cgp --set parallel.cgp.groups=[0,0] --set train.epochs=2"
  [pipeline-two-stages]="--set parallel.strategy=pipeline --set parallel.pipeline.stages=\"0-1,2\" --set parallel.pipeline.micro_batches=4 --set train.epochs=2"
)
different=0
for name in quickstart cgp-one-group pipeline-two-stages; do
  read -r -a sets <<<"${JOBS[$name]}"
  for build in before after; do
    binary=$BEFORE
    [[ $build == after ]] && binary=$AFTER
    "$binary" run configs/quickstart.toml --out "$TMP/$name-$build" --force "${sets[@]}" >"$TMP/$name-$build.log" 2>&1 ||
      { echo "$name: the $build binary failed:"; tail -3 "$TMP/$name-$build.log"; exit 1; }
    # The losses and evaluations, without the times.
    grep -E '"kind":"(train|eval)"' "$TMP/$name-$build/metrics.jsonl" |
      sed -E 's/"(t|samples_per_sec|compute_ms|wait_ms|comm_ms|update_ms|train_seconds|allocated_peak_bytes|resident_bytes|held_ms|exchange_ms)":[0-9.e+-]+,?//g' \
        >"$TMP/$name-$build.losses"
  done
  lines=$(wc -l <"$TMP/$name-before.losses")
  if cmp -s "$TMP/$name-before.losses" "$TMP/$name-after.losses"; then
    echo "$name: $lines train and eval lines: identical losses"
  else
    echo "$name: losses differ:"; diff "$TMP/$name-before.losses" "$TMP/$name-after.losses" | head -6
    different=1
  fi
  for ckpt in "$TMP/$name-before"/checkpoints/*.ckpt*; do  # manifests and their parts
    other="$TMP/$name-after/checkpoints/$(basename "$ckpt")"
    if cmp -s "$ckpt" "$other"; then
      echo "$name: $(basename "$ckpt") ($(stat -c %s "$ckpt") bytes): identical"
    else
      echo "$name: $(basename "$ckpt") differs"; different=1
    fi
  done
done
# A checkpoint of the before binary resumes under the after binary (one more epoch).
if "$AFTER" run configs/quickstart.toml --out "$TMP/quickstart-before" --resume --set train.epochs=9 \
  >"$TMP/resume.log" 2>&1 && grep -q "resuming after step 3752" "$TMP/resume.log"; then
  echo "quickstart: the before binary's run resumed by the after binary: $(grep -c '"kind":"eval"' \
    "$TMP/quickstart-before/metrics.jsonl") evaluations, $(tail -1 "$TMP/resume.log")"
else
  echo "quickstart: the after binary did not resume the before binary's run:"; tail -3 "$TMP/resume.log"
  different=1
fi
exit $different
