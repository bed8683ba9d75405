// Range rules shared by the schema's rows (schema.cpp) and the checks of [parallel.balance] and
// [cluster.emulate] (schema_balance.cpp): single values (at least, in a range, finite), every element of
// an array, and the declarations of the cross-key checks defined in schema_balance.cpp.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "lib/job/schema.h"

namespace dp::job_detail {

using Check = std::optional<Problem>;

inline Check at_least(int64_t v, int64_t lo) {
  if (v >= lo) return std::nullopt;
  return Problem{fmt::format("must be at least {}, got {}", lo, v)};
}
inline Check finite(double v) {
  if (std::isfinite(v)) return std::nullopt;
  return Problem{"must be a finite number, got " + number_text(v)};
}
inline Check positive(double v) {
  if (auto p = finite(v)) return p;
  if (v > 0) return std::nullopt;
  return Problem{"must be greater than 0, got " + number_text(v)};
}
inline Check non_negative(double v) {
  if (auto p = finite(v)) return p;
  if (v >= 0) return std::nullopt;
  return Problem{"must be at least 0, got " + number_text(v)};
}
// A finite number >= lo.
inline Check at_least_number(double v, double lo) {
  if (auto p = finite(v)) return p;
  if (v >= lo) return std::nullopt;
  return Problem{fmt::format("must be at least {}, got {}", number_text(lo), number_text(v))};
}
// The most ranks a job may name (launch.ranks, a kind's or a node's count): far beyond any cluster dptrain
// plans for, small enough that a table per rank fits in memory and ranks squared in an int64.
inline constexpr int64_t kMaxRanks = int64_t(1) << 20;
inline Check rank_count(int64_t v) {
  if (auto p = at_least(v, 1)) return p;
  if (v <= kMaxRanks) return std::nullopt;
  return Problem{fmt::format("must be at most {} ranks, got {}", kMaxRanks, v), -1,
                 "a count of ranks; plan for larger clusters with dptrain plan --workers"};
}
// [0, 1)
inline Check unit_half_open(double v) {
  if (v >= 0 && v < 1) return std::nullopt;
  return Problem{"must be in [0, 1), got " + number_text(v)};
}
// (0, 1]
inline Check unit_open_closed(double v) {
  if (v > 0 && v <= 1) return std::nullopt;
  return Problem{"must be in (0, 1], got " + number_text(v)};
}
inline Check not_empty(const std::string& s) {
  if (!s.empty()) return std::nullopt;
  return Problem{"must not be empty"};
}

// The first element of `v` that `rule` rejects, as a Problem naming its index; nullopt when all pass.
template <class T, class Rule>
Check each(const std::vector<T>& v, Rule rule) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (auto p = rule(v[i])) return Problem{p->what, static_cast<int>(i), p->hint};
  return std::nullopt;
}

// A link's bandwidth: finite and greater than 0 (a link of bandwidth 0 carries nothing).
inline Check bandwidth(double gbps) {
  if (auto p = positive(gbps)) return Problem{p->what, -1, "a link's bandwidth is in Gbit/s each way, e.g. 10"};
  return std::nullopt;
}

// [parallel.cgp] and [cluster] (schema_cluster.cpp): the checks that involve other keys.
Check check_group_count(const Job& j);
Check check_cgp_groups(const Job& j);
Check check_cluster_speeds(const Job& j);
Check check_cluster_memory(const Job& j);
Check check_kinds(const Job& j);
Check check_kind_counts(const Job& j);
Check check_kind_speeds(const Job& j);
Check check_kind_memory(const Job& j);
Check check_node_sizes(const Job& j);
Check check_ranks_per_node(const Job& j);
Check check_nodes_per_rack(const Job& j);
Check check_link_matrix(const Job& j);
Check check_latency_matrix(const Job& j);
// Warnings (KeySpec::warn): link levels out of order (a node's links slower than those between nodes of a
// rack, these slower than those across racks) where the cluster has both levels and no matrix replaces them.
Check warn_node_below_rack(const Job& j);
Check warn_rack_below_cross(const Job& j);

// [parallel.balance] and [cluster.emulate] (schema_balance.cpp): the checks that involve other keys.
Check check_balance_speeds(const Job& j);
Check check_max_share(const Job& j);
Check check_slowdown(const Job& j);
Check check_emulated_memory(const Job& j);
Check check_fluctuate_rank(const Job& j);
Check check_fluctuate_to(const Job& j);

}  // namespace dp::job_detail
