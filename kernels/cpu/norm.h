// Per-sample normalisation of feature maps ("layer norm" for images: GroupNorm with one group). For each
// sample, mean and variance over all C*S values (S = H*W), then a per-channel affine:
//   y = (x - mean) * rstd * gamma[c] + beta[c],   rstd = 1 / sqrt(var + eps)   (biased variance)
// It does not mix samples, so data-parallel training gives the same result on any rank count.
// x, y, dx, dy are (N, C, S); mean and rstd (N); gamma, beta, dgamma, dbeta (C).
#pragma once

#include <cstdint>

namespace dp::cpu {

inline constexpr float kNormEps = 1e-5f;

// Fills y and the per-sample statistics mean, rstd (kept for the backward). With relu, y = max(y, 0)
// (fused, saving a pass). y may alias x.
void norm2d_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                    int64_t n, int64_t channels, int64_t spatial, bool relu = false);
// dx, dgamma, dbeta from dy and the forward's x, mean, rstd. When relu_y (the fused forward's output) is
// given, dy is first masked to where relu_y > 0. dgamma, dbeta are overwritten (zero when N = 0), or
// added to when `accumulate`; dx is overwritten and may alias dy.
void norm2d_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                     const float* relu_y, float* dx, float* dgamma, float* dbeta, int64_t n, int64_t channels,
                     int64_t spatial, bool accumulate = false);

}  // namespace dp::cpu
