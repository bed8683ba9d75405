// StepUpdate: lib/mra's GradientSync, over the communicator (CPU ranks) or an NCCL queue (GPU ranks).
#include "lib/train/step/step_update.h"

#include <chrono>

#include <fmt/format.h>

#include "lib/core/trace.h"
#include "lib/measure/device.h"

namespace dp {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

}  // namespace

StepUpdate::StepUpdate(const Job& job, Communicator& comm, Model& model, std::unique_ptr<CollectiveQueue> gpu_queue)
    : model_(model), queue_(std::move(gpu_queue)), micro_batch_(job.train.micro_batch) {
  model.set_recompute(job.train.recompute);
  const bool host = model.kernels().host_memory;
  if (!host && !queue_) return;  // a single GPU: nothing to synchronise
  const GradSyncOptions options = grad_sync_options(job.parallel.comm);
  model.set_hook_slice(hook_slice_floats(options));
  sync_ = host ? make_gradient_sync(options, comm, model.params(), model.grads(), model.hook_ranges())
               : make_queued_gradient_sync(options, *queue_, comm, model.params(), model.grads(),
                                           model.hook_ranges());
  model.on_gradients_ready([this](int64_t offset) {
    if (pace_) pace_();
    sync_->gradients_ready(offset);
  });
  model.on_parameters_needed([this](int64_t end) { sync_->parameters_needed(end); });
}

StepUpdate::~StepUpdate() {
  model_.on_gradients_ready(nullptr);
  model_.on_parameters_needed(nullptr);
  model_.set_hook_slice(0);
  model_.set_recompute(std::vector<bool>{});
}

std::string StepUpdate::describe() const {
  return sync_ ? sync_->describe() : "one GPU";
}

int64_t StepUpdate::state_count() const {
  return sync_ ? sync_->state_count() : int64_t(model_.params().size());
}

void StepUpdate::begin(Optimizer& opt, double lr) {
  opt_ = &opt;
  lr_ = lr;
  step_ = opt.begin_step();
  if (sync_)
    sync_->begin_step([&opt, lr, step = step_](float* p, const float* g, int64_t at, int64_t count) {
      opt.update_range(p, g, at, count, lr, step);
    });
}

SyncTimes StepUpdate::finish() {
  if (sync_ && model_.kernels().host_memory) return sync_->finish_step();
  const auto t0 = Clock::now();
  if (sync_) {  // GPU ranks: what the compute stream still has to do waits for the sums (and the updates)
    const TraceScope traced("gradient sync (NCCL)");
    SyncTimes t = sync_->finish_step();
    model_.kernels().synchronize();  // here, so that the next step's compute time does not include it
    t.comm_ms = ms_since(t0, Clock::now()) - t.update_ms;
    return t;
  }
  SyncTimes t;  // a single GPU rank
  const TraceScope traced("update", {"params", int64_t(model_.params().size())});
  opt_->update_range(model_.params().data(), model_.grads().data(), 0, int64_t(model_.params().size()), lr_,
                    step_);
  model_.kernels().synchronize();
  t.update_ms = ms_since(t0, Clock::now());
  return t;
}

std::vector<float> StepUpdate::full_state(const Optimizer& opt) {
  const std::vector<float> mine = opt.state_to_host();
  return sync_ ? sync_->full_state(mine, opt.slots()) : mine;
}

std::vector<ParamRange> StepUpdate::state_ranges(int rank) const {
  return sync_ ? sync_->state_ranges(rank) : std::vector<ParamRange>{{0, int64_t(model_.params().size())}};
}

void StepUpdate::load_state(Optimizer& opt, std::span<const float> full) {
  if (sync_)
    opt.state_from_host(sync_->my_state(full, opt.slots()));
  else
    opt.state_from_host(full);
}

RankStep timed_step(StepUpdate& update, Optimizer& opt, double lr, Model& model, const Dataset& data,
                    std::span<const uint32_t> indices, BatchBuffer& buffer, float grad_scale,
                    SlowdownEmulator& emulator, int64_t emulated_step, Clock::time_point step_start) {
  // Compute: gather, forward, backward (under MRA, finished buckets are already being summed and applied
  // meanwhile: the last micro-batch's, whose backward completes the gradients).
  update.begin(opt, lr);
  const ComputeTimer timer(paced_by_thread_cpu(model.kernels()));
  const int64_t work = int64_t(indices.size());  // the same work for the same local batch
  update.pace_gradients([&] { emulator.pace(emulated_step, timer.wall_seconds(), timer.cpu_seconds(), work); });
  struct Unpaced {
    StepUpdate& update;
    ~Unpaced() { update.pace_gradients({}); }
  } unpaced{update};
  RankStep r;
  r.stats = model.forward_backward(gather_batch(data, indices, buffer), grad_scale, update.micro_batch());
  model.kernels().synchronize();  // GPU work is asynchronous: time the backward, not its launch
  // Compute excludes the forward's waits for parameters still arriving (MRA's overlap_forward).
  const double forward_wait_s = update.forward_wait_ms() / 1000;
  emulator.delay(emulated_step, timer.wall_seconds() - forward_wait_s, timer.cpu_seconds(), work);
  const double compute_s = std::chrono::duration<double>(Clock::now() - step_start).count() - forward_wait_s;
  // Sum the gradients and update (the rest of it, under MRA).
  const SyncTimes sync = update.finish();
  r.times = StepTimes{compute_s * 1000, sync.wait_ms, sync.comm_ms + forward_wait_s * 1000, sync.update_ms,
                      int64_t(indices.size()), samples_digest(indices)};
  return r;
}

bool observe_step(Balancer& balancer, int64_t step, std::span<const StepTimes> ranks) {
  std::vector<int64_t> batches;
  std::vector<double> seconds;
  for (const StepTimes& t : ranks) {
    batches.push_back(t.local_batch);
    seconds.push_back(t.compute_ms / 1000);
  }
  return balancer.observe(step, batches, seconds);
}

}  // namespace dp
