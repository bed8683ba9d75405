// simulate_cgp (sim.h): CGP's groups as events. A group runs exchange_every local steps (each its
// slowest member's compute of its share, varied, then the ring allreduce over its members), then
// exchanges with the global model's server: the server's interface serves one group's exchange at a
// time (first come, first served; the members' pushes, then the model pulled back, as lib/cgp's model
// charges it), the update is applied when the runtime's hold allows, and the members all-gather. An
// update's staleness is the number of other groups' updates applied since the group last read the
// global model. The terms are lib/cgp's (model.cpp, state.cpp).
#include <algorithm>
#include <numeric>
#include <queue>

#include "lib/balance/balance.h"
#include "lib/core/error.h"
#include "lib/sim/sim.h"
#include "lib/sim/summary.h"

namespace dp::sim {
namespace {

struct Group {
  std::vector<int> members;
  std::vector<int64_t> shares;  // of a local step's batch
  int64_t batch = 0;
  double allreduce = 0, push = 0, pull = 0, latency = 0, gather = 0;
  int64_t read_version = 0;
};

std::vector<Group> make_groups(const Cluster& c, const cgp::Workload& w, const cgp::Grouping& grouping) {
  const cgp::Grouping g = cgp::normalized(grouping);
  const int count = *std::max_element(g.begin(), g.end()) + 1;
  std::vector<Group> groups(static_cast<size_t>(count));
  for (int r = 0; r < c.size(); ++r) groups[size_t(g[size_t(r)])].members.push_back(r);
  for (Group& x : groups) {
    const double k = double(x.members.size());
    x.batch = std::max<int64_t>(1, std::llround(double(w.global_batch) * k / double(c.size())));
    std::vector<double> speeds;
    for (int m : x.members) speeds.push_back(w.balanced ? c.rank(m).speed : 1.0);
    x.shares = divide_batch(x.batch, speeds, 0);
    x.allreduce = ring_allreduce_seconds(c, x.members, w.param_bytes);
    x.gather = double(x.members.size() - 1) * ring_phase_seconds(c, x.members, w.param_bytes / k);
    const cgp::ServerTraffic traffic = cgp::server_traffic(c, x.members, w.server_rank, w.param_bytes / k);
    x.push = traffic.push, x.pull = traffic.pull, x.latency = traffic.latency;
  }
  return groups;
}

}  // namespace

Result simulate_cgp(const Cluster& c, const cgp::Workload& w, const cgp::Grouping& grouping, const Variability& v,
                    int64_t steps, uint64_t seed) {
  DP_CHECK(int(grouping.size()) == c.size() && steps > 0 && w.sample_seconds > 0, "a CGP simulation's inputs");
  std::vector<Group> groups = make_groups(c, w, grouping);
  const size_t count = groups.size();
  const int64_t bound = int64_t(w.hold_staleness);
  Slowness slowness(v, c.size(), seed);
  const double target = double(steps) * double(w.global_batch);
  double samples = 0, staleness_sum = 0;
  int64_t version = 0, updates = 0;
  Result out;
  // Group g's local steps from time t; returns when they end.
  auto local_steps = [&](Group& g, double t) {
    for (int64_t s = 0; s < w.exchange_every; ++s) {
      const std::vector<double>& slow = slowness.at(int64_t(samples / double(w.global_batch)));
      double slowest = 0;
      for (size_t i = 0; i < g.members.size(); ++i) {
        const int m = g.members[i];
        slowest = std::max(slowest, double(g.shares[i]) * w.sample_seconds / c.rank(m).speed * slow[size_t(m)] *
                                        slowness.noise());
      }
      t += slowest + g.allreduce;
      out.events += int64_t(g.members.size()) + 1;
    }
    return t;
  };
  // Events: a group's local steps ended (ready: its members push), its pushes all received (complete).
  enum Kind { ready, complete };
  using Event = std::tuple<double, int, size_t>;  // time, kind, group
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  for (size_t i = 0; i < count; ++i) events.push({local_steps(groups[i], 0.0), ready, i});
  double interface_free = 0;    // the server's interface serves one group's exchange at a time
  std::vector<size_t> pending;  // complete requests in arrival order
  std::vector<bool> is_pending(count, false);
  // The runtime's hold (lib/train/cgp/cgp_exchange.cpp): an update waits while another group, not itself
  // waiting at the server, has already seen `bound` updates since its read.
  auto eligible = [&](size_t g) {
    for (size_t h = 0; h < count; ++h)
      if (h != g && !is_pending[h] && bound > 0 && version - groups[h].read_version >= bound) return false;
    return true;
  };
  double next_mark = double(w.global_batch), last_mark_t = 0;
  auto landed = [&](const Group& g, double t) {  // its samples count, a global batch at a time
    samples += double(w.exchange_every * g.batch);
    while (samples >= next_mark && next_mark <= target) {
      out.step_s.push_back(t - last_mark_t);
      last_mark_t = t;
      next_mark += double(w.global_batch);
    }
  };
  while (samples < target) {
    const auto [t, kind, i] = events.top();
    events.pop();
    Group& g = groups[i];
    if (count == 1) {  // one group: plain data parallelism, no server
      landed(g, t);
      events.push({local_steps(g, t), ready, i});
    } else if (kind == ready) {  // as lib/cgp's model: the exchange holds the interface, pushes to pull
      const double start = std::max(t, interface_free);
      interface_free = start + g.push + g.pull + 2 * g.latency;
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
        Group& x = groups[a];
        const double stale = double(version - x.read_version);
        staleness_sum += stale;
        out.max_staleness = std::max(out.max_staleness, stale);
        x.read_version = ++version;
        ++updates;
        ++out.events;
        landed(x, t);
        events.push({local_steps(x, t + x.pull + x.latency + x.gather), ready, a});
        j = 0;  // the update may have made an earlier request eligible
      }
    }
  }
  out.mean_staleness = updates > 0 ? staleness_sum / double(updates) : 0;
  summarize(out, double(out.step_s.size()) * double(w.global_batch));
  return out;
}

}  // namespace dp::sim
