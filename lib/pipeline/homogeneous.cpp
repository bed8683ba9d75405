// The exact planner for identical devices: a dynamic program over contiguous block ranges x a stage's
// replication x devices used, PipeDream's optimizer extended to dptrain's cost model. Devices are taken
// in a given order (the locality order of identical devices); the last stage takes the first run of it,
// the stage before it the next run, and so on, so a stage is (its blocks, the number k of devices it
// replicates on) and the devices a plan leaves idle are the end of the order.
//
// What "exact" means. When the devices of the order are identical (speed, memory) and every link between
// two of them is the same, evaluate() of a plan depends only on each stage's blocks and replica count
// (shares, link overlaps and rings are the same whichever devices play which part), so the optimum over
// these runs is the optimum over every plan on those devices: the brute force's (tested). With links by
// level (nodes, racks) it is the optimum over plans whose stages are consecutive runs of the order.
//
// The state, built from the last block backwards: (first block i of the stages placed, devices u they
// use, replicas k' of the first of them, placed stages c capped at M: the next stage keeps
// min(M, c + 1) micro-batches in flight; c is dropped when no device has a memory limit). Its value is the
// Pareto set of (sum of resource times, slowest resource, allreduce stick-out), as in exact.cpp, because
//     T = sum + (M - 1) * max + max(0, stick-out)
// grows with each. Each stage has its cheapest fitting recomputation (recompute.cpp), which is what
// finish_plan() chooses. Work: blocks^2/2 x devices x min(devices, mb)^2 x C transitions times the
// Pareto sets' sizes, less what the upper bound (a known plan's T) prunes; a budget of steps (transitions
// times the entries they extend: deterministic, about 10-40 ns each here) or a deadline ends it unfinished.
#include <algorithm>
#include <chrono>
#include <limits>
#include <unordered_map>

#include "lib/core/error.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline {
namespace {

using detail::Prefix;
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Entry {
  double sum, max, stick_out;
  int parent;         // entry this stage was prepended to (-1: the empty suffix)
  int first;          // the stage's first block
  int u, k;           // its devices: order[u, u + k)
  int recompute = -1; // index into the recompute lists
};

struct StageEntry {
  bool fits = false;
  double time = 0, backward = 0, update = 0, params = 0;
  int recompute = -1;
};

class RunSearch {
 public:
  RunSearch(const Workload& w, const Cluster& c, const std::vector<int>& order, int64_t M, bool respect_memory,
            double upper_bound, detail::Clock::time_point deadline, int64_t& steps_left)
      : w_(w), c_(c), p_(w), order_(order), n_(int(w.blocks.size())), d_(int(order.size())), M_(M),
        mb_(w.global_batch / M), respect_(respect_memory), upper_(upper_bound * (1 + 1e-9)),
        deadline_(deadline), steps_left_(steps_left),
        kmax_(int(std::min<int64_t>(d_, mb_))), speed_(c.rank(order[0]).speed) {
    bool limited = false;
    for (int r : order_) limited = limited || c.rank(r).memory_gb > 0;
    cap_ = respect_ && limited ? int(std::min<int64_t>(M_, n_)) : 1;
    uniform_ = true;
    const Link l0 = d_ > 1 ? c.link(order_[0], order_[1]) : Link{1, 0};
    for (int a = 0; a < d_ && uniform_; ++a)
      for (int b = 0; b < d_ && uniform_; ++b)
        if (a != b) {
          const Link l = c.link(order_[size_t(a)], order_[size_t(b)]);
          uniform_ = l.gbps == l0.gbps && l.latency_us == l0.latency_us;
        }
  }

