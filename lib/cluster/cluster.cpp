// Building a Cluster: from a job's [cluster] keys, or drawn from its device kinds at any size; the link
// between two ranks by level or from the matrix.
#include "lib/cluster/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "lib/core/rng.h"

namespace dp {

Cluster::Cluster(std::vector<ClusterRank> ranks, Link same_node, Link same_rack, Link across_racks)
    : ranks_(std::move(ranks)), levels_{same_node, same_rack, across_racks} {}

Cluster::Cluster(std::vector<ClusterRank> ranks, std::vector<Link> matrix)
    : ranks_(std::move(ranks)), matrix_(std::move(matrix)) {
  levels_[0] = levels_[1] = levels_[2] = Link{};
}

std::vector<double> Cluster::speeds() const {
  std::vector<double> s;
  for (const ClusterRank& r : ranks_) s.push_back(r.speed);
  return s;
}

int Cluster::nodes() const {
  std::set<std::pair<int, int>> n;
  for (const ClusterRank& r : ranks_) n.insert({r.rack, r.node});
  return int(n.size());
}

int Cluster::racks() const {
  std::set<int> n;
  for (const ClusterRank& r : ranks_) n.insert(r.rack);
  return int(n.size());
}

LinkLevel Cluster::level(int a, int b) const {
  const ClusterRank &x = rank(a), &y = rank(b);
  if (x.rack != y.rack) return LinkLevel::cross;
  return x.node == y.node ? LinkLevel::node : LinkLevel::rack;
}

Link Cluster::link(int a, int b) const {
  if (!matrix_.empty()) return matrix_[size_t(a) * ranks_.size() + size_t(b)];
  return levels_[int(level(a, b))];
}

Cluster Cluster::with_speeds(const std::vector<double>& speeds) const {
  Cluster c = *this;
  for (size_t r = 0; r < c.ranks_.size() && r < speeds.size(); ++r) c.ranks_[r].speed = speeds[r];
  return c;
}

Cluster Cluster::with_memory(const std::vector<double>& memory_gb) const {
  Cluster c = *this;
  for (size_t r = 0; r < c.ranks_.size() && r < memory_gb.size(); ++r) c.ranks_[r].memory_gb = memory_gb[r];
  return c;
}

Cluster Cluster::subset(const std::vector<int>& ranks) const {
  if (!has_matrix()) {  // the levels stay levels
    Cluster c = *this;
    c.ranks_.clear();
    for (int r : ranks) c.ranks_.push_back(ranks_[size_t(r)]);
    return c;
  }
  std::vector<ClusterRank> kept;
  std::vector<Link> matrix(ranks.size() * ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    kept.push_back(ranks_[size_t(ranks[i])]);
    for (size_t j = 0; j < ranks.size(); ++j)
      if (i != j) matrix[i * ranks.size() + j] = link(ranks[i], ranks[j]);
  }
  return Cluster(std::move(kept), std::move(matrix));
}

std::string Cluster::describe() const {
  std::string s = fmt::format("{} rank(s) on {} node(s) in {} rack(s); links ", size(), nodes(), racks());
  if (!matrix_.empty()) return s + "from a matrix";
  auto one = [](const Link& l) { return fmt::format("{:g} Gbit/s {:g} us", l.gbps, l.latency_us); };
  s += one(levels_[0]) + " in a node";
  if (nodes() > racks()) s += ", " + one(levels_[1]) + " in a rack";
  if (racks() > 1) s += ", " + one(levels_[2]) + " across racks";
  return s;
}

namespace {

// Nodes and racks of `count` ranks: node_sizes, or ranks_per_node to a node (`default_per_node` when 0),
// nodes_per_rack to a rack (`default_per_rack` when 0; 0 there: one rack).
void place(std::vector<ClusterRank>& ranks, const ClusterSection& c, int64_t default_per_node,
           int64_t default_per_rack) {
  std::vector<int64_t> sizes = c.node_sizes;
  const int64_t n = int64_t(ranks.size());
  if (sizes.empty()) {
    const int64_t per = c.ranks_per_node > 0 ? c.ranks_per_node : default_per_node > 0 ? default_per_node : n;
    for (int64_t left = n; left > 0; left -= per) sizes.push_back(std::min(per, left));
  }
  const int64_t per_rack = c.nodes_per_rack > 0 ? c.nodes_per_rack : default_per_rack;
  size_t r = 0;
  for (size_t node = 0; node < sizes.size(); ++node)
    for (int64_t i = 0; i < sizes[node] && r < ranks.size(); ++i, ++r) {
      ranks[r].node = int(node);
      ranks[r].rack = per_rack > 0 ? int(int64_t(node) / per_rack) : 0;
    }
}

Link level_link(double gbps, double latency_us) { return Link{gbps, latency_us}; }

}  // namespace

Cluster cluster_from_job(const Job& job) {
  const ClusterSection& c = job.cluster;
  const size_t n = size_t(job.launch.ranks);
  std::vector<ClusterRank> ranks(n);
  if (!c.kinds.empty()) {
    size_t r = 0;
    for (size_t k = 0; k < c.kinds.size(); ++k)
      for (int64_t i = 0; i < c.kind_counts[k] && r < n; ++i, ++r) {
        ranks[r].kind = c.kinds[k];
        ranks[r].speed = c.kind_speeds[k];
        ranks[r].memory_gb = k < c.kind_memory_gb.size() ? c.kind_memory_gb[k] : 0;
      }
  }
  for (size_t r = 0; r < n; ++r) {
    if (r < c.speeds.size()) ranks[r].speed = c.speeds[r];
    if (r < c.memory_gb.size()) ranks[r].memory_gb = c.memory_gb[r];
  }
  place(ranks, c, 0, 0);
  const LinksSection& l = c.links;
  if (!l.gbps.empty()) {
    std::vector<Link> matrix(n * n);
    const Cluster levels(ranks, level_link(l.node_gbps, l.node_latency_us), level_link(l.rack_gbps, l.rack_latency_us),
                         level_link(l.cross_gbps, l.cross_latency_us));
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b) {
        const size_t i = a * n + b;
        const double latency = l.latency_us.empty() ? (a == b ? 0 : levels.link(int(a), int(b)).latency_us)
                                                    : l.latency_us[i];
        matrix[i] = Link{a == b ? l.node_gbps : l.gbps[i], latency};
      }
    return Cluster(std::move(ranks), std::move(matrix));
  }
  return Cluster(std::move(ranks), level_link(l.node_gbps, l.node_latency_us),
                 level_link(l.rack_gbps, l.rack_latency_us), level_link(l.cross_gbps, l.cross_latency_us));
}

