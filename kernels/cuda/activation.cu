// ReLU forward and backward and the residual sum: grid-stride element-wise kernels (in-place safe: each element is read and
// written by the same thread).
#include "kernels/cuda/activation.h"
#include "kernels/cuda/common.cuh"

namespace dp::cuda {
namespace {

__global__ void relu_forward_kernel(const float* x, float* y, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void relu_backward_kernel(const float* y, const float* dy, float* dx, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = a[i] + b[i];
}

}  // namespace

void relu_forward(const float* x, float* y, int64_t count) {
  if (count <= 0) return;
  relu_forward_kernel<<<detail::grid_for(count), detail::kThreads>>>(x, y, count);
  DP_CUDA_LAUNCHED();
}

void relu_backward(const float* y, const float* dy, float* dx, int64_t count) {
  if (count <= 0) return;
  relu_backward_kernel<<<detail::grid_for(count), detail::kThreads>>>(y, dy, dx, count);
  DP_CUDA_LAUNCHED();
}

void add(const float* a, const float* b, float* out, int64_t count) {
  if (count <= 0) return;
  add_kernel<<<detail::grid_for(count), detail::kThreads>>>(a, b, out, count);
  DP_CUDA_LAUNCHED();
}

}  // namespace dp::cuda
