// The link probe (lib/comm/link_probe.h) on the thread transport: under emulated per-pair links of two
// levels (two nodes of two ranks) it recovers each pair's bandwidth and latency within a wide margin, the
// same result on every rank; without emulation it still measures every pair; and the cluster file it
// writes holds the two ranks x ranks arrays.
#define BOOST_TEST_MODULE link_probe
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <mutex>
#include <regex>
#include <string>

#include "lib/comm/emulated_links.h"
#include "lib/comm/link_probe.h"
#include "lib/comm/thread_communicator.h"
#include "tests/comm/timing_attempts.h"

namespace {

// 2 MiB: 1.7 ms at 10 Gbit/s, 16.8 ms at 1 Gbit/s.
dp::LinkProbeConfig quick() {
  dp::LinkProbeConfig c;
  c.bandwidth_bytes = size_t(2) << 20;
  c.bandwidth_repetitions = 3;
  c.latency_repetitions = 10;
  c.warmup = 1;
  return c;
}

// Every rank's result of probe_links on n thread ranks, each over `links` (none when links.ranks is 0).
std::vector<dp::LinkProbeResult> probe(int n, const dp::LinkMatrix& links) {
  std::vector<dp::LinkProbeResult> out(static_cast<size_t>(n));
  dp::run_thread_ranks(n, [&](dp::Communicator& raw) {
    const auto paced = links.ranks > 0 ? dp::emulate_links(raw, links) : nullptr;
    out[size_t(raw.rank())] = dp::probe_links(paced ? *paced : raw, quick());
  });
  return out;
}

bool same_node(int a, int b) { return a / 2 == b / 2; }

// Each pair's bandwidth within 40 % and latency within -10 % / +50 % + 500 us of what its emulated link
// says, and every in-node link at least 6x faster than every cross-node one. What missed, as text.
std::vector<std::string> misses_of_levels(const dp::LinkProbeResult& r, const dp::LinkModel& inside,
                                          const dp::LinkModel& between) {
  std::vector<std::string> missed;
  double slowest_inside = 1e9, fastest_between = 0;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) {
      if (a == b) continue;
      const dp::LinkModel& want = same_node(a, b) ? inside : between;
      const double gbps = r.gbps_at(a, b), us = r.latency_at(a, b);
      const std::string pair = std::to_string(a) + " -> " + std::to_string(b) + ": ";
      if (gbps < 0.6 * want.gbps || gbps > 1.4 * want.gbps)
        missed.push_back(pair + std::to_string(gbps) + " Gbit/s, emulated " + std::to_string(want.gbps));
      // Sleeps overshoot (timer slack): later, never earlier, by up to a few hundred microseconds.
      if (us < 0.9 * want.latency_us || us > 1.5 * want.latency_us + 500)
        missed.push_back(pair + std::to_string(us) + " us, emulated " + std::to_string(want.latency_us));
      if (same_node(a, b)) slowest_inside = std::min(slowest_inside, gbps);
      else fastest_between = std::max(fastest_between, gbps);
    }
  if (slowest_inside / fastest_between < 6.0)
    missed.push_back("in-node / cross-node bandwidth " + std::to_string(slowest_inside / fastest_between));
  return missed;
}

}  // namespace

