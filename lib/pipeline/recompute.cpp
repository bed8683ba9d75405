// The cheapest recomputation of one stage: the set R of its blocks that keep only their input (and
// re-run their forward before their backward) of least recomputed forward time (on its busiest replica:
// share x per-sample time + fixed time) such that every device of the stage fits. A device holding
// `share` samples of a micro-batch needs (device_bytes)
//     plain + share * (max over R of gain_b - in_flight * sum over R of gain_b)
// where plain is its peak without recomputation and gain_b = saved_b - input_b (what a recomputed block
// drops, and rebuilds for its backward, in one buffer: the largest). So R fits every device when
// max gain - in_flight * sum gain <= slack, the least over the devices of (memory - plain) / share: one
// number per stage, whatever its replicas. Stages of up to 12 blocks try every subset; longer ones, for
// each bound tau on the largest gain taken, solve a covering knapsack (gain at least the need, least
// time) by branch and bound with the fractional bound, so the answer is exact unless the search's node
// budget runs out (it then keeps the best found, the greedy descent at the least). Stages of more than
// 64 blocks (the heuristic's, on long models) take only the largest tau and 2,000 nodes: a fitting
// recomputation, perhaps not the cheapest. Near the limit (within a relative 1e-9) device_peak_bytes
// itself decides, as evaluate() does.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline {
namespace {

using detail::Prefix;
constexpr double kInf = std::numeric_limits<double>::infinity();

bool stage_fits(const Workload& w, const Prefix& p, const Cluster& c, int first, int last,
                const std::vector<int>& ranks, const std::vector<int64_t>& shares, int64_t in_flight,
                const std::vector<int>& recompute) {
  const detail::DeviceBytes b = detail::device_bytes(w, p, first, last, recompute, ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const double memory = c.rank(ranks[i]).memory_gb * 1e9;
    // device_peak_bytes, its terms computed once
    if (memory > 0 && b.state + double(shares[i]) * (double(in_flight) * b.per_sample_in_flight + b.per_sample_once) >
                          memory)
      return false;
  }
  return true;
}

// Least cost of items (sorted by gain / cost, descending) whose gains reach `need`.
class CoverSearch {
 public:
  // Covers of cost `bound` or more are not looked for.
  CoverSearch(std::vector<double> gain, std::vector<double> cost, double need, double bound, long& nodes_left)
      : gain_(std::move(gain)), cost_(std::move(cost)), need_(need), take_(gain_.size()), best_(bound),
        nodes_left_(nodes_left), gains_(gain_.size() + 1, 0.0), costs_(gain_.size() + 1, 0.0) {
    for (size_t i = 0; i < gain_.size(); ++i) gains_[i + 1] = gains_[i] + gain_[i], costs_[i + 1] = costs_[i] + cost_[i];
  }

  double solve(std::vector<char>& best_take) {
    dfs(0, 0, 0);
    best_take = best_take_;
    return best_;
  }

 private:
  // The fractional relaxation: the cheapest way to add `missing` gain from items i.. (ratio order): the
  // whole items before the first k whose gains reach it, and the part of item k it takes.
  double bound(size_t i, double missing) const {
    if (gains_.back() - gains_[i] < missing - 1e-9 * need_) return kInf;
    const size_t k = size_t(std::lower_bound(gains_.begin() + long(i) + 1, gains_.end(), gains_[i] + missing) -
                            gains_.begin());
    if (k >= gains_.size()) return costs_.back() - costs_[i];
    const double before = gains_[k - 1] - gains_[i];
    return costs_[k - 1] - costs_[i] + std::max(0.0, missing - before) / gain_[k - 1] * cost_[k - 1];
  }

  void dfs(size_t i, double gain, double cost) {
    if (gain >= need_) {
      if (cost < best_) best_ = cost, best_take_ = take_;
      return;
    }
    if (i == gain_.size() || cost + bound(i, need_ - gain) >= best_) return;
    take_[i] = 1;
    dfs(i + 1, gain + gain_[i], cost + cost_[i]);  // taking first: the first leaf is the greedy cover
    take_[i] = 0;
    if (--nodes_left_ >= 0) dfs(i + 1, gain, cost);
  }

  std::vector<double> gain_, cost_;
  double need_;
  std::vector<char> take_, best_take_;
  double best_;
  long& nodes_left_;
  std::vector<double> gains_, costs_;  // prefix sums in ratio order
};

constexpr int kLongStage = 64;  // longer stages: only the largest gain as the bound on what is rebuilt

}  // namespace

