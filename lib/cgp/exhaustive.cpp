// Every set partition of the ranks, as restricted growth strings (rank r joins one of the groups of the
// ranks before it or opens the next one), with at most as many groups as can meet the bound (G groups have
// staleness at least G - 1) or exactly the fixed count. Bell(12) = 4,213,597 groupings at 12 ranks.
#include <algorithm>

#include "lib/cgp/cgp_internal.h"

namespace dp::cgp::detail {

namespace {

struct Enumeration {
  Search& search;
  GroupingState state;
  int n, most, fixed;

  void visit(int rank, int used) {
    if (rank == n) {
      if (fixed == 0 || used == fixed) search.record(state.score(), state);
      return;
    }
    if (fixed > 0 && used + (n - rank) < fixed) return;  // too few ranks left to open the missing groups
    for (int label = 0; label <= std::min(used, most - 1); ++label) {
      state.add(rank, label);
      visit(rank + 1, std::max(used, label + 1));
      state.remove(rank);
    }
  }
};

}  // namespace

void solve_exhaustive(Search& s) {
  Enumeration e{s, GroupingState(s.topology(), s.workload()), s.topology().n, s.max_groups(),
                s.options().group_count};
  e.visit(0, 0);
}

}  // namespace dp::cgp::detail
