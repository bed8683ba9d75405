// The CNN's blocks (models/block.h): a plain unit (conv3x3 -> norm -> ReLU: the stem and each
// downsampling layer), a residual unit (conv3x3 -> norm -> ReLU -> conv3x3 -> norm, + its input, ReLU),
// and the head (global average pooling -> linear -> softmax cross-entropy). Each keeps its conv outputs
// and norm statistics for backward; its output (the ReLU's, whose mask backward reads) stays with the
// caller as the next block's input.
#pragma once

#include <memory>

#include "kernels/cpu/conv.h"
#include "kernels/kernel_table.h"
#include "models/block.h"
#include "models/buffer.h"

namespace dp {

struct ConvLayout {
  cpu::ConvShape shape;  // n is set per call
  int64_t w_offset = 0, b_offset = 0;
};
struct NormLayout {
  int64_t channels = 0, spatial = 0;
  int64_t g_offset = 0, b_offset = 0;
};

// The blocks' shapes (what the blocks below are built with). first: the model's first block (no input
// gradient).
BlockShape plain_unit_shape(const std::string& name, const ConvLayout& conv, const NormLayout& norm, bool first);
BlockShape residual_unit_shape(const std::string& name, const ConvLayout& conv1, const NormLayout& norm1,
                               const ConvLayout& conv2, const NormLayout& norm2);
BlockShape cnn_head_shape(int64_t channels, int64_t spatial, int64_t classes, int64_t w_offset);

// Each built with its shape (above). `workspace` (the convolutions' CPU scratch, of at least every conv's
// conv2d_workspace floats) and `scratch` (the blocks' working memory) are shared by the blocks and must
// outlive them.
std::unique_ptr<Block> make_plain_unit(BlockShape s, ConvLayout conv, NormLayout norm, bool first,
                                       Buffer<float>& workspace, Scratch& scratch, const Kernels& k);
std::unique_ptr<Block> make_residual_unit(BlockShape s, ConvLayout conv1, NormLayout norm1, ConvLayout conv2,
                                          NormLayout norm2, Buffer<float>& workspace, Scratch& scratch,
                                          const Kernels& k);
std::unique_ptr<Block> make_cnn_head(BlockShape s, int64_t channels, int64_t spatial, int64_t classes,
                                     int64_t w_offset, Scratch& scratch, const Kernels& k);

}  // namespace dp
