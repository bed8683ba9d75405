// One rank's place in its CGP group (cgp_strategy.cpp): the group's sub-communicator, its synchronous
// update (MRA and I-DAT exactly as strategy "data"), its optimizer, the local steps over a chunk of the
// epoch, and the exchanges with the parameter server (cgp_exchange.h). Rebuilt at every regrouping.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lib/balance/balance.h"
#include "lib/balance/emulate.h"
#include "lib/cgp/cgp.h"
#include "lib/train/cgp/cgp_exchange.h"
#include "lib/optim/optimizer.h"
#include "lib/train/step/rank_gauges.h"
#include "lib/train/step/step_update.h"
#include "lib/train/step/sync_step.h"
#include "lib/train/strategy.h"

namespace dp::cgp_detail {

inline double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

class GroupReplica : private SyncWork {
 public:
  // `speeds`: every rank's measured samples/s (I-DAT's first division inside the group).
  GroupReplica(const StrategyInputs& in, Communicator& server, const cgp::Grouping& grouping,
               const std::vector<double>& speeds, SampleClock clock, SlowdownEmulator& emulator);

  // One exchange with the server: the update since the last read (an update), the chunk it trained and
  // this rank's loss over it; returns the next chunk. After an update or a read the replica holds the
  // global model; progress only leaves it as it is.
  ExchangeReply exchange(ExchangeKind kind, int64_t chunk_begin, int64_t chunk_count, double loss_sum);
  // The local steps of a chunk (`between_steps` after each); returns this rank's loss sum over it.
  double train_chunk(int64_t begin, int64_t count, const std::function<void()>& between_steps);
  // Samples per second of compute since the replica was built (`fallback` when nothing was measured).
  double measured_speed(double fallback) const {
    return measured_seconds_ > 0 ? measured_samples_ / measured_seconds_ : fallback;
  }

  void reset_measurements() { measured_samples_ = measured_seconds_ = 0; }
  // This rank's compute speed (samples/s) and jitter (robust coefficient of variation of the seconds per
  // sample of its local steps) since the last call; `fallback` when fewer than 8 local steps were timed.
  struct Speed {
    double samples_per_s = 0, cv = 0;
  };
  Speed take_phase_speed(Speed fallback);

  Communicator& comm() { return *comm_; }
  StepUpdate& update() { return *update_; }
  Optimizer& optimizer() { return *optimizer_; }

 private:
  // The group's synchronous step (sync_step.h), over its sub-communicator.
  RankRecord compute(const StepPlan& plan, std::chrono::steady_clock::time_point step_start) override;
  void settle() override { update_->settle(); }
  std::vector<float> held_params() override { return in_.model.params_to_host(); }
  Optimizer* step_optimizer() override { return optimizer_.get(); }
  void undo_step(std::span<const float> kept) override { in_.model.params_from_host(kept); }

  const StrategyInputs& in_;
  Communicator& server_;
  SampleClock clock_;
  SlowdownEmulator& emulator_;
  int group_;
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<StepUpdate> update_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<Balancer> balancer_;
  RankGauges gauges_{-1};  // CGP runs on CPU ranks only
  int64_t group_batch_ = 1, local_steps_ = 0, version_ = 0;
  int64_t chunk_at_ = 0;  // the sample of the chunk the step in progress starts at
  double last_lr_ = 0;
  std::vector<float> read_slice_;  // this rank's slice of the global model at its last read
  BatchBuffer buffer_;
  EpochOrder order_;
  // Measurements: since the last exchange (for metrics) and since the replica was built (regrouping).
  double stats_compute_ms_ = 0, stats_comm_ms_ = 0, last_exchange_ms_ = 0;
  int64_t stats_samples_ = 0, stats_steps_ = 0;
  uint64_t stats_digest_ = 0;
  double measured_samples_ = 0, measured_seconds_ = 0;
  double phase_samples_ = 0, phase_seconds_ = 0;
  std::vector<double> phase_seconds_per_sample_;
};

}  // namespace dp::cgp_detail
