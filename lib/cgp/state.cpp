// GroupingState: per-group aggregates kept up to date as ranks join and leave groups, and each group's
// terms of the model computed from them: the local batch, compute time (I-DAT or equal shares, with
// jitter), ring allreduce over the slowest link between members, the uncontended exchange with the
// server and the all-gather after it.
#include <algorithm>
#include <array>
#include <cmath>

#include "lib/cgp/cgp_internal.h"
#include "lib/core/error.h"

namespace dp::cgp::detail {
namespace {

// The slowest member's speed and the members' speed sum, afresh (so that long searches do not drift).
void resum_speeds(const std::vector<int>& members, const std::vector<double>& speed, double& min_speed,
                  double& speed_sum) {
  min_speed = std::numeric_limits<double>::infinity();
  speed_sum = 0;
  for (int m : members) {
    min_speed = std::min(min_speed, speed[size_t(m)]);
    speed_sum += speed[size_t(m)];
  }
}

// I-DAT: every member's share takes the same time on average.
double balanced_compute(double batch, int k, double speed_sum, const Workload& w) {
  return batch * w.sample_seconds / speed_sum * (1 + w.compute_cv * expected_max_of_normals(k));
}

// Equal shares: the slowest member decides, or one of those its jitter reaches.
double slowest_member_compute(double batch, const std::vector<int>& members, const std::vector<double>& speed,
                              double min_speed, const Workload& w) {
  const int k = int(members.size());
  const double slowest = std::ceil(batch / k) * w.sample_seconds / min_speed;
  int contenders = 1;
  if (w.compute_cv > 0 && k > 1) {
    contenders = 0;
    const double reach = min_speed / std::max(1e-9, 1 - 2 * w.compute_cv);
    for (int m : members) contenders += speed[size_t(m)] <= reach ? 1 : 0;
  }
  return slowest * (1 + w.compute_cv * expected_max_of_normals(contenders));
}

// The slowest bandwidth and the largest latency a group's messages meet.
struct Bottleneck {
  double gbps = std::numeric_limits<double>::infinity();
  double latency_us = 0;
};

// Matrix clusters: over every link between two members, both ways.
Bottleneck slowest_link_between(const std::vector<int>& members, const Cluster& cluster) {
  Bottleneck b;
  for (int a : members)
    for (int c : members)
      if (a != c) {
        const Link l = cluster.link(a, c);
        b.gbps = std::min(b.gbps, l.gbps);
        b.latency_us = std::max(b.latency_us, l.latency_us);
      }
  return b;
}

// Level clusters: over the levels (same node, same rack, across racks) the group uses.
Bottleneck slowest_level_used(const std::array<bool, 3>& uses, const Topology& t) {
  Bottleneck b;
  for (int lv = 0; lv < 3; ++lv)
    if (uses[size_t(lv)]) {
      b.gbps = std::min(b.gbps, t.level[lv].gbps);
      b.latency_us = std::max(b.latency_us, t.level[lv].latency_us);
    }
  return b;
}

// Ring allreduce: 2(k-1) messages of 1/k of the update over the slowest link between members. After
// an exchange the members all-gather their slices of the global model: (k-1) messages of 1/k.
void add_ring_terms(int k, double param_bytes, const Bottleneck& ring, GroupTerms& out) {
  const double bits = param_bytes * 8 / (ring.gbps * 1e9);
  out.allreduce = 2.0 * (k - 1) / k * bits + 2.0 * (k - 1) * ring.latency_us * 1e-6;
  out.gather = double(k - 1) / k * bits + (k - 1) * ring.latency_us * 1e-6;
}

// Matrix clusters: each member's own links to the server (server_traffic, cgp.h).
ServerTraffic traffic_over_links(const std::vector<int>& members, const Topology& t, double shard) {
  return server_traffic(*t.cluster, members, t.server, shard);
}

// Level clusters: the members on the server's node, in its rack and beyond it.
ServerTraffic traffic_over_levels(const std::array<int, 3>& counts, const Topology& t, double shard) {
  ServerTraffic x;
  for (int lv = 0; lv < 3; ++lv)
    if (counts[size_t(lv)] > 0) {
      const double one = t.level[lv].bandwidth_seconds(shard);
      x.push += counts[size_t(lv)] * one;
      x.pull = std::max(x.pull, one);
      x.latency = std::max(x.latency, t.level[lv].latency_us * 1e-6);
    }
  return x;
}

}  // namespace

GroupingState::GroupingState(const Topology& t, const Workload& w)
    : t_(t), w_(w), label_(size_t(t.n), -1), pos_(size_t(t.n), -1) {}

void GroupingState::clear() {
  std::fill(label_.begin(), label_.end(), -1);
  groups_.clear();
  nonempty_ = 0;
}

void GroupingState::assign(const Grouping& g) {
  DP_CHECK(int(g.size()) == t_.n, "one label per rank");
  clear();
  for (int r = 0; r < t_.n; ++r) {
    const int label = g[size_t(r)];
    DP_CHECK(label >= 0, "labels are at least 0");
    while (int(groups_.size()) <= label) groups_.emplace_back();
    add(r, label);
  }
}

int GroupingState::free_slot() {
  for (size_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].members.empty()) return int(g);
  groups_.emplace_back();
  return int(groups_.size()) - 1;
}

