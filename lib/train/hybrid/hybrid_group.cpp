// A rank's group of strategy "cgp-pipeline" (hybrid_group.h): its stage, its shard, its exchanges and its
// local mini-batches.
#include "lib/train/hybrid/hybrid_group.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "lib/core/stop_signal.h"
#include "lib/core/trace.h"

namespace dp::hybrid_detail {

using namespace cgp_detail;
using Clock = std::chrono::steady_clock;

PipelineGroup::PipelineGroup(const StrategyInputs& in, std::unique_ptr<Communicator> group_comm,
                             const GroupPlace& place, const pipeline_detail::SharedPlan& shared, SampleClock clock,
                             SlowdownEmulator& emulator, std::shared_ptr<MemoryMeter> meter)
    : in_(in), group_comm_(std::move(group_comm)), group_place_(place),
      place_(pipeline_detail::placement_of(shared, place.local)), clock_(clock), emulator_(emulator),
      meter_(std::move(meter)), order_(clock.n, in.job.job.seed) {
  group_batch_ = std::max<int64_t>(
      1, std::llround(double(in_.job.train.global_batch) * group_comm_->size() / in_.comm.size()));
  build_stage(shared);
  build_shard();
}

PipelineGroup::~PipelineGroup() = default;

// As strategy "pipeline" builds a stage, over the group's communicator.
void PipelineGroup::build_stage(const pipeline_detail::SharedPlan& shared) {
  const MeterScope scope(meter_);
  const int S = place_.stages(), s = place_.stage;
  stage_comm_ = group_comm_->split(s >= 0 ? s : S + group_place_.local, group_place_.local);
  // The ranks the plan gives a stage exchange; one it leaves out (the planner may leave a slow device
  // idle) takes no part.
  staged_comm_ = group_comm_->split(s >= 0 ? 0 : 1, group_place_.local);
  const int leader = place_.ranks[size_t(group_place_.leading_stage)][0];
  for (const std::vector<int>& ranks : place_.ranks)
    leader_in_staged_ += int(std::count_if(ranks.begin(), ranks.end(), [leader](int r) { return r < leader; }));
  if (s < 0) return;
  MemoryMeter::process().set_role(fmt::format("stage {} of {} in group {}", s, S, group_place_.group));
  pipeline_detail::StageParts parts =
      pipeline_detail::build_stage_parts(in_.job, in_.model, shared.plan.stages[size_t(s)], place_, *group_comm_,
                                         *stage_comm_, in_.train_set, emulator_, in_.kernels);
  stage_ = std::move(parts.stage);
  sync_ = std::move(parts.sync);
  optimizer_ = std::move(parts.optimizer);
  runner_ = std::move(parts.runner);
}

// The shard of this rank's stage: its communicator (the stage's ranks of every group, its host, group
// 0's first replica of the stage, first) and, on the host, its server.
void PipelineGroup::build_shard() {
  const int me = in_.comm.rank(), s = place_.stage;
  const bool host = s >= 0 && group_place_.group == 0 && place_.replica == 0;
  shard_comm_ = in_.comm.split(s >= 0 ? s : place_.stages() + me, host ? 0 : 1 + me);
  if (s < 0) return;
  shard_grouping_ = shard_comm_->allgather_value(int32_t(group_place_.group));
  const std::vector<int> names = shard_comm_->allgather_value(int32_t(me));
  if (!host) return;
  const std::span<const float> p = stage_->params();
  server_ = std::make_unique<ParameterServer>(*shard_comm_, std::vector<float>(p.begin(), p.end()), in_.job.parallel.cgp,
                                              clock_, in_.model.targets_per_sample(),
                                              /*follower=*/s != group_place_.leading_stage, names);
}

ExchangeReply PipelineGroup::exchange(ExchangeKind kind, int64_t begin, int64_t count, double loss_sum) {
  if (!stage_) return {};
  sync_->settle();
  const auto t0 = Clock::now();
  const TraceScope traced("cgp exchange", {"kind", int64_t(kind)}, {"stage", place_.stage});
  // The group's loss (its last stage's) and stop requests, for its leading stage to report.
  struct Note {
    double loss = 0;
    int32_t stop = 0;
  };
  double group_loss = 0;
  int32_t stop = 0;
  for (const Note& n : staged_comm_->allgather_value(Note{loss_sum, int32_t(pending_stop_signal())})) {
    group_loss += n.loss;
    if (stop == 0) stop = n.stop;
  }
  const bool leading = place_.stage == group_place_.leading_stage, first = stage_comm_->rank() == 0;
  ExchangeRequest req;
  req.group = group_place_.group;
  req.member = stage_comm_->rank();
  req.members = stage_comm_->size();
  req.kind = kind;
  req.read_version = version_;
  req.want_samples = group_batch_ * in_.job.parallel.cgp.exchange_every;
  req.chunk_begin = begin;
  req.chunk_count = count;
  req.loss_sum = leading && first ? group_loss : 0;
  req.lr = last_lr_;
  req.compute_ms = compute_ms_;
  req.comm_ms = comm_ms_;
  req.exchange_ms = last_exchange_ms_;
  req.samples = samples_;
  req.local_steps = local_steps_;
  req.samples_digest = digest_;
  req.stop_signal = leading ? stop : 0;
  compute_ms_ = comm_ms_ = 0;
  samples_ = local_steps_ = 0;
  digest_ = 0;
  std::vector<float> global;
  ExchangeReply next;
  if (leading) {
    next = exchange_slices(*shard_comm_, req, stage_->params(), read_slice_, *stage_comm_, global);
    version_ = next.version;
  }
  staged_comm_->broadcast(std::as_writable_bytes(std::span(&next, 1)), leader_in_staged_);
  if (!leading) {
    req.next_begin = next.chunk_begin;
    req.next_count = next.chunk_count;
    req.next_remaining = next.remaining;
    version_ = exchange_slices(*shard_comm_, req, stage_->params(), read_slice_, *stage_comm_, global).version;
  }
  if (kind != ExchangeKind::progress) std::copy(global.begin(), global.end(), stage_->params().begin());
  last_exchange_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return next;
}

double PipelineGroup::train_chunk(int64_t begin, int64_t count, const std::function<void()>& between) {
  if (!stage_) return 0;
  const int64_t epoch = begin / clock_.n, tps = in_.model.targets_per_sample();
  double loss = 0;
  for (int64_t at = begin; at < begin + count; at += group_batch_) {
    const int64_t index = clock_.step_of(at), batch = std::min(group_batch_, begin + count - at);
    const double lr = learning_rate(in_.job.optim, index, in_.total_steps);
    const std::span<const uint32_t> samples =
        std::span<const uint32_t>(order_.of(epoch)).subspan(size_t(at % clock_.n), size_t(batch));
    Optimizer& opt = *optimizer_;
    const int64_t opt_step = opt.begin_step();
    const pipeline_detail::MiniBatchTimes t =
        runner_->run(samples, float(1.0 / double(batch * tps)),
                     [&opt, lr, opt_step](float* p, const float* g, int64_t off, int64_t n) {
                       opt.update_range(p, g, off, n, lr, opt_step);
                     },
                     index);
    loss += t.stats.loss_sum;
    last_lr_ = lr;
    compute_ms_ += t.compute_ms;
    comm_ms_ += t.wait_ms + t.send_ms + t.sync.wait_ms + t.sync.comm_ms;
    samples_ += t.rows;
    ++local_steps_;
    // The samples, counted once: by the leading stage's first replica, whose exchanges the leading shard
    // records.
    if (place_.stage == group_place_.leading_stage && place_.replica == 0) digest_ += samples_digest(samples);
    if (between) between();
  }
  return loss;
}

StepStats PipelineGroup::evaluate(const Dataset& held_out) {
  return runner_ ? runner_->evaluate_all(held_out, group_batch_) : StepStats{};
}

}  // namespace dp::hybrid_detail
