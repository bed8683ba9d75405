// Elastic restarts ([launch] max_restarts, as torchrun's --max-restarts): which ended launches are worth
// another, the machines a launch placed its ranks on, which of them still answer, and the job for the
// ranks on those: the cluster description without the dropped machines' ranks. Pure but for
// hosts_answering, which runs the launch's remote shell or a Slurm step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/job/job.h"
#include "lib/launch/launcher.h"

namespace dp {

// Whether a launch that ended with mpirun's `status` may be relaunched: a rank or a machine died, or the
// watchdog ended it (wait_timeout), and nothing said it must not be: not finished (0), not bad input (2),
// not stopped by a stop signal (sent to the launcher or to a rank, which then wrote stopped.json:
// `stopped`), and no rank reported an error of its own (failed.json: a non-finite loss, an allocation
// past a device's memory, bad input found while training: `rank_reported`), which a relaunch would meet
// again.
bool restartable(int status, bool stopped, bool rank_reported);

// A machine of the launch, with the ranks mpirun placed there (by slot, in order: each machine's slots
// filled before the next).
struct PlacedHost {
  std::string host;
  int64_t slots = 0;      // 0: not given
  std::vector<int> ranks;
};

// The machines of [launch] hostfile or hosts ("name" or "name:slots") and the ranks on each; empty
// when the job runs on this machine alone (or in a Slurm allocation).
std::vector<PlacedHost> placed_hosts(const LaunchSection& launch);

// The same for the launch as `host` starts it: under srun ([launch] launcher, or "auto" in an
// allocation) the nodes of [launch] hosts, else the allocation's nodes (SLURM_JOB_NODELIST) with its
// tasks per node as slots (SLURM_TASKS_PER_NODE; else its CPUs per node over the CPUs per task), filled
// in order as srun's default block distribution does; under mpirun as above.
std::vector<PlacedHost> placed_hosts(const LaunchSection& launch, const LaunchHost& host);

// Throws UsageError when the machines of [launch] hostfile or hosts have fewer slots (all given) than
// [launch] ranks: mpirun would refuse, or oversubscribe them.
void check_slots(const LaunchSection& launch);

// How a machine is asked whether it answers: through the launch's remote shell (OpenMPI's
// plm_rsh_agent from the environment, else ssh in batch mode), or by a one-task Slurm step on it
// (srun --overlap inside the allocation: a node whose slurmd does not answer does not).
enum class Probe { remote_shell, slurm_step };

// Which of `hosts` answer `probe` within `timeout_s`, all at once: a machine whose link is down, whose
// sshd or slurmd is gone or that is powered off does not.
std::vector<bool> hosts_answering(const std::vector<std::string>& hosts, double timeout_s,
                                  Probe probe = Probe::remote_shell);

// Throws UsageError naming the machines of [launch] hostfile or hosts that hold ranks and do not answer
// through the remote shell within `timeout_s` (this machine's own names are not asked): before any rank
// starts, instead of mpirun's report from the middle of its launch.
void check_hosts_answer(const LaunchSection& launch, double timeout_s);

// The job on the ranks of the hosts kept (answering[h]): those ranks renumbered in order, [launch] ranks
// their count and hostfile `hostfile` (hosts cleared; with no hostfile, [launch] hosts names the kept
// hosts as "name:ranks", which srun takes as its node list), [cluster] the described cluster's kept ranks
// (speeds, memory, nodes, every link as a matrix; kinds folded in), and every per-rank key cut to them
// ([cluster.emulate] slowdown, memory, the fluctuating rank; [parallel.balance] speeds); a fixed CGP
// grouping and pipeline stages are dropped, to be planned anew for the ranks left.
Job job_on_kept_hosts(const Job& job, const std::vector<PlacedHost>& hosts, const std::vector<bool>& answering,
                      const std::string& hostfile);

// The hostfile text of the kept hosts (their slots as given).
std::string kept_hostfile(const std::vector<PlacedHost>& hosts, const std::vector<bool>& answering);

}  // namespace dp
