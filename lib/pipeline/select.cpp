// plan_pipeline(): which planner runs, under one deadline (PlanOptions::seconds) for all of it.
//   1. An exact program over the whole cluster, where its estimated work is affordable and it finishes
//      before the deadline: the program for identical devices (homogeneous.cpp; exact over every plan when
//      the links between them are all equal, else its plan only seeds step 2) or the subset search
//      (exact.cpp; any devices, up to 20, interchangeable ones tried once).
//   2. Beyond: the heuristic (heuristic.cpp) at each micro-batch count M, seeded with plans it then never
//      returns anything slower than:
//      - the baselines at M (baselines.cpp): the naive plan, data parallelism, the best plan with each
//        stage count, the best PipeDream-style plan; computed whatever the deadline;
//      - its own plan on the fastest h devices, h the largest power of two below the device count (8 at
//        least): so down to the 8 fastest, where step 1 is exact when affordable; the plan on d devices
//        is then never slower than its plan on the 2^k fastest for every 8 <= 2^k < d, nor than the exact
//        plan on the k <= 8 fastest (idle devices allowed, the exact plan on the 8 fastest is at least as
//        fast as on fewer);
//      - the identical devices' program on each of the 4 largest kinds (of 2 devices or more; all of them
//        when affordable, else the largest affordable prefix of their locality order).
// Deterministic: every part is bounded by work (PlanOptions), the deadline aside; a nested plan on the
// fastest h is the plan plan_pipeline gives for that sub-cluster alone, so the monotony above holds
// between separate calls too, as long as neither meets its deadline.
#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

#include "lib/core/error.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline {

Cluster detail::sub_cluster(const Cluster& c, const std::vector<int>& ranks) {
  std::vector<ClusterRank> rs;
  std::vector<Link> matrix;
  Link levels[3] = {{1, 0}, {1, 0}, {1, 0}};
  for (size_t i = 0; i < ranks.size(); ++i) {
    rs.push_back(c.rank(ranks[i]));
    for (size_t j = 0; j < ranks.size(); ++j) {
      const Link l = i == j ? Link{1, 0} : c.link(ranks[i], ranks[j]);
      if (c.has_matrix()) matrix.push_back(l);
      else if (i != j) levels[int(c.level(ranks[i], ranks[j]))] = l;
    }
  }
  if (!c.has_matrix()) return Cluster(std::move(rs), levels[0], levels[1], levels[2]);
  return Cluster(std::move(rs), std::move(matrix));
}

