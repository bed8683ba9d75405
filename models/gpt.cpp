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

void grow(Buffer<float>& b, int64_t count) { b.grow(size_t(count)); }

}  // namespace

Gpt::Gpt(const ModelSection& spec, const SampleShape& shape, uint64_t seed, const Kernels& k)
    : Model(k),
      encoded_(k), lnf_(k), lnf_mean_(k), lnf_rstd_(k), logits_(k), dlogits_(k), tmp_(k), zero_bias_(k),
      dbias_scratch_(k), dres_(k), dtmp_(k), dqkv_(k), dfch_(k), datt_scratch_(k), tokens_staging_(k),
      targets_staging_(k) {
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
  wte_ = take(V * C);           // (V, C)
  wpe_ = take(positions_ * C);  // (positions, C)
  layers_.push_back({"embed", "embedding", wte_, off - wte_, T * C, dT * dC});
  for (int64_t l = 0; l < layers_count_; ++l) {
    Block bk;
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
    blocks_.push_back(bk);
  }
  int64_t start = off;
  lnf_g_ = take(C);  // (C)
  lnf_b_ = take(C);  // (C)
  layers_.push_back({"ln_f", "layernorm", start, off - start, T * C + 2 * T, 8.0 * dT * dC});
  start = off;
  head_w_ = tied_ ? wte_ : take(V * C);  // (V, C) unless tied to wte
  layers_.push_back({"lm_head", "linear", tied_ ? wte_ : start, tied_ ? 0 : off - start, T * V,
                     2.0 * dT * dC * double(V)});

  std::vector<float> init(size_t(off), 0.0f);

  // GPT-2 initialisation, one independent stream per tensor.
  uint64_t tensor = 0;
  auto normal = [&](int64_t at, int64_t count, double std) {
    fill_normal(init.data() + at, count, std, derive_seed(seed, tensor++, kInitTag));
  };
  const double w_std = 0.02, res_std = 0.02 / std::sqrt(2.0 * double(layers_count_));
  normal(wte_, V * C, w_std);
  normal(wpe_, positions_ * C, w_std);
  for (const Block& bk : blocks_) {
    std::fill_n(init.data() + bk.ln1_g, C, 1.0f);
    normal(bk.qkv_w, 3 * C * C, w_std);
    normal(bk.proj_w, C * C, res_std);
    std::fill_n(init.data() + bk.ln2_g, C, 1.0f);
    normal(bk.fc_w, 4 * C * C, w_std);
    normal(bk.fcp_w, 4 * C * C, res_std);
  }
  std::fill_n(init.data() + lnf_g_, C, 1.0f);
  if (!tied_) normal(head_w_, V * C, w_std);
  set_parameters(init);

  for (int64_t l = 0; l < layers_count_; ++l) acts_.emplace_back(k);
  zero_bias_.grow(size_t(V));
  zero_bias_.zero();
  dbias_scratch_.grow(size_t(V));
  datt_scratch_.grow(size_t(k.attention_scratch(T, NH)));
}

void Gpt::resize(int64_t n) {
  n_ = n;
  const int64_t N = n * t_, C = c_;
  grow(encoded_, N * C);
  for (BlockActs& a : acts_) {
    grow(a.ln1, N * C);
    grow(a.ln1_mean, N);
    grow(a.ln1_rstd, N);
    grow(a.qkv, N * 3 * C);
    grow(a.att, n * nh_ * t_ * t_);
    grow(a.atty, N * C);
    grow(a.res1, N * C);
    grow(a.ln2, N * C);
    grow(a.ln2_mean, N);
    grow(a.ln2_rstd, N);
    grow(a.fch, N * 4 * C);
    grow(a.fch_gelu, N * 4 * C);
    grow(a.res2, N * C);
  }
  grow(lnf_, N * C);
  grow(lnf_mean_, N);
  grow(lnf_rstd_, N);
  grow(logits_, N * v_);
  grow(tmp_, N * C);
}

