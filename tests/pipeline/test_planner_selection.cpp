// The planner's selection (lib/pipeline/select.cpp) and its program for identical devices
// (homogeneous.cpp): the program equals the brute force on identical devices with equal links (memory
// limits, fixed times and sharded state included); plan_pipeline is never slower than the naive plan,
// data parallelism, the exact plan on the k fastest devices (k <= 8), nor its own plan on fewer devices
// (random instances of one kind, two kinds and all different; the published PipeDream profiles at 8-64
// devices); the AlexNet case of issue 27 (16 devices at least as fast as 8); without recomputation
// allowed, stages that fit as they are; and the smallest pipeline that fits.
#define BOOST_TEST_MODULE pipeline_planner_selection
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>

#include "lib/pipeline/plan.h"
#include "lib/pipeline/plan_internal.h"
#include "lib/pipeline/profile.h"
#include "tests/pipeline/brute_force.h"
#include "tests/pipeline/instances.h"

using namespace dp;
using namespace dp::pipeline;
namespace tt = boost::test_tools;

namespace {

Cluster equal_devices(int d, double speed, double memory_gb, Link l) {
  std::vector<ClusterRank> ranks(static_cast<size_t>(d));
  for (auto& r : ranks) r.speed = speed, r.memory_gb = memory_gb;
  return Cluster(ranks, l, l, l);
}

// The first d ranks of c (its ranks 0..d-1).
Cluster first_ranks(const Cluster& c, int d) {
  std::vector<ClusterRank> ranks(c.ranks().begin(), c.ranks().begin() + d);
  std::vector<Link> matrix(size_t(d) * size_t(d), Link{1, 0});
  for (int a = 0; a < d; ++a)
    for (int b = 0; b < d; ++b)
      if (a != b) matrix[size_t(a * d + b)] = c.link(a, b);
  return Cluster(ranks, matrix);
}

double best_runs(const Workload& w, const Cluster& c) {
  std::vector<int> order(static_cast<size_t>(c.size()));
  for (int r = 0; r < c.size(); ++r) order[size_t(r)] = r;
  double best = std::numeric_limits<double>::infinity();
  for (int64_t M : w.micro_batch_counts) {
    int64_t steps = std::numeric_limits<int64_t>::max();
    const auto r = detail::runs_search(w, c, order, M, true, best, detail::deadline_in(1e6), steps);
    BOOST_TEST_REQUIRE(r.finished);
    if (r.result.feasible) best = std::min(best, r.result.prediction.minibatch_s);
  }
  return best;
}

// A shorter heuristic search than the default, and no deadline: its work bounds alone, so that two calls
// plan alike on any machine, however slow or loaded (the tests compare separate calls).
PlanOptions quick() {
  PlanOptions o;
  o.search_candidates = 300;
  o.seconds = 1e5;
  return o;
}

double t_of(const PlanResult& r) { return r.feasible ? r.prediction.minibatch_s : std::numeric_limits<double>::infinity(); }

// plan_pipeline on c is no slower than the baselines and than itself on the first d' ranks.
void check_never_worse(const Workload& w, const Cluster& c, const std::vector<int>& fewer) {
  const PlanResult r = plan_pipeline(w, c, quick());
  BOOST_TEST_REQUIRE(r.feasible);
  BOOST_TEST(evaluate(w, c, r.plan).minibatch_s == r.prediction.minibatch_s, tt::tolerance(1e-12));
  const double t = r.prediction.minibatch_s * (1 - 1e-9);
  BOOST_TEST(t <= t_of(naive_plan(w, c)));
  BOOST_TEST(t <= t_of(data_parallel_plan(w, c)));
  for (int d : fewer) BOOST_TEST(t <= t_of(plan_pipeline(w, first_ranks(c, d), quick())));
}

}  // namespace

