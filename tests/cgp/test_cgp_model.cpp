// lib/cgp's performance model against hand-computed cases: one group is plain data parallelism (no
// exchange, nothing stale), exchanges through the server's interface, equal shares against I-DAT's,
// jitter, the hold at the staleness bound, the server's contention once it is saturated, the level-span
// allreduce against the same links as a matrix, and the errors of bad input.
#define BOOST_TEST_MODULE cgp_model
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "lib/cgp/cgp.h"
#include "lib/cgp/cgp_internal.h"
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

// Ring allreduce of `bytes` over k ranks on link l; the all-gather of the global model's slices after an
// exchange; a push and a pull of `bytes` on l.
double ring(int k, double bytes, const Link& l) { return 2.0 * (k - 1) / k * bytes * 8 / (l.gbps * 1e9) + 2.0 * (k - 1) * l.latency_us * 1e-6; }
double gather(int k, double bytes, const Link& l) { return (k - 1.0) / k * bytes * 8 / (l.gbps * 1e9) + (k - 1) * l.latency_us * 1e-6; }
double push_pull(double bytes, const Link& l) { return 2 * l.seconds(bytes); }
// An exchange of shards of `shard` bytes from members (other than the server) on links `pushes`: the
// server takes them in one after another, then sends the last its slice back; a latency each way.
double exchange(double shard, const std::vector<Link>& pushes) {
  double push = 0, pull = 0, latency = 0;
  for (const Link& l : pushes) {
    push += l.bandwidth_seconds(shard);
    pull = std::max(pull, l.bandwidth_seconds(shard));
    latency = std::max(latency, l.latency_us * 1e-6);
  }
  return push + pull + 2 * latency;
}

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

