// A model is an ordered list of layers over one flat parameter buffer and one flat gradient buffer
// (per-layer views are offsets into them), so collectives, optimizers and checkpoints work on flat
// ranges. Each layer reports its parameter count, activation size and FLOPs for planners.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/job/job.h"

namespace dp {

struct LayerInfo {
  std::string name;               // "fc1", "relu1", ...
  std::string kind;               // "linear", "relu", ...
  int64_t param_offset = 0;       // into Model::params()
  int64_t param_count = 0;
  int64_t activations_per_sample = 0;  // floats this layer's output keeps for backward, per sample
  double flops_per_sample = 0;    // forward; backward costs about twice this
};

struct StepStats {
  double loss_sum = 0;  // sum of per-sample losses
  int64_t correct = 0;  // samples classified correctly
  int64_t count = 0;    // samples seen
};

class Model {
 public:
  virtual ~Model() = default;

  virtual std::string type() const = 0;
  const std::vector<LayerInfo>& layers() const { return layers_; }
  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }
  std::span<float> grads() { return grads_; }

  // Forward and backward on n samples x (n, features) with labels y. Overwrites grads() with
  // loss_scale * d(sum of per-sample losses)/d(params); n may be 0 (gradients become zero).
  virtual StepStats forward_backward(const float* x, const int32_t* y, int64_t n, float loss_scale) = 0;
  // Forward only.
  virtual StepStats evaluate(const float* x, const int32_t* y, int64_t n) = 0;

  // Identifies the architecture (type and layer shapes), not the values: checkpoints must match it.
  uint64_t fingerprint() const;
  // "mlp: 784-256-128-10, 235,146 parameters".
  virtual std::string describe() const = 0;

 protected:
  std::vector<LayerInfo> layers_;
  std::vector<float> params_;
  std::vector<float> grads_;
};

// Builds the model [model] describes for inputs of `features` floats and `classes` outputs; parameters are
// initialised deterministically from `seed` (the same on every rank).
std::unique_ptr<Model> make_model(const ModelSection& spec, int64_t features, int64_t classes,
                                  uint64_t seed);

}  // namespace dp
