// `dptrain profile --layers`: every block of the job's model timed on the device the job trains on, at a
// micro-batch of the given size (forward and backward, the median of `steps` after `warmup`), with the
// sizes its shape declares: the profile `dptrain plan --profile` plans a pipeline from (lib/pipeline).
#pragma once

#include <vector>

#include "lib/job/job.h"
#include "lib/pipeline/profile.h"
#include "lib/data/dataset.h"
#include "models/block.h"
#include "models/model.h"

namespace dp {

// Throws JobError for a model that does not run as blocks, InputError for a micro-batch below 1. The model
// is never held whole: one block's parameters, gradients, optimizer state and activations at a time.
pipeline::BlockProfile measure_block_profile(const Job& job, int64_t micro_batch, int steps, int warmup);
// The same on the caller's model (its parameters held or not: the blocks run on their initial values)
// and data, on the model's kernels and the threads set now. `larger`: also time four times the
// micro-batch for the fixed parts (else its eighth alone), which holds four times its activations.
enum class ProfileSizes { with_larger, without_larger };
pipeline::BlockProfile profile_blocks(const Job& job, Model& model, const Dataset& data, int64_t micro_batch,
                                      int steps, int warmup, ProfileSizes larger = ProfileSizes::with_larger);

// A time measured at a micro-batch of `samples`.
struct TimedAt {
  int64_t samples;
  double ms;
};
// The part of a time any micro-batch pays (a profile's fixed_ms), from its time t_n at the profile's n
// samples and its times at other sizes: the least-squares line through (n, t_n), at 0 samples, clamped to
// [0, t_n] (0 without another size). It runs through t_n, which a data-parallel rank's share is near,
// and leans on the timings far from n (an eighth of n and four times it, as profiles time them): a
// layer whose small micro-batches read its weights rather than compute (the slow-link job's 1024x1024
// layer: 0.70 ms at 2 samples, 1.04-1.17 at 16, 1.99 at 64) gets the slope of its larger ones, which a
// line through n and n/8 alone set anywhere from flat to a third too steep, profile to profile.
double profile_fixed_ms(double t_n, int64_t n, const std::vector<TimedAt>& others);

// The sizes of a profile of these blocks (what a stage of them holds per sample; no times), the first
// block's input `input_bytes` per sample: what measure_block_profile writes beside its times.
pipeline::BlockProfile block_sizes(const std::vector<BlockShape>& blocks, double input_bytes, int64_t micro_batch);

}  // namespace dp
