// Strategy "cgp-pipeline": CGP whose groups are pipelines (HetPipe's structure, with dptrain's CGP
// exchanges). The ranks form groups (a fixed grouping from [parallel.cgp] groups, else one group per
// node of [cluster]) of equal size; every group runs the same stages (a plan for group 0's devices
// chosen with the groups' exchanges, lib/measure/hybrid_plan.h, on the blocks timed on every rank, or
// [parallel.pipeline] stages, ranks counted within a group), placed alike on its ranks in run order;
// inside a group a mini-batch is a 1F1B pipeline exactly as strategy "pipeline" runs it; between
// groups, CGP's asynchronous exchanges stage by stage. The global model is held in shards, one per
// stage, each on a thread of group 0's first replica of the stage, so no rank holds more than its stage
// and its stage's shard (hybrid_group.h says how an exchange goes). One group is the pipeline; one
// stage per group is CGP. Groups are not regrouped while training. Evaluations and checkpoints are of
// the global model, through group 0 (which takes it from the shards at every pause); a checkpoint holds
// group 0's optimizer state, which every group resumes from.
#include "lib/train/hybrid/hybrid_strategy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lib/cgp/cgp.h"
#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/measure/hybrid_plan.h"
#include "lib/measure/job_links.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/train/checkpoint_shards.h"
#include "lib/train/hybrid/hybrid_group.h"

namespace dp {
namespace {

using namespace cgp_detail;
using hybrid_detail::GroupPlace;
using hybrid_detail::PipelineGroup;

class HybridStrategy final : public Strategy {
 public:
  explicit HybridStrategy(StrategyInputs in)
      : in_(std::move(in)), clock_{in_.train_set.count, in_.job.train.global_batch, in_.steps_per_epoch},
        emulator_(in_.job, in_.comm.rank()), meter_(std::make_shared<MemoryMeter>()) {
    if (in_.gpu_queue || !in_.kernels.host_memory)
      throw JobError("parallel.strategy", "strategy \"cgp-pipeline\" runs on CPU ranks only",
                     "set [train] device = \"cpu\", or strategy = \"data\" on GPUs");
    if (in_.comm.size() != in_.job.launch.ranks)
      throw JobError("[launch] ranks", fmt::format("the groups are formed of the job's {} rank(s), this launch has {}",
                                                   in_.job.launch.ranks, in_.comm.size()),
                     "launch the job's ranks, or set launch.ranks to the launch's");
    grouping_ = cgp::pipeline_groups(in_.job);
    const int me = in_.comm.rank();
    GroupPlace place;
    place.group = grouping_[size_t(me)];
    place.groups = *std::max_element(grouping_.begin(), grouping_.end()) + 1;
    for (int r = 0; r < me; ++r) place.local += grouping_[size_t(r)] == place.group;
    std::vector<int> group0;
    for (int r = 0; r < int(grouping_.size()); ++r)
      if (grouping_[size_t(r)] == 0) group0.push_back(r);
    const pipeline_detail::TimedBlocks timed =
        pipeline_detail::time_blocks_everywhere(in_.job, in_.comm, in_.model, in_.train_set);
    const pipeline_detail::SharedPlan shared = pipeline_detail::share_rank0_plan(in_.comm, [&] {
      const pipeline::BlockProfile profile =
          in_.job.parallel.pipeline.profile.empty() ? timed.profile : job_layer_profile(in_.job, in_.model);
      // Every rank's measured speed: the groups' exchanges are priced with the plan.
      const Cluster cluster = measured_cluster(
          in_.job, job_pipeline_workload(pipeline_group_job(in_.job, int(group0.size())), profile), timed.step_ms,
          timed.local_batch);
      speeds_ = cluster.subset(group0).speeds();
      const HybridChoice choice = choose_hybrid_plan(in_.job, profile, cluster);
      prediction_ = choice.pipeline.result.prediction;
      how_ = fmt::format("{} for group 0's devices", choice.pipeline.how);
      return choice.pipeline.result;
    });
    place.leading_stage = pipeline_detail::placement_of(shared, 0).stage;
    if (place.leading_stage < 0)
      throw JobError("[parallel.pipeline] stages", "the plan leaves the run's rank 0 out; its shard leads the groups",
                     "give rank 0 a stage");
    plan_ = shared.plan;
    group_ = std::make_unique<PipelineGroup>(in_, in_.comm.split(place.group, me), place, shared, clock_, emulator_,
                                             meter_);
    place_ = place;
  }

