#!/usr/bin/env bash
# Every job key dptrain knows (the resolved job.toml of a run lists them all) is documented in
# man/dptrain-job.5 and offered by the bash, zsh and fish completions; every table, nested ones ([parallel.comm])
# included, is listed in the man page's SYNOPSIS; every subcommand of --help has its page man/dptrain-SUB.1,
# listed in dptrain(1), and every option of its --help is in that page and in the three completions.
# Every page of man/ has EXAMPLES and renders cleanly: no groff warning, no words run together (issue 25:
# a macro line such as `.BR "[cluster.emulate] slowdown" ). CPU ranks only.` glues that text into one word).
# Usage: bash docs_in_step.sh PATH/TO/dptrain REPO_ROOT
set -u
DPTRAIN=$(realpath "$1")
ROOT=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "not ok - $*"; failures=$((failures + 1)); }

# Rendering, as man -l does it (groff's man macros; groff-base, scripts/install-deps.sh --test). A missing
# groff fails the test: the pages would go unchecked.
if ! command -v groff >/dev/null; then
  fail "groff not found: the man pages' rendering is unchecked (install groff-base)"
else
  for page in "$ROOT"/man/*.[1-9]; do
    name=man/${page##*/}
    grep -qx '\.SH EXAMPLES' "$page" || fail "$name has no EXAMPLES section"
    # Plain text 100 columns wide (no bold or underline), every warning on.
    LC_ALL=C groff -man -Tutf8 -ww -rLL=100n -P-cbou "$page" >"$TMP/page.txt" 2>"$TMP/page.err"
    [[ -s $TMP/page.err ]] && fail "$name: groff warns: $(head -3 "$TMP/page.err" | tr '\n' ' ')"
    # Words glued by a sentence's end or a closing parenthesis (only.Checkpoints, jsonl).A), a run of 25
    # letters (no English word is that long), or a "word" of over 40 characters that is no path, URL,
    # option or key=value.
    while IFS= read -r hit; do fail "$name: words run together: $hit"; done < <({
      LC_ALL=C grep -nE '[a-z][)]?[.][A-Z][a-z]|[[:alnum:]][)][.,;:]?[[:alpha:]]|[[:alpha:]]{25}' "$TMP/page.txt"
      LC_ALL=C awk '{for (i = 1; i <= NF; i++) if (length($i) > 40 && $i !~ /[\/=]|^[-(\[]*-/)
                       print NR ":" $0}' "$TMP/page.txt"; } | sort -t: -k1,1n -u)
    # In the source: an alternating-font macro (.BR, .IR, ...) joins its arguments without spaces, so two
    # arguments that are both plain words (`.BR only. Checkpoints`) render as one.
    while IFS= read -r hit; do fail "$name: words run together in a font macro: $hit"; done < <(
      awk '/^\.(BR|RB|IR|RI|BI|IB)[ \t]/ {
             n = 0; s = substr($0, 5); delete a
             while (length(s) > 0) {                       # the arguments, "quoted" or not
               sub(/^[ \t]+/, "", s); if (s == "") break
               if (substr(s, 1, 1) == "\"") { e = index(substr(s, 2), "\""); if (!e) e = length(s)
                 a[++n] = substr(s, 2, e - 1); s = substr(s, e + 2) }
               else { e = match(s, /[ \t]/); if (!e) e = length(s) + 1
                 a[++n] = substr(s, 1, e - 1); s = substr(s, e) }
             }
             for (i = 1; i < n; i++)
               if (a[i] ~ /^[A-Za-z][a-z]+[.,;:]?$/ && a[i + 1] ~ /^[A-Za-z][a-z]+[.,;:]?$/) {
                 print FNR ": " $0; break }
           }' "$page")
  done
fi
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
"$DPTRAIN" run "$TMP/job.toml" --out "$TMP/run" >/dev/null 2>&1 || { fail "tiny run failed"; exit 1; }
table=""
enumerated=0
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
  # An enumerated key (strategies, algorithms, ...): the values the job parser accepts, as its error lists
  # them, are each offered by the bash completion's value list for the key and named in the key's entry
  # of the man page (from its .BR line to the next .TP; hyphens written \-).
  values=$("$DPTRAIN" run "$TMP/job.toml" --dry-run --set "$key=not-a-value" 2>&1 |
    sed -n 's/.*unknown value .* (hint: valid values: \(.*\))$/\1/p' | tr -d ,)
  for v in $values; do
    grep -qE "^ +([a-z_.]+ \| )*$key( \| [a-z_.]+)*\) echo( [a-z0-9-]+)* $v( |;|$)" "$ROOT/completions/dptrain.bash" ||
      { echo "not ok - $key value $v not offered by completions/dptrain.bash"; failures=$((failures + 1)); }
    for f in completions/_dptrain completions/dptrain.fish; do
      grep -qw -- "$v" "$ROOT/$f" || { echo "not ok - $key value $v missing from $f"; failures=$((failures + 1)); }
    done
    awk -v t="[$table]" -v k="$name" -v v="${v//-/\\\\-}" '$0 == ".SS " t {in_t = 1; next} /^\.SS/ {in_t = 0}
        in_t && $1 == ".BR" && $2 == k {in_k = 1; next} in_k && /^\.TP/ {in_k = 0}
        in_k && index($0, v) {found = 1} END {exit !found}' "$ROOT/man/dptrain-job.5" ||
      { echo "not ok - $key value $v not named in its entry of man/dptrain-job.5"; failures=$((failures + 1)); }
    enumerated=$((enumerated + 1))
  done
done <"$TMP/run/job.toml"
echo "# $enumerated values of enumerated keys checked in the completions and the man page"
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
echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures problem(s))"
((failures == 0))
