// How a step's gradients become the same parameter update on every rank: lib/mra's synchronisation, plain
// data parallelism or MRA as [parallel.comm] says, over the communicator on CPU ranks and over a queue of
// NCCL collectives on GPU ranks. The trainer drives it the same way either way: begin (before
// forward/backward), then finish (after).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/balance/balance.h"
#include "lib/balance/emulate.h"
#include "lib/comm/communicator.h"
#include "lib/comm/collective_queue.h"
#include "lib/job/job.h"
#include "lib/mra/mra.h"
#include "lib/data/dataset.h"
#include "lib/train/metrics.h"
#include "lib/optim/optimizer.h"
#include "models/model.h"

namespace dp {

class StepUpdate {
 public:
  // gpu_queue: the GPU ranks' NCCL queue (make_nccl_queue; nullptr on the CPU, or for a single GPU rank).
  // Also applies [train]'s memory levers to the replica: the model recomputes its blocks as
  // [train] recompute says, and timed_step runs its share in micro-batches of [train] micro_batch.
  StepUpdate(const Job& job, Communicator& comm, Model& model, std::unique_ptr<CollectiveQueue> gpu_queue);
  ~StepUpdate();
  // [train] micro_batch: the most samples one forward and backward runs (0: the rank's whole share).
  int64_t micro_batch() const { return micro_batch_; }

  std::string describe() const;
  // Parameters whose optimizer state this rank keeps (all, or its shards under sharded MRA).
  int64_t state_count() const;
  // Before forward/backward: the update of this step will apply `opt` with learning rate lr.
  void begin(Optimizer& opt, double lr);
  // After forward/backward: on return the parameters are updated identically on every rank (under MRA's
  // overlap_forward some may still be arriving; the next forward waits for each layer's own).
  SyncTimes finish();
  // Called before each part of the gradients is handed to the synchronisation (an emulated slow rank
  // sleeps there until its backward would have made that part: SlowdownEmulator::pace); empty: none.
  void pace_gradients(std::function<void()> pace) { pace_ = std::move(pace); }
  // Milliseconds this step's forward waited for parameters still arriving from the previous step.
  double forward_wait_ms() const { return sync_ ? sync_->forward_wait_ms() : 0; }
  // Returns once every parameter is final: before evaluating, checkpointing or ending.
  void settle() {
    if (sync_) sync_->settle();
  }
  // Checkpoints (collective): this rank's optimizer state <-> the whole state.
  std::vector<float> full_state(const Optimizer& opt);
  void load_state(Optimizer& opt, std::span<const float> full);
  // The parameters whose optimizer state rank `rank` keeps, in the order of its state (all, or its shards
  // under sharded MRA): GradientSync::state_ranges.
  std::vector<ParamRange> state_ranges(int rank) const;

 private:
  Model& model_;
  std::unique_ptr<CollectiveQueue> queue_;
  std::unique_ptr<GradientSync> sync_;  // absent for a single GPU rank
  std::function<void()> pace_;
  Optimizer* opt_ = nullptr;
  double lr_ = 0;
  int64_t step_ = 0;  // the optimizer step begun by begin()
  int64_t micro_batch_ = 0;
};

// One rank's part of a synchronous step, timed as I-DAT balances it: the update begun with `lr`, forward
// and backward of the samples `indices` (gradients scaled by `grad_scale`; in micro-batches of
// update.micro_batch() samples, the gradients accumulated and communicated once), the emulated slowdown of step
// `emulated_step`, then the rest of the update. compute_ms runs from `step_start` (the end of the rank's
// previous step, so its host work in between counts) and leaves out the forward's waits for parameters.
struct RankStep {
  StepStats stats;
  StepTimes times;
};
RankStep timed_step(StepUpdate& update, Optimizer& opt, double lr, Model& model, const Dataset& data,
                    std::span<const uint32_t> indices, BatchBuffer& buffer, float grad_scale,
                    SlowdownEmulator& emulator, int64_t emulated_step,
                    std::chrono::steady_clock::time_point step_start);
// I-DAT's view of a step: every rank's local batch and compute time. Returns whether the division changed.
bool observe_step(Balancer& balancer, int64_t step, std::span<const StepTimes> ranks);

}  // namespace dp
