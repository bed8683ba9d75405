// Every collective algorithm on the thread transport, 1 to 5 ranks, counts from 0 to a few MB, in place
// and out of place, with several segment sizes: exact sums on crafted data. Also: results are bitwise
// reproducible and identical on every rank when the sums are inexact, and the timing function reports
// no wrong elements.
#define BOOST_TEST_MODULE thread_collectives
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <mutex>

#include "lib/comm/collective_bench.h"
#include "lib/comm/thread_communicator.h"
#include "tests/comm/collective_testing.h"

namespace {

constexpr size_t kLargest = size_t(3) << 20;  // 12 MB of floats

// Runs every case at each rank count; returns the failures (rank threads only collect text).
template <class T>
std::vector<std::string> run_matrix(size_t largest) {
  std::mutex mu;
  std::vector<std::string> errors;
  for (int n = 1; n <= 5; ++n) {
    const auto cases = dp::testing::test_cases(n, largest);
    dp::run_thread_ranks(n, [&](dp::Communicator& comm) {
      for (const auto& c : cases) {
        std::string e = dp::testing::check_case<T>(comm, c);
        if (e.empty()) continue;
        std::lock_guard lock(mu);
        errors.push_back(std::move(e));
      }
    });
  }
  return errors;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_algorithm_every_rank_count_float) {
  const auto errors = run_matrix<float>(kLargest);
  BOOST_TEST(errors.empty(), errors.size() << " failures, first: " << (errors.empty() ? "" : errors[0]));
}

BOOST_AUTO_TEST_CASE(every_algorithm_every_rank_count_double) {
  const auto errors = run_matrix<double>(size_t(1) << 18);
  BOOST_TEST(errors.empty(), errors.size() << " failures, first: " << (errors.empty() ? "" : errors[0]));
}

// Inexact sums (1/(i+r+1) rounds): the ring gives the same bits on every rank and in every run.
BOOST_AUTO_TEST_CASE(ring_results_are_reproducible_and_identical_on_all_ranks) {
  constexpr size_t kCount = 100003;
  for (int n : {3, 5}) {
    std::vector<std::vector<float>> results(2 * size_t(n));
    for (int run = 0; run < 2; ++run)
      dp::run_thread_ranks(n, [&](dp::Communicator& comm) {
        std::vector<float> data(kCount);
        for (size_t i = 0; i < kCount; ++i) data[i] = 1.0f / float(i + size_t(comm.rank()) + 1);
        dp::allreduce(comm, std::span(data), {dp::CollectiveAlgorithm::ring, 4096});
        results[size_t(run * n + comm.rank())] = std::move(data);
      });
    for (size_t k = 1; k < results.size(); ++k)
      BOOST_TEST((results[k] == results[0]), "n=" << n << " k=" << k);
  }
}

BOOST_AUTO_TEST_CASE(bench_reports_no_wrong_elements_and_positive_bandwidth) {
  std::mutex mu;
  std::vector<dp::CollectiveBenchResult> results;
  dp::run_thread_ranks(3, [&](dp::Communicator& comm) {
    for (dp::CollectiveAlgorithm a : dp::collective_algorithms())
      for (bool in_place : {false, true}) {
        const auto r = dp::bench_allreduce(comm, {a, (size_t(1) << 20) + 6, in_place, 1, 3});
        if (comm.rank() != 0) continue;
        std::lock_guard lock(mu);
        results.push_back(r);
      }
  });
  BOOST_TEST_REQUIRE(results.size() == 4u);
  for (const auto& r : results) {
    BOOST_TEST(r.wrong == 0);
    BOOST_TEST(r.count == (size_t(1) << 18) + 1);
    BOOST_TEST(r.bytes == r.count * 4);
    BOOST_TEST(r.time_us > 0);
    BOOST_TEST(r.algbw > 0);
    BOOST_TEST(std::abs(r.busbw - r.algbw * 4 / 3) < 1e-9 * r.busbw);
  }
}
