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
  Gpt(const ModelSection& spec, const SampleShape& shape, uint64_t seed, const Kernels& k = cpu_kernels());

  std::string type() const override { return "gpt"; }
  StepStats forward_backward(const Batch& b, float loss_scale) override;
  StepStats evaluate(const Batch& b) override;
  int64_t targets_per_sample() const override { return t_; }
  std::string describe() const override;

  // The (n, T, V) logits of the last forward pass (for sampling and tests), copied to the host.
  std::vector<float> logits() const {
    std::vector<float> host(size_t(n_ * t_ * v_));
    logits_.download(std::span<float>(host));
    return host;
  }

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
    explicit BlockActs(const Kernels& k)
        : ln1(k), ln1_mean(k), ln1_rstd(k), qkv(k), att(k), atty(k), res1(k), ln2(k), ln2_mean(k),
          ln2_rstd(k), fch(k), fch_gelu(k), res2(k) {}
    Buffer<float> ln1, ln1_mean, ln1_rstd;  // (n,T,C), (n,T), (n,T)
    Buffer<float> qkv;                      // (n,T,3C)
    Buffer<float> att;                      // (n,NH,T,T) softmax probabilities
    Buffer<float> atty;                     // (n,T,C) heads' outputs
    Buffer<float> res1;                     // (n,T,C) residual after attention
    Buffer<float> ln2, ln2_mean, ln2_rstd;  // (n,T,C), (n,T), (n,T)
    Buffer<float> fch;                      // (n,T,4C) before GELU
    Buffer<float> fch_gelu;                 // (n,T,4C)
    Buffer<float> res2;                     // (n,T,C) residual after the MLP (the block's output)
  };

  void resize(int64_t n);  // grows the activation buffers to n sequences (they never shrink)
  void forward(const int32_t* tokens, int64_t n);  // tokens in the backend's memory; fills activations
  const float* p(int64_t offset) const { return params_.data() + offset; }
  // Checks the batch's token ids on the host and stages tokens and targets for the kernels.
  void stage_batch(const Batch& b, const int32_t** tokens, const int32_t** targets);
  float* g(int64_t offset) { return grads_.data() + offset; }

  int64_t v_, t_, c_, nh_, layers_count_, positions_;
  bool tied_;
  int64_t wte_, wpe_;     // (V, C), (positions, C)
  std::vector<Block> blocks_;
  int64_t lnf_g_, lnf_b_;  // (C), (C)
  int64_t head_w_;         // (V, C): wte_ when tied

  int64_t n_ = 0;  // sequences the buffers hold
  Buffer<float> encoded_;  // (n,T,C) embedding output
  std::vector<BlockActs> acts_;
  Buffer<float> lnf_, lnf_mean_, lnf_rstd_;  // (n,T,C), (n,T), (n,T)
  Buffer<float> logits_, dlogits_;          // (n,T,V)
  Buffer<float> tmp_;                        // (n,T,C) projection outputs before the residual add
  Buffer<float> zero_bias_, dbias_scratch_;  // (V): the LM head has no bias
  // backward
  Buffer<float> dres_, dtmp_;  // (n,T,C): residual stream gradient; a LayerNorm output's gradient
  Buffer<float> dqkv_;         // (n,T,3C)
  Buffer<float> dfch_;         // (n,T,4C)
  Buffer<float> datt_scratch_; // the attention backward's scratch (kernels.attention_scratch floats)
  Buffer<int32_t> tokens_staging_, targets_staging_;  // (n,T) each
};

}  // namespace dp
