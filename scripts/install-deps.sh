#!/usr/bin/env bash
# Installs dptrain's build and run dependencies from Debian's packages (through sudo when not root).
# Idempotent: does nothing when everything is already installed. Pass --bench to add PyTorch (for the
# side-by-side benchmarks only; about 680 MB).
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config zlib1g-dev libcli11-dev libtomlplusplus-dev
          libfmt-dev libboost-test-dev libopenmpi-dev openmpi-bin libopenblas-dev libdnnl-dev
          dataset-fashion-mnist jargon-text python3 fish chromium tmux
          slurm-wlm munge python3-jsonschema python3-yaml  # tests/cluster: a real Slurm, the MPIJob schema
          podman debootstrap runc)  # tests/container/podman.sh: builds the Dockerfile offline
[[ "${1:-}" == "--bench" ]] && packages+=(python3-torch libopenblas0)

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
