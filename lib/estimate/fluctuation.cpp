// The estimate under [cluster.emulate]'s fluctuation window (estimate_internal.h): one rank slowed by
// fluctuate_factor during steps [fluctuate_from, fluctuate_to), staying or moving to the next rank every
// fluctuate_move_every steps, as lib/balance/emulate.cpp slows it.
//
// A run decides at its start on the speeds it sees then (CGP's grouping from its probe, a pipeline's plan
// from its ranks' timings, both under step 0's slowness), so the estimate plans on the cluster of step 0
// (cluster_at_start). Then each step is charged as the run would take it with what it decided fixed: equal
// shares stay equal and wait for the slowed rank; I-DAT re-divides for it (its lag of a step or two after
// each move left out); CGP's groups keep their grouping; a pipeline keeps its plan. The hybrid is planned
// again for each slowed rank (a hold on its plan is not modelled). The step time is the average over the
// job's steps of these.
#include <fmt/format.h>

#include <map>

#include "lib/balance/emulate.h"
#include "lib/estimate/estimate_internal.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/pipeline/plan_internal.h"

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

// The step time on `c` with the run's decisions of estimate `e` kept.
double step_with_decisions_kept(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t,
                                const Estimate& e) {
  Estimate scratch;
  switch (job.parallel.strategy) {
    case StrategyKind::pipeline: {
      const pipeline::Workload w = job_pipeline_workload(job, *t.profile);
      return pipeline::evaluate(w, c, e.pipeline_plan->plan).minibatch_s;
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
  const SlowdownEmulator window(f, 0, job.job.seed, c.size());
  std::map<int64_t, int64_t> steps_slowing;  // rank -> steps of the window it is slowed in
  const int64_t to = std::min(f.fluctuate_to, steps);
  for (int64_t s = f.fluctuate_from; s < to; ++s) ++steps_slowing[window.slowed_rank(s)];
  double total = double(steps - (to - f.fluctuate_from)) * step_with_decisions_kept(job, facts, c, t, e);
  for (const auto& [rank, n] : steps_slowing)
    total += double(n) * step_with_decisions_kept(job, facts, slowed(c, rank, f.fluctuate_factor), t, e);
  e.step_s = total / double(steps);
  e.notes.push_back(fmt::format(
      "fluctuation: rank {} {}x slower in steps {}-{}{}: the step time is the average over the job's {} steps, "
      "each on the decisions made at the start",
      f.fluctuate_rank, f.fluctuate_factor, f.fluctuate_from, to - 1,
      f.fluctuate_move_every > 0 ? fmt::format(", moving to the next rank every {} steps", f.fluctuate_move_every) : "",
      steps));
}

}  // namespace dp::estimate::detail
