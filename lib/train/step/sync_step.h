// The synchronous step, written once. Strategy "data" over all ranks, a pipeline over its stages and
// each CGP group over its members all step alike: this rank does its part of the step (SyncWork:
// forward, backward, update), then one allgather tells every rank what every rank measured (its loss sum,
// times and stop request), from which the step's loss and its ranks' metrics lines follow.
// SyncLoop adds, for the strategies whose steps are the run's ("data", "pipeline"): the steps planned from
// their numbers (epoch, batch, learning rate), [train] on_nonfinite (a step undone on every rank, or the
// run stopped), reporting on rank 0, and a stop request that every rank honours after the same step.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/core/trace.h"
#include "lib/job/job.h"
#include "lib/optim/optimizer.h"
#include "lib/train/metrics.h"
#include "lib/train/step/nonfinite.h"
#include "lib/train/step/rank_gauges.h"
#include "lib/train/strategy.h"

namespace dp {

using StepClock = std::chrono::steady_clock;

// What step `index` (0-based, counted in the job's global batches) trains.
struct StepPlan {
  int64_t index = 0, epoch = 0, in_epoch = 0;
  int64_t batch = 0;  // samples of the step (the epoch's last step takes the remainder)
  double lr = 0;
  double terms = 0;   // the loss terms the gradients are divided by: batch x targets per sample
};
StepPlan plan_step(const Job& job, int64_t index, int64_t steps_per_epoch, int64_t total_steps, int64_t samples,
                   int64_t targets_per_sample);

// What each rank tells the others after every step, in one allgather.
struct RankRecord {
  double loss_sum = 0;      // summed in rank order for the step's loss
  StepTimes times;
  int32_t stop_signal = 0;  // this rank's pending stop request (stop_signal.h), 0: none
  int32_t stage = -1;       // a pipeline rank's stage, -1 elsewhere
};

// A rank's part of a synchronous step: what differs between strategies.
class SyncWork {
 public:
  virtual ~SyncWork() = default;
  // This rank's forward, backward and update of `plan`'s step: its loss sum and times (compute counted
  // from `step_start`, the end of its previous step). Sets the record's stage where it has one.
  virtual RankRecord compute(const StepPlan& plan, StepClock::time_point step_start) = 0;
  // Every rank's record of the step, in rank order, and the step's wall time (I-DAT's measurements, a
  // pipeline's phase). Called on every rank, before the step is reported.
  virtual void observe(const StepPlan& plan, std::span<const RankRecord> all, double seconds) {
    (void)plan, (void)all, (void)seconds;
  }
  // Every parameter final (the communication of the last step finished).
  virtual void settle() = 0;
  // For [train] on_nonfinite = "skip" (SyncLoop): the parameters this rank holds (settled), its optimizer
  // (null: it holds none), and undoing a step: the parameters kept before it put back (empty where the
  // rank holds none), with whatever else the step advanced. The guard restores the optimizer's state.
  virtual std::vector<float> held_params() = 0;
  virtual Optimizer* step_optimizer() = 0;
  virtual void undo_step(std::span<const float> kept) = 0;
};

// One synchronous step of `comm`'s ranks: a trace scope ("step", with `where` as its second argument),
// this rank's work, the memory gauges, and one exchange of every rank's record: its loss sum (carrying a
// fault injected for tests, nonfinite.h), times and `stop_signal`. Every rank's record, in rank order.
std::vector<RankRecord> run_sync_step(Communicator& comm, SyncWork& work, const StepPlan& plan,
                                      StepClock::time_point step_start, RankGauges& gauges, int stop_signal,
                                      TraceArg where = {});

// What a run's steps are counted in.
struct StepCounts {
  int64_t steps_per_epoch = 0, total_steps = 0;
  int64_t samples = 0;             // of the training set
  int64_t targets_per_sample = 1;  // loss terms per sample (a language model's tokens)
};
StepCounts step_counts(const StrategyInputs& in);

// The strategy's steps from `done` up to a pause, synchronous over all ranks of `comm`.
class SyncLoop {
 public:
  // gpu_index: the rank's GPU for its memory gauges, -1 on a CPU rank.
  SyncLoop(const Job& job, Communicator& comm, StepCounts counts, int gpu_index);
  // Trains the steps after `done` up to `until` (see Strategy::train_until); `where` labels the trace.
  Reached train_until(int64_t done, int64_t until, SyncWork& work, const StepSink& sink, TraceArg where = {});
  // The rank's stop request, read before each step's exchange: pending_stop_signal (tests replace it).
  std::function<int()> stop_request;

 private:
  // The step's record for rank 0's sink: its loss, time and every rank's metrics line.
  StepRecord step_record(const StepPlan& plan, std::span<const RankRecord> all, double seconds) const;

  const Job& job_;
  Communicator& comm_;
  StepCounts counts_;
  RankGauges gauges_;
  NonFiniteGuard guard_;
};

}  // namespace dp
