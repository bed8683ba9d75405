#!/usr/bin/env bash
# The Dockerfile, for real and offline: makes a Debian 12 base image itself (debootstrap from the host's
# mirror, imported into podman; kept between runs as localhost/dptrain-test-base:bookworm), builds the
# Dockerfile on it with podman, then trains the quickstart in the container as a user would
# (`podman run IMAGE run configs/quickstart.toml`, 2 ranks) into a host folder and checks summary.json
# (test accuracy >= 0.86 on 2 ranks), that the image runs as its unprivileged user, and that man finds the
# pages; then as the MPI Operator runs it: a launcher container's mpirun starts the ranks over ssh in a worker
# container running sshd, as the image's user and as root. Removes the containers and the image it made (not the cached base). Prints each
# phase's seconds.
# Needs root (debootstrap, podman's storage) and scripts/install-deps.sh's podman, debootstrap and runc;
# not root: skipped (77). DPTRAIN_CONTAINER_FRESH_BASE=1 makes the base again from nothing;
# DPTRAIN_CONTAINER_IMAGE=NAME checks that image instead of building one (and keeps it). A run killed during
# the build (a CTest timeout) leaves buildah's working container: `podman ps --external`, then `podman rm`.
# Usage: bash podman.sh REPO_ROOT
set -u
REPO=$(realpath "$1")
BASE_IMAGE=localhost/dptrain-test-base:bookworm
IMAGE=${DPTRAIN_CONTAINER_IMAGE:-localhost/dptrain:test-$$}
CONTAINER=dptrain-test-$$
MIN_ACCURACY=0.86            # 8 epochs (tests/cli/targets.sh's target; 0.8954 measured)
MIN_ACCURACY_ONE_EPOCH=0.80  # 1 epoch (0.8595 measured; an untrained model: 0.10)

if [[ $(id -u) -ne 0 ]]; then echo "skipped: needs root (debootstrap, podman's storage)"; exit 77; fi
for tool in podman debootstrap runc; do
  command -v "$tool" >/dev/null || { echo "not ok - $tool is missing: run scripts/install-deps.sh"; exit 1; }
done

