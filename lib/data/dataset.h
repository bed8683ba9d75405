// Datasets held in memory, and the sampler that deals them out: one global permutation per epoch drawn
// from the seed, each step's slice of it divided among ranks by per-rank shares, so that every sample is
// used exactly once per epoch whatever the rank count or the shares.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lib/core/batch.h"
#include "lib/job/job.h"

namespace dp {

// A dataset held in memory. Vector and image data: `count` rows of `features` floats (normalised) and a
// label each. Text: a sequence of token ids; sample i is the window text[i*context, (i+1)*context] of
// context + 1 tokens (inputs are the first context, targets the last context).
struct Dataset {
  std::string name;
  int64_t count = 0;
  int64_t features = 0;
  int64_t classes = 0;                     // label classes, or vocabulary size for text
  int64_t channels = 0, height = 0, width = 0;  // image data
  std::vector<float> x;    // (count, features)
  std::vector<int32_t> y;  // (count)
  // text
  int64_t context = 0;
  std::vector<int32_t> text;       // token ids
  std::vector<char32_t> vocab;     // token id -> Unicode code point
  double bigram_entropy = 0;       // nats per token of the corpus's character-bigram model

  SampleShape shape() const { return {features, classes, channels, height, width, context}; }
};

// Buffers a batch is gathered into (reused from step to step).
struct BatchBuffer {
  std::vector<float> x;
  std::vector<int32_t> tokens, targets;
};

struct DatasetSplits {
  Dataset train, test;
};

// Loads what [data] describes ("fashion-mnist" from gzip IDX files, or "synthetic" from the seed).
// Throws DataError naming the file and, for Fashion-MNIST, the Debian package to install.
DatasetSplits load_dataset(const DataSection& data, uint64_t seed);

// Copies samples `indices` of `d` into `buffer` and returns the batch viewing it.
Batch gather_batch(const Dataset& d, std::span<const uint32_t> indices, BatchBuffer& buffer);

// ---- sampling -----------------------------------------------------------------------------------------
// Steps in one epoch of n samples: the last step takes the remainder (every sample once per epoch).
int64_t steps_per_epoch(int64_t n, int64_t global_batch);
// Samples in step `step_in_epoch` of an epoch of n samples.
int64_t step_batch_size(int64_t n, int64_t global_batch, int64_t step_in_epoch);
// The global sample order of `epoch`: a permutation of 0..n-1 drawn from (seed, epoch).
std::vector<uint32_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch);
// The permutation of the epoch a run is in, drawn again only when the epoch changes.
class EpochOrder {
 public:
  EpochOrder(int64_t n, uint64_t seed) : n_(n), seed_(seed) {}
  const std::vector<uint32_t>& of(int64_t epoch) {
    if (epoch != epoch_) order_ = epoch_permutation(n_, seed_, epoch_ = epoch);
    return order_;
  }

 private:
  int64_t n_;
  uint64_t seed_;
  int64_t epoch_ = -1;
  std::vector<uint32_t> order_;
};
// `batch` divided as evenly as possible among `world` ranks (the first batch % world get one more).
std::vector<int64_t> equal_shares(int64_t batch, int world);
// The indices rank `rank` trains on in step `step_in_epoch`: its contiguous part, by `shares` (which
// sum to that step's batch size), of the step's slice of the epoch permutation.
std::span<const uint32_t> rank_indices(std::span<const uint32_t> permutation, int64_t global_batch,
                                       int64_t step_in_epoch, std::span<const int64_t> shares, int rank);
// An order-free digest of a set of sample indices: the sum, modulo 2^64, of a 64-bit mix of each. Digests
// of disjoint parts add up to the digest of their union, so the train lines' digests (metrics.jsonl,
// "samples_digest") show that an epoch read every sample once, across ranks, groups and restarts.
uint64_t samples_digest(std::span<const uint32_t> indices);

// A held-out split is evaluated in chunks of this many samples (the last one shorter): 64 windows of
// text, 1000 images.
inline int64_t evaluation_chunk(const Dataset& held_out) { return held_out.context > 0 ? 64 : 1000; }

}  // namespace dp
