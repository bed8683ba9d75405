// choose_hybrid_plan, hybrid_groups and hybrid_rates (hybrid_plan.h): CGP of pipelines' plan, chosen for
// its groups together.
#include "lib/measure/hybrid_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "lib/cgp/cgp.h"
#include "lib/pipeline/plan_internal.h"
#include "lib/pipeline/schedule.h"

namespace dp {

std::vector<HybridGroup> hybrid_groups(const pipeline::Workload& w, const Cluster& c, const std::vector<int>& grouping,
                                       const pipeline::Plan& plan, int leading) {
  const int count = *std::max_element(grouping.begin(), grouping.end()) + 1;
  std::vector<HybridGroup> groups(static_cast<size_t>(count));
  for (int r = 0; r < int(grouping.size()); ++r) groups[size_t(grouping[size_t(r)])].members.push_back(r);
  const pipeline::detail::Prefix prefix(w);
  for (HybridGroup& g : groups) {
    g.prediction = pipeline::evaluate(w, c.subset(g.members), plan);
    // Each member's slice up and the global slice back, over its link to the shard's host (group 0's
    // first rank of the stage).
    for (size_t s = 0; s < plan.stages.size() && count > 1; ++s) {
      const pipeline::Stage& st = plan.stages[s];
      const double bytes = pipeline::detail::Prefix::sum(prefix.params, st.first, st.last) / double(st.ranks.size());
      const int host = groups[0].members[size_t(st.ranks[0])];
      double slowest = 0;
      for (int local : st.ranks) {
        const int rank = g.members[size_t(local)];
        if (rank != host) slowest = std::max(slowest, 2.0 * c.link(rank, host).seconds(bytes));
      }
      if (int(s) == leading)
        g.lead_s = slowest;
      else
        g.others_s = std::max(g.others_s, slowest);
    }
  }
  return groups;
}

HybridRates hybrid_rates(const std::vector<HybridGroup>& groups, int64_t micro_batches, int64_t group_batch,
                         int64_t exchange_every, double max_staleness) {
  HybridRates h;
  const size_t n = groups.size();
  const double every = double(std::max<int64_t>(1, exchange_every));
  std::vector<double> busy(n);
  for (size_t g = 0; g < n; ++g) {
    h.minibatch_s.push_back(pipeline::scheduled_minibatch_s(groups[g].prediction, micro_batches));
    h.exchange_s.push_back(groups[g].lead_s + groups[g].others_s);
    busy[g] = every * h.minibatch_s[g];
  }
  h.cycle_s = busy;
  if (std::any_of(busy.begin(), busy.end(), [](double b) { return !(b > 0); })) return h;  // no times
  // The leading shard takes one group's exchange at a time and holds an update rather than let it exceed
  // the staleness bound (CGP's model of the server's queue and the hold).
  const std::vector<double> wait = cgp::detail::queued_waits(busy, h.exchange_s);
  for (size_t g = 0; g < n; ++g) h.cycle_s[g] = busy[g] + h.exchange_s[g] + wait[g];
  h.rate = cgp::detail::held_rates(h.cycle_s, max_staleness);
  double total = 0;
  for (double r : h.rate) total += r;
  for (size_t g = 0; g < n; ++g) h.staleness = std::max(h.staleness, h.cycle_s[g] * (total - h.rate[g]));
  h.samples_per_s = every * double(group_batch) * total;  // every group trains the same share
  h.slowest = size_t(std::max_element(h.cycle_s.begin(), h.cycle_s.end()) - h.cycle_s.begin());
  return h;
}

namespace {

// The stage of group 0's first rank (the run's rank 0), whose shard leads; -1 where the plan leaves it out.
int leading_stage(const pipeline::Plan& plan) {
  for (size_t s = 0; s < plan.stages.size(); ++s)
    if (std::find(plan.stages[s].ranks.begin(), plan.stages[s].ranks.end(), 0) != plan.stages[s].ranks.end())
      return int(s);
  return -1;
}

}  // namespace

HybridChoice choose_hybrid_plan(const Job& job, const pipeline::BlockProfile& profile, const Cluster& c) {
  HybridChoice h;
  h.grouping = cgp::pipeline_groups(job);
  std::vector<int> group0;
  for (int r = 0; r < int(h.grouping.size()); ++r)
    if (h.grouping[size_t(r)] == 0) group0.push_back(r);
  const Job gj = pipeline_group_job(job, int(group0.size()));
  h.group_batch = gj.train.global_batch;
  h.exchange_every = std::max<int64_t>(1, job.parallel.cgp.exchange_every);
  const pipeline::Workload w = job_pipeline_workload(gj, profile);
  const Cluster first = c.subset(group0);
  auto priced = [&](const pipeline::PlanResult& r, HybridChoice& out) {
    out.leading = leading_stage(r.plan);
    out.groups = hybrid_groups(w, c, h.grouping, r.plan, out.leading);
    out.rates = hybrid_rates(out.groups, r.plan.micro_batches, h.group_batch, h.exchange_every,
                             double(job.parallel.cgp.max_staleness));
  };
  h.pipeline = choose_pipeline_plan(gj, w, first);
  priced(h.pipeline.result, h);
  // The planner's cuts at every stage count (each on all of the group's devices), priced with the groups'
  // exchanges. A plan that leaves the run's rank 0 out (the planner's may, for a slow rank 0) has no
  // leading shard: the run refuses it, so any cut that fits replaces it, one group or more.
  const bool alone = h.groups.size() < 2, leaderless = h.leading < 0;
  if ((alone && !leaderless) || !job.parallel.pipeline.stages.empty() || !(h.rates.samples_per_s > 0)) return h;
  const int most = std::min<int>(int(w.blocks.size()), first.size());
  const double planners = h.rates.samples_per_s;
  double best = leaderless ? 0.0 : planners;  // a leaderless plan: any cut that fits is better
  for (int stages = 1; stages <= most; ++stages) {
    const pipeline::PlanResult cut = pipeline::stage_count_plan(w, first, stages);
    if (cut.plan.stages.empty()) continue;
    const pipeline::PlanResult r = with_job_recompute(gj, w, first, cut.plan, cut.method);
    if (!r.feasible) continue;
    HybridChoice candidate;
    priced(r, candidate);
    if (candidate.leading < 0 || !(candidate.rates.samples_per_s > best * (1 + 1e-9))) continue;
    best = candidate.rates.samples_per_s;
    h.pipeline.result = r;
    h.pipeline.warnings.clear();  // it fits: with_job_recompute's feasible
    h.pipeline.how =
        leaderless ? fmt::format("the planner's cut into {} stage(s) on all of the group's devices, the most "
                                 "samples/s with the groups' exchanges (its plan for one group leaves rank 0 out)",
                                 stages)
                   : fmt::format("the planner's cut into {} stage(s), the most samples/s with the groups' exchanges "
                                 "({:.0f} against {:.0f} for its plan for one group)",
                                 stages, candidate.rates.samples_per_s, planners);
    h.leading = candidate.leading;
    h.groups = std::move(candidate.groups);
    h.rates = std::move(candidate.rates);
  }
  return h;
}

}  // namespace dp
