// GELU, tanh approximation (GPT-2's), on the GPU: the CUDA twin of kernels/cpu/gelu.h.
//   y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
#pragma once

#include <cstdint>

namespace dp::cuda {

void gelu_forward(const float* x, float* y, int64_t count);  // y may alias x
// dx = dy * gelu'(x) from the forward input x; dx may alias dy.
void gelu_backward(const float* x, const float* dy, float* dx, int64_t count);

}  // namespace dp::cuda
