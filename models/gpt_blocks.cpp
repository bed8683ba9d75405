// The GPT's blocks, forward and backward side by side (gpt_blocks.h). Every matrix product is one GEMM over
// all n*T positions at once; N below is n*T.
#include "models/gpt_blocks.h"

#include <fmt/format.h>

#include <algorithm>

namespace dp {
namespace {

class Embedding final : public Block {
 public:
  Embedding(BlockShape s, const GptDims& dims, int64_t wte, int64_t wpe, bool tied, const Kernels& k)
      : Block(std::move(s)), dims_(dims), wte_(wte), wpe_(wpe), tied_(tied), k_(k) {}

  StepStats forward(const ParamWindow& w, const BlockData& d, float, const BlockHooks& h) override {
    h.needed(shape().param_offset + shape().param_count);
    k_.embedding_forward(d.tokens, w.p(wte_), w.p(wpe_), d.y, d.n, dims_.t, dims_.c);
    return {};
  }

  void backward(const ParamWindow& w, const BlockData& d, const float* dy, float*, bool accumulate,
                const BlockHooks& h) override {
    // embedding_backward adds; a tied head (whose backward ran first) has already set wte's gradient.
    if (!accumulate) {
      k_.zero(w.g(wpe_), size_t(dims_.positions * dims_.c) * sizeof(float));
      if (!tied_) k_.zero(w.g(wte_), size_t(dims_.v * dims_.c) * sizeof(float));
    }
    k_.embedding_backward(d.tokens, dy, w.g(wte_), w.g(wpe_), d.n, dims_.t, dims_.c);
    h.ready(shape().param_offset);
  }

 private:
  GptDims dims_;
  int64_t wte_, wpe_;
  bool tied_;
  const Kernels& k_;
};

// x -> res1 = x + proj(attention(qkv(ln1(x)))) -> y = res1 + fc_proj(gelu(fc(ln2(res1)))).
class Layer final : public Block {
 public:
  Layer(BlockShape s, const GptDims& dims, const GptLayerLayout& l, Scratch& scratch, const Kernels& k)
      : Block(std::move(s)), d_(dims), l_(l), scratch_(scratch), k_(k) {}

  struct Saved {
    float *ln1, *ln1_mean, *ln1_rstd, *qkv, *att, *atty, *res1, *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu;
  };
  static int64_t saved_per_sample(const GptDims& d) {
    return 15 * d.t * d.c + 4 * d.t + d.nh * d.t * d.t;
  }
  Saved carve(float* base, int64_t n) const {
    ActivationCarve c{base, n};
    const int64_t T = d_.t, C = d_.c;
    Saved s;
    s.ln1 = c.take(T * C), s.ln1_mean = c.take(T), s.ln1_rstd = c.take(T), s.qkv = c.take(3 * T * C);
    s.att = c.take(d_.nh * T * T), s.atty = c.take(T * C), s.res1 = c.take(T * C), s.ln2 = c.take(T * C);
    s.ln2_mean = c.take(T), s.ln2_rstd = c.take(T), s.fch = c.take(4 * T * C), s.fch_gelu = c.take(4 * T * C);
    return s;
  }

  StepStats forward(const ParamWindow& w, const BlockData& d, float, const BlockHooks& h) override {
    h.needed(shape().param_offset + shape().param_count);
    const int64_t N = d.n * d_.t, C = d_.c;
    // Projection outputs before the residual add; and the saved activations when the caller keeps none.
    ActivationCarve c = scratch_.carve(d.n, d_.t * C + (d.saved ? 0 : shape().saved_floats));
    float* tmp = c.take(d_.t * C);
    const Saved a = carve(d.saved ? d.saved : c.take(shape().saved_floats), d.n);
    k_.layernorm_forward(d.x, w.p(l_.ln1_g), w.p(l_.ln1_b), a.ln1, a.ln1_mean, a.ln1_rstd, N, C);
    k_.linear_forward(a.ln1, w.p(l_.qkv_w), w.p(l_.qkv_b), a.qkv, N, C, 3 * C);
    k_.attention_forward(a.qkv, a.att, a.atty, d.n, d_.t, C, d_.nh);
    k_.linear_forward(a.atty, w.p(l_.proj_w), w.p(l_.proj_b), tmp, N, C, C);
    k_.add(d.x, tmp, a.res1, N * C);
    k_.layernorm_forward(a.res1, w.p(l_.ln2_g), w.p(l_.ln2_b), a.ln2, a.ln2_mean, a.ln2_rstd, N, C);
    k_.linear_forward(a.ln2, w.p(l_.fc_w), w.p(l_.fc_b), a.fch, N, C, 4 * C);
    k_.gelu_forward(a.fch, a.fch_gelu, N * 4 * C);
    k_.linear_forward(a.fch_gelu, w.p(l_.fcp_w), w.p(l_.fcp_b), tmp, N, 4 * C, C);
    k_.add(a.res1, tmp, d.y, N * C);
    return {};
  }

