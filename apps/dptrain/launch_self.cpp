// relaunch_under_mpirun: how `run` and `profile` start their ranks from outside an MPI job (mpirun, or
// srun inside a Slurm allocation), and the rank count a run takes from an allocation.
#include <cstdio>
#include <string_view>

#include "apps/dptrain/launch_self.h"
#include "lib/launch/elastic.h"
#include "lib/launch/hostfile.h"
#include "lib/launch/launcher.h"
#include "lib/launch/slurm.h"

namespace dp::app {

Job job_as_launched(const JobArgs& args, std::vector<std::string>& rank_args) {
  Job job = load_job(args.path, args.overrides);
  const int64_t ranks = launch_ranks(job.launch, this_host());
  if (ranks == job.launch.ranks) return job;
  const std::string set = "launch.ranks=" + std::to_string(ranks);
  std::vector<std::string> with_ranks = args.overrides;
  with_ranks.push_back(set);
  rank_args.push_back("--set=" + set);
  return load_job(args.path, with_ranks);
}

namespace {

// The launch command for these ranks' arguments, after checking the machines can hold the ranks.
std::vector<std::string> checked_command(const LaunchSection& job_launch, const std::vector<std::string>& self_args) {
  const LaunchHost host = this_host();
  LaunchSection launch = job_launch;
  launch.ranks = launch_ranks(launch, host);
  if (!launch.hostfile.empty()) read_hostfile(launch.hostfile);  // a bad hostfile stops here, not in mpirun
  check_slots(launch);
  return launch_command(launch, host, self_args);
}

}  // namespace

int relaunch_under_mpirun(const LaunchSection& job_launch, ProcessArgs process, bool dry_run,
                          const std::vector<std::string>& extra_args, OnSignal on_signal) {
  // The ranks get this command line without --dry-run, so the printed command is the one a run executes.
  std::vector<std::string> self_args;
  for (int i = 1; i < *process.argc; ++i)
    if (std::string_view((*process.argv)[i]) != "--dry-run") self_args.emplace_back((*process.argv)[i]);
  self_args.insert(self_args.end(), extra_args.begin(), extra_args.end());
  const auto argv = checked_command(job_launch, self_args);
  if (dry_run) {
    std::printf("%s\n", shell_line(argv).c_str());
    return 0;
  }
  std::fprintf(stderr, "dptrain: running %s\n", shell_line(argv).c_str());
  return run_and_wait(argv, on_signal);
}

int launch_with_args(const LaunchSection& launch, const std::vector<std::string>& self_args, OnSignal on_signal) {
  const auto argv = checked_command(launch, self_args);
  std::fprintf(stderr, "dptrain: running %s\n", shell_line(argv).c_str());
  return run_and_wait(argv, on_signal);
}

}  // namespace dp::app
