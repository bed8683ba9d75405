// The estimate of strategy "cgp-pipeline" (estimate_internal.h) and its terms (estimate.h: hybrid_terms,
// which the simulator replays): every group runs the pipeline plan made for group 0's devices (as the run
// makes it: lib/train/hybrid), each on its own devices, and exchanges with the stages' shards.
//
// The model: group g's mini-batch (its share B_g of the global batch) takes T_g, the plan evaluated on
// its devices and links (lib/pipeline's model) and played through its 1F1B schedule; every
// E = exchange_every mini-batches it exchanges: the leading stage's members first (each sends its slice
// of the stage's update to the shard's host and receives the global slice back, over the link between
// them), then every other stage's at once, so X_g = the leading stage's slowest member + the slowest
// member of the others. A cycle is E T_g + X_g;
// the groups add up: samples/s = sum_g E B_g r_g, where r_g = 1 / (E T_g + W_g + X_g), W_g the wait for
// the shards, which take one group's exchange at a time (cgp::detail::queued_waits), unless the leading
// shard's hold slows it: no group may see more than max_staleness updates of the others in its cycle
// (cgp::detail::held_rates; both as CGP's model). The staleness of g's update is cycle_g x sum_{h != g} r_h.
// Memory: each rank holds its stage as the planner's memory model says; a shard's host holds the
// stage's global values besides (host memory, as CGP's server).
#include <fmt/format.h>

#include <algorithm>

#include "lib/cgp/cgp.h"
#include "lib/estimate/estimate_internal.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/pipeline/plan_internal.h"
#include "lib/pipeline/schedule.h"

