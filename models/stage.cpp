// A pipeline stage over a range of a model's blocks (stage.h).
#include "models/stage.h"

#include <fmt/format.h>

#include <algorithm>

#include "lib/core/error.h"

namespace dp {

Stage::Stage(Model& model, int first, int last, int slots, std::vector<bool> recompute)
    : model_(model), k_(model.kernels()), first_(first), last_(last), recompute_(std::move(recompute)),
      params_(model.kernels()), grads_(model.kernels()), rebuilt_(model.kernels()), dbuf_a_(model.kernels()),
      dbuf_b_(model.kernels()) {
  DP_CHECK(0 <= first && first <= last && last < model.block_count() && slots >= 1, "a stage of the model's blocks");
  recompute_.resize(size_t(last - first + 1), false);
  begin_ = model.block(first).shape().param_offset;
  end_ = begin_;
  for (int b = first; b <= last; ++b) {
    const BlockShape& s = model.block(b).shape();
    DP_CHECK(s.param_offset == end_, "blocks' parameters laid out in order");
    end_ += s.param_count;
    if (b > first) inner_floats_ = std::max(inner_floats_, s.in_floats);
  }
  for (int b = first; b <= last; ++b) {
    const BlockShape& s = model.block(b).shape();
    if (s.shared_count > 0 && (s.shared_offset < begin_ || s.shared_offset + s.shared_count > end_))
      throw JobError("[model] tied_head",
                     fmt::format("block {} ({}) shares its weights with a block in another stage: a tied LM head "
                                 "and the token embedding must be in one stage",
                                 b, s.name),
                     "set [model] tied_head = false to split them, or keep them in one stage");
  }
  const MemoryUse use("the stage's parameters and gradients");
  params_.grow(size_t(end_ - begin_));
  grads_.grow(size_t(end_ - begin_));
  // The model's values where it holds them (and no host copy of more than the stage's), else the initial ones.
  if (model.params().empty()) {
    params_.upload(model.initial_params(begin_, end_));
  } else {
    std::vector<float> mine(size_t(end_ - begin_));
    model.kernels().download(mine.data(), model.params().data() + begin_, mine.size() * sizeof(float));
    params_.upload(mine);
  }
  grads_.zero();
  for (int i = 0; i < slots; ++i) slots_.push_back({Buffer<float>(k_), Buffer<float>(k_), Buffer<float>(k_)});
}

int64_t Stage::output_offset(int i, int64_t n) const {
  int64_t off = 0;
  for (int b = first_; b < first_ + i; ++b) off += n * model_.block(b).shape().out_floats;
  return off;
}

int64_t Stage::saved_offset(int i, int64_t n) const {
  int64_t off = 0;
  for (int b = first_; b < first_ + i; ++b)
    if (!recompute_[size_t(b - first_)]) off += n * model_.block(b).shape().saved_floats;
  return off;
}

int64_t Stage::slot_bytes(int64_t n) const {
  const int len = last_ - first_ + 1;
  // The input it holds: floats, or the token ids the first block reads (both 4 bytes).
  const int64_t input = in_floats() + model_.block(first_).shape().in_tokens;
  return int64_t(sizeof(float)) * (n * input + output_offset(len, n) + saved_offset(len, n));
}

float* Stage::input(int slot, int64_t n) {
  Slot& s = slots_[size_t(slot)];
  const MemoryUse use("activations (a micro-batch's input)");
  s.input.grow(size_t(n * in_floats()));
  return s.input.data();
}

void Stage::upload_input(int slot, std::span<const float> host) {
  Slot& s = slots_[size_t(slot)];
  const MemoryUse use("activations (a micro-batch's input)");
  s.input.grow(host.size());
  s.input.upload(host);
}

BlockData Stage::data(Slot& s, int i) {
  const int b = first_ + i;
  const BlockShape& shape = model_.block(b).shape();
  float* saved = nullptr;
  if (shape.saved_floats > 0) {
    if (recompute_[size_t(i)]) {
      const MemoryUse use("recomputed activations");
      rebuilt_.grow(size_t(s.n * shape.saved_floats));
      saved = rebuilt_.data();
    } else {
      saved = s.saved.data() + saved_offset(i, s.n);
    }
  }
  return {s.n, i == 0 ? s.input.data() : s.outputs.data() + output_offset(i - 1, s.n), s.tokens, s.targets,
          s.outputs.data() + output_offset(i, s.n), saved};
}

StepStats Stage::forward(int slot, const int32_t* tokens, const int32_t* targets, int64_t n, float loss_scale) {
  Slot& s = slots_[size_t(slot)];
  const int len = last_ - first_ + 1;
  s.n = n;
  s.tokens = tokens;
  s.targets = targets;
  s.loss_scale = loss_scale;
  const MemoryUse use("activations");
  s.outputs.grow(size_t(output_offset(len, n)));
  s.saved.grow(size_t(saved_offset(len, n)));
  StepStats stats;
  for (int i = 0; i < len; ++i) {
    const StepStats si = model_.block(first_ + i).forward(window(), data(s, i), loss_scale, BlockHooks{});
    if (first_ + i + 1 == model_.block_count()) stats = si;
  }
  return stats;
}

const float* Stage::output(int slot) const {
  if (is_last()) return nullptr;
  const Slot& s = slots_[size_t(slot)];
  return s.outputs.data() + output_offset(last_ - first_, s.n);
}

void Stage::backward(int slot, const float* dy, float* dx, bool accumulate, const BlockHooks& hooks) {
  Slot& s = slots_[size_t(slot)];
  const BlockHooks none;
  const float* dy_i = dy;
  for (int i = last_ - first_; i >= 0; --i) {
    Block& block = model_.block(first_ + i);
    const BlockData d = data(s, i);
    // A recomputed block rebuilds what it did not keep (its output is the next block's kept input, or,
    // for the stage's last block, still in the slot).
    if (recompute_[size_t(i)] && block.shape().saved_floats > 0) block.forward(window(), d, s.loss_scale, none);
    float* dx_i = dx;
    if (i > 0) {
      Buffer<float>& buf = i % 2 == 0 ? dbuf_a_ : dbuf_b_;  // the largest inner gradient, both alike
      const MemoryUse use("activation gradients");
      buf.grow(size_t(s.n * inner_floats_));
      dx_i = buf.data();
    }
    block.backward(window(), d, dy_i, dx_i, accumulate, hooks);
    dy_i = dx_i;
  }
}

}  // namespace dp
