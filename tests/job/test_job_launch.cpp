#define BOOST_TEST_MODULE job_launch
#include <boost/test/unit_test.hpp>

// The [launch] keys of Slurm allocations and hostfiles: hostfile resolved against the job file's
// folder (and kept absolute through the emitted job), hosts and hostfile exclusive, launcher's values,
// srun not combined with named machines, and whether the job says ranks (the allocation's otherwise).

#include <filesystem>
#include <string>

#include "tests/job/job_testing.h"

using job_testing::expect_error;

BOOST_AUTO_TEST_CASE(hostfile_is_relative_to_the_job_file) {
  const auto job = dp::parse_job("[launch]\nhostfile = \"hosts.txt\"\n", "/jobs/a/job.toml");
  BOOST_TEST(job.launch.hostfile == "/jobs/a/hosts.txt");
  const auto up = dp::parse_job("[launch]\nhostfile = \"../h/hosts\"\n", "/jobs/a/job.toml");
  BOOST_TEST(up.launch.hostfile == "/jobs/h/hosts");
  const auto absolute = dp::parse_job("[launch]\nhostfile = \"/etc/mpi/hosts\"\n", "/jobs/a/job.toml");
  BOOST_TEST(absolute.launch.hostfile == "/etc/mpi/hosts");
  const auto here = dp::parse_job("[launch]\nhostfile = \"hosts\"\n", "job.toml");
  BOOST_TEST(here.launch.hostfile == (std::filesystem::current_path() / "hosts").string());
  // The emitted job names the same file from anywhere.
  const auto again = dp::parse_job(dp::job_to_toml(job), "/elsewhere/job.toml");
  BOOST_TEST(again.launch.hostfile == "/jobs/a/hosts.txt");
}

BOOST_AUTO_TEST_CASE(hosts_and_hostfile_are_exclusive) {
  expect_error("[launch]\nhosts = [\"a:2\"]\nhostfile = \"h\"\n", {}, "x.toml:3:12",
               {"launch.hostfile", "is given with launch.hosts", "hosts or hostfile"});
}

BOOST_AUTO_TEST_CASE(launcher_values) {
  for (const char* v : {"auto", "mpirun", "srun"})
    BOOST_TEST(dp::parse_job(std::string("[launch]\nlauncher = \"") + v + "\"\n", "x.toml").launch.launcher ==
               dp::enum_named<dp::Launcher>(v).value());
  expect_error("[launch]\nlauncher = \"slurm\"\n", {}, "x.toml:2:12",
               {"launch.launcher", "unknown value 'slurm'", "auto, mpirun, srun"});
  expect_error("[launch]\nlauncher = \"srun\"\nhostfile = \"h\"\n", {}, "x.toml:2:12",
               {"launch.launcher", "srun runs on the Slurm allocation's nodes"});
  expect_error("", {"launch.launcher=srun", "launch.hostfile=h"}, "--set launch.launcher=srun",
               {"launch.launcher", "not on launch.hostfile", "launch.hosts"});
  // Some of the allocation's nodes (what an elastic restart under srun writes): accepted.
  BOOST_TEST(dp::parse_job("[launch]\nlauncher = \"srun\"\nhosts = [\"node0:2\"]\n", "x.toml").launch.hosts.size() ==
             1u);
}

BOOST_AUTO_TEST_CASE(ranks_given_in_the_file_or_by_set) {
  BOOST_TEST(!dp::parse_job("[job]\nname = \"a\"\n", "x.toml").launch.ranks_given);
  BOOST_TEST(dp::parse_job("[launch]\nranks = 1\n", "x.toml").launch.ranks_given);
  BOOST_TEST(dp::parse_job("", "x.toml", {"launch.ranks=3"}).launch.ranks_given);
}
