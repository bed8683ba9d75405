#define BOOST_TEST_MODULE elastic
#include <boost/test/unit_test.hpp>

// Elastic restarts' pure parts (lib/launch/elastic.h): which ends are restarted, where mpirun placed the
// ranks, the slots check, and the job on the machines that still answer: the described cluster cut to
// their ranks, renumbered, with every link kept.

#include <csignal>
#include <string>
#include <vector>

#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/job/job.h"
#include "lib/launch/elastic.h"

namespace {

dp::Job job_of(const std::vector<std::string>& overrides) {
  std::vector<std::string> all = {"data.dataset=synthetic"};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return dp::parse_job("", "job.toml", all);
}

}  // namespace

BOOST_AUTO_TEST_CASE(only_deaths_and_timeouts_are_restarted) {
  BOOST_TEST(dp::restartable(124, false, false));                // the watchdog: no progress
  BOOST_TEST(dp::restartable(128 + SIGKILL, false, false));      // a rank killed
  BOOST_TEST(dp::restartable(205, false, false));                // mpirun lost a machine's daemon
  BOOST_TEST(!dp::restartable(0, false, false));                 // finished
  BOOST_TEST(!dp::restartable(2, false, false));                 // bad input
  BOOST_TEST(!dp::restartable(128 + SIGTERM, false, false));     // a stop signal
  BOOST_TEST(!dp::restartable(128 + SIGUSR1, true, false));      // stopped and saved
  BOOST_TEST(!dp::restartable(1, false, true));                  // a rank's own error (non-finite loss)
  BOOST_TEST(!dp::restartable(137, false, true));
}

BOOST_AUTO_TEST_CASE(ranks_are_placed_by_slot) {
  dp::LaunchSection l;
  l.ranks = 5;
  l.hosts = {"a:2", "b:2", "c:4"};
  const auto h = dp::placed_hosts(l);
  BOOST_TEST_REQUIRE(h.size() == 3u);
  BOOST_TEST(h[0].ranks == std::vector<int>({0, 1}));
  BOOST_TEST(h[1].ranks == std::vector<int>({2, 3}));
  BOOST_TEST(h[2].ranks == std::vector<int>({4}));
  l.hosts = {"a", "b", "c"};  // one slot each, as mpirun --host counts them
  l.ranks = 3;
  BOOST_TEST(dp::placed_hosts(l)[2].ranks == std::vector<int>({2}));
  l.ranks = 4;
  BOOST_CHECK_THROW(dp::check_slots(l), dp::UsageError);  // 3 slots for 4 ranks
  l.ranks = 3;
  BOOST_CHECK_NO_THROW(dp::check_slots(l));
}

BOOST_AUTO_TEST_CASE(the_job_on_the_machines_left_keeps_their_ranks_and_links) {
  // Three nodes of two ranks, speeds per rank, links by level; node 1 (ranks 2, 3) stops answering.
  const dp::Job job = job_of({"launch.ranks=6", "launch.hosts=[\"n0:2\",\"n1:2\",\"n2:2\"]",
                              "cluster.speeds=[1,0.5,2,2,1,0.25]", "cluster.ranks_per_node=2",
                              "cluster.nodes_per_rack=2", "cluster.links.rack_gbps=10",
                              "cluster.links.cross_gbps=1", "cluster.emulate.slowdown=[1,2,1,1,1,4]",
                              "cluster.emulate.fluctuate_rank=5", "cluster.emulate.fluctuate_factor=2",
                              "parallel.strategy=cgp", "parallel.cgp.groups=[0,0,1,1,2,2]"});
  const auto hosts = dp::placed_hosts(job.launch);
  const dp::Job left = dp::job_on_kept_hosts(job, hosts, {true, false, true}, "/tmp/hostfile-1");
  BOOST_TEST(left.launch.ranks == 4);
  BOOST_TEST(left.launch.hosts.empty());
  BOOST_TEST(left.launch.hostfile == "/tmp/hostfile-1");
  BOOST_TEST(left.cluster.speeds == std::vector<double>({1, 0.5, 1, 0.25}));
  BOOST_TEST(left.cluster.node_sizes == std::vector<int64_t>({2, 2}));
  BOOST_TEST(left.cluster.emulate.slowdown == std::vector<double>({1, 2, 1, 4}));
  BOOST_TEST(left.cluster.emulate.fluctuate_rank == 3);  // old rank 5
  BOOST_TEST(left.parallel.cgp.groups.empty());          // regrouped for the ranks left
  // Every link as it was: old ranks 0-1 (node 0, rack 0) to old ranks 4-5 (node 2, rack 1) cross racks.
  const dp::Cluster before = dp::cluster_from_job(job), after = dp::cluster_from_job(left);
  const int old_rank[] = {0, 1, 4, 5};
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (a != b) {
        BOOST_TEST_CONTEXT("ranks " << a << ", " << b) {
          BOOST_TEST(after.link(a, b).gbps == before.link(old_rank[a], old_rank[b]).gbps);
          BOOST_TEST(after.link(a, b).latency_us == before.link(old_rank[a], old_rank[b]).latency_us);
        }
      }
  BOOST_TEST(after.link(0, 2).gbps == 1.0);
  BOOST_TEST(dp::kept_hostfile(hosts, {true, false, true}).find("n0 slots=2\nn2 slots=2\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_undescribed_cluster_stays_undescribed) {
  const dp::Job job = job_of({"launch.ranks=4", "launch.hosts=[\"n0:2\",\"n1:2\"]"});
  const dp::Job left = dp::job_on_kept_hosts(job, dp::placed_hosts(job.launch), {false, true}, "h");
  BOOST_TEST(left.launch.ranks == 2);
  BOOST_TEST(left.cluster.speeds.empty());
  BOOST_TEST(left.cluster.links.gbps.empty());
}

BOOST_AUTO_TEST_CASE(in_a_slurm_allocation_ranks_are_placed_on_its_nodes_and_the_kept_named) {
  dp::LaunchHost host;
  for (const char* v : {"SLURM_JOB_ID=7", "SLURM_NTASKS=5", "SLURM_JOB_NODELIST=node[0-2]",
                        "SLURM_TASKS_PER_NODE=2(x2),1"})
    host.environment.emplace_back(v);
  dp::LaunchSection l;
  l.ranks = 5;
  const auto h = dp::placed_hosts(l, host);  // launcher "auto" in an allocation: srun's block distribution
  BOOST_TEST_REQUIRE(h.size() == 3u);
  BOOST_TEST(h[0].host == "node0");
  BOOST_TEST(h[1].ranks == std::vector<int>({2, 3}));
  BOOST_TEST(h[2].ranks == std::vector<int>({4}));
  host.environment = {"SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=n[1-2]", "SLURM_JOB_CPUS_PER_NODE=4(x2)",
                      "SLURM_CPUS_PER_TASK=2"};  // no task counts: the CPUs per node over each task's
  l.ranks = 4;
  BOOST_TEST(dp::placed_hosts(l, host)[1].ranks == std::vector<int>({2, 3}));
  const dp::Job job = job_of({"launch.ranks=5"});
  dp::LaunchSection five = job.launch;
  host.environment = {"SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=node[0-2]", "SLURM_TASKS_PER_NODE=2(x2),1"};
  const dp::Job left = dp::job_on_kept_hosts(job, dp::placed_hosts(five, host), {true, false, true}, "");
  BOOST_TEST(left.launch.ranks == 3);
  BOOST_TEST(left.launch.hostfile.empty());
  BOOST_TEST(left.launch.hosts == std::vector<std::string>({"node0:2", "node2:1"}), boost::test_tools::per_element());
}
