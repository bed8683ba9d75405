# Sourced by the scripts in tests/cli (after `set -u`): DPTRAIN, the binary from $1, made absolute; TMP, a
# folder removed on exit (a script that sets its own EXIT trap removes it there); `ok NAME` and
# `not_ok NAME WHY` print TAP-style lines and count failures; `finish` prints the count and returns the
# script's status.
DPTRAIN=$(realpath "${1:?usage: $0 PATH/TO/dptrain REPO_ROOT}")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1: $2"; failures=$((failures + 1)); }
finish() {
  echo "# $failures failure(s)"
  ((failures == 0))
}
