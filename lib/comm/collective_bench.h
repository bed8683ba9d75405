// One timed collective, as nccl-tests measures it, for `dptrain profile --collectives`: the allreduce of
// a float buffer by a given algorithm on crafted data (element i of rank r is r + 1 + (i % 17) / 2, so
// every sum is exact and checkable), timed over iterations after a barrier. No printing: the caller
// formats the table. Every rank of the communicator calls it with the same configuration.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/comm/collectives.h"
#include "lib/comm/communicator.h"

namespace dp {

struct CollectiveBenchConfig {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  size_t bytes = 0;  // buffer size; rounded down to whole floats
  bool in_place = false;
  int warmup = 5;
  int iterations = 20;
  size_t segment_bytes = kDefaultSegmentBytes;
};

struct CollectiveBenchResult {
  size_t bytes = 0;     // measured: count * sizeof(float)
  size_t count = 0;     // floats
  double time_us = 0;   // one allreduce: average over the iterations, the slowest rank's
  double algbw = 0;     // GB/s: bytes / time
  double busbw = 0;     // GB/s: algbw * 2(n-1)/n, comparable across rank counts (0 on one rank)
  int64_t wrong = 0;    // elements that differ from the exact sum, all ranks together
};

CollectiveBenchResult bench_allreduce(Communicator& comm, const CollectiveBenchConfig& config);

}  // namespace dp
