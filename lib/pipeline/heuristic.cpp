// The heuristic planner, for clusters the exact one cannot afford. Devices are put in an order: a
// locality order (by rack and node, fastest first within a node; with a link matrix, a greedy chain
// along the fastest links), so consecutive devices are well connected, and for clusters whose small or
// slow devices had better stay out, by memory and by speed. For every stage count S, an order is cut
// into S runs of equal size (the stages' devices) and the blocks are cut to minimise the slowest
// resource: a bisection on that time, each step a greedy pass that extends a stage while its time, its
// link and its memory (recomputing everything) allow; for models up to 64 blocks, single boundary moves
// after. The best start is improved by an iterated local search over the devices (move, swap, add, drop
// a device; split a stage or merge two; a kick of three random moves when a descent stalls), every
// candidate re-cut. Its gap to the exact planner is measured in tests/bench/pipeline_planner.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "lib/core/error.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline {
namespace {

using detail::Prefix;
using Sets = detail::StageDevices;
constexpr double kInf = std::numeric_limits<double>::infinity();

class Heuristic {
 public:
  Heuristic(const Workload& w, const Cluster& c, int64_t M, bool respect_memory)
      : w_(w), c_(c), p_(w), n_(int(w.blocks.size())), M_(M), mb_(w.global_batch / M), respect_(respect_memory) {}

  // The best cut of the blocks over these stage devices, with recomputation and its time (kInf: none fits).
  double cut(const Sets& sets, Plan& plan) {
    const int S = int(sets.size());
    if (S > n_) return kInf;
    for (const auto& s : sets)
      if (s.empty() || int64_t(s.size()) > mb_) return kInf;
    prepare(sets);
    if (!greedy(sets, kInf, plan)) return kInf;
    double lo = 0, hi = max_resource(sets, plan);
    std::vector<int> ends;  // the bisection's cuts, one buffer for all of them
    for (int it = 0; it < 40 && hi - lo > 1e-6 * hi; ++it) {  // the cap to 1e-6 (finish() prices the cut exactly)
      const double mid = 0.5 * (lo + hi);
      if (greedy_ends(sets, mid, ends)) hi = mid;
      else lo = mid;
    }
    greedy(sets, hi, plan);
    // The bisection minimises the bottleneck; with few micro-batches the fill and drain (the sum) weigh
    // as much, which moving boundaries finds. Affordable on every candidate for small models.
    const double t = finish(plan);
    return n_ <= 64 ? refine(plan, t) : t;
  }

  // A given plan's time with each stage's cheapest recomputation (kInf: a stage cannot fit).
  double price(Plan& plan) const {
    if (int64_t(plan.micro_batches) != M_) return kInf;
    for (const Stage& s : plan.stages)
      if (int64_t(s.ranks.size()) > mb_) return kInf;
    return finish(plan);
  }

  // Moves single block boundaries while the predicted time falls (at most `tries` moves tried).
  double refine(Plan& plan, double t, int64_t tries = std::numeric_limits<int64_t>::max()) {
    for (bool improved = true; improved;) {
      improved = false;
      for (size_t s = 0; s + 1 < plan.stages.size(); ++s)
        for (int delta : {-1, 1}) {
          if (--tries < 0) return t;
          Plan trial = plan;
          Stage &a = trial.stages[s], &b = trial.stages[s + 1];
          a.last += delta, b.first += delta;
          if (a.last < a.first || b.last < b.first) continue;
          const double tt = finish(trial);
          if (tt < t * (1 - 1e-12)) plan = std::move(trial), t = tt, improved = true;
        }
    }
    return t;
  }

 private:
  // Per stage: its shares, its slowest replica's seconds per sample-second, its in-flight count, and its
  // link to the next stage as affine pieces in the boundary's bytes per sample (one per endpoint).
  struct StageInfo {
    std::vector<int64_t> shares;
    double factor = 0;
    double fixed_factor = 0;  // its slowest replica's seconds per second of fixed time
    int64_t in_flight = 1;
    std::vector<std::pair<double, double>> fwd, bwd;  // (seconds per byte per sample, latency)
    // The devices with a memory limit that no other is tighter than (no more memory and at least the
    // share): (memory bytes, share), memory ascending. Those fit when they do.
    std::vector<std::pair<double, double>> tightest;
  };

