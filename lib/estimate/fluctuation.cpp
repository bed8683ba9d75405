// The estimate under [cluster.emulate]'s fluctuation window (estimate_internal.h): one rank slowed by
// fluctuate_factor during steps [fluctuate_from, fluctuate_to), staying or moving to the next rank every
// fluctuate_move_every steps, as lib/balance/emulate.cpp slows it.
//
// A run decides at its start on the speeds it sees then (CGP's grouping from its probe, a pipeline's plan
// and its replicas' rows from its ranks' timings, both under step 0's slowness), so the estimate plans on
// the cluster of step 0 (cluster_at_start). Then each step is charged as the run would take it with what
// it decided fixed: equal shares stay equal and wait for the slowed rank; CGP's groups keep their
// grouping; a pipeline keeps its plan and rows. I-DAT (data parallelism, or CGP's one group) is played out
// step by step with the runtime's balancer, which follows each move a few steps late. CGP of pipelines
// is planned again for each slowed rank (its run keeps the plan of its start; this estimate does not).
// The step time is the average over the job's steps. pipeline_on_cluster (estimate.h) prices the
// start's pipeline plan on the cluster without the window, for the simulator that plays the window.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "lib/balance/balance.h"
#include "lib/balance/emulate.h"
#include "lib/balance/job_balance.h"
#include "lib/core/error.h"
#include "lib/estimate/estimate_internal.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/pipeline/plan_internal.h"
#include "lib/pipeline/schedule.h"

namespace dp::estimate::detail {
namespace {

bool fluctuates(const EmulateSection& f, int64_t steps) {
  return f.fluctuate_rank >= 0 && f.fluctuate_factor > 1 && std::min(f.fluctuate_to, steps) > f.fluctuate_from;
}

// `c` with rank `slowed` as slow as the window makes it.
Cluster slowed(const Cluster& c, int64_t slowed, double factor) {
  std::vector<double> speeds = c.speeds();
  speeds[size_t(slowed)] /= factor;
  return c.with_speeds(speeds);
}

// Data-parallel ranks under I-DAT over the job's steps: the runtime's balancer divides each step's batch
// and re-divides from the compute times it observes, so it follows each move of the slowness a few steps
// late, as the run does. The mean step.
double idat_played_out(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t, int64_t steps) {
  const EmulateSection& f = job.cluster.emulate;
  const int n = c.size();
  std::vector<int> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  const DataStepTail after = data_step_tail(job, facts, c, all, *t.profile);
  const double tail = after.comm_s + after.update_s;
  const SlowdownEmulator window(f, 0, job.job.seed, n);
  Balancer balancer(balance_options(job, n), n);
  std::map<int64_t, double> compute_of;  // shares repeat: each priced once
  std::vector<double> times(static_cast<size_t>(n));
  double total = 0;
  for (int64_t step = 0; step < steps; ++step) {
    const std::vector<int64_t> shares = balancer.shares(job.train.global_batch);
    const bool in_window = step >= f.fluctuate_from && step < f.fluctuate_to;
    double slowest = 0;
    for (int r = 0; r < n; ++r) {
      auto [it, fresh] = compute_of.try_emplace(shares[size_t(r)], 0.0);
      if (fresh) it->second = replica_compute_seconds(job, facts, *t.profile, double(shares[size_t(r)]));
      const double factor = in_window && window.slowed_rank(step) == r ? f.fluctuate_factor : 1.0;
      times[size_t(r)] = it->second * factor / c.rank(r).speed;
      slowest = std::max(slowest, times[size_t(r)]);
    }
    total += slowest + tail;
    balancer.observe(step, shares, times);
  }
  return total / double(steps);
}

// The step time on `c` with the run's decisions of estimate `e` kept (made on `start`).
double step_with_decisions_kept(const Job& job, const ModelFacts& facts, const Cluster& c, const Cluster& start,
                                const Timing& t, const Estimate& e) {
  Estimate scratch;
  switch (job.parallel.strategy) {
    case StrategyKind::pipeline: {  // the plan and its replicas' rows as divided at the start
      const pipeline::Workload w = job_pipeline_workload(job, *t.profile);
      const pipeline::Plan& plan = e.pipeline_plan->plan;
      return pipeline::scheduled_minibatch_s(pipeline::evaluate(w, c, plan, &start), plan.micro_batches);
    }
    case StrategyKind::cgp: {
      Job kept = job;
      kept.parallel.cgp.groups.assign(e.cgp_grouping.begin(), e.cgp_grouping.end());
      cgp_ranks(kept, facts, c, t, scratch);
      return scratch.step_s;
    }
    default:
      strategy_ranks(job, facts, c, t, scratch);
      return scratch.step_s;
  }
}

}  // namespace

Cluster cluster_at_start(const Job& job, const Cluster& c, int64_t steps) {
  const EmulateSection& f = job.cluster.emulate;
  if (!fluctuates(f, steps) || f.fluctuate_from > 0) return c;
  return slowed(c, SlowdownEmulator(f, 0, job.job.seed, c.size()).slowed_rank(0), f.fluctuate_factor);
}

void average_over_fluctuation(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t,
                              Estimate& e) {
  const EmulateSection& f = job.cluster.emulate;
  const int64_t steps = e.total_steps;
  if (!t.profile || !(e.step_s > 0) || !fluctuates(f, steps)) return;
  const int64_t to = std::min(f.fluctuate_to, steps);
  const bool one_group = job.parallel.strategy == StrategyKind::cgp && !e.cgp_grouping.empty() &&
                         *std::max_element(e.cgp_grouping.begin(), e.cgp_grouping.end()) == 0;
  if (job.parallel.balance.mode == BalanceMode::idat && (job.parallel.strategy == StrategyKind::data || one_group)) {
    e.step_s = idat_played_out(job, facts, c, t, steps);  // CGP's one group is data parallelism
  } else {
    const Cluster start = cluster_at_start(job, c, steps);
    const SlowdownEmulator window(f, 0, job.job.seed, c.size());
    std::map<int64_t, int64_t> steps_slowing;  // rank -> steps of the window it is slowed in
    for (int64_t s = f.fluctuate_from; s < to; ++s) ++steps_slowing[window.slowed_rank(s)];
    double total = double(steps - (to - f.fluctuate_from)) * step_with_decisions_kept(job, facts, c, start, t, e);
    for (const auto& [rank, n] : steps_slowing)
      total += double(n) * step_with_decisions_kept(job, facts, slowed(c, rank, f.fluctuate_factor), start, t, e);
    e.step_s = total / double(steps);
  }
  e.notes.push_back(fmt::format(
      "fluctuation: rank {} {}x slower in steps {}-{}{}: the step time is the average over the job's {} steps, "
      "each on the decisions made at the start",
      f.fluctuate_rank, f.fluctuate_factor, f.fluctuate_from, to - 1,
      f.fluctuate_move_every > 0 ? fmt::format(", moving to the next rank every {} steps", f.fluctuate_move_every) : "",
      steps));
}

}  // namespace dp::estimate::detail

namespace dp::estimate {

pipeline::Prediction pipeline_on_cluster(const Job& job, const Cluster& cluster, const Timing& t, const Estimate& e) {
  DP_CHECK(t.profile && e.pipeline_plan.has_value(), "a pipeline estimate with its step times");
  const Cluster start = detail::cluster_at_start(job, cluster, e.total_steps);
  return pipeline::evaluate(job_pipeline_workload(job, *t.profile), cluster, e.pipeline_plan->plan, &start);
}

}  // namespace dp::estimate
