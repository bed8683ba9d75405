// sbatch_script: a Slurm batch script for a sized job (see emit.h). The script runs `dptrain run`, which
// inside the allocation starts its ranks with srun --mpi=pmix ([launch] launcher = "auto"; mpirun when
// the job says launcher = "mpirun"), after checking the job once, before any rank starts.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lib/launch/emit.h"
#include "lib/launch/launcher.h"

namespace dp {

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

// Seconds of warning before the time limit: a tenth of it, at least 60 (Slurm checks its timers about
// once a minute, so a signal may come up to a minute early) and at most 10 minutes.
int64_t warning_seconds(double limit_s) {
  return std::clamp<int64_t>(static_cast<int64_t>(limit_s / 10), 60, 600);
}

}  // namespace

std::string sbatch_script(const SchedulerRequest& r) {
  check_request(r);
  const std::string name = slurm_job_name(r.job_name);
  std::string s = "#!/bin/bash\n";
  s += fmt::format("# dptrain job '{}': {} ranks on {} node(s), written by dptrain. Submit with: sbatch FILE\n",
                   name, r.ranks, r.nodes);
  s += fmt::format("#SBATCH --job-name={}\n", name);
  s += fmt::format("#SBATCH --ntasks={}\n", r.ranks);
  s += fmt::format("#SBATCH --nodes={}\n", r.nodes);
  s += fmt::format("#SBATCH --ntasks-per-node={}\n", r.ranks_per_node);
  s += fmt::format("#SBATCH --cpus-per-task={}\n", r.cpus_per_rank);
  if (r.memory_per_rank_bytes > 0) {
    const int64_t per_cpu = (r.memory_per_rank_bytes + r.cpus_per_rank - 1) / r.cpus_per_rank;
    s += fmt::format("#SBATCH --mem-per-cpu={}M\n", (per_cpu + kMiB - 1) / kMiB);
  }
  if (r.gpus_per_rank > 0) s += fmt::format("#SBATCH --gres=gpu:{}\n", r.gpus_per_rank * r.ranks_per_node);
  const bool limited = r.time_limit_s > 0;
  if (limited) {
    s += fmt::format("#SBATCH --time={}\n", slurm_time(r.time_limit_s));
    s += fmt::format("#SBATCH --signal=B:USR1@{}\n", warning_seconds(r.time_limit_s));
  }
  s += fmt::format("#SBATCH --output={}-%j.out\n", name);
  // Elastic restarts relaunch on the nodes left: Slurm must not end the allocation when one fails.
  if (r.max_restarts > 0) s += "#SBATCH --no-kill\n";

  std::vector<std::string> run{r.dptrain, "run", r.job_file, fmt::format("--set=launch.ranks={}", r.ranks)};
  run.insert(run.end(), r.run_args.begin(), r.run_args.end());
  s += "\n";
  if (limited) {
    s += "# Slurm's warning before the time limit goes on to dptrain: its ranks finish the step, write a\n"
         "# checkpoint and stop (exit 138); the run continues with the same command and --resume.\n";
    s += fmt::format(
        "trap 'echo \"dptrain: Slurm time limit in about {} s: checkpointing and stopping; continue with --resume\" >&2; "
        "kill -USR1 \"$run_pid\"' USR1\n",
        warning_seconds(r.time_limit_s));
  }
  // In the background, so that the batch shell handles the warning while the run goes on.
  s += shell_line(run) + " &\n";
  s += "run_pid=$!\n";
  s += "wait \"$run_pid\"; status=$?\n";
  s += "while kill -0 \"$run_pid\" 2>/dev/null; do wait \"$run_pid\"; status=$?; done  # woken by a signal\n";
  s += "exit \"$status\"\n";
  return s;
}

}  // namespace dp
