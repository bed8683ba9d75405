// The CNN's kernels (convolution, per-sample norm, global average pooling) against finite differences and
// naive references, and the whole Cnn's gradient against an independent double-precision reference.
#define BOOST_TEST_MODULE cnn
#include <boost/test/unit_test.hpp>

#include "gradient_testing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/pool.h"
#include "lib/core/error.h"
#include "lib/core/rng.h"
#include "models/cnn.h"

using namespace gradient_testing;

namespace {

// ---- double-precision references ------------------------------------------------------------------------

// One sample's feature map (C, H, W) in double.
struct Map {
  int64_t c = 0, h = 0, w = 0;
  std::vector<double> v;
  double& at(int64_t ci, int64_t y, int64_t x) { return v[size_t((ci * h + y) * w + x)]; }
  double at(int64_t ci, int64_t y, int64_t x) const { return v[size_t((ci * h + y) * w + x)]; }
};

// Direct convolution, w (O, C, K, K) and b (O) read from p at `off`.
template <class P>
Map ref_conv(const Map& in, const P& p, size_t off, int64_t out_c, int64_t k, int64_t stride, int64_t pad) {
  Map out{out_c, (in.h + 2 * pad - k) / stride + 1, (in.w + 2 * pad - k) / stride + 1, {}};
  out.v.assign(size_t(out.c * out.h * out.w), 0.0);
  const size_t b_off = off + size_t(out_c * in.c * k * k);
  for (int64_t o = 0; o < out_c; ++o)
    for (int64_t y = 0; y < out.h; ++y)
      for (int64_t x = 0; x < out.w; ++x) {
        double acc = double(p[b_off + size_t(o)]);
        for (int64_t ci = 0; ci < in.c; ++ci)
          for (int64_t ki = 0; ki < k; ++ki)
            for (int64_t kj = 0; kj < k; ++kj) {
              const int64_t iy = y * stride - pad + ki, ix = x * stride - pad + kj;
              if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w) continue;
              acc += double(p[off + size_t(((o * in.c + ci) * k + ki) * k + kj)]) * in.at(ci, iy, ix);
            }
        out.at(o, y, x) = acc;
      }
  return out;
}

// Per-sample norm over all C*H*W values, gamma (C) then beta (C) read from p at `off`.
template <class P>
Map ref_norm(const Map& in, const P& p, size_t off) {
  double mean = 0, var = 0;
  for (double v : in.v) mean += v;
  mean /= double(in.v.size());
  for (double v : in.v) var += (v - mean) * (v - mean);
  var /= double(in.v.size());
  const double rstd = 1.0 / std::sqrt(var + 1e-5);
  Map out = in;
  const int64_t spatial = in.h * in.w;
  for (int64_t c = 0; c < in.c; ++c)
    for (int64_t j = 0; j < spatial; ++j) {
      double& v = out.v[size_t(c * spatial + j)];
      v = (v - mean) * rstd * double(p[off + size_t(c)]) + double(p[off + size_t(in.c + c)]);
    }
  return out;
}

void ref_relu(Map& m) {
  for (double& v : m.v) v = std::max(v, 0.0);
}

