// simulate_cgp_pipeline (sim.h): CGP of pipelines' groups as events (groups.h's play). A group's local
// work is exchange_every mini-batches of its pipeline, each played as simulate_pipeline plays one
// (minibatch.h: the model's stage times on the group's devices, varied, through the 1F1B schedule);
// then it exchanges with the stages' shards as the estimate charges it: the leading stage's slices up
// (the update lands when they are in), the global slices back and every other stage's exchange after,
// the leading shard's interface serving one group at a time.
#include "lib/core/error.h"
#include "lib/sim/groups.h"
#include "lib/sim/minibatch.h"
#include "lib/sim/sim.h"

namespace dp::sim {

Result simulate_cgp_pipeline(const Cluster& c, const HybridSpec& spec, const Variability& v, int64_t steps,
                             uint64_t seed) {
  const size_t S = spec.plan.stages.size();
  DP_CHECK(S > 0 && !spec.groups.empty() && steps > 0 && spec.exchange_every > 0, "a CGP of pipelines' inputs");
  Slowness slowness(v, c.size(), seed);
  std::vector<ServerGroup> terms;
  for (const HybridGroup& g : spec.groups) {
    DP_CHECK(g.prediction.stages.size() == S, "a group's prediction of every stage");
    terms.push_back({g.lead_s / 2, g.lead_s / 2 + g.others_s, 0.0, 0.0, spec.exchange_every * spec.group_batch});
  }
  const LocalWork local = [&](size_t i, double t, int64_t step, int64_t& events) {
    const HybridGroup& g = spec.groups[i];
    for (int64_t k = 0; k < spec.exchange_every; ++k)
      t += play_minibatch(spec.plan, g.prediction, g.members, slowness.at(step), slowness, events);
    return t;
  };
  return play_groups(terms, local, spec.hold_staleness, spec.global_batch, steps);
}

}  // namespace dp::sim
