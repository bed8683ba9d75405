// Data-parallel training of a job on a communicator: each epoch one global permutation from the seed,
// each step's global batch divided among the ranks, gradients averaged across ranks after backward,
// rank 0 evaluating, logging and checkpointing.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/job/job.h"
#include "lib/train/metrics.h"
#include "lib/train/run_dir.h"

namespace dp {

struct RunOptions {
  std::string out_dir;        // empty: the job's output_dir()
  bool resume = false;        // continue from the newest checkpoint in out_dir/checkpoints
  bool force = false;         // replace an earlier run in out_dir
  int64_t stop_after = -1;    // >= 0: end this invocation after that many completed steps (as if stopped)
  std::FILE* log = stdout;    // progress and notes (rank 0)
};

struct RunResult {
  Summary summary;
  std::vector<double> losses;  // global mean training loss of each step this invocation ran (every rank)
  int64_t first_step = 1;      // step number of losses[0]
  int stop_signal = 0;         // the run stopped early on this signal (stop_signal.h) after `summary.steps`
  int stop_rank = -1;          // the lowest rank that received it
  std::string stop_checkpoint; // the checkpoint written then ("" when checkpoints are off)
  bool finished_before = false;  // --resume of a run that had trained every step: nothing ran or changed
};

// What the checks before launching found besides errors.
struct RunInputs {
  std::optional<std::string> finished;  // --resume of a finished run: the line saying so (finished_run_note)
};

// The run folder: --out, else the job's [job] output_dir, else runs/<name>.
RunDir run_dir_of(const Job& job, const RunOptions& opts);

// Everything that can be checked before ranks start: the dataset, the model, the checkpoint to resume
// (verified, and matching the model), the output directory. Throws InputError subclasses.
RunInputs check_run_inputs(const Job& job, const RunOptions& opts);

// Runs the job on `comm` (all ranks call it). Returns on every rank; only rank 0 writes files.
RunResult train(const Job& job, Communicator& comm, const RunOptions& opts);

}  // namespace dp