  void backward(const ParamWindow& w, const BlockData& d, const float* dy, float* dx, bool accumulate,
                const BlockHooks& h) override {
    const int64_t N = d.n * d_.t, C = d_.c;
    const Saved a = carve(d.saved, d.n);
    const int64_t attention = k_.attention_scratch(d_.t, d_.nh);
    float* base = scratch_.floats(N * 9 * C + attention);
    ActivationCarve c{base, N};
    float *dres = c.take(C), *dtmp = c.take(C), *dqkv = c.take(3 * C), *dfch = c.take(4 * C);
    float* att_scratch = c.p;
    if (dx) dres = dx;  // the residual stream's gradient, built in place: dy, then what each branch adds
    k_.zero(dres, size_t(N * C) * sizeof(float));
    k_.add(dres, dy, dres, N * C);
    // MLP: y = res1 + fc_proj(gelu(fc(ln2(res1))))
    k_.linear_backward(a.fch_gelu, w.p(l_.fcp_w), dres, dfch, w.g(l_.fcp_w), w.g(l_.fcp_b), N, 4 * C, C, accumulate);
    k_.gelu_backward(a.fch, dfch, dfch, N * 4 * C);
    k_.linear_backward(a.ln2, w.p(l_.fc_w), dfch, dtmp, w.g(l_.fc_w), w.g(l_.fc_b), N, C, 4 * C, accumulate);
    k_.layernorm_backward(a.res1, w.p(l_.ln2_g), a.ln2_mean, a.ln2_rstd, dtmp, dres, w.g(l_.ln2_g), w.g(l_.ln2_b),
                          N, C, accumulate);
    // Attention: res1 = x + proj(attention(qkv(ln1(x))))
    k_.linear_backward(a.atty, w.p(l_.proj_w), dres, dtmp, w.g(l_.proj_w), w.g(l_.proj_b), N, C, C, accumulate);
    k_.attention_backward(a.qkv, a.att, dtmp, dqkv, att_scratch, d.n, d_.t, C, d_.nh);
    k_.linear_backward(a.ln1, w.p(l_.qkv_w), dqkv, dtmp, w.g(l_.qkv_w), w.g(l_.qkv_b), N, C, 3 * C, accumulate);
    k_.layernorm_backward(d.x, w.p(l_.ln1_g), a.ln1_mean, a.ln1_rstd, dtmp, dres, w.g(l_.ln1_g), w.g(l_.ln1_b), N,
                          C, accumulate);
    h.ready(shape().param_offset);
  }