  // False when the deadline ended it; else `plan` holds the optimum (no stages: nothing fits or beats
  // the upper bound).
  bool run(Plan& plan) {
    plan.stages.clear();
    plan.micro_batches = M_;
    std::vector<std::unordered_map<uint64_t, std::vector<int>>> at(size_t(n_) + 1);
    entries_.push_back({0, 0, -kInf, -1, n_, 0, 0});
    at[size_t(n_)][key(0, 0, 0)] = {0};
    for (int i = n_; i >= 1; --i) {
      for (const auto& [k0, ids] : at[size_t(i)]) {
        const int u = int(k0 >> 32), kn = int(k0 >> 16 & 0xFFFF), placed = int(k0 & 0xFFFF);
        for (int h = i - 1; h >= 0; --h)
          for (int k = 1; k <= std::min(kmax_, d_ - u); ++k) {
            if (h > 0 && u + k == d_) break;  // blocks left and no device for them
            steps_ += long(ids.size()) + 4;  // the stage and link lookups weigh most
            if (steps_ > 4096) {
              if ((steps_left_ -= steps_) < 0 || std::chrono::steady_clock::now() > deadline_) return false;
              steps_ = 0;
            }
            const int64_t in_flight = std::min<int64_t>(M_, placed + 1);
            const StageEntry& s = stage(h, i - 1, k, cap_ > 1 ? in_flight : 1);
            if (!s.fits) continue;
            detail::LinkCost l;
            if (kn > 0) l = link(i - 1, u, k, kn);
            const double t_link = l.forward_s + l.backward_s;
            const double stick = allreduce(u, k, s.params) + s.update;
            const uint64_t next = key(u + k, k, std::min(placed + 1, cap_));
            for (int id : ids) {
              const Entry& e = entries_[size_t(id)];
              Entry ne{e.sum + s.time + t_link, std::max({e.max, s.time, t_link}),
                       std::max(stick, e.stick_out - (s.backward + l.backward_s)), id, h, u, k, s.recompute};
              if (bound(ne, h, u + k) <= upper_) insert(at[size_t(h)][next], ne);
            }
          }
      }
      at[size_t(i)].clear();
    }
    steps_left_ -= steps_;
    int best = -1;
    double best_t = kInf;
    for (const auto& [k0, ids] : at[0])
      for (int id : ids) {
        const Entry& e = entries_[size_t(id)];
        const double t = e.sum + double(M_ - 1) * e.max + std::max(0.0, e.stick_out);
        if (t < best_t) best_t = t, best = id;
      }
    for (int id = best; id >= 0 && entries_[size_t(id)].parent >= 0; id = entries_[size_t(id)].parent) {
      const Entry& e = entries_[size_t(id)];
      Stage st;
      st.first = e.first;
      st.last = entries_[size_t(e.parent)].first - 1;
      st.ranks = run_ranks(e.u, e.k);
      if (e.recompute >= 0) st.recompute = recompute_lists_[size_t(e.recompute)];
      plan.stages.push_back(std::move(st));
    }
    return true;
  }

 private:
  static uint64_t key(int u, int kn, int placed) {
    return uint64_t(u) << 32 | uint64_t(kn) << 16 | uint64_t(placed);
  }

  // No completion is faster: blocks [0, first) on all the devices left at once, the max as it is.
  double bound(const Entry& e, int first, int used) const {
    if (first == 0) return e.sum + double(M_ - 1) * e.max;
    if (used >= d_) return kInf;
    const double work = double(mb_) * (p_.forward[size_t(first)] + p_.backward[size_t(first)]);
    return e.sum + work / (speed_ * double(d_ - used)) + double(M_ - 1) * e.max;
  }

  void insert(std::vector<int>& ids, const Entry& e) { detail::pareto_insert(ids, entries_, e); }

  std::vector<int> run_ranks(int u, int k) const {
    std::vector<int> r(order_.begin() + u, order_.begin() + u + k);
    std::sort(r.begin(), r.end());
    return r;
  }

  // The stage's compute on k of the identical devices (positions do not matter to it).
  const StageEntry& stage(int first, int last, int k, int64_t in_flight) {
    const uint64_t key = ((uint64_t(first) * uint64_t(n_) + uint64_t(last)) << 32) | uint64_t(k) << 16 |
                         uint64_t(in_flight);
    auto [it, fresh] = stages_.try_emplace(key);
    if (!fresh) return it->second;
    steps_ += 4 * (last - first + 1) + 2 * k;  // its memory and times
    StageEntry& s = it->second;
    const std::vector<int> ranks = run_ranks(0, k);
    const auto shares = detail::micro_batch_shares(c_, ranks, mb_);
    std::vector<int> rec;
    s.fits = !respect_ || detail::cheapest_recompute(w_, p_, c_, first, last, ranks, shares, in_flight, rec, &steps_);
    if (!s.fits) return s;
    const detail::StageCost cost = detail::stage_cost(w_, p_, c_, first, last, ranks, in_flight, mb_, rec);
    s.time = cost.forward_s + cost.backward_s, s.backward = cost.backward_s, s.update = cost.update_s;
    s.params = Prefix::sum(p_.params, first, last);
    if (!rec.empty()) {
      s.recompute = int(recompute_lists_.size());
      recompute_lists_.push_back(std::move(rec));
    }
    return s;
  }

