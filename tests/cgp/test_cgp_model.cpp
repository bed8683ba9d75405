// lib/cgp's performance model against hand-computed cases: one group is plain data parallelism (no
// exchange, nothing stale), two equal groups have staleness 1, equal shares against I-DAT's, the server's
// contention once it is saturated, the level-span allreduce against the same links as a matrix, and the
// errors of bad input.
#define BOOST_TEST_MODULE cgp_model
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "lib/cgp/cgp.h"
#include "lib/core/error.h"
#include "lib/core/rng.h"

using namespace dp;
using namespace dp::cgp;
namespace tt = boost::test_tools;

namespace {

const Link kNode{100, 1}, kRack{10, 10}, kCross{1, 50};

// Ranks with `speeds`, `per_node` to a node and `nodes_per_rack` nodes to a rack.
std::vector<ClusterRank> ranks(const std::vector<double>& speeds, int per_node, int nodes_per_rack) {
  std::vector<ClusterRank> out;
  for (size_t r = 0; r < speeds.size(); ++r) {
    const int node = int(r) / per_node;
    out.push_back({speeds[r], 0, "", node, node / nodes_per_rack});
  }
  return out;
}

Cluster levels(const std::vector<double>& speeds, int per_node, int nodes_per_rack) {
  return Cluster(ranks(speeds, per_node, nodes_per_rack), kNode, kRack, kCross);
}

Workload workload(double param_bytes, int64_t batch, double sample_seconds, bool balanced = true) {
  Workload w;
  w.param_bytes = param_bytes;
  w.global_batch = batch;
  w.sample_seconds = sample_seconds;
  w.balanced = balanced;
  return w;
}

// Ring allreduce of `bytes` over k ranks on link l; a push and a pull of `bytes` on l.
double ring(int k, double bytes, const Link& l) { return 2.0 * (k - 1) / k * bytes * 8 / (l.gbps * 1e9) + 2.0 * (k - 1) * l.latency_us * 1e-6; }
double push_pull(double bytes, const Link& l) { return 2 * l.seconds(bytes); }

}  // namespace

