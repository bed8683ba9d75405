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
// and data, on the model's kernels and the threads set now.
pipeline::BlockProfile profile_blocks(const Job& job, Model& model, const Dataset& data, int64_t micro_batch,
                                      int steps, int warmup);

// The sizes of a profile of these blocks (what a stage of them holds per sample; no times), the first
// block's input `input_bytes` per sample: what measure_block_profile writes beside its times.
pipeline::BlockProfile block_sizes(const std::vector<BlockShape>& blocks, double input_bytes, int64_t micro_batch);

}  // namespace dp
