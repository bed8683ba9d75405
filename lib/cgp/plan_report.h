// What `dptrain plan` shows for [parallel] strategy = "cgp": the cluster (the job's, or ranks drawn from
// its device kinds), the workload CGP's model reads, the groupings of the job's solver and of sorted side
// by side (members, speeds, predicted step and cycle, throughput, staleness, the Pareto front, solver
// time), and a fixed [parallel.cgp] groups predicted too; as text or as one JSON object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/cgp/cgp.h"
#include "lib/job/job.h"

namespace dp::cgp {

struct PlanReport {
  std::string job;             // [job] name
  Cluster cluster;
  Workload workload;
  std::string model;           // the model's description
  std::string sample_source;   // where workload.sample_seconds comes from: "[cluster] sample_rate", ...
  int64_t parameters = 0;
  uint64_t seed = 0;           // of the draw and the solvers
  bool drawn = false;          // the cluster was drawn from the job's kinds (plan --workers)
  int64_t max_staleness = 0;   // [parallel.cgp] max_staleness and group_count
  int64_t group_count = 0;
  std::vector<Solution> solutions;          // the job's solver's, then sorted's (unless that is the job's)
  std::optional<std::string> sorted_error;  // why sorted found no grouping where the job's solver did
  std::optional<Prediction> fixed;          // [parallel.cgp] groups, when the job fixes them
};

// The groupings of a report whose cluster, workload and seed are set: the job's solver's, sorted's beside
// it, and [parallel.cgp] groups predicted. Throws JobError when the job's solver finds none (sorted's
// failure is only noted), UsageError naming --workers when a fixed grouping does not match drawn ranks.
void solve_plan(const Job& job, PlanReport& r);

// The report as `dptrain plan` prints it: the header, the solvers side by side, each solver's groups, the
// Pareto front of the job's solver, the fixed groups.
std::string plan_text(const PlanReport& r);
// The same as one JSON object, one line.
std::string plan_json(const PlanReport& r);

}  // namespace dp::cgp
