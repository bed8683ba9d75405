#!/usr/bin/env bash
# Every job key dptrain knows (the resolved job.toml of a run lists them all) is documented in
# man/dptrain-job.5 and offered by the bash, zsh and fish completions; every table, nested ones ([parallel.comm])
# included, is listed in the man page's SYNOPSIS; every subcommand of --help has its page man/dptrain-SUB.1,
# listed in dptrain(1), and every option of its --help is in that page and in the three completions.
# Usage: bash docs_in_step.sh PATH/TO/dptrain REPO_ROOT
set -u
DPTRAIN=$(realpath "$1")
ROOT=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat >"$TMP/job.toml" <<'TOML'
[data]
dataset = "synthetic"
train_samples = 64
[train]
steps = 1
global_batch = 8
[log]
progress = "none"
[checkpoint]
enabled = false
TOML
"$DPTRAIN" run "$TMP/job.toml" --out "$TMP/run" >/dev/null 2>&1 || { echo "not ok - tiny run failed"; exit 1; }
failures=0
table=""
# A table header, nested ones included: [train], [parallel.comm].
table_re='^\[([a-z_]+(\.[a-z_]+)*)\]$'
# The tables listed in the man page's SYNOPSIS.
synopsis=$(awk '/^\.SH SYNOPSIS/ {on = 1; next} /^\.SH/ {on = 0} on' "$ROOT/man/dptrain-job.5")
while IFS= read -r line; do
  if [[ $line =~ $table_re ]]; then
    table=${BASH_REMATCH[1]}
    [[ $synopsis == *"[$table]"* ]] ||
      { echo "not ok - [$table] missing from the SYNOPSIS of man/dptrain-job.5"; failures=$((failures + 1)); }
    continue
  fi
  [[ $line =~ ^([a-z_]+)\ = ]] || continue
  key=$table.${BASH_REMATCH[1]}
  name=${BASH_REMATCH[1]}
  for f in completions/dptrain.bash completions/_dptrain completions/dptrain.fish; do
    grep -qw -- "$key" "$ROOT/$f" || { echo "not ok - $key missing from $f"; failures=$((failures + 1)); }
  done
  # In the man page a key is a .BR line under its table's .SS heading.
  awk -v t="[$table]" -v k="$name" '$0 == ".SS " t {in_t = 1; next} /^\.SS/ {in_t = 0}
      in_t && $1 == ".BR" && $2 == k {found = 1} END {exit !found}' "$ROOT/man/dptrain-job.5" ||
    { echo "not ok - $key missing from man/dptrain-job.5"; failures=$((failures + 1)); }
done <"$TMP/run/job.toml"
for sub in $("$DPTRAIN" --help | awk '/^Subcommands:/ {on = 1; next} on && NF {print $1}'); do
  page=man/dptrain-$sub.1
  [[ -f $ROOT/$page ]] || { echo "not ok - subcommand $sub has no page $page"; failures=$((failures + 1)); continue; }
  grep -q "dptrain\\\\-$sub (1)" "$ROOT/man/dptrain.1" ||
    { echo "not ok - man/dptrain.1 does not list dptrain-$sub(1)"; failures=$((failures + 1)); }
  # Every option of its --help: in the man page (hyphens written \-), and offered by every completion.
  for opt in $("$DPTRAIN" "$sub" --help | grep -oE '^ +(-[a-z],)?--[a-z-]+' | grep -oE -- '--[a-z-]+'); do
    name=${opt#--}
    grep -qF -- "${opt//-/\\-}" "$ROOT/$page" ||
      { echo "not ok - $sub $opt missing from $page"; failures=$((failures + 1)); }
    for f in completions/dptrain.bash completions/_dptrain; do
      grep -qF -- "$opt" "$ROOT/$f" || { echo "not ok - $sub $opt missing from $f"; failures=$((failures + 1)); }
    done
    grep -qE -- "-l $name( |$)" "$ROOT/completions/dptrain.fish" ||
      { echo "not ok - $sub $opt missing from completions/dptrain.fish"; failures=$((failures + 1)); }
  done
done
echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures missing)"
((failures == 0))
