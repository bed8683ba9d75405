// lib/balance/emulate.h with [cluster.emulate] as_described: each rank slowed by fastest speed / its
// speed in [cluster] (per-rank speeds or kinds), times the other factors; without as_described, or through
// the constructor that sees only [cluster.emulate], the speeds change nothing; a moving fluctuation
// window; compute paced by the thread's CPU time.
#define BOOST_TEST_MODULE emulate
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "lib/balance/emulate.h"
#include "lib/job/job.h"

using namespace dp;
namespace tt = boost::test_tools;

namespace {

Job job_of(const std::string& cluster, const std::string& emulate) {
  return parse_job("[launch]\nranks = 3\n[cluster]\n" + cluster + "\n[cluster.emulate]\n" + emulate + "\n",
                   "test.toml");
}

}  // namespace

BOOST_AUTO_TEST_CASE(described_speeds_slow_ranks_relative_to_the_fastest) {
  const Job job = job_of("speeds = [2.0, 1.0, 0.5]", "as_described = true\nslowdown = [1.0, 1.5, 1.0]");
  const double want[] = {1.0, 2.0 * 1.5, 4.0};
  for (int r = 0; r < 3; ++r) {
    SlowdownEmulator e(job, r);
    BOOST_TEST(e.factor(0) == want[r], tt::tolerance(1e-12));
    BOOST_TEST(e.factor(7) == want[r], tt::tolerance(1e-12));
    BOOST_TEST(e.active() == (r > 0));
  }
}

