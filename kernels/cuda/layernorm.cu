// Layer normalisation: one warp per row (two passes over the row for mean and variance; the backward's
// two row sums, then dx). dgamma/dbeta are deterministic column sums over the rows.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/layernorm.h"

namespace dp::cuda {
namespace {

__global__ void layernorm_forward_kernel(const float* x, const float* __restrict__ gamma,
                                         const float* __restrict__ beta, float* y, float* __restrict__ mean,
                                         float* __restrict__ rstd, int64_t n, int64_t c) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x >> 5);
  const float inv_c = 1.0f / float(c);
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
    const float* xi = x + i * c;
    float* yi = y + i * c;
    float sum = 0.0f;
    for (int64_t k = lane; k < c; k += 32) sum += xi[k];
    const float m = detail::warp_sum(sum) * inv_c;
    float var = 0.0f;
    for (int64_t k = lane; k < c; k += 32) {
      const float d = xi[k] - m;
      var += d * d;
    }
    const float r = rsqrtf(detail::warp_sum(var) * inv_c + cpu::kLayerNormEps);
    // Each lane rewrites only the elements it read, after the warp-wide sums: y may alias x.
    for (int64_t k = lane; k < c; k += 32) yi[k] = (xi[k] - m) * r * gamma[k] + beta[k];
    if (lane == 0) {
      mean[i] = m;
      rstd[i] = r;
    }
  }
}

__global__ void layernorm_dx_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                    const float* __restrict__ mean, const float* __restrict__ rstd,
                                    const float* dy, float* dx, int64_t n, int64_t c) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x >> 5);
  const float inv_c = 1.0f / float(c);
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
    const float* xi = x + i * c;
    const float* dyi = dy + i * c;
    float* dxi = dx + i * c;
    const float m = mean[i], r = rstd[i];
    // dxhat = dy * gamma; dx += r * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    float s1 = 0.0f, s2 = 0.0f;
    for (int64_t k = lane; k < c; k += 32) {
      const float dxhat = dyi[k] * gamma[k];
      s1 += dxhat;
      s2 += dxhat * ((xi[k] - m) * r);
    }
    const float a = detail::warp_sum(s1) * inv_c, b = detail::warp_sum(s2) * inv_c;
    for (int64_t k = lane; k < c; k += 32) {
      const float xhat = (xi[k] - m) * r;
      dxi[k] += r * (dyi[k] * gamma[k] - a - xhat * b);
    }
  }
}

struct ParamGrads {  // fn(i, k) = (dy * xhat, dy): column sums give dgamma, dbeta
  const float *x, *dy, *mean, *rstd;
  int64_t c;
  __device__ float2 operator()(int64_t i, int64_t k) const {
    const float g = dy[i * c + k];
    return make_float2(g * ((x[i * c + k] - mean[i]) * rstd[i]), g);
  }
};

}  // namespace

void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                       float* rstd, int64_t n, int64_t c) {
  if (n <= 0 || c <= 0) return;
  layernorm_forward_kernel<<<detail::grid_for_warps(n), detail::kThreads>>>(x, gamma, beta, y, mean, rstd, n, c);
  DP_CUDA_LAUNCHED();
}

void layernorm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                        const float* dy, float* dx, float* dgamma, float* dbeta, int64_t n, int64_t c,
                        bool accumulate) {
  if (c <= 0) return;
  // Parameter gradients first: they read dy, which dx may alias.
  detail::column_sums(ParamGrads{x, dy, mean, rstd, c}, n, c, dgamma, dbeta, accumulate);
  if (n <= 0) return;
  layernorm_dx_kernel<<<detail::grid_for_warps(n), detail::kThreads>>>(x, gamma, mean, rstd, dy, dx, n, c);
  DP_CUDA_LAUNCHED();
}

}  // namespace dp::cuda
