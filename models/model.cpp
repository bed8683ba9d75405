// Model factory and the architecture fingerprint shared by every model type.
#include "models/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "lib/core/error.h"
#include "lib/core/memory_meter.h"
#include "lib/core/trace.h"
#include "models/cnn.h"
#include "models/gpt.h"
#include "models/mlp.h"

namespace dp {

uint64_t Model::fingerprint() const { return architecture_fingerprint(type(), unparameterised_input(), layers()); }

ModelShape Model::shape() const {
  ModelShape s;
  s.type = type();
  s.describe = describe();
  for (const auto& b : blocks_) s.blocks.push_back(b->shape());
  s.parameters = parameter_count_;
  s.fixed_floats = fixed_floats_;
  s.targets_per_sample = targets_per_sample();
  s.evaluation_chunk = evaluation_chunk();
  s.unparameterised_input = unparameterised_input();
  return s;
}

std::vector<LayerInfo> Model::layers() const {
  std::vector<LayerInfo> all;
  for (const auto& b : blocks_) all.insert(all.end(), b->shape().layers.begin(), b->shape().layers.end());
  return all;
}

StepStats Model::forward_backward(const Batch& b, float loss_scale, int64_t micro_batch) {
  if (b.n == 0) {
    grads_.zero();
    gradients_ready(0);
    return {};
  }
  if (micro_batch <= 0 || micro_batch >= b.n) return forward_backward_pass(b, loss_scale, {});
  // Micro-batch i views rows [begin, begin + m) of the batch's arrays.
  const int64_t x_per = block(0).shape().in_floats, tokens_per = block(0).shape().in_tokens;
  const int64_t targets_per = targets_per_sample();
  StepStats total;
  for (int64_t begin = 0; begin < b.n; begin += micro_batch) {
    const int64_t m = std::min(micro_batch, b.n - begin);
    const Batch part{m, b.x ? b.x + begin * x_per : nullptr, b.tokens ? b.tokens + begin * tokens_per : nullptr,
                     b.targets + begin * targets_per};
    const StepStats s = forward_backward_pass(part, loss_scale, {begin > 0, begin + m == b.n});
    total.loss_sum += s.loss_sum;
    total.correct += s.correct;
    total.count += s.count;
  }
  return total;
}

void Model::set_recompute(std::vector<bool> recompute) {
  DP_CHECK(int(recompute.size()) <= block_count(), "recomputation of the model's blocks");
  recompute_ = std::move(recompute);
}

StepStats Model::run_blocks(const float* x, const int32_t* tokens, const int32_t* targets, int64_t n,
                            float loss_scale, bool backward, GradPass pass) {
  const ParamWindow w{params_.data(), grads_.data(), 0};
  BlockHooks h{[this](int64_t end) { parameters_needed(end); }, nullptr, hook_slice_};
  if (pass.last) h.gradients_ready = [this](int64_t offset) { gradients_ready(offset); };
  const int count = block_count();
  while (int(block_outs_.size()) < count) block_outs_.emplace_back(k_);
  // What backward reads: block i's saved activations, back to back, but a recomputed block's, rebuilt
  // one block at a time in block_rebuilt_.
  std::vector<int64_t> saved_at(size_t(count) + 1, 0);
  int64_t rebuilt = 0;
  for (int i = 0; i < count; ++i) {
    const int64_t floats = n * block(i).shape().saved_floats;
    saved_at[size_t(i) + 1] = saved_at[size_t(i)] + (recomputes(i) ? 0 : floats);
    if (recomputes(i)) rebuilt = std::max(rebuilt, floats);
  }
  if (backward) {
    block_saved_.grow(size_t(saved_at.back()));
    block_rebuilt_.grow(size_t(rebuilt));
  }
  auto data = [&](int i) {
    const BlockShape& s = block(i).shape();
    float* saved = nullptr;
    if (backward && s.saved_floats > 0)
      saved = recomputes(i) ? block_rebuilt_.data() : block_saved_.data() + saved_at[size_t(i)];
    return BlockData{n, i == 0 ? x : block_outs_[size_t(i) - 1].data(), tokens, targets, block_outs_[size_t(i)].data(),
                     saved};
  };
  StepStats stats;
  {
    const TraceScope traced(backward ? "forward" : "evaluate", {"samples", n});
    for (int i = 0; i < count; ++i) {
      block_outs_[size_t(i)].grow(size_t(n * block(i).shape().out_floats));
      const StepStats si = block(i).forward(w, data(i), loss_scale, h);
      if (i + 1 == count) stats = si;
    }
    if (traced.active()) k_.synchronize();  // traced, a GPU's kernels are timed, not their launch
  }
  if (!backward) return stats;
  const TraceScope traced("backward", {"samples", n});
  // The head first: each block's dx is the previous block's dy.
  const float* dy = nullptr;
  for (int i = count; i-- > 0;) {
    float* dx = nullptr;
    if (i > 0) {
      Buffer<float>& buf = i % 2 == 0 ? block_dx_a_ : block_dx_b_;
      buf.grow(size_t(n * block(i).shape().in_floats));
      dx = buf.data();
    }
    recompute_and_backward(block(i), w, data(i), backward && recomputes(i), loss_scale, dy, dx, pass.accumulate, h);
    dy = dx;
  }
  if (traced.active()) k_.synchronize();
  return stats;
}

void Model::check_fits(int64_t count, const std::string& what) const {
  if (!k_.host_memory) return;  // device memory: the estimate's business (dptrain estimate --fit)
  constexpr int64_t kBytesPerParameter = 16;  // the parameter, its gradient, two optimizer slots (AdamW)
  const int64_t available = available_host_bytes();
  if (available < 0 || count <= available / kBytesPerParameter) return;
  constexpr double kGiB = double(int64_t(1) << 30);
  throw JobError("[model]",
                 fmt::format("{} has {} parameters: with their gradients and optimizer state at least {:.1f} GiB, more "
                             "than the {:.1f} GiB this machine has available", what, count,
                             double(count) * kBytesPerParameter / kGiB, double(available) / kGiB),
                 fmt::format("make the model smaller: at most about {} parameters fit", available / kBytesPerParameter));
}

void Model::set_parameters(int64_t count, std::vector<TensorInit> init, bool hold) {
  parameter_count_ = count;
  init_ = std::move(init);
  if (!hold) return;
  const MemoryUse use("the model's parameters and gradients");
  params_ = Buffer<float>(k_, size_t(count));
  grads_ = Buffer<float>(k_, size_t(count));
  params_.upload(initial_params(0, count));
  grads_.zero();
}

std::vector<float> Model::initial_params(int64_t begin, int64_t end) const {
  DP_CHECK(0 <= begin && begin <= end && end <= parameter_count_, "a range of the model's parameters");
  std::vector<float> out(size_t(end - begin));
  fill_initial(init_, begin, out);
  return out;
}

void Model::params_from_host(std::span<const float> host) {
  DP_CHECK(host.size() == params_.size(), "parameter count mismatch");
  params_.upload(host);
}

std::vector<ParamRange> Model::hook_ranges() const {
  std::vector<ParamRange> ranges;
  for (const auto& b : blocks_) {
    const std::vector<ParamRange> own = b->hook_ranges(hook_slice_);
    ranges.insert(ranges.end(), own.begin(), own.end());
  }
  return ranges;
}

double Model::flops_per_sample() const {
  double f = 0;
  for (const LayerInfo& l : layers()) f += l.flops_per_sample;
  return f;
}

std::unique_ptr<Model> make_model(const ModelSection& spec, const SampleShape& shape, uint64_t seed,
                                  const Kernels& k, bool hold) {
  check_model_reads(spec, shape);
  switch (spec.type) {
    case ModelType::mlp: return std::make_unique<Mlp>(spec.hidden, shape.features, shape.classes, seed, k, hold);
    case ModelType::cnn: return std::make_unique<Cnn>(spec, shape, seed, k, hold);
    case ModelType::gpt: return std::make_unique<Gpt>(spec, shape, seed, k, hold);
  }
  throw std::logic_error("make_model: a ModelType without a case");
}

}  // namespace dp