// Members per node and rack, and what they say about the links the group uses; delta is +1 or -1.
void GroupingState::count_levels(Group& g, int rank, int delta) {
  if (g.per_node.empty()) {
    g.per_node.assign(size_t(t_.nodes), 0);
    g.per_rack.assign(size_t(t_.racks), 0);
    g.nodes_in_rack.assign(size_t(t_.racks), 0);
  }
  const int node = t_.node[size_t(rank)], rack = t_.rack[size_t(rank)];
  int& on_node = g.per_node[size_t(node)];
  int& in_rack = g.per_rack[size_t(rack)];
  int& rack_nodes = g.nodes_in_rack[size_t(rack)];
  if (delta > 0) {
    if (++on_node == 2) ++g.nodes_with_pair;
    if (on_node == 1 && ++rack_nodes == 2) ++g.racks_with_two_nodes;
    if (++in_rack == 1) ++g.racks_used;
  } else {
    if (on_node-- == 2) --g.nodes_with_pair;
    if (on_node == 0 && rack_nodes-- == 2) --g.racks_with_two_nodes;
    if (--in_rack == 0) --g.racks_used;
  }
  const int s = t_.server;
  if (rank == s) return;  // the server's own shard does not travel
  if (node == t_.node[size_t(s)]) g.on_server_node += delta;
  else if (rack == t_.rack[size_t(s)]) g.in_server_rack += delta;
  else g.off_server_rack += delta;
}

void GroupingState::add(int rank, int group) {
  DP_CHECK(label_[size_t(rank)] < 0, "rank already in a group");
  while (int(groups_.size()) <= group) groups_.emplace_back();
  Group& g = groups_[size_t(group)];
  if (g.members.empty()) ++nonempty_;
  if (t_.matrix && g.links_valid)  // the new member's links to the others
    for (int m : g.members)
      for (const Link& l : {t_.cluster->link(m, rank), t_.cluster->link(rank, m)}) {
        g.bw_min = std::min(g.bw_min, l.gbps);
        g.lat_max = std::max(g.lat_max, l.latency_us);
      }
  if (!t_.matrix) count_levels(g, rank, +1);
  pos_[size_t(rank)] = int(g.members.size());
  g.members.push_back(rank);
  label_[size_t(rank)] = group;
  g.speed_sum += t_.speed[size_t(rank)];
  g.min_speed = std::min(g.min_speed, t_.speed[size_t(rank)]);
  g.dirty = true;
}

