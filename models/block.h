// A block: the unit a pipeline stage boundary may follow (a dense layer, a CNN unit, a transformer block,
// the embedding, the head and its loss). Like llm.c's layers, at that size: its shape (parameters,
// activations in and out, what its backward keeps, FLOPs) and its forward and backward side by side.
// A model is an ordered list of blocks; a stage (models/stage.h) runs a contiguous range of them, and the
// whole model is the one-stage case.
//
// Blocks hold no activations between calls: a micro-batch's are the caller's (BlockData), so a stage can
// keep one set per micro-batch in flight. Memory that lives only within one call comes from the model's
// Scratch, shared by its blocks, so a stage's working memory is its largest call's, not their sum.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lib/core/batch.h"
#include "lib/core/param_range.h"
#include "models/buffer.h"

namespace dp {

struct StepStats {
  double loss_sum = 0;  // sum of the loss terms (one per sample, or one per token for language models)
  int64_t correct = 0;  // loss terms whose arg-max prediction was right
  int64_t count = 0;    // loss terms
};

// One layer of a block (a convolution, a norm, a ReLU, a linear map...), as the model's layer table lists
// it (Model::layers(), the blocks' layers in order): the checkpoint fingerprint hashes the layers' kinds
// and parameter counts, the gradient hooks' ranges are their parameter ranges, their FLOPs add up to the
// block's forward FLOPs.
struct LayerInfo {
  std::string name;               // "fc1", "relu1", ...
  std::string kind;               // "linear", "relu", ...
  int64_t param_offset = 0;       // into Model::params(); a layer without parameters: where it sits
  int64_t param_count = 0;
  int64_t activations_per_sample = 0;  // floats this layer's output keeps for backward, per sample
  double flops_per_sample = 0;    // forward; backward costs about twice this
};

struct BlockShape {
  std::string name, kind;                    // "fc2", "relu_linear"
  int64_t param_offset = 0, param_count = 0;  // its parameters in the model's flat buffer
  int64_t shared_offset = 0, shared_count = 0;  // another block's parameters it also reads and adds
                                                //   gradients to (a tied LM head: the token embedding)
  int64_t in_floats = 0;      // per sample: its input (the previous block's output; the data for the first)
  int64_t in_tokens = 0;      // per sample: the token ids it reads instead (a language model's embedding)
  int64_t out_floats = 0;     // per sample: its output, the next block's input (0 for the head)
  int64_t saved_floats = 0;   // per sample: what its backward reads besides its input, kept from forward
  int64_t scratch_floats = 0; // per sample: working memory of one forward or backward
  int64_t eval_scratch_floats = 0;   // per sample: of a forward that keeps nothing for backward (evaluation)
  int64_t scratch_fixed_floats = 0;  // per call whatever its samples, on top (attention's T x T)
  double forward_flops = 0, backward_flops = 0;  // per sample
  std::vector<LayerInfo> layers;  // what it runs, in order; their parameter ranges tile its own
};

// The forward FLOPs of `layers`, per sample: what a block's forward_flops is.
double layers_flops(const std::vector<LayerInfo>& layers);

// The parameters (and gradients) a block reaches: a buffer holding the model's flat parameters from
// offset `base` on (the whole model's, base 0, or a stage's).
struct ParamWindow {
  float* params = nullptr;
  float* grads = nullptr;
  int64_t base = 0;
  float* p(int64_t offset) const { return params + (offset - base); }
  float* g(int64_t offset) const { return grads + (offset - base); }
};

// Gradient communication's hooks (Model::on_parameters_needed / on_gradients_ready), in the model's flat
// offsets, and the slice size wide layers announce their parameters in (0: whole layers).
struct BlockHooks {
  std::function<void(int64_t end)> parameters_needed;
  std::function<void(int64_t offset)> gradients_ready;
  int64_t slice_floats = 0;
  void needed(int64_t end) const {
    if (parameters_needed) parameters_needed(end);
  }
  void ready(int64_t offset) const {
    if (gradients_ready) gradients_ready(offset);
  }
};

// One micro-batch of n samples as a block sees it, in the backend's memory.
struct BlockData {
  int64_t n = 0;
  const float* x = nullptr;          // (n, in_floats)
  const int32_t* tokens = nullptr;   // a language model's first block reads token ids instead of x
  const int32_t* targets = nullptr;  // the head's labels (n) or next tokens
  float* y = nullptr;                // (n, out_floats), written by forward
  float* saved = nullptr;            // (n, saved_floats), written by forward, read by backward
};

// A micro-batch's activations carved out of one allocation, tensor after tensor: each take() is n times
// a per-sample count of floats.
struct ActivationCarve {
  float* p;
  int64_t n;
  float* take(int64_t per_sample) {
    float* at = p;
    p += n * per_sample;
    return at;
  }
};

// Working memory of one block call (a forward or a backward), shared by all the blocks of a model: a call
// asks for all it needs at its start, carves it, and leaves nothing there that a later call needs (but
// the last forward's results, until the next call: a GPT head's logits).
class Scratch {
 public:
  explicit Scratch(const Kernels& k) : k_(k), buf_(k) {}
  // Frees it (it grows again on the next call): after work at a larger size than what follows.
  void release() { buf_ = Buffer<float>(k_); }
  // At least `count` floats (their contents are lost when it grows); valid until the next call.
  float* floats(int64_t count) {
    const MemoryUse use("the blocks' working memory");
    buf_.grow(size_t(count));
    return buf_.data();
  }
  // n samples of `per_sample` floats each, to carve tensor after tensor.
  ActivationCarve carve(int64_t n, int64_t per_sample) { return {floats(n * per_sample), n}; }

 private:
  const Kernels& k_;
  Buffer<float> buf_;
};

class Block {
 public:
  explicit Block(BlockShape shape) : shape_(std::move(shape)) {}
  virtual ~Block() = default;
  const BlockShape& shape() const { return shape_; }
  // The ranges its backward announces through BlockHooks::ready, in forward order, when wide layers run
  // in slices of about `slice_floats` parameters (0: whole layers): its layers' with parameters.
  virtual std::vector<ParamRange> hook_ranges(int64_t slice_floats) const;

  // d.x -> d.y (and d.saved). The head computes its loss terms instead, and with loss_scale > 0 also
  // loss_scale * d(loss)/d(its output) into d.saved for its backward; other blocks return {}.
  virtual StepStats forward(const ParamWindow& w, const BlockData& d, float loss_scale, const BlockHooks& h) = 0;
  // From dy (n, out_floats; the head reads its saved loss gradient instead): dx (n, in_floats; skipped when
  // null) and its parameter gradients, overwritten or added to (accumulate). Announces its gradients,
  // last to first, through h.
  virtual void backward(const ParamWindow& w, const BlockData& d, const float* dy, float* dx, bool accumulate,
                        const BlockHooks& h) = 0;

 private:
  BlockShape shape_;
};

// A block's backward as a pipeline stage or the whole model runs it. A recomputed block, whose forward
// kept only its input, first runs that forward again (no hooks: its parameters are final) to rebuild its
// saved activations in d.saved, its output rewritten with the same values where it already is.
void recompute_and_backward(Block& block, const ParamWindow& w, const BlockData& d, bool recompute, float loss_scale,
                            const float* dy, float* dx, bool accumulate, const BlockHooks& h);

}  // namespace dp
