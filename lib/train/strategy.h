// How a run trains, behind one small interface. The trainer (trainer.cpp) keeps the run directory, the
// progress display, metrics.jsonl, and the evaluation and checkpoint cadence; it asks the strategy to train
// up to the next pause (an evaluation, a checkpoint, the end) and the strategy owns every step until then.
// Each strategy is a folder of lib/train (data/, cgp/, pipeline/) and one line of the registry
// (registry.cpp); what it reports reaches the trainer through a StepSink, on rank 0.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel_table.h"
#include "lib/comm/collective_queue.h"
#include "lib/comm/communicator.h"
#include "lib/data/dataset.h"
#include "lib/job/job.h"
#include "lib/train/checkpoint.h"
#include "lib/train/metrics.h"
#include "models/model.h"

namespace dp {

// One completed step of the run, as rank 0 logs it.
struct StepRecord {
  int64_t step = 0, epoch = 0;   // step: 1-based, counted in global batches of the job
  double loss = 0, lr = 0;       // mean training loss of the step's samples
  int64_t samples = 0;           // samples the step trained (all ranks)
  double seconds = 0;            // the step's wall time
  std::vector<TrainLine> ranks;  // every rank's metrics.jsonl line, written at [log] every (may be empty)
};

// What a strategy reports, every call on rank 0 only (the same rule for every strategy; the other ranks'
// sinks are never called): each completed step, in order; the steps it undid; lines for the log; and
// its own metrics.jsonl lines, serialised by the strategy (a JSON object with "kind" and "step").
struct StepSink {
  std::function<void(const StepRecord&)> step;
  std::function<void(int64_t step, double loss)> skipped;  // a step undone ([train] on_nonfinite = "skip")
  std::function<void(const std::string&)> note;
  std::function<void(const std::string& json_object)> record;
};

// What the strategy trains: the model (already built on the run's kernels) and its dataset.
struct StrategyInputs {
  const Job& job;
  Communicator& comm;
  Model& model;
  const Dataset& train_set;
  const Kernels& kernels;
  std::unique_ptr<CollectiveQueue> gpu_queue;  // GPU ranks' NCCL queue, or null
  int64_t steps_per_epoch = 0, total_steps = 0;
  const Checkpoint* resuming = nullptr;  // on --resume, the checkpoint resume() will be given
};

// Where train_until ended: at `until`, or after an earlier step when a rank asked the run to stop
// (stop_signal.h). The same on every rank.
struct Reached {
  int64_t step = 0;      // steps completed
  int stop_signal = 0;   // the signal that asked the run to stop, 0 when none
  int stop_rank = -1;    // the lowest rank that received it
};

// Rank 0 (others return {} at once): `model` on the whole held-out split, in evaluation_chunk()s, or in
// parts of at most micro_batch samples ([train] micro_batch) when that is > 0 and smaller.
StepStats evaluate_on_rank0(const Communicator& comm, Model& model, const Dataset& held_out,
                            int64_t micro_batch = 0);
// Collective: every rank's loss terms added up, in rank order (the same sum on every rank).
StepStats summed_over_ranks(Communicator& comm, const StepStats& mine);

// After step `step`, from every rank's record of it (a `stop_signal` field each, 0: none): where the
// strategy stops, the same on every rank.
template <class Record>
Reached reached_after(int64_t step, const std::vector<Record>& all) {
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r].stop_signal != 0) return {step, int(all[r].stop_signal), int(r)};
  return {step};
}

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Lines for the start of the log (rank 0 prints them).
  virtual std::vector<std::string> describe() const = 0;
  // Continues from a checkpoint (all ranks, after construction).
  virtual void resume(const Checkpoint& from) = 0;
  // Trains the steps after `done` up to `until` (1-based, inclusive), or fewer when a rank has a pending
  // stop request: every rank's request travels with an exchange the strategy makes anyway, and all stop
  // after the same step. Collective: every rank returns after the step reached, with the parameters final
  // (settled).
  virtual Reached train_until(int64_t done, int64_t until, const StepSink& sink) = 0;
  // Collective: the loss terms of the whole held-out split under the run's parameters, complete on rank 0
  // (evaluate_on_rank0 where rank 0 holds the whole model; a pipeline runs it through its stages).
  virtual StepStats evaluate(const Dataset& held_out) = 0;
  // Collective: the checkpoint of the run after step `step` (complete on rank 0), to be written to `path`:
  // its values, or, for a strategy whose ranks hold parts, the parts they have written beside `path`
  // (write_checkpoint_part), which rank 0's manifest then names.
  virtual Checkpoint checkpoint(int64_t step, const std::string& path) = 0;
};

}  // namespace dp
