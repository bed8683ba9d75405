// Per-sample feature-map normalisation (GroupNorm with one group) on the GPU: the CUDA twin of
// kernels/cpu/norm.h, same parameters and aliasing rules, device pointers.
// x, y, dx, dy are (N, C, S); mean and rstd (N); gamma, beta, dgamma, dbeta (C).
#pragma once

#include <cstdint>

#include "kernels/cpu/norm.h"  // dp::cpu::kNormEps

namespace dp::cuda {

// y = (x - mean) * rstd * gamma[c] + beta[c] (then max(y, 0) with relu); y may alias x.
void norm2d_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                    int64_t n, int64_t channels, int64_t spatial, bool relu = false);
// dgamma, dbeta overwritten (zero when N = 0), or added to when `accumulate`; dx overwritten, may alias
// dy. relu_y: the fused forward's output (dy is masked to where relu_y > 0), or null.
void norm2d_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                     const float* relu_y, float* dx, float* dgamma, float* dbeta, int64_t n, int64_t channels,
                     int64_t spatial, bool accumulate = false);

}  // namespace dp::cuda
