// The CGP plan of `dptrain plan` (plan_report.h): the solvers run side by side, then the report as text
// (tables of ranks, speeds and predicted times) and as one JSON object.
#include "lib/cgp/plan_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "lib/core/error.h"
#include "lib/core/json.h"
#include "lib/core/printf_string.h"

namespace dp::cgp {
namespace {

// s, then `sep` unless s is empty, then `item`.
void append(std::string& s, const char* sep, const std::string& item) {
  if (!s.empty()) s += sep;
  s += item;
}

// ---- text ----------------------------------------------------------------------------------------------

// Ranks as ranges, "0-3,8,10-11", cut after about 40 characters.
std::string ranks_text(const std::vector<int>& members) {
  std::string s;
  for (size_t i = 0; i < members.size();) {
    size_t j = i;
    while (j + 1 < members.size() && members[j + 1] == members[j] + 1) ++j;
    const std::string run = j == i ? std::to_string(members[i]) : fmt::format("{}-{}", members[i], members[j]);
    if (s.size() + run.size() > 40) return s + fmt::format(",... ({} ranks)", members.size());
    append(s, ",", run);
    i = j + 1;
  }
  return s;
}

std::string speeds_text(const GroupPrediction& g, const Cluster& c) {
  if (g.members.size() <= 4) {
    std::string s;
    for (int m : g.members) s += fmt::format("{}{:g}", s.empty() ? "" : ", ", c.rank(m).speed);
    return s;
  }
  double lo = 1e300, hi = 0;
  for (int m : g.members) lo = std::min(lo, c.rank(m).speed), hi = std::max(hi, c.rank(m).speed);
  return fmt::format("sum {:.4g} ({:g}-{:g})", g.speed_sum, lo, hi);
}

std::string grouping_summary(const Prediction& p) {
  std::string s;
  std::string sizes;
  for (const GroupPrediction& g : p.groups) {
    append(s, " ", fmt::format("{{{}}}", ranks_text(g.members)));
    append(sizes, "+", std::to_string(g.members.size()));
  }
  if (s.size() <= 38) return s;
  return p.groups.size() == 1 ? fmt::format("1 group of {} ranks", sizes)
                              : fmt::format("{} groups of {} ranks", p.groups.size(), sizes);
}

std::string groups_text(const std::string& title, const Prediction& p, const Cluster& c) {
  std::string out = printf_string("%s\n  %5s  %-24s %-22s %7s %10s %12s %9s %11s %9s %9s %9s %11s %9s\n",
                                  title.c_str(), "group", "ranks", "speeds", "batch", "compute ms", "allreduce ms",
                                  "step ms", "exchange ms", "gather ms", "held ms", "cycle ms", "samples/s",
                                  "staleness");
  for (size_t i = 0; i < p.groups.size(); ++i) {
    const GroupPrediction& g = p.groups[i];
    out += printf_string("  %5zu  %-24s %-22s %7lld %10.3f %12.3f %9.3f %11.3f %9.3f %9.3f %9.3f %11.1f %9.3f\n", i,
                         ranks_text(g.members).c_str(), speeds_text(g, c).c_str(), (long long)g.batch,
                         g.compute_s * 1e3, g.allreduce_s * 1e3, g.step_s * 1e3, g.exchange_s * 1e3,
                         g.gather_s * 1e3, g.held_s * 1e3, g.cycle_s * 1e3, g.samples_per_s, g.staleness);
  }
  return out;
}

std::string front_text(const Solution& s, double bound) {
  const size_t n = s.front.size(), shown = std::min<size_t>(n, 16);
  std::string out = printf_string("Pareto front of %s (%zu point(s)%s; * meets the bound):\n  %11s %12s  %s\n",
                                  name_of(s.solver).c_str(), n, shown < n ? ", 16 shown evenly" : "", "staleness",
                                  "samples/s", "groups");
  for (size_t k = 0; k < shown; ++k) {
    const size_t i = shown < 2 ? 0 : k * (n - 1) / (shown - 1);
    const FrontPoint& f = s.front[i];
    const int groups = *std::max_element(f.grouping.begin(), f.grouping.end()) + 1;
    const std::string text = f.grouping.size() <= 16 ? grouping_text(f.grouping)
                             : groups == 1                ? std::string("1 group")
                                                          : fmt::format("{} groups", groups);
    out += printf_string("  %s %9.3f %12.1f  %s\n", f.max_staleness <= bound + 1e-9 ? "*" : " ", f.max_staleness,
                         f.samples_per_s, text.c_str());
  }
  return out;
}

// The header: the job, the cluster, the model and its workload, the problem solved.
std::string header_text(const PlanReport& r) {
  const Workload& w = r.workload;
  std::string out = printf_string(
      "job %s: %d rank(s)%s, strategy cgp, global batch %lld, %s inside groups\n", r.job.c_str(), r.cluster.size(),
      r.drawn ? fmt::format(" drawn from the job's kinds (seed {})", r.seed).c_str() : "", (long long)w.global_batch,
      w.balanced ? "I-DAT" : "equal shares");
  out += printf_string("cluster: %s\n", r.cluster.describe().c_str());
  out += printf_string("model: %s (%.2f MB per update); %.4g ms per sample at speed 1 (%s); an exchange every %lld "
                       "local step(s), global model on rank %d\n",
                       r.model.c_str(), w.param_bytes * 1e-6, w.sample_seconds * 1e3, r.sample_source.c_str(),
                       (long long)w.exchange_every, w.server_rank);
  out += printf_string("CGPP: the most samples/s with staleness <= %g, %s\n\n", double(r.max_staleness),
                       r.group_count > 0 ? fmt::format("{} groups", r.group_count).c_str() : "any number of groups");
  return out;
}

// The solvers side by side: groups, samples/s, staleness, server load, solver time; their ratio.
std::string solvers_text(const PlanReport& r) {
  const std::vector<Solution>& solutions = r.solutions;
  std::string out = printf_string("  %-16s", "");
  for (const Solution& s : solutions) out += printf_string(" %-40s", name_of(s.solver).c_str());
  out += printf_string("\n  %-16s", "groups");
  for (const Solution& s : solutions) out += printf_string(" %-40s", grouping_summary(s.prediction).c_str());
  out += printf_string("\n  %-16s", "samples/s");
  for (const Solution& s : solutions) out += printf_string(" %-40.1f", s.prediction.samples_per_s);
  out += printf_string("\n  %-16s", "max staleness");
  for (const Solution& s : solutions) out += printf_string(" %-40.3f", s.prediction.max_staleness);
  out += printf_string("\n  %-16s", "server load");
  for (const Solution& s : solutions) out += printf_string(" %-40.3f", s.prediction.server_load);
  out += printf_string("\n  %-16s", "solver time");
  for (const Solution& s : solutions)
    out += printf_string(" %-40s", fmt::format("{:.3f} s, {} evaluations{}", s.seconds, s.evaluations,
                                               s.time_limited ? " (time limit)" : "").c_str());
  out += "\n";
  if (solutions.size() > 1)
    out += printf_string("%s / sorted: %.3fx predicted samples/s\n", name_of(solutions[0].solver).c_str(),
                         solutions[0].prediction.samples_per_s / solutions[1].prediction.samples_per_s);
  if (r.sorted_error) out += printf_string("sorted: %s\n", r.sorted_error->c_str());
  return out;
}

// ---- JSON ----------------------------------------------------------------------------------------------

std::string prediction_json(const Prediction& p) {
  std::string groups;
  for (const GroupPrediction& g : p.groups)
    groups += fmt::format("{}{{\"members\":{},\"batch\":{},\"speed_sum\":{:.9g},\"compute_s\":{:.9g},"
                          "\"allreduce_s\":{:.9g},\"step_s\":{:.9g},\"exchange_s\":{:.9g},\"gather_s\":{:.9g},"
                          "\"held_s\":{:.9g},\"cycle_s\":{:.9g},\"samples_per_s\":{:.9g},\"staleness\":{:.9g}}}",
                          groups.empty() ? "" : ",", json_ints(g.members), g.batch, g.speed_sum, g.compute_s,
                          g.allreduce_s, g.step_s, g.exchange_s, g.gather_s, g.held_s, g.cycle_s, g.samples_per_s,
                          g.staleness);
  return fmt::format("{{\"samples_per_s\":{:.9g},\"max_staleness\":{:.9g},\"server_load\":{:.9g},\"groups\":[{}]}}",
                     p.samples_per_s, p.max_staleness, p.server_load, groups);
}

std::string solution_json(const Solution& s) {
  std::string front;
  for (const FrontPoint& f : s.front)
    front += fmt::format("{}{{\"samples_per_s\":{:.9g},\"max_staleness\":{:.9g},\"grouping\":{}}}",
                         front.empty() ? "" : ",", f.samples_per_s, f.max_staleness, json_ints(f.grouping));
  return fmt::format("{{\"solver\":{},\"seconds\":{:.6g},\"evaluations\":{},\"time_limited\":{},\"grouping\":{},"
                     "\"prediction\":{},\"front\":[{}]}}",
                     json_quoted(name_of(s.solver)), s.seconds, s.evaluations, s.time_limited, json_ints(s.grouping),
                     prediction_json(s.prediction), front);
}

}  // namespace

void solve_plan(const Job& job, PlanReport& r) {
  SolveOptions o = solve_options(job);
  o.seed = r.seed;
  r.solutions = {solve(r.cluster, r.workload, o)};
  if (o.solver != CgpSolver::sorted) {
    try {  // the baseline may find nothing where the job's solver did: say so beside it
      o.solver = CgpSolver::sorted;
      r.solutions.push_back(solve(r.cluster, r.workload, o));
    } catch (const JobError& e) {
      r.sorted_error = e.message();
    }
  }
  const auto& groups = job.parallel.cgp.groups;
  if (groups.empty()) return;
  if (int64_t(groups.size()) != r.cluster.size())
    throw UsageError("--workers", fmt::format("[parallel.cgp] groups names {} ranks, --workers draws {}",
                                              groups.size(), r.cluster.size()),
                     "drop --workers to predict the fixed grouping, or --set parallel.cgp.groups=[]");
  r.fixed = predict(r.cluster, r.workload, Grouping(groups.begin(), groups.end()));
}

std::string plan_text(const PlanReport& r) {
  const double bound = double(r.max_staleness);
  std::string out = header_text(r) + solvers_text(r);
  // Each table after an empty line ("\n" + text would trip GCC 12's -Wrestrict false positive).
  for (const Solution& s : r.solutions)
    out.append("\n").append(groups_text(name_of(s.solver) + "'s groups:", s.prediction, r.cluster));
  out.append("\n").append(front_text(r.solutions[0], bound));
  if (r.fixed) {
    const Prediction& f = *r.fixed;
    const std::string title = fmt::format(
        "[parallel.cgp] groups: {:.1f} samples/s, staleness {:.3f} ({}), server load {:.3f}", f.samples_per_s,
        f.max_staleness, f.max_staleness <= bound + 1e-9 ? "meets the bound" : "above the bound", f.server_load);
    out.append("\n").append(groups_text(title, f, r.cluster));
  }
  return out;
}

std::string plan_json(const PlanReport& r) {
  const Workload& w = r.workload;
  const std::vector<Solution>& solutions = r.solutions;
  std::string sols;
  for (const Solution& s : solutions) append(sols, ",", solution_json(s));
  if (r.sorted_error) sols += fmt::format(",{{\"solver\":\"sorted\",\"error\":{}}}", json_quoted(*r.sorted_error));
  const std::string ratio = solutions.size() > 1 ? fmt::format("{:.9g}", solutions[0].prediction.samples_per_s /
                                                                              solutions[1].prediction.samples_per_s)
                                                 : "null";
  return printf_string(
      "{\"job\":%s,\"ranks\":%d,\"drawn\":%s,\"seed\":%llu,\"cluster\":%s,"
      "\"workload\":{\"model\":%s,\"parameters\":%lld,\"param_bytes\":%.9g,\"global_batch\":%lld,"
      "\"sample_seconds\":%.9g,\"sample_seconds_from\":%s,\"balanced\":%s,\"exchange_every\":%lld,"
      "\"server_rank\":%d},\"max_staleness\":%lld,\"group_count\":%lld,\"solutions\":[%s],"
      "\"ratio_to_sorted\":%s,\"fixed\":%s}\n",
      json_quoted(r.job).c_str(), r.cluster.size(), r.drawn ? "true" : "false", (unsigned long long)r.seed,
      json_quoted(r.cluster.describe()).c_str(), json_quoted(r.model).c_str(), (long long)r.parameters,
      w.param_bytes, (long long)w.global_batch, w.sample_seconds, json_quoted(r.sample_source).c_str(),
      w.balanced ? "true" : "false", (long long)w.exchange_every, w.server_rank, (long long)r.max_staleness,
      (long long)r.group_count, sols.c_str(), ratio.c_str(), r.fixed ? prediction_json(*r.fixed).c_str() : "null");
}

}  // namespace dp::cgp
