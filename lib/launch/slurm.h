// Slurm allocations: whether `dptrain run` was started inside one (salloc, sbatch), read from the
// environment Slurm gives the allocation's shell, and the srun command that starts ranks in it. Pure
// functions of a LaunchHost (tested with fake environments).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "lib/job/job.h"
#include "lib/launch/launcher.h"

namespace dp {

struct SlurmAllocation {
  std::string job_id;         // SLURM_JOB_ID
  int64_t tasks = 0;          // SLURM_NTASKS (0: the allocation did not say)
  int64_t nodes = 0;          // SLURM_JOB_NUM_NODES (0: unknown)
  int64_t cpus_per_task = 0;  // SLURM_CPUS_PER_TASK (0: not given)
  std::vector<std::string> node_names;  // SLURM_JOB_NODELIST expanded (empty: not given)
  std::vector<int64_t> tasks_per_node;  // SLURM_TASKS_PER_NODE expanded, one per node (empty: not given)
};

// A Slurm host list ("node[0-2,5],gpu[01-02],login") as the names it stands for, in order; zero-padded
// ranges keep their width. Throws UsageError on a malformed list (`what` names where it came from).
std::vector<std::string> expand_hostlist(std::string_view list, const std::string& what);

// SLURM_TASKS_PER_NODE's form ("2(x3),1") as one count per node. Throws UsageError when malformed.
std::vector<int64_t> expand_tasks_per_node(std::string_view counts, const std::string& what);

// The allocation this process runs in, or nullopt outside one or when this process is already a rank
// (an srun step's task). Throws UsageError when a Slurm count in the environment is not a number.
std::optional<SlurmAllocation> slurm_allocation(const LaunchHost& host);

// Whether ranks are started with srun: launcher = "srun", or "auto" inside an allocation when the job
// names no machines (hosts, hostfile).
bool uses_srun(const LaunchSection& launch, const LaunchHost& host);

// The number of ranks to start: the job's, or, inside an allocation that says how many tasks it has,
// the allocation's when the job does not say. Throws UsageError when the job asks for more ranks than
// the allocation has.
int64_t launch_ranks(const LaunchSection& launch, const LaunchHost& host);

// srun --mpi=pmix (Debian's OpenMPI has PMIx, not Slurm's PMI-2) --ntasks=RANKS --kill-on-bad-exit=1,
// the allocation's --cpus-per-task (srun 22.05 does not inherit it), then this executable and its
// arguments. Slurm forwards the whole environment. With [launch] hosts ("name" or "name:slots", launcher
// "srun"; what an elastic restart writes for the allocation's nodes that still answer) the step runs on
// those nodes only (--nodelist, --nodes, and --ntasks-per-node when every node gives the same slots), and
// may share their CPUs with the step that failed (--overlap: a step that lost a node may still hold
// them in the controller until that node is declared down).
std::vector<std::string> srun_command(const LaunchSection& launch, const LaunchHost& host,
                                      const std::vector<std::string>& self_args);

}  // namespace dp
