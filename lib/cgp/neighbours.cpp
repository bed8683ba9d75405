// The changes the searches make to a grouping (aga's mutations, pls's neighbourhoods): move a rank,
// swap two, merge two groups, split one (at random, along nodes, or by speed), move a node's members of
// a group; each as logged moves that can be undone.
#include <algorithm>
#include <array>

#include "lib/cgp/cgp_internal.h"

namespace dp::cgp::detail {

void Moves::move(GroupingState& state, int rank, int group) {
  const int before = state.label(rank);
  if (group < 0) group = state.free_slot();
  if (group == before) return;
  log_.push_back({rank, before});
  state.move(rank, group);
}

void Moves::undo(GroupingState& state) {
  for (auto it = log_.rbegin(); it != log_.rend(); ++it) state.move(it->first, it->second);
  log_.clear();
}

bool move_rank(GroupingState& state, Moves& moves, int rank, int group) {
  const int from = state.label(rank);
  if (group == from) return false;
  if (group < 0 && state.size(from) == 1) return false;  // a group of one "moved" to a new one
  moves.move(state, rank, group);
  return true;
}

bool swap_ranks(GroupingState& state, Moves& moves, int a, int b) {
  const int ga = state.label(a), gb = state.label(b);
  if (ga == gb) return false;
  moves.move(state, a, gb);
  moves.move(state, b, ga);
  return true;
}

bool merge_groups(GroupingState& state, Moves& moves, int into, int from) {
  if (into == from || state.size(from) == 0 || state.size(into) == 0) return false;
  const std::vector<int> members = state.members(from);  // a copy: moving changes the list
  for (int r : members) moves.move(state, r, into);
  return true;
}

bool split_group(GroupingState& state, Moves& moves, int group, SplitBy how, Rng& rng) {
  std::vector<int> members = state.members(group);
  if (members.size() < 2) return false;
  const Topology& t = state.topology();
  std::sort(members.begin(), members.end());
  size_t cut = members.size() / 2;
  if (how == SplitBy::half) {
    for (size_t i = members.size(); i > 1; --i) std::swap(members[i - 1], members[size_t(rng.below(i))]);
  } else if (how == SplitBy::speed) {  // the slower half leaves
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return t.speed[size_t(a)] > t.speed[size_t(b)]; });
  } else {  // whole nodes: cut at the node boundary nearest the middle
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return t.node[size_t(a)] < t.node[size_t(b)]; });
    size_t best = 0;
    for (size_t i = 1; i < members.size(); ++i)
      if (t.node[size_t(members[i])] != t.node[size_t(members[i - 1])] &&
          (best == 0 || (i > cut ? i - cut : cut - i) < (best > cut ? best - cut : cut - best)))
        best = i;
    if (best == 0) return false;  // one node: nothing to cut along
    cut = best;
  }
  const int fresh = state.free_slot();
  for (size_t i = cut; i < members.size(); ++i) moves.move(state, members[i], fresh);
  return true;
}

bool move_node_members(GroupingState& state, Moves& moves, int rank, int to) {
  const int from = state.label(rank);
  if (to == from) return false;
  const Topology& t = state.topology();
  const int node = t.node[size_t(rank)];
  std::vector<int> leaving;
  for (int m : state.members(from))
    if (t.node[size_t(m)] == node) leaving.push_back(m);
  if (to < 0 && leaving.size() == size_t(state.size(from))) return false;  // the whole group: no change
  if (to < 0) to = state.free_slot();
  for (int m : leaving) moves.move(state, m, to);
  return true;
}

namespace {

int random_rank(const GroupingState& state, Rng& rng) { return int(rng.below(uint64_t(state.topology().n))); }

// A random group other than `not_this` (weighted by size), or -1 when there is only one.
int other_group(const GroupingState& state, Rng& rng, int not_this) {
  if (state.groups() < 2) return -1;
  for (;;) {
    const int g = state.label(random_rank(state, rng));
    if (g != not_this) return g;
  }
}

}  // namespace

bool random_neighbour(GroupingState& state, Moves& moves, Rng& rng, bool keep_count, int max_groups) {
  const bool may_grow = !keep_count && state.groups() < max_groups;
  const bool may_shrink = !keep_count && state.groups() > 1;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const int r = random_rank(state, rng);
    const int from = state.label(r);
    const int kind = int(rng.below(100));
    if (kind < 35) {  // move one rank: to another group, or to a new one
      const bool fresh = may_grow && (state.groups() < 2 || rng.below(4) == 0);
      const int to = fresh ? -1 : other_group(state, rng, from);
      if (!fresh && to < 0) continue;
      if (!fresh && state.size(from) == 1 && !may_shrink) continue;  // would close its group
      if (move_rank(state, moves, r, to)) return true;
    } else if (kind < 60) {  // swap two ranks
      const int b = random_rank(state, rng);
      if (swap_ranks(state, moves, r, b)) return true;
    } else if (kind < 75) {  // a node's members of a group, to another group or a new one
      const bool fresh = may_grow && rng.below(3) == 0;
      const int to = fresh ? -1 : other_group(state, rng, from);
      if (!fresh && to < 0) continue;
      const Topology& t = state.topology();
      int leaving = 0;
      for (int m : state.members(from)) leaving += t.node[size_t(m)] == t.node[size_t(r)];
      if (!fresh && leaving == state.size(from) && !may_shrink) continue;  // would close its group
      if (move_node_members(state, moves, r, to)) return true;
    } else if (kind < 85) {  // merge two groups
      if (!may_shrink) continue;
      const int into = other_group(state, rng, from);
      if (into >= 0 && merge_groups(state, moves, into, from)) return true;
    } else {  // split a group
      if (!may_grow) continue;
      const SplitBy how = std::array{SplitBy::half, SplitBy::node, SplitBy::speed}[rng.below(3)];
      if (split_group(state, moves, from, how, rng)) return true;
    }
  }
  return false;
}

}  // namespace dp::cgp::detail
