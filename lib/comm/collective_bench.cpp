// The collective timing behind `dptrain profile --collectives` (see collective_bench.h). Buffers live in
// the communicator's memory (allocate/copy), so the same code measures host and device transports.
#include "lib/comm/collective_bench.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "lib/core/error.h"

namespace dp {
namespace {

float input_value(int rank, size_t i) { return float(rank + 1) + float(i % 17) * 0.5f; }
float sum_value(int ranks, size_t i) {
  return float(ranks * (ranks + 1) / 2) + float(ranks) * float(i % 17) * 0.5f;
}

void to_device(Communicator& comm, float* dst, const std::vector<float>& src) {
  comm.copy(reinterpret_cast<std::byte*>(dst), reinterpret_cast<const std::byte*>(src.data()),
            src.size() * sizeof(float));
}

}  // namespace

CollectiveBenchResult bench_allreduce(Communicator& comm, const CollectiveBenchConfig& config) {
  DP_CHECK(config.warmup >= 0 && config.iterations >= 1, "bench_allreduce: needs at least one iteration");
  const int n = comm.size();
  CollectiveBenchResult result;
  result.count = config.bytes / sizeof(float);
  result.bytes = result.count * sizeof(float);
  const CollectiveOptions options{config.algorithm, config.segment_bytes, {}};

  Memory in_memory = comm.allocate(result.bytes);
  Memory out_memory = config.in_place ? Memory() : comm.allocate(result.bytes);
  const std::span in(reinterpret_cast<float*>(in_memory.get()), result.count);
  const std::span out =
      config.in_place ? in : std::span(reinterpret_cast<float*>(out_memory.get()), result.count);

  // Correctness: one allreduce of the crafted data, every element compared with its exact sum.
  std::vector<float> host(result.count);
  for (size_t i = 0; i < host.size(); ++i) host[i] = input_value(comm.rank(), i);
  to_device(comm, in.data(), host);
  allreduce(comm, in, out, options);
  comm.copy(reinterpret_cast<std::byte*>(host.data()), reinterpret_cast<const std::byte*>(out.data()),
            result.bytes);
  int64_t wrong = 0;
  for (size_t i = 0; i < host.size(); ++i) wrong += host[i] != sum_value(n, i);

  // Timing. In place, each allreduce multiplies the data by n; zeros keep it finite (the sum of zeros is
  // zeros) without changing the work.
  if (config.in_place) {
    std::fill(host.begin(), host.end(), 0.0f);
    to_device(comm, in.data(), host);
  }
  for (int i = 0; i < config.warmup; ++i) allreduce(comm, in, out, options);
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < config.iterations; ++i) allreduce(comm, in, out, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const auto times = comm.allgather_value(seconds / config.iterations);
  const auto wrongs = comm.allgather_value(wrong);
  const double time = *std::max_element(times.begin(), times.end());
  for (int64_t w : wrongs) result.wrong += w;
  result.time_us = time * 1e6;
  result.algbw = time > 0 ? double(result.bytes) / time / 1e9 : 0;
  result.busbw = result.algbw * 2.0 * (n - 1) / n;
  return result;
}

}  // namespace dp
