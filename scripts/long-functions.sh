#!/usr/bin/env bash
# Lists the functions of lib/ and apps/ (or the folders given) longer than a limit (default 80 lines), as
# universal-ctags sees them: start line to end line, longest first. Prints "none" when every function
# fits. Usage: scripts/long-functions.sh [--limit N] [DIR...]
set -euo pipefail
cd "$(dirname "$0")/.."
limit=80
if [[ ${1:-} == --limit ]]; then limit=$2; shift 2; fi
dirs=("${@:-lib apps}")
# shellcheck disable=SC2068
found=$(ctags -R --languages=C++ --kinds-C++=f --fields=+ne --output-format=u-ctags -f - ${dirs[@]} |
  awk -F'\t' -v limit="$limit" '
    { name = $1; file = $2; line = 0; end = 0
      for (i = 3; i <= NF; i++) {
        if ($i ~ /^line:/) line = substr($i, 6)
        if ($i ~ /^end:/) end = substr($i, 5)
      }
      if (end > 0 && end - line + 1 > limit) printf "%5d %s:%d %s\n", end - line + 1, file, line, name
    }' | sort -rn)
echo "${found:-none}"
