// Strategy "pipeline": the model's blocks cut into stages (pipeline_plan.h: the planner's plan or the
// job's stages), each on its rank or replicated over several, trained with 1F1B and a flush per
// mini-batch: the same mathematics as one process. No rank holds more of the model than its stage: the
// model it is given holds no parameters (registry.h, whole_model), every rank times the blocks one at a
// time, all at once (its speed as it will train; lib/measure/layer_profile.h), and rank 0 makes the plan
// on those speeds (on its timings, or the job's profile) and sends it to every rank; each rank builds its
// stage (only its blocks' parameters, gradients and optimizer state, a slot of activations per
// micro-batch in flight) under a memory meter of its own, and a StageRunner (pipeline_runner.h) runs its
// part of every mini-batch, and of the evaluation (forward only, stage to stage, the loss at the last).
// Checkpoints are sharded (checkpoint.h): each stage writes its own part, in parallel, and rank 0 the
// manifest; a stage resumes by reading its blocks' range from whichever parts hold it, so a run resumes
// under another partition, another rank count, or as another strategy (which reads them all); the
// manifest keeps the speeds the replicas divided micro-batches by, so that under the same stages a
// resumed run divides them alike and continues bit for bit.
#include "lib/train/pipeline/pipeline_strategy.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "lib/balance/emulate.h"
#include "lib/core/error.h"
#include "lib/core/memory_meter.h"
#include "lib/core/trace.h"
#include "lib/optim/optimizer.h"
#include "lib/train/checkpoint_shards.h"
#include "lib/train/pipeline/pipeline_decision.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/train/pipeline/pipeline_records.h"
#include "lib/train/pipeline/pipeline_runner.h"
#include "lib/measure/job_links.h"
#include "lib/measure/layer_profile.h"
#include "lib/train/step/step_update.h"
#include "lib/train/step/sync_step.h"

namespace dp {
namespace {

using pipeline_detail::Placement;
using pipeline_detail::phase_line;
using pipeline_detail::SharedPlan;
using pipeline_detail::placement_of;
using pipeline_detail::share_rank0_plan;
using Clock = std::chrono::steady_clock;

class PipelineStrategy final : public Strategy, private SyncWork {
 public:
  explicit PipelineStrategy(StrategyInputs in)
      : in_(std::move(in)), emulator_(in_.job, in_.comm.rank()), meter_(std::make_shared<MemoryMeter>()) {
    if (in_.gpu_queue || !in_.kernels.host_memory)
      throw JobError("parallel.strategy", "strategy \"pipeline\" runs on CPU ranks only",
                     "set [train] device = \"cpu\", or strategy = \"data\" on GPUs");
    if (in_.comm.size() != in_.job.launch.ranks)  // the plan places stages on [cluster]'s ranks
      throw JobError("[launch] ranks", fmt::format("the pipeline is planned for the job's {} rank(s), this launch has {}",
                                                   in_.job.launch.ranks, in_.comm.size()),
                     "launch the job's ranks, or set launch.ranks to the launch's");
    decide_plan();
    build_stage();
  }

