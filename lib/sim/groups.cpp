// play_groups (groups.h).
#include "lib/sim/groups.h"

#include <queue>
#include <set>
#include <tuple>

#include "lib/sim/summary.h"

namespace dp::sim {

Result play_groups(const std::vector<ServerGroup>& groups, const LocalWork& local, int64_t bound,
                   int64_t global_batch, int64_t steps) {
  const size_t count = groups.size();
  const double target = double(steps) * double(global_batch);
  double samples = 0, staleness_sum = 0;
  int64_t version = 0, updates = 0;
  std::vector<int64_t> read_version(count, 0);
  Result out;
  auto step_now = [&] { return int64_t(samples / double(global_batch)); };
  // Events: a group's local work ended (ready: its members push), its pushes all received (complete).
  enum Kind { ready, complete };
  using Event = std::tuple<double, int, size_t>;  // time, kind, group
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  for (size_t i = 0; i < count; ++i) events.push({local(i, 0.0, 0, out.events), ready, i});
  double interface_free = 0;   // the server's interface serves one group's exchange at a time
  std::set<std::pair<int64_t, size_t>> pending;  // complete requests by their group's read, oldest first
  // The runtime's hold (lib/train/cgp/cgp_exchange.cpp): an update waits while another group, not itself
  // waiting at the server, has already seen `bound` updates since its read. Whether one has depends on
  // the oldest read among the groups not waiting, the same for every waiting request: `reads` holds them.
  std::multiset<int64_t> reads(read_version.begin(), read_version.end());
  auto may_apply = [&] { return bound <= 0 || reads.empty() || version - *reads.begin() < bound; };
  double next_mark = double(global_batch), last_mark_t = 0;
  auto landed = [&](const ServerGroup& g, double t) {  // its samples count, a global batch at a time
    samples += double(g.samples);
    while (samples >= next_mark && next_mark <= target) {
      out.step_s.push_back(t - last_mark_t);
      last_mark_t = t;
      next_mark += double(global_batch);
    }
  };
  while (samples < target) {
    const auto [t, kind, i] = events.top();
    events.pop();
    const ServerGroup& g = groups[i];
    if (count == 1) {  // one group: synchronous training, no server
      landed(g, t);
      events.push({local(i, t, step_now(), out.events), ready, i});
    } else if (kind == ready) {  // the exchange holds the interface, pushes to pull
      // One that moves nothing over the network (a group on the server's own ranks) never queues, as
      // lib/cgp's queue has it.
      const bool moves = g.push + g.pull + g.latency > 0;
      const double start = moves ? std::max(t, interface_free) : t;
      if (moves) interface_free = start + g.push + g.pull + 2 * g.latency;
      events.push({start + g.push + g.latency, complete, i});
    } else {
      pending.insert({read_version[i], i});
      reads.erase(reads.find(read_version[i]));
      // Apply the waiting requests while the hold allows, the oldest read first (as the runtime's server
      // does: a slow group's update goes before the fast ones held for it); an update only makes the
      // others' reads older, so once one is held all are.
      while (!pending.empty() && may_apply()) {
        const size_t a = pending.begin()->second;
        pending.erase(pending.begin());
        const ServerGroup& x = groups[a];
        const double stale = double(version - read_version[a]);
        staleness_sum += stale;
        out.max_staleness = std::max(out.max_staleness, stale);
        read_version[a] = ++version;
        reads.insert(read_version[a]);
        ++updates;
        ++out.events;
        landed(x, t);
        events.push({local(a, t + x.pull + x.latency + x.gather, step_now(), out.events), ready, a});
      }
    }
  }
  out.mean_staleness = updates > 0 ? staleness_sum / double(updates) : 0;
  summarize(out, double(out.step_s.size()) * double(global_batch));
  return out;
}

}  // namespace dp::sim
