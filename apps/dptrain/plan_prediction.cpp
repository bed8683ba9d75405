// plan_timing and one_model (plan_prediction.h): the step times `plan` reads and estimate's prediction.
#include "apps/dptrain/plan_prediction.h"

#include <fmt/format.h>

#include "apps/dptrain/timing.h"
#include "lib/core/error.h"
#include "lib/core/json.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/pipeline/profile.h"

namespace dp::app {

estimate::Timing plan_timing(const PlanCommand& cmd, const Job& job, const estimate::ModelFacts& facts) {
  TimingSource source;
  if (!cmd.profile.empty() && pipeline::is_block_profile(cmd.profile)) source.profile = cmd.profile;
  if (!cmd.device.empty()) source.device = estimate::device_kind(cmd.device, "--device");
  try {
    return step_timing(job, facts, source);
  } catch (const UsageError& e) {  // no times to be had here: the plan without them, saying why
    estimate::Timing none;
    none.basis = e.message() + " (" + e.hint() + ")";
    return none;
  }
}

OneModel one_model(const Job& job, const estimate::ModelFacts& facts, const estimate::Timing& timing) {
  OneModel m;
  if (!timing.profile) {
    m.untimed_why = timing.basis;
    return m;
  }
  m.estimate = estimate::estimate_job(job, facts, pipeline_cluster(job), timing, estimate::Options{});
  m.timed = m.estimate.step_s > 0;
  if (!m.timed) m.untimed_why = "the model predicts no step time for this job";
  return m;
}

std::string one_model_text(const OneModel& m) {
  if (!m.timed) return "predicted: no step time: " + m.untimed_why + "\n";
  const estimate::Estimate& e = m.estimate;
  std::string split;
  if (e.compute_s + e.comm_s + e.bubble_s + e.update_s > 0)
    split = fmt::format(" (compute {:.2f}, communication {:.2f}, bubble {:.2f}, update {:.2f} ms; bound by {})",
                        e.compute_s * 1e3, e.comm_s * 1e3, e.bubble_s * 1e3, e.update_s * 1e3, e.bound);
  const std::string cgp = e.staleness > 0 ? fmt::format(", staleness {:.2f}", e.staleness) : "";
  return fmt::format("predicted by estimate's model (as `dptrain estimate` and `plan --compare`): {}: step {:.2f} ms{}, "
                     "{:.0f} samples/s{}\n  step times: {}\n",
                     e.strategy, e.step_s * 1e3, split, e.samples_per_s, cgp, e.timing_basis);
}

std::string one_model_json(const OneModel& m) {
  if (!m.timed) return "null";
  const estimate::Estimate& e = m.estimate;
  return fmt::format("{{\"strategy\": {}, \"step_s\": {:.6g}, \"samples_per_s\": {:.6g}, \"compute_s\": {:.6g}, "
                     "\"comm_s\": {:.6g}, \"bubble_s\": {:.6g}, \"update_s\": {:.6g}, \"bound\": {}, "
                     "\"staleness\": {:.6g}, \"timing_basis\": {}}}",
                     json_quoted(e.strategy), e.step_s, e.samples_per_s, e.compute_s, e.comm_s, e.bubble_s,
                     e.update_s, json_quoted(e.bound), e.staleness, json_quoted(e.timing_basis));
}

std::string with_prediction(std::string plan_json, const OneModel& m) {
  plan_json.erase(plan_json.find_last_of('}'));
  return plan_json + ", \"predicted\": " + one_model_json(m) + "}\n";
}

}  // namespace dp::app