TMP=$(mktemp -d)
cleanup() {
  podman rm --force --ignore "$CONTAINER" "$CONTAINER-worker" >/dev/null 2>&1
  [[ -z ${DPTRAIN_CONTAINER_IMAGE:-} ]] && podman rmi --force "$IMAGE" >/dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT
failures=0
ok() { echo "ok - $*"; }
fail() { echo "not ok - $*"; failures=$((failures + 1)); }
# check_summary FILE MIN_ACCURACY LABEL: a run's summary.json says 2 ranks and at least that test accuracy.
check_summary() {
  if [[ ! -f $1 ]]; then fail "$3: no $1 written"; return; fi
  python3 - "$@" <<'PY' || failures=$((failures + 1))
import json, sys
path, minimum, label = sys.argv[1], float(sys.argv[2]), sys.argv[3]
s = json.load(open(path))
good = s["test_accuracy"] >= minimum and s["ranks"] == 2
print(("ok - " if good else "not ok - ") + f"{label}: test accuracy {s['test_accuracy']:.4f} on {s['ranks']} ranks"
      f" (requires >= {minimum} on 2), {s['wall_seconds']:.1f} s of training run")
sys.exit(0 if good else 1)
PY
}

# Plain podman fails on this kind of VM (setrlimit, hybrid cgroups) without these (../shared/toolchain.md).
cat >"$TMP/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF
export CONTAINERS_CONF=$TMP/containers.conf

# --- the base image: debootstrap from the host's mirror with the host's apt sources, imported; cached -----
make_base_image() {
  [[ ${DPTRAIN_CONTAINER_FRESH_BASE:-0} == 1 ]] && podman rmi --force "$BASE_IMAGE" >/dev/null 2>&1
  if podman image exists "$BASE_IMAGE"; then ok "base image $BASE_IMAGE: cached"; return 0; fi
  local sources=/etc/apt/sources.list.d/debian.sources mirror start=$SECONDS
  mirror=$(awk '/^URIs:/ {print $2; exit}' "$sources" 2>/dev/null)
  mirror=${mirror:-http://deb.debian.org/debian}
  if ! debootstrap --variant=minbase bookworm "$TMP/rootfs" "$mirror" >"$TMP/debootstrap.log" 2>&1; then
    fail "debootstrap bookworm from $mirror: $(tail -3 "$TMP/debootstrap.log" | tr '\n' ' ')"; return 1
  fi
  if [[ -f $sources ]]; then  # updates and security too, as debian:bookworm has them
    cp "$sources" "$TMP/rootfs/etc/apt/sources.list.d/debian.sources" && rm -f "$TMP/rootfs/etc/apt/sources.list"
  fi
  if ! tar -C "$TMP/rootfs" -c . | podman import - "$BASE_IMAGE" >"$TMP/import.log" 2>&1; then
    fail "podman import: $(tail -3 "$TMP/import.log" | tr '\n' ' ')"; return 1
  fi
  rm -rf "$TMP/rootfs"
  ok "base image $BASE_IMAGE: debootstrap from $mirror and import in $((SECONDS - start)) s"
}

# --- the image: the Dockerfile as it is, on that base (no layer cache, so no intermediate images) ----------
build_image() {
  local start=$SECONDS size
  if ! podman build --layers=false --build-arg "BASE_IMAGE=$BASE_IMAGE" -t "$IMAGE" -f "$REPO/Dockerfile" \
      "$REPO" >"$TMP/build.log" 2>&1; then
    fail "podman build failed after $((SECONDS - start)) s:"; tail -25 "$TMP/build.log"; return 1
  fi
  size=$(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1 / 1e6}')
  ok "podman build in $((SECONDS - start)) s; the image: $size"
}

if [[ -n ${DPTRAIN_CONTAINER_IMAGE:-} ]]; then
  echo "# checking $IMAGE (not built, not removed)"
elif ! make_base_image || ! build_image; then
  echo "# 0 passed, 1 failed"; exit 1
fi

# --- in the container -----------------------------------------------------------------------------------
user=$(podman run --rm --name "$CONTAINER" "$IMAGE" id -un 2>&1)
[[ $user == dptrain ]] && ok "runs as the unprivileged user dptrain" || fail "the image runs as '$user', not dptrain"
page=$(podman run --rm --name "$CONTAINER" "$IMAGE" man -w dptrain 2>&1)
[[ $page == /usr/local/*man/man1/dptrain.1 ]] && ok "man finds dptrain(1): $page" || fail "man -w dptrain: '$page'"

mkdir "$TMP/runs"
start=$SECONDS
if podman run --rm --name "$CONTAINER" -v "$TMP/runs:/home/dptrain/runs:U" "$IMAGE" \
    run configs/quickstart.toml --set log.progress=none >"$TMP/quickstart.log" 2>&1; then
  ok "podman run IMAGE run configs/quickstart.toml in $((SECONDS - start)) s"
else
  fail "the quickstart in the container failed:"; tail -15 "$TMP/quickstart.log"
fi
check_summary "$TMP/runs/quickstart/summary.json" "$MIN_ACCURACY" "the quickstart's summary.json"

# --- as the MPI Operator (v2beta1, OpenMPI) runs it: a worker's sshd, the launcher's mpirun over ssh --------
# The operator mounts a key pair (id_rsa, id_rsa.pub, authorized_keys) read-only at sshAuthMountPath in
# every pod, writes the hostfile to /etc/mpi/hostfile and sets these OMPI_MCA_ variables in the launcher.
# Both containers share the host's network: the worker's sshd listens on 2222; the hostfile names it
# 127.0.0.2, which mpirun does not take for itself, so it starts the ranks through ssh, in the worker.
# operator_check USER SSH_AUTH_MOUNT_PATH MPIRUN_OPTIONS WORKER_COMMAND...
operator_check() {
  local user=$1 ssh_dir=$2 mpirun_options=$3 start; shift 3
  local runs=$TMP/worker-runs-$user
  mkdir "$runs"
  podman run -d --name "$CONTAINER-worker" --user "$user" --network host -v "$TMP/ssh:$ssh_dir:ro" \
    -v "$runs:/home/dptrain/runs:U" "$IMAGE" "$@" >/dev/null
  start=$SECONDS
  # shellcheck disable=SC2086  # the options are words
  if podman run --rm --name "$CONTAINER" --user "$user" --network host -v "$TMP/ssh:$ssh_dir:ro" \
      -v "$TMP/mpi:/etc/mpi:ro" -e OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile \
      -e OMPI_MCA_plm_rsh_args="-o ConnectionAttempts=10" -e OMPI_MCA_orte_keep_fqdn_hostnames=true \
      "$IMAGE" mpirun $mpirun_options -np 2 dptrain run configs/quickstart.toml --set train.epochs=1 \
      --set log.progress=none >"$TMP/operator.log" 2>&1; then
    ok "as $user: the launcher's mpirun -np 2 dptrain run configs/quickstart.toml (1 epoch) in $((SECONDS - start)) s"
    # The ranks wrote the run where they ran: in the worker's folder, not the launcher's.
    check_summary "$runs/quickstart/summary.json" "$MIN_ACCURACY_ONE_EPOCH" "as $user: the worker's summary.json"
  else
    fail "as $user: the launcher's mpirun over ssh into the worker:"; tail -8 "$TMP/operator.log"
    echo "# the worker's sshd:"; podman logs "$CONTAINER-worker" 2>&1 | tail -5
  fi
  podman rm --force "$CONTAINER-worker" >/dev/null 2>&1
}

if ss -ltn 2>/dev/null | grep -q ':2222 '; then
  fail "port 2222 is taken on this machine: the worker's sshd cannot listen"
else
  mkdir "$TMP/ssh" "$TMP/mpi"
  podman run --rm --name "$CONTAINER" -v "$TMP/ssh:/keys:U" "$IMAGE" ssh-keygen -q -t rsa -N '' -f /keys/id_rsa
  cp "$TMP/ssh/id_rsa.pub" "$TMP/ssh/authorized_keys"
  echo "127.0.0.2 slots=2" >"$TMP/mpi/hostfile"
  # The image's user, with the mount path, the launcher's mpirun options and the worker's command of the
  # MPIJob the image's own `dptrain estimate --emit k8s` writes.
  podman run --rm "$IMAGE" estimate configs/quickstart.toml --no-timing --emit k8s >"$TMP/mpijob.yaml" 2>&1 ||
    fail "estimate --emit k8s in the image: $(tail -2 "$TMP/mpijob.yaml")"
  mapfile -t emitted < <(/usr/bin/python3 - "$TMP/mpijob.yaml" <<'PY'
import sys, yaml
job = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "MPIJob"][0]["spec"]
pod = lambda t: job["mpiReplicaSpecs"][t]["template"]["spec"]["containers"][0]["command"]
launcher = pod("Launcher")
print(job["sshAuthMountPath"])
print(" ".join(launcher[1:launcher.index("-np")]))  # mpirun's options before -np
print("\n".join(pod("Worker")))
PY
  )
  if ((${#emitted[@]} >= 3)); then
    ok "the emitted MPIJob: sshAuthMountPath ${emitted[0]}, worker ${emitted[*]:2}"
    operator_check dptrain "${emitted[0]}" "${emitted[1]}" "${emitted[@]:2}"
  else fail "could not read the emitted MPIJob: $(head -5 "$TMP/mpijob.yaml")"; fi
  # Pods run as root (runAsUser: 0) work too: root's sshd configuration listens on 2222 as well.
  operator_check root /root/.ssh "--allow-run-as-root --bind-to none" /usr/sbin/sshd -De
fi

echo "# $((failures == 0 ? 1 : 0)) passed, $((failures == 0 ? 0 : 1)) failed ($failures failing check(s))"
((failures == 0))
