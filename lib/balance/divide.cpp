// divide_batch and predicted_step_seconds: proportional integer division under limits.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lib/balance/balance.h"
#include "lib/core/error.h"

namespace dp {

std::vector<int64_t> divide_batch(int64_t total, std::span<const double> speeds, int64_t min_share,
                                  std::span<const int64_t> max_share) {
  const size_t n = speeds.size();
  DP_CHECK(n > 0, "divide_batch: no ranks");
  DP_CHECK(max_share.empty() || max_share.size() == n, "divide_batch: max_share size");
  auto hi = [&](size_t r) { return max_share.empty() ? total : std::min(total, max_share[r]); };
  int64_t hi_sum = 0;
  for (size_t r = 0; r < n; ++r) {
    DP_CHECK(speeds[r] > 0 && std::isfinite(speeds[r]), "divide_batch: speeds must be positive");
    hi_sum += hi(r);
  }
  if (int64_t(n) * min_share > total)
    throw JobError("[train] global_batch", fmt::format("a global batch of {} cannot give {} ranks at least {} "
                                                       "sample(s) each", total, n, min_share),
                   "raise global_batch or use fewer ranks");
  if (hi_sum < total)
    throw JobError("[parallel.balance] max_share",
                   fmt::format("the ranks' limits hold {} samples, less than the global batch of {}", hi_sum, total),
                   "raise the limits or lower global_batch");

  // Water-filling: proportional shares; ranks pushed past a limit are pinned there and the rest is
  // divided again among the others, until no share crosses a limit.
  std::vector<double> real(n, 0.0);
  std::vector<char> pinned(n, 0);
  for (int round = 0; round <= int(n); ++round) {
    double free_total = double(total), free_speed = 0;
    for (size_t r = 0; r < n; ++r) {
      if (pinned[r]) free_total -= real[r];
      else free_speed += speeds[r];
    }
    bool changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (pinned[r]) continue;
      real[r] = free_total * speeds[r] / free_speed;
      const double clamped = std::clamp(real[r], double(min_share), double(hi(r)));
      if (clamped != real[r]) {
        real[r] = clamped;
        pinned[r] = 1;
        changed = true;
      }
    }
    if (!changed) break;
  }
  // Floors, then the remaining samples to the largest remainders (within limits).
  std::vector<int64_t> shares(n);
  int64_t given = 0;
  for (size_t r = 0; r < n; ++r) given += shares[r] = std::clamp<int64_t>(int64_t(std::floor(real[r])), min_share, hi(r));
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return real[a] - std::floor(real[a]) > real[b] - std::floor(real[b]);
  });
  for (size_t i = 0; given < total; i = (i + 1) % n)
    if (shares[order[i]] < hi(order[i])) ++shares[order[i]], ++given;
  DP_CHECK(given == total, "divide_batch: shares do not add up");  // floors never overshoot: real >= min
  return shares;
}

double predicted_step_seconds(std::span<const int64_t> shares, std::span<const double> speeds) {
  double worst = 0;
  for (size_t r = 0; r < shares.size(); ++r) worst = std::max(worst, double(shares[r]) / speeds[r]);
  return worst;
}

}  // namespace dp