  std::vector<std::string> describe() const override {
    std::vector<std::string> lines;
    const int S = place_.stages();
    const int64_t batch = in_.job.train.global_batch;
    lines.push_back(fmt::format("pipeline: {} stage(s), 1F1B with a flush, M = {} micro-batches of {} samples; {}",
                                S, place_.micro_batches, batch / place_.micro_batches, how_));
    for (int s = 0; s < S; ++s) {
      const pipeline::Stage& st = plan_.stages[size_t(s)];
      std::string ranks, rows, recomputed;
      for (size_t i = 0; i < st.ranks.size(); ++i) {
        ranks += fmt::format("{}{}", i ? "+" : "", st.ranks[i]);
        rows += fmt::format("{}{}", i ? "+" : "", place_.shares[size_t(s)][i]);
      }
      for (int b : st.recompute) recomputed += fmt::format("{}{}", recomputed.empty() ? "" : ",", b);
      std::string line = fmt::format("  stage {}: blocks {}-{} ({} .. {}) on rank {} ({} rows of a micro-batch)", s,
                                     st.first, st.last, in_.model.block(st.first).shape().name,
                                     in_.model.block(st.last).shape().name, ranks, rows);
      if (!recomputed.empty()) line += "; recomputes " + recomputed;
      if (prediction_)
        line += fmt::format("; predicted {:.3g} + {:.3g} ms per micro-batch, peak {:.3g} MB",
                            prediction_->stages[size_t(s)].forward_s * 1e3, prediction_->stages[size_t(s)].backward_s * 1e3,
                            *std::max_element(prediction_->stages[size_t(s)].peak_bytes.begin(),
                                              prediction_->stages[size_t(s)].peak_bytes.end()) / 1e6);
      lines.push_back(line);
    }
    if (!speeds_.empty()) {
      const double fastest = *std::max_element(speeds_.begin(), speeds_.end());
      std::string speeds;
      for (double s : speeds_) speeds += fmt::format("{}{:.3g}", speeds.empty() ? "" : ", ", s / fastest);
      lines.push_back(std::string(speeds_resumed_ ? "  speeds the checkpoint's division was made from"
                                                  : "  speeds measured on all ranks at once") +
                      ", relative to the fastest: [" + speeds + "]");
    }
    if (prediction_)
      lines.push_back(fmt::format("  predicted: {:.3g} ms per mini-batch, {:.0f} samples/s, bubble {:.1f}%",
                                  prediction_->minibatch_s * 1e3, prediction_->samples_per_s,
                                  prediction_->bubble_fraction * 100));
    for (const std::string& w : warnings_) lines.push_back("  warning: " + w);
    if (sync_) lines.push_back("  inside a stage's replicas, gradients: " + sync_->describe());
    const std::string links = links_text(in_.job);
    if (!links.empty()) lines.push_back(links);
    return lines;
  }

  // Each replica of a stage reads its blocks' parameters and, of their optimizer state, only the ranges it
  // keeps (from the parts that hold them, or a checkpoint's values).
  void resume(const Checkpoint& from) override {
    optimizer_steps_ = from.optimizer_steps;
    if (!stage_) return;
    const int64_t begin = stage_->param_begin();
    stage_->params_from_host(read_checkpoint_range(from, begin, stage_->param_end(), 0).params);
    const std::vector<ParamRange> kept = sync_->state_ranges(stage_comm_->rank());
    optimizer_->state_from_host(read_kept_state(from, begin, kept, optimizer_->slots()));
    optimizer_->set_steps_taken(from.optimizer_steps);
  }

  Reached train_until(int64_t done, int64_t until, const StepSink& sink) override {
    const MeterScope scope(meter_);
    phase_step_ms_.clear();
    phase_records_.clear();
    const Reached reached = loop_.train_until(done, until, *this, sink, {"stage", place_.stage});
    report_phase(reached.step, sink);
    return reached;
  }

  // Through the stages, in mini-batches of the training's size (so no slot grows past what training
  // holds); the last stage's loss terms summed on rank 0.
  StepStats evaluate(const Dataset& held_out) override {
    const MeterScope scope(meter_);
    const StepStats mine = runner_ ? runner_->evaluate_all(held_out, in_.job.train.global_batch) : StepStats{};
    return summed_over_ranks(in_.comm, mine);
  }

  // Sharded: each replica of each stage writes its piece of the stage's blocks (parameters and optimizer
  // state, brought from the replicas that keep it) as one part, all at once; rank 0 names them in the
  // manifest.
  Checkpoint checkpoint(int64_t step, const std::string& path) override {
    const MeterScope scope(meter_);
    const auto kind = make_optimizer(in_.job.optim, 0);  // its name and state slots
    std::optional<CheckpointPart> mine;
    if (stage_) {
      const ReplicatedState held{stage_->param_begin(), stage_->params(), optimizer_->state(), kind->slots(),
                                 [this](int r) { return sync_->state_ranges(r); }};
      mine = write_replica_part(*stage_comm_, held, path, in_.comm.rank(), in_.model.fingerprint(), step);
    }
    Checkpoint c;
    c.model_fingerprint = in_.model.fingerprint();
    c.optimizer = kind->name();
    c.step = step;
    c.optimizer_steps = optimizer_steps_;
    c.sharded_params = in_.model.parameter_count();
    c.sharded_slots = kind->slots();
    c.balance_weights = speeds_;  // rank 0's: what the replicas divide by (see with_resumed_speeds)
    return gather_manifest(in_.comm, mine, in_.comm.rank(), path, std::move(c));
  }