Plan detail::lift(Plan plan, const std::vector<int>& ranks) {
  for (Stage& s : plan.stages)
    for (int& r : s.ranks) r = ranks[size_t(r)];
  return plan;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kLadderBottom = 8;
// An exact program whose estimated work (transitions before pruning) is above this many times its budget
// of steps is not started (pruning leaves from 1/30 to 10 times the estimate as steps: bench_pipeline_planner
// --boundary 1).
constexpr double kHopeless = 30;  // the fastest devices whose plan (exact when affordable) seeds every larger one

double time_of(const PlanResult& r) { return r.feasible ? r.prediction.minibatch_s : kInf; }

bool uniform_links(const Cluster& c) {
  if (c.size() < 2) return true;
  const Link l0 = c.link(0, 1);
  for (int a = 0; a < c.size(); ++a)
    for (int b = 0; b < c.size(); ++b)
      if (a != b && (c.link(a, b).gbps != l0.gbps || c.link(a, b).latency_us != l0.latency_us)) return false;
  return true;
}

class Planner {
 public:
  Planner(const Workload& w, const PlanOptions& o)
      : w_(w), o_(o), p_(w), n_(int(w.blocks.size())), deadline_(detail::deadline_in(o.seconds)) {}

  // The fastest plan that fits, over the micro-batch counts (feasible false: none found).
  PlanResult plan(const Cluster& c) {
    const int d = c.size();
    const auto& counts = w_.micro_batch_counts;
    std::vector<std::vector<Plan>> seeds(counts.size());
    std::vector<double> bounds(counts.size(), kInf);
    for (size_t m = 0; m < counts.size(); ++m) {
      seeds[m] = detail::baseline_seeds(w_, p_, c, counts[m]);
      for (Plan& s : seeds[m]) bounds[m] = std::min(bounds[m], detail::finish_and_time(w_, p_, c, s, true));
    }
    std::vector<int> all(static_cast<size_t>(d));
    std::iota(all.begin(), all.end(), 0);
    // 1. Exact over the whole cluster.
    const bool identical = detail::identical_devices(c, all);
    if (identical && hopeful(runs_work(c, d))) {
      int64_t steps = o_.exact_steps;
      const auto [r, finished] = exact_runs(c, detail::locality_order(c), bounds, seeds, steps);
      if (finished && uniform_links(c)) return r;
      if (r.feasible) {
        add_seed(seeds, r.plan);
        for (size_t m = 0; m < counts.size(); ++m)
          if (counts[m] == r.plan.micro_batches) bounds[m] = std::min(bounds[m], time_of(r));
      }
    }
    if (d <= 20 && hopeful(detail::exact_work(c, n_) * double(counts.size()))) {
      PlanResult best;
      bool finished = true;
      int64_t steps = o_.exact_steps;
      for (size_t m = 0; m < counts.size() && finished; ++m) {
        detail::ExactResult r = detail::subset_search(w_, c, counts[m], true, bounds[m], deadline_, steps);
        finished = r.finished;
        if (!r.result.plan.stages.empty() && (!best.feasible || detail::better(r.result, best))) best = r.result;
      }
      if (finished) return at_least_seeds(c, best, seeds, "exact");
      if (best.feasible) add_seed(seeds, best.plan);
    }
    // 2. The heuristic from its seeds: the plan on the fastest h devices, and each kind's program.
    if (d > kLadderBottom) {
      int h = kLadderBottom;
      while (h * 2 < d) h *= 2;
      std::vector<int> fastest = detail::fastest_order(c);
      fastest.resize(size_t(h));
      std::sort(fastest.begin(), fastest.end());
      const PlanResult r = plan(detail::sub_cluster(c, fastest));
      if (r.feasible) add_seed(seeds, detail::lift(r.plan, fastest));
    }
    if (!identical) kind_seeds(c, seeds);
    PlanResult best;
    for (size_t m = 0; m < counts.size(); ++m) {
      PlanResult r = detail::heuristic_search(w_, c, counts[m], o_, true, seeds[m], deadline_);
      if (r.feasible && (!best.feasible || detail::better(r, best))) best = std::move(r);
    }
    best.method = "heuristic";
    return best;
  }

 private:
  // An exact program whose estimated work (before pruning) is this is worth starting.
  bool hopeful(double work) const { return work <= kHopeless * double(o_.exact_steps); }

  // The identical devices' program's work on `devices` of c's kind over the micro-batch counts: its
  // transitions, times the in-flight counts it tells apart when the devices have a memory limit.
  double runs_work(const Cluster& c, int devices) const {
    double work = 0;
    for (int64_t M : w_.micro_batch_counts)
      work += detail::runs_work(n_, devices, w_.global_batch / M) *
              (c.rank(0).memory_gb > 0 ? double(std::min<int64_t>(M, n_)) : 1.0);
    return work;
  }

  // The identical devices' program on `order` at every M, each bounded by bounds[M] (whose seed it
  // returns when nothing beats it); finished when every M did.
  detail::ExactResult exact_runs(const Cluster& c, const std::vector<int>& order, const std::vector<double>& bounds,
                                 const std::vector<std::vector<Plan>>& seeds, int64_t& steps) {
    PlanResult best;
    bool finished = true;
    for (size_t m = 0; m < bounds.size() && finished; ++m) {
      detail::RunsResult r =
          detail::runs_search(w_, c, order, w_.micro_batch_counts[m], true, bounds[m], deadline_, steps);
      finished = r.finished;
      if (!r.result.plan.stages.empty() && (!best.feasible || detail::better(r.result, best))) best = r.result;
    }
    if (finished) best = at_least_seeds(c, best, seeds, "exact (identical devices)");
    return {best, finished};
  }

  // `best`, or the fastest seed when that is faster (an exact program bounded by the seeds returns no
  // plan when none beats them).
  PlanResult at_least_seeds(const Cluster& c, PlanResult best, const std::vector<std::vector<Plan>>& seeds,
                            const char* method) {
    for (const auto& at_m : seeds)
      for (Plan s : at_m) {
        const double t = detail::finish_and_time(w_, p_, c, s, true);
        if (t < time_of(best)) best = finish_plan(w_, c, std::move(s));
      }
    best.method = method;
    return best;
  }

  void add_seed(std::vector<std::vector<Plan>>& seeds, const Plan& plan) const {
    const auto& counts = w_.micro_batch_counts;
    const size_t m = size_t(std::find(counts.begin(), counts.end(), plan.micro_batches) - counts.begin());
    if (m < seeds.size()) seeds[m].push_back(plan);
  }

  // The identical devices' program on each of the 4 largest kinds of more than one device, on as much
  // of it as it affords; one budget of steps for them all.
  void kind_seeds(const Cluster& c, std::vector<std::vector<Plan>>& seeds) {
    std::map<std::pair<double, double>, std::vector<int>> by_kind;
    for (int r : detail::locality_order(c)) by_kind[{c.rank(r).speed, c.rank(r).memory_gb}].push_back(r);
    std::vector<std::vector<int>> kinds;
    for (auto& [kind, order] : by_kind)
      if (order.size() > 1) kinds.push_back(std::move(order));
    std::stable_sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
    if (kinds.size() > 4) kinds.resize(4);
    int64_t steps = o_.exact_steps;
    for (std::vector<int>& order : kinds) {
      const Cluster one = detail::sub_cluster(c, {order[0]});
      while (order.size() > 1 && !hopeful(runs_work(one, int(order.size())))) order.resize(order.size() / 2);
      if (!hopeful(runs_work(one, int(order.size())))) continue;
      const detail::ExactResult r = exact_runs(c, order, std::vector<double>(seeds.size(), kInf), {}, steps);
      if (r.finished && r.result.feasible) add_seed(seeds, r.result.plan);
    }
  }

  const Workload& w_;
  const PlanOptions& o_;
  const detail::Prefix p_;
  const int n_;
  const detail::Clock::time_point deadline_;
};

}  // namespace

PlanResult plan_pipeline(const Workload& w, const Cluster& c, const PlanOptions& o) {
  const auto& counts = w.micro_batch_counts;
  DP_CHECK(!counts.empty() && !w.blocks.empty() && c.size() > 0, "blocks, devices and micro-batch counts");
  PlanResult best;
  if (o.force_exact || o.force_heuristic) {
    for (int64_t M : counts) {
      PlanResult r = o.force_exact ? detail::exact_search(w, c, M, true)
                                   : detail::heuristic_search(w, c, M, o, true, {}, detail::deadline_in(o.seconds));
      if (r.feasible && (!best.feasible || detail::better(r, best))) best = std::move(r);
    }
  } else {
    best = Planner(w, o).plan(c);
  }
  if (best.feasible) return best;
  // Nothing fits: the fastest plan with memory ignored, at the smallest micro-batches, to explain why.
  const int64_t M = *std::max_element(counts.begin(), counts.end());
  best = o.force_exact ? detail::exact_search(w, c, M, false)
                       : detail::heuristic_search(w, c, M, o, false, {}, detail::deadline_in(o.seconds));
  best.feasible = false;
  return best;
}

}  // namespace dp::pipeline
