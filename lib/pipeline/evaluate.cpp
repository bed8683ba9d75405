// evaluate(): a plan's predicted mini-batch time, throughput, bubble and memory under the cost model.
#include <algorithm>

#include "lib/core/error.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline {

using detail::Prefix;

Prediction evaluate(const Workload& w, const Cluster& c, const Plan& plan, const Cluster* divided_by) {
  const int n = int(w.blocks.size());
  const int S = int(plan.stages.size());
  DP_CHECK(S > 0 && plan.micro_batches > 0 && w.global_batch % plan.micro_batches == 0, "a plan with stages");
  const int64_t micro_batch = w.global_batch / plan.micro_batches;
  std::vector<bool> used(size_t(c.size()), false);
  for (int s = 0; s < S; ++s) {
    const Stage& st = plan.stages[size_t(s)];
    DP_CHECK(st.first == (s == 0 ? 0 : plan.stages[size_t(s) - 1].last + 1) && st.last >= st.first &&
                 st.last < n && (s + 1 < S || st.last == n - 1),
             "stages cover the blocks in order");
    DP_CHECK(!st.ranks.empty() && int64_t(st.ranks.size()) <= micro_batch &&
                 std::is_sorted(st.ranks.begin(), st.ranks.end()),
             "a stage's devices, ascending");
    for (int r : st.ranks) {
      DP_CHECK(r >= 0 && r < c.size() && !used[size_t(r)], "every rank in at most one stage");
      used[size_t(r)] = true;
    }
  }
  const Prefix p(w);
  std::vector<detail::StageCost> costs;
  std::vector<detail::LinkCost> links;
  for (int s = 0; s < S; ++s) {
    const Stage& st = plan.stages[size_t(s)];
    costs.push_back(detail::stage_cost(w, p, c, st.first, st.last, st.ranks,
                                       std::min<int64_t>(plan.micro_batches, S - s), micro_batch, st.recompute,
                                       divided_by));
  }
  for (int s = 0; s + 1 < S; ++s)
    links.push_back(detail::link_cost(w, c, plan.stages[size_t(s)].last, plan.stages[size_t(s)].ranks,
                                      costs[size_t(s)].shares, plan.stages[size_t(s) + 1].ranks,
                                      costs[size_t(s) + 1].shares));
  const detail::Totals t = detail::combine(costs, links, plan.micro_batches);

  Prediction out;
  out.minibatch_s = t.minibatch_s;
  out.samples_per_s = double(w.global_batch) / t.minibatch_s;
  out.bottleneck_s = t.bottleneck_s;
  out.allreduce_tail_s = t.tail_s;
  double busy = 0;
  for (int s = 0; s < S; ++s) {
    const detail::StageCost& sc = costs[size_t(s)];
    StagePrediction sp;
    sp.shares = sc.shares;
    sp.forward_s = sc.forward_s;
    sp.backward_s = sc.backward_s;
    sp.recompute_s = sc.recompute_s;
    if (s + 1 < S) {
      sp.link_forward_s = links[size_t(s)].forward_s;
      sp.link_backward_s = links[size_t(s)].backward_s;
      sp.link_s = sp.link_forward_s + sp.link_backward_s;
    }
    sp.allreduce_s = sc.allreduce_s;
    sp.update_s = sc.update_s;
    sp.device_forward_s = sc.device_forward_s;
    sp.device_backward_s = sc.device_backward_s;
    sp.device_update_s = sc.device_update_s;
    sp.in_flight = std::min<int64_t>(plan.micro_batches, S - s);
    sp.peak_bytes = sc.peak_bytes;
    sp.memory_bytes = sc.memory_bytes;
    sp.busy_fraction = double(plan.micro_batches) * (sc.forward_s + sc.backward_s) / t.minibatch_s;
    sp.fits = sc.fits;
    out.fits = out.fits && sc.fits;
    busy += sp.busy_fraction;
    out.stages.push_back(std::move(sp));
  }
  out.bubble_fraction = 1 - busy / S;
  return out;
}

}  // namespace dp::pipeline
