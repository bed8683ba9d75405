// Emulated links (lib/comm/emulated_links.h) on the thread transport: messages and collectives take at
// least the modelled time (and not wildly more), bulk messages queue on a link while small ones slip
// past, split() shares the link, and every collective algorithm stays exact through the wrapper.
#define BOOST_TEST_MODULE emulated_links
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <mutex>

#include "lib/comm/collectives.h"
#include "lib/comm/emulated_links.h"
#include "lib/comm/thread_communicator.h"
#include "tests/comm/collective_testing.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// 1 Gbit/s: 125 MB/s, so 1.25 MB take 10 ms.
constexpr dp::LinkModel kGigabit{1.0, 0.0};
constexpr size_t kTenMs = 1250000;

// Runs fn on n thread ranks, each over emulated links, and returns every rank's result.
template <class Fn>
std::vector<double> on_links(int n, const dp::LinkModel& link, Fn fn) {
  std::vector<double> out(size_t(n), 0.0);
  dp::run_thread_ranks(n, [&](dp::Communicator& raw) {
    const auto comm = dp::emulate_links(raw, link);
    out[size_t(raw.rank())] = fn(*comm);
  });
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_message_takes_bytes_over_bandwidth) {
  const auto t = on_links(2, kGigabit, [](dp::Communicator& comm) {
    std::vector<std::byte> buf(kTenMs);
    comm.barrier();
    const auto t0 = Clock::now();
    if (comm.rank() == 0) comm.isend(buf, 1, 0).wait();
    else comm.irecv(buf, 0, 0).wait();
    return seconds_since(t0);
  });
  for (double s : t) {
    BOOST_TEST(s >= 0.010);
    BOOST_TEST(s < 0.2);
  }
}

BOOST_AUTO_TEST_CASE(messages_queue_on_a_link_and_latency_adds) {
  const dp::LinkModel link{1.0, 2000.0};  // 2 ms latency
  const auto t = on_links(2, link, [](dp::Communicator& comm) {
    std::vector<std::byte> a(kTenMs), b(kTenMs);
    const auto t0 = Clock::now();
    if (comm.rank() == 0) {
      dp::Request r[2] = {comm.isend(a, 1, 0), comm.isend(b, 1, 1)};
      dp::wait_all(r);  // both have left after 20 ms; a send does not wait for the latency
    } else {
      dp::Request r[2] = {comm.irecv(a, 0, 0), comm.irecv(b, 0, 1)};
      dp::wait_all(r);  // the second arrives at 20 ms + 2 ms
    }
    return seconds_since(t0);
  });
  BOOST_TEST(t[0] >= 0.020);
  BOOST_TEST(t[1] >= 0.022);
  BOOST_TEST(t[1] < 0.3);
}

// A small message posted behind a bulk one arrives after its own latency, not after the bulk transfer.
BOOST_AUTO_TEST_CASE(small_messages_slip_past_bulk_transfers) {
  const auto t = on_links(2, {1.0, 1000.0}, [](dp::Communicator& comm) {
    std::vector<std::byte> bulk(4 * kTenMs), small(64);
    comm.barrier();
    dp::Request big = comm.rank() == 0 ? comm.isend(bulk, 1, 0) : comm.irecv(bulk, 0, 0);
    const auto t0 = Clock::now();
    if (comm.rank() == 0) comm.isend(small, 1, 1).wait();
    else comm.irecv(small, 0, 1).wait();
    const double s = seconds_since(t0);
    big.wait();  // 40 ms
    return s;
  });
  BOOST_TEST(t[1] >= 0.001);  // the latency
  BOOST_TEST(t[1] < 0.030);   // far less than the 40 ms bulk transfer ahead of it
}

BOOST_AUTO_TEST_CASE(a_split_communicator_shares_the_process_link) {
  const auto t = on_links(2, kGigabit, [](dp::Communicator& comm) {
    const auto sub = comm.split(0, comm.rank());
    std::vector<std::byte> a(kTenMs), b(kTenMs);
    comm.barrier();
    const auto t0 = Clock::now();
    const int peer = 1 - comm.rank();
    dp::Request r[2];
    if (comm.rank() == 0) {
      r[0] = comm.isend(a, peer, 0);
      r[1] = sub->isend(b, peer, 0);
    } else {
      r[0] = comm.irecv(a, peer, 0);
      r[1] = sub->irecv(b, peer, 0);
    }
    dp::wait_all(r);
    return seconds_since(t0);
  });
  for (double s : t) BOOST_TEST(s >= 0.020);
}

// The transport's allreduce and the ring's both take at least 2(n-1)/n x bytes / bandwidth, and the
// ring, built from paced messages, stays close to it.
BOOST_AUTO_TEST_CASE(allreduce_takes_the_ring_time) {
  constexpr int n = 3;
  constexpr size_t count = 3 * kTenMs / 4;  // 3.75 MB of floats: the model says 2 * 2/3 * 30 ms = 40 ms
  for (auto algorithm : {dp::CollectiveAlgorithm::native, dp::CollectiveAlgorithm::ring}) {
    std::atomic<int> wrong = 0;
    const auto t = on_links(n, kGigabit, [&](dp::Communicator& comm) {
      std::vector<float> data(count, float(comm.rank() + 1));
      comm.barrier();
      const auto t0 = Clock::now();
      dp::allreduce(comm, std::span(data), {algorithm, 1 << 20, {}});
      const double s = seconds_since(t0);
      for (float v : data) wrong += v != 6.0f;
      return s;
    });
    BOOST_TEST(wrong == 0);
    for (double s : t) {
      BOOST_TEST(s >= 0.040, dp::collective_algorithm_name(algorithm) << ": " << s);
      BOOST_TEST(s < 0.4, dp::collective_algorithm_name(algorithm) << ": " << s);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_algorithm_stays_exact_over_emulated_links) {
  std::mutex mu;
  std::vector<std::string> errors;
  for (int n = 1; n <= 4; ++n) {
    const auto cases = dp::testing::test_cases(n, 1 << 12);
    on_links(n, {0.0, 5.0}, [&](dp::Communicator& comm) {
      for (const auto& c : cases) {
        std::string e = dp::testing::check_case<float>(comm, c);
        if (e.empty()) continue;
        std::lock_guard lock(mu);
        errors.push_back(std::move(e));
      }
      return 0.0;
    });
  }
  BOOST_TEST(errors.empty(), errors.size() << " failures, first: " << (errors.empty() ? "" : errors[0]));
}

BOOST_AUTO_TEST_CASE(an_inactive_model_adds_nothing) {
  const dp::LinkModel off{}, latency_only{0.0, 1.0}, ten_gigabit{10.0, 0.0};
  BOOST_TEST(!off.active());
  BOOST_TEST(latency_only.active());
  BOOST_TEST(ten_gigabit.transfer_seconds(1.25e9) == 1.0);
}
