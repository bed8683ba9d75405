// Multi-layer perceptron: Linear -> ReLU -> ... -> Linear, softmax cross-entropy on the logits.
#pragma once

#include <vector>

#include "models/model.h"

namespace dp {

class Mlp final : public Model {
 public:
  // widths: features, hidden..., classes. Weights and biases ~ U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's
  // default for nn.Linear), drawn from `seed` layer by layer.
  Mlp(const std::vector<int64_t>& hidden, int64_t features, int64_t classes, uint64_t seed,
      const Kernels& k = cpu_kernels());

  std::string type() const override { return "mlp"; }
  StepStats forward_backward(const Batch& b, float loss_scale) override;
  StepStats evaluate(const Batch& b) override;
  std::string describe() const override;
  std::vector<ParamRange> hook_ranges() const override;

 private:
  struct Dense {                // one Linear (+ ReLU unless it is the last)
    int64_t in, out;
    int64_t w_offset, b_offset; // into params_/grads_: w (out, in), b (out)
    bool relu;
  };
  // Output rows where d's slices begin, and its end: {0, out} unless hook slices cut the layer.
  std::vector<int64_t> slice_rows(const Dense& d) const;
  // Where slice j of d ends in the parameter buffer (the last slice holds the bias too).
  int64_t slice_end(const Dense& d, const std::vector<int64_t>& rows, size_t j) const;
  void forward(const float* x, int64_t n);  // x in the backend's memory; fills acts_
  // Backward of dense_[l] given dy (its output's gradient); writes dx unless null.
  void backward(size_t l, const float* x, const float* dy, float* dx, int64_t n);
  float* p(int64_t offset) { return params_.data() + offset; }
  float* g(int64_t offset) { return grads_.data() + offset; }

  std::vector<Dense> dense_;
  std::vector<Buffer<float>> acts_;  // acts_[l]: output of dense_[l] after its ReLU, (n, out)
  Buffer<float> dlogits_, dbuf_a_, dbuf_b_;
  Buffer<float> x_staging_;
  Buffer<int32_t> labels_staging_;
};

}  // namespace dp
