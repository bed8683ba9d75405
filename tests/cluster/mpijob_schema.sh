#!/usr/bin/env bash
# The MPIJob manifest mpijob_manifest() writes, validated against the Kubeflow MPI Operator's own CRD
# (../shared/k8s/kubeflow.org_mpijobs.yaml, v2beta1) made strict (unknown fields rejected), with
# tests/cluster/mpijob_check.py: a GPU job with a time limit and a CPU-only job with the default image
# validate; the ConfigMap holds the job file the driver loaded, and dptrain accepts it as a job; every
# broken copy (a required field removed, a field misspelt, the job mounted elsewhere, ...) is rejected.
# Usage: bash mpijob_schema.sh PATH/TO/dptrain PATH/TO/cluster_emit_driver REPO_ROOT
# Needs Debian's python3-jsonschema and python3-yaml for /usr/bin/python3 (scripts/install-deps.sh).
set -u
DPTRAIN=$(realpath "${1:?usage: mpijob_schema.sh DPTRAIN EMIT_DRIVER REPO_ROOT}")
DRIVER=$(realpath "${2:?usage: mpijob_schema.sh DPTRAIN EMIT_DRIVER REPO_ROOT}")
REPO=$(realpath "${3:?usage: mpijob_schema.sh DPTRAIN EMIT_DRIVER REPO_ROOT}")
CRD=$REPO/../shared/k8s/kubeflow.org_mpijobs.yaml
CHECK=$REPO/tests/cluster/mpijob_check.py
PY=/usr/bin/python3
[[ -f $CRD ]] || { echo "skip - no CRD at $CRD (the shared reference data beside the repository)"; exit 77; }
$PY -c 'import jsonschema, yaml' 2>/dev/null ||
  { echo "not ok - setup: $PY lacks jsonschema or yaml (scripts/install-deps.sh installs python3-jsonschema)"; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-mpijob.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
failures=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1: $2"; failures=$((failures + 1)); }

# The data section's job.toml of the manifest's ConfigMap, written to $2.
extract_job() {
  $PY -c 'import sys, yaml; print(next(yaml.safe_load_all(open(sys.argv[1])))["data"]["job.toml"], end="")' \
    "$1" > "$2"
}

# 1. 4 ranks on 2 GPU workers, a time limit, an image and extra run arguments.
"$DRIVER" k8s "$REPO/configs/quickstart.toml" --ranks 4 --nodes 2 --cpus 2 --memory-mib 1536 --gpus 1 \
  --time-s 5400 --image registry.example/dptrain:test -- --out /var/lib/dptrain/runs > gpu.yaml ||
  { not_ok "emit" "the driver failed"; exit 1; }
# The resolved job the driver gave mpijob_manifest(): the ConfigMap must hold exactly this text.
"$DRIVER" toml "$REPO/configs/quickstart.toml" > resolved.toml
extract_job gpu.yaml gpu-job.toml
if $PY "$CHECK" "$CRD" gpu.yaml --image registry.example/dptrain:test --ranks 4 --job-text resolved.toml; then
  ok "GPU manifest validates against the strict CRD schema and the structure checks"
else not_ok "GPU manifest" "rejected (above)"; fi
grep -q 'nvidia.com/gpu: "2"' gpu.yaml && grep -q "activeDeadlineSeconds: 5400" gpu.yaml &&
  grep -q "slotsPerWorker: 2" gpu.yaml && ok "2 GPUs and 2 slots per worker, a 5400 s deadline" ||
  not_ok "GPU manifest fields" "$(grep -E 'gpu|Deadline|slots' gpu.yaml)"

# The mounted job file is a job dptrain runs (its own check of every key), and the same job resolved.
mkdir -p pod && cp gpu-job.toml pod/job.toml
if (cd pod && "$DPTRAIN" run job.toml --set launch.ranks=4 --dry-run > dry.out 2>&1); then
  ok "dptrain accepts the ConfigMap's job.toml: $(head -c 80 pod/dry.out)..."
else not_ok "ConfigMap job" "$(cat pod/dry.out)"; fi
"$DRIVER" k8s pod/job.toml > again.yaml && extract_job again.yaml again-job.toml
cmp -s gpu-job.toml again-job.toml && ok "the ConfigMap's job reads back to the same resolved job" ||
  not_ok "round trip" "$(diff gpu-job.toml again-job.toml | head -5)"

# 2. CPU only, no memory or time given, the default image; a name that needs sanitising.
printf '[job]\nname = "My_Job.v2"\n\n[data]\ndataset = "synthetic"\n\n[launch]\nranks = 3\n' > cpu.toml
"$DRIVER" k8s cpu.toml > cpu.yaml || not_ok "emit cpu" "the driver failed"
version=$("$DPTRAIN" --version | head -1 | awk '{print $2}')
if $PY "$CHECK" "$CRD" cpu.yaml --image "localhost/dptrain:$version" --ranks 3; then
  ok "CPU manifest with the default image localhost/dptrain:$version validates"
else not_ok "CPU manifest" "rejected (above)"; fi
grep -q '^  name: "my-job-v2"' cpu.yaml && ! grep -q "nvidia.com/gpu\|activeDeadlineSeconds" cpu.yaml &&
  ok "name sanitised to my-job-v2; no GPU, no deadline" || not_ok "CPU manifest fields" "$(grep name: cpu.yaml)"

# 3. Broken copies: each must be rejected; the misspellings only the strict schema catches must pass
#    the CRD as the API server applies it (which drops unknown fields silently).
if $PY "$CHECK" "$CRD" gpu.yaml --self-test > self-test.out; then
  ok "every broken manifest rejected ($(grep -c '^ok' self-test.out) cases)"
else not_ok "broken manifests" "$(grep -v '^ok' self-test.out)"; fi
cat self-test.out | sed 's/^/#   /'

# 4. The checker itself fails on a wrong expectation (it is not vacuous).
$PY "$CHECK" "$CRD" gpu.yaml --ranks 5 > /dev/null && not_ok "checker" "accepted -np 4 for 5 ranks" ||
  ok "the checker rejects a manifest that does not match what was asked"

# 5. What `dptrain estimate --emit k8s` writes, sized from the estimate: validates, and asks for memory.
if "$DPTRAIN" estimate "$REPO/configs/quickstart.toml" --set launch.ranks=4 --no-timing --emit k8s > est.yaml 2> est.err &&
  $PY "$CHECK" "$CRD" est.yaml --image "localhost/dptrain:$version" --ranks 4; then
  ok "dptrain estimate --emit k8s validates ($(grep -m1 -E '^ +memory:' est.yaml | tr -s ' '))"
else not_ok "estimate --emit k8s" "$(cat est.err) (above)"; fi
grep -qE '^ +memory: ' est.yaml || not_ok "estimate --emit k8s" "no memory request"

echo "# $failures failure(s)"
[[ $failures -eq 0 ]]
