// Token + position embedding: element-wise gather forward; backward scatters dwte with atomicAdd and
// sums dwpe over the sequences per (position, channel) in a fixed order.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/embedding.h"

namespace dp::cuda {
namespace {

__global__ void embedding_forward_kernel(const int32_t* __restrict__ tokens, const float* __restrict__ wte,
                                         const float* __restrict__ wpe, float* __restrict__ out,
                                         int64_t total, int64_t t, int64_t c) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t bt = i / c, k = i % c, p = bt % t;
    out[i] = wte[int64_t(tokens[bt]) * c + k] + wpe[p * c + k];
  }
}

__global__ void embedding_dwte_kernel(const int32_t* __restrict__ tokens, const float* __restrict__ dout,
                                      float* __restrict__ dwte, int64_t total, int64_t c) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t bt = i / c, k = i % c;
    atomicAdd(dwte + int64_t(tokens[bt]) * c + k, dout[i]);
  }
}

// dwpe[p, k] += sum over sequences of dout[s, p, k], sequences in order.
__global__ void embedding_dwpe_kernel(const float* __restrict__ dout, float* __restrict__ dwpe, int64_t b,
                                      int64_t t, int64_t c) {
  const int64_t tc = t * c;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < tc;
       i += int64_t(gridDim.x) * blockDim.x) {
    float s = dwpe[i];
    for (int64_t seq = 0; seq < b; ++seq) s += dout[seq * tc + i];
    dwpe[i] = s;
  }
}

}  // namespace

void embedding_forward(const int32_t* tokens, const float* wte, const float* wpe, float* out, int64_t b,
                       int64_t t, int64_t c) {
  const int64_t total = b * t * c;
  if (total <= 0) return;
  embedding_forward_kernel<<<detail::grid_for(total), detail::kThreads>>>(tokens, wte, wpe, out, total, t, c);
  DP_CUDA_LAUNCHED();
}

void embedding_backward(const int32_t* tokens, const float* dout, float* dwte, float* dwpe, int64_t b,
                        int64_t t, int64_t c) {
  const int64_t total = b * t * c;
  if (total <= 0) return;
  embedding_dwte_kernel<<<detail::grid_for(total), detail::kThreads>>>(tokens, dout, dwte, total, c);
  DP_CUDA_LAUNCHED();
  embedding_dwpe_kernel<<<detail::grid_for(t * c), detail::kThreads>>>(dout, dwpe, b, t, c);
  DP_CUDA_LAUNCHED();
}

}  // namespace dp::cuda
