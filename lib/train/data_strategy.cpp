// Strategy "data": synchronous data parallelism over all ranks. Each epoch one global permutation from the
// seed; each step's global batch divided among the ranks (equally or by I-DAT), gradients summed across
// ranks (plain, ring or MRA) and the same update applied everywhere.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "lib/balance/balance.h"
#include "lib/balance/emulate.h"
#include "lib/core/stop_signal.h"
#include "lib/core/trace.h"
#include "lib/train/nonfinite.h"
#include "lib/train/optimizer.h"
#include "lib/train/rank_gauges.h"
#include "lib/train/run_setup.h"
#include "lib/train/step_update.h"
#include "lib/train/strategy.h"

namespace dp {
namespace {

using namespace train_detail;
using Clock = std::chrono::steady_clock;

// What each rank tells the others after every step, in one allgather: its loss sum (summed in rank
// order), its share and times (for I-DAT's division and for metrics.jsonl), and its stop request.
struct RankRecord {
  double loss_sum;
  StepTimes times;
  int32_t stop_signal;
};

class DataStrategy final : public Strategy {
 public:
  explicit DataStrategy(StrategyInputs in)
      : in_(std::move(in)),
        update_(in_.job, in_.comm, in_.model, std::move(in_.gpu_queue)),
        optimizer_(make_optimizer(in_.job.optim, update_.state_count(), in_.kernels)),
        balancer_(balance_options(in_.job, in_.comm.size()), in_.comm.size()),
        emulator_(in_.job, in_.comm.rank()),
        gauges_(in_.kernels.host_memory ? -1 : local_rank(in_.comm)),
        logged_shares_(balancer_.shares(in_.job.train.global_batch)) {}

  std::vector<std::string> describe() const override {
    const Job& job = in_.job;
    const std::string links = links_text(job);
    return {"gradients: " + update_.describe() + (links.empty() ? "" : "; " + links),
            fmt::format("batch division: {}; first step's shares: {}",
                        job.parallel.balance.mode == "idat"
                            ? fmt::format("I-DAT (measured speeds, every {} step(s), threshold {:g})",
                                          job.parallel.balance.every, job.parallel.balance.threshold)
                            : std::string("equal"),
                        shares_text(balancer_.shares(std::min(job.train.global_batch, in_.train_set.count))))};
  }

  void resume(const Checkpoint& from) override {
    in_.model.params_from_host(from.params);
    // A checkpoint of strategy "cgp" holds every group's state: continue from the first group's.
    update_.load_state(*optimizer_,
                       std::span(from.optimizer_state).first(from.optimizer_state.size() / from.state_count()));
    optimizer_->set_steps_taken(from.optimizer_steps);
    // I-DAT divides as the interrupted run did (on another rank count: from the described speeds).
    balancer_.resume_from(from.balance_weights);
    logged_shares_ = balancer_.shares(in_.job.train.global_batch);
  }

