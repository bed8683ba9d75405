// Slow-rank detection: a rank is slow when its own compute per sample is at least slow_threshold times
// the median of the others' and at least near_slowest times the slowest rank's. Under a pipeline the
// stages do different work: what is compared is each rank's compute per sample over what the plan
// expects of it (its stage's blocks at its machine's described speed, from the pipeline line), so a
// stage on slow machines shows against the others; without that expectation, a stage's replicas only.
// Waiting never makes a rank slow: under plain data parallelism the fast ranks wait for the slow one
// (before the exchange: wait_ms; under MRA inside the exchange: comm_ms), under I-DAT the slow one gets a
// smaller share and nobody waits much; its compute per sample shows both. The reason names the ranks
// that wait: those blocked (wait + comm) noticeably longer than the slow ranks are.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "lib/monitor/snapshot.h"

namespace dp::monitor {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string rank_list(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ","));
}

bool is_slow(const SlowVerdict& v, int rank) { return std::find(v.slow.begin(), v.slow.end(), rank) != v.slow.end(); }

// How the ranks are compared. Under a pipeline with the plan's expectation for every working rank:
// measured / expected, across all ranks. Otherwise compute per sample, with every rank (or, under a
// pipeline without expectations, with the stage's replicas).
struct Comparison {
  bool any = false;       // some rank has logged samples
  bool expected = false;  // measured / expected
  bool by_stage = false;  // within a stage only
  double cost(const RankFigures& r) const {
    return expected ? r.compute_ms_per_sample / r.expected_ms_per_sample : r.compute_ms_per_sample;
  }
  // The first rank numbered `rank`'s cost (0: none is).
  double cost_of(const std::vector<RankFigures>& ranks, int rank) const {
    for (const RankFigures& f : ranks)
      if (f.rank == rank) return cost(f);
    return 0.0;
  }
};

Comparison comparison_for(const std::vector<RankFigures>& ranks, bool pipeline) {
  Comparison c;
  bool expected = pipeline;
  for (const RankFigures& r : ranks)
    if (r.samples > 0) {
      c.any = true;
      if (!(r.expected_ms_per_sample > 0)) expected = false;
    }
  c.expected = expected && c.any;
  c.by_stage = pipeline && !c.expected;
  return c;
}

// Every working rank whose cost is at least slow_threshold x the median of those it is compared with.
SlowVerdict slower_than_the_others(const std::vector<RankFigures>& ranks, const Comparison& c) {
  SlowVerdict v;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankFigures& r = ranks[i];
    if (r.samples <= 0) continue;
    std::vector<double> others;
    for (size_t j = 0; j < ranks.size(); ++j)
      if (j != i && ranks[j].samples > 0 && (!c.by_stage || ranks[j].stage == r.stage))
        others.push_back(c.cost(ranks[j]));
    const double typical = median(others);
    if (others.empty() || typical <= 0) continue;
    const double ratio = c.cost(r) / typical;
    if (ratio >= slow_threshold) {
      v.slow.push_back(r.rank);
      v.ratio.push_back(ratio);
    }
  }
  return v;
}

// Only the ranks that hold the others back: the slowest, and those nearly as slow (at least
// `near_slowest` of its compute per sample). A rank 1.5x slower than the rest beside one 7x slower is
// not what the others wait for (on a shared machine, contention alone makes such differences).
void keep_near_slowest(const std::vector<RankFigures>& ranks, const Comparison& c, SlowVerdict& v) {
  double slowest = 0;
  for (int r : v.slow) slowest = std::max(slowest, c.cost_of(ranks, r));
  for (size_t i = v.slow.size(); i-- > 0;)
    if (c.cost_of(ranks, v.slow[i]) < near_slowest * slowest) {
      v.slow.erase(v.slow.begin() + std::ptrdiff_t(i));
      v.ratio.erase(v.ratio.begin() + std::ptrdiff_t(i));
    }
}