  std::vector<std::string> describe() const override {
    const auto& placement = group_->placement();
    const int S = placement.stages();
    std::vector<std::string> lines = {
        fmt::format("CGP of pipelines: groups {} ({}); in each, {} stage(s) by {}, 1F1B with M = {} micro-batches of "
                    "a {}-sample mini-batch; global model in {} shard(s), one per stage, led by stage {}'s; exchange "
                    "every {} local step(s), staleness bound {}{}",
                    cgp::grouping_text(grouping_),
                    in_.job.parallel.cgp.groups.empty() ? "one per node" : "fixed by [parallel.cgp] groups", S, how_,
                    placement.micro_batches, group_->group_batch(), S, place_.leading_stage,
                    in_.job.parallel.cgp.exchange_every, in_.job.parallel.cgp.max_staleness,
                    in_.job.parallel.cgp.deterministic ? ", deterministic order" : "")};
    for (int s = 0; s < S; ++s) {
      const pipeline::Stage& st = plan_.stages[size_t(s)];
      std::string ranks;
      for (int g = 0; g < place_.groups; ++g) {
        std::vector<int> members;
        for (int r = 0; r < int(grouping_.size()); ++r)
          if (grouping_[size_t(r)] == g) members.push_back(r);
        ranks += g ? "; " : "";
        for (size_t i = 0; i < st.ranks.size(); ++i) ranks += fmt::format("{}{}", i ? "+" : "", members[size_t(st.ranks[i])]);
      }
      std::string line = fmt::format("  stage {}: blocks {}-{} on ranks {} (a group each)", s, st.first, st.last, ranks);
      if (prediction_)
        line += fmt::format("; predicted {:.3g} + {:.3g} ms per micro-batch on group 0",
                            prediction_->stages[size_t(s)].forward_s * 1e3, prediction_->stages[size_t(s)].backward_s * 1e3);
      lines.push_back(line);
    }
    if (!speeds_.empty()) {
      const double fastest = *std::max_element(speeds_.begin(), speeds_.end());
      std::string speeds;
      for (double v : speeds_) speeds += fmt::format("{}{:.3g}", speeds.empty() ? "" : ", ", v / fastest);
      lines.push_back("  group 0's speeds measured on all ranks at once, relative to its fastest: [" + speeds + "]");
    }
    if (prediction_)
      lines.push_back(fmt::format("  predicted for group 0 alone: {:.3g} ms per mini-batch, {:.0f} samples/s",
                                  prediction_->minibatch_s * 1e3, prediction_->samples_per_s));
    const std::string links = links_text(in_.job);
    if (!links.empty()) lines.push_back(links);
    return lines;
  }

  // Every group's stages read their blocks and the ranges of optimizer state they keep; each shard's
  // host sets its shard to its stage's values.
  void resume(const Checkpoint& from) override {
    optimizer_steps_ = from.optimizer_steps;
    if (!group_->has_stage()) return;
    Stage& stage = group_->stage_params();
    const int64_t begin = stage.param_begin();
    const std::vector<float> params = read_checkpoint_range(from, begin, stage.param_end(), 0).params;
    std::copy(params.begin(), params.end(), stage.params().begin());
    const std::vector<ParamRange> kept = group_->sync().state_ranges(group_->stage_comm().rank());
    group_->optimizer().state_from_host(read_kept_state(from, begin, kept, group_->optimizer().slots()));
    group_->optimizer().set_steps_taken(from.optimizer_steps);
    if (group_->server()) group_->server()->set_global(params);
  }