BOOST_AUTO_TEST_CASE(one_group_is_data_parallelism) {
  const Cluster c = levels({1, 1, 2, 4}, 4, 1);
  const Workload w = workload(4e6, 128, 0.01);
  const Prediction p = predict(c, w, {0, 0, 0, 0});
  BOOST_TEST_REQUIRE(p.groups.size() == 1u);
  const GroupPrediction& g = p.groups[0];
  BOOST_TEST(g.members == (std::vector<int>{0, 1, 2, 3}), tt::per_element());
  BOOST_TEST(g.batch == 128);
  BOOST_TEST(g.speed_sum == 8.0);
  BOOST_TEST(g.compute_s == 128 * 0.01 / 8, tt::tolerance(1e-12));
  BOOST_TEST(g.allreduce_s == ring(4, 4e6, kNode), tt::tolerance(1e-12));
  BOOST_TEST(g.exchange_s == 0.0);
  BOOST_TEST(g.staleness == 0.0);
  BOOST_TEST(p.max_staleness == 0.0);
  BOOST_TEST(p.server_load == 0.0);
  BOOST_TEST(p.samples_per_s == 128 / (g.compute_s + g.allreduce_s), tt::tolerance(1e-12));
  // Every local step is a full step: exchange_every changes nothing.
  Workload w4 = w;
  w4.exchange_every = 4;
  BOOST_TEST(predict(c, w4, {0, 0, 0, 0}).samples_per_s == p.samples_per_s, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(two_equal_groups_have_staleness_one) {
  // One node: both groups exchange over the node link (group 0's slowest member is rank 1, not the server).
  const Cluster c = levels({1, 1, 1, 1}, 4, 1);
  const Workload w = workload(4e6, 128, 0.01);
  const Prediction p = predict(c, w, {0, 0, 1, 1});
  BOOST_TEST_REQUIRE(p.groups.size() == 2u);
  for (const GroupPrediction& g : p.groups) {
    BOOST_TEST(g.batch == 64);
    BOOST_TEST(g.compute_s == 64 * 0.01 / 2, tt::tolerance(1e-12));
    BOOST_TEST(g.allreduce_s == ring(2, 4e6, kNode), tt::tolerance(1e-12));
    BOOST_TEST(g.exchange_s == push_pull(2e6, kNode), tt::tolerance(1e-12));
    BOOST_TEST(g.cycle_s == g.step_s + g.exchange_s, tt::tolerance(1e-12));
    BOOST_TEST(g.staleness == 1.0, tt::tolerance(1e-12));
  }
  BOOST_TEST(p.max_staleness == 1.0, tt::tolerance(1e-12));
  BOOST_TEST(p.samples_per_s == 2 * 64 / p.groups[0].cycle_s, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(groups_on_two_nodes_exchange_over_their_links) {
  // Ranks 0, 1 on node 0 (the server's), 2, 3 on node 1 of the same rack; four local steps per exchange.
  const Cluster c = levels({1, 1, 1, 1}, 2, 2);
  Workload w = workload(4e6, 128, 0.01);
  w.exchange_every = 4;
  const Prediction p = predict(c, w, {1, 1, 0, 0});  // labels renumbered: ranks 0, 1 are group 0
  BOOST_TEST_REQUIRE(p.groups.size() == 2u);
  const GroupPrediction &a = p.groups[0], &b = p.groups[1];
  BOOST_TEST(a.members == (std::vector<int>{0, 1}), tt::per_element());
  const double step = 64 * 0.01 / 2 + ring(2, 4e6, kNode);
  BOOST_TEST(a.step_s == step, tt::tolerance(1e-12));
  BOOST_TEST(b.step_s == step, tt::tolerance(1e-12));
  BOOST_TEST(a.exchange_s == push_pull(2e6, kNode), tt::tolerance(1e-12));  // rank 1 to the server, in its node
  BOOST_TEST(b.exchange_s == push_pull(2e6, kRack), tt::tolerance(1e-12));  // across nodes of the rack
  const double ca = 4 * step + a.exchange_s, cb = 4 * step + b.exchange_s;
  BOOST_TEST(a.cycle_s == ca, tt::tolerance(1e-12));
  BOOST_TEST(a.staleness == ca / cb, tt::tolerance(1e-12));
  BOOST_TEST(b.staleness == cb / ca, tt::tolerance(1e-12));
  BOOST_TEST(p.max_staleness == cb / ca, tt::tolerance(1e-12));
  BOOST_TEST(p.samples_per_s == 4 * 64 / ca + 4 * 64 / cb, tt::tolerance(1e-12));
  BOOST_TEST(p.server_load == a.exchange_s / ca + b.exchange_s / cb, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(equal_shares_wait_for_the_slowest_member) {
  const Cluster c = levels({1, 3}, 2, 1);
  const Prediction balanced = predict(c, workload(0, 128, 0.01, true), {0, 0});
  const Prediction equal = predict(c, workload(0, 128, 0.01, false), {0, 0});
  BOOST_TEST(balanced.groups[0].compute_s == 128 * 0.01 / 4, tt::tolerance(1e-12));
  BOOST_TEST(equal.groups[0].compute_s == 64 * 0.01 / 1, tt::tolerance(1e-12));
  // An odd batch: the largest equal share is ceil(7 / 2) = 4 samples.
  BOOST_TEST(predict(c, workload(0, 7, 0.01, false), {0, 0}).groups[0].compute_s == 4 * 0.01, tt::tolerance(1e-12));
  // A group's batch: round(global_batch k / N), at least 1: 128 / 3 -> 43 and 85; 2 / 3 -> 1 and 1.
  const Cluster three = levels({1, 1, 1}, 3, 1);
  const Prediction p = predict(three, workload(0, 128, 0.01), {0, 1, 1});
  BOOST_TEST(p.groups[0].batch == 43);
  BOOST_TEST(p.groups[1].batch == 85);
  const Prediction tiny = predict(three, workload(0, 2, 0.01), {0, 1, 2});
  for (const GroupPrediction& g : tiny.groups) BOOST_TEST(g.batch == 1);
}

BOOST_AUTO_TEST_CASE(a_saturated_server_stretches_the_exchanges) {
  // Four single-rank groups, each rank on its own rack: the server's group exchanges nothing, the three
  // others each exchange x = 2 (1e6 bytes over the cross link) against a = 1 ms of computing. Offered
  // load 3x / (a + x) > 1, so the server is saturated: it serves one exchange after another, every
  // other group's cycle is 3x, and each exchange takes 3x - a.
  const Cluster c = levels({1, 1, 1, 1}, 1, 1);
  const Workload w = workload(1e6, 4, 0.001);
  const Prediction p = predict(c, w, {0, 1, 2, 3});
  const double a = 0.001, x = push_pull(1e6, kCross);
  BOOST_TEST(p.server_load == 3 * x / (a + x), tt::tolerance(1e-12));
  BOOST_TEST_REQUIRE(p.server_load > 1);
  BOOST_TEST(p.groups[0].exchange_s == 0.0);
  BOOST_TEST(p.groups[0].cycle_s == a, tt::tolerance(1e-12));
  for (int g = 1; g < 4; ++g) {
    BOOST_TEST(p.groups[size_t(g)].exchange_s == 3 * x - a, tt::tolerance(1e-9));
    BOOST_TEST(p.groups[size_t(g)].cycle_s == 3 * x, tt::tolerance(1e-9));
    BOOST_TEST(p.groups[size_t(g)].staleness == 3 * x / a + 2, tt::tolerance(1e-9));
  }
  BOOST_TEST(p.samples_per_s == 1 / a + 3 / (3 * x), tt::tolerance(1e-9));
  // Below saturation nothing is stretched: one ten-thousandth of the update.
  const Prediction light = predict(c, workload(100, 4, 0.001), {0, 1, 2, 3});
  BOOST_TEST(light.server_load < 1);
  BOOST_TEST(light.groups[1].exchange_s == push_pull(100, kCross), tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(level_spans_give_the_matrix_answer) {
  // The same links as levels and as a matrix (every pair's link copied): every grouping predicts the same.
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Rng rng(seed);
    const int n = 6 + int(rng.below(7));
    std::vector<double> speeds;
    for (int r = 0; r < n; ++r) speeds.push_back(0.3 + 3.7 * rng.uniform());
    const Cluster lv = levels(speeds, 2 + int(rng.below(2)), 2);
    std::vector<Link> matrix(size_t(n * n), Link{1e3, 0});
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b) matrix[size_t(a * n + b)] = lv.link(a, b);
    const Cluster mx(lv.ranks(), matrix);
    BOOST_TEST_REQUIRE(mx.has_matrix());
    Workload w = workload(1e7 * (1 + rng.uniform()), 256, 0.002, seed % 2 == 0);
    w.server_rank = int(rng.below(uint64_t(n)));
    w.exchange_every = 1 + int(rng.below(3));
    for (int trial = 0; trial < 20; ++trial) {
      const int groups = 1 + int(rng.below(4));
      Grouping g(static_cast<size_t>(n));
      for (int& label : g) label = int(rng.below(uint64_t(groups)));
      const Prediction a = predict(lv, w, g), b = predict(mx, w, g);
      BOOST_TEST_REQUIRE(a.groups.size() == b.groups.size());
      BOOST_TEST(a.samples_per_s == b.samples_per_s, tt::tolerance(1e-12));
      BOOST_TEST(a.max_staleness == b.max_staleness, tt::tolerance(1e-12));
      for (size_t i = 0; i < a.groups.size(); ++i) {
        BOOST_TEST(a.groups[i].allreduce_s == b.groups[i].allreduce_s, tt::tolerance(1e-12));
        BOOST_TEST(a.groups[i].exchange_s == b.groups[i].exchange_s, tt::tolerance(1e-12));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(allreduce_uses_the_slowest_link_the_group_spans) {
  // Two racks of two nodes of two ranks: a group inside a node, across nodes of a rack, across racks.
  const Cluster c = levels(std::vector<double>(8, 1.0), 2, 2);
  const Workload w = workload(8e6, 64, 0.01);
  const Prediction p = predict(c, w, {0, 0, 1, 2, 1, 2, 2, 3});
  BOOST_TEST(p.groups[0].allreduce_s == ring(2, 8e6, kNode), tt::tolerance(1e-12));   // {0,1}
  BOOST_TEST(p.groups[1].allreduce_s == ring(2, 8e6, kCross), tt::tolerance(1e-12));  // {2,4}: racks 0 and 1
  BOOST_TEST(p.groups[2].allreduce_s == ring(3, 8e6, kCross), tt::tolerance(1e-12));  // {3,5,6}
  BOOST_TEST(p.groups[3].allreduce_s == 0.0);                                         // {7}
  const Prediction q = predict(c, w, {0, 0, 0, 1, 1, 1, 1, 1});
  BOOST_TEST(q.groups[0].allreduce_s == ring(3, 8e6, kRack), tt::tolerance(1e-12));   // {0,1,2}: 2 nodes, 1 rack
  // Exchange of {0,1,2}: rank 1 over the node link, rank 2 over the rack link: the rack link's shard decides.
  BOOST_TEST(q.groups[0].exchange_s == push_pull(8e6 / 3, kRack), tt::tolerance(1e-12));
  BOOST_TEST(q.groups[1].exchange_s == push_pull(8e6 / 5, kCross), tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(normalized_and_text) {
  BOOST_TEST(normalized({2, 2, 0, 1}) == (Grouping{0, 0, 1, 2}), tt::per_element());
  BOOST_TEST(normalized({5, 3, 5, 3, 9}) == (Grouping{0, 1, 0, 1, 2}), tt::per_element());
  BOOST_TEST(grouping_text({0, 0, 0, 1, 1, 2}) == "{0,1,2} {3,4} {5}");
  BOOST_TEST(grouping_text({1, 0, 1, 2}) == "{0,2} {1} {3}");
}

BOOST_AUTO_TEST_CASE(bad_input_is_refused) {
  const Cluster c = levels({1, 1, 1, 1}, 2, 1);
  const Workload w = workload(1e6, 64, 0.01);
  BOOST_CHECK_THROW(predict(c, w, {0, 0, 1}), JobError);        // size
  BOOST_CHECK_THROW(predict(c, w, {0, 0, 1, -1}), JobError);    // negative group
  for (double bad : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    try {
      predict(c.with_speeds({1, bad, 1, 1}), w, {0, 0, 1, 1});
      BOOST_FAIL("speed " << bad << " accepted");
    } catch (const JobError& e) {
      BOOST_TEST(e.where() == "cluster.speeds[1]");
    }
  }
  Workload no_time = w;
  no_time.sample_seconds = 0;
  BOOST_CHECK_THROW(predict(c, no_time, {0, 0, 0, 0}), JobError);
  Workload far_server = w;
  far_server.server_rank = 4;
  BOOST_CHECK_THROW(predict(c, far_server, {0, 0, 0, 0}), JobError);
}
