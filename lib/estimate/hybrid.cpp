// The estimate of strategy "cgp-pipeline" (estimate_internal.h) and its terms (estimate.h: hybrid_terms,
// which the simulator replays): the plan the run would choose and its groups' rates, from the model in
// lib/measure/hybrid_plan.h (every group runs the same stages, each on its own devices, exchanging with
// the stages' shards), on the estimate's cluster and step times.
// Memory: each rank holds its stage as the planner's memory model says; a shard's host holds the
// stage's global values besides (host memory, as CGP's server).
#include <fmt/format.h>

#include <algorithm>

#include "lib/cgp/cgp.h"
#include "lib/estimate/estimate_internal.h"
#include "lib/measure/hybrid_plan.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::estimate {

HybridTerms hybrid_terms(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t) {
  return choose_hybrid_plan(job, t.profile ? *t.profile : shape_profile(facts, profile_micro_batch(job)), c);
}

namespace detail {

void cgp_pipeline_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t, Estimate& e) {
  const HybridTerms h = hybrid_terms(job, facts, c, t);
  const pipeline::PlanResult& chosen = h.pipeline.result;
  const pipeline::Plan& plan = chosen.plan;
  e.pipeline_plan = chosen;
  e.cgp_grouping = h.grouping;
  e.strategy = fmt::format("cgp-pipeline ({} group(s): {}; each {} stage(s), {} micro-batches, {}; exchange every {})",
                           h.groups.size(), cgp::grouping_text(h.grouping), plan.stages.size(), plan.micro_batches,
                           h.pipeline.how, h.exchange_every);
  const pipeline::detail::Prefix prefix(h.pipeline.workload);
  for (size_t g = 0; g < h.groups.size(); ++g) {
    const HybridGroup& hg = h.groups[g];
    const size_t first = e.ranks.size();
    stage_ranks(job, facts, h.pipeline.workload, plan, hg.prediction, t.profile.has_value(), hg.members,
                fmt::format("group {} ", g), e.ranks);
    // A shard's host: group 0's first rank of each stage.
    if (g == 0)
      for (size_t i = first; i < e.ranks.size(); ++i)
        for (size_t s = 0; s < plan.stages.size(); ++s)
          if (e.ranks[i].rank == hg.members[size_t(plan.stages[s].ranks[0])]) {
            e.ranks[i].host_bytes += pipeline::detail::Prefix::sum(prefix.params, plan.stages[s].first,
                                                                   plan.stages[s].last);
            e.ranks[i].role += int(s) == h.leading ? " + leading shard" : " + shard";
          }
  }
  const HybridRates& rates = h.rates;
  if (!t.profile || !(rates.samples_per_s > 0)) return;
  e.staleness = rates.staleness;
  e.step_s = double(job.train.global_batch) / rates.samples_per_s;
  // What bounds it: the group of the longest cycle, its pipeline or its exchanges.
  const size_t slow = rates.slowest;
  e.bound = fmt::format("group {}'s cycle: {} mini-batch(es) of {:.2f} ms and its exchange, {:.2f} ms", slow,
                        h.exchange_every, rates.minibatch_s[slow] * 1e3, rates.exchange_s[slow] * 1e3);
  e.notes.push_back("cgp-pipeline: step time = the global batch over the groups' predicted samples/s together");
  e.notes.insert(e.notes.end(), h.pipeline.warnings.begin(), h.pipeline.warnings.end());
}

}  // namespace detail
}  // namespace dp::estimate
