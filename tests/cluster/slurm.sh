#!/usr/bin/env bash
# A real one-node Slurm cluster, started here and stopped at the end (tests/cluster/slurm_cluster.sh):
#  1. the sbatch script sbatch_script() writes for a 2-rank job runs to completion (COMPLETED, exit 0,
#     summary.json of 2 ranks), its ranks started by srun --mpi=pmix ([launch] launcher = "auto");
#  2. inside salloc: a job without ranks takes the allocation's tasks; launcher = "mpirun" works too; a
#     job asking for more ranks than the allocation has is refused with one line, exit 2;
#  3. a longer run gets Slurm's time-limit warning (USR1 to the batch shell): reported and passed on to
#     dptrain, whose ranks write a checkpoint of the step they reached and stop (exit 138); resumed, it is
#     scancel'led while it trains (SIGTERM to every process of the job): CANCELLED, again a checkpoint of
#     the step reached, no process of it left; that checkpoint resumes to a finished run.
# Usage: bash slurm.sh PATH/TO/dptrain PATH/TO/cluster_emit_driver REPO_ROOT
# Needs root (the daemons run as root) and Debian's slurm-wlm and munge (scripts/install-deps.sh).
set -u
DPTRAIN=$(realpath "${1:?usage: slurm.sh DPTRAIN EMIT_DRIVER REPO_ROOT}")
DRIVER=$(realpath "${2:?usage: slurm.sh DPTRAIN EMIT_DRIVER REPO_ROOT}")
REPO=$(realpath "${3:?usage: slurm.sh DPTRAIN EMIT_DRIVER REPO_ROOT}")
for tool in munged slurmctld slurmd sbatch salloc scancel scontrol pgrep; do
  command -v "$tool" >/dev/null ||
    { echo "not ok - setup: $tool not found (scripts/install-deps.sh installs slurm-wlm and munge)"; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "skip - the test's Slurm daemons run as root"; exit 77; }
source "$REPO/tests/cluster/slurm_cluster.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-slurm.XXXXXX")
chmod 755 "$TMP"
cleanup() {
  slurm_cluster_stop
  rm -rf "$TMP"
}
trap cleanup EXIT
export SLURM_TEST_PORT=$((20000 + $$ % 20000))  # another test's cluster may be running
unset SLURM_JOB_ID SLURM_JOBID SLURM_NTASKS SLURM_NPROCS SLURM_STEP_ID SLURM_PROCID

failures=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1: $2"; failures=$((failures + 1)); }
seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

# A small MLP on synthetic data; $1: the name, $2: steps, $3: checkpoint cadence; ranks not given.
job() {
  printf '[job]\nname = "%s"\nseed = 3\n\n[model]\nhidden = [32]\n\n' "$1"
  printf '[data]\ndataset = "synthetic"\ntrain_samples = 1024\n\n'
  printf '[train]\nsteps = %s\nglobal_batch = 64\n\n' "$2"
  printf '[checkpoint]\nevery = %s\nkeep = 2\n\n[log]\nevery = 10\nprogress = "plain"\n' "$3"
}
cd "$TMP" || exit 1
job slurm-short 60 20 > short.toml
job slurm-long 400000 50 > long.toml
{ job slurm-two 60 20; printf '\n[launch]\nranks = 2\n'; } > two.toml

start=$(date +%s.%N)
slurm_cluster_start "$TMP/slurm" || { not_ok "cluster" "did not start: $(tail -3 "$TMP"/slurm/log/*)"; exit 1; }
ok "one-node Slurm started in $(seconds_since "$start") s"

# --- 1. the emitted sbatch script, to completion ------------------------------------------------------
# Written by `dptrain estimate --emit slurm` (sized from the estimate: memory, time limit); the script runs
# `dptrain` from PATH, which sbatch passes on.
export PATH="$(dirname "$DPTRAIN"):$PATH"
"$DPTRAIN" estimate short.toml --set launch.ranks=2 --emit slurm > short.sbatch ||
  { not_ok "emit" "dptrain estimate --emit slurm failed"; exit 1; }
grep -q -- "--mem-per-cpu=" short.sbatch && grep -q -- "--time=" short.sbatch &&
  ok "estimate --emit slurm: $(grep -E -- '--(mem-per-cpu|time)=' short.sbatch | tr '\n' ' ')" ||
  not_ok "emitted script" "no memory or time request: $(grep SBATCH short.sbatch | tr '\n' ' ')"
start=$(date +%s.%N)
id=$(sbatch --parsable short.sbatch)
state=$(slurm_wait_job "$id" 300)
out=$TMP/slurm-short-$id.out
if [[ $state == COMPLETED && $(slurm_job_field "$id" ExitCode) == 0:0 ]]; then
  ok "sbatch job $id COMPLETED in $(seconds_since "$start") s"
