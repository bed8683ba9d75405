// The MPI transport and the collective algorithms through it, run under mpirun with 2 to 5 ranks (the
// test reads the rank count from the communicator): point-to-point ordering, sizes and polling, a
// background communication thread, the transport collectives and split, then the same algorithm matrix
// as the thread test at smaller sizes, and the timing function.
#define BOOST_TEST_MODULE mpi_collectives
#include <boost/test/unit_test.hpp>

#include <numeric>
#include <thread>

#include "lib/comm/collective_bench.h"
#include "lib/core/error.h"
#include "tests/comm/collective_testing.h"
#include "tests/skip_tally.h"

namespace {

struct MpiFixture {
  MpiFixture()
      : runtime(&boost::unit_test::framework::master_test_suite().argc,
                &boost::unit_test::framework::master_test_suite().argv) {}
  ~MpiFixture() { test_skips::agree_across_ranks(*dp::mpi_world()); }  // before MPI ends
  dp::MpiRuntime runtime;
};
BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);

// The precondition of the case with a background thread (tests/main_with_skips.cpp: skipped, not passed).
boost::test_tools::assertion_result thread_multiple(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result provided(dp::MpiRuntime::thread_multiple());
  provided.message() << "this MPI does not provide MPI_THREAD_MULTIPLE";
  return provided;
}

template <class T>
std::span<std::byte> bytes(T& v) {
  return std::as_writable_bytes(std::span(&v, 1));
}

}  // namespace

BOOST_AUTO_TEST_CASE(point_to_point) {
  auto comm = dp::mpi_world();
  const int r = comm->rank(), n = comm->size(), right = (r + 1) % n, left = (r + n - 1) % n;
  // Many messages on two tags, received tag 2 first: order within a tag is kept.
  constexpr int kCount = 40;
  std::vector<int> out(2 * kCount), got1(kCount), got2(kCount);
  std::iota(out.begin(), out.end(), 1000 * r);
  std::vector<dp::Request> requests;
  for (int i = 0; i < 2 * kCount; ++i)
    requests.push_back(comm->isend(std::as_bytes(std::span(&out[size_t(i)], 1)), right, 1 + i % 2));
  for (int i = 0; i < kCount; ++i) requests.push_back(comm->irecv(bytes(got2[size_t(i)]), left, 2));
  for (int i = 0; i < kCount; ++i) requests.push_back(comm->irecv(bytes(got1[size_t(i)]), left, 1));
  dp::wait_all(requests);
  for (int i = 0; i < kCount; ++i) {
    BOOST_TEST(got1[size_t(i)] == 1000 * left + 2 * i);
    BOOST_TEST(got2[size_t(i)] == 1000 * left + 2 * i + 1);
  }
  // A large message round the ring with sendrecv; an empty one polled with test().
  std::vector<float> big(size_t(3) << 20, float(r)), from_left(big.size());
  comm->sendrecv(std::as_bytes(std::span(big)), right, std::as_writable_bytes(std::span(from_left)), left, 3);
  BOOST_TEST((from_left.front() == float(left) && from_left.back() == float(left)));
  dp::Request empty = comm->irecv({}, left, 4);
  comm->isend({}, right, 4).wait();
  while (!empty.test()) std::this_thread::yield();
  // Sizes must match: a shorter message than the receive buffer is an error too (a longer one is MPI's
  // truncation error, which Open MPI does not always report for a message that arrived unexpected).
  int32_t four = 4;
  int64_t eight = 0;
  dp::Request send = comm->isend(std::as_bytes(std::span(&four, 1)), right, 5);
  BOOST_CHECK_THROW(comm->irecv(bytes(eight), left, 5).wait(), dp::RuntimeFailure);
  send.wait();
  BOOST_CHECK_THROW(comm->isend({}, n, 0), dp::InternalError);
  BOOST_CHECK_THROW(comm->isend({}, 0, dp::kMaxTag + 1), dp::InternalError);
  comm->barrier();
}

BOOST_AUTO_TEST_CASE(background_thread_communicates_alongside_the_main_thread,
                     *boost::unit_test::precondition(thread_multiple)) {
  auto comm = dp::mpi_world();
  const int r = comm->rank(), n = comm->size(), right = (r + 1) % n, left = (r + n - 1) % n;
  int background_got = -1, main_got = -1;
  std::thread background([&] {
    int mine = 200 + r;
    comm->sendrecv(std::as_bytes(std::span(&mine, 1)), right, bytes(background_got), left, 7);
  });
  int mine = 100 + r;
  comm->sendrecv(std::as_bytes(std::span(&mine, 1)), left, bytes(main_got), right, 6);
  background.join();
  BOOST_TEST(background_got == 200 + left);
  BOOST_TEST(main_got == 100 + right);
}

BOOST_AUTO_TEST_CASE(transport_collectives_and_split) {
  auto comm = dp::mpi_world();
  const int r = comm->rank(), n = comm->size();
  const std::vector<float> in{1.0f, float(r)};
  std::vector<float> out(2);
  comm->allreduce_sum(std::span(in), std::span(out));
  BOOST_TEST((out[0] == float(n) && out[1] == float(n * (n - 1) / 2)));
  auto sub = comm->split(r % 2, -r);  // evens and odds, each in reverse order
  const int members = (n + 1 - r % 2) / 2;
  BOOST_TEST(sub->size() == members);
  BOOST_TEST(sub->rank() == members - 1 - r / 2);
  std::vector<float> data(1001, float(r));
  dp::allreduce(*sub, std::span(data));
  float want = 0;
  for (int q = r % 2; q < n; q += 2) want += float(q);
  BOOST_TEST((data.front() == want && data.back() == want));
}

BOOST_AUTO_TEST_CASE(every_algorithm_float) {
  auto comm = dp::mpi_world();
  for (const auto& c : dp::testing::test_cases(comm->size(), size_t(1) << 20))
    BOOST_TEST(dp::testing::check_case<float>(*comm, c) == "");
}

BOOST_AUTO_TEST_CASE(every_algorithm_double) {
  auto comm = dp::mpi_world();
  for (const auto& c : dp::testing::test_cases(comm->size(), 4099))
    BOOST_TEST(dp::testing::check_case<double>(*comm, c) == "");
}

BOOST_AUTO_TEST_CASE(bench_reports_no_wrong_elements) {
  auto comm = dp::mpi_world();
  for (dp::CollectiveAlgorithm a : dp::collective_algorithms())
    for (bool in_place : {false, true}) {
      const auto r = dp::bench_allreduce(*comm, {a, size_t(1) << 20, in_place, 1, 3});
      BOOST_TEST(r.wrong == 0);
      BOOST_TEST(r.time_us > 0);
      if (comm->size() > 1)
        BOOST_TEST(r.busbw > 0);
      else
        BOOST_TEST(r.busbw == 0);  // 2(n-1)/n: nothing crosses a link on one rank
    }
}
