// `dptrain plan` for [parallel] strategy = "cgp": the cluster (the job's, or --workers ranks drawn from
// its device kinds), the workload CGP's model reads (the model's update size, seconds per sample at speed
// 1 from [cluster] sample_rate or timed here), and the groupings of the job's solver and of sorted side by
// side: members, speeds, predicted step and cycle, throughput, staleness, the Pareto front, solver time;
// a fixed [parallel.cgp] groups is predicted too. --json prints the same as one JSON object.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <optional>

#include "apps/dptrain/commands.h"
#include "lib/cgp/cgp.h"
#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/core/json.h"
#include "lib/data/dataset.h"
#include "models/model.h"

namespace dp::app {
namespace {

struct Plan {
  Cluster cluster;
  cgp::Workload workload;
  std::string model, sample_source;
  int64_t parameters = 0;
  uint64_t seed = 0;
  bool drawn = false;
};

// Seconds per sample of forward+backward of the model on this CPU: the median of 3 timed steps after one.
double time_sample_seconds(Model& model, const Dataset& train, int64_t global_batch) {
  std::vector<uint32_t> idx(size_t(std::clamp<int64_t>(global_batch, 1, std::min<int64_t>(32, train.count))));
  std::iota(idx.begin(), idx.end(), 0u);
  BatchBuffer buffer;
  const Batch b = gather_batch(train, idx, buffer);
  const float scale = 1.0f / float(b.n * model.targets_per_sample());
  std::vector<double> s;
  for (int step = 0; step < 4; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    model.forward_backward(b, scale);
    if (step > 0) s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2] / double(b.n);
}

Plan make_plan(const PlanCommand& cmd, const Job& job) {
  const DatasetSplits data = load_dataset(job.data, job.job.seed);
  const auto model = make_model(job.model, data.train.shape(), job.job.seed);
  const uint64_t seed = cmd.seed_given ? cmd.seed : job.job.seed;
  Plan p{cmd.workers > 0 ? draw_cluster(job, int(cmd.workers), seed) : cluster_from_job(job), {}, model->describe(),
         "", int64_t(model->params().size()), seed, cmd.workers > 0};
  const bool rated = job.cluster.sample_rate > 0;
  p.sample_source = rated ? "[cluster] sample_rate" : "timed on this machine";
  cgp::Workload& w = p.workload;
  w = cgp::job_workload(job, p.parameters,
                        rated ? 1.0 / job.cluster.sample_rate
                              : time_sample_seconds(*model, data.train, job.train.global_batch));
  // Drawn ranks keep the job's share per rank: the global batch scales with them.
  if (p.drawn) w.global_batch = std::max<int64_t>(1, job.train.global_batch * cmd.workers / job.launch.ranks);
  return p;
}

cgp::SolveOptions solve_options(const Job& job, const std::string& solver, uint64_t seed) {
  cgp::SolveOptions o = cgp::solve_options(job);
  o.solver = solver;
  o.seed = seed;
  return o;
}

// ---- text ----------------------------------------------------------------------------------------------

// s, then `sep` unless s is empty, then `item`.
void append(std::string& s, const char* sep, const std::string& item) {
  if (!s.empty()) s += sep;
  s += item;
}

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

std::string speeds_text(const cgp::GroupPrediction& g, const Cluster& c) {
  if (g.members.size() <= 4) {
    std::string s;
    for (int m : g.members) s += fmt::format("{}{:g}", s.empty() ? "" : ", ", c.rank(m).speed);
    return s;
  }
  double lo = 1e300, hi = 0;
  for (int m : g.members) lo = std::min(lo, c.rank(m).speed), hi = std::max(hi, c.rank(m).speed);
  return fmt::format("sum {:.4g} ({:g}-{:g})", g.speed_sum, lo, hi);
}

std::string grouping_summary(const cgp::Prediction& p) {
  std::string s;
  std::string sizes;
  for (const cgp::GroupPrediction& g : p.groups) {
    append(s, " ", fmt::format("{{{}}}", ranks_text(g.members)));
    append(sizes, "+", std::to_string(g.members.size()));
  }
  if (s.size() <= 38) return s;
  return p.groups.size() == 1 ? fmt::format("1 group of {} ranks", sizes)
                              : fmt::format("{} groups of {} ranks", p.groups.size(), sizes);
}

void print_groups(const std::string& title, const cgp::Prediction& p, const Cluster& c) {
  std::printf("%s\n  %5s  %-24s %-22s %7s %10s %12s %9s %11s %9s %9s %9s %11s %9s\n", title.c_str(), "group",
              "ranks", "speeds", "batch", "compute ms", "allreduce ms", "step ms", "exchange ms", "gather ms",
              "held ms", "cycle ms", "samples/s", "staleness");
  for (size_t i = 0; i < p.groups.size(); ++i) {
    const cgp::GroupPrediction& g = p.groups[i];
    std::printf("  %5zu  %-24s %-22s %7lld %10.3f %12.3f %9.3f %11.3f %9.3f %9.3f %9.3f %11.1f %9.3f\n", i,
                ranks_text(g.members).c_str(), speeds_text(g, c).c_str(), (long long)g.batch, g.compute_s * 1e3,
                g.allreduce_s * 1e3, g.step_s * 1e3, g.exchange_s * 1e3, g.gather_s * 1e3, g.held_s * 1e3,
                g.cycle_s * 1e3, g.samples_per_s, g.staleness);
  }
}

void print_front(const cgp::Solution& s, double bound) {
  const size_t n = s.front.size(), shown = std::min<size_t>(n, 16);
  std::printf("Pareto front of %s (%zu point(s)%s; * meets the bound):\n  %11s %12s  %s\n", s.solver.c_str(), n,
              shown < n ? ", 16 shown evenly" : "", "staleness", "samples/s", "groups");
  for (size_t k = 0; k < shown; ++k) {
    const size_t i = shown < 2 ? 0 : k * (n - 1) / (shown - 1);
    const cgp::FrontPoint& f = s.front[i];
    const int groups = *std::max_element(f.grouping.begin(), f.grouping.end()) + 1;
    const std::string text = f.grouping.size() <= 16 ? cgp::grouping_text(f.grouping)
                             : groups == 1                ? std::string("1 group")
                                                          : fmt::format("{} groups", groups);
    std::printf("  %s %9.3f %12.1f  %s\n", f.max_staleness <= bound + 1e-9 ? "*" : " ", f.max_staleness,
                f.samples_per_s, text.c_str());
  }
}

void print_text(const Job& job, const Plan& p, const std::vector<cgp::Solution>& solutions,
                const std::optional<std::string>& sorted_error, const std::optional<cgp::Prediction>& fixed) {
  const cgp::Workload& w = p.workload;
  const double bound = double(job.parallel.cgp.max_staleness);
  std::printf("job %s: %d rank(s)%s, strategy cgp, global batch %lld, %s inside groups\n", job.job.name.c_str(),
              p.cluster.size(), p.drawn ? fmt::format(" drawn from the job's kinds (seed {})", p.seed).c_str() : "",
              (long long)w.global_batch, w.balanced ? "I-DAT" : "equal shares");
  std::printf("cluster: %s\n", p.cluster.describe().c_str());
  std::printf("model: %s (%.2f MB per update); %.4g ms per sample at speed 1 (%s); an exchange every %lld local "
              "step(s), global model on rank %d\n",
              p.model.c_str(), w.param_bytes * 1e-6, w.sample_seconds * 1e3, p.sample_source.c_str(),
              (long long)w.exchange_every, w.server_rank);
  std::printf("CGPP: the most samples/s with staleness <= %g, %s\n\n", bound,
              job.parallel.cgp.group_count > 0 ? fmt::format("{} groups", job.parallel.cgp.group_count).c_str()
                                               : "any number of groups");
  std::printf("  %-16s", "");
  for (const cgp::Solution& s : solutions) std::printf(" %-40s", s.solver.c_str());
  std::printf("\n  %-16s", "groups");
  for (const cgp::Solution& s : solutions) std::printf(" %-40s", grouping_summary(s.prediction).c_str());
  std::printf("\n  %-16s", "samples/s");
  for (const cgp::Solution& s : solutions) std::printf(" %-40.1f", s.prediction.samples_per_s);
  std::printf("\n  %-16s", "max staleness");
  for (const cgp::Solution& s : solutions) std::printf(" %-40.3f", s.prediction.max_staleness);
  std::printf("\n  %-16s", "server load");
  for (const cgp::Solution& s : solutions) std::printf(" %-40.3f", s.prediction.server_load);
  std::printf("\n  %-16s", "solver time");
  for (const cgp::Solution& s : solutions)
    std::printf(" %-40s", fmt::format("{:.3f} s, {} evaluations{}", s.seconds, s.evaluations,
                                      s.time_limited ? " (time limit)" : "").c_str());
  std::printf("\n");
  if (solutions.size() > 1)
    std::printf("%s / sorted: %.3fx predicted samples/s\n", solutions[0].solver.c_str(),
                solutions[0].prediction.samples_per_s / solutions[1].prediction.samples_per_s);
  if (sorted_error) std::printf("sorted: %s\n", sorted_error->c_str());
  for (const cgp::Solution& s : solutions) {
    std::printf("\n");
    print_groups(s.solver + "'s groups:", s.prediction, p.cluster);
  }
  std::printf("\n");
  print_front(solutions[0], bound);
  if (fixed) {
    std::printf("\n");
    print_groups(fmt::format("[parallel.cgp] groups: {:.1f} samples/s, staleness {:.3f} ({}), server load {:.3f}",
                             fixed->samples_per_s, fixed->max_staleness,
                             fixed->max_staleness <= bound + 1e-9 ? "meets the bound" : "above the bound",
                             fixed->server_load),
                 *fixed, p.cluster);
  }
}

// ---- JSON ----------------------------------------------------------------------------------------------

std::string prediction_json(const cgp::Prediction& p) {
  std::string groups;
  for (const cgp::GroupPrediction& g : p.groups)
    groups += fmt::format("{}{{\"members\":{},\"batch\":{},\"speed_sum\":{:.9g},\"compute_s\":{:.9g},"
                          "\"allreduce_s\":{:.9g},\"step_s\":{:.9g},\"exchange_s\":{:.9g},\"gather_s\":{:.9g},"
                          "\"held_s\":{:.9g},\"cycle_s\":{:.9g},\"samples_per_s\":{:.9g},\"staleness\":{:.9g}}}",
                          groups.empty() ? "" : ",", json_ints(g.members), g.batch, g.speed_sum, g.compute_s,
                          g.allreduce_s, g.step_s, g.exchange_s, g.gather_s, g.held_s, g.cycle_s, g.samples_per_s,
                          g.staleness);
  return fmt::format("{{\"samples_per_s\":{:.9g},\"max_staleness\":{:.9g},\"server_load\":{:.9g},\"groups\":[{}]}}",
                     p.samples_per_s, p.max_staleness, p.server_load, groups);
}

std::string solution_json(const cgp::Solution& s) {
  std::string front;
  for (const cgp::FrontPoint& f : s.front)
    front += fmt::format("{}{{\"samples_per_s\":{:.9g},\"max_staleness\":{:.9g},\"grouping\":{}}}",
                         front.empty() ? "" : ",", f.samples_per_s, f.max_staleness, json_ints(f.grouping));
  return fmt::format("{{\"solver\":{},\"seconds\":{:.6g},\"evaluations\":{},\"time_limited\":{},\"grouping\":{},"
                     "\"prediction\":{},\"front\":[{}]}}",
                     json_quoted(s.solver), s.seconds, s.evaluations, s.time_limited, json_ints(s.grouping),
                     prediction_json(s.prediction), front);
}

void print_json(const Job& job, const Plan& p, const std::vector<cgp::Solution>& solutions,
                const std::optional<std::string>& sorted_error, const std::optional<cgp::Prediction>& fixed) {
  const cgp::Workload& w = p.workload;
  std::string sols;
  for (const cgp::Solution& s : solutions) append(sols, ",", solution_json(s));
  if (sorted_error) sols += fmt::format(",{{\"solver\":\"sorted\",\"error\":{}}}", json_quoted(*sorted_error));
  const std::string ratio = solutions.size() > 1 ? fmt::format("{:.9g}", solutions[0].prediction.samples_per_s /
                                                                              solutions[1].prediction.samples_per_s)
                                                 : "null";
  std::printf("{\"job\":%s,\"ranks\":%d,\"drawn\":%s,\"seed\":%llu,\"cluster\":%s,"
              "\"workload\":{\"model\":%s,\"parameters\":%lld,\"param_bytes\":%.9g,\"global_batch\":%lld,"
              "\"sample_seconds\":%.9g,\"sample_seconds_from\":%s,\"balanced\":%s,\"exchange_every\":%lld,"
              "\"server_rank\":%d},\"max_staleness\":%lld,\"group_count\":%lld,\"solutions\":[%s],"
              "\"ratio_to_sorted\":%s,\"fixed\":%s}\n",
              json_quoted(job.job.name).c_str(), p.cluster.size(), p.drawn ? "true" : "false", (unsigned long long)p.seed,
              json_quoted(p.cluster.describe()).c_str(), json_quoted(p.model).c_str(), (long long)p.parameters, w.param_bytes,
              (long long)w.global_batch, w.sample_seconds, json_quoted(p.sample_source).c_str(),
              w.balanced ? "true" : "false", (long long)w.exchange_every, w.server_rank,
              (long long)job.parallel.cgp.max_staleness, (long long)job.parallel.cgp.group_count, sols.c_str(),
              ratio.c_str(), fixed ? prediction_json(*fixed).c_str() : "null");
}

}  // namespace

int plan_cgp(const PlanCommand& cmd, const Job& job) {
  const Plan p = make_plan(cmd, job);
  std::vector<cgp::Solution> solutions{cgp::solve(p.cluster, p.workload, solve_options(job, job.parallel.cgp.solver, p.seed))};
  std::optional<std::string> sorted_error;
  if (job.parallel.cgp.solver != "sorted") {
    try {  // the baseline may find nothing where the job's solver did: say so beside it
      solutions.push_back(cgp::solve(p.cluster, p.workload, solve_options(job, "sorted", p.seed)));
    } catch (const JobError& e) {
      sorted_error = e.message();
    }
  }
  std::optional<cgp::Prediction> fixed;
  const auto& groups = job.parallel.cgp.groups;
  if (!groups.empty()) {
    if (int64_t(groups.size()) != p.cluster.size())
      throw UsageError("--workers", fmt::format("[parallel.cgp] groups names {} ranks, --workers draws {}",
                                                groups.size(), p.cluster.size()),
                       "drop --workers to predict the fixed grouping, or --set parallel.cgp.groups=[]");
    fixed = cgp::predict(p.cluster, p.workload, cgp::Grouping(groups.begin(), groups.end()));
  }
  if (cmd.json) print_json(job, p, solutions, sorted_error, fixed);
  else print_text(job, p, solutions, sorted_error, fixed);
  return 0;
}

}  // namespace dp::app
