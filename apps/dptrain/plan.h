// `dptrain plan`'s options (cmd_plan.cpp registers them) and its views: the data-parallel division and
// buckets (plan_data.cpp), CGP's groups (plan_cgp.cpp), a pipeline (plan_pipeline.cpp) and CGP of
// pipelines (plan_hybrid.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/dptrain/commands.h"
#include "lib/job/job.h"

namespace dp::app {

struct PlanCommand {
  JobArgs job;
  int64_t workers = 0;       // --workers N: plan CGP or a pipeline for N ranks drawn from the job's kinds
  std::vector<int64_t> worker_counts;  // --workers N[,N...]: with --compare, simulate each strategy at each
  std::string plot;          // --plot: with --compare --workers, an SVG chart of samples/s against workers
  double noise = 0.05;       // --noise: the simulator's per-operation variation
  bool noise_given = false;
  uint64_t seed = 0;         // --seed: of the draw and the solvers (seed_given false: [job] seed)
  bool seed_given = false;
  bool json = false;         // --json: one JSON object instead of the text
  std::string cluster_file;  // --cluster: plan on this cluster file's [cluster] instead of the job's
  std::string profile;       // --profile: a layer profile (step times), or PipeDream's graph (a pipeline)
  double profile_batch = 0;  // --profile-batch: samples the profile's times are for (0: global batch)
  std::string stages;        // --stages: a partition to evaluate beside the planner's
  int64_t micro_batches = 0; // --micro-batches: M (0: the planner tries the divisors up to 64)
  std::string device;        // --device: every rank's device kind (its memory is each rank's)
  bool compare = false;      // --compare: every strategy, ranked (plan_compare.cpp)
};

// [parallel] strategy = "data": the division of the global batch and MRA's gradient buckets.
int plan_data(const PlanCommand& cmd, const Job& job);
// [parallel] strategy = "cgp": the groups.
int plan_cgp(const PlanCommand& cmd, const Job& job);
// --compare: every strategy that applies, predicted on the same inputs and ranked.
int plan_compare(const PlanCommand& cmd, const Job& job);
// [parallel] strategy = "cgp-pipeline": the groups, their stages, each rank's role and memory.
int plan_cgp_pipeline(const PlanCommand& cmd, const Job& job);
// Strategy "pipeline", or PipeDream's graph.txt: stages, devices, micro-batches and recomputation.
int plan_pipeline(const PlanCommand& cmd, const Job& job);

}  // namespace dp::app
