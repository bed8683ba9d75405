// Strategy "data": synchronous data parallelism over all ranks. Each epoch one global permutation from the
// seed; each step's global batch divided among the ranks (equally or by I-DAT), gradients summed across
// ranks (plain, ring or MRA) and the same update applied everywhere.
#include "lib/train/data/data_strategy.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "lib/balance/balance.h"
#include "lib/balance/emulate.h"
#include "lib/balance/job_balance.h"
#include "lib/measure/device.h"
#include "lib/measure/job_links.h"
#include "lib/optim/optimizer.h"
#include "lib/train/checkpoint_shards.h"
#include "lib/train/step/step_update.h"
#include "lib/train/step/sync_step.h"

namespace dp {
namespace {


class DataStrategy final : public Strategy, private SyncWork {
 public:
  explicit DataStrategy(StrategyInputs in)
      : in_(std::move(in)),
        update_(in_.job, in_.comm, in_.model, std::move(in_.gpu_queue)),
        optimizer_(make_optimizer(in_.job.optim, update_.state_count(), in_.kernels)),
        balancer_(balance_options(in_.job, in_.comm.size()), in_.comm.size()),
        emulator_(in_.job, in_.comm.rank()),
        loop_(in_.job, in_.comm, step_counts(in_), in_.kernels.host_memory ? -1 : local_rank(in_.comm)),
        logged_shares_(balancer_.shares(in_.job.train.global_batch)) {}

  std::vector<std::string> describe() const override {
    const Job& job = in_.job;
    const std::string links = links_text(job);
    return {"gradients: " + update_.describe() + (links.empty() ? "" : "; " + links),
            fmt::format("batch division: {}; first step's shares: {}",
                        job.parallel.balance.mode == BalanceMode::idat
                            ? fmt::format("I-DAT (measured speeds, every {} step(s), threshold {:g})",
                                          job.parallel.balance.every, job.parallel.balance.threshold)
                            : std::string("equal"),
                        shares_text(balancer_.shares(std::min(job.train.global_batch, in_.train_set.count))))};
  }

  // Every rank holds the parameters; of the optimizer state only what it keeps (its shards under sharded
  // MRA), read range by range: no rank reads the whole state.
  void resume(const Checkpoint& from) override {
    in_.model.params_from_host(read_checkpoint_range(from, 0, from.param_count(), 0).params);
    const std::vector<ParamRange> kept = update_.state_ranges(in_.comm.rank());
    optimizer_->state_from_host(read_kept_state(from, 0, kept, optimizer_->slots()));
    optimizer_->set_steps_taken(from.optimizer_steps);
    // I-DAT divides as the interrupted run did (on another rank count: from the described speeds).
    balancer_.resume_from(from.balance_weights);
    logged_shares_ = balancer_.shares(in_.job.train.global_batch);
  }

  Reached train_until(int64_t done, int64_t until, const StepSink& sink) override {
    sink_ = &sink;
    return loop_.train_until(done, until, *this, sink);
  }

  StepStats evaluate(const Dataset& held_out) override {
    return evaluate_on_rank0(in_.comm, in_.model, held_out, in_.job.train.micro_batch);
  }

  // Written per shard: rank r writes piece r of the parameters with their optimizer state (brought from
  // the ranks that keep it), rank 0 the manifest.
  Checkpoint checkpoint(int64_t step, const std::string& path) override {
    update_.settle();
    const bool host = in_.kernels.host_memory;
    std::vector<float> params_copy, state_copy;  // GPU ranks: their values on the host
    if (!host) params_copy = in_.model.params_to_host(), state_copy = optimizer_->state_to_host();
    const ReplicatedState held{0, host ? std::span<const float>(in_.model.params()) : params_copy,
                               host ? std::span<const float>(optimizer_->state()) : state_copy, optimizer_->slots(),
                               [this](int r) { return update_.state_ranges(r); }};
    const int rank = in_.comm.rank();
    const std::optional<CheckpointPart> part =
        write_replica_part(in_.comm, held, path, rank, in_.model.fingerprint(), step);
    Checkpoint c;
    c.model_fingerprint = in_.model.fingerprint();
    c.optimizer = optimizer_->name();
    c.step = step;
    c.optimizer_steps = optimizer_->steps_taken();
    c.sharded_params = int64_t(in_.model.params().size());
    c.sharded_slots = optimizer_->slots();
    if (in_.job.parallel.balance.mode == BalanceMode::idat)
      c.balance_weights.assign(balancer_.weights().begin(), balancer_.weights().end());
    return gather_manifest(in_.comm, part, rank, path, std::move(c));
  }

 private:
  // This rank's share of the step's batch: the update begun, forward and backward (gradients pre-divided
  // by the global batch's loss terms), the update finished. The rank's time, what I-DAT balances,
  // includes its host work since the last step (dividing the batch, the leader's logging).
  RankRecord compute(const StepPlan& plan, StepClock::time_point step_start) override {
    const std::vector<int64_t> shares = balancer_.shares(plan.batch);
    const auto mine = rank_indices(order_.of(plan.epoch), in_.job.train.global_batch, plan.in_epoch, shares,
                                   in_.comm.rank());
    const RankStep step = timed_step(update_, *optimizer_, plan.lr, in_.model, in_.train_set, mine, buffer_,
                                     float(1.0 / plan.terms), emulator_, plan.index, step_start);
    return {step.stats.loss_sum, step.times};
  }

  // Every rank knows every rank's compute speed, so all divide the next batch alike. Logged when the
  // division of a full batch changes, not when the proportions behind it move.
  void observe(const StepPlan& plan, std::span<const RankRecord> all, double) override {
    if (in_.job.parallel.balance.mode != BalanceMode::idat) return;
    std::vector<StepTimes> times;
    for (const RankRecord& r : all) times.push_back(r.times);
    if (!observe_step(balancer_, plan.index, times)) return;
    if (balancer_.shares(in_.job.train.global_batch) == logged_shares_) return;
    logged_shares_ = balancer_.shares(in_.job.train.global_batch);
    if (in_.comm.rank() == 0)
      sink_->note(fmt::format("step {}: I-DAT divides the batch as {}", plan.index + 1, shares_text(logged_shares_)));
  }

  void settle() override { update_.settle(); }
  std::vector<float> held_params() override { return in_.model.params_to_host(); }
  Optimizer* step_optimizer() override { return optimizer_.get(); }
  void undo_step(std::span<const float> kept) override { in_.model.params_from_host(kept); }

  StrategyInputs in_;
  StepUpdate update_;
  std::unique_ptr<Optimizer> optimizer_;
  Balancer balancer_;
  SlowdownEmulator emulator_;
  SyncLoop loop_;
  std::vector<int64_t> logged_shares_;  // the division of a full batch last logged (I-DAT)
  const StepSink* sink_ = nullptr;      // train_until's
  BatchBuffer buffer_;
  EpochOrder order_{in_.train_set.count, in_.job.job.seed};
};

}  // namespace

StrategyEntry data_strategy_entry() {
  return {StrategyKind::data, nullptr, [](StrategyInputs in) -> std::unique_ptr<Strategy> {
            return std::make_unique<DataStrategy>(std::move(in));
          }, /*whole_model=*/true, /*reads_own_ranges=*/true};
}

}  // namespace dp
