// GPT-2-style decoder-only transformer for character-level language modelling: token + position
// embedding, `layers` pre-norm blocks (LayerNorm, causal multi-head attention, residual; LayerNorm,
// 4x MLP with GELU, residual), a final LayerNorm and a linear LM head (tied to the token embedding or
// separate). Every position's next-token prediction is a loss term. Runs as blocks (models/gpt_blocks.h:
// the embedding, one per layer, the head); forward_backward is the one-stage case of a pipeline.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/gpt_blocks.h"
#include "models/model.h"
#include "models/model_shape.h"

namespace dp {

// The flat parameter layout, tensor by tensor (offsets in floats).
struct GptParams {
  int64_t wte = 0, wpe = 0;             // (V, C), (positions, C)
  std::vector<GptLayerLayout> layers;
  int64_t lnf_g = 0, head_w = 0;        // (C) and beta (C); (V, C) unless tied to wte
  int64_t count = 0;
};

// The GPT [model] describes for text of `shape`, without its parameters: its layout and its blocks'
// shapes, what the constructor builds and model_shape() reports. Throws JobError for options that do
// not fit the text or each other.
struct GptArch {
  GptDims dims;
  GptParams params;
  bool tied = true;
  std::vector<BlockShape> blocks;  // the embedding, one per layer, the head
  ModelShape shape() const;
};
GptArch gpt_arch(const ModelSection& spec, const SampleShape& shape, const Kernels& k);

class Gpt final : public Model {
 public:
  // Vocabulary V = shape.classes, sequence length T = shape.context (at most spec.context, the position
  // table size). Weights ~ N(0, 0.02), residual projections ~ N(0, 0.02 / sqrt(2 layers)), biases 0,
  // LayerNorm gamma 1 and beta 0 (GPT-2's initialisation), drawn from `seed` tensor by tensor.
  // `hold`: allocate the parameters (model.h, make_model).
  Gpt(const ModelSection& spec, const SampleShape& shape, uint64_t seed, const Kernels& k = cpu_kernels(),
      bool hold = true);

  std::string type() const override { return "gpt"; }
  StepStats evaluate(const Batch& b) override;
  int64_t targets_per_sample() const override { return t_; }
  std::string describe() const override;

  // The (n, T, V) logits of the last forward pass (for sampling and tests: evaluate(), whose last call
  // is the head's forward), copied to the host.
  std::vector<float> logits() const {
    DP_CHECK(head_->logits(), "logits of a forward pass the head's backward has not yet overwritten");
    std::vector<float> host(size_t(head_->logits_samples() * t_ * v_));
    k_.download(host.data(), head_->logits(), host.size() * sizeof(float));
    return host;
  }

 protected:
  StepStats forward_backward_pass(const Batch& b, float loss_scale, GradPass pass) override;

 private:
  // Checks the batch's token ids on the host and stages tokens and targets for the kernels.
  void stage_batch(const Batch& b, const int32_t** tokens, const int32_t** targets);

  int64_t v_, t_;
  std::string describe_;
  GptHead* head_ = nullptr;  // the last of blocks_
  Buffer<int32_t> tokens_staging_, targets_staging_;  // (n,T) each
};

}  // namespace dp
