// The sampler: one permutation per epoch from the seed, each step's slice of it divided among ranks by
// per-rank shares, so every sample is used exactly once per epoch.
#include <algorithm>

#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/core/rng.h"
#include "lib/data/dataset.h"

namespace dp {
namespace {
constexpr uint64_t kEpochPermutationTag = 0x5045524Dull;  // "PERM"
}  // namespace

int64_t steps_per_epoch(int64_t n, int64_t global_batch) {
  DP_CHECK(n >= 0 && global_batch >= 1, fmt::format("n = {}, global_batch = {}", n, global_batch));
  return (n + global_batch - 1) / global_batch;
}

int64_t step_batch_size(int64_t n, int64_t global_batch, int64_t step_in_epoch) {
  DP_CHECK(step_in_epoch >= 0 && step_in_epoch < steps_per_epoch(n, global_batch),
           fmt::format("step {} of an epoch of {} samples in batches of {}", step_in_epoch, n,
                       global_batch));
  return std::min(global_batch, n - step_in_epoch * global_batch);
}

std::vector<uint32_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  DP_CHECK(n >= 0 && n <= int64_t(UINT32_MAX) && epoch >= 0, fmt::format("n = {}, epoch = {}", n, epoch));
  return random_permutation(uint32_t(n), derive_seed(seed, uint64_t(epoch), kEpochPermutationTag));
}

std::vector<int64_t> equal_shares(int64_t batch, int world) {
  DP_CHECK(batch >= 0 && world >= 1, fmt::format("batch = {}, world = {}", batch, world));
  std::vector<int64_t> shares(size_t(world), batch / world);
  for (int64_t r = 0; r < batch % world; ++r) ++shares[size_t(r)];
  return shares;
}

std::span<const uint32_t> rank_indices(std::span<const uint32_t> permutation, int64_t global_batch,
                                       int64_t step_in_epoch, std::span<const int64_t> shares, int rank) {
  const int64_t n = int64_t(permutation.size());
  const int64_t batch = step_batch_size(n, global_batch, step_in_epoch);
  DP_CHECK(rank >= 0 && size_t(rank) < shares.size(),
           fmt::format("rank {} of {} shares", rank, shares.size()));
  int64_t sum = 0, offset = 0;
  for (size_t r = 0; r < shares.size(); ++r) {
    DP_CHECK(shares[r] >= 0, fmt::format("share of rank {} is {}", r, shares[r]));
    if (int(r) < rank) offset += shares[r];
    sum += shares[r];
  }
  DP_CHECK(sum == batch, fmt::format("shares sum to {}, step {} has {} samples", sum, step_in_epoch, batch));
  return permutation.subspan(size_t(step_in_epoch * global_batch + offset), size_t(shares[size_t(rank)]));
}

uint64_t samples_digest(std::span<const uint32_t> indices) {
  uint64_t sum = 0;
  for (const uint32_t i : indices) {  // splitmix64's first output from state i
    uint64_t z = uint64_t(i) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    sum += z ^ (z >> 31);
  }
  return sum;
}

}  // namespace dp
