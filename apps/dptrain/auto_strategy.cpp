// choose_strategy, recorded_choice, record_choice (auto_strategy.h).
#include "apps/dptrain/auto_strategy.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <filesystem>
#include <fstream>

#include "apps/dptrain/timing.h"
#include "lib/compare/compare.h"
#include "lib/core/error.h"
#include "lib/core/json.h"
#include "lib/estimate/estimate.h"
#include "lib/measure/pipeline_plan.h"

namespace dp::app {
namespace {

std::string choice_file(const RunDir& dir) { return dir.root + "/strategy.toml"; }

AutoChoice applied(const Job& job, std::vector<std::string> sets, std::string name) {
  AutoChoice c;
  c.job = parse_job(job_to_toml(job), job.source, sets);
  c.job.warnings.clear();
  c.sets = std::move(sets);
  c.name = std::move(name);
  return c;
}

}  // namespace

AutoChoice choose_strategy(const Job& job) {
  const estimate::ModelFacts facts = estimate::model_facts(job);
  const estimate::Timing timing = step_timing(job, facts, TimingSource{job.parallel.pipeline.profile, {}, false});
  const compare::Comparison c = compare::compare_strategies(job, facts, pipeline_cluster(job), timing);
  if (c.winner < 0) {
    Job as_pipeline = job;
    as_pipeline.parallel.strategy = StrategyKind::pipeline;
    const pipeline::Workload w = job_pipeline_workload(as_pipeline, *timing.profile);
    throw InputError(job.source + " [parallel] strategy",
                     fmt::format("\"auto\" finds no strategy that fits this model on the job's {} rank(s): {}",
                                 job.launch.ranks, c.rows.empty() ? "no candidate" : c.rows.front().bound),
                     smallest_pipeline_hint(w, pipeline_cluster(job), job.job.seed) +
                         " (see dptrain plan JOB --compare)");
  }
  const compare::Row& w = c.rows[size_t(c.winner)];
  AutoChoice choice = applied(job, w.candidate.sets, w.candidate.name);
  choice.table = compare::comparison_text(c);
  std::string next;
  for (const compare::Row& r : c.rows)
    if (&r != &w && r.planned && r.fits) {
      next = fmt::format("; next {}, {:.2f}x its time", r.candidate.name, r.time_s / w.time_s);
      break;
    }
  choice.line = fmt::format("strategy auto: {} on {} rank(s), predicted {:.0f} samples/s, bound by {}{}",
                            w.candidate.name, job.launch.ranks, w.estimate.samples_per_s, w.bound, next);
  return choice;
}

std::optional<AutoChoice> recorded_choice(const Job& job, const RunDir& dir) {
  const std::string path = choice_file(dir);
  if (!std::filesystem::exists(path)) return std::nullopt;
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw CheckpointError(path, std::string("cannot be read: ") + std::string(e.description()),
                          "remove it to choose the strategy again, or start the run anew (--force)");
  }
  const auto* sets = t["sets"].as_array();
  const std::optional<std::string> name = t["chosen"].value<std::string>();
  if (!sets || !name)
    throw CheckpointError(path, "has no 'chosen' name or 'sets' list",
                          "remove it to choose the strategy again, or start the run anew (--force)");
  std::vector<std::string> values;
  for (const toml::node& n : *sets)
    if (const auto s = n.value<std::string>()) values.push_back(*s);
  AutoChoice c = applied(job, values, *name);
  c.line = fmt::format("strategy auto: {}, as this run chose it before ({})", c.name, path);
  return c;
}

void record_choice(const RunDir& dir, const AutoChoice& choice) {
  toml::array sets;
  for (const std::string& s : choice.sets) sets.push_back(s);
  toml::table t{{"chosen", choice.name}, {"sets", sets}, {"ranks", choice.job.launch.ranks}};
  std::ofstream out(choice_file(dir));
  out << "# [parallel] strategy = \"auto\" chose this; --resume keeps it (the comparison: strategy.txt)\n" << t << "\n";
  if (!choice.table.empty()) std::ofstream(dir.root + "/strategy.txt") << choice.table;
  if (!out.flush())
    throw RuntimeFailure(choice_file(dir), "cannot write the strategy's choice", "check the run folder's disk");
}

}  // namespace dp::app
