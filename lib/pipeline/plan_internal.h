// Pieces of the pipeline cost model shared by evaluate() and the planners: one stage on its devices,
// one link between two stages, and a block table with prefix sums so a stage's sums cost O(1).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "lib/pipeline/plan.h"

namespace dp::pipeline::detail {

// Prefix sums over the blocks: sum(v, a, b) is the sum of blocks [a, b].
struct Prefix {
  std::vector<double> forward, backward, saved, params;
  std::vector<double> forward_fixed, backward_fixed, update;
  explicit Prefix(const Workload& w);
  static double sum(const std::vector<double>& v, int a, int b) { return v[size_t(b) + 1] - v[size_t(a)]; }
};

// One stage on `ranks` with `recompute`, holding `in_flight` micro-batches of `micro_batch` samples.
struct StageCost {
  std::vector<int64_t> shares;
  double forward_s = 0, backward_s = 0, recompute_s = 0, allreduce_s = 0, update_s = 0;
  std::vector<double> device_forward_s, device_backward_s, device_update_s;  // each replica's own
  std::vector<double> peak_bytes, memory_bytes;
  bool fits = true;
  double over_bytes = 0;  // the most any device is over its memory (0 when it fits)
};

// What recomputing block `b` costs a device holding `share` samples of each micro-batch (at speed 1).
inline double recompute_seconds(const BlockCost& b, int64_t share) {
  return double(share) * b.forward_s + b.forward_fixed_s;
}

// Samples of one micro-batch on each rank, in proportion to speed (every rank at least 1).
std::vector<int64_t> micro_batch_shares(const Cluster& c, const std::vector<int>& ranks, int64_t micro_batch);

// A stage's cost on `c`, its micro-batch's rows divided by the speeds of `divided_by` (else of `c`).
StageCost stage_cost(const Workload& w, const Prefix& p, const Cluster& c, int first, int last,
                     const std::vector<int>& ranks, int64_t in_flight, int64_t micro_batch,
                     const std::vector<int>& recompute,
                     const Cluster* divided_by = nullptr);

// What a device of a stage of blocks [first, last] holds, by term: parameters, gradients and optimizer
// state; per sample of a micro-batch in flight (kept activations and the output sent on); per sample once
// (working memory, a recomputed block's rebuilt buffer, the gradients exchanged and passed between blocks).
struct DeviceBytes {
  double state = 0, per_sample_in_flight = 0, per_sample_once = 0;
};
DeviceBytes device_bytes(const Workload& w, const Prefix& p, int first, int last, const std::vector<int>& recompute,
                         size_t replicas = 1);
// The peak bytes of a device holding `share` samples of each micro-batch, one of `replicas` of its stage
// (see plan.h for the terms).
double device_peak_bytes(const Workload& w, const Prefix& p, int first, int last, int64_t in_flight, int64_t share,
                         const std::vector<int>& recompute, size_t replicas = 1);

// choose_recompute() with the prefix sums and shares at hand; adds to `work` (when given) about how many
// elementary steps it took (for the exact programs' budgets).
bool cheapest_recompute(const Workload& w, const Prefix& p, const Cluster& c, int first, int last,
                        const std::vector<int>& ranks, const std::vector<int64_t>& shares, int64_t in_flight,
                        std::vector<int>& recompute, long* work = nullptr);

// Calls fn(i, j, samples) for every device i of the sending stage and j of the receiving one whose shares
// of a micro-batch overlap, the samples laid out in rank order on both sides.
template <class Fn>
void for_each_overlap(const std::vector<int64_t>& from_shares, const std::vector<int64_t>& to_shares, Fn fn) {
  size_t i = 0, j = 0;
  int64_t left_i = from_shares[0], left_j = to_shares[0];
  while (i < from_shares.size() && j < to_shares.size()) {
    const int64_t x = std::min(left_i, left_j);
    fn(i, j, x);
    left_i -= x, left_j -= x;
    if (left_i == 0 && ++i < from_shares.size()) left_i = from_shares[i];
    if (left_j == 0 && ++j < to_shares.size()) left_j = to_shares[j];
  }
}

// Seconds to move the boundary tensor after block `boundary` from the stage on `from` to the stage on
// `to` (forward; backward is the same with the links reversed). Samples are laid out in rank order on
// both sides; each device sends or receives its overlaps one after another, the devices in parallel.
struct LinkCost {
  double forward_s = 0, backward_s = 0;
};
LinkCost link_cost(const Workload& w, const Cluster& c, int boundary, const std::vector<int>& from,
                   const std::vector<int64_t>& from_shares, const std::vector<int>& to,
                   const std::vector<int64_t>& to_shares);

// Ring allreduce of `bytes` over `ranks` in their order (0 for one rank).
double ring_allreduce_seconds(const Cluster& c, const std::vector<int>& ranks, double bytes);

// The mini-batch time from per-stage and per-link costs (plan.h's formula).
struct Totals {
  double minibatch_s = 0, bottleneck_s = 0, tail_s = 0;
};
Totals combine(const std::vector<StageCost>& stages, const std::vector<LinkCost>& links, int64_t micro_batches);

using Clock = std::chrono::steady_clock;
// `seconds` from now (at most a million).
inline Clock::time_point deadline_in(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(seconds, 1e6)));
}

