// Device kinds by name, case-insensitive (peak dense rates and memory from their vendors' data sheets), and
// the layer profile a device's peak rates give the model's blocks: each block's forward and backward as a roofline
// (FLOPs at the peak rate, or the bytes it moves at the memory bandwidth, whichever takes longer), so
// the times are a lower bound a real run does not reach.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "lib/core/error.h"
#include "lib/estimate/estimate.h"
#include "lib/measure/layer_profile.h"

namespace dp::estimate {

std::vector<DeviceKind> known_devices() {
  // name, memory GB, fp32 TFLOP/s, bf16 TFLOP/s (dense tensor cores), memory GB/s
  return {
      {"h200", 141, 67, 989, 4800},    {"h100", 80, 67, 989, 3350},
      {"a100-80", 80, 19.5, 312, 2039}, {"a100-40", 40, 19.5, 312, 1555},
      {"l40s", 48, 91.6, 362, 864},     {"v100", 32, 15.7, 0, 900},
      {"rtx4090", 24, 82.6, 165, 1008},
  };
}

// Device names are case-insensitive ("H200" is "h200"); the table's are lower case.
static bool same_name(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

DeviceKind device_kind(const std::string& name, const std::string& where) {
  std::string names;
  for (const DeviceKind& d : known_devices()) {
    if (same_name(d.name, name)) return d;
    names += (names.empty() ? "" : ", ") + d.name;
  }
  throw UsageError(where, fmt::format("unknown device '{}'", name),
                   fmt::format("known: {}; or give its rates with --peak-tflops, --bandwidth and --device-memory",
                               names));
}

Job with_device_memory(Job job, double gb) {
  ClusterSection& c = job.cluster;
  c.memory_gb.assign(size_t(job.launch.ranks), gb);  // per rank, over the kinds'
  c.kind_memory_gb.assign(c.kinds.size(), gb);        // and the kinds' (ranks drawn from them)
  return job;
}

pipeline::BlockProfile roofline_profile(const ModelFacts& facts, const DeviceKind& d, bool bf16,
                                        int64_t micro_batch) {
  const double flops_per_s = 1e12 * (bf16 && d.peak_tflops_bf16 > 0 ? d.peak_tflops_bf16 : d.peak_tflops);
  const double bytes_per_s = 1e9 * d.memory_gbps;
  auto seconds = [&](double flops, double bytes) {
    return std::max(flops_per_s > 0 ? flops / flops_per_s : 0.0, bytes_per_s > 0 ? bytes / bytes_per_s : 0.0);
  };
  pipeline::BlockProfile p = shape_profile(facts, micro_batch);
  p.device = d.name;
  const double n = double(micro_batch);
  for (size_t i = 0; i < facts.blocks.size(); ++i) {
    const BlockShape& b = facts.blocks[i];
    pipeline::BlockRow& row = p.blocks[i];
    // Forward reads its input and weights and writes its output and what it saves; backward reads those
    // and writes the gradients of its input and weights: about twice the bytes.
    const double moved = n * 4.0 * double(b.in_floats + b.in_tokens + b.out_floats + b.saved_floats);
    const double weights = 4.0 * double(b.param_count + b.shared_count);
    row.forward_ms = 1e3 * seconds(n * b.forward_flops, moved + weights);
    row.backward_ms = 1e3 * seconds(n * b.backward_flops, 2 * moved + 2 * weights);
    row.forward_fixed_ms = 1e3 * seconds(0, weights);
    row.backward_fixed_ms = 1e3 * seconds(0, 2 * weights);
    row.update_ms = 1e3 * seconds(0, 4.0 * weights);  // read weights, gradients and state, write them
  }
  return p;
}

pipeline::BlockProfile shape_profile(const ModelFacts& facts, int64_t micro_batch) {
  pipeline::BlockProfile p =
      block_sizes(facts.blocks, 4.0 * double(facts.input_floats + facts.input_tokens), micro_batch);
  p.model = facts.describe;
  return p;
}

}  // namespace dp::estimate
