// Multi-layer perceptron: Linear -> ReLU -> ... -> Linear, softmax cross-entropy on the logits. Runs as
// blocks (models/mlp_blocks.h); forward_backward is the one-stage case of a pipeline.
#pragma once

#include <vector>

#include "models/mlp_blocks.h"
#include "models/model.h"
#include "models/model_shape.h"

namespace dp {

// The MLP of `hidden` widths for `features` inputs and `classes` outputs, without its parameters: what
// the constructor builds (the same layout).
ModelShape mlp_model_shape(const std::vector<int64_t>& hidden, int64_t features, int64_t classes);

class Mlp final : public Model {
 public:
  // widths: features, hidden..., classes. Weights and biases ~ U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's
  // default for nn.Linear), drawn from `seed` layer by layer.
  // `hold`: allocate the parameters (model.h, make_model).
  Mlp(const std::vector<int64_t>& hidden, int64_t features, int64_t classes, uint64_t seed,
      const Kernels& k = cpu_kernels(), bool hold = true);

  std::string type() const override { return "mlp"; }
  StepStats evaluate(const Batch& b) override;
  std::string describe() const override;

 protected:
  StepStats forward_backward_pass(const Batch& b, float loss_scale, GradPass pass) override;

 private:
  std::vector<DenseLayout> dense_;
  Buffer<float> x_staging_;
  Buffer<int32_t> labels_staging_;
};

}  // namespace dp