// The result of an exact program: finished false when its deadline came first (then nothing is returned).
struct ExactResult {
  PlanResult result;
  bool finished = false;
};

// The planners, with memory limits respected or (for explaining an infeasible request) ignored.
// The subset search (exact.cpp) at M micro-batches: the least-time plan of those not slower than
// `upper_bound` (none: no stages).
// `steps_left`: the budget of its steps (transitions times the entries they extend), which it spends; it
// ends unfinished when they run out.
ExactResult subset_search(const Workload& w, const Cluster& c, int64_t micro_batches, bool respect_memory,
                          double upper_bound, Clock::time_point deadline, int64_t& steps_left);
// The subset search bounded by a short heuristic run, without a deadline (its plan when nothing beats it).
PlanResult exact_search(const Workload& w, const Cluster& c, int64_t micro_batches, bool respect_memory);
// The heuristic starts from `seeds` (plans at the same micro-batch count) besides its own starts, and
// returns nothing slower than the best of them (they are all priced, whatever the deadline); its local
// search tries o.search_candidates placements, or fewer when the deadline comes first.
PlanResult heuristic_search(const Workload& w, const Cluster& c, int64_t micro_batches, const PlanOptions& o,
                            bool respect_memory, const std::vector<Plan>& seeds, Clock::time_point deadline);
// a fits and b does not, or both alike and a is faster.
inline bool better(const PlanResult& a, const PlanResult& b) {
  if (a.feasible != b.feasible) return a.feasible;
  return a.prediction.minibatch_s < b.prediction.minibatch_s;
}
// Masks of interchangeable ranks for the exact subset search (exact.cpp): maximal runs of consecutive
// ranks of one speed, memory, node and rack, on a cluster by levels; runs of one rank left out.
std::vector<uint32_t> device_classes(const Cluster& c);
// The exact subset search's transitions before pruning.
double exact_work(const Cluster& c, int blocks);

// The exact planner for identical devices (homogeneous.cpp): stages on consecutive runs of `order`
// (ranks of identical speed and memory), the last stage on the first run; the least-time plan at M
// micro-batches of those not slower than `upper_bound` (none: no stages). finished false: the deadline
// or the budget of steps (as subset_search's) came first (nothing is returned then).
using RunsResult = ExactResult;
RunsResult runs_search(const Workload& w, const Cluster& c, const std::vector<int>& order, int64_t micro_batches,
                       bool respect_memory, double upper_bound, Clock::time_point deadline,
                       int64_t& steps_left);
bool identical_devices(const Cluster& c, const std::vector<int>& ranks);
// runs_search's transitions before pruning, for `devices` devices and micro-batches of `micro_batch`.
double runs_work(int blocks, int devices, int64_t micro_batch);

// The heuristic's placements: the devices of each stage, ranks ascending.
using StageDevices = std::vector<std::vector<int>>;
// Devices in a locality order: by rack and node, fastest first within a node; with a link matrix, a
// greedy chain along the fastest links from rank 0.
std::vector<int> locality_order(const Cluster& c);
// 1, 2, ..., 16, then growing by a quarter, up to `limit` (included).
std::vector<int> stage_counts(int limit);
// Changes `sets` to a random neighbour: a device moved to an adjacent stage, two devices of two stages
// swapped, an unused device added or one left out, a stage split in two or two adjacent ones merged.
// False when the drawn move does not apply (nothing changed).
bool neighbour(StageDevices& sets, std::vector<int>& unused, std::mt19937_64& rng);