  void prepare(const Sets& sets) {
    const int S = int(sets.size());
    info_.assign(size_t(S), {});
    for (int s = 0; s < S; ++s) {
      StageInfo& si = info_[size_t(s)];
      si.shares = detail::micro_batch_shares(c_, sets[size_t(s)], mb_);
      for (size_t i = 0; i < sets[size_t(s)].size(); ++i) {
        si.factor = std::max(si.factor, double(si.shares[i]) / c_.rank(sets[size_t(s)][i]).speed);
        si.fixed_factor = std::max(si.fixed_factor, 1 / c_.rank(sets[size_t(s)][i]).speed);
      }
      si.in_flight = std::min<int64_t>(M_, S - s);
      std::vector<std::pair<double, double>> limits;
      for (size_t i = 0; i < sets[size_t(s)].size(); ++i) {
        const double memory = c_.rank(sets[size_t(s)][i]).memory_gb * 1e9;
        if (memory > 0) limits.push_back({memory, double(si.shares[i])});
      }
      std::sort(limits.begin(), limits.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second > b.second;
      });
      for (const auto& l : limits)
        if (si.tightest.empty() || l.second > si.tightest.back().second) si.tightest.push_back(l);
    }
    for (int s = 0; s + 1 < S; ++s) pieces(sets[size_t(s)], info_[size_t(s)].shares, sets[size_t(s) + 1],
                                           info_[size_t(s) + 1].shares, info_[size_t(s)]);
  }

  // link_cost's endpoints, each a time a * bytes_per_sample + b.
  void pieces(const std::vector<int>& from, const std::vector<int64_t>& fs, const std::vector<int>& to,
              const std::vector<int64_t>& ts, StageInfo& si) {
    std::vector<std::pair<double, double>> sf(from.size()), rf(to.size()), sb(to.size()), rb(from.size());
    detail::for_each_overlap(fs, ts, [&](size_t i, size_t j, int64_t x) {
      const Link f = c_.link(from[i], to[j]), b = c_.link(to[j], from[i]);
      const double af = double(x) * 8 / (f.gbps * 1e9), ab = double(x) * 8 / (b.gbps * 1e9);
      sf[i].first += af, sf[i].second += f.latency_us * 1e-6, rf[j].first += af, rf[j].second += f.latency_us * 1e-6;
      sb[j].first += ab, sb[j].second += b.latency_us * 1e-6, rb[i].first += ab, rb[i].second += b.latency_us * 1e-6;
    });
    si.fwd = sf, si.bwd = sb;
    si.fwd.insert(si.fwd.end(), rf.begin(), rf.end());
    si.bwd.insert(si.bwd.end(), rb.begin(), rb.end());
  }

  double link_seconds(int s, int boundary) const {
    const double bytes = w_.blocks[size_t(boundary)].output_bytes;
    double f = 0, b = 0;
    for (auto [a, l] : info_[size_t(s)].fwd) f = std::max(f, a * bytes + l);
    for (auto [a, l] : info_[size_t(s)].bwd) b = std::max(b, a * bytes + l);
    return f + b;
  }

  double stage_seconds(int s, int a, int b) const {
    const StageInfo& si = info_[size_t(s)];
    return si.factor * (Prefix::sum(p_.forward, a, b) + Prefix::sum(p_.backward, a, b)) +
           si.fixed_factor * (Prefix::sum(p_.forward_fixed, a, b) + Prefix::sum(p_.backward_fixed, a, b));
  }

  // The least memory blocks [a, e] can take on stage s's devices (every block that gains by it
  // recomputed), grown one
  // block at a time: monotone in e but for the buffer of the tensor leaving the stage.
  class LeastMemory {
   public:
    LeastMemory(const Heuristic& h, const Sets& sets, int s, int a)
        : h_(h), replicas_(sets[size_t(s)].size()), info_(h.info_[size_t(s)]), a_(a) {}
    // Adds block e; false once no later end can fit either.
    bool grow(int e) {
      const auto& blk = h_.w_.blocks[size_t(e)];
      const double input = h_.w_.input_bytes_of(e);
      kept_ += std::min(input, blk.saved_bytes);
      work_ = std::max(work_, blk.work_bytes);
      rebuilt_ = std::max(rebuilt_, blk.saved_bytes - input);
      if (e > a_) inner_ = std::max(inner_, input);
      fits_ = true;
      if (!h_.respect_) return true;
      const double params = h_.w_.state_bytes_per_param_byte(replicas_) * Prefix::sum(h_.p_.params, a_, e);
      const double out = e + 1 < h_.n_ ? h_.w_.blocks[size_t(e)].output_bytes : 0.0;
      for (const auto& [memory, share] : info_.tightest) {
        const double growing = params + share * (double(info_.in_flight) * kept_ + work_ + rebuilt_ +
                                                 double(std::min(2, e - a_)) * inner_ +
                                                 (a_ > 0 ? h_.w_.input_bytes_of(a_) : 0.0));
        if (growing > memory) return false;
        if (growing + share * double(info_.in_flight + 1) * out > memory) fits_ = false;
      }
      return true;
    }
    bool fits() const { return fits_; }

