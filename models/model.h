// A model is an ordered list of layers over one flat parameter buffer and one flat gradient buffer
// (per-layer views are offsets into them), so collectives, optimizers and checkpoints work on flat
// ranges. Each layer reports its parameter count, activation size and FLOPs for planners.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/core/batch.h"
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
  double loss_sum = 0;  // sum of the loss terms (one per sample, or one per token for language models)
  int64_t correct = 0;  // loss terms whose arg-max prediction was right
  int64_t count = 0;    // loss terms
};

class Model {
 public:
  virtual ~Model() = default;

  virtual std::string type() const = 0;
  const std::vector<LayerInfo>& layers() const { return layers_; }
  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }
  std::span<float> grads() { return grads_; }

  // Forward and backward on a batch. Overwrites grads() with loss_scale * d(sum of loss terms)/d(params);
  // b.n may be 0 (gradients become zero).
  virtual StepStats forward_backward(const Batch& b, float loss_scale) = 0;
  // Forward only.
  virtual StepStats evaluate(const Batch& b) = 0;
  // Loss terms per sample: 1 for classifiers, the context length for language models.
  virtual int64_t targets_per_sample() const { return 1; }
  // Forward FLOPs of one sample (sum over layers); backward costs about twice this.
  double flops_per_sample() const;

  // Identifies the architecture (type and layer shapes), not the values: checkpoints must match it.
  uint64_t fingerprint() const;
  // "mlp: 784-256-128-10, 235,146 parameters".
  virtual std::string describe() const = 0;

 protected:
  std::vector<LayerInfo> layers_;
  std::vector<float> params_;
  std::vector<float> grads_;
};

// Builds the model [model] describes for samples of `shape`; parameters are initialised
// deterministically from `seed` (the same on every rank). Throws JobError when the model does not fit
// the data or its options do not fit together.
std::unique_ptr<Model> make_model(const ModelSection& spec, const SampleShape& shape, uint64_t seed);

}  // namespace dp
