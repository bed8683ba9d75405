// Residual convolutional network for image classification:
//   stem: conv3x3 (stride 1, pad 1) -> norm -> ReLU
//   per stage s: [s > 0: conv3x3 stride 2 -> norm -> ReLU]
//                then `blocks` x (conv3x3 -> norm -> ReLU -> conv3x3 -> norm, + block input, ReLU)
//   global average pooling -> linear -> softmax cross-entropy.
// "norm" is the per-sample feature-map normalisation of kernels/cpu/norm.h (no batch statistics, so
// data-parallel training is independent of the rank count). Activations are NCHW.
#pragma once

#include <vector>

#include "kernels/cpu/conv.h"
#include "models/model.h"

namespace dp {

class Cnn final : public Model {
 public:
  // Parameter layout, layer by layer in forward order: conv w (O, C, 3, 3) then b (O); norm gamma (C)
  // then beta (C); the classifier's w (classes, C) then b (classes). Conv and linear weights and biases
  // ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (PyTorch's default), gamma = 1, beta = 0.
  // Throws JobError when `shape` is not image data or the options are invalid.
  Cnn(const ModelSection& spec, const SampleShape& shape, uint64_t seed, const Kernels& k = cpu_kernels());

  std::string type() const override { return "cnn"; }
  StepStats forward_backward(const Batch& b, float loss_scale) override;
  StepStats evaluate(const Batch& b) override;
  std::string describe() const override;

 protected:
  std::vector<int64_t> unparameterised_input() const override { return {shape_.height, shape_.width}; }

 private:
  struct Conv {
    cpu::ConvShape shape;  // n is set per batch
    int64_t w_offset, b_offset;
  };
  struct Norm {
    int64_t channels, spatial;
    int64_t g_offset, b_offset;
  };
  // The stem and each downsampling layer (conv -> norm -> ReLU), or a residual block.
  struct Unit {
    explicit Unit(const Kernels& k)
        : c1(k), h1(k), c2(k), out(k), mean1(k), rstd1(k), mean2(k), rstd2(k) {}
    bool residual = false;
    Conv conv1;
    Norm norm1;
    Conv conv2;  // residual only
    Norm norm2;  // residual only
    int64_t in_size, out_size;  // floats per sample
    // Activations kept for backward, (n, ...): conv outputs c1, c2; h1 = ReLU(norm1(c1)) (the unit's
    // output when not residual); out = ReLU(norm2(c2) + input).
    Buffer<float> c1, h1, c2, out;
    Buffer<float> mean1, rstd1, mean2, rstd2;
    const Buffer<float>& output() const { return residual ? out : h1; }
  };

  void forward(const float* x, int64_t n);  // x in the backend's memory; fills activations and logits_
  float* p(int64_t offset) { return params_.data() + offset; }
  float* g(int64_t offset) { return grads_.data() + offset; }

  SampleShape shape_;
  std::vector<int64_t> channels_;
  int64_t blocks_;
  std::vector<Unit> units_;
  int64_t fc_w_offset_ = 0, fc_b_offset_ = 0, classes_ = 0;
  int64_t max_act_ = 0;        // largest per-sample activation (unit input or output), floats
  int64_t max_workspace_ = 0;  // largest conv workspace, floats
  Buffer<float> pooled_, logits_, dlogits_, dpooled_;
  Buffer<float> grad_a_, grad_b_, grad_c_;  // gradients, (n, max_act_) each
  Buffer<float> workspace_;                 // the convolutions' (CPU only)
  Buffer<float> x_staging_;
  Buffer<int32_t> labels_staging_;
};

}  // namespace dp
