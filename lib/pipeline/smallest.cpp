// smallest_pipeline (plan.h): the fewest devices of one kind on which a pipeline of the workload fits, and
// the planner's plan on them. First the fewest stages of one device each: at the most micro-batches (the
// fewest samples in flight), each stage takes blocks while it still fits with its cheapest recomputation.
// That greedy cut is exact for "does S fit": a stage only needs more memory as it takes more blocks, and
// a later stage keeps no more micro-batches in flight than an earlier one, so the greedy stages reach at
// least as far as those of any S-stage partition that fits. Then plan_pipeline on that many devices (it
// may replicate stages or use fewer micro-batches, whatever is fastest and fits), and on fewer while a
// plan still fits (replicas share a stage's activations, which can beat cutting it), else on more.
#include <algorithm>

#include "lib/core/error.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline {
namespace {

// Whether S single-device stages of `device` (rank 0 of c) fit the blocks at M micro-batches.
bool stages_fit(const Workload& w, const detail::Prefix& p, const Cluster& c, int S, int64_t M) {
  const int n = int(w.blocks.size());
  const int64_t mb = w.global_batch / M;
  const std::vector<int> ranks{0};
  const std::vector<int64_t> shares{mb};
  std::vector<int> recompute;
  auto fits = [&](int first, int last, int s) {
    return detail::cheapest_recompute(w, p, c, first, last, ranks, shares, std::min<int64_t>(M, S - s), recompute);
  };
  int first = 0;
  for (int s = 0; s < S && first < n; ++s) {
    if (!fits(first, first, s)) return false;
    // The farthest last block that still fits: fit is monotone in `last`, so bisect.
    int lo = first, hi = n - 1;
    while (lo < hi) {
      const int mid = lo + (hi - lo + 1) / 2;
      if (fits(first, mid, s)) lo = mid;
      else hi = mid - 1;
    }
    first = lo + 1;
  }
  return first >= n;
}

}  // namespace

SmallestPipeline smallest_pipeline(const Workload& w, const std::function<Cluster(int)>& cluster, int max_devices,
                                   const PlanOptions& o) {
  DP_CHECK(!w.blocks.empty() && !w.micro_batch_counts.empty() && max_devices > 0, "blocks and devices");
  const detail::Prefix p(w);
  const int n = int(w.blocks.size());
  const int64_t M = *std::max_element(w.micro_batch_counts.begin(), w.micro_batch_counts.end());
  const Cluster one = cluster(1);
  SmallestPipeline out;
  int S = 1;
  while (S <= std::min(n, max_devices) && !stages_fit(w, p, one, S, M)) ++S;
  auto plan_on = [&](int d) {
    PlanResult r = plan_pipeline(w, cluster(d), o);
    if (r.feasible) out.devices = d, out.result = std::move(r);
    return out.devices == d;
  };
  int lo = 1, hi = 2;  // for the search below: lo known not to fit
  if (S <= std::min(n, max_devices)) {
    // The planner on S identical devices finds what fits; a few more in case it does not.
    for (int d = S; d <= std::min(max_devices, S + 4) && !plan_on(d); ++d) lo = d;
    if (out.devices > 0) {
      while (out.devices > 1 && plan_on(out.devices - 1)) continue;
      return out;
    }
    hi = std::min(2 * lo, max_devices);
  }
  // No cut into single-device stages fits: only replicated stages could (a micro-batch's samples shared).
  // Doubling, then bisecting between the last count that did not fit and the first that did.
  while (hi <= max_devices && hi > lo && !plan_on(hi)) {
    lo = hi;
    hi = hi == max_devices ? hi + 1 : std::min(2 * hi, max_devices);
  }
  if (out.devices == 0) return out;
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (plan_on(mid)) hi = mid;
    else lo = mid;
  }
  return out;  // plan_on(hi) was the last that fitted
}

}  // namespace dp::pipeline
