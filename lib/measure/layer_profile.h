// `dptrain profile --layers`: every block of the job's model timed on the device the job trains on, at a
// micro-batch of the given size (forward and backward, the median of `steps` after `warmup`), with the
// sizes its shape declares: the profile `dptrain plan --profile` plans a pipeline from (lib/pipeline).
#pragma once

#include <vector>

#include "lib/job/job.h"
#include "lib/pipeline/profile.h"
#include "models/block.h"

namespace dp {

// Throws JobError for a model that does not run as blocks, InputError for a micro-batch below 1.
pipeline::BlockProfile measure_block_profile(const Job& job, int64_t micro_batch, int steps, int warmup);

// The sizes of a profile of these blocks (what a stage of them holds per sample; no times), the first
// block's input `input_bytes` per sample: what measure_block_profile writes beside its times.
pipeline::BlockProfile block_sizes(const std::vector<BlockShape>& blocks, double input_bytes, int64_t micro_batch);

}  // namespace dp
