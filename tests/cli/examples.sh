#!/usr/bin/env bash
# Every example job in configs/ still parses and runs: each is run as a user would (`dptrain run
# configs/NAME.toml`), cut to a few steps (--set train.steps, an evaluation at the end only, no
# checkpoints, no trace), and must exit 0 with a summary.json holding finite losses, the steps asked
# for, and the strategy the job file names. A new file in configs/ is picked up without changing this
# script. What the jobs reach in full is not checked here (targets.sh trains quickstart, cnn and gpt).
# 40 s on a quiet 2-core machine, 2 minutes beside other builds.
# Usage: bash examples.sh PATH/TO/dptrain REPO_ROOT
set -u
source "$(dirname "$0")/lib/tap.sh"
ROOT=$(realpath "${2:?usage: $0 PATH/TO/dptrain REPO_ROOT}")
STEPS=6

shopt -s nullglob
configs=("$ROOT"/configs/*.toml)
((${#configs[@]} > 0)) || { not_ok "configs" "no configs/*.toml under $ROOT"; finish; exit; }

for config in "${configs[@]}"; do
  name=$(basename "$config" .toml)
  out="$TMP/$name"
  start=$(date +%s%N)
  "$DPTRAIN" run "$config" --out "$out" --set train.steps=$STEPS --set train.eval_every=$STEPS \
      --set checkpoint.enabled=false --set log.trace=false --set log.every=1 --set log.progress=none \
      >"$out.log" 2>&1 </dev/null
  rc=$? tenths=$((($(date +%s%N) - start) / 100000000))
  if ((rc != 0)); then
    not_ok "$name" "exit $rc: $(tail -3 "$out.log" | tr '\n' ' ')"
    continue
  fi
  # The strategy the job file names (default "data") is read from the file itself, not from the run.
  if why=$(python3 - "$config" "$out/summary.json" "$STEPS" <<'PY'
import json, math, sys, tomllib
job = tomllib.load(open(sys.argv[1], "rb"))
want = job.get("parallel", {}).get("strategy", "data")
try:
    s = json.load(open(sys.argv[2]))
except (OSError, ValueError) as e:
    sys.exit(f"no readable summary.json: {e}")
losses = {k: s[k] for k in ("test_loss", "val_loss", "final_loss", "train_loss") if k in s}
if not losses:
    sys.exit(f"summary.json has no loss (keys: {', '.join(sorted(s))})")
bad = [k for k, v in losses.items() if not (isinstance(v, (int, float)) and math.isfinite(v))]
if bad:
    sys.exit(f"loss not finite: {', '.join(f'{k}={losses[k]}' for k in bad)}")
if s.get("steps") != int(sys.argv[3]):
    sys.exit(f"ran {s.get('steps')} steps, asked for {sys.argv[3]}")
got = s.get("job", {}).get("parallel", {}).get("strategy")
if got != want:
    sys.exit(f"ran strategy {got!r}, the file names {want!r}")
print(", ".join(f"{k} {v:.4f}" for k, v in losses.items()) + f", strategy {got}")
PY
  2>&1); then
    ok "$name: $why; $((tenths / 10)).$((tenths % 10)) s"
  else
    not_ok "$name" "$why"
  fi
done

# The check itself can fail: a job whose key no longer exists (renamed in the schema) is refused.
sed 's/^global_batch =/global_batchh =/' "$ROOT/configs/quickstart.toml" >"$TMP/renamed.toml"
"$DPTRAIN" run "$TMP/renamed.toml" --out "$TMP/renamed" --set train.steps=1 >"$TMP/renamed.log" 2>&1 </dev/null
rc=$?
if ((rc == 2)) && grep -q "global_batchh" "$TMP/renamed.log"; then
  ok "a job file with an unknown key is refused (exit 2)"
else
  not_ok "a job file with an unknown key" "exit $rc, expected 2 naming the key"
fi
finish