std::string no_slow_reason(const std::vector<RankFigures>& ranks, const Comparison& c) {
  return !c.any             ? "no rank has logged a step yet"
         : ranks.size() < 2 ? "one rank: nothing to compare"
         : c.expected ? fmt::format("no slow rank: every rank computes within {:.2f}x of the others per sample "
                                    "against what the plan expects of its stage", slow_threshold)
         : c.by_stage ? fmt::format("no slow rank: every stage's replicas compute within {:.2f}x of each "
                                    "other per sample (the run's pipeline lines carry no expectation to "
                                    "compare stages by)", slow_threshold)
                      : fmt::format("no slow rank: every rank computes within {:.2f}x of the others per "
                                    "sample", slow_threshold);
}

// The slow ranks' batch share and time blocked against the other ranks'.
struct Blocking {
  double slow_wait = 0;    // the longest wait + comm of a slow rank
  double slow_share = 0;   // the slow ranks' mean share of the batch
  double other_share = 0;  // the other ranks' mean share
  int others = 0;
  double other_wait = 0;   // the waiting ranks' wait + comm, summed
};

// The blocking figures; the ranks blocked noticeably longer than the slow ones (half a millisecond and
// 20% more) go to v.waiting.
Blocking find_waiting(const std::vector<RankFigures>& ranks, SlowVerdict& v) {
  Blocking b;
  for (const RankFigures& r : ranks) {
    if (is_slow(v, r.rank)) {
      b.slow_wait = std::max(b.slow_wait, r.wait_ms + r.comm_ms);
      b.slow_share += r.share / double(v.slow.size());
    } else {
      b.other_share += r.share;
      ++b.others;
    }
  }
  for (const RankFigures& r : ranks) {
    const double blocked = r.wait_ms + r.comm_ms;
    if (!is_slow(v, r.rank) && blocked > std::max(b.slow_wait * 1.2, b.slow_wait + 0.5)) {
      v.waiting.push_back(r.rank);
      b.other_wait += blocked;
    }
  }
  if (b.others > 0) b.other_share /= double(b.others);
  return b;
}

// Per slow rank: how much slower it computes, against what.
std::string slowness(const std::vector<RankFigures>& ranks, const Comparison& c, const SlowVerdict& v) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < v.slow.size(); ++i) {
    if (c.expected) {
      const RankFigures* f = nullptr;
      for (const RankFigures& r : ranks)
        if (r.rank == v.slow[i]) f = &r;
      parts.push_back(fmt::format("rank {}: compute {:.1f}x the others' per sample against the plan's "
                                  "expectation (stage {}: {:.3f} ms per sample, expected {:.3f})",
                                  v.slow[i], v.ratio[i], f->stage, f->compute_ms_per_sample,
                                  f->expected_ms_per_sample));
    } else {
      parts.push_back(fmt::format("rank {}: compute {:.1f}x the {} per sample", v.slow[i], v.ratio[i],
                                  c.by_stage ? "stage's other replicas'" : "others'"));
    }
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

// The reason: the slow ranks' slowness, then their smaller share of the batch (under I-DAT) and the
// ranks that wait for them, when there are.
std::string slow_reason(const std::vector<RankFigures>& ranks, const Comparison& c, const SlowVerdict& v,
                        const Blocking& b) {
  std::string reason = slowness(ranks, c, v);
  if (b.others > 0 && b.slow_share < 0.8 * b.other_share)
    reason += fmt::format("; {} {} {:.1f}% of the batch, the others {:.1f}% each", rank_list(v.slow),
                          v.slow.size() == 1 ? "gets" : "get", 100 * b.slow_share, 100 * b.other_share);
  if (!v.waiting.empty())
    reason += fmt::format("; {} {} for {} ({:.1f} ms per step in wait + comm, against {:.1f})", rank_list(v.waiting),
                          v.waiting.size() == 1 ? "waits" : "wait", v.slow.size() == 1 ? "it" : "them",
                          b.other_wait / double(v.waiting.size()), b.slow_wait);
  return reason;
}

}  // namespace

SlowVerdict find_slow_ranks(const std::vector<RankFigures>& ranks, bool pipeline) {
  const Comparison c = comparison_for(ranks, pipeline);
  SlowVerdict v = slower_than_the_others(ranks, c);
  keep_near_slowest(ranks, c, v);
  if (v.slow.empty()) {
    v.reason = no_slow_reason(ranks, c);
    return v;
  }
  const Blocking blocking = find_waiting(ranks, v);
  v.reason = slow_reason(ranks, c, v, blocking);
  return v;
}

}  // namespace dp::monitor
