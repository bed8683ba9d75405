#!/usr/bin/env bash
# Installs dptrain's packages from Debian (through sudo when not root). Idempotent: installs only what is
# missing, and runs apt-get update only then.
#   scripts/install-deps.sh          building dptrain and running its jobs (scripts/setup.sh)
#   scripts/install-deps.sh --test   and what only the test suite uses: Boost.Test, Python, a browser for
#                                    the monitor's plot, tmux, fish, a real Slurm, podman (scripts/test.sh)
#   scripts/install-deps.sh --bench  and PyTorch, for the side-by-side benchmarks only (about 680 MB)
set -euo pipefail

# Building (compiler, CMake, the libraries libdptrain links) and the quickstart's data.
packages=(build-essential cmake ninja-build pkg-config zlib1g-dev libcli11-dev libtomlplusplus-dev
          libfmt-dev libopenmpi-dev openmpi-bin libopenblas-dev libdnnl-dev
          dataset-fashion-mnist jargon-text)
# The test suite only.
test_packages=(libboost-test-dev python3 tmux fish chromium    # Boost.Test; tests/cli (monitor, completions)
               slurm-wlm munge python3-jsonschema python3-yaml  # tests/cluster: a real Slurm, the MPIJob schema
               podman debootstrap runc                          # tests/container/podman.sh: the Dockerfile offline
               groff-base man-db                                # tests/cli: docs_in_step and install (man pages)
               iproute2 iptables openssh-server iperf3)         # tests/cluster/netns*: nodes in namespaces
for arg in "$@"; do
  case "$arg" in
    --test) packages+=("${test_packages[@]}") ;;
    --bench) packages+=("${test_packages[@]}" python3-torch libopenblas0) ;;
    *) echo "install-deps.sh: unknown option '$arg' (use --test or --bench)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