 private:
  // This rank's part of the mini-batch: its stage's forward and backward of every micro-batch (1F1B),
  // the replicas' gradients summed, the update applied as each range is final. Every stage takes one
  // optimizer step per mini-batch (a rank outside the plan counts it too).
  RankRecord compute(const StepPlan& plan, StepClock::time_point) override {
    RankRecord mine;
    mine.stage = place_.stage;
    ++optimizer_steps_;
    if (!runner_) return mine;
    const int64_t global_batch = in_.job.train.global_batch;
    const std::span<const uint32_t> samples =
        std::span<const uint32_t>(order_.of(plan.epoch)).subspan(size_t(plan.in_epoch * global_batch), size_t(plan.batch));
    const int64_t opt_step = optimizer_->begin_step();
    Optimizer& opt = *optimizer_;
    const double lr = plan.lr;
    const auto t = runner_->run(samples, float(1.0 / plan.terms), [&opt, lr, opt_step](float* p, const float* g,
                                                                                     int64_t at, int64_t count) {
      opt.update_range(p, g, at, count, lr, opt_step);
    }, plan.index);
    mine.loss_sum = t.stats.loss_sum;
    mine.times = StepTimes{t.compute_ms, t.wait_ms, t.send_ms + t.sync.wait_ms + t.sync.comm_ms, t.sync.update_ms, t.rows};
    // The mini-batch's samples, counted once: by the first stage's first replica, which reads them.
    if (place_.stage == 0 && place_.replica == 0) mine.times.samples_digest = samples_digest(samples);
    return mine;
  }

  // Rank 0 keeps the phase's full mini-batches for its pipeline line.
  void observe(const StepPlan& plan, std::span<const RankRecord> all, double seconds) override {
    if (in_.comm.rank() != 0 || plan.batch != in_.job.train.global_batch) return;
    phase_step_ms_.push_back(seconds * 1e3);
    phase_records_.emplace_back(all.begin(), all.end());
  }

  void settle() override {
    if (sync_) sync_->settle();
  }
  std::vector<float> held_params() override {
    return stage_ ? std::vector<float>(stage_->params().begin(), stage_->params().end()) : std::vector<float>{};
  }
  Optimizer* step_optimizer() override { return runner_ ? optimizer_.get() : nullptr; }
  void undo_step(std::span<const float> kept) override {
    if (runner_) std::copy(kept.begin(), kept.end(), stage_->params().begin());
    --optimizer_steps_;
  }

  // Every rank times the blocks, one at a time, all at once (as they will train: sharing this machine's
  // cores, their emulated slowness included); rank 0 plans on those speeds, with its own timings or the
  // job's profile; everyone learns the plan or the error.
  void decide_plan() {
    const pipeline_detail::TimedBlocks timed_all = pipeline_detail::time_blocks_everywhere(in_.job, in_.comm, in_.model, in_.train_set);
    const pipeline::BlockProfile& timed = timed_all.profile;
    const std::vector<double>& step_ms = timed_all.step_ms;
    const std::vector<int64_t>& local_batch = timed_all.local_batch;
    const SharedPlan shared = share_rank0_plan(in_.comm, [&] {
      const pipeline::BlockProfile profile =
          in_.job.parallel.pipeline.profile.empty() ? timed : job_layer_profile(in_.job, in_.model);
      const pipeline::Workload w = job_pipeline_workload(in_.job, profile);
      Cluster cluster = measured_cluster(in_.job, w, step_ms, local_batch);
      if (in_.resuming)
        if (auto resumed = pipeline_detail::with_resumed_speeds(cluster, in_.resuming->balance_weights))
          cluster = std::move(*resumed), speeds_resumed_ = true;
      speeds_ = cluster.speeds();
      const PipelineChoice choice = choose_pipeline_plan(in_.job, w, cluster);
      prediction_ = choice.result.prediction;
      // What each rank's compute should cost at its described speed: a slow machine shows against it.
      expected_ms_per_sample_ = pipeline_detail::expected_compute_ms_per_sample(
          choice.result.plan, choice.result.prediction, w, pipeline_detail::described_speeds(in_.job));
      warnings_ = choice.warnings;
      how_ = fmt::format("{}, from {}", choice.how,
                         in_.job.parallel.pipeline.profile.empty()
                             ? fmt::format("the blocks timed now (micro-batch {})", profile.micro_batch)
                             : "the profile " + in_.job.parallel.pipeline.profile);
      return choice.result;
    });
    plan_ = shared.plan;
    place_ = placement_of(shared, in_.comm.rank());
  }