// The baselines (baselines.cpp). A stage's compute per micro-batch, for cutting blocks: factor x the
// blocks' per-sample seconds + fixed_factor x their fixed seconds (each its slowest replica's).
struct CutRate {
  double factor = 0, fixed_factor = 0;
};
CutRate cut_rate(const Cluster& c, const std::vector<int>& ranks, int64_t micro_batch);
double cut_seconds(const Prefix& p, const CutRate& r, int a, int b);
// Blocks [0, n) cut into rates.size() stages with the least slowest compute: each stage as far as the
// least such cap allows (leaving a block for each later stage), the last the rest; the last block of each
// (empty: more stages than blocks).
std::vector<int> balanced_cut(const Prefix& p, const std::vector<CutRate>& rates, int n);
// Each stage's cheapest fitting recomputation (when respecting memory), then the plan's time
// (infinity: a stage cannot fit, or has more devices than a micro-batch has samples).
double finish_and_time(const Workload& w, const Prefix& p, const Cluster& c, Plan& plan, bool respect_memory);
// Ranks by speed, fastest first, ties in rank order (so the k fastest of the k' fastest are the k fastest).
std::vector<int> fastest_order(const Cluster& c);
// The baselines at M micro-batches, without recomputation chosen (no stages: not possible there).
Plan naive_at(const Workload& w, const Cluster& c, int64_t M);
Plan data_parallel_at(const Workload& w, const Cluster& c, int64_t M);
Plan best_stage_count_plan(const Workload& w, const Prefix& p, const Cluster& c, int64_t M, int stages);
// The fastest PipeDream-style plan at M that fits and is not slower than best_t (which it lowers; no
// stages: none), over every prefix length j and replica count r when `exhaustive` or min(devices,
// micro-batch) x blocks^2 <= 6e6, else 8 replica counts by every prefix length (16 of them past 181
// blocks; baselines.cpp); a candidate is dropped as soon as its stages' compute alone exceeds best_t or
// a stage's parameter state alone exceeds its device's memory.
Plan best_pipedream_plan(const Workload& w, const Prefix& p, const Cluster& c, int64_t M, double& best_t,
                         bool exhaustive);
// plan_pipeline's guaranteed seeds at M: the naive plan, data parallelism, and the fastest of the
// stage-count plans (every count while min(blocks, devices) x blocks^2 <= 6e6, else 80 of them) and the
// PipeDream-style plans.
std::vector<Plan> baseline_seeds(const Workload& w, const Prefix& p, const Cluster& c, int64_t M);

// The cluster of `ranks` (ascending) alone; its rank i is ranks[i]. By levels when c is (so that the
// exact search sees its interchangeable devices), else its links as a matrix.
Cluster sub_cluster(const Cluster& c, const std::vector<int>& ranks);
// The ranks of a plan on sub_cluster(c, ranks) as ranks of c (ascending stays ascending).
Plan lift(Plan plan, const std::vector<int>& ranks);

// Ranks of a bit mask, ascending.
std::vector<int> mask_ranks(uint32_t mask);

// The exact programs' Pareto sets (exact.cpp, homogeneous.cpp): an entry (a suffix of stages) is kept
// unless another of the same state is no worse in its sum of times, its slowest resource and how far its
// allreduce sticks out. E has sum, max, stick_out; `ids` index `entries`, which only grows.
template <class E>
bool dominates(const E& a, const E& b) {
  const double eps = 1e-12;
  return a.sum <= b.sum * (1 + eps) && a.max <= b.max * (1 + eps) && a.stick_out <= b.stick_out + eps * b.sum;
}
template <class E>
void pareto_insert(std::vector<int>& ids, std::vector<E>& entries, const E& e) {
  for (int id : ids)
    if (dominates(entries[size_t(id)], e)) return;
  std::erase_if(ids, [&](int id) { return dominates(e, entries[size_t(id)]); });
  ids.push_back(int(entries.size()));
  entries.push_back(e);
}

}  // namespace dp::pipeline::detail