BOOST_AUTO_TEST_CASE(kinds_give_the_speeds_too) {
  const Job job = job_of("kinds = [\"fast\", \"slow\"]\nkind_counts = [1, 2]\nkind_speeds = [3.0, 1.0]",
                         "as_described = true");
  BOOST_TEST(SlowdownEmulator(job, 0).factor(0) == 1.0);
  BOOST_TEST(SlowdownEmulator(job, 2).factor(0) == 3.0, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(speeds_change_nothing_unless_described) {
  const Job off = job_of("speeds = [2.0, 1.0, 0.5]", "slowdown = [1.0, 1.5, 1.0]");
  BOOST_TEST(SlowdownEmulator(off, 2).factor(0) == 1.0);
  BOOST_TEST(!SlowdownEmulator(off, 2).active());
  BOOST_TEST(SlowdownEmulator(off, 1).factor(0) == 1.5);
  const Job on = job_of("speeds = [2.0, 1.0, 0.5]", "as_described = true");
  SlowdownEmulator section_only(on.cluster.emulate, 2, on.job.seed);  // sees no [cluster]
  BOOST_TEST(section_only.factor(0) == 1.0);
  BOOST_TEST(!section_only.active());
}

BOOST_AUTO_TEST_CASE(a_moving_window_passes_the_slowness_to_the_next_rank) {
  // Rank 1 slowed 4x in steps 10-39, the slowness moving on every 10 steps: rank 1, 2, then 0 (wrapped).
  const Job job = job_of("", "fluctuate_rank = 1\nfluctuate_from = 10\nfluctuate_to = 40\nfluctuate_factor = 4.0\n"
                             "fluctuate_move_every = 10");
  const int slowed[] = {1, 2, 0};
  for (int r = 0; r < 3; ++r) {
    SlowdownEmulator e(job, r);
    BOOST_TEST(e.active());
    BOOST_TEST(e.factor(9) == 1.0);
    for (int part = 0; part < 3; ++part)
      for (int64_t step : {10 + 10 * part, 19 + 10 * part})
        BOOST_TEST(e.factor(step) == (slowed[part] == r ? 4.0 : 1.0), "rank " << r << " step " << step);
    BOOST_TEST(e.factor(40) == 1.0);
  }
}

BOOST_AUTO_TEST_CASE(cpu_time_paces_the_emulated_compute) {
  // 2x slower: a compute of 10 ms wall of which the thread ran 5 ms (the rest waiting for a core) is
  // stretched to 2 x 5 = 10 ms, so no sleep; one that ran all 10 ms sleeps 10 ms more.
  const Job job = job_of("", "slowdown = [2.0, 1.0, 1.0]");
  SlowdownEmulator e(job, 0);
  auto slept_ms = [&](double wall, double cpu) {
    const auto t0 = std::chrono::steady_clock::now();
    e.delay(0, wall, cpu);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  // No sleep: the least of three calls (another process may take the core from one) is well under 5 ms.
  BOOST_TEST(std::min({slept_ms(0.010, 0.005), slept_ms(0.010, 0.005), slept_ms(0.010, 0.005)}) < 5.0);
  BOOST_TEST(slept_ms(0.010, 0.010) >= 9.9);
  BOOST_TEST(slept_ms(0.010, -1) >= 9.9);  // unknown CPU time: the wall time
  // A ComputeTimer on this thread measures its CPU time: a spin shows as CPU time, a sleep not. The spin
  // runs until the timer has seen 10 ms of it (on a busy machine that takes longer than 10 ms of wall
  // time), or 10 s have passed, which only a timer blind to CPU time lets happen.
  const ComputeTimer spin(true);
  volatile double x = 0;
  while (spin.cpu_seconds() < 0.01 && spin.wall_seconds() < 10) x = x + 1;
  BOOST_TEST(spin.cpu_seconds() >= 0.01);
  BOOST_TEST(spin.wall_seconds() < 10);
  const ComputeTimer idle(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  BOOST_TEST(idle.cpu_seconds() < 0.01);
  BOOST_TEST(ComputeTimer(false).cpu_seconds() < 0);
}

BOOST_AUTO_TEST_CASE(named_work_is_paced_by_the_least_compute_seen_for_it) {
  // 2x slower. Work 7 first computes in 10 ms (sleeps 10 ms more), then in 20 ms (caches cold: paced by
  // the 10 ms seen before, 2 x 10 = 20 ms, no sleep), then in 5 ms (the least now: sleeps 5 ms). Another
  // amount of the same kind is bounded by it: 8 by 5 x 8/7 ms, 4 by 5 ms; another kind has its own
  // least; unnamed work is paced by its own time.
  const Job job = job_of("", "slowdown = [2.0, 1.0, 1.0]");
  SlowdownEmulator e(job, 0);
  auto slept_ms = [&](double seconds, int64_t work, int kind = 0) {
    const auto t0 = std::chrono::steady_clock::now();
    e.delay(0, seconds, seconds, work, kind);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  BOOST_TEST(slept_ms(0.010, 7) >= 9.9);
  BOOST_TEST(std::min({slept_ms(0.020, 7), slept_ms(0.020, 7), slept_ms(0.020, 7)}) < 5.0);
  const double slept = slept_ms(0.005, 7);
  BOOST_TEST(slept >= 4.9);
  BOOST_TEST(std::min({slept, slept_ms(0.005, 7), slept_ms(0.005, 7)}) < 9.0);  // not paced by 10 ms
  const double eight = slept_ms(0.010, 8);  // paced by 2 x 5.71 ms: sleeps 1.4 ms, not 10
  BOOST_TEST(eight >= 1.3);
  BOOST_TEST(std::min({eight, slept_ms(0.010, 8), slept_ms(0.010, 8)}) < 6.0);
  BOOST_TEST(std::min({slept_ms(0.020, 4), slept_ms(0.020, 4), slept_ms(0.020, 4)}) < 5.0);  // 4: by 7's 5 ms
  BOOST_TEST(slept_ms(0.020, 8, 1) >= 19.9);  // another kind: its own
  BOOST_TEST(slept_ms(0.020, -1) >= 19.9);                                        // unnamed: its own time
}

BOOST_AUTO_TEST_CASE(pacing_holds_a_part_of_the_compute_until_a_slow_rank_would_have_done_it) {
  // 2x slower. 10 ms of CPU done after 1 ms of wall time (a part of a step, its gradients about to be
  // handed on): held until 20 ms. Work 7's least is 4 ms: a part of it is held no longer than 8 ms, and
  // on the least's time line (the fraction of its last run's CPU time done by then, times the least).
  const Job job = job_of("", "slowdown = [2.0, 1.0, 1.0]");
  SlowdownEmulator e(job, 0);
  auto paced_ms = [&](double wall, double cpu, int64_t work) {
    const auto t0 = std::chrono::steady_clock::now();
    e.pace(0, wall, cpu, work);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  BOOST_TEST(paced_ms(0.001, 0.010, -1) >= 18.9);
  e.delay(0, 0.004, 0.004, 7);  // work 7: 4 ms at least
  const double capped = paced_ms(0.001, 0.010, 7);
  BOOST_TEST(capped >= 6.9);
  BOOST_TEST(std::min({capped, paced_ms(0.001, 0.010, 7), paced_ms(0.001, 0.010, 7)}) < 15.0);
  // Its last run took 8 ms of CPU (a cold one): 4 ms into the next is half of it, held until 2 x 2 ms.
  e.delay(0, 0.008, 0.008, 7);
  const double half = paced_ms(0.001, 0.004, 7);
  BOOST_TEST(half >= 2.9);
  BOOST_TEST(std::min({half, paced_ms(0.001, 0.004, 7), paced_ms(0.001, 0.004, 7)}) < 6.0);
  BOOST_TEST(paced_ms(0.030, 0.010, -1) < 5.0);  // already as slow as that: no wait
  SlowdownEmulator none(job, 1);                 // rank 1 is not slowed
  const auto t0 = std::chrono::steady_clock::now();
  none.pace(0, 0.001, 0.010);
  const std::chrono::duration<double, std::milli> unpaced = std::chrono::steady_clock::now() - t0;
  BOOST_TEST(unpaced.count() < 5.0);
}
