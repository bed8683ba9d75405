// The synchronous step and the loop of them (see sync_step.h).
#include "lib/train/step/sync_step.h"

#include <fmt/format.h>

#include "lib/core/stop_signal.h"
#include "lib/data/dataset.h"

namespace dp {

StepPlan plan_step(const Job& job, int64_t index, int64_t steps_per_epoch, int64_t total_steps, int64_t samples,
                   int64_t targets_per_sample) {
  StepPlan p;
  p.index = index;
  p.epoch = index / steps_per_epoch;
  p.in_epoch = index % steps_per_epoch;
  p.batch = step_batch_size(samples, job.train.global_batch, p.in_epoch);
  p.lr = learning_rate(job.optim, index, total_steps);
  p.terms = double(p.batch * targets_per_sample);
  return p;
}

std::vector<RankRecord> run_sync_step(Communicator& comm, SyncWork& work, const StepPlan& plan,
                                      StepClock::time_point step_start, RankGauges& gauges, int stop_signal,
                                      TraceArg where) {
  trace_next_step();
  const TraceScope traced("step", {"step", plan.index + 1}, where);
  RankRecord mine = work.compute(plan, step_start);
  mine.loss_sum = with_injected_fault(plan.index + 1, mine.loss_sum);
  mine.stop_signal = stop_signal;
  gauges.fill(mine.times);
  if (comm.size() == 1) return {mine};
  const TraceScope exchange("exchange step records");
  return comm.allgather_value(mine);
}

StepCounts step_counts(const StrategyInputs& in) {
  return {in.steps_per_epoch, in.total_steps, in.train_set.count, in.model.targets_per_sample()};
}

SyncLoop::SyncLoop(const Job& job, Communicator& comm, StepCounts counts, int gpu_index)
    : stop_request(pending_stop_signal), job_(job), comm_(comm), counts_(counts), gauges_(gpu_index), guard_(job) {}

StepRecord SyncLoop::step_record(const StepPlan& plan, std::span<const RankRecord> all, double seconds) const {
  double loss_sum = 0;
  for (const RankRecord& r : all) loss_sum += r.loss_sum;
  StepRecord rec{plan.index + 1, plan.epoch, loss_sum / plan.terms, plan.lr, plan.batch, seconds, {}};
  if (comm_.rank() != 0) return rec;
  for (size_t r = 0; r < all.size(); ++r) {
    TrainLine line{rec.step, plan.epoch, int(r), rec.loss, plan.lr, double(plan.batch) / seconds, all[r].times, {}};
    if (all[r].stage >= 0) line.strategy_fields = fmt::format(",\"stage\":{}", all[r].stage);
    rec.ranks.push_back(std::move(line));
  }
  return rec;
}

Reached SyncLoop::train_until(int64_t done, int64_t until, SyncWork& work, const StepSink& sink, TraceArg where) {
  const bool leader = comm_.rank() == 0;
  auto step_start = StepClock::now();  // a step's time runs from the end of the last step (or pause)
  Reached reached{done};
  for (int64_t step = done; step < until && !reached.stop_signal; ++step) {
    const StepPlan plan = plan_step(job_, step, counts_.steps_per_epoch, counts_.total_steps, counts_.samples,
                                    counts_.targets_per_sample);
    if (guard_.skips()) {
      work.settle();
      if (Optimizer* opt = work.step_optimizer()) guard_.before_step(work.held_params(), *opt);
    }
    const std::vector<RankRecord> all = run_sync_step(comm_, work, plan, step_start, gauges_, stop_request(), where);
    const auto now = StepClock::now();
    const double seconds = std::chrono::duration<double>(now - step_start).count();
    step_start = now;  // the leader's logging below belongs to the next step
    work.observe(plan, all, seconds);
    const StepRecord rec = step_record(plan, all, seconds);
    if (guard_.after_step(rec.step, rec.loss, work.step_optimizer())) {
      if (leader) sink.step(rec);
    } else {  // undone on every rank: the parameters as before it
      work.settle();
      work.undo_step(guard_.kept_params());
      if (leader) sink.skipped(rec.step, rec.loss);
    }
    reached = reached_after(step + 1, all);
  }
  work.settle();  // every parameter final
  return reached;
}

}  // namespace dp
