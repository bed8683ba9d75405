#!/usr/bin/env bash
# BLAS kernel selection, end to end (lib/machine):
#   1. the run's machine line and summary.json's "machines" name the kernel set OpenBLAS actually runs
#      (the same one `dptrain --version` reports), with the CPU, its instruction sets and the threads;
#   2. a kernel set requested with DPTRAIN_BLAS_KERNELS is put into effect by re-executing every rank
#      before MPI starts: under dptrain's own mpirun and under a foreign one, and training still matches
#      (same losses to 3 decimals as the run on the default kernels);
#   3. OPENBLAS_CORETYPE given by the user is respected and reported as the user's;
#   4. a request the CPU cannot run, or that names no kernel set, is one line and exit 2, nothing written.
# Prescott (SSE3) is the set every x86-64 CPU runs, so the test requests it and never a newer one.
# Usage: bash blas_kernels.sh PATH/TO/dptrain REPO_ROOT
set -u

DPTRAIN=$(realpath "${1:?usage: blas_kernels.sh DPTRAIN REPO_ROOT}")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-blas.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

cat >job.toml <<'TOML'
[job]
name = "blas"
seed = 3
[model]
hidden = [64]
[data]
dataset = "synthetic"
train_samples = 1024
[train]
steps = 12
global_batch = 64
threads = 1
[launch]
ranks = 2
[log]
every = 1
progress = "plain"
TOML

# field FILE KEY: summary.json's machines[0][KEY], and the count of machine kinds
field() { python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['machines']; print(m[0][sys.argv[2]] if len(m)==1 else 'kinds=%d' % len(m))" "$1" "$2"; }
losses() { python3 -c "import json,sys; print(' '.join('%.3f' % json.loads(l)['loss'] for l in open(sys.argv[1]) if '\"train\"' in l and '\"rank\":0' in l))" "$1"; }

# 1. what the library runs by default here, and the record of it
default_kernels=$("$DPTRAIN" --version | sed -n 's/^machine: .*OpenBLAS [0-9.]* \([A-Za-z0-9_]*\) kernels.*/\1/p')
[[ -n $default_kernels ]] || fail "--version names no OpenBLAS kernel set: $("$DPTRAIN" --version | tail -1)"
"$DPTRAIN" run job.toml --out base >base.log 2>&1 || fail "default run failed: $(tail -3 base.log)"
grep -q "^machine: .* $default_kernels kernels (.*), 1 thread; convolutions: " base.log ||
  fail "default run's machine line: $(grep machine: base.log)"
[[ $(field base/summary.json blas_kernels) == "$default_kernels" ]] || fail "summary kernels $(field base/summary.json blas_kernels)"
[[ $(field base/summary.json threads) == 1 ]] || fail "summary threads $(field base/summary.json threads)"
[[ $(python3 -c "import json; print(json.load(open('base/summary.json'))['machines'][0]['ranks'])") == "[0, 1]" ]] ||
  fail "summary machines do not list both ranks"
python3 -c "import json; m=json.load(open('base/summary.json'))['machines'][0]; assert 'sse3' in m['isa'] and m['cpu'] and m['blas']=='OpenBLAS'" ||
  fail "summary lacks the CPU or its instruction sets"

# 2. a requested set, by dptrain's own launch and under a foreign mpirun
DPTRAIN_BLAS_KERNELS=Prescott "$DPTRAIN" run job.toml --out self >self.log 2>&1 || fail "self-launched run failed: $(tail -3 self.log)"
DPTRAIN_BLAS_KERNELS=Prescott mpirun -np 2 -x DPTRAIN_BLAS_KERNELS --mca btl self,vader "$DPTRAIN" run job.toml --out foreign \
  >foreign.log 2>&1 || fail "run under a foreign mpirun failed: $(tail -3 foreign.log)"
for run in self foreign; do
  grep -q "^machine: .*OpenBLAS [0-9.]* Prescott kernels (set by DPTRAIN_BLAS_KERNELS" $run.log ||
    fail "$run: machine line $(grep machine: $run.log)"
  [[ $(field $run/summary.json blas_kernels) == Prescott ]] || fail "$run: every rank on Prescott? $(field $run/summary.json blas_kernels)"
  [[ $(field $run/summary.json blas_kernels_source) == DPTRAIN_BLAS_KERNELS ]] || fail "$run: source"
  [[ $(losses $run/metrics.jsonl) == "$(losses base/metrics.jsonl)" ]] ||
    fail "$run: losses differ from the default kernels' ($(losses $run/metrics.jsonl) vs $(losses base/metrics.jsonl))"
done

# 3. the user's OPENBLAS_CORETYPE
OPENBLAS_CORETYPE=Prescott "$DPTRAIN" run job.toml --out user >user.log 2>&1 || fail "user run failed: $(tail -3 user.log)"
grep -q "Prescott kernels (OPENBLAS_CORETYPE, set by the user, is kept" user.log || fail "user: $(grep machine: user.log)"
[[ $(field user/summary.json blas_kernels_source) == OPENBLAS_CORETYPE ]] || fail "user: source"

# 4. requests that cannot be met
for bad in "Skylake-X:names no OpenBLAS kernel set" "SapphireRapids:has no such kernels"; do
  value=${bad%%:*} want=${bad#*:}
  out=$(DPTRAIN_BLAS_KERNELS=$value "$DPTRAIN" run job.toml --out never 2>&1)
  status=$?
  [[ $status == 2 ]] || fail "DPTRAIN_BLAS_KERNELS=$value: exit $status"
  [[ $(printf '%s\n' "$out" | wc -l) == 1 && $out == *"$want"* ]] || fail "DPTRAIN_BLAS_KERNELS=$value: '$out'"
  [[ ! -e never ]] || fail "DPTRAIN_BLAS_KERNELS=$value wrote a run directory"
done

echo "# blas_kernels: $failures failed"
((failures == 0))
