// The heuristic planner's moves over devices (heuristic.cpp): the locality order devices start in, the
// stage counts it tries, and a random neighbour of a placement.
#include <algorithm>
#include <numeric>

#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline {

std::vector<int> detail::locality_order(const Cluster& c) {
  std::vector<int> order(size_t(c.size()));
  std::iota(order.begin(), order.end(), 0);
  if (!c.has_matrix()) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const auto &x = c.rank(a), &y = c.rank(b);
      if (x.rack != y.rack) return x.rack < y.rack;
      if (x.node != y.node) return x.node < y.node;
      return x.speed > y.speed;
    });
    return order;
  }
  std::vector<bool> used(order.size(), false);
  order = {0};
  used[0] = true;
  while (order.size() < used.size()) {
    int best = -1;
    for (int r = 0; r < c.size(); ++r)
      if (!used[size_t(r)] && (best < 0 || c.link(order.back(), r).gbps > c.link(order.back(), best).gbps)) best = r;
    used[size_t(best)] = true;
    order.push_back(best);
  }
  return order;
}

// A random neighbour of `sets` (devices moved between stages, added, dropped; a stage split or two merged).
bool detail::neighbour(StageDevices& sets, std::vector<int>& unused, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return size_t(std::uniform_int_distribution<size_t>(0, n - 1)(rng)); };
  auto ascending = [](std::vector<int>& v) { std::sort(v.begin(), v.end()); };  // a stage's ranks ascend
  const size_t S = sets.size();
  switch (pick(6)) {
    case 0: {  // move a device to a neighbouring stage
      const size_t s = pick(S);
      if (S < 2 || sets[s].size() < 2) return false;
      const size_t t = s == 0 ? 1 : s + 1 == S ? s - 1 : (pick(2) ? s + 1 : s - 1);
      const size_t i = pick(sets[s].size());
      sets[t].push_back(sets[s][i]);
      sets[s].erase(sets[s].begin() + long(i));
      ascending(sets[t]);
      return true;
    }
    case 1: {  // swap devices of two stages
      if (S < 2) return false;
      const size_t s = pick(S), t = (s + 1 + pick(S - 1)) % S;
      std::swap(sets[s][pick(sets[s].size())], sets[t][pick(sets[t].size())]);
      ascending(sets[s]), ascending(sets[t]);
      return true;
    }
    case 2: {  // use an unused device
      if (unused.empty()) return false;
      const size_t u = pick(unused.size()), s = pick(S);
      sets[s].push_back(unused[u]);
      unused.erase(unused.begin() + long(u));
      ascending(sets[s]);
      return true;
    }
    case 3: {  // leave a device out
      const size_t s = pick(S);
      if (sets[s].size() < 2) return false;
      const size_t i = pick(sets[s].size());
      unused.push_back(sets[s][i]);
      sets[s].erase(sets[s].begin() + long(i));
      return true;
    }
    case 4: {  // split a stage's devices into two stages
      const size_t s = pick(S);
      if (sets[s].size() < 2) return false;
      const size_t half = sets[s].size() / 2;
      std::vector<int> second(sets[s].begin() + long(half), sets[s].end());
      sets[s].resize(half);
      sets.insert(sets.begin() + long(s) + 1, second);
      return true;
    }
    default: {  // merge two adjacent stages
      if (S < 2) return false;
      const size_t s = pick(S - 1);
      sets[s].insert(sets[s].end(), sets[s + 1].begin(), sets[s + 1].end());
      ascending(sets[s]);
      sets.erase(sets.begin() + long(s) + 1);
      return true;
    }
  }
}

std::vector<int> detail::stage_counts(int limit) {
  std::vector<int> out;
  for (int s = 1; s <= limit; s = s < 16 ? s + 1 : s + s / 4) out.push_back(s);
  if (out.back() != limit) out.push_back(limit);
  return out;
}

}  // namespace dp::pipeline