void Gpt::stage_batch(const Batch& b, const int32_t** tokens, const int32_t** targets) {
  const int64_t N = b.n * t_;
  for (int64_t i = 0; i < N; ++i)
    DP_CHECK(b.tokens[i] >= 0 && b.tokens[i] < v_,
             fmt::format("token {} of a vocabulary of {}", b.tokens[i], v_));
  *tokens = stage(b.tokens, N, tokens_staging_);
  *targets = stage(b.targets, N, targets_staging_);
}

void Gpt::forward(const int32_t* tokens, int64_t n) {
  resize(n);
  const int64_t N = n * t_, C = c_;
  // Parameters are laid out in this order: embeddings, blocks, final norm (and an untied head).
  auto block_start = [&](size_t l) { return l < blocks_.size() ? blocks_[l].ln1_g : lnf_g_; };
  parameters_needed(block_start(0));
  k_.embedding_forward(tokens, p(wte_), p(wpe_), encoded_.data(), n, t_, C);
  const float* x = encoded_.data();  // the residual stream entering the block
  for (size_t l = 0; l < blocks_.size(); ++l) {
    const Block& bk = blocks_[l];
    BlockActs& a = acts_[l];
    parameters_needed(block_start(l + 1));
    k_.layernorm_forward(x, p(bk.ln1_g), p(bk.ln1_b), a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(),
                           N, C);
    k_.linear_forward(a.ln1.data(), p(bk.qkv_w), p(bk.qkv_b), a.qkv.data(), N, C, 3 * C);
    k_.attention_forward(a.qkv.data(), a.att.data(), a.atty.data(), n, t_, C, nh_);
    k_.linear_forward(a.atty.data(), p(bk.proj_w), p(bk.proj_b), tmp_.data(), N, C, C);
    k_.add(x, tmp_.data(), a.res1.data(), N * C);
    k_.layernorm_forward(a.res1.data(), p(bk.ln2_g), p(bk.ln2_b), a.ln2.data(), a.ln2_mean.data(),
                           a.ln2_rstd.data(), N, C);
    k_.linear_forward(a.ln2.data(), p(bk.fc_w), p(bk.fc_b), a.fch.data(), N, C, 4 * C);
    k_.gelu_forward(a.fch.data(), a.fch_gelu.data(), N * 4 * C);
    k_.linear_forward(a.fch_gelu.data(), p(bk.fcp_w), p(bk.fcp_b), tmp_.data(), N, 4 * C, C);
    k_.add(a.res1.data(), tmp_.data(), a.res2.data(), N * C);
    x = a.res2.data();
  }
  parameters_needed(int64_t(params_.size()));
  k_.layernorm_forward(x, p(lnf_g_), p(lnf_b_), lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), N, C);
  k_.linear_forward(lnf_.data(), p(head_w_), zero_bias_.data(), logits_.data(), N, C, v_);
}

