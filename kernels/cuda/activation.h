// Element-wise activations on the GPU: the CUDA twin of kernels/cpu/activation.cpp (device pointers).
#pragma once

#include <cstdint>

namespace dp::cuda {

void relu_forward(const float* x, float* y, int64_t count);  // y may alias x
// dx = dy where the forward output y > 0, else 0 (dx may alias dy).
void relu_backward(const float* y, const float* dy, float* dx, int64_t count);
// out = a + b element-wise (residual connections); out may alias a or b.
void add(const float* a, const float* b, float* out, int64_t count);

}  // namespace dp::cuda
