// `dptrain plan` for [parallel] strategy = "cgp": the cluster (the job's under emulated slowdown, or
// --workers ranks drawn from its device kinds) and the workload CGP's model reads (the model's update
// size; seconds per sample at speed 1 as estimate reads it: [cluster] sample_rate, or --profile's,
// --device's or the blocks timed here), then lib/cgp's groupings and report (lib/cgp/plan_report.h), and
// estimate's prediction of the job (the same number: plan_prediction.h). --json: one JSON object.
#include <algorithm>
#include <cstdio>

#include "apps/dptrain/plan.h"
#include "apps/dptrain/plan_prediction.h"
#include "lib/cgp/plan_report.h"
#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/measure/measure.h"
#include "lib/measure/pipeline_plan.h"

namespace dp::app {
namespace {

cgp::PlanReport plan_inputs(const PlanCommand& cmd, const Job& job, const estimate::ModelFacts& facts,
                            const estimate::Timing& timing) {
  const uint64_t seed = cmd.seed_given ? cmd.seed : job.job.seed;
  const bool drawn = cmd.workers > 0;
  Cluster cluster = drawn ? draw_cluster(job, int(cmd.workers), seed) : pipeline_cluster(job);
  const bool rated = job.cluster.sample_rate > 0;
  if (!rated && !timing.profile)
    throw UsageError("--profile", "CGP's groups need a compute time and there is none: " + timing.basis,
                     "give --profile FILE (profile --layers), --device NAME, or [cluster] sample_rate");
  // Drawn ranks keep the job's share per rank: the global batch scales with them.
  Job sized = job;
  if (drawn) sized.train.global_batch = std::max<int64_t>(1, job.train.global_batch * cmd.workers / job.launch.ranks);
  cgp::PlanReport r{job.job.name, cluster,
                    cgp::job_workload(sized, facts.parameters,
                                      estimate::cgp_sample_seconds(sized, facts, cluster, timing)),
                    facts.describe, rated ? "[cluster] sample_rate" : timing.basis, facts.parameters, seed,
                    drawn, job.parallel.cgp.max_staleness, job.parallel.cgp.group_count, {}, {}, {}};
  return r;
}

}  // namespace

int plan_cgp(const PlanCommand& cmd, const Job& job) {
  const estimate::ModelFacts facts = estimate::model_facts(job);
  const estimate::Timing timing = plan_timing(cmd, job, facts);
  cgp::PlanReport r = plan_inputs(cmd, job, facts, timing);
  cgp::solve_plan(job, r);
  if (cmd.workers > 0) {  // drawn ranks: the job's own cluster is not what was planned
    std::fputs((cmd.json ? cgp::plan_json(r) : cgp::plan_text(r)).c_str(), stdout);
    return 0;
  }
  const OneModel predicted = one_model(job, facts, timing);
  if (cmd.json) {
    std::fputs(with_prediction(cgp::plan_json(r), predicted).c_str(), stdout);
  } else {
    std::printf("%s\n%s", cgp::plan_text(r).c_str(), one_model_text(predicted).c_str());
  }
  return 0;
}

}  // namespace dp::app