void GroupingState::remove(int rank) {
  const int group = label_[size_t(rank)];
  DP_CHECK(group >= 0, "rank in no group");
  Group& g = groups_[size_t(group)];
  const int p = pos_[size_t(rank)];
  g.members[size_t(p)] = g.members.back();
  pos_[size_t(g.members[size_t(p)])] = p;
  g.members.pop_back();
  label_[size_t(rank)] = -1;
  pos_[size_t(rank)] = -1;
  if (!t_.matrix) count_levels(g, rank, -1);
  g.dirty = true;
  if (g.members.empty()) {  // back to a clean slot
    --nonempty_;
    g.speed_sum = 0;
    g.min_speed = std::numeric_limits<double>::infinity();
    g.min_valid = true;
    g.bw_min = std::numeric_limits<double>::infinity();
    g.lat_max = 0;
    g.links_valid = true;
    return;
  }
  g.speed_sum -= t_.speed[size_t(rank)];
  if (t_.speed[size_t(rank)] <= g.min_speed) g.min_valid = false;
  if (t_.matrix) g.links_valid = false;
}

void GroupingState::compute_terms(Group& g) {
  const int k = int(g.members.size());
  if (!g.min_valid) {
    resum_speeds(g.members, t_.speed, g.min_speed, g.speed_sum);
    g.min_valid = true;
  }
  GroupTerms& out = g.cached;
  out.batch = std::max<int64_t>(1, std::llround(double(w_.global_batch) * k / t_.n));
  out.compute = w_.balanced ? balanced_compute(double(out.batch), k, g.speed_sum, w_)
                            : slowest_member_compute(double(out.batch), g.members, t_.speed, g.min_speed, w_);
  if (t_.matrix && k > 1 && !g.links_valid) {
    const Bottleneck between = slowest_link_between(g.members, *t_.cluster);
    g.bw_min = between.gbps;
    g.lat_max = between.latency_us;
    g.links_valid = true;
  }
  if (k > 1) {
    const Bottleneck ring = t_.matrix ? Bottleneck{g.bw_min, g.lat_max}
                                      : slowest_level_used({g.nodes_with_pair > 0, g.racks_with_two_nodes > 0,
                                                            g.racks_used > 1}, t_);
    add_ring_terms(k, w_.param_bytes, ring, out);
  } else {
    out.allreduce = out.gather = 0;
  }
  out.step = out.compute + out.allreduce;
  const double shard = w_.param_bytes / k;
  const ServerTraffic traffic = t_.matrix ? traffic_over_links(g.members, t_, shard)
                                          : traffic_over_levels({g.on_server_node, g.in_server_rack,
                                                                 g.off_server_rack}, t_, shard);
  out.exchange = traffic.push > 0 ? traffic.push + traffic.pull + 2 * traffic.latency : 0;
  g.dirty = false;
}

const GroupTerms& GroupingState::terms(int group) {
  Group& g = groups_[size_t(group)];
  DP_CHECK(!g.members.empty(), "terms of an empty group");
  if (g.dirty) compute_terms(g);
  return g.cached;
}

Score GroupingState::score(std::vector<GroupTimes>* times, std::vector<int>* slot_of, bool queued) {
  scratch_.clear();
  if (slot_of) slot_of->clear();
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].members.empty()) continue;
    scratch_.push_back(terms(int(g)));
    if (slot_of) slot_of->push_back(int(g));
  }
  DP_CHECK(!scratch_.empty(), "score of an empty grouping");
  return combine(scratch_, w_, times, queued);
}

Grouping GroupingState::grouping() const {
  Grouping out(size_t(t_.n), -1);
  std::vector<int> renumber(groups_.size(), -1);
  int next = 0;
  for (int r = 0; r < t_.n; ++r) {
    const int label = label_[size_t(r)];
    if (label < 0) continue;
    if (renumber[size_t(label)] < 0) renumber[size_t(label)] = next++;
    out[size_t(r)] = renumber[size_t(label)];
  }
  return out;
}

}  // namespace dp::cgp::detail
