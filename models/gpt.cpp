// GPT forward and backward side by side over the flat parameter buffer (after llm.c's train_gpt2.c).
// Every matrix product goes through the backend's linear_* (one GEMM over all n*T positions at once) or its
// attention kernel; activations live in buffers that only grow, so steady-state steps
// do not allocate.
#include "models/gpt.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lib/core/error.h"
#include "lib/core/rng.h"

namespace dp {
namespace {

constexpr uint64_t kInitTag = 0x677074;  // "gpt"

void fill_normal(float* p, int64_t count, double std, uint64_t seed) {
  Rng rng(seed);
  for (int64_t i = 0; i < count; ++i) p[i] = float(rng.normal() * std);
}

}  // namespace

Gpt::Gpt(const ModelSection& spec, const SampleShape& shape, uint64_t seed, const Kernels& k)
    : Model(k), tokens_staging_(k), targets_staging_(k) {
  if (!shape.is_text())
    throw JobError("[model] type",
                   fmt::format("gpt is a language model and needs text data, not samples of {} features",
                               shape.features),
                   "use [data] dataset = \"text\", or type = \"mlp\" or \"cnn\" for this data");
  if (shape.context > spec.context)
    throw JobError("[model] context",
                   fmt::format("samples of {} tokens are longer than the position table ({})", shape.context,
                               spec.context),
                   "lower [data] context or raise [model] context");
  if (spec.layers < 1 || spec.width < 1 || spec.heads < 1)
    throw JobError("[model]", fmt::format("layers, width and heads must be at least 1 (got {}, {}, {})",
                                          spec.layers, spec.width, spec.heads));
  if (spec.width % spec.heads != 0)
    throw JobError("[model] heads", fmt::format("must divide width ({}), got {}", spec.width, spec.heads),
                   "each head gets width / heads channels");
  if (shape.classes < 1) throw JobError("[data]", "the text has an empty vocabulary");

  v_ = shape.classes;
  t_ = shape.context;
  c_ = spec.width;
  nh_ = spec.heads;
  layers_count_ = spec.layers;
  positions_ = spec.context;
  tied_ = spec.tied_head;
  const int64_t V = v_, T = t_, C = c_, NH = nh_;

  // Flat parameter layout, tensor by tensor (offsets in floats).
  int64_t off = 0;
  auto take = [&off](int64_t count) {
    const int64_t at = off;
    off += count;
    return at;
  };
  const double dT = double(T), dC = double(C);
  const int64_t wte = take(V * C);           // (V, C)
  const int64_t wpe = take(positions_ * C);  // (positions, C)
  layers_.push_back({"embed", "embedding", wte, off - wte, T * C, dT * dC});
  std::vector<GptLayerLayout> layouts;
  for (int64_t l = 0; l < layers_count_; ++l) {
    GptLayerLayout bk;
    const std::string h = fmt::format("h{}.", l);
    int64_t start = off;
    bk.ln1_g = take(C);  // (C)
    bk.ln1_b = take(C);  // (C)
    layers_.push_back({h + "ln1", "layernorm", start, off - start, T * C + 2 * T, 8.0 * dT * dC});
    start = off;
    bk.qkv_w = take(3 * C * C);  // (3C, C)
    bk.qkv_b = take(3 * C);      // (3C)
    layers_.push_back({h + "qkv", "linear", start, off - start, 3 * T * C, 2.0 * dT * dC * 3.0 * dC});
    // QK^T and att V counted as full T x T products (the causal kernel computes about 60% of them),
    // plus the softmax.
    layers_.push_back({h + "attn", "attention", off, 0, NH * T * T + T * C,
                       4.0 * dT * dT * dC + 5.0 * double(NH) * dT * dT});
    start = off;
    bk.proj_w = take(C * C);  // (C, C)
    bk.proj_b = take(C);      // (C)
    layers_.push_back({h + "proj", "linear", start, off - start, 0, 2.0 * dT * dC * dC});
    layers_.push_back({h + "attn_res", "residual", off, 0, T * C, dT * dC});
    start = off;
    bk.ln2_g = take(C);  // (C)
    bk.ln2_b = take(C);  // (C)
    layers_.push_back({h + "ln2", "layernorm", start, off - start, T * C + 2 * T, 8.0 * dT * dC});
    start = off;
    bk.fc_w = take(4 * C * C);  // (4C, C)
    bk.fc_b = take(4 * C);      // (4C)
    layers_.push_back({h + "fc", "linear", start, off - start, 4 * T * C, 2.0 * dT * dC * 4.0 * dC});
    layers_.push_back({h + "gelu", "gelu", off, 0, 4 * T * C, 4.0 * dT * dC * 10.0});
    start = off;
    bk.fcp_w = take(4 * C * C);  // (C, 4C)
    bk.fcp_b = take(C);          // (C)
    layers_.push_back({h + "fc_proj", "linear", start, off - start, 0, 2.0 * dT * 4.0 * dC * dC});
    layers_.push_back({h + "mlp_res", "residual", off, 0, T * C, dT * dC});
    layouts.push_back(bk);
  }
  int64_t start = off;
  const int64_t lnf_g = take(C);  // (C)
  take(C);                        // lnf beta (C)
  layers_.push_back({"ln_f", "layernorm", start, off - start, T * C + 2 * T, 8.0 * dT * dC});
  start = off;
  const int64_t head_w = tied_ ? wte : take(V * C);  // (V, C) unless tied to wte
  layers_.push_back({"lm_head", "linear", tied_ ? wte : start, tied_ ? 0 : off - start, T * V,
                     2.0 * dT * dC * double(V)});

  check_fits(off, "the GPT");
  std::vector<float> init(size_t(off), 0.0f);

  // GPT-2 initialisation, one independent stream per tensor.
  uint64_t tensor = 0;
  auto normal = [&](int64_t at, int64_t count, double std) {
    fill_normal(init.data() + at, count, std, derive_seed(seed, tensor++, kInitTag));
  };
  const double w_std = 0.02, res_std = 0.02 / std::sqrt(2.0 * double(layers_count_));
  normal(wte, V * C, w_std);
  normal(wpe, positions_ * C, w_std);
  for (const GptLayerLayout& bk : layouts) {
    std::fill_n(init.data() + bk.ln1_g, C, 1.0f);
    normal(bk.qkv_w, 3 * C * C, w_std);
    normal(bk.proj_w, C * C, res_std);
    std::fill_n(init.data() + bk.ln2_g, C, 1.0f);
    normal(bk.fc_w, 4 * C * C, w_std);
    normal(bk.fcp_w, 4 * C * C, res_std);
  }
  std::fill_n(init.data() + lnf_g, C, 1.0f);
  if (!tied_) normal(head_w, V * C, w_std);
  set_parameters(init);

  const GptDims dims{V, T, C, NH, positions_};
  blocks_.push_back(make_gpt_embedding(dims, wte, wpe, tied_, k));
  for (size_t l = 0; l < layouts.size(); ++l)
    blocks_.push_back(make_gpt_layer(fmt::format("h{}", l), dims, layouts[l],
                                     l + 1 < layouts.size() ? layouts[l + 1].ln1_g : lnf_g, scratch_, k));
  auto head = std::make_unique<GptHead>(dims, lnf_g, head_w, tied_, off, scratch_, k);
  head_ = head.get();
  blocks_.push_back(std::move(head));
}

void Gpt::stage_batch(const Batch& b, const int32_t** tokens, const int32_t** targets) {
  const int64_t N = b.n * t_;
  for (int64_t i = 0; i < N; ++i)
    DP_CHECK(b.tokens[i] >= 0 && b.tokens[i] < v_,
             fmt::format("token {} of a vocabulary of {}", b.tokens[i], v_));
  *tokens = stage(b.tokens, N, tokens_staging_);
  *targets = stage(b.targets, N, targets_staging_);
}

StepStats Gpt::forward_backward(const Batch& b, float loss_scale) {
  if (b.n == 0) {
    grads_.zero();
    gradients_ready(0);
    return {};
  }
  const int32_t *tokens = nullptr, *targets = nullptr;
  stage_batch(b, &tokens, &targets);
  return run_blocks(nullptr, tokens, targets, b.n, loss_scale, true);
}

StepStats Gpt::evaluate(const Batch& b) {
  if (b.n == 0) return {};
  const int32_t *tokens = nullptr, *targets = nullptr;
  stage_batch(b, &tokens, &targets);
  return run_blocks(nullptr, tokens, targets, b.n, 1.0f, false);
}

std::string Gpt::describe() const {
  const std::string context = positions_ == t_ ? fmt::format("context {}", t_)
                                               : fmt::format("context {} (position table {})", t_, positions_);
  return fmt::format("gpt {} layers x {} wide, {} heads, {}, vocab {}{}, {} parameters", layers_count_, c_, nh_,
                     context, v_, tied_ ? "" : ", untied head", params_.size());
}

}  // namespace dp
