// The exact planner: a dynamic program from the last block to the first. A state is (the first block of
// the stages placed so far, how many stages that is, the devices they use, the devices of the first of
// them); its value is the Pareto set of (sum of resource times, slowest resource, allreduce stick-out
// relative to the state's first block), because the mini-batch time
//     T = sum + (M - 1) * max + max(0, stick-out)
// is not a function of one of them alone but grows with each. Prepending a stage [h, i-1] on devices D
// (disjoint from the used ones) adds its time and its link's to the sum and the max, and makes the
// stick-out max(its allreduce, old stick-out - (its backward + its link's backward)). Every block range,
// device subset and position is tried, each stage with its cheapest fitting recomputation, so the result
// is the model's optimum; the work grows as blocks^2 x 4^devices, less what a bound prunes: a short
// heuristic run gives a plan's time, and a partial plan whose sum (plus the rest of the work on all free
// devices at once) and max already exceed it is dropped.
//
// Interchangeable devices are tried once: a maximal run of consecutive ranks of the same speed, memory,
// node and rack (a cluster by levels) is a class; swapping two of a class changes no stage's shares,
// ring or link overlaps (the ranks keep their order relative to every other rank), so a stage takes,
// of each class, the lowest free ranks only. Still exact; 8 identical devices cost 9 choices per state
// instead of 256 (AlexNet, 22 blocks: about 16 s before, see tests/bench/README.md).
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "lib/core/error.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline {
namespace {

using detail::Prefix;

struct Entry {
  double sum, max, stick_out;
  int parent;         // entry of the state this stage was prepended to (-1: the empty suffix)
  int first;          // the stage's first block
  uint32_t devices;   // its ranks
  int recompute = -1; // index into the recompute lists (-1: none)
};

struct StageEntry {
  bool fits = false;
  double forward = 0, backward = 0, allreduce = 0;
  std::vector<int64_t> shares;
  int recompute = -1;
};

class ExactSearch {
 public:
  ExactSearch(const Workload& w, const Cluster& c, int64_t micro_batches, bool respect_memory, double upper_bound,
              detail::Clock::time_point deadline, int64_t& steps_left)
      : w_(w), c_(c), p_(w), n_(int(w.blocks.size())), d_(c.size()), M_(micro_batches),
        micro_batch_(w.global_batch / micro_batches), respect_memory_(respect_memory),
        upper_bound_(upper_bound * (1 + 1e-9)), deadline_(deadline), steps_left_(steps_left), at_(size_t(n_) + 1),
        classes_(detail::device_classes(c)) {}

  // False when the deadline ended it (`finished` false) or no plan fits and beats the bound.
  bool run(Plan& plan, bool& finished) {
    finished = false;
    entries_.push_back({0, 0, -std::numeric_limits<double>::infinity(), -1, n_, 0});
    at_[size_t(n_)][key(0, 0, 0)] = {0};
    const uint32_t all = d_ == 32 ? ~0u : (1u << d_) - 1;
    for (int i = n_; i >= 1; --i)
      for (const auto& [k, ids] : at_[size_t(i)]) {
        const int placed = int(k >> 40);
        const uint32_t used = uint32_t(k >> 20) & 0xFFFFF, next = uint32_t(k) & 0xFFFFF;
        const uint32_t free = all & ~used;
        const std::vector<uint32_t> subsets = canonical_subsets(free);
        for (int h = i - 1; h >= 0; --h)
          for (uint32_t D : subsets) {
            steps_ += long(ids.size()) + 4;  // the stage and link lookups weigh most
            if (steps_ > 4096) {
              if ((steps_left_ -= steps_) < 0 || detail::Clock::now() > deadline_) return false;
              steps_ = 0;
            }
            const StageEntry& s = stage(h, i - 1, D, std::min<int64_t>(M_, placed + 1));
            if (!s.fits) continue;
            detail::LinkCost l;
            if (placed > 0) l = link(i - 1, D, next);
            const double t_stage = s.forward + s.backward, t_link = l.forward_s + l.backward_s;
            const double rest = rest_bound(h, used | D);
            for (int id : ids) {
              const Entry& e = entries_[size_t(id)];
              Entry ne{e.sum + t_stage + t_link, std::max({e.max, t_stage, t_link}),
                       std::max(s.allreduce, e.stick_out - (s.backward + l.backward_s)), id, h, D, s.recompute};
              if (ne.sum + rest + double(M_ - 1) * ne.max <= upper_bound_)
                insert(at_[size_t(h)][key(placed + 1, used | D, D)], ne);
            }
          }
      }
    steps_left_ -= steps_;
    finished = true;
    int best = -1;
    double best_t = std::numeric_limits<double>::infinity();
    for (const auto& [k, ids] : at_[0])
      for (int id : ids) {
        const Entry& e = entries_[size_t(id)];
        const double t = e.sum + double(M_ - 1) * e.max + std::max(0.0, e.stick_out);
        if (t < best_t) best_t = t, best = id;
      }
    if (best < 0) return false;
    plan.micro_batches = M_;
    plan.stages.clear();
    for (int id = best; entries_[size_t(id)].parent >= 0; id = entries_[size_t(id)].parent) {
      const Entry& e = entries_[size_t(id)];
      Stage st;
      st.first = e.first;
      st.last = entries_[size_t(e.parent)].first - 1;
      st.ranks = detail::mask_ranks(e.devices);
      if (e.recompute >= 0) st.recompute = recompute_lists_[size_t(e.recompute)];
      plan.stages.push_back(std::move(st));
    }
    return true;
  }