// The probe times sleeps and copies: on a busy machine (the suite runs two tests at once on two cores)
// one probe can read a link slower or, with its latency inflated, faster than it is. Up to three probes;
// one must recover every level.
BOOST_AUTO_TEST_CASE(recovers_the_levels_of_emulated_links) {
  const dp::LinkModel inside{10.0, 200.0}, between{1.0, 1500.0};
  dp::LinkMatrix m{4, std::vector<dp::LinkModel>(16)};
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (a != b) m.links[size_t(a * 4 + b)] = same_node(a, b) ? inside : between;
  const auto missed = dp::testing::misses_of_best_attempt(3, [&] {
    const auto all = probe(4, m);
    const dp::LinkProbeResult& r = all[0];
    BOOST_REQUIRE(r.ranks == 4);
    for (const auto& other : all) {  // one result, everywhere: no timing in that
      BOOST_TEST(other.gbps == r.gbps);
      BOOST_TEST(other.latency_us == r.latency_us);
    }
    for (int a = 0; a < 4; ++a) {
      BOOST_TEST(r.gbps_at(a, a) == 0.0);
      BOOST_TEST(r.latency_at(a, a) == 0.0);
      for (int b = 0; b < 4; ++b)
        BOOST_TEST_MESSAGE(a << " -> " << b << ": " << r.gbps_at(a, b) << " Gbit/s, " << r.latency_at(a, b) << " us");
    }
    return misses_of_levels(r, inside, between);
  });
  BOOST_TEST(missed.empty(), "no probe recovered every level:" << dp::testing::joined(missed));
}

BOOST_AUTO_TEST_CASE(measures_every_pair_without_emulation) {
  for (int n : {1, 2, 3}) {
    const auto all = probe(n, {});
    const dp::LinkProbeResult& r = all[0];
    BOOST_TEST(r.ranks == n);
    BOOST_TEST(r.gbps.size() == size_t(n * n));
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) {
        if (a == b) continue;
        BOOST_TEST(r.gbps_at(a, b) > 0.0);
        BOOST_TEST(r.latency_at(a, b) > 0.0);
        BOOST_TEST(r.latency_at(a, b) == r.latency_at(b, a));
      }
  }
}

BOOST_AUTO_TEST_CASE(the_cluster_file_holds_both_matrices_row_major) {
  dp::LinkProbeResult r;
  r.ranks = 2;
  r.gbps = {0, 9.5, 1.25, 0};
  r.latency_us = {0, 12.5, 12.5, 0};
  const std::string text = dp::link_cluster_file(r, {"measured here"});
  BOOST_TEST_MESSAGE(text);
  BOOST_TEST(text.rfind("# measured here\n[cluster.links]\n", 0) == 0);
  // The diagonal: each rank's fastest link (a job ignores it), so every bandwidth is positive.
  BOOST_TEST(text.find("gbps = [\n  9.50000, 9.50000,\n  1.25000, 1.25000\n]\n") != std::string::npos);
  BOOST_TEST(text.find("latency_us = [\n  0.00000, 12.5000,\n  12.5000, 0.00000\n]\n") != std::string::npos);
  const std::string json = dp::link_json_lines(r);
  BOOST_TEST(json == "{\"measure\": \"link\", \"from\": 0, \"to\": 1, \"gbps\": 9.5, \"latency_us\": 12.5}\n"
                     "{\"measure\": \"link\", \"from\": 1, \"to\": 0, \"gbps\": 1.25, \"latency_us\": 12.5}\n");
  const std::string table = dp::link_matrices_text(r);
  BOOST_TEST(std::regex_search(table, std::regex(R"(\n +0 +- +9\.5\n +1 +1\.25 +-\n)")));
}

// Ranks on several hosts, each host's ranks consecutive: the file says the nodes too; otherwise it cannot.
BOOST_AUTO_TEST_CASE(the_cluster_file_names_the_nodes_it_can) {
  dp::LinkProbeResult r;
  r.ranks = 3;
  r.gbps = {0, 5, 1, 5, 0, 1, 1, 1, 0};
  r.latency_us = std::vector<double>(9, 10.0);
  const std::string nodes = dp::link_cluster_file(r, {"x"}, {"a", "a", "b"});
  BOOST_TEST(nodes.find("# nodes, in rank order: a, b\n[cluster]\nnode_sizes = [2, 1]\n[cluster.links]\n") !=
             std::string::npos);
  for (const std::vector<std::string>& hosts : std::vector<std::vector<std::string>>{
           {}, {"a", "a", "a"}, {"a", "b", "a"}})
    BOOST_TEST(dp::link_cluster_file(r, {"x"}, hosts).find("[cluster]\n") == std::string::npos);
}
