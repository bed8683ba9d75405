// The baselines the planner must not lose to, under the same model (plan.h): the naive plan, data
// parallelism, the plan with each stage count (equal runs of the fastest devices, blocks balanced) and
// the best PipeDream-style plan (a replicated prefix followed by single-device stages); and the seeds
// they give plan_pipeline at each micro-batch count (baseline_seeds).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "lib/core/error.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline {
namespace detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// `order` cut into S runs of equal size (the first d % S one more; at most mb each, the rest idle),
// each run's ranks ascending.
StageDevices equal_runs(const std::vector<int>& order, int S, int64_t mb) {
  const int d = int(order.size());
  int64_t per = d / S, extra = d % S;
  if (per >= mb) per = mb, extra = 0;
  StageDevices sets(static_cast<size_t>(S));
  for (int s = 0, i = 0; s < S; ++s) {
    for (int64_t k = 0; k < per + (s < extra ? 1 : 0); ++k) sets[size_t(s)].push_back(order[size_t(i++)]);
    std::sort(sets[size_t(s)].begin(), sets[size_t(s)].end());
  }
  return sets;
}

Plan plan_of(const StageDevices& sets, const std::vector<int>& last, int64_t M) {
  Plan plan;
  plan.micro_batches = M;
  for (size_t s = 0; s < sets.size(); ++s)
    plan.stages.push_back({s == 0 ? 0 : last[s - 1] + 1, last[s], sets[s], {}});
  return plan;
}

// Keeps `plan` in `best` when it fits and is faster.
void keep(const Workload& w, const Prefix& p, const Cluster& c, Plan plan, Plan& best, double& best_t) {
  if (plan.stages.empty()) return;
  const double t = finish_and_time(w, p, c, plan, true);
  if (t < best_t) best_t = t, best = std::move(plan);
}

// Up to `limit` (2 at least) values of 1..top, 1 and top among them: all of them, else evenly or
// geometrically spaced.
std::vector<int> some_of(int top, int limit, bool geometric) {
  std::vector<int> out;
  limit = std::max(limit, 2);
  for (int i = 0; i < std::min(top, limit); ++i) {
    const double x = double(i) / double(std::min(top, limit) - 1);
    const int v = top <= limit ? i + 1
                  : geometric  ? int(std::lround(std::pow(double(top), x)))
                               : 1 + int(std::lround(x * double(top - 1)));
    if (out.empty() || v > out.back()) out.push_back(v);
  }
  return out;
}

}  // namespace

CutRate cut_rate(const Cluster& c, const std::vector<int>& ranks, int64_t mb) {
  CutRate r;
  const std::vector<int64_t> shares = micro_batch_shares(c, ranks, mb);
  for (size_t i = 0; i < ranks.size(); ++i) {
    r.factor = std::max(r.factor, double(shares[i]) / c.rank(ranks[i]).speed);
    r.fixed_factor = std::max(r.fixed_factor, 1 / c.rank(ranks[i]).speed);
  }
  return r;
}

double cut_seconds(const Prefix& p, const CutRate& r, int a, int b) {
  return r.factor * (Prefix::sum(p.forward, a, b) + Prefix::sum(p.backward, a, b)) +
         r.fixed_factor * (Prefix::sum(p.forward_fixed, a, b) + Prefix::sum(p.backward_fixed, a, b));
}

std::vector<int> balanced_cut(const Prefix& p, const std::vector<CutRate>& rates, int n) {
  const int S = int(rates.size());
  if (S > n || S == 0) return {};
  std::vector<int> last(static_cast<size_t>(S));
  // Each stage as far as `cap` allows, leaving a block for each later one; the last takes the rest.
  auto fill = [&](double cap) {
    for (int s = 0, pos = 0; s < S; ++s) {
      int e = s + 1 == S ? n - 1 : pos;
      if (cut_seconds(p, rates[size_t(s)], pos, e) > cap) return false;
      while (s + 1 < S && e + 1 <= n - (S - s) && cut_seconds(p, rates[size_t(s)], pos, e + 1) <= cap) ++e;
      last[size_t(s)] = e, pos = e + 1;
    }
    return true;
  };
  double lo = 0, hi = 0;
  for (const CutRate& r : rates) hi = std::max(hi, cut_seconds(p, r, 0, n - 1));
  for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    (fill(mid) ? hi : lo) = mid;
  }
  fill(hi);
  return last;
}

