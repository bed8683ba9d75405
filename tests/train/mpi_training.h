// Shared by the training tests that run under mpirun: MPI for the whole test module, a scratch
// directory every rank of a communicator agrees on, a job trained from its TOML text, and the
// relative difference of two loss curves.
#pragma once

#include <boost/test/unit_test.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/job/job.h"
#include "lib/train/trainer.h"
#include "tests/skip_tally.h"

namespace mpi_training {

// In the test file: using mpi_training::MpiFixture; BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);
// Its destructor settles skips across the ranks while MPI is still up (tests/skip_tally.h).
struct MpiFixture {
  MpiFixture() : runtime(&boost::unit_test::framework::master_test_suite().argc,
                         &boost::unit_test::framework::master_test_suite().argv) {}
  ~MpiFixture() { test_skips::agree_across_ranks(*dp::mpi_world()); }
  dp::MpiRuntime runtime;
};

// A scratch directory shared by all ranks of `comm` (rank 0 picks the name).
inline std::string shared_scratch(dp::Communicator& comm, const std::string& tag) {
  int64_t pid = ::getpid();
  comm.broadcast(std::as_writable_bytes(std::span(&pid, 1)), 0);
  return (std::filesystem::temp_directory_path() / ("dptrain-test-" + std::to_string(pid) + "-" + tag)).string();
}

// Trains the job in TOML text `job` (with `overrides`) on `comm` into `out`: from scratch, or resumed;
// stopping after step `stop` when >= 0.
inline dp::RunResult train_job(const char* job, dp::Communicator& comm, const std::string& out,
                               const std::vector<std::string>& overrides, bool resume = false, int64_t stop = -1) {
  dp::RunOptions o;
  o.out_dir = out;
  o.force = !resume;
  o.resume = resume;
  o.stop_after = stop;
  return dp::train(dp::parse_job(job, "test-job", overrides), comm, o);
}

// The largest |a_i - b_i| / |b_i|. The curves must be equally long and not empty: a run that recorded
// no losses, or fewer than its reference, fails the test case here instead of comparing nothing.
inline double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  BOOST_TEST_REQUIRE(!b.empty(), "the reference curve is empty: nothing to compare");
  BOOST_TEST_REQUIRE(a.size() == b.size(), "curves of " << a.size() << " and " << b.size() << " losses");
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(b[i]));
  return worst;
}

}  // namespace mpi_training