BOOST_AUTO_TEST_CASE(two_groups_of_one_node_exchange_over_its_link) {
  // One node. Group {0,1} holds the server: only rank 1's shard travels. Group {2,3} pushes two shards
  // through the server's interface, one after the other. Each all-gathers the global model after.
  const Cluster c = levels({1, 1, 1, 1}, 4, 1);
  const Workload w = workload(4e6, 128, 0.01);
  const Prediction p = predict(c, w, {0, 0, 1, 1});
  BOOST_TEST_REQUIRE(p.groups.size() == 2u);
  for (const GroupPrediction& g : p.groups) {
    BOOST_TEST(g.batch == 64);
    BOOST_TEST(g.compute_s == 64 * 0.01 / 2, tt::tolerance(1e-12));
    BOOST_TEST(g.allreduce_s == ring(2, 4e6, kNode), tt::tolerance(1e-12));
    BOOST_TEST(g.gather_s == gather(2, 4e6, kNode), tt::tolerance(1e-12));
    BOOST_TEST(g.held_s == 0.0);
    BOOST_TEST(g.cycle_s == g.step_s + g.exchange_s + g.gather_s, tt::tolerance(1e-12));
  }
  const GroupPrediction &a = p.groups[0], &b = p.groups[1];
  BOOST_TEST(a.exchange_s == push_pull(2e6, kNode), tt::tolerance(1e-12));
  BOOST_TEST(b.exchange_s == exchange(2e6, {kNode, kNode}), tt::tolerance(1e-12));
  BOOST_TEST(a.staleness == a.cycle_s / b.cycle_s, tt::tolerance(1e-12));
  BOOST_TEST(b.staleness == b.cycle_s / a.cycle_s, tt::tolerance(1e-12));
  BOOST_TEST(p.max_staleness == b.cycle_s / a.cycle_s, tt::tolerance(1e-12));
  BOOST_TEST(p.samples_per_s == 64 / a.cycle_s + 64 / b.cycle_s, tt::tolerance(1e-12));
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
  BOOST_TEST(a.exchange_s == push_pull(2e6, kNode), tt::tolerance(1e-12));          // rank 1 to the server, in its node
  BOOST_TEST(b.exchange_s == exchange(2e6, {kRack, kRack}), tt::tolerance(1e-12));  // across nodes of the rack
  const double ca = 4 * step + a.exchange_s + gather(2, 4e6, kNode), cb = 4 * step + b.exchange_s + gather(2, 4e6, kNode);
  BOOST_TEST(a.cycle_s == ca, tt::tolerance(1e-12));
  BOOST_TEST(a.staleness == ca / cb, tt::tolerance(1e-12));
  BOOST_TEST(b.staleness == cb / ca, tt::tolerance(1e-12));
  BOOST_TEST(p.max_staleness == cb / ca, tt::tolerance(1e-12));
  BOOST_TEST(p.samples_per_s == 4 * 64 / ca + 4 * 64 / cb, tt::tolerance(1e-12));
  BOOST_TEST(p.server_load == a.exchange_s / ca + b.exchange_s / cb, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(jitter_makes_a_synchronous_step_wait_for_its_slowest_member) {
  // I-DAT: every member's share takes 16 ms on average; with a coefficient of variation of 0.1 four of
  // them take the expected maximum of four normals (1.0294 standard deviations) longer.
  const Cluster c = levels({1, 1, 1, 1}, 4, 1);
  Workload w = workload(0, 64, 0.001);
  w.compute_cv = 0.1;
  BOOST_TEST(predict(c, w, {0, 0, 0, 0}).groups[0].compute_s == 0.016 * (1 + 0.1 * 1.0294), tt::tolerance(1e-12));
  BOOST_TEST(predict(c, w, {0, 1, 2, 3}).groups[0].compute_s == 0.016, tt::tolerance(1e-12));  // alone: the mean
  // Equal shares: only members within two deviations of the slowest can be the last; rank 3 is too fast.
  const Cluster mixed = levels({1, 1.1, 1.15, 4}, 4, 1);
  w.balanced = false;
  BOOST_TEST(predict(mixed, w, {0, 0, 0, 0}).groups[0].compute_s == 0.016 * (1 + 0.1 * 0.8463), tt::tolerance(1e-12));
  // The tabulated values, and Blom's approximation beyond them, grow with k.
  double last = 0;
  for (int k : {1, 2, 4, 16, 17, 100, 4096, 5000}) {
    BOOST_TEST(detail::expected_max_of_normals(k) >= last);
    last = detail::expected_max_of_normals(k);
  }
  BOOST_TEST(detail::expected_max_of_normals(100) == 2.5076, tt::tolerance(0.01));  // the exact value
}

BOOST_AUTO_TEST_CASE(the_hold_keeps_every_group_within_the_bound) {
  // A fast group of three and a slow single rank 10 times slower: unheld, the slow rank sees about 10
  // updates per cycle. Held at 4, the fast group waits so that it lands only 4 per slow cycle.
  const Cluster c(ranks({1, 1, 1, 0.1}, 4, 1), Link{100, 0}, Link{10, 0}, Link{1, 0});
  Workload w = workload(0, 128, 0.001);  // no bytes, no latencies: only computing
  const Grouping g = {0, 0, 0, 1};
  const Prediction free = predict(c, w, g);
  const double fast = 96 * 0.001 / 3, slow = 32 * 0.001 / 0.1;
  BOOST_TEST(free.groups[0].cycle_s == fast, tt::tolerance(1e-12));
  BOOST_TEST(free.groups[1].staleness == slow / fast, tt::tolerance(1e-12));
  w.hold_staleness = 4;
  const Prediction held = predict(c, w, g);
  BOOST_TEST(held.groups[1].held_s == 0.0, tt::tolerance(1e-9));
  BOOST_TEST(held.groups[1].staleness == 4.0, tt::tolerance(1e-6));
  BOOST_TEST(held.groups[0].cycle_s == slow / 4, tt::tolerance(1e-6));
  BOOST_TEST(held.groups[0].held_s == slow / 4 - fast, tt::tolerance(1e-6));
  BOOST_TEST(held.samples_per_s == 96 * 4 / slow + 32 / slow, tt::tolerance(1e-6));
  BOOST_TEST(held.max_staleness <= 4 + 1e-9);
  // A bound the groups keep anyway holds nobody.
  w.hold_staleness = 20;
  BOOST_TEST(predict(c, w, g).samples_per_s == free.samples_per_s, tt::tolerance(1e-12));
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
  // Exchange of {0,1,2}: rank 1's shard over the node link, then rank 2's over the rack link, whose
  // pull is the longer one; {3..7}: rank 3 in the server's rack, the other four across racks. Each
  // exchange besides waits at the server for at most the other group's.
  const double x0 = exchange(8e6 / 3, {kNode, kRack}), x1 = exchange(8e6 / 5, {kRack, kCross, kCross, kCross, kCross});
  BOOST_TEST_REQUIRE(q.server_load <= 1);
  BOOST_TEST(q.groups[0].exchange_s >= x0 * (1 - 1e-12));
  BOOST_TEST(q.groups[0].exchange_s <= x0 + x1);
  BOOST_TEST(q.groups[1].exchange_s >= x1 * (1 - 1e-12));
  BOOST_TEST(q.groups[1].exchange_s <= x1 + x0);
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

BOOST_AUTO_TEST_CASE(the_server_queue_is_played_out) {
  // Two groups that each exchange while the other computes fall into turns that never collide.
  const std::vector<double> apart = detail::queued_waits({1.0, 1.0}, {0.2, 0.2});
  BOOST_TEST(apart[0] == 0.0, tt::tolerance(1e-12));
  BOOST_TEST(apart[1] == 0.0, tt::tolerance(1e-12));
  // A group of short exchanges beside one of a long exchange, offered load 0.53 in all: the closed form
  // has nobody wait; played out, the short group waits whenever it finds the long exchange under way,
  // and the long one at most for a short exchange.
  const std::vector<double> beside = detail::queued_waits({0.1, 2.0}, {0.05, 0.5});
  BOOST_TEST(beside[0] > 0.0);
  BOOST_TEST(beside[0] < 0.5);
  BOOST_TEST(beside[1] <= 0.05 + 1e-12);
  // Saturated: three equal groups served in turn, each cycle three exchanges long.
  const double a = 0.001, x = 0.002;
  for (double w : detail::queued_waits({a, a, a}, {x, x, x})) BOOST_TEST(w == 3 * x - a - x, tt::tolerance(1e-9));
  // A group without exchange (the server's own) never waits.
  BOOST_TEST(detail::queued_waits({a, a}, {0.0, x})[0] == 0.0);
}
