// Issue 27's planner quality, at 8, 16, 32, 64, 256 and 1024 devices: on the published PipeDream profiles
// and on random instances of one device kind, two kinds and every device different, plan_pipeline is never
// slower than a plan it could have chosen: the exact plan on the 8 fastest devices (exact plans may leave
// devices idle, so it is at least as fast as the exact plan on fewer), the best plan with each stage count,
// data parallelism, the naive plan, the best PipeDream-style plan (every prefix length and replica count),
// nor its own plan on the fastest half of the devices (monotone). The planner runs without its deadline
// (its work is bounded by steps, so its plans are the same on a fast and a slow machine).
#define BOOST_TEST_MODULE pipeline_planner_quality
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <limits>
#include <random>
#include <string>

#include "lib/pipeline/plan.h"
#include "lib/pipeline/plan_internal.h"
#include "lib/pipeline/profile.h"
#include "tests/pipeline/instances.h"

using namespace dp;
using namespace dp::pipeline;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double t_of(const PlanResult& r) { return r.feasible ? r.prediction.minibatch_s : kInf; }

PlanOptions no_deadline() {
  PlanOptions o;
  o.seconds = 1e5;
  o.search_candidates = 300;
  return o;
}

// The k fastest devices of c as a cluster of their own.
Cluster fastest(const Cluster& c, int k) {
  std::vector<int> ranks = detail::fastest_order(c);
  ranks.resize(size_t(std::min(k, c.size())));
  std::sort(ranks.begin(), ranks.end());
  return detail::sub_cluster(c, ranks);
}

// The exact plan over every micro-batch count (infinity: none fits).
double exact_time(const Workload& w, const Cluster& c) {
  double best = kInf;
  for (int64_t M : w.micro_batch_counts) best = std::min(best, t_of(plan_exact(w, c, M)));
  return best;
}

struct Checked {
  int exact_compared = 0;  // instances where the exact plan on the 8 fastest was computed
};

// Every guarantee of the header comment for one instance; `exact_too`: compare with the exact plan on the 8
// fastest (the subset search, affordable for few blocks or few kinds).
void check(const Workload& w, const Cluster& c, bool exact_too, Checked& checked) {
  const PlanResult r = plan_pipeline(w, c, no_deadline());
  BOOST_TEST_REQUIRE(r.feasible);
  const double t = r.prediction.minibatch_s * (1 - 1e-9);
  BOOST_TEST(t <= t_of(naive_plan(w, c)));
  BOOST_TEST(t <= t_of(data_parallel_plan(w, c)));
  BOOST_TEST(t <= t_of(pipedream_plan(w, c)));
  for (int s = 1; s <= std::min(int(w.blocks.size()), c.size()); ++s) {
    BOOST_TEST_INFO("stages " << s);
    BOOST_TEST(t <= t_of(stage_count_plan(w, c, s)));
  }
  if (c.size() > 8) BOOST_TEST(t <= t_of(plan_pipeline(w, fastest(c, c.size() / 2), no_deadline())));
  if (exact_too) {
    BOOST_TEST(t <= exact_time(w, fastest(c, 8)));
    ++checked.exact_compared;
  }
}

// d devices, 8 to a node and 4 nodes to a rack (100, 25 and 10 Gbit/s): "one" kind, "two" kinds (nodes of
// speed 1 and 0.4 with 2x and 1x the memory `gb`) or "random" (every device its own speed and memory).
Cluster devices(int d, const std::string& family, double gb, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<ClusterRank> ranks(static_cast<size_t>(d));
  for (int r = 0; r < d; ++r) {
    ClusterRank& cr = ranks[size_t(r)];
    cr.node = r / 8, cr.rack = r / 32, cr.speed = 1, cr.memory_gb = gb;
    if (family == "two" && (r / 8) % 2) cr.speed = 0.4, cr.memory_gb = gb / 2;
    if (family == "random") cr.speed = 0.3 + 1.2 * u(rng), cr.memory_gb = gb * (0.5 + u(rng));
  }
  return Cluster(ranks, Link{100, 2}, Link{25, 10}, Link{10, 30});
}

// Memory such that an even split of the model over min(blocks, d) stages needs about `tightness` of it.
double memory_for(const Workload& w, int d, double tightness) {
  double state = 0, activations = 0;
  for (const BlockCost& b : w.blocks) state += w.state_per_param_byte * b.param_bytes, activations += b.saved_bytes;
  const int stages = std::min(int(w.blocks.size()), d);
  return (state + double(w.global_batch) * activations) / stages / tightness / 1e9;
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_instances_of_one_two_and_every_kind_at_8_to_1024_devices) {
  Checked checked;
  for (const std::string family : {"one", "two", "random"})
    for (int d : {8, 16, 32, 64, 256, 1024}) {
      std::mt19937_64 rng(uint64_t(d) * 31 + family.size());
      const int n = 10 + int(rng() % 21);  // 10-30 blocks
      const int64_t batch = 2 * int64_t(d);
      Workload w = testing::random_workload(n, rng, batch, {1, 2, 4, 8, 16});
      testing::add_fixed_times(w, rng);
      const Cluster c = devices(d, family, memory_for(w, d, 0.7), rng);
      BOOST_TEST_CONTEXT(family << ": " << n << " blocks on " << d << " devices")
      check(w, c, family != "random" || n <= 14, checked);
    }
  BOOST_TEST(checked.exact_compared >= 12);
}

BOOST_AUTO_TEST_CASE(published_profiles_at_8_to_1024_devices) {
  Checked checked;
  for (const char* name : {"alexnet", "resnet18", "gnmt"}) {
    const LayerProfile p =
        read_pipedream_graph(std::string(DPTRAIN_SOURCE_DIR) + "/../shared/profiles/pipedream/" + name + "_graph.txt");
    for (int d : {8, 16, 32, 64, 256, 1024}) {
      Workload w = workload_from_profile(p, 64);
      w.global_batch = 2 * d;
      w.micro_batch_counts = {1, 2, 4, 8, 16};
      std::mt19937_64 rng{uint64_t(d)};
      BOOST_TEST_CONTEXT(name << " on " << d << " devices")
      check(w, devices(d, "one", 0, rng), true, checked);
    }
  }
  BOOST_TEST(checked.exact_compared == 18);
}
