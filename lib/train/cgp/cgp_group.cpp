// A rank's CGP group (cgp_group.h): building it, its exchanges with the parameter server (send the
// update slice, receive the global slice, all-gather the slices inside the group) and its local steps.
#include "lib/train/cgp/cgp_group.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "lib/core/stop_signal.h"
#include "lib/core/trace.h"
#include "lib/balance/job_balance.h"
#include "lib/measure/speed_probe.h"

namespace dp::cgp_detail {

using Clock = std::chrono::steady_clock;

GroupReplica::GroupReplica(const StrategyInputs& in, Communicator& server, const cgp::Grouping& grouping,
                           const std::vector<double>& speeds, SampleClock clock, SlowdownEmulator& emulator)
    : in_(in), server_(server), clock_(clock), emulator_(emulator), group_(grouping[size_t(in.comm.rank())]),
      order_(clock.n, in.job.job.seed) {
  comm_ = in_.comm.split(group_, in_.comm.rank());
  update_ = std::make_unique<StepUpdate>(in_.job, *comm_, in_.model, nullptr);
  optimizer_ = make_optimizer(in_.job.optim, update_->state_count(), in_.kernels);
  BalanceOptions o = balance_options(in_.job, comm_->size());
  o.initial_speeds.clear();
  if (o.mode == BalanceMode::idat)
    for (int r = 0; r < in_.comm.size(); ++r)
      if (grouping[size_t(r)] == group_) o.initial_speeds.push_back(speeds[size_t(r)]);
  balancer_ = std::make_unique<Balancer>(o, comm_->size());
  group_batch_ =
      std::max<int64_t>(1, std::llround(double(in_.job.train.global_batch) * comm_->size() / in_.comm.size()));
}

ExchangeReply GroupReplica::exchange(ExchangeKind kind, int64_t chunk_begin, int64_t chunk_count, double loss_sum) {
  update_->settle();
  const auto t0 = Clock::now();
  const TraceScope traced("cgp exchange", {"kind", int64_t(kind)}, {"read_version", version_});
  const int k = comm_->size(), member = comm_->rank();
  ExchangeRequest req;
  req.group = group_;
  req.member = member;
  req.members = k;
  req.kind = kind;
  req.read_version = version_;
  req.want_samples = group_batch_ * in_.job.parallel.cgp.exchange_every;
  req.chunk_begin = chunk_begin;
  req.chunk_count = chunk_count;
  req.loss_sum = loss_sum;
  req.lr = last_lr_;
  req.compute_ms = stats_compute_ms_;
  req.comm_ms = stats_comm_ms_;
  req.exchange_ms = last_exchange_ms_;
  req.samples = stats_samples_;
  req.local_steps = stats_steps_;
  req.samples_digest = stats_digest_;
  req.stop_signal = pending_stop_signal();
  stats_compute_ms_ = stats_comm_ms_ = 0;
  stats_samples_ = stats_steps_ = 0;
  stats_digest_ = 0;
  std::vector<float> global;
  const ExchangeReply reply = exchange_slices(server_, req, in_.model.params(), read_slice_, *comm_, global);
  version_ = reply.version;
  // After an update or a read the group's replicas are the global model; progress only leaves them.
  if (kind != ExchangeKind::progress) in_.model.params_from_host(global);
  last_exchange_ms_ = ms_since(t0);
  return reply;
}

double GroupReplica::train_chunk(int64_t begin, int64_t count, const std::function<void()>& between_steps) {
  const int64_t epoch = begin / clock_.n, tps = in_.model.targets_per_sample();
  const bool idat = in_.job.parallel.balance.mode == BalanceMode::idat;
  double loss = 0;
  auto step_start = Clock::now();
  for (int64_t at = begin; at < begin + count; at += group_batch_) {
    StepPlan plan;
    plan.index = clock_.step_of(at);
    plan.epoch = epoch;
    plan.batch = std::min(group_batch_, begin + count - at);
    plan.lr = learning_rate(in_.job.optim, plan.index, in_.total_steps);
    plan.terms = double(plan.batch * tps);
    chunk_at_ = at;
    last_lr_ = plan.lr;
    // The group's stop requests travel with its exchanges with the server, not here.
    const std::vector<RankRecord> all =
        run_sync_step(*comm_, *this, plan, step_start, gauges_, 0, {"group", group_});
    const StepTimes& times = all[size_t(comm_->rank())].times;
    loss += all[size_t(comm_->rank())].loss_sum;
    if (idat && all.size() > 1) {
      std::vector<StepTimes> every;
      for (const RankRecord& r : all) every.push_back(r.times);
      observe_step(*balancer_, local_steps_, every);
    }
    ++local_steps_;
    stats_compute_ms_ += times.compute_ms;
    stats_comm_ms_ += times.comm_ms;
    stats_samples_ += times.local_batch;
    stats_digest_ += times.samples_digest;
    ++stats_steps_;
    measured_samples_ += double(times.local_batch);
    measured_seconds_ += times.compute_ms / 1000;
    phase_samples_ += double(times.local_batch);
    phase_seconds_ += times.compute_ms / 1000;
    if (times.local_batch > 0) phase_seconds_per_sample_.push_back(times.compute_ms / 1000 / double(times.local_batch));
    step_start = Clock::now();
    if (between_steps) between_steps();
  }
  return loss;
}

// This member's share of the group's step, from where the chunk stands (chunk_at_).
RankRecord GroupReplica::compute(const StepPlan& plan, Clock::time_point step_start) {
  const std::vector<int64_t> shares = balancer_->shares(plan.batch);
  int64_t offset = chunk_at_ % clock_.n;
  for (int r = 0; r < comm_->rank(); ++r) offset += shares[size_t(r)];
  const std::span<const uint32_t> mine(order_.of(plan.epoch).data() + offset, size_t(shares[size_t(comm_->rank())]));
  const RankStep step = timed_step(*update_, *optimizer_, plan.lr, in_.model, in_.train_set, mine, buffer_,
                                   float(1.0 / plan.terms), emulator_, plan.index, step_start);
  return {step.stats.loss_sum, step.times};
}

GroupReplica::Speed GroupReplica::take_phase_speed(Speed fallback) {
  Speed s = fallback;
  if (phase_seconds_per_sample_.size() >= 8 && phase_seconds_ > 0)
    s = {phase_samples_ / phase_seconds_, robust_cv(phase_seconds_per_sample_)};
  phase_samples_ = phase_seconds_ = 0;
  phase_seconds_per_sample_.clear();
  return s;
}

}  // namespace dp::cgp_detail
