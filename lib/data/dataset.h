// Datasets held in memory, and the sampler that deals them out: one global permutation per epoch drawn
// from the seed, each step's slice of it divided among ranks by per-rank shares, so that every sample is
// used exactly once per epoch whatever the rank count or the shares.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lib/job/job.h"

namespace dp {

// A classification dataset: `count` rows of `features` floats (normalised) and an int label each.
struct Dataset {
  std::string name;
  int64_t count = 0;
  int64_t features = 0;
  int64_t classes = 0;
  std::vector<float> x;    // (count, features)
  std::vector<int32_t> y;  // (count)
};

struct DatasetSplits {
  Dataset train, test;
};

// Loads what [data] describes ("fashion-mnist" from gzip IDX files, or "synthetic" from the seed).
// Throws DataError naming the file and, for Fashion-MNIST, the Debian package to install.
DatasetSplits load_dataset(const DataSection& data, uint64_t seed);

// Copies rows `indices` of `d` into x (indices.size(), features) and y.
void gather_batch(const Dataset& d, std::span<const uint32_t> indices, float* x, int32_t* y);

// ---- sampling -----------------------------------------------------------------------------------------
// Steps in one epoch of n samples: the last step takes the remainder (every sample once per epoch).
int64_t steps_per_epoch(int64_t n, int64_t global_batch);
// Samples in step `step_in_epoch` of an epoch of n samples.
int64_t step_batch_size(int64_t n, int64_t global_batch, int64_t step_in_epoch);
// The global sample order of `epoch`: a permutation of 0..n-1 drawn from (seed, epoch).
std::vector<uint32_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch);
// `batch` divided as evenly as possible among `world` ranks (the first batch % world get one more).
std::vector<int64_t> equal_shares(int64_t batch, int world);
// The indices rank `rank` trains on in step `step_in_epoch`: its contiguous part, by `shares` (which
// sum to that step's batch size), of the step's slice of the epoch permutation.
std::span<const uint32_t> rank_indices(std::span<const uint32_t> permutation, int64_t global_batch,
                                       int64_t step_in_epoch, std::span<const int64_t> shares, int rank);

}  // namespace dp
