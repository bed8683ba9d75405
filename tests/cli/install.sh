#!/usr/bin/env bash
# `cmake --install` into a temporary prefix: the binary runs from there, the man pages open with man, bash
# loads the completion from where bash-completion looks for it and completes a subcommand with it, and
# fish completes a job key's values with its own.
# Usage: bash install.sh PATH/TO/dptrain REPO_ROOT   (the build folder is the binary's)
set -u
DPTRAIN=$(realpath "$1")
BUILD=$(dirname "$DPTRAIN")
PREFIX=$(mktemp -d)
trap 'rm -rf "$PREFIX"' EXIT
failures=0
ok() { echo "ok - $1"; }
fail() { echo "not ok - $1"; failures=$((failures + 1)); }

if cmake --install "$BUILD" --prefix "$PREFIX" >"$PREFIX.log" 2>&1; then ok "cmake --install"; else fail "cmake --install: $(tail -3 "$PREFIX.log")"; fi
rm -f "$PREFIX.log"
"$PREFIX/bin/dptrain" --version | grep -q '^dptrain ' && ok "bin/dptrain runs" || fail "bin/dptrain --version"
# dptrain(1), dptrain-job(5) and one page per subcommand of --help.
pages="man1/dptrain.1 man5/dptrain-job.5"
for sub in $("$PREFIX/bin/dptrain" --help | awk '/^Subcommands:/ {on = 1; next} on && NF {print $1}'); do
  pages+=" man1/dptrain-$sub.1"
done
for page in $pages; do
  f=$PREFIX/share/man/$page
  [[ -f $f ]] && MANWIDTH=100 man -l "$f" 2>/dev/null | grep -q 'dptrain' && ok "man page $page" || fail "man page $page"
done
MANPATH=$PREFIX/share/man man -w dptrain 2>/dev/null | grep -q "$PREFIX" && ok "man finds dptrain(1) under the prefix" ||
  fail "man -w dptrain with MANPATH=$PREFIX/share/man"
MANPATH=$PREFIX/share/man man -w dptrain-run 2>/dev/null | grep -q "$PREFIX" && ok "man finds dptrain-run(1) under the prefix" ||
  fail "man -w dptrain-run with MANPATH=$PREFIX/share/man"
completion=$PREFIX/share/bash-completion/completions/dptrain
[[ -f $completion ]] && ok "bash completion installed" || fail "no $completion"
words=$(bash -c "source '$completion'; COMP_WORDS=(dptrain pl); COMP_CWORD=1; COMP_LINE='dptrain pl'; COMP_POINT=10;
                 \$(complete -p dptrain | sed -E 's/.* -F ([^ ]+) .*/\\1/') dptrain pl dptrain; echo \"\${COMPREPLY[*]}\"" 2>&1)
[[ $words == *plan* ]] && ok "bash completes 'dptrain pl' to plan" || fail "bash completion of 'dptrain pl': '$words'"
[[ -f $PREFIX/share/zsh/vendor-completions/_dptrain ]] && ok "zsh completion installed" || fail "no zsh completion"
fish_file=$PREFIX/share/fish/vendor_completions.d/dptrain.fish
words=$(fish -c "source '$fish_file'; complete -C 'dptrain run job.toml --set parallel.strategy='" 2>&1)
[[ $words == *parallel.strategy=pipeline* ]] && ok "fish completes a --set key's values" ||
  fail "fish completion from $fish_file: '$words'"

echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures failing check(s))"
((failures == 0))
