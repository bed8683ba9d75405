// One rank's part of a pipeline mini-batch (strategy "pipeline", pipeline_strategy.cpp): its stage's
// 1F1B operations (lib/pipeline/schedule.h) over the rows the layout gives it (lib/pipeline/layout.h).
// The first stage reads its inputs from the dataset, later ones receive them from the previous stage's
// replicas straight into the micro-batch's slot; outputs go on to the next stage's replicas, gradients
// come back from them and go back to the previous stage; parameter gradients accumulate over the
// micro-batches, and are summed over the stage's replicas (lib/mra; as the last micro-batch's backward
// makes each block's final) and applied. Receives are posted as soon as their buffer is free (a
// micro-batch's input once its slot's previous micro-batch is done, the next output gradient as soon as
// the last one is used), so transfers overlap the stage's compute; a send's buffer is written again only
// once the send is done. Everything is set up once; run() moves data (gloo's rule).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/kernel_table.h"
#include "lib/balance/emulate.h"
#include "lib/comm/communicator.h"
#include "lib/data/dataset.h"
#include "lib/job/job.h"
#include "lib/mra/mra.h"
#include "lib/optim/optimizer.h"
#include "lib/pipeline/plan.h"
#include "models/buffer.h"
#include "models/stage.h"

namespace dp::pipeline_detail {

// Every stage's ranks and planned rows, and this rank's place (the same tables on every rank).
struct Placement {
  std::vector<std::vector<int>> ranks;       // every stage's ranks, ascending
  std::vector<std::vector<int64_t>> shares;  // every stage's rows of a full micro-batch, per replica
  int64_t micro_batches = 1;
  int stage = -1, replica = 0;  // this rank's; stage -1: the plan left it out
  int stages() const { return int(ranks.size()); }
};

struct MiniBatchTimes {
  StepStats stats;         // the loss terms this rank computed (the last stage's replicas)
  int64_t rows = 0;        // samples this rank ran through its stage
  double compute_ms = 0;   // forward, backward and recomputation (with any emulated slowness)
  double wait_ms = 0;      // waiting for activations or gradients from other stages: the bubble
  double send_ms = 0;      // waiting for its own sends to leave before writing their buffer again
  SyncTimes sync;          // the gradient sum over the stage's replicas and the update
};

class StageRunner {
 public:
  // `comm`: the run's (paced) communicator, whose ranks the placement names; `sync`: the stage's
  // gradient synchronisation over its replicas; `data`: the training set; `paced_by_cpu`: the
  // emulator may pace compute by the thread's CPU time.
  StageRunner(Communicator& comm, Stage& stage, Placement place, GradientSync& sync, const Dataset& data,
              SlowdownEmulator& emulator, bool paced_by_cpu);
  ~StageRunner();

  // Trains the mini-batch of dataset samples `samples` (in order): gradients scaled by loss_scale, then
  // the update through `update` once they are summed over the replicas. `step` (0-based) paces the
  // emulated slowness.
  MiniBatchTimes run(std::span<const uint32_t> samples, float loss_scale, Updater update, int64_t step);
  // Forward only, through the same stages, rows and slots: the held-out samples `samples` of `held_out`
  // in micro-batches, no gradients, no emulated slowness. The loss terms this rank computed (the last
  // stage's replicas; others: none).
  StepStats evaluate(std::span<const uint32_t> samples, const Dataset& held_out);
  // The same over the whole of `held_out`, in mini-batches of `batch` (the training's, so that no slot
  // grows past what training holds).
  StepStats evaluate_all(const Dataset& held_out, int64_t batch);

 private:
  struct Layout;    // the rows and pieces of one mini-batch size (pipeline_runner.cpp)
  class MiniBatch;  // one run() in progress
  const Layout& layout_for(int64_t batch);

  Communicator& comm_;
  Stage& stage_;
  Placement place_;
  GradientSync& sync_;
  const Dataset& data_;
  SlowdownEmulator& emulator_;
  bool paced_by_cpu_;
  const Kernels& k_;
  std::vector<Buffer<int32_t>> tokens_, targets_;  // per slot: the first stage's token ids, the head's targets
  Buffer<float> dy_, dx_;  // the output gradient received for the next backward; the input gradient sent back
  BatchBuffer host_;
  std::vector<std::unique_ptr<Layout>> layouts_;  // by mini-batch size (a short last batch has its own)
};

// What a rank holds of its stage `st` (stage place.stage of the plan), built under the caller's memory
// meter: the stage (its blocks, their recomputation, a slot per micro-batch in flight), its gradient sync
// over `replicas` (the stage's replicas; native when alone: nothing to sum), its optimizer, and its runner
// over `comm`, whose ranks `place` names. Members destroyed in reverse order: the runner first.
struct StageParts {
  std::unique_ptr<Stage> stage;
  std::unique_ptr<GradientSync> sync;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<StageRunner> runner;
};
StageParts build_stage_parts(const Job& job, Model& model, const pipeline::Stage& st, const Placement& place,
                             Communicator& comm, Communicator& replicas, const Dataset& data,
                             SlowdownEmulator& emulator, const Kernels& kernels);

}  // namespace dp::pipeline_detail
