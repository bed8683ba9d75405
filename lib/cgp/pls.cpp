// CGP_PLS: Pareto local search over an archive of (throughput, staleness). The archive starts with sorted's
// answer for every group count, one group and node- and rack-aligned groups; then, until the time limit
// or until every archived point has been explored, the best unexplored point that meets the bound (then,
// when none is left, the least stale one above it) is taken and its neighbours (move a rank, swap two,
// move a node's members of a group, merge two groups, split one) are scored incrementally; every
// neighbour no archived point dominates joins the archive.
// Small neighbourhoods are enumerated whole; above kWholeNeighbourhood neighbours, kSampled random ones
// are drawn per point. The answer is the best point that meets the bound.
#include <algorithm>

#include "lib/cgp/cgp_internal.h"

namespace dp::cgp::detail {

namespace {

constexpr int64_t kWholeNeighbourhood = 20000;
constexpr int kSampled = 4000;

class Pls {
 public:
  explicit Pls(Search& s) : s_(s), state_(s.topology(), s.workload()) {}

  void run() {
    for (const Grouping& g : start_groupings(s_)) {
      state_.assign(g);
      s_.record(state_.score(), state_);
    }
    while (!s_.expired()) {
      const int pick = next_point();
      if (pick < 0) break;  // every archived point explored: a Pareto local optimum
      ArchiveEntry& e = s_.archive().entries()[size_t(pick)];
      e.explored = true;
      state_.assign(e.grouping);  // a copy of the grouping: the archive changes while exploring
      explore();
    }
  }

 private:
  // The unexplored point of highest throughput that meets the bound; when none is left, the unexplored
  // point of least staleness above it (paths to better points may pass there). -1 when there is none.
  int next_point() {
    const auto& entries = s_.archive().entries();
    int feasible = -1, above = -1;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].explored) continue;
      if (s_.feasible(entries[i].score)) feasible = int(i);  // throughput rises along the archive
      else if (above < 0) above = int(i);                     // staleness rises along it
    }
    return feasible >= 0 ? feasible : above;
  }

  // Scores the state as changed by `moves`, records it, and undoes the change.
  void visit() {
    if (moves_.empty()) return;
    s_.record(state_.score(), state_);
    moves_.undo(state_);
  }

  void explore() {
    const int n = s_.topology().n;
    const int64_t whole = int64_t(n) * (state_.groups() + 1) + int64_t(n) * (n - 1) / 2 +
                          int64_t(state_.groups()) * state_.groups();
    if (whole > kWholeNeighbourhood) {
      const bool keep_count = s_.options().group_count > 0;
      for (int i = 0; i < kSampled && !(i % 256 == 0 && s_.expired()); ++i) {
        random_neighbour(state_, moves_, s_.rng(), keep_count, s_.max_groups());
        visit();
      }
      return;
    }
    explore_whole();
  }

  void explore_whole() {
    const int n = s_.topology().n;
    const bool keep_count = s_.options().group_count > 0;
    const bool may_grow = !keep_count && state_.groups() < s_.max_groups();
    std::vector<int> groups;
    for (int g = 0; g < state_.slots(); ++g)
      if (state_.size(g) > 0) groups.push_back(g);
    // Moves: each rank to every other group, and to a new one.
    for (int r = 0; r < n; ++r) {
      const int from = state_.label(r);
      const bool closes = state_.size(from) == 1;
      for (int g : groups)
        if (g != from && !(closes && keep_count)) move_rank(state_, moves_, r, g), visit();
      if (may_grow) move_rank(state_, moves_, r, -1), visit();
    }
    // Swaps of ranks in different groups.
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b) swap_ranks(state_, moves_, a, b), visit();
    // A node's members of a group, to another group or a new one (once per node and group).
    const Topology& t = s_.topology();
    for (int g : groups) {
      std::vector<int> seen;
      const std::vector<int> members = state_.members(g);
      for (int r : members) {
        const int node = t.node[size_t(r)];
        if (std::find(seen.begin(), seen.end(), node) != seen.end()) continue;
        seen.push_back(node);
        int leaving = 0;
        for (int m : members) leaving += t.node[size_t(m)] == node;
        const bool closes = leaving == int(members.size());
        if (leaving == 1) continue;  // the same as moving the rank
        for (int h : groups)
          if (h != g && !(closes && keep_count)) move_node_members(state_, moves_, r, h), visit();
        if (may_grow) move_node_members(state_, moves_, r, -1), visit();
      }
    }
    if (keep_count) return;
    for (size_t i = 0; i < groups.size(); ++i)  // merges
      for (size_t j = i + 1; j < groups.size(); ++j) merge_groups(state_, moves_, groups[i], groups[j]), visit();
    if (!may_grow) return;
    for (int g : groups)  // splits
      for (SplitBy how : {SplitBy::half, SplitBy::node, SplitBy::speed})
        split_group(state_, moves_, g, how, s_.rng()), visit();
  }

  Search& s_;
  GroupingState state_;
  Moves moves_;
};

}  // namespace

void solve_pls(Search& s) { Pls(s).run(); }

}  // namespace dp::cgp::detail
