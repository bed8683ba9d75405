#!/usr/bin/env bash
# How long the README's first command takes for a newcomer: a fresh clone in a fresh Debian 12 container
# (a debootstrap base, no packages beyond it, an empty apt cache), timed step by step:
#   scripts/install-deps.sh (apt), the build of scripts/setup.sh, the quickstart run,
# then what scripts/test.sh adds before its tests: install-deps.sh --test and the build with the tests.
# Root, podman, debootstrap and runc (scripts/install-deps.sh --test). Not part of the suite.
# Usage: tests/bench/fresh_setup.sh [REPO]   (default: this checkout's HEAD)
set -euo pipefail
REPO=$(realpath "${1:-$(dirname "$0")/../..}")
BASE=localhost/dptrain-fresh-base:bookworm
TMP=$(mktemp -d)
trap 'podman rm --force --ignore dptrain-fresh-$$ >/dev/null 2>&1; rm -rf "$TMP"' EXIT

cat >"$TMP/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF
export CONTAINERS_CONF=$TMP/containers.conf

if ! podman image exists "$BASE"; then
  mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  debootstrap --variant=minbase bookworm "$TMP/rootfs" "${mirror:-http://deb.debian.org/debian}" >"$TMP/debootstrap.log"
  [[ -f /etc/apt/sources.list.d/debian.sources ]] &&
    cp /etc/apt/sources.list.d/debian.sources "$TMP/rootfs/etc/apt/sources.list.d/" && rm -f "$TMP/rootfs/etc/apt/sources.list"
  rm -rf "$TMP"/rootfs/var/cache/apt/archives/*.deb "$TMP"/rootfs/var/lib/apt/lists/*
  tar -C "$TMP/rootfs" -c . | podman import - "$BASE" >/dev/null
  rm -rf "$TMP/rootfs"
fi
git clone -q "$REPO" "$TMP/dptrain"
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(git -C "$TMP/dptrain" log --oneline -1)"
podman run --rm --name dptrain-fresh-$$ --network host -v "$TMP/dptrain:/src" -w /src "$BASE" bash -c '
  set -e
  step() { local name=$1; shift; local t0=$SECONDS; "$@" >/tmp/step.log 2>&1 || { tail -20 /tmp/step.log; exit 1; }
           echo "$name: $((SECONDS - t0)) s"; }
  total=$SECONDS
  step "install-deps.sh (apt-get update and install)" scripts/install-deps.sh
  step "build without the tests (scripts/setup.sh)" scripts/build.sh -DDPTRAIN_BUILD_TESTS=OFF
  step "quickstart run" build/dptrain run configs/quickstart.toml --force
  grep -h "^done:" /tmp/step.log || true
  echo "scripts/setup.sh in all: $((SECONDS - total)) s"
  step "install-deps.sh --test (scripts/test.sh)" scripts/install-deps.sh --test
  step "build with the tests (scripts/test.sh)" scripts/build.sh -DDPTRAIN_BUILD_TESTS=ON
  echo "to the first test in all: $((SECONDS - total)) s"'