bool detail::cheapest_recompute(const Workload& w, const Prefix& p, const Cluster& c, int first, int last,
                                const std::vector<int>& ranks, const std::vector<int64_t>& shares,
                                int64_t in_flight, std::vector<int>& recompute, long* work) {
  recompute.clear();
  long spent = 2 * (last - first + 1) + long(ranks.size());
  struct Charge {
    long& spent;
    long* work;
    ~Charge() {
      if (work) *work += spent;
    }
  } charge{spent, work};
  // Every device's peak is plain_i + share_i * (rebuilt(R) - in_flight * gain(R)), plain_i its peak
  // without recomputation: R fits when rebuilt(R) - in_flight * gain(R) <= slack, the least over the
  // devices of (memory_i - plain_i) / share_i. Candidates are searched with that one number; what is
  // taken is checked with stage_fits (device_peak_bytes itself) and near the limit (within `tol`) only
  // that check decides.
  const DeviceBytes none = detail::device_bytes(w, p, first, last, {}, ranks.size());
  const double base = double(in_flight) * none.per_sample_in_flight + none.per_sample_once;
  double slack = kInf;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const double memory = c.rank(ranks[i]).memory_gb * 1e9;
    if (memory > 0) slack = std::min(slack, (memory - none.state) / double(shares[i]) - base);
  }
  if (slack == kInf) return true;  // no limits
  const double tol = 1e-9 * (std::abs(slack) + base);
  if (slack > tol || (slack >= -tol && stage_fits(w, p, c, first, last, ranks, shares, in_flight, {}))) return true;
  if (!w.may_recompute) return false;
  const int len = last - first + 1;
  // A block's recomputation costs the stage what it costs its busiest replica (exactly so with one).
  const int64_t share = *std::max_element(shares.begin(), shares.end());
  auto gain = [&](int b) { return w.blocks[size_t(b)].saved_bytes - w.input_bytes_of(b); };
  auto cost = [&](int b) { return detail::recompute_seconds(w.blocks[size_t(b)], share); };
  double best = kInf;
  if (len <= 12) {
    // Every subset, its sums built from the subset without its lowest block.
    const uint32_t count = 1u << len;
    std::vector<double> g(count, 0.0), k(count, 0.0), top(count, 0.0);
    std::vector<int> trial;
    spent += 4 * long(count);
    for (uint32_t m = 1; m < count; ++m) {
      const uint32_t rest = m & (m - 1);
      const int b = first + std::countr_zero(m);
      g[m] = g[rest] + gain(b), k[m] = k[rest] + cost(b), top[m] = std::max(top[rest], gain(b));
      const double excess = top[m] - double(in_flight) * g[m] - slack;
      if (k[m] >= best || excess > tol) continue;
      trial.clear();
      for (uint32_t x = m; x; x &= x - 1) trial.push_back(first + std::countr_zero(x));
      if (excess < -tol || stage_fits(w, p, c, first, last, ranks, shares, in_flight, trial))
        best = k[m], recompute = trial;
    }
  } else {
    // Only blocks that keep more than their input can help.
    std::vector<int> candidates;
    for (int b = first; b <= last; ++b)
      if (gain(b) > 0) candidates.push_back(b);
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](int a, int b) { return gain(a) * cost(b) > gain(b) * cost(a); });
    // The largest gain taken (what is rebuilt) bounded by tau: a covering knapsack for each tau.
    std::vector<double> taus{0};
    for (int b : candidates) taus.push_back(gain(b));
    std::sort(taus.begin(), taus.end());
    taus.erase(std::unique(taus.begin(), taus.end()), taus.end());
    if (len > kLongStage) taus.erase(taus.begin(), taus.end() - 1);
    // The search's budget over all taus: exact on every stage we have seen up to kLongStage blocks.
    const long nodes = len > kLongStage ? 2000 : 100000;
    long nodes_left = nodes;
    for (double tau : taus) {
      spent += long(candidates.size());
      const double need = (tau - slack) / double(in_flight);
      std::vector<double> g, k;
      std::vector<int> items;
      for (int b : candidates)
        if (gain(b) <= tau) items.push_back(b), g.push_back(gain(b)), k.push_back(cost(b));
      std::vector<char> take;
      const double t = CoverSearch(g, k, need * (1 + 1e-12), best, nodes_left).solve(take);
      if (t < best && !take.empty()) {
        std::vector<int> trial;
        for (size_t i = 0; i < items.size(); ++i)
          if (take[i]) trial.push_back(items[i]);
        std::sort(trial.begin(), trial.end());
        if (stage_fits(w, p, c, first, last, ranks, shares, in_flight, trial)) best = t, recompute = trial;
      }
    }
    spent += 8 * (nodes - std::max(0L, nodes_left));
  }
  if (best < kInf) return true;
  recompute.resize(size_t(len));
  std::iota(recompute.begin(), recompute.end(), first);
  return false;
}

bool choose_recompute(const Workload& w, const Cluster& c, int first, int last, const std::vector<int>& ranks,
                      int from_end, int64_t micro_batches, std::vector<int>& recompute) {
  return detail::cheapest_recompute(w, Prefix(w), c, first, last, ranks,
                                    detail::micro_batch_shares(c, ranks, w.global_batch / micro_batches),
                                    std::min<int64_t>(micro_batches, from_end), recompute);
}

}  // namespace dp::pipeline
