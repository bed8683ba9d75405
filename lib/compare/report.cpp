// The comparison as a table (plan --compare) and as one JSON object (plan --compare --json).
#include <fmt/format.h>

#include "lib/compare/compare.h"
#include "lib/core/json.h"

namespace dp::compare {
namespace {

std::string memory_cell(const Row& r) {
  if (!r.planned) return "-";
  const std::string has = r.peak_limit_bytes > 0 ? fmt::format("{:.0f}", r.peak_limit_bytes * 1e-6) : "-";
  return fmt::format("{:.0f}/{} {}", r.peak_bytes * 1e-6, has, r.fits ? "fits" : "NO");
}

std::string sets_text(const Row& r) {
  std::string s;
  for (const std::string& x : r.candidate.sets) s += (s.empty() ? "--set " : " --set ") + x;
  return s;
}

}  // namespace

std::string comparison_text(const Comparison& c) {
  std::string out = fmt::format("job {}: {}\ncluster: {}\nstep times: {}\n", c.job, c.model, c.cluster, c.timing_basis);
  out += fmt::format("predicted for the job's {} steps (CGP charged {:.4f} x staleness x exchange_every more steps "
                     "for the same accuracy):\n", c.steps, kStalenessStepCost);
  out += fmt::format("  {:>2} {:<38} {:>10} {:>10} {:>9} {:>6} {:>16}  {}\n", "#", "strategy", "time s", "samples/s",
                     "staleness", "steps", "peak MB/has", "bound by");
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const Row& r = c.rows[i];
    const std::string mark = int(i) == c.winner ? "*" : " ";
    if (!r.planned) {
      out += fmt::format("  {:>2} {:<38} {:>10} {:>10} {:>9} {:>6} {:>16}  cannot be planned: {}\n", mark,
                         r.candidate.name, "-", "-", "-", "-", "-", r.error);
      continue;
    }
    const StrategyKind kind = r.candidate.job.parallel.strategy;
    const bool cgp = kind == StrategyKind::cgp || kind == StrategyKind::cgp_pipeline;  // groups: stale updates
    out += fmt::format("  {:>2} {:<38} {:>10.1f} {:>10.0f} {:>9} {:>5.2f}x {:>16}  {}\n", mark, r.candidate.name,
                       r.time_s, r.estimate.samples_per_s, cgp ? fmt::format("{:.2f}", r.estimate.staleness) : "-",
                       r.steps_factor, memory_cell(r), r.bound);
  }
  out += "why: " + c.why + "\n";
  if (c.winner >= 0) out += "to run it: " + sets_text(c.rows[size_t(c.winner)]) + "\n";
  return out;
}

std::string comparison_json(const Comparison& c) {
  std::string rows;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const Row& r = c.rows[i];
    std::string sets;
    for (const std::string& s : r.candidate.sets) sets += (sets.empty() ? "" : ", ") + json_quoted(s);
    rows += fmt::format(
        "{}{{\"name\": {}, \"sets\": [{}], \"planned\": {}, \"error\": {}, \"strategy\": {}, \"fits\": {}, "
        "\"samples_per_s\": {:.6g}, \"step_s\": {:.6g}, \"time_s\": {:.6g}, \"steps_factor\": {:.6g}, "
        "\"staleness\": {:.6g}, \"peak_rank\": {}, \"peak_bytes\": {:.0f}, \"peak_limit_bytes\": {:.0f}, "
        "\"bound\": {}}}",
        i ? ", " : "", json_quoted(r.candidate.name), sets, r.planned ? "true" : "false",
        r.planned ? "null" : json_quoted(r.error), json_quoted(r.estimate.strategy), r.fits ? "true" : "false",
        r.estimate.samples_per_s, r.estimate.step_s, r.time_s, r.steps_factor, r.estimate.staleness, r.peak_rank,
        r.peak_bytes, r.peak_limit_bytes, json_quoted(r.bound));
  }
  return fmt::format("{{\"job\": {}, \"model\": {}, \"cluster\": {}, \"timing_basis\": {}, \"steps\": {}, "
                     "\"staleness_step_cost\": {}, \"winner\": {}, \"why\": {}, \"rows\": [{}]}}\n",
                     json_quoted(c.job), json_quoted(c.model), json_quoted(c.cluster), json_quoted(c.timing_basis),
                     c.steps, kStalenessStepCost, c.winner, json_quoted(c.why), rows);
}

}  // namespace dp::compare