Cluster draw_cluster(const Job& job, int workers, uint64_t seed) {
  const ClusterSection& c = job.cluster;
  // The mix: each kind's share of the job's ranks (or the job's per-rank speeds as kinds of one each).
  std::vector<std::string> kinds = c.kinds;
  std::vector<double> weights, speeds = c.kind_speeds, memory = c.kind_memory_gb;
  for (int64_t count : c.kind_counts) weights.push_back(double(count));
  if (kinds.empty()) {
    const Cluster here = cluster_from_job(job);
    for (int r = 0; r < here.size(); ++r) {
      kinds.push_back(fmt::format("rank{}", r));
      weights.push_back(1);
      speeds.push_back(here.rank(r).speed);
      memory.push_back(here.rank(r).memory_gb);
    }
  }
  memory.resize(kinds.size(), 0.0);
  // Largest-remainder apportionment of `workers` to the kinds, then a seeded shuffle of the order.
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<int64_t> counts(kinds.size());
  std::vector<std::pair<double, size_t>> remainders;
  int64_t given = 0;
  for (size_t k = 0; k < kinds.size(); ++k) {
    const double exact = double(workers) * weights[k] / total;
    counts[k] = int64_t(std::floor(exact));
    given += counts[k];
    remainders.push_back({exact - double(counts[k]), k});
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < workers; ++i, ++given) ++counts[remainders[i % remainders.size()].second];
  std::vector<ClusterRank> ranks;
  for (size_t k = 0; k < kinds.size(); ++k)
    for (int64_t i = 0; i < counts[k]; ++i) ranks.push_back({speeds[k], memory[k], kinds[k], 0, 0});
  Rng rng(seed);
  for (size_t i = ranks.size(); i > 1; --i) std::swap(ranks[i - 1], ranks[size_t(rng.below(i))]);
  ClusterSection layout = c;
  layout.node_sizes.clear();
  place(ranks, layout, 8, 4);
  const LinksSection& l = c.links;
  return Cluster(std::move(ranks), level_link(l.node_gbps, l.node_latency_us),
                 level_link(l.rack_gbps, l.rack_latency_us), level_link(l.cross_gbps, l.cross_latency_us));
}

}  // namespace dp
