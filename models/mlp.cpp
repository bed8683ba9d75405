// The MLP as a chain of blocks over the flat parameter buffer, run whole: the one-stage pipeline.
#include "models/mlp.h"

#include <fmt/format.h>

#include <cmath>

#include "lib/core/rng.h"

namespace dp {

Mlp::Mlp(const std::vector<int64_t>& hidden, int64_t features, int64_t classes, uint64_t seed, const Kernels& k)
    : Model(k), x_staging_(k), labels_staging_(k) {
  std::vector<int64_t> widths{features};
  widths.insert(widths.end(), hidden.begin(), hidden.end());
  widths.push_back(classes);
  int64_t offset = 0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    const int64_t in = widths[l], out = widths[l + 1];
    const bool relu = l + 2 < widths.size();
    dense_.push_back({in, out, offset});
    layers_.push_back({fmt::format("fc{}", l + 1), "linear", offset, out * in + out, out,
                       2.0 * double(in) * double(out)});
    if (relu) layers_.push_back({fmt::format("relu{}", l + 1), "relu", offset + out * in + out, 0, out,
                                 double(out)});
    offset += out * in + out;
  }
  check_fits(offset, "the MLP");
  blocks_ = make_mlp_blocks(widths, scratch_, k);
  std::vector<float> init(size_t(offset), 0.0f);
  for (size_t l = 0; l < dense_.size(); ++l) {
    const DenseLayout& d = dense_[l];
    Rng rng(derive_seed(seed, l, /*tag=*/0x6d6c70));
    const double bound = 1.0 / std::sqrt(double(d.in));
    for (int64_t i = 0; i < d.end() - d.w_offset; ++i)
      init[size_t(d.w_offset + i)] = float((2.0 * rng.uniform() - 1.0) * bound);
  }
  set_parameters(init);
}

std::vector<ParamRange> Mlp::hook_ranges() const {
  std::vector<ParamRange> ranges;
  for (const DenseLayout& d : dense_) {
    const auto rows = d.slice_rows(hook_slice_);
    for (size_t j = 0; j + 1 < rows.size(); ++j) {
      const int64_t begin = d.w_offset + rows[j] * d.in;
      ranges.push_back({begin, d.slice_end(rows, j) - begin});
    }
  }
  return ranges;
}

StepStats Mlp::forward_backward(const Batch& b, float loss_scale) {
  if (b.n == 0) {
    grads_.zero();
    gradients_ready(0);
    return {};
  }
  return run_blocks(stage(b.x, b.n * dense_.front().in, x_staging_), nullptr, stage(b.targets, b.n, labels_staging_), b.n,
                    loss_scale, true);
}

StepStats Mlp::evaluate(const Batch& b) {
  if (b.n == 0) return {};
  return run_blocks(stage(b.x, b.n * dense_.front().in, x_staging_), nullptr, stage(b.targets, b.n, labels_staging_), b.n,
                    1.0f, false);
}

std::string Mlp::describe() const {
  std::string shape = fmt::format("{}", dense_.front().in);
  for (const DenseLayout& d : dense_) shape += fmt::format("-{}", d.out);
  return fmt::format("mlp {}, {} parameters", shape, params_.size());
}

}  // namespace dp
