# A one-node Slurm cluster in a scratch folder, for tests: sourced by tests/cluster/*.sh.
# slurm_cluster_start DIR starts munged, slurmctld and slurmd (the daemons run as root, their files under
# DIR) and exports SLURM_CONF; slurm_cluster_stop stops them by their pids. Debian's slurm-wlm and munge
# (scripts/install-deps.sh); no systemd needed. Facts this relies on: ../shared/toolchain.md (Slurm).

slurm_cluster_start() {
  local dir=$1
  SLURM_DIR=$dir
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
  chmod 755 "$dir" "$dir/munge"
  head -c 1024 /dev/urandom > "$dir/munge/munge.key"
  chmod 400 "$dir/munge/munge.key"
  munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munge.seed" ||
    return 1
  local cpus
  cpus=$(nproc)
  cat > "$dir/slurm.conf" <<CONF
ClusterName=dptrain-test
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=${SLURM_TEST_PORT:-16817}
SlurmdPort=$(( ${SLURM_TEST_PORT:-16817} + 1 ))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
KillWait=10
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=4000
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF" || return 1
  slurmd -f "$SLURM_CONF" -N localhost || return 1
  # Ready when the node is idle.
  local i
  for i in $(seq 1 60); do
    scontrol show node localhost 2>/dev/null | grep -q "State=IDLE" && return 0
    sleep 0.5
  done
  echo "slurm_cluster_start: the node did not become idle; logs in $dir/log" >&2
  return 1
}

slurm_cluster_stop() {
  local dir=${SLURM_DIR:-}
  [[ -n "$dir" && -f "$dir/slurm.conf" ]] || return 0
  SLURM_CONF=$dir/slurm.conf scontrol shutdown >/dev/null 2>&1 || true
  local pidfile pid i
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [[ -f "$pidfile" ]] || continue
    pid=$(cat "$pidfile")
    [[ "$pidfile" == */munged.pid ]] && kill "$pid" 2>/dev/null
    for i in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  done
}

# The value of FIELD (State, ExitCode, ...) in `scontrol show job ID`.
slurm_job_field() {
  scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}

# Waits until job ID leaves PENDING/RUNNING/COMPLETING (at most $2 seconds); prints its final state.
slurm_wait_job() {
  local id=$1 limit=$2 state i
  for i in $(seq 1 $((limit * 2))); do
    state=$(slurm_job_field "$id" JobState)
    case "$state" in
      PENDING|RUNNING|COMPLETING|CONFIGURING|SUSPENDED|"") sleep 0.5 ;;
      *) echo "$state"; return 0 ;;
    esac
  done
  echo "TIMEOUT($state)"
}
