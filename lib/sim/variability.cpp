// Slowness (sim.h): every rank's slowness factor per step (the random walk of its log, kept >= 1, times
// the moving slow window) and the per-operation noise, from one seeded stream.
#include <algorithm>
#include <cmath>

#include "lib/sim/sim.h"

namespace dp::sim {

Slowness::Slowness(const Variability& v, int ranks, uint64_t seed)
    : v_(v), log_walk_(size_t(ranks), 0.0), factor_(size_t(ranks), 1.0), rng_(derive_seed(seed, 0x51D)) {}

const std::vector<double>& Slowness::at(int64_t step) {
  while (step_ < step) {
    ++step_;
    const int n = int(factor_.size());
    int slow = -1;
    if (v_.fluctuate_rank >= 0 && step_ >= v_.fluctuate_from && step_ < v_.fluctuate_to) {
      const int64_t moves = v_.fluctuate_move_every > 0 ? (step_ - v_.fluctuate_from) / v_.fluctuate_move_every : 0;
      slow = int((v_.fluctuate_rank + moves) % n);
    }
    for (int r = 0; r < n; ++r) {
      double& walk = log_walk_[size_t(r)];
      if (v_.random_walk > 0) walk = std::max(0.0, walk + v_.random_walk * rng_.normal());
      factor_[size_t(r)] = std::exp(log_walk_[size_t(r)]) * (r == slow ? v_.fluctuate_factor : 1.0);
    }
  }
  return factor_;
}

double Slowness::noise() { return v_.noise > 0 ? std::exp(v_.noise * rng_.normal()) : 1.0; }

}  // namespace dp::sim
