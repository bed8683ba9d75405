// GPT-2-style decoder-only transformer for character-level language modelling: token + position
// embedding, `layers` pre-norm blocks (LayerNorm, causal multi-head attention, residual; LayerNorm,
// 4x MLP with GELU, residual), a final LayerNorm and a linear LM head (tied to the token embedding or
// separate). Every position's next-token prediction is a loss term.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/model.h"

namespace dp {

class Gpt final : public Model {
 public:
  // Vocabulary V = shape.classes, sequence length T = shape.context (at most spec.context, the position
  // table size). Weights ~ N(0, 0.02), residual projections ~ N(0, 0.02 / sqrt(2 layers)), biases 0,
  // LayerNorm gamma 1 and beta 0 (GPT-2's initialisation), drawn from `seed` tensor by tensor.
  Gpt(const ModelSection& spec, const SampleShape& shape, uint64_t seed);

  std::string type() const override { return "gpt"; }
  StepStats forward_backward(const Batch& b, float loss_scale) override;
  StepStats evaluate(const Batch& b) override;
  int64_t targets_per_sample() const override { return t_; }
  std::string describe() const override;

  // The (n, T, V) logits of the last forward pass (for sampling and tests).
  std::span<const float> logits() const { return {logits_.data(), size_t(n_ * t_ * v_)}; }

 private:
  // Offsets into params_/grads_ of one block's tensors.
  struct Block {
    int64_t ln1_g, ln1_b;    // (C), (C)
    int64_t qkv_w, qkv_b;    // (3C, C), (3C)
    int64_t proj_w, proj_b;  // (C, C), (C)
    int64_t ln2_g, ln2_b;    // (C), (C)
    int64_t fc_w, fc_b;      // (4C, C), (4C)
    int64_t fcp_w, fcp_b;    // (C, 4C), (C)
  };
  // One block's saved activations, each for n sequences of T positions.
  struct BlockActs {
    std::vector<float> ln1, ln1_mean, ln1_rstd;  // (n,T,C), (n,T), (n,T)
    std::vector<float> qkv;                      // (n,T,3C)
    std::vector<float> att;                      // (n,NH,T,T) softmax probabilities
    std::vector<float> atty;                     // (n,T,C) heads' outputs
    std::vector<float> res1;                     // (n,T,C) residual after attention
    std::vector<float> ln2, ln2_mean, ln2_rstd;  // (n,T,C), (n,T), (n,T)
    std::vector<float> fch;                      // (n,T,4C) before GELU
    std::vector<float> fch_gelu;                 // (n,T,4C)
    std::vector<float> res2;                     // (n,T,C) residual after the MLP (the block's output)
  };

  void resize(int64_t n);  // grows the activation buffers to n sequences (they never shrink)
  void forward(const int32_t* tokens, int64_t n);  // fills the activations and logits_
  const float* p(int64_t offset) const { return params_.data() + offset; }
  float* g(int64_t offset) { return grads_.data() + offset; }

  int64_t v_, t_, c_, nh_, layers_count_, positions_;
  bool tied_;
  int64_t wte_, wpe_;     // (V, C), (positions, C)
  std::vector<Block> blocks_;
  int64_t lnf_g_, lnf_b_;  // (C), (C)
  int64_t head_w_;         // (V, C): wte_ when tied

  int64_t n_ = 0;  // sequences the buffers hold
  std::vector<float> encoded_;  // (n,T,C) embedding output
  std::vector<BlockActs> acts_;
  std::vector<float> lnf_, lnf_mean_, lnf_rstd_;  // (n,T,C), (n,T), (n,T)
  std::vector<float> logits_, dlogits_;          // (n,T,V)
  std::vector<float> tmp_;                        // (n,T,C) projection outputs before the residual add
  std::vector<float> zero_bias_, dbias_scratch_;  // (V): the LM head has no bias
  // backward
  std::vector<float> dres_, dtmp_;  // (n,T,C): residual stream gradient; a LayerNorm output's gradient
  std::vector<float> dqkv_;         // (n,T,3C)
  std::vector<float> dfch_;         // (n,T,4C)
  std::vector<float> datt_scratch_; // (T,T)
};

}  // namespace dp
