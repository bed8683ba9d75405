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

void check_options(const ModelSection& spec, const SampleShape& shape) {
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
}

GptParams lay_out(const GptDims& d, int64_t layers, bool tied) {
  GptParams p;
  auto take = [&p](int64_t count) {
    const int64_t at = p.count;
    p.count += count;
    return at;
  };
  const int64_t C = d.c;
  p.wte = take(d.v * C);
  p.wpe = take(d.positions * C);
  for (int64_t l = 0; l < layers; ++l) {
    GptLayerLayout bk;
    bk.ln1_g = take(C);          // (C)
    bk.ln1_b = take(C);          // (C)
    bk.qkv_w = take(3 * C * C);  // (3C, C)
    bk.qkv_b = take(3 * C);      // (3C)
    bk.proj_w = take(C * C);     // (C, C)
    bk.proj_b = take(C);         // (C)
    bk.ln2_g = take(C);          // (C)
    bk.ln2_b = take(C);          // (C)
    bk.fc_w = take(4 * C * C);   // (4C, C)
    bk.fc_b = take(4 * C);       // (4C)
    bk.fcp_w = take(4 * C * C);  // (C, 4C)
    bk.fcp_b = take(C);          // (C)
    p.layers.push_back(bk);
  }
  p.lnf_g = take(C);
  take(C);  // lnf beta
  p.head_w = tied ? p.wte : take(d.v * C);
  return p;
}

// GPT-2's initialisation, one independent stream per tensor: weights ~ N(0, 0.02), residual projections
// ~ N(0, 0.02 / sqrt(2 layers)), biases 0, LayerNorm gamma 1 and beta 0.
std::vector<TensorInit> initial(const GptParams& p, const GptDims& d, bool tied, uint64_t seed) {
  std::vector<TensorInit> init;
  uint64_t tensor = 0;
  auto normal = [&](int64_t at, int64_t count, double std) {
    init.push_back({at, count, TensorInit::Kind::normal, std, derive_seed(seed, tensor++, kInitTag)});
  };
  auto ones = [&](int64_t at, int64_t count) { init.push_back({at, count, TensorInit::Kind::constant, 1.0, 0}); };
  const int64_t C = d.c;
  const double w_std = 0.02, res_std = 0.02 / std::sqrt(2.0 * double(p.layers.size()));
  normal(p.wte, d.v * C, w_std);
  normal(p.wpe, d.positions * C, w_std);
  for (const GptLayerLayout& bk : p.layers) {
    ones(bk.ln1_g, C);
    normal(bk.qkv_w, 3 * C * C, w_std);
    normal(bk.proj_w, C * C, res_std);
    ones(bk.ln2_g, C);
    normal(bk.fc_w, 4 * C * C, w_std);
    normal(bk.fcp_w, 4 * C * C, res_std);
  }
  ones(p.lnf_g, C);
  if (!tied) normal(p.head_w, d.v * C, w_std);
  return init;
}

std::string describe_gpt(const GptArch& a) {
  const GptDims& d = a.dims;
  const std::string context = d.positions == d.t ? fmt::format("context {}", d.t)
                                                 : fmt::format("context {} (position table {})", d.t, d.positions);
  return fmt::format("gpt {} layers x {} wide, {} heads, {}, vocab {}{}, {} parameters", a.params.layers.size(), d.c,
                     d.nh, context, d.v, a.tied ? "" : ", untied head", a.params.count);
}

}  // namespace

GptArch gpt_arch(const ModelSection& spec, const SampleShape& shape, const Kernels& k) {
  check_options(spec, shape);
  GptArch a;
  a.dims = GptDims{shape.classes, shape.context, spec.width, spec.heads, spec.context};
  a.tied = spec.tied_head;
  a.params = lay_out(a.dims, spec.layers, a.tied);
  const GptParams& p = a.params;
  a.blocks.push_back(gpt_embedding_shape(a.dims, p.wte, p.wpe));
  for (size_t l = 0; l < p.layers.size(); ++l)
    a.blocks.push_back(gpt_layer_shape(fmt::format("h{}", l), a.dims, p.layers[l],
                                       l + 1 < p.layers.size() ? p.layers[l + 1].ln1_g : p.lnf_g, k));
  a.blocks.push_back(gpt_head_shape(a.dims, p.lnf_g, p.head_w, a.tied, p.count));
  return a;
}

ModelShape GptArch::shape() const {
  ModelShape s;
  s.type = "gpt";
  s.describe = describe_gpt(*this);
  s.blocks = blocks;
  s.parameters = params.count;
  s.fixed_floats = 2 * dims.v;  // the head's zero bias and bias gradient
  s.targets_per_sample = dims.t;
  return s;
}

Gpt::Gpt(const ModelSection& spec, const SampleShape& shape, uint64_t seed, const Kernels& k, bool hold)
    : Model(k), tokens_staging_(k), targets_staging_(k) {
  const GptArch a = gpt_arch(spec, shape, k);
  const GptDims& dims = a.dims;
  const GptParams& p = a.params;
  v_ = dims.v;
  t_ = dims.t;
  describe_ = describe_gpt(a);
  fixed_floats_ = a.shape().fixed_floats;
  if (hold) check_fits(p.count, "the GPT");
  set_parameters(p.count, initial(p, dims, a.tied, seed), hold);

  blocks_.push_back(make_gpt_embedding(a.blocks.front(), dims, p.wte, p.wpe, a.tied, k));
  for (size_t l = 0; l < p.layers.size(); ++l) blocks_.push_back(make_gpt_layer(a.blocks[l + 1], dims, p.layers[l], scratch_, k));
  auto head = std::make_unique<GptHead>(a.blocks.back(), dims, p.lnf_g, p.head_w, scratch_, k);
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

StepStats Gpt::forward_backward_pass(const Batch& b, float loss_scale, GradPass pass) {
  const int32_t *tokens = nullptr, *targets = nullptr;
  stage_batch(b, &tokens, &targets);
  return run_blocks(nullptr, tokens, targets, b.n, loss_scale, true, pass);
}

StepStats Gpt::evaluate(const Batch& b) {
  if (b.n == 0) return {};
  const int32_t *tokens = nullptr, *targets = nullptr;
  stage_batch(b, &tokens, &targets);
  return run_blocks(nullptr, tokens, targets, b.n, 1.0f, false);
}

std::string Gpt::describe() const { return describe_; }

}  // namespace dp