StepStats Gpt::forward_backward(const Batch& b, float loss_scale) {
  const int64_t n = b.n;
  if (n == 0) {
    grads_.zero();
    gradients_ready(0);
    return {};
  }
  const int32_t *tokens = nullptr, *targets = nullptr;
  stage_batch(b, &tokens, &targets);
  forward(tokens, n);
  const int64_t N = n * t_, C = c_;
  grow(dlogits_, N * v_);
  grow(dres_, N * C);
  grow(dtmp_, N * C);
  grow(dqkv_, N * 3 * C);
  grow(dfch_, N * 4 * C);
  const cpu::LossSums s =
      k_.softmax_cross_entropy(logits_.data(), targets, dlogits_.data(), N, v_, loss_scale);

  // LM head (overwrites its weight gradient: wte's when tied, to which the embedding adds below).
  if (!tied_) k_.zero(g(wte_), size_t(v_ * C) * sizeof(float));
  k_.zero(g(wpe_), size_t(positions_ * C) * sizeof(float));
  k_.linear_backward(lnf_.data(), p(head_w_), dlogits_.data(), dtmp_.data(), g(head_w_),
                       dbias_scratch_.data(), N, C, v_, false);
  k_.zero(dres_.data(), size_t(N * C) * sizeof(float));
  const float* x_last = blocks_.empty() ? encoded_.data() : acts_.back().res2.data();
  k_.layernorm_backward(x_last, p(lnf_g_), lnf_mean_.data(), lnf_rstd_.data(), dtmp_.data(), dres_.data(),
                          g(lnf_g_), g(lnf_b_), N, C, false);
  gradients_ready(lnf_g_);  // and the untied head's, which follow it (a tied head's is wte's: the end)

  // Blocks, last first; dres_ holds the gradient of the residual stream leaving the block.
  for (size_t l = blocks_.size(); l-- > 0;) {
    const Block& bk = blocks_[l];
    BlockActs& a = acts_[l];
    const float* x = l == 0 ? encoded_.data() : acts_[l - 1].res2.data();
    // MLP: res2 = res1 + fc_proj(gelu(fc(ln2(res1))))
    k_.linear_backward(a.fch_gelu.data(), p(bk.fcp_w), dres_.data(), dfch_.data(), g(bk.fcp_w),
                         g(bk.fcp_b), N, 4 * C, C, false);
    k_.gelu_backward(a.fch.data(), dfch_.data(), dfch_.data(), N * 4 * C);
    k_.linear_backward(a.ln2.data(), p(bk.fc_w), dfch_.data(), dtmp_.data(), g(bk.fc_w), g(bk.fc_b), N, C,
                         4 * C, false);
    k_.layernorm_backward(a.res1.data(), p(bk.ln2_g), a.ln2_mean.data(), a.ln2_rstd.data(), dtmp_.data(),
                            dres_.data(), g(bk.ln2_g), g(bk.ln2_b), N, C, false);
    // Attention: res1 = x + proj(attention(qkv(ln1(x))))
    k_.linear_backward(a.atty.data(), p(bk.proj_w), dres_.data(), dtmp_.data(), g(bk.proj_w),
                         g(bk.proj_b), N, C, C, false);
    k_.attention_backward(a.qkv.data(), a.att.data(), dtmp_.data(), dqkv_.data(), datt_scratch_.data(), n,
                            t_, C, nh_);
    k_.linear_backward(a.ln1.data(), p(bk.qkv_w), dqkv_.data(), dtmp_.data(), g(bk.qkv_w), g(bk.qkv_b),
                         N, C, 3 * C, false);
    k_.layernorm_backward(x, p(bk.ln1_g), a.ln1_mean.data(), a.ln1_rstd.data(), dtmp_.data(), dres_.data(),
                            g(bk.ln1_g), g(bk.ln1_b), N, C, false);
    gradients_ready(bk.ln1_g);  // the block's first parameter
  }
  k_.embedding_backward(tokens, dres_.data(), g(wte_), g(wpe_), n, t_, C);
  gradients_ready(0);
  return {s.loss, s.correct, N};
}

StepStats Gpt::evaluate(const Batch& b) {
  if (b.n == 0) return {};
  const int32_t *tokens = nullptr, *targets = nullptr;
  stage_batch(b, &tokens, &targets);
  forward(tokens, b.n);
  const int64_t N = b.n * t_;
  const cpu::LossSums s = k_.softmax_cross_entropy(logits_.data(), targets, nullptr, N, v_, 1.0f);
  return {s.loss, s.correct, N};
}

std::string Gpt::describe() const {
  const std::string context = positions_ == t_ ? fmt::format("context {}", t_)
                                               : fmt::format("context {} (position table {})", t_, positions_);
  return fmt::format("gpt {} layers x {} wide, {} heads, {}, vocab {}{}, {} parameters", layers_count_, c_, nh_,
                     context, v_, tied_ ? "" : ", untied head", params_.size());
}

}  // namespace dp