   private:
    const Heuristic& h_;
    const size_t replicas_;
    const StageInfo& info_;
    const int a_;
    double kept_ = 0, work_ = 0, rebuilt_ = 0, inner_ = 0;
    bool fits_ = true;
  };

  // The greedy cut at `cap`: each stage extended as far as its time, its memory and the link after it
  // allow; its last block (false: some stage cannot end anywhere).
  bool greedy_ends(const Sets& sets, double cap, std::vector<int>& last) const {
    const int S = int(sets.size());
    last.resize(size_t(S));
    int pos = 0;
    for (int s = 0; s < S; ++s) {
      const int max_end = n_ - (S - s);  // leave a block for every later stage
      int best = -1;
      LeastMemory memory(*this, sets, s, pos);
      for (int e = pos; e <= max_end; ++e) {
        if (stage_seconds(s, pos, e) > cap || !memory.grow(e)) break;
        if (memory.fits() && (s + 1 == S ? e == n_ - 1 : link_seconds(s, e) <= cap)) best = e;
      }
      if (best < 0) return false;
      last[size_t(s)] = best;
      pos = best + 1;
    }
    return true;
  }

  // The greedy cut at `cap` as a plan on `sets`.
  bool greedy(const Sets& sets, double cap, Plan& plan) const {
    std::vector<int> last;
    if (!greedy_ends(sets, cap, last)) return false;
    plan.stages.assign(sets.size(), {});
    plan.micro_batches = M_;
    for (size_t s = 0; s < sets.size(); ++s) plan.stages[s] = {s == 0 ? 0 : last[s - 1] + 1, last[s], sets[s], {}};
    return true;
  }

  double max_resource(const Sets& sets, const Plan& plan) const {
    double m = 0;
    for (size_t s = 0; s < sets.size(); ++s) {
      m = std::max(m, stage_seconds(int(s), plan.stages[s].first, plan.stages[s].last));
      if (s + 1 < sets.size()) m = std::max(m, link_seconds(int(s), plan.stages[s].last));
    }
    return m;
  }

  // Recomputation per stage, then the model's time (kInf when a stage cannot fit).
  double finish(Plan& plan) const {
    const int S = int(plan.stages.size());
    for (int s = 0; s < S; ++s) {
      Stage& st = plan.stages[size_t(s)];
      st.recompute.clear();
      if (respect_ && !detail::cheapest_recompute(w_, p_, c_, st.first, st.last, st.ranks,
                                                  detail::micro_batch_shares(c_, st.ranks, mb_),
                                                  std::min<int64_t>(M_, S - s), st.recompute))
        return kInf;
    }
    return evaluate(w_, c_, plan).minibatch_s;
  }

  const Workload& w_;
  const Cluster& c_;
  const Prefix p_;
  const int n_;
  const int64_t M_, mb_;
  const bool respect_;
  std::vector<StageInfo> info_;
};

using detail::Clock;
using Deadline = Clock::time_point;

// The orders the starts cut: the locality order, and the devices by memory and by speed (for when not
// every device can take part, or the small ones cannot hold a stage).
std::vector<std::vector<int>> start_orders(const Cluster& c) {
  std::vector<std::vector<int>> orders{detail::locality_order(c)};
  for (auto key : {&ClusterRank::memory_gb, &ClusterRank::speed}) {
    std::vector<int> o = orders[0];
    std::stable_sort(o.begin(), o.end(), [&](int a, int b) {
      const double x = c.rank(a).*key, y = c.rank(b).*key;
      return (x == 0 ? 1e300 : x) > (y == 0 ? 1e300 : y);  // memory 0: no limit
    });
    orders.push_back(o);
  }
  return orders;
}

// `order` cut into S runs of equal size (as many devices as the mb samples of a micro-batch allow),
// each sorted.
Sets equal_runs(const std::vector<int>& order, int S, int d, int64_t mb) {
  int64_t per = d / S, extra = d % S;
  if (per >= mb) per = mb, extra = 0;
  Sets sets(static_cast<size_t>(S));
  for (int s = 0, i = 0; s < S; ++s) {
    for (int64_t k = 0; k < per + (s < extra ? 1 : 0); ++k) sets[size_t(s)].push_back(order[size_t(i++)]);
    std::sort(sets[size_t(s)].begin(), sets[size_t(s)].end());
  }
  return sets;
}

