// play_groups (groups.h).
#include "lib/sim/groups.h"

#include <queue>
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
  double interface_free = 0;    // the server's interface serves one group's exchange at a time
  std::vector<size_t> pending;  // complete requests in arrival order
  std::vector<bool> is_pending(count, false);
  // The runtime's hold (lib/train/cgp/cgp_exchange.cpp): an update waits while another group, not itself
  // waiting at the server, has already seen `bound` updates since its read.
  auto eligible = [&](size_t g) {
    for (size_t h = 0; h < count; ++h)
      if (h != g && !is_pending[h] && bound > 0 && version - read_version[h] >= bound) return false;
    return true;
  };
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
      pending.push_back(i);
      is_pending[i] = true;
      for (size_t j = 0; j < pending.size();) {  // apply every eligible request, first come first served
        const size_t a = pending[j];
        if (!eligible(a)) {
          ++j;
          continue;
        }
        pending.erase(pending.begin() + long(j));
        is_pending[a] = false;
        const ServerGroup& x = groups[a];
        const double stale = double(version - read_version[a]);
        staleness_sum += stale;
        out.max_staleness = std::max(out.max_staleness, stale);
        read_version[a] = ++version;
        ++updates;
        ++out.events;
        landed(x, t);
        events.push({local(a, t + x.pull + x.latency + x.gather, step_now(), out.events), ready, a});
        j = 0;  // the update may have made an earlier request eligible
      }
    }
  }
  out.mean_staleness = updates > 0 ? staleness_sum / double(updates) : 0;
  summarize(out, double(out.step_s.size()) * double(global_batch));
  return out;
}

}  // namespace dp::sim
