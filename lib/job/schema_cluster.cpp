// The checks of [cluster] (the cluster description) and [parallel.cgp] (cooperative grouping) that
// involve other keys: per-rank arrays and matrices sized by launch.ranks, per-kind arrays one entry per
// kind, node sizes adding up to the ranks, a fixed grouping naming every group from 0 up. Each error names
// the key and says how to fix it; the single-key rules are rows of schema.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "lib/job/schema_rules.h"

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

Check check_cluster_memory(const Job& j) {
  const auto& v = j.cluster.memory_gb;
  if (auto p = each(v, non_negative)) return p;
  return per_rank(v.size(), j, "cluster.memory_gb", "memory size");
}

Check check_kinds(const Job& j) {
  const auto& k = j.cluster.kinds;
  for (std::size_t i = 0; i < k.size(); ++i) {
    if (k[i].empty()) return Problem{"must not be empty", int(i), "name each device kind, e.g. \"a100\""};
    if (std::find(k.begin(), k.begin() + long(i), k[i]) != k.begin() + long(i))
      return Problem{fmt::format("names '{}' twice", k[i]), int(i)};
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
  if (auto p = each(v, non_negative)) return p;
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