  Reached train_until(int64_t done, int64_t until, const StepSink& sink) override {
    const MeterScope scope(meter_);
    ParameterServer* server = group_->server();
    if (server) server->begin_phase(group_->shard_grouping(), done, until);
    in_.comm.barrier();  // every shard knows the phase before any request
    const bool reports = in_.comm.rank() == 0;  // the leading shard's host
    std::function<void()> between;
    if (reports) between = [&] { report_steps(server->take_completed(), sink); };
    // A group alone is the global model: it pushes its update once, after the phase's last chunk.
    const bool alone = place_.groups == 1;
    if (group_->has_stage()) {
      ExchangeReply chunk = group_->exchange(ExchangeKind::read, 0, 0, 0);
      while (chunk.chunk_count > 0) {
        const double loss = group_->train_chunk(chunk.chunk_begin, chunk.chunk_count, between);
        const ExchangeKind kind = alone && chunk.remaining > 0 ? ExchangeKind::progress : ExchangeKind::update;
        chunk = group_->exchange(kind, chunk.chunk_begin, chunk.chunk_count, loss);
      }
    }
    struct End {
      int64_t step = 0, stop_signal = 0, stop_rank = -1;
    } end;
    if (server) {
      std::vector<StepRecord> steps = server->end_phase();
      if (reports) {
        report_steps(std::move(steps), sink);
        end = {server->reached(), server->stop_signal(), server->stop_rank()};
      }
    }
    in_.comm.broadcast(std::as_writable_bytes(std::span(&end, 1)), 0);
    // Group 0 takes the global model from the shards: what evaluations and checkpoints are of.
    if (place_.group == 0 && group_->has_stage()) {
      Stage& stage = group_->stage_params();
      if (server) std::copy(server->global().begin(), server->global().end(), stage.params().begin());
      group_->stage_comm().broadcast(std::as_writable_bytes(stage.params()), 0);
    }
    return {end.step, int(end.stop_signal), int(end.stop_rank)};
  }

  StepStats evaluate(const Dataset& held_out) override {
    const MeterScope scope(meter_);
    const StepStats mine = place_.group == 0 ? group_->evaluate(held_out) : StepStats{};
    return summed_over_ranks(in_.comm, mine);
  }

  // Sharded as a pipeline's: group 0's replicas of each stage write its pieces (the global model, group
  // 0's optimizer state); rank 0 names them in the manifest.
  Checkpoint checkpoint(int64_t step, const std::string& path) override {
    const MeterScope scope(meter_);
    const auto kind = make_optimizer(in_.job.optim, 0);  // its name and state slots
    std::optional<CheckpointPart> mine;
    if (place_.group == 0 && group_->has_stage()) {
      Stage& stage = group_->stage_params();
      GradientSync& sync = group_->sync();
      const ReplicatedState held{stage.param_begin(), stage.params(), group_->optimizer().state(), kind->slots(),
                                 [&sync](int r) { return sync.state_ranges(r); }};
      mine = write_replica_part(group_->stage_comm(), held, path, in_.comm.rank(), in_.model.fingerprint(), step);
    }
    Checkpoint c;
    c.model_fingerprint = in_.model.fingerprint();
    c.optimizer = kind->name();
    c.step = step;
    c.optimizer_steps = group_->has_stage() ? group_->optimizer().steps_taken() : optimizer_steps_;
    c.sharded_params = in_.model.parameter_count();
    c.sharded_slots = kind->slots();
    return gather_manifest(in_.comm, mine, in_.comm.rank(), path, std::move(c));
  }

 private:
  StrategyInputs in_;
  SampleClock clock_;
  SlowdownEmulator emulator_;
  std::shared_ptr<MemoryMeter> meter_;
  cgp::Grouping grouping_;
  GroupPlace place_;
  pipeline::Plan plan_;
  std::optional<pipeline::Prediction> prediction_;  // rank 0
  std::vector<double> speeds_;                      // rank 0: group 0's measured speeds
  std::string how_;                                 // rank 0
  std::unique_ptr<PipelineGroup> group_;
  int64_t optimizer_steps_ = 0;  // resumed from: what a rank without a stage reports
};

// Before ranks start: what the runtime cannot train.
void check_hybrid_job(const Job& job, const Model&) {
  if (job.train.on_nonfinite == OnNonfinite::skip)
    throw JobError("[train] on_nonfinite", "\"skip\" undoes a step on every rank, which strategy \"cgp-pipeline\"'s "
                   "asynchronous groups cannot", "set on_nonfinite = \"stop\"");
  (void)cgp::pipeline_groups(job);  // equal groups
}

}  // namespace

StrategyEntry cgp_pipeline_strategy_entry() {
  return {StrategyKind::cgp_pipeline, check_hybrid_job, [](StrategyInputs in) -> std::unique_ptr<Strategy> {
            return std::make_unique<HybridStrategy>(std::move(in));
          }, /*whole_model=*/false, /*reads_own_ranges=*/true};
}

}  // namespace dp
