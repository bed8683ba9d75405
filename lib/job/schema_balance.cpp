// The checks of [parallel.balance] (I-DAT batch division) and [cluster.emulate] (emulated heterogeneity)
// that involve other keys: per-rank arrays hold one entry per rank (launch.ranks), the memory limit
// max_share can hold a global batch, the fluctuating rank exists and its window is not reversed. Each
// error names the key and says how to fix it; the single-key rules are rows of schema.cpp.
#include <fmt/format.h>

#include "lib/job/schema_rules.h"

namespace dp::job_detail {

// A per-rank array, when given, has exactly launch.ranks entries. `key` is its dotted name, `what` what
// one entry is ("speed").
static Check one_per_rank(const std::vector<double>& v, const Job& j, const std::string& key,
                          const char* what) {
  const int64_t ranks = j.launch.ranks;
  // ranks < 1 is launch.ranks' own error, reported by its check.
  if (v.empty() || ranks < 1 || static_cast<int64_t>(v.size()) == ranks) return std::nullopt;
  return Problem{fmt::format("must have launch.ranks ({}) entries, one per rank, got {}", ranks, v.size()),
                 -1, fmt::format("give one {} per rank, or leave {} empty", what, key), "launch.ranks"};
}

Check check_balance_speeds(const Job& j) {
  const auto& v = j.parallel.balance.speeds;
  if (auto p = each(v, positive)) return p;
  return one_per_rank(v, j, "parallel.balance.speeds", "speed");
}

// Every rank takes at most max_share samples, so together they must be able to take the global batch.
Check check_max_share(const Job& j) {
  const int64_t m = j.parallel.balance.max_share, ranks = j.launch.ranks, batch = j.train.global_batch;
  if (auto p = at_least(m, 0)) return p;
  if (m == 0 || ranks < 1 || batch < 1) return std::nullopt;
  const int64_t need = batch / ranks + (batch % ranks != 0 ? 1 : 0);  // ceil(batch / ranks)
  if (m >= need) return std::nullopt;
  return Problem{fmt::format("{} ranks (launch.ranks) of at most {} samples cannot hold "
                             "train.global_batch ({}); it needs at least {}",
                             ranks, m, batch, need),
                 -1,
                 fmt::format("raise parallel.balance.max_share to {} or more, lower train.global_batch, or "
                             "set max_share = 0 (no limit)",
                             need),
                 "train.global_batch"};
}

Check check_slowdown(const Job& j) {
  const auto& v = j.cluster.emulate.slowdown;
  if (auto p = each(v, [](double f) { return at_least_number(f, 1); })) {
    p->hint = "a factor is the compute time relative to full speed: 1 is unslowed, 2 twice as slow";
    return p;
  }
  return one_per_rank(v, j, "cluster.emulate.slowdown", "factor");
}

// One capacity for every rank, or one per rank.
Check check_emulated_memory(const Job& j) {
  const auto& v = j.cluster.emulate.memory_gb;
  if (auto p = each(v, positive)) {
    p->hint = "a rank's device memory in GB, e.g. 0.05 for 50 MB; leave the key out for no limit";
    return p;
  }
  if (v.size() == 1) return std::nullopt;
  return one_per_rank(v, j, "cluster.emulate.memory_gb", "capacity");
}

Check check_fluctuate_rank(const Job& j) {
  const int64_t r = j.cluster.emulate.fluctuate_rank, ranks = j.launch.ranks;
  if (auto p = at_least(r, -1)) {
    p->hint = "ranks are numbered from 0; -1 turns the fluctuation off";
    return p;
  }
  if (ranks < 1 || r < ranks) return std::nullopt;
  return Problem{fmt::format("must be less than launch.ranks ({}), got {}", ranks, r), -1,
                 "ranks are numbered from 0; -1 turns the fluctuation off", "launch.ranks"};
}

// The slowed steps are [fluctuate_from, fluctuate_to): not reversed.
Check check_fluctuate_to(const Job& j) {
  const EmulateSection& e = j.cluster.emulate;
  if (auto p = at_least(e.fluctuate_to, 0)) return p;
  if (e.fluctuate_to >= e.fluctuate_from) return std::nullopt;
  return Problem{fmt::format("must be at least cluster.emulate.fluctuate_from ({}), got {}", e.fluctuate_from,
                             e.fluctuate_to),
                 -1,
                 "the slowed steps are [fluctuate_from, fluctuate_to); raise cluster.emulate.fluctuate_to or "
                 "lower cluster.emulate.fluctuate_from",
                 "cluster.emulate.fluctuate_from"};
}

}  // namespace dp::job_detail
