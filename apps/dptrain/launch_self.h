// How `run` and `profile` start their ranks from outside an MPI job (mpirun, or srun inside a Slurm
// allocation; launch_self.cpp), and the job as its ranks will load it.
#pragma once

#include <string>
#include <vector>

#include "apps/dptrain/commands.h"
#include "lib/job/job.h"
#include "lib/launch/launcher.h"

namespace dp::app {

// Outside an MPI job: runs this same command line (less --dry-run, plus extra_args) on the ranks of
// `launch` through mpirun (or srun in a Slurm allocation, slurm.h) and returns its exit status; with
// dry_run, prints the command instead. Checks the hostfile first. `on_signal`: what a stop signal sent to
// this process while the ranks run does (launcher.h).
int relaunch_under_mpirun(const LaunchSection& launch, ProcessArgs process, bool dry_run,
                          const std::vector<std::string>& extra_args = {}, OnSignal on_signal = OnSignal::forward);

// The same with the ranks' command line given (`dptrain` and then `self_args`): a restart's.
int launch_with_args(const LaunchSection& launch, const std::vector<std::string>& self_args, OnSignal on_signal);

// The job as its ranks will load it: inside a Slurm allocation, a job that does not say how many ranks
// takes the allocation's tasks ("--set=launch.ranks=N" appended to rank_args for the ranks).
Job job_as_launched(const JobArgs& job, std::vector<std::string>& rank_args);

}  // namespace dp::app
