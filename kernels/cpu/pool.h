// Global average pooling on the CPU: (N, C, S) -> (N, C), S = H*W.
#pragma once

#include <cstdint>

namespace dp::cpu {

// y (N, C) = mean over S of x (N, C, S).
void global_avg_pool_forward(const float* x, float* y, int64_t n, int64_t channels, int64_t spatial);
// dx (N, C, S) = dy (N, C) / S, broadcast (overwritten).
void global_avg_pool_backward(const float* dy, float* dx, int64_t n, int64_t channels, int64_t spatial);

}  // namespace dp::cpu