double finish_and_time(const Workload& w, const Prefix& p, const Cluster& c, Plan& plan, bool respect_memory) {
  const int S = int(plan.stages.size());
  const int64_t mb = w.global_batch / plan.micro_batches;
  for (int s = 0; s < S; ++s) {
    Stage& st = plan.stages[size_t(s)];
    st.recompute.clear();
    if (int64_t(st.ranks.size()) > mb) return kInf;
    if (respect_memory &&
        !cheapest_recompute(w, p, c, st.first, st.last, st.ranks, micro_batch_shares(c, st.ranks, mb),
                            std::min<int64_t>(plan.micro_batches, S - s), st.recompute))
      return kInf;
  }
  return evaluate(w, c, plan).minibatch_s;
}

Plan naive_at(const Workload& w, const Cluster& c, int64_t M) {
  const int n = int(w.blocks.size()), S = std::min(n, c.size());
  Plan plan;
  plan.micro_batches = M;
  for (int s = 0, first = 0; s < S; ++s) {
    const int count = n / S + (s < n % S ? 1 : 0);
    plan.stages.push_back({first, first + count - 1, {s}, {}});
    first += count;
  }
  return plan;
}

Plan data_parallel_at(const Workload& w, const Cluster& c, int64_t M) {
  Plan plan;
  if (w.global_batch / M < c.size()) return plan;
  std::vector<int> all(size_t(c.size()));
  std::iota(all.begin(), all.end(), 0);
  plan.micro_batches = M;
  plan.stages.push_back({0, int(w.blocks.size()) - 1, all, {}});
  return plan;
}

std::vector<int> fastest_order(const Cluster& c) {
  std::vector<int> order(size_t(c.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return c.rank(a).speed > c.rank(b).speed; });
  return order;
}

Plan best_stage_count_plan(const Workload& w, const Prefix& p, const Cluster& c, int64_t M, int S) {
  const int n = int(w.blocks.size());
  const int64_t mb = w.global_batch / M;
  if (S < 1 || S > std::min(n, c.size())) return {};
  const StageDevices sets = equal_runs(fastest_order(c), S, mb);
  std::vector<CutRate> rates;
  for (const auto& s : sets) rates.push_back(cut_rate(c, s, mb));
  const std::vector<int> last = balanced_cut(p, rates, n);
  return last.empty() ? Plan{} : plan_of(sets, last, M);
}

Plan best_pipedream_plan(const Workload& w, const Prefix& p, const Cluster& c, int64_t M, double steps,
                         double& best_t) {
  const int n = int(w.blocks.size()), d = c.size();
  const int64_t mb = w.global_batch / M;
  const std::vector<int> order = fastest_order(c);
  const int top = int(std::min<int64_t>(d, mb));
  // Every pair when blocks^2 x replicas fits the steps (a candidate's suffix costs up to a step a block).
  const int pairs = int(std::clamp(steps / (double(n) * double(n)), 64.0, 1e9));
  const std::vector<int> rs = some_of(top, std::max(pairs / n, int(std::sqrt(double(pairs)))), true);
  const std::vector<int> js = some_of(n, pairs / int(rs.size()), false);
  std::vector<CutRate> single;  // each device alone, in order
  for (int r : order) single.push_back(cut_rate(c, {r}, mb));
  Plan best;
  for (int r : rs) {
    std::vector<int> prefix(order.begin(), order.begin() + r);
    std::sort(prefix.begin(), prefix.end());
    const CutRate rate = cut_rate(c, prefix, mb);
    // Its replicas' seconds per sample-second and per fixed second, for its compute as stage_cost has it.
    std::vector<std::pair<double, double>> replicas;
    const std::vector<int64_t> shares = micro_batch_shares(c, prefix, mb);
    for (size_t i = 0; i < prefix.size(); ++i)
      replicas.push_back({double(shares[i]) / c.rank(prefix[i]).speed, 1 / c.rank(prefix[i]).speed});
    std::sort(replicas.begin(), replicas.end(), std::greater<>());
    std::vector<std::pair<double, double>> slowest;  // the replicas no other is slower than in both
    for (const auto& x : replicas)
      if (slowest.empty() || x.second > slowest.back().second) slowest.push_back(x);
    for (int j : js) {
      // Blocks [0, j) on the prefix; the rest on single devices, each as many blocks as keep within
      // the prefix's time (one at least). A lower bound on T first: the stages' compute alone.
      const double cap = cut_seconds(p, rate, 0, j - 1);
      double fwd = 0, bwd = 0;
      for (const auto& [a, b] : slowest) {
        fwd = std::max(fwd, a * Prefix::sum(p.forward, 0, j - 1) + b * Prefix::sum(p.forward_fixed, 0, j - 1));
        bwd = std::max(bwd, a * Prefix::sum(p.backward, 0, j - 1) + b * Prefix::sum(p.backward_fixed, 0, j - 1));
      }
      double sum = fwd + bwd, most = sum;
      Plan plan;
      plan.micro_batches = M;
      plan.stages.push_back({0, j - 1, prefix, {}});
      bool placed = true;
      for (int pos = j, k = r; pos < n; ++k) {
        if (k >= d) {
          placed = false;
          break;
        }
        int e = pos;
        while (e + 1 < n && cut_seconds(p, single[size_t(k)], pos, e + 1) <= cap) ++e;
        const double t = cut_seconds(p, single[size_t(k)], pos, e);
        sum += t, most = std::max(most, t);
        plan.stages.push_back({pos, e, {order[size_t(k)]}, {}});
        pos = e + 1;
      }
      if (placed && sum + double(M - 1) * most <= best_t * (1 + 1e-12)) keep(w, p, c, std::move(plan), best, best_t);
    }
  }
  return best;
}

