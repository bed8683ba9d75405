// lib/cgp's solvers: on random small clusters (level and matrix links, I-DAT and equal shares) aga finds
// the exhaustive optimum within 1%, aga and pls never fall below sorted and no solver beats exhaustive; a
// cluster whose fast ranks sit on two nodes behind a slow link, where contiguous cuts by speed must cross
// it and aga and pls beat sorted; the same seed gives the same answer; pls on 4096 drawn workers; fronts
// are non-dominated; and the errors of bad input.
#define BOOST_TEST_MODULE cgp_solvers
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "lib/cgp/cgp.h"
#include "lib/core/error.h"
#include "lib/core/rng.h"
#include "lib/job/job.h"

using namespace dp;
using namespace dp::cgp;

namespace {

struct Case {
  Cluster cluster;
  Workload workload;
  double bound;
};

// A random cluster of 6-10 ranks: speeds of four device kinds, 2-4 ranks per node, 2 nodes per rack,
// links by level or as a (non-symmetric) matrix; a model of 1-100 MB; I-DAT or equal shares.
Case random_case(uint64_t seed, bool matrix, bool balanced) {
  Rng rng(seed);
  const int n = 6 + int(rng.below(5));
  const int per_node = 2 + int(rng.below(3));
  const double kinds[4] = {0.35, 1.0, 2.06, 3.8};
  std::vector<ClusterRank> ranks;
  for (int r = 0; r < n; ++r) ranks.push_back({kinds[rng.below(4)], 0, "", r / per_node, r / per_node / 2});
  const Link node{100 + 200 * rng.uniform(), 1}, rack{10 + 40 * rng.uniform(), 5}, cross{1 + 9 * rng.uniform(), 20};
  Cluster levels(ranks, node, rack, cross);
  Workload w;
  w.param_bytes = 1e6 * std::pow(100.0, rng.uniform());
  w.global_batch = int64_t(64) << rng.below(3);
  w.sample_seconds = 0.001 + 0.004 * rng.uniform();
  w.balanced = balanced;
  w.exchange_every = 1 + int64_t(rng.below(4));
  w.server_rank = int(rng.below(uint64_t(n)));
  const double bound = double(1 + rng.below(4));
  if (!matrix) return {levels, w, bound};
  std::vector<Link> m(size_t(n * n));
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      const Link l = a == b ? node : levels.link(a, b);
      m[size_t(a * n + b)] = Link{l.gbps * (0.5 + rng.uniform()), l.latency_us * (0.5 + rng.uniform())};
    }
  return {Cluster(ranks, m), w, bound};
}

SolveOptions options(const std::string& solver, double bound, uint64_t seed = 1, int groups = 0) {
  SolveOptions o;
  o.solver = dp::enum_named<dp::CgpSolver>(solver).value();
  o.max_staleness = bound;
  o.seed = seed;
  o.group_count = groups;
  o.time_limit_s = 1.0;
  return o;
}

int group_count(const Grouping& g) { return *std::max_element(g.begin(), g.end()) + 1; }

void check_solution(const Solution& s, const Cluster& c, const Workload& w, double bound) {
  BOOST_TEST_REQUIRE(s.grouping.size() == size_t(c.size()));
  BOOST_TEST(s.grouping == normalized(s.grouping));
  BOOST_TEST(s.prediction.max_staleness <= bound + 1e-9);
  Workload held = w;  // the solution is predicted with the runtime's hold at the bound
  held.hold_staleness = bound;
  const Prediction again = predict(c, held, s.grouping);
  BOOST_TEST(again.samples_per_s == s.prediction.samples_per_s);
  // The front: staleness ascending, throughput ascending, and the answer is its best point within the bound.
  double best_in_bound = 0;
  for (size_t i = 0; i < s.front.size(); ++i) {
    if (i > 0) {
      BOOST_TEST(s.front[i].max_staleness > s.front[i - 1].max_staleness);
      BOOST_TEST(s.front[i].samples_per_s > s.front[i - 1].samples_per_s);
    }
    // The answer: the front's point within the bound predicted fastest with the server's queue, which
    // the search's score leaves out (and which only slows a grouping).
    if (s.front[i].max_staleness <= bound + 1e-9) {
      const Prediction p = predict(c, held, s.front[i].grouping);
      if (p.server_load <= 1) BOOST_TEST(p.samples_per_s <= s.front[i].samples_per_s * (1 + 1e-9));
      if (p.max_staleness <= bound + 1e-9) best_in_bound = std::max(best_in_bound, p.samples_per_s);
    }
  }
  BOOST_TEST(s.prediction.samples_per_s == best_in_bound, boost::test_tools::tolerance(1e-9));
}

}  // namespace

