// Tests of [cluster] (the cluster description), [cluster.links] and [parallel.cgp]: reading the keys, a
// cluster file whose keys apply unless the job sets them (errors pointing into that file; its top level;
// --set cluster.file and --cluster), the cross-key checks (per-rank and per-kind sizes, node sizes adding
// up, ranks_per_node dividing the ranks, nodes_per_rack, memory sizes, link matrices, fixed groupings),
// the warnings of link levels out of order, device names in any case, and the Cluster built from them
// (lib/cluster: levels, matrix, kinds, drawn clusters).
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
    fs::create_directories((dir / name).parent_path());
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

// The current directory changed for one scope (a --set path is relative to it).
struct InFolder {
  fs::path before = fs::current_path();
  explicit InFolder(const fs::path& dir) { fs::current_path(dir); }
  ~InFolder() { fs::current_path(before); }
};

// The JobError that loading `job` (with `overrides`, `cluster_file`) throws; fails the test when none is.
dp::JobError load_error(const std::string& job, const std::vector<std::string>& overrides,
                        const std::string& cluster_file = {}) {
  try {
    dp::load_job(job, overrides, cluster_file);
  } catch (const dp::JobError& e) {
    return e;
  }
  BOOST_FAIL("no JobError for " + job);
  throw;  // unreachable
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

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
  BOOST_TEST(j.parallel.strategy == dp::StrategyKind::cgp);
  BOOST_TEST(j.parallel.cgp.solver == dp::CgpSolver::pls);
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

BOOST_AUTO_TEST_CASE(a_cluster_file_by_set_is_read_like_the_key_in_the_job) {
  Files f;
  f.write("jobs/mine.toml", "[cluster]\nspeeds = [1, 1, 1, 1]\n");
  f.write("jobs/other.toml", "[cluster]\nspeeds = [9, 9, 9, 9]\n");  // the job's neighbour: not this one
  f.write("here/other.toml", "[cluster]\nspeeds = [2, 2, 1, 1]\nranks_per_node = 2\n");
  const std::string job = f.write("jobs/job.toml", "[launch]\nranks = 4\n[cluster]\nfile = \"mine.toml\"\n");
  BOOST_TEST(dp::load_job(job).cluster.speeds == (std::vector<double>{1, 1, 1, 1}), boost::test_tools::per_element());
  const InFolder here(f.dir / "here");
  // Relative to the current directory, as a path on the command line; it replaces the job's file.
  const dp::Job j = dp::load_job(job, {"cluster.file=other.toml"});
  BOOST_TEST(j.cluster.speeds == (std::vector<double>{2, 2, 1, 1}), boost::test_tools::per_element());
  BOOST_TEST(j.cluster.ranks_per_node == 2);
  BOOST_TEST(j.cluster.file == (f.dir / "here/other.toml").string());  // absolute
  // The job's text holds the file's keys and names no file: it reads back in any folder.
  const dp::Job again = dp::parse_job(dp::job_to_toml(j), "/elsewhere/job.toml");
  BOOST_TEST(again.cluster.file.empty());
  BOOST_TEST(again.cluster.speeds == j.cluster.speeds, boost::test_tools::per_element());
  BOOST_TEST(again.cluster.ranks_per_node == 2);
  BOOST_TEST(dp::load_job(job).cluster.file == (f.dir / "jobs/mine.toml").string());
  // The same for the ranks, which parse the job with the same arguments in the same folder.
  const dp::Job rank = dp::parse_job("[launch]\nranks = 4\n", job, {"cluster.file=other.toml"});
  BOOST_TEST(rank.cluster.speeds == j.cluster.speeds, boost::test_tools::per_element());
  // As in the job file, keys the job (or --set) gives stay its own.
  const std::string inline_speeds =
      f.write("jobs/inline.toml", "[launch]\nranks = 4\n[cluster]\nspeeds = [3, 3, 3, 3]\n");
  BOOST_TEST(dp::load_job(inline_speeds, {"cluster.file=other.toml"}).cluster.speeds ==
                 (std::vector<double>{3, 3, 3, 3}),
             boost::test_tools::per_element());
  BOOST_TEST(dp::load_job(job, {"cluster.file=other.toml", "cluster.ranks_per_node=4"}).cluster.ranks_per_node == 4);
  // "": no cluster file.
  const dp::Job none = dp::load_job(job, {"cluster.file=\"\""});
  BOOST_TEST(none.cluster.speeds.empty());
  BOOST_TEST(none.cluster.file.empty());
}

BOOST_AUTO_TEST_CASE(a_cluster_file_by_set_is_checked_like_the_key_in_the_job) {
  Files f;
  const std::string job = f.write("job.toml", "[launch]\nranks = 4\n");
  const InFolder here(f.dir);
  dp::JobError e = load_error(job, {"cluster.file=nope.toml"});
  BOOST_TEST(e.where() == "--set cluster.file=nope.toml");
  BOOST_TEST(has(e.line(), "cannot read the cluster file nope.toml"));
  BOOST_TEST(e.exit_code() == 2);
  // Its errors point into it.
  f.write("bad.toml", "[cluster]\n\nspeeds = [1, 0, 1, 1]\n");
  e = load_error(job, {"cluster.file=bad.toml"});
  BOOST_TEST(e.where() == "bad.toml:3:10");
  BOOST_TEST(has(e.line(), "cluster.speeds[1]: must be greater than 0"));
  f.write("train.toml", "[train]\nsteps = 3\n");
  BOOST_TEST(has(load_error(job, {"cluster.file=train.toml"}).line(), "holds only [cluster] tables"));
  // plan --cluster and --set cluster.file: one of them.
  f.write("six.toml", "[cluster]\nspeeds = [1, 1, 1, 1]\n");
  e = load_error(job, {"cluster.file=six.toml"}, "six.toml");
  BOOST_TEST(e.where() == "--set cluster.file=six.toml");
  BOOST_TEST(has(e.line(), "besides --cluster six.toml"));
  e = load_error(job, {}, "nope.toml");
  BOOST_TEST(e.where() == "--cluster nope.toml");
  BOOST_TEST(dp::load_job(job, {}, "six.toml").cluster.speeds.size() == 4u);
}

BOOST_AUTO_TEST_CASE(the_top_of_a_cluster_file) {
  Files f;
  const std::string job = f.write("job.toml", "[launch]\nranks = 4\n[cluster]\nfile = \"c.toml\"\n");
  const std::string c = (f.dir / "c.toml").string();
  f.write("c.toml", "# a misspelt table\n[clustr]\nspeeds = [1, 1, 1, 1]\n");
  dp::JobError e = load_error(job, {});
  BOOST_TEST(e.where() == c + ":2:1");
  BOOST_TEST(has(e.line(), "unknown table '[clustr]'"));
  BOOST_TEST(has(e.line(), "did you mean '[cluster]'?"));
  BOOST_TEST(e.exit_code() == 2);
  f.write("c.toml", "[cluster]\nranks_per_node = 2\n[clustr.links]\nnode_gbps = 10\n");
  e = load_error(job, {});
  BOOST_TEST(e.where() == c + ":3:1");
  BOOST_TEST(has(e.line(), "did you mean '[cluster]'?"));
  f.write("c.toml", "[network]\nspeed = 1\n");
  BOOST_TEST(has(load_error(job, {}).line(), "unknown table '[network]' (hint: a cluster file holds only [cluster]"));
  f.write("c.toml", "speeds = [1, 1, 1, 1]\n");
  e = load_error(job, {});
  BOOST_TEST(e.where() == c + ":1:1");
  BOOST_TEST(has(e.line(), "unknown key 'speeds' outside any table"));
  BOOST_TEST(has(e.line(), "'speeds' is a key of [cluster]; put it under that header"));
  f.write("c.toml", "[cluster.lnks]\nnode_gbps = 10\n");
  BOOST_TEST(has(load_error(job, {}).line(), "did you mean '[cluster.links]'?"));
}

BOOST_AUTO_TEST_CASE(device_names_in_any_case) {
  BOOST_TEST(dp::parse_job("[train]\ndevice = \"CPU\"\n", "t.toml").train.device == dp::DeviceRequest::cpu);
  BOOST_TEST(dp::parse_job("", "t.toml", {"train.device=Auto"}).train.device == dp::DeviceRequest::automatic);
  expect_error("[launch]\nranks = 2\n[cluster]\nkinds = [\"a100\", \"A100\"]\nkind_counts = [1, 1]\n"
               "kind_speeds = [1, 1]\n",
               {}, "x.toml:4:18", {"cluster.kinds[1]: names 'A100' twice (as 'a100')", "case-insensitive"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(warnings)

BOOST_AUTO_TEST_CASE(links_inside_a_node_slower_than_between_nodes) {
  const std::string two_nodes = "[launch]\nranks = 4\n[cluster]\nranks_per_node = 2\n[cluster.links]\n";
  const dp::Job j = dp::parse_job(two_nodes + "node_gbps = 5\n", "x.toml");
  BOOST_TEST_REQUIRE(j.warnings.size() == 1u);
  BOOST_TEST(j.warnings[0].where == "x.toml:6:13");
  BOOST_TEST(j.warnings[0].line() ==
             "x.toml:6:13: warning: cluster.links.node_gbps: is 5 Gbit/s, slower than cluster.links.rack_gbps "
             "(10 Gbit/s) (hint: links nearer the ranks are usually the faster ones: check node_gbps and rack_gbps "
             "(Gbit/s each way))");
  // Only rack_gbps given (node_gbps at its default, 100): the warning points at it.
  const dp::Job r = dp::parse_job(two_nodes + "rack_gbps = 200\ncross_gbps = 1\n", "x.toml");
  BOOST_TEST_REQUIRE(r.warnings.size() == 1u);
  BOOST_TEST(r.warnings[0].where == "x.toml:6:13");
  BOOST_TEST(has(r.warnings[0].what, "cluster.links.node_gbps: is 100 Gbit/s, slower than cluster.links.rack_gbps"));
  // Across racks faster than inside a rack; by --set.
  const std::string two_racks = "[launch]\nranks = 4\n[cluster]\nranks_per_node = 1\nnodes_per_rack = 2\n";
  const dp::Job c = dp::parse_job(two_racks, "x.toml", {"cluster.links.cross_gbps=40"});
  BOOST_TEST_REQUIRE(c.warnings.size() == 1u);
  BOOST_TEST(c.warnings[0].where == "--set cluster.links.cross_gbps=40");
  BOOST_TEST(has(c.warnings[0].what, "cluster.links.rack_gbps: is 10 Gbit/s, slower than cluster.links.cross_gbps"));
  // Both, in the order of the keys.
  BOOST_TEST(dp::parse_job(two_racks + "[cluster.links]\nnode_gbps = 1\nrack_gbps = 2\ncross_gbps = 3\n", "x.toml")
                 .warnings.size() == 2u);
  // None by default, none in order, none with a matrix (which replaces the levels), none for a level the
  // cluster has no links of (one node: no links between nodes; one rack: none across racks).
  BOOST_TEST(dp::parse_job("", "x.toml").warnings.empty());
  BOOST_TEST(dp::parse_job(two_nodes + "node_gbps = 50\nrack_gbps = 50\n", "x.toml").warnings.empty());
  BOOST_TEST(dp::parse_job(two_nodes + "node_gbps = 1\ngbps = [0, 5, 5, 5, 5, 0, 5, 5, 5, 5, 0, 5, 5, 5, 5, 0]\n",
                           "x.toml")
                 .warnings.empty());
  BOOST_TEST(dp::parse_job("[launch]\nranks = 4\n[cluster.links]\nnode_gbps = 5\n", "x.toml").warnings.empty());
  BOOST_TEST(dp::parse_job(two_nodes + "rack_gbps = 1\n", "x.toml").warnings.empty());
  // A warning is not an error, and not part of the job's text.
  BOOST_TEST(!has(dp::job_to_toml(j), "warning"));
}

BOOST_AUTO_TEST_CASE(in_a_cluster_file_at_its_key) {
  Files f;
  f.write("c.toml", "[cluster]\nranks_per_node = 2\n[cluster.links]\nnode_gbps = 1\nrack_gbps = 10\n");
  const std::string job = f.write("job.toml", "[launch]\nranks = 4\n[cluster]\nfile = \"c.toml\"\n");
  const dp::Job j = dp::load_job(job);
  BOOST_TEST_REQUIRE(j.warnings.size() == 1u);
  BOOST_TEST(j.warnings[0].where == (f.dir / "c.toml").string() + ":4:13");
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
  expect_error(c + "memory_gb = [16, 16, 16]\n", {}, "x.toml:4:13", {"cluster.memory_gb: must have one entry per rank"});
}

BOOST_AUTO_TEST_CASE(nodes_that_do_not_hold_the_ranks) {
  const std::string c = std::string(kSix) + "[cluster]\n";
  expect_error(c + "ranks_per_node = 7\n", {}, "x.toml:4:18",
               {"cluster.ranks_per_node: is 7, more than launch.ranks (6)", "at most 6 to a node"});
  expect_error(c + "ranks_per_node = 4\n", {}, "x.toml:4:18",
               {"cluster.ranks_per_node: is 4, which does not divide launch.ranks (6): the last node would hold 2",
                "node_sizes"});
  expect_error(c + "ranks_per_node = 2\n", {"launch.ranks=5"}, "x.toml:4:18", {"does not divide launch.ranks (5)"});
  expect_error(c + "ranks_per_node = 2\nnode_sizes = [3, 3]\n", {}, "x.toml:5:14",
               {"cluster.node_sizes: and cluster.ranks_per_node both give the nodes"});
  expect_error(c + "ranks_per_node = 3\nnodes_per_rack = 3\n", {}, "x.toml:5:18",
               {"cluster.nodes_per_rack: is 3, more than the 2 node(s) the ranks are on", "at most 2"});
  expect_error(c + "node_sizes = [1, 5]\nnodes_per_rack = 4\n", {}, "x.toml:5:18", {"more than the 2 node(s)"});
  expect_error(c + "nodes_per_rack = 2\n", {}, "x.toml:4:18", {"more than the 1 node(s)"});
  // What fits: whole nodes, and racks of which the last holds fewer nodes.
  BOOST_TEST(dp::parse_job(c + "ranks_per_node = 1\nnodes_per_rack = 4\n", "x.toml").cluster.nodes_per_rack == 4);
  BOOST_TEST(dp::cluster_from_job(dp::parse_job(c + "ranks_per_node = 1\nnodes_per_rack = 4\n", "x.toml")).racks() == 2);
}

BOOST_AUTO_TEST_CASE(memory_of_zero) {
  const std::string c = std::string(kSix) + "[cluster]\n";
  expect_error(c + "memory_gb = [16, 16, 0, 16, 16, 16]\n", {}, "x.toml:4:22",
               {"cluster.memory_gb[2]: must be greater than 0, got 0", "leave the key out when it is unknown"});
  expect_error(c + "memory_gb = [16, 16, 16, 16, 16, -8]\n", {}, "x.toml:4:34", {"greater than 0, got -8"});
  expect_error(c + "kinds = [\"a\"]\nkind_counts = [6]\nkind_speeds = [1]\nkind_memory_gb = [0]\n", {},
               "x.toml:7:19", {"cluster.kind_memory_gb[0]: must be greater than 0"});
  expect_error(c + "memory_gb = 0\n", {}, "x.toml:4:13", {"cluster.memory_gb: expected an array of numbers"});
  expect_error(std::string(kSix), {"cluster.memory_gb=[0, 1, 1, 1, 1, 1]"}, "--set cluster.memory_gb=[0, 1, 1, 1, 1, 1]",
               {"cluster.memory_gb[0]: must be greater than 0"});
}

BOOST_AUTO_TEST_CASE(in_a_cluster_file_at_its_key) {
  Files f;
  f.write("c.toml", "[cluster]\nranks_per_node = 5\n");
  const std::string job = f.write("job.toml", "[launch]\nranks = 4\n[cluster]\nfile = \"c.toml\"\n");
  dp::JobError e = load_error(job, {});
  BOOST_TEST(e.where() == (f.dir / "c.toml").string() + ":2:18");
  BOOST_TEST(has(e.line(), "cluster.ranks_per_node: is 5, more than launch.ranks (4)"));
  BOOST_TEST(e.exit_code() == 2);
  f.write("c.toml", "[cluster]\nmemory_gb = [80, 80, 0, 80]\n");
  e = load_error(job, {});
  BOOST_TEST(e.where() == (f.dir / "c.toml").string() + ":2:13");
  BOOST_TEST(has(e.line(), "cluster.memory_gb[2]: must be greater than 0"));
  // A rank count from the command line that the file's nodes do not hold: at the file's key.
  f.write("c.toml", "[cluster]\n\nranks_per_node = 2\n");
  e = load_error(job, {"launch.ranks=3"});
  BOOST_TEST(e.where() == (f.dir / "c.toml").string() + ":3:18");
  BOOST_TEST(has(e.line(), "does not divide launch.ranks (3)"));
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