BOOST_AUTO_TEST_CASE(identical_devices_program_equals_brute_force) {
  std::mt19937_64 rng(27);
  int checked = 0, replicated = 0, recomputed = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 1 + int(rng() % 9), d = 1 + int(rng() % 5);
    Workload w = testing::random_workload(n, rng);
    if (trial % 2) testing::add_fixed_times(w, rng), w.sharded_per_param_byte = 1;
    const Cluster shape = testing::random_cluster(d, w, rng, 0.6 + 1.5 * double(rng() % 100) / 100);
    const Cluster c = equal_devices(d, 1.3, shape.rank(0).memory_gb, Link{1 + double(rng() % 50), double(rng() % 30)});
    BOOST_TEST_INFO("trial " << trial << ": " << n << " blocks, " << d << " devices");
    const double brute = testing::brute_force(w, c), runs = best_runs(w, c);
    if (std::isinf(brute)) {
      BOOST_TEST(std::isinf(runs));
      continue;
    }
    BOOST_TEST(runs == brute, tt::tolerance(1e-9));
    PlanOptions o;
    const PlanResult r = plan_pipeline(w, c, o);
    BOOST_TEST(r.prediction.minibatch_s == brute, tt::tolerance(1e-9));
    ++checked;
    for (const Stage& s : r.plan.stages) replicated += s.ranks.size() > 1, recomputed += !s.recompute.empty();
  }
  BOOST_TEST_MESSAGE(checked << " checked, " << replicated << " replicated stages, " << recomputed << " recompute");
  BOOST_TEST(checked >= 30);
  BOOST_TEST(replicated >= 5);
  BOOST_TEST(recomputed >= 3);
}

BOOST_AUTO_TEST_CASE(never_worse_than_the_baselines_nor_than_fewer_devices_on_random_instances) {
  std::mt19937_64 rng(8);
  for (int trial = 0; trial < 6; ++trial) {
    const int n = 6 + int(rng() % 10);
    Workload w = testing::random_workload(n, rng, 64, {1, 2, 4, 8, 16});
    const int d = trial < 3 ? 16 : 12;
    Cluster mixed = testing::random_cluster(d, w, rng, 3.0);
    std::vector<ClusterRank> ranks = mixed.ranks();
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (trial % 3 == 0) ranks[r].speed = 1, ranks[r].memory_gb = ranks[0].memory_gb;            // one kind
      if (trial % 3 == 1) ranks[r].speed = r % 2 ? 2 : 1, ranks[r].memory_gb = ranks[r % 2].memory_gb;  // two
    }
    const Link l{10, 5};
    const Cluster c = trial % 3 == 2 ? Cluster(ranks, std::vector<Link>(size_t(d * d), l)) : Cluster(ranks, l, l, l);
    BOOST_TEST_INFO("trial " << trial << ": " << n << " blocks, " << d << " devices");
    check_never_worse(w, c, {4, 8});
  }
}

BOOST_AUTO_TEST_CASE(published_profiles_at_8_to_64_devices_and_the_alexnet_case) {
  for (const char* name : {"alexnet", "resnet18", "gnmt"}) {
    const LayerProfile p =
        read_pipedream_graph(std::string(DPTRAIN_SOURCE_DIR) + "/../shared/profiles/pipedream/" + name + "_graph.txt");
    Workload w = workload_from_profile(p, 64);
    w.global_batch = 64;
    w.micro_batch_counts = {1, 2, 4, 8, 16, 32, 64};
    double previous = std::numeric_limits<double>::infinity();
    for (int d : {8, 16, 32, 64}) {
      const Cluster c = equal_devices(d, 1, 0, Link{8, 0});
      const PlanResult r = plan_pipeline(w, c, quick());
      BOOST_TEST_INFO(name << " on " << d << " devices");
      BOOST_TEST_REQUIRE(r.feasible);
      BOOST_TEST(r.prediction.minibatch_s <= previous * (1 + 1e-9));  // more devices: never slower
      BOOST_TEST(r.prediction.minibatch_s <= t_of(naive_plan(w, c)) * (1 + 1e-9));
      BOOST_TEST(r.prediction.minibatch_s <= t_of(data_parallel_plan(w, c)) * (1 + 1e-9));
      previous = r.prediction.minibatch_s;
      // Issue 27: 1,796 samples/s on 8 devices (5 used), and 16 devices not below it.
      if (std::string(name) == "alexnet" && d == 8) BOOST_TEST(r.prediction.samples_per_s == 1795.8, tt::tolerance(1e-4));
    }
  }
}

