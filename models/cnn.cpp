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
  std::vector<TensorInit> initial(uint64_t seed) const {
    std::vector<TensorInit> init;
    for (size_t l = 0; l < uniform.size(); ++l)
      init.push_back({uniform[l].offset, uniform[l].count, TensorInit::Kind::uniform,
                      1.0 / std::sqrt(double(uniform[l].fan_in)), derive_seed(seed, l, /*tag=*/0x636e6e)});
    for (const auto& [offset, channels] : gammas) init.push_back({offset, channels, TensorInit::Kind::constant, 1.0, 0});
    return init;
  }
};

// A unit of the layout: a plain unit (conv1, norm1) or a residual one (all four).
struct CnnUnit {
  std::string name;
  bool residual = false;
  ConvLayout conv1, conv2;
  NormLayout norm1, norm2;
};

// The whole layout, unit by unit, and the blocks' shapes: what the constructor builds and
// cnn_model_shape reports.
struct CnnArch {
  CnnParams params;
  std::vector<CnnUnit> units;
  int64_t head_channels = 0, head_spatial = 0, head_w = 0;
  std::vector<BlockShape> blocks;  // the units', then the head's
};

CnnArch cnn_arch(const ModelSection& spec, const SampleShape& shape, const Kernels& k) {
  check_options(spec, shape);
  CnnArch a;
  CnnParams& p = a.params;
  // conv3x3 -> norm -> ReLU
  auto plain_unit = [&](const std::string& name, int64_t cin, int64_t h, int64_t w, int64_t cout, int64_t stride) {
    CnnUnit u;
    u.name = name;
    u.conv1 = p.conv(cin, h, w, cout, stride, k);
    u.norm1 = p.norm(cout, u.conv1.shape.out_height() * u.conv1.shape.out_width());
    a.blocks.push_back(plain_unit_shape(name, u.conv1, u.norm1, a.units.empty()));
    a.units.push_back(u);
    return u.conv1;
  };
  int64_t c = shape.channels, h = shape.height, w = shape.width;
  plain_unit("stem", c, h, w, spec.channels[0], 1);
  c = spec.channels[0];
  for (size_t s = 0; s < spec.channels.size(); ++s) {
    const std::string stage = fmt::format("stage{}", s + 1);
    if (s > 0) {
      const ConvLayout down = plain_unit(stage + ".down", c, h, w, spec.channels[s], 2);
      c = spec.channels[s];
      h = down.shape.out_height();
      w = down.shape.out_width();
    }
    for (int64_t blk = 0; blk < spec.blocks; ++blk) {
      CnnUnit u;
      u.name = fmt::format("{}.block{}", stage, blk + 1);
      u.residual = true;
      u.conv1 = p.conv(c, h, w, c, 1, k);
      u.norm1 = p.norm(c, h * w);
      u.conv2 = p.conv(c, h, w, c, 1, k);
      u.norm2 = p.norm(c, h * w);
      a.blocks.push_back(residual_unit_shape(u.name, u.conv1, u.norm1, u.conv2, u.norm2));
      a.units.push_back(u);
    }
  }
  a.head_channels = c;
  a.head_spatial = h * w;
  a.head_w = p.linear(c, shape.classes);
  a.blocks.push_back(cnn_head_shape(c, h * w, shape.classes, a.head_w));
  return a;
}

std::string describe_cnn(const ModelSection& spec, const SampleShape& shape, int64_t parameters) {
  return fmt::format("cnn {}x{}x{} stages {} x {} blocks, {} parameters", shape.channels, shape.height, shape.width,
                     spec.channels, spec.blocks, parameters);
}

// In chunks: the forward keeps every block's output (Cnn::evaluation_chunk).
constexpr int64_t kEvaluationChunk = 64;

}  // namespace

ModelShape cnn_model_shape(const ModelSection& spec, const SampleShape& shape, const Kernels& k) {
  const CnnArch a = cnn_arch(spec, shape, k);
  ModelShape s;
  s.type = "cnn";
  s.describe = describe_cnn(spec, shape, a.params.count);
  s.blocks = a.blocks;
  s.parameters = a.params.count;
  s.fixed_floats = a.params.max_workspace;  // the convolutions' workspace
  s.evaluation_chunk = kEvaluationChunk;
  s.unparameterised_input = {shape.height, shape.width};
  return s;
}

Cnn::Cnn(const ModelSection& spec, const SampleShape& shape, uint64_t seed, const Kernels& k, bool hold)
    : Model(k), shape_(shape), workspace_(k), x_staging_(k), labels_staging_(k) {
  const CnnArch a = cnn_arch(spec, shape, k);
  describe_ = describe_cnn(spec, shape, a.params.count);
  fixed_floats_ = a.params.max_workspace;
  for (size_t i = 0; i < a.units.size(); ++i) {
    const CnnUnit& u = a.units[i];
    if (u.residual)
      blocks_.push_back(make_residual_unit(a.blocks[i], u.conv1, u.norm1, u.conv2, u.norm2, workspace_, scratch_, k));
    else
      blocks_.push_back(make_plain_unit(a.blocks[i], u.conv1, u.norm1, i == 0, workspace_, scratch_, k));
  }
  blocks_.push_back(make_cnn_head(a.blocks.back(), a.head_channels, a.head_spatial, shape.classes, a.head_w, scratch_, k));
  if (hold) check_fits(a.params.count, "the CNN");
  set_parameters(a.params.count, a.params.initial(seed), hold);
  workspace_.grow(size_t(a.params.max_workspace));
}

StepStats Cnn::forward_backward_pass(const Batch& b, float loss_scale, GradPass pass) {
  return run_blocks(stage(b.x, b.n * shape_.features, x_staging_), nullptr, stage(b.targets, b.n, labels_staging_), b.n,
                    loss_scale, true, pass);
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

std::string Cnn::describe() const { return describe_; }

}  // namespace dp
