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

// Whether the seeds take every candidate (the stage-count plans' stage counts, the PipeDream-style plans'
// replica counts and prefix lengths) for `top` of them over `blocks`: while top x blocks^2 <= 6e6 (a
// candidate's cut, recomputation and prediction cost about `blocks` steps each, and every one of the
// ladder's sub-clusters pays them again). 6e6 keeps every candidate of the published profiles (71 blocks
// at most) on 1,024 devices, and a grid for 1,000 blocks on any.
bool every_candidate(int top, int blocks) { return double(top) * double(blocks) * double(blocks) <= 6e6; }

// 1..top when `every` (or top <= grid), else `grid` of them from 1 to top, geometrically or evenly spaced.
std::vector<int> candidates_upto(int top, bool every, int grid, bool geometric) {
  std::vector<int> out;
  const int count = every || top <= grid ? top : grid;
  for (int i = 0; i < count; ++i) {
    const double x = count == 1 ? 0 : double(i) / double(count - 1);
    const int v = count == top    ? i + 1
                  : geometric     ? int(std::lround(std::pow(double(top), x)))
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

Plan best_pipedream_plan(const Workload& w, const Prefix& p, const Cluster& c, int64_t M, double& best_t,
                         bool exhaustive) {
  const int n = int(w.blocks.size()), d = c.size();
  const int64_t mb = w.global_batch / M;
  const std::vector<int> order = fastest_order(c);
  const int top = int(std::min<int64_t>(d, mb));
  std::vector<CutRate> single;  // each device alone, in order
  for (int r : order) single.push_back(cut_rate(c, {r}, mb));
  auto too_slow = [&](double sum, double most) { return sum + double(M - 1) * most > best_t * (1 + 1e-12); };
  // A stage whose parameters, gradients and optimizer state alone exceed a device's memory cannot fit.
  auto state_fits = [&](int a, int b, size_t replicas, double memory_bytes) {
    return memory_bytes <= 0 ||
           w.state_bytes_per_param_byte(replicas) * Prefix::sum(p.params, a, b) <= memory_bytes * (1 + 1e-12);
  };
  auto memory_of = [&](int k) { return c.rank(order[size_t(k)]).memory_gb * 1e9; };
  // The last block e >= pos that device k's stage takes within `cap` (cut_seconds grows with e: bisect).
  auto reach = [&](int k, int pos, double cap) {
    int lo = pos, hi = n - 1;
    while (lo < hi) {
      const int mid = lo + (hi - lo + 1) / 2;
      if (cut_seconds(p, single[size_t(k)], pos, mid) <= cap && state_fits(pos, mid, 1, memory_of(k))) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  Plan best;
  std::vector<double> largest_after(size_t(n) + 1);  // the largest block of [j, n) on device r alone
  const bool every = exhaustive || every_candidate(top, n);
  for (int r : candidates_upto(top, every, 8, true)) {
    std::vector<int> prefix(order.begin(), order.begin() + r);
    std::sort(prefix.begin(), prefix.end());
    const CutRate rate = cut_rate(c, prefix, mb);
    // Two of its replicas (the most samples per speed, the slowest): a lower bound on its forward and
    // backward as stage_cost has them (the slowest replica's).
    const std::vector<int64_t> shares = micro_batch_shares(c, prefix, mb);
    std::pair<double, double> most_samples{0, 0}, slowest{0, 0};
    double least_memory = 0;  // of the prefix's devices (0: no limit)
    for (size_t i = 0; i < prefix.size(); ++i) {
      const double memory = c.rank(prefix[i]).memory_gb * 1e9;
      if (memory > 0 && (least_memory <= 0 || memory < least_memory)) least_memory = memory;
      const std::pair<double, double> x{double(shares[i]) / c.rank(prefix[i]).speed, 1 / c.rank(prefix[i]).speed};
      if (x.first > most_samples.first) most_samples = x;
      if (x.second > slowest.second) slowest = x;
    }
    // A device after the prefix is no faster than order[r]: on it, a stage of several blocks within the
    // cap holds at most the cap's worth of order[r]'s seconds, a stage of one block at most the largest.
    const CutRate next = r < d ? single[size_t(r)] : CutRate{};
    largest_after[size_t(n)] = 0;
    for (int b = n - 1; b >= 0 && r < d; --b)
      largest_after[size_t(b)] = std::max(largest_after[size_t(b) + 1], cut_seconds(p, next, b, b));
    for (int j : candidates_upto(n, every || every_candidate(n, n), 16, false)) {
      // Blocks [0, j) on the prefix; the rest on single devices, each as many blocks as keep within
      // the prefix's time (one at least). Lower bounds on T first, from the stages' compute alone: fill and
      // drain plus M - 1 times the slowest; a candidate ends once past the best plan's time.
      const double cap = cut_seconds(p, rate, 0, j - 1);
      auto compute = [&](const std::vector<double>& per_sample, const std::vector<double>& fixed) {
        const double a = Prefix::sum(per_sample, 0, j - 1), b = Prefix::sum(fixed, 0, j - 1);
        return std::max(most_samples.first * a + most_samples.second * b, slowest.first * a + slowest.second * b);
      };
      double sum = compute(p.forward, p.forward_fixed) + compute(p.backward, p.backward_fixed), most = sum;
      if (too_slow(sum, most) || !state_fits(0, j - 1, size_t(r), least_memory)) break;  // and so longer prefixes
      if (j < n && (r >= d || double(d - r) * std::max(cap, largest_after[size_t(j)]) <
                                  cut_seconds(p, next, j, n - 1) * (1 - 1e-12)))
        continue;  // too few devices left for the rest
      Plan plan;
      plan.micro_batches = M;
      plan.stages.push_back({0, j - 1, prefix, {}});
      bool placed = true;
      for (int pos = j, k = r; pos < n && placed; ++k) {
        if (k >= d) {
          placed = false;
          break;
        }
        if (!state_fits(pos, pos, 1, memory_of(k))) {
          placed = false;
          break;
        }
        const int e = reach(k, pos, cap);
        const double t = cut_seconds(p, single[size_t(k)], pos, e);
        sum += t, most = std::max(most, t);
        plan.stages.push_back({pos, e, {order[size_t(k)]}, {}});
        pos = e + 1;
        placed = !too_slow(sum, most);
      }
      if (placed) keep(w, p, c, std::move(plan), best, best_t);
    }
  }
  return best;
}

std::vector<Plan> baseline_seeds(const Workload& w, const Prefix& p, const Cluster& c, int64_t M) {
  const int n = int(w.blocks.size()), S = std::min(n, c.size());
  std::vector<Plan> out;
  out.push_back(naive_at(w, c, M));
  Plan dp = data_parallel_at(w, c, M);
  if (!dp.stages.empty()) out.push_back(std::move(dp));
  // The fastest of the plans with each stage count, then the fastest PipeDream-style plan if faster still.
  Plan best;
  double best_t = kInf;
  for (Plan& plan : out) best_t = std::min(best_t, finish_and_time(w, p, c, plan, true));
  for (int s : candidates_upto(S, every_candidate(S, n), 80, true))
    keep(w, p, c, best_stage_count_plan(w, p, c, M, s), best, best_t);
  Plan pd = best_pipedream_plan(w, p, c, M, best_t, false);
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
  PlanResult r = best_over_micro_batches(w, c, "one stage", [&](int64_t M, Plan& plan) {
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
    plan = detail::best_pipedream_plan(w, p, c, M, best_t, true);
    return !plan.stages.empty();
  });
}

}  // namespace dp::pipeline