  Reached train_until(int64_t done, int64_t until, const StepSink& sink) override {
    const Job& job = in_.job;
    Communicator& comm = in_.comm;
    const int world = comm.size();
    const bool idat = job.parallel.balance.mode == "idat";
    const int64_t terms_per_sample = in_.model.targets_per_sample();
    auto step_start = Clock::now();  // a step's time runs from the end of the last step (or pause)
    Reached reached{done};
    for (int64_t step = done; step < until && !reached.stop_signal; ++step) {
      trace_next_step();
      const TraceScope traced("step", {"step", step + 1});
      const int64_t epoch = step / in_.steps_per_epoch, in_epoch = step % in_.steps_per_epoch;
      const int64_t batch = step_batch_size(in_.train_set.count, job.train.global_batch, in_epoch);
      const std::vector<int64_t> shares = balancer_.shares(batch);
      const auto mine = rank_indices(order_.of(epoch), job.train.global_batch, in_epoch, shares, comm.rank());

      // Gradients come out pre-divided by the global batch's loss terms. The rank's time, what I-DAT
      // balances, includes its host work since the last step (dividing the batch, the leader's logging).
      const double lr = learning_rate(job.optim, step, in_.total_steps);
      const double terms = double(batch * terms_per_sample);
      if (guard_.skips()) {
        update_.settle();
        guard_.before_step(in_.model.params_to_host(), *optimizer_);
      }
      const RankStep mine_step = timed_step(update_, *optimizer_, lr, in_.model, in_.train_set, mine, buffer_,
                                            float(1.0 / terms), emulator_, step, step_start);
      // One exchange of every rank's loss, share and times; the step's time includes it.
      RankRecord record{with_injected_fault(step + 1, mine_step.stats.loss_sum), mine_step.times, pending_stop_signal()};
      gauges_.fill(record.times);
      std::vector<RankRecord> all{record};
      if (world > 1) {
        const TraceScope exchange("exchange step records");
        all = comm.allgather_value(record);
      }
      double loss_sum = 0;
      std::vector<StepTimes> times;
      for (const RankRecord& r : all) {
        loss_sum += r.loss_sum;
        times.push_back(r.times);
      }
      // Every rank knows every rank's compute speed, so all divide the next batch alike.
      // Logged when the division of a full batch changes, not when the proportions behind it move.
      if (idat && observe_step(balancer_, step, times) &&
          balancer_.shares(job.train.global_batch) != logged_shares_) {
        logged_shares_ = balancer_.shares(job.train.global_batch);
        if (comm.rank() == 0)
          sink.note(fmt::format("step {}: I-DAT divides the batch as {}", step + 1, shares_text(logged_shares_)));
      }
      const auto t4 = Clock::now();
      StepRecord rec{step + 1, epoch, loss_sum / terms, lr, batch,
                     std::chrono::duration<double>(t4 - step_start).count(), {}};
      step_start = t4;  // the leader's logging below belongs to the next step
      if (comm.rank() == 0)
        for (int r = 0; r < world; ++r)
          rec.ranks.push_back(TrainLine{rec.step, epoch, r, rec.loss, lr, double(batch) / rec.seconds,
                                        all[size_t(r)].times});
      if (guard_.after_step(rec.step, rec.loss, optimizer_.get())) {
        sink.step(rec);
      } else {  // undone on every rank: the parameters as before it
        update_.settle();
        in_.model.params_from_host(guard_.kept_params());
        sink.skipped(rec.step, rec.loss);
      }
      reached = reached_after(step + 1, all);
    }
    update_.settle();  // every parameter final
    return reached;
  }

  Model& model_to_evaluate() override { return in_.model; }

  Checkpoint checkpoint(int64_t step) override {
    std::vector<float> state = update_.full_state(*optimizer_);  // collective: sharded state comes together
    if (in_.comm.rank() != 0) return {};
    const std::span<const double> weights = balancer_.weights();
    return {in_.model.fingerprint(), optimizer_->name(), step, optimizer_->steps_taken(), in_.model.params_to_host(),
            std::move(state), {},
            in_.job.parallel.balance.mode == "idat" ? std::vector<double>(weights.begin(), weights.end())
                                                    : std::vector<double>{}};
  }

 private:
  StrategyInputs in_;
  StepUpdate update_;
  std::unique_ptr<Optimizer> optimizer_;
  Balancer balancer_;
  SlowdownEmulator emulator_;
  RankGauges gauges_;
  std::vector<int64_t> logged_shares_;  // the division of a full batch last logged (I-DAT)
  BatchBuffer buffer_;
  EpochOrder order_{in_.train_set.count, in_.job.job.seed};
  NonFiniteGuard guard_{in_.job};
};

}  // namespace

std::unique_ptr<Strategy> make_data_strategy(StrategyInputs in) {
  return std::make_unique<DataStrategy>(std::move(in));
}

}  // namespace dp
