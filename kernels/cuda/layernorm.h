// Layer normalisation over the last dimension on the GPU: the CUDA twin of kernels/cpu/layernorm.h.
// y = (x - mean) * rstd * gamma + beta per row of C values. N rows, C channels; device pointers.
#pragma once

#include <cstdint>

#include "kernels/cpu/layernorm.h"  // dp::cpu::kLayerNormEps

namespace dp::cuda {

// x (N, C), gamma/beta (C), y (N, C) (may alias x); saves mean (N) and rstd = 1/sqrt(var + eps) (N).
void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                       float* rstd, int64_t n, int64_t c);
// From dy (N, C): ADDS dL/dx into dx (may alias dy), overwrites dgamma (C) and dbeta (C), or adds to
// them with accumulate.
void layernorm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                        const float* dy, float* dx, float* dgamma, float* dbeta, int64_t n, int64_t c,
                        bool accumulate);

}  // namespace dp::cuda
