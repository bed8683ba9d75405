// Slurm allocation detection and the srun command (see slurm.h).
#include "lib/launch/slurm.h"

#include <fmt/format.h>

#include <charconv>
#include <string_view>

#include "lib/core/error.h"

namespace dp {
namespace {

// A positive count from the environment; 0 when unset. SLURM_JOB_NUM_NODES and SLURM_NTASKS are plain
// numbers; a value like "2(x3)" (SLURM_TASKS_PER_NODE's form) is not expected here and is refused.
int64_t count(const LaunchHost& host, const char* name) {
  const char* v = host.getenv(name);
  if (!v || !*v) return 0;
  const std::string_view text(v);
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1)
    throw UsageError(name, fmt::format("expected a positive whole number from Slurm, got '{}'", text),
                     "unset it, or run inside a proper allocation (salloc, sbatch)");
  return n;
}

}  // namespace

std::optional<SlurmAllocation> slurm_allocation(const LaunchHost& host) {
  const char* id = host.getenv("SLURM_JOB_ID");
  if (!id) id = host.getenv("SLURM_JOBID");  // the older name
  if (!id || !*id) return std::nullopt;
  if (inside_mpi_job([&host](const char* v) { return host.getenv(v); })) return std::nullopt;
  SlurmAllocation a;
  a.job_id = id;
  a.tasks = count(host, "SLURM_NTASKS");
  if (!a.tasks) a.tasks = count(host, "SLURM_NPROCS");
  a.nodes = count(host, "SLURM_JOB_NUM_NODES");
  if (!a.nodes) a.nodes = count(host, "SLURM_NNODES");
  a.cpus_per_task = count(host, "SLURM_CPUS_PER_TASK");
  return a;
}

bool uses_srun(const LaunchSection& launch, const LaunchHost& host) {
  if (launch.launcher == Launcher::srun) return true;
  if (launch.launcher != Launcher::automatic || !launch.hosts.empty() || !launch.hostfile.empty()) return false;
  return slurm_allocation(host).has_value();
}

int64_t launch_ranks(const LaunchSection& launch, const LaunchHost& host) {
  const auto alloc = slurm_allocation(host);
  // Machines named by the job are not the allocation's: its size does not apply.
  if (!alloc || alloc->tasks == 0 || !launch.hosts.empty() || !launch.hostfile.empty()) return launch.ranks;
  if (!launch.ranks_given) return alloc->tasks;
  if (launch.ranks > alloc->tasks)
    throw UsageError("launch.ranks",
                     fmt::format("asks for {} ranks, but Slurm allocation {} has {} tasks", launch.ranks,
                                 alloc->job_id, alloc->tasks),
                     fmt::format("allocate at least {} tasks (sbatch/salloc --ntasks={}), or leave launch.ranks "
                                 "out to take the allocation's",
                                 launch.ranks, launch.ranks));
  return launch.ranks;
}

std::vector<std::string> srun_command(const LaunchSection& launch, const LaunchHost& host,
                                      const std::vector<std::string>& self_args) {
  // Standard input from /dev/null: no rank reads it, and srun, in a process group of its own
  // (run_and_wait), must not read a terminal.
  std::vector<std::string> cmd{"srun", "--mpi=pmix", fmt::format("--ntasks={}", launch.ranks),
                               "--kill-on-bad-exit=1", "--input=none"};
  if (const auto alloc = slurm_allocation(host); alloc && alloc->cpus_per_task > 0)
    cmd.push_back(fmt::format("--cpus-per-task={}", alloc->cpus_per_task));
  cmd.push_back(host.self_exe);
  cmd.insert(cmd.end(), self_args.begin(), self_args.end());
  return cmd;
}

}  // namespace dp
