// The checks of [cluster] (the cluster description) and [parallel.cgp] (cooperative grouping) that
// involve other keys: per-rank arrays and matrices sized by launch.ranks, per-kind arrays one entry per
// kind, nodes that hold the ranks (node sizes adding up to them, ranks_per_node dividing them, no more
// nodes to a rack than there are nodes), a fixed grouping naming every group from 0 up; and the warnings
// of link levels out of order. Each names the key and says how to fix it; the single-key rules are rows
// of schema.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "lib/job/schema_rules.h"
#include "lib/job/suggest.h"

namespace dp::job_detail {

namespace {

// `size` entries where `want` are needed, for an array given non-empty.
Check sized(std::size_t size, int64_t want, const std::string& what_want, const std::string& hint,
            const std::string& other) {
  if (size == 0 || want < 1 || int64_t(size) == want) return std::nullopt;
  return Problem{fmt::format("must have {}, got {}", what_want, size), -1, hint, other};
}

Check per_rank(std::size_t size, const Job& j, const std::string& key, const char* what) {
  return sized(size, j.launch.ranks, fmt::format("one entry per rank (launch.ranks = {})", j.launch.ranks),
               fmt::format("give one {} per rank, or leave {} empty", what, key), "launch.ranks");
}

Check per_kind(std::size_t size, const Job& j, const std::string& key) {
  if (size > 0 && j.cluster.kinds.empty())
    return Problem{"is given without cluster.kinds", -1, "name the kinds: kinds = [\"a100\", \"v100\"]"};
  return sized(size, int64_t(j.cluster.kinds.size()),
               fmt::format("one entry per kind of cluster.kinds ({})", j.cluster.kinds.size()),
               fmt::format("give one entry of {} per kind", key), "cluster.kinds");
}

}  // namespace

Check check_group_count(const Job& j) {
  const int64_t g = j.parallel.cgp.group_count, ranks = j.launch.ranks;
  if (auto p = at_least(g, 0)) return p;
  if (ranks < 1 || g <= ranks) return std::nullopt;
  return Problem{fmt::format("{} groups cannot be formed from launch.ranks ({}) ranks", g, ranks), -1,
                 "a group holds at least one rank: lower parallel.cgp.group_count, or 0 to let the solver choose",
                 "launch.ranks"};
}

Check check_cgp_groups(const Job& j) {
  const auto& g = j.parallel.cgp.groups;
  if (g.empty()) return std::nullopt;
  if (auto p = each(g, [](int64_t v) { return at_least(v, 0); })) return p;
  if (auto p = per_rank(g.size(), j, "parallel.cgp.groups", "group number")) return p;
  const int64_t count = *std::max_element(g.begin(), g.end()) + 1;
  for (int64_t c = 0; c < count; ++c)
    if (std::find(g.begin(), g.end(), c) == g.end())
      return Problem{fmt::format("names group {} but no rank is in group {}", count - 1, c), -1,
                     "number the groups 0, 1, ... without gaps"};
  if (j.parallel.cgp.group_count > 0 && j.parallel.cgp.group_count != count)
    return Problem{fmt::format("forms {} groups but parallel.cgp.group_count is {}", count,
                               j.parallel.cgp.group_count),
                   -1, "leave group_count at 0 when the groups are given"};
  return std::nullopt;
}

Check check_cluster_speeds(const Job& j) {
  const auto& v = j.cluster.speeds;
  if (auto p = each(v, positive)) {
    p->hint = "a speed is relative: 1 for the reference device, 0.5 for one half as fast";
    return p;
  }
  if (!v.empty() && !j.cluster.kinds.empty())
    return Problem{"and cluster.kinds both give the speeds", -1, "give speeds per rank or per kind, not both"};
  return per_rank(v.size(), j, "cluster.speeds", "speed");
}

// A device's memory, when given: unknown memory is said by leaving the key out, never by 0.
static Check memory_size(double gb) {
  if (auto p = positive(gb))
    return Problem{p->what, -1, "a device's memory in GB, e.g. 80; leave the key out when it is unknown"};
  return std::nullopt;
}

Check check_cluster_memory(const Job& j) {
  const auto& v = j.cluster.memory_gb;
  if (auto p = each(v, memory_size)) return p;
  return per_rank(v.size(), j, "cluster.memory_gb", "memory size");
}

Check check_kinds(const Job& j) {
  const auto& k = j.cluster.kinds;
  for (std::size_t i = 0; i < k.size(); ++i) {
    if (k[i].empty()) return Problem{"must not be empty", int(i), "name each device kind, e.g. \"a100\""};
    for (std::size_t before = 0; before < i; ++before)  // device names are case-insensitive: A100 is a100
      if (lowercase(k[before]) == lowercase(k[i]))
        return Problem{k[before] == k[i] ? fmt::format("names '{}' twice", k[i])
                                         : fmt::format("names '{}' twice (as '{}')", k[i], k[before]),
                       int(i), "device kinds are case-insensitive; give each kind once"};
  }
  if (!k.empty() && j.cluster.kind_counts.empty())
    return Problem{"needs cluster.kind_counts", -1, "give how many ranks are of each kind: kind_counts = [4, 2]"};
  if (!k.empty() && j.cluster.kind_speeds.empty())
    return Problem{"needs cluster.kind_speeds", -1, "give each kind's relative speed: kind_speeds = [1, 0.5]"};
  return std::nullopt;
}

Check check_kind_counts(const Job& j) {
  const auto& c = j.cluster.kind_counts;
  if (auto p = each(c, rank_count)) return p;  // so that their sum cannot overflow
  if (auto p = per_kind(c.size(), j, "cluster.kind_counts")) return p;
  const int64_t total = std::accumulate(c.begin(), c.end(), int64_t(0));
  if (c.empty() || j.launch.ranks < 1 || total == j.launch.ranks) return std::nullopt;
  return Problem{fmt::format("adds up to {} ranks, but launch.ranks is {}", total, j.launch.ranks), -1,
                 "the counts of the kinds must add up to launch.ranks", "launch.ranks"};
}

Check check_kind_speeds(const Job& j) {
  const auto& v = j.cluster.kind_speeds;
  if (auto p = each(v, positive)) return p;
  return per_kind(v.size(), j, "cluster.kind_speeds");
}

Check check_kind_memory(const Job& j) {
  const auto& v = j.cluster.kind_memory_gb;
  if (auto p = each(v, memory_size)) return p;
  return per_kind(v.size(), j, "cluster.kind_memory_gb");
}

Check check_node_sizes(const Job& j) {
  const auto& n = j.cluster.node_sizes;
  if (auto p = each(n, rank_count)) return p;  // so that their sum cannot overflow
  if (!n.empty() && j.cluster.ranks_per_node > 0)
    return Problem{"and cluster.ranks_per_node both give the nodes", -1, "give one of them"};
  const int64_t total = std::accumulate(n.begin(), n.end(), int64_t(0));
  if (n.empty() || j.launch.ranks < 1 || total == j.launch.ranks) return std::nullopt;
  return Problem{fmt::format("adds up to {} ranks, but launch.ranks is {}", total, j.launch.ranks), -1,
                 "the nodes' sizes must add up to launch.ranks", "launch.ranks"};
}

// Ranks fill whole nodes: node_sizes says nodes of different sizes.
Check check_ranks_per_node(const Job& j) {
  const int64_t per = j.cluster.ranks_per_node, ranks = j.launch.ranks;
  if (auto p = at_least(per, 0)) return p;
  // With node_sizes too, node_sizes' check says that only one of them may be given.
  if (per == 0 || ranks < 1 || ranks % per == 0 || !j.cluster.node_sizes.empty()) return std::nullopt;
  if (per > ranks)
    return Problem{fmt::format("is {}, more than launch.ranks ({})", per, ranks), -1,
                   fmt::format("the ranks fill whole nodes: at most {} to a node, or leave ranks_per_node at 0 "
                               "(every rank on one node)", ranks),
                   "launch.ranks"};
  return Problem{fmt::format("is {}, which does not divide launch.ranks ({}): the last node would hold {}", per,
                             ranks, ranks % per),
                 -1,
                 "the ranks fill whole nodes: give a divisor of launch.ranks, or each node's ranks with node_sizes "
                 "(instead of ranks_per_node)",
                 "launch.ranks"};
}

// The nodes the ranks are on (node_sizes, or ranks_per_node to a node, or one).
static int64_t node_count(const Job& j) {
  if (!j.cluster.node_sizes.empty()) return int64_t(j.cluster.node_sizes.size());
  const int64_t per = j.cluster.ranks_per_node;
  return per > 0 ? (j.launch.ranks + per - 1) / per : 1;
}

// A rack may hold fewer nodes than the others (the last one), but not more nodes than there are.
Check check_nodes_per_rack(const Job& j) {
  const int64_t per = j.cluster.nodes_per_rack;
  if (auto p = at_least(per, 0)) return p;
  if (per == 0 || j.launch.ranks < 1 || j.launch.ranks > kMaxRanks) return std::nullopt;
  const int64_t nodes = node_count(j);
  if (per <= nodes) return std::nullopt;
  const std::string other = !j.cluster.node_sizes.empty()  ? "cluster.node_sizes"
                            : j.cluster.ranks_per_node > 0 ? "cluster.ranks_per_node"
                                                           : "launch.ranks";
  return Problem{fmt::format("is {}, more than the {} node(s) the ranks are on", per, nodes), -1,
                 fmt::format("at most {} (one rack), or 0; the nodes come from ranks_per_node or node_sizes", nodes),
                 other};
}

// A warning when `fast` (the level closer to the ranks) is slower than `slow`, the level out from it, where
// the cluster has links of level `slow` (`used`) and no matrix replaces the levels.
static Check levels_in_order(const Job& j, bool used, double fast, const char* fast_key, double slow,
                             const char* slow_key) {
  if (!used || !j.cluster.links.gbps.empty() || !(fast < slow)) return std::nullopt;
  return Problem{fmt::format("is {} Gbit/s, slower than cluster.links.{} ({} Gbit/s)", number_text(fast), slow_key,
                             number_text(slow)),
                 -1,
                 fmt::format("links nearer the ranks are usually the faster ones: check {} and {} (Gbit/s each way)",
                             fast_key, slow_key),
                 std::string("cluster.links.") + slow_key};
}

// Links between nodes of a rack exist with two nodes or more, links across racks with two racks or more.
Check warn_node_below_rack(const Job& j) {
  const LinksSection& l = j.cluster.links;
  const bool nodes = j.launch.ranks <= kMaxRanks && node_count(j) > 1;
  return levels_in_order(j, nodes, l.node_gbps, "node_gbps", l.rack_gbps, "rack_gbps");
}

Check warn_rack_below_cross(const Job& j) {
  const LinksSection& l = j.cluster.links;
  const int64_t per_rack = j.cluster.nodes_per_rack;
  const bool racks = j.launch.ranks <= kMaxRanks && per_rack > 0 && node_count(j) > per_rack;
  return levels_in_order(j, racks, l.rack_gbps, "rack_gbps", l.cross_gbps, "cross_gbps");
}

// ranks x ranks entries, row-major; the diagonal (a rank to itself) is ignored.
static Check matrix(const std::vector<double>& m, const Job& j, bool bandwidths) {
  const int64_t n = j.launch.ranks;
  if (n < 1 || n > kMaxRanks) return std::nullopt;  // launch.ranks' own error, reported by its check
  if (auto p = sized(m.size(), n * n, fmt::format("launch.ranks squared ({}) entries, a row per rank", n * n),
                     "write the matrix row by row, ranks x ranks entries", "launch.ranks"))
    return p;
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (int64_t(i) / n == int64_t(i) % n) continue;
    if (auto p = bandwidths ? bandwidth(m[i]) : non_negative(m[i]))
      return Problem{fmt::format("(from rank {} to rank {}) {}", int64_t(i) / n, int64_t(i) % n, p->what), int(i),
                     p->hint};
  }
  return std::nullopt;
}

Check check_link_matrix(const Job& j) { return matrix(j.cluster.links.gbps, j, true); }

Check check_latency_matrix(const Job& j) { return matrix(j.cluster.links.latency_us, j, false); }

}  // namespace dp::job_detail
