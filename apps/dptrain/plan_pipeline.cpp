// `dptrain plan JOB.toml --profile FILE`: a pipeline for the job's global batch on its cluster (or
// --cluster's, or --workers ranks drawn from its kinds): the planner's plan beside the naive plan, data
// parallelism and a user's --stages, shown by lib/pipeline/plan_report.h. Without --profile, for a job of
// strategy "pipeline": the plan its run would train with (lib/train/pipeline_plan.h: its
// [parallel.pipeline] profile, or its blocks timed now, and its stages and recomputation). Nothing fits:
// one line saying which stage and what would. The model is never built: its blocks' shapes
// (models/model_shape.h) are all a plan reads; with --device every rank has that kind's memory.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "apps/dptrain/plan.h"
#include "apps/dptrain/plan_prediction.h"
#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/data/dataset.h"
#include "lib/pipeline/plan.h"
#include "lib/pipeline/plan_report.h"
#include "lib/measure/measure.h"
#include "models/model_shape.h"

namespace dp::app {
namespace {

std::vector<int64_t> micro_batch_counts(const PlanCommand& cmd, const Job& job) {
  const int64_t batch = job.train.global_batch;
  if (cmd.micro_batches > 0 && batch % cmd.micro_batches != 0)
    throw UsageError("--micro-batches", fmt::format("{} micro-batches do not divide the global batch of {}",
                                                    cmd.micro_batches, batch),
                     "give a divisor of train.global_batch");
  return micro_batch_candidates(batch, cmd.micro_batches > 0 ? cmd.micro_batches : job.parallel.pipeline.micro_batches);
}

// The profile a plan reads and the planner's workload from it.
struct Profiled {
  std::string path;             // "" when the job's blocks are timed now
  bool chain = true;            // PipeDream's profile is a chain
  bool dptrain_format = true;   // a dptrain layer profile (false: PipeDream's graph.txt)
  double batch = 0;             // samples of a minibatch in its times
  pipeline::BlockProfile ours;  // dptrain's (empty for PipeDream's)
  pipeline::Workload workload;
};

// Without --profile the job's own ([parallel.pipeline] profile, or its blocks timed now), else --profile's
// (dptrain's layer profile or PipeDream's graph.txt); the workload for the job's batch and optimizer.
Profiled read_profile(const PlanCommand& cmd, const Job& job) {
  const bool from_job = cmd.profile.empty();
  const bool ours = from_job || pipeline::is_block_profile(cmd.profile);
  if (ours && cmd.profile_batch > 0)
    throw UsageError("--profile-batch", "is for PipeDream's profiles; a dptrain profile says its micro_batch",
                     "leave out --profile-batch");
  Profiled p;
  p.path = from_job ? job.parallel.pipeline.profile : cmd.profile;
  pipeline::LayerProfile pipedream;
  if (from_job) {
    const DatasetSplits data = load_dataset(job.data, job.job.seed);
    const ModelShape model = model_shape(job.model, data.train.shape());  // nothing allocated
    check_pipeline_job(job, model);
    p.ours = job_layer_profile(job, model);
  } else if (ours) {
    p.ours = pipeline::read_block_profile(cmd.profile);
  } else {
    pipedream = pipeline::read_pipedream_graph(cmd.profile);
  }
  p.chain = pipedream.chain;
  p.dptrain_format = ours;
  p.batch = ours                    ? double(p.ours.micro_batch)
            : cmd.profile_batch > 0 ? cmd.profile_batch
                                    : double(job.train.global_batch);
  p.workload = from_job ? job_pipeline_workload(job, p.ours)
               : ours   ? pipeline::workload_from_block_profile(p.ours)
                        : pipeline::workload_from_profile(pipedream, p.batch);
  p.workload.global_batch = job.train.global_batch;
  p.workload.micro_batch_counts = micro_batch_counts(cmd, job);
  p.workload.state_per_param_byte = resident_bytes_per_param_byte(job.optim);
  p.workload.sharded_per_param_byte = sharded_bytes_per_param_byte(job);
  return p;
}

// Blocks sharing weights (a tied LM head and the embedding) would need their gradients summed across
// stages, which the runtime does not do: such a model is planned as one stage, data parallel.
void check_untied(const Profiled& p, const Job& job) {
  const auto& blocks = p.ours.blocks;
  for (size_t b = 0; b < blocks.size(); ++b)
    if (const int other = blocks[b].shares_weights_with; other >= 0 && other != int(b))
      throw InputError(p.path.empty() ? job.source + " [model] tied_head" : p.path,
                       fmt::format("block {} ({}) shares its weights with block {}: they cannot be in "
                                   "different pipeline stages", b, blocks[b].name, other),
                       "untie them ([model] tied_head = false) and profile again, or train data parallel");
}

// The plan shown, with how it was chosen and how long that took: the run's (from_job) or the planner's.
void choose_plan(const Job& job, const pipeline::Workload& w, const Cluster& c, uint64_t seed, bool ours,
                 pipeline::PlanReport& r) {
  const auto t0 = std::chrono::steady_clock::now();
  if (ours) {  // as the run (and estimate) choose it: the job's stages and recomputation, or the planner's
    Job planned_job = job;
    planned_job.job.seed = seed;
    PipelineChoice choice = choose_pipeline_plan(planned_job, w, c);
    r.planned = std::move(choice.result);
    r.warnings = std::move(choice.warnings);
    r.how = (r.from_job ? "the run's, " : "") + choice.how;
  } else {
    pipeline::PlanOptions o;
    o.seed = seed;
    r.planned = pipeline::plan_pipeline(w, c, o);
    r.how = fmt::format("the planner's ({})", r.planned.method);
  }
  r.planning_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.planned.feasible && !r.from_job)
    throw InputError(job.source + " [cluster]", "nothing fits: " + pipeline::explain_infeasible(w, c, r.planned),
                     smallest_pipeline_hint(w, c, seed));
}

}  // namespace

