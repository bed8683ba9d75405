// ShardPlan (sync_internal.h): MRA's buckets, this rank's shard of each and where its optimizer state
// lives, and the conversion of that state to and from the whole-model layout of checkpoints.
#include <algorithm>

#include "lib/mra/sync_internal.h"

namespace dp {

ShardPlan::ShardPlan(const GradSyncOptions& o, int ranks, int rank, const std::vector<ParamRange>& layers,
                     int64_t total_params)
    : buckets(plan_buckets(layers, total_params, o.bucket_bytes, o.first_bucket_bytes)),
      sharded(o.sharded_update), total(total_params), rank_count(ranks) {
  for (const ParamRange& b : buckets) {
    const ShardRange r = sharded ? shard_range(size_t(b.count), ranks, rank) : ShardRange{0, size_t(b.count)};
    shards.push_back({b.offset + int64_t(r.offset), int64_t(r.count)});
    state_offsets.push_back(sharded ? state_count : b.offset);
    state_count += int64_t(r.count);
  }
  if (!sharded) state_count = total;
}

std::vector<float> ShardPlan::full_state(Communicator& comm, std::span<const float> mine, int slots) const {
  if (!sharded) return {mine.begin(), mine.end()};
  std::vector<float> full(size_t(slots) * size_t(total), 0.0f);
  for (int s = 0; s < slots; ++s)
    for (size_t b = 0; b < buckets.size(); ++b)
      std::copy_n(mine.begin() + s * state_count + state_offsets[b], shards[b].count,
                  full.begin() + s * total + shards[b].offset);
  comm.allreduce_sum(std::span<float>(full));  // every element is one rank's value plus zeros: exact
  return full;
}

std::vector<float> ShardPlan::my_state(std::span<const float> full, int slots) const {
  if (!sharded) return {full.begin(), full.end()};
  std::vector<float> mine(size_t(slots) * size_t(state_count));
  for (int s = 0; s < slots; ++s)
    for (size_t b = 0; b < buckets.size(); ++b)
      std::copy_n(full.begin() + s * total + shards[b].offset, shards[b].count,
                  mine.begin() + s * state_count + state_offsets[b]);
  return mine;
}

std::vector<ParamRange> ShardPlan::ranges_of(int rank) const {
  if (!sharded) return {{0, total}};
  std::vector<ParamRange> out;
  for (const ParamRange& b : buckets)
    if (const ShardRange r = shard_range(size_t(b.count), rank_count, rank); r.count > 0)
      out.push_back({b.offset + int64_t(r.offset), int64_t(r.count)});
  return out;
}

}  // namespace dp
