// Slowness (sim.h): every rank's slowness factor per step from the runtime's emulator, and the
// per-operation noise from a seeded stream.
#include <cmath>

#include "lib/sim/sim.h"

namespace dp::sim {

Slowness::Slowness(const Variability& v, int ranks, uint64_t seed)
    : noise_(v.noise), factor_(static_cast<size_t>(ranks), 1.0), rng_(derive_seed(seed, 0x51D)) {
  EmulateSection varying = v.emulate;  // the persistent part is in the cluster's speeds
  varying.slowdown.clear();
  varying.as_described = false;
  ranks_.reserve(size_t(ranks));
  for (int r = 0; r < ranks; ++r) ranks_.emplace_back(varying, r, seed, ranks);
}

const std::vector<double>& Slowness::at(int64_t step) {
  if (step != step_)
    for (size_t r = 0; r < ranks_.size(); ++r) factor_[r] = ranks_[r].factor(step);
  step_ = step;
  return factor_;
}

double Slowness::noise() { return noise_ > 0 ? std::exp(noise_ * rng_.normal()) : 1.0; }

}  // namespace dp::sim
