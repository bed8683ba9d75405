// Shared by the training tests that run under mpirun: MPI for the whole test module, and a scratch
// directory every rank of a communicator agrees on.
#pragma once

#include <boost/test/unit_test.hpp>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "lib/comm/communicator.h"

namespace mpi_training {

// In the test file: using mpi_training::MpiFixture; BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);
struct MpiFixture {
  MpiFixture() : runtime(&boost::unit_test::framework::master_test_suite().argc,
                         &boost::unit_test::framework::master_test_suite().argv) {}
  dp::MpiRuntime runtime;
};

// A scratch directory shared by all ranks of `comm` (rank 0 picks the name).
inline std::string shared_scratch(dp::Communicator& comm, const std::string& tag) {
  int64_t pid = ::getpid();
  comm.broadcast(std::as_writable_bytes(std::span(&pid, 1)), 0);
  return (std::filesystem::temp_directory_path() / ("dptrain-test-" + std::to_string(pid) + "-" + tag)).string();
}

}  // namespace mpi_training
