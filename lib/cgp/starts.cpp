// Where the searches start: sorted's answers, one group, groups of whole nodes or whole racks, and the
// repair that gives a grouping a fixed number of groups.
#include <algorithm>

#include "lib/cgp/cgp_internal.h"

namespace dp::cgp::detail {

namespace {

// `units` (per rank: its node or rack, dense and in rank order) cut into `count` contiguous runs of units
// with about equal ranks each; empty when there are fewer units than groups.
Grouping aligned(const std::vector<int>& unit, int units, int count) {
  if (count > units) return {};
  const int n = int(unit.size());
  std::vector<int64_t> prefix(size_t(units) + 1, 0);  // ranks in units [0, u)
  for (int u : unit) ++prefix[size_t(u) + 1];
  for (int u = 0; u < units; ++u) prefix[size_t(u) + 1] += prefix[size_t(u)];
  std::vector<int> group_of(size_t(units), 0);
  for (int group = 0, begin = 0; group < count; ++group) {
    // This run ends once it reaches its share, leaving a unit for every later run.
    int end = units - (count - group - 1);
    if (group < count - 1) {
      const int64_t share = int64_t(n) * (group + 1) / count;
      for (int e = begin + 1; e < end; ++e)
        if (prefix[size_t(e)] >= share) {
          end = e;
          break;
        }
    }
    for (int u = begin; u < end; ++u) group_of[size_t(u)] = group;
    begin = end;
  }
  Grouping g(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) g[size_t(r)] = group_of[size_t(unit[size_t(r)])];
  return normalized(g);
}

int count_groups(const Grouping& g) {
  int groups = 0;
  for (int label : g) groups = std::max(groups, label + 1);
  return groups;
}

}  // namespace

void fit_group_count(Grouping& g, int count, Rng& rng) {
  g = normalized(g);
  int groups = count_groups(g);
  const int n = int(g.size());
  count = std::clamp(count, 1, n);
  while (groups > count) {  // merge the smallest group into a random other
    std::vector<int> size(size_t(groups), 0);
    for (int label : g) ++size[size_t(label)];
    const int smallest = int(std::min_element(size.begin(), size.end()) - size.begin());
    int into = int(rng.below(uint64_t(groups) - 1));
    if (into >= smallest) ++into;
    for (int& label : g)
      if (label == smallest) label = into;
    g = normalized(g);
    --groups;
  }
  while (groups < count) {  // split a random half off the largest group
    std::vector<int> size(size_t(groups), 0);
    for (int label : g) ++size[size_t(label)];
    const int largest = int(std::max_element(size.begin(), size.end()) - size.begin());
    std::vector<int> members;
    for (int r = 0; r < n; ++r)
      if (g[size_t(r)] == largest) members.push_back(r);
    for (size_t i = members.size(); i > 1; --i) std::swap(members[i - 1], members[size_t(rng.below(i))]);
    for (size_t i = 0; i < members.size() / 2; ++i) g[size_t(members[i])] = groups;
    ++groups;
  }
  g = normalized(g);
}

std::vector<Grouping> start_groupings(Search& s) {
  const Topology& t = s.topology();
  const int fixed = s.options().group_count;
  std::vector<Grouping> starts;
  for (Grouping& g : solve_sorted(s))
    if (!g.empty()) starts.push_back(std::move(g));
  auto add = [&](Grouping g) {
    if (g.empty()) return;
    if (fixed > 0 && count_groups(g) != fixed) fit_group_count(g, fixed, s.rng());
    if (std::find(starts.begin(), starts.end(), g) == starts.end()) starts.push_back(std::move(g));
  };
  add(Grouping(size_t(t.n), 0));
  for (const auto& [unit, units] : {std::pair{&t.node, t.nodes}, std::pair{&t.rack, t.racks}}) {
    if (units < 2) continue;
    if (fixed > 0) {
      add(aligned(*unit, units, std::min(fixed, units)));
      continue;
    }
    for (int count = 2; count <= std::min(units, s.max_groups()); ++count) add(aligned(*unit, units, count));
  }
  return starts;
}

}  // namespace dp::cgp::detail
