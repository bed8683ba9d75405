// Layer normalisation over the last dimension: y = (x - mean) * rstd * gamma + beta, per row of C values.
// Dimension letters: N rows (sequences x positions), C channels.
#pragma once

#include <cstdint>

namespace dp::cpu {

inline constexpr float kLayerNormEps = 1e-5f;  // PyTorch's default

// x (N, C), gamma/beta (C), y (N, C); saves mean (N) and rstd = 1/sqrt(var + eps) (N) for backward.
void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                       float* rstd, int64_t n, int64_t c);
// From dy (N, C): ADDS dL/dx into dx (the residual stream's gradient it feeds), and overwrites
// dgamma (C) and dbeta (C), or adds to them with accumulate.
void layernorm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                        const float* dy, float* dx, float* dgamma, float* dbeta, int64_t n, int64_t c,
                        bool accumulate);

}  // namespace dp::cpu
