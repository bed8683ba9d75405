// data_parallel_memory (estimate.h): the buffers one data-parallel rank allocates, term by term, as the
// whole model runs its blocks (Model::run_blocks) and its optimizer keeps its state. Buffers only grow, so
// rank 0's evaluation chunk, larger than a training share, sets the size of what evaluation also uses.
// [train] micro_batch caps the samples run at once; [train] recompute = "all" keeps no block's saved
// activations but the one block's rebuilt for its backward.
#include <algorithm>

#include "lib/estimate/estimate.h"

namespace dp::estimate {

namespace {

int optimizer_slots(const OptimSection& o) { return o.name == OptimizerKind::adamw ? 2 : 1; }

}  // namespace

MemoryTerms data_parallel_memory(const Job& job, const ModelFacts& facts, int64_t samples, int64_t eval_samples,
                                 int64_t state_params) {
  const int64_t micro = job.train.micro_batch;
  const int64_t at_once = micro > 0 ? std::min(samples, micro) : samples;
  const double n = double(at_once), most = double(std::max(at_once, eval_samples));
  const bool recompute = job.train.recompute == TrainRecompute::all;
  MemoryTerms m;
  m.params = 4.0 * double(facts.parameters);
  m.grads = m.params;
  m.optimizer = 4.0 * double(optimizer_slots(job.optim)) * double(state_params);
  // Activations: every block's output (forward and evaluation) and what its backward reads besides (of
  // recomputed blocks, only the largest block's, rebuilt in turn).
  // Workspace: the scratch the blocks share (the largest call), and the two gradient buffers that
  // alternate going back (block i writes its input's gradient into buffer i % 2; block 0 writes none).
  // Evaluation's forward keeps nothing, so its blocks hold in scratch what training keeps.
  double outs = 0, saved = 0, rebuilt = 0, scratch = 0, dx[2] = {0, 0};
  for (size_t i = 0; i < facts.blocks.size(); ++i) {
    const BlockShape& b = facts.blocks[i];
    outs += double(b.out_floats);
    if (recompute)
      rebuilt = std::max(rebuilt, double(b.saved_floats));
    else
      saved += double(b.saved_floats);
    scratch = std::max(scratch, double(b.scratch_floats) * n + double(b.scratch_fixed_floats));
    if (eval_samples > 0) scratch = std::max(scratch, double(b.eval_scratch_floats) * double(eval_samples));
    if (i > 0) dx[i % 2] = std::max(dx[i % 2], double(b.in_floats));
  }
  m.activations = 4.0 * (outs * most + (saved + rebuilt) * n);
  m.workspace = 4.0 * (scratch + (dx[0] + dx[1]) * n) + facts.fixed_bytes;
  return m;
}

}  // namespace dp::estimate