BOOST_AUTO_TEST_CASE(aga_finds_the_optimum_and_nobody_falls_below_sorted) {
  int cases = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed)
    for (bool matrix : {false, true})
      for (bool balanced : {true, false}) {
        const uint64_t id = seed * 4 + matrix * 2 + balanced;
        const Case k = random_case(id, matrix, balanced);
        BOOST_TEST_CONTEXT("case " << id << ": " << k.cluster.size() << " ranks, bound " << k.bound
                                   << (matrix ? ", matrix" : ", levels") << (balanced ? ", I-DAT" : ", equal")) {
          const Solution best = solve(k.cluster, k.workload, options("exhaustive", k.bound));
          const Solution sorted = solve(k.cluster, k.workload, options("sorted", k.bound));
          const Solution aga = solve(k.cluster, k.workload, options("aga", k.bound, id));
          const Solution pls = solve(k.cluster, k.workload, options("pls", k.bound, id));
          for (const Solution* s : {&best, &sorted, &aga, &pls}) check_solution(*s, k.cluster, k.workload, k.bound);
          const double opt = best.prediction.samples_per_s;
          BOOST_TEST(aga.prediction.samples_per_s >= 0.99 * opt);
          BOOST_TEST(aga.seconds <= 1.5);
          for (const Solution* s : {&sorted, &aga, &pls}) {
            BOOST_TEST(s->prediction.samples_per_s <= opt * (1 + 1e-9));  // nothing beats every grouping
            BOOST_TEST(s->prediction.samples_per_s >= sorted.prediction.samples_per_s * (1 - 1e-12));
          }
          ++cases;
        }
      }
  BOOST_TEST(cases == 32);
}

BOOST_AUTO_TEST_CASE(sorted_is_the_best_contiguous_cut) {
  // With an unloaded server (tiny updates) and a bound every grouping meets, the full model's throughput is
  // the sum sorted's dynamic programme maximises: its answer must be the best of all 2^(n-1) ways to cut
  // the ranks sorted by speed (fastest first, ties by rank) into contiguous runs.
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Case k = random_case(seed, seed % 2 == 0, seed % 3 != 0);
    k.workload.param_bytes = 1e4;
    const int n = k.cluster.size();
    std::vector<int> order(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) order[size_t(r)] = r;
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return k.cluster.rank(a).speed > k.cluster.rank(b).speed; });
    double best = 0;
    for (uint32_t cuts = 0; cuts < (1u << (n - 1)); ++cuts) {
      Grouping g(static_cast<size_t>(n));
      int label = 0;
      for (int p = 0; p < n; ++p) {
        g[size_t(order[size_t(p)])] = label;
        if (p < n - 1 && (cuts >> p & 1u)) ++label;
      }
      const Prediction p = predict(k.cluster, k.workload, g);
      BOOST_TEST_REQUIRE(p.server_load <= 1);
      best = std::max(best, p.samples_per_s);
    }
    const Solution s = solve(k.cluster, k.workload, options("sorted", 1e6));
    BOOST_TEST(s.prediction.samples_per_s == best, boost::test_tools::tolerance(1e-9));
  }
}

BOOST_AUTO_TEST_CASE(fast_ranks_behind_a_slow_link_defeat_contiguous_cuts) {
  // Two nodes in two racks joined by 1 Gbit/s; speeds interleave between the nodes, so the ranks sorted
  // by speed alternate 0, 4, 1, 5, ...: every contiguous run of two or more crosses the slow link, while
  // groups of whole nodes reduce over 100 Gbit/s and only push and pull across it.
  std::vector<ClusterRank> ranks;
  const double speeds[8] = {4, 3, 2, 1, 3.9, 2.9, 1.9, 0.9};
  for (int r = 0; r < 8; ++r) ranks.push_back({speeds[r], 0, "", r / 4, r / 4});
  const Cluster c(ranks, Link{100, 1}, Link{10, 10}, Link{1, 20});
  Workload w;
  w.param_bytes = 1e8;
  w.global_batch = 256;
  w.sample_seconds = 0.01;
  w.exchange_every = 4;
  const Solution sorted = solve(c, w, options("sorted", 4));
  const Solution aga = solve(c, w, options("aga", 4));
  const Solution pls = solve(c, w, options("pls", 4));
  const Solution best = solve(c, w, options("exhaustive", 4));
  BOOST_TEST_MESSAGE("sorted " << grouping_text(sorted.grouping) << " " << sorted.prediction.samples_per_s
                               << "; aga " << grouping_text(aga.grouping) << " " << aga.prediction.samples_per_s
                               << "; pls " << grouping_text(pls.grouping) << " " << pls.prediction.samples_per_s);
  BOOST_TEST(aga.prediction.samples_per_s > 1.2 * sorted.prediction.samples_per_s);
  BOOST_TEST(pls.prediction.samples_per_s > 1.2 * sorted.prediction.samples_per_s);
  BOOST_TEST(aga.prediction.samples_per_s >= 0.99 * best.prediction.samples_per_s);
  BOOST_TEST(pls.prediction.samples_per_s >= 0.99 * best.prediction.samples_per_s);
  // The winners keep each group on one node.
  for (const Solution* s : {&aga, &pls})
    for (const GroupPrediction& g : s->prediction.groups)
      for (int m : g.members) BOOST_TEST(c.rank(m).node == c.rank(g.members[0]).node);
}

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_answer) {
  const Case k = random_case(77, false, true);
  for (const char* solver : {"aga", "pls"}) {
    const Solution a = solve(k.cluster, k.workload, options(solver, k.bound, 5));
    const Solution b = solve(k.cluster, k.workload, options(solver, k.bound, 5));
    BOOST_TEST_REQUIRE(!a.time_limited);
    BOOST_TEST(a.grouping == b.grouping);
    BOOST_TEST(a.evaluations == b.evaluations);
    BOOST_TEST(a.front.size() == b.front.size());
  }
}

