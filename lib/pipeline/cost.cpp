// The pipeline cost model (plan.h, man dptrain(1) PIPELINE MODEL): a stage's compute and memory on its
// devices, a link's transfer, a replicated stage's allreduce, and the mini-batch time they add up to.
#include <algorithm>
#include <limits>

#include "lib/balance/balance.h"
#include "lib/core/error.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::pipeline::detail {

Prefix::Prefix(const Workload& w) {
  const size_t n = w.blocks.size();
  for (auto* v : {&forward, &backward, &saved, &params, &forward_fixed, &backward_fixed, &update}) v->assign(n + 1, 0.0);
  for (size_t b = 0; b < n; ++b) {
    forward[b + 1] = forward[b] + w.blocks[b].forward_s;
    backward[b + 1] = backward[b] + w.blocks[b].backward_s;
    forward_fixed[b + 1] = forward_fixed[b] + w.blocks[b].forward_fixed_s;
    backward_fixed[b + 1] = backward_fixed[b] + w.blocks[b].backward_fixed_s;
    update[b + 1] = update[b] + w.blocks[b].update_s;
    saved[b + 1] = saved[b] + w.blocks[b].saved_bytes;
    params[b + 1] = params[b] + w.blocks[b].param_bytes;
  }
}

std::vector<int64_t> micro_batch_shares(const Cluster& c, const std::vector<int>& ranks, int64_t micro_batch) {
  if (ranks.size() == 1) return {micro_batch};
  std::vector<double> speeds;
  for (int r : ranks) speeds.push_back(c.rank(r).speed);
  return divide_batch(micro_batch, speeds, 1);
}

DeviceBytes device_bytes(const Workload& w, const Prefix& p, int first, int last, const std::vector<int>& recompute,
                         size_t replicas) {
  // Kept per sample of a micro-batch in flight: every block's saved activations (its input and what
  // its backward reads besides), but only the input of a recomputed block. Working memory, once: the
  // blocks share one scratch (the largest block's), and a recomputed block rebuilds what it dropped into
  // one more buffer (the largest such).
  double kept = Prefix::sum(p.saved, first, last), work = 0, rebuilt = 0, inner = 0;
  size_t next = 0;
  for (int b = first; b <= last; ++b) {
    const auto& blk = w.blocks[size_t(b)];
    if (next < recompute.size() && recompute[next] == b) {
      ++next;
      kept += w.input_bytes_of(b) - blk.saved_bytes;
      rebuilt = std::max(rebuilt, blk.saved_bytes - w.input_bytes_of(b));
    }
    work = std::max(work, blk.work_bytes);
    if (b > first) inner = std::max(inner, w.input_bytes_of(b));
  }
  // A stage that sends on keeps its output with each micro-batch (the tensor to send, and what a ReLU's
  // backward reads); once per device it holds the gradients exchanged with its neighbours (of its input,
  // but for the first stage, and of its output) and those between its own blocks (the one coming in and
  // the one going out: two of the largest, one when it has two blocks).
  const int n = int(w.blocks.size());
  const double out = last + 1 < n ? w.blocks[size_t(last)].output_bytes : 0.0;
  const double gradients = (first > 0 ? w.input_bytes_of(first) : 0.0) + out + double(std::min(2, last - first)) * inner;
  return {w.state_bytes_per_param_byte(replicas) * Prefix::sum(p.params, first, last), kept + out,
          work + rebuilt + gradients};
}

double device_peak_bytes(const Workload& w, const Prefix& p, int first, int last, int64_t in_flight, int64_t share,
                         const std::vector<int>& recompute, size_t replicas) {
  const DeviceBytes b = device_bytes(w, p, first, last, recompute, replicas);
  return b.state + double(share) * (double(in_flight) * b.per_sample_in_flight + b.per_sample_once);
}

