// `dptrain plan JOB.toml`: its options, and what a run of the job would do before it starts, with no MPI:
// for strategy "pipeline" or from PipeDream's graph.txt a pipeline (plan_pipeline.cpp), the groups for
// strategy "cgp" (plan_cgp.cpp), else the division of the global batch and MRA's buckets (plan_data.cpp);
// each ends with estimate's prediction of its step (plan_prediction.h). --compare: every strategy.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "apps/dptrain/job_options.h"
#include "apps/dptrain/plan.h"
#include "lib/core/error.h"
#include "lib/estimate/estimate.h"
#include "lib/job/job.h"
#include "lib/pipeline/profile.h"

namespace dp::app {
namespace {

int cmd_plan(const PlanCommand& cmd) {
  if ((!cmd.plot.empty() || cmd.noise_given) && (!cmd.compare || cmd.worker_counts.empty()))
    throw UsageError(!cmd.plot.empty() ? "--plot" : "--noise", "is for --compare --workers N[,N...]",
                     "add --compare --workers 16,64,256");
  const Job loaded = load_job(cmd.job.path, cmd.job.overrides, cmd.cluster_file);
  // --device: every rank's memory is the kind's.
  const Job job = cmd.device.empty() ? loaded
                  : estimate::with_device_memory(loaded, estimate::device_kind(cmd.device, "--device").memory_gb);
  for (const JobWarning& w : job.warnings) std::fprintf(stderr, "dptrain: %s\n", w.line().c_str());
  if (cmd.compare || job.parallel.strategy == StrategyKind::automatic) return plan_compare(cmd, job);
  // PipeDream's profiles (graph.txt) can only plan a pipeline: they have no update or fixed times.
  const bool pipedream = !cmd.profile.empty() && !pipeline::is_block_profile(cmd.profile);
  if (pipedream || job.parallel.strategy == StrategyKind::pipeline) return plan_pipeline(cmd, job);
  if (!cmd.stages.empty() || cmd.micro_batches > 0 || cmd.profile_batch > 0)
    throw UsageError(!cmd.stages.empty()       ? "--stages"
                     : cmd.micro_batches > 0   ? "--micro-batches"
                                               : "--profile-batch",
                     "plans a pipeline; this job's [parallel] strategy is " + name_of(job.parallel.strategy),
                     "add --set parallel.strategy=pipeline");
  if (job.parallel.strategy == StrategyKind::cgp) return plan_cgp(cmd, job);
  if (job.parallel.strategy == StrategyKind::cgp_pipeline) return plan_cgp_pipeline(cmd, job);
  if (cmd.workers > 0 || cmd.seed_given)
    throw UsageError(cmd.workers > 0 ? "--workers" : "--seed",
                     "plans the groups of strategy cgp or a pipeline; this job's [parallel] strategy is data",
                     "add --set parallel.strategy=cgp (or pipeline)");
  return plan_data(cmd, job);
}

}  // namespace

void register_plan(CLI::App& app, Invocation& call) {
  auto opt = std::make_shared<PlanCommand>();
  auto* cmd = app.add_subcommand("plan", "show how a job would divide its batch and bucket its gradients, group its "
                                         "ranks (strategy cgp), or run as a pipeline (strategy pipeline, or "
                                         "PipeDream's graph.txt as --profile), and its predicted step; or compare "
                                         "every strategy (--compare)");
  add_job_options(*cmd, opt->job);
  cmd->add_option("--workers", opt->worker_counts,
                  "cgp, pipeline: plan for N ranks drawn from the job's device kinds (default: the job's ranks); "
                  "--compare: simulate every strategy at each N of a list, N[,N...]")
      ->delimiter(',')->check(CLI::PositiveNumber)->type_name("N[,N...]");
  cmd->add_option("--plot", opt->plot, "--compare --workers: write samples/s against workers per strategy as an "
                                       "SVG chart")->type_name("FILE.svg");
  auto* noise = cmd->add_option("--noise", opt->noise, "--compare --workers: the simulator's variation of each operation's time "
                                         "(a log-normal sigma; default 0.05)")
      ->check(CLI::Range(0.0, 2.0))->type_name("SIGMA");
  auto* seed = cmd->add_option("--seed", opt->seed, "cgp, pipeline: seed of --workers' draw and of the solvers "
                                                    "(default: [job] seed)")->type_name("S");
  cmd->add_flag("--json", opt->json, "print the plan as one JSON object");
  cmd->add_flag("--compare", opt->compare, "predict every strategy that applies (data parallel with equal or I-DAT "
                                           "shares, ring or MRA; CGP; the pipeline) on the same inputs, rank them "
                                           "by time, and say what bounds each and why the winner wins");
  cmd->add_option("--cluster", opt->cluster_file, "plan on this cluster file's [cluster] instead of the job's")
      ->type_name("FILE");
  cmd->add_option("--profile", opt->profile,
                  "step times from this layer profile (profile --layers --out); PipeDream's graph.txt plans a "
                  "pipeline: stages, devices, micro-batches, recomputation")->type_name("FILE");
  cmd->add_option("--profile-batch", opt->profile_batch,
                  "pipeline: samples of a minibatch in the profile's times and sizes (default: the job's global "
                  "batch)")->check(CLI::PositiveNumber)->type_name("N");
  cmd->add_option("--stages", opt->stages,
                  "pipeline: also evaluate these stages, \"0-16x3,17-39\" (block ranges, xR replicas) or "
                  "\"0-16@0+1+2,17-39@3\" (their ranks)")->type_name("STAGES");
  cmd->add_option("--micro-batches", opt->micro_batches,
                  "pipeline: micro-batches per mini-batch (default: the best divisor of the global batch up to 64)")
      ->check(CLI::PositiveNumber)->type_name("M");
  cmd->add_option("--device", opt->device,
                  "every rank is a device of this kind: its memory the rank's, step times from its peak rates "
                  "(h200, h100, a100-80, a100-40, "
                  "l40s, v100, rtx4090)")->type_name("NAME");
  cmd->callback([opt, seed, noise, &call] {
    opt->seed_given = seed->count() > 0;
    opt->noise_given = noise->count() > 0;
    if (!opt->compare && opt->worker_counts.size() > 1)
      throw UsageError("--workers", "a list of worker counts is for --compare (how each strategy scales)",
                       "give one count, or add --compare");
    if (opt->worker_counts.size() == 1) opt->workers = opt->worker_counts.front();
    call.status = cmd_plan(*opt);
  });
}

}  // namespace dp::app
