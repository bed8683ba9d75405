#!/usr/bin/env bash
# `dptrain run --dry-run` and [launch]'s hostfile and launcher keys on the real binary, without MPI or
# Slurm running: the printed command for a hostfile, for an allocation's environment (srun, or mpirun
# on the allocation's nodes; ranks from the allocation), and one error line, exit 2, nothing started,
# for a missing or malformed hostfile, hosts with hostfile, and more ranks than the allocation has.
# Usage: bash launch.sh PATH/TO/dptrain REPO_ROOT
set -u
DPTRAIN=$(realpath "${1:?usage: launch.sh DPTRAIN REPO_ROOT}")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-launch.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/jobs" "$TMP/w"
cd "$TMP/w" || exit 1
failures=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1: $2"; failures=$((failures + 1)); }
unset SLURM_JOB_ID SLURM_JOBID SLURM_NTASKS SLURM_NPROCS SLURM_STEP_ID SLURM_PROCID SLURM_CPUS_PER_TASK

printf '[job]\nname = "launch"\n\n[data]\ndataset = "synthetic"\n\n[model]\nhidden = [8]\n' > "$TMP/jobs/job.toml"
printf '[launch]\nranks = 4\n' | cat "$TMP/jobs/job.toml" - > "$TMP/jobs/four.toml"
printf '# two machines\nnode1 slots=2\nnode2 slots=2 max_slots=4\n' > "$TMP/jobs/hosts.txt"
printf 'node1 slots=2\nnode2 slot=2\n' > "$TMP/jobs/bad-hosts.txt"

# Runs dptrain (extra environment first, as env arguments); sets rc, out, err.
run() {
  env "$@" > "$TMP/out" 2> "$TMP/err"
  rc=$?
  out=$(cat "$TMP/out")
  err=$(cat "$TMP/err")
}
# An input error: exit 2, one stderr line containing every given fragment, no run folder.
expect_refused() {
  local what=$1
  shift
  local lines
  lines=$(grep -c . "$TMP/err")
  for fragment in "$@"; do
    [[ $err == *"$fragment"* ]] || { not_ok "$what" "no '$fragment' in: $err"; return; }
  done
  [[ $rc -eq 2 && $lines -eq 1 && ! -e runs ]] && ok "$what: $err" || not_ok "$what" "exit $rc, $lines lines: $err"
}

# --- hostfile ---------------------------------------------------------------------------------------
run "$DPTRAIN" run ../jobs/job.toml --set launch.ranks=4 --set launch.hostfile=hosts.txt --dry-run
[[ $rc -eq 0 && $out == *"--hostfile $TMP/jobs/hosts.txt "* && $out != *"--oversubscribe"* ]] &&
  ok "hostfile relative to the job file: $out" || not_ok "hostfile dry run" "exit $rc: $out $err"
run "$DPTRAIN" run ../jobs/job.toml --set launch.hostfile=missing.txt --dry-run
expect_refused "missing hostfile" "$TMP/jobs/missing.txt" "launch.hostfile" "No such file"
run "$DPTRAIN" run ../jobs/job.toml --set launch.hostfile=bad-hosts.txt
expect_refused "malformed hostfile" "$TMP/jobs/bad-hosts.txt:2" "unknown field 'slot'"
run "$DPTRAIN" run ../jobs/job.toml --set launch.hostfile=hosts.txt --set 'launch.hosts=["a:2"]'
expect_refused "hosts with hostfile" "launch.hostfile" "is given with launch.hosts"

# --- inside a Slurm allocation (its environment; nothing is started with --dry-run) ----------------------
run SLURM_JOB_ID=77 SLURM_NTASKS=3 SLURM_CPUS_PER_TASK=2 "$DPTRAIN" run ../jobs/job.toml --dry-run
[[ $rc -eq 0 && $out == "srun --mpi=pmix --ntasks=3 --kill-on-bad-exit=1 --input=none --cpus-per-task=2 $DPTRAIN run "* &&
   $out == *"--set=launch.ranks=3"* ]] &&
  ok "allocation of 3 tasks, ranks not given: $out" || not_ok "srun dry run" "exit $rc: $out $err"
run SLURM_JOB_ID=77 SLURM_NTASKS=3 "$DPTRAIN" run ../jobs/job.toml --set launch.launcher=mpirun --dry-run
[[ $rc -eq 0 && $out == "mpirun -np 3 "* && $out != *"--host"* && $out != *oob_tcp_if_include* ]] &&
  ok "launcher = mpirun takes the allocation's nodes: $out" || not_ok "mpirun in allocation" "exit $rc: $out $err"
run SLURM_JOB_ID=77 SLURM_NTASKS=3 "$DPTRAIN" run ../jobs/four.toml --dry-run
expect_refused "4 ranks in an allocation of 3" "launch.ranks" "asks for 4 ranks, but Slurm allocation 77 has 3 tasks"
run SLURM_JOB_ID=77 SLURM_NTASKS=3 "$DPTRAIN" run ../jobs/four.toml --set launch.hostfile=hosts.txt --dry-run
[[ $rc -eq 0 && $out == "mpirun -np 4 "*"--hostfile"* ]] &&
  ok "a hostfile inside an allocation: mpirun on the job's machines" || not_ok "hostfile in allocation" "$out $err"
run SLURM_JOB_ID=77 SLURM_NTASKS=3 SLURM_STEP_ID=0 SLURM_PROCID=0 "$DPTRAIN" run ../jobs/job.toml --dry-run
[[ $rc -eq 0 && $out == mpirun* ]] && ok "an srun task is a rank, not an allocation shell" ||
  not_ok "inside a step" "exit $rc: $out $err"
run "$DPTRAIN" run ../jobs/job.toml --dry-run
[[ $rc -eq 0 && $out == "mpirun -np 1 "* ]] && ok "outside Slurm: the local mpirun" || not_ok "local" "$out $err"

echo "# $failures failure(s)"
[[ $failures -eq 0 ]]
