// plan_pipeline(): which planner runs, at each candidate micro-batch count M.
//   1. Identical devices (one speed, one memory) whose dynamic program over runs (homogeneous.cpp) is
//      affordable: that program; exact over every plan when the links between them are all equal
//      (homogeneous.cpp says what it is exact over otherwise).
//   2. Up to exact_max_devices devices whose subset search (exact.cpp) is affordable: that search, exact.
//   3. Beyond: the heuristic (heuristic.cpp), seeded with plans it must not lose to, and never slower
//      than the best of them: the exact plan on the min(8, devices) fastest devices (which is at least
//      as fast as the exact plan on the k fastest for every k <= 8: its search may leave devices idle),
//      the runs program on each kind of identical devices (all of them when affordable, else the largest
//      affordable prefix of their locality order), the naive plan and data parallelism.
// Monotone: a cluster that adds devices to a smaller one keeps the smaller one's candidates reachable
// (idle devices allowed), so the plan on more devices is never slower where the same planner runs on
// both, and from 1 to 8 devices the seeds carry it across the switch to the heuristic.
#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <numeric>

#include "lib/core/error.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_left(Clock::time_point deadline) {
  return std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count());
}

// The cluster of `ranks` (ascending) alone; its rank i is ranks[i]. By levels when c is (so that the
// exact search sees its interchangeable devices), else its links as a matrix.
Cluster sub_cluster(const Cluster& c, const std::vector<int>& ranks) {
  std::vector<ClusterRank> rs;
  std::vector<Link> matrix(ranks.size() * ranks.size(), Link{1, 0});
  Link levels[3] = {{1, 0}, {1, 0}, {1, 0}};
  for (size_t i = 0; i < ranks.size(); ++i) {
    rs.push_back(c.rank(ranks[i]));
    for (size_t j = 0; j < ranks.size(); ++j)
      if (i != j) {
        matrix[i * ranks.size() + j] = c.link(ranks[i], ranks[j]);
        levels[int(c.level(ranks[i], ranks[j]))] = c.link(ranks[i], ranks[j]);
      }
  }
  if (!c.has_matrix()) return Cluster(std::move(rs), levels[0], levels[1], levels[2]);
  return Cluster(std::move(rs), std::move(matrix));
}

// The ranks of a plan on a sub-cluster as ranks of the whole (ascending stays ascending).
Plan lift(Plan plan, const std::vector<int>& ranks) {
  for (Stage& s : plan.stages)
    for (int& r : s.ranks) r = ranks[size_t(r)];
  return plan;
}

class Selector {
 public:
  Selector(const Workload& w, const PlanOptions& o, Clock::time_point exact_deadline)
      : w_(w), o_(o), deadline_(exact_deadline), n_(int(w.blocks.size())) {}

  // The best plan at M on c, and whether it is exact (cases 1 and 2 above).
  PlanResult at(const Cluster& c, int64_t M, double heuristic_seconds, bool respect, bool& exact,
                std::vector<Plan> seeds = {}) {
    const int d = c.size();
    const int64_t mb = w_.global_batch / M;
    std::vector<int> all(static_cast<size_t>(d));
    std::iota(all.begin(), all.end(), 0);
    exact = true;
    if (detail::identical_devices(c, all) && runs_affordable(d, mb, M)) {
      // A short heuristic run (from the seeds) bounds the program; when nothing beats its plan, that
      // plan is the optimum.
      PlanResult quick = detail::heuristic_search(w_, c, M, with(0.02), respect, seeds);
      const double bound = quick.feasible ? quick.prediction.minibatch_s : std::numeric_limits<double>::infinity();
      detail::RunsResult r = detail::runs_search(w_, c, detail::locality_order(c), M, respect, bound, budget());
      if (r.finished) {
        if (r.result.plan.stages.empty()) quick.method = r.result.method;
        return r.result.plan.stages.empty() ? quick : r.result;
      }
    }
    if (d <= o_.exact_max_devices && detail::exact_work(c, n_) <= o_.exact_max_work)
      return detail::exact_search(w_, c, M, respect);
    exact = false;
    for (Plan& p : kind_seeds(c, M, mb, respect)) seeds.push_back(std::move(p));
    // The exact plan on the fastest devices, by speed then the locality order.
    std::vector<int> fastest = detail::locality_order(c);
    std::stable_sort(fastest.begin(), fastest.end(),
                     [&](int a, int b) { return c.rank(a).speed > c.rank(b).speed; });
    fastest.resize(size_t(std::min(d, o_.exact_max_devices)));
    std::sort(fastest.begin(), fastest.end());
    if (int(fastest.size()) < d) {
      bool sub_exact = false;
      const PlanResult r = at(sub_cluster(c, fastest), M, heuristic_seconds / 4, respect, sub_exact);
      if (!r.plan.stages.empty()) seeds.push_back(lift(r.plan, fastest));
    }
    return detail::heuristic_search(w_, c, M, with(heuristic_seconds), respect, seeds);
  }