 private:
  GptDims d_;
  GptLayerLayout l_;
  Scratch& scratch_;
  const Kernels& k_;
};

// A transformer layer's rows of the model's layer table (models/block.h), `end` where its parameters end.
// QK^T and att V are counted as full T x T products (the causal kernel computes about 60% of them), plus
// the softmax.
std::vector<LayerInfo> gpt_layer_table(const std::string& h, const GptDims& dims, const GptLayerLayout& l,
                                       int64_t end) {
  const int64_t T = dims.t, C = dims.c, NH = dims.nh;
  const double dT = double(T), dC = double(C);
  return {{h + "ln1", "layernorm", l.ln1_g, l.qkv_w - l.ln1_g, T * C + 2 * T, 8.0 * dT * dC},
          {h + "qkv", "linear", l.qkv_w, l.proj_w - l.qkv_w, 3 * T * C, 2.0 * dT * dC * 3.0 * dC},
          {h + "attn", "attention", l.proj_w, 0, NH * T * T + T * C, 4.0 * dT * dT * dC + 5.0 * double(NH) * dT * dT},
          {h + "proj", "linear", l.proj_w, l.ln2_g - l.proj_w, 0, 2.0 * dT * dC * dC},
          {h + "attn_res", "residual", l.ln2_g, 0, T * C, dT * dC},
          {h + "ln2", "layernorm", l.ln2_g, l.fc_w - l.ln2_g, T * C + 2 * T, 8.0 * dT * dC},
          {h + "fc", "linear", l.fc_w, l.fcp_w - l.fc_w, 4 * T * C, 2.0 * dT * dC * 4.0 * dC},
          {h + "gelu", "gelu", l.fcp_w, 0, 4 * T * C, 4.0 * dT * dC * 10.0},
          {h + "fc_proj", "linear", l.fcp_w, end - l.fcp_w, 0, 2.0 * dT * 4.0 * dC * dC},
          {h + "mlp_res", "residual", end, 0, T * C, dT * dC}};
}

}  // namespace

BlockShape gpt_embedding_shape(const GptDims& dims, int64_t wte, int64_t wpe) {
  BlockShape s;
  s.name = "embed";
  s.kind = "embedding";
  s.param_offset = wte;
  s.param_count = wpe + dims.positions * dims.c - wte;
  s.in_tokens = dims.t;  // its input is T token ids, not floats
  s.out_floats = dims.t * dims.c;
  s.layers = {{"embed", "embedding", wte, s.param_count, dims.t * dims.c, double(dims.t) * double(dims.c)}};
  s.forward_flops = layers_flops(s.layers);
  s.backward_flops = 2.0 * s.forward_flops;
  return s;
}

BlockShape gpt_layer_shape(const std::string& name, const GptDims& dims, const GptLayerLayout& l, int64_t end,
                           const Kernels& k) {
  BlockShape s;
  s.name = name;
  s.kind = "transformer";
  s.param_offset = l.ln1_g;
  s.param_count = end - l.ln1_g;
  s.in_floats = s.out_floats = dims.t * dims.c;
  s.saved_floats = Layer::saved_per_sample(dims);
  s.scratch_floats = 9 * dims.t * dims.c;  // backward's (forward takes T C), and attention's per call:
  s.scratch_fixed_floats = k.attention_scratch(dims.t, dims.nh);
  s.eval_scratch_floats = dims.t * dims.c + s.saved_floats;
  // Matmuls 2 T C (3C + C + 4C + 4C); attention's two T x T products and softmax; norms, GELU, adds.
  s.layers = gpt_layer_table(name + ".", dims, l, end);
  s.forward_flops = layers_flops(s.layers);
  s.backward_flops = 2.0 * s.forward_flops;  // each product's input and weights' gradients; the rest twice
  return s;
}

BlockShape gpt_head_shape(const GptDims& dims, int64_t lnf_g, int64_t head_w, bool tied, int64_t end) {
  BlockShape s;
  s.name = "head";
  s.kind = tied ? "norm_tied_linear_loss" : "norm_linear_loss";
  s.param_offset = lnf_g;
  s.param_count = end - lnf_g;  // a tied head's matrix is the embedding's
  if (tied) s.shared_offset = head_w, s.shared_count = dims.v * dims.c;
  s.in_floats = dims.t * dims.c;
  s.saved_floats = dims.t * dims.c + 2 * dims.t + dims.t * dims.v;
  s.scratch_floats = std::max(dims.t * dims.v, 2 * dims.t * dims.c);  // the logits; backward's gradients
  s.eval_scratch_floats = dims.t * dims.v + dims.t * dims.c + 2 * dims.t;
  const double T = double(dims.t), C = double(dims.c), V = double(dims.v);
  s.layers = {{"ln_f", "layernorm", lnf_g, 2 * dims.c, dims.t * dims.c + 2 * dims.t, 8.0 * T * C},
              // with its softmax cross-entropy
              {"lm_head", "linear", head_w, tied ? 0 : end - head_w, dims.t * dims.v, 2.0 * T * C * V + 5.0 * T * V}};
  s.forward_flops = layers_flops(s.layers);
  s.backward_flops = 8.0 * T * C + 4.0 * T * C * V;
  return s;
}

std::unique_ptr<Block> make_gpt_embedding(BlockShape s, const GptDims& dims, int64_t wte, int64_t wpe, bool tied,
                                          const Kernels& k) {
  return std::make_unique<Embedding>(std::move(s), dims, wte, wpe, tied, k);
}

std::unique_ptr<Block> make_gpt_layer(BlockShape s, const GptDims& dims, const GptLayerLayout& l, Scratch& scratch,
                                      const Kernels& k) {
  return std::make_unique<Layer>(std::move(s), dims, l, scratch, k);
}

GptHead::GptHead(BlockShape s, const GptDims& dims, int64_t lnf_g, int64_t head_w, Scratch& scratch,
                 const Kernels& k)
    : Block(std::move(s)), dims_(dims), lnf_g_(lnf_g), head_w_(head_w), scratch_(scratch), k_(k), zero_bias_(k),
      dbias_(k) {
  zero_bias_.grow(size_t(dims.v));  // the model's fixed buffers: 2 V floats (gpt.cpp, fixed_floats)
  zero_bias_.zero();
  dbias_.grow(size_t(dims.v));
}

StepStats GptHead::forward(const ParamWindow& w, const BlockData& d, float loss_scale, const BlockHooks& h) {
  const int64_t N = d.n * dims_.t, C = dims_.c, V = dims_.v;
  h.needed(shape().param_offset + shape().param_count);
  // The logits first in the call's scratch (they stay readable until the next call), then, when the
  // caller keeps nothing, what backward would read.
  const int64_t kept = dims_.t * C + 2 * dims_.t;
  ActivationCarve s_c = scratch_.carve(d.n, dims_.t * V + (d.saved ? 0 : kept));
  logits_ = s_c.take(dims_.t * V);
  ActivationCarve c = d.saved ? ActivationCarve{d.saved, d.n} : s_c;
  float *lnf = c.take(dims_.t * C), *mean = c.take(dims_.t), *rstd = c.take(dims_.t);
  float* dlogits = d.saved ? c.take(dims_.t * V) : nullptr;
  n_ = d.n;
  k_.layernorm_forward(d.x, w.p(lnf_g_), w.p(lnf_g_ + C), lnf, mean, rstd, N, C);
  k_.linear_forward(lnf, w.p(head_w_), zero_bias_.data(), logits_, N, C, V);
  const cpu::LossSums s = k_.softmax_cross_entropy(logits_, d.targets, dlogits, N, V, dlogits ? loss_scale : 1.0f);
  return {s.loss, s.correct, N};
}

void GptHead::backward(const ParamWindow& w, const BlockData& d, const float*, float* dx, bool accumulate,
                       const BlockHooks& h) {
  const int64_t N = d.n * dims_.t, C = dims_.c, V = dims_.v;
  ActivationCarve c{d.saved, d.n};
  const float *lnf = c.take(dims_.t * C), *mean = c.take(dims_.t), *rstd = c.take(dims_.t);
  const float* dlogits = c.take(dims_.t * V);
  float* dlnf = scratch_.floats(N * 2 * C);
  float* dres = dx ? dx : dlnf + N * C;
  logits_ = nullptr;  // the scratch is this call's now
  // The LM head's weights: their own gradient, or (tied) the token embedding's, which the embedding adds to.
  k_.linear_backward(lnf, w.p(head_w_), dlogits, dlnf, w.g(head_w_), dbias_.data(), N, C, V, accumulate);
  k_.zero(dres, size_t(N * C) * sizeof(float));  // layernorm_backward adds into it
  k_.layernorm_backward(d.x, w.p(lnf_g_), mean, rstd, dlnf, dres, w.g(lnf_g_), w.g(lnf_g_ + C), N, C, accumulate);
  h.ready(lnf_g_);  // and the untied head's, which follow it (a tied head's is wte's: announced with it)
}

}  // namespace dp
