// Per-sample feature-map normalisation (GroupNorm with one group), forward and backward. Sums run over
// one channel at a time with eight float partial sums and are combined in double.
#include "kernels/cpu/norm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dp::cpu {

namespace {

// Four floats as one value (GCC/Clang vector extension, one SSE register on baseline x86-64). The
// reductions below keep two of them, eight independent partial sums, without relying on the
// auto-vectoriser.
using f32x4 = float __attribute__((vector_size(16)));
using i32x4 = int32_t __attribute__((vector_size(16)));

inline f32x4 load4(const float* p) {
  f32x4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store4(float* p, f32x4 v) { std::memcpy(p, &v, sizeof v); }
inline float hsum(f32x4 a, f32x4 b) {
  const f32x4 v = a + b;
  return (v[0] + v[1]) + (v[2] + v[3]);
}

// sum(x - shift) and sum((x - shift)^2) over one channel (the shift, any value of the sample, keeps the
// variance free of cancellation).
void shifted_sums(const float* x, float shift, int64_t count, float& s1, float& s2) {
  f32x4 a0 = {}, a1 = {}, b0 = {}, b1 = {};
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    const f32x4 d0 = load4(x + j) - shift, d1 = load4(x + j + 4) - shift;
    a0 += d0;
    a1 += d1;
    b0 += d0 * d0;
    b1 += d1 * d1;
  }
  s1 = hsum(a0, a1);
  s2 = hsum(b0, b1);
  for (; j < count; ++j) {
    const float d = x[j] - shift;
    s1 += d;
    s2 += d * d;
  }
}

// g = dy, or with kMasked dy where relu_y > 0 (then also stored to g_out, which may alias dy).
template <bool kMasked>
inline f32x4 masked4(const float* dy, const float* relu_y, float* g_out) {
  f32x4 g = load4(dy);
  if constexpr (kMasked) {
    const i32x4 keep = load4(relu_y) > 0.0f;
    g = f32x4(i32x4(g) & keep);
    store4(g_out, g);
  }
  return g;
}

// sum(g) and sum(g * (x - mean)) over one channel, g as masked4 gives it.
template <bool kMasked>
void channel_sums(const float* x, const float* dy, const float* relu_y, float* g_out, float mean, int64_t count,
                  float& s_g, float& s_gx) {
  f32x4 a0 = {}, a1 = {}, b0 = {}, b1 = {};
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    const f32x4 g0 = masked4<kMasked>(dy + j, relu_y + j, g_out + j);
    const f32x4 g1 = masked4<kMasked>(dy + j + 4, relu_y + j + 4, g_out + j + 4);
    a0 += g0;
    a1 += g1;
    b0 += g0 * (load4(x + j) - mean);
    b1 += g1 * (load4(x + j + 4) - mean);
  }
  s_g = hsum(a0, a1);
  s_gx = hsum(b0, b1);
  for (; j < count; ++j) {
    float g = dy[j];
    if constexpr (kMasked) {
      g = relu_y[j] > 0.0f ? g : 0.0f;
      g_out[j] = g;
    }
    s_g += g;
    s_gx += g * (x[j] - mean);
  }
}

}  // namespace

void norm2d_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                    int64_t n, int64_t channels, int64_t spatial, bool relu) {
  const int64_t size = channels * spatial;
  for (int64_t i = 0; i < n; ++i) {
    const float* xi = x + i * size;
    float* yi = y + i * size;
    const float shift = xi[0];
    double t1 = 0, t2 = 0;
    for (int64_t c = 0; c < channels; ++c) {
      float s1, s2;
      shifted_sums(xi + c * spatial, shift, spatial, s1, s2);
      t1 += s1;
      t2 += s2;
    }
    const double d_mean = t1 / double(size);
    const double var = std::max(0.0, t2 / double(size) - d_mean * d_mean);
    const float mu = float(double(shift) + d_mean);
    const float rs = float(1.0 / std::sqrt(var + double(kNormEps)));
    mean[i] = mu;
    rstd[i] = rs;
    for (int64_t c = 0; c < channels; ++c) {
      const float a = rs * gamma[c], b = beta[c];
      const float* xc = xi + c * spatial;
      float* yc = yi + c * spatial;
      if (relu) {
        for (int64_t j = 0; j < spatial; ++j) yc[j] = std::max((xc[j] - mu) * a + b, 0.0f);
      } else {
        for (int64_t j = 0; j < spatial; ++j) yc[j] = (xc[j] - mu) * a + b;
      }
    }
  }
}

void norm2d_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                     const float* relu_y, float* dx, float* dgamma, float* dbeta, int64_t n, int64_t channels,
                     int64_t spatial, bool accumulate) {
  if (!accumulate) {
    std::fill(dgamma, dgamma + channels, 0.0f);
    std::fill(dbeta, dbeta + channels, 0.0f);
  }
  const int64_t size = channels * spatial;
  const double inv_count = 1.0 / double(size);
  for (int64_t i = 0; i < n; ++i) {
    const float* xi = x + i * size;
    float* dxi = dx + i * size;
    const float mu = mean[i], rs = rstd[i];
    // g: the output gradient, masked by the fused ReLU (then stored into dx on the way).
    const float* gi = relu_y ? dxi : dy + i * size;
    // m1 = mean(dxhat), m2 = mean(dxhat * xhat) with dxhat = g * gamma, xhat = (x - mu) * rs
    double m1 = 0, m2 = 0;
    for (int64_t c = 0; c < channels; ++c) {
      float s_g, s_gx;
      const int64_t off = i * size + c * spatial;
      if (relu_y)
        channel_sums<true>(x + off, dy + off, relu_y + off, dx + off, mu, spatial, s_g, s_gx);
      else
        channel_sums<false>(x + off, dy + off, nullptr, nullptr, mu, spatial, s_g, s_gx);
      const float s_gxhat = s_gx * rs;
      dbeta[c] += s_g;
      dgamma[c] += s_gxhat;
      m1 += double(gamma[c]) * s_g;
      m2 += double(gamma[c]) * s_gxhat;
    }
    m1 *= inv_count;
    m2 *= inv_count;
    // dx = rs * (g * gamma - m1 - xhat * m2) = (rs * gamma) * g + (x - mu) * k1 + k0
    const float k1 = float(-double(rs) * double(rs) * m2), k0 = float(-double(rs) * m1);
    for (int64_t c = 0; c < channels; ++c) {
      const float a = rs * gamma[c];
      const float* xc = xi + c * spatial;
      const float* gc = gi + c * spatial;
      float* dxc = dxi + c * spatial;
      for (int64_t j = 0; j < spatial; ++j) dxc[j] = a * gc[j] + (xc[j] - mu) * k1 + k0;
    }
  }
}

}  // namespace dp::cpu
