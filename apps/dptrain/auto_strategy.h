// [parallel] strategy = "auto" (dptrain run's launcher): the winner of `plan --compare` on the job's
// cluster, recorded in the run folder (strategy.txt: the comparison; strategy.toml: the choice) so that
// --resume keeps it; a restart on fewer machines chooses again for the ranks left.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/job/job.h"
#include "lib/train/run_dir.h"

namespace dp::app {

struct AutoChoice {
  Job job;                        // the job with the winner's overrides applied
  std::vector<std::string> sets;  // those overrides ("parallel.strategy=cgp", ...)
  std::string name;               // "CGP, solver's groups, I-DAT inside"
  std::string line;               // one line for the run's first lines
  std::string table;              // the comparison as plan --compare prints it ("" when kept on resume)
};

// The winner for `job` (strategy auto) on its cluster, step times from [parallel.pipeline] profile or its
// blocks timed here. Throws InputError when nothing fits, naming the smallest pipeline that would.
AutoChoice choose_strategy(const Job& job);

// The choice an earlier launch of this run recorded in `dir` (for --resume), applied to `job`; none when
// the folder has none.
std::optional<AutoChoice> recorded_choice(const Job& job, const RunDir& dir);

// Writes strategy.toml (and strategy.txt when the choice has its table) into the run folder.
void record_choice(const RunDir& dir, const AutoChoice& choice);

}  // namespace dp::app
