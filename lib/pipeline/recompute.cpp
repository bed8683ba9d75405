// The cheapest recomputation of one stage: the set R of its blocks that keep only their input (and
// re-run their forward before their backward) of least recomputed forward time (on its busiest replica:
// share x per-sample time + fixed time) such that every device
// of the stage fits. A device holding `share` samples of a micro-batch needs
//     resident + share * (in_flight * (kept - sum over R of gain_b) + max_b (work_b + [b in R] gain_b))
// where gain_b = saved_b - input_b (what it drops, and rebuilds for its backward). For a bound tau on
// the transient term (the largest work_b, plus the largest gain_b in R, rebuilt for its backward) the blocks
// with max work + gain_b <= tau may join R and the rest is a covering knapsack (gain at least the need, least
// time), solved by branch and bound with the fractional bound; every tau that can be the transient is
// tried, so the answer is exact unless the search's node budget runs out (it then keeps the best found,
// the greedy descent at the least). Stages of up to 12 blocks simply try every subset.
#include <algorithm>
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
  for (size_t i = 0; i < ranks.size(); ++i) {
    const double memory = c.rank(ranks[i]).memory_gb * 1e9;
    if (memory > 0 && detail::device_peak_bytes(w, p, first, last, in_flight, shares[i], recompute, ranks.size()) > memory)
      return false;
  }
  return true;
}

// Least cost of items (sorted by gain / cost, descending) whose gains reach `need`.
class CoverSearch {
 public:
  CoverSearch(std::vector<double> gain, std::vector<double> cost, double need, long& nodes_left)
      : gain_(std::move(gain)), cost_(std::move(cost)), need_(need), take_(gain_.size()), nodes_left_(nodes_left) {}

  double solve(std::vector<char>& best_take) {
    dfs(0, 0, 0);
    best_take = best_take_;
    return best_;
  }

 private:
  // The fractional relaxation: the cheapest way to add `missing` gain from items i.. (ratio order).
  double bound(size_t i, double missing) const {
    double c = 0;
    for (; i < gain_.size() && missing > 0; ++i) {
      const double f = std::min(1.0, missing / gain_[i]);
      c += f * cost_[i];
      missing -= f * gain_[i];
    }
    return missing > 1e-9 * need_ ? kInf : c;
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
  double best_ = kInf;
  long& nodes_left_;
};

}  // namespace

bool detail::cheapest_recompute(const Workload& w, const Prefix& p, const Cluster& c, int first, int last,
                                const std::vector<int>& ranks, const std::vector<int64_t>& shares,
                                int64_t in_flight, std::vector<int>& recompute) {
  recompute.clear();
  if (stage_fits(w, p, c, first, last, ranks, shares, in_flight, recompute)) return true;
  const int len = last - first + 1;
  // A block's recomputation costs the stage what it costs its busiest replica (exactly so with one).
  const int64_t share = *std::max_element(shares.begin(), shares.end());
  double best = kInf;
  if (len <= 12) {
    std::vector<int> trial;
    for (uint32_t m = 1; m < (1u << len); ++m) {
      double cost = 0;
      trial.clear();
      for (int i = 0; i < len; ++i)
        if (m >> i & 1u) cost += detail::recompute_seconds(w.blocks[size_t(first + i)], share), trial.push_back(first + i);
      if (cost < best && stage_fits(w, p, c, first, last, ranks, shares, in_flight, trial))
        best = cost, recompute = trial;
    }
  } else {
    // Only blocks that keep more than their input can help.
    std::vector<int> candidates;
    double max_work = 0;
    for (int b = first; b <= last; ++b) {
      max_work = std::max(max_work, w.blocks[size_t(b)].work_bytes);
      if (w.blocks[size_t(b)].saved_bytes > w.input_bytes_of(b)) candidates.push_back(b);
    }
    auto gain = [&](int b) { return w.blocks[size_t(b)].saved_bytes - w.input_bytes_of(b); };
    auto cost = [&](int b) { return detail::recompute_seconds(w.blocks[size_t(b)], share); };
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](int a, int b) { return gain(a) * cost(b) > gain(b) * cost(a); });
    std::vector<double> taus{max_work};
    for (int b : candidates) taus.push_back(max_work + gain(b));
    std::sort(taus.begin(), taus.end());
    taus.erase(std::unique(taus.begin(), taus.end()), taus.end());
    const std::vector<int> none;
    long nodes_left = 100000;  // the search's budget over all taus: exact on every stage we have seen
    for (double tau : taus) {
      // The gain every device needs with the transient at tau.
      double need = 0;
      bool possible = true;
      for (size_t i = 0; i < ranks.size() && possible; ++i) {
        const double memory = c.rank(ranks[i]).memory_gb * 1e9;
        if (memory <= 0) continue;
        const double share = double(shares[i]);
        // device_peak_bytes without recomputation, its transient replaced by tau.
        const double plain = detail::device_peak_bytes(w, p, first, last, in_flight, shares[i], none, ranks.size());
        const double at_tau = plain + share * (tau - max_work);
        need = std::max(need, (at_tau - memory) / (share * double(in_flight)));
      }
      std::vector<double> g, k;
      std::vector<int> items;
      for (int b : candidates)
        if (max_work + gain(b) <= tau)
          items.push_back(b), g.push_back(gain(b)), k.push_back(cost(b));
      std::vector<char> take;
      const double t = CoverSearch(g, k, need * (1 + 1e-12), nodes_left).solve(take);
      if (t < best) {
        std::vector<int> trial;
        for (size_t i = 0; i < items.size(); ++i)
          if (take[i]) trial.push_back(items[i]);
        std::sort(trial.begin(), trial.end());
        if (stage_fits(w, p, c, first, last, ranks, shares, in_flight, trial)) best = t, recompute = trial;
      }
    }
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
