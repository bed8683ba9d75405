// relaunch_under_mpirun: how `run` and `profile` start their ranks from outside an MPI job.
#include <cstdio>
#include <string_view>

#include "apps/dptrain/commands.h"
#include "lib/launch/launcher.h"

namespace dp::app {

int relaunch_under_mpirun(const LaunchSection& launch, ProcessArgs process, bool dry_run,
                          const std::vector<std::string>& extra_args) {
  // The ranks get this command line without --dry-run, so the printed command is the one a run executes.
  std::vector<std::string> self_args;
  for (int i = 1; i < *process.argc; ++i)
    if (std::string_view((*process.argv)[i]) != "--dry-run") self_args.emplace_back((*process.argv)[i]);
  self_args.insert(self_args.end(), extra_args.begin(), extra_args.end());
  const auto argv = mpirun_command(launch, this_host(), self_args);
  if (dry_run) {
    std::printf("%s\n", shell_line(argv).c_str());
    return 0;
  }
  std::fprintf(stderr, "dptrain: running %s\n", shell_line(argv).c_str());
  return run_and_wait(argv);
}

}  // namespace dp::app
