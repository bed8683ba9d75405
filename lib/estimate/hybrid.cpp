// The estimate of strategy "cgp-pipeline" (estimate_internal.h): every group runs the pipeline plan made
// for group 0's devices (as the run makes it: lib/train/hybrid), each on its own devices, and exchanges
// with the stages' shards.
//
// The model: group g's mini-batch (its share B_g of the global batch) takes T_g, the plan evaluated on
// its devices and links (lib/pipeline's model); every E = exchange_every mini-batches it exchanges: the
// leading stage's members first (each sends its slice of the stage's update to the shard's host and
// receives the global slice back, over the link between them), then every other stage's at once, so
// X_g = the leading stage's slowest member + the slowest member of the others. A cycle is E T_g + X_g;
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

namespace dp::estimate::detail {

void cgp_pipeline_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t, Estimate& e) {
  const cgp::Grouping grouping = cgp::pipeline_groups(job);
  const int groups = *std::max_element(grouping.begin(), grouping.end()) + 1;
  std::vector<std::vector<int>> members(static_cast<size_t>(groups));
  for (int r = 0; r < int(grouping.size()); ++r) members[size_t(grouping[size_t(r)])].push_back(r);
  const Job gj = pipeline_group_job(job, int(members[0].size()));
  const pipeline::BlockProfile profile = t.profile ? *t.profile : shape_profile(facts, profile_micro_batch(job));
  const pipeline::Workload w = job_pipeline_workload(gj, profile);
  const PipelineChoice choice = choose_pipeline_plan(gj, w, c.subset(members[0]));
  const pipeline::Plan& plan = choice.result.plan;
  e.pipeline_plan = choice.result;
  e.cgp_grouping = grouping;
  const int64_t every = std::max<int64_t>(1, job.parallel.cgp.exchange_every);
  e.strategy = fmt::format("cgp-pipeline ({} group(s): {}; each {} stage(s), {} micro-batches, {}; exchange every {})",
                           groups, cgp::grouping_text(grouping), plan.stages.size(), plan.micro_batches, choice.how,
                           every);
  // The leading stage: the one the run's rank 0 (group 0's first rank) holds.
  int leading = 0;
  for (size_t s = 0; s < plan.stages.size(); ++s)
    if (std::find(plan.stages[s].ranks.begin(), plan.stages[s].ranks.end(), 0) != plan.stages[s].ranks.end())
      leading = int(s);
  const pipeline::detail::Prefix prefix(w);
  std::vector<double> cycle(size_t(groups), 0.0), exchange(size_t(groups), 0.0), minibatch(size_t(groups), 0.0);
  for (int g = 0; g < groups; ++g) {
    const pipeline::Prediction pred = pipeline::evaluate(w, c.subset(members[size_t(g)]), plan);
    const size_t first = e.ranks.size();
    stage_ranks(job, facts, w, plan, pred, t.profile.has_value(), members[size_t(g)], fmt::format("group {} ", g),
                e.ranks);
    // A shard's host: group 0's first rank of each stage.
    if (g == 0)
      for (size_t i = first; i < e.ranks.size(); ++i)
        for (size_t s = 0; s < plan.stages.size(); ++s)
          if (e.ranks[i].rank == members[0][size_t(plan.stages[s].ranks[0])]) {
            e.ranks[i].host_bytes += pipeline::detail::Prefix::sum(prefix.params, plan.stages[s].first,
                                                                          plan.stages[s].last);
            e.ranks[i].role += s == size_t(leading) ? " + leading shard" : " + shard";
          }
    // The exchange: each member's slice up and the global slice back, over its link to the shard's host
    // (a group alone is the global model: until the phase's end its exchanges carry progress only).
    double lead_s = 0, others_s = 0;
    for (size_t s = 0; s < plan.stages.size() && groups > 1; ++s) {
      const pipeline::Stage& st = plan.stages[s];
      const double bytes = pipeline::detail::Prefix::sum(prefix.params, st.first, st.last) /  // bytes
                           double(st.ranks.size());
      const int host = members[0][size_t(st.ranks[0])];
      double slowest = 0;
      for (int local : st.ranks) {
        const int rank = members[size_t(g)][size_t(local)];
        if (rank != host) slowest = std::max(slowest, 2.0 * c.link(rank, host).seconds(bytes));
      }
      if (int(s) == leading)
        lead_s = slowest;
      else
        others_s = std::max(others_s, slowest);
    }
    minibatch[size_t(g)] = pred.minibatch_s;
    exchange[size_t(g)] = lead_s + others_s;
    cycle[size_t(g)] = double(every) * pred.minibatch_s + lead_s + others_s;
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
  const double samples_per_s = double(every) * double(gj.train.global_batch) * total_rate;
  e.step_s = samples_per_s > 0 ? double(job.train.global_batch) / samples_per_s : 0.0;
  // What bounds it: the group of the longest cycle, its pipeline or its exchanges.
  const size_t slow = size_t(std::max_element(cycle.begin(), cycle.end()) - cycle.begin());
  e.bound = fmt::format("group {}'s cycle: {} mini-batch(es) of {:.2f} ms and its exchange, {:.2f} ms", slow, every,
                        minibatch[slow] * 1e3, exchange[slow] * 1e3);
  e.notes.push_back("cgp-pipeline: step time = the global batch over the groups' predicted samples/s together");
  e.notes.insert(e.notes.end(), choice.warnings.begin(), choice.warnings.end());
}

}  // namespace dp::estimate::detail
