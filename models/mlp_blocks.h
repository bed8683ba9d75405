// The MLP's blocks (models/block.h): fc1 = Linear on the data; fcK = ReLU -> Linear on the previous
// block's pre-activation output, the ReLU recomputed from it in backward so nothing but the input is kept;
// the head = ReLU -> Linear -> softmax cross-entropy, keeping its loss gradient between forward and
// backward. Wide layers run in output slices when hooks ask for them (MRA overlap), as before blocks.
#pragma once

#include <memory>
#include <vector>

#include "kernels/kernel_table.h"
#include "models/block.h"
#include "models/buffer.h"

namespace dp {

// One Linear over the flat parameters: w (out, in) at w_offset, then b (out).
struct DenseLayout {
  int64_t in = 0, out = 0, w_offset = 0;
  int64_t b_offset() const { return w_offset + out * in; }
  int64_t end() const { return b_offset() + out; }
  // Output rows where the slices of about `slice_floats` parameters begin, and the end: {0, out} when 0.
  std::vector<int64_t> slice_rows(int64_t slice_floats) const;
  // Where slice j ends in the parameter buffer (the last slice holds the bias too).
  int64_t slice_end(const std::vector<int64_t>& rows, size_t j) const;
};

// The ranges a Linear's backward announces (BlockHooks::ready) in forward order: whole (slice_floats 0) or
// in slices of about slice_floats parameters, the last holding the bias.
std::vector<ParamRange> dense_hook_ranges(const DenseLayout& d, int64_t slice_floats);
// The Linear of an MLP block of shape `s` (mlp_block_shapes).
DenseLayout dense_of(const BlockShape& s);

// The Linear layers of an MLP of `widths` (features, hidden..., classes), parameters laid out in order
// from 0.
std::vector<DenseLayout> mlp_layout(const std::vector<int64_t>& widths);

// The shapes of the blocks of an MLP of `layout` (mlp_layout). Their layers: fc1, then relu1 fc2, ...: a
// ReLU belongs to the block of the Linear it feeds.
std::vector<BlockShape> mlp_block_shapes(const std::vector<DenseLayout>& layout);

// The blocks of an MLP of `layout` (mlp_layout) with those shapes, their working memory in `scratch`
// (which must outlive them).
std::vector<std::unique_ptr<Block>> make_mlp_blocks(const std::vector<DenseLayout>& layout,
                                                    const std::vector<BlockShape>& shapes, Scratch& scratch,
                                                    const Kernels& k);

}  // namespace dp
