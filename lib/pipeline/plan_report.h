// What `dptrain plan` shows for a pipeline: the planner's (or the run's) stages, devices, micro-batches
// and recomputation with their predicted times and memory, beside the naive plan (equal block counts,
// ranks in order), one stage on every rank (data parallelism as a pipeline runs it, micro-batches
// accumulated; `dptrain estimate` predicts the data strategy) and a user's --stages under the same model;
// as text (a comparison, a verdict, then a table per plan) or as one JSON object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/pipeline/plan.h"

namespace dp::pipeline {

struct PlanReport {
  std::string job;             // [job] name
  std::string profile_source;  // the profile's path, or "the blocks timed now at N samples"
  size_t blocks = 0;
  bool chain = true;           // PipeDream's profile was a chain (false: a graph, linearised)
  double profile_batch = 0;    // samples of a minibatch in the profile's times
  int64_t global_batch = 0;
  int ranks = 0;
  std::string cluster;         // Cluster::describe()
  double planning_s = 0;       // the planner's wall time
  bool from_job = false;       // the plan a run of the job trains with (no --profile)
  std::string how;             // "the planner's (exact)", "the run's, [parallel.pipeline] stages"
  std::vector<std::string> warnings;
  PlanResult planned, naive, one_stage;
  std::optional<PlanResult> given;  // --stages
};

// A plan on one line: "3 stages 0-31, 32-63x2, 64-95; 16 micro-batches; recomputing 12 of 96 blocks;
// 123.4 samples/s"; without the rate when the plan was made from sizes alone (no compute times).
std::string plan_line(const PlanResult& r, bool timed = true);

// The report as `dptrain plan` prints it.
std::string plan_text(const PlanReport& r);
// The same as one JSON object, one line.
std::string plan_json(const PlanReport& r);

}  // namespace dp::pipeline
