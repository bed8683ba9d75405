// Elastic restarts ([launch] max_restarts, as torchrun's --max-restarts): which ended launches are worth
// another, the machines a launch placed its ranks on, which of them still answer, and the job for the
// ranks on those: the cluster description without the dropped machines' ranks. Pure but for
// hosts_answering, which runs the launch's remote shell.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/job/job.h"

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

// Throws UsageError when the machines of [launch] hostfile or hosts have fewer slots (all given) than
// [launch] ranks: mpirun would refuse, or oversubscribe them.
void check_slots(const LaunchSection& launch);

// Which of `hosts` answer through the launch's remote shell (OpenMPI's plm_rsh_agent from the
// environment, else ssh in batch mode) within `timeout_s`, all at once: a machine whose link is down,
// whose sshd is gone or that is powered off does not.
std::vector<bool> hosts_answering(const std::vector<std::string>& hosts, double timeout_s);

// Throws UsageError naming the machines of [launch] hostfile or hosts that hold ranks and do not answer
// through the remote shell within `timeout_s` (this machine's own names are not asked): before any rank
// starts, instead of mpirun's report from the middle of its launch.
void check_hosts_answer(const LaunchSection& launch, double timeout_s);

// The job on the ranks of the hosts kept (answering[h]): those ranks renumbered in order, [launch] ranks
// their count and hostfile `hostfile` (hosts cleared), [cluster] the described cluster's kept ranks
// (speeds, memory, nodes, every link as a matrix; kinds folded in), and every per-rank key cut to them
// ([cluster.emulate] slowdown, memory, the fluctuating rank; [parallel.balance] speeds); a fixed CGP
// grouping and pipeline stages are dropped, to be planned anew for the ranks left.
Job job_on_kept_hosts(const Job& job, const std::vector<PlacedHost>& hosts, const std::vector<bool>& answering,
                      const std::string& hostfile);

// The hostfile text of the kept hosts (their slots as given).
std::string kept_hostfile(const std::vector<PlacedHost>& hosts, const std::vector<bool>& answering);

}  // namespace dp
