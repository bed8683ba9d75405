// A run once its inputs are checked (trainer.cpp prepares them): the strategy built and resumed, the run
// folder opened with the log's first lines, then the loop that trains up to each pause (an evaluation, a
// checkpoint, the end) and pauses, and the summary at the end. Rank 0 hears of every step through the
// StepSink it hands the strategy and keeps metrics.jsonl and the progress display; every rank returns
// the same RunResult.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "lib/comm/collective_queue.h"
#include "lib/comm/communicator.h"
#include "lib/core/trace.h"
#include "lib/job/job.h"
#include "lib/measure/device.h"
#include "lib/train/metrics.h"
#include "lib/train/progress.h"
#include "lib/train/run_setup.h"
#include "lib/train/strategy.h"
#include "lib/train/trainer.h"

namespace dp {

class RunLoop {
 public:
  using Clock = std::chrono::steady_clock;
  // Builds the job's strategy on `comm` and resumes it from the setup's checkpoint. Collective.
  RunLoop(const Job& job, Communicator& comm, const RunOptions& opts, train_detail::Setup& setup,
          const DeviceChoice& device, std::unique_ptr<CollectiveQueue> gpu_queue, Clock::time_point wall_start);
  // Rank 0 prepares the run folder and writes the job, the start line and the log's first lines; every
  // rank waits for it. Collective.
  void open();
  // Trains to the end, or to --stop-after, or to a stop request; evaluates and checkpoints at the pauses.
  void train_all();
  // The trace of this invocation (collective, over the launched communicator), noted in the log.
  void write_trace(Tracer& tracer, Communicator& launched);
  // Every rank's peak memory gathered, the summary written (rank 0), the losses shared: the result.
  // Collective.
  RunResult finish();

 private:
  StepSink rank0_sink();
  void pause_after(int64_t step);  // the evaluation and checkpoint due after `step`
  void note_stopped();             // rank 0: stopped.json and the log's line of a stop request
  void evaluate_at(int64_t step, int64_t epoch);
  void write_summary(const std::vector<Summary::RankMemory>& memory);

  const Job& job_;
  Communicator& comm_;
  const RunOptions& opts_;
  train_detail::Setup& s_;
  DeviceChoice device_;
  Clock::time_point wall_start_;
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<MetricsLog> metrics_;   // rank 0
  std::unique_ptr<Progress> progress_;    // rank 0
  RunResult result_;
  int64_t step_ = 0;                      // steps completed
  int64_t stop_ = 0;                      // this invocation trains up to this step
  int64_t eval_every_ = 0, ckpt_every_ = 0;  // the pauses' cadence in steps ([train], [checkpoint])
  double train_seconds_ = 0, last_loss_ = 0;
  int64_t trained_samples_ = 0, skipped_steps_ = 0;
  std::optional<EvalLine> last_eval_;  // rank 0
  int64_t evaluated_step_ = -1;        // every rank: the step last evaluated
  std::string machines_json_;
};

}  // namespace dp
