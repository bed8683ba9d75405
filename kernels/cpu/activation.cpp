// Element-wise activations and the residual sum on the CPU.
#include "kernels/cpu/ops.h"

namespace dp::cpu {

void relu_forward(const float* x, float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(const float* y, const float* dy, float* dx, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const float d = dy[i];  // loaded unconditionally so that the loop vectorises
    dx[i] = y[i] > 0.0f ? d : 0.0f;
  }
}

void add(const float* a, const float* b, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

}  // namespace dp::cpu
