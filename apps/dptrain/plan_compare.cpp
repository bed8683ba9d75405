// `dptrain plan JOB.toml --compare`: every strategy that applies to the job, predicted by estimate's model
// on the same cluster (the job's, or --cluster's) and step times (--profile, --device's peak rates, or the
// blocks timed here), ranked, with the winner and why (lib/compare). --json prints the same as one object.
#include <cstdio>

#include "apps/dptrain/plan.h"
#include "apps/dptrain/timing.h"
#include "lib/compare/compare.h"
#include "lib/core/error.h"
#include "lib/measure/pipeline_plan.h"

namespace dp::app {

int plan_compare(const PlanCommand& cmd, const Job& job) {
  if (cmd.workers > 0 || !cmd.stages.empty() || cmd.micro_batches > 0 || cmd.profile_batch > 0)
    throw UsageError(cmd.workers > 0 ? "--workers" : !cmd.stages.empty() ? "--stages"
                     : cmd.micro_batches > 0 ? "--micro-batches" : "--profile-batch",
                     "is not part of --compare, which compares strategies on the job's own ranks",
                     "leave it out, or drop --compare to plan one strategy");
  if (job.launch.ranks < 2)
    throw UsageError("--compare", "the job has one rank: there is nothing to compare",
                     "give [launch] ranks of 2 or more (--set launch.ranks=N)");
  const estimate::ModelFacts facts = estimate::model_facts(job);
  TimingSource source;
  source.profile = cmd.profile;
  if (!cmd.device.empty()) source.device = estimate::device_kind(cmd.device, "--device");
  const estimate::Timing timing = step_timing(job, facts, source);
  const compare::Comparison c = compare::compare_strategies(job, facts, pipeline_cluster(job), timing);
  std::fputs((cmd.json ? compare::comparison_json(c) : compare::comparison_text(c)).c_str(), stdout);
  return c.winner >= 0 ? 0 : 1;
}

}  // namespace dp::app
