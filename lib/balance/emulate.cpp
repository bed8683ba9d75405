// SlowdownEmulator: persistent, windowed, random-walk and described ([cluster] speeds) slowdowns of one rank.
#include "lib/balance/emulate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "lib/cluster/cluster.h"
#include "lib/core/rng.h"

namespace dp {

SlowdownEmulator::SlowdownEmulator(const EmulateSection& spec, int rank, uint64_t seed)
    : spec_(spec), rank_(rank), seed_(seed) {}

SlowdownEmulator::SlowdownEmulator(const Job& job, int rank)
    : SlowdownEmulator(job.cluster.emulate, rank, job.job.seed) {
  if (!spec_.as_described) return;
  const std::vector<double> speeds = cluster_from_job(job).speeds();
  if (size_t(rank) >= speeds.size()) return;
  const double fastest = *std::max_element(speeds.begin(), speeds.end());
  described_ = std::max(1.0, fastest / speeds[size_t(rank)]);
}

bool SlowdownEmulator::active() const {
  const bool persistent = size_t(rank_) < spec_.slowdown.size() && spec_.slowdown[size_t(rank_)] > 1.0;
  const bool window = spec_.fluctuate_rank == rank_ && spec_.fluctuate_factor > 1.0;
  return persistent || described_ > 1.0 || window || spec_.random_walk > 0;
}

double SlowdownEmulator::factor(int64_t step) {
  double f = described_ * (size_t(rank_) < spec_.slowdown.size() ? spec_.slowdown[size_t(rank_)] : 1.0);
  if (spec_.fluctuate_rank == rank_ && step >= spec_.fluctuate_from && step < spec_.fluctuate_to)
    f *= spec_.fluctuate_factor;
  if (spec_.random_walk > 0) {
    if (step < walk_step_) {  // replay from the start
      walk_step_ = -1;
      walk_log_ = 0;
    }
    while (walk_step_ < step) {
      ++walk_step_;
      Rng rng(derive_seed(seed_, uint64_t(walk_step_), 0x77616c6bull + uint64_t(rank_)));
      walk_log_ = std::max(0.0, walk_log_ + spec_.random_walk * rng.normal());  // reflected at factor 1
    }
    f *= std::exp(walk_log_);
  }
  return std::max(1.0, f);
}

void SlowdownEmulator::delay(int64_t step, double compute_seconds) {
  if (!active()) return;
  std::this_thread::sleep_for(std::chrono::duration<double>((factor(step) - 1.0) * compute_seconds));
}

}  // namespace dp
