// The server's queue played out (cgp.h: queued_waits). A closed form leaves out what decides throughput
// where one group's exchange is long: every group that finishes its local steps meanwhile waits for it,
// however light the average load. Here the groups' cycles run, without noise, against a server whose
// interface carries one exchange at a time, first come first served, until their turns settle; groups
// that can fall into turns that never collide do so. lib/sim's simulate_cgp plays out the same events
// with the job's noise and the hold besides.
#include <algorithm>
#include <queue>
#include <utility>

#include "lib/cgp/cgp.h"
#include "lib/core/error.h"

namespace dp::cgp::detail {

std::vector<double> queued_waits(const std::vector<double>& busy, const std::vector<double>& exchange) {
  const size_t groups = busy.size();
  DP_CHECK(exchange.size() == groups && groups > 0, "queued_waits: one busy time and one exchange per group");
  // Exchanges per group before the turns are taken to have settled, and counted after; a bound on all.
  constexpr int64_t kSettle = 16, kCounted = 48, kMaxExchanges = 400000;
  std::vector<int64_t> served(groups, 0);
  std::vector<double> waited(groups, 0.0);
  using Arrival = std::pair<double, size_t>;  // when a group has finished its local steps; which
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> arrivals;
  for (size_t g = 0; g < groups; ++g)
    if (exchange[g] > 0) arrivals.push({busy[g], g});  // a group without exchange never queues
  double free_at = 0;
  int64_t played = 0, unsettled = int64_t(arrivals.size());
  while (!arrivals.empty() && unsettled > 0 && played++ < kMaxExchanges) {
    const auto [t, g] = arrivals.top();
    arrivals.pop();
    const double start = std::max(t, free_at);
    if (served[g] >= kSettle) waited[g] += start - t;
    if (++served[g] == kSettle + kCounted) --unsettled;
    free_at = start + exchange[g];
    arrivals.push({free_at + busy[g], g});
  }
  std::vector<double> wait(groups, 0.0);
  for (size_t g = 0; g < groups; ++g)
    if (served[g] > kSettle) wait[g] = waited[g] / double(served[g] - kSettle);
  return wait;
}

}  // namespace dp::cgp::detail
