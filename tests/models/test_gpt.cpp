// The GPT: each kernel's forward against a double-precision reference and its backward against central
// differences of that reference, then the whole model's gradient (every parameter, tied and untied LM
// head) against an independent double-precision forward reading the same flat parameter buffer, plus
// causality, buffer reuse, the layer list and the constructor's guards.
#define BOOST_TEST_MODULE gpt
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/layernorm.h"
#include "lib/core/error.h"
#include "lib/core/rng.h"
#include "models/gpt.h"

namespace {

using Vec = std::vector<double>;

std::vector<float> random_vector(size_t n, uint64_t seed, double scale = 1.0, double mean = 0.0) {
  dp::Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = float(mean + rng.normal() * scale);
  return v;
}

Vec to_double(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

double dot(const Vec& a, const Vec& b) {
  BOOST_TEST_REQUIRE(!b.empty(), "dot of empty vectors");
  BOOST_TEST_REQUIRE(a.size() == b.size(), "dot of " << a.size() << " and " << b.size() << " values");
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central difference (step h) of f with respect to each element of v.
Vec numeric_grad(Vec& v, const std::function<double()>& f, double h = 1e-6) {
  Vec g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double saved = v[i];
    v[i] = saved + h;
    const double up = f();
    v[i] = saved - h;
    const double down = f();
    v[i] = saved;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// Compares a float kernel's gradient with the double reference's: |a - n| <= abs + rel |n|. Float
// rounding in the kernels is about 1e-7 relative; a wrong term is orders of magnitude larger.
void check_close(const std::vector<float>& analytic, const Vec& numeric, double abs, double rel,
                 const char* what) {
  BOOST_REQUIRE_EQUAL(analytic.size(), numeric.size());
  double worst = 0;
  for (size_t i = 0; i < numeric.size(); ++i) {
    const double err = std::abs(double(analytic[i]) - numeric[i]);
    worst = std::max(worst, err / (abs + rel * std::abs(numeric[i])));
    BOOST_TEST(err <= abs + rel * std::abs(numeric[i]),
               what << "[" << i << "]: analytic " << analytic[i] << ", numeric " << numeric[i]);
  }
  BOOST_TEST_MESSAGE(what << ": worst error " << worst << " of the tolerance");
}

// ---- double-precision references of the kernels --------------------------------------------------------

Vec ref_layernorm(const Vec& x, const Vec& g, const Vec& b, size_t n, size_t c) {
  Vec y(n * c);
  for (size_t i = 0; i < n; ++i) {
    double m = 0, v = 0;
    for (size_t k = 0; k < c; ++k) m += x[i * c + k];
    m /= double(c);
    for (size_t k = 0; k < c; ++k) v += (x[i * c + k] - m) * (x[i * c + k] - m);
    v /= double(c);
    const double r = 1.0 / std::sqrt(v + 1e-5);
    for (size_t k = 0; k < c; ++k) y[i * c + k] = (x[i * c + k] - m) * r * g[k] + b[k];
  }
  return y;
}

double ref_gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

// Causal attention from qkv (b, t, 3c) to (b, t, c), nh heads.
Vec ref_attention(const Vec& qkv, size_t b, size_t t, size_t c, size_t nh) {
  const size_t hs = c / nh;
  Vec out(b * t * c, 0.0);
  for (size_t i = 0; i < b; ++i)
    for (size_t h = 0; h < nh; ++h)
      for (size_t s = 0; s < t; ++s) {
        const double* q = &qkv[(i * t + s) * 3 * c + h * hs];
        Vec score(s + 1);
        double m = -1e300;
        for (size_t j = 0; j <= s; ++j) {
          const double* k = &qkv[(i * t + j) * 3 * c + c + h * hs];
          double d = 0;
          for (size_t e = 0; e < hs; ++e) d += q[e] * k[e];
          score[j] = d / std::sqrt(double(hs));
          m = std::max(m, score[j]);
        }
        double z = 0;
        for (double& v : score) z += (v = std::exp(v - m));
        for (size_t j = 0; j <= s; ++j) {
          const double* v = &qkv[(i * t + j) * 3 * c + 2 * c + h * hs];
          for (size_t e = 0; e < hs; ++e) out[(i * t + s) * c + h * hs + e] += score[j] / z * v[e];
        }
      }
  return out;
}

// ---- an independent double-precision GPT reading the model's flat parameter buffer ----------------------

struct Config {
  size_t v, t, c, nh, layers, positions;
  bool tied;
};

// Mean next-token cross-entropy over n sequences. Layout (documented in models/gpt.h): wte (V,C),
// wpe (positions,C); per layer ln1 g,b (C); qkv w (3C,C), b (3C); proj w (C,C), b (C); ln2 g,b (C);
// fc w (4C,C), b (4C); fc_proj w (C,4C), b (C); then ln_f g,b (C); then the head (V,C) unless tied.
double ref_gpt_loss(const Vec& p, const Config& k, const std::vector<int32_t>& tokens,
                    const std::vector<int32_t>& targets, size_t n) {
  const size_t V = k.v, T = k.t, C = k.c;
  size_t off = 0;
  auto take = [&](size_t count) {
    const double* at = p.data() + off;
    off += count;
    return at;
  };
  const double* wte = take(V * C);
  const double* wpe = take(k.positions * C);
  struct L {
    const double *g1, *b1, *wqkv, *bqkv, *wp, *bp, *g2, *b2, *wfc, *bfc, *wfp, *bfp;
  };
  std::vector<L> ls;
  for (size_t l = 0; l < k.layers; ++l) {
    L x;
    x.g1 = take(C), x.b1 = take(C), x.wqkv = take(3 * C * C), x.bqkv = take(3 * C);
    x.wp = take(C * C), x.bp = take(C), x.g2 = take(C), x.b2 = take(C);
    x.wfc = take(4 * C * C), x.bfc = take(4 * C), x.wfp = take(4 * C * C), x.bfp = take(C);
    ls.push_back(x);
  }
  const double* gf = take(C);
  const double* bf = take(C);
  const double* head = k.tied ? wte : take(V * C);
  BOOST_REQUIRE_EQUAL(off, p.size());

  // y (rows, out) = x (rows, in) w^T + b
  auto linear = [](const Vec& x, const double* w, const double* b, size_t rows, size_t in, size_t out) {
    Vec y(rows * out);
    for (size_t r = 0; r < rows; ++r)
      for (size_t o = 0; o < out; ++o) {
        double acc = b ? b[o] : 0.0;
        for (size_t i = 0; i < in; ++i) acc += x[r * in + i] * w[o * in + i];
        y[r * out + o] = acc;
      }
    return y;
  };
  auto ln = [C](const Vec& x, const double* g, const double* b, size_t rows) {
    return ref_layernorm(x, Vec(g, g + C), Vec(b, b + C), rows, C);
  };

  double total = 0;
  for (size_t s = 0; s < n; ++s) {
    Vec x(T * C);
    for (size_t t = 0; t < T; ++t)
      for (size_t e = 0; e < C; ++e)
        x[t * C + e] = wte[size_t(tokens[s * T + t]) * C + e] + wpe[t * C + e];
    for (const L& l : ls) {
      const Vec qkv = linear(ln(x, l.g1, l.b1, T), l.wqkv, l.bqkv, T, C, 3 * C);
      const Vec a = linear(ref_attention(qkv, 1, T, C, k.nh), l.wp, l.bp, T, C, C);
      for (size_t i = 0; i < x.size(); ++i) x[i] += a[i];
      Vec f = linear(ln(x, l.g2, l.b2, T), l.wfc, l.bfc, T, C, 4 * C);
      for (double& v : f) v = ref_gelu(v);
      const Vec m = linear(f, l.wfp, l.bfp, T, 4 * C, C);
      for (size_t i = 0; i < x.size(); ++i) x[i] += m[i];
    }
    const Vec logits = linear(ln(x, gf, bf, T), head, nullptr, T, C, V);
    for (size_t t = 0; t < T; ++t) {
      const double* z = &logits[t * V];
      const double m = *std::max_element(z, z + V);
      double denom = 0;
      for (size_t v = 0; v < V; ++v) denom += std::exp(z[v] - m);
      total += std::log(denom) + m - z[size_t(targets[s * T + t])];
    }
  }
  return total / double(n * T);
}

dp::ModelSection gpt_spec(int64_t layers, int64_t heads, int64_t width, int64_t context, bool tied) {
  dp::ModelSection s;
  s.type = dp::ModelType::gpt;
  s.layers = layers;
  s.heads = heads;
  s.width = width;
  s.context = context;
  s.tied_head = tied;
  return s;
}

dp::SampleShape text_shape(int64_t vocab, int64_t t) {
  dp::SampleShape s;
  s.classes = vocab;
  s.context = t;
  return s;
}

std::vector<int32_t> random_tokens(size_t count, int32_t vocab, uint64_t seed) {
  dp::Rng rng(seed);
  std::vector<int32_t> t(count);
  for (auto& x : t) x = int32_t(rng.below(uint64_t(vocab)));
  return t;
}

}  // namespace

// ---- kernels ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(embedding_forward_and_backward) {
  const int64_t b = 2, t = 3, c = 4, v = 5, positions = 4;
  const std::vector<int32_t> tokens{1, 4, 1, 0, 1, 2};  // token 1 three times: its gradient sums
  auto wte = random_vector(size_t(v * c), 1), wpe = random_vector(size_t(positions * c), 2);
  std::vector<float> out(size_t(b * t * c));
  dp::cpu::embedding_forward(tokens.data(), wte.data(), wpe.data(), out.data(), b, t, c);
  for (int64_t i = 0; i < b * t; ++i)
    for (int64_t e = 0; e < c; ++e)
      BOOST_TEST(out[size_t(i * c + e)] == wte[size_t(tokens[size_t(i)] * c + e)] + wpe[size_t((i % t) * c + e)]);

  // The map is linear in the tables, so the gradient of sum(out * r) is exact: compare with it directly,
  // and with central differences of the double-precision sum.
  const auto r = random_vector(out.size(), 3);
  std::vector<float> dwte(wte.size(), 0.5f), dwpe(wpe.size(), -0.25f);  // accumulates onto these
  dp::cpu::embedding_backward(tokens.data(), r.data(), dwte.data(), dwpe.data(), b, t, c);
  Vec wte_d = to_double(wte), wpe_d = to_double(wpe);
  auto loss = [&] {
    double s = 0;
    for (int64_t i = 0; i < b * t; ++i)
      for (int64_t e = 0; e < c; ++e)
        s += (wte_d[size_t(tokens[size_t(i)] * c + e)] + wpe_d[size_t((i % t) * c + e)]) * r[size_t(i * c + e)];
    return s;
  };
  Vec nte = numeric_grad(wte_d, loss), npe = numeric_grad(wpe_d, loss);
  for (auto& g : nte) g += 0.5;
  for (auto& g : npe) g -= 0.25;
  check_close(dwte, nte, 1e-6, 1e-6, "dwte");
  check_close(dwpe, npe, 1e-6, 1e-6, "dwpe");
  for (int64_t e = 0; e < c; ++e) {
    BOOST_TEST(dwte[size_t(3 * c + e)] == 0.5f);                // token 3 never appears
    BOOST_TEST(dwpe[size_t(3 * c + e)] == -0.25f);              // position 3 is beyond t
  }
}

BOOST_AUTO_TEST_CASE(layernorm_matches_double_reference) {
  const int64_t n = 6, c = 37;  // more than the kernels' 16 summation lanes, and a remainder
  auto x = random_vector(size_t(n * c), 4, 2.0, 0.7), g = random_vector(size_t(c), 5, 0.5, 1.0),
       b = random_vector(size_t(c), 6, 0.5);
  const auto r = random_vector(size_t(n * c), 7);
  std::vector<float> y(x.size()), mean(static_cast<size_t>(n)), rstd(static_cast<size_t>(n));
  dp::cpu::layernorm_forward(x.data(), g.data(), b.data(), y.data(), mean.data(), rstd.data(), n, c);
  Vec xd = to_double(x), gd = to_double(g), bd = to_double(b);
  const Vec yref = ref_layernorm(xd, gd, bd, size_t(n), size_t(c));
  check_close(y, yref, 1e-6, 1e-6, "layernorm y");

  std::vector<float> dx(x.size(), 1.0f), dg(g.size(), 9.0f), db(b.size(), 9.0f);  // dx accumulates
  dp::cpu::layernorm_backward(x.data(), g.data(), mean.data(), rstd.data(), r.data(), dx.data(), dg.data(),
                              db.data(), n, c, false);
  const Vec rd = to_double(r);
  auto loss = [&] { return dot(ref_layernorm(xd, gd, bd, size_t(n), size_t(c)), rd); };
  Vec nx = numeric_grad(xd, loss);
  for (auto& v : nx) v += 1.0;
  check_close(dx, nx, 2e-6, 1e-5, "layernorm dx");
  check_close(dg, numeric_grad(gd, loss), 2e-6, 1e-5, "layernorm dgamma");
  check_close(db, numeric_grad(bd, loss), 2e-6, 1e-5, "layernorm dbeta");
}

BOOST_AUTO_TEST_CASE(layernorm_backward_accumulates_micro_batches) {
  const int64_t n1 = 2, n2 = 3, n = n1 + n2, c = 19;
  auto x = random_vector(size_t(n * c), 41, 2.0, 0.7), g = random_vector(size_t(c), 42, 0.5, 1.0),
       b = random_vector(size_t(c), 43, 0.5), dy = random_vector(size_t(n * c), 44);
  std::vector<float> y(x.size()), mean(static_cast<size_t>(n)), rstd(static_cast<size_t>(n));
  dp::cpu::layernorm_forward(x.data(), g.data(), b.data(), y.data(), mean.data(), rstd.data(), n, c);
  std::vector<float> dx(x.size(), 0.0f), dg(g.size()), db(b.size());
  dp::cpu::layernorm_backward(x.data(), g.data(), mean.data(), rstd.data(), dy.data(), dx.data(), dg.data(),
                              db.data(), n, c, false);
  std::vector<float> dx2(x.size(), 0.0f), dg2(g.size(), 1e30f), db2(b.size(), 1e30f);
  dp::cpu::layernorm_backward(x.data(), g.data(), mean.data(), rstd.data(), dy.data(), dx2.data(), dg2.data(),
                              db2.data(), n1, c, false);
  dp::cpu::layernorm_backward(x.data() + n1 * c, g.data(), mean.data() + n1, rstd.data() + n1, dy.data() + n1 * c,
                              dx2.data() + n1 * c, dg2.data(), db2.data(), n2, c, true);
  for (size_t i = 0; i < dx.size(); ++i) BOOST_TEST(dx2[i] == dx[i], boost::test_tools::tolerance(1e-5f));
  for (size_t i = 0; i < dg.size(); ++i) BOOST_TEST(dg2[i] == dg[i], boost::test_tools::tolerance(1e-5f));
  for (size_t i = 0; i < db.size(); ++i) BOOST_TEST(db2[i] == db[i], boost::test_tools::tolerance(1e-5f));
}

BOOST_AUTO_TEST_CASE(gelu_matches_double_reference) {
  // A sweep through the curved part, plus saturated values either side.
  std::vector<float> x;
  for (int i = -600; i <= 600; ++i) x.push_back(float(i) / 100.0f);
  for (float v : {-80.0f, -30.0f, -12.0f, 12.0f, 30.0f, 80.0f, 1e-4f, -1e-4f, 0.0f}) x.push_back(v);
  std::vector<float> y(x.size()), dy = random_vector(x.size(), 8), dx(x.size());
  dp::cpu::gelu_forward(x.data(), y.data(), int64_t(x.size()));
  dp::cpu::gelu_backward(x.data(), dy.data(), dx.data(), int64_t(x.size()));
  double worst_y = 0, worst_dx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xv = x[i], h = 1e-6;
    const double yr = ref_gelu(xv);
    const double dr = dy[i] * (ref_gelu(xv + h) - ref_gelu(xv - h)) / (2 * h);
    // Absolute error 2e-7 of tanh scales with |x| / 2; float rounding is 6e-8 relative.
    const double ty = 3e-7 * (1 + std::abs(xv)), td = 1e-6 * (1 + std::abs(xv)) * (std::abs(dy[i]) + 1e-3);
    worst_y = std::max(worst_y, std::abs(y[i] - yr) / ty);
    worst_dx = std::max(worst_dx, std::abs(dx[i] - dr) / td);
    BOOST_TEST(std::abs(y[i] - yr) <= ty, "gelu(" << xv << ") = " << y[i] << ", reference " << yr);
    BOOST_TEST(std::abs(dx[i] - dr) <= td, "gelu'(" << xv << "): " << dx[i] << ", reference " << dr);
  }
  BOOST_TEST_MESSAGE("gelu: worst error " << worst_y << " (y), " << worst_dx << " (dx) of the tolerance");
  // In place: dx may alias dy.
  std::vector<float> inplace = dy;
  dp::cpu::gelu_backward(x.data(), inplace.data(), inplace.data(), int64_t(x.size()));
  BOOST_TEST(inplace == dx);
}

BOOST_AUTO_TEST_CASE(attention_matches_double_reference) {
  // t = 70 crosses the kernel's 32-position causal blocks and ends in a partial one.
  const int64_t b = 2, t = 70, c = 8, nh = 2;
  auto qkv = random_vector(size_t(b * t * 3 * c), 9, 1.5);
  std::vector<float> att(size_t(b * nh * t * t), -1.0f), out(size_t(b * t * c));
  dp::cpu::attention_forward(qkv.data(), att.data(), out.data(), b, t, c, nh);
  Vec qd = to_double(qkv);
  check_close(out, ref_attention(qd, size_t(b), size_t(t), size_t(c), size_t(nh)), 1e-6, 1e-5, "attention out");
  for (int64_t i = 0; i < b * nh; ++i)
    for (int64_t s = 0; s < t; ++s) {
      const float* row = &att[size_t((i * t + s) * t)];
      double sum = 0;
      for (int64_t j = 0; j <= s; ++j) sum += row[j];
      BOOST_TEST(std::abs(sum - 1.0) < 1e-5);
      BOOST_TEST(std::all_of(row + s + 1, row + t, [](float v) { return v == 0.0f; }));  // causal
    }

  const auto r = random_vector(out.size(), 10);
  std::vector<float> dqkv(qkv.size(), 123.0f), scratch(size_t(t * t));  // dqkv is overwritten
  dp::cpu::attention_backward(qkv.data(), att.data(), r.data(), dqkv.data(), scratch.data(), b, t, c, nh);
  const Vec rd = to_double(r);
  auto loss = [&] { return dot(ref_attention(qd, size_t(b), size_t(t), size_t(c), size_t(nh)), rd); };
  check_close(dqkv, numeric_grad(qd, loss), 1e-5, 1e-4, "attention dqkv");
}

BOOST_AUTO_TEST_CASE(attention_single_position_and_short_sequences) {
  // t = 1: each query sees only itself, so out = v and no gradient reaches q or k.
  const int64_t c = 4, nh = 2;
  for (int64_t t : {1, 2, 5, 32, 33}) {
    auto qkv = random_vector(size_t(t * 3 * c), 11 + uint64_t(t));
    std::vector<float> att(size_t(nh * t * t)), out(size_t(t * c)), dqkv(qkv.size()), scratch(size_t(t * t));
    dp::cpu::attention_forward(qkv.data(), att.data(), out.data(), 1, t, c, nh);
    Vec qd = to_double(qkv);
    check_close(out, ref_attention(qd, 1, size_t(t), size_t(c), size_t(nh)), 1e-6, 1e-5, "short attention out");
    const auto r = random_vector(out.size(), 20 + uint64_t(t));
    dp::cpu::attention_backward(qkv.data(), att.data(), r.data(), dqkv.data(), scratch.data(), 1, t, c, nh);
    const Vec rd = to_double(r);
    auto loss = [&] { return dot(ref_attention(qd, 1, size_t(t), size_t(c), size_t(nh)), rd); };
    check_close(dqkv, numeric_grad(qd, loss), 1e-5, 1e-4, "short attention dqkv");
    if (t == 1)
      for (int64_t e = 0; e < c; ++e) BOOST_TEST(out[size_t(e)] == qkv[size_t(2 * c + e)]);
  }
}

// ---- the whole model ---------------------------------------------------------------------------------------

namespace {

// Checks every parameter's gradient of a tiny GPT against central differences of ref_gpt_loss.
void check_whole_gpt(bool tied) {
  const Config k{7, 5, 8, 2, 2, 6, tied};  // position table longer than T: its last row gets no gradient
  dp::Gpt model(gpt_spec(int64_t(k.layers), int64_t(k.nh), int64_t(k.c), int64_t(k.positions), tied),
                text_shape(int64_t(k.v), int64_t(k.t)), /*seed=*/5);
  // Move away from the init (tiny weights, unit gammas) so that every path carries a sizeable gradient.
  {
    const auto noise = random_vector(model.params().size(), 77, 0.35);
    for (size_t i = 0; i < noise.size(); ++i) model.params()[i] += noise[i];
  }
  const size_t n = 3;
  const auto tokens = random_tokens(n * k.t, int32_t(k.v), 31), targets = random_tokens(n * k.t, int32_t(k.v), 32);
  const float scale = 1.0f / float(n * k.t);
  const dp::Batch batch{int64_t(n), nullptr, tokens.data(), targets.data()};
  const dp::StepStats st = model.forward_backward(batch, scale);
  BOOST_TEST(st.count == int64_t(n * k.t));
  Vec p(model.params().begin(), model.params().end());
  const double ref = ref_gpt_loss(p, k, tokens, targets, n);
  BOOST_TEST(st.loss_sum / double(n * k.t) == ref, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(model.evaluate(batch).loss_sum == st.loss_sum);

  const std::vector<float> analytic(model.grads().begin(), model.grads().end());
  const Vec numeric = numeric_grad(p, [&] { return ref_gpt_loss(p, k, tokens, targets, n); });
  check_close(analytic, numeric, 5e-7, 2e-5, tied ? "tied gpt" : "untied gpt");
  // The unused position (t = 5 of a 6-row table) gets exactly zero.
  for (size_t e = 0; e < k.c; ++e) BOOST_TEST(analytic[k.v * k.c + 5 * k.c + e] == 0.0f);
  BOOST_TEST(numeric.size() == model.params().size());
}

}  // namespace

BOOST_AUTO_TEST_CASE(whole_gpt_gradient_tied_head) { check_whole_gpt(true); }
BOOST_AUTO_TEST_CASE(whole_gpt_gradient_untied_head) { check_whole_gpt(false); }

BOOST_AUTO_TEST_CASE(gradients_are_overwritten_and_buffers_reused) {
  dp::Gpt model(gpt_spec(2, 2, 16, 12, true), text_shape(11, 12), 3);
  const auto tokens = random_tokens(4 * 12, 11, 40), targets = random_tokens(4 * 12, 11, 41);
  const dp::Batch big{4, nullptr, tokens.data(), targets.data()}, small{1, nullptr, tokens.data(), targets.data()};
  model.forward_backward(small, 0.5f);
  const std::vector<float> g1(model.grads().begin(), model.grads().end());
  model.forward_backward(big, 0.5f);    // grows the buffers
  model.forward_backward(small, 0.5f);  // reuses them: same result as before, nothing accumulated
  BOOST_TEST(std::equal(g1.begin(), g1.end(), model.grads().begin(), model.grads().end()));
  // A zero-sample batch zeroes the gradient.
  BOOST_TEST(model.forward_backward({0, nullptr, nullptr, nullptr}, 1.0f).count == 0);
  BOOST_TEST(std::all_of(model.grads().begin(), model.grads().end(), [](float v) { return v == 0.0f; }));
  // loss_scale scales the gradient linearly.
  model.forward_backward(small, 1.0f);
  for (size_t i = 0; i < g1.size(); ++i) BOOST_TEST(model.grads()[i] == 2.0f * g1[i], boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(logits_are_causal) {
  const int64_t T = 40, V = 13;  // T > 32: the causal blocks of the attention kernel are crossed
  dp::Gpt model(gpt_spec(2, 4, 16, 48, true), text_shape(V, T), 9);
  const auto noise = random_vector(model.params().size(), 78, 0.2);
  for (size_t i = 0; i < noise.size(); ++i) model.params()[i] += noise[i];
  const auto tokens = random_tokens(size_t(2 * T), int32_t(V), 50), targets = random_tokens(size_t(2 * T), int32_t(V), 51);
  model.evaluate({2, nullptr, tokens.data(), targets.data()});
  const std::vector<float> base = model.logits();
  for (int64_t t : {0, 1, 17, 31, 32, 39}) {
    auto changed = tokens;
    changed[size_t(t)] = (changed[size_t(t)] + 1) % int32_t(V);  // sequence 0, position t
    model.evaluate({2, nullptr, changed.data(), targets.data()});
    const auto l = model.logits();
    // Positions before t of sequence 0, and all of sequence 1, are bit for bit unchanged...
    BOOST_TEST(std::equal(base.begin(), base.begin() + t * V, l.begin()), "a logit before position " << t << " changed");
    BOOST_TEST(std::equal(base.begin() + T * V, base.end(), l.begin() + T * V));
    // ...and position t itself does change.
    BOOST_TEST(!std::equal(base.begin() + t * V, base.begin() + (t + 1) * V, l.begin() + t * V));
  }
}

BOOST_AUTO_TEST_CASE(layer_list_parameters_and_initialisation) {
  const int64_t V = 96, T = 64, C = 32, L = 3, P = 80;
  for (bool tied : {true, false}) {
    dp::Gpt model(gpt_spec(L, 4, C, P, tied), text_shape(V, T), 7);
    const int64_t expected = V * C + P * C + L * (12 * C * C + 13 * C) + 2 * C + (tied ? 0 : V * C);
    BOOST_TEST(int64_t(model.params().size()) == expected);
    int64_t sum = 0, next = 0;
    for (const auto& l : model.layers()) {
      if (l.param_count > 0) BOOST_TEST(l.param_offset == next, l.name);  // contiguous, in order
      next = l.param_offset + l.param_count;
      sum += l.param_count;
      BOOST_TEST(l.flops_per_sample > 0, l.name);
    }
    BOOST_TEST(sum == int64_t(model.params().size()));
    BOOST_TEST(model.layers().size() == size_t(1 + 10 * L + 2));
    BOOST_TEST(model.targets_per_sample() == T);
    BOOST_TEST(model.type() == "gpt");
    // Matrix products dominate: about 2 * (non-embedding parameters) + attention + head FLOPs per token.
    const double per_token = model.flops_per_sample() / double(T);
    BOOST_TEST(per_token > 2.0 * double(L * 12 * C * C + V * C));
    BOOST_TEST(per_token < 1.3 * (2.0 * double(L * 12 * C * C + V * C) + 4.0 * double(L * T * C)));
    BOOST_TEST_MESSAGE(model.describe());
    BOOST_TEST(model.describe().find("gpt 3 layers x 32 wide, 4 heads, context 64") == 0);

    // Initialisation: weights N(0, 0.02), residual projections N(0, 0.02 / sqrt(2 L)), biases 0, gammas 1.
    auto stats = [&](int64_t off, int64_t count) {
      double s = 0, s2 = 0;
      for (int64_t i = 0; i < count; ++i) {
        const double v = model.params()[size_t(off + i)];
        s += v;
        s2 += v * v;
      }
      return std::pair{s / double(count), std::sqrt(s2 / double(count))};
    };
    const auto& ls = model.layers();
    auto find = [&](const std::string& name) {
      return *std::find_if(ls.begin(), ls.end(), [&](const dp::LayerInfo& l) { return l.name == name; });
    };
    BOOST_TEST(stats(0, V * C).second == 0.02, boost::test_tools::tolerance(0.1));
    const auto qkv = find("h1.qkv"), proj = find("h1.proj"), fcp = find("h2.fc_proj"), ln1 = find("h0.ln1");
    BOOST_TEST(stats(qkv.param_offset, 3 * C * C).second == 0.02, boost::test_tools::tolerance(0.1));
    BOOST_TEST(stats(proj.param_offset, C * C).second == 0.02 / std::sqrt(2.0 * L), boost::test_tools::tolerance(0.1));
    BOOST_TEST(stats(fcp.param_offset, 4 * C * C).second == 0.02 / std::sqrt(2.0 * L), boost::test_tools::tolerance(0.1));
    BOOST_TEST(stats(qkv.param_offset + 3 * C * C, 3 * C).second == 0.0);  // bias
    BOOST_TEST(stats(ln1.param_offset, C).first == 1.0);                   // gamma
    BOOST_TEST(stats(ln1.param_offset + C, C).second == 0.0);              // beta

    dp::Gpt same(gpt_spec(L, 4, C, P, tied), text_shape(V, T), 7), other(gpt_spec(L, 4, C, P, tied), text_shape(V, T), 8);
    BOOST_TEST(std::equal(model.params().begin(), model.params().end(), same.params().begin(), same.params().end()));
    BOOST_TEST(!std::equal(model.params().begin(), model.params().end(), other.params().begin()));
    BOOST_TEST(model.fingerprint() == same.fingerprint());
  }
  dp::Gpt tied(gpt_spec(L, 4, C, P, true), text_shape(V, T), 7), untied(gpt_spec(L, 4, C, P, false), text_shape(V, T), 7);
  BOOST_TEST(tied.fingerprint() != untied.fingerprint());
}

BOOST_AUTO_TEST_CASE(constructor_guards) {
  auto where_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const dp::JobError& e) {
      BOOST_TEST_MESSAGE(e.line());
      BOOST_TEST(!e.hint().empty());
      return e.where();
    }
    return std::string("no error");
  };
  dp::SampleShape image;
  image.features = 784;
  image.classes = 10;
  BOOST_TEST(where_of([&] { dp::Gpt g(gpt_spec(1, 2, 8, 16, true), image, 1); }) == "[model] type");
  BOOST_TEST(where_of([&] { dp::Gpt g(gpt_spec(1, 2, 8, 16, true), text_shape(5, 17), 1); }) == "[model] context");
  BOOST_TEST(where_of([&] { dp::Gpt g(gpt_spec(1, 3, 8, 16, true), text_shape(5, 16), 1); }) == "[model] heads");
}
