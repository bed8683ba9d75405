// The GPT's blocks (models/block.h), after llm.c's train_gpt2.c: the embedding (token + position, reading
// token ids), one block per transformer layer (pre-norm attention and MLP with their residuals; its input
// and output the residual stream), and the head (final LayerNorm, the LM head, softmax cross-entropy over
// every position). A tied head reads the token embedding and adds its gradient to it, so the embedding
// block then never overwrites that gradient (the head's backward comes first); tied head and embedding
// must be in one stage (models/stage.h refuses to split them).
#pragma once

#include <memory>

#include "kernels/kernel_table.h"
#include "models/block.h"
#include "models/buffer.h"

namespace dp {

// Offsets into the flat parameters of one transformer layer's tensors.
struct GptLayerLayout {
  int64_t ln1_g, ln1_b;    // (C), (C)
  int64_t qkv_w, qkv_b;    // (3C, C), (3C)
  int64_t proj_w, proj_b;  // (C, C), (C)
  int64_t ln2_g, ln2_b;    // (C), (C)
  int64_t fc_w, fc_b;      // (4C, C), (4C)
  int64_t fcp_w, fcp_b;    // (C, 4C), (C)
};

struct GptDims {
  int64_t v = 0, t = 0, c = 0, nh = 0, positions = 0;  // vocabulary, context, width, heads, position table
};

// The blocks' shapes (what the blocks below are built with; `end`: where the block's parameters end).
BlockShape gpt_embedding_shape(const GptDims& dims, int64_t wte, int64_t wpe);
BlockShape gpt_layer_shape(const std::string& name, const GptDims& dims, const GptLayerLayout& l, int64_t end,
                           const Kernels& k);
BlockShape gpt_head_shape(const GptDims& dims, int64_t lnf_g, int64_t head_w, bool tied, int64_t end);

// Each built with its shape (above).
std::unique_ptr<Block> make_gpt_embedding(BlockShape s, const GptDims& dims, int64_t wte, int64_t wpe, bool tied,
                                          const Kernels& k);
// Its working memory in `scratch` (which must outlive it), as the head's.
std::unique_ptr<Block> make_gpt_layer(BlockShape s, const GptDims& dims, const GptLayerLayout& l, Scratch& scratch,
                                      const Kernels& k);

// The head; its last forward's logits stay readable (for sampling and tests) until the model's next
// block call.
class GptHead final : public Block {
 public:
  GptHead(BlockShape s, const GptDims& dims, int64_t lnf_g, int64_t head_w, Scratch& scratch, const Kernels& k);
  StepStats forward(const ParamWindow& w, const BlockData& d, float loss_scale, const BlockHooks& h) override;
  void backward(const ParamWindow& w, const BlockData& d, const float* dy, float* dx, bool accumulate,
                const BlockHooks& h) override;
  const float* logits() const { return logits_; }  // (n, T, V) in the backend's memory; null once gone
  int64_t logits_samples() const { return n_; }

 private:
  GptDims dims_;
  int64_t lnf_g_, head_w_;
  Scratch& scratch_;
  const Kernels& k_;
  int64_t n_ = 0;
  float* logits_ = nullptr;  // in the scratch, from the last forward
  Buffer<float> zero_bias_, dbias_;
};

}  // namespace dp
