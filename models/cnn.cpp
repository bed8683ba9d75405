// Residual CNN forward and backward side by side over the flat parameter buffer.
#include "models/cnn.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "lib/core/error.h"
#include "lib/core/rng.h"

namespace dp {

Cnn::Cnn(const ModelSection& spec, const SampleShape& shape, uint64_t seed, const Kernels& k)
    : Model(k),
      shape_(shape),
      channels_(spec.channels),
      blocks_per_stage_(spec.blocks),
      workspace_(k), x_staging_(k), labels_staging_(k) {
  if (!shape.is_image())
    throw JobError("[model] type", "model 'cnn' needs image data (channels x height x width)",
                   "use an image dataset such as [data] dataset = \"fashion-mnist\", or type = \"mlp\"");
  if (channels_.empty())
    throw JobError("[model] channels", "model 'cnn' needs at least one stage width", "e.g. channels = [16, 32]");
  for (int64_t c : channels_)
    if (c <= 0)
      throw JobError("[model] channels", fmt::format("stage width {} is not positive", c),
                     "e.g. channels = [16, 32]");
  if (blocks_per_stage_ < 0)
    throw JobError("[model] blocks", fmt::format("blocks = {} is negative", blocks_per_stage_), "use 0 or more");
  if (shape.classes < 1)
    throw JobError("[model] type", "model 'cnn' needs at least one class", "check the dataset's labels");

  struct Uniform {
    int64_t offset, count, fan_in;
  };
  std::vector<Uniform> uniform;  // conv and linear parameters, in order
  std::vector<int64_t> gammas;   // offsets of (gamma, beta) pairs, with their sizes
  std::vector<int64_t> gamma_sizes;
  int64_t offset = 0, max_workspace = 0;

  auto add_conv = [&](const std::string& name, int64_t cin, int64_t h, int64_t w, int64_t cout, int64_t stride) {
    ConvLayout c{cpu::ConvShape{0, cin, h, w, cout, 3, stride, 1}, offset, offset + cout * cin * 9};
    const int64_t count = cout * cin * 9 + cout, pq = c.shape.out_height() * c.shape.out_width();
    layers_.push_back({name, "conv", offset, count, cout * pq, 2.0 * double(cin * 9) * double(cout * pq)});
    uniform.push_back({offset, count, cin * 9});
    offset += count;
    max_workspace = std::max(max_workspace, k.conv2d_workspace(c.shape));
    return c;
  };
  // norm keeps only its statistics for backward (it reads its input, the conv output, again).
  auto add_norm = [&](const std::string& name, int64_t c, int64_t spatial) {
    NormLayout nm{c, spatial, offset, offset + c};
    layers_.push_back({name, "norm", offset, 2 * c, 2, 5.0 * double(c * spatial)});
    gammas.push_back(offset);
    gamma_sizes.push_back(c);
    offset += 2 * c;
    return nm;
  };
  auto add_simple = [&](const std::string& name, const std::string& kind, int64_t acts, double flops) {
    layers_.push_back({name, kind, offset, 0, acts, flops});
  };
  // conv3x3 -> norm -> ReLU
  auto plain_unit = [&](const std::string& prefix, int64_t cin, int64_t h, int64_t w, int64_t cout,
                        int64_t stride) {
    const ConvLayout conv = add_conv(prefix + ".conv", cin, h, w, cout, stride);
    const int64_t spatial = conv.shape.out_height() * conv.shape.out_width();
    const NormLayout norm = add_norm(prefix + ".norm", cout, spatial);
    add_simple(prefix + ".relu", "relu", cout * spatial, double(cout * spatial));
    blocks_.push_back(make_plain_unit(prefix, conv, norm, blocks_.empty(), workspace_, scratch_, k));
    return conv;
  };

  int64_t c = shape.channels, h = shape.height, w = shape.width;
  plain_unit("stem", c, h, w, channels_[0], 1);
  c = channels_[0];
  for (size_t s = 0; s < channels_.size(); ++s) {
    const std::string stage = fmt::format("stage{}", s + 1);
    if (s > 0) {
      const ConvLayout down = plain_unit(stage + ".down", c, h, w, channels_[s], 2);
      c = channels_[s];
      h = down.shape.out_height();
      w = down.shape.out_width();
    }
    for (int64_t blk = 0; blk < blocks_per_stage_; ++blk) {
      const std::string prefix = fmt::format("{}.block{}", stage, blk + 1);
      const int64_t size = c * h * w;
      const ConvLayout conv1 = add_conv(prefix + ".conv1", c, h, w, c, 1);
      const NormLayout norm1 = add_norm(prefix + ".norm1", c, h * w);
      add_simple(prefix + ".relu1", "relu", size, double(size));
      const ConvLayout conv2 = add_conv(prefix + ".conv2", c, h, w, c, 1);
      const NormLayout norm2 = add_norm(prefix + ".norm2", c, h * w);
      add_simple(prefix + ".add", "add", 0, double(size));  // writes into relu2's buffer
      add_simple(prefix + ".relu2", "relu", size, double(size));
      blocks_.push_back(make_residual_unit(prefix, conv1, norm1, conv2, norm2, workspace_, scratch_, k));
    }
  }
  add_simple("pool", "pool", c, double(c * h * w));
  const int64_t classes = shape.classes;
  layers_.push_back({"fc", "linear", offset, classes * c + classes, classes, 2.0 * double(c * classes)});
  blocks_.push_back(make_cnn_head(c, h * w, classes, offset, scratch_, k));
  uniform.push_back({offset, classes * c + classes, c});
  offset += classes * c + classes;

  check_fits(offset, "the CNN");
  std::vector<float> init(size_t(offset), 0.0f);
  for (size_t l = 0; l < uniform.size(); ++l) {
    Rng rng(derive_seed(seed, l, /*tag=*/0x636e6e));
    const double bound = 1.0 / std::sqrt(double(uniform[l].fan_in));
    for (int64_t i = 0; i < uniform[l].count; ++i)
      init[size_t(uniform[l].offset + i)] = float((2.0 * rng.uniform() - 1.0) * bound);
  }
  for (size_t j = 0; j < gammas.size(); ++j)
    std::fill_n(init.begin() + gammas[j], gamma_sizes[j], 1.0f);  // beta stays 0
  set_parameters(init);
  workspace_.grow(size_t(max_workspace));
}

StepStats Cnn::forward_backward(const Batch& b, float loss_scale) {
  if (b.n == 0) {
    grads_.zero();
    gradients_ready(0);
    return {};
  }
  return run_blocks(stage(b.x, b.n * shape_.features, x_staging_), nullptr, stage(b.targets, b.n, labels_staging_), b.n,
                    loss_scale, true);
}

StepStats Cnn::evaluate(const Batch& b) {
  const int64_t kChunk = evaluation_chunk();
  StepStats total;
  for (int64_t begin = 0; begin < b.n; begin += kChunk) {
    const int64_t m = std::min(kChunk, b.n - begin);
    const StepStats s = run_blocks(stage(b.x + begin * shape_.features, m * shape_.features, x_staging_),
                                   nullptr, stage(b.targets + begin, m, labels_staging_), m, 1.0f, false);
    total.loss_sum += s.loss_sum;
    total.correct += s.correct;
  }
  total.count = b.n;
  return total;
}

std::string Cnn::describe() const {
  return fmt::format("cnn {}x{}x{} stages {} x {} blocks, {} parameters", shape_.channels, shape_.height,
                     shape_.width, channels_, blocks_per_stage_, params_.size());
}

}  // namespace dp
