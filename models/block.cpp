// What a block derives from its layers, and its backward after recomputation (models/block.h).
#include "models/block.h"

namespace dp {

double layers_flops(const std::vector<LayerInfo>& layers) {
  double f = 0;
  for (const LayerInfo& l : layers) f += l.flops_per_sample;
  return f;
}

std::vector<ParamRange> Block::hook_ranges(int64_t /*slice_floats: whole layers here*/) const {
  std::vector<ParamRange> ranges;
  for (const LayerInfo& l : shape_.layers)
    if (l.param_count > 0) ranges.push_back({l.param_offset, l.param_count});
  return ranges;
}

void recompute_and_backward(Block& block, const ParamWindow& w, const BlockData& d, bool recompute, float loss_scale,
                            const float* dy, float* dx, bool accumulate, const BlockHooks& h) {
  if (recompute && block.shape().saved_floats > 0) block.forward(w, d, loss_scale, BlockHooks{});
  block.backward(w, d, dy, dx, accumulate, h);
}

}  // namespace dp
