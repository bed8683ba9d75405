// Shared by the GradientSync implementations of lib/mra (not part of its public face, mra.h).
#pragma once

#include <chrono>

#include "lib/comm/collectives.h"
#include "lib/mra/mra.h"

namespace dp {

using sync_clock = std::chrono::steady_clock;
inline double ms_between(sync_clock::time_point a, sync_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// MRA's buckets (plan_buckets, in backward order) and this rank's part of each: its shard (sharded
// update) or all of it, with absolute offsets, and where that part's optimizer state starts.
struct ShardPlan {
  ShardPlan(const GradSyncOptions& options, int ranks, int rank, const std::vector<ParamRange>& layers,
            int64_t total_params);
  std::vector<ParamRange> buckets, shards;
  std::vector<int64_t> state_offsets;
  int64_t state_count = 0;  // parameters whose optimizer state this rank keeps
  bool sharded;
  int64_t total;
  // GradientSync::full_state (collective over comm) and my_state.
  std::vector<float> full_state(Communicator& comm, std::span<const float> mine, int slots) const;
  std::vector<float> my_state(std::span<const float> full, int slots) const;
  // GradientSync::state_ranges.
  std::vector<ParamRange> ranges_of(int rank) const;
  int rank_count;
};

std::unique_ptr<GradientSync> make_plain_sync(CollectiveAlgorithm algorithm, Communicator& comm,
                                              std::span<float> params, std::span<float> grads,
                                              const std::vector<ParamRange>& layers);
std::unique_ptr<GradientSync> make_mra_sync(const GradSyncOptions& options, Communicator& comm,
                                            std::span<float> params, std::span<float> grads,
                                            const std::vector<ParamRange>& layers);

}  // namespace dp
