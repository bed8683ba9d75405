// GroupingState: per-group aggregates kept up to date as ranks join and leave groups, and each group's
// terms of the model computed from them: the local batch, compute time (I-DAT or equal shares, with
// jitter), ring allreduce over the slowest link between members, the uncontended exchange with the
// server and the all-gather after it.
#include <algorithm>
#include <cmath>

#include "lib/cgp/cgp_internal.h"
#include "lib/core/error.h"

namespace dp::cgp::detail {

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
  const Workload& w = w_;
  if (!g.min_valid) {
    g.min_speed = std::numeric_limits<double>::infinity();
    g.speed_sum = 0;  // re-summed too, so that long searches do not drift
    for (int m : g.members) {
      g.min_speed = std::min(g.min_speed, t_.speed[size_t(m)]);
      g.speed_sum += t_.speed[size_t(m)];
    }
    g.min_valid = true;
  }
  GroupTerms& out = g.cached;
  out.batch = std::max<int64_t>(1, std::llround(double(w.global_batch) * k / t_.n));
  const double b = double(out.batch);
  if (w.balanced) {  // I-DAT: every member's share takes the same time on average
    out.compute = b * w.sample_seconds / g.speed_sum * (1 + w.compute_cv * expected_max_of_normals(k));
  } else {           // equal shares: the slowest member decides, or one of those its jitter reaches
    const double slowest = std::ceil(b / k) * w.sample_seconds / g.min_speed;
    int contenders = 1;
    if (w.compute_cv > 0 && k > 1) {
      contenders = 0;
      const double reach = g.min_speed / std::max(1e-9, 1 - 2 * w.compute_cv);
      for (int m : g.members) contenders += t_.speed[size_t(m)] <= reach ? 1 : 0;
    }
    out.compute = slowest * (1 + w.compute_cv * expected_max_of_normals(contenders));
  }
  // Ring allreduce: 2(k-1) messages of 1/k of the update over the slowest link between members.
  double bw = std::numeric_limits<double>::infinity(), lat = 0;
  if (k > 1) {
    if (t_.matrix) {
      if (!g.links_valid) {
        g.bw_min = std::numeric_limits<double>::infinity();
        g.lat_max = 0;
        for (int a : g.members)
          for (int c : g.members)
            if (a != c) {
              const Link l = t_.cluster->link(a, c);
              g.bw_min = std::min(g.bw_min, l.gbps);
              g.lat_max = std::max(g.lat_max, l.latency_us);
            }
        g.links_valid = true;
      }
      bw = g.bw_min;
      lat = g.lat_max;
    } else {
      const bool uses[3] = {g.nodes_with_pair > 0, g.racks_with_two_nodes > 0, g.racks_used > 1};
      for (int lv = 0; lv < 3; ++lv)
        if (uses[lv]) bw = std::min(bw, t_.level[lv].gbps), lat = std::max(lat, t_.level[lv].latency_us);
    }
    const double bits = w.param_bytes * 8 / (bw * 1e9);
    out.allreduce = 2.0 * (k - 1) / k * bits + 2.0 * (k - 1) * lat * 1e-6;
    // After an exchange the members all-gather their slices of the global model: (k-1) messages of 1/k.
    out.gather = double(k - 1) / k * bits + (k - 1) * lat * 1e-6;
  } else {
    out.allreduce = out.gather = 0;
  }
  out.step = out.compute + out.allreduce;
  // Exchange: every member other than the server sends its 1/k shard of the update; the server's
  // interface takes them in one after another, and sends each member its shard of the global model back
  // as soon as that member's shard is applied (its outgoing direction works while the incoming one
  // still takes the others in), so the exchange holds the server for the sum of the pushes, the last
  // member's pull, and a latency each way. The server's own shard costs nothing.
  const double shard = w.param_bytes / k;
  double push = 0, pull = 0, latency = 0;
  if (t_.matrix) {
    for (int m : g.members)
      if (m != t_.server) {
        const Link in = t_.cluster->link(m, t_.server), back = t_.cluster->link(t_.server, m);
        push += in.bandwidth_seconds(shard);
        pull = std::max(pull, back.bandwidth_seconds(shard));
        latency = std::max({latency, in.latency_us * 1e-6, back.latency_us * 1e-6});
      }
  } else {
    const int counts[3] = {g.on_server_node, g.in_server_rack, g.off_server_rack};
    for (int lv = 0; lv < 3; ++lv)
      if (counts[lv] > 0) {
        const double one = t_.level[lv].bandwidth_seconds(shard);
        push += counts[lv] * one;
        pull = std::max(pull, one);
        latency = std::max(latency, t_.level[lv].latency_us * 1e-6);
      }
  }
  out.exchange = push > 0 ? push + pull + 2 * latency : 0;
  g.dirty = false;
}

const GroupTerms& GroupingState::terms(int group) {
  Group& g = groups_[size_t(group)];
  DP_CHECK(!g.members.empty(), "terms of an empty group");
  if (g.dirty) compute_terms(g);
  return g.cached;
}

Score GroupingState::score(std::vector<GroupTimes>* times, std::vector<int>* slot_of) {
  scratch_.clear();
  if (slot_of) slot_of->clear();
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].members.empty()) continue;
    scratch_.push_back(terms(int(g)));
    if (slot_of) slot_of->push_back(int(g));
  }
  DP_CHECK(!scratch_.empty(), "score of an empty grouping");
  return combine(scratch_, w_, times);
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
