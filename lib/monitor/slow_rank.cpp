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

}  // namespace

SlowVerdict find_slow_ranks(const std::vector<RankFigures>& ranks, bool pipeline) {
  SlowVerdict v;
  // Under a pipeline with the plan's expectation for every working rank: measured / expected, compared
  // across all ranks. Otherwise compute per sample, compared with every rank (or the stage's replicas).
  bool expected = pipeline, any = false;
  for (const RankFigures& r : ranks)
    if (r.samples > 0) {
      any = true;
      if (!(r.expected_ms_per_sample > 0)) expected = false;
    }
  expected = expected && any;
  const auto cost = [expected](const RankFigures& r) {
    return expected ? r.compute_ms_per_sample / r.expected_ms_per_sample : r.compute_ms_per_sample;
  };
  const bool by_stage = pipeline && !expected;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankFigures& r = ranks[i];
    if (r.samples <= 0) continue;
    std::vector<double> others;
    for (size_t j = 0; j < ranks.size(); ++j)
      if (j != i && ranks[j].samples > 0 && (!by_stage || ranks[j].stage == r.stage)) others.push_back(cost(ranks[j]));
    const double typical = median(others);
    if (others.empty() || typical <= 0) continue;
    const double ratio = cost(r) / typical;
    if (ratio >= slow_threshold) {
      v.slow.push_back(r.rank);
      v.ratio.push_back(ratio);
    }
  }
  // Only the ranks that hold the others back: the slowest, and those nearly as slow (at least
  // `near_slowest` of its compute per sample). A rank 1.5x slower than the rest beside one 7x slower is
  // not what the others wait for (on a shared machine, contention alone makes such differences).
  const auto cost_of = [&](int rank) {
    for (const RankFigures& f : ranks)
      if (f.rank == rank) return cost(f);
    return 0.0;
  };
  double slowest = 0;
  for (int r : v.slow) slowest = std::max(slowest, cost_of(r));
  for (size_t i = v.slow.size(); i-- > 0;)
    if (cost_of(v.slow[i]) < near_slowest * slowest) {
      v.slow.erase(v.slow.begin() + std::ptrdiff_t(i));
      v.ratio.erase(v.ratio.begin() + std::ptrdiff_t(i));
    }
  if (v.slow.empty()) {
    v.reason = !any             ? "no rank has logged a step yet"
               : ranks.size() < 2 ? "one rank: nothing to compare"
               : expected ? fmt::format("no slow rank: every rank computes within {:.2f}x of the others per sample "
                                        "against what the plan expects of its stage", slow_threshold)
               : by_stage ? fmt::format("no slow rank: every stage's replicas compute within {:.2f}x of each "
                                        "other per sample (the run's pipeline lines carry no expectation to "
                                        "compare stages by)", slow_threshold)
                          : fmt::format("no slow rank: every rank computes within {:.2f}x of the others per "
                                        "sample", slow_threshold);
    return v;
  }
  double slow_wait = 0, slow_share = 0, other_share = 0, other_wait = 0;
  int others = 0;
  for (const RankFigures& r : ranks) {
    const bool is_slow = std::find(v.slow.begin(), v.slow.end(), r.rank) != v.slow.end();
    if (is_slow) {
      slow_wait = std::max(slow_wait, r.wait_ms + r.comm_ms);
      slow_share += r.share / double(v.slow.size());
    } else {
      other_share += r.share;
      ++others;
    }
  }
  for (const RankFigures& r : ranks) {
    const bool is_slow = std::find(v.slow.begin(), v.slow.end(), r.rank) != v.slow.end();
    // Waiting: blocked noticeably longer than the slow ranks are (half a millisecond and 20% more).
    const double blocked = r.wait_ms + r.comm_ms;
    if (!is_slow && blocked > std::max(slow_wait * 1.2, slow_wait + 0.5)) {
      v.waiting.push_back(r.rank);
      other_wait += blocked;
    }
  }
  if (others > 0) other_share /= double(others);
  std::vector<std::string> parts;
  for (size_t i = 0; i < v.slow.size(); ++i) {
    if (expected) {
      const RankFigures* f = nullptr;
      for (const RankFigures& r : ranks)
        if (r.rank == v.slow[i]) f = &r;
      parts.push_back(fmt::format("rank {}: compute {:.1f}x the others' per sample against the plan's "
                                  "expectation (stage {}: {:.3f} ms per sample, expected {:.3f})",
                                  v.slow[i], v.ratio[i], f->stage, f->compute_ms_per_sample,
                                  f->expected_ms_per_sample));
    } else {
      parts.push_back(fmt::format("rank {}: compute {:.1f}x the {} per sample", v.slow[i], v.ratio[i],
                                  by_stage ? "stage's other replicas'" : "others'"));
    }
  }
  std::string reason = fmt::format("{}", fmt::join(parts, "; "));
  if (others > 0 && slow_share < 0.8 * other_share)
    reason += fmt::format("; {} {} {:.1f}% of the batch, the others {:.1f}% each", rank_list(v.slow),
                          v.slow.size() == 1 ? "gets" : "get", 100 * slow_share, 100 * other_share);
  if (!v.waiting.empty())
    reason += fmt::format("; {} {} for {} ({:.1f} ms per step in wait + comm, against {:.1f})", rank_list(v.waiting),
                          v.waiting.size() == 1 ? "waits" : "wait", v.slow.size() == 1 ? "it" : "them",
                          other_wait / double(v.waiting.size()), slow_wait);
  v.reason = reason;
  return v;
}

}  // namespace dp::monitor
