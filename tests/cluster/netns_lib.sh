# What the namespace-cluster tests (netns.sh, netns_slurm.sh) share, sourced after DPTRAIN, REPO and NAME
# are set: the skip where namespaces cannot be made, the tools a test needs, TAP-style lines, the
# teardown on exit or signal, and running a command on the launcher under its own host name.
TOOL="$REPO/tests/cluster/netns_cluster.py"
PY=/usr/bin/python3
LAUNCHER="dpt-$NAME-launcher"
failures=0

# Exits 77 (skipped) without root or where the kernel makes no namespaces; 1 when a TOOL is missing.
netns_require() {
  [[ $(id -u) -eq 0 ]] || { echo "skip - network namespaces need root"; exit 77; }
  local probe="dpt-probe-$$" tool
  ip netns add "$probe" 2>/dev/null || { echo "skip - this machine cannot make network namespaces"; exit 77; }
  ip netns del "$probe"
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "not ok - setup: $tool not found (scripts/install-deps.sh --test)"; exit 1; }
  done
}
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1: $2"; failures=$((failures + 1)); }
# The cluster comes down however the test ends; `netns_cleanup_more`, when a test defines it, runs after.
cleanup() {
  trap '' INT TERM HUP  # a second signal must not cut the teardown short
  $PY "$TOOL" down "$NAME"
  declare -F netns_cleanup_more >/dev/null && netns_cleanup_more
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
on_launcher() { ip netns exec "$LAUNCHER" unshare --uts -- sh -c 'hostname launcher && exec "$@"' sh "$@"; }
