// The MLP as a chain of blocks over the flat parameter buffer, run whole: the one-stage pipeline.
#include "models/mlp.h"

#include <fmt/format.h>

#include <cmath>

#include "lib/core/rng.h"

namespace dp {
namespace {

std::vector<DenseLayout> layout_of(const std::vector<int64_t>& hidden, int64_t features, int64_t classes) {
  std::vector<int64_t> widths{features};
  widths.insert(widths.end(), hidden.begin(), hidden.end());
  widths.push_back(classes);
  return mlp_layout(widths);
}

std::string describe_mlp(const std::vector<DenseLayout>& dense) {
  std::string shape = fmt::format("{}", dense.front().in);
  for (const DenseLayout& d : dense) shape += fmt::format("-{}", d.out);
  return fmt::format("mlp {}, {} parameters", shape, dense.back().end());
}

}  // namespace

ModelShape mlp_model_shape(const std::vector<int64_t>& hidden, int64_t features, int64_t classes) {
  const std::vector<DenseLayout> dense = layout_of(hidden, features, classes);
  ModelShape s;
  s.type = "mlp";
  s.describe = describe_mlp(dense);
  s.blocks = mlp_block_shapes(dense);
  s.parameters = dense.back().end();
  return s;
}

Mlp::Mlp(const std::vector<int64_t>& hidden, int64_t features, int64_t classes, uint64_t seed, const Kernels& k,
         bool hold)
    : Model(k), x_staging_(k), labels_staging_(k) {
  dense_ = layout_of(hidden, features, classes);
  const int64_t count = dense_.back().end();
  if (hold) check_fits(count, "the MLP");
  blocks_ = make_mlp_blocks(dense_, mlp_block_shapes(dense_), scratch_, k);
  std::vector<TensorInit> init;  // each layer's weights and bias, one stream
  for (size_t l = 0; l < dense_.size(); ++l) {
    const DenseLayout& d = dense_[l];
    init.push_back({d.w_offset, d.end() - d.w_offset, TensorInit::Kind::uniform, 1.0 / std::sqrt(double(d.in)),
                    derive_seed(seed, l, /*tag=*/0x6d6c70)});
  }
  set_parameters(count, std::move(init), hold);
}

StepStats Mlp::forward_backward_pass(const Batch& b, float loss_scale, GradPass pass) {
  return run_blocks(stage(b.x, b.n * dense_.front().in, x_staging_), nullptr, stage(b.targets, b.n, labels_staging_), b.n,
                    loss_scale, true, pass);
}

StepStats Mlp::evaluate(const Batch& b) {
  if (b.n == 0) return {};
  return run_blocks(stage(b.x, b.n * dense_.front().in, x_staging_), nullptr, stage(b.targets, b.n, labels_staging_), b.n,
                    1.0f, false);
}

std::string Mlp::describe() const { return describe_mlp(dense_); }

}  // namespace dp