// Mean softmax cross-entropy of the Cnn with the documented parameter layout.
double reference_cnn_loss(const std::vector<double>& p, const dp::SampleShape& shape,
                          const std::vector<int64_t>& channels, int64_t blocks, const std::vector<float>& x,
                          const std::vector<int32_t>& labels) {
  const size_t n = labels.size();
  double total = 0;
  for (size_t s = 0; s < n; ++s) {
    Map a{shape.channels, shape.height, shape.width, {}};
    a.v.assign(x.begin() + long(s * size_t(shape.features)), x.begin() + long((s + 1) * size_t(shape.features)));
    size_t off = 0;
    auto conv_norm = [&](const Map& in, int64_t out_c, int64_t stride) {
      Map c = ref_conv(in, p, off, out_c, 3, stride, 1);
      off += size_t(out_c * in.c * 9 + out_c);
      Map m = ref_norm(c, p, off);
      off += size_t(2 * out_c);
      return m;
    };
    a = conv_norm(a, channels[0], 1);
    ref_relu(a);
    for (size_t st = 0; st < channels.size(); ++st) {
      if (st > 0) {
        a = conv_norm(a, channels[st], 2);
        ref_relu(a);
      }
      for (int64_t b = 0; b < blocks; ++b) {
        Map t = conv_norm(a, a.c, 1);
        ref_relu(t);
        t = conv_norm(t, a.c, 1);
        for (size_t i = 0; i < t.v.size(); ++i) t.v[i] += a.v[i];
        ref_relu(t);
        a = t;
      }
    }
    std::vector<double> pooled(size_t(a.c), 0.0);
    for (int64_t c = 0; c < a.c; ++c) {
      for (int64_t j = 0; j < a.h * a.w; ++j) pooled[size_t(c)] += a.v[size_t(c * a.h * a.w + j)];
      pooled[size_t(c)] /= double(a.h * a.w);
    }
    std::vector<double> z(size_t(shape.classes));
    for (int64_t o = 0; o < shape.classes; ++o) {
      double acc = p[off + size_t(shape.classes * a.c + o)];
      for (int64_t c = 0; c < a.c; ++c) acc += p[off + size_t(o * a.c + c)] * pooled[size_t(c)];
      z[size_t(o)] = acc;
    }
    BOOST_REQUIRE(off + size_t(shape.classes * a.c + shape.classes) == p.size());
    double zmax = z[0], denom = 0;
    for (double v : z) zmax = std::max(zmax, v);
    for (double v : z) denom += std::exp(v - zmax);
    total += std::log(denom) - (z[size_t(labels[s])] - zmax);
  }
  return total / double(n);
}

dp::SampleShape image_shape(int64_t c, int64_t h, int64_t w, int64_t classes) {
  dp::SampleShape s;
  s.channels = c;
  s.height = h;
  s.width = w;
  s.features = c * h * w;
  s.classes = classes;
  return s;
}

dp::ModelSection cnn_spec(std::vector<int64_t> channels, int64_t blocks) {
  dp::ModelSection spec;
  spec.type = dp::ModelType::cnn;
  spec.channels = std::move(channels);
  spec.blocks = blocks;
  return spec;
}

}  // namespace

// ---- convolution -----------------------------------------------------------------------------------------

struct ConvCase {
  int64_t n, c, h, w, o, k, stride, pad;
};

// The two implementations behind one contract: the production path (oneDNN where built) and the sgemm
// reference. Both are checked against the direct convolution and numeric gradients.
struct ConvImpl {
  const char* name;
  decltype(&dp::cpu::conv2d_forward) forward;
  decltype(&dp::cpu::conv2d_backward) backward;
  decltype(&dp::cpu::conv2d_workspace) workspace;
};
const ConvImpl kConvImpls[] = {
    {"production", dp::cpu::conv2d_forward, dp::cpu::conv2d_backward, dp::cpu::conv2d_workspace},
    {"sgemm reference", dp::cpu::conv2d_forward_gemm, dp::cpu::conv2d_backward_gemm, dp::cpu::conv2d_gemm_workspace},
};