namespace dp::estimate {

HybridTerms hybrid_terms(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t) {
  HybridTerms h;
  h.grouping = cgp::pipeline_groups(job);
  const int groups = *std::max_element(h.grouping.begin(), h.grouping.end()) + 1;
  h.groups.resize(size_t(groups));
  for (int r = 0; r < int(h.grouping.size()); ++r) h.groups[size_t(h.grouping[size_t(r)])].members.push_back(r);
  const Job gj = pipeline_group_job(job, int(h.groups[0].members.size()));
  const pipeline::BlockProfile profile = t.profile ? *t.profile : shape_profile(facts, profile_micro_batch(job));
  h.workload = job_pipeline_workload(gj, profile);
  PipelineChoice choice = choose_pipeline_plan(gj, h.workload, c.subset(h.groups[0].members));
  h.plan = std::move(choice.result);
  h.how = std::move(choice.how);
  h.warnings = std::move(choice.warnings);
  h.group_batch = gj.train.global_batch;
  h.exchange_every = std::max<int64_t>(1, job.parallel.cgp.exchange_every);
  const pipeline::Plan& plan = h.plan.plan;
  for (size_t s = 0; s < plan.stages.size(); ++s)
    if (std::find(plan.stages[s].ranks.begin(), plan.stages[s].ranks.end(), 0) != plan.stages[s].ranks.end())
      h.leading = int(s);
  const pipeline::detail::Prefix prefix(h.workload);
  for (HybridGroup& g : h.groups) {
    g.prediction = pipeline::evaluate(h.workload, c.subset(g.members), plan);
    // Each member's slice up and the global slice back, over its link to the shard's host (group 0's
    // first rank of the stage).
    for (size_t s = 0; s < plan.stages.size() && groups > 1; ++s) {
      const pipeline::Stage& st = plan.stages[s];
      const double bytes =
          pipeline::detail::Prefix::sum(prefix.params, st.first, st.last) / double(st.ranks.size());
      const int host = h.groups[0].members[size_t(st.ranks[0])];
      double slowest = 0;
      for (int local : st.ranks) {
        const int rank = g.members[size_t(local)];
        if (rank != host) slowest = std::max(slowest, 2.0 * c.link(rank, host).seconds(bytes));
      }
      if (int(s) == h.leading)
        g.lead_s = slowest;
      else
        g.others_s = std::max(g.others_s, slowest);
    }
  }
  return h;
}

namespace detail {

void cgp_pipeline_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t, Estimate& e) {
  const HybridTerms h = hybrid_terms(job, facts, c, t);
  const pipeline::Plan& plan = h.plan.plan;
  const size_t groups = h.groups.size();
  e.pipeline_plan = h.plan;
  e.cgp_grouping = h.grouping;
  const int64_t every = h.exchange_every;
  e.strategy = fmt::format("cgp-pipeline ({} group(s): {}; each {} stage(s), {} micro-batches, {}; exchange every {})",
                           groups, cgp::grouping_text(h.grouping), plan.stages.size(), plan.micro_batches, h.how,
                           every);
  const pipeline::detail::Prefix prefix(h.workload);
  std::vector<double> cycle(groups, 0.0), exchange(groups, 0.0), minibatch(groups, 0.0);
  for (size_t g = 0; g < groups; ++g) {
    const HybridGroup& hg = h.groups[g];
    const size_t first = e.ranks.size();
    stage_ranks(job, facts, h.workload, plan, hg.prediction, t.profile.has_value(), hg.members,
                fmt::format("group {} ", g), e.ranks);
    // A shard's host: group 0's first rank of each stage.
    if (g == 0)
      for (size_t i = first; i < e.ranks.size(); ++i)
        for (size_t s = 0; s < plan.stages.size(); ++s)
          if (e.ranks[i].rank == hg.members[size_t(plan.stages[s].ranks[0])]) {
            e.ranks[i].host_bytes += pipeline::detail::Prefix::sum(prefix.params, plan.stages[s].first,
                                                                          plan.stages[s].last);
            e.ranks[i].role += s == size_t(h.leading) ? " + leading shard" : " + shard";
          }
    minibatch[g] = pipeline::scheduled_minibatch_s(hg.prediction, plan.micro_batches);
    exchange[g] = hg.lead_s + hg.others_s;
    cycle[g] = double(every) * minibatch[g] + exchange[g];
  }
  if (!t.profile || std::any_of(cycle.begin(), cycle.end(), [](double c) { return !(c > 0); })) return;
  // The leading shard takes one group's exchange at a time and holds an update rather than let it exceed
  // the staleness bound (CGP's model of the server's queue and the hold).
  std::vector<double> busy(cycle.size());
  for (size_t g = 0; g < cycle.size(); ++g) busy[g] = double(every) * minibatch[g];
  const std::vector<double> wait = cgp::detail::queued_waits(busy, exchange);
  for (size_t g = 0; g < cycle.size(); ++g) cycle[g] += wait[g];
  const std::vector<double> rate = cgp::detail::held_rates(cycle, double(job.parallel.cgp.max_staleness));
  double total_rate = 0;
  for (double r : rate) total_rate += r;
  for (size_t g = 0; g < cycle.size(); ++g) e.staleness = std::max(e.staleness, cycle[g] * (total_rate - rate[g]));
  // Every group trains the same share of the global batch (groups are of equal size).
  const double samples_per_s = double(every) * double(h.group_batch) * total_rate;
  e.step_s = samples_per_s > 0 ? double(job.train.global_batch) / samples_per_s : 0.0;
  // What bounds it: the group of the longest cycle, its pipeline or its exchanges.
  const size_t slow = size_t(std::max_element(cycle.begin(), cycle.end()) - cycle.begin());
  e.bound = fmt::format("group {}'s cycle: {} mini-batch(es) of {:.2f} ms and its exchange, {:.2f} ms", slow, every,
                        minibatch[slow] * 1e3, exchange[slow] * 1e3);
  e.notes.push_back("cgp-pipeline: step time = the global batch over the groups' predicted samples/s together");
  e.notes.insert(e.notes.end(), h.warnings.begin(), h.warnings.end());
}

}  // namespace detail
}  // namespace dp::estimate
