// MLP forward and backward side by side over the flat parameter buffer.
#include "models/mlp.h"

#include <fmt/format.h>

#include <cmath>

#include "lib/core/rng.h"

namespace dp {

Mlp::Mlp(const std::vector<int64_t>& hidden, int64_t features, int64_t classes, uint64_t seed, const Kernels& k)
    : Model(k), dlogits_(k), dbuf_a_(k), dbuf_b_(k), x_staging_(k), labels_staging_(k) {
  std::vector<int64_t> widths{features};
  widths.insert(widths.end(), hidden.begin(), hidden.end());
  widths.push_back(classes);
  int64_t offset = 0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    const int64_t in = widths[l], out = widths[l + 1];
    const bool relu = l + 2 < widths.size();
    dense_.push_back({in, out, offset, offset + out * in, relu});
    layers_.push_back({fmt::format("fc{}", l + 1), "linear", offset, out * in + out, out,
                       2.0 * double(in) * double(out)});
    if (relu) layers_.push_back({fmt::format("relu{}", l + 1), "relu", offset + out * in + out, 0, out,
                                 double(out)});
    offset += out * in + out;
  }
  std::vector<float> init(size_t(offset), 0.0f);
  for (size_t l = 0; l < dense_.size(); ++l) {
    const Dense& d = dense_[l];
    Rng rng(derive_seed(seed, l, /*tag=*/0x6d6c70));
    const double bound = 1.0 / std::sqrt(double(d.in));
    for (int64_t i = 0; i < d.out * d.in + d.out; ++i)
      init[size_t(d.w_offset + i)] = float((2.0 * rng.uniform() - 1.0) * bound);
  }
  set_parameters(init);
  for (size_t l = 0; l < dense_.size(); ++l) acts_.emplace_back(k);
}

void Mlp::forward(const float* x, int64_t n) {
  const float* in = x;
  for (size_t l = 0; l < dense_.size(); ++l) {
    const Dense& d = dense_[l];
    parameters_needed(d.b_offset + d.out);
    acts_[l].grow(size_t(n * d.out));
    float* out = acts_[l].data();
    k_.linear_forward(in, p(d.w_offset), p(d.b_offset), out, n, d.in, d.out);
    if (d.relu) k_.relu_forward(out, out, n * d.out);
    in = out;
  }
}

StepStats Mlp::forward_backward(const Batch& b, float loss_scale) {
  const int64_t n = b.n;
  if (n == 0) {
    grads_.zero();
    gradients_ready(0);
    return {};
  }
  const float* x = stage(b.x, n * dense_.front().in, x_staging_);
  const int32_t* labels = stage(b.targets, n, labels_staging_);
  forward(x, n);
  const Dense& last = dense_.back();
  dlogits_.grow(size_t(n * last.out));
  const cpu::LossSums s =
      k_.softmax_cross_entropy(acts_.back().data(), labels, dlogits_.data(), n, last.out, loss_scale);

  // Backward, last layer first: dy is the gradient w.r.t. layer l's output (after its ReLU).
  float* dy = dlogits_.data();
  for (size_t l = dense_.size(); l-- > 0;) {
    const Dense& d = dense_[l];
    if (d.relu) k_.relu_backward(acts_[l].data(), dy, dy, n * d.out);
    const float* in = l == 0 ? x : acts_[l - 1].data();
    Buffer<float>& dx_buf = (l % 2 == 0) ? dbuf_a_ : dbuf_b_;
    float* dx = nullptr;
    if (l > 0) {
      dx_buf.grow(size_t(n * d.in));
      dx = dx_buf.data();
    }
    k_.linear_backward(in, p(d.w_offset), dy, dx, g(d.w_offset), g(d.b_offset), n, d.in, d.out);
    gradients_ready(d.w_offset);
    dy = dx;
  }
  return {s.loss, s.correct, n};
}

StepStats Mlp::evaluate(const Batch& b) {
  if (b.n == 0) return {};
  forward(stage(b.x, b.n * dense_.front().in, x_staging_), b.n);
  const cpu::LossSums s = k_.softmax_cross_entropy(acts_.back().data(), stage(b.targets, b.n, labels_staging_),
                                                   nullptr, b.n, dense_.back().out, 1.0f);
  return {s.loss, s.correct, b.n};
}

std::string Mlp::describe() const {
  std::string shape = fmt::format("{}", dense_.front().in);
  for (const Dense& d : dense_) shape += fmt::format("-{}", d.out);
  return fmt::format("mlp {}, {} parameters", shape, params_.size());
}

}  // namespace dp
