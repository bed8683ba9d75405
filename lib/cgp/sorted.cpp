// The sceptic's baseline: sort the ranks by speed (fastest first, ties by rank) and cut them into
// contiguous runs. Dynamic programming over the cut points maximises, for every group count G, the sum of
// the groups' uncontended samples per second (each group scored alone); each G's best is then scored with
// the full model (contention, staleness) and the best that meets the bound wins.
#include <algorithm>
#include <limits>
#include <numeric>

#include "lib/cgp/cgp_internal.h"

namespace dp::cgp::detail {

namespace {
constexpr int kMostLayers = 32;  // group counts tried when the count is free (the bound allows up to this)
}

Grouping grouping_from_cuts(int n, const std::vector<int>& order, const std::vector<int>& cuts) {
  Grouping g(size_t(n), 0);
  int begin = 0;
  for (size_t c = 0; c < cuts.size(); ++c) {
    for (int p = begin; p < cuts[c]; ++p) g[size_t(order[size_t(p)])] = int(c);
    begin = cuts[c];
  }
  return normalized(g);
}

std::vector<Grouping> solve_sorted(Search& s) {
  const Topology& t = s.topology();
  const Workload& w = s.workload();
  const int n = t.n;
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return t.speed[size_t(a)] > t.speed[size_t(b)]; });
  const int fixed = s.options().group_count;
  const int layers = fixed > 0 ? fixed : std::min(s.max_groups(), kMostLayers);

  // best[g][j]: the largest sum over g groups covering the first j sorted ranks; from[g][j]: the last cut.
  const double none = -std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(size_t(layers) + 1, std::vector<double>(size_t(n) + 1, none));
  std::vector<std::vector<int>> from(size_t(layers) + 1, std::vector<int>(size_t(n) + 1, -1));
  best[0][0] = 0;
  const double every = double(w.exchange_every);
  GroupingState run(t, w);
  if (layers > 1)
    for (int i = 0; i < n; ++i) {  // runs starting at sorted position i; best[*][i] is final here
      run.clear();
      for (int j = i + 1; j <= n; ++j) {
        run.add(order[size_t(j) - 1], 0);
        const GroupTerms& gt = run.terms(0);
        const double rate = every * double(gt.batch) / (every * gt.step + gt.gather + gt.exchange);
        for (int g = std::min(layers - 1, i); g >= 0; --g) {
          if (best[size_t(g)][size_t(i)] == none) continue;
          const double total = best[size_t(g)][size_t(i)] + rate;
          if (total > best[size_t(g) + 1][size_t(j)]) {
            best[size_t(g) + 1][size_t(j)] = total;
            from[size_t(g) + 1][size_t(j)] = i;
          }
        }
      }
    }

  std::vector<Grouping> per_count(static_cast<size_t>(layers));
  GroupingState state(t, w);
  for (int g = 1; g <= layers; ++g) {
    if (fixed > 0 && g != fixed) continue;
    Grouping grouping;
    if (g == 1) {
      grouping.assign(size_t(n), 0);
    } else {
      if (best[size_t(g)][size_t(n)] == none) continue;
      std::vector<int> cuts;
      for (int j = n, layer = g; layer > 0; j = from[size_t(layer)][size_t(j)], --layer) cuts.push_back(j);
      std::reverse(cuts.begin(), cuts.end());
      grouping = grouping_from_cuts(n, order, cuts);
    }
    state.assign(grouping);
    s.record(state.score(), state);
    per_count[size_t(g) - 1] = std::move(grouping);
  }
  return per_count;
}

}  // namespace dp::cgp::detail
