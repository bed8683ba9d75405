// SGD with momentum and AdamW as grid-stride element-wise kernels, arithmetic in the CPU's order.
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/optimizer.h"

namespace dp::cuda {
namespace {

__global__ void sgd_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ v,
                           int64_t count, float lr, float momentum, float weight_decay) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float grad = g[i] + weight_decay * p[i];
    const float vi = momentum * v[i] + grad;
    v[i] = vi;
    p[i] -= lr * vi;
  }
}

__global__ void adamw_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                             float* __restrict__ v, int64_t count, float lr, float beta1, float beta2,
                             float eps, float weight_decay, float c1, float c2) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    const float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float mhat = mi * c1;
    const float vhat = vi * c2;
    p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * p[i]);
  }
}

}  // namespace

void sgd_momentum_update(float* p, const float* g, float* v, int64_t count, float lr, float momentum,
                         float weight_decay) {
  if (count <= 0) return;
  sgd_kernel<<<detail::grid_for(count), detail::kThreads>>>(p, g, v, count, lr, momentum, weight_decay);
  DP_CUDA_LAUNCHED();
}

void adamw_update(float* p, const float* g, float* m, float* v, int64_t count, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int64_t t) {
  if (count <= 0) return;
  // Bias corrections on the host, exactly as the CPU computes them.
  const float c1 = 1.0f / (1.0f - std::pow(beta1, float(t)));
  const float c2 = 1.0f / (1.0f - std::pow(beta2, float(t)));
  adamw_kernel<<<detail::grid_for(count), detail::kThreads>>>(p, g, m, v, count, lr, beta1, beta2, eps,
                                                               weight_decay, c1, c2);
  DP_CUDA_LAUNCHED();
}

}  // namespace dp::cuda