else not_ok "sbatch job $id" "state $state, exit $(slurm_job_field "$id" ExitCode); $(tail -5 "$out" 2>/dev/null)"; fi
if [[ -f runs/slurm-short/summary.json ]] && grep -q '"ranks": *2' runs/slurm-short/summary.json; then
  ok "summary.json written by 2 ranks"
else not_ok "summary.json" "missing or not 2 ranks: $(head -c 300 runs/slurm-short/summary.json 2>/dev/null)"; fi
if grep -q "running srun --mpi=pmix --ntasks=2" "$out"; then ok "ranks started by srun --mpi=pmix (launcher auto)"
else not_ok "launcher auto" "no srun line in $out: $(head -3 "$out")"; fi

# --- 2. inside salloc -----------------------------------------------------------------------------------
# With DPTRAIN_BLAS_KERNELS, every rank re-executes itself with other BLAS kernels (lib/machine/settle.cpp)
# before MPI starts: under srun too. A set every x86-64 CPU runs, other than the one this machine runs
# (dptrain --version): Nehalem (SSE4.2), or Prescott where the machine runs Nehalem.
asked=Nehalem
"$DPTRAIN" --version | grep -q "OpenBLAS [0-9.]* Nehalem kernels" && asked=Prescott
env -u OPENBLAS_CORETYPE DPTRAIN_BLAS_KERNELS=$asked \
  salloc -n 2 "$DPTRAIN" run short.toml --out "$TMP/runs/alloc" > alloc.out 2>&1
rc=$?
if [[ $rc -eq 0 ]] && grep -q '"ranks": *2' runs/alloc/summary.json 2>/dev/null &&
   grep -q -- "--ntasks=2 .*--set=launch.ranks=2" alloc.out; then
  ok "salloc -n 2: a job without ranks takes the allocation's 2 tasks"