// The best plan found so far: its stage devices, its cut, its time and the devices it leaves out.
struct Best {
  Sets sets;
  Plan plan;
  double t = kInf;
  std::vector<int> unused;
};

// Starts: for each stage count, every start order cut into equal runs; the best of them (t kInf:
// none fits). After the first that fits, no new start begins past the limit.
Best best_start(Heuristic& h, const Workload& w, const Cluster& c, int64_t mb, Deadline limit,
                const std::vector<Plan>& seeds) {
  const int n = int(w.blocks.size()), d = c.size();
  Best best;
  // The seeds as they are, and their devices re-cut.
  for (Plan plan : seeds) {
    Sets sets;
    for (const Stage& s : plan.stages) sets.push_back(s.ranks);
    double t = h.price(plan);
    if (t < best.t) best.t = t, best.sets = sets, best.plan = plan;
    Plan recut;
    t = h.cut(sets, recut);
    if (t < best.t) best.t = t, best.sets = sets, best.plan = recut;
  }
  for (const auto& order : start_orders(c))
    for (int S : detail::stage_counts(std::min(n, d))) {
      if (best.t < kInf && Clock::now() > limit) break;
      const Sets sets = equal_runs(order, S, d, mb);
      Plan plan;
      const double t = h.cut(sets, plan);
      if (t < best.t) best.t = t, best.sets = sets, best.plan = plan;
    }
  return best;
}

std::vector<int> devices_left_out(const Sets& sets, int d) {
  std::vector<bool> in_use(static_cast<size_t>(d), false);
  for (const auto& s : sets)
    for (int x : s) in_use[size_t(x)] = true;
  std::vector<int> unused;
  for (int x = 0; x < d; ++x)
    if (!in_use[size_t(x)]) unused.push_back(x);
  return unused;
}

// Iterated local search over the devices of the stages: single moves from the current plan, taken
// when they help; after 100 in a row that do not, a kick (3 random moves from the best plan) restarts
// the descent elsewhere. Ends after `candidates` candidates, when 2,000 in a row found nothing better,
// or at the limit.
void local_search(Heuristic& h, Best& best, uint64_t seed, int64_t candidates, Deadline limit) {
  std::mt19937_64 rng(seed);
  Sets current = best.sets;
  std::vector<int> unused = best.unused;
  double current_t = best.t;
  for (int64_t failures = 0, since_best = 0, tried = 0; since_best < 2000 && tried < candidates; ++tried) {
    if ((tried & 7) == 0 && Clock::now() > limit) break;
    Sets sets = current;
    std::vector<int> spare = unused;
    const bool kick = failures >= 100;
    if (kick) sets = best.sets, spare = best.unused, failures = 0;
    int moved = 0;
    for (int k = 0; k < (kick ? 3 : 1); ++k) moved += detail::neighbour(sets, spare, rng);
    ++since_best;
    if (!moved) {
      ++failures;
      continue;
    }
    Plan plan;
    const double t = h.cut(sets, plan);
    if (kick || t < current_t * (1 - 1e-12)) {
      current = sets, unused = spare, current_t = t;
      failures = 0;
    } else {
      ++failures;
    }
    if (t < best.t * (1 - 1e-12)) {
      best.t = t, best.sets = std::move(sets), best.plan = std::move(plan), best.unused = std::move(spare);
      since_best = 0;
    }
  }
}

}  // namespace

PlanResult detail::heuristic_search(const Workload& w, const Cluster& c, int64_t micro_batches,
                                    const PlanOptions& o, bool respect_memory, const std::vector<Plan>& seeds,
                                    Clock::time_point limit) {
  Heuristic h(w, c, micro_batches, respect_memory);
  Best best = best_start(h, w, c, w.global_batch / micro_batches, limit, seeds);
  PlanResult r;
  r.method = "heuristic";
  if (best.t == kInf) return r;
  best.unused = devices_left_out(best.sets, c.size());
  local_search(h, best, o.seed, o.search_candidates, limit);
  // Long models: 400 moves at most.
  h.refine(best.plan, best.t, w.blocks.size() <= 64 ? std::numeric_limits<int64_t>::max() : 400);
  r.plan = best.plan;
  r.prediction = evaluate(w, c, r.plan);
  r.feasible = r.prediction.fits || !respect_memory;
  return r;
}

PlanResult plan_heuristic(const Workload& w, const Cluster& c, int64_t micro_batches, const PlanOptions& o) {
  return detail::heuristic_search(w, c, micro_batches, o, true, {}, detail::deadline_in(o.seconds));
}

}  // namespace dp::pipeline
