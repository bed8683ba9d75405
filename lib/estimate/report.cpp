// The estimate as text (a table per rank, then the job) and as one JSON object (estimate --json).
#include <fmt/format.h>

#include "lib/core/json.h"
#include "lib/estimate/estimate.h"

namespace dp::estimate {
namespace {

std::string mb(double bytes) { return fmt::format("{:.1f}", bytes / 1e6); }

std::string duration(double s) {
  if (s <= 0) return "-";
  if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

std::string part(double s) { return s > 0 ? duration(s) : "0"; }

}  // namespace

std::string estimate_text(const Estimate& e) {
  std::string out = fmt::format("model: {}\nstrategy: {}\ntimes from: {}\n", e.model, e.strategy, e.timing_basis);
  out += fmt::format("{:>4}  {:<28} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9}\n", "rank", "role",
                     "samples", "param", "grad", "optim", "activ", "work", "other", "total MB", "resid MB",
                     "step");
  for (const RankEstimate& r : e.ranks) {
    const double step = r.compute_s + r.comm_s + r.update_s;
    out += fmt::format("{:>4}  {:<28} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9}{}\n", r.rank,
                       r.role, r.samples, mb(r.memory.params), mb(r.memory.grads), mb(r.memory.optimizer),
                       mb(r.memory.activations), mb(r.memory.workspace), mb(r.memory.other), mb(r.memory.total()),
                       mb(r.resident_bytes), duration(step),
                       r.fits ? "" : fmt::format("  OVER its {} MB", mb(r.memory_limit_bytes)));
  }
  out += fmt::format("FLOPs: {:.3g} per sample (forward + backward), {:.3g} per step\n", e.flops_per_sample,
                     e.flops_per_step);
  if (e.step_s > 0)
    out += fmt::format("step: {} ({:.0f} samples/s); epoch: {} ({} steps, evaluation {}); job: {} ({} steps)\n",
                       duration(e.step_s), e.samples_per_s, duration(e.epoch_s), e.steps_per_epoch,
                       duration(e.eval_s), duration(e.job_s), e.total_steps);
  else
    out += fmt::format("steps: {} per epoch, {} in all (no times: give --profile or --device)\n", e.steps_per_epoch,
                       e.total_steps);
  if (!e.bound.empty() && e.compute_s + e.comm_s + e.bubble_s + e.update_s > 0)
    out += fmt::format("step split: compute {}, communication {}, bubble {}, update {}; bound by {}\n",
                       part(e.compute_s), part(e.comm_s), part(e.bubble_s), part(e.update_s), e.bound);
  else if (!e.bound.empty())
    out += fmt::format("bound by {}\n", e.bound);  // groups stepping on their own: no one step to split
  const ResourceRequest& q = e.request;
  out += fmt::format("request: {} rank(s) on {} node(s), {} per node; per rank {} core(s), {} MiB, {} GPU(s); "
                     "per node {} core(s), {} MiB, {} GPU(s); time limit {}\n",
                     q.ranks, q.nodes, q.ranks_per_node, q.cpus_per_rank, q.memory_per_rank_bytes >> 20,
                     q.gpus_per_rank, q.cpus_per_rank * q.ranks_per_node,
                     (q.memory_per_rank_bytes >> 20) * q.ranks_per_node, q.gpus_per_rank * q.ranks_per_node,
                     q.time_limit_s > 0 ? duration(q.time_limit_s) : "none");
  if (e.fit) out += fmt::format("fits on: {}\n", e.fit->devices > 0 ? e.fit->note : "nothing: " + e.fit->note);
  if (e.fit && !e.fit->pipeline_note.empty()) out += fmt::format("as a pipeline: {}\n", e.fit->pipeline_note);
  for (const std::string& n : e.notes) out += "note: " + n + "\n";
  return out;
}

std::string estimate_json(const Estimate& e) {
  std::string ranks;
  for (const RankEstimate& r : e.ranks) {
    const MemoryTerms& m = r.memory;
    ranks += fmt::format(
        "{}{{\"rank\": {}, \"role\": {}, \"samples\": {}, \"memory\": {{\"params\": {:.0f}, \"grads\": {:.0f}, "
        "\"optimizer\": {:.0f}, \"activations\": {:.0f}, \"workspace\": {:.0f}, \"other\": {:.0f}, "
        "\"total\": {:.0f}}}, \"host_bytes\": {:.0f}, \"resident_bytes\": {:.0f}, \"memory_limit_bytes\": {:.0f}, "
        "\"fits\": {}, \"compute_s\": {:.6g}, \"comm_s\": {:.6g}, \"update_s\": {:.6g}}}",
        ranks.empty() ? "" : ", ", r.rank, json_quoted(r.role), r.samples, m.params, m.grads, m.optimizer,
        m.activations, m.workspace, m.other, m.total(), r.host_bytes, r.resident_bytes, r.memory_limit_bytes,
        r.fits, r.compute_s, r.comm_s, r.update_s);
  }
  std::string notes;
  for (const std::string& n : e.notes) notes += (notes.empty() ? "" : ", ") + json_quoted(n);
  const ResourceRequest& q = e.request;
  std::string fit = "null";
  if (e.fit)
    fit = fmt::format("{{\"device\": {}, \"devices\": {}, \"peak_bytes\": {:.0f}, \"note\": {}, "
                      "\"pipeline_devices\": {}, \"pipeline_note\": {}}}",
                      json_quoted(e.fit->device), e.fit->devices, e.fit->peak_bytes, json_quoted(e.fit->note),
                      e.fit->pipeline_devices, json_quoted(e.fit->pipeline_note));
  return fmt::format(
      "{{\"model\": {}, \"strategy\": {}, \"timing\": {}, \"ranks\": [{}], \"flops_per_sample\": {:.6g}, "
      "\"flops_per_step\": {:.6g}, \"step_s\": {:.6g}, \"step_split\": {{\"compute_s\": {:.6g}, \"comm_s\": {:.6g}, "
      "\"bubble_s\": {:.6g}, \"update_s\": {:.6g}, \"bound\": {}}}, \"samples_per_s\": {:.6g}, \"steps_per_epoch\": {}, "
      "\"total_steps\": {}, \"eval_s\": {:.6g}, \"epoch_s\": {:.6g}, \"job_s\": {:.6g}, \"request\": {{\"ranks\": {}, "
      "\"nodes\": {}, \"ranks_per_node\": {}, \"cpus_per_rank\": {}, \"memory_per_rank_bytes\": {}, "
      "\"gpus_per_rank\": {}, \"cpus_per_node\": {}, \"memory_per_node_bytes\": {}, \"gpus_per_node\": {}, "
      "\"time_limit_s\": {:.0f}}}, \"fit\": {}, \"notes\": [{}]}}\n",
      json_quoted(e.model), json_quoted(e.strategy), json_quoted(e.timing_basis), ranks, e.flops_per_sample,
      e.flops_per_step, e.step_s, e.compute_s, e.comm_s, e.bubble_s, e.update_s,
      e.bound.empty() ? std::string("null") : json_quoted(e.bound), e.samples_per_s, e.steps_per_epoch, e.total_steps, e.eval_s, e.epoch_s, e.job_s,
      q.ranks, q.nodes, q.ranks_per_node, q.cpus_per_rank, q.memory_per_rank_bytes, q.gpus_per_rank,
      q.cpus_per_rank * q.ranks_per_node, q.memory_per_rank_bytes * q.ranks_per_node, q.gpus_per_rank * q.ranks_per_node,
      q.time_limit_s, fit, notes);
}

}  // namespace dp::estimate