else not_ok "salloc -n 2" "exit $rc: $(tail -3 alloc.out)"; fi
kernels=$(/usr/bin/python3 -c 'import json, sys
print(" ".join("%s:%s" % (m["ranks"], m["blas_kernels"]) for m in json.load(open(sys.argv[1]))["machines"]))' \
  runs/alloc/summary.json 2>&1)
[[ $kernels == "[0, 1]:$asked" ]] &&
  ok "both srun ranks re-executed with the $asked BLAS kernels asked for" ||
  not_ok "BLAS settle under srun" "machines (ranks:kernels): $kernels"
salloc -n 2 "$DPTRAIN" run two.toml --set launch.launcher=mpirun --out "$TMP/runs/mpirun" > mpirun.out 2>&1
rc=$?
if [[ $rc -eq 0 && -f runs/mpirun/summary.json ]] && grep -q "running mpirun -np 2" mpirun.out; then
  ok "salloc -n 2: launcher = mpirun runs inside the allocation"
else not_ok "launcher = mpirun" "exit $rc: $(tail -3 mpirun.out)"; fi
salloc -n 1 "$DPTRAIN" run two.toml --out "$TMP/runs/too-many" > too-many.out 2> too-many.err
rc=$?
errors=$(grep -c "error" too-many.err)
if [[ $rc -eq 2 && $errors -eq 1 && ! -e runs/too-many ]] &&
   grep -q "asks for 2 ranks, but Slurm allocation [0-9]* has 1 tasks" too-many.err; then
  ok "salloc -n 1 with ranks = 2: refused, exit 2: $(grep error too-many.err)"
else not_ok "too many ranks" "exit $rc, $errors error lines: $(cat too-many.err)"; fi

# --- 3. scancel while training --------------------------------------------------------------------------
"$DRIVER" slurm long.toml --ranks 2 --cpus 1 --time-s 3600 --dptrain "$DPTRAIN" \
  -- --out "$TMP/runs/long" > long.sbatch
id=$(sbatch --parsable long.sbatch)
for _ in $(seq 1 240); do  # until a checkpoint is on disk: training is under way
  compgen -G "runs/long/checkpoints/step-*.ckpt" >/dev/null && break
  sleep 0.5
done
if [[ $(slurm_job_field "$id" JobState) == RUNNING ]] && compgen -G "runs/long/checkpoints/step-*.ckpt" >/dev/null; then
  sleep 1
  # Its processes: dptrain in the batch shell, srun, and the two ranks all carry the output folder.
  running=$(pgrep -f -- "--out $TMP/runs/long" | wc -l)
  [[ $running -ge 4 ]] && ok "$running processes of the run before scancel" ||
    not_ok "processes" "expected dptrain, srun and 2 ranks, found $running: $(pgrep -a -f -- "--out $TMP/runs/long")"
  # Slurm's warning before the time limit (#SBATCH --signal=B:USR1@...), sent now: the batch shell
  # reports it and passes it on; the ranks checkpoint the step they reached and stop.
  scancel --batch --signal=USR1 "$id"
  start=$(date +%s.%N)
  state=$(slurm_wait_job "$id" 120)
  out="slurm-long-$id.out"
  stopped_step() { sed -n 's/.*"step": \([0-9]*\).*/\1/p' runs/long/stopped.json 2>/dev/null; }
  step=$(stopped_step)
  ckpt=runs/long/checkpoints/$(printf 'step-%08d.ckpt' "${step:-0}")
  if grep -q "Slurm time limit in about 360 s: checkpointing and stopping" "$out" && [[ -n $step && -f $ckpt ]] &&
     grep -q "dptrain: the run stopped on SIGUSR1 after step $step; it wrote .*step-0*$step.ckpt: continue with --resume" "$out" &&
     [[ $(slurm_job_field "$id" ExitCode) == 138:0 ]]; then
    ok "USR1 warning: reported, checkpoint of step $step written, exit 138 ($state) $(seconds_since "$start") s later"
  else not_ok "USR1 warning" "state $state, exit $(slurm_job_field "$id" ExitCode), step '$step': $(grep -v '^step' "$out" | tail -3)"; fi
  # Resumed, then cancelled while it trains: Slurm sends SIGTERM to every process of the job at once
  # (the batch shell, dptrain, srun and the ranks: one request), then SIGKILL after KillWait (10 s).
  "$DRIVER" slurm long.toml --ranks 2 --cpus 1 --time-s 3600 --dptrain "$DPTRAIN" \
    -- --out "$TMP/runs/long" --resume > resume.sbatch
  id=$(sbatch --parsable resume.sbatch)
  for _ in $(seq 1 240); do  # until it has started (the launcher removes the stop's record)
    [[ -e runs/long/stopped.json ]] || break
    sleep 0.5
  done
  for _ in $(seq 1 600); do  # and logged a step past the stop, however slow this machine is
    latest=$(grep '"kind":"train"' runs/long/metrics.jsonl 2>/dev/null | tail -1 | sed -n 's/.*"step":\([0-9]*\),.*/\1/p')
    [[ -n $latest ]] && ((latest > step)) && break
    sleep 0.2
  done
  scancel "$id"
  start=$(date +%s.%N)
  state=$(slurm_wait_job "$id" 120)
  left=""
  for _ in $(seq 1 60); do
    left=$(pgrep -a -f -- "--out $TMP/runs/long")
    [[ -z $left ]] && break
    sleep 0.5
  done
  step2=$(stopped_step)
  ckpt=runs/long/checkpoints/$(printf 'step-%08d.ckpt' "${step2:-0}")
  if [[ $state == CANCELLED && -n $step2 && $step2 -gt $step && -f $ckpt ]]; then
    ok "resumed after step $step, scancel: CANCELLED, checkpoint of step $step2 written, $(seconds_since "$start") s"
  else not_ok "scancel" "state $state, stopped.json step '$step2' (before: $step): $(tail -3 "slurm-long-$id.out")"; fi
  [[ -z $left ]] && ok "no process of the cancelled run left" || not_ok "processes left" "$left"
  [[ ! -e runs/long/summary.json ]] && ok "the cancelled run wrote no summary" || not_ok "summary" "written"
  newest=$(ls runs/long/checkpoints | sort | tail -1)
  step=$((10#$(echo "$newest" | sed 's/step-0*\([0-9]*\)\.ckpt/\1/')))
  if "$DPTRAIN" run long.toml --out "$TMP/runs/long" --resume --set train.steps=$((step + 20)) \
       --set launch.ranks=2 > resume.out 2>&1 && grep -q '"ranks": *2' runs/long/summary.json; then
    ok "the cancelled run resumes from $newest to step $((step + 20))"
  else not_ok "resume" "$(tail -3 resume.out)"; fi
else
  not_ok "long run" "no checkpoint while running (state $(slurm_job_field "$id" JobState)): $(tail -3 slurm-long-$id.out)"
  scancel "$id"
fi

start=$(date +%s.%N)
slurm_cluster_stop
SLURM_DIR=""
alive=$(pgrep -a -f -- "$TMP/slurm" || true)
[[ -z $alive ]] && ok "daemons stopped in $(seconds_since "$start") s" || not_ok "daemons" "$alive"
echo "# $failures failure(s)"
[[ $failures -eq 0 ]]
