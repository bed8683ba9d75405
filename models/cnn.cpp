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
      blocks_(spec.blocks),
      pooled_(k), logits_(k), dlogits_(k), dpooled_(k),
      grad_a_(k), grad_b_(k), grad_c_(k),
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
  if (blocks_ < 0)
    throw JobError("[model] blocks", fmt::format("blocks = {} is negative", blocks_), "use 0 or more");
  if (shape.classes < 1)
    throw JobError("[model] type", "model 'cnn' needs at least one class", "check the dataset's labels");

  struct Uniform {
    int64_t offset, count, fan_in;
  };
  std::vector<Uniform> uniform;  // conv and linear parameters, in order
  std::vector<int64_t> gammas;   // offsets of (gamma, beta) pairs, with their sizes
  std::vector<int64_t> gamma_sizes;
  int64_t offset = 0;

  auto add_conv = [&](const std::string& name, int64_t cin, int64_t h, int64_t w, int64_t cout, int64_t stride) {
    Conv c{cpu::ConvShape{0, cin, h, w, cout, 3, stride, 1}, offset, offset + cout * cin * 9};
    const int64_t count = cout * cin * 9 + cout, pq = c.shape.out_height() * c.shape.out_width();
    layers_.push_back({name, "conv", offset, count, cout * pq, 2.0 * double(cin * 9) * double(cout * pq)});
    uniform.push_back({offset, count, cin * 9});
    offset += count;
    max_workspace_ = std::max(max_workspace_, k.conv2d_workspace(c.shape));
    return c;
  };
  // norm keeps only its statistics for backward (it reads its input, the conv output, again).
  auto add_norm = [&](const std::string& name, int64_t c, int64_t spatial) {
    Norm nm{c, spatial, offset, offset + c};
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
    Unit u(k);
    u.residual = false;
    u.conv1 = add_conv(prefix + ".conv", cin, h, w, cout, stride);
    const int64_t spatial = u.conv1.shape.out_height() * u.conv1.shape.out_width();
    u.norm1 = add_norm(prefix + ".norm", cout, spatial);
    add_simple(prefix + ".relu", "relu", cout * spatial, double(cout * spatial));
    u.in_size = cin * h * w;
    u.out_size = cout * spatial;
    return u;
  };

  int64_t c = shape.channels, h = shape.height, w = shape.width;
  units_.push_back(plain_unit("stem", c, h, w, channels_[0], 1));
  c = channels_[0];
  for (size_t s = 0; s < channels_.size(); ++s) {
    const std::string stage = fmt::format("stage{}", s + 1);
    if (s > 0) {
      units_.push_back(plain_unit(stage + ".down", c, h, w, channels_[s], 2));
      c = channels_[s];
      h = units_.back().conv1.shape.out_height();
      w = units_.back().conv1.shape.out_width();
    }
    for (int64_t blk = 0; blk < blocks_; ++blk) {
      const std::string prefix = fmt::format("{}.block{}", stage, blk + 1);
      const int64_t size = c * h * w;
      Unit u(k);
      u.residual = true;
      u.conv1 = add_conv(prefix + ".conv1", c, h, w, c, 1);
      u.norm1 = add_norm(prefix + ".norm1", c, h * w);
      add_simple(prefix + ".relu1", "relu", size, double(size));
      u.conv2 = add_conv(prefix + ".conv2", c, h, w, c, 1);
      u.norm2 = add_norm(prefix + ".norm2", c, h * w);
      add_simple(prefix + ".add", "add", 0, double(size));  // writes into relu2's buffer
      add_simple(prefix + ".relu2", "relu", size, double(size));
      u.in_size = u.out_size = size;
      units_.push_back(std::move(u));
    }
  }
  add_simple("pool", "pool", c, double(c * h * w));
  classes_ = shape.classes;
  fc_w_offset_ = offset;
  fc_b_offset_ = offset + classes_ * c;
  layers_.push_back({"fc", "linear", offset, classes_ * c + classes_, classes_, 2.0 * double(c * classes_)});
  uniform.push_back({offset, classes_ * c + classes_, c});
  offset += classes_ * c + classes_;

  for (const Unit& u : units_) max_act_ = std::max({max_act_, u.in_size, u.out_size});

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
  workspace_.grow(size_t(max_workspace_));
}

void Cnn::forward(const float* x, int64_t n) {
  const float* in = x;
  float* ws = workspace_.data();
  for (size_t i = 0; i < units_.size(); ++i) {
    Unit& u = units_[i];
    parameters_needed(i + 1 < units_.size() ? units_[i + 1].conv1.w_offset : fc_w_offset_);  // unit i's
    const size_t out = size_t(n * u.out_size);
    u.conv1.shape.n = n;
    u.c1.grow(out);
    u.h1.grow(out);
    u.mean1.grow(size_t(n));
    u.rstd1.grow(size_t(n));
    k_.conv2d_forward(u.conv1.shape, in, p(u.conv1.w_offset), p(u.conv1.b_offset), u.c1.data(), ws);
    k_.norm2d_forward(u.c1.data(), p(u.norm1.g_offset), p(u.norm1.b_offset), u.h1.data(), u.mean1.data(),
                        u.rstd1.data(), n, u.norm1.channels, u.norm1.spatial, /*relu=*/true);
    if (u.residual) {
      u.conv2.shape.n = n;
      u.c2.grow(out);
      u.out.grow(out);
      u.mean2.grow(size_t(n));
      u.rstd2.grow(size_t(n));
      k_.conv2d_forward(u.conv2.shape, u.h1.data(), p(u.conv2.w_offset), p(u.conv2.b_offset), u.c2.data(), ws);
      float* y = u.out.data();
      k_.norm2d_forward(u.c2.data(), p(u.norm2.g_offset), p(u.norm2.b_offset), y, u.mean2.data(),
                        u.rstd2.data(), n, u.norm2.channels, u.norm2.spatial, /*relu=*/false);
      k_.add(y, in, y, int64_t(out));  // + the block's input, then ReLU
      k_.relu_forward(y, y, int64_t(out));
    }
    in = u.output().data();
  }
  const int64_t c = channels_.back(), spatial = units_.back().out_size / c;
  pooled_.grow(size_t(n * c));
  logits_.grow(size_t(n * classes_));
  k_.global_avg_pool_forward(in, pooled_.data(), n, c, spatial);
  parameters_needed(int64_t(params_.size()));
  k_.linear_forward(pooled_.data(), p(fc_w_offset_), p(fc_b_offset_), logits_.data(), n, c, classes_);
}

