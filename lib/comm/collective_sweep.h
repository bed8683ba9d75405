// `dptrain profile --collectives`: the allreduce of every algorithm over sizes growing by a factor, out of
// place and in place (collective_bench.h times each), printed as nccl-tests prints it: one row per size
// and algorithm (size, count, time, algbw, busbw, #wrong per placement), the ring/native busbw ratio per
// size, the average busbw per algorithm and the wrong elements in all; or one JSON object per
// measurement.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "lib/comm/communicator.h"

namespace dp {

struct CollectiveSweep {
  std::vector<std::string> algorithms{"native", "ring"};  // parse_collective_algorithm's names
  int64_t min_bytes = 8, max_bytes = int64_t(256) << 20;  // the sizes: min_bytes x factor^k up to max_bytes
  int64_t factor = 4;
  int iterations = 20;  // timed repetitions per size at most: about 1 GB moved per measurement, at least 3
  int warmup = 5;       // untimed repetitions first (at most the timed ones)
  bool json = false;    // JSON lines instead of the table
  std::string links;    // what paces the links, for the table's header ("" when nothing does)
};

// Collective: every rank of `comm` calls it with the same sweep; rank 0 prints to `out`, flushing after
// each size. Returns the elements that differed from the exact sum, over every measurement and rank.
int64_t sweep_allreduce(Communicator& comm, const CollectiveSweep& sweep, std::FILE* out);

}  // namespace dp
