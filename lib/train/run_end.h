// How a launched run ended, in the launcher's words (`dptrain run` outside an MPI job): from mpirun's exit
// status and what the ranks left in the run directory (stopped.json, heartbeat.json, summary.json, the
// checkpoints), the launcher's exit status and the lines it prints on stderr.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "lib/train/run_dir.h"

namespace dp {

struct RunEnd {
  int status = 0;                  // the launcher's exit status
  std::vector<std::string> lines;  // for stderr, each after "dptrain: "
};

// `status`: mpirun's, or 128 + the signal sent to the launcher while the ranks ran; `launched`: when they
// were started. The outcomes:
//   finished (status 0, no stopped.json): 0, nothing to say;
//   a stop signal that came after the last step (no stopped.json; summary.json written since `launched`):
//     0, the run finished;
//   stopped on a signal (stopped.json): 128 + the signal when mpirun ended normally (a rank was
//     signalled), else mpirun's status; the step it stopped after and where to continue from: the
//     checkpoint it wrote, else the newest one (checkpoints off), else from the start;
//   anything else: mpirun's status; how it ended (no progress for wait_timeout: 124; stopped by a stop
//     signal; a process killed by another signal; failed with exit status N), what every rank was doing
//     at its last heartbeat, and the newest checkpoint to continue from, or from the start.
RunEnd run_end(const RunDir& dir, int status, std::filesystem::file_time_type launched);

}  // namespace dp
