// Tests of [cluster] (the cluster description), [cluster.links] and [parallel.cgp]: reading the keys, a
// cluster file whose keys apply unless the job sets them (errors pointing into that file), the cross-key
// checks (per-rank and per-kind sizes, node sizes adding up, link matrices, fixed groupings), and the
// Cluster built from them (lib/cluster: levels, matrix, kinds, drawn clusters).
#define BOOST_TEST_MODULE job_cluster
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "job/job_testing.h"
#include "lib/cluster/cluster.h"

using namespace job_testing;
namespace fs = std::filesystem;

namespace {

const char* const kSix = "[launch]\nranks = 6\n";

// A temporary folder holding a job file and a cluster file.
struct Files {
  fs::path dir = fs::temp_directory_path() / fs::path("dptrain_job_cluster_" + std::to_string(::getpid()));
  Files() { fs::create_directories(dir); }
  ~Files() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(reading)

BOOST_AUTO_TEST_CASE(levels_nodes_and_speeds) {
  const dp::Job j = dp::parse_job(std::string(kSix) +
                                      "[cluster]\nranks_per_node = 3\nspeeds = [1, 1, 1, 1, 0.5, 0.3]\n"
                                      "[cluster.links]\nnode_gbps = 10\nrack_gbps = 1\ncross_gbps = 1\n",
                                  "t.toml");
  const dp::Cluster c = dp::cluster_from_job(j);
  BOOST_TEST(c.size() == 6);
  BOOST_TEST(c.nodes() == 2);
  BOOST_TEST(c.racks() == 1);
  BOOST_TEST(c.rank(4).speed == 0.5);
  BOOST_TEST(c.rank(2).node == 0);
  BOOST_TEST(c.rank(3).node == 1);
  BOOST_TEST(c.link(0, 2).gbps == 10);
  BOOST_TEST(c.link(2, 3).gbps == 1);
  BOOST_TEST(c.link(2, 3).latency_us == 10);  // the rack level's default latency
  BOOST_TEST((c.level(0, 5) == dp::LinkLevel::rack));
}

BOOST_AUTO_TEST_CASE(kinds_racks_and_matrix) {
  const dp::Job j = dp::parse_job(
      "[launch]\nranks = 3\n[cluster]\nkinds = [\"a\", \"b\"]\nkind_counts = [1, 2]\nkind_speeds = [2, 1]\n"
      "kind_memory_gb = [80, 16]\nnode_sizes = [1, 2]\nnodes_per_rack = 1\n"
      "[cluster.links]\ngbps = [0, 1, 2, 3, 0, 4, 5, 6, 0]\n",
      "t.toml");
  const dp::Cluster c = dp::cluster_from_job(j);
  BOOST_TEST(c.rank(0).kind == "a");
  BOOST_TEST(c.rank(0).speed == 2);
  BOOST_TEST(c.rank(2).memory_gb == 16);
  BOOST_TEST(c.racks() == 2);
  BOOST_TEST(c.has_matrix());
  BOOST_TEST(c.link(1, 2).gbps == 4);
  BOOST_TEST(c.link(2, 0).gbps == 5);
  BOOST_TEST(c.link(1, 2).latency_us == 1);   // no latency matrix: the level's (same node)
  BOOST_TEST(c.link(0, 1).latency_us == 20);  // (across racks)
}

BOOST_AUTO_TEST_CASE(drawn_clusters_follow_the_kinds) {
  const dp::Job j = dp::parse_job(
      "[launch]\nranks = 4\n[cluster]\nkinds = [\"fast\", \"slow\"]\nkind_counts = [1, 3]\nkind_speeds = [4, 1]\n",
      "t.toml");
  const dp::Cluster c = dp::draw_cluster(j, 64, 7);
  BOOST_TEST(c.size() == 64);
  int fast = 0;
  for (const auto& r : c.ranks()) fast += r.kind == "fast";
  BOOST_TEST(fast == 16);
  BOOST_TEST(c.nodes() == 8);   // 8 to a node by default
  BOOST_TEST(c.racks() == 2);   // 4 nodes to a rack
  const dp::Cluster again = dp::draw_cluster(j, 64, 7), other = dp::draw_cluster(j, 64, 8);
  BOOST_TEST(again.speeds() == c.speeds(), boost::test_tools::per_element());
  BOOST_TEST(other.speeds() != c.speeds());
}

BOOST_AUTO_TEST_CASE(cgp_keys) {
  const dp::Job j = dp::parse_job(std::string(kSix) +
                                      "[parallel]\nstrategy = \"cgp\"\n[parallel.cgp]\nsolver = \"pls\"\n"
                                      "groups = [0, 0, 0, 1, 1, 2]\nmax_staleness = 3\n",
                                  "t.toml");
  BOOST_TEST(j.parallel.strategy == "cgp");
  BOOST_TEST(j.parallel.cgp.solver == "pls");
  BOOST_TEST(j.parallel.cgp.groups.size() == 6u);
  BOOST_TEST(j.parallel.cgp.max_staleness == 3);
}

BOOST_AUTO_TEST_CASE(a_cluster_file_supplies_what_the_job_leaves_out) {
  Files f;
  f.write("cluster.toml", "[cluster]\nranks_per_node = 2\nspeeds = [1, 2, 3, 4]\n[cluster.links]\nnode_gbps = 7\n");
  const std::string job = f.write("job.toml", "[launch]\nranks = 4\n[cluster]\nfile = \"cluster.toml\"\n"
                                              "speeds = [1, 1, 1, 1]\n");
  const dp::Job j = dp::load_job(job);
  BOOST_TEST(j.cluster.ranks_per_node == 2);
  BOOST_TEST(j.cluster.links.node_gbps == 7);
  BOOST_TEST(j.cluster.speeds == (std::vector<double>{1, 1, 1, 1}), boost::test_tools::per_element());
  // Its errors point into it.
  f.write("bad.toml", "[cluster]\n\nspeeds = [1, 0, 1, 1]\n");
  const std::string bad = f.write("job2.toml", "[launch]\nranks = 4\n[cluster]\nfile = \"bad.toml\"\n");
  try {
    dp::load_job(bad);
    BOOST_FAIL("no error");
  } catch (const dp::JobError& e) {
    BOOST_TEST(e.where() == (f.dir / "bad.toml").string() + ":3:10");
    BOOST_TEST(e.line().find("cluster.speeds[1]: must be greater than 0") != std::string::npos);
  }
  f.write("train.toml", "[train]\nsteps = 3\n");
  const std::string other = f.write("job3.toml", "[cluster]\nfile = \"train.toml\"\n");
  BOOST_CHECK_EXCEPTION(dp::load_job(other), dp::JobError, [](const dp::JobError& e) {
    return e.line().find("a cluster file holds only [cluster] tables, found 'train'") != std::string::npos;
  });
  const std::string missing = f.write("job4.toml", "[cluster]\nfile = \"nope.toml\"\n");
  BOOST_CHECK_EXCEPTION(dp::load_job(missing), dp::JobError, [](const dp::JobError& e) {
    return e.line().find("cannot read the cluster file") != std::string::npos && e.exit_code() == 2;
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(errors)

BOOST_AUTO_TEST_CASE(speeds) {
  const std::string c = std::string(kSix) + "[cluster]\n";
  expect_error(c + "speeds = [1, 1, 0, 1, 1, 1]\n", {}, "x.toml:4:17", {"cluster.speeds[2]: must be greater than 0"});
  expect_error(c + "speeds = [1, 1, -1, 1, 1, 1]\n", {}, "x.toml:4:17", {"cluster.speeds[2]: must be greater than 0"});
  expect_error(c + "speeds = [1, 1, nan, 1, 1, 1]\n", {}, "x.toml:4:17", {"must be a finite number, got nan"});
  expect_error(c + "speeds = [1, 1]\n", {}, "x.toml:4:10", {"must have one entry per rank (launch.ranks = 6), got 2"});
  expect_error(c + "kinds = [\"a\"]\nkind_counts = [6]\nkind_speeds = [0]\n", {}, "x.toml:6:16",
               {"cluster.kind_speeds[0]: must be greater than 0"});
}

BOOST_AUTO_TEST_CASE(sizes_that_disagree_with_the_ranks) {
  const std::string c = std::string(kSix) + "[cluster]\n";
  expect_error(c + "node_sizes = [3, 2]\n", {}, "x.toml:4:14", {"adds up to 5 ranks, but launch.ranks is 6"});
  expect_error(c + "kinds = [\"a\", \"b\"]\nkind_counts = [3, 4]\nkind_speeds = [1, 2]\n", {}, "x.toml:5:15",
               {"cluster.kind_counts: adds up to 7 ranks"});
  expect_error(c + "kinds = [\"a\", \"b\"]\nkind_counts = [3, 3]\nkind_speeds = [1]\n", {}, "x.toml:6:15",
               {"one entry per kind of cluster.kinds (2), got 1"});
  expect_error(c + "kinds = [\"a\"]\nkind_counts = [6]\n", {}, "x.toml:4:9", {"cluster.kinds: needs cluster.kind_speeds"});
  expect_error(std::string(kSix) + "[cluster.links]\ngbps = [1, 2, 3]\n", {}, "x.toml:4:8",
               {"must have launch.ranks squared (36)"});
}

BOOST_AUTO_TEST_CASE(links_of_bandwidth_zero) {
  expect_error(std::string(kSix) + "[cluster.links]\ncross_gbps = 0\n", {}, "x.toml:4:14",
               {"cluster.links.cross_gbps: must be greater than 0, got 0", "Gbit/s"});
  expect_error("[launch]\nranks = 2\n[cluster.links]\ngbps = [0, 10, 0, 0]\n", {}, "x.toml:4:16",
               {"cluster.links.gbps[2]: (from rank 1 to rank 0) must be greater than 0"});
}

BOOST_AUTO_TEST_CASE(groupings) {
  const std::string c = std::string(kSix) + "[parallel.cgp]\n";
  expect_error(c + "group_count = 7\n", {}, "x.toml:4:15", {"7 groups cannot be formed from launch.ranks (6)"});
  expect_error(c + "groups = [0, 0, 2, 2, 2, 2]\n", {}, "x.toml:4:10", {"no rank is in group 1"});
  expect_error(c + "groups = [0, 0, 1]\n", {}, "x.toml:4:10", {"one entry per rank"});
  expect_error(c + "groups = [0, 0, 1, 1, 1, -1]\n", {}, "x.toml:4:26", {"parallel.cgp.groups[5]: must be at least 0"});
  expect_error(c + "max_staleness = -1\n", {}, "x.toml:4:17", {"must be at least 0"});
  expect_error(c + "exchange_every = 0\n", {}, "x.toml:4:18", {"must be at least 1"});
}

BOOST_AUTO_TEST_SUITE_END()
