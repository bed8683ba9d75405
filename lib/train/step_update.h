// How a step's gradients become the same parameter update on every rank: lib/mra's synchronisation, plain
// data parallelism or MRA as [parallel.comm] says, over the communicator on CPU ranks and over a queue of
// NCCL collectives on GPU ranks. The trainer drives it the same way either way: begin (before
// forward/backward), then finish (after).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/comm/collective_queue.h"
#include "lib/job/job.h"
#include "lib/mra/mra.h"
#include "lib/train/optimizer.h"
#include "models/model.h"

namespace dp {

class StepUpdate {
 public:
  // gpu_queue: the GPU ranks' NCCL queue (make_nccl_queue; nullptr on the CPU, or for a single GPU rank).
  StepUpdate(const Job& job, Communicator& comm, Model& model, std::unique_ptr<CollectiveQueue> gpu_queue);
  ~StepUpdate();

  std::string describe() const;
  // Parameters whose optimizer state this rank keeps (all, or its shards under sharded MRA).
  int64_t state_count() const;
  // Before forward/backward: the update of this step will apply `opt` with learning rate lr.
  void begin(Optimizer& opt, double lr);
  // After forward/backward: on return the parameters are updated identically on every rank (under MRA's
  // overlap_forward some may still be arriving; the next forward waits for each layer's own).
  SyncTimes finish();
  // Milliseconds this step's forward waited for parameters still arriving from the previous step.
  double forward_wait_ms() const { return sync_ ? sync_->forward_wait_ms() : 0; }
  // Returns once every parameter is final: before evaluating, checkpointing or ending.
  void settle() {
    if (sync_) sync_->settle();
  }
  // Checkpoints (collective): this rank's optimizer state <-> the whole state.
  std::vector<float> full_state(const Optimizer& opt);
  void load_state(Optimizer& opt, std::span<const float> full);

 private:
  Model& model_;
  std::unique_ptr<CollectiveQueue> queue_;
  std::unique_ptr<GradientSync> sync_;  // absent for a single GPU rank
  Optimizer* opt_ = nullptr;
  double lr_ = 0;
  int64_t step_ = 0;  // the optimizer step begun by begin()
};

GradSyncOptions grad_sync_options(const CommSection& comm);

}  // namespace dp