StepStats Cnn::forward_backward(const Batch& b, float loss_scale) {
  const int64_t n = b.n;
  if (n == 0) {
    grads_.zero();
    gradients_ready(0);
    return {};
  }
  const float* x = stage(b.x, n * shape_.features, x_staging_);
  forward(x, n);
  dlogits_.grow(size_t(n * classes_));
  const cpu::LossSums s = k_.softmax_cross_entropy(logits_.data(), stage(b.targets, n, labels_staging_),
                                                   dlogits_.data(), n, classes_, loss_scale);

  const int64_t c = channels_.back(), spatial = units_.back().out_size / c;
  dpooled_.grow(size_t(n * c));
  k_.linear_backward(pooled_.data(), p(fc_w_offset_), dlogits_.data(), dpooled_.data(), g(fc_w_offset_),
                       g(fc_b_offset_), n, c, classes_, false);
  grad_a_.grow(size_t(n * max_act_));
  grad_b_.grow(size_t(n * max_act_));
  grad_c_.grow(size_t(n * max_act_));
  // dy: gradient w.r.t. the current unit's output; t1, t2: scratch.
  float* dy = grad_a_.data();
  float* t1 = grad_b_.data();
  float* t2 = grad_c_.data();
  float* ws = workspace_.data();
  gradients_ready(fc_w_offset_);
  k_.global_avg_pool_backward(dpooled_.data(), dy, n, c, spatial);

  for (size_t k = units_.size(); k-- > 0;) {
    Unit& u = units_[k];
    const float* in = k == 0 ? x : units_[k - 1].output().data();
    const Norm& n1 = u.norm1;
    if (u.residual) {
      const Norm& n2 = u.norm2;
      // out = ReLU(norm2(c2) + in): dy becomes the gradient of the sum, shared by both branches.
      const int64_t count = n * u.out_size;
      k_.relu_backward(u.out.data(), dy, dy, count);
      k_.norm2d_backward(u.c2.data(), p(n2.g_offset), u.mean2.data(), u.rstd2.data(), dy, nullptr, t1,
                         g(n2.g_offset), g(n2.b_offset), n, n2.channels, n2.spatial, false);
      k_.conv2d_backward(u.conv2.shape, u.h1.data(), p(u.conv2.w_offset), t1, t2, g(u.conv2.w_offset),
                         g(u.conv2.b_offset), ws, false);
      k_.norm2d_backward(u.c1.data(), p(n1.g_offset), u.mean1.data(), u.rstd1.data(), t2, u.h1.data(), t2,
                         g(n1.g_offset), g(n1.b_offset), n, n1.channels, n1.spatial, false);
      k_.conv2d_backward(u.conv1.shape, in, p(u.conv1.w_offset), t2, t1, g(u.conv1.w_offset),
                         g(u.conv1.b_offset), ws, false);
      k_.add(dy, t1, dy, count);  // the skip connection's gradient plus the branch's
    } else {
      k_.norm2d_backward(u.c1.data(), p(n1.g_offset), u.mean1.data(), u.rstd1.data(), dy, u.h1.data(), dy,
                         g(n1.g_offset), g(n1.b_offset), n, n1.channels, n1.spatial, false);
      k_.conv2d_backward(u.conv1.shape, in, p(u.conv1.w_offset), dy, k == 0 ? nullptr : t1,
                         g(u.conv1.w_offset), g(u.conv1.b_offset), ws, false);
      std::swap(dy, t1);
    }
    gradients_ready(u.conv1.w_offset);  // the unit's first parameter
  }
  return {s.loss, s.correct, n};
}

StepStats Cnn::evaluate(const Batch& b) {
  // In chunks: the forward keeps every layer's output, so a large evaluation batch would otherwise cost
  // memory in proportion (and run out of cache).
  constexpr int64_t kChunk = 64;
  StepStats total;
  for (int64_t begin = 0; begin < b.n; begin += kChunk) {
    const int64_t m = std::min(kChunk, b.n - begin);
    forward(stage(b.x + begin * shape_.features, m * shape_.features, x_staging_), m);
    const cpu::LossSums s = k_.softmax_cross_entropy(logits_.data(), stage(b.targets + begin, m, labels_staging_),
                                                     nullptr, m, classes_, 1.0f);
    total.loss_sum += s.loss;
    total.correct += s.correct;
  }
  total.count = b.n;
  return total;
}

std::string Cnn::describe() const {
  return fmt::format("cnn {}x{}x{} stages {} x {} blocks, {} parameters", shape_.channels, shape_.height,
                     shape_.width, channels_, blocks_, params_.size());
}

}  // namespace dp
