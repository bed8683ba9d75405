// Layer normalisation, forward and backward, one row at a time. Row sums run in kLanes independent lanes
// so that they vectorise (one float accumulator would force sequential adds); the loops are compiled for
// AVX-512, AVX2 and baseline x86-64, picked at load time.
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/simd.h"

#include <algorithm>
#include <cmath>

namespace dp::cpu {
namespace {

constexpr int64_t kLanes = 16;

// sum_k f(k) over [0, c), in kLanes lanes.
template <class F>
inline float lane_sum(int64_t c, F f) {
  float lanes[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= c; k += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += f(k + l);
  for (; k < c; ++k) lanes[0] += f(k);
  float sum = 0.0f;
  for (float v : lanes) sum += v;
  return sum;
}

}  // namespace

DP_VECTOR_CLONES
void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                       float* rstd, int64_t n, int64_t c) {
  const float inv_c = 1.0f / float(c);
  for (int64_t i = 0; i < n; ++i) {
    const float* __restrict xi = x + i * c;
    float* __restrict yi = y + i * c;
    const float m = lane_sum(c, [xi](int64_t k) { return xi[k]; }) * inv_c;
    const float var = lane_sum(c, [xi, m](int64_t k) { return (xi[k] - m) * (xi[k] - m); }) * inv_c;
    const float r = 1.0f / std::sqrt(var + kLayerNormEps);
    for (int64_t k = 0; k < c; ++k) yi[k] = (xi[k] - m) * r * gamma[k] + beta[k];
    mean[i] = m;
    rstd[i] = r;
  }
}

DP_VECTOR_CLONES
void layernorm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                        const float* dy, float* dx, float* dgamma, float* dbeta, int64_t n, int64_t c,
                        bool accumulate) {
  if (!accumulate) {
    std::fill(dgamma, dgamma + c, 0.0f);
    std::fill(dbeta, dbeta + c, 0.0f);
  }
  const float inv_c = 1.0f / float(c);
  for (int64_t i = 0; i < n; ++i) {
    const float* __restrict xi = x + i * c;
    const float* __restrict dyi = dy + i * c;
    float* __restrict dxi = dx + i * c;
    float* __restrict dg = dgamma;
    float* __restrict db = dbeta;
    const float m = mean[i], r = rstd[i];
    // xhat = (x - mean) rstd, dxhat = dy gamma; dx += rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat))
    for (int64_t k = 0; k < c; ++k) {
      dg[k] += dyi[k] * ((xi[k] - m) * r);
      db[k] += dyi[k];
    }
    const float a = lane_sum(c, [&](int64_t k) { return dyi[k] * gamma[k]; }) * inv_c;
    const float b = lane_sum(c, [&](int64_t k) { return dyi[k] * gamma[k] * ((xi[k] - m) * r); }) * inv_c;
    for (int64_t k = 0; k < c; ++k) dxi[k] += r * (dyi[k] * gamma[k] - a - ((xi[k] - m) * r) * b);
  }
}

}  // namespace dp::cpu
