// Residual CNN forward and backward side by side over the flat parameter buffer.
#include "models/cnn.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "lib/core/error.h"
#include "lib/core/rng.h"

namespace dp {

namespace {

void check_options(const ModelSection& spec, const SampleShape& shape) {
  if (!shape.is_image())
    throw JobError("[model] type", "model 'cnn' needs image data (channels x height x width)",
                   "use an image dataset such as [data] dataset = \"fashion-mnist\", or type = \"mlp\"");
  if (spec.channels.empty())
    throw JobError("[model] channels", "model 'cnn' needs at least one stage width", "e.g. channels = [16, 32]");
  for (int64_t c : spec.channels)
    if (c <= 0)
      throw JobError("[model] channels", fmt::format("stage width {} is not positive", c),
                     "e.g. channels = [16, 32]");
  if (spec.blocks < 0)
    throw JobError("[model] blocks", fmt::format("blocks = {} is negative", spec.blocks), "use 0 or more");
  if (shape.classes < 1)
    throw JobError("[model] type", "model 'cnn' needs at least one class", "check the dataset's labels");
}

// The flat parameters, layer after layer, and how each is initialised.
struct CnnParams {
  struct Uniform {
    int64_t offset, count, fan_in;
  };
  int64_t count = 0;                               // so far
  int64_t max_workspace = 0;                       // of the convolutions so far (CPU)
  std::vector<Uniform> uniform;                    // conv and linear parameters, in order
  std::vector<std::pair<int64_t, int64_t>> gammas;  // each norm's gamma: offset, channels

  ConvLayout conv(int64_t cin, int64_t h, int64_t w, int64_t cout, int64_t stride, const Kernels& k) {
    const ConvLayout c{cpu::ConvShape{0, cin, h, w, cout, 3, stride, 1}, count, count + cout * cin * 9};
    uniform.push_back({count, cout * cin * 9 + cout, cin * 9});
    count += cout * cin * 9 + cout;
    max_workspace = std::max(max_workspace, k.conv2d_workspace(c.shape));
    return c;
  }
  NormLayout norm(int64_t c, int64_t spatial) {
    const NormLayout n{c, spatial, count, count + c};
    gammas.emplace_back(count, c);
    count += 2 * c;
    return n;
  }
  int64_t linear(int64_t in, int64_t out) {  // w (out, in) then b (out); returns the offset
    uniform.push_back({count, out * in + out, in});
    count += out * in + out;
    return count - (out * in + out);
  }
  // PyTorch's defaults: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for conv and linear, gamma 1, beta 0.
  std::vector<float> initial(uint64_t seed) const {
    std::vector<float> init(size_t(count), 0.0f);
    for (size_t l = 0; l < uniform.size(); ++l) {
      Rng rng(derive_seed(seed, l, /*tag=*/0x636e6e));
      const double bound = 1.0 / std::sqrt(double(uniform[l].fan_in));
      for (int64_t i = 0; i < uniform[l].count; ++i)
        init[size_t(uniform[l].offset + i)] = float((2.0 * rng.uniform() - 1.0) * bound);
    }
    for (const auto& [offset, channels] : gammas) std::fill_n(init.begin() + offset, channels, 1.0f);
    return init;
  }
};

}  // namespace

Cnn::Cnn(const ModelSection& spec, const SampleShape& shape, uint64_t seed, const Kernels& k)
    : Model(k),
      shape_(shape),
      channels_(spec.channels),
      blocks_per_stage_(spec.blocks),
      workspace_(k), x_staging_(k), labels_staging_(k) {
  check_options(spec, shape);
  CnnParams p;
  // conv3x3 -> norm -> ReLU
  auto plain_unit = [&](const std::string& name, int64_t cin, int64_t h, int64_t w, int64_t cout, int64_t stride) {
    const ConvLayout conv = p.conv(cin, h, w, cout, stride, k);
    const NormLayout norm = p.norm(cout, conv.shape.out_height() * conv.shape.out_width());
    blocks_.push_back(make_plain_unit(name, conv, norm, blocks_.empty(), workspace_, scratch_, k));
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
      const ConvLayout conv1 = p.conv(c, h, w, c, 1, k);
      const NormLayout norm1 = p.norm(c, h * w);
      const ConvLayout conv2 = p.conv(c, h, w, c, 1, k);
      const NormLayout norm2 = p.norm(c, h * w);
      blocks_.push_back(make_residual_unit(fmt::format("{}.block{}", stage, blk + 1), conv1, norm1, conv2, norm2,
                                           workspace_, scratch_, k));
    }
  }
  const int64_t head_w = p.linear(c, shape.classes);
  blocks_.push_back(make_cnn_head(c, h * w, shape.classes, head_w, scratch_, k));
  check_fits(p.count, "the CNN");
  set_parameters(p.initial(seed));
  workspace_.grow(size_t(p.max_workspace));
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