// recompute = "none" (Workload::may_recompute false): the planner chooses stages that fit as they are, never
// a partition that fits only recomputing (which the run would then be stripped of: issue 27's 9-layer GPT).
BOOST_AUTO_TEST_CASE(without_recomputation_the_plan_fits_as_it_is) {
  std::mt19937_64 rng(27);
  int recomputing = 0, fitting_without = 0;
  for (int trial = 0; trial < 40; ++trial) {
    Workload w = testing::random_workload(6 + int(rng() % 8), rng, 16, {1, 2, 4, 8, 16});
    const Cluster c = testing::random_cluster(4, w, rng, 0.7);
    const PlanResult with = plan_pipeline(w, c, quick());
    bool recomputes = false;
    for (const Stage& s : with.plan.stages) recomputes |= !s.recompute.empty();
    if (!with.feasible || !recomputes) continue;
    ++recomputing;
    w.may_recompute = false;
    const PlanResult without = plan_pipeline(w, c, quick());
    if (!without.feasible) continue;
    ++fitting_without;
    for (const Stage& s : without.plan.stages) BOOST_TEST(s.recompute.empty());
    BOOST_TEST(evaluate(w, c, without.plan).fits);
    BOOST_TEST(without.prediction.minibatch_s >= with.prediction.minibatch_s * (1 - 1e-9));
  }
  BOOST_TEST(recomputing >= 5);
  BOOST_TEST(fitting_without >= 3);
}

// smallest_pipeline: on d devices of one kind a plan fits, on d - 1 none does (the planner finds none), and
// its plan is the planner's on d devices; a model whose blocks fit no device at all gets none.
BOOST_AUTO_TEST_CASE(the_smallest_pipeline_is_the_fewest_devices_a_plan_fits) {
  std::mt19937_64 rng(29);
  int several = 0;  // trials needing more than one device
  for (int trial = 0; trial < 8; ++trial) {
    const Workload w = testing::random_workload(8 + int(rng() % 16), rng, 32, {1, 2, 4, 8, 16, 32});
    double state = 0, saved = 0;
    for (const BlockCost& b : w.blocks) state += w.state_per_param_byte * b.param_bytes, saved += b.saved_bytes;
    const double gb = (state / double(2 + rng() % 5) + saved) / 1e9;  // a half to a sixth of the state
    auto devices = [&](int d) { return equal_devices(d, 1, gb, Link{10, 5}); };
    const SmallestPipeline s = smallest_pipeline(w, devices, 64, quick());
    BOOST_TEST_CONTEXT("trial " << trial << ": " << w.blocks.size() << " blocks, " << gb * 1e3 << " MB") {
      BOOST_TEST_REQUIRE(s.devices >= 1);
      several += s.devices >= 2;
      BOOST_TEST(s.result.feasible);
      const PlanResult there = plan_pipeline(w, devices(s.devices), quick());
      BOOST_TEST(s.result.prediction.minibatch_s == there.prediction.minibatch_s);
      if (s.devices >= 2) BOOST_TEST(!plan_pipeline(w, devices(s.devices - 1), quick()).feasible);
    }
  }
  BOOST_TEST(several >= 5);
  const Workload w = testing::random_workload(6, rng, 32, {1, 2, 4});
  BOOST_TEST(smallest_pipeline(w, [&](int d) { return equal_devices(d, 1, 1e-9, Link{10, 5}); }, 16).devices == 0);
}
