// The thread transport: MPI-like matching and ordering of point-to-point messages, its collectives and
// split(), the memory hooks, and that a failing, early-returning or deadlocked rank never hangs the rest.
// Rank threads record what they see; checks run on the test thread (Boost.Test is not thread-safe).
#define BOOST_TEST_MODULE thread_transport
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <mutex>
#include <numeric>
#include <thread>

#include "lib/comm/thread_communicator.h"
#include "lib/core/error.h"

namespace {

template <class T>
std::span<const std::byte> bytes(const T& v) {
  return std::as_bytes(std::span(&v, 1));
}
template <class T>
std::span<std::byte> bytes(T& v) {
  return std::as_writable_bytes(std::span(&v, 1));
}

// Runs fn and returns the message of the exception run_thread_ranks rethrows ("" when none).
std::string failure_of(int n, const std::function<void(dp::Communicator&)>& fn) {
  try {
    dp::run_thread_ranks(n, fn);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace

BOOST_AUTO_TEST_CASE(messages_match_by_tag_and_keep_their_order) {
  std::vector<int> got5, got6;
  dp::run_thread_ranks(2, [&](dp::Communicator& comm) {
    constexpr int kCount = 50;
    if (comm.rank() == 0) {  // interleaved tags, all sent before the receiver posts anything
      std::vector<int> values(2 * kCount);
      std::iota(values.begin(), values.end(), 0);
      std::vector<dp::Request> sends;
      for (int i = 0; i < 2 * kCount; ++i)
        sends.push_back(comm.isend(bytes(values[size_t(i)]), 1, 5 + i % 2));
      dp::wait_all(sends);
    } else {  // tag 6 first: matching is by tag, order within a tag is the sending order
      got5.resize(kCount);
      got6.resize(kCount);
      std::vector<dp::Request> recvs;
      for (int i = 0; i < kCount; ++i) recvs.push_back(comm.irecv(bytes(got6[size_t(i)]), 0, 6));
      for (int i = 0; i < kCount; ++i) recvs.push_back(comm.irecv(bytes(got5[size_t(i)]), 0, 5));
      dp::wait_all(recvs);
    }
  });
  for (size_t i = 0; i < got5.size(); ++i) {
    BOOST_TEST(got5[i] == int(2 * i));
    BOOST_TEST(got6[i] == int(2 * i + 1));
  }
}

BOOST_AUTO_TEST_CASE(sendrecv_round_the_ring_and_test_polls) {
  std::vector<int> from_left(5, -1), polled(5, -1);
  dp::run_thread_ranks(5, [&](dp::Communicator& comm) {
    const int r = comm.rank(), n = comm.size();
    int mine = 100 + r, got = -1;
    comm.sendrecv(bytes(mine), (r + 1) % n, bytes(got), (r + n - 1) % n, 3);
    from_left[size_t(r)] = got;
    // test() never blocks; poll until the message from the right arrives
    int back = -1;
    dp::Request recv = comm.irecv(bytes(back), (r + 1) % n, 4);
    dp::Request send = comm.isend(bytes(mine), (r + n - 1) % n, 4);
    while (!recv.test()) std::this_thread::yield();
    send.wait();
    polled[size_t(r)] = recv.pending() ? -2 : back;
  });
  for (int r = 0; r < 5; ++r) {
    BOOST_TEST(from_left[size_t(r)] == 100 + (r + 4) % 5);
    BOOST_TEST(polled[size_t(r)] == 100 + (r + 1) % 5);
  }
}

BOOST_AUTO_TEST_CASE(transport_collectives) {
  std::mutex mu;
  std::vector<std::string> errors;
  dp::run_thread_ranks(4, [&](dp::Communicator& comm) {
    const int r = comm.rank();
    auto expect = [&](bool ok, const std::string& what) {
      if (ok) return;
      std::lock_guard lock(mu);
      errors.push_back("rank " + std::to_string(r) + ": " + what);
    };
    expect(comm.size() == 4 && comm.local_size() == 4 && !comm.host().empty(), "size");
    const auto ranks = comm.allgather_value(r * 10);
    expect(ranks == std::vector<int>{0, 10, 20, 30}, "allgather_value");
    int64_t value = r == 2 ? 77 : 0;
    comm.broadcast(bytes(value), 2);
    expect(value == 77, "broadcast");
    std::vector<double> d{double(r), 0.5};
    comm.allreduce_sum(std::span(d));
    expect(d[0] == 6 && d[1] == 2, "allreduce_sum in place");
    const std::vector<float> in{1.0f, float(r)};
    std::vector<float> out(2);
    comm.allreduce_sum(std::span(in), std::span(out));
    expect(out[0] == 4 && out[1] == 6, "allreduce_sum out of place");
    for (int i = 0; i < 3; ++i) comm.barrier();
  });
  BOOST_TEST(errors.empty(), (errors.empty() ? "" : errors.front()));
}

BOOST_AUTO_TEST_CASE(split_by_color_and_key) {
  // per rank: size, rank, the sum of the parent ranks in its sub-communicator, the sub-sub size
  std::vector<std::array<int, 4>> seen(5);
  dp::run_thread_ranks(5, [&](dp::Communicator& comm) {
    const int r = comm.rank();
    auto sub = comm.split(r % 2, -r);  // evens {0,2,4} and odds {1,3}, each in reverse order
    std::vector<double> sum{double(r)};
    sub->allreduce_sum(std::span(sum));
    sub->barrier();
    auto single = sub->split(sub->rank(), 0);  // one rank each
    seen[size_t(r)] = {sub->size(), sub->rank(), int(sum[0]), single->size()};
  });
  const std::array<int, 4> want[5] = {{3, 2, 6, 1}, {2, 1, 4, 1}, {3, 1, 6, 1}, {2, 0, 4, 1}, {3, 0, 6, 1}};
  for (int r = 0; r < 5; ++r) BOOST_TEST(seen[size_t(r)] == want[r]);
}

BOOST_AUTO_TEST_CASE(memory_hooks_on_the_host) {  // one rank: its thread is the only one running checks
  dp::run_thread_ranks(1, [](dp::Communicator& comm) {
    dp::Memory m = comm.allocate(3 * sizeof(float));
    BOOST_TEST_REQUIRE(m.get() != nullptr);
    auto* p = reinterpret_cast<float*>(m.get());
    const float a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    comm.copy(m.get(), reinterpret_cast<const std::byte*>(a), sizeof a);
    comm.reduce_add(p, b, 3);  // p += b
    BOOST_TEST((p[0] == 11 && p[1] == 22 && p[2] == 33));
    comm.reduce_add(p, a, b, 3);  // p = a + b
    BOOST_TEST((p[0] == 11 && p[1] == 22 && p[2] == 33));
  });
}

BOOST_AUTO_TEST_CASE(a_background_thread_communicates_alongside_the_rank) {
  std::vector<int> main_got(2, -1), background_got(2, -1);
  dp::run_thread_ranks(2, [&](dp::Communicator& comm) {
    const int r = comm.rank(), peer = 1 - r;
    std::thread background([&] {
      int mine = 200 + r;
      comm.sendrecv(bytes(mine), peer, bytes(background_got[size_t(r)]), peer, 9);
    });
    int mine = 100 + r;
    comm.sendrecv(bytes(mine), peer, bytes(main_got[size_t(r)]), peer, 8);
    background.join();
  });
  BOOST_TEST(main_got == (std::vector<int>{101, 100}));
  BOOST_TEST(background_got == (std::vector<int>{201, 200}));
}

BOOST_AUTO_TEST_CASE(a_failing_rank_aborts_the_others) {
  std::atomic<int> aborted{0};
  const std::string what = failure_of(3, [&](dp::Communicator& comm) {
    if (comm.rank() == 1) throw std::runtime_error("boom");
    int x = 0;
    try {
      comm.irecv(bytes(x), 1, 0).wait();  // never sent
    } catch (const dp::RuntimeFailure& e) {
      if (std::string(e.what()).find("rank 1 failed: boom") != std::string::npos) ++aborted;
      throw;
    }
  });
  BOOST_TEST(what == "boom");  // the first failure, not the aborts it caused
  BOOST_TEST(aborted == 2);
}

BOOST_AUTO_TEST_CASE(a_rank_that_returns_early_or_a_cycle_of_waits_is_a_deadlock) {
  const std::string early = failure_of(2, [](dp::Communicator& comm) {
    int x = 0;
    if (comm.rank() == 1) comm.irecv(bytes(x), 0, 0).wait();  // rank 0 returns without sending
  });
  BOOST_TEST(early.find("deadlock") != std::string::npos, early);
  const std::string cycle = failure_of(3, [](dp::Communicator& comm) {
    int x = 0;
    comm.irecv(bytes(x), (comm.rank() + 1) % 3, 0).wait();  // everyone receives, no one sends
  });
  BOOST_TEST(cycle.find("deadlock") != std::string::npos, cycle);
  BOOST_TEST(cycle.find("rank 2 receives from rank 0") != std::string::npos, cycle);
}

BOOST_AUTO_TEST_CASE(sizes_must_match_and_arguments_are_checked) {
  const std::string what = failure_of(2, [](dp::Communicator& comm) {
    int64_t big = 1;
    int32_t small = 0;
    if (comm.rank() == 0) comm.isend(bytes(big), 1, 0).wait();
    else comm.irecv(bytes(small), 0, 0).wait();
  });
  BOOST_TEST(what.find("message of 8 bytes where 4 were expected") != std::string::npos, what);
  BOOST_TEST(!failure_of(1, [](dp::Communicator& comm) {
    int x = 0;
    comm.isend(bytes(x), 1, 0);
  }).empty());
  BOOST_TEST(!failure_of(1, [](dp::Communicator& comm) {
    int x = 0;
    comm.isend(bytes(x), 0, -1);
  }).empty());
}
