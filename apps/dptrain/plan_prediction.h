// The one model's prediction every single-strategy view of `dptrain plan` ends with: estimate_job
// (lib/estimate) of the job as it stands, on the cluster its ranks train on (pipeline_cluster: [cluster]
// under emulated slowdown, or --cluster's), step times from --profile (a dptrain layer profile),
// --device's peak rates, or the job's blocks timed here. `dptrain estimate` and `plan --compare` call the
// same function on the same inputs, so the three print the same samples/s (tests/cli/plan_compare.sh).
#pragma once

#include <string>

#include "apps/dptrain/plan.h"
#include "lib/estimate/estimate.h"
#include "lib/job/job.h"

namespace dp::app {

// Where `plan`'s step times come from: --profile when it is a dptrain layer profile (PipeDream's graphs
// have no update or fixed times), --device, else the blocks timed here; none (no profile, its basis
// saying why) for a GPU job on a machine without a GPU or a model this machine cannot hold.
estimate::Timing plan_timing(const PlanCommand& cmd, const Job& job, const estimate::ModelFacts& facts);

struct OneModel {
  bool timed = false;
  std::string untimed_why;  // when not timed: why
  estimate::Estimate estimate;
};

// The prediction of `job` on its cluster with `timing`.
OneModel one_model(const Job& job, const estimate::ModelFacts& facts, const estimate::Timing& timing);

// "predicted (estimate's model, as `estimate` and `plan --compare`): step 12.3 ms (compute ..., ...),
// 1234 samples/s, bound by compute; step times: ..." as one or two lines.
std::string one_model_text(const OneModel& m);
// The same as a JSON object ("null" when not timed).
std::string one_model_json(const OneModel& m);
// A plan's JSON object (one line) with the prediction added as "predicted".
std::string with_prediction(std::string plan_json, const OneModel& m);

}  // namespace dp::app
