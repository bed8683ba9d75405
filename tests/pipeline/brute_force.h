// The brute force over every micro-batch count, stage count, block partition, ordered choice of disjoint
// device sets and each stage's recomputation, for the planner tests (small instances only).
#pragma once

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>
#include <map>
#include <tuple>

#include "lib/pipeline/plan.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline::testing {

// The brute force: every micro-batch count, stage count, block partition and ordered choice of disjoint
// device sets (ranks ascending inside a set); each stage's recomputation by trying every subset of its
// blocks (T grows with every stage's time, so each stage's cheapest fitting subset is the best one).
inline double brute_force(const Workload& w, const Cluster& c, Plan* best_plan = nullptr) {
  const int n = int(w.blocks.size()), d = c.size();
  const detail::Prefix p(w);
  double best = std::numeric_limits<double>::infinity();
  for (int64_t M : w.micro_batch_counts) {
    const int64_t mb = w.global_batch / M;
    std::map<std::tuple<int, int, uint32_t, int64_t>, std::pair<bool, std::vector<int>>> recompute_of;
    auto cheapest = [&](int first, int last, uint32_t mask, int64_t in_flight) -> const std::pair<bool, std::vector<int>>& {
      auto [it, fresh] = recompute_of.try_emplace({first, last, mask, in_flight});
      if (!fresh) return it->second;
      const auto ranks = detail::mask_ranks(mask);
      const auto shares = detail::micro_batch_shares(c, ranks, mb);
      double cost = std::numeric_limits<double>::infinity();
      for (uint32_t sub = 0; sub < (1u << (last - first + 1)); ++sub) {
        std::vector<int> rec;
        double t = 0;
        for (int b = first; b <= last; ++b)
          if (sub >> (b - first) & 1u)
            rec.push_back(b), t += detail::recompute_seconds(w.blocks[size_t(b)], *std::max_element(shares.begin(), shares.end()));
        bool fits = true;
        for (size_t i = 0; i < ranks.size(); ++i) {
          const double memory = c.rank(ranks[i]).memory_gb * 1e9;
          fits = fits && (memory <= 0 ||
                          detail::device_peak_bytes(w, p, first, last, in_flight, shares[i], rec, ranks.size()) <= memory);
        }
        if (fits && t < cost) cost = t, it->second = {true, rec};
      }
      return it->second;
    };
    for (int S = 1; S <= std::min(n, d); ++S) {
      Plan plan;
      plan.micro_batches = M;
      plan.stages.resize(size_t(S));
      // Cut points: stage s ends at ends[s].
      std::function<void(int, int, uint32_t)> place = [&](int s, int first, uint32_t used) {
        if (s == S) {
          const double t = evaluate(w, c, plan).minibatch_s;
          if (t < best) {
            best = t;
            if (best_plan) *best_plan = plan;
          }
          return;
        }
        const int last_min = s + 1 == S ? n - 1 : first, last_max = n - (S - s);
        const uint32_t free = ((1u << d) - 1) & ~used;
        for (int last = last_min; last <= last_max; ++last)
          for (uint32_t D = free; D; D = (D - 1) & free) {
            if (std::popcount(D) > mb) continue;
            const auto& [fits, rec] = cheapest(first, last, D, std::min<int64_t>(M, S - s));
            if (!fits) continue;
            plan.stages[size_t(s)] = {first, last, detail::mask_ranks(D), rec};
            place(s + 1, last + 1, used | D);
          }
      };
      place(0, 0, 0);
    }
  }
  return best;
}


}  // namespace dp::pipeline::testing