StageCost stage_cost(const Workload& w, const Prefix& p, const Cluster& c, int first, int last,
                     const std::vector<int>& ranks, int64_t in_flight, int64_t micro_batch,
                     const std::vector<int>& recompute, const Cluster* divided_by) {
  StageCost s;
  s.shares = micro_batch_shares(divided_by ? *divided_by : c, ranks, micro_batch);
  double recompute_per_sample = 0, recompute_fixed = 0;
  for (int b : recompute) {
    recompute_per_sample += w.blocks[size_t(b)].forward_s;
    recompute_fixed += w.blocks[size_t(b)].forward_fixed_s;
  }
  const double fwd = Prefix::sum(p.forward, first, last), bwd = Prefix::sum(p.backward, first, last);
  const double fwd_fixed = Prefix::sum(p.forward_fixed, first, last), bwd_fixed = Prefix::sum(p.backward_fixed, first, last);
  // Under a sharded update each replica updates 1/k of the parameters.
  const double update = Prefix::sum(p.update, first, last) /
                        (w.sharded_per_param_byte > 0 && ranks.size() > 1 ? double(ranks.size()) : 1.0);
  const DeviceBytes bytes = device_bytes(w, p, first, last, recompute, ranks.size());  // alike on every replica
  for (size_t i = 0; i < ranks.size(); ++i) {
    const double speed = c.rank(ranks[i]).speed, x = double(s.shares[i]);
    s.device_update_s.push_back(update / speed);
    s.device_forward_s.push_back((x * fwd + fwd_fixed) / speed);
    s.device_backward_s.push_back((x * (bwd + recompute_per_sample) + bwd_fixed + recompute_fixed) / speed);
    // The slowest replica decides each phase; with shares in proportion to speed they coincide.
    s.update_s = std::max(s.update_s, s.device_update_s.back());
    s.forward_s = std::max(s.forward_s, s.device_forward_s.back());
    s.backward_s = std::max(s.backward_s, s.device_backward_s.back());
    s.recompute_s = std::max(s.recompute_s, (x * recompute_per_sample + recompute_fixed) / speed);
    const double peak = bytes.state + x * (double(in_flight) * bytes.per_sample_in_flight + bytes.per_sample_once);
    const double memory = c.rank(ranks[i]).memory_gb * 1e9;
    s.peak_bytes.push_back(peak);
    s.memory_bytes.push_back(memory);
    if (memory > 0 && peak > memory) {
      s.fits = false;
      s.over_bytes = std::max(s.over_bytes, peak - memory);
    }
  }
  s.allreduce_s = ring_allreduce_seconds(c, ranks, Prefix::sum(p.params, first, last));
  return s;
}

LinkCost link_cost(const Workload& w, const Cluster& c, int boundary, const std::vector<int>& from,
                   const std::vector<int64_t>& from_shares, const std::vector<int>& to,
                   const std::vector<int64_t>& to_shares) {
  const double bytes_per_sample = w.blocks[size_t(boundary)].output_bytes;
  std::vector<double> send_f(from.size()), recv_f(to.size()), send_b(to.size()), recv_b(from.size());
  for_each_overlap(from_shares, to_shares, [&](size_t i, size_t j, int64_t x) {
    const double f = c.link(from[i], to[j]).seconds(double(x) * bytes_per_sample);
    const double b = c.link(to[j], from[i]).seconds(double(x) * bytes_per_sample);
    send_f[i] += f, recv_f[j] += f, send_b[j] += b, recv_b[i] += b;
  });
  auto worst = [](const std::vector<double>& a, const std::vector<double>& b) {
    return std::max(*std::max_element(a.begin(), a.end()), *std::max_element(b.begin(), b.end()));
  };
  return {worst(send_f, recv_f), worst(send_b, recv_b)};
}

double ring_allreduce_seconds(const Cluster& c, const std::vector<int>& ranks, double bytes) {
  const size_t k = ranks.size();
  if (k < 2) return 0;
  double bandwidth_s = 0, latency_us = 0;
  for (size_t i = 0; i < k; ++i) {
    const Link l = c.link(ranks[i], ranks[(i + 1) % k]);
    bandwidth_s = std::max(bandwidth_s, l.bandwidth_seconds(bytes));
    latency_us = std::max(latency_us, l.latency_us);
  }
  const double steps = 2.0 * double(k - 1);
  return steps / double(k) * bandwidth_s + steps * latency_us * 1e-6;
}

Totals combine(const std::vector<StageCost>& stages, const std::vector<LinkCost>& links, int64_t micro_batches) {
  Totals t;
  double sum = 0, drain = 0, stick_out = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    const double stage = stages[s].forward_s + stages[s].backward_s;
    sum += stage;
    t.bottleneck_s = std::max(t.bottleneck_s, stage);
    // Stage s's last backward ends `drain` before the pipeline does: the backward of every resource
    // before it. Its allreduce runs during that drain; only what is longer sticks out.
    stick_out = std::max(stick_out, stages[s].allreduce_s + stages[s].update_s - drain);
    drain += stages[s].backward_s;
    if (s < links.size()) {
      const double link = links[s].forward_s + links[s].backward_s;
      sum += link;
      t.bottleneck_s = std::max(t.bottleneck_s, link);
      drain += links[s].backward_s;
    }
  }
  t.tail_s = std::max(0.0, stick_out);
  t.minibatch_s = sum + double(micro_batches - 1) * t.bottleneck_s + t.tail_s;
  return t;
}

std::vector<int> mask_ranks(uint32_t mask) {
  std::vector<int> out;
  for (int r = 0; mask; ++r, mask >>= 1)
    if (mask & 1u) out.push_back(r);
  return out;
}

}  // namespace dp::pipeline::detail
