// `dptrain plan JOB.toml --compare`: every strategy that applies to the job, predicted by estimate's model
// on the same cluster (the job's, or --cluster's) and step times (--profile, --device's peak rates, or the
// blocks timed here), ranked, with the winner and why (lib/compare). --json prints the same as one object.
// With --workers N[,N...]: how each scales, predicted and simulated at each size (--plot: an SVG chart).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "apps/dptrain/plan.h"
#include "apps/dptrain/timing.h"
#include "lib/compare/compare.h"
#include "lib/compare/scaling.h"
#include "lib/core/error.h"
#include "lib/measure/pipeline_plan.h"

namespace dp::app {
namespace {

// --workers N[,N...]: each strategy predicted and simulated at each size (lib/compare/scaling.h).
int plan_scaling(const PlanCommand& cmd, const Job& job, const estimate::ModelFacts& facts,
                 const estimate::Timing& timing) {
  // The job's own steps (as many as its runs take, so a slow window moving over them is played alike),
  // at most 100 so that 10,000 workers stay fast.
  constexpr int64_t kMostSimulatedSteps = 100;
  const int64_t steps = job.train.steps > 0 ? std::min(job.train.steps, kMostSimulatedSteps) : kMostSimulatedSteps;
  const uint64_t seed = cmd.seed_given ? cmd.seed : job.job.seed;
  const compare::Scaling s = compare::scale_strategies(job, facts, timing, cmd.worker_counts, seed, cmd.noise, steps);
  if (!cmd.plot.empty()) {
    std::ofstream out(cmd.plot);
    out << compare::scaling_svg(s, fmt::format("{}: {}", job.job.name, facts.describe));
    if (!out.flush()) throw UsageError("--plot", "cannot write " + cmd.plot, "give a path in a writable folder");
  }
  std::fputs((cmd.json ? compare::scaling_json(s) : compare::scaling_text(s)).c_str(), stdout);
  return 0;
}

}  // namespace

int plan_compare(const PlanCommand& cmd, const Job& job) {
  if (!cmd.stages.empty() || cmd.micro_batches > 0 || cmd.profile_batch > 0)
    throw UsageError(!cmd.stages.empty() ? "--stages" : cmd.micro_batches > 0 ? "--micro-batches" : "--profile-batch",
                     "is not part of --compare, which compares strategies",
                     "leave it out, or drop --compare to plan one strategy");
  if (job.launch.ranks < 2)
    throw UsageError("--compare", "the job has one rank: there is nothing to compare",
                     "give [launch] ranks of 2 or more (--set launch.ranks=N)");
  const estimate::ModelFacts facts = estimate::model_facts(job);
  TimingSource source;
  source.profile = cmd.profile;
  if (!cmd.device.empty()) source.device = estimate::device_kind(cmd.device, "--device");
  const estimate::Timing timing = step_timing(job, facts, source);
  if (!cmd.worker_counts.empty()) return plan_scaling(cmd, job, facts, timing);
  const compare::Comparison c = compare::compare_strategies(job, facts, pipeline_cluster(job), timing);
  std::fputs((cmd.json ? compare::comparison_json(c) : compare::comparison_text(c)).c_str(), stdout);
  return c.winner >= 0 ? 0 : 1;
}

}  // namespace dp::app
