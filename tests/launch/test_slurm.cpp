#define BOOST_TEST_MODULE slurm
#include <boost/test/unit_test.hpp>

// Launching inside a Slurm allocation (lib/launch/slurm.h) and mpirun with a hostfile, as pure functions
// of a hand-made LaunchHost: allocation detection from the environment sbatch/salloc give their shell
// (and not from a rank's), the choice between srun and mpirun, ranks taken from or checked against the
// allocation, and the commands built.

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/launch/launcher.h"
#include "lib/launch/slurm.h"

namespace {

using Args = std::vector<std::string>;
using Env = std::map<std::string, std::string>;

// The variables an `sbatch -n TASKS` batch shell had on the test cluster (tests/cluster/slurm.sh).
Env batch_shell(int tasks) {
  return {{"SLURM_JOB_ID", "41"},      {"SLURM_JOBID", "41"},        {"SLURM_NTASKS", std::to_string(tasks)},
          {"SLURM_NPROCS", std::to_string(tasks)}, {"SLURM_JOB_NUM_NODES", "1"}, {"SLURM_NNODES", "1"},
          {"SLURM_PROCID", "0"},       {"SLURM_LOCALID", "0"},       {"SLURM_TASKS_PER_NODE", std::to_string(tasks)},
          {"PATH", "/usr/bin"}};
}

dp::LaunchHost host(Env env, bool root = true) {
  dp::LaunchHost h;
  h.is_root = root;
  h.cores = 2;
  h.self_exe = "/opt/dp/bin/dptrain";
  for (const auto& [name, value] : env) h.environment.push_back(name + "=" + value);
  return h;
}

dp::LaunchSection section(int64_t ranks, bool given, dp::Launcher launcher = dp::Launcher::automatic) {
  dp::LaunchSection l;
  l.ranks = ranks;
  l.ranks_given = given;
  l.launcher = launcher;
  return l;
}

bool has(const Args& a, const std::string& s) { return std::find(a.begin(), a.end(), s) != a.end(); }
const Args kSelf{"run", "job.toml"};

}  // namespace

BOOST_AUTO_TEST_SUITE(allocation)

BOOST_AUTO_TEST_CASE(batch_shell_is_an_allocation) {
  const auto a = dp::slurm_allocation(host(batch_shell(4)));
  BOOST_REQUIRE(a.has_value());
  BOOST_TEST(a->job_id == "41");
  BOOST_TEST(a->tasks == 4);
  BOOST_TEST(a->nodes == 1);
  BOOST_TEST(a->cpus_per_task == 0);
}

BOOST_AUTO_TEST_CASE(older_names_and_cpus_per_task) {
  const auto a = dp::slurm_allocation(host({{"SLURM_JOBID", "7"}, {"SLURM_NPROCS", "3"}, {"SLURM_NNODES", "2"},
                                            {"SLURM_CPUS_PER_TASK", "4"}}));
  BOOST_REQUIRE(a.has_value());
  BOOST_TEST(a->job_id == "7");
  BOOST_TEST(a->tasks == 3);
  BOOST_TEST(a->nodes == 2);
  BOOST_TEST(a->cpus_per_task == 4);
}

BOOST_AUTO_TEST_CASE(no_allocation_outside_slurm_or_inside_a_rank) {
  BOOST_TEST(!dp::slurm_allocation(host({{"PATH", "/usr/bin"}})).has_value());
  Env step = batch_shell(2);
  step["SLURM_STEP_ID"] = "0";  // an srun task: already a rank
  BOOST_TEST(!dp::slurm_allocation(host(step)).has_value());
  Env under_mpirun = batch_shell(2);
  under_mpirun["OMPI_COMM_WORLD_SIZE"] = "2";
  BOOST_TEST(!dp::slurm_allocation(host(under_mpirun)).has_value());
}

BOOST_AUTO_TEST_CASE(allocation_without_a_task_count) {
  const auto a = dp::slurm_allocation(host({{"SLURM_JOB_ID", "5"}}));
  BOOST_REQUIRE(a.has_value());
  BOOST_TEST(a->tasks == 0);
}

