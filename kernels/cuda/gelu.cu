// GELU (tanh approximation): grid-stride element-wise kernels with the accurate tanhf.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/gelu.h"

namespace dp::cuda {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

__global__ void gelu_forward_kernel(const float* x, float* y, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kCubic * v * v * v);
    y[i] = 0.5f * v * (1.0f + tanhf(u));
  }
}

__global__ void gelu_backward_kernel(const float* __restrict__ x, const float* dy, float* dx, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kCubic * v * v * v);
    const float th = tanhf(u);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
    dx[i] = dy[i] * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du);
  }
}

}  // namespace

void gelu_forward(const float* x, float* y, int64_t count) {
  if (count <= 0) return;
  gelu_forward_kernel<<<detail::grid_for(count), detail::kThreads>>>(x, y, count);
  DP_CUDA_LAUNCHED();
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t count) {
  if (count <= 0) return;
  gelu_backward_kernel<<<detail::grid_for(count), detail::kThreads>>>(x, dy, dx, count);
  DP_CUDA_LAUNCHED();
}

}  // namespace dp::cuda
