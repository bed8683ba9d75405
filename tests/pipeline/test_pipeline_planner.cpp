// The pipeline planner (lib/pipeline/plan.h): the cost model on cases worked by hand, its reduction to
// PipeDream's objective, the exact planner against a brute force over every partition, placement,
// replication, recomputation and micro-batch count on random instances, the heuristic never below the
// exact optimum, and the baselines, user stages and infeasible requests.
#define BOOST_TEST_MODULE pipeline_planner
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "lib/core/error.h"
#include "lib/pipeline/plan.h"
#include "lib/pipeline/plan_internal.h"
#include "tests/pipeline/brute_force.h"
#include "tests/pipeline/instances.h"

using namespace dp;
using namespace dp::pipeline;
namespace tt = boost::test_tools;

namespace {

Cluster uniform_cluster(int devices, double gbps, double latency_us = 0, double memory_gb = 0) {
  std::vector<ClusterRank> ranks(static_cast<size_t>(devices));
  for (auto& r : ranks) r.memory_gb = memory_gb;
  const Link l{gbps, latency_us};
  return Cluster(ranks, l, l, l);
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_stages_worked_by_hand) {
  // Two blocks of 1 ms forward + 2 ms backward per sample; micro-batches of 2 samples; 8 bytes per
  // sample cross the boundary over 1 Gbit/s with 10 us latency: 2 x 8 x 8 / 1e9 + 1e-5 = 10.128 us a way.
  Workload w;
  w.blocks = {{"a", 1e-3, 2e-3, 8, 0, 0, 0}, {"b", 1e-3, 2e-3, 8, 0, 0, 0}};
  w.global_batch = 8;
  w.micro_batch_counts = {4};
  const Cluster c = uniform_cluster(2, 1, 10);
  Plan plan{{{0, 0, {0}, {}}, {1, 1, {1}, {}}}, 4};
  const Prediction pr = evaluate(w, c, plan);
  const double stage = 2 * 3e-3, link = 2 * (2 * 8 * 8 / 1e9 + 1e-5);
  BOOST_TEST(pr.stages[0].link_s == link, tt::tolerance(1e-12));
  BOOST_TEST(pr.bottleneck_s == stage, tt::tolerance(1e-12));
  // Fill and drain (both stages and the link once) plus 3 more micro-batches through a stage.
  BOOST_TEST(pr.minibatch_s == 2 * stage + link + 3 * stage, tt::tolerance(1e-12));
  BOOST_TEST(pr.stages[0].in_flight == 2);
  BOOST_TEST(pr.stages[1].in_flight == 1);
  BOOST_TEST(pr.bubble_fraction == 1 - 4 * stage / pr.minibatch_s, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(a_replicated_stage_splits_micro_batches_and_pays_its_allreduce_after_the_drain) {
  // Stage 0 on ranks 0,1 (speeds 1 and 3: shares 1 and 3 of 4), stage 1 on rank 2.
  Workload w;
  w.blocks = {{"a", 1e-3, 1e-3, 0, 0, 0, 4e9}, {"b", 1e-3, 1e-3, 0, 0, 0, 0}};
  w.global_batch = 8;
  w.micro_batch_counts = {2};
  std::vector<ClusterRank> ranks(3);
  ranks[1].speed = 3;
  const Link l{10, 0};
  const Cluster c(ranks, l, l, l);
  const Prediction pr = evaluate(w, c, Plan{{{0, 0, {0, 1}, {}}, {1, 1, {2}, {}}}, 2});
  BOOST_TEST(pr.stages[0].shares == (std::vector<int64_t>{1, 3}), tt::per_element());
  BOOST_TEST(pr.stages[0].forward_s == 1e-3, tt::tolerance(1e-12));  // 1 sample at speed 1 = 3 at speed 3
  // Ring allreduce of 4 GB over 2 ranks at 10 Gbit/s: 2 * 1/2 * 32e9 / 10e9 = 3.2 s, started when
  // stage 0's last backward ends: nothing of the pipeline is left to hide it.
  BOOST_TEST(pr.stages[0].allreduce_s == 3.2, tt::tolerance(1e-12));
  BOOST_TEST(pr.allreduce_tail_s == 3.2, tt::tolerance(1e-12));
  // The last stage replicated instead: its allreduce overlaps stage 0's last backward (2 ms + link 0).
  w.blocks[0].param_bytes = 0, w.blocks[1].param_bytes = 4e9;
  const Prediction last = evaluate(w, c, Plan{{{0, 0, {2}, {}}, {1, 1, {0, 1}, {}}}, 2});
  BOOST_TEST(last.allreduce_tail_s == 3.2 - last.stages[0].backward_s - last.stages[0].link_backward_s,
             tt::tolerance(1e-9));
}

// A micro-batch pays each block's fixed time once per device that runs it, whatever its share: more,
// smaller micro-batches pay it more often. The optimizer's update ends the mini-batch (a sharded one
// takes each replica its share of it).
BOOST_AUTO_TEST_CASE(fixed_times_are_paid_per_micro_batch_and_device) {
  Workload w;
  w.blocks = {{"a", 1e-3, 2e-3, 0, 0, 0, 0}};
  w.blocks[0].forward_fixed_s = 0.5e-3, w.blocks[0].backward_fixed_s = 0.25e-3, w.blocks[0].update_s = 2e-3;
  w.global_batch = 8;
  w.micro_batch_counts = {4};
  const Prediction one = evaluate(w, uniform_cluster(1, 10), Plan{{{0, 0, {0}, {}}}, 4});
  BOOST_TEST(one.minibatch_s == 4 * (2 * 3e-3 + 0.75e-3) + 2e-3, tt::tolerance(1e-12));
  w.sharded_per_param_byte = 2;
  const Prediction halves = evaluate(w, uniform_cluster(2, 1e9), Plan{{{0, 0, {0, 1}, {}}}, 4});
  BOOST_TEST(halves.stages[0].update_s == 1e-3, tt::tolerance(1e-12));
  w.sharded_per_param_byte = 0;
  // Replicas of speeds 1 and 3 take 1 and 3 of 4 samples; the slower pays its fixed time 3x as long.
  std::vector<ClusterRank> ranks(2);
  ranks[1].speed = 3;
  const Link l{10, 0};
  w.micro_batch_counts = {2};
  const Prediction two = evaluate(w, Cluster(ranks, l, l, l), Plan{{{0, 0, {0, 1}, {}}}, 2});
  BOOST_TEST(two.stages[0].forward_s == std::max(1e-3 + 0.5e-3, (3e-3 + 0.5e-3) / 3), tt::tolerance(1e-12));
  BOOST_TEST(two.stages[0].backward_s == 2e-3 + 0.25e-3, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(recomputation_keeps_only_inputs_and_costs_a_forward) {
  Workload w;
  w.blocks = {{"a", 1e-3, 2e-3, 100, 1000, 0, 0}, {"b", 1e-3, 2e-3, 100, 1000, 0, 0}, {"c", 1e-3, 2e-3, 100, 1000, 0, 0}};
  w.input_bytes = 10;
  w.global_batch = 4;
  w.micro_batch_counts = {2};
  const detail::Prefix p(w);
  // Blocks 0-1 as the first of two stages: 2 micro-batches in flight of 2 samples; kept 2 x 2000 per
  // sample and the 100 output bytes it sends on, no working memory, the gradient of its output (100;
  // the first stage needs none of its input) and of the one between its blocks (100) once.
  BOOST_TEST(detail::device_peak_bytes(w, p, 0, 1, 2, 2, {}) == 2 * (2 * 2100 + 200.0));
  // Block 1 recomputed keeps its input (block 0's output, 100) and rebuilds the other 900 for its backward.
  BOOST_TEST(detail::device_peak_bytes(w, p, 0, 1, 2, 2, {1}) == 2 * (2 * 1200 + 900 + 200.0));
  // Room for block 0 recomputed (it keeps the data's 10 bytes and rebuilds 990: 2 x 3410) but not block 1
  // (2 x 3500).
  const Cluster c = uniform_cluster(2, 10, 0, 2 * 3450e-9);
  std::vector<int> rec;
  BOOST_TEST(choose_recompute(w, c, 0, 1, {0}, 2, 2, rec));
  BOOST_TEST(rec == (std::vector<int>{0}), tt::per_element());
  const Prediction pr = evaluate(w, c, Plan{{{0, 1, {0}, rec}, {2, 2, {1}, {}}}, 2});
  BOOST_TEST(pr.stages[0].recompute_s == 2e-3, tt::tolerance(1e-12));
  BOOST_TEST(pr.stages[0].backward_s == 2 * 4e-3 + 2e-3, tt::tolerance(1e-12));
  BOOST_TEST(pr.fits);
  BOOST_TEST(!evaluate(w, c, Plan{{{0, 1, {0}, {}}, {2, 2, {1}, {}}}, 2}).fits);
}

BOOST_AUTO_TEST_CASE(with_equal_devices_and_one_bandwidth_the_period_is_pipedreams) {
  // PipeDream's straight pipeline (its optimizer's recurrence): A(j, m) = min over i, m' of
  // max(A(i, m - m'), 2 C_i, T(i+1..j)), C_i = activation bytes / bandwidth, T = the stage's compute;
  // as M grows the model's T / M tends to it.
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 2 + int(rng() % 9), d = 1 + int(rng() % 4);
    const int64_t M = 1'000'000;
    Workload w = testing::random_workload(n, rng, M, {M});
    const double gbps = 5;
    const Cluster c = uniform_cluster(d, gbps);
    const PlanResult r = plan_exact(w, c, M);
    BOOST_TEST_REQUIRE(r.feasible);
    // PipeDream's dynamic program, over per-sample times (micro-batches of one sample).
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<std::vector<double>> A(size_t(n), std::vector<double>(size_t(d) + 1, inf));
    auto compute = [&](int i, int j) {
      double t = 0;
      for (int b = i; b <= j; ++b) t += w.blocks[size_t(b)].forward_s + w.blocks[size_t(b)].backward_s;
      return t;
    };
    for (int j = 0; j < n; ++j) {
      for (int m = 1; m <= d; ++m) {
        A[size_t(j)][size_t(m)] = compute(0, j);
        for (int i = 0; i < j; ++i)
          for (int mp = 1; mp < m; ++mp) {
            const double comm = 2 * w.blocks[size_t(i)].output_bytes * 8 / (gbps * 1e9);
            A[size_t(j)][size_t(m)] = std::min(
                A[size_t(j)][size_t(m)], std::max({A[size_t(i)][size_t(m - mp)], comm, compute(i + 1, j)}));
          }
      }
    }
    BOOST_TEST(r.prediction.minibatch_s / double(M) == A[size_t(n) - 1][size_t(d)], tt::tolerance(1e-4));
  }
}

BOOST_AUTO_TEST_CASE(exact_planner_equals_brute_force_on_random_instances) {
  std::mt19937_64 rng(2026);
  int with_recompute = 0, replicated = 0, infeasible = 0, checked = 0;
  for (int trial = 0; trial < 90; ++trial) {
    const int n = 1 + int(rng() % 12), d = 1 + int(rng() % 5);
    Workload w = testing::random_workload(n, rng);
    if (trial >= 60) {  // the last 30 with fixed times per micro-batch, which more micro-batches pay more
      testing::add_fixed_times(w, rng);  // often, and optimizer state sharded over a stage's replicas
      w.sharded_per_param_byte = 1;
    }
    const Cluster c = testing::random_cluster(d, w, rng, 0.5 + 1.8 * double(rng() % 100) / 100);
    PlanOptions o;
    o.force_exact = true;
    const PlanResult r = plan_pipeline(w, c, o);
    const double brute = testing::brute_force(w, c);
    BOOST_TEST_INFO("trial " << trial << ": " << n << " blocks, " << d << " devices");
    if (std::isinf(brute)) {
      BOOST_TEST(!r.feasible);
      ++infeasible;
      continue;
    }
    BOOST_TEST_REQUIRE(r.feasible);
    BOOST_TEST(r.prediction.minibatch_s == brute, tt::tolerance(1e-9));
    ++checked;
    for (const Stage& s : r.plan.stages) {
      with_recompute += !s.recompute.empty();
      replicated += s.ranks.size() > 1;
    }
  }
  // The instances exercise what they are meant to.
  BOOST_TEST_MESSAGE(checked << " instances checked (" << with_recompute << " stages recompute, " << replicated
                                << " are replicated), " << infeasible << " infeasible");
  BOOST_TEST(checked >= 60);
  BOOST_TEST(with_recompute >= 5);
  BOOST_TEST(replicated >= 5);
  BOOST_TEST(infeasible >= 1);
}

BOOST_AUTO_TEST_CASE(heuristic_is_never_below_the_exact_optimum) {
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 30; ++trial) {
    const int n = 2 + int(rng() % 14), d = 2 + int(rng() % 5);
    Workload w = testing::random_workload(n, rng, 16, {1, 2, 4, 8, 16});
    const Cluster c = testing::random_cluster(d, w, rng, 1.5);
    PlanOptions exact, heuristic;
    exact.force_exact = true;
    heuristic.force_heuristic = true;
    heuristic.search_candidates = 300;
    const PlanResult e = plan_pipeline(w, c, exact), h = plan_pipeline(w, c, heuristic);
    if (!e.feasible) continue;
    BOOST_TEST_INFO("trial " << trial << ": " << n << " blocks, " << d << " devices");
    BOOST_TEST_REQUIRE(h.feasible);
    BOOST_TEST(h.prediction.minibatch_s >= e.prediction.minibatch_s * (1 - 1e-9));
    // And what it returns is what its plan evaluates to.
    BOOST_TEST(evaluate(w, c, h.plan).minibatch_s == h.prediction.minibatch_s, tt::tolerance(1e-12));
  }
}

BOOST_AUTO_TEST_CASE(long_stages_recompute_as_cheaply_as_every_subset_allows) {
  // Stages longer than 12 blocks take the covering-knapsack search: compare it with every subset.
  std::mt19937_64 rng(5);
  int needed = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 13 + int(rng() % 4);
    Workload w = testing::random_workload(n, rng, 8, {2});
    const Cluster c = testing::random_cluster(2, w, rng, 0.3 + double(rng() % 100) / 100);
    const detail::Prefix p(w);
    const std::vector<int> ranks{0, 1};
    const auto shares = detail::micro_batch_shares(c, ranks, 4);
    std::vector<int> rec;
    const bool fits = detail::cheapest_recompute(w, p, c, 0, n - 1, ranks, shares, 2, rec);
    double best = std::numeric_limits<double>::infinity();
    for (uint32_t m = 0; m < (1u << n); ++m) {
      std::vector<int> sub;
      double t = 0;
      for (int b = 0; b < n; ++b)
        if (m >> b & 1u) sub.push_back(b), t += w.blocks[size_t(b)].forward_s;
      bool ok = true;
      for (size_t i = 0; i < 2; ++i)
        ok = ok && detail::device_peak_bytes(w, p, 0, n - 1, 2, shares[i], sub) <= c.rank(ranks[i]).memory_gb * 1e9;
      if (ok) best = std::min(best, t);
    }
    BOOST_TEST_INFO("trial " << trial);
    BOOST_TEST(fits == std::isfinite(best));
    if (!fits) continue;
    double t = 0;
    for (int b : rec) t += w.blocks[size_t(b)].forward_s;
    BOOST_TEST(t == best, tt::tolerance(1e-9));
    needed += !rec.empty();
  }
  BOOST_TEST(needed >= 10);
}
