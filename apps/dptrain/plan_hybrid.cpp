// `dptrain plan JOB.toml` for [parallel] strategy = "cgp-pipeline": the groups, the stages every group
// runs (the plan made for group 0's devices, as the run makes it), each rank's role and buffers against
// its device's memory, and the prediction of estimate's model (plan_prediction.h); as text or, --json,
// one object. No MPI.
#include <fmt/format.h>

#include <cstdio>

#include "apps/dptrain/plan.h"
#include "apps/dptrain/plan_prediction.h"
#include "lib/cgp/cgp.h"
#include "lib/core/error.h"
#include "lib/core/json.h"
#include "lib/estimate/estimate.h"
#include "lib/measure/pipeline_plan.h"

namespace dp::app {

int plan_cgp_pipeline(const PlanCommand& cmd, const Job& job) {
  if (cmd.workers > 0)
    throw UsageError("--workers", "draws ranks for strategy cgp or a pipeline; cgp-pipeline's groups are the job's",
                     "drop --workers, or see it at N workers beside the others with --compare --workers N");
  const estimate::ModelFacts facts = estimate::model_facts(job);
  const OneModel predicted = one_model(job, facts, plan_timing(cmd, job, facts));
  // Without step times the roles and memory still stand (the plan then from the model's shapes).
  const estimate::Estimate e = predicted.timed ? predicted.estimate
                                               : estimate::estimate_job(job, facts, pipeline_cluster(job),
                                                                        estimate::Timing{}, estimate::Options{});
  const cgp::Grouping grouping = cgp::pipeline_groups(job);
  const pipeline::Plan& plan = e.pipeline_plan->plan;
  const std::string how = job.parallel.cgp.groups.empty() ? "a group per node" : "[parallel.cgp] groups";
  if (cmd.json) {
    std::string stages, ranks;
    for (const pipeline::Stage& st : plan.stages) {
      std::string in_group;
      for (int r : st.ranks) in_group += fmt::format("{}{}", in_group.empty() ? "" : ", ", r);
      stages += fmt::format("{}{{\"first\": {}, \"last\": {}, \"group_ranks\": [{}]}}", stages.empty() ? "" : ", ",
                            st.first, st.last, in_group);
    }
    for (const estimate::RankEstimate& r : e.ranks)
      ranks += fmt::format("{}{{\"rank\": {}, \"role\": {}, \"bytes\": {:.0f}, \"memory_bytes\": {:.0f}, \"fits\": {}}}",
                           ranks.empty() ? "" : ", ", r.rank, json_quoted(r.role), r.memory.total(),
                           r.memory_limit_bytes, r.fits ? "true" : "false");
    std::printf("{\"job\": %s, \"groups\": %s, \"grouped_by\": %s, \"micro_batches\": %lld, \"stages\": [%s], "
                "\"per_rank\": [%s], \"predicted\": %s}\n",
                json_quoted(job.job.name).c_str(), json_quoted(cgp::grouping_text(grouping)).c_str(),
                json_quoted(how).c_str(), (long long)plan.micro_batches, stages.c_str(), ranks.c_str(),
                one_model_json(predicted).c_str());
    return 0;
  }
  std::printf("job %s: CGP of pipelines, groups %s (%s); exchange every %lld local step(s), staleness bound %g\n",
              job.job.name.c_str(), cgp::grouping_text(grouping).c_str(), how.c_str(),
              (long long)job.parallel.cgp.exchange_every, double(job.parallel.cgp.max_staleness));
  std::printf("stages every group runs (%lld micro-batches; ranks counted within a group):\n",
              (long long)plan.micro_batches);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    std::string in_group;
    for (int r : plan.stages[s].ranks) in_group += fmt::format("{}{}", in_group.empty() ? "" : "+", r);
    std::printf("  stage %zu: blocks %d-%d on the group's rank %s\n", s, plan.stages[s].first, plan.stages[s].last,
                in_group.c_str());
  }
  std::printf("per rank (buffers as estimate's model has them; its device's memory, - where [cluster] gives none):\n"
              "  %4s  %-44s %10s %10s\n", "rank", "role", "needs MB", "has MB");
  for (const estimate::RankEstimate& r : e.ranks) {
    const std::string has = r.memory_limit_bytes > 0 ? fmt::format("{:.1f}", r.memory_limit_bytes * 1e-6) : "-";
    std::printf("  %4d  %-44s %10.1f %10s%s\n", r.rank, r.role.c_str(), r.memory.total() * 1e-6, has.c_str(),
                r.fits ? "" : "  OVER");
  }
  std::printf("%s", one_model_text(predicted).c_str());
  return 0;
}

}  // namespace dp::app
