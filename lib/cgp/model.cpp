// CGP's performance model: the checks of its inputs, how the groups' times combine into throughput and
// staleness (with the server's contention and the runtime's hold), predict(), and the grouping helpers. The per-group terms
// (compute, allreduce, exchange) live with the aggregates they are computed from, in state.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "lib/cgp/cgp_internal.h"
#include "lib/core/error.h"

namespace dp::cgp {
namespace detail {

namespace {

void check_link(const Link& l, const std::string& where) {
  if (!(l.gbps > 0) || !std::isfinite(l.gbps) || !(l.latency_us >= 0) || !std::isfinite(l.latency_us))
    throw JobError(where, fmt::format("a link of {} Gbit/s and {} us cannot carry an update", l.gbps, l.latency_us),
                   "bandwidths must be positive and latencies at least 0");
}

void check_workload(const Workload& w, int n) {
  if (!(w.param_bytes >= 0) || !std::isfinite(w.param_bytes))
    throw JobError("model", fmt::format("the model's update has {} bytes", w.param_bytes), "the model has no size");
  if (w.global_batch < 1)
    throw JobError("train.global_batch", fmt::format("must be at least 1, got {}", w.global_batch));
  if (!(w.sample_seconds > 0) || !std::isfinite(w.sample_seconds))
    throw JobError("cluster.sample_rate", fmt::format("{} seconds per sample at speed 1 is not a compute time",
                                                      w.sample_seconds),
                   "give [cluster] sample_rate > 0, or 0 to time the model on this machine");
  if (w.exchange_every < 1)
    throw JobError("parallel.cgp.exchange_every", fmt::format("must be at least 1, got {}", w.exchange_every));
  if (w.server_rank < 0 || w.server_rank >= n)
    throw JobError("parallel.cgp", fmt::format("the server rank {} is not one of the {} ranks", w.server_rank, n));
}

// The factor f > 1 by which a saturated server stretches every exchange: the one that makes it exactly
// busy, sum_g x_g / (a_g + f x_g) = 1 (a_g: the group's computing time per cycle, x_g: its exchange).
// The left side falls and is convex in f, so Newton's method from f = 1 climbs to the root.
double saturation_factor(const std::vector<double>& a, const std::vector<double>& x) {
  double f = 1;
  for (int it = 0; it < 100; ++it) {
    double h = -1, dh = 0;
    for (size_t g = 0; g < a.size(); ++g) {
      const double d = a[g] + f * x[g];
      h += x[g] / d;
      dh -= x[g] * x[g] / (d * d);
    }
    if (h <= 1e-13 || dh == 0) break;
    const double next = f - h / dh;
    if (!(next > f)) break;
    f = next;
  }
  return f;
}

}  // namespace

Topology make_topology(const Cluster& c, const Workload& w) {
  Topology t;
  t.cluster = &c;
  t.n = c.size();
  if (t.n < 1) throw JobError("launch.ranks", "the cluster has no ranks");
  check_workload(w, t.n);
  std::map<std::pair<int, int>, int> nodes;
  std::map<int, int> racks;
  for (int r = 0; r < t.n; ++r) {
    const ClusterRank& cr = c.rank(r);
    if (!(cr.speed > 0) || !std::isfinite(cr.speed))
      throw JobError(fmt::format("cluster.speeds[{}]", r),
                     fmt::format("rank {} has speed {}: speeds must be positive and finite", r, cr.speed),
                     "give every rank a speed above 0 (measured ones: dptrain profile --compute)");
    t.speed.push_back(cr.speed);
    t.node.push_back(nodes.emplace(std::pair{cr.rack, cr.node}, int(nodes.size())).first->second);
    t.rack.push_back(racks.emplace(cr.rack, int(racks.size())).first->second);
  }
  t.nodes = int(nodes.size());
  t.racks = int(racks.size());
  t.matrix = c.has_matrix();
  t.server = w.server_rank;
  if (t.matrix) {
    for (int a = 0; a < t.n; ++a)
      for (int b = 0; b < t.n; ++b)
        if (a != b) check_link(c.link(a, b), fmt::format("cluster.links.gbps[{}]", a * t.n + b));
  } else {
    // Each level's link from one pair of that level (a level no pair has is never read).
    bool seen[3] = {false, false, false};
    std::vector<int> first_of_node(size_t(t.nodes), -1), first_of_rack(size_t(t.racks), -1);
    for (int r = 0; r < t.n; ++r) {
      int& fn = first_of_node[size_t(t.node[size_t(r)])];
      int& fr = first_of_rack[size_t(t.rack[size_t(r)])];
      const int partners[2] = {fn, fr};
      for (int other : partners) {
        if (other < 0) continue;
        const int lv = int(c.level(other, r));
        if (!seen[lv]) t.level[lv] = c.link(other, r), seen[lv] = true;
      }
      if (fn < 0) fn = r;
      if (fr < 0) fr = r;
    }
    if (t.racks > 1) t.level[2] = c.link(first_of_rack[0], first_of_rack[1]), seen[2] = true;
    const char* names[3] = {"cluster.links.node_gbps", "cluster.links.rack_gbps", "cluster.links.cross_gbps"};
    for (int lv = 0; lv < 3; ++lv)
      if (seen[lv]) check_link(t.level[lv], names[lv]);
  }
  return t;
}

namespace {
// Blom's approximation, Phi^-1((k - 0.375) / (k + 0.25)), within 0.02 of the exact value beyond 16.
double blom(int k) {
  const double p = (k - 0.375) / (k + 0.25);
  double lo = 0, hi = 40;
  for (int it = 0; it < 80; ++it) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}
}  // namespace

double expected_max_of_normals(int k) {
  // k = 1..16: the exact values (tabulated integrals); beyond, Blom's approximation (cached).
  static constexpr double kExact[17] = {0,      0,      0.5642, 0.8463, 1.0294, 1.1630, 1.2672, 1.3522, 1.4236,
                                        1.4850, 1.5388, 1.5864, 1.6292, 1.6680, 1.7034, 1.7359, 1.7660};
  if (k <= 16) return kExact[std::max(0, k)];
  constexpr int kCached = 4096;
  static const std::vector<double> cached = [] {
    std::vector<double> v(kCached + 1);
    for (int i = 17; i <= kCached; ++i) v[size_t(i)] = blom(i);
    return v;
  }();
  return k <= kCached ? cached[size_t(k)] : blom(k);
}

// The runtime's hold (cgp_exchange.h): an update waits while another group has already seen `bound`
// updates since its read. In the steady state every group g sees at most `bound` updates of the others
// in its cycle c_g: c_g * sum_{h != g} r_h <= bound, where r_h <= 1 / c_h is group h's rate of updates.
// The held groups are the fast ones, served in turn: r_h = min(1 / c_h, theta), with the largest theta
// that meets every group's bound (each side grows with theta: bisection). Returns the rates.
std::vector<double> held_rates(const std::vector<double>& cycle, double bound) {
  const size_t groups = cycle.size();
  std::vector<double> rate(groups);
  auto fill = [&](double theta) {
    double total = 0;
    for (size_t g = 0; g < groups; ++g) total += rate[g] = std::min(1 / cycle[g], theta);
    for (size_t g = 0; g < groups; ++g)
      if (cycle[g] * (total - rate[g]) > bound * (1 + 1e-12)) return false;
    return true;
  };
  double hi = 0;
  for (double c : cycle) hi = std::max(hi, 1 / c);
  const bool unheld = fill(hi);  // every group at its own rate
  if (unheld || bound <= 0) return rate;  // no bound: nobody waits
  double lo = 0;
  for (int it = 0; it < 60; ++it) {
    const double mid = 0.5 * (lo + hi);
    (fill(mid) ? lo : hi) = mid;
  }
  fill(lo);
  return rate;
}

Score combine(const std::vector<GroupTerms>& terms, const Workload& w, std::vector<GroupTimes>* times, bool queued) {
  const double every = double(w.exchange_every);
  const size_t groups = terms.size();
  Score s;
  if (times) times->assign(groups, GroupTimes{});
  if (groups == 1) {  // plain data parallelism: no exchange, nothing stale
    const double cycle = every * terms[0].step;
    s.samples_per_s = every * double(terms[0].batch) / cycle;
    if (times) (*times)[0] = GroupTimes{0, 0, cycle, s.samples_per_s, 0};
    return s;
  }
  // The server's offered load: the share of its time each group's exchanges take, uncontended.
  thread_local std::vector<double> busy, exchange, cycle;
  busy.resize(groups);
  exchange.resize(groups);
  cycle.resize(groups);
  for (size_t g = 0; g < groups; ++g) {
    busy[g] = every * terms[g].step + terms[g].gather;
    exchange[g] = terms[g].exchange;
    s.server_load += exchange[g] / (busy[g] + exchange[g]);
  }
  std::vector<double> wait(groups, 0.0);
  if (queued) {
    wait = queued_waits(busy, exchange);
  } else {
    const double stretch = s.server_load > 1 ? saturation_factor(busy, exchange) : 1.0;
    for (size_t g = 0; g < groups; ++g) wait[g] = (stretch - 1) * exchange[g];
  }
  for (size_t g = 0; g < groups; ++g) cycle[g] = busy[g] + exchange[g] + wait[g];
  const std::vector<double> rate = held_rates(cycle, w.hold_staleness);
  double total_rate = 0;
  for (double r : rate) total_rate += r;
  // Group g sees the others' updates of its cycle: c_g * sum_{h != g} r_h (unheld: c_g / c_h each).
  for (size_t g = 0; g < groups; ++g) {
    const double samples = every * double(terms[g].batch) * rate[g];
    const double staleness = cycle[g] * (total_rate - rate[g]);
    s.samples_per_s += samples;
    s.max_staleness = std::max(s.max_staleness, staleness);
    if (times) (*times)[g] = GroupTimes{exchange[g] + wait[g], std::max(0.0, 1 / rate[g] - cycle[g]), 1 / rate[g], samples, staleness};
  }
  return s;
}

}  // namespace detail

Workload job_workload(const Job& job, int64_t parameters, double sample_seconds) {
  Workload w;
  w.param_bytes = 4.0 * double(parameters);
  w.global_batch = job.train.global_batch;
  w.sample_seconds = sample_seconds;
  w.balanced = job.parallel.balance.mode == BalanceMode::idat;
  w.exchange_every = job.parallel.cgp.exchange_every;
  w.hold_staleness = double(job.parallel.cgp.max_staleness);
  return w;
}

SolveOptions solve_options(const Job& job) {
  const CgpSection& c = job.parallel.cgp;
  return {c.solver, double(c.max_staleness), int(c.group_count), job.job.seed, c.solver_seconds};
}

ServerTraffic server_traffic(const Cluster& c, const std::vector<int>& members, int server, double shard_bytes) {
  ServerTraffic x;
  for (int m : members)
    if (m != server) {
      const Link in = c.link(m, server), back = c.link(server, m);
      x.push += in.bandwidth_seconds(shard_bytes);
      x.pull = std::max(x.pull, back.bandwidth_seconds(shard_bytes));
      x.latency = std::max({x.latency, in.latency_us * 1e-6, back.latency_us * 1e-6});
    }
  return x;
}

Prediction predict(const Cluster& cluster, const Workload& w, const Grouping& g) {
  const detail::Topology t = detail::make_topology(cluster, w);
  if (int(g.size()) != t.n)
    throw JobError("parallel.cgp.groups", fmt::format("the grouping has {} entries for a cluster of {} ranks", g.size(), t.n),
                   "give one group number per rank");
  for (size_t r = 0; r < g.size(); ++r)
    if (g[r] < 0) throw JobError(fmt::format("parallel.cgp.groups[{}]", r), fmt::format("must be at least 0, got {}", g[r]));
  detail::GroupingState state(t, w);
  state.assign(normalized(g));
  std::vector<detail::GroupTimes> times;
  std::vector<int> slot_of;
  const detail::Score s = state.score(&times, &slot_of, /*queued=*/true);
  Prediction p;
  p.samples_per_s = s.samples_per_s;
  p.max_staleness = s.max_staleness;
  p.server_load = s.server_load;
  for (size_t i = 0; i < times.size(); ++i) {
    const int slot = slot_of[i];
    const detail::GroupTerms& gt = state.terms(slot);
    GroupPrediction gp;
    gp.members = state.members(slot);
    std::sort(gp.members.begin(), gp.members.end());
    for (int r : gp.members) gp.speed_sum += t.speed[size_t(r)];
    gp.batch = gt.batch;
    gp.compute_s = gt.compute;
    gp.allreduce_s = gt.allreduce;
    gp.step_s = gt.step;
    gp.exchange_s = times[i].exchange;
    gp.gather_s = times.size() > 1 ? gt.gather : 0;
    gp.held_s = times[i].held;
    gp.cycle_s = times[i].cycle;
    gp.samples_per_s = times[i].samples_per_s;
    gp.staleness = times[i].staleness;
    p.groups.push_back(std::move(gp));
  }
  std::sort(p.groups.begin(), p.groups.end(),
            [](const GroupPrediction& a, const GroupPrediction& b) { return a.members[0] < b.members[0]; });
  return p;
}

Grouping normalized(const Grouping& g) {
  std::map<int, int> renumber;
  Grouping out;
  out.reserve(g.size());
  for (int label : g) out.push_back(renumber.emplace(label, int(renumber.size())).first->second);
  return out;
}

std::string grouping_text(const Grouping& g) {
  const Grouping n = normalized(g);
  int groups = 0;
  for (int label : n) groups = std::max(groups, label + 1);
  std::vector<std::string> parts(static_cast<size_t>(groups));
  for (size_t r = 0; r < n.size(); ++r) {
    std::string& p = parts[size_t(n[r])];
    p += p.empty() ? '{' : ',';
    p += std::to_string(r);
  }
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += ' ';
    out += p;
    out += '}';
  }
  return out;
}

}  // namespace dp::cgp
