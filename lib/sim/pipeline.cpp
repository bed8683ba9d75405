// simulate_pipeline (sim.h): every mini-batch, each stage's forward and backward per micro-batch (the
// model's, pipeline::evaluate) times its slowest replica's slowness and noise, played through the 1F1B
// schedule (pipeline::simulate: stages and links as resources, one operation at a time each), then the
// stages' gradient allreduces and updates after the flush, the slowest stage's ending the mini-batch.
#include <algorithm>

#include "lib/core/error.h"
#include "lib/pipeline/schedule.h"
#include "lib/sim/sim.h"
#include "lib/sim/summary.h"

namespace dp::sim {

Result simulate_pipeline(const Cluster& c, const pipeline::Plan& plan, const pipeline::Prediction& p,
                         int64_t global_batch, const Variability& v, int64_t steps, uint64_t seed) {
  const size_t S = plan.stages.size();
  DP_CHECK(S > 0 && p.stages.size() == S && steps > 0, "a pipeline simulation's inputs");
  Slowness slowness(v, c.size(), seed);
  std::vector<double> forward(S), backward(S), link_forward(S - 1), link_backward(S - 1);
  for (size_t s = 0; s + 1 < S; ++s)
    link_forward[s] = p.stages[s].link_forward_s, link_backward[s] = p.stages[s].link_backward_s;
  Result out;
  for (int64_t step = 0; step < steps; ++step) {
    const std::vector<double>& slow = slowness.at(step);
    double tail = 0;
    for (size_t s = 0; s < S; ++s) {
      double f = 0, b = 0;  // the slowest replica's factors
      for (int r : plan.stages[s].ranks) {
        f = std::max(f, slow[size_t(r)] * slowness.noise());
        b = std::max(b, slow[size_t(r)] * slowness.noise());
      }
      forward[s] = p.stages[s].forward_s * f;
      backward[s] = p.stages[s].backward_s * b;
      tail = std::max(tail, p.stages[s].allreduce_s + p.stages[s].update_s * f);
    }
    const pipeline::Simulation sim =
        pipeline::simulate(forward, backward, link_forward, link_backward, int(plan.micro_batches));
    out.step_s.push_back(sim.minibatch_s + tail);
    out.events += int64_t(2 * S) * plan.micro_batches + int64_t(S);
  }
  summarize(out, double(global_batch) * double(steps));
  return out;
}

}  // namespace dp::sim
