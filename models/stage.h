// A pipeline stage: blocks [first, last] of a model (models/block.h) with only their parameters and
// gradients (the model's flat offsets [param_begin, param_end)), one set of activations per micro-batch in
// flight (a slot: the stage's input, every block's output, every block's saved activations), gradients
// accumulated across micro-batches, and recomputation per block: a recomputed block keeps only its input
// and re-runs its forward, into scratch, just before its backward. The whole model is the one-stage case;
// forward(slot) and backward(slot) in any order a schedule (1F1B) chooses.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/model.h"

namespace dp {

class Stage {
 public:
  // Blocks [first, last] of `model` (which must outlive the stage; its blocks run here), parameters copied
  // from the model's (or its initial values, when the model holds none), `slots` micro-batches in flight at
  // once, `recompute[i]` for block first + i.
  Stage(Model& model, int first, int last, int slots, std::vector<bool> recompute = {});

  const Kernels& kernels() const { return k_; }
  int first() const { return first_; }
  int last() const { return last_; }
  bool is_last() const { return last_ + 1 == model_.block_count(); }
  int64_t param_begin() const { return begin_; }
  int64_t param_end() const { return end_; }
  int64_t in_floats() const { return model_.block(first_).shape().in_floats; }
  int64_t out_floats() const { return model_.block(last_).shape().out_floats; }
  std::span<float> params() { return params_.span(); }
  std::vector<float> params_to_host() const { return params_.to_host(); }
  std::vector<float> grads_to_host() const { return grads_.to_host(); }
  void params_from_host(std::span<const float> host) { params_.upload(host); }
  std::span<float> grads() { return grads_.span(); }

  // Where the input of n samples for `slot` goes (n, in_floats; the backend's memory): the previous
  // stage's output is received there, or the first stage's batch copied there, before forward(slot).
  float* input(int slot, int64_t n);
  // The first stage's input of `slot` from host memory (n rows of in_floats: the batch's samples).
  void upload_input(int slot, std::span<const float> host);
  // Forward of the n samples in `slot`'s input (or, for a language model's first stage, of `tokens`);
  // tokens and targets (the head's) in the backend's memory, alive until backward. The last stage
  // returns its loss terms (others: {}).
  StepStats forward(int slot, const int32_t* tokens, const int32_t* targets, int64_t n, float loss_scale);
  // The slot's output (n, out_floats) for the next stage; null for the last stage.
  const float* output(int slot) const;
  // Backward of the micro-batch in `slot`: dy (n, out_floats) from the next stage (ignored by the last),
  // dx (n, in_floats) for the previous one (null: not wanted). Parameter gradients are overwritten when
  // `accumulate` is false (the mini-batch's first micro-batch), else added to. Frees the slot. `hooks`
  // hear of each block's finished gradients (offsets in the model's flat parameters), last to first.
  void backward(int slot, const float* dy, float* dx, bool accumulate, const BlockHooks& hooks = {});

  // Gradients to zero (a replica that trained no rows in a mini-batch adds nothing to the sum).
  void zero_grads() { grads_.zero(); }

  // Bytes of activations one slot holds for n samples (input, outputs, saved of blocks not recomputed); a
  // language model's first stage counts the token ids it reads, which the caller keeps until backward.
  int64_t slot_bytes(int64_t n) const;

 private:
  struct Slot {
    Buffer<float> input, outputs, saved;  // outputs and saved: every block's, back to back
    const int32_t *tokens = nullptr, *targets = nullptr;
    int64_t n = 0;
    float loss_scale = 1;  // the head's, for recomputing its loss gradient
  };
  int64_t output_offset(int i, int64_t n) const;  // of block first + i in a slot's outputs
  int64_t saved_offset(int i, int64_t n) const;   // of block first + i in a slot's saved (recomputed: none)
  BlockData data(Slot& s, int i);
  ParamWindow window() { return {params_.data(), grads_.data(), begin_}; }

  Model& model_;
  const Kernels& k_;
  int first_, last_;
  std::vector<bool> recompute_;
  int64_t begin_ = 0, end_ = 0;
  Buffer<float> params_, grads_;
  std::vector<Slot> slots_;
  Buffer<float> rebuilt_;  // a recomputed block's saved activations, for its backward
  Buffer<float> dbuf_a_, dbuf_b_;  // the gradients between its blocks: the one coming in, the one going out
  int64_t inner_floats_ = 0;       // per sample: the largest of them
};

}  // namespace dp
