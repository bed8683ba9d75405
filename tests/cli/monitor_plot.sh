#!/usr/bin/env bash
# dptrain monitor on a finished run: --plot writes an SVG that headless chromium renders into a picture
# that is not blank (the loss, throughput and per-rank wait colours are all drawn), while a blank SVG is
# recognised as blank; --once and --json show the run finished; a directory that is not a run's is one
# line and exit status 2. Needs chromium (scripts/install-deps.sh).
# Usage: bash monitor_plot.sh PATH/TO/dptrain REPO_ROOT
set -u
DPTRAIN=$(realpath "$1")
ROOT=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "not ok - $*"; failures=$((failures + 1)); }
CHROMIUM=$(command -v chromium || command -v chromium-browser) || { echo "not ok - chromium is not installed"; exit 1; }

# A short 2-rank run, rank 1 at a third of the speed, logged every 10 steps.
"$DPTRAIN" run "$ROOT/configs/quickstart.toml" --out "$TMP/run" --set train.steps=200 --set log.every=10 \
  --set train.eval_every=100 --set log.progress=none --set checkpoint.enabled=false \
  --set 'cluster.emulate.slowdown=[1,3]' >"$TMP/run.log" 2>&1 || { cat "$TMP/run.log"; echo "not ok - the run failed"; exit 1; }

"$DPTRAIN" monitor "$TMP/run" --plot "$TMP/plot.svg" >"$TMP/plot.out" || fail "monitor --plot exited $?"
grep -q "wrote $TMP/plot.svg: 20 logged step(s), 2 evaluation(s), 2 rank(s)" "$TMP/plot.out" ||
  fail "monitor --plot said: $(cat "$TMP/plot.out")"

# Renders an SVG with headless chromium into PNG $2, the window the SVG's own size.
render() {
  local size
  size=$(grep -oE '<svg [^>]*' "$1" | sed -nE 's/.* width="([0-9]+)" height="([0-9]+)".*/\1,\2/p')
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$TMP/chromium" \
    --window-size="${size:-900,1000}" --screenshot="$2" "file://$1" >"$TMP/chromium.log" 2>&1 && [[ -s $2 ]]
}
# Loss #1f77b4, test loss #ff7f0e, samples/s #2ca02c, rank 0 and 1 waits #9467bd and #d62728.
colours=('#1f77b4' '#ff7f0e' '#2ca02c' '#9467bd' '#d62728')
check_picture() {  # $1: PNG; prints why it is blank, if it is
  /usr/bin/python3 - "$1" "$(/usr/bin/python3 "$ROOT/tests/cli/png_colours.py" "$1" "${colours[@]}")" <<'PY'
import json, sys
m = json.loads(sys.argv[2])
problems = []
if m["background"] != "#ffffff":
    problems.append("background " + m["background"])
if m["non_background"] < 0.02 * m["width"] * m["height"]:
    problems.append(f"only {m['non_background']} of {m['width']}x{m['height']} pixels drawn")
problems += [f"no {c} pixels" for c, n in m["colours"].items() if n < 20]
print("; ".join(problems))
print(json.dumps(m), file=sys.stderr)
PY
}
if render "$TMP/plot.svg" "$TMP/plot.png"; then
  why=$(check_picture "$TMP/plot.png" 2>"$TMP/pixels.json")
  [[ -z $why ]] || fail "the rendered plot is blank or incomplete: $why"
  echo "# plot pixels: $(cat "$TMP/pixels.json")"
else
  fail "chromium could not render the SVG: $(tail -3 "$TMP/chromium.log")"
fi
# The check itself: an SVG of only its white background must be found blank.
printf '<svg xmlns="http://www.w3.org/2000/svg" width="900" height="940"><rect width="100%%" height="100%%" fill="#fff"/></svg>\n' >"$TMP/blank.svg"
if render "$TMP/blank.svg" "$TMP/blank.png"; then
  why=$(check_picture "$TMP/blank.png" 2>/dev/null)
  [[ $why == *"pixels drawn"* ]] || fail "a blank picture was not recognised as blank ($why)"
else
  fail "chromium could not render the blank SVG"
fi

# The finished run, as --once and --json show it.
"$DPTRAIN" monitor "$TMP/run" --once >"$TMP/once.txt" || fail "monitor --once exited $?"
grep -q "FINISHED" "$TMP/once.txt" || fail "--once does not say FINISHED: $(head -3 "$TMP/once.txt")"
grep -qE '^slow rank 1: compute [0-9.]+x' "$TMP/once.txt" || fail "--once does not name rank 1 slow: $(grep slow "$TMP/once.txt")"
"$DPTRAIN" monitor "$TMP/run" --json >"$TMP/snapshot.json" || fail "monitor --json exited $?"
/usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["state"] == "finished" and s["step"] == 200 and s["total_steps"] == 200, s
assert s["slow"]["ranks"] == [1], s["slow"]
assert all(r["resident_bytes"] and r["resident_bytes"] > 0 for r in s["rank_figures"]), s["rank_figures"]
assert all(r["allocated_peak_bytes"] and r["allocated_peak_bytes"] > 0 for r in s["rank_figures"]), s["rank_figures"]
' "$TMP/snapshot.json" || fail "--json: $(head -c 600 "$TMP/snapshot.json")"

# Not a run directory: one line naming it, exit status 2.
mkdir "$TMP/empty"
"$DPTRAIN" monitor "$TMP/empty" >"$TMP/bad.out" 2>"$TMP/bad.err"
status=$?
((status == 2)) || fail "a directory that is not a run's exits $status, not 2"
[[ $(wc -l <"$TMP/bad.err") -eq 1 ]] && grep -q "not a run directory" "$TMP/bad.err" ||
  fail "not one line naming the problem: $(cat "$TMP/bad.err")"

echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures problems)"
((failures == 0))
