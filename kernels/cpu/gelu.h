// GELU with the tanh approximation (GPT-2's, PyTorch's approximate="tanh"):
//   y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
#pragma once

#include <cstdint>

namespace dp::cpu {

void gelu_forward(const float* x, float* y, int64_t count);
// dx = dy * gelu'(x) from the forward input x; dx may alias dy.
void gelu_backward(const float* x, const float* dy, float* dx, int64_t count);

}  // namespace dp::cpu
