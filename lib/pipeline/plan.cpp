// The workloads from profiles, a given plan finished (its recomputation and prediction), and the
// explanation of a request nothing fits. plan_pipeline() is in select.cpp, the baselines in baselines.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lib/core/error.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline {
namespace {

}  // namespace

Workload workload_from_profile(const LayerProfile& p, double profile_batch) {
  Workload w;
  const size_t n = p.blocks.size();
  for (size_t b = 0; b < n; ++b) {
    const ProfiledBlock& pb = p.blocks[b];
    BlockCost c;
    c.name = pb.id + " " + pb.description;
    c.forward_s = pb.forward_ms * 1e-3 / profile_batch;
    c.backward_s = pb.backward_ms * 1e-3 / profile_batch;
    c.output_bytes = (b + 1 < n ? p.boundary_bytes[b] : pb.output_bytes) / profile_batch;
    c.saved_bytes = pb.output_bytes / profile_batch;
    c.param_bytes = pb.param_bytes;
    w.blocks.push_back(std::move(c));
  }
  w.input_bytes = p.input_bytes / profile_batch;
  return w;
}

Workload workload_from_block_profile(const BlockProfile& p) {
  Workload w;
  const double mb = double(p.micro_batch);
  for (const BlockRow& r : p.blocks)
  {
    BlockCost c;
    c.name = r.name;
    c.forward_fixed_s = r.forward_fixed_ms * 1e-3;
    c.backward_fixed_s = r.backward_fixed_ms * 1e-3;
    c.update_s = r.update_ms * 1e-3;
    c.forward_s = (r.forward_ms - r.forward_fixed_ms) * 1e-3 / mb;
    c.backward_s = (r.backward_ms - r.backward_fixed_ms) * 1e-3 / mb;
    c.output_bytes = r.output_bytes;
    c.saved_bytes = r.saved_bytes;
    c.work_bytes = r.work_bytes;
    c.param_bytes = r.param_bytes;
    w.blocks.push_back(std::move(c));
  }
  w.input_bytes = p.input_bytes;
  return w;
}

PlanResult finish_plan(const Workload& w, const Cluster& c, Plan plan) {
  PlanResult r;
  r.method = "given";
  r.feasible = true;
  const int S = int(plan.stages.size());
  for (int s = 0; s < S; ++s) {
    Stage& st = plan.stages[size_t(s)];
    if (!choose_recompute(w, c, st.first, st.last, st.ranks, S - s, plan.micro_batches, st.recompute)) {
      r.feasible = false;
      st.recompute.clear();
    }
  }
  r.prediction = evaluate(w, c, plan);
  r.plan = std::move(plan);
  return r;
}

std::string explain_infeasible(const Workload& w, const Cluster& c, const PlanResult& best) {
  const detail::Prefix p(w);
  const int n = int(w.blocks.size());
  const int64_t mb = w.global_batch / best.plan.micro_batches;
  const double state = w.state_per_param_byte * detail::Prefix::sum(p.params, 0, n - 1);
  double total = 0, largest = 0;
  for (const auto& r : c.ranks()) total += r.memory_gb * 1e9, largest = std::max(largest, r.memory_gb * 1e9);
  const std::string advice = fmt::format(
      "; the model's parameters, gradients and optimizer state take {:.3g} GB, the {} {} {:.3g} GB in all: "
      "add devices or memory, or use more micro-batches of fewer samples",
      state / 1e9, c.size(), c.size() == 1 ? "device has" : "devices have", total / 1e9);
  // What recomputing can drop: the blocks that keep more than their input.
  auto gainers = [&](int first, int last) {
    std::vector<int> out;
    for (int b = first; b <= last; ++b)
      if (w.blocks[size_t(b)].saved_bytes > w.input_bytes_of(b)) out.push_back(b);
    return out;
  };
  // A block that fits no device on its own, with one sample, recomputed when that helps.
  for (int b = 0; b < n; ++b) {
    const double need = detail::device_peak_bytes(w, p, b, b, 1, 1, gainers(b, b));
    if (largest > 0 && need > largest)
      return fmt::format("block {} ({}) alone needs {:.3g} GB, more than the largest device's {:.3g} GB{}", b,
                         w.blocks[size_t(b)].name, need / 1e9, largest / 1e9, advice);
  }
  // The fastest plan with memory ignored, at its least: every block recomputed, one micro-batch in flight.
  std::string worst;
  double worst_over = 0;
  for (size_t s = 0; s < best.plan.stages.size(); ++s) {
    const Stage& st = best.plan.stages[s];
    const std::vector<int> all = gainers(st.first, st.last);
    const auto shares = detail::micro_batch_shares(c, st.ranks, mb);
    for (size_t i = 0; i < st.ranks.size(); ++i) {
      const double memory = c.rank(st.ranks[i]).memory_gb * 1e9;
      const double need = detail::device_peak_bytes(w, p, st.first, st.last, 1, shares[i], all, st.ranks.size());
      if (memory > 0 && need - memory > worst_over) {
        worst_over = need - memory;
        worst = fmt::format("stage {} (blocks {}-{} on rank {}) of the fastest plan needs {:.3g} GB even recomputing "
                            "every block with one micro-batch in flight, {:.3g} GB more than the rank's {:.3g} GB",
                            s, st.first, st.last, st.ranks[i], need / 1e9, worst_over / 1e9, memory / 1e9);
      }
    }
  }
  if (worst.empty())
    worst = fmt::format("the fastest plan ({} micro-batches of {} samples) fits only with fewer micro-batches in flight "
                        "than 1F1B keeps",
                        best.plan.micro_batches, mb);
  return fmt::format("no partition of the {} blocks over the {} device{} fits {} memory: {}{}", n, c.size(),
                     c.size() == 1 ? "" : "s", c.size() == 1 ? "its" : "their", worst, advice);
}

}  // namespace dp::pipeline
