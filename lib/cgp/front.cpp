// The Pareto archive of (throughput up, staleness down) and the search record every solver writes to:
// evaluations counted, the front, the best grouping that meets the bound, the smallest staleness seen
// (for the message when none does), and the time limit.
#include <algorithm>
#include <cmath>

#include "lib/cgp/cgp_internal.h"

namespace dp::cgp::detail {

namespace {
// Equal within rounding: the same grouping scored along different paths of moves.
bool same(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }
}  // namespace

bool ParetoArchive::dominated(double samples_per_s, double staleness) const {
  // The best throughput at staleness <= this one is the last such entry (throughput rises with staleness).
  auto it = std::upper_bound(entries_.begin(), entries_.end(), staleness,
                             [](double s, const ArchiveEntry& e) { return s < e.score.max_staleness; });
  if (it != entries_.begin()) {
    const ArchiveEntry& e = *std::prev(it);
    if (e.score.samples_per_s >= samples_per_s || same(e.score.samples_per_s, samples_per_s)) return true;
  }
  // An entry of (almost) the same staleness just above, with at least this throughput.
  if (it != entries_.end() && same(it->score.max_staleness, staleness) &&
      (it->score.samples_per_s >= samples_per_s || same(it->score.samples_per_s, samples_per_s)))
    return true;
  return false;
}

bool ParetoArchive::insert(Grouping g, const Score& s, int groups) {
  if (dominated(s.samples_per_s, s.max_staleness)) return false;
  auto it = std::lower_bound(entries_.begin(), entries_.end(), s.max_staleness,
                             [](const ArchiveEntry& e, double v) { return e.score.max_staleness < v; });
  // Entries from here on have at least this staleness; those with no more throughput are dominated now.
  auto end = it;
  while (end != entries_.end() && end->score.samples_per_s <= s.samples_per_s) ++end;
  it = entries_.erase(it, end);
  entries_.insert(it, ArchiveEntry{std::move(g), s, groups, false});
  return true;
}

std::vector<FrontPoint> ParetoArchive::front() const {
  std::vector<FrontPoint> out;
  for (const ArchiveEntry& e : entries_) out.push_back({e.grouping, e.score.samples_per_s, e.score.max_staleness});
  return out;
}

Search::Search(const Topology& t, const Workload& w, const SolveOptions& o)
    : t_(t), w_(w), o_(o), rng_(derive_seed(o.seed, 0xC6F)) {
  max_groups_ = o.group_count > 0 ? o.group_count
                                  : int(std::min<double>(t.n, std::floor(o.max_staleness + kStalenessTolerance) + 1));
  start_ = std::chrono::steady_clock::now();
  deadline_ = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(o.time_limit_s));
}

bool Search::record(const Score& s, GroupingState& state) {
  ++evaluations_;
  const int groups = state.groups();
  if (o_.group_count > 0 && groups != o_.group_count) return false;
  smallest_staleness_ = std::min(smallest_staleness_, s.max_staleness);
  const bool better = feasible(s) && (!have_best_ || s.samples_per_s > best_score_.samples_per_s);
  const bool front = !archive_.dominated(s.samples_per_s, s.max_staleness);
  if (!better && !front) return false;
  Grouping g = state.grouping();  // read out only when kept: O(ranks)
  if (better) {
    best_ = g;
    best_score_ = s;
    have_best_ = true;
  }
  return front && archive_.insert(std::move(g), s, groups);
}

bool Search::expired() {
  if (!time_limited_ && std::chrono::steady_clock::now() >= deadline_) time_limited_ = true;
  return time_limited_;
}

double Search::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double penalized(const Score& s, double bound) {
  const double over = s.max_staleness - bound;
  return over <= kStalenessTolerance ? s.samples_per_s : s.samples_per_s / (1 + 2 * over);
}

}  // namespace dp::cgp::detail
