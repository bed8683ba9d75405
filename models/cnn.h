// Residual convolutional network for image classification:
//   stem: conv3x3 (stride 1, pad 1) -> norm -> ReLU
//   per stage s: [s > 0: conv3x3 stride 2 -> norm -> ReLU]
//                then `blocks` x (conv3x3 -> norm -> ReLU -> conv3x3 -> norm, + block input, ReLU)
//   global average pooling -> linear -> softmax cross-entropy.
// "norm" is the per-sample feature-map normalisation of kernels/cpu/norm.h (no batch statistics, so
// data-parallel training is independent of the rank count). Activations are NCHW. Runs as blocks
// (models/cnn_blocks.h: the stem, each downsampling layer and each residual block a unit, then the head);
// forward_backward is the one-stage case of a pipeline.
#pragma once

#include <vector>

#include "models/cnn_blocks.h"
#include "models/model.h"
#include "models/model_shape.h"

namespace dp {

// The CNN [model] describes for images of `shape`, without its parameters: what the constructor builds
// (the same layout function). Throws JobError as the constructor does.
ModelShape cnn_model_shape(const ModelSection& spec, const SampleShape& shape, const Kernels& k);

class Cnn final : public Model {
 public:
  // Parameter layout, layer by layer in forward order: conv w (O, C, 3, 3) then b (O); norm gamma (C)
  // then beta (C); the classifier's w (classes, C) then b (classes). Conv and linear weights and biases
  // ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (PyTorch's default), gamma = 1, beta = 0.
  // Throws JobError when `shape` is not image data or the options are invalid.
  // `hold`: allocate the parameters (model.h, make_model).
  Cnn(const ModelSection& spec, const SampleShape& shape, uint64_t seed, const Kernels& k = cpu_kernels(),
      bool hold = true);

  std::string type() const override { return "cnn"; }
  StepStats evaluate(const Batch& b) override;
  // In chunks: the forward keeps every block's output, so a large evaluation batch would otherwise cost
  // memory in proportion (and run out of cache).
  int64_t evaluation_chunk() const override { return 64; }
  std::string describe() const override;

 protected:
  StepStats forward_backward_pass(const Batch& b, float loss_scale, GradPass pass) override;
  std::vector<int64_t> unparameterised_input() const override { return {shape_.height, shape_.width}; }

 private:
  SampleShape shape_;
  std::string describe_;
  Buffer<float> workspace_;  // the convolutions' (CPU only), shared by the blocks
  Buffer<float> x_staging_;
  Buffer<int32_t> labels_staging_;
};

}  // namespace dp
