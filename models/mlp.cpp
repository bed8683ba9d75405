// MLP forward and backward side by side over the flat parameter buffer.
#include "models/mlp.h"

#include <fmt/format.h>

#include <algorithm>
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

std::vector<int64_t> Mlp::slice_rows(const Dense& d) const {
  const int64_t per_slice = hook_slice_ > 0 ? std::max<int64_t>(1, hook_slice_ / d.in) : d.out;
  const int64_t slices = (d.out + per_slice - 1) / per_slice;
  std::vector<int64_t> rows;
  for (int64_t j = 0; j <= slices; ++j) rows.push_back(d.out * j / slices);  // even slices
  return rows;
}

int64_t Mlp::slice_end(const Dense& d, const std::vector<int64_t>& rows, size_t j) const {
  return j + 2 == rows.size() ? d.b_offset + d.out : d.w_offset + rows[j + 1] * d.in;
}

std::vector<ParamRange> Mlp::hook_ranges() const {
  std::vector<ParamRange> ranges;
  for (const Dense& d : dense_) {
    const auto rows = slice_rows(d);
    for (size_t j = 0; j + 1 < rows.size(); ++j) {
      const int64_t begin = d.w_offset + rows[j] * d.in;
      ranges.push_back({begin, slice_end(d, rows, j) - begin});
    }
  }
  return ranges;
}

void Mlp::forward(const float* x, int64_t n) {
  const float* in = x;
  for (size_t l = 0; l < dense_.size(); ++l) {
    const Dense& d = dense_[l];
    acts_[l].grow(size_t(n * d.out));
    float* out = acts_[l].data();
    const auto rows = slice_rows(d);
    if (rows.size() == 2) {
      parameters_needed(d.b_offset + d.out);
      k_.linear_forward(in, p(d.w_offset), p(d.b_offset), out, n, d.in, d.out);
    } else {  // slice by slice, as their parameters arrive; the bias comes with the last
      for (size_t j = 0; j + 1 < rows.size(); ++j) {
        parameters_needed(slice_end(d, rows, j));
        k_.linear_forward_rows(in, p(d.w_offset), out, n, d.in, d.out, rows[j], rows[j + 1]);
      }
      k_.linear_add_bias(p(d.b_offset), out, n, d.out);
    }
    if (d.relu) k_.relu_forward(out, out, n * d.out);
    in = out;
  }
}

void Mlp::backward(size_t l, const float* x, const float* dy, float* dx, int64_t n) {
  const Dense& d = dense_[l];
  const auto rows = slice_rows(d);
  if (rows.size() == 2) {
    k_.linear_backward(x, p(d.w_offset), dy, dx, g(d.w_offset), g(d.b_offset), n, d.in, d.out, false);
    gradients_ready(d.w_offset);
    return;
  }
  // The bias first (the last slice holds it), then slice by slice, last to first: its weights' gradient
  // and its share of dx (the last read of its weights, which may be updated as soon as they are announced).
  k_.linear_bias_grad(dy, g(d.b_offset), n, d.out, false);
  for (size_t j = rows.size() - 1; j-- > 0;) {
    k_.linear_weight_grad_rows(x, dy, g(d.w_offset), n, d.in, d.out, rows[j], rows[j + 1], false);
    if (dx) k_.linear_input_grad_rows(dy, p(d.w_offset), dx, n, d.in, d.out, rows[j], rows[j + 1],
                                      /*accumulate=*/j + 2 < rows.size());
    gradients_ready(d.w_offset + rows[j] * d.in);
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
    backward(l, in, dy, dx, n);
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