BOOST_AUTO_TEST_CASE(host_lists_and_task_counts_expand_as_slurm_writes_them) {
  using Names = std::vector<std::string>;
  BOOST_TEST(dp::expand_hostlist("node[0-2]", "x") == Names({"node0", "node1", "node2"}),
             boost::test_tools::per_element());
  BOOST_TEST(dp::expand_hostlist("gpu[08-10,12],login", "x") == Names({"gpu08", "gpu09", "gpu10", "gpu12", "login"}),
             boost::test_tools::per_element());
  BOOST_TEST(dp::expand_hostlist("r[1-2]n[3,5]", "x") == Names({"r1n3", "r1n5", "r2n3", "r2n5"}),
             boost::test_tools::per_element());
  BOOST_TEST(dp::expand_tasks_per_node("2(x3),1", "x") == std::vector<int64_t>({2, 2, 2, 1}),
             boost::test_tools::per_element());
  for (const char* bad : {"node[0-", "node[2-1]", "node]", "node[a-b]"})
    BOOST_CHECK_THROW(dp::expand_hostlist(bad, "SLURM_JOB_NODELIST"), dp::UsageError);
  for (const char* bad : {"2(x", "0", "2(x0)", "two"})
    BOOST_CHECK_THROW(dp::expand_tasks_per_node(bad, "SLURM_TASKS_PER_NODE"), dp::UsageError);
  Env env = batch_shell(5);
  env["SLURM_JOB_NODELIST"] = "node[0-2]";
  env["SLURM_TASKS_PER_NODE"] = "2(x2),1";
  const auto a = dp::slurm_allocation(host(env));
  BOOST_REQUIRE(a.has_value());
  BOOST_TEST(a->node_names == Names({"node0", "node1", "node2"}), boost::test_tools::per_element());
  BOOST_TEST(a->tasks_per_node == std::vector<int64_t>({2, 2, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(malformed_count_is_a_usage_error) {
  Env env = batch_shell(2);
  env["SLURM_NTASKS"] = "2(x3)";
  BOOST_CHECK_THROW(dp::slurm_allocation(host(env)), dp::UsageError);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(choice_and_ranks)

BOOST_AUTO_TEST_CASE(auto_is_srun_in_an_allocation_and_mpirun_outside) {
  BOOST_TEST(dp::uses_srun(section(2, true), host(batch_shell(2))));
  BOOST_TEST(!dp::uses_srun(section(2, true), host({})));
  BOOST_TEST(!dp::uses_srun(section(2, true, dp::Launcher::mpirun), host(batch_shell(2))));
  BOOST_TEST(dp::uses_srun(section(2, true, dp::Launcher::srun), host({})));  // srun allocates for itself
}

BOOST_AUTO_TEST_CASE(named_machines_keep_auto_on_mpirun) {
  auto l = section(2, true);
  l.hosts = {"a:1", "b:1"};
  BOOST_TEST(!dp::uses_srun(l, host(batch_shell(2))));
  l.hosts.clear();
  l.hostfile = "/etc/hosts.mpi";
  BOOST_TEST(!dp::uses_srun(l, host(batch_shell(2))));
}

BOOST_AUTO_TEST_CASE(ranks_from_the_allocation_when_the_job_does_not_say) {
  BOOST_TEST(dp::launch_ranks(section(1, false), host(batch_shell(6))) == 6);
  BOOST_TEST(dp::launch_ranks(section(4, true), host(batch_shell(6))) == 4);
  BOOST_TEST(dp::launch_ranks(section(1, false), host({})) == 1);
  BOOST_TEST(dp::launch_ranks(section(3, false), host({{"SLURM_JOB_ID", "5"}})) == 3);  // no count: the job's
}

BOOST_AUTO_TEST_CASE(more_ranks_than_the_allocation_is_refused) {
  try {
    dp::launch_ranks(section(8, true), host(batch_shell(2)));
    BOOST_FAIL("expected a UsageError");
  } catch (const dp::UsageError& e) {
    BOOST_TEST(e.where() == "launch.ranks");
    BOOST_TEST(e.message().find("8 ranks") != std::string::npos);
    BOOST_TEST(e.message().find("allocation 41 has 2 tasks") != std::string::npos);
    BOOST_TEST(e.line().find('\n') == std::string::npos);
  }
  // The same job on its own machines: the allocation's size does not apply.
  auto l = section(8, true);
  l.hosts = {"a:4", "b:4"};
  BOOST_TEST(dp::launch_ranks(l, host(batch_shell(2))) == 8);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(commands)

BOOST_AUTO_TEST_CASE(srun_command_in_an_allocation) {
  Env env = batch_shell(4);
  env["SLURM_CPUS_PER_TASK"] = "2";
  const Args cmd = dp::launch_command(section(4, true), host(env), kSelf);
  const Args want{"srun", "--mpi=pmix", "--ntasks=4", "--kill-on-bad-exit=1", "--input=none", "--cpus-per-task=2",
                  "/opt/dp/bin/dptrain", "run", "job.toml"};
  BOOST_TEST(cmd == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(srun_on_named_nodes_of_the_allocation) {
  // What an elastic restart writes for the nodes that still answer: srun's node list, equal slots.
  dp::LaunchSection l = section(4, true, dp::Launcher::srun);
  l.hosts = {"node0:2", "node2:2"};
  const Args cmd = dp::launch_command(l, host(batch_shell(6)), kSelf);
  for (const char* want : {"--ntasks=4", "--nodelist=node0,node2", "--nodes=2", "--overlap", "--ntasks-per-node=2"})
    BOOST_TEST(has(cmd, want), want);
  l.hosts = {"node0:2", "node2"};  // unequal: Slurm's block distribution, no per-node count
  BOOST_TEST(!has(dp::launch_command(l, host(batch_shell(6)), kSelf), "--ntasks-per-node=2"));
}

BOOST_AUTO_TEST_CASE(srun_without_cpus_per_task) {
  const Args cmd = dp::launch_command(section(2, true), host(batch_shell(2)), kSelf);
  BOOST_TEST(!has(cmd, "--cpus-per-task=2"));
  BOOST_TEST(cmd.front() == "srun");
}

BOOST_AUTO_TEST_CASE(mpirun_in_an_allocation_takes_its_nodes) {
  const Args cmd = dp::launch_command(section(2, true, dp::Launcher::mpirun), host(batch_shell(2)), kSelf);
  BOOST_TEST(cmd.front() == "mpirun");
  BOOST_TEST(has(cmd, "--allow-run-as-root"));
  BOOST_TEST(!has(cmd, "--host"));
  BOOST_TEST(!has(cmd, "--hostfile"));
  BOOST_TEST(!has(cmd, "oob_tcp_if_include"));  // the allocation may span machines
  BOOST_TEST(!has(cmd, "--oversubscribe"));
  BOOST_TEST(cmd.back() == "job.toml");
}

BOOST_AUTO_TEST_CASE(mpirun_with_a_hostfile) {
  auto l = section(8, true);
  l.hostfile = "/jobs/hosts.txt";
  for (const Env& env : {Env{}, batch_shell(2)}) {
    const Args cmd = dp::launch_command(l, host(env), kSelf);
    const auto it = std::find(cmd.begin(), cmd.end(), "--hostfile");
    BOOST_REQUIRE(it != cmd.end());
    BOOST_TEST(*(it + 1) == "/jobs/hosts.txt");
    BOOST_TEST(!has(cmd, "--host"));
    BOOST_TEST(!has(cmd, "--oversubscribe"));  // 8 ranks > 2 cores here, but the ranks run elsewhere
  }
}

BOOST_AUTO_TEST_CASE(outside_slurm_auto_is_the_local_mpirun) {
  const Args cmd = dp::launch_command(section(4, true), host({}), kSelf);
  BOOST_TEST(cmd.front() == "mpirun");
  BOOST_TEST(has(cmd, "--oversubscribe"));
  BOOST_TEST(has(cmd, "oob_tcp_if_include"));
}

BOOST_AUTO_TEST_SUITE_END()
