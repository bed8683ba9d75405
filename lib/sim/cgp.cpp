// simulate_cgp (sim.h): CGP's groups as events (groups.h's play). A group runs exchange_every local steps
// (each its slowest member's compute of its share, varied, then the ring allreduce over its members; with
// I-DAT inside, the shares a Balancer of the group's own divides from the times it observes, as the
// runtime's group does, starting from the described speeds),
// then exchanges with the global model's server (the members' pushes, then the model pulled back, as
// lib/cgp's model charges it) and all-gathers. The terms are lib/cgp's (model.cpp, state.cpp).
#include <algorithm>
#include <numeric>

#include "lib/balance/balance.h"
#include "lib/core/error.h"
#include "lib/sim/groups.h"
#include "lib/sim/sim.h"

namespace dp::sim {
namespace {

struct Group {
  std::vector<int> members;
  int64_t batch = 0;
  double allreduce = 0, push = 0, pull = 0, latency = 0, gather = 0;
};

std::vector<Group> make_groups(const Cluster& c, const cgp::Workload& w, const cgp::Grouping& grouping) {
  const cgp::Grouping g = cgp::normalized(grouping);
  const int count = *std::max_element(g.begin(), g.end()) + 1;
  std::vector<Group> groups(static_cast<size_t>(count));
  for (int r = 0; r < c.size(); ++r) groups[size_t(g[size_t(r)])].members.push_back(r);
  for (Group& x : groups) {
    const double k = double(x.members.size());
    x.batch = std::max<int64_t>(1, std::llround(double(w.global_batch) * k / double(c.size())));
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
  const std::vector<Group> groups = make_groups(c, w, grouping);
  std::vector<Balancer> balancers;  // I-DAT inside each group
  for (const Group& g : groups) {
    BalanceOptions inside;
    inside.mode = w.balanced ? BalanceMode::idat : BalanceMode::equal;
    for (int m : g.members) inside.initial_speeds.push_back(w.balanced ? c.rank(m).speed : 1.0);
    balancers.emplace_back(inside, int(g.members.size()));
  }
  Slowness slowness(v, c.size(), seed);
  std::vector<ServerGroup> terms;
  for (const Group& g : groups)
    terms.push_back({g.push, g.pull, g.latency, g.gather, w.exchange_every * g.batch});
  // A group's local steps: each its slowest member's compute of its share, varied, then the allreduce.
  const LocalWork local = [&](size_t i, double t, int64_t step, int64_t& events) {
    const Group& g = groups[i];
    Balancer& balancer = balancers[i];
    std::vector<double> times(g.members.size());
    for (int64_t s = 0; s < w.exchange_every; ++s) {
      const std::vector<double>& slow = slowness.at(step);
      const std::vector<int64_t> shares = balancer.shares(g.batch);
      double slowest = 0;
      for (size_t k = 0; k < g.members.size(); ++k) {
        const int m = g.members[k];
        times[k] = double(shares[k]) * w.sample_seconds / c.rank(m).speed * slow[size_t(m)] * slowness.noise();
        slowest = std::max(slowest, times[k]);
      }
      balancer.observe(step * w.exchange_every + s, shares, times);
      t += slowest + g.allreduce;
      events += int64_t(g.members.size()) + 1;
    }
    return t;
  };
  return play_groups(terms, local, int64_t(w.hold_staleness), w.global_batch, steps);
}

}  // namespace dp::sim
