// Global average pooling: one warp per (sample, channel) row forward, element-wise broadcast backward.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/pool.h"

namespace dp::cuda {
namespace {

__global__ void pool_forward_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                                    int64_t spatial, float inv) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x >> 5);
  for (int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {
    const float* v = x + r * spatial;
    float s = 0.0f;
    for (int64_t j = lane; j < spatial; j += 32) s += v[j];
    s = detail::warp_sum(s);
    if (lane == 0) y[r] = s * inv;
  }
}

__global__ void pool_backward_kernel(const float* __restrict__ dy, float* __restrict__ dx, int64_t total,
                                     int64_t spatial, float inv) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    dx[i] = dy[i / spatial] * inv;
}

}  // namespace

void global_avg_pool_forward(const float* x, float* y, int64_t n, int64_t channels, int64_t spatial) {
  const int64_t rows = n * channels;
  if (rows <= 0 || spatial <= 0) return;
  pool_forward_kernel<<<detail::grid_for_warps(rows), detail::kThreads>>>(x, y, rows, spatial,
                                                                           1.0f / float(spatial));
  DP_CUDA_LAUNCHED();
}

void global_avg_pool_backward(const float* dy, float* dx, int64_t n, int64_t channels, int64_t spatial) {
  const int64_t total = n * channels * spatial;
  if (total <= 0) return;
  pool_backward_kernel<<<detail::grid_for(total), detail::kThreads>>>(dy, dx, total, spatial,
                                                                       1.0f / float(spatial));
  DP_CUDA_LAUNCHED();
}

}  // namespace dp::cuda