 private:
  // The subsets of `free` a stage may take (none empty, none larger than a micro-batch): of each class
  // the lowest free ranks (none, one, two, ...), of the other ranks any.
  std::vector<uint32_t> canonical_subsets(uint32_t free) const {
    std::vector<uint32_t> out{0};
    uint32_t singles = free;
    for (uint32_t m : classes_) {
      singles &= ~m;
      const size_t before = out.size();
      uint32_t prefix = 0;
      for (uint32_t f = free & m; f; f &= f - 1) {
        prefix |= f & (~f + 1);
        for (size_t i = 0; i < before; ++i) out.push_back(out[i] | prefix);
      }
    }
    const size_t before = out.size();
    for (uint32_t S = singles; S; S = (S - 1) & singles)
      for (size_t i = 0; i < before; ++i) out.push_back(out[i] | S);
    std::erase_if(out, [&](uint32_t D) { return D == 0 || std::popcount(D) > micro_batch_; });
    return out;
  }

  static uint64_t key(int placed, uint32_t used, uint32_t next) {
    return uint64_t(placed) << 40 | uint64_t(used) << 20 | next;
  }

  // No completion of a partial plan (blocks [0, first) still to place on the devices outside `used`) is
  // faster than its sum, this, and M - 1 times its max: the sum grows by at least the work left on all
  // those devices at once, the max stays.
  double rest_bound(int first, uint32_t used) const {
    if (first == 0) return 0;
    double speed = 0;
    for (int r = 0; r < d_; ++r)
      if (!(used >> r & 1u)) speed += c_.rank(r).speed;
    if (speed == 0) return std::numeric_limits<double>::infinity();
    return double(micro_batch_) * (p_.forward[size_t(first)] + p_.backward[size_t(first)]) / speed;
  }

  void insert(std::vector<int>& ids, const Entry& e) { detail::pareto_insert(ids, entries_, e); }

  const StageEntry& stage(int first, int last, uint32_t D, int64_t in_flight) {
    const uint64_t k = ((uint64_t(first) * uint64_t(n_) + uint64_t(last)) << 26 | uint64_t(D) << 6) |
                       uint64_t(in_flight);
    auto [it, fresh] = stages_.try_emplace(k);
    if (!fresh) return it->second;
    steps_ += 4 * (last - first + 1) + 2 * std::popcount(D);  // its memory and times
    StageEntry& s = it->second;
    const std::vector<int> ranks = detail::mask_ranks(D);
    s.shares = detail::micro_batch_shares(c_, ranks, micro_batch_);
    std::vector<int> rec;
    s.fits = !respect_memory_ ||
             detail::cheapest_recompute(w_, p_, c_, first, last, ranks, s.shares, in_flight, rec, &steps_);
    if (!s.fits) return s;
    const detail::StageCost cost = detail::stage_cost(w_, p_, c_, first, last, ranks, in_flight, micro_batch_, rec);
    s.forward = cost.forward_s, s.backward = cost.backward_s, s.allreduce = cost.allreduce_s + cost.update_s;
    if (!rec.empty()) {
      s.recompute = int(recompute_lists_.size());
      recompute_lists_.push_back(std::move(rec));
    }
    return s;
  }