BOOST_AUTO_TEST_CASE(a_fixed_group_count_is_kept) {
  const Case k = random_case(9, false, false);
  for (const char* solver : {"exhaustive", "sorted", "aga", "pls"}) {
    const Solution s = solve(k.cluster, k.workload, options(solver, 10, 3, 3));
    BOOST_TEST(group_count(s.grouping) == 3);
    for (const FrontPoint& p : s.front) BOOST_TEST(group_count(p.grouping) == 3);
  }
}

BOOST_AUTO_TEST_CASE(pls_on_4096_drawn_workers) {
  Job job;
  job.cluster.kinds = {"t4", "v100", "a100", "h100"};
  job.cluster.kind_counts = {2, 3, 2, 1};
  job.cluster.kind_speeds = {0.35, 1.0, 2.06, 3.8};
  job.cluster.links.node_gbps = 300;
  job.cluster.links.rack_gbps = 50;
  job.cluster.links.cross_gbps = 10;
  const Cluster c = draw_cluster(job, 4096, 1);
  Workload w;
  w.param_bytes = 4 * 25.6e6;  // ResNet-50
  w.global_batch = 4096 * 32;
  w.sample_seconds = 1.0 / 1200;
  w.exchange_every = 2;
  SolveOptions o = options("pls", 4);
  const Solution s = solve(c, w, o);
  BOOST_TEST(s.grouping.size() == 4096u);
  BOOST_TEST(s.prediction.max_staleness <= 4 + 1e-9);
  BOOST_TEST(s.prediction.samples_per_s >= predict(c, w, Grouping(4096, 0)).samples_per_s);
  BOOST_TEST(s.evaluations > 0);
}

BOOST_AUTO_TEST_CASE(bad_input_is_refused) {
  const Case k = random_case(3, false, true);
  const int n = k.cluster.size();
  auto error = [](const Cluster& c, const Workload& w, const SolveOptions& o) -> std::string {
    try {
      solve(c, w, o);
    } catch (const JobError& e) {
      return e.where() + ": " + e.message();
    }
    return "no error";
  };
  auto starts = [](const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; };
  BOOST_TEST(starts(error(k.cluster, k.workload, options("aga", 4, 1, n + 1)), "parallel.cgp.group_count:"));
  // Three groups cannot have staleness below 2.
  const std::string three = error(k.cluster, k.workload, options("aga", 1.5, 1, 3));
  BOOST_TEST(starts(three, "parallel.cgp.max_staleness:"), three);
  BOOST_TEST(three.find("at least 2") != std::string::npos, three);
  // Two groups of three equal ranks have unequal cycles (43 and 85 samples): staleness above 1 unheld;
  // the runtime holds the faster group's updates, so every solver meets a bound of 1 that way.
  const Link node{100, 1}, rack{10, 10}, cross{1, 20};
  const Cluster odd(std::vector<ClusterRank>(3), node, rack, cross);
  Workload w;
  w.param_bytes = 1e6;
  w.sample_seconds = 0.01;
  BOOST_TEST(predict(odd, w, {0, 1, 1}).max_staleness > 1.0);
  for (const char* solver : {"exhaustive", "sorted", "aga", "pls"}) {
    const Solution two = solve(odd, w, options(solver, 1.0, 1, 2));
    BOOST_TEST(two.prediction.max_staleness <= 1.0 + 1e-9, solver);
    double held = 0;
    for (const GroupPrediction& g : two.prediction.groups) held += g.held_s;
    BOOST_TEST(held > 0, solver);
  }
  // Bound 0 admits one group only.
  for (const char* solver : {"exhaustive", "sorted", "aga", "pls"}) {
    const std::string two = error(odd, w, options(solver, 0, 1, 2));
    BOOST_TEST(starts(two, "parallel.cgp.max_staleness:"), two);
  }
  // Exhaustive stops at 12 ranks.
  BOOST_TEST(starts(error(Cluster(std::vector<ClusterRank>(13), node, rack, cross), w, options("exhaustive", 4)),
                    "parallel.cgp.solver:"));
  BOOST_TEST(error(Cluster(std::vector<ClusterRank>(12), node, rack, cross), w, options("exhaustive", 2)) ==
             "no error");
  // Measured speeds come in through with_speeds: a zero is refused by every solver.
  std::vector<double> speeds = k.cluster.speeds();
  speeds[1] = 0;
  for (const char* solver : {"exhaustive", "sorted", "aga", "pls"})
    BOOST_TEST(starts(error(k.cluster.with_speeds(speeds), k.workload, options(solver, 4)), "cluster.speeds[1]:"));
}