  // ring_allreduce_seconds over order[u, u + k), its slowest link and latency cached per run.
  double allreduce(int u, int k, double bytes) { return k < 2 ? 0 : ring(u, k, bytes); }
  double ring(int u, int k, double bytes) {
    const uint64_t key = uint64_t(uniform_ ? 0 : u) << 32 | uint64_t(k);
    auto [it, fresh] = rings_.try_emplace(key);
    if (fresh) {
      const auto ranks = run_ranks(u, k);
      double gbps = kInf, latency = 0;
      for (size_t i = 0; i < ranks.size(); ++i) {
        const Link l = c_.link(ranks[i], ranks[(i + 1) % ranks.size()]);
        gbps = std::min(gbps, l.gbps), latency = std::max(latency, l.latency_us);
      }
      it->second = {gbps, latency};
    }
    const double steps = 2.0 * double(k - 1);
    return steps / double(k) * Link{it->second.first, 0}.bandwidth_seconds(bytes) + steps * it->second.second * 1e-6;
  }

  // The link from the stage on order[u, u + k) to the next one, on order[u - kn, u).
  detail::LinkCost link(int boundary, int u, int k, int kn) {
    const uint64_t key = ((uint64_t(boundary) << 16 | uint64_t(uniform_ ? 0 : u)) << 16 | uint64_t(k)) << 16 |
                         uint64_t(kn);
    auto [it, fresh] = links_.try_emplace(key);
    if (fresh) {
      const auto a = run_ranks(u, k), b = run_ranks(u - kn, kn);
      it->second = detail::link_cost(w_, c_, boundary, a, detail::micro_batch_shares(c_, a, mb_), b,
                                     detail::micro_batch_shares(c_, b, mb_));
    }
    return it->second;
  }

  const Workload& w_;
  const Cluster& c_;
  const Prefix p_;
  const std::vector<int>& order_;
  const int n_, d_;
  const int64_t M_, mb_;
  const bool respect_;
  const double upper_;
  const std::chrono::steady_clock::time_point deadline_;
  int64_t& steps_left_;
  long steps_ = 0;  // since steps_left_ was last charged
  const int kmax_;
  const double speed_;
  int cap_ = 1;
  bool uniform_ = true;
  std::vector<Entry> entries_;
  std::unordered_map<uint64_t, StageEntry> stages_;
  std::unordered_map<uint64_t, std::pair<double, double>> rings_;
  std::unordered_map<uint64_t, detail::LinkCost> links_;
  std::vector<std::vector<int>> recompute_lists_;
};

}  // namespace

bool detail::identical_devices(const Cluster& c, const std::vector<int>& ranks) {
  for (int r : ranks)
    if (c.rank(r).speed != c.rank(ranks[0]).speed || c.rank(r).memory_gb != c.rank(ranks[0]).memory_gb) return false;
  return true;
}

double detail::runs_work(int blocks, int devices, int64_t micro_batch) {
  const double k = double(std::min<int64_t>(devices, micro_batch));
  return 0.5 * double(blocks) * double(blocks + 1) * double(devices) * k * k;
}

detail::RunsResult detail::runs_search(const Workload& w, const Cluster& c, const std::vector<int>& order,
                                       int64_t micro_batches, bool respect_memory, double upper_bound,
                                       Clock::time_point deadline, int64_t& steps_left) {
  DP_CHECK(!order.empty() && order.size() < 65536 && identical_devices(c, order), "identical devices to run on");
  RunsResult r;
  r.result.method = "exact (identical devices)";
  RunSearch search(w, c, order, micro_batches, respect_memory, upper_bound, deadline, steps_left);
  r.finished = search.run(r.result.plan);
  if (r.finished && !r.result.plan.stages.empty()) {
    r.result.prediction = evaluate(w, c, r.result.plan);
    r.result.feasible = r.result.prediction.fits || !respect_memory;
  }
  return r;
}

}  // namespace dp::pipeline