  detail::LinkCost link(int boundary, uint32_t from, uint32_t to) {
    const uint64_t k = uint64_t(boundary) << 40 | uint64_t(from) << 20 | to;
    auto [it, fresh] = links_.try_emplace(k);
    if (fresh) {
      const auto a = detail::mask_ranks(from), b = detail::mask_ranks(to);
      it->second = detail::link_cost(w_, c_, boundary, a, detail::micro_batch_shares(c_, a, micro_batch_), b,
                                     detail::micro_batch_shares(c_, b, micro_batch_));
    }
    return it->second;
  }

  const Workload& w_;
  const Cluster& c_;
  const Prefix p_;
  const int n_, d_;
  const int64_t M_, micro_batch_;
  const bool respect_memory_;
  const double upper_bound_;  // a known plan's time: entries that cannot beat it are dropped
  const detail::Clock::time_point deadline_;
  int64_t& steps_left_;
  long steps_ = 0;  // since steps_left_ was last charged
  std::vector<Entry> entries_;
  std::vector<std::unordered_map<uint64_t, std::vector<int>>> at_;
  std::unordered_map<uint64_t, StageEntry> stages_;
  std::unordered_map<uint64_t, detail::LinkCost> links_;
  std::vector<std::vector<int>> recompute_lists_;
  const std::vector<uint32_t> classes_;  // masks of interchangeable ranks (more than one each)
};

}  // namespace

std::vector<uint32_t> detail::device_classes(const Cluster& c) {
  std::vector<uint32_t> out;
  if (c.has_matrix() || c.size() > 32) return out;
  for (int a = 0; a < c.size();) {
    int b = a + 1;
    const ClusterRank& x = c.rank(a);
    while (b < c.size() && c.rank(b).speed == x.speed && c.rank(b).memory_gb == x.memory_gb &&
           c.rank(b).node == x.node && c.rank(b).rack == x.rack)
      ++b;
    if (b - a > 1) out.push_back(uint32_t(((uint64_t(1) << b) - 1) ^ ((uint64_t(1) << a) - 1)));
    a = b;
  }
  return out;
}

double detail::exact_work(const Cluster& c, int blocks) {
  // Device subsets a stage may take from a free set, over the states: 4^d without classes; a class of
  // m interchangeable devices counts as m + 1 choices of a subset instead of 2^m, its states likewise.
  double subsets = 1;
  int in_classes = 0;
  for (uint32_t m : device_classes(c)) {
    const int k = std::popcount(m);
    in_classes += k;
    subsets *= double(k + 1) * double(k + 2) / 2;
  }
  subsets *= std::pow(4.0, c.size() - in_classes);
  return 0.5 * double(blocks) * double(blocks + 1) * double(std::min(blocks, c.size())) * subsets;
}

detail::ExactResult detail::subset_search(const Workload& w, const Cluster& c, int64_t micro_batches,
                                          bool respect_memory, double upper_bound, Clock::time_point deadline,
                                          int64_t& steps_left) {
  DP_CHECK(c.size() <= 20, "the exact planner takes at most 20 devices");
  ExactResult r;
  r.result.method = "exact";
  const bool found =
      ExactSearch(w, c, micro_batches, respect_memory, upper_bound, deadline, steps_left).run(r.result.plan, r.finished);
  if (found) {
    r.result.prediction = evaluate(w, c, r.result.plan);
    r.result.feasible = r.result.prediction.fits || !respect_memory;
  } else {
    r.result.plan.stages.clear();
  }
  return r;
}

PlanResult detail::exact_search(const Workload& w, const Cluster& c, int64_t micro_batches, bool respect_memory) {
  // A short heuristic run bounds the search; when nothing beats its plan, that plan is the optimum.
  PlanOptions quick;
  quick.search_candidates = 200;
  PlanResult bound = heuristic_search(w, c, micro_batches, quick, respect_memory, {}, deadline_in(1e6));
  const double upper = bound.feasible ? bound.prediction.minibatch_s : std::numeric_limits<double>::infinity();
  int64_t unlimited = std::numeric_limits<int64_t>::max();
  ExactResult r = subset_search(w, c, micro_batches, respect_memory, upper, deadline_in(1e6), unlimited);
  if (!r.result.plan.stages.empty()) return r.result;
  bound.method = "exact";
  return bound;
}

PlanResult plan_exact(const Workload& w, const Cluster& c, int64_t micro_batches) {
  return detail::exact_search(w, c, micro_batches, true);
}

}  // namespace dp::pipeline
