// lib/balance/emulate.h with [cluster.emulate] as_described: each rank slowed by fastest speed / its
// speed in [cluster] (per-rank speeds or kinds), times the other factors; without as_described, or through
// the constructor that sees only [cluster.emulate], the speeds change nothing.
#define BOOST_TEST_MODULE emulate
#include <boost/test/unit_test.hpp>

#include <string>

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
