#!/usr/bin/env bash
# The example jobs reach what they promise, trained end to end exactly as a user runs them:
#   configs/quickstart.toml  test accuracy >= 0.86
#   configs/cnn.toml         test accuracy >= 0.90
#   configs/gpt.toml         validation loss < 2.0 nats per character, below the text's bigram entropy
# Results are deterministic for a given seed, rank count and thread count; wall times are printed, not
# asserted (machines differ). Usage: bash targets.sh PATH/TO/dptrain REPO_ROOT
set -u
DPTRAIN=$(realpath "$1")
ROOT=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
passes=0

# check NAME CONFIG PYTHON-CONDITION-ON-s (the summary dict)
check() {
  local name=$1 config=$2 condition=$3 start end
  start=$(date +%s)
  if ! "$DPTRAIN" run "$ROOT/$config" --out "$TMP/$name" --set log.progress=none --json >"$TMP/$name.json" \
      2>"$TMP/$name.err"; then
    echo "not ok - $name: run failed: $(tail -2 "$TMP/$name.err" | tr '\n' ' ')"
    failures=$((failures + 1))
    return
  fi
  end=$(date +%s)
  if python3 - "$TMP/$name.json" "$condition" "$name" "$((end - start))" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2], {}, {"s": s})
keys = [k for k in ("test_accuracy", "val_loss", "bigram_entropy", "samples_per_sec", "tokens_per_sec") if k in s]
print(("ok - " if ok else "not ok - ") + sys.argv[3] + ": " + ", ".join(f"{k} {s[k]:.4f}" for k in keys)
      + f"; wall {sys.argv[4]} s; requires {sys.argv[2]}")
sys.exit(0 if ok else 1)
PY
  then passes=$((passes + 1)); else failures=$((failures + 1)); fi
}

check quickstart configs/quickstart.toml 's["test_accuracy"] >= 0.86'
check cnn configs/cnn.toml 's["test_accuracy"] >= 0.90'
check gpt configs/gpt.toml 's["val_loss"] < 2.0 and s["val_loss"] < s["bigram_entropy"]'
echo "# $passes passed, $failures failed"
((failures == 0))