 private:
  bool runs_affordable(int d, int64_t mb, int64_t M) const {
    const double states = double(std::min<int64_t>(M, n_));
    return detail::runs_work(n_, d, mb) * states <= o_.runs_max_work;
  }

  // One program's share of the exact programs' time.
  double budget() const {
    return std::min(seconds_left(deadline_), o_.exact_seconds / double(w_.micro_batch_counts.size()));
  }

  PlanOptions with(double seconds) const {
    PlanOptions o = o_;
    o.heuristic_seconds = seconds;
    return o;
  }

  // The runs program on each kind of identical devices, on as many of them as it affords.
  std::vector<Plan> kind_seeds(const Cluster& c, int64_t M, int64_t mb, bool respect) {
    std::map<std::pair<double, double>, std::vector<int>> kinds;
    for (int r : detail::locality_order(c)) kinds[{c.rank(r).speed, c.rank(r).memory_gb}].push_back(r);
    std::vector<Plan> seeds;
    for (auto& [kind, order] : kinds) {
      while (order.size() > 1 && !runs_affordable(int(order.size()), mb, M)) order.resize(order.size() / 2);
      if (!runs_affordable(int(order.size()), mb, M)) continue;
      detail::RunsResult r =
          detail::runs_search(w_, c, order, M, respect, std::numeric_limits<double>::infinity(), budget());
      if (r.finished && !r.result.plan.stages.empty()) seeds.push_back(r.result.plan);
    }
    return seeds;
  }

  const Workload& w_;
  const PlanOptions& o_;
  const Clock::time_point deadline_;
  const int n_;
};

}  // namespace

PlanResult plan_pipeline(const Workload& w, const Cluster& c, const PlanOptions& o) {
  const double each = o.heuristic_seconds / double(w.micro_batch_counts.size());
  const Clock::time_point exact_deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.exact_seconds));
  Selector select(w, o, exact_deadline);
  // The baselines it must not lose to, at their best M.
  std::vector<PlanResult> baselines;
  if (!o.force_exact && !o.force_heuristic) {
    baselines.push_back(naive_plan(w, c));
    if (std::any_of(w.micro_batch_counts.begin(), w.micro_batch_counts.end(),
                    [&](int64_t M) { return w.global_batch / M >= c.size(); }))
      baselines.push_back(data_parallel_plan(w, c));
  }
  auto run = [&](int64_t M, bool respect) {
    PlanOptions one = o;
    one.heuristic_seconds = each;
    if (o.force_exact) return detail::exact_search(w, c, M, respect);
    if (o.force_heuristic) return detail::heuristic_search(w, c, M, one, respect);
    std::vector<Plan> seeds;
    for (const PlanResult& b : baselines)
      if (b.plan.micro_batches == M) seeds.push_back(b.plan);
    bool exact = false;
    return select.at(c, M, each, respect, exact, std::move(seeds));
  };
  PlanResult best;
  for (int64_t M : w.micro_batch_counts) {
    PlanResult r = run(M, true);
    if (r.feasible && (!best.feasible || detail::better(r, best))) best = std::move(r);
  }
  if (best.feasible) return best;
  // Nothing fits: the fastest plan with memory ignored, at the smallest micro-batches, to explain why.
  const int64_t M = *std::max_element(w.micro_batch_counts.begin(), w.micro_batch_counts.end());
  best = run(M, false);
  best.feasible = false;
  return best;
}

}  // namespace dp::pipeline
