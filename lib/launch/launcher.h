// Launching dptrain under mpirun. Building the command is a pure function of the job's [launch] table and
// facts about this machine (tested without MPI); running it forks, execs and returns the exit status.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/job/job.h"

namespace dp {

// Facts about where `dptrain run` was started.
struct LaunchHost {
  bool is_root = false;
  int cores = 1;
  std::string self_exe;  // absolute path of this executable
  std::vector<std::string> environment;  // "NAME=VALUE" entries, as in environ

  // The value of `name` in `environment`, or null when unset.
  const char* getenv(std::string_view name) const;
};

LaunchHost this_host();

// True when this process is already one rank of an MPI job (mpirun, srun, or another PMI launcher).
bool inside_mpi_job(const std::function<const char*(const char*)>& getenv);

// The full mpirun command that runs `self_args` (the subcommand and its arguments) on every rank:
// -np from [launch] ranks, --host from hosts or --hostfile from hostfile (inside a Slurm allocation,
// neither: mpirun takes the allocation's nodes), --oversubscribe when local ranks exceed the cores,
// --allow-run-as-root for root, loopback-only transports on one machine, -x for the environment
// variables ranks need (OpenBLAS/OpenMP settings, PATH, LD_LIBRARY_PATH, DPTRAIN_*), then the job's
// extra mpirun_args verbatim. Reads nothing but its arguments.
// The most ranks mpirun_command starts per core on one machine (more: UsageError).
constexpr int64_t kMaxRanksPerCore = 8;
std::vector<std::string> mpirun_command(const LaunchSection& launch, const LaunchHost& host,
                                        const std::vector<std::string>& self_args);

// The command that starts the ranks: srun_command (slurm.h) when uses_srun, else mpirun_command.
// `launch.ranks` is the count to start (launch_ranks in slurm.h resolves it against an allocation).
std::vector<std::string> launch_command(const LaunchSection& launch, const LaunchHost& host,
                                        const std::vector<std::string>& self_args);

// The command as one line a shell would accept (arguments quoted where needed).
std::string shell_line(const std::vector<std::string>& argv);

// What run_and_wait does with SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to it while it waits.
enum class OnSignal {
  forward,       // the same signal goes on to the command (mpirun stops its ranks)
  request_stop,  // the first goes on as SIGUSR1 (every rank checkpoints and stops: stop_signal.h), a
                 // second, a second or more later, as SIGTERM (the ranks end at once)
};

// Runs argv (searching PATH) in a process group of its own, waits, returns its exit status (128 + signal
// when killed by a signal). After a stop signal sent to this process (see OnSignal), the status is 128 +
// that signal, once the command has ended. Throws UsageError when the program cannot be started (for
// example mpirun is not installed).
int run_and_wait(const std::vector<std::string>& argv, OnSignal on_signal = OnSignal::forward);

}  // namespace dp