BOOST_AUTO_TEST_CASE(conv_forward_and_backward_match_references) {
  BOOST_TEST_MESSAGE("production convolution: " << dp::cpu::conv2d_implementation());
  const std::vector<ConvCase> cases{
      {2, 3, 5, 7, 4, 3, 1, 1},  // same-size, odd sizes
      {2, 3, 7, 5, 2, 3, 2, 1},  // downsampling
      {1, 2, 6, 5, 3, 3, 1, 0},  // valid
      {2, 2, 7, 8, 3, 3, 2, 0},  // strided, unpadded
      {2, 3, 4, 5, 2, 1, 1, 0},  // pointwise (no im2col)
      {1, 2, 9, 8, 3, 5, 2, 2},  // larger kernel
      {1, 1, 3, 3, 2, 3, 1, 2},  // padding K - 1: the input gradient needs no padding
      {2, 2, 4, 3, 3, 1, 1, 1},  // padding beyond K - 1: the classic im2col path at stride 1
      {1, 1, 5, 4, 2, 2, 1, 0},  // even kernel
      {1, 2, 8, 7, 2, 3, 3, 1},  // stride 3
      // C >= 4: one GEMM per kernel tap instead of a column matrix
      {2, 8, 5, 7, 3, 3, 1, 1},
      {2, 9, 7, 6, 4, 3, 2, 1},
      {1, 8, 6, 5, 2, 3, 2, 0},
      {1, 8, 4, 3, 3, 1, 1, 0},
      {1, 8, 4, 3, 2, 1, 1, 1},
      {1, 8, 8, 7, 2, 5, 3, 2},
  };
  for (const ConvImpl& impl : kConvImpls) {
    uint64_t seed = 100;
    for (const ConvCase& k : cases) {
      BOOST_TEST_CONTEXT(impl.name << " conv n=" << k.n << " c=" << k.c << " " << k.h << "x" << k.w << " o=" << k.o
                                   << " k=" << k.k << " stride=" << k.stride << " pad=" << k.pad) {
        dp::cpu::ConvShape s{k.n, k.c, k.h, k.w, k.o, k.k, k.stride, k.pad};
        const int64_t pq = s.out_height() * s.out_width();
        auto x = random_vector(size_t(k.n * k.c * k.h * k.w), ++seed);
        auto w = random_vector(size_t(k.o * k.c * k.k * k.k + k.o), ++seed);  // weights, then the bias
        const auto r = random_vector(size_t(k.n * k.o * pq), ++seed);
        std::vector<float> y(r.size()), ws(size_t(std::max<int64_t>(1, impl.workspace(s)))), dx(x.size(), 9.0f),
            dw(w.size(), 9.0f);
        const float* bias = w.data() + k.o * k.c * k.k * k.k;
        auto loss = [&] {
          impl.forward(s, x.data(), w.data(), bias, y.data(), ws.data());
          return dot(y, r);
        };
        loss();
        // forward against the direct convolution
        for (int64_t i = 0; i < k.n; ++i) {
          Map in{k.c, k.h, k.w, {}};
          in.v.assign(x.begin() + i * k.c * k.h * k.w, x.begin() + (i + 1) * k.c * k.h * k.w);
          const Map ref = ref_conv(in, w, 0, k.o, k.k, k.stride, k.pad);
          BOOST_REQUIRE(int64_t(ref.v.size()) == k.o * pq);
          for (size_t j = 0; j < ref.v.size(); ++j)
            BOOST_TEST(std::abs(y[size_t(i * k.o * pq) + j] - ref.v[j]) < 1e-5 * (1 + std::abs(ref.v[j])));
        }
        impl.backward(s, x.data(), w.data(), r.data(), dx.data(), dw.data(), dw.data() + k.o * k.c * k.k * k.k,
                      ws.data(), false);
        // The loss is linear in x and in (w, b), so a large step is exact up to rounding.
        for (size_t i = 0; i < w.size(); ++i)
          BOOST_TEST(rel_diff(dw[i], numeric_grad(w, i, loss, 0.25f)) < 1e-3, "dw[" << i << "]");
        for (size_t i = 0; i < x.size(); ++i)
          BOOST_TEST(rel_diff(dx[i], numeric_grad(x, i, loss, 0.25f)) < 1e-3, "dx[" << i << "]");
        // Without dx the parameter gradients are the same.
        std::vector<float> dw2(w.size());
        impl.backward(s, x.data(), w.data(), r.data(), nullptr, dw2.data(), dw2.data() + k.o * k.c * k.k * k.k,
                      ws.data(), false);
        BOOST_TEST(dw2 == dw, boost::test_tools::per_element());
        // accumulate adds to what is there
        impl.backward(s, x.data(), w.data(), r.data(), nullptr, dw2.data(), dw2.data() + k.o * k.c * k.k * k.k,
                      ws.data(), /*accumulate=*/true);
        for (size_t i = 0; i < dw.size(); ++i) BOOST_TEST(std::abs(dw2[i] - 2 * dw[i]) <= 1e-6f * (1 + std::abs(dw[i])));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(conv_backward_with_no_samples_zeroes_gradients) {
  dp::cpu::ConvShape s{0, 2, 5, 5, 3, 3, 1, 1};
  for (const ConvImpl& impl : kConvImpls) {
    std::vector<float> w(2 * 3 * 9, 1.0f), dw(w.size(), 7.0f), db(3, 7.0f), ws(size_t(impl.workspace(s)));
    impl.forward(s, nullptr, w.data(), db.data(), nullptr, ws.data());
    impl.backward(s, nullptr, w.data(), nullptr, nullptr, dw.data(), db.data(), ws.data(), false);
    for (float g : dw) BOOST_TEST(g == 0.0f, impl.name);
    for (float g : db) BOOST_TEST(g == 0.0f, impl.name);
  }
}

// The production path against the reference on the example CNN's layers (configs/cnn.toml, one rank's
// batch of 64, and an odd batch such as I-DAT gives): forward output, input, weight and bias gradients.
BOOST_AUTO_TEST_CASE(production_conv_matches_the_reference_on_the_cnn_layers) {
  const ConvCase cases[] = {{64, 1, 28, 28, 16, 3, 1, 1}, {64, 16, 28, 28, 16, 3, 1, 1},
                            {37, 16, 28, 28, 32, 3, 2, 1}, {64, 32, 14, 14, 32, 3, 1, 1}};
  uint64_t seed = 900;
  for (const ConvCase& k : cases) {
    BOOST_TEST_CONTEXT("n=" << k.n << " c=" << k.c << " " << k.h << "x" << k.w << " o=" << k.o << " stride="
                            << k.stride) {
      const dp::cpu::ConvShape s{k.n, k.c, k.h, k.w, k.o, k.k, k.stride, k.pad};
      const size_t y_size = size_t(k.n * k.o * s.out_height() * s.out_width()), w_size = size_t(k.o * k.c * k.k * k.k);
      const auto x = random_vector(size_t(k.n * k.c * k.h * k.w), ++seed), w = random_vector(w_size, ++seed),
                 b = random_vector(size_t(k.o), ++seed), dy = random_vector(y_size, ++seed);
      struct Out {
        std::vector<float> y, dx, dw, db;
      };
      auto run = [&](const ConvImpl& impl) {
        Out o{std::vector<float>(y_size), std::vector<float>(x.size()), std::vector<float>(w_size),
              std::vector<float>(size_t(k.o))};
        std::vector<float> ws(size_t(std::max<int64_t>(1, impl.workspace(s))));
        impl.forward(s, x.data(), w.data(), b.data(), o.y.data(), ws.data());
        impl.backward(s, x.data(), w.data(), dy.data(), o.dx.data(), o.dw.data(), o.db.data(), ws.data(), false);
        return o;
      };
      const Out got = run(kConvImpls[0]), want = run(kConvImpls[1]);
      // Sums of up to C*K*K (forward, input gradient) or N*P*Q (weights) terms in another order.
      auto close = [](const std::vector<float>& a, const std::vector<float>& r, double tol) {
        BOOST_TEST_REQUIRE(!r.empty(), "nothing to compare");
        BOOST_TEST_REQUIRE(a.size() == r.size(), a.size() << " values against " << r.size());
        double worst = 0, scale = 0;
        for (size_t i = 0; i < r.size(); ++i) scale = std::max(scale, double(std::abs(r[i])));
        for (size_t i = 0; i < r.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - r[i])));
        return worst <= tol * (1 + scale);
      };
      BOOST_TEST(close(got.y, want.y, 1e-5), "forward");
      BOOST_TEST(close(got.dx, want.dx, 1e-5), "input gradient");
      BOOST_TEST(close(got.dw, want.dw, 1e-5), "weight gradient");
      BOOST_TEST(close(got.db, want.db, 1e-5), "bias gradient");
    }
  }
}

// ---- norm --------------------------------------------------------------------------------------------------

// sum(r * f(norm(x))) in double, f = ReLU when `relu`.
double ref_norm_loss(const std::vector<double>& x, const std::vector<double>& gb, const std::vector<float>& r,
                     int64_t n, int64_t c, int64_t spatial, bool relu) {
  double loss = 0;
  for (int64_t i = 0; i < n; ++i) {
    Map m{c, 1, spatial, {}};
    m.v.assign(x.begin() + i * c * spatial, x.begin() + (i + 1) * c * spatial);
    Map y = ref_norm(m, gb, 0);
    if (relu) ref_relu(y);
    for (size_t j = 0; j < y.v.size(); ++j) loss += y.v[j] * double(r[size_t(i * c * spatial) + j]);
  }
  return loss;
}

BOOST_AUTO_TEST_CASE(norm_forward_and_backward_match_double_reference) {
  const int64_t n = 3, c = 4, spatial = 15;  // spatial not a multiple of the 8-wide partial sums
  for (bool relu : {false, true}) {
    for (double shift : {0.0, 5.0}) {  // an offset mean stresses the variance and dgamma sums
      BOOST_TEST_CONTEXT("relu=" << relu << " shift=" << shift) {
        const auto x = random_vector(size_t(n * c * spatial), 7, 2.0, shift);
        auto gb = random_vector(size_t(2 * c), 8, 0.5);
        for (int64_t j = 0; j < c; ++j) gb[size_t(j)] += 1.0f;  // gamma around 1
        const auto r = random_vector(x.size(), 9);
        std::vector<float> y(x.size()), mean(n), rstd(n), dx(x.size(), 9.0f), dgb(gb.size(), 9.0f);
        dp::cpu::norm2d_forward(x.data(), gb.data(), gb.data() + c, y.data(), mean.data(), rstd.data(), n, c,
                                spatial, relu);
        std::vector<double> xd(x.begin(), x.end()), gbd(gb.begin(), gb.end());
        for (int64_t i = 0; i < n; ++i) {
          Map m{c, 1, spatial, {}};
          m.v.assign(xd.begin() + i * c * spatial, xd.begin() + (i + 1) * c * spatial);
          Map ref = ref_norm(m, gbd, 0);
          if (relu) ref_relu(ref);
          for (size_t j = 0; j < ref.v.size(); ++j)
            BOOST_TEST(std::abs(y[size_t(i * c * spatial) + j] - ref.v[j]) < 2e-6 * (1 + std::abs(ref.v[j])));
        }
        // The mask argument is the fused forward's output; dx written over a copy of dy checks aliasing.
        dx.assign(r.begin(), r.end());
        dp::cpu::norm2d_backward(x.data(), gb.data(), mean.data(), rstd.data(), dx.data(),
                                 relu ? y.data() : nullptr, dx.data(), dgb.data(), dgb.data() + c, n, c, spatial);
        auto numeric = [&](std::vector<double>& v, size_t i) {
          const double saved = v[i], h = 1e-6;
          v[i] = saved + h;
          const double up = ref_norm_loss(xd, gbd, r, n, c, spatial, relu);
          v[i] = saved - h;
          const double down = ref_norm_loss(xd, gbd, r, n, c, spatial, relu);
          v[i] = saved;
          return (up - down) / (2 * h);
        };
        for (size_t i = 0; i < x.size(); ++i) {
          const double num = numeric(xd, i);
          BOOST_TEST(std::abs(dx[i] - num) < 1e-5 + 1e-4 * std::abs(num), "dx[" << i << "] " << dx[i] << " vs " << num);
        }
        for (size_t i = 0; i < gb.size(); ++i) {
          const double num = numeric(gbd, i);
          BOOST_TEST(std::abs(dgb[i] - num) < 1e-5 + 1e-4 * std::abs(num), "dgamma/dbeta[" << i << "]");
        }
        // accumulate adds to what is there
        std::vector<float> dgb2 = dgb, dx2(x.size());
        dp::cpu::norm2d_backward(x.data(), gb.data(), mean.data(), rstd.data(), r.data(), relu ? y.data() : nullptr,
                                 dx2.data(), dgb2.data(), dgb2.data() + c, n, c, spatial, /*accumulate=*/true);
        for (size_t i = 0; i < gb.size(); ++i) BOOST_TEST(std::abs(dgb2[i] - 2 * dgb[i]) <= 1e-5f * (1 + std::abs(dgb[i])));
        BOOST_TEST(dx2 == dx, boost::test_tools::per_element());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(norm_normalises_each_sample_separately) {
  // Two samples of very different scale both come out with mean 0 and variance ~1 (gamma 1, beta 0).
  const int64_t c = 2, spatial = 9;
  auto x = random_vector(size_t(2 * c * spatial), 3);
  for (size_t i = size_t(c * spatial); i < x.size(); ++i) x[i] = x[i] * 100.0f + 50.0f;
  const std::vector<float> gb{1, 1, 0, 0};
  std::vector<float> y(x.size()), mean(2), rstd(2);
  dp::cpu::norm2d_forward(x.data(), gb.data(), gb.data() + c, y.data(), mean.data(), rstd.data(), 2, c, spatial);
  for (int i = 0; i < 2; ++i) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < c * spatial; ++j) m += y[size_t(i * c * spatial + j)];
    m /= double(c * spatial);
    for (int64_t j = 0; j < c * spatial; ++j) v += std::pow(y[size_t(i * c * spatial + j)] - m, 2);
    v /= double(c * spatial);
    BOOST_TEST(std::abs(m) < 1e-5);
    BOOST_TEST(std::abs(v - 1.0) < 1e-3);
  }
  std::vector<float> dgb(4, 7.0f);
  dp::cpu::norm2d_backward(nullptr, gb.data(), nullptr, nullptr, nullptr, nullptr, nullptr, dgb.data(),
                           dgb.data() + c, 0, c, spatial);
  for (float g : dgb) BOOST_TEST(g == 0.0f);
}

// ---- pooling -----------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(global_avg_pool_matches_finite_differences) {
  const int64_t n = 2, c = 3, spatial = 13;
  auto x = random_vector(size_t(n * c * spatial), 21);
  const auto r = random_vector(size_t(n * c), 22);
  std::vector<float> y(size_t(n * c)), dx(x.size());
  auto loss = [&] {
    dp::cpu::global_avg_pool_forward(x.data(), y.data(), n, c, spatial);
    return dot(y, r);
  };
  loss();
  for (int64_t i = 0; i < n * c; ++i) {
    double m = 0;
    for (int64_t j = 0; j < spatial; ++j) m += x[size_t(i * spatial + j)];
    BOOST_TEST(std::abs(y[size_t(i)] - m / double(spatial)) < 1e-6);
  }
  dp::cpu::global_avg_pool_backward(r.data(), dx.data(), n, c, spatial);
  for (size_t i = 0; i < x.size(); ++i) BOOST_TEST(rel_diff(dx[i], numeric_grad(x, i, loss, 0.25f)) < 1e-3);
}

// ---- the whole model ---------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(whole_cnn_gradient_matches_double_reference) {
  // Odd image sizes (7x9 -> 4x5 after the stride-2 stage), two stages of two blocks.
  const auto shape = image_shape(2, 7, 9, 3);
  const std::vector<int64_t> channels{3, 5};
  const int64_t blocks = 2, n = 3;
  dp::Cnn model(cnn_spec(channels, blocks), shape, /*seed=*/5);
  // Non-trivial gamma and beta, so that their gradients and their use in dx are exercised.
  dp::Rng rng(6);
  for (const dp::LayerInfo& l : model.layers())
    if (l.kind == "norm")
      for (int64_t i = 0; i < l.param_count; ++i)
        model.params()[size_t(l.param_offset + i)] = float((i < l.param_count / 2 ? 1.0 : 0.0) + 0.3 * rng.normal());
  const auto x = random_vector(size_t(n * shape.features), 7);
  const std::vector<int32_t> y{0, 2, 1};
  const auto stats = model.forward_backward({n, x.data(), nullptr, y.data()}, 1.0f / float(n));
  BOOST_TEST(stats.count == n);
  std::vector<double> p(model.params().begin(), model.params().end());
  BOOST_TEST(stats.loss_sum / double(n) == reference_cnn_loss(p, shape, channels, blocks, x, y),
             boost::test_tools::tolerance(1e-5));
  // evaluate() agrees with the training forward
  BOOST_TEST(model.evaluate({n, x.data(), nullptr, y.data()}).loss_sum == stats.loss_sum,
             boost::test_tools::tolerance(1e-12));

  int checked = 0, max_at = -1;
  double worst = 0;
  for (size_t i = 0; i < p.size(); ++i, ++checked) {
    const double saved = p[i], h = 1e-6;
    p[i] = saved + h;
    const double up = reference_cnn_loss(p, shape, channels, blocks, x, y);
    p[i] = saved - h;
    const double down = reference_cnn_loss(p, shape, channels, blocks, x, y);
    p[i] = saved;
    const double numeric = (up - down) / (2 * h), analytic = model.grads()[i];
    const double tolerance = 2e-6 + 2e-5 * std::abs(numeric);
    if (std::abs(analytic - numeric) / tolerance > worst) worst = std::abs(analytic - numeric) / tolerance, max_at = int(i);
    BOOST_TEST(std::abs(analytic - numeric) < tolerance,
               "parameter " << i << ": analytic " << analytic << ", numeric " << numeric);
  }
  BOOST_TEST_MESSAGE("worst gradient error (fraction of tolerance): " << worst << " at parameter " << max_at);
  BOOST_TEST(checked == int(model.params().size()));
  BOOST_TEST(checked > 1000);
}

BOOST_AUTO_TEST_CASE(samples_do_not_interact) {
  // Per-sample norm: the gradient of a batch is the sum of the gradients of its halves (what makes
  // data-parallel training independent of the rank count).
  const auto shape = image_shape(1, 8, 8, 4);
  dp::Cnn model(cnn_spec({4, 6}, 1), shape, 3);
  const auto x = random_vector(size_t(4 * shape.features), 8);
  const std::vector<int32_t> y{3, 0, 1, 2};
  const auto whole = model.forward_backward({4, x.data(), nullptr, y.data()}, 1.0f);
  const std::vector<float> g_all(model.grads().begin(), model.grads().end());
  const auto first = model.forward_backward({2, x.data(), nullptr, y.data()}, 1.0f);
  std::vector<float> g_sum(model.grads().begin(), model.grads().end());
  const auto second = model.forward_backward({2, x.data() + 2 * shape.features, nullptr, y.data() + 2}, 1.0f);
  for (size_t i = 0; i < g_sum.size(); ++i) g_sum[i] += model.grads()[i];
  BOOST_TEST(whole.loss_sum == first.loss_sum + second.loss_sum, boost::test_tools::tolerance(1e-6));
  for (size_t i = 0; i < g_sum.size(); ++i)
    BOOST_TEST(std::abs(g_all[i] - g_sum[i]) < 1e-5 + 1e-4 * std::abs(g_all[i]), "parameter " << i);
}

BOOST_AUTO_TEST_CASE(layer_list_covers_every_parameter) {
  const auto shape = image_shape(1, 28, 28, 10);
  dp::Cnn model(cnn_spec({16, 32}, 1), shape, 1);
  const auto& l = model.layers();
  // stem (conv norm relu), block (7), down (3), block (7), pool, fc
  BOOST_TEST(l.size() == 22u);
  int64_t offset = 0;
  for (const dp::LayerInfo& layer : l) {
    BOOST_TEST(layer.param_offset == offset, layer.name);
    offset += layer.param_count;
    BOOST_TEST(layer.flops_per_sample > 0.0, layer.name);
  }
  BOOST_TEST(offset == int64_t(model.params().size()));
  BOOST_TEST(l.front().name == "stem.conv");
  BOOST_TEST(l.front().param_count == 16 * 1 * 9 + 16);
  BOOST_TEST(l.front().activations_per_sample == 16 * 28 * 28);
  BOOST_TEST(l.front().flops_per_sample == 2.0 * 9 * 16 * 28 * 28);
  BOOST_TEST(l.back().kind == "linear");
  BOOST_TEST(l.back().param_count == 32 * 10 + 10);
  const int64_t expected = (16 * 9 + 16) + 32 + 2 * (16 * 16 * 9 + 16 + 32) + (16 * 32 * 9 + 32) + 64 +
                           2 * (32 * 32 * 9 + 32 + 64) + 32 * 10 + 10;
  BOOST_TEST(int64_t(model.params().size()) == expected);
  BOOST_TEST(model.describe() == "cnn 1x28x28 stages [16, 32] x 1 blocks, " + std::to_string(expected) + " parameters");
  BOOST_TEST(model.type() == "cnn");
  BOOST_TEST(model.flops_per_sample() > 1e7);
}

BOOST_AUTO_TEST_CASE(initialisation_is_deterministic_and_pytorch_like) {
  const auto shape = image_shape(1, 12, 12, 10);
  dp::Cnn a(cnn_spec({8, 16}, 1), shape, 42), b(cnn_spec({8, 16}, 1), shape, 42), c(cnn_spec({8, 16}, 1), shape, 43);
  BOOST_TEST(std::equal(a.params().begin(), a.params().end(), b.params().begin(), b.params().end()));
  BOOST_TEST(!std::equal(a.params().begin(), a.params().end(), c.params().begin()));
  for (const dp::LayerInfo& l : a.layers()) {
    const auto v = a.params().subspan(size_t(l.param_offset), size_t(l.param_count));
    if (l.kind == "norm") {
      for (int64_t i = 0; i < l.param_count; ++i) BOOST_TEST(v[size_t(i)] == (i < l.param_count / 2 ? 1.0f : 0.0f));
    } else if (l.kind == "conv" || l.kind == "linear") {
      float lo = 0, hi = 0;
      for (float x : v) lo = std::min(lo, x), hi = std::max(hi, x);
      BOOST_TEST(lo < 0.0f);
      BOOST_TEST(hi > 0.0f);
    }
  }
  // The stem's fan-in is 1 * 9, the classifier's 16: bounds 1/3 and 1/4, nearly reached.
  const auto& stem = a.layers().front();
  float stem_max = 0;
  for (int64_t i = 0; i < stem.param_count; ++i) stem_max = std::max(stem_max, std::abs(a.params()[size_t(stem.param_offset + i)]));
  BOOST_TEST(stem_max <= 1.0f / 3.0f);
  BOOST_TEST(stem_max > 0.25f);
  const auto& fc = a.layers().back();
  float fc_max = 0;
  for (int64_t i = 0; i < fc.param_count; ++i) fc_max = std::max(fc_max, std::abs(a.params()[size_t(fc.param_offset + i)]));
  BOOST_TEST(fc_max <= 0.25f);
  BOOST_TEST(fc_max > 0.2f);
}

BOOST_AUTO_TEST_CASE(fingerprint_depends_on_the_architecture_only) {
  const auto shape = image_shape(1, 28, 28, 10);
  dp::Cnn a(cnn_spec({16, 32}, 1), shape, 1), same(cnn_spec({16, 32}, 1), shape, 99),
      wider(cnn_spec({16, 48}, 1), shape, 1), deeper(cnn_spec({16, 32}, 2), shape, 1),
      bigger(cnn_spec({16, 32}, 1), image_shape(1, 32, 32, 10), 1);
  BOOST_TEST(a.fingerprint() == same.fingerprint());
  BOOST_TEST(a.fingerprint() != wider.fingerprint());
  BOOST_TEST(a.fingerprint() != deeper.fingerprint());
  BOOST_TEST(a.fingerprint() != bigger.fingerprint());
}

BOOST_AUTO_TEST_CASE(empty_batch_gives_zero_gradients) {
  const auto shape = image_shape(3, 6, 6, 5);
  dp::Cnn model(cnn_spec({4, 8}, 1), shape, 2);
  // A real batch first, so buffers and gradients are non-trivial, then n = 0.
  const auto x = random_vector(size_t(2 * shape.features), 4);
  const std::vector<int32_t> y{1, 4};
  model.forward_backward({2, x.data(), nullptr, y.data()}, 1.0f);
  const auto stats = model.forward_backward({0, nullptr, nullptr, nullptr}, 1.0f);
  BOOST_TEST(stats.count == 0);
  BOOST_TEST(stats.loss_sum == 0.0);
  for (float g : model.grads()) BOOST_TEST(g == 0.0f);
  BOOST_TEST(model.evaluate({0, nullptr, nullptr, nullptr}).count == 0);
}

BOOST_AUTO_TEST_CASE(evaluation_in_chunks_matches_training_forward) {
  // evaluate() runs large batches in chunks of 64; the sums must equal one forward over the whole batch.
  const auto shape = image_shape(1, 6, 5, 3);
  dp::Cnn model(cnn_spec({2, 3}, 1), shape, 9);
  const int64_t n = 150;
  const auto x = random_vector(size_t(n * shape.features), 10);
  std::vector<int32_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[size_t(i)] = int32_t(i % 3);
  const auto train = model.forward_backward({n, x.data(), nullptr, y.data()}, 1.0f);
  const auto eval = model.evaluate({n, x.data(), nullptr, y.data()});
  BOOST_TEST(eval.count == n);
  BOOST_TEST(eval.correct == train.correct);
  BOOST_TEST(eval.loss_sum == train.loss_sum, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(invalid_shapes_and_options_throw_job_errors) {
  dp::SampleShape vector_data;
  vector_data.features = 32;
  vector_data.classes = 10;
  BOOST_CHECK_THROW(dp::Cnn(cnn_spec({16, 32}, 1), vector_data, 1), dp::JobError);
  try {
    dp::Cnn(cnn_spec({16, 32}, 1), vector_data, 1);
  } catch (const dp::JobError& e) {
    BOOST_TEST(e.where() == "[model] type");
    BOOST_TEST(e.message().find("image") != std::string::npos);
  }
  const auto shape = image_shape(1, 8, 8, 10);
  BOOST_CHECK_THROW(dp::Cnn(cnn_spec({}, 1), shape, 1), dp::JobError);
  BOOST_CHECK_THROW(dp::Cnn(cnn_spec({16, 0}, 1), shape, 1), dp::JobError);
  BOOST_CHECK_THROW(dp::Cnn(cnn_spec({16}, -1), shape, 1), dp::JobError);
  // No residual blocks and a single stage is still a valid (plain) network.
  dp::Cnn plain(cnn_spec({4}, 0), shape, 1);
  BOOST_TEST(plain.layers().size() == 5u);  // stem conv norm relu, pool, fc
}
