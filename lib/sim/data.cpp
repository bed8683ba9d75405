// simulate_data (sim.h): data-parallel steps. Every rank computes its share (the Balancer's division,
// re-divided from the times it observes under I-DAT) at its speed, slowed and varied; the step ends
// with its slowest rank, then the gradient exchange left after backward (lib/estimate's rule, over ring
// phases with contention) and the update.
#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "lib/core/error.h"
#include "lib/estimate/estimate.h"
#include "lib/sim/sim.h"
#include "lib/sim/summary.h"

namespace dp::sim {

Result simulate_data(const Cluster& c, const DataSpec& spec, const Variability& v, int64_t steps, uint64_t seed) {
  DP_CHECK(spec.compute_s && spec.global_batch >= c.size() && steps > 0, "a data-parallel simulation's inputs");
  const int n = c.size();
  std::vector<int> ring(static_cast<size_t>(n));
  std::iota(ring.begin(), ring.end(), 0);
  const double tail = estimate::sync_tail_seconds(spec.comm, spec.gradient_bytes,
                                                  [&](double bytes) { return ring_allreduce_seconds(c, ring, bytes); });
  const bool sharded = spec.comm.algorithm == CommAlgorithm::mra && spec.comm.sharded_update;
  const double update = spec.update_s / double(sharded ? n : 1);

  std::unordered_map<int64_t, double> compute_of;  // shares repeat: each priced once
  auto compute = [&](int64_t samples) {
    auto [it, fresh] = compute_of.try_emplace(samples, 0.0);
    if (fresh) it->second = spec.compute_s(samples);
    return it->second;
  };
  Slowness slowness(v, n, seed);
  Balancer balancer(spec.balance, n);
  std::vector<double> times(static_cast<size_t>(n));
  Result out;
  out.step_s.reserve(size_t(steps));
  for (int64_t step = 0; step < steps; ++step) {
    const std::vector<double>& slow = slowness.at(step);
    const std::vector<int64_t> shares = balancer.shares(spec.global_batch);
    double slowest = 0;
    for (int r = 0; r < n; ++r) {
      times[size_t(r)] = compute(shares[size_t(r)]) / c.rank(r).speed * slow[size_t(r)] * slowness.noise();
      slowest = std::max(slowest, times[size_t(r)]);
    }
    out.step_s.push_back(slowest + tail + update);
    out.events += n + 2;  // every rank's compute, the exchange, the update
    balancer.observe(step, shares, times);
  }
  summarize(out, double(spec.global_batch) * double(steps));
  return out;
}

}  // namespace dp::sim