std::vector<Plan> baseline_seeds(const Workload& w, const Prefix& p, const Cluster& c, int64_t M, double steps) {
  const int n = int(w.blocks.size()), S = std::min(n, c.size());
  std::vector<Plan> out;
  out.push_back(naive_at(w, c, M));
  Plan dp = data_parallel_at(w, c, M);
  if (!dp.stages.empty()) out.push_back(std::move(dp));
  // The fastest of the plans with each stage count (a cut costs about 50 passes over the blocks), then
  // the fastest PipeDream-style plan if faster still.
  Plan best;
  double best_t = kInf;
  for (Plan& plan : out) best_t = std::min(best_t, finish_and_time(w, p, c, plan, true));
  for (int s : some_of(S, int(std::clamp(steps / (50.0 * n), 1.0, 1e9)), true))
    keep(w, p, c, best_stage_count_plan(w, p, c, M, s), best, best_t);
  Plan pd = best_pipedream_plan(w, p, c, M, steps, best_t);
  if (!pd.stages.empty()) best = std::move(pd);
  if (!best.stages.empty()) out.push_back(std::move(best));
  return out;
}

}  // namespace detail

namespace {

// The best over the micro-batch counts of the plans `make` gives (none: feasible false, no stages).
template <class MakePlan>
PlanResult best_over_micro_batches(const Workload& w, const Cluster& c, const char* method, MakePlan make) {
  PlanResult best;
  best.method = method;
  bool any = false;
  for (int64_t M : w.micro_batch_counts) {
    Plan plan;
    if (!make(M, plan)) continue;
    PlanResult r = finish_plan(w, c, std::move(plan));
    r.method = method;
    if (!any || detail::better(r, best)) best = std::move(r), any = true;
  }
  return best;
}

}  // namespace

PlanResult naive_plan(const Workload& w, const Cluster& c) {
  PlanResult r = best_over_micro_batches(w, c, "naive", [&](int64_t M, Plan& plan) {
    plan = detail::naive_at(w, c, M);
    return true;
  });
  DP_CHECK(!r.plan.stages.empty(), "candidate micro-batch counts");
  return r;
}

PlanResult data_parallel_plan(const Workload& w, const Cluster& c) {
  PlanResult r = best_over_micro_batches(w, c, "data parallel", [&](int64_t M, Plan& plan) {
    plan = detail::data_parallel_at(w, c, M);
    return !plan.stages.empty();
  });
  DP_CHECK(!r.plan.stages.empty(), "a micro-batch count the baseline can use");
  return r;
}

PlanResult stage_count_plan(const Workload& w, const Cluster& c, int stages) {
  const detail::Prefix p(w);
  return best_over_micro_batches(w, c, "stage count", [&](int64_t M, Plan& plan) {
    plan = detail::best_stage_count_plan(w, p, c, M, stages);
    return !plan.stages.empty();
  });
}

PlanResult pipedream_plan(const Workload& w, const Cluster& c) {
  const detail::Prefix p(w);
  return best_over_micro_batches(w, c, "pipedream", [&](int64_t M, Plan& plan) {
    double best_t = std::numeric_limits<double>::infinity();
    plan = detail::best_pipedream_plan(w, p, c, M, std::numeric_limits<double>::infinity(), best_t);
    return !plan.stages.empty();
  });
}

}  // namespace dp::pipeline
