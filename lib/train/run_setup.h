// What a training run prepares before its first step (the checked inputs, the run folder, the
// checkpoint to resume) and the evaluation the loop in trainer.cpp calls.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/kernel_table.h"
#include "lib/comm/communicator.h"
#include "lib/data/dataset.h"
#include "lib/job/job.h"
#include "lib/train/checkpoint.h"
#include "lib/train/metrics.h"
#include "lib/train/run_dir.h"
#include "lib/train/run_lock.h"
#include "lib/train/trainer.h"
#include "models/model.h"

namespace dp::train_detail {

// What a run needs before its first step; building it checks every input and writes nothing.
struct Setup {
  RunDir dir;
  DatasetSplits data;
  std::unique_ptr<Model> model;
  std::optional<Checkpoint> resume_from;
  int64_t steps_per_epoch = 0, total_steps = 0;
};

// Collective, before anything is written: rank 0 holds the run folder (run_lock.h) unless the launcher
// that started the ranks holds it for them; a folder another run holds is the same UsageError (naming
// that run) on every rank.
std::optional<RunLock> hold_run_folder(Communicator& comm, const RunDir& dir);
// On --resume of a run whose newest checkpoint is its last step (or past it): the line that says so and
// how to train further; nullopt when there are steps left.
std::optional<std::string> finished_run_note(const Setup& s, const Job& job);

// Builds the model on `kernels` (the CPU's when the caller only checks the inputs) and checks the rest.
Setup build_setup(const Job& job, const RunOptions& opts, const Kernels& kernels);
// Collective, on --resume: every rank resumes from rank 0's checkpoint (each read its own view of the
// folder, which another host may see otherwise); a rank that chose another reads rank 0's instead.
void agree_on_resume(Communicator& comm, Setup& s, const Job& job);
// Rank 0 evaluates the whole held-out split (test images, or validation text) in evaluation_chunk()s, or
// in parts of at most micro_batch samples ([train] micro_batch) when that is > 0 and smaller.
EvalLine evaluate(Model& model, const Dataset& held_out, int64_t step, int64_t epoch, int64_t micro_batch = 0);

}  // namespace dp::train_detail