  // This rank's stage, its replicas' communicator and gradient sync, its optimizer and runner: all
  // allocated under the stage's memory meter.
  void build_stage() {
    const MeterScope scope(meter_);
    const int S = place_.stages(), s = place_.stage;
    stage_comm_ = in_.comm.split(s >= 0 ? s : S + in_.comm.rank(), in_.comm.rank());
    if (s < 0) return;
    MemoryMeter::process().set_role(fmt::format("stage {} of {}", s, S));
    pipeline_detail::StageParts parts = pipeline_detail::build_stage_parts(
        in_.job, in_.model, plan_.stages[size_t(s)], place_, in_.comm, *stage_comm_, in_.train_set, emulator_,
        in_.kernels);
    stage_ = std::move(parts.stage);
    sync_ = std::move(parts.sync);
    optimizer_ = std::move(parts.optimizer);
    runner_ = std::move(parts.runner);
  }

  // The pipeline line of the phase (rank 0 writes it): every rank's stage peak, gathered. Collective.
  void report_phase(int64_t step, const StepSink& sink) {
    const double peak = double(meter_->peak());
    const std::vector<double> peaks = in_.comm.size() > 1 ? in_.comm.allgather_value(peak) : std::vector{peak};
    if (in_.comm.rank() == 0 && !phase_step_ms_.empty())
      sink.record(json_line(phase_line(plan_, place_.micro_batches, prediction_ ? &*prediction_ : nullptr, step,
                                       phase_step_ms_, phase_records_, peaks, expected_ms_per_sample_)));
  }

  StrategyInputs in_;
  SlowdownEmulator emulator_;
  std::shared_ptr<MemoryMeter> meter_;  // this rank's stage: everything it allocates
  pipeline::Plan plan_;
  Placement place_;
  std::optional<pipeline::Prediction> prediction_;  // rank 0
  std::vector<std::string> warnings_;               // rank 0
  std::vector<double> speeds_;                      // rank 0: the measured speeds the plan is for
  bool speeds_resumed_ = false;                     // rank 0: speeds_ are a checkpoint's (--resume)
  std::vector<double> expected_ms_per_sample_;      // rank 0: per rank, at its described speed
  std::string how_;                                 // rank 0
  std::unique_ptr<Communicator> stage_comm_;
  std::unique_ptr<Stage> stage_;
  std::unique_ptr<GradientSync> sync_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<pipeline_detail::StageRunner> runner_;
  EpochOrder order_{in_.train_set.count, in_.job.job.seed};
  SyncLoop loop_{in_.job, in_.comm, step_counts(in_), -1};  // pipelines run on CPU ranks only
  int64_t optimizer_steps_ = 0;        // taken by every stage alike (rank 0 may hold none)
  std::vector<double> phase_step_ms_;  // rank 0: the phase's full mini-batches' times
  std::vector<std::vector<RankRecord>> phase_records_;  // and every rank's records of them
};

}  // namespace

StrategyEntry pipeline_strategy_entry() {
  return {StrategyKind::pipeline, check_pipeline_job, [](StrategyInputs in) -> std::unique_ptr<Strategy> {
            return std::make_unique<PipelineStrategy>(std::move(in));
          }, /*whole_model=*/false, /*reads_own_ranges=*/true};
}

}  // namespace dp
