// `dptrain run`'s elastic restarts ([launch] max_restarts; lib/launch/elastic.h): after a launch that a
// rank's or machine's death or the watchdog ended, the launcher (still holding the run folder) relaunches
// from the newest checkpoint on the machines that still answer, the cluster description cut to their
// ranks, and says so in one line.
#pragma once

#include <string>
#include <vector>

#include "lib/job/job.h"
#include "lib/train/train.h"

namespace dp::app {

// `status` and `end`: how the first launch of `job` into `dir` ended. `rank_flags`: arguments every
// launch's ranks get besides the job, --out and --resume (progress style, --json). `automatic`: the job's
// strategy was "auto" (`job` holds the choice): each restart chooses again for the ranks left. Returns
// the launcher's exit status: the last launch's.
int restart_while_allowed(const Job& job, const RunDir& dir, int status, RunEnd end,
                          const std::vector<std::string>& rank_flags, bool automatic);

}  // namespace dp::app