int plan_pipeline(const PlanCommand& cmd, const Job& job) {
  const Profiled p = read_profile(cmd, job);
  const pipeline::Workload& w = p.workload;
  const bool from_job = cmd.profile.empty();  // the run's own plan
  const uint64_t seed = cmd.seed_given ? cmd.seed : job.job.seed;
  const Cluster c = cmd.workers > 0 ? draw_cluster(job, int(cmd.workers), seed)
                    : from_job      ? profiled_cluster(job)
                                    : pipeline_cluster(job);
  check_untied(p, job);
  pipeline::PlanReport r;
  r.from_job = from_job;
  // The run's own plan, or a dptrain profile on the job's own ranks: as the run (and estimate) choose it.
  const bool ours = from_job || (p.dptrain_format && cmd.workers == 0);
  choose_plan(job, w, c, seed, ours, r);
  if (!cmd.stages.empty())
    r.given = pipeline::best_given_stages(cmd.stages, w, c, "--stages", [&](pipeline::Plan plan) {
      return pipeline::finish_plan(w, c, std::move(plan));
    });
  r.naive = pipeline::naive_plan(w, c);
  r.one_stage = pipeline::data_parallel_plan(w, c);
  r.job = job.job.name;
  r.profile_source = !p.path.empty() ? p.path : fmt::format("the blocks timed now at {} samples", p.ours.micro_batch);
  r.blocks = w.blocks.size();
  r.chain = p.chain;
  r.profile_batch = p.batch;
  r.global_batch = job.train.global_batch;
  r.ranks = c.size();
  r.cluster = c.describe();
  // Estimate's prediction of the job on the same times (a dptrain profile of the job's own cluster).
  std::optional<OneModel> predicted;
  if (ours && cmd.workers == 0) {
    const estimate::ModelFacts facts = estimate::model_facts(job);
    estimate::Timing timing;
    timing.basis = p.path.empty() ? r.profile_source : "layer profile " + p.path + " (" + p.ours.timed_on() + ")";
    timing.profile = p.ours;
    if (p.ours.model == facts.describe) predicted = one_model(job, facts, timing);
  }
  if (cmd.json) {
    const std::string json = pipeline::plan_json(r);
    std::fputs((predicted ? with_prediction(json, *predicted) : json).c_str(), stdout);
  } else {
    std::fputs(pipeline::plan_text(r).c_str(), stdout);
    if (predicted) std::fputs(one_model_text(*predicted).c_str(), stdout);
  }
  return 0;
}

}  // namespace dp::app
