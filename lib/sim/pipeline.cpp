// simulate_pipeline (sim.h) and play_minibatch (minibatch.h).
#include <algorithm>
#include <numeric>

#include "lib/core/error.h"
#include "lib/pipeline/schedule.h"
#include "lib/sim/minibatch.h"
#include "lib/sim/sim.h"
#include "lib/sim/summary.h"

namespace dp::sim {

double play_minibatch(const pipeline::Plan& plan, const pipeline::Prediction& p, const std::vector<int>& rank_of,
                      const std::vector<double>& slow, Slowness& slowness, int64_t& events) {
  const size_t S = plan.stages.size();
  std::vector<double> forward(S), backward(S), tail(S), link_forward(S - 1), link_backward(S - 1);
  for (size_t s = 0; s + 1 < S; ++s)
    link_forward[s] = p.stages[s].link_forward_s, link_backward[s] = p.stages[s].link_backward_s;
  for (size_t s = 0; s < S; ++s) {
    // The slowest replica, each at its own share's time, slowness and noise.
    const pipeline::StagePrediction& sp = p.stages[s];
    const std::vector<int>& ranks = plan.stages[s].ranks;
    double update = 0;
    for (size_t i = 0; i < ranks.size(); ++i) {
      const double slowed = slow[size_t(rank_of[size_t(ranks[i])])];
      forward[s] = std::max(forward[s], sp.device_forward_s[i] * slowed * slowness.noise());
      backward[s] = std::max(backward[s], sp.device_backward_s[i] * slowed * slowness.noise());
      update = std::max(update, sp.device_update_s[i] * slowed);
    }
    tail[s] = sp.allreduce_s + update;
  }
  events += int64_t(2 * S) * plan.micro_batches + int64_t(S);
  return pipeline::played_minibatch_s(forward, backward, link_forward, link_backward, tail, int(plan.micro_batches));
}

Result simulate_pipeline(const Cluster& c, const pipeline::Plan& plan, const pipeline::Prediction& p,
                         int64_t global_batch, const Variability& v, int64_t steps, uint64_t seed) {
  DP_CHECK(!plan.stages.empty() && p.stages.size() == plan.stages.size() && steps > 0,
           "a pipeline simulation's inputs");
  Slowness slowness(v, c.size(), seed);
  std::vector<int> every(size_t(c.size()));
  std::iota(every.begin(), every.end(), 0);
  Result out;
  for (int64_t step = 0; step < steps; ++step)
    out.step_s.push_back(play_minibatch(plan, p, every, slowness.at(step), slowness, out.events));
  summarize(out, double(global_batch) * double(steps));
  return out;
}

}  // namespace dp::sim
